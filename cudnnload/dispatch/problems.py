"""What an application tells `cudnnload.start` or `cudnnload.preload` it will run: `Problem` and `Activation`.

Their own module, importing nothing but ``records``: an application builds them in the arguments of
``cudnnload.start(warmup=[...])``, before the start can begin the CUDA context, so what this module
costs to import delays the first result by as much (the warm-up's module imports threading and
cudnnload.errors, ~5 ms on the 2-core development machine).
"""

from __future__ import annotations

from cudnnload.resolve.records import record


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
