"""CUDA 12 and CUDA 13 cuDNN wheels in one environment (issue 33 item 3): nvidia-cudnn-cu12 and nvidia-cudnn-cu13
write the same files under nvidia/cudnn/lib, so the one installed last wins; doctor says which distribution's
bytes are on disk, and its fix (the other uninstalled first, then the one kept put back whole), applied with pip,
leaves one whole cuDNN. Both install orders, with the real wheels and the venv's own pip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.wheels import cache_root, python_path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = {"cu12": ("nvidia_cudnn_cu12-9.28.0.42-", "nvidia_cublas_cu12-12.9.1.4-"),
          "cu13": ("nvidia_cudnn_cu13-9.28.0.42-", "nvidia_cublas-13.5.1.27-")}
pytestmark = [pytest.mark.slow, pytest.mark.wheels, pytest.mark.timeout_s(600)]


def wheel(stem: str) -> Path:
    found = sorted((cache_root() / "wheels").glob(f"{stem}*.whl"))
    if not found:
        pytest.skip(f"{stem} is not in {cache_root() / 'wheels'}: run `make wheels`")
    return found[0]


def pip(python: Path, *args: str) -> None:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert done.returncode == 0, done.stderr[-2000:]


def doctor(python: Path, tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "--python", str(python)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)["result"]


@pytest.mark.parametrize(("first", "last"), [("cu12", "cu13"), ("cu13", "cu12")])
def test_the_cuda_12_and_13_wheels_in_one_venv_are_judged_and_the_fix_leaves_one_whole(
        first: str, last: str, tmp_path: Path) -> None:
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    for tag in (first, last):  # each with its cuBLAS, in this order: the last one's files are on disk
        pip(python, "install", "--no-index", "--no-deps", *(str(wheel(stem)) for stem in WHEELS[tag]))
    report = doctor(python, tmp_path)
    conflict = next(f for f in report["findings"] if f["code"] == "record-conflict")
    kept = f"nvidia-cudnn-{last}"
    assert [a["do"] for a in conflict["fix"]["actions"]] == ["pip-uninstall", "pip-install"]
    uninstall, reinstall = conflict["fix"]["actions"]
    assert uninstall["requirements"] == [f"nvidia-cudnn-{first}"] and uninstall["python"] == str(python)
    assert reinstall["requirements"] == [f"{kept}==9.28.0.42"] and "--force-reinstall" in reinstall["options"]
    # the fix, applied with the venv's own pip from the cached wheels
    pip(python, "uninstall", "-y", *uninstall["requirements"])
    pip(python, "install", "--no-index", "--find-links", str(cache_root() / "wheels"), *reinstall["options"],
        *reinstall["requirements"])
    again = doctor(python, tmp_path)
    assert not any(f["code"] == "record-conflict" for f in again["findings"])
    assert again["distribution"] == f"{kept} 9.28.0.42" and again["release"] == "9.28.0"
    assert not [f for f in again["findings"] if f["severity"] == "error" and f["code"] not in ("no-driver",)]
