"""The ctypes bindings, called in-process on the real 9.28 cu12 and 8.9.7 shims."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from cudnnload.errors import LoadError, UsageError
from cudnnload.loading.capi import (
    PROTOTYPES,
    ActivationMode,
    ConvolutionFwdAlgoPerf,
    ConvolutionMode,
    CudnnApi,
    CudnnDebug,
    DataType,
    LibraryProperty,
    NanPropagation,
    SymbolMissing,
    TensorFormat,
)
from cudnnload.resolve.catalog import V8, V9
from tests._wheels import CU12_897, CU12_928, Wheel, in_process

BOTH = pytest.mark.parametrize("wheel", [CU12_928, CU12_897], ids=str)


def _new(api: CudnnApi, kind: str) -> ctypes.c_void_p:
    descriptor = ctypes.c_void_p()
    assert api.symbol(f"cudnnCreate{kind}Descriptor")(ctypes.byref(descriptor)) == 0
    return descriptor


@BOTH
def test_size_t_getters_and_properties_give_the_release(wheel: Wheel) -> None:
    api = in_process(wheel)

    assert (api.release(), api.cudart_version(), api.max_device_version()) == (
        wheel.release, wheel.cudart, wheel.max_device)
    assert [api.get_property(kind) for kind in LibraryProperty] == [
        (0, wheel.release.major), (0, wheel.release.minor), (0, wheel.release.patch)]


@BOTH
def test_version_checks_are_the_catalogs_and_all_pass(wheel: Wheel) -> None:
    api = in_process(wheel)

    assert len(api.version_checks()) == wheel.version_checks
    assert {name: api.symbol(name)() for name in api.version_checks()} == dict.fromkeys(api.version_checks(), 0)


def test_symbol_missing_from_an_older_shim_is_none_or_a_load_error() -> None:
    api = in_process(CU12_897)

    assert api.optional("cudnnGetLastErrorString") is None
    assert not api.exports("cudnnGetLastErrorString")
    with pytest.raises(SymbolMissing, match=r"cudnnGetLastErrorString .* \(added in cuDNN 9.0\)") as caught:
        api.cudnnGetLastErrorString(None, 0)
    assert isinstance(caught.value, LoadError) and not isinstance(caught.value, AttributeError)
    assert caught.value.path == api.path


def test_functions_without_a_prototype_are_refused() -> None:
    api = in_process(CU12_928)

    with pytest.raises(UsageError, match="no prototype for cudnnNoSuchFunction"):
        api.symbol("cudnnNoSuchFunction")
    assert not hasattr(api, "not_a_c_name")  # ordinary attribute lookup still raises AttributeError


def test_unloadable_shim_path_is_a_load_error_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "libcudnn.so.9"

    with pytest.raises(LoadError, match="cannot open shared object file") as caught:
        CudnnApi(missing, 9)
    assert caught.value.path == str(missing)


def test_owners_follow_the_sublibrary_split_of_each_generation() -> None:
    owners = {name: (PROTOTYPES[name].owner(V9).key, PROTOTYPES[name].owner(V8).key)
              for name in ("cudnnCreate", "cudnnSetTensor4dDescriptor", "cudnnGetConvolution2dForwardOutputDim")}

    assert owners == {"cudnnCreate": ("graph", "ops_infer"), "cudnnSetTensor4dDescriptor": ("ops", "ops_infer"),
                      "cudnnGetConvolution2dForwardOutputDim": ("cnn", "cnn_infer")}
    assert in_process(CU12_928).owner("cudnnOpsVersionCheck").key == "ops"


def test_struct_layouts_match_the_headers() -> None:
    assert ctypes.sizeof(CudnnDebug) == 120
    assert (CudnnDebug.handle.offset, CudnnDebug.pid.offset, CudnnDebug.cudaDeviceId.offset) == (24, 40, 56)
    assert ctypes.sizeof(ConvolutionFwdAlgoPerf) == 48
    assert ConvolutionFwdAlgoPerf.memory.offset == 16


@BOTH
def test_convolution_output_dims_2d_and_nd(wheel: Wheel) -> None:
    api = in_process(wheel)
    x, w, conv = _new(api, "Tensor"), _new(api, "Filter"), _new(api, "Convolution")
    assert api.cudnnSetTensor4dDescriptor(x, TensorFormat.NCHW, DataType.FLOAT, 1, 3, 8, 8) == 0
    assert api.cudnnSetFilter4dDescriptor(w, DataType.FLOAT, TensorFormat.NCHW, 4, 3, 3, 3) == 0
    assert api.cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, ConvolutionMode.CROSS_CORRELATION,
                                               DataType.FLOAT) == 0
    dims = [ctypes.c_int() for _ in range(4)]
    assert api.cudnnGetConvolution2dForwardOutputDim(conv, x, w, *map(ctypes.byref, dims)) == 0
    assert [d.value for d in dims] == [1, 4, 8, 8]

    pad, stride, dilation = ((ctypes.c_int * 2)(*values) for values in ((1, 1), (2, 2), (1, 1)))
    assert api.cudnnSetConvolutionNdDescriptor(conv, 2, pad, stride, dilation, ConvolutionMode.CROSS_CORRELATION,
                                               DataType.FLOAT) == 0
    out = (ctypes.c_int * 4)()
    assert api.cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 4, out) == 0
    assert list(out) == [1, 4, 4, 4]
    for kind, descriptor in (("Tensor", x), ("Filter", w), ("Convolution", conv)):
        assert api.symbol(f"cudnnDestroy{kind}Descriptor")(descriptor) == 0


@BOTH
def test_activation_coefficient_round_trips_as_a_double(wheel: Wheel) -> None:
    api = in_process(wheel)
    act = _new(api, "Activation")
    assert api.cudnnSetActivationDescriptor(act, ActivationMode.CLIPPED_RELU, NanPropagation.PROPAGATE_NAN, 6.25) == 0
    assert api.cudnnSetActivationDescriptorSwishBeta(act, 1.5) == 0

    mode, nan, coef = ctypes.c_int(), ctypes.c_int(), ctypes.c_double()
    assert api.cudnnGetActivationDescriptor(act, ctypes.byref(mode), ctypes.byref(nan), ctypes.byref(coef)) == 0
    assert (mode.value, nan.value, coef.value) == (ActivationMode.CLIPPED_RELU, NanPropagation.PROPAGATE_NAN, 6.25)
    assert api.cudnnDestroyActivationDescriptor(act) == 0


@BOTH
def test_callback_messages_are_read_whole(wheel: Wheel) -> None:
    api = in_process(wheel)
    x = _new(api, "Tensor")

    with api.record_errors() as messages:
        status = api.cudnnSetTensor4dDescriptor(x, TensorFormat.NCHW, DataType.FLOAT, -1, 3, 8, 8)

    assert status == {9: 2000, 8: 3}[wheel.major]
    (message,) = messages
    assert message.status == status
    assert message.lines[0].startswith("CuDNN (v") and "cudnnSetTensor4dDescriptor()" in message.lines[0]
    assert len(message.lines) >= 3  # header, error, time, process: a char* view would show the first only
    assert message.reason == "(n <= 0) || (c <= 0) || (h <= 0) || (w <= 0)"
    api.cudnnDestroyTensorDescriptor(x)


def test_recording_restores_a_previous_callback_exactly() -> None:
    api = in_process(CU12_897)  # 8.x can go back to mask 0; 9.x cannot (next test)
    before = api.callback()

    with api.record_errors():
        assert api.callback() != before

    assert api.callback() == before


@BOTH
def test_recording_leaves_cudnn_as_quiet_as_before(wheel: Wheel, capfd: pytest.CaptureFixture[str]) -> None:
    api = in_process(wheel)
    x = _new(api, "Tensor")
    with api.record_errors():
        pass
    capfd.readouterr()

    assert api.cudnnSetTensor4dDescriptor(x, TensorFormat.NCHW, DataType.FLOAT, -1, 3, 8, 8) != 0

    assert "CuDNN" not in capfd.readouterr().err
    api.cudnnDestroyTensorDescriptor(x)


@BOTH
def test_last_error_is_read_once(wheel: Wheel) -> None:
    """9.x clears cudnnGetLastErrorString on read; the 8.x callback record is consumed the same way."""
    api = in_process(wheel)
    x = _new(api, "Tensor")

    with api.record_errors():
        api.cudnnSetTensor4dDescriptor(x, TensorFormat.NCHW, DataType.FLOAT, 1, -3, 8, 8)
        assert api.last_error() == "(n <= 0) || (c <= 0) || (h <= 0) || (w <= 0)"
        assert api.last_error() is None
    api.cudnnDestroyTensorDescriptor(x)
