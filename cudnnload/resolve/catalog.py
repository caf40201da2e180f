"""What each cuDNN generation looks like on disk: the single source of truth.

Every other stage asks this module, never hard-codes a soname or a status code.
Facts come from the real wheels (8.9.7.29, 9.0.0.312, 9.28.0.42 cu12/cu13, read
with readelf, LD_DEBUG and the headers) and, for cuDNN 7, from the 7.6 headers;
see ../shared/reference/cudnn-facts.md sections 1, 1.2, 1.5 and 4.3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Release and its decoders live in versions.py (no dataclasses import on the ELF memo path); re-exported here.
from cudnnload.resolve.versions import Release, decode_packed_version, decode_version, parse_release  # noqa: F401

# typing costs ~10 ms to import (the probe's child imports this module); type checkers treat any
# TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    Opener = Literal["app", "shim", "graph"]


@dataclass(frozen=True)
class Call:
    """One call an application makes, as the scenario app (fixtures/scenarios/app.c) and the probe's
    "as an application" mode make it; ``str()`` is the app's step syntax, ``check:cudnnOpsVersionCheck``."""

    kind: Literal["dlopen", "version", "check", "create", "finalize", "heuristic"]
    # dlopen: the application's dlopen of the shim (the app's own first step, "dlopen");
    # version: size_t f(void); check: status f(void); create: status f(void **);
    # finalize: a backend tensor descriptor created and finalized; heuristic: a backend engine
    # heuristic descriptor created (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR))
    function: str
    # What it returns when everything loads, by status name: None for success (or a value). The
    # finalize of an empty tensor descriptor is refused with BAD_PARAM; cudnnCreate without a GPU
    # returns NOT_INITIALIZED, which the caller decides (`needs_gpu`).
    healthy: str | None = None
    needs_gpu: bool = False

    def __str__(self) -> str:
        return self.kind if self.kind == "dlopen" else f"{self.kind}:{self.function}"


@dataclass(frozen=True)
class SubLibrary:
    """One file of a cuDNN generation (the shim counts as one too)."""

    key: str  # short name used everywhere: "shim", "graph", "ops_infer", ...
    stem: str  # file name without ".so.N": "libcudnn_graph"
    major: int
    opened_by: Opener  # who dlopens it at run time
    needs: tuple[str, ...]  # keys of the cuDNN libraries it DT_NEEDs
    version_check: str | None  # its cudnn*VersionCheck, exported by the shim
    version_symbol: str | None  # exported u32 (major<<16|minor<<8|patch), cudnn-facts §2
    required: bool = True  # an install without it is broken
    # its user goes on without it when it does not load (graph without heuristic or engines_precompiled);
    # only a load that kills or hangs the process still shows
    optional: bool = False
    # What an application reaches it with: the calls the shim routes to it (cudnn-facts §4.1, and the
    # exports of each sub-library), in words and by example, and the calls of the scenario app that
    # load it first.
    serves: str = ""
    examples: tuple[str, ...] = ()
    calls: tuple[Call, ...] = ()
    # the library its opener must have loaded first: graph opens it only then (measured with LD_DEBUG=libs on
    # 9.0, the 9.27 JIT graph and 9.28: heuristic only once engines_precompiled loaded, engines_tensor_ir only
    # once engines_runtime_compiled did; otherwise it is never asked for, and not mapped)
    after: str | None = None
    # not optional only from this release of its opener on: before it, its opener asks for it and goes on without it
    # (9.20's graph asks for engines_tensor_ir by all four names and cudnnBackendFinalize returns 2000 all the same;
    # from 9.21 it returns 1008: bench/cudnn9_releases.py)
    needed_from: Release | None = None
    # the library its opener must have loaded for this one's absence to fail its calls: without that one the opener
    # asks for this one all the same and goes on as if it were there (engines_tensor_ir: cudnnBackendFinalize returns
    # 1008 without it only where heuristic loaded; where heuristic or engines_precompiled is absent, as in every JIT
    # wheel, graph asks for it by all four names and returns what it returns with it: LD_DEBUG and
    # bench/cudnn9_releases.py on the 9.21 and 9.27 JIT wheels, cu12 and cu13, and 9.28.1 cu13)
    fails_after: str | None = None

    @property
    def soname(self) -> str:
        return f"{self.stem}.so.{self.major}"

    def names_tried(self, release: Release | None) -> tuple[str, ...]:
        """File names the opener asks dlopen for, most specific first.

        The v9 shim and graph try ``X.so.M.m.p``, ``X.so.M.m``, ``X.so.M`` and
        finally the bare ``X.so`` (format strings ``%s.%d.%d.%d``/``%s.%d.%d`` in
        the 9.28 shim, LD_DEBUG traces). The v8 shim asks for exactly ``X.so.8``.
        """
        if self.opened_by == "app" or self.major < 9:
            return (self.soname,)
        full = () if release is None else (
            f"{self.stem}.so.{release.major}.{release.minor}.{release.patch}",
            f"{self.stem}.so.{release.major}.{release.minor}",
        )
        return (*full, self.soname, f"{self.stem}.so")

    def tried_before_own(self, name: str, release: Release | None = None) -> bool:
        """Whether the opener asks for ``name`` before this library's soname (`names_tried`): of ``release``,
        else of any release (cuDNN 9's ``X.so.9.M.m.p`` and ``X.so.9.M``)."""
        if release is not None:
            tried = self.names_tried(release)
            return name in tried[:tried.index(self.soname)]
        return self.opened_by != "app" and self.major >= 9 and name.startswith(f"{self.soname}.")


def _v9(key: str, opened_by: Opener, needs: tuple[str, ...], check: str | None = None,
        symbol: str | None = None, required: bool = True, serves: str = "", examples: tuple[str, ...] = (),
        calls: tuple[Call, ...] = (), optional: bool = False, after: str | None = None,
        needed_from: Release | None = None, fails_after: str | None = None) -> SubLibrary:
    stem = "libcudnn" if key == "shim" else f"libcudnn_{key}"
    checks = (Call("check", check),) if check else ()
    return SubLibrary(key, stem, 9, opened_by, needs, check, symbol, required, optional, serves, examples,
                      checks + calls, after, needed_from, fails_after)


def _v8(key: str, needs: tuple[str, ...], check: str | None, symbol: str | None, serves: str = "",
        examples: tuple[str, ...] = (), calls: tuple[Call, ...] = ()) -> SubLibrary:
    stem = "libcudnn" if key == "shim" else f"libcudnn_{key}"
    checks = (Call("check", check),) if check else ()
    return SubLibrary(key, stem, 8, "app" if key == "shim" else "shim", needs, check, symbol, True, False, serves,
                      examples, checks + calls)


# The calls of the scenario app and the application-mode probe (fixtures/scenarios/app.c), each at
# home in one sub-library, in an application's order: the version, the checks, a handle, then the
# operations. Results measured on the 8.5, 8.9.7, 9.0 and 9.28 wheels (2026-11-24).
GET_VERSION = Call("version", "cudnnGetVersion")
CREATE_HANDLE = Call("create", "cudnnCreate", needs_gpu=True)
FINALIZE = Call("finalize", "cudnnBackendFinalize", healthy="CUDNN_STATUS_BAD_PARAM")
HEURISTIC = Call("heuristic", "cudnnBackendCreateDescriptor")


@dataclass(frozen=True)
class Generation:
    major: int
    libraries: tuple[SubLibrary, ...]  # in load order: leaves first, shim last
    statuses: dict[int, str]
    exercise: tuple[Call, ...] = ()  # what the scenario app and the application-mode probe call, in order

    @property
    def shim(self) -> SubLibrary:
        return self.library("shim")

    def library(self, key: str) -> SubLibrary:
        for lib in self.libraries:
            if lib.key == key:
                return lib
        raise KeyError(f"cuDNN {self.major} has no sub-library {key!r}")

    @property
    def sublibraries(self) -> tuple[SubLibrary, ...]:
        return tuple(lib for lib in self.libraries if lib.key != "shim")

    def status_name(self, code: int) -> str:
        return self.statuses.get(code, f"CUDNN_UNKNOWN_STATUS ({code})")

    def status_code(self, name: str) -> int:
        return next(code for code, known in self.statuses.items() if known == name)

    def serving(self, call: Call) -> tuple[SubLibrary, ...]:
        """The libraries ``call`` needs, in the order it loads them (graph before the engines it opens)."""
        return tuple(lib for lib in self.libraries if call in lib.calls)


# cudnnStatus_t, cudnn_ops_infer.h (8.x); 7.x is the same table without 14.
_STATUS_V8 = {
    0: "CUDNN_STATUS_SUCCESS", 1: "CUDNN_STATUS_NOT_INITIALIZED", 2: "CUDNN_STATUS_ALLOC_FAILED",
    3: "CUDNN_STATUS_BAD_PARAM", 4: "CUDNN_STATUS_INTERNAL_ERROR", 5: "CUDNN_STATUS_INVALID_VALUE",
    6: "CUDNN_STATUS_ARCH_MISMATCH", 7: "CUDNN_STATUS_MAPPING_ERROR", 8: "CUDNN_STATUS_EXECUTION_FAILED",
    9: "CUDNN_STATUS_NOT_SUPPORTED", 10: "CUDNN_STATUS_LICENSE_ERROR",
    11: "CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING", 12: "CUDNN_STATUS_RUNTIME_IN_PROGRESS",
    13: "CUDNN_STATUS_RUNTIME_FP_OVERFLOW", 14: "CUDNN_STATUS_VERSION_MISMATCH",
}
_STATUS_V7 = {code: name for code, name in _STATUS_V8.items() if code != 14}

# cudnnStatus_t, cudnn_graph.h (9.28); category = code // 1000. 1008, 2011, 2012,
# 3013 and 3014 are new since 9.0 and unknown to 9.0's cudnnGetErrorString.
_STATUS_V9 = {
    0: "CUDNN_STATUS_SUCCESS",
    1001: "CUDNN_STATUS_NOT_INITIALIZED", 1002: "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
    1003: "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH", 1004: "CUDNN_STATUS_DEPRECATED",
    1005: "CUDNN_STATUS_LICENSE_ERROR", 1006: "CUDNN_STATUS_RUNTIME_IN_PROGRESS",
    1007: "CUDNN_STATUS_RUNTIME_FP_OVERFLOW", 1008: "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
    2000: "CUDNN_STATUS_BAD_PARAM", 2001: "CUDNN_STATUS_INVALID_VALUE",
    2002: "CUDNN_STATUS_BAD_PARAM_NULL_POINTER", 2003: "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER",
    2004: "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED", 2005: "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
    2006: "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT", 2007: "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH",
    2008: "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH", 2009: "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES",
    2010: "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE", 2011: "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH",
    2012: "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE",
    3000: "CUDNN_STATUS_NOT_SUPPORTED", 3001: "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN",
    3002: "CUDNN_STATUS_NOT_SUPPORTED_SHAPE", 3003: "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE",
    3004: "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT",
    3005: "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER",
    3006: "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART",
    3007: "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
    3008: "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
    3009: "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE",
    3010: "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT",
    3011: "CUDNN_STATUS_NOT_SUPPORTED_PADDING", 3012: "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM",
    3013: "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API",
    3014: "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE",
    4000: "CUDNN_STATUS_INTERNAL_ERROR", 4001: "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED",
    4002: "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE",
    4003: "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
    4004: "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    4005: "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM",
    4006: "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED",
    5000: "CUDNN_STATUS_EXECUTION_FAILED", 5001: "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
    5002: "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS", 5003: "CUDNN_STATUS_EXECUTION_FAILED_CUDART",
    5004: "CUDNN_STATUS_EXECUTION_FAILED_CURAND",
}

# cuDNN 9 (cudnn-facts §1, §1.1). Load order = leaves first: graph, what graph
# opens, ops, then cnn/adv/ext, shim last (loading-in-the-wild, "safe preload").
# ext and tensor_ir are absent from 9.0; ext is expected only when the shim
# exports cudnnSubquadraticOpsVersionCheck (discovery checks that).
_ENGINES = dict(serves="the graph API's execution plans, which PyTorch and JAX run their convolutions through",
                examples=("cudnnBackendFinalize",), calls=(FINALIZE,))
_OPTIONAL_ENGINES = dict(serves="extra engines of the graph API (precompiled kernels and their heuristics); without "
                         "them convolutions run through the runtime-compiled engines, compiled at first use",
                         examples=("cudnnBackendFinalize",), calls=(FINALIZE,), optional=True)
V9 = Generation(9, (
    _v9("graph", "shim", (), "cudnnGraphVersionCheck", "cudnn_graph_version",
        serves="every call that is not an operation: the version and error getters, handles and the graph API",
        examples=("cudnnGetVersion", "cudnnCreate", "cudnnGetErrorString", "cudnnBackendCreateDescriptor"),
        calls=(GET_VERSION, FINALIZE, HEURISTIC, CREATE_HANDLE)),
    # graph runs without these two (measured 2026-11-24: 9.28 on CPU with a libcuda stub, cudnnBackendFinalize
    # as healthy without either; 9.19 on an H100, PyTorch's and JAX's convolutions run without either): fewer
    # engines, kernels compiled at first use instead. One of another release does not load beside graph
    # (undefined symbol, version libcudnn_graph.so.9) and counts as absent.
    _v9("heuristic", "graph", ("graph",), required=False, after="engines_precompiled",
        **_OPTIONAL_ENGINES),  # type: ignore[arg-type]
    _v9("engines_precompiled", "graph", ("graph",), required=False, **_OPTIONAL_ENGINES),  # type: ignore[arg-type]
    _v9("engines_runtime_compiled", "graph", ("graph",), **_ENGINES),  # type: ignore[arg-type]
    _v9("engines_tensor_ir", "graph", ("graph",), required=False, after="engines_runtime_compiled",
        needed_from=Release(9, 21, 0), fails_after="heuristic", **_ENGINES),  # type: ignore[arg-type]
    _v9("ops", "shim", ("graph",), "cudnnOpsVersionCheck", "cudnn_ops_infer_version",
        serves="tensor, filter, activation, pooling, softmax and normalization calls",
        examples=("cudnnCreateTensorDescriptor", "cudnnActivationForward"),
        calls=(Call("create", "cudnnCreateTensorDescriptor"),)),
    _v9("cnn", "shim", ("ops", "graph"), "cudnnCnnVersionCheck", serves="convolution calls",
        examples=("cudnnCreateConvolutionDescriptor", "cudnnConvolutionForward"),
        calls=(Call("create", "cudnnCreateConvolutionDescriptor"),)),
    _v9("adv", "shim", ("ops", "graph"), "cudnnAdvVersionCheck", "cudnn_adv_infer_version",
        serves="RNN, multi-head attention and CTC calls", examples=("cudnnCreateRNNDataDescriptor", "cudnnRNNForward"),
        calls=(Call("create", "cudnnCreateRNNDataDescriptor"),)),
    _v9("ext", "shim", (), "cudnnSubquadraticOpsVersionCheck", required=False,
        serves="the subquadratic and GNN operations", examples=("cudnnCausalConv1dForward",)),
    _v9("shim", "app", ()),
), _STATUS_V9, exercise=(
    GET_VERSION, Call("check", "cudnnGraphVersionCheck"), Call("check", "cudnnOpsVersionCheck"),
    Call("check", "cudnnCnnVersionCheck"), Call("check", "cudnnAdvVersionCheck"),
    Call("check", "cudnnSubquadraticOpsVersionCheck"), CREATE_HANDLE, Call("create", "cudnnCreateTensorDescriptor"),
    Call("create", "cudnnCreateConvolutionDescriptor"), Call("create", "cudnnCreateRNNDataDescriptor"),
    FINALIZE, HEURISTIC))

# cuDNN 8: the infer/train split; the v8 shim opens exactly "X.so.8" and aborts
# the process when one is missing (cudnn-facts §1.2). Even cudnnGetVersion loads ops_infer.
V8 = Generation(8, (
    _v8("ops_infer", (), "cudnnOpsInferVersionCheck", "cudnn_ops_infer_version",
        serves="every call: cudnnGetVersion and cudnnCreate load it first; tensor, filter and activation calls",
        examples=("cudnnGetVersion", "cudnnCreate", "cudnnCreateTensorDescriptor"),
        calls=(GET_VERSION, Call("create", "cudnnCreateTensorDescriptor"), CREATE_HANDLE)),
    _v8("ops_train", ("ops_infer",), "cudnnOpsTrainVersionCheck", "cudnn_ops_train_version",
        serves="the backward of activation, pooling, softmax and normalization",
        examples=("cudnnActivationBackward",)),
    _v8("cnn_infer", ("ops_infer",), "cudnnCnnInferVersionCheck", "cudnn_cnn_infer_version",
        serves="forward convolution and the backend (graph) API",
        examples=("cudnnCreateConvolutionDescriptor", "cudnnConvolutionForward", "cudnnBackendFinalize"),
        calls=(Call("create", "cudnnCreateConvolutionDescriptor"), Call("finalize", "cudnnBackendFinalize",
                                                                        healthy="CUDNN_STATUS_BAD_PARAM"))),
    _v8("cnn_train", ("ops_infer", "ops_train", "cnn_infer"), "cudnnCnnTrainVersionCheck", None,
        serves="convolution backward", examples=("cudnnConvolutionBackwardFilter",)),
    _v8("adv_infer", ("ops_infer",), "cudnnAdvInferVersionCheck", "cudnn_adv_infer_version",
        serves="RNN inference and multi-head attention forward", examples=("cudnnCreateRNNDataDescriptor",),
        calls=(Call("create", "cudnnCreateRNNDataDescriptor"),)),
    _v8("adv_train", ("ops_infer", "ops_train", "adv_infer"), "cudnnAdvTrainVersionCheck", None,
        serves="RNN training and attention backward", examples=("cudnnRNNBackwardData_v8",)),
    _v8("shim", (), None, None),
), _STATUS_V8, exercise=(
    GET_VERSION, Call("check", "cudnnOpsInferVersionCheck"), Call("check", "cudnnOpsTrainVersionCheck"),
    Call("check", "cudnnCnnInferVersionCheck"), Call("check", "cudnnCnnTrainVersionCheck"),
    Call("check", "cudnnAdvInferVersionCheck"), Call("check", "cudnnAdvTrainVersionCheck"), CREATE_HANDLE,
    Call("create", "cudnnCreateTensorDescriptor"), Call("create", "cudnnCreateConvolutionDescriptor"),
    Call("create", "cudnnCreateRNNDataDescriptor"), Call("finalize", "cudnnBackendFinalize",
                                                          healthy="CUDNN_STATUS_BAD_PARAM")))

# cuDNN 7: one monolithic library, no VersionCheck, no sub-libraries, no graph API.
_V7_CALLS = (GET_VERSION, CREATE_HANDLE, Call("create", "cudnnCreateTensorDescriptor"),
             Call("create", "cudnnCreateConvolutionDescriptor"))
V7 = Generation(7, (SubLibrary("shim", "libcudnn", 7, "app", (), None, None, serves="every call",
                               examples=("cudnnGetVersion", "cudnnCreate"), calls=_V7_CALLS),),
                _STATUS_V7, exercise=_V7_CALLS)

GENERATIONS: dict[int, Generation] = {7: V7, 8: V8, 9: V9}


def generation(major: int) -> Generation:
    try:
        return GENERATIONS[major]
    except KeyError:
        raise ValueError(f"cuDNN {major} is not a known generation (known: 7, 8, 9)") from None


_SONAME = re.compile(r"^(libcudnn(?:_[a-z_]+)?)\.so(?:\.(\d+))?(?:\.\d+)*$")


# auditwheel's name for a library it bundles into a wheel: its own name with a hash of its contents,
# ``libcudnn-463fd6d5.so.8.9.7`` (CTranslate2 up to 4.6.2 ships cuDNN's shim so, as its SONAME too)
_AUDITWHEEL = re.compile(r"^(libcudnn[a-z_]*)-[0-9a-f]{8}(\.so\.\d+(?:\.\d+)*)$")


def bundled_copy(name: str) -> bool:
    """``name`` is auditwheel's name for a cuDNN library it bundled into a wheel (a file name or its SONAME): a copy
    that opens the rest of its release by the catalog's names, never from its own folder."""
    return _AUDITWHEEL.match(name) is not None


def classify_bundled(name: str) -> SubLibrary | None:
    """The catalog entry a file name or SONAME belongs to, an auditwheel-renamed copy's included
    (``libcudnn-463fd6d5.so.8.9.7`` -> v8 shim)."""
    found = _AUDITWHEEL.match(name)
    return classify(found.group(1) + found.group(2)) if found else classify(name)


def classify(file_name: str) -> SubLibrary | None:
    """The catalog entry a file name belongs to: ``libcudnn_ops.so.9.28.0`` -> v9 ops."""
    match = _SONAME.match(file_name)
    if not match or match.group(2) is None:
        return None
    stem, major = match.group(1), int(match.group(2))
    gen = GENERATIONS.get(major)
    if gen is None:
        return None
    return next((lib for lib in gen.libraries if lib.stem == stem), None)


# Libraries that dlopen another while they load (in their initializers), by the start of their soname: measured
# with LD_DEBUG=libs, each wheel's libraries dlopened alone beside the wheels they need ("find library=libcuda.so.1
# [0]; searching" between "calling init" lines). The first entry that fits a file decides. cuBLASLt opens the
# driver; 11.11.3.6 then the unversioned libnvrtc.so (the name only a toolkit's -dev link answers; nvidia-cuda-
# nvrtc-cu11 ships libnvrtc.so.11.2), told by the file holding that name (11.10.3.66 holds none, 12.9 and 13.5 only
# the versioned name they open later). cuDNN 9.0 and 9.28's precompiled engines open the driver. cuDNN 8's
# cnn_infer: 8.5.0 the unversioned libcuda.so, 8.6.0 libnvrtc.so then libcuda.so, 8.7.0 libcuda.so.1 then
# libnvrtc.so, 8.8.1 libnvrtc.so then libcuda.so.1 twice, 8.9.6 and 8.9.7 libcuda.so.1, as does 8.9.7's cnn_train
# (8.5 and 8.6's open nothing). 8.8.1's cnn_infer leaves no error behind when its dlopen fails (its shim, which
# aborts on the one cuBLASLt left, goes on after it, no driver here); 8.7.0's does: with cuBLASLt preloaded (no
# initializer left to run in the shim's dlopen of ops_infer) and no libnvrtc.so, its shim aborts at
# cudnnCnnInferVersionCheck on "libnvrtc.so: cannot open ..." (bench/cudnn8_differential.py, seed 2's 2-28; a name
# already in the process, cuBLASLt's libnvrtc.so, is no search, which LD_DEBUG does not show: the measure that
# gave 8.7.0 libcuda.so.1 alone had it). 8.5 to 8.9.6 against the real shim, with and without an NVRTC answering
# libnvrtc.so: bench/cudnn8_families.py; seeded layouts of them: bench/cudnn8_differential.py. Each is looked up
# from the library that opens it. None of the other libraries of those wheels opens anything as it loads.
@dataclass(frozen=True)
class OpensAtLoad:
    prefix: str  # of the soname
    names: tuple[str, ...]  # what it dlopens, in order
    holding: bytes | None = None  # only a file that holds this NUL-terminated name
    releases: tuple[Release, Release] | None = None  # only a file of a release in [first, last)
    leaves_error: bool = True  # False: its own code reads dlerror() after a dlopen of its fails: none is left


_CUDNN_8_6, _CUDNN_8_7, _CUDNN_8_8, _CUDNN_8_9 = Release(8, 6, 0), Release(8, 7, 0), Release(8, 8, 0), Release(8, 9, 0)
OPENS_AT_LOAD: tuple[OpensAtLoad, ...] = (
    OpensAtLoad("libcublasLt.so.11", ("libcuda.so.1", "libnvrtc.so"), holding=b"libnvrtc.so"),
    OpensAtLoad("libcublasLt.so.", ("libcuda.so.1",)),
    OpensAtLoad("libcudnn_engines_precompiled.so.9", ("libcuda.so.1",)),
    OpensAtLoad("libcudnn_cnn_infer.so.8", ("libcuda.so",), releases=(Release(8, 0, 0), _CUDNN_8_6)),
    OpensAtLoad("libcudnn_cnn_infer.so.8", ("libnvrtc.so", "libcuda.so"), releases=(_CUDNN_8_6, _CUDNN_8_7)),
    OpensAtLoad("libcudnn_cnn_infer.so.8", ("libcuda.so.1", "libnvrtc.so"), releases=(_CUDNN_8_7, _CUDNN_8_8)),
    OpensAtLoad("libcudnn_cnn_infer.so.8", ("libnvrtc.so", "libcuda.so.1"), releases=(_CUDNN_8_8, _CUDNN_8_9),
                leaves_error=False),
    OpensAtLoad("libcudnn_cnn_infer.so.8", ("libcuda.so.1",)),
    OpensAtLoad("libcudnn_cnn_train.so.8", (), releases=(Release(8, 0, 0), _CUDNN_8_9)),
    OpensAtLoad("libcudnn_cnn_train.so.8", ("libcuda.so.1",)),
)


def dlopens_at_load(soname: str, release: Release | None = None,
                    holds: Callable[[bytes], bool] | None = None) -> tuple[str, ...]:
    """What the library of ``soname`` dlopens as it loads (`OPENS_AT_LOAD`): the first entry its release (when
    known) and its file's contents (``holds``, when it can be read) fit; an entry that asks what is not known does
    not fit."""
    entry = opens_entry(soname, release, holds)
    return entry.names if entry is not None else ()


def opens_entry(soname: str, release: Release | None = None,
                holds: Callable[[bytes], bool] | None = None) -> OpensAtLoad | None:
    """The entry of `OPENS_AT_LOAD` that fits the library of ``soname`` (`dlopens_at_load`); None for one that opens
    nothing as it loads."""
    for entry in OPENS_AT_LOAD:
        if not soname.startswith(entry.prefix):
            continue
        if entry.releases is not None and (release is None or not entry.releases[0] <= release < entry.releases[1]):
            continue
        if entry.holding is not None and (holds is None or not holds(entry.holding)):
            continue
        return entry
    return None


def distribution_cuda(name: str) -> int | None:
    """The CUDA major a pip distribution's name says (``nvidia-cudnn-cu12``: 12); None where it says none
    (CUDA 13's ``nvidia-cublas``)."""
    suffix = name.rpartition("-cu")[2]
    return int(suffix) if suffix.isdigit() else None


# Third-party libraries cuDNN needs, with the PyPI wheel that provides them.
# cu12/cu13 wheels install them as siblings of nvidia/cudnn (RUNPATH
# $ORIGIN/../../cublas/lib etc.). libcuda.so.1 comes only with the driver.
def dependency_requirement(soname: str) -> str | None:
    """The pip distribution that ships a CUDA library cuDNN or a framework needs, by soname, as a requirement of
    that CUDA major (CUDA 13's wheels carry no ``-cu13`` suffix: ``nvidia-cublas>=13,<14``); None when pip has none
    (the driver's libcuda, zlib, a CUDA 10 runtime). The one table of what pip ships: what a framework's objects
    NEED and lack (`consumers`) and what a fix installs (`judge.fixes`) both read it."""
    match = re.match(r"lib(cublasLt|cublas|nvrtc-builtins|nvrtc|cudart)\.so\.(\d+)", soname)
    if match is None:
        return None
    what, cuda = match.group(1), int(match.group(2))
    base = {"cublasLt": "nvidia-cublas", "cublas": "nvidia-cublas", "nvrtc": "nvidia-cuda-nvrtc",
            "nvrtc-builtins": "nvidia-cuda-nvrtc", "cudart": "nvidia-cuda-runtime"}[what]
    if cuda >= 13:
        return f"{base}>={cuda},<{cuda + 1}"
    if cuda == 11 and what.startswith("nvrtc"):
        return "nvidia-cuda-nvrtc-cu11"
    return f"{base}-cu{cuda}" if cuda in (11, 12) else None


def nvrtc_soname(cuda: int) -> str:
    """The soname of the NVRTC of CUDA ``cuda``, the file its wheel ships (CUDA 11's kept 11.2 from 11.2 on:
    nvidia-cuda-nvrtc-cu11 11.8.89 ships libnvrtc.so.11.2; 12.9.86 libnvrtc.so.12)."""
    return "libnvrtc.so.11.2" if cuda == 11 else f"libnvrtc.so.{cuda}"


def dependency_folder(requirement: str, site: str) -> str:
    """The folder of ``site`` where pip puts the libraries of the CUDA distribution ``requirement``
    (`dependency_requirement`): CUDA 13's wheels share ``nvidia/cu13/lib``; CUDA 11's and 12's each have their own,
    named after the distribution (``nvidia-cuda-nvrtc-cu12``: ``nvidia/cuda_nvrtc/lib``)."""
    suffixed = re.fullmatch(r"nvidia-(.+?)-cu(1[12])", requirement)
    folder = suffixed.group(1).replace("-", "_") if suffixed is not None else "cu13"
    return f"{site.rstrip('/')}/nvidia/{folder}/lib"


DEPENDENCY_SOURCES: dict[str, str] = {
    "libcuda.so.1": "the NVIDIA driver (not pip-installable)",
    "libz.so.1": "zlib (apt install zlib1g / dnf install zlib)",
    "libstdc++.so.6": "the GCC C++ runtime, new enough (apt install libstdc++6 / dnf install libstdc++, or in a conda "
                      "environment conda install -c conda-forge libstdcxx-ng)",
    "libgcc_s.so.1": "the GCC runtime (apt install libgcc-s1 / dnf install libgcc)",
    "libcublas.so.11": "pip install nvidia-cublas-cu11",
    "libcublasLt.so.11": "pip install nvidia-cublas-cu11",
    "libcublas.so.12": "pip install nvidia-cublas-cu12",
    "libcublasLt.so.12": "pip install nvidia-cublas-cu12",
    "libcublasLt.so.13": "pip install 'nvidia-cublas>=13,<14'",
    "libnvrtc.so.12": "pip install nvidia-cuda-nvrtc-cu12",
    "libnvrtc.so.13": "pip install 'nvidia-cuda-nvrtc>=13,<14'",
    # a cuDNN built against a shared CUDA runtime (custom 7.x builds; the wheels link it statically)
    "libcudart.so.10.0": "the CUDA 10.0 runtime (apt install cuda-cudart-10-0, or conda install cudatoolkit=10.0)",
    "libcudart.so.10.1": "the CUDA 10.1 runtime (apt install cuda-cudart-10-1, or conda install cudatoolkit=10.1)",
    "libcudart.so.10.2": "the CUDA 10.2 runtime (apt install cuda-cudart-10-2, or conda install cudatoolkit=10.2)",
    "libcudart.so.11.0": "pip install nvidia-cuda-runtime-cu11",
    "libcudart.so.12": "pip install nvidia-cuda-runtime-cu12",
}


@dataclass(frozen=True)
class CudnnPin:
    """What a requirement of a cuDNN wheel installs, as pip reads it."""

    project: str  # its canonical name: nvidia-cudnn-cu12, nvidia-cudnn-jit-cu13
    major: int | None  # the cuDNN major: an exact pin's, or a range's within one major (``>=9,<10``)
    release: Release | None  # the release an exact pin names (one ``==`` clause); a range's, pip decides


def cudnn_pin(requirement: str) -> CudnnPin | None:
    """The one reader of a cuDNN wheel requirement (``nvidia-cudnn-cu13==9.19.0.56``, ``nvidia-cudnn-cu12>=9,<10``);
    None for a requirement of anything else, or one pip could not read."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        wanted = Requirement(requirement)
    except InvalidRequirement:
        return None
    project = canonicalize_name(wanted.name)
    if not project.startswith("nvidia-cudnn"):
        return None
    # (``==9.1.*`` is a range: pip decides)
    exact = [c.version for c in wanted.specifier if c.operator in ("==", "===") and not c.version.endswith(".*")]
    release = None
    if len(exact) == 1:
        try:
            release = parse_release(".".join(exact[0].split(".")[:3]))
        except ValueError:
            release = None
    firsts = {c.operator: int(c.version.split(".")[0]) for c in wanted.specifier if c.version.split(".")[0].isdigit()}
    below = [c.version for c in wanted.specifier if c.operator == "<"]
    major = None
    if {"==", "==="} & set(firsts) and len(wanted.specifier) == 1:
        major = firsts.get("==", firsts.get("==="))
    elif set(firsts) == {">=", "<"} and len(wanted.specifier) == 2 and firsts["<"] == firsts[">="] + 1 \
            and set(below[0].split(".")[1:]) <= {"0"}:
        major = firsts[">="]
    return CudnnPin(project, major, release)
