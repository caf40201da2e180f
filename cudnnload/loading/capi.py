"""ctypes bindings of the part of the cuDNN C API cudnnload calls, bound per loaded shim.

One table of prototypes (restype, argtypes, and which sub-library defines each
function in cuDNN 9 and 8) is the single source; `CudnnApi` resolves a symbol on
first use, types it from the table, and caches it. A symbol the shim does not
export is `None` from `CudnnApi.optional` and a `SymbolMissing` error (never an
AttributeError) from `CudnnApi.symbol` and attribute access.

Signatures, enum values and struct layouts: ../shared/reference/cudnn-facts.md
§4.1-4.3 (read off the 8.9.7, 9.0 and 9.28 headers; offsets gcc-checked).
Calls here return raw `cudnnStatus_t` ints; `cudnnload.loading.status.check` turns
them into typed errors. This module must stay import-light: the probe child
(`cudnnload.loading.probe`) imports it.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from cudnnload.errors import LoadError, UsageError
from cudnnload.resolve.catalog import Generation, Release, SubLibrary, decode_version, generation

# Opaque handles and descriptors are pointers to incomplete structs; cudaStream_t too (§4.2).
Handle = ctypes.c_void_p
TensorDescriptor = ctypes.c_void_p
FilterDescriptor = ctypes.c_void_p
ConvolutionDescriptor = ctypes.c_void_p
ActivationDescriptor = ctypes.c_void_p
Stream = ctypes.c_void_p
Status = ctypes.c_int  # every cuDNN enum is a 4-byte int (§4.2)

_int_p = ctypes.POINTER(ctypes.c_int)
_void_pp = ctypes.POINTER(ctypes.c_void_p)


class LibraryProperty(IntEnum):
    """``libraryPropertyType`` from CUDA's library_types.h, for ``cudnnGetProperty`` (§1.5)."""

    MAJOR_VERSION = 0
    MINOR_VERSION = 1
    PATCH_LEVEL = 2


class TensorFormat(IntEnum):
    NCHW = 0
    NHWC = 1
    NCHW_VECT_C = 2


class DataType(IntEnum):
    """The ``cudnnDataType_t`` values present in every release since 8.5 (§4.3)."""

    FLOAT = 0
    DOUBLE = 1
    HALF = 2
    INT8 = 3
    INT32 = 4
    UINT8 = 6
    BFLOAT16 = 9
    INT64 = 10
    BOOLEAN = 11


class ConvolutionMode(IntEnum):
    CONVOLUTION = 0
    CROSS_CORRELATION = 1


class ConvolutionFwdAlgo(IntEnum):
    IMPLICIT_GEMM = 0
    IMPLICIT_PRECOMP_GEMM = 1
    GEMM = 2
    DIRECT = 3
    FFT = 4
    FFT_TILING = 5
    WINOGRAD = 6
    WINOGRAD_NONFUSED = 7


class MathType(IntEnum):
    DEFAULT_MATH = 0
    TENSOR_OP_MATH = 1
    TENSOR_OP_MATH_ALLOW_CONVERSION = 2
    FMA_MATH = 3


class ActivationMode(IntEnum):
    SIGMOID = 0
    RELU = 1
    TANH = 2
    CLIPPED_RELU = 3
    ELU = 4
    IDENTITY = 5
    SWISH = 6


class NanPropagation(IntEnum):
    NOT_PROPAGATE_NAN = 0
    PROPAGATE_NAN = 1


class Severity(IntEnum):
    """``cudnnSeverity_t``; the callback mask bit of severity s is ``1 << s`` (hdr, §4.2)."""

    FATAL = 0
    ERROR = 1
    WARNING = 2
    INFO = 3

    @property
    def mask(self) -> int:
        return 1 << self.value


class CudnnDebug(ctypes.Structure):
    """``cudnnDebug_t``: 120 bytes on x86-64, identical in 8.9.7 and 9.28 (§4.2)."""

    _fields_ = [
        ("cudnn_version", ctypes.c_uint),
        ("cudnnStatus", ctypes.c_int),
        ("time_sec", ctypes.c_uint),
        ("time_usec", ctypes.c_uint),
        ("time_delta", ctypes.c_uint),
        ("handle", ctypes.c_void_p),
        ("stream", ctypes.c_void_p),
        ("pid", ctypes.c_ulonglong),
        ("tid", ctypes.c_ulonglong),
        ("cudaDeviceId", ctypes.c_int),  # garbage when no GPU is visible (§4.2)
        ("reserved", ctypes.c_int * 15),
    ]


class ConvolutionFwdAlgoPerf(ctypes.Structure):
    """``cudnnConvolutionFwdAlgoPerf_t``: 48 bytes (§4.2)."""

    _fields_ = [
        ("algo", ctypes.c_int),
        ("status", ctypes.c_int),
        ("time", ctypes.c_float),  # milliseconds
        ("memory", ctypes.c_size_t),
        ("determinism", ctypes.c_int),
        ("mathType", ctypes.c_int),
        ("reserved", ctypes.c_int * 3),
    ]


# msg is declared void* rather than char*: it holds several NUL-terminated lines
# ended by an empty string, and c_char_p would show only the first (§4.2).
Callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(CudnnDebug), ctypes.c_void_p)
_SILENT = Callback(lambda severity, user_data, debug, msg: None)  # module-level: cuDNN may call it at any time


@dataclass(frozen=True)
class Prototype:
    """One C function: its ctypes types and the sub-library that defines it (§4.1)."""

    restype: Any
    argtypes: tuple[Any, ...]
    owner_v9: str  # catalog key of the defining sub-library in cuDNN 9
    owner_v8: str  # ... and in cuDNN 8 (cuDNN 7 has only the monolithic shim)
    history: str = ""  # when it appeared, for the error a shim without it raises

    def owner(self, gen: Generation) -> SubLibrary:
        key = {9: self.owner_v9, 8: self.owner_v8}.get(gen.major, "shim")
        return gen.library(key)


def _graph(restype: Any, *argtypes: Any, history: str = "") -> Prototype:
    return Prototype(restype, argtypes, "graph", "ops_infer", history)


def _ops(*argtypes: Any) -> Prototype:
    return Prototype(Status, argtypes, "ops", "ops_infer")


def _cnn(*argtypes: Any) -> Prototype:
    return Prototype(Status, argtypes, "cnn", "cnn_infer")


_c_int, _c_double, _c_size_t = ctypes.c_int, ctypes.c_double, ctypes.c_size_t

PROTOTYPES: dict[str, Prototype] = {
    # Version and error getters, callbacks, handle (cudnn_graph.h in 9.x).
    # The three getters return size_t: without restype ctypes would truncate to int (§4.2).
    "cudnnGetVersion": _graph(_c_size_t),
    "cudnnGetCudartVersion": _graph(_c_size_t),
    # Absent in 8.5, present in 8.9.7 (§1.4, §4.1); the exact 8.x minor that added it is unchecked.
    "cudnnGetMaxDeviceVersion": _graph(_c_size_t, history="absent in cuDNN 8.5, present in 8.9.7 and later"),
    "cudnnGetProperty": _graph(Status, _c_int, _int_p),
    "cudnnGetErrorString": _graph(ctypes.c_char_p, Status),
    "cudnnGetLastErrorString": _graph(None, ctypes.c_char_p, _c_size_t, history="added in cuDNN 9.0"),  # §1.4
    # fptr is passed as void* so that a callback read back by cudnnGetCallback can be restored as is.
    "cudnnSetCallback": _graph(Status, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p),
    "cudnnGetCallback": _graph(Status, ctypes.POINTER(ctypes.c_uint), _void_pp, _void_pp),
    "cudnnCreate": _graph(Status, ctypes.POINTER(Handle)),
    "cudnnDestroy": _graph(Status, Handle),
    "cudnnSetStream": _graph(Status, Handle, Stream),
    "cudnnGetStream": _graph(Status, Handle, ctypes.POINTER(Stream)),
    # Tensor, filter and activation descriptors (cudnn_ops.h).
    "cudnnCreateTensorDescriptor": _ops(ctypes.POINTER(TensorDescriptor)),
    "cudnnSetTensor4dDescriptor": _ops(TensorDescriptor, _c_int, _c_int, _c_int, _c_int, _c_int, _c_int),
    "cudnnSetTensor4dDescriptorEx": _ops(TensorDescriptor, _c_int, *(_c_int,) * 8),
    "cudnnSetTensorNdDescriptor": _ops(TensorDescriptor, _c_int, _c_int, _int_p, _int_p),
    "cudnnDestroyTensorDescriptor": _ops(TensorDescriptor),
    "cudnnCreateFilterDescriptor": _ops(ctypes.POINTER(FilterDescriptor)),
    # Filter takes dataType before format, the tensor variant format first (§4.2).
    "cudnnSetFilter4dDescriptor": _ops(FilterDescriptor, _c_int, _c_int, _c_int, _c_int, _c_int, _c_int),
    "cudnnSetFilterNdDescriptor": _ops(FilterDescriptor, _c_int, _c_int, _c_int, _int_p),
    "cudnnDestroyFilterDescriptor": _ops(FilterDescriptor),
    "cudnnCreateActivationDescriptor": _ops(ctypes.POINTER(ActivationDescriptor)),
    # coef and swish_beta are doubles: a Python float without argtypes would go in the wrong register (§4.2).
    "cudnnSetActivationDescriptor": _ops(ActivationDescriptor, _c_int, _c_int, _c_double),
    "cudnnGetActivationDescriptor": _ops(ActivationDescriptor, _int_p, _int_p, ctypes.POINTER(_c_double)),
    "cudnnSetActivationDescriptorSwishBeta": _ops(ActivationDescriptor, _c_double),
    "cudnnDestroyActivationDescriptor": _ops(ActivationDescriptor),
    "cudnnActivationForward": _ops(Handle, ActivationDescriptor, ctypes.c_void_p, TensorDescriptor,
                                   ctypes.c_void_p, ctypes.c_void_p, TensorDescriptor, ctypes.c_void_p),
    # Convolution (cudnn_cnn.h).
    "cudnnCreateConvolutionDescriptor": _cnn(ctypes.POINTER(ConvolutionDescriptor)),
    "cudnnSetConvolution2dDescriptor": _cnn(ConvolutionDescriptor, *(_c_int,) * 8),
    "cudnnSetConvolutionNdDescriptor": _cnn(ConvolutionDescriptor, _c_int, _int_p, _int_p, _int_p, _c_int, _c_int),
    "cudnnSetConvolutionMathType": _cnn(ConvolutionDescriptor, _c_int),
    "cudnnSetConvolutionGroupCount": _cnn(ConvolutionDescriptor, _c_int),
    "cudnnDestroyConvolutionDescriptor": _cnn(ConvolutionDescriptor),
    "cudnnGetConvolution2dForwardOutputDim": _cnn(ConvolutionDescriptor, TensorDescriptor, FilterDescriptor,
                                                  _int_p, _int_p, _int_p, _int_p),
    "cudnnGetConvolutionNdForwardOutputDim": _cnn(ConvolutionDescriptor, TensorDescriptor, FilterDescriptor,
                                                  _c_int, _int_p),
    "cudnnGetConvolutionForwardAlgorithmMaxCount": _cnn(Handle, _int_p),
    "cudnnGetConvolutionForwardAlgorithm_v7": _cnn(Handle, TensorDescriptor, FilterDescriptor,
                                                   ConvolutionDescriptor, TensorDescriptor, _c_int, _int_p,
                                                   ctypes.POINTER(ConvolutionFwdAlgoPerf)),
    "cudnnGetConvolutionForwardWorkspaceSize": _cnn(Handle, TensorDescriptor, FilterDescriptor,
                                                    ConvolutionDescriptor, TensorDescriptor, _c_int,
                                                    ctypes.POINTER(_c_size_t)),
    "cudnnConvolutionForward": _cnn(Handle, ctypes.c_void_p, TensorDescriptor, ctypes.c_void_p,
                                    FilterDescriptor, ctypes.c_void_p, ConvolutionDescriptor, _c_int,
                                    ctypes.c_void_p, _c_size_t, ctypes.c_void_p, TensorDescriptor,
                                    ctypes.c_void_p),
}

# cudnnGetLastErrorString has no documented maximum; cuDNN's reasons are one C expression.
_LAST_ERROR_BYTES = 4096


class SymbolMissing(LoadError):
    """The loaded shim does not export a function cudnnload asked for."""


@dataclass(frozen=True)
class CudnnMessage:
    """One message cuDNN handed to the callback."""

    severity: int
    status: int  # cudnnDebug_t.cudnnStatus
    lines: tuple[str, ...]

    @property
    def reason(self) -> str:
        """The ``Reason:`` texts of the message (``Error: <status>; Reason: <text>`` lines, measured 8.9.7/9.28)."""
        return "; ".join(line.split("; Reason: ", 1)[1] for line in self.lines if "; Reason: " in line)


def message_lines(address: int | None) -> tuple[str, ...]:
    """Read a callback ``msg``: NUL-terminated lines up to an empty one (§4.2)."""
    lines: list[str] = []
    while address:
        raw = ctypes.string_at(address)
        if not raw:
            break
        lines.append(raw.decode(errors="replace"))
        address += len(raw) + 1
    return tuple(lines)


class CudnnApi:
    """The C API of one loaded cuDNN shim (``libcudnn.so.N``) of a given generation.

    ``library`` is a path (opened with ``RTLD_NOW | RTLD_GLOBAL``; the caller is
    expected to have loaded the sub-libraries first, leaves first) or an
    already-loaded ``ctypes.CDLL``. Functions resolve lazily and are cached;
    ``api.cudnnCreate(...)`` is the same as ``api.symbol("cudnnCreate")(...)``.
    """

    def __init__(self, library: str | os.PathLike[str] | ctypes.CDLL, gen: Generation | int) -> None:
        self.generation = gen if isinstance(gen, Generation) else generation(gen)
        if isinstance(library, ctypes.CDLL):
            self.library = library
        else:
            path = os.fspath(library)
            try:
                self.library = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            except OSError as exc:
                raise LoadError(f"dlopen failed: {exc}", path=path,
                                fix="install the library the error names, or load it first by absolute path") from None
        self.path: str = self.library._name
        self._functions: dict[str, Callable[..., Any] | None] = {}
        self._recorded: list[CudnnMessage] | None = None  # inside record_errors
        self._read = 0  # how many recorded messages last_error has consumed

    @property
    def major(self) -> int:
        return self.generation.major

    def prototype(self, name: str) -> Prototype:
        if name in PROTOTYPES:
            return PROTOTYPES[name]
        for lib in self.generation.libraries:
            if lib.version_check == name:
                # cudnnStatus_t cudnn*VersionCheck(void) (§1.3), exported by the shim, defined by its sub-library.
                return Prototype(Status, (), lib.key, lib.key)
        raise UsageError(f"cudnnload has no prototype for {name} (cuDNN {self.major})")

    def owner(self, name: str) -> SubLibrary:
        """The sub-library whose loading a call through the shim needs."""
        return self.prototype(name).owner(self.generation)

    def optional(self, name: str) -> Callable[..., Any] | None:
        """The typed function, or None when the shim does not export it."""
        if name not in self._functions:
            proto = self.prototype(name)
            try:
                function = self.library[name]
            except AttributeError:
                self._functions[name] = None
            else:
                function.restype = proto.restype
                function.argtypes = proto.argtypes
                self._functions[name] = function
        return self._functions[name]

    def symbol(self, name: str) -> Callable[..., Any]:
        function = self.optional(name)
        if function is None:
            history = self.prototype(name).history
            raise SymbolMissing(
                f"{name} is not exported by this cuDNN {self.major} shim" + (f" ({history})" if history else ""),
                path=self.path, fix="use a cuDNN release that has it, or avoid the call")
        return function

    def exports(self, name: str) -> bool:
        return self.optional(name) is not None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        # Only C names go through the table, so that copy/pickle probing dunders still see AttributeError.
        if not name.startswith("cudnn"):
            raise AttributeError(name)
        return self.symbol(name)

    def version_checks(self) -> tuple[str, ...]:
        """The generation's ``cudnn*VersionCheck`` names, in load order (catalog)."""
        return tuple(lib.version_check for lib in self.generation.libraries if lib.version_check)

    def version(self) -> int:
        return int(self.symbol("cudnnGetVersion")())

    def release(self) -> Release:
        return decode_version(self.version())

    def cudart_version(self) -> int:
        return int(self.symbol("cudnnGetCudartVersion")())

    def max_device_version(self) -> int | None:
        function = self.optional("cudnnGetMaxDeviceVersion")
        return None if function is None else int(function())

    def get_property(self, kind: LibraryProperty) -> tuple[int, int]:
        """(status, value) of ``cudnnGetProperty``."""
        value = ctypes.c_int(-1)
        status = self.symbol("cudnnGetProperty")(kind, ctypes.byref(value))
        return int(status), value.value

    def error_string(self, status: int) -> str:
        raw: bytes | None = self.symbol("cudnnGetErrorString")(status)
        return (raw or b"").decode(errors="replace")

    def last_error(self) -> str | None:
        """cuDNN's reason for the latest failed call on this thread, read once.

        9.0+: ``cudnnGetLastErrorString`` (cleared by reading, §1.4). Older
        releases lack it; there the reason comes from the messages captured
        inside `record_errors` (the same text, measured on 8.9.7), consumed
        the same way. None when no reason is available.
        """
        function = self.optional("cudnnGetLastErrorString")
        if function is not None:
            buffer = ctypes.create_string_buffer(_LAST_ERROR_BYTES)
            function(buffer, _LAST_ERROR_BYTES)
            return buffer.value.decode(errors="replace") or None
        if self._recorded is None or self._read == len(self._recorded):
            return None
        self._read = len(self._recorded)
        return self._recorded[-1].reason or None

    def callback(self) -> tuple[int, int | None, int | None]:
        """(mask, user data, function address) of the installed callback (NULL: cuDNN's own logger)."""
        mask, user_data, function = ctypes.c_uint(), ctypes.c_void_p(), ctypes.c_void_p()
        self.symbol("cudnnGetCallback")(ctypes.byref(mask), ctypes.byref(user_data), ctypes.byref(function))
        return mask.value, user_data.value, function.value

    def set_callback(self, mask: int, user_data: int | None, function: int | None) -> None:
        self.symbol("cudnnSetCallback")(mask, user_data, function)

    @contextmanager
    def record_errors(self, severities: tuple[Severity, ...] = (Severity.ERROR,)) -> Iterator[list[CudnnMessage]]:
        """Capture cuDNN's messages through ``cudnnSetCallback``; restore the previous callback after.

        The callback fires without any CUDNN_LOG* variable (§4.2), so this is how
        cuDNN 8 reports the reason that 9.x returns from cudnnGetLastErrorString.
        """
        previous = self.callback()
        recorded: list[CudnnMessage] = []

        def on_message(severity: int, _user: int | None, debug: Any, msg: int | None) -> None:
            recorded.append(CudnnMessage(severity, debug.contents.cudnnStatus if debug else 0, message_lines(msg)))

        callback = Callback(on_message)  # referenced until restored: cuDNN keeps only the raw pointer
        self.set_callback(sum(severity.mask for severity in severities), None,
                          ctypes.cast(callback, ctypes.c_void_p).value)
        outer = self._recorded, self._read
        self._recorded, self._read = recorded, 0
        try:
            yield recorded
        finally:
            self._recorded, self._read = outer
            self.set_callback(*previous)
            if previous[0] == 0 and self.callback()[0] != 0:
                # 9.0 and 9.28 keep at least the error bit once a mask was set (measured:
                # cudnnSetCallback(0, NULL, NULL) reads back 2, and cuDNN's own logger then
                # prints "E! ..." blocks on stderr). A silent callback keeps them quiet, as before.
                self.set_callback(Severity.ERROR.mask, None, ctypes.cast(_SILENT, ctypes.c_void_p).value)
