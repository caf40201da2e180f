"""cuDNN handles, one per (thread, device), on an explicitly retained primary context.

cuDNN binds a handle to the device current at ``cudnnCreate`` and allows any
number of threads as long as they do not share a handle at the same time; its
advice is one handle per thread for the thread's life, and one synchronous
``cudnnCreate`` before threads create theirs (cuDNN developer guide, "Thread
Safety"). `HandlePool` does exactly that: creation is serialised by a lock,
each thread gets its own handle per device, and before creating one the pool
retains the device's primary context (``cuDevicePrimaryCtxRetain``, the
context the CUDA runtime inside cuDNN uses too) and makes it current
(``cuCtxSetCurrent``). Handles are destroyed, and the contexts released, by
`HandlePool.close` or at interpreter exit. PyTorch stopped destroying its
handles at exit because the context could already be gone by then
(aten/src/ATen/cudnn/Handle.cpp); holding our own reference on the primary
context keeps it alive until ``close``.

Without a usable driver, ``cudnnCreate`` is still called, so that the error
is cuDNN's own: NotInitialized with ``cudaGetDeviceCount(&count) !=
cudaSuccess`` (cudnn-facts §6.2), and the driver's reason as its detail.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from cudnnload.errors import CudnnloadError, DriverUnavailable, UsageError
from cudnnload.loading.capi import CudnnApi
from cudnnload.loading.gpu import CudaError, checked, initialized_driver
from cudnnload.loading.status import check, error_for

log = logging.getLogger(__name__)

# Attributes through which stream objects expose their cudaStream_t, in the order tried:
# PyTorch's torch.cuda.Stream.cuda_stream, CuPy's Stream.ptr, and .handle
# (cuda.core: a CUstream; Numba: a ctypes c_void_p).
_STREAM_ATTRIBUTES = ("cuda_stream", "ptr", "handle")


def stream_address(stream: object) -> int:
    """The ``cudaStream_t`` value of ``stream``: None (the legacy default stream, 0), an int, or an object.

    Objects are read through the CUDA stream protocol first (``__cuda_stream__()``
    returns ``(version, address)``; cuda.core, cuda.bindings' CUstream), then
    through ``cuda_stream``, ``ptr`` or ``handle``.
    """
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        return _address(value[1] if isinstance(value, tuple) else value, stream)
    for name in _STREAM_ATTRIBUTES:
        if hasattr(stream, name):
            return _address(getattr(stream, name), stream)
    raise UsageError(f"{type(stream).__name__} is not a CUDA stream: expected an int, or an object with "
                     "__cuda_stream__, cuda_stream, ptr or handle")


def _address(value: object, stream: object) -> int:
    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    try:
        return int(value)  # type: ignore[call-overload]  # int, or a CUstream with __int__
    except (TypeError, ValueError):
        raise UsageError(f"cannot read a stream address from {type(stream).__name__}: {value!r}") from None


@dataclass
class _Entry:
    """One thread's handle on one device; only that thread reads or changes it."""

    handle: int
    device: int
    stream: int  # the stream last bound with cudnnSetStream (0 = the legacy default stream)


class HandlePool:
    """cuDNN handles of one loaded cuDNN (``api``), one per (thread, device), bound to the caller's stream."""

    def __init__(self, api: CudnnApi, *, environ: Mapping[str, str] | None = None) -> None:
        self.api = api
        self._environ = environ  # for the likely causes of a failed cudnnCreate (status.NotInitialized)
        self._lock = threading.Lock()
        self._handles: dict[tuple[int, int], _Entry] = {}  # (thread ident, device) -> entry
        self._spares: dict[int, list[int]] = {}  # device -> handles made ahead (make_spare), for threads without one
        self._contexts: dict[int, Any] = {}  # device ordinal -> CUcontext retained by this pool
        self._driver: ModuleType | None = None
        self._unavailable: DriverUnavailable | None = None  # why the driver cannot be used, once known
        self._pid = os.getpid()
        self._closed = False
        atexit.register(self._close_at_exit)

    def get(self, device: int | None = None, stream: object = None) -> int:
        """This thread's handle for ``device`` (default: the current context's device, else 0), bound to ``stream``.

        Leaves the device's primary context current on this thread, as
        ``cudaSetDevice`` would: calls made with the handle need it. A thread
        identifier reused after a thread ended gets that thread's handle back.
        """
        address = stream_address(stream)
        if self._closed:
            raise UsageError("this HandlePool is closed")
        if os.getpid() != self._pid:
            self._forget_parent()
        ordinal = self._activate(device)
        key = (threading.get_ident(), ordinal)
        entry = self._handles.get(key)
        if entry is None:
            entry = self._create(key)
        if entry.stream != address:
            check(self.api.cudnnSetStream(entry.handle, address), "cudnnSetStream", self.api, environ=self._environ)
            entry.stream = address
        return entry.handle

    def close(self) -> None:
        """Destroy every handle (each with its device current) and release the primary contexts. Idempotent."""
        atexit.unregister(self._close_at_exit)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # (device, handle) of every thread's handle and every spare one
            handles = [(entry.device, entry.handle) for entry in self._handles.values()] + [
                (ordinal, handle) for ordinal, spares in self._spares.items() for handle in spares]
            self._handles, self._spares = {}, {}
            contexts, self._contexts = self._contexts, {}
            if os.getpid() != self._pid:
                return  # a forked child: the CUDA state belongs to the parent
            failures: list[CudnnloadError] = []
            for device, handle in handles:
                try:
                    if self._driver is not None and device in contexts:
                        checked(self._driver, "cuCtxSetCurrent", contexts[device])
                    check(self.api.cudnnDestroy(handle), "cudnnDestroy", self.api, environ=self._environ)
                except CudnnloadError as exc:
                    failures.append(exc)
            if self._driver is not None and contexts:
                failures.extend(self._release(self._driver, contexts))
        if failures:
            raise failures[0]

    @property
    def size(self) -> int:
        """How many handles the pool holds."""
        return len(self._handles)

    def _close_at_exit(self) -> None:
        try:
            self.close()
        except CudnnloadError as exc:  # a traceback at exit would help nobody
            log.warning("cuDNN handles were not all released at exit: %s", exc)

    def _forget_parent(self) -> None:
        """After fork: the parent's handles and contexts are unusable here, and not ours to destroy."""
        with self._lock:
            self._handles.clear()
            self._spares.clear()
            self._contexts.clear()
            self._driver, self._unavailable, self._pid = None, None, os.getpid()

    def _usable_driver(self) -> ModuleType | None:
        if self._driver is None and self._unavailable is None:
            with self._lock:
                if self._driver is None and self._unavailable is None:
                    try:
                        self._driver = initialized_driver()
                    except DriverUnavailable as exc:
                        self._unavailable = exc
        return self._driver

    def _activate(self, device: int | None) -> int:
        """Make ``device``'s primary context current (retaining it once); returns the device ordinal."""
        driver = self._usable_driver()
        if driver is None:
            unavailable = self._unavailable
            if device not in (None, 0) and unavailable is not None:
                # Without the driver API only the CUDA runtime's default device, 0, is reachable.
                raise DriverUnavailable(unavailable.code, f"cannot select CUDA device {device}: {unavailable.reason}",
                                        fix=unavailable.fix)
            return 0
        ordinal = self._current_device(driver) if device is None else device
        context = self._contexts.get(ordinal)
        if context is None:
            with self._lock:
                context = self._contexts.get(ordinal)
                if context is None:
                    context = checked(driver, "cuDevicePrimaryCtxRetain", self._device_handle(driver, ordinal))
                    self._contexts[ordinal] = context
        checked(driver, "cuCtxSetCurrent", context)
        return ordinal

    @staticmethod
    def _current_device(driver: ModuleType) -> int:
        result, device = driver.cuCtxGetDevice()
        return int(device) if result == driver.CUresult.CUDA_SUCCESS else 0  # no current context: device 0

    @staticmethod
    def _device_handle(driver: ModuleType, ordinal: int) -> Any:
        try:
            return checked(driver, "cuDeviceGet", ordinal)
        except CudaError as exc:
            if exc.result_name != "CUDA_ERROR_INVALID_DEVICE":
                raise
            count = checked(driver, "cuDeviceGetCount")
            raise UsageError(f"there is no CUDA device {ordinal}: the driver shows {count}",
                             fix="use an index below the device count, or check CUDA_VISIBLE_DEVICES") from None

    def make_spare(self, device: int) -> None:
        """Create a handle for ``device`` ahead (one at most), which the next thread without a handle for it then
        takes instead of calling cudnnCreate (~1.8 ms on an H200 after the process's first): a warm-up makes one
        for the application's first call (`cudnnload.start`). A cuDNN handle may move between threads; it is
        used by one at a time. Leaves the device's primary context current."""
        ordinal = self._activate(device)
        with self._lock:
            if self._spares.get(ordinal) or self._closed:
                return
            handle = self._new_handle()
            self._spares.setdefault(ordinal, []).append(handle)

    def _create(self, key: tuple[int, int]) -> _Entry:
        with self._lock:
            spares = self._spares.get(key[1])
            entry = _Entry(handle=spares.pop() if spares else self._new_handle(), device=key[1], stream=0)
            self._handles[key] = entry
        return entry

    def _new_handle(self) -> int:
        """cudnnCreate, with the pool's lock held; the cuDNN error for its status where it fails."""
        handle = ctypes.c_void_p()
        if self.api.exports("cudnnGetLastErrorString"):
            status = int(self.api.cudnnCreate(ctypes.byref(handle)))
            reason = self.api.last_error() if status else None
        else:  # cuDNN 8 gives its reason only through the callback (capi.record_errors)
            with self.api.record_errors():
                status = int(self.api.cudnnCreate(ctypes.byref(handle)))
                reason = self.api.last_error() if status else None
        if status:
            detail = self._unavailable.reason if self._unavailable else None
            raise error_for(status, "cudnnCreate", major=self.api.major, last_error=reason, detail=detail,
                            path=self.api.path, environ=self._environ)
        return handle.value or 0

    @staticmethod
    def _release(driver: ModuleType, contexts: dict[int, Any]) -> list[CudnnloadError]:
        """Release the retained primary contexts, first making none of them current on this thread."""
        failures: list[CudnnloadError] = []
        try:
            if int(checked(driver, "cuCtxGetCurrent")) in {int(context) for context in contexts.values()}:
                checked(driver, "cuCtxSetCurrent", driver.CUcontext(0))
        except CudnnloadError as exc:
            failures.append(exc)
        for ordinal in contexts:
            try:
                checked(driver, "cuDevicePrimaryCtxRelease", checked(driver, "cuDeviceGet", ordinal))
            except CudnnloadError as exc:
                failures.append(exc)
        return failures
