"""cudnnload: find, inspect, preload and diagnose NVIDIA cuDNN.

The public API is what this module re-exports; everything else is internal.
Names are imported on first use, so ``import cudnnload`` stays cheap.
"""

from __future__ import annotations

import importlib

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "find": "cudnnload.discovery",
    "inspect": "cudnnload.discovery",
    "Inventory": "cudnnload.discovery",
    "Install": "cudnnload.discovery",
    "Candidate": "cudnnload.discovery",
    "Finding": "cudnnload.findings",
    "Step": "cudnnload.discovery",
    "which": "cudnnload.which",
    "Which": "cudnnload.which",
    "read_elf": "cudnnload.elf",
    "ElfInfo": "cudnnload.elf",
    "GpuCode": "cudnnload.fatbin",
    "Release": "cudnnload.catalog",
    "CudnnloadError": "cudnnload.errors",
    "ElfError": "cudnnload.errors",
    "UsageError": "cudnnload.errors",
    "LoadError": "cudnnload.errors",
    "to_jsonable": "cudnnload.report",
    "load": "cudnnload.loader",
    "preload": "cudnnload.loader",
    "Loaded": "cudnnload.loader",
    "start": "cudnnload.starting",
    "Starting": "cudnnload.starting",
    "Problem": "cudnnload.warmup",
    "Activation": "cudnnload.warmup",
    "DeviceBuffer": "cudnnload.warmup",
    "doctor": "cudnnload.doctor",
    "conv": "cudnnload.dispatch",
    "conv_backward_data": "cudnnload.dispatch",
    "conv_backward_filter": "cudnnload.dispatch",
    "activation": "cudnnload.dispatch",
    "activation_backward": "cudnnload.dispatch",
    "Dispatcher": "cudnnload.dispatch",
    "TensorRef": "cudnnload.tensors",
    "ConvSpec": "cudnnload.backends",
    "ActivationSpec": "cudnnload.backends",
    "Backend": "cudnnload.backends",
    "BackendStatus": "cudnnload.backends",
    "Registry": "cudnnload.backends",
    "list_backends": "cudnnload.backends",
    "ArgumentError": "cudnnload.dispatch_errors",
    "ShapeError": "cudnnload.dispatch_errors",
    "DtypeError": "cudnnload.dispatch_errors",
    "DeviceError": "cudnnload.dispatch_errors",
    "UnsupportedError": "cudnnload.dispatch_errors",
}

__all__ = [
    "Activation", "ActivationSpec", "ArgumentError", "Backend", "BackendStatus", "Candidate", "ConvSpec",
    "CudnnloadError", "DeviceBuffer", "DeviceError", "Dispatcher", "DtypeError", "ElfError", "ElfInfo", "Finding",
    "GpuCode", "Install", "Inventory", "LoadError", "Loaded", "Problem", "Registry", "Release", "ShapeError",
    "Starting", "Step", "TensorRef", "UnsupportedError", "UsageError", "Which", "activation", "activation_backward",
    "conv", "conv_backward_data", "conv_backward_filter", "doctor", "find", "inspect", "list_backends", "load",
    "preload", "read_elf", "start", "to_jsonable", "which",
]

if TYPE_CHECKING:
    from cudnnload.backends import ActivationSpec, Backend, BackendStatus, ConvSpec, Registry, list_backends
    from cudnnload.catalog import Release
    from cudnnload.discovery import Candidate, Install, Inventory, Step, find, inspect
    from cudnnload.dispatch import (
        Dispatcher,
        activation,
        activation_backward,
        conv,
        conv_backward_data,
        conv_backward_filter,
    )
    from cudnnload.dispatch_errors import ArgumentError, DeviceError, DtypeError, ShapeError, UnsupportedError
    from cudnnload.doctor import doctor
    from cudnnload.elf import ElfInfo, read_elf
    from cudnnload.errors import CudnnloadError, ElfError, LoadError, UsageError
    from cudnnload.fatbin import GpuCode
    from cudnnload.findings import Finding
    from cudnnload.loader import Loaded, load, preload
    from cudnnload.report import to_jsonable
    from cudnnload.starting import Starting, start
    from cudnnload.tensors import TensorRef
    from cudnnload.warmup import Activation, DeviceBuffer, Problem
    from cudnnload.which import Which, which


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cudnnload' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
