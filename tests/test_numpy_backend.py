"""The numpy reference backend against independent answers: nested loops written out here, arrays worked
by hand, the adjoint identities that tie the three convolutions together, and finite differences."""

from __future__ import annotations

import itertools

import cudnnload_numpy as reference
import numpy as np
import pytest

from cudnnload.dispatch.backends import ACTIVATIONS, ConvSpec, Registry
from cudnnload.dispatch.dispatcher import Dispatcher


@pytest.fixture(scope="module")
def dispatcher() -> Dispatcher:
    registry = Registry()
    reference.register(registry)
    return Dispatcher(registry)


def spec(spatial: int, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1) -> ConvSpec:
    return ConvSpec((stride,) * spatial, (padding,) * spatial, (dilation,) * spatial, groups)


# --- written out with loops over every index: the definition, independent of the backend's taps ----------

def _source(o: tuple[int, ...], r: tuple[int, ...], s: ConvSpec) -> tuple[int, ...]:
    """The input position output o reads through kernel tap r (in unpadded coordinates)."""
    return tuple(oi * st + ri * d - p for oi, ri, st, d, p in zip(o, r, s.stride, s.dilation, s.padding, strict=True))


def loop_conv(x: np.ndarray, w: np.ndarray, s: ConvSpec) -> np.ndarray:
    n, c, *size = x.shape
    k, cg, *kernel = w.shape
    out = s.output_size(tuple(size), tuple(kernel))
    y = np.zeros((n, k, *out))
    for b, kk, o in itertools.product(range(n), range(k), np.ndindex(*out)):
        group = kk // (k // s.groups)
        for ci, r in itertools.product(range(cg), np.ndindex(*kernel)):
            at = _source(o, r, s)
            if all(0 <= a < extent for a, extent in zip(at, size, strict=True)):
                y[(b, kk, *o)] += x[(b, group * cg + ci, *at)] * w[(kk, ci, *r)]
    return y


def loop_backward_data(dy: np.ndarray, w: np.ndarray, size: tuple[int, ...], s: ConvSpec) -> np.ndarray:
    n, k, *out = dy.shape
    _, cg, *kernel = w.shape
    dx = np.zeros((n, cg * s.groups, *size))
    for b, kk, o in itertools.product(range(n), range(k), np.ndindex(*out)):
        group = kk // (k // s.groups)
        for ci, r in itertools.product(range(cg), np.ndindex(*kernel)):
            at = _source(o, r, s)
            if all(0 <= a < extent for a, extent in zip(at, size, strict=True)):
                dx[(b, group * cg + ci, *at)] += dy[(b, kk, *o)] * w[(kk, ci, *r)]
    return dx


def loop_backward_filter(x: np.ndarray, dy: np.ndarray, kernel: tuple[int, ...], s: ConvSpec) -> np.ndarray:
    n, c, *size = x.shape
    _, k, *out = dy.shape
    cg = c // s.groups
    dw = np.zeros((k, cg, *kernel))
    for b, kk, o in itertools.product(range(n), range(k), np.ndindex(*out)):
        group = kk // (k // s.groups)
        for ci, r in itertools.product(range(cg), np.ndindex(*kernel)):
            at = _source(o, r, s)
            if all(0 <= a < extent for a, extent in zip(at, size, strict=True)):
                dw[(kk, ci, *r)] += dy[(b, kk, *o)] * x[(b, group * cg + ci, *at)]
    return dw


# Odd sizes, every parameter away from its default somewhere, 1, 2 and 3 spatial axes.
CASES = [
    # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 3, 11), (4, 3, 3), 1, 0, 1, 1),
    ((1, 4, 13), (6, 2, 4), 3, 2, 2, 2),
    ((2, 3, 7, 6), (5, 3, 3, 3), 1, 1, 1, 1),
    ((1, 4, 9, 8), (4, 1, 3, 2), 2, 1, 1, 4),  # depthwise
    ((2, 6, 8, 7), (4, 3, 2, 3), 2, 0, 2, 2),
    ((1, 2, 5, 4, 6), (2, 2, 3, 2, 3), 1, 1, 1, 1),
    ((1, 4, 6, 5, 5), (4, 2, 2, 3, 2), 2, 1, 2, 2),
]
CASE_IDS = ["1d", "1d-stride-pad-dilation-groups", "2d-pad", "2d-depthwise", "2d-stride-dilation-groups", "3d",
            "3d-everything"]


@pytest.mark.parametrize(("x_shape", "w_shape", "stride", "padding", "dilation", "groups"), CASES, ids=CASE_IDS)
def test_every_convolution_matches_the_loops_that_define_it(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                                             stride: int, padding: int, dilation: int,
                                                             groups: int) -> None:
    rng = np.random.default_rng(1)
    s = spec(len(x_shape) - 2, stride, padding, dilation, groups)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    y = reference.convolve(x, w, s)
    dy = rng.standard_normal(y.shape)

    np.testing.assert_allclose(y, loop_conv(x, w, s), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reference.convolve_backward_data(dy, w, x_shape[2:], s),
                               loop_backward_data(dy, w, x_shape[2:], s), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reference.convolve_backward_filter(x, dy, w_shape[2:], s),
                               loop_backward_filter(x, dy, w_shape[2:], s), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("x_shape", "w_shape", "stride", "padding", "dilation", "groups"), CASES, ids=CASE_IDS)
def test_the_gradients_are_the_adjoints_of_the_convolution(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                                                           stride: int, padding: int, dilation: int,
                                                           groups: int) -> None:
    # <conv(x, w), dy> = <x, backward_data(dy, w)> = <w, backward_filter(x, dy)>: conv is bilinear.
    rng = np.random.default_rng(2)
    s = spec(len(x_shape) - 2, stride, padding, dilation, groups)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    y = reference.convolve(x, w, s)
    dy = rng.standard_normal(y.shape)

    forward = np.vdot(y, dy)
    assert np.vdot(x, reference.convolve_backward_data(dy, w, x_shape[2:], s)) == pytest.approx(forward, rel=1e-12)
    assert np.vdot(w, reference.convolve_backward_filter(x, dy, w_shape[2:], s)) == pytest.approx(forward, rel=1e-12)


# --- worked by hand ------------------------------------------------------------------------------------

SIGNAL = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0]]])  # (N=1, C=1, W=5)
EDGE = np.array([[[1.0, 0.0, -1.0]]])  # (K=1, C=1, R=3): y[i] = x[i] - x[i + 2]


@pytest.mark.parametrize(("stride", "padding", "dilation", "expected"), [
    (1, 0, 1, [-2, -2, -2]),
    (1, 1, 1, [-2, -2, -2, -2, 4]),  # zero padding: the last output reads 4 - 0
    (2, 1, 1, [-2, -2, 4]),
    (1, 0, 2, [-4]),  # taps at 0, 2, 4: x[0] - x[4]
], ids=["plain", "padded", "strided", "dilated"])
def test_a_one_dimensional_edge_filter_worked_by_hand(stride: int, padding: int, dilation: int,
                                                       expected: list[int]) -> None:
    result = reference.convolve(SIGNAL, EDGE, spec(1, stride, padding, dilation))

    np.testing.assert_array_equal(result[0, 0], expected)


def test_a_two_by_two_box_filter_sums_each_window() -> None:
    x = np.arange(16.0).reshape(1, 1, 4, 4)

    result = reference.convolve(x, np.ones((1, 1, 2, 2)), spec(2))

    np.testing.assert_array_equal(result[0, 0], [[10, 14, 18], [26, 30, 34], [42, 46, 50]])


def test_groups_keep_channels_apart() -> None:
    x = np.stack([np.full((3, 3), 1.0), np.full((3, 3), 10.0)])[None]  # two constant channels
    w = np.array([2.0, 3.0]).reshape(2, 1, 1, 1)  # groups=2: output k sees only input channel k

    result = reference.convolve(x, w, spec(2, groups=2))

    np.testing.assert_array_equal(result[0, :, 0, 0], [2.0, 30.0])


def test_backward_data_of_the_edge_filter_worked_by_hand() -> None:
    # dx[j] = sum over i of dy[i] * w[j - i]
    result = reference.convolve_backward_data(np.ones((1, 1, 3)), EDGE, (5,), spec(1))

    np.testing.assert_array_equal(result[0, 0], [1, 1, 0, -1, -1])


def test_backward_filter_with_one_hot_dy_reads_the_window() -> None:
    result = reference.convolve_backward_filter(SIGNAL, np.array([[[0.0, 1.0, 0.0]]]), (3,), spec(1))

    np.testing.assert_array_equal(result[0, 0], [2, 3, 4])


# --- activations ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "coef", "x", "expected"), [
    ("sigmoid", 0.0, [0.0, np.log(3.0), -800.0], [0.5, 0.75, 0.0]),
    ("relu", 0.0, [-1.0, 0.0, 2.5], [0.0, 0.0, 2.5]),
    ("tanh", 0.0, [0.0, np.log(2.0)], [0.0, 0.6]),  # tanh(ln 2) = (4 - 1) / (4 + 1)
    ("clipped_relu", 6.0, [-1.0, 3.0, 7.0], [0.0, 3.0, 6.0]),
    ("elu", 2.0, [-np.log(2.0), 3.0], [-1.0, 3.0]),  # 2 * (1/2 - 1)
    ("identity", 0.0, [-1.5, 2.0], [-1.5, 2.0]),
    ("swish", 1.0, [0.0, np.log(3.0)], [0.0, 0.75 * np.log(3.0)]),
    ("swish", 2.0, [np.log(3.0) / 2], [0.75 * np.log(3.0) / 2]),  # beta scales the sigmoid's argument
], ids=lambda value: str(value) if isinstance(value, str) else None)
def test_each_activation_at_values_worked_by_hand(mode: str, coef: float, x: list[float],
                                                  expected: list[float]) -> None:
    np.testing.assert_allclose(reference.activate(np.array(x), mode, coef), expected, rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("mode", ACTIVATIONS)
def test_each_activation_backward_is_its_derivative(mode: str) -> None:
    coef = {"clipped_relu": 1.5, "elu": 0.7, "swish": 1.3}.get(mode, 0.0)
    x = np.random.default_rng(3).uniform(-3, 3, 200)
    x = x[(np.abs(x) > 0.01) & (np.abs(x - coef) > 0.01)]  # away from the kinks of relu, clipped_relu and elu
    dy = np.random.default_rng(4).standard_normal(x.shape)
    h = 1e-6

    numeric = (reference.activate(x + h, mode, coef) - reference.activate(x - h, mode, coef)) / (2 * h)

    np.testing.assert_allclose(reference.activate_backward(x, dy, mode, coef), dy * numeric, rtol=1e-6, atol=1e-8)


# --- through the backend interface: layouts and dtypes ----------------------------------------------------

def test_nhwc_gives_the_nchw_result_transposed(dispatcher: Dispatcher) -> None:
    rng = np.random.default_rng(5)
    x, w, bias = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    settings = {"stride": 2, "padding": 1, "groups": 2, "activation": "elu"}

    nchw = dispatcher.conv(x, w, bias, **settings)
    nhwc = dispatcher.conv(x.transpose(0, 2, 3, 1).copy(), w.transpose(0, 2, 3, 1).copy(), bias, layout="NHWC",
                           **settings)

    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=1e-13)


def test_nhwc_gradients_are_the_nchw_ones_transposed(dispatcher: Dispatcher) -> None:
    rng = np.random.default_rng(6)
    x, w, dy = rng.standard_normal((1, 4, 5, 6)), rng.standard_normal((2, 4, 3, 3)), rng.standard_normal((1, 2, 3, 4))
    last = (0, 2, 3, 1)

    dx = dispatcher.conv_backward_data(dy.transpose(last), w.transpose(last), x.transpose(last).shape, layout="NHWC")
    dw = dispatcher.conv_backward_filter(x.transpose(last), dy.transpose(last), w.transpose(last).shape,
                                         layout="NHWC")

    np.testing.assert_allclose(dx, dispatcher.conv_backward_data(dy, w, x.shape).transpose(last), rtol=1e-13)
    np.testing.assert_allclose(dw, dispatcher.conv_backward_filter(x, dy, w.shape).transpose(last), rtol=1e-13)


def test_bias_and_the_fused_activation_follow_the_convolution(dispatcher: Dispatcher) -> None:
    rng = np.random.default_rng(7)
    x, w, bias = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3)), rng.standard_normal(3)

    y = dispatcher.conv(x, w, bias, activation="clipped_relu", coef=0.5)

    expected = np.clip(loop_conv(x, w, spec(2)) + bias.reshape(3, 1, 1), 0.0, 0.5)
    np.testing.assert_allclose(y, expected, rtol=1e-12)


def test_float16_is_computed_in_float64_and_rounded_once(dispatcher: Dispatcher) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float16)
    w = rng.standard_normal((4, 8, 3, 3)).astype(np.float16)

    y = dispatcher.conv(x, w)

    assert y.dtype == np.float16
    exact = loop_conv(x.astype(np.float64), w.astype(np.float64), spec(2))
    np.testing.assert_array_equal(y, exact.astype(np.float16))


def test_bfloat16_on_the_host_goes_through_ml_dtypes(dispatcher: Dispatcher) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="host bfloat16 needs ml_dtypes")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2, 5, 5)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((2, 2, 3, 3)).astype(ml_dtypes.bfloat16)

    y = dispatcher.conv(x, w, padding=1)

    assert y.dtype == ml_dtypes.bfloat16
    exact = loop_conv(x.astype(np.float64), w.astype(np.float64), spec(2, padding=1))
    np.testing.assert_array_equal(y.astype(np.float64), exact.astype(ml_dtypes.bfloat16).astype(np.float64))


def test_activation_backward_through_the_backend_uses_x(dispatcher: Dispatcher) -> None:
    x = np.array([-2.0, -0.5, 0.5, 2.0], dtype=np.float32)
    y = dispatcher.activation(x, "tanh")

    dx = dispatcher.activation_backward(y, np.ones_like(x), x, "tanh")

    np.testing.assert_allclose(dx, 1 - np.tanh(x.astype(np.float64)) ** 2, rtol=1e-6)
    assert dx.dtype == np.float32
