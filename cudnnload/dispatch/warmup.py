"""Move cuDNN's first-call costs to start-up: the CUDA context, the handle, lazy sub-library and
kernel loading, and the algorithm or plan choice, by running each expected problem once on
scratch device memory.

cuDNN 9 loads sub-libraries and kernels lazily and asks its heuristics on the first call of a
problem (about 200 ms each on an H200, anchors.md); the backends remember their choices on disk
(algos.py), so a warm-up in a new process costs the kernel load, not the heuristic query.
"""

from __future__ import annotations

import threading
import time

from cudnnload.dispatch.problems import Activation, Problem  # where they were first: cudnnload.dispatch.warmup.Problem
from cudnnload.errors import CudnnloadError
from cudnnload.loading import pending
from cudnnload.resolve.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from cudnnload.loading.loader import Loaded
    from cudnnload.resolve.discovery import Install


Warmable = Problem | Activation  # what warm_up runs


@record
class Warmed:
    problems: tuple[Warmable, ...]
    seconds: float
    error: str | None  # why warming stopped early (the message of the error), or None


REGISTER_FROM = 4 << 20  # bytes: DeviceBuffer.to_host page-locks its target from this size on
_ALIGN = 256  # bytes: where DeviceBuffer.scratch starts each buffer (cudaMalloc's own alignment)


class DeviceBuffer:
    """Scratch device memory shown to the dispatcher through ``__cuda_array_interface__`` (v3)."""

    _TYPESTR = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "bfloat16": "<u2"}
    _ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2}

    def __init__(self, shape: tuple[int, ...], dtype: str, values: object = None, device: int = 0, *,
                 zeroed: bool = True) -> None:
        """``values``: host data to copy in (a numpy array of the same size in bytes); else the memory is
        zero-filled, unless ``zeroed=False`` (a warm-up's scratch memory: its values do not matter)."""
        from cudnnload.loading.gpu import checked, initialized_driver

        driver = initialized_driver()
        _make_current(driver, device)
        nbytes = self._nbytes(shape, dtype)
        if values is not None:  # host data of the same dtype and size (a numpy array)
            _host_array(values, nbytes, "values", writable=False)
        self._view(driver, int(checked(driver, "cuMemAlloc", nbytes)), shape, dtype, owns=True)
        if values is not None:
            checked(driver, "cuMemcpyHtoD", self.pointer, values.ctypes.data, nbytes)  # type: ignore[attr-defined]
        elif zeroed:
            checked(driver, "cuMemsetD8", self.pointer, 0, nbytes)

    @classmethod
    def scratch(cls, parts: Sequence[tuple[tuple[int, ...], str] | None], device: int = 0
                ) -> tuple[DeviceBuffer | None, ...]:
        """Buffers of these (shape, dtype) cut from one allocation, not zero-filled (None stays None). The
        first buffer frees the allocation; the others' ``free`` does nothing, so free them together. One cuMemAlloc
        instead of one per buffer: a warm-up allocates right as the context is ready, where the application's
        first copy holds the driver's allocator up to 2 ms per call (H200, 2026-11-27)."""
        from cudnnload.loading.gpu import checked, initialized_driver

        if all(part is None for part in parts):
            return tuple(None for _ in parts)
        driver = initialized_driver()
        _make_current(driver, device)
        sizes = [0 if part is None else -(-cls._nbytes(*part) // _ALIGN) * _ALIGN for part in parts]
        base = int(checked(driver, "cuMemAlloc", max(sum(sizes), 1)))
        made: list[DeviceBuffer | None] = []
        offset = 0
        for part, size in zip(parts, sizes, strict=True):
            if part is None:
                made.append(None)
                continue
            buffer = cls.__new__(cls)
            buffer._view(driver, base + offset, *part, owns=all(m is None for m in made))  # the first owns it
            made.append(buffer)
            offset += size
        return tuple(made)

    @classmethod
    def _nbytes(cls, shape: tuple[int, ...], dtype: str) -> int:
        count = 1
        for extent in shape:
            count *= extent
        return count * cls._ITEMSIZE[dtype]

    def _view(self, driver: Any, pointer: int, shape: tuple[int, ...], dtype: str, *, owns: bool) -> None:
        self._driver, self.pointer, self._owns = driver, pointer, owns
        self.nbytes = self._nbytes(shape, dtype)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": self._TYPESTR[dtype],
                                         "data": (pointer, False), "version": 3, "strides": None,
                                         "stream": None}

    def to_host(self, out: object) -> object:
        """Copy into ``out``, a C-contiguous writable numpy array of the same size in bytes; returns it.

        A copy of `REGISTER_FROM` bytes or more page-locks ``out`` for its length (cuMemHostRegister), so
        that the GPU writes it directly instead of through the driver's staging buffers: a process's first
        12.8 MB copy took 3.3 ms so against 4.8 (H200, 2026-11-27, median of 7 fresh processes). Where
        ``out`` cannot be locked (already registered by its owner, say), it is copied as it is.
        """
        from cudnnload.loading.gpu import checked

        _host_array(out, self.nbytes, "out", writable=True)
        host = out.ctypes.data  # type: ignore[attr-defined]
        driver = self._driver
        locked = self.nbytes >= REGISTER_FROM and driver.cuMemHostRegister(host, self.nbytes, 0)[0] == 0
        try:
            checked(driver, "cuMemcpyDtoH", host, self.pointer, self.nbytes)
        finally:
            if locked:
                driver.cuMemHostUnregister(host)
        return out

    def free(self) -> None:
        from cudnnload.loading.gpu import checked

        if self.pointer and self._owns:
            checked(self._driver, "cuMemFree", self.pointer)
        self.pointer = 0


def _host_array(array: object, nbytes: int, name: str, *, writable: bool) -> None:
    """ArgumentError unless ``array`` is a C-contiguous numpy array of ``nbytes`` bytes (and writable): the
    driver copies raw bytes, so anything else would read or write past the caller's memory."""
    from cudnnload.dispatch.errors import ArgumentError

    flags, size = getattr(array, "flags", None), getattr(array, "nbytes", None)
    if flags is None or size is None or not hasattr(array, "ctypes"):
        raise ArgumentError(name, f"must be a numpy array, not {type(array).__name__}")
    if size != nbytes:
        raise ArgumentError(name, f"holds {size} bytes where the device buffer has {nbytes}")
    if not flags.c_contiguous:
        raise ArgumentError(name, "must be C-contiguous", fix="pass numpy.ascontiguousarray(...) of it")
    if writable and not flags.writeable:
        raise ArgumentError(name, "is read-only")


def _make_current(driver: Any, device: int) -> None:
    """Make ``device``'s primary context current on this thread."""
    from cudnnload.loading.gpu import checked

    checked(driver, "cuCtxSetCurrent", checked(driver, "primary_context", device))


def preload(
    source: str | os.PathLike[str] | Install | None = None,
    *,
    version: str | None = None,
    environ: Mapping[str, str] | None = None,
    use_cache: bool = True,
    timeout: float = 60.0,
    observer: Callable[[str], None] | None = None,
    warmup: Sequence[Warmable] = (),
    background: bool = False,
    for_: str | Sequence[str] = (),
) -> Loaded:
    """`cudnnload.load` and `cudnnload.preload`: load a coherent cuDNN (`cudnnload.loading.loader.load`,
    same arguments), then warm up ``warmup``: convolutions (`Problem`) and activations run once now on
    scratch memory, so that the application's first real call finds the CUDA context, the handle,
    the loaded kernels and the chosen algorithm ready. With ``background`` they run in a thread
    (``cudnnload.loading.loader.loaded().warmup.wait()``). The result is on ``Loaded.warmup``.
    """
    from cudnnload.loading.loader import load, with_warmup

    current = load(source, version=version, environ=environ, use_cache=use_cache, timeout=timeout,
                   observer=observer, for_=for_)
    if warmup and current.warmup is None:
        # outside the loader's lock: the backends the warm-up runs call load() themselves
        current = with_warmup(Background(warmup) if background else warm_up(warmup))
    return current


def warm_up(problems: Sequence[Warmable]) -> Warmed:
    """Run each problem once (then synchronise) on scratch memory; errors end it and are returned.

    Activations run in a second thread meanwhile: their kernels load from another library than
    the convolutions' (cudnn_ops), so the two first-time loads overlap.
    """
    from cudnnload.dispatch import dispatcher as dispatch

    start = time.perf_counter()
    # The dispatcher and its plugins imported first, before anything waits for the driver: started by
    # cudnnload.start, this Python work then runs while the CUDA context is being made.
    dispatch.registry()
    _ahead_of_the_context()
    convolutions = [p for p in problems if isinstance(p, Problem)]
    activations = [p for p in problems if isinstance(p, Activation)]
    if not (convolutions and activations):
        return _run([*convolutions, *activations], start)
    beside = Background(activations)
    main = _run(convolutions, start, before_own_plans=beside.wait)
    other = beside.wait()
    assert other is not None
    return Warmed(main.problems + other.problems, time.perf_counter() - start, main.error or other.error)


def _ahead_of_the_context() -> None:
    """What the first plan will ask and needs only ``cuInit``, asked while the driver still makes the context:
    the device's model, which names the remembered choices (2.4 ms on an H200 where it was asked after)."""
    from contextlib import suppress

    from cudnnload.loading.gpu import device_model

    with suppress(CudnnloadError):  # no driver or no device: the warm-up's own calls say so
        device_model(0)  # the device a Problem runs on (DeviceBuffer's default)


def _run(problems: Sequence[Warmable], start: float, before_own_plans: Callable[[], object] = lambda: None
         ) -> Warmed:
    """Run ``problems`` in order. ``before_own_plans``: what a backend with a quick first plan waits for
    before building a problem's own (`cudnnload.dispatch.backends.warming`)."""
    from cudnnload.dispatch.backends import warming
    from cudnnload.loading.gpu import synchronize

    done: list[Warmable] = []
    try:
        for problem in problems:
            buffers = _buffers(problem)
            try:
                with warming(before_own_plans):
                    _call(problem, buffers)
                synchronize()
            finally:
                for buffer in buffers:
                    if buffer is not None:
                        buffer.free()
            done.append(problem)
    except CudnnloadError as exc:
        return Warmed(tuple(done), time.perf_counter() - start, exc.message)
    return Warmed(tuple(done), time.perf_counter() - start, None)


def _buffers(problem: Warmable) -> tuple[DeviceBuffer | None, ...]:
    """Scratch memory for ``problem`` in one allocation, not zero-filled: the warm-up's results are thrown
    away, and on the way to an application's first result each fill cost ~1 ms (the first also loads the
    driver's memset kernel) between the context and the warm-up's plan (DeviceBuffer.scratch)."""
    if isinstance(problem, Activation):
        return DeviceBuffer.scratch([(problem.shape, problem.dtype)] * 2)
    bias = ((problem.w[0],), problem.dtype) if problem.bias else None
    return DeviceBuffer.scratch([(problem.x, problem.dtype), (problem.w, problem.dtype), bias,
                                 (_output_shape(problem), problem.dtype)])


def _call(problem: Warmable, buffers: tuple[DeviceBuffer | None, ...]) -> None:
    from cudnnload.dispatch import dispatcher as dispatch

    if isinstance(problem, Activation):
        x, y = buffers
        dispatch.activation(x, problem.mode, coef=problem.coef, backend=problem.backend, out=y)
        return
    x, w, bias, y = buffers
    dispatch.conv(x, w, bias, stride=problem.stride, padding=problem.padding, dilation=problem.dilation,
                  groups=problem.groups, activation=problem.activation, layout=problem.layout,
                  backend=problem.backend, out=y)


def _output_shape(problem: Problem) -> tuple[int, ...]:
    """The problem's result shape (the dispatcher checks its output's exactly)."""
    from cudnnload.dispatch.backends import ConvSpec

    spatial = len(problem.x) - 2
    channels_last = problem.layout == "NHWC"
    sizes = problem.x[1:-1] if channels_last else problem.x[2:]
    kernel = problem.w[1:-1] if channels_last else problem.w[2:]

    def axis(value: int | tuple[int, ...]) -> tuple[int, ...]:
        return value if isinstance(value, tuple) else (value,) * spatial

    spec = ConvSpec(stride=axis(problem.stride), padding=axis(problem.padding), dilation=axis(problem.dilation),
                    groups=problem.groups, layout=problem.layout)
    out = spec.output_size(tuple(sizes), tuple(kernel))
    return (problem.x[0], *out, problem.w[0]) if channels_last else (problem.x[0], problem.w[0], *out)


class Background:
    """A warm-up running in a thread; ``wait()`` returns its result."""

    def __init__(self, problems: Sequence[Warmable]) -> None:
        self._result: Warmed | None = None
        self._thread = threading.Thread(target=self._run, args=(tuple(problems),), name="cudnnload-warmup",
                                        daemon=False)
        pending.warm_up_began()
        try:
            self._thread.start()
        except BaseException:
            pending.warm_up_ended()
            raise

    def _run(self, problems: tuple[Warmable, ...]) -> None:
        try:
            self._result = warm_up(problems)
        finally:
            pending.warm_up_ended()

    def wait(self, timeout: float | None = None) -> Warmed | None:
        self._thread.join(timeout)
        return self._result
