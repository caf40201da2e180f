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
from collections.abc import Sequence
from dataclasses import dataclass

from cudnnload.errors import CudnnloadError


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Warmed:
    problems: tuple[Problem, ...]
    seconds: float
    error: str | None  # why warming stopped early (the message of the error), or None


class DeviceBuffer:
    """Scratch device memory shown to the dispatcher through ``__cuda_array_interface__`` (v3)."""

    _TYPESTR = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "bfloat16": "<u2"}
    _ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2}

    def __init__(self, shape: tuple[int, ...], dtype: str, values: object = None) -> None:
        from cudnnload.gpu import checked, initialized_driver

        self._driver = initialized_driver()
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
        from cudnnload.gpu import checked

        checked(self._driver, "cuMemcpyDtoH", out.ctypes.data, self.pointer, self.nbytes)  # type: ignore[attr-defined]
        return out

    def free(self) -> None:
        from cudnnload.gpu import checked

        if self.pointer:
            checked(self._driver, "cuMemFree", self.pointer)
            self.pointer = 0


def warm_up(problems: Sequence[Problem]) -> Warmed:
    """Run each problem once (then synchronise) on scratch memory; errors end it and are returned."""
    from cudnnload import dispatch
    from cudnnload.gpu import checked, initialized_driver

    start = time.perf_counter()
    done: list[Problem] = []
    try:
        for problem in problems:
            x = DeviceBuffer(problem.x, problem.dtype)
            w = DeviceBuffer(problem.w, problem.dtype)
            y = _output(problem)
            bias = DeviceBuffer((problem.w[0],), problem.dtype) if problem.bias else None
            try:
                dispatch.conv(x, w, bias, stride=problem.stride, padding=problem.padding,
                              dilation=problem.dilation, groups=problem.groups, activation=problem.activation,
                              layout=problem.layout, backend=problem.backend, out=y)
                checked(initialized_driver(), "cuCtxSynchronize")
            finally:
                for buffer in (x, w, y, bias):
                    if buffer is not None:
                        buffer.free()
            done.append(problem)
    except CudnnloadError as exc:
        return Warmed(tuple(done), time.perf_counter() - start, exc.message)
    return Warmed(tuple(done), time.perf_counter() - start, None)


def _output(problem: Problem) -> DeviceBuffer:
    """Scratch output of the problem's result shape (the dispatcher checks it exactly)."""
    from cudnnload.backends import ConvSpec

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

    def __init__(self, problems: Sequence[Problem]) -> None:
        self._result: Warmed | None = None
        self._thread = threading.Thread(target=self._run, args=(tuple(problems),), name="cudnnload-warmup",
                                        daemon=True)
        self._thread.start()

    def _run(self, problems: tuple[Problem, ...]) -> None:
        self._result = warm_up(problems)

    def wait(self, timeout: float | None = None) -> Warmed | None:
        self._thread.join(timeout)
        return self._result
