"""An independent check of the dispatch against PyTorch on the GPU: the problems users bring, through the
public calls, each backend forced and ``backend="auto"``.

Depthwise, dilation, strides, 1-D and 3-D, NHWC order and PyTorch's channels_last memory (NCHW shape,
NHWC strides), bias with every activation fused, conv + bias + swish in float32 on cudnn-graph (no engine
fuses it in NCHW order: it runs as its parts), backward data and filter, activations forward and backward, calls on a
side stream; and ``fused=True`` where a backend would run steps (refused, with the reason). Every result
is compared with PyTorch in float64 on the CPU (relative L2 error), on fresh random data, into outputs
PyTorch made and cudnnload filled with NaN first. One child process (tests/gpu.py says why).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests import gpu

TOLERANCE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}
COEF = {"clipped_relu": 0.8, "elu": 0.7, "swish": 1.3}
ACTIVATIONS = ("sigmoid", "relu", "tanh", "clipped_relu", "elu", "identity", "swish")
BACKENDS = ("auto", "cudnn-graph", "cudnn-legacy")
CHILD_S = 200.0


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gpu.require_gpus(1)
    pytest.importorskip("torch")
    env = dict(os.environ, CUDNNLOAD_CACHE=str(tmp_path_factory.getbasetemp() / "dispatch-gpu-cache"))
    return gpu.call_in_child("tests.test_dispatch_gpu:check", environ=env, timeout=CHILD_S)  # type: ignore[no-any-return]


@pytest.mark.gpu
@pytest.mark.timeout_s(CHILD_S + 20)
def test_every_case_matches_pytorch_or_is_refused_as_expected(checked: dict[str, Any]) -> None:
    cases = checked["cases"]

    assert len(cases) >= 70
    assert [f"{c['name']}: {c['problem']}" for c in cases if c["problem"]] == []


@pytest.mark.gpu
@pytest.mark.timeout_s(CHILD_S + 20)
def test_an_unfusable_request_runs_as_its_parts_and_says_so_once(checked: dict[str, Any]) -> None:
    parts = checked["parts"]

    assert len(parts) == len(set(parts)), parts  # once per problem, though auto and cudnn-graph both ran it
    assert any("float32 x(2, 16, 12, 12) w(32, 16, 3, 3) with swish" in message for message in parts), parts


def check() -> None:
    """Every case; prints {"cases": [...], "parts": [what cudnn-graph logged running a problem as parts]}."""
    import logging

    import cudnnload_cudnn_graph
    import cudnnload_cudnn_legacy
    import cudnnload_numpy
    import torch
    import torch.nn.functional as F

    from cudnnload.dispatch.backends import Registry
    from cudnnload.dispatch.dispatcher import Dispatcher
    from cudnnload.dispatch.errors import UnsupportedError

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    graph_log = logging.getLogger("cudnnload_cudnn_graph.backend")
    graph_log.setLevel(logging.INFO)
    graph_log.addHandler(Keep())
    registry = Registry()
    for plugin in (cudnnload_numpy, cudnnload_cudnn_legacy, cudnnload_cudnn_graph):
        plugin.register(registry)
    d = Dispatcher(registry)
    generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    cases: list[dict[str, Any]] = []

    def randn(shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> Any:
        return (torch.randn(shape, dtype=torch.float64, generator=generator) * scale).to(getattr(torch, dtype)).double()

    def error(out: Any, reference: Any) -> float:
        out, reference = out.double().cpu(), reference.detach().double()
        if out.shape != reference.shape or not bool(torch.isfinite(out).all()):
            return float("inf")
        return float((out - reference).norm() / max(float(reference.norm()), 1e-300))

    def record(name: str, dtype: str, run: Any, refused: str | None = None) -> None:
        case: dict[str, Any] = {"name": name, "problem": None}
        try:
            found = run()
            case["error"] = found
            if refused is not None:
                case["problem"] = f"ran (error {found:.3g}); expected a refusal naming {refused!r}"
            elif not found <= TOLERANCE[dtype]:
                case["problem"] = f"relative L2 error {found:.3g} > {TOLERANCE[dtype]}"
        except UnsupportedError as exc:
            if refused is None or refused not in exc.message:
                case["problem"] = f"refused: {exc.message}"
        except Exception as exc:  # any failure is a finding, reported with the case's name
            case["problem"] = f"{type(exc).__name__}: {exc}"
        cases.append(case)
        print(json.dumps(case), flush=True)  # as it goes: a child stopped early still shows how far it got

    def activate(t: Any, mode: str | None) -> Any:
        coef = COEF.get(mode or "")
        if mode in (None, "identity"):
            return t
        return {"relu": lambda: torch.relu(t), "clipped_relu": lambda: t.clamp(0, coef),
                "elu": lambda: F.elu(t, alpha=coef), "sigmoid": lambda: torch.sigmoid(t),
                "tanh": lambda: torch.tanh(t), "swish": lambda: t * torch.sigmoid(coef * t)}[mode]()

    def conv(backend: str, dtype: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...], *, memory: str = "NCHW",
             bias: bool = False, activation: str | None = None, stream: bool = False, fused: bool = False,
             refused: str | None = None, **kwargs: Any) -> None:
        """``memory``: "NCHW"; "NHWC" (cudnnload's NHWC layout: tensors in (N, *spatial, C) order); or
        "channels_last" (PyTorch's: NCHW shape, NHWC strides, passed with layout="NCHW")."""
        spatial = len(x_shape) - 2
        functional = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
        x = randn(x_shape, dtype)
        w = randn(w_shape, dtype, (w_shape[1] * int(torch.tensor(w_shape[2:]).prod())) ** -0.5)
        b = randn((w_shape[0],), dtype) if bias else None

        def run() -> float:
            cuda_dtype = getattr(torch, dtype)

            def put(t: Any) -> Any:
                moved = t.to("cuda", cuda_dtype)
                if memory == "NHWC":
                    return moved.permute(0, *range(2, t.dim()), 1).contiguous()
                if memory == "channels_last":
                    return moved.to(memory_format=torch.channels_last if t.dim() == 4 else
                                    torch.channels_last_3d)
                return moved.contiguous()

            xd, wd, bd = put(x), put(w), None if b is None else b.to("cuda", cuda_dtype)
            side = torch.cuda.Stream() if stream else None
            if side is not None:  # the inputs were made on PyTorch's current stream
                side.wait_stream(torch.cuda.current_stream())
            out = None
            for _ in range(3 if stream else 1):
                out = d.conv(xd, wd, bd, activation=activation, coef=COEF.get(activation or ""), fused=fused,
                             backend=backend, poison=True, layout="NHWC" if memory == "NHWC" else "NCHW",
                             stream=side, **kwargs)
            if side is not None:
                side.synchronize()
            assert out is not None
            if memory == "NHWC":
                out = out.permute(0, out.dim() - 1, *range(1, out.dim() - 1))
            return error(out, activate(functional(x, w, b, **kwargs), activation))

        label = (f"{backend} conv {dtype} {memory} x{x_shape} w{w_shape} {kwargs}" + (" bias" if bias else "")
                 + (f" {activation}" if activation else "") + (" side stream" if stream else "")
                 + (" fused=True" if fused else ""))
        record(label, dtype, run, refused)

    def backward(backend: str, which: str, dtype: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 memory: str, **kwargs: Any) -> None:
        spatial = len(x_shape) - 2
        x, w = randn(x_shape, dtype), randn(w_shape, dtype, 0.3)
        dy = randn(tuple((F.conv1d, F.conv2d, F.conv3d)[spatial - 1](x, w, **kwargs).shape), dtype)
        order = (0, *range(2, len(x_shape)), 1)

        def put(t: Any) -> Any:
            moved = t.to("cuda", getattr(torch, dtype))
            return (moved.permute(*order) if memory == "NHWC" else moved).contiguous()

        def shape(s: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(s[axis] for axis in order) if memory == "NHWC" else s

        def run() -> float:
            if which == "data":
                out = d.conv_backward_data(put(dy), put(w), shape(x_shape), layout=memory, backend=backend,
                                           poison=True, **kwargs)
                grad = (torch.nn.grad.conv1d_input, torch.nn.grad.conv2d_input, torch.nn.grad.conv3d_input)
                reference = grad[spatial - 1](x_shape, w, dy, **kwargs)
            else:
                out = d.conv_backward_filter(put(x), put(dy), shape(w_shape), layout=memory, backend=backend,
                                             poison=True, **kwargs)
                grad = (torch.nn.grad.conv1d_weight, torch.nn.grad.conv2d_weight, torch.nn.grad.conv3d_weight)
                reference = grad[spatial - 1](x, w_shape, dy, **kwargs)
            if memory == "NHWC":
                out = out.permute(0, out.dim() - 1, *range(1, out.dim() - 1))
            return error(out, reference)

        record(f"{backend} backward {which} {dtype} {memory} x{x_shape} w{w_shape} {kwargs}", dtype, run)

    def activation(backend: str, mode: str, dtype: str, direction: str) -> None:
        x, dy = randn((3, 6, 10, 7), dtype), randn((3, 6, 10, 7), dtype)
        coef = COEF.get(mode)

        def run() -> float:
            cuda_dtype = getattr(torch, dtype)
            xd = x.to("cuda", cuda_dtype)
            y = d.activation(xd, mode, coef=coef, backend=backend, poison=True)
            if direction == "forward":
                return error(y, activate(x, mode))
            dx = d.activation_backward(y, dy.to("cuda", cuda_dtype), xd, mode, coef=coef, backend=backend,
                                       poison=True)
            leaf = x.clone().requires_grad_(True)
            activate(leaf, mode).backward(dy)
            return error(dx, leaf.grad)

        record(f"{backend} activation {direction} {mode} {dtype}", dtype, run)

    for backend in BACKENDS:
        conv(backend, "float16", (2, 16, 12, 12), (16, 1, 3, 3), memory="NHWC", padding=1, groups=16)  # depthwise
        conv(backend, "float32", (2, 8, 17, 15), (12, 4, 3, 3), padding=2, dilation=2, stride=2, groups=2)
        conv(backend, "bfloat16", (2, 8, 20, 20), (16, 8, 3, 3), memory="NHWC", stride=3)
        conv(backend, "float32", (2, 8, 31), (16, 8, 5), padding=2)  # 1-D
        conv(backend, "float16", (2, 4, 6, 7, 8), (8, 4, 3, 3, 3), memory="NHWC", padding=1)  # 3-D
        conv(backend, "float16", (2, 16, 14, 14), (32, 16, 3, 3), memory="channels_last", padding=1, bias=True,
             activation="relu")
        conv(backend, "float16", (2, 8, 5, 6, 7), (8, 8, 1, 1, 1), memory="channels_last")  # 3-D channels_last
        for mode in ACTIVATIONS:
            conv(backend, "float16", (2, 16, 12, 12), (32, 16, 3, 3), memory="NHWC", padding=1, bias=True,
                 activation=mode)
        conv(backend, "float32", (2, 16, 12, 12), (32, 16, 3, 3), padding=1, bias=True, activation="swish")
        conv(backend, "float16", (4, 16, 14, 14), (32, 16, 3, 3), memory="NHWC", padding=1, bias=True,
             activation="relu", stream=True)
        backward(backend, "data", "float16", (2, 8, 15, 15), (12, 2, 3, 3), "NHWC", stride=2, padding=1, groups=4)
        backward(backend, "filter", "float16", (2, 8, 15, 15), (12, 2, 3, 3), "NHWC", stride=2, padding=1,
                 groups=4)
        backward(backend, "data", "float32", (2, 4, 6, 7, 5), (4, 4, 3, 3, 3), "NCHW", padding=1)
        backward(backend, "filter", "bfloat16", (2, 6, 11, 13), (10, 6, 3, 3), "NCHW", padding=1, dilation=2)
        for mode in ("relu", "swish"):
            for direction in ("forward", "backward"):
                activation(backend, mode, "float16", direction)
    # fused=True: cudnn-legacy fuses bias + ReLU only; cudnn-graph has no engine for conv + bias + swish in
    # NCHW order (cuDNN 9.19; it runs it as parts when asked without fused=True, above), one in NHWC.
    conv("cudnn-legacy", "float16", (2, 16, 12, 12), (32, 16, 3, 3), padding=1, bias=True, activation="swish",
         fused=True, refused="fused=True")
    conv("cudnn-legacy", "float16", (2, 16, 12, 12), (32, 16, 3, 3), padding=1, bias=True, activation="relu",
         fused=True)
    conv("cudnn-graph", "float32", (2, 16, 12, 12), (32, 16, 3, 3), padding=1, bias=True, activation="swish",
         fused=True, refused="fused=True")
    conv("cudnn-graph", "float16", (2, 16, 12, 12), (32, 16, 3, 3), memory="NHWC", padding=1, bias=True,
         activation="swish", fused=True)
    print(json.dumps({"cases": cases, "parts": [message for message in records if "runs as its parts" in message]}))
