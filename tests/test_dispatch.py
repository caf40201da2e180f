"""The user API: arrays read without copies, every bad argument refused with a typed error naming it before any
backend runs, the backend chosen once per problem, outputs of the input's kind filled with NaN first, and the
cost of a call with a backend that does nothing.

Device arrays on this CPU-only machine are fakes that describe host memory as CUDA memory through DLPack:
checks never dereference pointers, and the test backends never touch the data. A torch part runs where
torch is importable (the GPU machine), with real CUDA tensors where a GPU is visible.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import cudnnload_numpy
import numpy as np
import pytest

from cudnnload.dispatch.backends import ActivationSpec, ConvSpec, Registry, Spec
from cudnnload.dispatch.dispatcher import Dispatcher
from cudnnload.dispatch.errors import ArgumentError, DeviceError, DtypeError, ShapeError, UnsupportedError
from cudnnload.dispatch.tensors import TensorRef

# --- fakes -------------------------------------------------------------------------------------------------

# dlpack.h, written out again here so that the reader in cudnnload.dispatch.tensors is checked against it.
class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CAPSULE_NAME = b"dltensor"
_KDL_CUDA = 2


class FakeDeviceArray:
    """A host array that says, through DLPack, that it lives on CUDA device ``device``."""

    def __init__(self, array: np.ndarray, device: int = 0, *, code: int = 2) -> None:
        self.array = array
        self.device = device
        self.streams: list[object] = []  # the stream argument of each __dlpack__ call
        ndim = array.ndim
        self._shape = (ctypes.c_int64 * ndim)(*array.shape)
        self._strides = (ctypes.c_int64 * ndim)(*(s // array.itemsize for s in array.strides))
        tensor = _Tensor(array.ctypes.data, _Device(_KDL_CUDA, device), ndim, _DataType(code, array.itemsize * 8, 1),
                         self._shape, self._strides, 0)
        self._managed = _Managed(tensor, None, None)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CUDA, self.device)

    def __dlpack__(self, stream: object = None) -> object:
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self._managed), _CAPSULE_NAME, None)


def device(shape: tuple[int, ...], device_index: int = 0, dtype: Any = np.float32) -> FakeDeviceArray:
    return FakeDeviceArray(np.zeros(shape, dtype), device_index)


class HostDlpack:
    """A numpy array seen only through its DLPack methods (as JAX or a PyTorch CPU tensor would be)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()

    def __dlpack__(self, stream: object = None) -> object:
        return self.array.__dlpack__()


class RecordingBackend:
    """Supports host or device memory (as told), records each call, and writes nothing."""

    def __init__(self, name: str, *, on_device: bool, reason: str | None = None) -> None:
        self.name = name
        self.on_device = on_device
        self.reason = reason
        self.calls: list[tuple[str, Spec, int]] = []
        self.asked = 0

    def availability(self) -> str | None:
        return self.reason

    def supports(self, op: str, spec: Spec, *tensors: TensorRef | None) -> str | None:
        self.asked += 1
        if any(t is not None and (t.device is not None) != self.on_device for t in tensors):
            return "device memory only" if self.on_device else "host memory only"
        return None

    def conv_forward(self, x: TensorRef, w: TensorRef, bias: TensorRef | None, y: TensorRef, spec: ConvSpec, *,
                     autotune: bool = False, stream: int = 0) -> None:
        self.calls.append(("conv_forward", spec, stream))

    def conv_backward_data(self, dy: TensorRef, w: TensorRef, dx: TensorRef, spec: ConvSpec, *,
                           autotune: bool = False, stream: int = 0) -> None:
        self.calls.append(("conv_backward_data", spec, stream))

    def conv_backward_filter(self, x: TensorRef, dy: TensorRef, dw: TensorRef, spec: ConvSpec, *,
                             autotune: bool = False, stream: int = 0) -> None:
        self.calls.append(("conv_backward_filter", spec, stream))

    def activation_forward(self, x: TensorRef, y: TensorRef, spec: ActivationSpec, *, stream: int = 0) -> None:
        self.calls.append(("activation_forward", spec, stream))

    def activation_backward(self, y: TensorRef, dy: TensorRef, x: TensorRef, dx: TensorRef, spec: ActivationSpec, *,
                            stream: int = 0) -> None:
        self.calls.append(("activation_backward", spec, stream))


def registry_of(*backends: RecordingBackend, numpy: bool = True) -> Registry:
    registry = Registry()
    if numpy:
        cudnnload_numpy.register(registry)
    for backend in backends:
        registry.add(backend.name, lambda backend=backend: backend)
    return registry


@pytest.fixture
def dispatcher() -> Dispatcher:
    return Dispatcher(registry_of())


def host(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)


# --- arrays in, arrays out ------------------------------------------------------------------------------------

def test_numpy_in_gives_numpy_out_of_the_inputs_dtype(dispatcher: Dispatcher) -> None:
    y = dispatcher.conv(host(2, 3, 8, 8), host(4, 3, 3, 3), stride=2, padding=1)

    assert type(y) is np.ndarray
    assert (y.shape, y.dtype) == ((2, 4, 4, 4), np.float32)
    assert y.flags.c_contiguous


def test_the_output_keeps_the_inputs_memory_order(dispatcher: Dispatcher) -> None:
    x = host(2, 5, 6, 3).transpose(0, 3, 1, 2)  # NCHW shape, NHWC in memory (PyTorch's channels_last)

    y = dispatcher.conv(x, host(4, 3, 3, 3), padding=1)

    assert y.transpose(0, 2, 3, 1).flags.c_contiguous


def test_non_contiguous_inputs_give_what_their_copies_give(dispatcher: Dispatcher) -> None:
    x = host(2, 3, 12, 15)[:, :, ::2, 1::2]  # strided view: (2, 3, 6, 7)
    w = host(4, 3, 3, 3).transpose(0, 1, 3, 2)  # transposed kernel axes
    dy = host(2, 4, 4, 10)[..., ::2]  # (2, 4, 4, 5), what x and w give

    np.testing.assert_array_equal(dispatcher.conv(x, w), dispatcher.conv(x.copy(), w.copy()))
    np.testing.assert_array_equal(dispatcher.conv_backward_data(dy, w, x.shape),
                                  dispatcher.conv_backward_data(dy.copy(), w.copy(), x.shape))
    np.testing.assert_array_equal(dispatcher.conv_backward_filter(x, dy, w.shape),
                                  dispatcher.conv_backward_filter(x.copy(), dy.copy(), w.shape))


def test_a_dlpack_host_array_reads_as_the_same_memory() -> None:
    array = host(4, 6, 5).transpose(2, 0, 1)[1:, :, ::2]

    ref = TensorRef.from_array(HostDlpack(array))
    direct = TensorRef.from_array(array)

    assert (ref.ptr, ref.shape, ref.strides, ref.dtype, ref.device) == (
        direct.ptr, direct.shape, direct.strides, direct.dtype, None)
    assert ref.kind == "dlpack"
    np.testing.assert_array_equal(ref.numpy(), array)


def test_a_dlpack_device_array_is_read_with_its_device_and_the_callers_stream() -> None:
    fake = FakeDeviceArray(np.zeros((2, 3), np.float16), device=1)

    ref = TensorRef.from_array(fake, stream=0x7000)

    assert (ref.device, ref.dtype, ref.shape, ref.strides) == (1, "float16", (2, 3), (3, 1))
    assert fake.streams == [0x7000]
    TensorRef.from_array(fake)
    assert fake.streams[-1] == 1  # the legacy default stream, as the array API numbers it for CUDA


def test_dlpack_bfloat16_on_the_device_needs_no_ml_dtypes() -> None:
    fake = FakeDeviceArray(np.zeros((2, 2), np.uint16), code=4)  # kDLBfloat

    assert TensorRef.from_array(fake).dtype == "bfloat16"


def test_an_object_that_is_no_array_is_refused() -> None:
    with pytest.raises(ArgumentError, match="not an array"):
        TensorRef.from_array([1.0, 2.0])


def test_integer_arrays_are_refused_by_dtype() -> None:
    with pytest.raises(DtypeError, match="int64"):
        TensorRef.from_array(np.zeros(3, np.int64))


def test_a_cuda_array_interface_pointer_the_driver_does_not_know_is_a_device_error() -> None:
    fake = type("Fake", (), {"__cuda_array_interface__": {"shape": (2,), "typestr": "<f4", "data": (0x1000, False),
                                                          "version": 2}})()

    with pytest.raises(DeviceError, match="__cuda_array_interface__"):
        TensorRef.from_array(fake)


@pytest.mark.parametrize(("view", "dense"), [
    (lambda a: a, True),
    (lambda a: a.transpose(2, 0, 1), True),  # dense in another axis order (as channels_last)
    (lambda a: a.reshape(12, 1, 5), True),  # a unit axis's stride does not matter
    (lambda a: a[:, ::2], False),
    (lambda a: a[:1], True),
    (lambda a: a[:, 1:], False),
    (lambda a: a[:, :, :1], False),
], ids=["contiguous", "transposed", "unit-axis", "strided", "leading-slice", "inner-slice", "one-column"])
def test_dense_means_no_gaps_in_some_axis_order(view: Callable[[np.ndarray], np.ndarray], dense: bool) -> None:
    assert TensorRef.from_array(view(np.zeros((3, 4, 5), np.float32))).is_dense is dense


def test_overlap_is_judged_on_the_bytes_spanned() -> None:
    a = np.zeros((4, 6), np.float32)
    ref = TensorRef.from_array

    assert ref(a[:2]).overlaps(ref(a[1:3]))
    assert not ref(a[:2]).overlaps(ref(a[2:]))
    assert ref(a[:, ::-1]).span == ref(a).span  # negative strides span the same bytes
    assert not ref(a).overlaps(ref(np.zeros((4, 6), np.float32)))


# --- NaN before the backend runs ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_outputs_a_backend_leaves_unwritten_are_nan(dtype: Any) -> None:
    silent = RecordingBackend("silent", on_device=False)
    dispatcher = Dispatcher(registry_of(silent))

    y = dispatcher.conv(host(1, 2, 5, 5, dtype=dtype), host(3, 2, 3, 3, dtype=dtype), backend="silent")
    a = dispatcher.activation(host(4, 4, dtype=dtype), "relu", backend="silent")

    assert np.isnan(y).all() and np.isnan(a).all()
    assert [call[0] for call in silent.calls] == ["conv_forward", "activation_forward"]


def test_the_callers_out_is_filled_with_nan_unless_poison_is_false() -> None:
    dispatcher = Dispatcher(registry_of(RecordingBackend("silent", on_device=False)))
    out = np.zeros((1, 3, 3, 3), np.float32)

    returned = dispatcher.conv(host(1, 2, 5, 5), host(3, 2, 3, 3), backend="silent", out=out)
    assert returned is out and np.isnan(out).all()

    out[...] = 0
    dispatcher.conv(host(1, 2, 5, 5), host(3, 2, 3, 3), backend="silent", out=out, poison=False)
    assert not out.any()


def test_an_in_place_call_is_not_filled_with_nan_first(dispatcher: Dispatcher) -> None:
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)

    y = dispatcher.activation(x, "relu", out=x)

    assert y is x
    np.testing.assert_array_equal(x, [0.0, 2.0, 0.0, 4.0])


def test_device_outputs_are_not_filled_unless_asked() -> None:
    backend = RecordingBackend("gpu", on_device=True)
    dispatcher = Dispatcher(registry_of(backend))
    out = FakeDeviceArray(np.zeros((1, 3, 3, 3), np.float32))

    dispatcher.conv(device((1, 2, 5, 5)), device((3, 2, 3, 3)), out=out)  # a fill here would need a GPU

    assert not out.array.any()
    assert backend.calls[0][0] == "conv_forward"


# --- choosing a backend ---------------------------------------------------------------------------------------

def test_auto_prefers_cudnn_graph_then_legacy_and_skips_the_unavailable() -> None:
    graph = RecordingBackend("cudnn-graph", on_device=True, reason="no GPU")
    legacy = RecordingBackend("cudnn-legacy", on_device=True)
    dispatcher = Dispatcher(registry_of(graph, legacy))

    dispatcher.conv(device((1, 2, 5, 5)), device((3, 2, 3, 3)), out=device((1, 3, 3, 3)))
    y = dispatcher.conv(host(1, 2, 5, 5), host(3, 2, 3, 3))

    assert [call[0] for call in legacy.calls] == ["conv_forward"] and not graph.calls
    assert not np.isnan(y).any()  # host data went to numpy, which wrote it


class ReplayingBackend(RecordingBackend):
    """Hands out a replay after each conv_forward; each replay runs ``times`` times, then stops working."""

    def __init__(self, times: int) -> None:
        super().__init__("replaying", on_device=True)
        self.times = times
        self.replayed: list[tuple[int, int]] = []  # (x pointer, stream) of each replay

    def replay(self, op: str, spec: Spec, tensors: tuple[TensorRef | None, ...], *, autotune: bool = False,
               stream: int = 0) -> Callable[[], bool] | None:
        left = [self.times]
        x = tensors[0]
        assert x is not None

        def again() -> bool:
            if not left[0]:
                return False
            left[0] -= 1
            self.replayed.append((x.ptr, stream))
            return True

        return again


def test_a_repeated_call_into_the_callers_device_out_is_the_backends_replay() -> None:
    backend = ReplayingBackend(times=2)
    dispatcher = Dispatcher(registry_of(backend))
    x, w, out = device((1, 2, 5, 5)), device((3, 2, 3, 3)), device((1, 3, 3, 3))

    for _ in range(4):
        dispatcher.conv(x, w, out=out)

    # the first call runs the method; two replays; the spent replay returns False: the method again
    assert [call[0] for call in backend.calls] == ["conv_forward", "conv_forward"]
    assert backend.replayed == [(x.array.ctypes.data, 0)] * 2


def test_a_replay_is_never_used_for_other_pointers_a_stream_or_a_fill() -> None:
    backend = ReplayingBackend(times=10)
    dispatcher = Dispatcher(registry_of(backend))
    w, out = device((3, 2, 3, 3)), device((1, 3, 3, 3))
    first, second = device((1, 2, 5, 5)), device((1, 2, 5, 5))

    dispatcher.conv(first, w, out=out)
    dispatcher.conv(second, w, out=out)  # other pointers: the method
    dispatcher.conv(first, w, out=out, stream=7)  # another stream: the method
    dispatcher.conv(first, w, out=out, poison=False)  # poison given: the method (it decides on the fill)
    dispatcher.conv(first, w, out=out)

    assert len(backend.calls) == 4
    assert backend.replayed == [(first.array.ctypes.data, 0)]


def test_auto_runs_activations_on_cudnn_legacy_before_cudnn_graph() -> None:
    graph = RecordingBackend("cudnn-graph", on_device=True)
    legacy = RecordingBackend("cudnn-legacy", on_device=True)
    dispatcher = Dispatcher(registry_of(graph, legacy))

    dispatcher.activation(device((4, 5)), "relu", out=device((4, 5)))
    dispatcher.conv(device((1, 2, 5, 5)), device((3, 2, 3, 3)), out=device((1, 3, 3, 3)))

    assert [call[0] for call in legacy.calls] == ["activation_forward"]
    assert [call[0] for call in graph.calls] == ["conv_forward"]


def test_device_data_never_goes_to_numpy() -> None:
    dispatcher = Dispatcher(registry_of())

    with pytest.raises(UnsupportedError, match="numpy: numpy computes on the host; the data is on CUDA device 0"):
        dispatcher.conv(device((1, 2, 5, 5)), device((3, 2, 3, 3)), out=device((1, 3, 3, 3)))
    with pytest.raises(UnsupportedError, match="numpy cannot run activation_forward here"):
        dispatcher.activation(device((4,)), "relu", backend="numpy", out=device((4,)))


def test_the_backend_is_chosen_once_per_problem() -> None:
    backend = RecordingBackend("counting", on_device=False)
    dispatcher = Dispatcher(registry_of(backend))

    for _ in range(3):
        dispatcher.conv(host(1, 2, 5, 5), host(3, 2, 3, 3), backend="counting")
    assert backend.asked == 1
    dispatcher.conv(host(1, 2, 6, 5), host(3, 2, 3, 3), backend="counting")
    assert backend.asked == 2
    assert len(backend.calls) == 4


def test_a_backend_object_can_be_passed_directly() -> None:
    backend = RecordingBackend("mine", on_device=False)

    Dispatcher(Registry()).activation(host(3), "sigmoid", backend=backend)

    assert backend.calls == [("activation_forward", ActivationSpec("sigmoid", 0.0), 0)]


def test_parameters_reach_the_backend_as_a_normalised_spec() -> None:
    backend = RecordingBackend("mine", on_device=True)
    dispatcher = Dispatcher(registry_of(backend))

    dispatcher.conv(device((1, 4, 9, 9)), device((4, 2, 3, 3)), device((4,)), stride=[2, 1], padding=1,
                    dilation=(1, 2), groups=2, activation="swish", layout="NCHW", allow_tf32=True,
                    out=device((1, 4, 5, 7)), stream=0x5000)

    assert backend.calls == [("conv_forward", ConvSpec((2, 1), (1, 1), (1, 2), 2, "NCHW", True, "swish", 1.0), 0x5000)]


# --- refusals, before any backend runs --------------------------------------------------------------------------

X, W = (1, 4, 6, 6), (6, 4, 3, 3)

REFUSALS: list[tuple[str, Callable[[Dispatcher], object], type[Exception], str, str]] = [
    ("channels", lambda d: d.conv(host(*X), host(6, 3, 3, 3)), ShapeError, "w",
     "has 3 input channels per group; x has 4 channels in 1 group, so it needs 4"),
    ("groups-of-x", lambda d: d.conv(host(*X), host(6, 1, 3, 3), groups=3), ShapeError, "groups",
     "x has 4 channels, not a multiple of groups=3"),
    ("groups-of-w", lambda d: d.conv(host(*X), host(3, 2, 3, 3), groups=2), ShapeError, "groups",
     "w has 3 output channels, not a multiple of groups=2"),
    ("rank", lambda d: d.conv(host(4, 6), host(6, 4)), ShapeError, "x", "has 2 axes"),
    ("rank-mismatch", lambda d: d.conv(host(*X), host(6, 4, 3)), ShapeError, "w", "has 3 axes; the input has 4"),
    ("empty", lambda d: d.conv(host(0, 4, 6, 6), host(*W)), ShapeError, "x", "has an axis of size 0"),
    ("too-small", lambda d: d.conv(host(1, 4, 2, 6), host(*W)), ShapeError, "x",
     "smaller than the dilated kernel (3, 3)"),
    ("too-small-dilated", lambda d: d.conv(host(*X), host(*W), dilation=3), ShapeError, "x",
     "smaller than the dilated kernel (7, 7)"),
    ("stride-zero", lambda d: d.conv(host(*X), host(*W), stride=0), ArgumentError, "stride", "0 is below 1"),
    ("padding-negative", lambda d: d.conv(host(*X), host(*W), padding=(1, -1)), ArgumentError, "padding",
     "-1 is below 0"),
    ("stride-per-axis", lambda d: d.conv(host(*X), host(*W), stride=(1, 1, 1)), ArgumentError, "stride",
     "has 3 values for 2 spatial axes"),
    ("stride-float", lambda d: d.conv(host(*X), host(*W), stride=1.5), ArgumentError, "stride",
     "1.5 is neither an int"),
    ("dtype", lambda d: d.conv(host(*X), host(*W, dtype=np.float16)), DtypeError, "w",
     "is float16 but x is float32"),
    ("bias-dtype", lambda d: d.conv(host(*X), host(*W), host(6, dtype=np.float64)), DtypeError, "bias",
     "is float64 but x is float32"),
    ("bias-shape", lambda d: d.conv(host(*X), host(*W), host(1, 6, 1, 1)), ShapeError, "bias",
     "has shape (1, 6, 1, 1); it needs (6,)"),
    ("out-shape", lambda d: d.conv(host(*X), host(*W), out=np.empty((1, 6, 4, 5), np.float32)), ShapeError, "out",
     "has shape (1, 6, 4, 5); the result has shape (1, 6, 4, 4) (NCHW order)"),
    ("out-dtype", lambda d: d.conv(host(*X), host(*W), out=np.empty((1, 6, 4, 4))), DtypeError, "out",
     "is float64 but x is float32"),
    ("out-overlapping", lambda d: d.conv(host(*X), host(*W), out=np.broadcast_to(np.float32(0), (1, 6, 4, 4))),
     ArgumentError, "out", "zero stride"),
    ("host-and-device", lambda d: d.conv(host(*X), device(W)), DeviceError, "x",
     "is in host memory but w is on a CUDA device"),
    ("two-devices", lambda d: d.conv(device(X, 0), device(W, 1)), DeviceError, "w",
     "is on CUDA device 1 but x is on CUDA device 0"),
    ("activation", lambda d: d.conv(host(*X), host(*W), activation="gelu"), ArgumentError, "activation",
     "'gelu' is not one of sigmoid, relu, tanh, clipped_relu, elu, identity, swish"),
    ("clipped-relu-ceiling", lambda d: d.activation(host(3), "clipped_relu"), ArgumentError, "coef",
     "clipped_relu needs its ceiling"),
    ("coef-nan", lambda d: d.activation(host(3), "elu", coef=float("nan")), ArgumentError, "coef",
     "nan is not a finite number"),
    ("layout", lambda d: d.conv(host(*X), host(*W), layout="CHWN"), ArgumentError, "layout",
     "'CHWN' is not one of NCHW, NHWC"),
    ("layout-nhwc-channels", lambda d: d.conv(host(*X), host(*W), layout="NHWC"), ShapeError, "w",
     "has 3 input channels per group; x has 6 channels"),
    ("tf32-flag", lambda d: d.conv(host(*X), host(*W), allow_tf32=1), ArgumentError, "allow_tf32", "not True or False"),
    ("unknown-backend", lambda d: d.conv(host(*X), host(*W), backend="foo"), UnsupportedError, "backend",
     "no backend named 'foo'; available: numpy"),
    ("filter-needs-w-shape", lambda d: d.conv_backward_filter(host(*X), host(1, 6, 4, 4)), ArgumentError, "w_shape",
     "is needed: x and dy do not fix the kernel size"),
    ("filter-w-shape-channels", lambda d: d.conv_backward_filter(host(*X), host(1, 6, 4, 4), (5, 4, 3, 3)),
     ShapeError, "w_shape", "has 5 output channels; dy has 6 channels"),
    ("filter-dy-size", lambda d: d.conv_backward_filter(host(*X), host(1, 6, 5, 4), W), ShapeError, "dy",
     "has spatial size (5, 4)"),
    ("data-x-shape-negative", lambda d: d.conv_backward_data(host(1, 6, 4, 4), host(*W), (1, 4, -6, 6)),
     ShapeError, "x_shape", "a size that is not a positive integer: -6"),
    ("data-x-shape-mismatch", lambda d: d.conv_backward_data(host(1, 6, 4, 4), host(*W), (1, 4, 7, 6)),
     ShapeError, "x_shape", "gives an output of (5, 4), not dy's (4, 4)"),
    ("data-dy-channels", lambda d: d.conv_backward_data(host(1, 5, 4, 4), host(*W)), ShapeError, "dy",
     "has 5 channels; w has 6 output channels"),
    ("activation-backward-shapes", lambda d: d.activation_backward(host(3), host(4), host(3), "relu"), ShapeError,
     "dy", "has shape (4,); x has (3,)"),
    ("read-only-out", lambda d: d.activation(host(3), "relu", out=np.broadcast_to(host(3), (3,))), ArgumentError,
     "out", "is read-only"),
]


@pytest.mark.parametrize(("case", "call", "error", "argument", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_bad_arguments_are_refused_naming_the_argument(case: str, call: Callable[[Dispatcher], object],
                                                       error: type[Exception], argument: str, message: str) -> None:
    watcher = RecordingBackend("watcher", on_device=True)
    dispatcher = Dispatcher(registry_of(watcher))

    with pytest.raises(error) as caught:
        call(dispatcher)

    assert isinstance(caught.value, ArgumentError) and caught.value.argument == argument
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{argument}: ")
    assert watcher.asked == 0 and not watcher.calls  # refused before any backend was asked


def test_a_combination_the_backend_refuses_names_the_backend_and_its_reason() -> None:
    dispatcher = Dispatcher(registry_of(RecordingBackend("gpu", on_device=True)))

    with pytest.raises(UnsupportedError, match="backend: gpu cannot run conv_forward here: device memory only"):
        dispatcher.conv(host(*X), host(*W), backend="gpu")


def test_no_backend_at_all_says_so_with_a_fix() -> None:
    with pytest.raises(UnsupportedError, match="none installed") as caught:
        Dispatcher(Registry()).activation(host(3), "relu")

    assert caught.value.fix is not None and "CUDNNLOAD_BACKENDS" in caught.value.fix


# --- the cost of a call ---------------------------------------------------------------------------------

def _per_call_us(call: Callable[[], object], repeat: int = 2000) -> float:
    call()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        best = min(best, (time.perf_counter() - start) / repeat * 1e6)
    return best


def test_dispatch_overhead_with_a_backend_that_does_nothing() -> None:
    noop = RecordingBackend("noop", on_device=False)
    noop.conv_forward = lambda *args, **kwargs: None  # type: ignore[method-assign]
    dispatcher = Dispatcher(registry_of(noop))
    x, w, bias, out = host(32, 64, 56, 56), host(64, 64, 3, 3), host(64), np.empty((32, 64, 56, 56), np.float32)

    given = _per_call_us(lambda: dispatcher.conv(x, w, bias, padding=1, activation="relu", backend="noop", out=out,
                                                 poison=False))
    made = _per_call_us(lambda: dispatcher.conv(x, w, bias, padding=1, activation="relu", backend="noop",
                                                poison=False))
    reading = _per_call_us(lambda: TensorRef.from_array(x))
    print(f"\ndispatch overhead, numpy arrays, no-op backend: {given:.1f} µs/call with out=, {made:.1f} µs/call "
          f"making the output; reading one array {reading:.1f} µs")

    assert given < 100 and made < 150  # an order of magnitude of headroom on a slow CI core


# --- PyTorch, where it is installed -------------------------------------------------------------------------

def test_torch_cpu_tensors_give_torch_tensors_in_their_memory_format(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed here (it is on the GPU machine)")
    x = torch.randn(2, 3, 9, 8, dtype=torch.float64).to(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)

    y = dispatcher.conv(x, w, stride=2, padding=1)

    assert isinstance(y, torch.Tensor) and y.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(y, torch.nn.functional.conv2d(x, w, stride=2, padding=1), rtol=1e-12, atol=1e-12)


@pytest.fixture
def cuda_torch() -> Any:
    torch = pytest.importorskip("torch", reason="torch is not installed here (it is on the GPU machine)")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    return torch


def test_cuda_tensors_give_cuda_tensors_filled_with_nan_on_request(cuda_torch: Any) -> None:
    torch = cuda_torch
    backend = RecordingBackend("gpu", on_device=True)
    dispatcher = Dispatcher(registry_of(backend))
    x = torch.randn(2, 3, 9, 8, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 3, 3, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    stream = torch.cuda.Stream()

    y = dispatcher.conv(x, w, padding=1, stream=stream, poison=True)
    stream.synchronize()

    assert isinstance(y, torch.Tensor) and (y.device, y.dtype, y.shape) == (x.device, x.dtype, (2, 4, 9, 8))
    assert y.is_contiguous(memory_format=torch.channels_last)
    assert torch.isnan(y).all()
    assert backend.calls[0][2] == stream.cuda_stream


def test_dispatch_overhead_with_cuda_tensors(cuda_torch: Any) -> None:
    torch = cuda_torch
    noop = RecordingBackend("noop", on_device=True)
    noop.conv_forward = lambda *args, **kwargs: None  # type: ignore[method-assign]
    dispatcher = Dispatcher(registry_of(noop))
    x = torch.randn(32, 64, 56, 56, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    bias, out = torch.randn(64, device="cuda", dtype=torch.float16), torch.empty_like(x)

    given = _per_call_us(lambda: dispatcher.conv(x, w, bias, padding=1, activation="relu", backend="noop", out=out))
    made = _per_call_us(lambda: dispatcher.conv(x, w, bias, padding=1, activation="relu", backend="noop"))
    reading = _per_call_us(lambda: TensorRef.from_array(x))
    print(f"\ndispatch overhead, CUDA tensors, no-op backend: {given:.1f} µs/call with out=, {made:.1f} µs/call "
          f"making the output; reading one tensor {reading:.1f} µs")

    # The budget is 10 µs for a whole call through a cuDNN backend (issue 4), measured by the bench; shared
    # machines are too noisy for a test to hold the dispatch to its share of it, so this bound is coarse.
    assert given < 50


@pytest.fixture
def fake_views() -> Any:
    """FakeDeviceArray read the way torch tensors are on the repeated call (`tensors.VIEWS`)."""
    from cudnnload.dispatch.tensors import VIEWS

    VIEWS[FakeDeviceArray] = lambda a: (a.array.ctypes.data, a.array.shape, a.array.strides, a.array.dtype.str)
    yield VIEWS
    VIEWS.pop(FakeDeviceArray, None)


def test_the_repeated_call_by_views_replays_without_reading_the_arrays(fake_views: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    backend = ReplayingBackend(times=3)
    dispatcher = Dispatcher(registry_of(backend))
    x, w, out = device((1, 2, 5, 5)), device((3, 2, 3, 3)), device((1, 3, 3, 3))
    dispatcher.conv(x, w, out=out)  # runs the method
    dispatcher.conv(x, w, out=out)  # first replay, found in full: remembered by views
    import cudnnload.dispatch.dispatcher as module

    def no_reading(obj: object, stream: int) -> object:
        raise AssertionError("the arrays were read in full")

    monkeypatch.setattr(module, "as_ref", no_reading)
    dispatcher.conv(x, w, out=out)
    dispatcher.conv(x, w, out=out)
    assert len(backend.calls) == 1 and len(backend.replayed) == 3
    monkeypatch.undo()
    dispatcher.conv(x, w, out=out)  # the replay is spent: the method again, read in full
    assert len(backend.calls) == 2


def test_the_views_key_takes_every_argument_and_the_arrays(fake_views: Any) -> None:
    backend = ReplayingBackend(times=10)
    dispatcher = Dispatcher(registry_of(backend))
    w, out = device((3, 2, 3, 3)), device((1, 3, 3, 3))
    first, second = device((1, 2, 5, 5)), device((1, 2, 5, 5))
    for _ in range(3):
        dispatcher.conv(first, w, out=out)
    dispatcher.conv(second, w, out=out)  # other pointers: the method
    dispatcher.conv(first, w, out=out, stream=7)  # another stream: the method
    dispatcher.conv(first, w, out=out, poison=False)  # poison given: the method
    dispatcher.conv(first, w, out=out, padding=[0, 0])  # a list cannot be a key: read in full, planned anew
    assert len(backend.calls) == 5
    dispatcher.reload()
    assert dispatcher._express == {}


@pytest.mark.parametrize("padding", [1 << 40, 1 << 16])
def test_an_output_larger_than_the_machines_memory_is_a_shape_error_before_anything_is_allocated(padding: int) -> None:
    """A padding of 2**40 was numpy's "array is too big", 2**16 its MemoryError for 64 GiB (and an output just
    under the memory would have been allocated and filled): a ShapeError naming the output, before any backend."""
    import cudnnload

    x, w = np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 1, 1, 1), np.float32)
    with pytest.raises(ShapeError, match="more than this machine's"):
        cudnnload.conv(x, w, padding=padding, backend="numpy")
