"""Engine configurations, execution plans and variant packs (cudnn-facts §5, steps 7-9).

An engine configuration is an engine (its global index in the graph's engine list) and its
knob choices; that pair is what `cudnnload.dispatch.algos` remembers, and `config_from_choice` rebuilds
it in a new process without asking the heuristics. Configurations whose numerical notes the
data rules out are skipped, as PyTorch's cuDNN v8 path does: for float32 data, engines that
down-convert inputs, and tensor-core (TF32) engines unless the caller allows TF32.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cudnnload.loading.capi import DataType

from .backend_api import Attribute as A
from .backend_api import AttributeType as T
from .backend_api import BehaviorNote, GraphApi, HeuristicMode, NumericalNote
from .backend_api import DescriptorType as D
from .graphs import GraphSpec, OperationGraph

Knobs = tuple[tuple[int, int], ...]  # (cudnnBackendKnobType_t, value) pairs

# Room for attribute arrays where cuDNN will not say their length: cudnnBackendKnobType_t has
# CUDNN_KNOB_TYPE_COUNTS = 46 kinds and cudnnBackendNumericalNote_t TYPE_COUNT = 10 (9.28 headers).
MAX_KNOBS = 64
MAX_NOTES = 16
MAX_CONFIGS = 256


@dataclass
class EngineConfig:
    """A finalized ENGINECFG descriptor, what it is made of, and the descriptors it owns."""

    desc: int
    engine: int  # CUDNN_ATTR_ENGINE_GLOBAL_INDEX
    knobs: Knobs
    notes: tuple[int, ...]  # cudnnBackendNumericalNote_t values
    owned: list[int]
    behavior: tuple[int, ...] = ()  # cudnnBackendBehaviorNote_t values

    @property
    def compiles(self) -> bool:
        """Whether finalizing a plan compiles the engine's kernel (NVRTC): a first call of 100 ms or more."""
        return BehaviorNote.RUNTIME_COMPILATION in self.behavior

    @property
    def choice(self) -> dict[str, Any]:
        """What `cudnnload.dispatch.algos` stores for it."""
        return {"engine": self.engine, "knobs": [list(knob) for knob in self.knobs]}

    def destroy(self, g: GraphApi) -> None:
        g.destroy_all(self.owned)


@dataclass
class Plan:
    """A finalized execution plan and the engine configuration it runs.

    Threads share plans (a warm-up builds the plan the application's threads then run), but run them one
    at a time: cuDNN execution plans are "not guaranteed to be thread safe across all engines" (cuDNN's
    answer quoted in PyTorch's aten/src/ATen/native/cudnn/Conv_v8.cpp, which keeps its plans per thread
    for that reason). ``executing`` is held around each ``cudnnBackendExecute`` of the plan, direct or
    into a CUDA graph being recorded; a recorded graph's replay does not touch the plan.
    """

    desc: int
    workspace: int  # bytes (CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)
    config: EngineConfig
    executing: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def destroy(self, g: GraphApi) -> None:
        g.destroy(self.desc)
        self.config.destroy(g)


def allowed(spec: GraphSpec, notes: Sequence[int]) -> bool:
    """Whether an engine with these numerical notes may run ``spec``'s data. A graph without a convolution
    has no products for TF32 to round: its TENSOR_CORE note (on two of the three engines cuDNN 9.28 offers
    for a pointwise graph, read without a GPU) does not matter."""
    if spec.tensors[0].dtype != DataType.FLOAT:
        return True
    if NumericalNote.DOWN_CONVERT_INPUTS in notes:
        return False
    return spec.allow_tf32 or spec.conv is None or NumericalNote.TENSOR_CORE not in notes


def heuristic_configs(g: GraphApi, graph: OperationGraph, mode: HeuristicMode) -> list[EngineConfig]:
    """The configurations cuDNN's heuristics rank for ``graph``, best first (cudnn-facts §5, step 7).
    The caller owns them (`EngineConfig.destroy`)."""
    heuristics = g.create(D.ENGINEHEUR)
    try:
        g.set(heuristics, A.ENGINEHEUR_OPERATION_GRAPH, T.BACKEND_DESCRIPTOR, [graph.desc])
        g.set(heuristics, A.ENGINEHEUR_MODE, T.HEUR_MODE, [mode])
        g.finalize(heuristics, f"engine heuristics {mode.name}")
        count = g.count(heuristics, A.ENGINEHEUR_RESULTS, T.BACKEND_DESCRIPTOR, MAX_CONFIGS)
        descs = g.get_descriptors(heuristics, A.ENGINEHEUR_RESULTS, D.ENGINECFG, count)
    finally:
        g.destroy(heuristics)
    configs: list[EngineConfig] = []
    try:
        for desc in descs:
            configs.append(describe(g, desc))
    except Exception:
        for config in configs:
            config.destroy(g)
        for desc in descs[len(configs) + 1:]:  # describe() destroyed the one it failed on
            g.destroy(desc)
        raise
    return configs


def describe(g: GraphApi, desc: int) -> EngineConfig:
    """Read a configuration's engine index, knob choices and numerical notes; it then owns ``desc``."""
    owned = [desc]
    try:
        (engine,) = g.get_descriptors(desc, A.ENGINECFG_ENGINE, D.ENGINE, 1)
        owned.append(engine)
        index = int(g.get(engine, A.ENGINE_GLOBAL_INDEX, T.INT64, 1)[0])
        notes, behavior = _notes(g, engine), _behavior(g, engine)
        choices = g.get_descriptors(desc, A.ENGINECFG_KNOB_CHOICES, D.KNOB_CHOICE,
                                    g.count(desc, A.ENGINECFG_KNOB_CHOICES, T.BACKEND_DESCRIPTOR, MAX_KNOBS))
        owned.extend(choices)
        knobs = tuple((int(g.get(c, A.KNOB_CHOICE_KNOB_TYPE, T.KNOB_TYPE, 1)[0]),
                       int(g.get(c, A.KNOB_CHOICE_KNOB_VALUE, T.INT64, 1)[0])) for c in choices)
    except Exception:
        g.destroy_all(owned)
        raise
    return EngineConfig(desc, index, knobs, notes, owned, behavior)


def _notes(g: GraphApi, engine: int) -> tuple[int, ...]:
    count = g.count(engine, A.ENGINE_NUMERICAL_NOTE, T.NUMERICAL_NOTE, MAX_NOTES)
    return tuple(int(note) for note in g.get(engine, A.ENGINE_NUMERICAL_NOTE, T.NUMERICAL_NOTE, count))


def _behavior(g: GraphApi, engine: int) -> tuple[int, ...]:
    count = g.count(engine, A.ENGINE_BEHAVIOR_NOTE, T.BEHAVIOR_NOTE, MAX_NOTES)
    return tuple(int(note) for note in g.get(engine, A.ENGINE_BEHAVIOR_NOTE, T.BEHAVIOR_NOTE, count))


def config_from_choice(g: GraphApi, graph: OperationGraph, choice: dict[str, Any]) -> EngineConfig:
    """Rebuild a remembered configuration: engine by global index, then its knob choices."""
    engine_index = int(choice["engine"])
    knobs: Knobs = tuple((int(kind), int(value)) for kind, value in choice["knobs"])
    owned: list[int] = []

    def make(kind: D) -> int:
        return g.create_owned(kind, owned)

    try:
        engine = make(D.ENGINE)
        g.set(engine, A.ENGINE_OPERATION_GRAPH, T.BACKEND_DESCRIPTOR, [graph.desc])
        g.set(engine, A.ENGINE_GLOBAL_INDEX, T.INT64, [engine_index])
        g.finalize(engine, f"engine {engine_index}")
        notes, behavior = _notes(g, engine), _behavior(g, engine)
        choices = []
        for kind, value in knobs:
            knob = make(D.KNOB_CHOICE)
            g.set(knob, A.KNOB_CHOICE_KNOB_TYPE, T.KNOB_TYPE, [kind])
            g.set(knob, A.KNOB_CHOICE_KNOB_VALUE, T.INT64, [value])
            g.finalize(knob, "knob choice")
            choices.append(knob)
        config = make(D.ENGINECFG)
        g.set(config, A.ENGINECFG_ENGINE, T.BACKEND_DESCRIPTOR, [engine])
        if choices:
            g.set(config, A.ENGINECFG_KNOB_CHOICES, T.BACKEND_DESCRIPTOR, choices)
        g.finalize(config, f"engine config {engine_index}")
    except Exception:
        g.destroy_all(owned)
        raise
    owned.remove(config)
    return EngineConfig(config, engine_index, knobs, notes, [config, *owned], behavior)


def make_plan(g: GraphApi, handle: int, config: EngineConfig) -> Plan:
    """Finalize an execution plan for ``config``; on failure the configuration is destroyed too."""
    plan = g.create(D.EXECUTION_PLAN)
    try:
        g.set(plan, A.EXECUTION_PLAN_HANDLE, T.HANDLE, [handle])
        g.set(plan, A.EXECUTION_PLAN_ENGINE_CONFIG, T.BACKEND_DESCRIPTOR, [config.desc])
        g.finalize(plan, f"execution plan (engine {config.engine})")
        workspace = int(g.get(plan, A.EXECUTION_PLAN_WORKSPACE_SIZE, T.INT64, 1)[0])
    except Exception:
        g.destroy(plan)
        config.destroy(g)
        raise
    return Plan(plan, workspace, config)


def variant_pack(g: GraphApi, uids: Sequence[int], pointers: Sequence[int], workspace: int) -> int:
    """A finalized variant pack binding ``pointers`` to the non-virtual tensors ``uids`` (step 9)."""
    pack = g.create(D.VARIANT_PACK)
    try:
        g.set(pack, A.VARIANT_PACK_UNIQUE_IDS, T.INT64, uids)
        g.set(pack, A.VARIANT_PACK_DATA_POINTERS, T.VOID_PTR, pointers)
        g.set(pack, A.VARIANT_PACK_WORKSPACE, T.VOID_PTR, [workspace or None])
        g.finalize(pack, "variant pack")
    except Exception:
        g.destroy(pack)
        raise
    return pack
