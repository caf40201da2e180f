"""The cudnn-legacy and cudnn-graph backends, and the algorithm choices they remember (cudnnload.dispatch.algos).

CPU: the choice store (round trip, scopes, corrupt files), the geometry both backends share,
the legacy descriptors on the real 9.28 cu12 shim (their output size agrees with
`ConvSpec.output_size`), the operation graphs as data, and the same graphs finalized by
cuDNN 9.0 in a child process (9.0 builds operation graphs without a GPU, cudnn-facts §5).

GPU (``-m gpu``): one child process (the test process has the 9.28 cu12 wheel mapped, whose
sonames the installed cuDNN shares; tests/gpu.py) runs every case through the dispatcher on
fresh random data into NaN-poisoned outputs and measures the relative L2 error against the
numpy backend (float64) and against torch.nn.functional (float64 on the CPU); each test below
asserts one family of those cases. A second child, with the first one's choice file, runs
with the heuristic queries made to fail: it passes only on the remembered choices.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cudnnload.dispatch.algos import FORMAT, ChoiceStore, problem_key, scope_key
from cudnnload.dispatch.backends import ActivationSpec, ConvSpec
from cudnnload.dispatch.runtime import alignment, channels_last_order, nc_dims, packed, usable_strides, widened
from cudnnload.dispatch.tensors import TensorRef, _make, contiguous_strides, strides_in_order
from tests import gpu

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))  # a checkout runs these without reinstalling the plugin packages

from cudnnload_cudnn_graph.backend import GraphBackend  # noqa: E402
from cudnnload_cudnn_graph.backend_api import PointwiseMode  # noqa: E402
from cudnnload_cudnn_graph.graphs import ZERO_BIAS, activation_graph, conv_graph, epilogue_graph, flat  # noqa: E402
from cudnnload_cudnn_legacy.backend import STRICT_BACKWARD, LegacyBackend  # noqa: E402
from cudnnload_cudnn_legacy.descriptors import Descriptors, filter_format, math_type, output_dims  # noqa: E402
from cudnnload_cudnn_legacy.functions import LegacyFunctions  # noqa: E402


def ref(shape: tuple[int, ...], dtype: str = "float32", *, strides: tuple[int, ...] | None = None, ptr: int = 0,
        device: int | None = 0) -> TensorRef:
    return _make(ptr, shape, strides or contiguous_strides(shape), dtype, device, "test", None)


def nhwc(shape_nchw: tuple[int, ...], dtype: str = "float32") -> TensorRef:
    """An NHWC-order tensor (N, *spatial, C), dense."""
    n, c, *spatial = shape_nchw
    shape = (n, *spatial, c)
    return ref(shape, dtype)


# --- the choice store ---------------------------------------------------------------------------------

SCOPE = scope_key("NVIDIA H200", (9, 0), "9.19.0")


def test_scope_names_gpu_model_capability_and_release() -> None:
    assert SCOPE == "NVIDIA H200 sm_90 cuDNN 9.19.0"
    assert problem_key("conv_forward", (1, 2), "float16") == "conv_forward|(1, 2)|float16"


def test_a_choice_survives_into_a_new_store_of_the_same_scope(tmp_path: Path) -> None:
    env = {"CUDNNLOAD_CACHE": str(tmp_path)}
    ChoiceStore(SCOPE, env).put("cudnn-legacy", "p1", {"algo": 1, "math": 3})

    assert ChoiceStore(SCOPE, env).get("cudnn-legacy", "p1") == {"algo": 1, "math": 3}
    assert ChoiceStore(SCOPE, env).get("cudnn-graph", "p1") is None
    other_gpu = scope_key("NVIDIA H100 80GB HBM3", (9, 0), "9.19.0")
    other_release = scope_key("NVIDIA H200", (9, 0), "9.20.0")
    assert ChoiceStore(other_gpu, env).get("cudnn-legacy", "p1") is None
    assert ChoiceStore(other_release, env).get("cudnn-legacy", "p1") is None


def test_two_processes_writing_choices_keep_both(tmp_path: Path) -> None:
    env = {"CUDNNLOAD_CACHE": str(tmp_path)}
    first, second = ChoiceStore(SCOPE, env), ChoiceStore(SCOPE, env)
    first.get("cudnn-graph", "anything")  # both have read the (empty) file
    second.get("cudnn-graph", "anything")
    first.put("cudnn-graph", "a", {"engine": 3, "knobs": []})
    second.put("cudnn-graph", "b", {"engine": 5, "knobs": [[2, 1]]})

    fresh = ChoiceStore(SCOPE, env)
    assert fresh.get("cudnn-graph", "a") == {"engine": 3, "knobs": []}
    assert fresh.get("cudnn-graph", "b") == {"engine": 5, "knobs": [[2, 1]]}


@pytest.mark.parametrize("content", [b"{not json", b"\x00\xff\xfe", b"[1, 2]", b'{"format": 999, "scopes": {}}',
                                     b'{"format": 1, "scopes": []}'], ids=["garbage", "binary", "list", "format",
                                                                            "scopes"])
def test_a_corrupt_choice_file_is_ignored_and_rewritten(tmp_path: Path, content: bytes) -> None:
    env = {"CUDNNLOAD_CACHE": str(tmp_path)}
    path = tmp_path / f"algos-v{FORMAT}.json"
    path.write_bytes(content)
    store = ChoiceStore(SCOPE, env)

    assert store.get("cudnn-legacy", "p") is None
    store.put("cudnn-legacy", "p", {"algo": 6, "math": 1})
    assert json.loads(path.read_text())["scopes"][SCOPE]["cudnn-legacy"]["p"] == {"algo": 6, "math": 1}
    assert ChoiceStore(SCOPE, env).get("cudnn-legacy", "p") == {"algo": 6, "math": 1}


def test_an_unwritable_cache_folder_keeps_choices_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = ChoiceStore(SCOPE, {"CUDNNLOAD_CACHE": str(blocker / "cache")})
    store.put("cudnn-graph", "p", {"engine": 1, "knobs": []})

    assert store.get("cudnn-graph", "p") == {"engine": 1, "knobs": []}
    assert blocker.read_text() == "not a folder"


def test_no_cache_keeps_choices_in_memory_only(tmp_path: Path) -> None:
    env = {"CUDNNLOAD_CACHE": str(tmp_path), "CUDNNLOAD_NO_CACHE": "1"}
    store = ChoiceStore(SCOPE, env)
    store.put("cudnn-legacy", "p", {"algo": 0, "math": 3})

    assert store.path is None
    assert store.get("cudnn-legacy", "p") == {"algo": 0, "math": 3}
    assert list(tmp_path.iterdir()) == []


# --- geometry shared by both backends --------------------------------------------------------------------

def test_nhwc_tensors_are_seen_as_nchw_dims_with_nhwc_strides() -> None:
    x = nhwc((2, 6, 9, 11))  # (2, 9, 11, 6) in memory order

    assert nc_dims(x, "NHWC") == ((2, 6, 9, 11), (594, 1, 66, 6))
    assert packed(*nc_dims(x, "NHWC"), channels_last_order(4))
    assert not packed(*nc_dims(x, "NHWC"), (0, 1, 2, 3))


def test_one_spatial_axis_is_widened_to_two_keeping_the_memory_order() -> None:
    ncw = ref((2, 4, 17))
    nwc = ref((2, 17, 4))

    assert nc_dims(ncw, "NCHW") == ((2, 4, 1, 17), (68, 17, 17, 1))
    assert packed(*nc_dims(ncw, "NCHW"), (0, 1, 2, 3))
    assert nc_dims(nwc, "NHWC") == ((2, 4, 1, 17), (68, 1, 68, 4))
    assert packed(*nc_dims(nwc, "NHWC"), channels_last_order(4))
    assert nc_dims(ncw, "NCHW", widen=False) == ((2, 4, 17), (68, 17, 1))
    assert widened((3,), 1) == (1, 3) and widened((3, 2), 1) == (3, 2)


def test_unit_axes_do_not_decide_packing() -> None:
    assert packed((4, 1, 3, 3), (9, 123, 3, 1), (0, 1, 2, 3))
    assert not packed((4, 2, 3, 3), (18, 10, 3, 1), (0, 1, 2, 3))


def test_alignment_is_the_largest_power_of_two_up_to_16() -> None:
    assert [alignment(p) for p in (0, 0x7F0000000000, 0x1008, 0x1004, 0x1002, 0x1001)] == [16, 16, 8, 4, 2, 1]


def test_zero_and_negative_strides_are_refused_with_a_reason() -> None:
    assert usable_strides(ref((2, 3), strides=(3, 1))) is None
    assert usable_strides(ref((1, 3), strides=(0, 1))) is None  # a unit axis is never stepped over
    assert "zero or negative" in (usable_strides(ref((2, 3), strides=(0, 1))) or "")
    assert "zero or negative" in (usable_strides(ref((2, 3), strides=(-3, 1))) or "")


# --- legacy descriptors on the real 9.28 shim (no GPU needed) -------------------------------------------

CASES = [  # (name, layout, dtype, x (NCHW order), w (KCRS order), spec)
    ("nchw-3x3", "NCHW", "float32", (2, 5, 13, 11), (7, 5, 3, 3), ConvSpec((1, 1), (1, 1), (1, 1))),
    ("nhwc-stride2", "NHWC", "float16", (2, 6, 9, 11), (8, 6, 3, 3), ConvSpec((2, 2), (1, 1), (1, 1), layout="NHWC")),
    ("dilated-groups", "NCHW", "bfloat16", (1, 8, 17, 17), (12, 2, 3, 3), ConvSpec((1, 1), (2, 2), (2, 2), 4)),
    ("1d", "NCHW", "float32", (2, 4, 17), (6, 2, 3), ConvSpec((2,), (1,), (2,), 2)),
    ("3d", "NHWC", "float16", (2, 4, 7, 9, 6), (5, 4, 3, 3, 3), ConvSpec((1, 2, 1), (1, 1, 0), (1, 1, 1),
                                                                        layout="NHWC")),
]


@pytest.mark.wheels
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_legacy_descriptors_give_the_output_size_of_the_spec(case: tuple[Any, ...]) -> None:
    from tests._wheels import CU12_928, in_process

    _, layout, dtype, x_shape, w_shape, spec = case
    to_layout = (lambda s: s) if layout == "NCHW" else (lambda s: (s[0], *s[2:], s[1]))
    x, w = ref(to_layout(x_shape), dtype), ref(to_layout(w_shape), dtype)
    functions = LegacyFunctions(in_process(CU12_928))
    made = Descriptors(functions)
    try:
        x_dims, x_strides = nc_dims(x, layout)
        w_dims, w_strides = nc_dims(w, layout)
        w_format = filter_format(w_dims, w_strides)
        assert w_format is not None and w_format.name == layout
        conv = made.convolution(dtype, spec, math_type(dtype, spec.allow_tf32))
        dims = output_dims(functions, conv, made.tensor(dtype, x_dims, x_strides),
                           made.filter(dtype, w_dims, w_format), len(x_dims))
    finally:
        made.destroy()

    expected = (x_shape[0], w_shape[0], *spec.output_size(x_shape[2:], w_shape[2:]))
    assert dims == (expected if len(x_shape) > 3 else (expected[0], expected[1], 1, expected[2]))


@pytest.mark.wheels
@pytest.mark.parametrize("mode", ["sigmoid", "relu", "tanh", "clipped_relu", "elu", "swish"])
def test_legacy_activation_descriptors_carry_mode_and_coefficient(mode: str) -> None:
    from cudnnload.loading.capi import ActivationMode
    from tests._wheels import CU12_928, in_process

    functions = LegacyFunctions(in_process(CU12_928))
    made = Descriptors(functions)
    try:
        desc = made.activation(mode, 0.75)
        got_mode, nan, coef = ctypes.c_int(), ctypes.c_int(), ctypes.c_double()
        assert functions.cudnnGetActivationDescriptor(desc, ctypes.byref(got_mode), ctypes.byref(nan),
                                                      ctypes.byref(coef)) == 0
    finally:
        made.destroy()

    assert (ActivationMode(got_mode.value).name.lower(), nan.value) == (mode, 1)
    if mode != "swish":  # swish keeps its beta apart (cudnnSetActivationDescriptorSwishBeta)
        assert coef.value == 0.75


def test_fp32_math_type_follows_the_tf32_choice() -> None:
    assert (math_type("float32", False).name, math_type("float32", True).name) == ("FMA_MATH", "DEFAULT_MATH")
    assert math_type("float16", False).name == math_type("bfloat16", False).name == "TENSOR_OP_MATH"


def test_a_strided_filter_has_no_legacy_format() -> None:
    w = ref((8, 3, 3, 3), strides=(54, 9, 3, 1))  # every other output channel of a larger filter
    assert filter_format(*nc_dims(w, "NCHW", widen=False)) is None


def test_host_memory_is_refused_with_a_reason_before_cuDNN_is_asked() -> None:
    x, w, y = ref((1, 3, 8, 8), device=None), ref((4, 3, 3, 3), device=None), ref((1, 4, 8, 8), device=None)
    spec = ConvSpec((1, 1), (1, 1), (1, 1))

    for backend in (LegacyBackend(), GraphBackend()):
        assert "host memory" in (backend.supports("conv_forward", spec, x, w, None, y) or "")


def test_graph_refuses_float64_with_its_tables_reason_before_cuDNN_is_asked() -> None:
    backend = GraphBackend()
    x64, w64, y64 = ref((1, 3, 8, 8), "float64"), ref((4, 3, 3, 3), "float64"), ref((1, 4, 8, 8), "float64")

    why = backend.supports("conv_forward", ConvSpec((1, 1), (1, 1), (1, 1)), x64, w64, None, y64)
    assert why == backend.capability("conv_forward", "float64", "NCHW", 2) and "cudnn-legacy" in (why or "")
    assert backend.supports("activation_forward", ActivationSpec("relu"), x64, x64) == backend.capability(
        "activation_forward:relu", "float64", "NCHW", 2)


def test_legacy_fused_true_refuses_what_it_would_run_as_calls_after_the_convolution() -> None:
    x, w, b, y = ref((1, 3, 8, 8)), ref((4, 3, 3, 3)), ref((4,)), ref((1, 4, 8, 8))
    swish = ConvSpec((1, 1), (1, 1), (1, 1), activation="swish", coef=1.0, fused=True)

    why = LegacyBackend().supports("conv_forward", swish, x, w, b, y)

    assert why is not None and why.startswith("fused=True") and "bias and swish" in why


# --- operation graphs as data ------------------------------------------------------------------------

def test_forward_with_bias_and_activation_is_one_chain_into_y() -> None:
    x, w, b, y = nhwc((8, 32, 16, 16), "float16"), nhwc((64, 32, 3, 3), "float16"), ref((64,), "float16"), \
        nhwc((8, 64, 16, 16), "float16")
    spec = ConvSpec((1, 1), (1, 1), (1, 1), layout="NHWC", activation="swish", coef=1.5)
    graph = conv_graph("conv_forward", (x, w, b, y), spec)

    tensors = {t.uid: t for t in graph.tensors}
    assert graph.bindings == ((1, 0), (2, 1), (3, 2), (4, 3)) and graph.zero_bias == 0
    assert tensors[3].dims == (1, 64, 1, 1) and tensors[3].strides == (64, 1, 1, 1)
    assert tensors[1].strides == (8192, 1, 512, 32)  # NHWC memory, NCHW dims
    add, act = graph.pointwise
    assert (add.mode, add.b, act.mode, act.y) == (PointwiseMode.ADD, 3, PointwiseMode.SWISH_FWD, 4)
    assert act.parameter is not None and act.parameter[1] == 1.5
    assert graph.conv is not None
    conv_out = tensors[dict(graph.conv.operands)["y"]]
    assert conv_out.virtual and conv_out.dtype.name == "FLOAT" and conv_out.uid == add.x
    assert tensors[add.y].virtual and add.y == act.x
    assert conv_out.strides == strides_in_order(conv_out.dims, (0, 2, 3, 1))  # dense, y's memory order


def test_an_activation_without_bias_adds_a_zero_bias_the_backend_supplies() -> None:
    x, w, y = ref((2, 3, 8, 8), "float16", ptr=0x1000), ref((4, 3, 3, 3), "float16", ptr=0x2000), \
        ref((2, 4, 8, 8), "float16", ptr=0x3000)
    graph = conv_graph("conv_forward", (x, w, None, y), ConvSpec((1, 1), (1, 1), (1, 1), activation="relu"))

    assert graph.bindings == ((1, 0), (2, 1), (3, ZERO_BIAS), (4, 3))
    assert graph.zero_bias == 4 * 2  # K float16 zeros
    assert graph.pointers((x, w, None, y), zero_bias=0x9000) == [0x1000, 0x2000, 0x9000, 0x3000]
    assert [p.mode for p in graph.pointwise] == [PointwiseMode.ADD, PointwiseMode.RELU_FWD]


def test_plain_forward_writes_y_directly_and_identity_adds_nothing() -> None:
    x, w, y = ref((2, 3, 8, 8)), ref((4, 3, 3, 3)), ref((2, 4, 8, 8))
    for activation in (None, "identity"):
        graph = conv_graph("conv_forward", (x, w, None, y), ConvSpec((1, 1), (1, 1), (1, 1), activation=activation))
        assert graph.pointwise == () and graph.conv is not None
        assert dict(graph.conv.operands) == {"x": 1, "w": 2, "y": 4}
        assert graph.bindings == ((1, 0), (2, 1), (4, 3))


def test_an_unfused_forward_is_the_biased_convolution_then_the_activation_in_place_on_y() -> None:
    x, w, b, y = ref((2, 3, 8, 8)), ref((4, 3, 3, 3)), ref((4,)), ref((2, 4, 8, 8))
    spec = ConvSpec((1, 1), (1, 1), (1, 1), activation="elu", coef=0.5)

    epilogue = epilogue_graph((x, w, b, y), spec)

    assert epilogue.conv is None and epilogue.bindings == ((1, 3), (2, 3))  # y in, y out
    (elu,) = epilogue.pointwise
    assert elu.mode == PointwiseMode.ELU_FWD and elu.parameter is not None and elu.parameter[1] == 0.5
    assert epilogue.tensors[0].dims == (1, 2 * 4 * 8 * 8, 1, 1)  # a packed row


def test_elementwise_tensors_are_rows_only_when_dense_in_one_memory_order() -> None:
    dense, channels_last = ref((2, 3, 4, 5)), ref((2, 3, 4, 5), strides=(60, 1, 15, 3))
    padded = ref((2, 3, 4, 5), strides=(72, 24, 6, 1))

    assert flat((dense, dense)) and flat((channels_last, channels_last))
    assert not flat((dense, channels_last)) and not flat((padded, padded))
    backend = GraphBackend()
    why = backend.supports("activation_forward", ActivationSpec("relu"), padded, dense)
    assert why is not None and "densely packed" in why


@pytest.mark.parametrize("mode", ["relu", "clipped_relu", "elu", "sigmoid", "tanh", "swish", "identity"])
def test_every_activation_is_a_pointwise_graph_forward_and_backward(mode: str) -> None:
    x, y, dy, dx = ref((3, 5, 7)), ref((3, 5, 7)), ref((3, 5, 7)), ref((3, 5, 7))
    spec = ActivationSpec(mode, 0.5)

    forward = activation_graph("activation_forward", (x, y), spec)
    backward = activation_graph("activation_backward", (y, dy, x, dx), spec)

    (op,) = forward.pointwise
    assert forward.bindings == ((1, 0), (2, 1)) and (op.x, op.y) == (1, 2)
    assert forward.tensors[0].dims == (1, 105, 1, 1) and forward.tensors[0].strides == (105, 1, 105, 105)
    (back,) = backward.pointwise
    if mode == "identity":  # dx = dy
        assert back.mode == PointwiseMode.IDENTITY and (back.x, back.y, back.dy) == (2, 4, None)
    else:
        assert back.mode.name.endswith("_BWD") and (back.x, back.dy, back.y) == (3, 2, 4)
        assert {index for _, index in backward.bindings} == {1, 2, 3}  # dy, x, dx: never y


def test_clipped_relu_is_relu_with_an_upper_clip() -> None:
    x, w, y = ref((2, 3, 8, 8)), ref((4, 3, 3, 3)), ref((2, 4, 8, 8))
    graph = conv_graph("conv_forward", (x, w, None, y),
                       ConvSpec((1, 1), (1, 1), (1, 1), activation="clipped_relu", coef=6.0))
    _, act = graph.pointwise
    assert act.mode == PointwiseMode.RELU_FWD and act.parameter is not None
    assert (act.parameter[0].name, act.parameter[1]) == ("POINTWISE_RELU_UPPER_CLIP", 6.0)


def test_gradients_name_their_operands_and_the_text_tells_problems_apart() -> None:
    dy, w, dx = ref((2, 8, 8, 8)), ref((8, 2, 3, 3)), ref((2, 4, 8, 8))
    spec = ConvSpec((1, 1), (1, 1), (1, 1), groups=2)
    data = conv_graph("conv_backward_data", (dy, w, dx), spec)
    weights = conv_graph("conv_backward_filter", (dx, dy, w), spec)

    assert data.conv is not None and weights.conv is not None
    assert dict(data.conv.operands) == {"dy": 1, "w": 2, "dx": 3} and data.pointwise == ()
    assert dict(weights.conv.operands) == {"x": 1, "dy": 2, "dw": 3}
    assert data.text() != weights.text()
    tf32 = conv_graph("conv_backward_data", (dy, w, dx), ConvSpec((1, 1), (1, 1), (1, 1), groups=2, allow_tf32=True))
    assert tf32.text() != data.text() and tf32 != data


def test_pointer_alignment_is_part_of_the_problem() -> None:
    x16, x2 = ref((2, 3, 8, 8), ptr=0x10000), ref((2, 3, 8, 8), ptr=0x10002)
    w, y = ref((4, 3, 3, 3)), ref((2, 4, 8, 8))
    spec = ConvSpec((1, 1), (1, 1), (1, 1))
    assert conv_graph("conv_forward", (x16, w, None, y), spec) != conv_graph("conv_forward", (x2, w, None, y), spec)


_GRAPHS_ON_9_0 = r"""
import ctypes, json, os, sys
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "plugins")]
from tests._wheels import CU12_90
from cudnnload.loading.capi import CudnnApi
from cudnnload.dispatch.backends import ConvSpec
from cudnnload.dispatch.tensors import _make, contiguous_strides
for key, path in CU12_90.files():
    if key != "shim":
        ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
from cudnnload_cudnn_graph.backend_api import GraphApi
from cudnnload_cudnn_graph.graphs import activation_graph, build, conv_graph, engine_count, epilogue_graph
from cudnnload.dispatch.backends import ActivationSpec

g = GraphApi(CudnnApi(CU12_90.lib_dir / "libcudnn.so.9", 9))
def t(shape, dtype="float16", layout="NCHW"):
    if layout == "NHWC":
        shape = (shape[0], *shape[2:], shape[1])
    return _make(0, shape, contiguous_strides(shape), dtype, 0, "t", None)
counts = {}
for act in (None, "relu", "clipped_relu", "elu", "sigmoid", "tanh", "swish"):
    for bias in (False, True):
        spec = ConvSpec((1, 1), (1, 1), (1, 1), 1, "NHWC", False, act, 0.5)
        tensors = (t((8, 32, 16, 16), layout="NHWC"), t((64, 32, 3, 3), layout="NHWC"),
                   t((64,)) if bias else None, t((8, 64, 16, 16), layout="NHWC"))
        counts[f"forward {act} bias={bias}"] = engine_count(g, build(g, conv_graph("conv_forward", tensors, spec), 0))
spec = ConvSpec((2, 2, 1), (1, 1, 0), (1, 1, 1), 2, "NCHW", True)
x, dy, w = t((2, 8, 9, 9, 5), "float32"), t((2, 6, 5, 5, 5), "float32"), t((6, 4, 3, 3, 1), "float32")
counts["backward data 3d"] = engine_count(g, build(g, conv_graph("conv_backward_data", (dy, w, x), spec), 0))
counts["backward filter 3d"] = engine_count(g, build(g, conv_graph("conv_backward_filter", (x, dy, w), spec), 0))
spec = ConvSpec((1, 1), (1, 1), (1, 1), 1, "NCHW", False, "swish", 0.5)
tensors = (t((8, 32, 16, 16), "float32"), t((64, 32, 3, 3), "float32"), t((64,), "float32"),
           t((8, 64, 16, 16), "float32"))
counts["epilogue swish"] = engine_count(g, build(g, epilogue_graph(tensors, spec), 0))
for mode in ("relu", "clipped_relu", "elu", "sigmoid", "tanh", "swish", "identity"):
    a = t((3, 5, 7, 9))
    for op, refs in (("activation_forward", (a, a)), ("activation_backward", (a, a, a, a))):
        counts[f"{op} {mode}"] = engine_count(g, build(g, activation_graph(op, refs, ActivationSpec(mode, 0.5)), 0))
print(json.dumps(counts))
"""


@pytest.mark.wheels
def test_every_graph_shape_finalizes_on_cudnn_9_0_without_a_gpu() -> None:
    from tests._wheels import CU12_90

    CU12_90.lib_dir  # noqa: B018  # skips when the wheel is not unpacked
    counts = gpu.run_child(_GRAPHS_ON_9_0, str(REPO))

    assert len(counts) == 16 + 1 + 14
    assert all(count > 0 for count in counts.values()), counts


# --- on the GPU ------------------------------------------------------------------------------------------

# One child runs ~200 cases, autotuning included: every gpu-marked test of the suite together took 27 s on
# an H200 (bench/results/2026-11-22-h200-loader.md). The tests that start it get twice the watchdog's minute.
GPU_CHILD_S = 110.0
slow_child = pytest.mark.timeout_s(GPU_CHILD_S + 10)


def _gpu_results(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> dict[str, Any]:
    gpu.require_gpus(1)
    pytest.importorskip("torch")
    env = dict(os.environ, CUDNNLOAD_CACHE=str(tmp_path_factory.getbasetemp() / "cudnn-cache"))
    script = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/plugins']; "
              f"from tests.test_cudnn_backends import {name}; {name}(*sys.argv[2:])")
    return gpu.run_child(script, str(REPO), *args, environ=env, timeout=GPU_CHILD_S)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _gpu_results(tmp_path_factory, "gpu_checks")


def _failures(results: dict[str, Any], family: str) -> list[str]:
    cases = [case for case in results["cases"] if case["family"] == family]
    assert cases, f"no {family} cases ran"
    return [f"{c['name']}: {c['problem']}" for c in cases if c["problem"]]


@pytest.mark.gpu
@slow_child
@pytest.mark.parametrize("family", ["forward", "forward-fused", "backward-data", "backward-filter", "autotune",
                                    "stream", "reuse"])
def test_both_cudnn_backends_match_numpy_and_torch(gpu_results: dict[str, Any], family: str) -> None:
    assert _failures(gpu_results, family) == []


@pytest.mark.gpu
@slow_child
@pytest.mark.parametrize("family", ["activation-forward", "activation-backward"])
def test_every_legacy_activation_matches_torch_in_every_dtype(gpu_results: dict[str, Any], family: str) -> None:
    assert _failures(gpu_results, family) == []


@pytest.mark.gpu
@slow_child
def test_a_new_process_runs_on_the_remembered_choices(gpu_results: dict[str, Any],
                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    assert gpu_results["cases"]  # the first child wrote the choices this one needs
    again = _gpu_results(tmp_path_factory, "gpu_remembered")

    assert again["problems"] == [], again
    assert set(again["backends"]) == {"cudnn-graph", "cudnn-legacy"}


# --- what the GPU children run (plain functions: the children import this module) ----------------------

TOLERANCE = {"float32": 1e-5, "tf32": 3e-3, "float16": 1e-2, "bfloat16": 2e-2}  # relative L2 error
MODES = ("sigmoid", "relu", "tanh", "clipped_relu", "elu", "identity", "swish")
COEF = {"clipped_relu": 0.8, "elu": 0.7, "swish": 1.3}


class _Checker:
    """Runs cases through a dispatcher holding numpy, cudnn-legacy and cudnn-graph, and records what went wrong."""

    def __init__(self) -> None:
        import cudnnload_cudnn_graph
        import cudnnload_cudnn_legacy
        import cudnnload_numpy
        import torch

        from cudnnload.dispatch.backends import Registry
        from cudnnload.dispatch.dispatcher import Dispatcher

        registry = Registry()
        for plugin in (cudnnload_numpy, cudnnload_cudnn_legacy, cudnnload_cudnn_graph):
            plugin.register(registry)
        self.d = Dispatcher(registry)
        self.torch = torch
        self.cases: list[dict[str, Any]] = []
        self.generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))  # fresh data

    # helpers
    def randn(self, shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> Any:
        """float64 values already rounded to ``dtype``, so the references see exactly the GPU's inputs."""
        torch = self.torch
        values = torch.randn(shape, dtype=torch.float64, generator=self.generator) * scale
        return values.to(getattr(torch, dtype)).double()

    @staticmethod
    def to_layout(t: Any, layout: str) -> Any:
        return t if layout == "NCHW" else t.permute(0, *range(2, t.dim()), 1)

    @staticmethod
    def from_layout(t: Any, layout: str) -> Any:
        return t if layout == "NCHW" else t.permute(0, t.dim() - 1, *range(1, t.dim() - 1))

    def device(self, t: Any, dtype: str, layout: str | None, view: str | None = None) -> Any:
        """``t`` (NCHW order, float64) on the GPU in ``dtype``, in ``layout`` order, dense or as a strided view."""
        torch = self.torch
        moved = (t if layout is None else self.to_layout(t, layout)).to("cuda", getattr(torch, dtype)).contiguous()
        if view == "padded-rows":  # the last axis padded by 3 elements: every row starts at a gap
            big = torch.full((*moved.shape[:-1], moved.shape[-1] + 3), float("nan"), dtype=moved.dtype,
                             device="cuda")
            big[..., :moved.shape[-1]] = moved
            return big[..., :moved.shape[-1]]
        if view == "batch-slice":  # every other image of a batch twice as large
            big = torch.full((moved.shape[0] * 2, *moved.shape[1:]), float("nan"), dtype=moved.dtype, device="cuda")
            big[::2] = moved
            return big[::2]
        return moved

    def error(self, out: Any, reference: Any) -> float:
        import numpy as np

        out = np.asarray(out, dtype=np.float64)
        reference = np.asarray(reference, dtype=np.float64)
        if out.shape != reference.shape or not np.all(np.isfinite(out)):
            return float("inf")
        return float(np.linalg.norm(out - reference) / max(float(np.linalg.norm(reference)), 1e-300))

    def activate(self, t: Any, mode: str | None, coef: float | None) -> Any:
        torch = self.torch
        if mode in (None, "identity"):
            return t
        return {"relu": lambda: t.clamp_min(0), "clipped_relu": lambda: t.clamp(0, coef),
                "elu": lambda: torch.nn.functional.elu(t, alpha=coef), "sigmoid": lambda: torch.sigmoid(t),
                "tanh": lambda: torch.tanh(t), "swish": lambda: t * torch.sigmoid(coef * t)}[mode]()

    def record(self, family: str, name: str, run: Any, tolerance: float, optional: bool = False) -> None:
        """Run ``run()`` -> (result, numpy reference, torch reference) in NCHW order; record the errors."""
        from cudnnload.dispatch.errors import UnsupportedError

        case: dict[str, Any] = {"family": family, "name": name, "problem": None}
        try:
            out, numpy_ref, torch_ref = run()
            self.torch.cuda.synchronize()
            errors = (self.error(out, numpy_ref), self.error(out, torch_ref))
            case["errors"] = errors
            if not all(e <= tolerance for e in errors):
                case["problem"] = f"relative L2 error {errors[0]:.3g} (numpy), {errors[1]:.3g} (torch) > {tolerance}"
        except UnsupportedError as exc:
            case["refused"] = exc.message
            if not optional:
                case["problem"] = f"refused: {exc.message}"
        except Exception as exc:  # any failure is a finding, reported with the case's name
            case["problem"] = f"{type(exc).__name__}: {exc}"
        self.cases.append(case)

    # convolution cases
    def conv(self, family: str, backend: str, dtype: str, layout: str, x_shape: tuple[int, ...],
             w_shape: tuple[int, ...], stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1,
             bias: bool = False, activation: str | None = None, tf32: bool = False, view: str | None = None,
             autotune: bool = False, stream: Any = None, optional: bool = False, calls: int = 1) -> None:
        torch = self.torch
        functional = torch.nn.functional
        spatial = len(x_shape) - 2
        conv = (functional.conv1d, functional.conv2d, functional.conv3d)[spatial - 1]
        coef = COEF.get(activation or "")
        fan_in = w_shape[1] * int(torch.tensor(w_shape[2:]).prod())
        x, w = self.randn(x_shape, dtype), self.randn(w_shape, dtype, fan_in ** -0.5)
        b = self.randn((w_shape[0],), dtype) if bias else None
        kwargs: dict[str, Any] = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}

        def run() -> tuple[Any, Any, Any]:
            xd, wd = self.device(x, dtype, layout, view), self.device(w, dtype, layout)
            bd = None if b is None else self.device(b, dtype, None)
            y: Any = None
            for _ in range(calls):  # a new output, poisoned, each time; the graph backend replays from the third
                y = self.d.conv(xd, wd, bd, activation=activation, coef=coef, layout=layout, allow_tf32=tf32,
                                backend=backend, autotune=autotune, stream=stream, poison=True, **kwargs)
            if stream is not None:
                stream.synchronize()
            host = [None if t is None else self.to_layout(t, layout).contiguous().numpy() for t in (x, w)]
            numpy_ref = self.d.conv(host[0], host[1], None if b is None else b.numpy(), activation=activation,
                                    coef=coef, layout=layout, backend="numpy", **kwargs)
            torch_ref = self.activate(conv(x, w, b, **kwargs), activation, coef)
            return (self.from_layout(y.double().cpu(), layout), self.from_layout(torch.from_numpy(numpy_ref), layout),
                    torch_ref)

        tolerance = TOLERANCE["tf32" if tf32 else dtype]
        label = (f"{backend} {dtype} {layout} x{x_shape} w{w_shape} s{stride} p{padding} d{dilation} g{groups}"
                 + (" bias" if bias else "") + (f" {activation}" if activation else "") + (f" {view}" if view else "")
                 + (" tf32" if tf32 else "") + (f" x{calls} calls" if calls > 1 else ""))
        self.record(family, label, run, tolerance, optional)

    def backward(self, family: str, backend: str, dtype: str, layout: str, x_shape: tuple[int, ...],
                 w_shape: tuple[int, ...], stride: int = 1, padding: int = 0, dilation: int = 1,
                 groups: int = 1) -> None:
        torch = self.torch
        spatial = len(x_shape) - 2
        grad = torch.nn.grad
        kwargs: dict[str, Any] = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        out = tuple(1 + (size + 2 * padding - ((k - 1) * dilation + 1)) // stride
                    for size, k in zip(x_shape[2:], w_shape[2:], strict=True))
        x, w = self.randn(x_shape, dtype), self.randn(w_shape, dtype, 0.3)
        dy = self.randn((x_shape[0], w_shape[0], *out), dtype)

        def in_layout(shape: tuple[int, ...]) -> tuple[int, ...]:
            return shape if layout == "NCHW" else (shape[0], *shape[2:], shape[1])

        def run() -> tuple[Any, Any, Any]:
            host = {name: self.to_layout(t, layout).contiguous().numpy() for name, t in (("x", x), ("w", w),
                                                                                       ("dy", dy))}
            dyd = self.device(dy, dtype, layout)
            if family == "backward-data":
                result = self.d.conv_backward_data(dyd, self.device(w, dtype, layout), in_layout(x_shape),
                                                   layout=layout, backend=backend, poison=True, **kwargs)
                numpy_ref = self.d.conv_backward_data(host["dy"], host["w"], in_layout(x_shape), layout=layout,
                                                      backend="numpy", **kwargs)
                torch_ref = (grad.conv1d_input, grad.conv2d_input, grad.conv3d_input)[spatial - 1](
                    x_shape, w, dy, **kwargs)
            else:
                result = self.d.conv_backward_filter(self.device(x, dtype, layout), dyd, in_layout(w_shape),
                                                     layout=layout, backend=backend, poison=True, **kwargs)
                numpy_ref = self.d.conv_backward_filter(host["x"], host["dy"], in_layout(w_shape), layout=layout,
                                                        backend="numpy", **kwargs)
                torch_ref = (grad.conv1d_weight, grad.conv2d_weight, grad.conv3d_weight)[spatial - 1](
                    x, w_shape, dy, **kwargs)
            return (self.from_layout(result.double().cpu(), layout),
                    self.from_layout(torch.from_numpy(numpy_ref), layout), torch_ref)

        self.record(family, f"{backend} {dtype} {layout} x{x_shape} w{w_shape} s{stride} p{padding} d{dilation} "
                    f"g{groups}", run, TOLERANCE[dtype])

    def activation(self, direction: str, mode: str, dtype: str, shape: tuple[int, ...], view: str | None,
                   optional: bool = False) -> None:
        coef = COEF.get(mode)
        x, dy = self.randn(shape, dtype), self.randn(shape, dtype)

        def run() -> tuple[Any, Any, Any]:
            xd = self.device(x, dtype, None, view)
            y = self.d.activation(xd, mode, coef=coef, backend="cudnn-legacy", poison=True)
            if direction == "forward":
                numpy_ref = self.d.activation(x.numpy(), mode, coef=coef, backend="numpy")
                return y.double().cpu(), numpy_ref, self.activate(x, mode, coef)
            dx = self.d.activation_backward(y, self.device(dy, dtype, None), xd, mode, coef=coef,
                                            backend="cudnn-legacy", poison=True)
            numpy_ref = self.d.activation_backward(y.double().cpu().numpy(), dy.numpy(), x.numpy(), mode, coef=coef,
                                                   backend="numpy")
            leaf = x.clone().requires_grad_(True)
            self.activate(leaf, mode, coef).backward(dy)
            return dx.double().cpu(), numpy_ref, leaf.grad

        self.record(f"activation-{direction}", f"{mode} {dtype} {shape}" + (f" {view}" if view else ""), run,
                    TOLERANCE[dtype], optional)


# The problems gpu_remembered runs again in a new process, with the heuristic queries made to fail.
REMEMBERED = [("float16", "NHWC", (4, 16, 14, 14), (32, 16, 3, 3)), ("float32", "NCHW", (2, 8, 9, 9), (8, 8, 1, 1))]


def gpu_checks() -> None:
    """Every GPU case; prints {"cases": [...]} as the last line (tests/gpu.run_child)."""
    c = _Checker()
    backends = ("cudnn-graph", "cudnn-legacy")
    for backend in backends:
        for dtype, layout, x_shape, w_shape in REMEMBERED:
            c.conv("forward", backend, dtype, layout, x_shape, w_shape, padding=1 if w_shape[2] == 3 else 0)
        for dtype in ("float32", "float16", "bfloat16"):
            c.conv("forward", backend, dtype, "NCHW", (3, 5, 13, 11), (7, 5, 3, 3), padding=1)  # odd sizes
            c.conv("forward", backend, dtype, "NHWC", (2, 8, 17, 15), (12, 2, 3, 3), stride=2, padding=2,
                   dilation=2, groups=4)
            c.conv("forward", backend, dtype, "NHWC", (2, 16, 10, 12), (32, 16, 1, 1), stride=2)
            c.conv("forward", backend, dtype, "NCHW", (2, 4, 7, 9, 6), (6, 4, 3, 3, 3), padding=1)  # 3-D
            c.conv("forward", backend, dtype, "NHWC", (2, 6, 31), (8, 3, 5), padding=2, groups=2)  # 1-D
            # A batch slice must run; rows padded apart may be refused with a reason (cuDNN 9.19 lists no
            # legacy algorithm for them, measured).
            c.conv("forward", backend, dtype, "NHWC", (3, 8, 9, 9), (8, 8, 3, 3), padding=1, view="batch-slice")
            c.conv("forward", backend, dtype, "NHWC", (3, 8, 9, 9), (8, 8, 3, 3), padding=1, view="padded-rows",
                   optional=True)
        c.conv("forward", backend, "float32", "NCHW", (4, 16, 20, 20), (32, 16, 3, 3), padding=1, tf32=True)
        for activation in MODES:
            for dtype, layout in (("float16", "NHWC"), ("float32", "NCHW"), ("bfloat16", "NHWC")):
                # cuDNN 9.19 has no engine fusing some float32 epilogues (swish, measured): cudnn-graph runs
                # those as the convolution and then the epilogue.
                c.conv("forward-fused", backend, dtype, layout, (2, 16, 12, 12), (32, 16, 3, 3), padding=1,
                       bias=True, activation=activation)
        c.conv("forward-fused", backend, "float16", "NHWC", (2, 16, 12, 12), (32, 16, 3, 3), padding=1, bias=True)
        c.conv("forward-fused", backend, "float16", "NHWC", (2, 16, 12, 12), (32, 16, 3, 3), padding=1,
               activation="relu")
        for family in ("backward-data", "backward-filter"):
            for dtype in ("float32", "float16", "bfloat16"):
                c.backward(family, backend, dtype, "NCHW", (3, 6, 11, 13), (10, 6, 3, 3), padding=1)
                c.backward(family, backend, dtype, "NHWC", (2, 8, 15, 15), (12, 2, 3, 3), stride=2, padding=1,
                           dilation=2, groups=4)
                c.backward(family, backend, dtype, "NCHW", (2, 4, 6, 7, 5), (4, 4, 3, 3, 3), padding=1)
        c.conv("autotune", backend, "float16", "NHWC", (8, 32, 28, 28), (64, 32, 3, 3), padding=1, autotune=True)
        c.conv("autotune", backend, "float32", "NCHW", (4, 16, 20, 20), (32, 16, 3, 3), padding=1, bias=True,
               activation="relu", autotune=True)
        c.conv("stream", backend, "float16", "NHWC", (4, 16, 14, 14), (32, 16, 3, 3), padding=1, bias=True,
               activation="relu", stream=c.torch.cuda.Stream(), calls=4)
        _reuse(c, backend)
    for activation in MODES:  # backend="auto": the graph backend, or cudnn-legacy where the graph refuses
        c.conv("forward-fused", "auto", "float32", "NCHW", (2, 16, 12, 12), (32, 16, 3, 3), padding=1, bias=True,
               activation=activation)
    for mode in MODES:
        for dtype in ("float32", "float16", "bfloat16"):
            for direction in ("forward", "backward"):
                c.activation(direction, mode, dtype, (3, 5, 7, 9), None)
        c.activation("forward", mode, "float32", (37,), None)
        c.activation("backward", mode, "float16", (4, 6, 10), "padded-rows", optional=mode in STRICT_BACKWARD)
    print(json.dumps({"cases": c.cases}))


def _reuse(c: _Checker, backend: str) -> None:
    """The same output and weights again with new input data (the same pointers: the graph backend's cached
    variant pack, then its CUDA graph replay from the third call), then new tensors."""
    torch = c.torch
    functional = torch.nn.functional
    y = torch.empty((4, 14, 14, 32), dtype=torch.float16, device="cuda")
    w = c.randn((32, 16, 3, 3), "float16", 0.25)
    wd = c.device(w, "float16", "NHWC")
    xd = torch.empty((4, 14, 14, 16), dtype=torch.float16, device="cuda")
    for step, calls in (("first call", 1), ("same pointers, new data, 4 calls", 4), ("new tensors", 1)):
        x = c.randn((4, 16, 14, 14), "float16")

        def run(x: Any = x, step: str = step, calls: int = calls) -> tuple[Any, Any, Any]:
            nonlocal xd, y
            if step == "new tensors":
                xd, y = torch.empty_like(xd), torch.empty_like(y)
            xd.copy_(c.to_layout(x, "NHWC"))
            for _ in range(calls):  # each call poisons y first: the last one must write all of it
                c.d.conv(xd, wd, layout="NHWC", padding=1, backend=backend, out=y, poison=True)
            numpy_ref = c.d.conv(c.to_layout(x, "NHWC").contiguous().numpy(), c.to_layout(w, "NHWC").contiguous()
                                 .numpy(), layout="NHWC", padding=1, backend="numpy")
            return (c.from_layout(y.double().cpu(), "NHWC"), c.from_layout(torch.from_numpy(numpy_ref), "NHWC"),
                    functional.conv2d(x, w, padding=1))

        c.record("reuse", f"{backend} {step}", run, TOLERANCE["float16"])


def gpu_remembered() -> None:
    """REMEMBERED's problems in a new process whose heuristic queries raise: only remembered choices run them."""
    import cudnnload_cudnn_graph.backend as graph_backend
    import cudnnload_cudnn_legacy.backend as legacy_backend

    def asked(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the heuristics were asked although a choice was remembered")

    graph_backend.heuristic_configs = asked  # type: ignore[assignment]
    legacy_backend.LegacyBackend._heuristic = asked  # type: ignore[method-assign]
    c = _Checker()
    backends = ("cudnn-graph", "cudnn-legacy")
    for backend in backends:
        for dtype, layout, x_shape, w_shape in REMEMBERED:
            c.conv("forward", backend, dtype, layout, x_shape, w_shape, padding=1 if w_shape[2] == 3 else 0)
    print(json.dumps({"problems": [f"{case['name']}: {case['problem']}" for case in c.cases if case["problem"]],
                      "backends": sorted({case["name"].split()[0] for case in c.cases})}))
