"""What a cold start to the first convolution is made of, piece by piece (issue 5). GPU only.

    python bench/bench_first_call_parts.py --folder PATH [--runs N] [--json FILE]

Each piece runs in fresh processes (median of N) and prints milliseconds since its first statement at
each mark. The pieces: the CUDA driver alone (cuInit, the primary context), numpy and the inputs,
importing cudnnload, cuDNN's sub-libraries and VersionChecks, and the first convolution through the
graph API split into heuristics, plan and first execution, for the plain convolution and the fused
conv+ReLU graph, each with the best precompiled engine and with the heuristics' first choice; then the
legacy ReLU after the convolution. Also: which engines the heuristics offer (runtime-compiled or not).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import time, json, sys, os
T0 = time.perf_counter()
MARKS = {}
def mark(name):
    MARKS[name] = (time.perf_counter() - T0) * 1000
"""

DRIVER = PRELUDE + """
import ctypes
cu = ctypes.CDLL("libcuda.so.1"); mark("dlopen libcuda")
assert cu.cuInit(0) == 0; mark("cuInit")
dev = ctypes.c_int(); assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
ctx = ctypes.c_void_p(); assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0; mark("primary context")
assert cu.cuCtxSetCurrent(ctx) == 0
ptr = ctypes.c_uint64(); assert cu.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 24) == 0; mark("first cuMemAlloc")
print(json.dumps(MARKS))
"""

INPUTS = PRELUDE + """
import numpy as np; mark("import numpy")
rng = np.random.default_rng(1)
X = (rng.random((32, 64, 56, 56), np.float32) - 0.5).astype(np.float16)
W = ((rng.random((64, 64, 3, 3), np.float32) - 0.5) * 0.1).astype(np.float16); mark("inputs")
print(json.dumps(MARKS))
"""

# A finalized plan ``plan`` of the graph ``gs`` run ``times`` times on ``refs``, each run marked with ``mark``.
_EXECUTE = """
ws = rt.workspace(state, 0, 0, plan.workspace)
pack = variant_pack(g, gs.uids, gs.pointers(refs, rt.zeros(0, gs.zero_bias) if gs.zero_bias else 0), ws)
drv = initialized_driver()
for name in ("first execution", "second execution")[:{times}]:
    assert g.execute(handle, plan.desc, pack) == 0; checked(drv, "cuCtxSynchronize"); {mark}(name)
"""


def execute(mark: str, times: int = 2) -> str:
    return _EXECUTE.format(mark=mark, times=times)

# One convolution through the graph API's pieces; argv: folder, "plain"|"relu", "precompiled"|"first".
GRAPH = PRELUDE + """
import cudnnload; mark("import cudnnload")
cudnnload.load(sys.argv[1]); mark("load (dlopen, VersionChecks)")
from cudnnload.dispatch.warmup import DeviceBuffer; from cudnnload.dispatch.tensors import as_ref
from cudnnload.dispatch.backends import ConvSpec; from cudnnload.loading.gpu import checked, initialized_driver
x = DeviceBuffer((32, 64, 56, 56), "float16"); w = DeviceBuffer((64, 64, 3, 3), "float16")
y = DeviceBuffer((32, 64, 56, 56), "float16"); mark("buffers")
from cudnnload.dispatch.runtime import runtime
from cudnnload_cudnn_graph.backend_api import GraphApi, HeuristicMode
from cudnnload_cudnn_graph.graphs import build, conv_graph
from cudnnload_cudnn_graph.plans import heuristic_configs, make_plan, variant_pack
rt = runtime(); g = GraphApi(rt.api); state = rt.state(); handle = rt.handle(state, 0, 0); mark("handle")
spec = ConvSpec((1, 1), (1, 1), (1, 1), activation=None if sys.argv[2] == "plain" else "relu")
refs = tuple(as_ref(b, 0) for b in (x, w)) + (None, as_ref(y, 0))
gs = conv_graph("conv_forward", refs, spec); graph = build(g, gs, handle); mark("operation graph")
mode = HeuristicMode.FALLBACK if "fallback" in sys.argv[4:] else HeuristicMode.A
configs = heuristic_configs(g, graph, mode); mark(f"heuristics {mode.name}")
pick = next(c for c in configs if not c.compiles) if sys.argv[3] == "precompiled" else configs[0]
plan = make_plan(g, handle, pick); mark("plan")
""" + execute("mark") + """
if sys.argv[2] == "plain":
    cudnnload.activation(y, "relu", out=y); checked(drv, "cuCtxSynchronize"); mark("legacy ReLU (dispatch)")
MARKS["engine"] = pick.engine; MARKS["compiles"] = pick.compiles
MARKS["offered"] = [[c.engine, int(c.compiles)] for c in configs]
print(json.dumps(MARKS))
"""

# The warm-up's work one step at a time, as a new process with a remembered engine choice does it; each
# mark also notes the process's CPU time so far (all threads: the driver's and cuDNN's own included).
REMEMBERED = PRELUDE + """
def cmark(name):
    mark(name); MARKS["  cpu " + name] = time.process_time() * 1000
import cudnnload; from cudnnload.loading.gpu import checked, initialized_driver
checked(initialized_driver(), "primary_context", 0); cmark("context")
cudnnload.load(sys.argv[1]); cmark("load")
from cudnnload.dispatch.warmup import DeviceBuffer; from cudnnload.dispatch.tensors import as_ref
from cudnnload.dispatch.backends import ConvSpec
from cudnnload.dispatch.runtime import runtime
from cudnnload_cudnn_graph.backend_api import GraphApi
from cudnnload_cudnn_graph.graphs import build, conv_graph
from cudnnload_cudnn_graph.plans import config_from_choice, heuristic_configs, make_plan, variant_pack
from cudnnload_cudnn_graph.backend_api import HeuristicMode
cmark("imports")
x = DeviceBuffer((32, 64, 56, 56), "float16"); w = DeviceBuffer((64, 64, 3, 3), "float16")
y = DeviceBuffer((32, 64, 56, 56), "float16"); cmark("buffers")
rt = runtime(); g = GraphApi(rt.api); state = rt.state(); handle = rt.handle(state, 0, 0); cmark("handle")
refs = tuple(as_ref(b, 0) for b in (x, w)) + (None, as_ref(y, 0))
gs = conv_graph("conv_forward", refs, ConvSpec((1, 1), (1, 1), (1, 1))); graph = build(g, gs, handle)
cmark("operation graph")
store = rt.choices(0); key = "bench-parts|" + gs.text(); choice = store.get("cudnn-graph", key)
if choice is None:
    best = heuristic_configs(g, graph, HeuristicMode.A)[0]; store.put("cudnn-graph", key, best.choice)
    choice = best.choice
config = config_from_choice(g, graph, choice); cmark("engine config (remembered)")
plan = make_plan(g, handle, config); cmark("plan")
""" + execute("cmark") + """
from cudnnload.dispatch import dispatcher; dispatcher.registry().get("cudnn-legacy"); cmark("legacy backend ready")
cudnnload.activation(y, "relu", out=y); checked(drv, "cuCtxSynchronize"); cmark("first ReLU")
cudnnload.activation(y, "relu", out=y); checked(drv, "cuCtxSynchronize"); cmark("second ReLU")
print(json.dumps(MARKS))
"""

# Each engine the heuristics offer for the plain convolution, with the knobs they offer it with: the
# first-call cost of finalizing and running one differs by engine (its lazy initialization, its kernels).
ENGINE_CHOICES = PRELUDE + """
import cudnnload
cudnnload.load(sys.argv[1])
from cudnnload.dispatch.warmup import DeviceBuffer; from cudnnload.dispatch.tensors import as_ref
from cudnnload.dispatch.backends import ConvSpec
from cudnnload.dispatch.runtime import runtime
from cudnnload_cudnn_graph.backend_api import GraphApi, HeuristicMode
from cudnnload_cudnn_graph.graphs import build, conv_graph
from cudnnload_cudnn_graph.plans import heuristic_configs
x = DeviceBuffer((32, 64, 56, 56), "float16"); w = DeviceBuffer((64, 64, 3, 3), "float16")
y = DeviceBuffer((32, 64, 56, 56), "float16")
rt = runtime(); g = GraphApi(rt.api); handle = rt.handle(rt.state(), 0, 0)
refs = tuple(as_ref(b, 0) for b in (x, w)) + (None, as_ref(y, 0))
graph = build(g, conv_graph("conv_forward", refs, ConvSpec((1, 1), (1, 1), (1, 1))), handle)
first = {}
for mode in (HeuristicMode.A, HeuristicMode.FALLBACK):
    for config in heuristic_configs(g, graph, mode):
        first.setdefault(str(config.engine), config.choice)
print(json.dumps(first))
"""
ONE_ENGINE = PRELUDE + """
import cudnnload
from cudnnload.loading.gpu import checked, initialized_driver
checked(initialized_driver(), "primary_context", 0); cudnnload.load(sys.argv[1]); mark("context + load")
from cudnnload.dispatch.warmup import DeviceBuffer; from cudnnload.dispatch.tensors import as_ref
from cudnnload.dispatch.backends import ConvSpec
from cudnnload.dispatch.runtime import runtime
from cudnnload_cudnn_graph.backend_api import GraphApi
from cudnnload_cudnn_graph.graphs import build, conv_graph
from cudnnload_cudnn_graph.plans import config_from_choice, make_plan, variant_pack
x = DeviceBuffer((32, 64, 56, 56), "float16"); w = DeviceBuffer((64, 64, 3, 3), "float16")
y = DeviceBuffer((32, 64, 56, 56), "float16")
rt = runtime(); g = GraphApi(rt.api); state = rt.state(); handle = rt.handle(state, 0, 0)
refs = tuple(as_ref(b, 0) for b in (x, w)) + (None, as_ref(y, 0))
gs = conv_graph("conv_forward", refs, ConvSpec((1, 1), (1, 1), (1, 1))); graph = build(g, gs, handle)
mark("handle + graph")
plan = make_plan(g, handle, config_from_choice(g, graph, json.loads(sys.argv[2]))); mark("engine config + plan")
""" + execute("mark", times=1) + """
ev0 = time.perf_counter()
for _ in range(20):
    g.execute(handle, plan.desc, pack)
checked(drv, "cuCtxSynchronize"); MARKS["steady ms per execution"] = (time.perf_counter() - ev0) * 50
print(json.dumps(MARKS))
"""

# The same convolution through the legacy API (the algorithm remembered by the untimed first run).
LEGACY = PRELUDE + """
import cudnnload
from cudnnload.loading.gpu import checked, initialized_driver
checked(initialized_driver(), "primary_context", 0); cudnnload.load(sys.argv[1]); mark("context + load")
from cudnnload.dispatch.warmup import DeviceBuffer
from cudnnload.dispatch import dispatcher; dispatcher.registry().get("cudnn-legacy"); mark("legacy backend ready")
x = DeviceBuffer((32, 64, 56, 56), "float16"); w = DeviceBuffer((64, 64, 3, 3), "float16")
y = DeviceBuffer((32, 64, 56, 56), "float16"); drv = initialized_driver()
cudnnload.conv(x, w, padding=1, out=y, backend="cudnn-legacy"); checked(drv, "cuCtxSynchronize")
mark("first convolution")
cudnnload.conv(x, w, padding=1, out=y, backend="cudnn-legacy"); checked(drv, "cuCtxSynchronize")
mark("second convolution")
print(json.dumps(MARKS))
"""

# The driver's context made in a thread while the main thread imports and dlopens (cudnnload.load).
OVERLAP = PRELUDE + """
import threading, ctypes
def context():
    cu = ctypes.CDLL("libcuda.so.1"); cu.cuInit(0)
    dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
    ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); mark("context (thread)")
t = threading.Thread(target=context); t.start()
import numpy as np
rng = np.random.default_rng(1)
X = (rng.random((32, 64, 56, 56), np.float32) - 0.5).astype(np.float16); mark("numpy + inputs (main)")
import cudnnload; cudnnload.load(sys.argv[1]); mark("load (main)")
t.join(); mark("both")
print(json.dumps(MARKS))
"""

# The program through cudnnload.start(), with a watcher thread marking when the context, the load
# and the warm-up end, and each thread's CPU time (a thread waiting for the GIL uses none).
TIMELINE = PRELUDE + """
import threading
import cudnnload
if "switch" in sys.argv[2:]:  # a shorter GIL switch interval (default 5 ms)
    sys.setswitchinterval(0.0005)
if {"quick", "wait"} & set(sys.argv[2:]):  # whether a call may run on a quick plan while the warm-up plans
    import cudnnload_cudnn_graph.backend as graph_backend
    made = graph_backend.GraphBackend.__init__
    def init(self, **options):
        made(self, **options, quick_start="quick" in sys.argv[2:])
    graph_backend.GraphBackend.__init__ = init
from cudnnload.loading import cudadriver
FUSED = "fused" in sys.argv[2:]  # conv(..., activation="relu"): one fused graph, no separate activation
warmup = ([cudnnload.Problem((32, 64, 56, 56), (64, 64, 3, 3), "float16", padding=1, activation="relu")] if FUSED else
          [cudnnload.Problem((32, 64, 56, 56), (64, 64, 3, 3), "float16", padding=1),
           cudnnload.Activation((32, 64, 56, 56), "float16")])
starting = cudnnload.start(sys.argv[1], warmup=warmup)
mark("start() returned")
def watch():
    context = cudadriver._prepared.get(0)
    if context is not None:
        context.join(); mark("[bg] context ready")
    starting.ready.wait(); mark("[bg] load done")
    starting.wait(); mark("[bg] warm-up done")
watcher = threading.Thread(target=watch); watcher.start()
import numpy as np; mark("numpy imported")
rng = np.random.default_rng(1)
X = (rng.random((32, 64, 56, 56), np.float32) - 0.5).astype(np.float16)
W = ((rng.random((64, 64, 3, 3), np.float32) - 0.5) * 0.1).astype(np.float16); mark("inputs made")
from cudnnload.dispatch.warmup import DeviceBuffer
x, w = DeviceBuffer(X.shape, "float16", X), DeviceBuffer(W.shape, "float16", W)
y = DeviceBuffer((32, 64, 56, 56), "float16"); mark("buffers")
cudnnload.conv(x, w, padding=1, activation="relu" if FUSED else None, out=y); mark("conv returned")
if not FUSED:
    cudnnload.activation(y, "relu", out=y); mark("activation returned")
host = y.to_host(np.empty((32, 64, 56, 56), np.float16)); mark("result on the host")
from cudnnload.dispatch import dispatcher as dispatch
graph = dispatch.registry().get("cudnn-graph")[0]
MARKS["first conv on a quick plan"] = any(run.provisional for run in graph._runs(graph._runtime.state()).values())
watcher.join()
MARKS["cpu: main thread"] = time.thread_time() * 1000
MARKS["cpu: the process"] = time.process_time() * 1000
print(json.dumps(MARKS))
"""

# cudnnload's own imports on the start path, numpy already imported (as in an application).
IMPORTS = PRELUDE + """
import numpy; mark("numpy")
import cudnnload.dispatch.starting; mark("cudnnload.dispatch.starting")
import cudnnload.loading.loader; mark("cudnnload.loading.loader")
import cudnnload.dispatch.warmup, cudnnload.dispatch.dispatcher; mark("cudnnload.dispatch.dispatcher")
registry = cudnnload.dispatch.dispatcher.registry()
for name in ("cudnn-graph", "cudnn-legacy"):
    registry._entries[name].factory()
mark("plugins")
print(json.dumps(MARKS))
"""

PIECES = {
    "start() timeline": (TIMELINE, []),
    "start() timeline, GIL switch interval 0.5 ms": (TIMELINE, ["switch"]),
    "start() timeline, OPENBLAS_NUM_THREADS=1": (TIMELINE, ["env:OPENBLAS_NUM_THREADS=1"]),
    "start() timeline, conv+ReLU fused": (TIMELINE, ["fused"]),
    "start() timeline, quick plans": (TIMELINE, ["quick"]),
    "start() timeline, waiting for the warm-up's plan": (TIMELINE, ["wait"]),
    "numpy + inputs, OPENBLAS_NUM_THREADS=1": (INPUTS, ["env:OPENBLAS_NUM_THREADS=1"]),
    "warm-up step by step (remembered choice)": (REMEMBERED, []),
    "legacy conv (remembered algorithm)": (LEGACY, []),
    "imports": (IMPORTS, []),
    "driver alone": (DRIVER, []),
    "numpy + inputs": (INPUTS, []),
    "graph conv, precompiled": (GRAPH, ["plain", "precompiled"]),
    "graph conv, heuristics' first": (GRAPH, ["plain", "first"]),
    "graph conv+ReLU, precompiled": (GRAPH, ["relu", "precompiled"]),
    "graph conv+ReLU, heuristics' first": (GRAPH, ["relu", "first"]),
    "graph conv+ReLU, FALLBACK precompiled": (GRAPH, ["relu", "precompiled", "fallback"]),
    "graph conv, FALLBACK precompiled": (GRAPH, ["plain", "precompiled", "fallback"]),
    "context in a thread, overlapped": (OVERLAP, []),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", help="write every run's marks here")
    parser.add_argument("--only", nargs="*", default=(), help="run only the pieces whose names contain these")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "plugins"),
                                                                      os.environ.get("PYTHONPATH")]))}
    everything: dict[str, list[dict[str, Any]]] = {}
    for name, (code, extra) in PIECES.items():
        if args.only and not any(word in name for word in args.only):
            continue
        settings = dict(word[4:].split("=", 1) for word in extra if word.startswith("env:"))
        runs, failure = _cold_runs(code, [args.folder, *extra], {**env, **settings}, args.runs)
        if failure:
            print(f"{name}: failed\n{failure[-2000:]}")
        everything[name] = runs
        if not runs:
            continue
        print(f"{name} (ms since the first statement; median of {len(runs)})")
        previous = 0.0
        for key, value in runs[0].items():
            if not isinstance(value, float):
                print(f"  {key:<32} {value}")
                continue
            mid = statistics.median(r[key] for r in runs if key in r)
            if key.lstrip().startswith("cpu"):  # CPU time so far: no step from the line above
                print(f"  {key:<32} {mid:8.1f}")
                continue
            print(f"  {key:<32} {mid:8.1f}  (+{mid - previous:6.1f})")
            previous = mid
    if not args.only or any("engine" in word for word in args.only):
        _engines(args, env, everything)
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))


def _cold_runs(code: str, argv: list[str], env: dict[str, str], count: int) -> tuple[list[dict[str, Any]], str]:
    """``count`` fresh processes' marks, after one untimed (the page cache); stops at the first failure
    and returns its stderr too."""
    runs: list[dict[str, Any]] = []
    for _ in range(count + 1):
        done = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True,
                              timeout=300)
        if done.returncode:
            return runs[1:], done.stderr or f"exit status {done.returncode}"
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return runs[1:], ""


def _engines(args: argparse.Namespace, env: dict[str, str], everything: dict[str, list[dict[str, Any]]]) -> None:
    """First-call cost of each engine offered for the plain convolution, in fresh processes."""
    done = subprocess.run([sys.executable, "-c", ENGINE_CHOICES, args.folder], env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode:
        print(f"engine choices: failed\n{done.stderr[-2000:]}")
        return
    choices = json.loads(done.stdout.strip().splitlines()[-1])
    print("per engine (median ms): context+load, +graph, +config & plan, +first execution; steady per execution")
    for engine, choice in choices.items():
        runs, failure = _cold_runs(ONE_ENGINE, [args.folder, json.dumps(choice)], env, args.runs)
        if failure:
            print(f"  engine {engine}: failed: {(failure.strip().splitlines() or [''])[-1][:200]}")
        everything[f"engine {engine}"] = runs
        if runs:
            keys = ("context + load", "handle + graph", "engine config + plan", "first execution")
            mids = [statistics.median(r[k] for r in runs) for k in keys]
            steps = [mids[0]] + [b - a for a, b in zip(mids, mids[1:], strict=False)]
            steady = statistics.median(r["steady ms per execution"] for r in runs)
            print(f"  engine {engine:>3}: " + "  ".join(f"{v:7.1f}" for v in steps) + f"   {steady:.3f}")


if __name__ == "__main__":
    main()
