"""The cudnn-legacy backend: cuDNN's legacy (descriptor) API through ctypes.

Convolution forward (with bias and activation), backward data and backward filter over 1, 2
or 3 spatial axes, NCHW or NHWC or any strided view, in float32 (TF32 on or off), float16,
bfloat16 and float64; activation forward and backward (sigmoid, relu, tanh, clipped relu,
elu, identity, swish). Heuristic algorithms by default, measured ones with ``autotune=True``,
both remembered on disk (`cudnnload.dispatch.algos`).

Loaded like any third-party plugin: cudnnload's pyproject.toml declares the entry point
``cudnn-legacy = "cudnnload_cudnn_legacy:register"`` in the group ``cudnnload.backends``.
"""

from __future__ import annotations

from cudnnload.dispatch.backends import Registry

from .backend import NAME, LegacyBackend

__all__ = ["LegacyBackend", "register"]


def register(registry: Registry) -> None:
    registry.add(NAME, LegacyBackend)
