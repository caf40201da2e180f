"""Each backend's capability table (cudnnload.dispatch.capabilities): declared without a GPU, listed by
`cudnnload backends --json`, the README's table generated from it, and every cell held to account.

CPU: every backend declares every cell; ``supports()`` refuses each "no" cell with the table's reason
before cuDNN is asked (the cuDNN backends have no GPU here, so anything else would fail differently);
the numpy backend runs every "yes" cell against float64 references; README's table is the code's.

GPU (``-m gpu``): a child process per backend runs one case for every (operation, dtype, layout) its
table claims, the spatial axes taken in turn (1-D, 2-D, 3-D), on fresh random data into NaN-poisoned
outputs, against PyTorch (float64, on the CPU); ``supports()`` must say yes to each, and every "no" cell
must be refused by the dispatcher with the table's reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cudnnload.dispatch.backends import ActivationSpec, ConvSpec, Registry
from cudnnload.dispatch.capabilities import ACTIVATIONS, LAYOUTS, OPERATIONS, SPATIAL, Cell, table
from cudnnload.dispatch.tensors import DTYPES, TensorRef, _make, contiguous_strides
from cudnnload.report import capabilities_markdown, dumps
from tests import gpu

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))  # a checkout runs these without reinstalling the plugin packages

import cudnnload_cudnn_graph  # noqa: E402
import cudnnload_cudnn_legacy  # noqa: E402
import cudnnload_numpy  # noqa: E402

PLUGINS = (cudnnload_numpy, cudnnload_cudnn_legacy, cudnnload_cudnn_graph)
README = REPO / "README.md"
BEGIN, END = "<!-- capability table: generated", "<!-- end of the capability table -->"


def statuses() -> tuple[Any, ...]:
    registry = Registry()
    for plugin in PLUGINS:
        plugin.register(registry)
    return registry.statuses()


def backend(name: str) -> Any:
    return {"numpy": cudnnload_numpy.NumpyBackend, "cudnn-legacy": cudnnload_cudnn_legacy.LegacyBackend,
            "cudnn-graph": cudnnload_cudnn_graph.GraphBackend}[name]()


# --- one representative call per cell ----------------------------------------------------------------

SIZES = {1: (13,), 2: (9, 11), 3: (5, 6, 7)}
COEF = {"clipped_relu": 0.8, "elu": 0.7, "swish": 1.3}


def in_layout(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    return shape if layout == "NCHW" else (shape[0], *shape[2:], shape[1])


def problem(cell: Cell) -> dict[str, Any]:
    """The call a cell stands for, as shapes in (N, C, *spatial) order: a grouped 3-wide convolution with
    padding (stride 2 for the gradients), or an activation on a tensor of that rank."""
    operation, _, mode = cell.operation.partition(":")
    op, _, fused = operation.partition("+")
    sizes = SIZES[cell.spatial]
    activation = mode or fused or None
    return {"op": op, "activation": activation, "coef": COEF.get(activation or ""),
            "x": (2, 8, *sizes), "w": (12, 4, *(3,) * cell.spatial), "groups": 2, "padding": 1,
            "stride": 2 if op.startswith("conv_backward") else 1, "bias": bool(fused)}


def refs(cell: Cell, device: int | None) -> tuple[str, Any, tuple[TensorRef | None, ...]]:
    """The Backend method, spec and tensors (pointer 0) of a cell's call."""
    p = problem(cell)

    def t(shape: tuple[int, ...]) -> TensorRef:
        shape = in_layout(shape, cell.layout)
        return _make(0, shape, contiguous_strides(shape), cell.dtype, device, "test", None)

    x = t(p["x"])
    if p["op"].startswith("activation"):
        spec = ActivationSpec(p["activation"], p["coef"] or 0.0)
        return p["op"], spec, (x, x) if p["op"] == "activation_forward" else (x, x, x, x)
    spec = ConvSpec((p["stride"],) * cell.spatial, (1,) * cell.spatial, (1,) * cell.spatial, 2, cell.layout,
                    activation=p["activation"], coef=p["coef"] or 0.0)
    out = spec.output_size(p["x"][2:], p["w"][2:])
    y, w = t((2, 12, *out)), t(p["w"])
    if p["op"] == "conv_forward":
        bias = _make(0, (12,), (1,), cell.dtype, device, "test", None) if p["bias"] else None
        return "conv_forward", spec, (x, w, bias, y)
    return p["op"], spec, (y, w, x) if p["op"] == "conv_backward_data" else (x, y, w)


# --- the tables, without a GPU ----------------------------------------------------------------------------

def test_every_backend_declares_every_cell_of_its_table() -> None:
    found = {status.name: status.capabilities for status in statuses()}

    expected = len(OPERATIONS) * len(DTYPES) * len(LAYOUTS) * len(SPATIAL)
    assert {name: len(cells) for name, cells in found.items()} == dict.fromkeys(found, expected)
    assert set(found) == {"numpy", "cudnn-legacy", "cudnn-graph"}
    assert all(cell.answer == "yes" or cell.answer.startswith("no: ") for cells in found.values() for cell in cells)


def test_every_activation_kind_has_a_forward_and_a_backward_row_and_a_fused_one() -> None:
    for mode in ACTIVATIONS:
        assert {f"conv_forward+{mode}", f"activation_forward:{mode}", f"activation_backward:{mode}"} <= set(OPERATIONS)


@pytest.mark.parametrize("name", ["numpy", "cudnn-legacy", "cudnn-graph"])
def test_activation_rows_do_not_vary_by_layout_or_spatial_axes(name: str) -> None:
    cells = table(backend(name).capability)
    for operation in (o for o in OPERATIONS if o.startswith("activation")):
        for dtype in DTYPES:
            assert len({c.answer for c in cells if (c.operation, c.dtype) == (operation, dtype)}) == 1


@pytest.mark.parametrize("name", ["numpy", "cudnn-legacy", "cudnn-graph"])
def test_supports_refuses_every_no_cell_with_the_tables_reason(name: str) -> None:
    made = backend(name)
    device = None if name == "numpy" else 0
    refused = [cell for cell in table(made.capability) if not cell.runs]
    for cell in refused:
        op, spec, tensors = refs(cell, device)
        assert made.supports(op, spec, *tensors) == cell.reason, cell
    if name == "cudnn-graph":
        assert refused and {cell.dtype for cell in refused} == {"float64"}


def test_the_numpy_backend_supports_every_cell_on_the_host() -> None:
    made = backend("numpy")
    for cell in table(made.capability):
        assert cell.runs
        op, spec, tensors = refs(cell, None)
        assert made.supports(op, spec, *tensors) is None


def test_backends_json_lists_each_backends_cells_answered_yes_or_no() -> None:
    doc = json.loads(dumps("backends", statuses()))

    graph = next(entry for entry in doc["result"] if entry["name"] == "cudnn-graph")
    cells = {(c["operation"], c["dtype"], c["layout"], c["spatial"]): c["answer"] for c in graph["capabilities"]}
    assert cells[("conv_forward+swish", "float32", "NHWC", 3)] == "yes"
    assert cells[("activation_backward:tanh", "float64", "NCHW", 1)].startswith("no: ")


def _table_span(text: str) -> tuple[int, int]:
    """Where README's generated table lies: from the line after BEGIN's to END."""
    return text.index("\n", text.index(BEGIN)) + 1, text.index(END)


def readme_table() -> str:
    text = README.read_text()
    start, end = _table_span(text)
    return text[start:end]


def test_the_readme_capability_table_is_generated_from_the_code() -> None:
    assert readme_table() == capabilities_markdown(statuses()), (
        "README.md's capability table differs from the backends' tables: run `python -m tests.test_capabilities`")


def write_readme_table() -> None:
    """Replace README.md's capability table with the one the code declares."""
    text = README.read_text()
    start, end = _table_span(text)
    README.write_text(text[:start] + capabilities_markdown(statuses()) + text[end:])


# --- on the GPU ------------------------------------------------------------------------------------------

TOLERANCE = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}  # relative L2 error
GPU_CHILD_S = 280.0


@pytest.fixture(scope="module")
def gpu_cells(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gpu.require_gpus(1)
    pytest.importorskip("torch")
    env = dict(os.environ, CUDNNLOAD_CACHE=str(tmp_path_factory.getbasetemp() / "capabilities-cache"))
    found = {}
    for name in ("numpy", "cudnn-legacy", "cudnn-graph"):
        found[name] = gpu.call_in_child("tests.test_capabilities:run_cells", name, environ=env, timeout=GPU_CHILD_S)
    return found


@pytest.mark.gpu
@pytest.mark.timeout_s(3 * GPU_CHILD_S + 30)
@pytest.mark.parametrize("name", ["numpy", "cudnn-legacy", "cudnn-graph"])
def test_every_cell_a_backend_claims_matches_pytorch_and_every_other_is_refused(gpu_cells: dict[str, Any],
                                                                               name: str) -> None:
    cases = gpu_cells[name]["cases"]
    skipped = {(c["operation"], c["dtype"], c["layout"]) for c in cases if c.get("skipped")}
    claimed = {(c.operation, c.dtype, c.layout) for c in table(backend(name).capability) if c.runs} - skipped

    assert {(c["operation"], c["dtype"], c["layout"]) for c in cases if c["ran"]} == claimed
    assert [f"{c['cell']}: {c['problem']}" for c in cases if c["problem"]] == []


def run_cells(name: str) -> None:
    """In a child: every (operation, dtype, layout) of ``name``'s table, spatial axes in turn (a rank the
    table claims, where the turn's is ruled out); prints {"cases": [...]} (tests/gpu.run_child)."""
    import torch

    from cudnnload.dispatch.dispatcher import Dispatcher
    from cudnnload.dispatch.errors import UnsupportedError

    registry = Registry()
    for plugin in PLUGINS:
        plugin.register(registry)
    d = Dispatcher(registry)
    generator = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    cells = {(c.operation, c.dtype, c.layout, c.spatial): c for c in table(backend(name).capability)}
    columns = list(dict.fromkeys(key[:3] for key in cells))  # (operation, dtype, layout), in table order
    cases = []
    for index, column in enumerate(columns):
        rotated = cells[(*column, SPATIAL[index % len(SPATIAL)])]
        cell = next((cells[(*column, n)] for n in SPATIAL if cells[(*column, n)].runs and not rotated.runs), rotated)
        case: dict[str, Any] = {"cell": f"{cell.operation} {cell.dtype} {cell.layout} {cell.spatial}-D",
                                "operation": cell.operation, "dtype": cell.dtype, "layout": cell.layout,
                                "ran": False, "problem": None}
        if name == "numpy" and cell.dtype == "bfloat16" and importlib.util.find_spec("ml_dtypes") is None:
            case["skipped"] = "host bfloat16 needs ml_dtypes, which is not installed here"
            cases.append(case)
            print(json.dumps(case), flush=True)
            continue
        try:
            if cell.runs:
                error = _run_cell(d, name, cell, generator)
                case["ran"], case["error"] = True, error
                if not error <= TOLERANCE[cell.dtype]:
                    case["problem"] = f"relative L2 error {error:.3g} > {TOLERANCE[cell.dtype]}"
            else:
                try:
                    _run_cell(d, name, cell, generator)
                    case["problem"] = f"ran, although its table says {cell.answer}"
                except UnsupportedError as exc:
                    if cell.reason not in exc.message:
                        case["problem"] = f"refused for another reason: {exc.message}"
        except Exception as exc:  # any failure is a finding, reported with the cell
            case["problem"] = f"{type(exc).__name__}: {exc}"
        cases.append(case)
        print(json.dumps(case), flush=True)  # as it goes: a child stopped early still shows how far it got
    print(json.dumps({"cases": cases}))


def _run_cell(d: Any, name: str, cell: Cell, generator: Any) -> float:
    """Run the cell's call on backend ``name`` (host tensors for numpy, else CUDA); its relative L2 error
    against PyTorch in float64 on the CPU."""
    import torch
    import torch.nn.functional as F

    p = problem(cell)
    where = "cpu" if name == "numpy" else "cuda"
    dtype = getattr(torch, cell.dtype)
    spatial = cell.spatial

    def randn(shape: tuple[int, ...], scale: float = 1.0) -> Any:
        """float64 values already rounded to the cell's dtype, so the reference sees exactly the inputs."""
        return (torch.randn(shape, dtype=torch.float64, generator=generator) * scale).to(dtype).double()

    def put(t: Any) -> Any:  # NCHW-order float64 -> the cell's layout order, dtype and device
        moved = t if cell.layout == "NCHW" or t.dim() < 3 else t.permute(0, *range(2, t.dim()), 1)
        return moved.to(where, dtype).contiguous()

    def take(t: Any) -> Any:
        back = t if cell.layout == "NCHW" else t.permute(0, t.dim() - 1, *range(1, t.dim() - 1))
        return back.double().cpu()

    conv = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    kwargs = {"stride": p["stride"], "padding": p["padding"], "groups": p["groups"]}
    ours = {"backend": name, "poison": True, **kwargs}
    x = randn(p["x"])
    if p["op"].startswith("activation"):
        mode, coef = p["activation"], p["coef"]
        if p["op"] == "activation_forward":
            out = take(d.activation(put(x), mode, coef=coef, backend=name, poison=True))
            return _error(out, _activate(x, mode, coef))
        leaf = x.clone().requires_grad_(True)
        y = _activate(leaf, mode, coef)
        dy = randn(p["x"])
        y.backward(dy)
        out = take(d.activation_backward(put(y.detach()), put(dy), put(x), mode, coef=coef, backend=name,
                                         poison=True))
        return _error(out, leaf.grad)
    w = randn(p["w"], (p["w"][1] * 3 ** spatial) ** -0.5)
    if p["op"] == "conv_forward":
        b = randn((p["w"][0],)) if p["bias"] else None
        y = d.conv(put(x), put(w), None if b is None else b.to(where, dtype), activation=p["activation"],
                   coef=p["coef"], layout=cell.layout, **ours)
        return _error(take(y), _activate(conv(x, w, b, **kwargs), p["activation"], p["coef"]))
    reference_y = conv(x, w, **kwargs)
    dy = randn(tuple(reference_y.shape))
    if p["op"] == "conv_backward_data":
        grad = (torch.nn.grad.conv1d_input, torch.nn.grad.conv2d_input, torch.nn.grad.conv3d_input)[spatial - 1]
        out = d.conv_backward_data(put(dy), put(w), in_layout(p["x"], cell.layout), layout=cell.layout, **ours)
        return _error(take(out), grad(p["x"], w, dy, **kwargs))
    grad = (torch.nn.grad.conv1d_weight, torch.nn.grad.conv2d_weight, torch.nn.grad.conv3d_weight)[spatial - 1]
    out = d.conv_backward_filter(put(x), put(dy), in_layout(p["w"], cell.layout), layout=cell.layout, **ours)
    return _error(take(out), grad(x, p["w"], dy, **kwargs))


def _activate(t: Any, mode: str | None, coef: float | None) -> Any:
    import torch

    if mode in (None, "identity"):
        return t
    return {"relu": lambda: torch.relu(t), "clipped_relu": lambda: t.clamp(0, coef),
            "elu": lambda: torch.nn.functional.elu(t, alpha=coef), "sigmoid": lambda: torch.sigmoid(t),
            "tanh": lambda: torch.tanh(t), "swish": lambda: t * torch.sigmoid(coef * t)}[mode]()


def _error(out: Any, reference: Any) -> float:
    import torch

    reference = reference.detach().double()
    if out.shape != reference.shape or not bool(torch.isfinite(out).all()):
        return float("inf")
    return float((out - reference).norm() / max(float(reference.norm()), 1e-300))


if __name__ == "__main__":
    write_readme_table()
    print("README.md's capability table written")
