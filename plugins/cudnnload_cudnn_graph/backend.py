"""The cudnn-graph backend: cuDNN's graph (backend) API through ctypes, built for a short per-call path.

Per problem, once (`_plan`): the operation graph (`graphs.conv_graph`: for the forward
direction conv -> bias ADD -> activation, fused into one graph), then an execution plan from
the remembered engine configuration (`cudnnload.algos`), else from heuristics mode A (then
FALLBACK), or with ``autotune=True`` the fastest of the first `AUTOTUNE_CANDIDATES`
configurations timed on the caller's data.

Per (problem, data pointers, stream), once (`_new_run`): a finalized variant pack binding the
pointers and this thread's workspace, and ctypes objects for the call.

Per call: one dict lookup keyed by the pointers, shapes and strides (the parameters are
compared by identity first: the dispatcher passes the same `ConvSpec` object for a problem),
this thread's handle (`cudnnload.execution.Runtime.handle`: rebinds only when the device,
stream or current context changed), and ``cudnnBackendExecute(handle, plan, variant pack)``.
Variant packs are per thread, as the workspace they hold is; each thread keeps at most
`MAX_RUNS`, dropping the oldest.
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable
from typing import Any

from cudnnload.backends import ActivationSpec, ConvSpec, Spec
from cudnnload.errors import CudnnloadError
from cudnnload.execution import Runtime, runtime, usable_strides
from cudnnload.status import NotSupported, check
from cudnnload.tensors import TensorRef

from .backend_api import GraphApi, HeuristicMode
from .graphs import ROLES, GraphSpec, OperationGraph, build, conv_graph
from .plans import EngineConfig, Plan, allowed, config_from_choice, heuristic_configs, make_plan, variant_pack

NAME = "cudnn-graph"
DTYPES = ("float32", "float16", "bfloat16")
MAX_RUNS = 1024  # variant packs kept per thread
AUTOTUNE_CANDIDATES = 8  # configurations timed by autotune=True (heuristics A first, then FALLBACK)
AUTOTUNE_REPEATS = 5


class Run:
    """What one call needs: the plan and variant pack (as ready ctypes arguments)."""

    __slots__ = ("pack", "plan", "spec", "workspace")

    def __init__(self, plan: int, pack: int, spec: Spec, workspace: int) -> None:
        self.plan = ctypes.c_void_p(plan)
        self.pack = ctypes.c_void_p(pack)
        self.spec = spec
        self.workspace = workspace


class GraphBackend:
    """`cudnnload.backends.Backend` for convolutions through cuDNN's graph API."""

    name = NAME

    def __init__(self) -> None:
        self._runtime: Runtime | None = None
        self._graph_api: GraphApi | None = None
        self._execute: Callable[..., int] | None = None
        self._graphs: dict[GraphSpec, OperationGraph] = {}
        self._plans: dict[tuple[int, bool, GraphSpec], Plan] = {}
        self._local = threading.local()  # .runs: this thread's {key: Run}
        self._lock = threading.RLock()  # serialises graph and plan building

    # --- Backend ----------------------------------------------------------------------------------

    def availability(self) -> str | None:
        from cudnnload.gpu import gpu_facts

        facts = gpu_facts()
        if not facts.devices:
            return f"no CUDA device is visible ({facts.reason or 'the driver shows none'})"
        try:
            rt = runtime()
        except (CudnnloadError, OSError) as exc:
            return f"cuDNN could not be loaded: {exc}"
        if rt.api.major < 9:
            return f"{NAME} speaks the cuDNN 9 backend API; the loaded cuDNN is {rt.release}"
        self._runtime, self._graph_api = rt, GraphApi(rt.api)
        self._execute = self._graph_api.execute
        rt.on_workspace_freed(self._forget_workspace)
        return None

    def supports(self, op: str, spec: Spec, *tensors: TensorRef | None) -> str | None:
        if op not in ROLES:
            return f"{NAME} runs convolutions only (activations run on cudnn-legacy)"
        assert isinstance(spec, ConvSpec)
        for ref in tensors:
            if ref is None:
                continue
            if ref.device is None:
                return "cuDNN runs on the GPU; the data is in host memory"
            if ref.dtype not in DTYPES:
                return f"{NAME} runs {', '.join(DTYPES)}; not {ref.dtype}"
            why = usable_strides(ref)
            if why is not None:
                return why
        try:  # the graph and a plan from the heuristics: what cuDNN cannot run shows here, as a reason
            self._plan(op, tensors, spec, False, 0)
        except CudnnloadError as exc:
            return exc.message
        return None

    def conv_forward(self, x: TensorRef, w: TensorRef, bias: TensorRef | None, y: TensorRef, spec: ConvSpec, *,
                     autotune: bool = False, stream: int = 0) -> None:
        try:
            runs = self._local.runs
        except AttributeError:
            runs = self._local.runs = {}
        key = (x.ptr, w.ptr, y.ptr, stream, autotune, x.shape, x.strides, w.shape, w.strides, y.strides, x.dtype,
               None if bias is None else (bias.ptr, bias.strides))
        run = runs.get(key)
        if run is None or (run.spec is not spec and run.spec != spec):
            run = self._new_run(runs, key, "conv_forward", (x, w, bias, y), spec, autotune, stream)
        rt = self._runtime
        assert rt is not None and self._execute is not None and x.device is not None
        status = self._execute(rt.handle(rt.state(), x.device, stream), run.plan, run.pack)
        if status:
            check(status, "cudnnBackendExecute", rt.api)

    def conv_backward_data(self, dy: TensorRef, w: TensorRef, dx: TensorRef, spec: ConvSpec, *,
                           autotune: bool = False, stream: int = 0) -> None:
        self._call("conv_backward_data", (dy, w, dx), spec, autotune, stream)

    def conv_backward_filter(self, x: TensorRef, dy: TensorRef, dw: TensorRef, spec: ConvSpec, *,
                             autotune: bool = False, stream: int = 0) -> None:
        self._call("conv_backward_filter", (x, dy, dw), spec, autotune, stream)

    def activation_forward(self, x: TensorRef, y: TensorRef, spec: ActivationSpec, *, stream: int = 0) -> None:
        raise NotSupported(3000, NAME, major=9, detail="activations run on cudnn-legacy (supports() says so)")

    def activation_backward(self, y: TensorRef, dy: TensorRef, x: TensorRef, dx: TensorRef, spec: ActivationSpec, *,
                            stream: int = 0) -> None:
        raise NotSupported(3000, NAME, major=9, detail="activations run on cudnn-legacy (supports() says so)")

    # --- runs: a plan bound to data -----------------------------------------------------------------

    def _call(self, op: str, tensors: tuple[TensorRef, ...], spec: ConvSpec, autotune: bool, stream: int) -> None:
        try:
            runs = self._local.runs
        except AttributeError:
            runs = self._local.runs = {}
        key = (op, stream, autotune, *((t.ptr, t.shape, t.strides) for t in tensors), tensors[0].dtype)
        run = runs.get(key)
        if run is None or (run.spec is not spec and run.spec != spec):
            run = self._new_run(runs, key, op, tensors, spec, autotune, stream)
        rt = self._runtime
        device = tensors[0].device
        assert rt is not None and self._execute is not None and device is not None
        status = self._execute(rt.handle(rt.state(), device, stream), run.plan, run.pack)
        if status:
            check(status, "cudnnBackendExecute", rt.api)

    def _new_run(self, runs: dict[Any, Run], key: Any, op: str, tensors: tuple[TensorRef | None, ...],
                 spec: ConvSpec, autotune: bool, stream: int) -> Run:
        rt, g = self._runtime, self._graph_api
        device = tensors[0].device if tensors[0] is not None else None
        assert rt is not None and g is not None and device is not None
        plan, graph = self._plan(op, tensors, spec, autotune, stream)
        state = rt.state()
        rt.handle(state, device, stream)
        workspace = rt.workspace(state, device, stream, plan.workspace)
        pack = variant_pack(g, [uid for uid in graph.io if uid], [t.ptr for t in tensors if t is not None],
                            workspace)
        replaced = runs.pop(key, None)  # same pointers, other parameters
        if replaced is not None:
            g.destroy(replaced.pack.value or 0)
        if len(runs) >= MAX_RUNS:
            g.destroy(runs.pop(next(iter(runs))).pack.value or 0)  # the oldest
        run = runs[key] = Run(plan.desc, pack, spec, workspace)
        return run

    def _forget_workspace(self, ptr: int) -> None:
        """This thread's workspace at ``ptr`` was freed: drop the variant packs that hold it."""
        runs: dict[Any, Run] | None = getattr(self._local, "runs", None)
        if not runs or self._graph_api is None:
            return
        for key in [key for key, run in runs.items() if run.workspace == ptr]:
            self._graph_api.destroy(runs.pop(key).pack.value or 0)

    # --- plans --------------------------------------------------------------------------------------

    def _plan(self, op: str, tensors: tuple[TensorRef | None, ...], spec: ConvSpec, autotune: bool, stream: int
              ) -> tuple[Plan, GraphSpec]:
        """The problem's plan: remembered, heuristic, or (autotune) measured on ``tensors``; made once."""
        graph_spec = conv_graph(op, tensors, spec)
        first = tensors[0]
        assert first is not None and first.device is not None
        device = first.device
        key = (device, autotune, graph_spec)
        plan = self._plans.get(key)
        if plan is not None:
            return plan, graph_spec
        rt, g = self._runtime, self._graph_api
        assert rt is not None and g is not None
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                return plan, graph_spec
            graph = self._graphs.get(graph_spec)
            if graph is None:
                graph = self._graphs[graph_spec] = build(g, graph_spec)
            state = rt.state()
            handle = rt.handle(state, device, stream)
            store = rt.choices(device)
            persisted_as = ("autotune|" if autotune else "heuristic|") + graph_spec.text()
            plan = self._remembered(graph, handle, store.get(NAME, persisted_as))
            if plan is None:
                plan = (self._tuned(graph, graph_spec, handle, state, device, stream, tensors) if autotune
                        else self._first_working(graph, graph_spec, handle))
                store.put(NAME, persisted_as, plan.config.choice)
            self._plans[key] = plan
            return plan, graph_spec

    def _remembered(self, graph: OperationGraph, handle: int, choice: dict[str, Any] | None) -> Plan | None:
        g = self._graph_api
        assert g is not None
        if choice is None:
            return None
        try:
            return make_plan(g, handle, config_from_choice(g, graph, choice))
        except (CudnnloadError, KeyError, TypeError, ValueError):
            return None  # from another cuDNN build, or damaged: ask again

    def _candidates(self, graph: OperationGraph, graph_spec: GraphSpec, failures: list[str]) -> list[EngineConfig]:
        """Heuristics mode A's configurations, then FALLBACK's, without repeats or ones the data rules out.
        A mode whose query fails adds its reason to ``failures``."""
        g = self._graph_api
        assert g is not None
        kept: list[EngineConfig] = []
        seen: set[tuple[int, Any]] = set()
        for mode in (HeuristicMode.A, HeuristicMode.FALLBACK):
            try:
                configs = heuristic_configs(g, graph, mode)
            except CudnnloadError as exc:
                failures.append(f"heuristics {mode.name}: {exc.reason}")
                continue
            for config in configs:
                if (config.engine, config.knobs) in seen or not allowed(graph_spec, config.notes):
                    config.destroy(g)
                    continue
                seen.add((config.engine, config.knobs))
                kept.append(config)
        return kept

    def _first_working(self, graph: OperationGraph, graph_spec: GraphSpec, handle: int) -> Plan:
        g = self._graph_api
        assert g is not None
        failures: list[str] = []
        candidates = self._candidates(graph, graph_spec, failures)
        for index, config in enumerate(candidates):
            try:
                plan = make_plan(g, handle, config)
            except CudnnloadError as exc:
                failures.append(f"engine {config.engine}: {exc.reason}")
                continue
            for rest in candidates[index + 1:]:
                rest.destroy(g)
            return plan
        raise NotSupported(3000, "cudnnBackendFinalize(execution plan)", major=g.api.major,
                           detail=f"no engine configuration of the {len(candidates)} the heuristics (A, FALLBACK) "
                           f"offered builds for {graph_spec.op}" + (f"; {'; '.join(failures[:3])}" if failures else ""))

    def _tuned(self, graph: OperationGraph, graph_spec: GraphSpec, handle: int, state: Any, device: int, stream: int,
               tensors: tuple[TensorRef | None, ...]) -> Plan:
        """Time up to AUTOTUNE_CANDIDATES plans on the caller's tensors (outputs get written); keep the fastest."""
        rt, g = self._runtime, self._graph_api
        assert rt is not None and g is not None and self._execute is not None
        plans: list[Plan] = []
        for config in self._candidates(graph, graph_spec, []):
            if len(plans) == AUTOTUNE_CANDIDATES:
                config.destroy(g)
                continue
            try:
                plans.append(make_plan(g, handle, config))
            except CudnnloadError:
                continue
        if not plans:
            return self._first_working(graph, graph_spec, handle)
        workspace = rt.workspace(state, device, stream, max(plan.workspace for plan in plans))
        uids = [uid for uid in graph_spec.io if uid]
        pointers = [t.ptr for t in tensors if t is not None]
        timed: list[tuple[float, int]] = []
        for index, plan in enumerate(plans):
            pack = variant_pack(g, uids, pointers, workspace)
            try:
                timed.append((self._time(handle, plan, pack, stream), index))
            except CudnnloadError:
                timed.append((math.inf, index))
            finally:
                g.destroy(pack)
        best = min(timed)[1]
        for index, plan in enumerate(plans):
            if index != best:
                plan.destroy(g)
        return plans[best]

    def _time(self, handle: int, plan: Plan, pack: int, stream: int) -> float:
        rt, execute = self._runtime, self._execute
        assert rt is not None and execute is not None

        def run() -> None:
            status = execute(handle, plan.desc, pack)
            if status:
                check(status, "cudnnBackendExecute", rt.api)

        return rt.time_ms(stream, run, AUTOTUNE_REPEATS)
