"""The at-load differential (bench/cudnn8_differential.py) on the test wheels' cuDNN 8 (8.5.0.96 cu11 beside cuBLAS
11.11 and NVRTC 11, 8.9.7.29 cu12 beside cuBLAS 12.9 and NVRTC 12.9): seeded layouts of what users do, each judged
against the real shim. Every probe verdict agrees with the model, every failing layout gets an error whose first fix
makes it work (or one only a person can take: no NVRTC anywhere), and no working layout gets an error. The releases
the test wheels lack (8.6 to 8.9.6) are run by hand with ``--wheels``: bench/results."""

from __future__ import annotations

import json
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


@pytest.mark.timeout_s(600)
def test_in_a_venv_no_nvrtc_anywhere_is_fixed_by_installing_its_wheel_and_linking_it(tmp_path: Path) -> None:
    """The same layouts in a venv's site-packages (``--venv``): where no NVRTC is on the machine, the first fix
    installs the NVRTC wheel of that CUDA with the venv's pip (which merges the ``nvidia`` folder, where ``pip
    --target`` would keep the one there) and links libnvrtc.so to it; applied, the calls get as far as the whole
    layout's. Seed 11's layouts 7 and 10 are such (cuDNN 8.5 beside cuBLAS 11.11, whose cuBLASLt opens
    libnvrtc.so as it loads: the shim aborts on the error it leaves)."""
    site_folder("cu11-8.5.0.96")
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in libcuda.so.1")
    out = tmp_path / "records.jsonl"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "cudnn8_differential.py"), "--seed", "11", "--count",
                           "20", "--venv", "--out", str(out)], capture_output=True, text=True, timeout=550,
                          check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "agrees with the model 20/20" in summary and "missed 0" in summary, summary
    assert "manual 0," in summary and "working, with an error said: 0 " in summary, summary
    records = [json.loads(line) for line in out.read_text().splitlines()]
    installed = [r for r in records if r["nvrtc"] == "none" and r.get("outcome") == "fixed"
                 and "-m pip install --ignore-installed --no-deps nvidia-cuda-nvrtc-cu11; then ln -sfn " in r["fix"]]
    assert len(installed) >= 2, [(r["index"], r["nvrtc"], r.get("outcome"), r.get("fix")) for r in records]
