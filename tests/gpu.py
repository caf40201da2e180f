"""What the GPU tests share: skip unless the driver shows enough devices, find the installed cuDNN, run a child.

GPU tests run their cuDNN work in child processes: the CPU tests of the same
session already map the 9.28 cu12 set into the test process, and cuDNN 9
releases share sonames (tests/_wheels.py).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from cudnnload.loading.gpu import gpu_facts
from cudnnload.resolve.catalog import classify
from cudnnload.resolve.hardware import GpuFacts

REPO = Path(__file__).resolve().parents[1]

# The wheels a GPU machine is expected to have (the CUDA 13 build first), as pip names them.
CUDNN_DISTRIBUTIONS = ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12")


@functools.cache
def _facts() -> GpuFacts:
    return gpu_facts()


def require_gpus(count: int = 1) -> GpuFacts:
    """The driver's facts; skips the test, saying why, unless it shows at least ``count`` devices."""
    facts = _facts()
    if len(facts.devices) < count:
        why = facts.reason or f"the driver shows {len(facts.devices)}"
        pytest.skip(f"needs {count} visible NVIDIA GPU(s): {why}")
    return facts


def installed_cudnn() -> tuple[Path, int]:
    """The shim of the installed nvidia-cudnn-cu13 (else -cu12) wheel, and its major; skips when neither is."""
    for name in CUDNN_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            lib = classify(PurePosixPath(str(file)).name)
            if lib is not None and lib.key == "shim":
                return Path(str(dist.locate_file(file))), lib.major
    pytest.skip(f"none of {', '.join(CUDNN_DISTRIBUTIONS)} is installed in this Python")


def run_child(script: str, *args: str, environ: dict[str, str] | None = None, timeout: float = 50.0) -> Any:
    """Run ``script`` in a fresh interpreter that imports this checkout; its last stdout line, as JSON.

    A child still running after ``timeout`` seconds (keep it under the test's watchdog, tests/conftest.py)
    is sent SIGABRT, on which faulthandler prints the stack of each of its threads, and the test fails
    showing them: where it waits, not only that it did.
    """
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    env["PYTHONFAULTHANDLER"] = "1"
    child = subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGABRT)
        try:
            out, err = child.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # not even faulthandler got to run
            child.kill()
            out, err = child.communicate()
        pytest.fail(f"child still running after {timeout:g} s; stopped with SIGABRT, its stderr:\n{err[-8000:]}")
    except BaseException:  # the test's watchdog, or Ctrl-C: the child must not outlive the test
        child.kill()
        child.communicate()
        raise
    if child.returncode:
        pytest.fail(f"child exited with {child.returncode}:\n{err}")
    return json.loads(out.strip().splitlines()[-1])


def call_in_child(function: str, *args: str, environ: dict[str, str] | None = None, timeout: float = 50.0) -> Any:
    """``function`` ("module:name") of this checkout, with the in-tree plugins importable, called with ``args``
    in a fresh interpreter (`run_child`): what it prints last, as JSON."""
    module, _, name = function.partition(":")
    script = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/plugins']; "
              f"from {module} import {name}; {name}(*sys.argv[2:])")
    return run_child(script, str(REPO), *args, environ=environ, timeout=timeout)
