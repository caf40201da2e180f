"""cudnnload: find, inspect, preload and diagnose NVIDIA cuDNN.

The public API is what this module re-exports (`_EXPORTS`); everything else is internal, in the stage folders
(resolve, judge, loading, dispatch, diagnose). Names are imported on first use, so ``import cudnnload`` stays
cheap. A plugin imports the interface it implements from here (``from cudnnload import ConvSpec, TensorRef``).
"""

from __future__ import annotations

import importlib
import os as _os
import signal as _signal
import sys as _sys


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C while the ``cudnnload`` command's modules load, before its `cli.main` can catch it: one line, exit 130
    (nothing is started yet), never Python's traceback."""
    _os.write(2, b"cudnnload: error: interrupted\n")
    _os._exit(130)


def _is_the_command() -> bool:
    """Whether this process is the ``cudnnload`` command (its console script, or ``python -m cudnnload`` once runpy
    has made it ``__main__``), not a program that imports cudnnload (a test runner, an application)."""
    main = _sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return (spec is not None and spec.name == "cudnnload.__main__") or \
        _os.path.basename(getattr(main, "__file__", None) or "") == "cudnnload"


def _catch_early_interrupt() -> None:
    """`_interrupted_while_starting` for SIGINT, in the command's own process only, where Python's default is still
    in place (a SIGINT ignored or handled by whoever started it stays so)."""
    if _is_the_command() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)


_catch_early_interrupt()  # the console script: from its first module on

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "find": "cudnnload.diagnose.inventory",
    "inspect": "cudnnload.diagnose.inventory",
    "Inventory": "cudnnload.resolve.discovery",
    "JudgedInventory": "cudnnload.judge.judged",
    "Judged": "cudnnload.judge.judged",
    "Install": "cudnnload.resolve.discovery",
    "Candidate": "cudnnload.resolve.discovery",
    "Finding": "cudnnload.verdicts",
    "Fix": "cudnnload.verdicts",
    "Action": "cudnnload.verdicts",
    "Subject": "cudnnload.verdicts",
    "Code": "cudnnload.codes",
    "Severity": "cudnnload.codes",
    "Effect": "cudnnload.codes",
    "Step": "cudnnload.resolve.discovery",
    "which": "cudnnload.diagnose.which",
    "Which": "cudnnload.judge.which",
    "read_elf": "cudnnload.resolve.elf",
    "ElfInfo": "cudnnload.resolve.elf",
    "GpuCode": "cudnnload.resolve.fatbin",
    "Release": "cudnnload.resolve.catalog",
    "CudnnloadError": "cudnnload.errors",
    "ElfError": "cudnnload.errors",
    "UsageError": "cudnnload.errors",
    "LoadError": "cudnnload.errors",
    "to_jsonable": "cudnnload.report",
    "load": "cudnnload.dispatch.warmup:preload",
    "preload": "cudnnload.dispatch.warmup",
    "Loaded": "cudnnload.loading.loader",
    "run_environment": "cudnnload.loading.pin",
    "Pinned": "cudnnload.loading.pin",
    "start": "cudnnload.dispatch.starting",
    "Starting": "cudnnload.dispatch.starting",
    "Problem": "cudnnload.dispatch.problems",
    "Activation": "cudnnload.dispatch.problems",
    "DeviceBuffer": "cudnnload.dispatch.warmup",
    "doctor": "cudnnload.diagnose.doctor",
    "conv": "cudnnload.dispatch.dispatcher",
    "conv_backward_data": "cudnnload.dispatch.dispatcher",
    "conv_backward_filter": "cudnnload.dispatch.dispatcher",
    "activation": "cudnnload.dispatch.dispatcher",
    "activation_backward": "cudnnload.dispatch.dispatcher",
    "Dispatcher": "cudnnload.dispatch.dispatcher",
    "TensorRef": "cudnnload.dispatch.tensors",
    "ConvSpec": "cudnnload.dispatch.backends",
    "ActivationSpec": "cudnnload.dispatch.backends",
    "Backend": "cudnnload.dispatch.backends",
    "BackendStatus": "cudnnload.dispatch.backends",
    "Registry": "cudnnload.dispatch.backends",
    "list_backends": "cudnnload.dispatch.backends",
    "ArgumentError": "cudnnload.dispatch.errors",
    "ShapeError": "cudnnload.dispatch.errors",
    "DtypeError": "cudnnload.dispatch.errors",
    "DeviceError": "cudnnload.dispatch.errors",
    "UnsupportedError": "cudnnload.dispatch.errors",
}

__all__ = [
    "Action", "Activation", "ActivationSpec", "ArgumentError", "Backend", "BackendStatus", "Candidate", "Code",
    "ConvSpec", "CudnnloadError", "DeviceBuffer", "DeviceError", "Dispatcher", "DtypeError", "Effect", "ElfError",
    "ElfInfo", "Finding", "Fix", "Severity", "Subject", "GpuCode", "Install", "Inventory", "Judged", "JudgedInventory",
    "LoadError", "Loaded", "Pinned", "Problem", "Registry", "Release",
    "ShapeError", "Starting", "Step", "TensorRef", "UnsupportedError", "UsageError", "Which", "activation",
    "activation_backward", "conv", "conv_backward_data", "conv_backward_filter", "doctor", "find", "inspect",
    "list_backends", "load", "preload", "read_elf", "run_environment", "start", "to_jsonable", "which",
]

if TYPE_CHECKING:
    from cudnnload.codes import Code, Effect, Severity
    from cudnnload.diagnose.doctor import doctor
    from cudnnload.diagnose.inventory import find, inspect
    from cudnnload.diagnose.which import which
    from cudnnload.dispatch.backends import ActivationSpec, Backend, BackendStatus, ConvSpec, Registry, list_backends
    from cudnnload.dispatch.dispatcher import (
        Dispatcher,
        activation,
        activation_backward,
        conv,
        conv_backward_data,
        conv_backward_filter,
    )
    from cudnnload.dispatch.errors import ArgumentError, DeviceError, DtypeError, ShapeError, UnsupportedError
    from cudnnload.dispatch.problems import Activation, Problem
    from cudnnload.dispatch.starting import Starting, start
    from cudnnload.dispatch.tensors import TensorRef
    from cudnnload.dispatch.warmup import DeviceBuffer, preload
    from cudnnload.dispatch.warmup import preload as load
    from cudnnload.errors import CudnnloadError, ElfError, LoadError, UsageError
    from cudnnload.judge.judged import Judged, JudgedInventory
    from cudnnload.judge.which import Which
    from cudnnload.loading.loader import Loaded
    from cudnnload.loading.pin import Pinned, run_environment
    from cudnnload.report import to_jsonable
    from cudnnload.resolve.catalog import Release
    from cudnnload.resolve.discovery import Candidate, Install, Inventory, Step
    from cudnnload.resolve.elf import ElfInfo, read_elf
    from cudnnload.resolve.fatbin import GpuCode
    from cudnnload.verdicts import Action, Finding, Fix, Subject


def __getattr__(name: str) -> object:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'cudnnload' has no attribute {name!r}")
    module, _, attribute = where.partition(":")  # "module" or "module:attribute it is exported as"
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value
