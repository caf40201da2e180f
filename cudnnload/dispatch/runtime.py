"""What both cuDNN backends need around a call: geometry, this thread's handle, workspace, graphs, timing.

- Geometry (pure functions): a `TensorRef` in a layout's axis order as cuDNN wants it,
  (N, C, *spatial) dims with the caller's strides, a 1-D problem widened to 2-D (cuDNN's
  convolution descriptors take 2 or 3 spatial axes), the filter formats cuDNN accepts,
  and the alignment a pointer guarantees.
- `Runtime` (one per loaded cuDNN): the per-call part of `cudnnload.loading.handles.HandlePool`
  made cheap. The pool makes the device's primary context current through the driver on
  every ``get`` (microseconds); a thread here keeps the handle it last bound, and a call
  with the same device and stream only checks, with one ctypes call to the driver's
  ``cuCtxGetCurrent``, that nobody made another context current since (a framework that
  switched devices, say). A workspace per (thread, device, stream) grows by ``cuMemAlloc``
  and is never shared between threads, so a growing buffer can be freed while no other
  thread holds its address; backends that keep the address (cuDNN graph variant packs)
  are told when it is freed. `Runtime.record` records queued work into a CUDA graph, which
  ``cuGraphLaunch`` replays for a few microseconds of host time.
- `PlanningLock`: what each backend builds its plans under. A thread that waits for it waits at most
  `PLANNING_WAIT_S`, then gets an error naming the thread that holds it and what that thread is doing.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cudnnload.dispatch.algos import ChoiceStore, scope_key
from cudnnload.dispatch.tensors import TensorRef
from cudnnload.errors import CudnnloadError, LoadError
from cudnnload.loading import cudadriver
from cudnnload.loading.capi import CudnnApi, DataType
from cudnnload.loading.handles import HandlePool

# cudnnDataType_t of each dtype cudnnload passes (cudnn_graph.h; cudnn-facts §4.3).
DATA_TYPES = {"float32": DataType.FLOAT, "float64": DataType.DOUBLE, "float16": DataType.HALF,
              "bfloat16": DataType.BFLOAT16}

# Workspaces grow in steps of this many bytes, so that a sequence of slightly larger needs
# does not free and reallocate (and so drop cached variant packs) each time.
_WORKSPACE_STEP = 1 << 20

_CUDA_SUCCESS = 0  # CUDA_SUCCESS (cuda.h CUresult)
_CAPTURE_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED (cuda.h)


def bind(api: CudnnApi, name: str, restype: Any, *argtypes: Any) -> Callable[..., Any]:
    """A typed function of the loaded shim that `cudnnload.loading.capi` does not declare."""
    try:
        function = api.library[name]
    except AttributeError:
        raise LoadError(f"{name} is not exported by this cuDNN {api.major} shim", path=api.path,
                        fix="use a cuDNN release that has it") from None
    function.restype = restype
    function.argtypes = argtypes
    return function


# --- geometry --------------------------------------------------------------------------------------

def nc_dims(ref: TensorRef, layout: str, widen: bool = True) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``ref``'s (N, C, *spatial) dims and strides (elements). With ``widen``, one spatial axis
    becomes two: a unit axis in front, so that (N, C, W) reads as (N, C, 1, W) in memory."""
    view = ref.channels_first(layout)
    dims, strides = tuple(view.shape), tuple(view.strides)
    if widen and len(dims) == 3:
        # The unit axis's stride only has to be positive; extent times stride of the axis
        # it precedes keeps NCW as packed NCHW and NWC as packed NHWC.
        dims = (dims[0], dims[1], 1, dims[2])
        strides = (strides[0], strides[1], max(strides[2] * dims[3], 1), strides[2])
    return dims, strides


def widened(values: tuple[int, ...], unit: int) -> tuple[int, ...]:
    """A per-spatial-axis parameter (stride, padding, dilation) for the widened 1-D problem."""
    return (unit, *values) if len(values) == 1 else values


def packed(dims: tuple[int, ...], strides: tuple[int, ...], order: tuple[int, ...]) -> bool:
    """Whether the axes lie in memory densely from ``order[0]`` (outermost) to ``order[-1]``;
    the strides of unit axes do not matter (they are never stepped over)."""
    step = 1
    for axis in reversed(order):
        if dims[axis] != 1 and strides[axis] != step:
            return False
        step *= dims[axis]
    return True


def channels_last_order(rank: int) -> tuple[int, ...]:
    """(0, 2, ..., rank-1, 1): NHWC, NDHWC, KRSC."""
    return (0, *range(2, rank), 1)


def alignment(ptr: int) -> int:
    """The largest power of two up to 16 that divides ``ptr`` (16 for a pointer not yet known, 0)."""
    return 16 if ptr == 0 else min(16, ptr & -ptr)


def usable_strides(ref: TensorRef) -> str | None:
    """Why cuDNN cannot address ``ref`` (zero or negative strides), or None."""
    if any(stride <= 0 and extent > 1 for stride, extent in zip(ref.strides, ref.shape, strict=True)):
        return f"strides {tuple(ref.strides)} include zero or negative ones, which cuDNN descriptors cannot express"
    return None


# --- the planning lock ------------------------------------------------------------------------------

# How long a call waits for another thread's plan building before it gives up. Building is cuDNN's
# heuristics and finalization (milliseconds to ~100 ms per engine that compiles at run time) or, with
# autotune=True, timing up to a dozen engines on the caller's data (seconds for a large convolution):
# a wait of minutes means the holder is stuck, and the caller gets an error naming it instead.
PLANNING_WAIT_S = 120.0


class LockTimeout(CudnnloadError, TimeoutError):
    """A wait for a lock ended before its holder released it; the message names the holder and its work."""


class PlanningLock:
    """A backend's lock over building plans (descriptors, heuristics, autotuning): re-entrant, as
    ``threading.RLock``, but it knows which thread holds it and what that thread is doing, and a
    blocking wait is bounded: past ``timeout`` seconds it raises `LockTimeout` naming the holder."""

    def __init__(self, name: str, timeout: float = PLANNING_WAIT_S) -> None:
        self.name = name
        self.timeout = timeout
        self._lock = threading.RLock()
        self._holder: tuple[str, str, float] | None = None  # thread name, its work, since (monotonic)
        self._depth = 0  # acquisitions by the holder

    def try_acquire(self, doing: str = "") -> bool:
        """Take the lock if it is free (or this thread holds it); never waits."""
        if not self._lock.acquire(blocking=False):
            return False
        self._enter(doing)
        return True

    def acquire(self, doing: str = "", timeout: float | None = None) -> None:
        """Take the lock, waiting at most ``timeout`` seconds (default: the lock's); LockTimeout after that."""
        limit = self.timeout if timeout is None else timeout
        if not self._lock.acquire(timeout=limit):
            raise LockTimeout(f"{self.name}: waited {limit:g} s for the planning lock, held by {self.holder()}",
                              fix="see what that thread is stuck on (py-spy dump, or faulthandler); a plan that "
                              "legitimately takes longer can be built before the other threads start")
        self._enter(doing)

    def release(self) -> None:
        self._depth -= 1
        if not self._depth:
            self._holder = None
        self._lock.release()

    @contextmanager
    def holding(self, doing: str) -> Iterator[None]:
        """``with lock.holding("building ..."):`` the bounded `acquire`, then `release`."""
        self.acquire(doing)
        try:
            yield
        finally:
            self.release()

    def __enter__(self) -> PlanningLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def holder(self) -> str:
        """Who holds the lock, what for and since when, as words; "nobody" when it is free."""
        held = self._holder
        if held is None:
            return "nobody (it was released meanwhile)"
        thread, doing, since = held
        what = f", {doing}" if doing else ""
        return f"thread {thread!r}{what}, for {time.monotonic() - since:.1f} s"

    def _enter(self, doing: str) -> None:
        self._depth += 1
        if self._depth == 1:
            self._holder = (threading.current_thread().name, doing, time.monotonic())


# --- per-thread state ------------------------------------------------------------------------------

class ThreadState:
    """One thread's handle binding, workspaces, and what backends bound to them. Only its thread uses it."""

    __slots__ = ("bound", "capture_streams", "context", "current", "current_ref", "device", "handle", "stream",
                 "workspaces")

    def __init__(self) -> None:
        self.device: int | None = None  # what the handle was last bound to
        self.stream = -1
        self.handle = 0
        self.context = 0  # the CUcontext current when it was bound
        self.current = ctypes.c_void_p()  # cuCtxGetCurrent's output
        self.current_ref = ctypes.pointer(self.current)
        self.workspaces: dict[tuple[int, int], tuple[int, int]] = {}  # (device, stream) -> (ptr, bytes)
        self.bound: dict[Any, Any] = {}  # backend -> its objects holding this thread's workspace (variant packs)
        self.capture_streams: dict[int, int] = {}  # device -> the stream this thread records CUDA graphs on


WorkspaceFreed = Callable[[ThreadState, int], None]  # called on the thread that freed it, with the freed address


class Runtime:
    """Handles, workspaces and timing for the backends of one loaded cuDNN (``api``)."""

    def __init__(self, api: CudnnApi, release: str) -> None:
        self.api = api
        self.release = release
        self.pool = HandlePool(api)
        self._local = threading.local()
        self._listeners: list[WorkspaceFreed] = []
        self._stores: dict[int, ChoiceStore] = {}
        self._zeros: dict[tuple[int, int], int] = {}  # (device, bytes) -> zero-filled device memory
        self._lock = threading.Lock()
        libcuda = cudadriver.library()
        # cuCtxGetCurrent(CUcontext *pctx) (cuda.h): what `handle` checks on every call; public so that
        # a backend's per-call path can make the same check inline.
        self.ctx_get_current = libcuda.cuCtxGetCurrent
        self.ctx_get_current.restype = ctypes.c_int
        self.ctx_get_current.argtypes = (ctypes.POINTER(ctypes.c_void_p),)
        # cuGraphLaunch(CUgraphExec, CUstream) (cuda.h): replays a recorded graph; a cudaGraphExec_t is a
        # CUgraphExec (the runtime's types are the driver's).
        self.graph_launch = libcuda.cuGraphLaunch
        self.graph_launch.restype = ctypes.c_int
        self.graph_launch.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
        self._graph_exec_destroy = libcuda.cuGraphExecDestroy  # cuGraphExecDestroy(CUgraphExec) (cuda.h)
        self._graph_exec_destroy.restype = ctypes.c_int
        self._graph_exec_destroy.argtypes = (ctypes.c_void_p,)

    def state(self) -> ThreadState:
        """This thread's state."""
        try:
            return self._local.state  # type: ignore[no-any-return]
        except AttributeError:
            self._local.state = ThreadState()
            return self._local.state  # type: ignore[no-any-return]

    def handle(self, state: ThreadState, device: int, stream: int) -> int:
        """The thread's handle for ``device``, bound to ``stream``, with the device's context current."""
        if (state.device == device and state.stream == stream
                and self.ctx_get_current(state.current_ref) == _CUDA_SUCCESS
                and state.current.value == state.context):
            return state.handle
        handle = self.pool.get(device, stream)  # makes the primary context current, binds the stream
        if self.ctx_get_current(state.current_ref) != _CUDA_SUCCESS:
            raise LoadError("cuCtxGetCurrent failed right after the handle pool made a context current")
        state.device, state.stream, state.handle, state.context = device, stream, handle, state.current.value or 0
        return handle

    def on_workspace_freed(self, listener: WorkspaceFreed) -> None:
        """Call ``listener(state, address)`` whenever a thread's workspace at ``address`` is freed."""
        self._listeners.append(listener)

    def workspace(self, state: ThreadState, device: int, stream: int, nbytes: int) -> int:
        """At least ``nbytes`` of device memory for this thread, device and stream (0 for none).

        Call after `handle` (its context must be current). A larger need frees the old buffer
        (after waiting for ``stream``, the only one that uses it, so no queued work still does) and
        allocates anew. Not the whole context: while another thread records a CUDA graph, a context-wide
        synchronize fails (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
        """
        if nbytes <= 0:
            return state.workspaces.get((device, stream), (0, 0))[0]
        ptr, size = state.workspaces.get((device, stream), (0, 0))
        if nbytes <= size:
            return ptr
        if ptr:
            self._cuda("cuStreamSynchronize", cudadriver.cuStreamSynchronize(stream))  # nothing queued uses it
            self._cuda("cuMemFree", cudadriver.cuMemFree(ptr))
            del state.workspaces[(device, stream)]
            for listener in self._listeners:
                listener(state, ptr)
        size = -(-nbytes // _WORKSPACE_STEP) * _WORKSPACE_STEP
        ptr = int(self._cuda("cuMemAlloc", cudadriver.cuMemAlloc(size)))
        state.workspaces[(device, stream)] = (ptr, size)
        return ptr

    def zeros(self, device: int, nbytes: int) -> int:
        """``nbytes`` of zero-filled memory on ``device``, made once and kept for the process's life (a zero
        bias). Call after `handle` (its context must be current). The fill runs on the legacy default stream
        and is waited for, so that work on any stream may read the memory at once."""
        ptr = self._zeros.get((device, nbytes))
        if ptr is None:
            with self._lock:
                ptr = self._zeros.get((device, nbytes))
                if ptr is None:
                    ptr = int(self._cuda("cuMemAlloc", cudadriver.cuMemAlloc(nbytes)))
                    self._cuda("cuMemsetD8", cudadriver.cuMemsetD8(ptr, 0, nbytes))
                    self._cuda("cuStreamSynchronize", cudadriver.cuStreamSynchronize(0))
                    self._zeros[(device, nbytes)] = ptr
        return ptr

    def record(self, state: ThreadState, device: int, enqueue: Callable[[int], None]) -> int:
        """A CUDA graph of what ``enqueue(stream)`` queues on a capture stream, instantiated; its CUgraphExec.

        Recorded in CU_STREAM_CAPTURE_MODE_RELAXED (cuda.h: GLOBAL=0, THREAD_LOCAL=1, RELAXED=2), so
        that calls other threads make meanwhile are not refused. LoadError when the work cannot be
        recorded (cuDNN engines that synchronise, say); the caller then runs it directly.
        """
        drv = cudadriver
        stream = state.capture_streams.get(device)
        if stream is None:  # CU_STREAM_NON_BLOCKING = 1: it never waits for the legacy default stream
            stream = state.capture_streams[device] = int(self._cuda("cuStreamCreate", drv.cuStreamCreate(1)))
        self._cuda("cuStreamBeginCapture", drv.cuStreamBeginCapture(stream, _CAPTURE_RELAXED))
        failure: BaseException | None = None
        try:
            enqueue(stream)
        except BaseException as exc:  # end the capture before anything else: the stream is unusable until then
            failure = exc
        error, graph = drv.cuStreamEndCapture(stream)
        if failure is not None or int(error) != _CUDA_SUCCESS:
            if int(error) == _CUDA_SUCCESS:
                drv.cuGraphDestroy(graph)
            if failure is not None:
                raise failure
            raise LoadError(f"cuStreamEndCapture returned {error.name}")
        try:
            executable = self._cuda("cuGraphInstantiate", drv.cuGraphInstantiate(graph, 0))
        finally:
            drv.cuGraphDestroy(graph)
        return int(executable)

    def destroy_graph(self, executable: int) -> None:
        self._graph_exec_destroy(executable)

    def launch_error(self, code: int) -> LoadError:
        """The error for a failed cuGraphLaunch."""
        result = cudadriver.CUresult(code)
        _, text = cudadriver.cuGetErrorString(result)
        return LoadError(f"cuGraphLaunch returned {result.name}: {(text or b'').decode(errors='replace')}",
                         fix="check the GPU with nvidia-smi and rerun with CUDA_LAUNCH_BLOCKING=1")

    def choices(self, device: int) -> ChoiceStore:
        """The remembered algorithm choices for ``device``'s GPU model and this cuDNN release."""
        store = self._stores.get(device)
        if store is None:
            with self._lock:
                store = self._stores.get(device)
                if store is None:
                    name, capability = self._device(device)
                    store = self._stores[device] = ChoiceStore(scope_key(name, capability, self.release))
        return store

    def time_ms(self, stream: int, run: Callable[[], None], repeats: int) -> float:
        """Median time of ``run()`` on ``stream`` over ``repeats`` runs, after one untimed run (CUDA events)."""
        drv = cudadriver
        run()
        start = self._cuda("cuEventCreate", drv.cuEventCreate(0))
        stop = self._cuda("cuEventCreate", drv.cuEventCreate(0))
        times = []
        try:
            for _ in range(repeats):
                self._cuda("cuEventRecord", drv.cuEventRecord(start, stream))
                run()
                self._cuda("cuEventRecord", drv.cuEventRecord(stop, stream))
                self._cuda("cuEventSynchronize", drv.cuEventSynchronize(stop))
                times.append(float(self._cuda("cuEventElapsedTime", drv.cuEventElapsedTime(start, stop))))
        finally:
            drv.cuEventDestroy(start)
            drv.cuEventDestroy(stop)
        return sorted(times)[len(times) // 2]

    def _device(self, device: int) -> tuple[str, tuple[int, int]]:
        from cudnnload.loading.gpu import CudaError, device_model

        try:
            return device_model(device)
        except CudaError as exc:
            raise LoadError(f"the driver shows no CUDA device {device}: {exc.reason}") from None

    def _cuda(self, call: str, result: Any) -> Any:
        """The value of a `cudnnload.loading.cudadriver` call's ``(CUresult, value...)``; LoadError unless it
        succeeded."""
        error, *values = result
        if int(error) != _CUDA_SUCCESS:
            raise LoadError(f"{call} returned {getattr(error, 'name', error)}",
                            fix="check free GPU memory (nvidia-smi) and the driver")
        return values[0] if values else None


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def runtime() -> Runtime:
    """The process's `Runtime`, over the cuDNN `cudnnload.loading.loader.load` loads (once per process)."""
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                from cudnnload.loading.loader import load

                loaded = load()
                _runtime = Runtime(loaded.api, str(loaded.release))
    return _runtime
