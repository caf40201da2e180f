"""What the GPU tests share: skip unless the driver shows enough devices, find the installed cuDNN, run a child.

GPU tests run their cuDNN work in child processes: the CPU tests of the same
session already map the 9.28 cu12 set into the test process, and cuDNN 9
releases share sonames (tests/_wheels.py).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from cudnnload.loading.gpu import GpuFacts, gpu_facts
from cudnnload.resolve.catalog import classify

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


def run_child(script: str, *args: str, environ: dict[str, str] | None = None) -> Any:
    """Run ``script`` in a fresh interpreter that imports this checkout; its last stdout line, as JSON."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    child = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                           timeout=300, check=False)
    if child.returncode:
        pytest.fail(f"child exited with {child.returncode}:\n{child.stderr}")
    return json.loads(child.stdout.strip().splitlines()[-1])
