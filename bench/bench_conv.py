"""Convolution kernel time and host time per call: PyTorch beside cudnnload's cuDNN backends (GPU machine).

The ResNet-50 convolutions (torchvision's v1.5 bottleneck: stride on the 3x3) at batch 32, in
float16 and bfloat16 NHWC and float32 NCHW, each method on the SAME tensors, in one process:

- torch default: ``F.conv2d`` with ``torch.backends.cudnn.benchmark = False``
- torch benchmark: the same with ``benchmark = True`` (cuDNN's exhaustive search, first call)
- graph: ``cudnnload.dispatch.dispatcher.conv(..., backend="cudnn-graph")`` (heuristics mode A)
- graph autotune: the same with ``autotune=True``
- graph INSTANT: a cudnn-graph backend asking heuristics mode INSTANT (then FALLBACK), as PyTorch does
- legacy: ``backend="cudnn-legacy"`` (cudnnGetConvolutionForwardAlgorithm_v7)
- frontend: NVIDIA's cuDNN frontend (``import cudnn``; heuristics A, then FALLBACK) where installed

float32 runs with TF32 allowed everywhere, as PyTorch's default (torch.backends.cudnn.allow_tf32).
In float16, conv + bias + ReLU too: PyTorch's ``F.relu(F.conv2d(x, w, b))`` against one fused cudnn-graph plan.

Kernel time: CUDA events around each call, queued behind a ``torch.cuda._sleep`` so that the
host's launch cost never shows in them; median of ``--reps`` after ``--warmup`` calls,
alternating between two input sets (x and output). Host time: wall time of ``--calls`` back-to-back
calls (the GPU only queues them), per call, the fastest of `HOST_ROUNDS` rounds. Prints a table and
writes Markdown to ``--out``.

Outputs: PyTorch makes a new output each call, which its caching allocator places in the block the
previous call freed; ``--outputs 1`` (default) gives cudnnload one output buffer too, ``--outputs 2``
alternates two, as the 2026-11-22 results did; there the memory-bound shapes whose working set fits
the L2 cache only with one output ran up to 1.24x slower on every cuDNN path (bench/results/
2026-11-22-h200-conv.md gives the evidence; the one-buffer rerun is still to be made).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "plugins")]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# (name, C, K, input size, kernel, stride, padding)
SHAPES = [
    ("stem 7x7/2 3>64 @224", 3, 64, 224, 7, 2, 3),
    ("1x1 64>64 @56", 64, 64, 56, 1, 1, 0),
    ("3x3 64>64 @56", 64, 64, 56, 3, 1, 1),
    ("1x1 64>256 @56", 64, 256, 56, 1, 1, 0),
    ("1x1 256>64 @56", 256, 64, 56, 1, 1, 0),
    ("1x1 256>128 @56", 256, 128, 56, 1, 1, 0),
    ("3x3/2 128>128 @56", 128, 128, 56, 3, 2, 1),
    ("1x1/2 256>512 @56 (down)", 256, 512, 56, 1, 2, 0),
    ("1x1 128>512 @28", 128, 512, 28, 1, 1, 0),
    ("3x3 128>128 @28", 128, 128, 28, 3, 1, 1),
    ("3x3/2 256>256 @28", 256, 256, 28, 3, 2, 1),
    ("1x1 1024>256 @14", 1024, 256, 14, 1, 1, 0),
    ("3x3 256>256 @14", 256, 256, 14, 3, 1, 1),
    ("3x3/2 512>512 @14", 512, 512, 14, 3, 2, 1),
    ("1x1 512>2048 @7", 512, 2048, 7, 1, 1, 0),
    ("3x3 512>512 @7", 512, 512, 7, 3, 1, 1),
]
DTYPES = {"fp16": (torch.float16, "NHWC"), "bf16": (torch.bfloat16, "NHWC"), "fp32": (torch.float32, "NCHW")}
SLEEP_CYCLES = 2_000_000  # ~1 ms at H100/H200 clocks: longer than any host cost measured here

Call = Callable[[int], Any]  # call(i) runs on input set i % 2


def kernel_ms(call: Call, reps: int, warmup: int) -> float:
    for i in range(warmup):
        call(i)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for i, (start, stop) in enumerate(events):
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        call(i)
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(stop) for start, stop in events)


HOST_ROUNDS = 7


def host_us(call: Call, calls: int) -> float:
    """Host µs per call: ``calls`` back-to-back calls, in HOST_ROUNDS rounds each begun on an idle GPU; the
    fastest round (as timeit takes it), since the host's own scheduling only ever adds: on the H100 machine
    single rounds of the same call differed up to fivefold (2026-11-24), which a median over shapes inherits."""
    rounds = []
    for _ in range(HOST_ROUNDS):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(calls):
            call(i)
        rounds.append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return min(rounds)


def frontend_call(x: list[Any], w: Any, y: list[Any], stride: int, padding: int, dtype: Any) -> tuple[Call | None, str]:
    """NVIDIA's cuDNN frontend on the same tensors, or None and why not."""
    try:
        import cudnn  # nvidia-cudnn-frontend
    except ImportError:
        return None, "absent (nvidia-cudnn-frontend is not installed)"
    try:
        data_type = {torch.float16: cudnn.data_type.HALF, torch.bfloat16: cudnn.data_type.BFLOAT16,
                     torch.float32: cudnn.data_type.FLOAT}[dtype]
        handle = cudnn.create_handle()
        graph = cudnn.pygraph(io_data_type=data_type, intermediate_data_type=cudnn.data_type.FLOAT,
                              compute_data_type=cudnn.data_type.FLOAT, handle=handle)
        gx = graph.tensor_like(x[0])
        gw = graph.tensor_like(w)
        gy = graph.conv_fprop(image=gx, weight=gw, padding=[padding] * 2, stride=[stride] * 2, dilation=[1, 1])
        gy.set_output(True).set_data_type(data_type)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans()
        workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
        packs = [{gx: x[i], gw: w, gy: y[i]} for i in range(2)]

        def call(i: int) -> None:
            graph.execute(packs[i % 2], workspace, handle=handle)

        call(0)
        return call, f"cudnn frontend {getattr(cudnn, '__version__', '?')}"
    except Exception as exc:  # the frontend's own errors; the table says the method failed
        return None, f"failed: {type(exc).__name__}: {exc}"


def bench(args: argparse.Namespace) -> str:
    import cudnnload_cudnn_graph
    import cudnnload_cudnn_legacy
    from cudnnload_cudnn_graph.backend_api import HeuristicMode

    from cudnnload.dispatch.backends import Registry
    from cudnnload.dispatch.dispatcher import Dispatcher
    from cudnnload.loading.loader import load

    loaded = load()
    registry = Registry()
    for plugin in (cudnnload_cudnn_graph, cudnnload_cudnn_legacy):
        plugin.register(registry)
    d = Dispatcher(registry)
    graph_backend, _ = registry.get("cudnn-graph")
    direct = cudnnload_cudnn_graph.GraphBackend(record_after=None)  # cudnnBackendExecute on every call
    instant = cudnnload_cudnn_graph.GraphBackend(heuristics=(HeuristicMode.INSTANT, HeuristicMode.FALLBACK))
    assert direct.availability() is None and instant.availability() is None
    lines = [f"# Convolution benchmark, {datetime.date.today()}", "",
             f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}), "
             f"cudnnload's cuDNN {loaded.release} from {loaded.folder}; batch {args.batch}; kernel time: median of "
             f"{args.reps} (CUDA events, GPU kept busy), host time: {args.calls} back-to-back calls; "
             f"{args.outputs} output buffer(s) for cudnnload", ""]
    methods = ["torch default", "torch benchmark", "graph", "graph autotune", "graph INSTANT", "legacy", "frontend"]
    summary: list[str] = []
    fused: list[tuple[float, str]] = []
    host_rows: list[str] = []
    frontend_note = ""
    for dtype_name in args.dtypes.split(","):
        dtype, layout = DTYPES[dtype_name]
        lines += [f"## {dtype_name} {layout}", "", "| shape | " + " | ".join(methods) + " |",
                  "|---|" + "---|" * len(methods)]
        ratios: dict[str, list[tuple[float, str]]] = {m: [] for m in methods[1:]}
        hosts: dict[str, list[float]] = {}
        for name, c, k, size, kernel, stride, padding in SHAPES[:args.shapes]:
            times, frontend_note = bench_shape(args, d, graph_backend, direct, instant, dtype, layout, c, k, size,
                                               kernel, stride, padding, hosts)
            base = times["torch default"]
            cells = [f"{base:.4f} ms"]
            for method in methods[1:]:
                if method in times:
                    ratios[method].append((times[method] / base, name))
                    cells.append(f"{times[method]:.4f} ({times[method] / base:.2f}x)")
                else:
                    cells.append("-")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
            if "graph fused conv+bias+relu" in times:
                fused.append((times["graph fused conv+bias+relu"] / times["torch conv+bias+relu"], name))
            host_now = {what: values[-1] for what, values in hosts.items()}
            print(f"{dtype_name} {name}: " + ", ".join(f"{m} {t:.4f}" for m, t in times.items()) +
                  "; host µs: " + ", ".join(f"{what} {us:.1f}" for what, us in host_now.items()), flush=True)
        lines.append("")
        for method, found in ratios.items():
            if found:
                geomean = math.exp(sum(math.log(r) for r, _ in found) / len(found))
                worst = max(found)
                summary.append(f"| {dtype_name} | {method} | {geomean:.3f}x | {worst[0]:.2f}x ({worst[1]}) |")
        for what, values in hosts.items():
            host_rows.append(f"| {dtype_name} | {what} | {statistics.median(values):.1f} | {min(values):.1f} |")
    if fused:
        geomean = math.exp(sum(math.log(r) for r, _ in fused) / len(fused))
        summary.append(f"| fp16 | graph fused conv+bias+relu / torch conv+bias+relu | {geomean:.3f}x | "
                       f"{max(fused)[0]:.2f}x ({max(fused)[1]}) |")
    lines += ["## Kernel time against PyTorch default (geometric mean over shapes, worst shape)", "",
              "| dtype | method | geomean | worst |", "|---|---|---|---|", *summary, "",
              "## Host time per call (µs; median and minimum over shapes)", "",
              "| dtype | what | median | min |", "|---|---|---|---|", *host_rows, "",
              f"cuDNN frontend: {frontend_note}", ""]
    return "\n".join(lines)


def bench_shape(args: argparse.Namespace, d: Any, graph_backend: Any, direct: Any, instant: Any, dtype: Any,
                layout: str, c: int, k: int, size: int, kernel: int, stride: int, padding: int,
                hosts: dict[str, list[float]]) -> tuple[dict[str, float], str]:
    """Kernel time of every method on one shape (same tensors for all); host times appended to ``hosts``."""
    memory = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    x = [torch.randn(args.batch, c, size, size, device="cuda", dtype=dtype).to(memory_format=memory)
         for _ in range(2)]
    w = (torch.randn(k, c, kernel, kernel, device="cuda", dtype=dtype) / math.sqrt(c * kernel * kernel)
         ).to(memory_format=memory)
    out = 1 + (size + 2 * padding - kernel) // stride
    # Outputs: --outputs buffers, taken in turn. PyTorch allocates its output on every call, and its caching
    # allocator hands back the block the previous call freed: one buffer, warm in L2 (50 MB on an H200).
    made = [torch.empty(args.batch, k, out, out, device="cuda", dtype=dtype).to(memory_format=memory)
            for _ in range(args.outputs)]
    y = [made[i % args.outputs] for i in range(2)]

    def view(t: Any) -> Any:  # cudnnload takes tensors in layout order: NHWC views of channels_last tensors
        return t.permute(0, 2, 3, 1) if layout == "NHWC" else t

    xl, wl, yl = [view(t) for t in x], view(w), [view(t) for t in y]

    def torch_call(i: int) -> Any:
        return F.conv2d(x[i % 2], w, stride=stride, padding=padding)

    def ours(backend: Any, autotune: bool = False, out: bool = True) -> Call:
        def call(i: int) -> Any:
            return d.conv(xl[i % 2], wl, stride=stride, padding=padding, layout=layout, allow_tf32=True,
                          backend=backend, autotune=autotune, out=yl[i % 2] if out else None)

        return call

    calls = {"graph": ours("cudnn-graph"), "graph autotune": ours("cudnn-graph", True),
             "graph INSTANT": ours(instant), "legacy": ours("cudnn-legacy")}
    frontend, frontend_note = frontend_call(x, w, y, stride, padding, dtype)
    times: dict[str, float] = {}
    torch.backends.cudnn.benchmark = False
    times["torch default"] = kernel_ms(torch_call, args.reps, args.warmup)
    hosts.setdefault("torch F.conv2d", []).append(host_us(torch_call, args.calls))
    torch.backends.cudnn.benchmark = True
    times["torch benchmark"] = kernel_ms(torch_call, args.reps, args.warmup)
    torch.backends.cudnn.benchmark = False
    for method, call in calls.items():
        try:
            times[method] = kernel_ms(call, args.reps, args.warmup)
        except Exception as exc:  # reported in the output, and the method's cell stays empty
            print(f"  {method} failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        hosts.setdefault(f"cudnnload {method}, out=", []).append(host_us(call, args.calls))
    if "graph" in times:
        hosts.setdefault("cudnnload graph, output made", []).append(host_us(ours("cudnn-graph", out=False),
                                                                           args.calls))
        hosts.setdefault("cudnnload graph, out=, no CUDA graph replay", []).append(host_us(ours(direct), args.calls))
        _backend_host(graph_backend, xl, wl, yl, stride, padding, layout, args.calls, hosts)
    if args.fused and dtype == torch.float16:  # conv + bias + ReLU: PyTorch's kernels against one fused graph
        bias = torch.randn(k, device="cuda", dtype=dtype)
        times["torch conv+bias+relu"] = kernel_ms(
            lambda i: F.relu(F.conv2d(x[i % 2], w, bias, stride=stride, padding=padding)), args.reps, args.warmup)
        times["graph fused conv+bias+relu"] = kernel_ms(
            lambda i: d.conv(xl[i % 2], wl, bias, stride=stride, padding=padding, layout=layout, activation="relu",
                             backend="cudnn-graph", out=yl[i % 2]), args.reps, args.warmup)
    if frontend is not None:
        times["frontend"] = kernel_ms(frontend, args.reps, args.warmup)
        hosts.setdefault("cuDNN frontend execute", []).append(host_us(frontend, args.calls))
    return times, frontend_note


def _backend_host(backend: Any, xl: list[Any], wl: Any, yl: list[Any], stride: int, padding: int, layout: str,
                  calls: int, hosts: dict[str, list[float]]) -> None:
    """Host time of the graph backend's conv_forward alone (TensorRefs and spec made beforehand), and of
    the bare cudnnBackendExecute it ends in (cuDNN's own host cost)."""
    from cudnnload.dispatch.backends import ConvSpec
    from cudnnload.dispatch.runtime import runtime
    from cudnnload.dispatch.tensors import TensorRef

    spec = ConvSpec((stride, stride), (padding, padding), (1, 1), 1, layout, True)
    refs = [(TensorRef.from_array(xl[i]), TensorRef.from_array(wl), TensorRef.from_array(yl[i])) for i in range(2)]
    hosts.setdefault("graph backend alone (TensorRefs ready)", []).append(
        host_us(lambda i: backend.conv_forward(refs[i % 2][0], refs[i % 2][1], None, refs[i % 2][2], spec), calls))
    x, w, y = refs[0]
    state = runtime().state()
    run = state.bound.get(backend, {}).get((x.ptr, w.ptr, y.ptr, 0, False, x.shape, x.strides, w.shape, w.strides,
                                            y.strides, x.dtype, None))
    if run is not None:
        execute, launch, handle = backend._execute, backend._launch, state.handle
        hosts.setdefault("cudnnBackendExecute alone", []).append(
            host_us(lambda i: execute(handle, run.plan, run.pack), calls))
        if run.graph:
            hosts.setdefault("cuGraphLaunch alone", []).append(host_us(lambda i: launch(run.graph, 0), calls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--dtypes", default="fp16,bf16,fp32")
    parser.add_argument("--shapes", type=int, default=len(SHAPES), help="only the first N shapes")
    parser.add_argument("--out", default=None, help="Markdown file to write (default: print only)")
    parser.add_argument("--outputs", type=int, choices=(1, 2), default=1,
                        help="output buffers cudnnload writes to in turn (results of 2026-11-22: 2)")
    parser.add_argument("--no-fused", dest="fused", action="store_false",
                        help="skip the float16 conv + bias + ReLU comparison")
    args = parser.parse_args()
    report = bench(args)
    print(report)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
