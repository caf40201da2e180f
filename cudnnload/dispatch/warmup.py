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


@record
class Problem:
    """One convolution the application will run (shapes in ``layout`` axis order)."""

    x: tuple[int, ...]
    w: tuple[int, ...]
    dtype: str = "float16"
    layout: str = "NCHW"
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] = 0
    dilation: int | tuple[int, ...] = 1
    groups: int = 1
    bias: bool = False
    activation: str | None = None
    backend: str = "auto"


@record
class Activation:
    """One activation the application will run on its own (not fused into a convolution): cuDNN loads
    its kernels separately, 35-50 ms on an H200 the first time (anchors.md)."""

    shape: tuple[int, ...]
    dtype: str = "float16"
    mode: str = "relu"
    coef: float | None = None
    backend: str = "auto"


Warmable = Problem | Activation  # what warm_up runs


@record
class Warmed:
    problems: tuple[Warmable, ...]
    seconds: float
    error: str | None  # why warming stopped early (the message of the error), or None


class DeviceBuffer:
    """Scratch device memory shown to the dispatcher through ``__cuda_array_interface__`` (v3)."""

    _TYPESTR = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "bfloat16": "<u2"}
    _ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2}

    def __init__(self, shape: tuple[int, ...], dtype: str, values: object = None, device: int = 0) -> None:
        from cudnnload.loading.gpu import checked, initialized_driver

        self._driver = initialized_driver()
        _make_current(self._driver, device)
        count = 1
        for extent in shape:
            count *= extent
        nbytes = count * self._ITEMSIZE[dtype]
        self.pointer = int(checked(self._driver, "cuMemAlloc", nbytes))
        if values is not None:  # host data of the same dtype and size (a numpy array)
            checked(self._driver, "cuMemcpyHtoD", self.pointer, values.ctypes.data, nbytes)  # type: ignore[attr-defined]
        else:
            checked(self._driver, "cuMemsetD8", self.pointer, 0, nbytes)
        self.nbytes = nbytes
        self.__cuda_array_interface__ = {"shape": shape, "typestr": self._TYPESTR[dtype],
                                         "data": (self.pointer, False), "version": 3, "strides": None,
                                         "stream": None}

    def to_host(self, out: object) -> object:
        """Copy into a host numpy array of the same size."""
        from cudnnload.loading.gpu import checked

        checked(self._driver, "cuMemcpyDtoH", out.ctypes.data, self.pointer, self.nbytes)  # type: ignore[attr-defined]
        return out

    def free(self) -> None:
        from cudnnload.loading.gpu import checked

        if self.pointer:
            checked(self._driver, "cuMemFree", self.pointer)
            self.pointer = 0


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
    convolutions = [p for p in problems if isinstance(p, Problem)]
    activations = [p for p in problems if isinstance(p, Activation)]
    if not (convolutions and activations):
        return _run([*convolutions, *activations], start)
    beside = Background(activations)
    main = _run(convolutions, start, before_own_plans=beside.wait)
    other = beside.wait()
    assert other is not None
    return Warmed(main.problems + other.problems, time.perf_counter() - start, main.error or other.error)


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
    if isinstance(problem, Activation):
        return (DeviceBuffer(problem.shape, problem.dtype), DeviceBuffer(problem.shape, problem.dtype))
    bias = DeviceBuffer((problem.w[0],), problem.dtype) if problem.bias else None
    return (DeviceBuffer(problem.x, problem.dtype), DeviceBuffer(problem.w, problem.dtype), bias, _output(problem))


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


def _output(problem: Problem) -> DeviceBuffer:
    """Scratch output of the problem's result shape (the dispatcher checks it exactly)."""
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
    shape = (problem.x[0], *out, problem.w[0]) if channels_last else (problem.x[0], problem.w[0], *out)
    return DeviceBuffer(shape, problem.dtype)


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
