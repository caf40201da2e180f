"""The few CUDA driver calls a first convolution needs, through ctypes, with cuda.bindings' calling convention.

Importing cuda-python's ``cuda.bindings.driver`` (and ``.runtime``) costs 50-150 ms and holds the
GIL while it runs, so a start-up in a background thread (`cudnnload.start`) cannot hide it behind
the application's own imports (H200 machine, 2026-11-22: importing cudnnload's dispatch path and
the bindings took 390 ms against the 230 ms the driver needs for its context). This module binds
``libcuda.so.1`` on first use instead: each function here takes the arguments and returns
``(CUresult, outputs...)`` as its namesake in ``cuda.bindings.driver`` does, so `cudnnload.loading.gpu.checked`
calls either. `cudnnload.loading.gpu.gpu_facts` (the doctor's report) still asks cuda-python.

`prepare_context` starts the device's primary context in a thread: ``cuInit`` and
``cuDevicePrimaryCtxRetain`` take about 105 + 125 ms on an H200 (measured), and with the GIL
released during both the caller goes on with its imports and dlopens meanwhile.
"""

from __future__ import annotations

import ctypes
import os
import threading

# Nothing else is imported here at run time: `cudnnload.start` imports this module before it starts the
# context, and every millisecond spent importing then is a millisecond later for the first result
# (typing and cudnnload.errors together cost ~5 ms on the 2-core development machine).
TYPE_CHECKING = False  # type checkers treat this name as true
if TYPE_CHECKING:
    from typing import Any, ClassVar

_lib: ctypes.CDLL | None = None
_lib_lock = threading.Lock()
_u64, _int, _void = ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p


def library() -> ctypes.CDLL:
    """libcuda.so.1, loaded once; DriverUnavailable when the dynamic linker cannot find it (the code is
    cuda.bindings' for that case, DynamicLibNotFoundError, cudnn-facts §8)."""
    global _lib
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                refuse_planted_driver()
                try:
                    _lib = ctypes.CDLL("libcuda.so.1")
                except OSError:
                    from cudnnload.errors import DriverUnavailable

                    raise DriverUnavailable("DynamicLibNotFoundError",
                                            "no NVIDIA driver was found (libcuda.so.1 cannot be loaded)",
                                            fix="install the NVIDIA driver, or in a container run with --gpus all"
                                            ) from None
    return _lib


def refuse_planted_driver() -> None:
    """DriverUnavailable when this process's dlopen of libcuda.so.1 would map a file someone other than root
    and this user put on its LD_LIBRARY_PATH (`resolve.access.planted_on_path`): cudnnload runs no such code."""
    if not os.environ.get("LD_LIBRARY_PATH"):
        return  # the system's folders only: root's
    from cudnnload.resolve.access import planted_on_path

    why = planted_on_path("libcuda.so.1", os.environ)
    if why is not None:
        from cudnnload.errors import DriverUnavailable

        raise DriverUnavailable("UntrustedLibrary", f"the NVIDIA driver was not loaded: {why}",
                                fix="take that entry off LD_LIBRARY_PATH")


class CUresult(int):
    """A CUresult code; ``name`` is the driver's own (``cuGetErrorName``)."""

    CUDA_SUCCESS: ClassVar[CUresult]

    @property
    def name(self) -> str:
        text = ctypes.c_char_p()
        if library().cuGetErrorName(int(self), ctypes.byref(text)) != 0 or not text.value:
            return f"CUresult {int(self)}"
        return text.value.decode(errors="replace")


CUresult.CUDA_SUCCESS = CUresult(0)


class CUpointer_attribute:  # noqa: N801 (cuda.h's and cuda.bindings' name)
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


class CUdevice_attribute:  # noqa: N801
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def CUcontext(value: int = 0) -> int:  # noqa: N802 (cuda.bindings' constructor name)
    return value


def _call(name: str, *args: Any) -> CUresult:
    return CUresult(getattr(library(), name)(*args))


def _out(name: str, kind: Any, *args: Any) -> tuple[CUresult, Any]:
    value = kind()
    result = _call(name, *args, ctypes.byref(value))
    return result, value.value or 0


def cuGetErrorString(result: int) -> tuple[CUresult, bytes]:  # noqa: N802 (the driver's names throughout)
    text = ctypes.c_char_p()
    status = _call("cuGetErrorString", _int(int(result)), ctypes.byref(text))
    return status, text.value or b""


def cuInit(flags: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuInit", _int(flags)),)


def cuDriverGetVersion() -> tuple[CUresult, int]:  # noqa: N802
    return _out("cuDriverGetVersion", _int)


def cuDeviceGetCount() -> tuple[CUresult, int]:  # noqa: N802
    return _out("cuDeviceGetCount", _int)


def cuDeviceGet(ordinal: int) -> tuple[CUresult, int]:  # noqa: N802
    value = _int()
    result = _call("cuDeviceGet", ctypes.byref(value), _int(ordinal))
    return result, value.value


def cuDeviceGetName(length: int, device: int) -> tuple[CUresult, bytes]:  # noqa: N802
    buffer = ctypes.create_string_buffer(length)
    return _call("cuDeviceGetName", buffer, _int(length), _int(device)), buffer.raw


def cuDeviceGetPCIBusId(length: int, device: int) -> tuple[CUresult, bytes]:  # noqa: N802
    buffer = ctypes.create_string_buffer(length)
    return _call("cuDeviceGetPCIBusId", buffer, _int(length), _int(device)), buffer.raw


def cuDeviceGetAttribute(attribute: int, device: int) -> tuple[CUresult, int]:  # noqa: N802
    value = _int()
    result = _call("cuDeviceGetAttribute", ctypes.byref(value), _int(attribute), _int(device))
    return result, value.value


def cuDeviceTotalMem(device: int) -> tuple[CUresult, int]:  # noqa: N802
    value = ctypes.c_size_t()
    result = _call("cuDeviceTotalMem_v2", ctypes.byref(value), _int(device))
    return result, value.value


def cuDevicePrimaryCtxRetain(device: int) -> tuple[CUresult, int]:  # noqa: N802
    value = _void()
    result = _call("cuDevicePrimaryCtxRetain", ctypes.byref(value), _int(device))
    return result, value.value or 0


def cuDevicePrimaryCtxRelease(device: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuDevicePrimaryCtxRelease_v2", _int(device)),)


def cuCtxSetCurrent(context: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuCtxSetCurrent", _void(context or None)),)


def cuCtxGetCurrent() -> tuple[CUresult, int]:  # noqa: N802
    return _out("cuCtxGetCurrent", _void)


def cuCtxGetDevice() -> tuple[CUresult, int]:  # noqa: N802
    return _out("cuCtxGetDevice", _int)


def cuCtxSynchronize() -> tuple[CUresult]:  # noqa: N802
    return (_call("cuCtxSynchronize"),)


def cuMemAlloc(nbytes: int) -> tuple[CUresult, int]:  # noqa: N802
    value = _u64()
    result = _call("cuMemAlloc_v2", ctypes.byref(value), ctypes.c_size_t(nbytes))
    return result, value.value


def cuMemFree(pointer: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemFree_v2", _u64(pointer)),)


def cuMemcpyHtoD(device: int, host: int, nbytes: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemcpyHtoD_v2", _u64(device), _void(host), ctypes.c_size_t(nbytes)),)


def cuMemcpyDtoH(host: int, device: int, nbytes: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemcpyDtoH_v2", _void(host), _u64(device), ctypes.c_size_t(nbytes)),)


def cuMemHostRegister(host: int, nbytes: int, flags: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemHostRegister_v2", _void(host), ctypes.c_size_t(nbytes), ctypes.c_uint(flags)),)


def cuMemHostUnregister(host: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemHostUnregister", _void(host)),)


def cuMemsetD8(pointer: int, value: int, count: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemsetD8_v2", _u64(pointer), ctypes.c_ubyte(value), ctypes.c_size_t(count)),)


def cuPointerGetAttribute(attribute: int, pointer: int) -> tuple[CUresult, int]:  # noqa: N802
    """For the integer-valued attributes (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)."""
    value = _int()
    result = _call("cuPointerGetAttribute", ctypes.byref(value), _int(attribute), _u64(pointer))
    return result, value.value


# Present where the NVIDIA kernel module made device nodes: only then does prepare_context start anything.
GPU_DEVICE_NODE = "/dev/nvidiactl"
_prepared: dict[int, threading.Thread] = {}
_prepared_lock = threading.Lock()  # guards _prepared (not _contexts_lock: a retain holds that ~120 ms)
_contexts_lock = threading.Lock()  # guards _primary
_primary: dict[int, int] = {}  # device ordinal -> its primary context, retained here for the process
# Set once a context thread's cuInit has returned (whatever it returned): cudnnload.start's threads begin
# their own work then (cudnnload.dispatch.starting says why).
INITIALIZED = threading.Event()


def _forked() -> None:
    """In the child of a fork(): the context threads are not there and their locks may be held; the driver
    itself cannot be used from a child of a process that initialised it (CUDA is not fork-safe), so nothing
    of the parent's is kept: a call fails with the driver's own error instead of waiting for ever."""
    global _lib_lock, _prepared_lock, _contexts_lock, INITIALIZED
    _lib_lock, _prepared_lock, _contexts_lock = threading.Lock(), threading.Lock(), threading.Lock()
    _prepared.clear()
    _primary.clear()
    INITIALIZED = threading.Event()


os.register_at_fork(after_in_child=_forked)


def prepare_context(ordinal: int = 0) -> threading.Thread | None:
    """Start ``cuInit`` and device ``ordinal``'s `primary_context` in a thread (once per process and
    device; not a daemon, so that the interpreter never exits under a driver call); returns the
    thread, or None where no NVIDIA device node exists (nothing to start).

    The context is the one cuDNN's VersionChecks and ``cudnnCreate`` then find ready. Failures (no
    driver, no device) are left for the caller's own calls to report.
    """
    if not os.path.exists(GPU_DEVICE_NODE):
        return None

    def run() -> None:
        try:
            try:
                initialized = cuInit(0)[0] == 0
            finally:
                INITIALIZED.set()
            if initialized:
                primary_context(ordinal)
        except Exception as exc:
            from cudnnload.errors import CudnnloadError

            if not isinstance(exc, CudnnloadError):
                raise
            # no driver: the loader's own calls say so

    with _prepared_lock:
        thread = _prepared.get(ordinal)
        if thread is None:
            thread = _prepared[ordinal] = threading.Thread(target=run, name="cudnnload-context", daemon=False)
            thread.start()
    return thread


# --- streams, CUDA graphs and events (Runtime.record and Runtime.time_ms) ---------------------------

def cuStreamCreate(flags: int) -> tuple[CUresult, int]:  # noqa: N802
    value = _void()
    result = _call("cuStreamCreate", ctypes.byref(value), ctypes.c_uint(flags))
    return result, value.value or 0


def cuStreamBeginCapture(stream: int, mode: int) -> tuple[CUresult]:  # noqa: N802
    """``mode``: CU_STREAM_CAPTURE_MODE_GLOBAL 0, THREAD_LOCAL 1, RELAXED 2 (cuda.h)."""
    return (_call("cuStreamBeginCapture_v2", _void(stream or None), _int(mode)),)


def cuStreamEndCapture(stream: int) -> tuple[CUresult, int]:  # noqa: N802
    value = _void()
    result = _call("cuStreamEndCapture", _void(stream or None), ctypes.byref(value))
    return result, value.value or 0


def cuGraphInstantiate(graph: int, flags: int = 0) -> tuple[CUresult, int]:  # noqa: N802
    value = _void()
    result = _call("cuGraphInstantiateWithFlags", ctypes.byref(value), _void(graph), ctypes.c_ulonglong(flags))
    return result, value.value or 0


def cuGraphDestroy(graph: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuGraphDestroy", _void(graph)),)


def cuEventCreate(flags: int = 0) -> tuple[CUresult, int]:  # noqa: N802
    value = _void()
    result = _call("cuEventCreate", ctypes.byref(value), ctypes.c_uint(flags))
    return result, value.value or 0


def cuEventRecord(event: int, stream: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuEventRecord", _void(event), _void(stream or None)),)


def cuEventSynchronize(event: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuEventSynchronize", _void(event)),)


def cuEventElapsedTime(start: int, stop: int) -> tuple[CUresult, float]:  # noqa: N802
    value = ctypes.c_float()
    result = _call("cuEventElapsedTime", ctypes.byref(value), _void(start), _void(stop))
    return result, value.value


def cuEventDestroy(event: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuEventDestroy_v2", _void(event)),)


def cuStreamSynchronize(stream: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuStreamSynchronize", _void(stream or None)),)


def cuMemsetD8Async(pointer: int, value: int, count: int, stream: int) -> tuple[CUresult]:  # noqa: N802
    return (_call("cuMemsetD8Async", _u64(pointer), ctypes.c_ubyte(value), ctypes.c_size_t(count),
                  _void(stream or None)),)


def primary_context(ordinal: int) -> tuple[CUresult, int]:
    """Device ``ordinal``'s primary context, retained once per process and kept for its life (as the
    CUDA runtime inside cuDNN keeps its own)."""
    context = _primary.get(ordinal)
    if context is not None:
        return CUresult.CUDA_SUCCESS, context
    with _contexts_lock:
        context = _primary.get(ordinal)
        if context is not None:
            return CUresult.CUDA_SUCCESS, context
        result, device = cuDeviceGet(ordinal)
        if result != 0:
            return result, 0
        result, context = cuDevicePrimaryCtxRetain(device)
        if result == 0:
            _primary[ordinal] = context
        return result, context
