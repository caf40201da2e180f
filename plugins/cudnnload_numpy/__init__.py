"""The numpy backend: the float64 reference on the host that every other backend is checked against.

Convolution is cross-correlation (cuDNN's CUDNN_CROSS_CORRELATION, PyTorch's conv) over 1, 2 or
3 spatial axes, with stride, symmetric zero padding, dilation and groups, forward and both
gradients. Every input is widened to float64 and the result rounded once into the output's
dtype. Python loops run over kernel taps only (9 for 3x3, 27 for 3x3x3); each tap is one
batched matrix product over every pixel (`numpy.matmul`).

Loaded like any third-party plugin: cudnnload's pyproject.toml declares the entry point
``numpy = "cudnnload_numpy:register"`` in the group ``cudnnload.backends``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cudnnload.dispatch.backends import ActivationSpec, ConvSpec, Registry, Spec
from cudnnload.dispatch.tensors import TensorRef

Array = np.ndarray


def register(registry: Registry) -> None:
    registry.add("numpy", NumpyBackend)


class NumpyBackend:
    """Implements every operation of `cudnnload.backends.Backend`, on host memory only. ``ConvSpec.fused`` asks
    nothing of it: bias and activation are applied to the float64 result before its one rounding."""

    name = "numpy"

    def availability(self) -> str | None:
        return None

    def capability(self, operation: str, dtype: str, layout: str, spatial: int) -> str | None:
        return None  # every operation, dtype, layout and rank, on the host

    def supports(self, op: str, spec: Spec, *tensors: TensorRef | None) -> str | None:
        for tensor in tensors:
            if tensor is not None and tensor.device is not None:
                return f"numpy computes on the host; the data is on CUDA device {tensor.device}"
        return None

    def conv_forward(self, x: TensorRef, w: TensorRef, bias: TensorRef | None, y: TensorRef, spec: ConvSpec, *,
                     autotune: bool = False, stream: int = 0) -> None:
        out = convolve(_read(x, spec.layout), _read(w, spec.layout), spec)
        if bias is not None:
            out += _read(bias, "NCHW").reshape(-1, *[1] * len(spec.stride))
        if spec.activation is not None:
            out = activate(out, spec.activation, spec.coef)
        _write(y, out, spec.layout)

    def conv_backward_data(self, dy: TensorRef, w: TensorRef, dx: TensorRef, spec: ConvSpec, *,
                           autotune: bool = False, stream: int = 0) -> None:
        spatial = dx.channels_first(spec.layout).shape[2:]
        _write(dx, convolve_backward_data(_read(dy, spec.layout), _read(w, spec.layout), spatial, spec), spec.layout)

    def conv_backward_filter(self, x: TensorRef, dy: TensorRef, dw: TensorRef, spec: ConvSpec, *,
                             autotune: bool = False, stream: int = 0) -> None:
        kernel = dw.channels_first(spec.layout).shape[2:]
        _write(dw, convolve_backward_filter(_read(x, spec.layout), _read(dy, spec.layout), kernel, spec), spec.layout)

    def activation_forward(self, x: TensorRef, y: TensorRef, spec: ActivationSpec, *, stream: int = 0) -> None:
        _write(y, activate(_read(x, "NCHW"), spec.mode, spec.coef), "NCHW")

    def activation_backward(self, y: TensorRef, dy: TensorRef, x: TensorRef, dx: TensorRef, spec: ActivationSpec, *,
                            stream: int = 0) -> None:
        _write(dx, activate_backward(_read(x, "NCHW"), _read(dy, "NCHW"), spec.mode, spec.coef), "NCHW")


def _read(ref: TensorRef, layout: str) -> Array:
    return ref.channels_first(layout).numpy().astype(np.float64)


def _write(ref: TensorRef, value: Array, layout: str) -> None:
    ref.channels_first(layout).numpy()[...] = value


# --- convolution on float64 arrays in (N, C, *spatial) order --------------------------------------

def _padded_groups(x: Array, spec: ConvSpec) -> Array:
    """x zero-padded, its channels split into groups: (N, G, C/G, *padded spatial)."""
    padded = np.pad(x, ((0, 0), (0, 0), *((pad, pad) for pad in spec.padding)))
    return padded.reshape(x.shape[0], spec.groups, -1, *padded.shape[2:])


Index = tuple[Any, ...]


def _taps(kernel: tuple[int, ...], out: tuple[int, ...], spec: ConvSpec) -> Iterator[tuple[Index, Index]]:
    """For each kernel tap: its index in the trailing (kernel) axes of a weight, and the slices of the
    trailing (spatial) axes of the padded input that it meets at every output position."""
    for tap in np.ndindex(*kernel):
        meets = (slice(r * dil, r * dil + (o - 1) * step + 1, step)
                 for r, o, dil, step in zip(tap, out, spec.dilation, spec.stride, strict=True))
        yield (Ellipsis, *tap), (Ellipsis, *meets)


def convolve(x: Array, w: Array, spec: ConvSpec) -> Array:
    """y[n, k, o] = sum over c, r of x_padded[n, g*C/G + c, o*stride + r*dilation] * w[k, c, r], k in group g."""
    n, _, *spatial = x.shape
    k, cg, *kernel = w.shape
    g = spec.groups
    out = spec.output_size(tuple(spatial), tuple(kernel))
    xg = _padded_groups(x, spec)
    wg = w.reshape(g, k // g, cg, *kernel)
    y = np.zeros((n, g, k // g, int(np.prod(out))))
    for tap, where in _taps(tuple(kernel), out, spec):
        y += wg[tap] @ xg[where].reshape(n, g, cg, -1)  # (G, K/G, C/G) @ (N, G, C/G, P)
    return y.reshape(n, k, *out)


def convolve_backward_data(dy: Array, w: Array, spatial: tuple[int, ...], spec: ConvSpec) -> Array:
    """The adjoint of `convolve` in x: every output gradient spread back over the inputs it read."""
    n, k, *out = dy.shape
    _, cg, *kernel = w.shape
    g = spec.groups
    dyg = dy.reshape(n, g, k // g, -1)
    wg = w.reshape(g, k // g, cg, *kernel)
    dxp = np.zeros((n, g, cg, *[size + 2 * pad for size, pad in zip(spatial, spec.padding, strict=True)]))
    for tap, where in _taps(tuple(kernel), tuple(out), spec):
        dxp[where] += (wg[tap].transpose(0, 2, 1) @ dyg).reshape(n, g, cg, *out)
    inside: Index = (Ellipsis, *(slice(pad, pad + size) for pad, size in zip(spec.padding, spatial, strict=True)))
    return dxp[inside].reshape(n, g * cg, *spatial)


def convolve_backward_filter(x: Array, dy: Array, kernel: tuple[int, ...], spec: ConvSpec) -> Array:
    """The gradient of `convolve` in w: dw[k, c, r] = sum over n, o of dy[n, k, o] * x_padded[n, c, o*stride + r*d]."""
    n, c = x.shape[:2]
    _, k, *out = dy.shape
    g = spec.groups
    cg = c // g
    xg = _padded_groups(x, spec)
    dyg = dy.reshape(n, g, k // g, -1)
    dw = np.zeros((g, k // g, cg, *kernel))
    for tap, where in _taps(kernel, tuple(out), spec):
        dw[tap] = (dyg @ xg[where].reshape(n, g, cg, -1).transpose(0, 1, 3, 2)).sum(axis=0)
    return dw.reshape(k, cg, *kernel)


# --- activations on float64 arrays ------------------------------------------------------------------
# As cuDNN defines them (cudnnActivationForward): clipped_relu min(max(x, 0), coef); elu with
# alpha = coef; swish x * sigmoid(coef * x) (coef is cudnnSetActivationDescriptorSwishBeta's beta).

def _sigmoid(x: Array) -> Array:
    return np.exp(-np.logaddexp(0.0, -x))  # 1 / (1 + e^-x) without overflow for large -x


def _elu(x: Array, alpha: float) -> Array:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _sigmoid_slope(x: Array, _: float) -> Array:
    s = _sigmoid(x)
    return s * (1.0 - s)


def _swish_slope(x: Array, beta: float) -> Array:
    s = _sigmoid(beta * x)
    return s + beta * x * s * (1.0 - s)


_FORWARD: dict[str, Callable[[Array, float], Array]] = {
    "sigmoid": lambda x, _: _sigmoid(x),
    "relu": lambda x, _: np.maximum(x, 0.0),
    "tanh": lambda x, _: np.tanh(x),
    "clipped_relu": lambda x, ceiling: np.minimum(np.maximum(x, 0.0), ceiling),
    "elu": _elu,
    "identity": lambda x, _: x,
    "swish": lambda x, beta: x * _sigmoid(beta * x),
}

_SLOPE: dict[str, Callable[[Array, float], Array]] = {
    "sigmoid": _sigmoid_slope,
    "relu": lambda x, _: (x > 0).astype(np.float64),
    "tanh": lambda x, _: 1.0 - np.tanh(x) ** 2,
    "clipped_relu": lambda x, ceiling: ((x > 0) & (x < ceiling)).astype(np.float64),
    "elu": lambda x, alpha: np.where(x > 0, 1.0, alpha * np.exp(np.minimum(x, 0.0))),
    "identity": lambda x, _: np.ones_like(x),
    "swish": _swish_slope,
}


def activate(x: Array, mode: str, coef: float) -> Array:
    return _FORWARD[mode](x, coef)


def activate_backward(x: Array, dy: Array, mode: str, coef: float) -> Array:
    """dx = dy * the activation's derivative at x."""
    return dy * _SLOPE[mode](x, coef)
