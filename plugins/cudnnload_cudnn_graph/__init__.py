"""The cudnn-graph backend: convolutions through cuDNN's graph (backend) API.

Convolution forward with bias and activation fused into one operation graph (or, where no engine
fuses them, the convolution and then the activation), backward data and backward filter; every
activation forward and backward as a pointwise graph; float32 (TF32 on or off), float16 and
bfloat16; NCHW, NHWC or any strided view; 1, 2 or 3 spatial axes. Plans come from heuristics
(mode A, then FALLBACK) or, with ``autotune=True``, from timing the candidates; the chosen engine
configuration is remembered on disk (`cudnnload.dispatch.algos`). Repeated calls on the same tensors
reuse a finalized variant pack, then a recorded CUDA graph.

Loaded like any third-party plugin: cudnnload's pyproject.toml declares the entry point
``cudnn-graph = "cudnnload_cudnn_graph:register"`` in the group ``cudnnload.backends``.
"""

from __future__ import annotations

from cudnnload.dispatch.backends import Registry

from .backend import NAME, GraphBackend

__all__ = ["GraphBackend", "register"]


def register(registry: Registry) -> None:
    registry.add(NAME, GraphBackend)
