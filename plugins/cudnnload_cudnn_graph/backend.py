"""The cudnn-graph backend: cuDNN's graph (backend) API through ctypes, built for a short per-call path.

Per problem, once (`_plan`): the operation graph (`graphs.conv_graph`: for the forward
direction conv -> bias ADD -> activation, fused into one graph; `graphs.activation_graph`: one
pointwise operation), then an execution plan from the remembered engine configuration
(`cudnnload.dispatch.algos`), else from heuristics mode A (then FALLBACK), or with ``autotune=True``
the fastest of the first `AUTOTUNE_CANDIDATES` configurations timed on the caller's data. A fused
graph that no engine builds (cuDNN 9.19 has none for conv + bias + swish in NCHW order, measured)
runs as its parts, the convolution with its bias, then the activation on its output in place
(`graphs.epilogue_graph`), said once per problem in the log at INFO; with ``ConvSpec.fused`` the
problem is refused instead.

Quick plans (``quick_start=True``, the default): a call whose plan another thread is building (the lock
is held, or a warm-up has claimed the problem through `cudnnload.backends.warming`) runs on a plan from
`QUICK_HEURISTICS` instead of waiting, and its run is marked provisional: a later call moves it to the
problem's own plan once that is ready, and provisional runs are never recorded into CUDA graphs. The
quick configuration is remembered like the others (under `_QUICK` and the problem). A call that must wait
for the lock (no quick plan builds, or ``quick_start=False``) waits at most
`cudnnload.dispatch.runtime.PLANNING_WAIT_S`; then its `LockTimeout` names the thread holding the lock and
the plan it is building.

Per (problem, data pointers, stream), once (`_new_run`): a finalized variant pack per step binding the
pointers and this thread's workspace, and ctypes objects for the call.

Per call: one dict lookup keyed by the pointers, shapes and strides (the parameters are
compared by identity first: the dispatcher passes the same `ConvSpec` object for a problem),
this thread's handle (`cudnnload.dispatch.runtime.Runtime.handle`: rebinds only when the device,
stream or current context changed), and ``cudnnBackendExecute(handle, plan, variant pack)`` per step,
one thread at a time per plan (`plans.Plan` says why).
That call alone costs ~9 µs of host time (H200, cuDNN 9.19, measured), so after `RECORD_AFTER`
executions a run is recorded into a CUDA graph and later calls replay it with ``cuGraphLaunch``
(~2 µs); an engine that cannot be recorded keeps being executed directly. Runs are per thread,
as the workspace they hold is; each thread keeps at most `MAX_RUNS`, dropping the oldest.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cudnnload.dispatch.backends import ActivationSpec, ConvSpec, Spec, refusal, warm_ups_running, warming_hook
from cudnnload.dispatch.runtime import PlanningLock, Runtime, ThreadState, runtime, usable_strides
from cudnnload.dispatch.tensors import TensorRef
from cudnnload.errors import CudnnloadError
from cudnnload.loading.gpu import synchronize
from cudnnload.loading.status import NotSupported, check

from .backend_api import GraphApi, HeuristicMode
from .graphs import (
    GraphSpec,
    OperationGraph,
    activation_graph,
    build,
    conv_graph,
    engine_count,
    epilogue_graph,
    flat,
)
from .plans import EngineConfig, Plan, allowed, config_from_choice, heuristic_configs, make_plan, variant_pack

if TYPE_CHECKING:
    from cudnnload.dispatch.algos import ChoiceStore

log = logging.getLogger(__name__)

NAME = "cudnn-graph"
DTYPES = ("float32", "float16", "bfloat16")
MAX_RUNS = 1024  # variant packs kept per thread
# A run executed this many times directly is recorded into a CUDA graph and replayed from then on:
# cudnnBackendExecute costs ~9.5 µs of host time on an H200 with cuDNN 9.19 (measured), cuGraphLaunch a
# fraction of it. The first executions also load the engine's kernels, which recording must not include.
RECORD_AFTER = 2
AUTOTUNE_CANDIDATES = 12  # configurations timed by autotune=True, from AUTOTUNE_HEURISTICS in order
AUTOTUNE_REPEATS = 5
AUTOTUNE_BATCH = 10  # executions recorded into one CUDA graph per timing, so no host gap is timed
HEURISTICS = (HeuristicMode.A, HeuristicMode.FALLBACK)
# Where a quick plan comes from (see GraphBackend, quick_start): cuDNN's functional fallback engines
# finalize in under a millisecond in a fresh process and run their first execution in 8-14 ms, where
# the heuristics' choices (engines 62, 45, 27 for the issue's fp16 3x3 convolution) first spend ~70 ms
# in cuDNN's lazy initialization (H200, cuDNN 9.19, measured: bench/bench_first_call_parts.py).
QUICK_HEURISTICS = (HeuristicMode.FALLBACK,)
_QUICK = "quick|"  # how the choice store names a problem's quick configuration (then the problem's text)
# INSTANT too: it is what PyTorch asks (aten/src/ATen/native/cudnn/Conv_v8.cpp), so PyTorch's default
# choice is among the candidates.
AUTOTUNE_HEURISTICS = (HeuristicMode.A, HeuristicMode.INSTANT, HeuristicMode.FALLBACK)

PlanKey = tuple[int, bool, GraphSpec]  # (device, autotune, the problem's graph)


def _unavailable(*args: Any) -> Any:
    raise NotSupported(3000, NAME, major=9, detail=f"{NAME} is not available here (see availability())")


@dataclass(frozen=True)
class Steps:
    """What runs a problem: a plan per graph, in order. One graph; or, where no engine fuses a convolution's
    activation, the convolution with its bias and then the activation (``unfused`` says why)."""

    plans: tuple[Plan, ...]
    graphs: tuple[GraphSpec, ...]
    unfused: str | None = None

    @property
    def workspace(self) -> int:
        return max(plan.workspace for plan in self.plans)


class Run:
    """What one call needs: each step's plan and variant pack (as ready ctypes arguments), and once recorded,
    a CUDA graph. The first step's are attributes of their own: the per-call path reads them directly."""

    __slots__ = ("calls", "executing", "graph", "pack", "packs", "plan", "provisional", "rest", "spec", "workspace")

    def __init__(self, steps: Steps, packs: list[int], spec: Spec, workspace: int, provisional: bool = False
                 ) -> None:
        first = steps.plans[0]
        self.plan = ctypes.c_void_p(first.desc)
        self.executing = first.executing  # the plan's, shared by every thread's runs of it
        self.pack = ctypes.c_void_p(packs[0])
        self.rest = tuple((ctypes.c_void_p(plan.desc), ctypes.c_void_p(pack), plan.executing)
                          for plan, pack in zip(steps.plans[1:], packs[1:], strict=True))
        self.packs = tuple(packs)
        self.spec = spec
        self.workspace = workspace
        self.provisional = provisional  # on a quick plan until the problem's own plan is ready
        self.calls = 0  # direct executions so far
        self.graph = 0  # CUgraphExec replaying the execution, once recorded


class GraphBackend:
    """`cudnnload.backends.Backend` for convolutions and activations through cuDNN's graph API."""

    name = NAME

    def __init__(self, *, record_after: int | None = RECORD_AFTER,
                 heuristics: tuple[HeuristicMode, ...] = HEURISTICS, quick_start: bool = True) -> None:
        """``record_after``: direct executions of a run before it is recorded into a CUDA graph; None: never.
        ``heuristics``: the modes asked for engine configurations, in order. ``quick_start``: a call whose
        plan another thread is building (a background warm-up, `cudnnload.start`) runs on a quick plan
        (`QUICK_HEURISTICS`) instead of waiting, and moves to its own plan on a later call once it is ready."""
        self._record_after = -1 if record_after is None else record_after
        self._heuristics = heuristics
        self._quick_start = quick_start
        self._runtime: Runtime | None = None
        self._graph_api: GraphApi | None = None
        self._graphs: dict[tuple[int, GraphSpec], OperationGraph] = {}
        self._plans: dict[PlanKey, Steps] = {}
        self._lock = PlanningLock(f"{NAME} plans")  # serialises graph and plan building
        self._quick: dict[PlanKey, Plan] = {}  # quick plans, each on a graph of its own
        # Problems a warm-up thread is preparing (key -> its thread ident): other threads run them on the
        # quick plan until the warm-up has built their own.
        self._claimed: dict[PlanKey, int] = {}
        self._running_quick: set[PlanKey] = set()  # claimed, and its owner runs the quick plan
        self._quick_graphs: list[OperationGraph] = []
        self._quick_lock = PlanningLock(f"{NAME} quick plans")
        # Set by availability(); bound methods and C functions the per-call path uses without a lookup.
        self._thread: Callable[[], ThreadState] = _unavailable
        self._execute: Callable[..., int] = _unavailable
        self._ctx_get_current: Callable[..., int] = _unavailable
        self._launch: Callable[..., int] = _unavailable
        self._api: Any = None

    # --- Backend ----------------------------------------------------------------------------------

    def availability(self) -> str | None:
        from cudnnload.loading.gpu import device_count

        count, reason = device_count()
        if not count:
            return f"no CUDA device is visible ({reason or 'the driver shows none'})"
        try:
            rt = runtime()
        except (CudnnloadError, OSError) as exc:
            return f"cuDNN could not be loaded: {exc}"
        if rt.api.major < 9:
            return f"{NAME} speaks the cuDNN 9 backend API; the loaded cuDNN is {rt.release}"
        self._runtime, self._graph_api, self._api = rt, GraphApi(rt.api), rt.api
        self._thread, self._execute, self._ctx_get_current = rt.state, self._graph_api.execute, rt.ctx_get_current
        self._launch = rt.graph_launch
        rt.on_workspace_freed(self._forget_workspace)
        return None

    def capability(self, operation: str, dtype: str, layout: str, spatial: int) -> str | None:
        if dtype not in DTYPES:
            return f"{NAME} builds {', '.join(DTYPES)} graphs; {dtype} runs on cudnn-legacy"
        return None

    def supports(self, op: str, spec: Spec, *tensors: TensorRef | None) -> str | None:
        why = refusal(self.capability, op, spec, tensors)
        if why is not None:
            return why
        for ref in tensors:
            if ref is None:
                continue
            if ref.device is None:
                return "cuDNN runs on the GPU; the data is in host memory"
            why = usable_strides(ref)
            if why is not None:
                return why
        if isinstance(spec, ActivationSpec) and not flat(tuple(t for t in tensors if t is not None)):
            return ("cuDNN's engine for a pointwise graph takes densely packed tensors (9.19, measured); these "
                    "are strided or in different memory orders")
        try:  # the graph and a plan from the heuristics: what cuDNN cannot run shows here, as a reason
            self._plan(op, tensors, spec, False, 0)
        except CudnnloadError as exc:
            return exc.message
        return None

    def conv_forward(self, x: TensorRef, w: TensorRef, bias: TensorRef | None, y: TensorRef, spec: ConvSpec, *,
                     autotune: bool = False, stream: int = 0) -> None:
        # The per-call path: everything here runs on every call, so it is written out in one function.
        state = self._thread()
        runs = state.bound.get(self) or self._runs(state)
        key = (x.ptr, w.ptr, y.ptr, stream, autotune, x.shape, x.strides, w.shape, w.strides, y.strides, x.dtype,
               None if bias is None else (bias.ptr, bias.strides))
        run = runs.get(key)
        if run is None or (run.spec is not spec and run.spec != spec) or run.provisional:
            run = self._new_run(state, key, "conv_forward", (x, w, bias, y), spec, autotune, stream, run)
        if run.graph:  # only the device's context must be current: the graph carries the rest
            if (state.device != x.device or self._ctx_get_current(state.current_ref)
                    or state.current.value != state.context):
                self._rebind(state, x.device, stream)
            status = self._launch(run.graph, stream)
            if status:
                raise self._runtime.launch_error(status)  # type: ignore[union-attr]
            return
        if (state.device != x.device or state.stream != stream or self._ctx_get_current(state.current_ref)
                or state.current.value != state.context):
            self._rebind(state, x.device, stream)
        self._direct(state, run, x.device)

    def replay(self, op: str, spec: Spec, tensors: tuple[TensorRef | None, ...], *, autotune: bool = False,
               stream: int = 0) -> Callable[[], bool] | None:
        """A function that repeats this conv_forward call on this thread, once its run is a recorded CUDA graph:
        the context check and ``cuGraphLaunch`` alone. It returns False, launching nothing, once the run is
        gone or another context is current (the caller then calls the method). None before the run is
        recorded, and for other operations."""
        if op != "conv_forward":
            return None
        x, w, bias, y = tensors
        assert x is not None and w is not None and y is not None
        state = self._thread()
        key = (x.ptr, w.ptr, y.ptr, stream, autotune, x.shape, x.strides, w.shape, w.strides, y.strides, x.dtype,
               None if bias is None else (bias.ptr, bias.strides))
        run = self._runs(state).get(key)
        if run is None or not run.graph or run.spec != spec:
            return None
        device, current, current_ref = x.device, state.current, state.current_ref
        ctx_get_current, launch, launch_error = self._ctx_get_current, self._launch, self._runtime.launch_error  # type: ignore[union-attr]

        def again() -> bool:
            graph = run.graph
            if not graph or state.device != device or ctx_get_current(current_ref) or current.value != state.context:
                return False
            status = launch(graph, stream)
            if status:
                raise launch_error(status)
            return True

        return again

    def conv_backward_data(self, dy: TensorRef, w: TensorRef, dx: TensorRef, spec: ConvSpec, *,
                           autotune: bool = False, stream: int = 0) -> None:
        self._call("conv_backward_data", (dy, w, dx), spec, autotune, stream)

    def conv_backward_filter(self, x: TensorRef, dy: TensorRef, dw: TensorRef, spec: ConvSpec, *,
                             autotune: bool = False, stream: int = 0) -> None:
        self._call("conv_backward_filter", (x, dy, dw), spec, autotune, stream)

    def activation_forward(self, x: TensorRef, y: TensorRef, spec: ActivationSpec, *, stream: int = 0) -> None:
        self._call("activation_forward", (x, y), spec, False, stream)

    def activation_backward(self, y: TensorRef, dy: TensorRef, x: TensorRef, dx: TensorRef, spec: ActivationSpec, *,
                            stream: int = 0) -> None:
        self._call("activation_backward", (y, dy, x, dx), spec, False, stream)

    # --- runs: a plan bound to data -----------------------------------------------------------------

    def _call(self, op: str, tensors: tuple[TensorRef | None, ...], spec: Spec, autotune: bool, stream: int
              ) -> None:
        state = self._thread()
        first = tensors[0]
        assert first is not None
        device = first.device
        key = (op, stream, autotune, *(None if t is None else (t.ptr, t.shape, t.strides) for t in tensors),
               first.dtype)
        run = (state.bound.get(self) or self._runs(state)).get(key)
        if run is None or (run.spec is not spec and run.spec != spec) or run.provisional:
            run = self._new_run(state, key, op, tensors, spec, autotune, stream, run)
        self._rebind(state, device, stream)
        if run.graph:
            status = self._launch(run.graph, stream)
            if status:
                raise self._runtime.launch_error(status)  # type: ignore[union-attr]
            return
        self._direct(state, run, device)

    def _direct(self, state: ThreadState, run: Run, device: int | None) -> None:
        """Execute the run's steps on the bound handle; record it into a CUDA graph after `RECORD_AFTER` of these."""
        self._enqueue(state.handle, run)
        run.calls += 1
        if run.calls == self._record_after and not run.provisional:
            self._record(state, run, device)

    def _enqueue(self, handle: int, run: Run) -> None:
        with run.executing:
            status = self._execute(handle, run.plan, run.pack)
        if status:
            check(status, "cudnnBackendExecute", self._api)
        for plan, pack, executing in run.rest:
            with executing:
                status = self._execute(handle, plan, pack)
            if status:
                check(status, "cudnnBackendExecute", self._api)

    def _new_run(self, state: ThreadState, key: Any, op: str, tensors: tuple[TensorRef | None, ...],
                 spec: Spec, autotune: bool, stream: int, current: Run | None = None) -> Run:
        rt, g = self._runtime, self._graph_api
        device = tensors[0].device if tensors[0] is not None else None
        assert rt is not None and g is not None and device is not None
        steps, provisional = self._plan(op, tensors, spec, autotune, stream)
        if current is not None and current.provisional and provisional and current.plan.value == steps.plans[0].desc:
            return current  # its own plan is still being built elsewhere
        rt.handle(state, device, stream)
        workspace = rt.workspace(state, device, stream, steps.workspace)
        packs = [variant_pack(g, graph.uids, graph.pointers(tensors, self._zero_bias(graph, device)), workspace)
                 for graph in steps.graphs]
        runs = self._runs(state)
        replaced = runs.pop(key, None)  # same pointers, other parameters
        if replaced is not None:
            self._drop(replaced)
        if len(runs) >= MAX_RUNS:
            self._drop(runs.pop(next(iter(runs))))  # the oldest
        run = runs[key] = Run(steps, packs, spec, workspace, provisional)
        return run

    def _zero_bias(self, graph: GraphSpec, device: int) -> int:
        """The device address of the zero bias ``graph`` binds (graphs.ZERO_BIAS), or 0."""
        nbytes = graph.zero_bias
        assert self._runtime is not None
        return self._runtime.zeros(device, nbytes) if nbytes else 0

    def _runs(self, state: ThreadState) -> dict[Any, Run]:
        """This backend's runs on this thread (in the thread's state: they hold its workspace)."""
        runs: dict[Any, Run] | None = state.bound.get(self)
        if runs is None:
            runs = state.bound[self] = {}
        return runs

    def _rebind(self, state: ThreadState, device: int | None, stream: int) -> None:
        assert self._runtime is not None and device is not None
        self._runtime.handle(state, device, stream)

    def _record(self, state: ThreadState, run: Run, device: int | None) -> None:
        """Record the run's execution into a CUDA graph; if cuDNN's engine cannot be recorded, keep executing it."""
        rt = self._runtime
        assert rt is not None and device is not None
        try:
            run.graph = rt.record(state, device, lambda stream: self._enqueue(rt.handle(state, device, stream), run))
        except CudnnloadError as exc:
            log.debug("%s: runs directly, its execution could not be recorded: %s", NAME, exc)

    def _drop(self, run: Run) -> None:
        assert self._graph_api is not None and self._runtime is not None
        if run.graph:
            graph, run.graph = run.graph, 0  # a replay handed out (`replay`) sees it gone
            self._runtime.destroy_graph(graph)
        for pack in run.packs:
            self._graph_api.destroy(pack)

    def _forget_workspace(self, state: ThreadState, ptr: int) -> None:
        """A thread's workspace at ``ptr`` was freed: drop that thread's runs (variant packs, graphs) that hold it."""
        runs = self._runs(state)
        for key in [key for key, run in runs.items() if run.workspace == ptr]:
            self._drop(runs.pop(key))

    # --- plans --------------------------------------------------------------------------------------

    def _plan(self, op: str, tensors: tuple[TensorRef | None, ...], spec: Spec, autotune: bool, stream: int
              ) -> tuple[Steps, bool]:
        """The problem's steps: remembered, heuristic, or (autotune) measured on ``tensors``; made once.
        Also whether they are a quick plan standing in while another thread builds the problem's own."""
        graph_spec = (conv_graph(op, tensors, spec) if isinstance(spec, ConvSpec)
                      else activation_graph(op, tensors, spec))  # type: ignore[arg-type]
        first = tensors[0]
        assert first is not None and first.device is not None
        device = first.device
        key = (device, autotune, graph_spec)
        steps = self._plans.get(key)
        if steps is not None:
            return self._fused(steps, spec), False
        me = threading.get_ident()
        hook = None
        if self._quick_start and not autotune:
            if key not in self._claimed:
                hook = warming_hook()
                if hook is not None and self._claimed.setdefault(key, me) != me:
                    hook = None  # another warm-up claimed it first
            if hook is None and self._stands_in(key, me):
                quick = self._quick_plan(key, graph_spec, device, stream)
                if quick is not None:
                    return Steps((quick,), (graph_spec,)), True
        try:
            if hook is not None:
                self._warm_quick(key, op, tensors, spec, stream, hook)
            doing = f"building the plan of {graph_spec.text()}"
            if not (self._quick_start and self._lock.try_acquire(doing)):
                quick = self._quick_plan(key, graph_spec, device, stream) if self._quick_start else None
                if quick is not None:
                    return Steps((quick,), (graph_spec,)), True
                self._lock.acquire(doing)  # bounded: a stuck holder is named in a LockTimeout
            try:
                return self._fused(self._build_steps(key, op, tensors, spec, autotune, stream), spec), False
            finally:
                self._lock.release()
        finally:
            if self._claimed.get(key) == me:
                del self._claimed[key]

    def _stands_in(self, key: PlanKey, me: int) -> bool:
        """Whether a call runs on the quick plan instead of building the problem's own or waiting for it: a
        warm-up owns the problem (another thread's, or this thread's own quick run), or a background warm-up
        is still on its way to it. The latter is the application's call that comes first (the warm-up may
        still be importing): the own plan's first build costs ~70-90 ms of cuDNN's lazy initialization on the
        application's thread, the quick plan ~6 (H200, 2026-11-27)."""
        owner = self._claimed.get(key)
        if owner is None:
            return warm_ups_running()
        return owner != me or key in self._running_quick

    @staticmethod
    def _fused(steps: Steps, spec: Spec) -> Steps:
        """``steps``, unless the caller asked for a fused engine (ConvSpec.fused) and they are parts."""
        if steps.unfused is not None and isinstance(spec, ConvSpec) and spec.fused:
            raise NotSupported(3000, NAME, major=9, detail=f"fused=True: no engine fuses the bias and "
                               f"{spec.activation or 'no activation'} into this convolution ({steps.unfused})")
        return steps

    def _build_steps(self, key: PlanKey, op: str, tensors: tuple[TensorRef | None, ...], spec: Spec,
                     autotune: bool, stream: int) -> Steps:
        """`_plan`'s work, with the lock held: the problem's graph, or where no engine builds a fused
        convolution, its parts."""
        steps = self._plans.get(key)
        if steps is not None:
            return steps
        graph_spec = key[2]
        try:
            steps = Steps((self._graph_plan(key[0], graph_spec, tensors, autotune, stream),), (graph_spec,))
        except CudnnloadError as exc:
            y = tensors[-1]
            if not (isinstance(spec, ConvSpec) and spec.activation not in (None, "identity") and y is not None
                    and flat((y,))):
                raise
            without = dataclasses.replace(spec, activation=None)
            parts = (conv_graph(op, tensors, without), epilogue_graph(tensors, spec))
            plans: list[Plan] = []
            try:
                for part in parts:
                    plans.append(self._graph_plan(key[0], part, tensors, autotune, stream))
            except CudnnloadError as second:
                raise NotSupported(3000, NAME, major=9, detail=f"neither fused ({exc.message}) nor as the "
                                   f"convolution and then its activation ({second.message})") from None
            steps = Steps(tuple(plans), parts, exc.message)
            x, w = tensors[0], tensors[1]
            assert x is not None and w is not None
            log.info("%s: %s %s x%s w%s with %s runs as its parts, the convolution with its bias and then the "
                     "activation in place: %s", NAME, op, x.dtype, tuple(x.shape), tuple(w.shape), spec.activation,
                     exc.message)
        self._plans[key] = steps
        return steps

    def _graph_plan(self, device: int, graph_spec: GraphSpec, tensors: tuple[TensorRef | None, ...],
                    autotune: bool, stream: int) -> Plan:
        """The plan of one graph: remembered, heuristic or measured; the choice is remembered."""
        rt, g = self._runtime, self._graph_api
        assert rt is not None and g is not None
        state = rt.state()
        handle = rt.handle(state, device, stream)
        graph = self._graphs.get((device, graph_spec))
        if graph is None:
            graph = self._graphs[(device, graph_spec)] = build(g, graph_spec, handle)
        store = rt.choices(device)
        modes = "+".join(mode.name for mode in self._heuristics)
        tune = autotune and graph_spec.conv is not None  # an epilogue or activation has nothing worth timing
        persisted_as = ("autotune|" if tune else f"heuristic {modes}|") + graph_spec.text()
        plan = self._remembered(graph, handle, store.get(NAME, persisted_as))
        if plan is None:
            if tune:
                pointers = graph_spec.pointers(tensors, self._zero_bias(graph_spec, device))
                plan = self._tuned(graph, graph_spec, handle, state, device, stream, pointers)
            else:
                plan = self._first_working(graph, graph_spec, handle)
            store.put(NAME, persisted_as, plan.config.choice)
            if self._quick_start:
                self._remember_quick(graph, graph_spec, handle, store)
        return plan

    def _remember_quick(self, graph: OperationGraph, graph_spec: GraphSpec, handle: int, store: ChoiceStore
                        ) -> None:
        """Remember the problem's quick configuration too (once, with its first plan), so that a later
        process's `_quick_plan` asks no heuristics."""
        g = self._graph_api
        assert g is not None
        if store.get(NAME, _QUICK + graph_spec.text()) is not None:
            return
        try:
            self._quick_on(graph, graph_spec, handle, store).destroy(g)
        except CudnnloadError:
            return

    def _quick_on(self, graph: OperationGraph, graph_spec: GraphSpec, handle: int, store: ChoiceStore) -> Plan:
        """A quick plan on ``graph``: from the remembered quick configuration, else the first of
        `QUICK_HEURISTICS` that needs no run-time compilation (then remembered). CudnnloadError where none builds."""
        persisted_as = _QUICK + graph_spec.text()
        plan = self._remembered(graph, handle, store.get(NAME, persisted_as))
        if plan is None:
            plan = self._first_working(graph, graph_spec, handle, QUICK_HEURISTICS, precompiled=True)
            store.put(NAME, persisted_as, plan.config.choice)
        return plan

    def _warm_quick(self, key: PlanKey, op: str, tensors: tuple[TensorRef | None, ...], spec: Spec, stream: int,
                    before_own_plan: Callable[[], object]) -> None:
        """In a warm-up (`cudnnload.backends.warming`), with ``key`` claimed by this thread: run the problem
        once on its quick plan, so that other threads' first calls find it ready (its kernels loaded),
        then let the warm-up's other first-time work end, before the caller goes on to build the
        problem's own plan, whose first build spends ~70 ms in cuDNN's lazy initialization and would
        hold those up. `_plan` releases the claim once that plan is built. It leaves a spare cuDNN handle for
        the application's thread (`cudnnload.loading.handles.HandlePool.make_spare`)."""
        self._running_quick.add(key)  # the key is claimed by this thread: every call runs the quick plan now
        try:
            if op == "conv_forward":
                x, w, bias, y = tensors
                assert x is not None and w is not None and y is not None and isinstance(spec, ConvSpec)
                self.conv_forward(x, w, bias, y, spec, stream=stream)
            else:
                self._call(op, tensors, spec, False, stream)
            synchronize()
            assert self._runtime is not None
            self._runtime.pool.make_spare(key[0])  # the application's first call then takes it: no cudnnCreate
        except CudnnloadError as exc:
            log.debug("%s: no quick plan to warm: %s", NAME, exc)
        finally:
            self._running_quick.discard(key)
        before_own_plan()

    def _quick_plan(self, key: PlanKey, graph_spec: GraphSpec, device: int, stream: int) -> Plan | None:
        """A plan from `QUICK_HEURISTICS` (remembered like the others), on an operation graph of its own
        (the graphs of `_plans` belong to the lock's holder); None where none builds."""
        rt, g = self._runtime, self._graph_api
        assert rt is not None and g is not None
        with self._quick_lock.holding(f"building the quick plan of {graph_spec.text()}"):
            plan = self._quick.get(key)
            if plan is not None:
                return plan
            try:
                handle = rt.handle(rt.state(), device, stream)
                graph = build(g, graph_spec, handle)
            except CudnnloadError:
                return None
            self._quick_graphs.append(graph)
            try:
                plan = self._quick_on(graph, graph_spec, handle, rt.choices(device))
            except CudnnloadError:
                return None
            self._quick[key] = plan
            return plan

    def _remembered(self, graph: OperationGraph, handle: int, choice: dict[str, Any] | None) -> Plan | None:
        g = self._graph_api
        assert g is not None
        if choice is None:
            return None
        try:
            return make_plan(g, handle, config_from_choice(g, graph, choice))
        except (CudnnloadError, KeyError, TypeError, ValueError):
            return None  # from another cuDNN build, or damaged: ask again

    def _candidates(self, graph: OperationGraph, graph_spec: GraphSpec, modes: tuple[HeuristicMode, ...],
                    failures: list[str]) -> list[EngineConfig]:
        """The configurations of the heuristic ``modes``, in order, without repeats or ones the data rules out.
        A mode whose query fails adds its reason to ``failures``."""
        g = self._graph_api
        assert g is not None
        kept: list[EngineConfig] = []
        seen: set[tuple[int, Any]] = set()
        for mode in modes:
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

    def _first_working(self, graph: OperationGraph, graph_spec: GraphSpec, handle: int,
                       heuristics: tuple[HeuristicMode, ...] | None = None, *, precompiled: bool = False) -> Plan:
        """The first configuration of ``heuristics`` (default: the backend's) whose plan builds, then, for a
        graph without a convolution, its other engines by index with their default knobs; with
        ``precompiled``, none that compiles its kernel at run time. cuDNN 9.19's heuristics (A and FALLBACK)
        offered no configuration for a pointwise-only graph on an H100 (measured), though such a graph has
        engines (three on 9.28, each compiling at run time; read without a GPU): they are reached by index."""
        g = self._graph_api
        assert g is not None
        heuristics = heuristics or self._heuristics
        failures: list[str] = []
        candidates = self._candidates(graph, graph_spec, heuristics, failures)
        offered = len(candidates)
        if graph_spec.conv is None:  # (a convolution's graph has the heuristics' answer only; _build_steps runs
            tried = {(config.engine, config.knobs) for config in candidates}  # what they leave out as parts)
            candidates += self._by_index(graph, graph_spec, tried, failures)
        for index, config in enumerate(candidates):
            if precompiled and config.compiles:
                config.destroy(g)
                continue
            try:
                plan = make_plan(g, handle, config)
            except CudnnloadError as exc:
                failures.append(f"engine {config.engine}: {exc.reason}")
                continue
            for rest in candidates[index + 1:]:
                rest.destroy(g)
            return plan
        modes = ", ".join(mode.name for mode in heuristics)
        others = "" if graph_spec.conv is not None else f", nor any of the graph's {len(candidates) - offered} other"
        raise NotSupported(3000, "cudnnBackendFinalize(execution plan)", major=g.api.major,
                           detail=f"no engine configuration of the {offered} the heuristics ({modes}) offered"
                           f"{others} builds for {graph_spec.op}"
                           + (f"; {'; '.join(failures[:3])}" if failures else ""))

    def _by_index(self, graph: OperationGraph, graph_spec: GraphSpec, tried: set[tuple[int, Any]],
                  failures: list[str]) -> list[EngineConfig]:
        """Every engine of ``graph`` with its default knobs, except those in ``tried`` and those the data rules
        out (`plans.allowed`)."""
        g = self._graph_api
        assert g is not None
        try:
            count = engine_count(g, graph)
        except CudnnloadError as exc:
            failures.append(f"engine count: {exc.reason}")
            return []
        found = []
        for engine in range(count):
            if (engine, ()) in tried:
                continue
            try:
                config = config_from_choice(g, graph, {"engine": engine, "knobs": []})
            except CudnnloadError as exc:
                failures.append(f"engine {engine}: {exc.reason}")
                continue
            if allowed(graph_spec, config.notes):
                found.append(config)
            else:
                config.destroy(g)
        return found

    def _tuned(self, graph: OperationGraph, graph_spec: GraphSpec, handle: int, state: Any, device: int, stream: int,
               pointers: list[int]) -> Plan:
        """Time up to AUTOTUNE_CANDIDATES plans on the caller's data (``pointers``, in the graph's binding
        order; outputs get written); keep the fastest."""
        rt, g = self._runtime, self._graph_api
        assert rt is not None and g is not None and self._execute is not None
        plans: list[Plan] = []
        for config in self._candidates(graph, graph_spec, AUTOTUNE_HEURISTICS, []):
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
        uids = graph_spec.uids
        timed: list[tuple[float, int]] = []
        for index, plan in enumerate(plans):
            pack = variant_pack(g, uids, pointers, workspace)
            try:
                timed.append((self._time(state, device, stream, plan, pack), index))
            except CudnnloadError:
                timed.append((math.inf, index))
            finally:
                g.destroy(pack)
        best = min(timed)[1]
        for index, plan in enumerate(plans):
            if index != best:
                plan.destroy(g)
        return plans[best]

    def _time(self, state: ThreadState, device: int, stream: int, plan: Plan, pack: int) -> float:
        """Milliseconds per execution of ``plan``: AUTOTUNE_BATCH executions recorded into a CUDA graph and
        replayed, so that the host's ~10 µs per execute never leaves the GPU idle inside the timing (timing
        single executes measured host cost and picked slow engines for small convolutions); executed
        directly when the engine cannot be recorded."""
        rt, execute = self._runtime, self._execute
        assert rt is not None

        def direct(on: int) -> None:
            status = execute(rt.handle(state, device, on), plan.desc, pack)
            if status:
                check(status, "cudnnBackendExecute", rt.api)

        def batch(on: int) -> None:
            for _ in range(AUTOTUNE_BATCH):
                direct(on)

        direct(stream)  # loads the engine's kernels outside any recording
        try:
            graph = rt.record(state, device, batch)
        except CudnnloadError:
            return rt.time_ms(stream, lambda: direct(stream), AUTOTUNE_REPEATS)
        try:
            def replay() -> None:
                status = rt.graph_launch(graph, stream)
                if status:
                    raise rt.launch_error(status)

            rt.handle(state, device, stream)  # the context current again for the launches
            return rt.time_ms(stream, replay, AUTOTUNE_REPEATS) / AUTOTUNE_BATCH
        finally:
            rt.destroy_graph(graph)
