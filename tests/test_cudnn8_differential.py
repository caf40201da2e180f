"""The at-load differential (bench/cudnn8_differential.py) on the test wheels' cuDNN 8 (8.5.0.96 cu11 beside cuBLAS
11.11 and NVRTC 11, 8.9.7.29 cu12 beside cuBLAS 12.9 and NVRTC 12.9): seeded layouts of what users do, each judged
against the real shim. Every probe verdict agrees with the model, every failing layout gets an error whose first fix
makes it work (or one only a person can take: no NVRTC anywhere), and no working layout gets an error. The releases
the test wheels lack (8.6 to 8.9.6) are run by hand with ``--wheels``: bench/results."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.wheels import site_folder

pytestmark = pytest.mark.wheels
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout_s(900)
def test_seeded_cudnn8_layouts_agree_with_the_real_shim_and_their_first_fixes_work() -> None:
    site_folder("cu11-8.5.0.96")  # skips without the test wheels
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in libcuda.so.1")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "cudnn8_differential.py"), "--seed", "7", "--count",
                           "40"], capture_output=True, text=True, timeout=850, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "agrees with the model 40/40" in summary and "missed 0" in summary, summary
    assert "working, with an error said: 0 " in summary, summary
    assert "fixed by doctor's first fix 0," not in summary, summary  # the seed draws failing layouts that get fixed
