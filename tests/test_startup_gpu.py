"""The real PyTorch on the GPU machine, in a Python that dies in its own start-up: a `.pth` line of a venv that
reaches the machine's site-packages dlopens the wheel's graph cut short, and every start of that Python dies of SIGBUS
before torch is imported. `doctor --python` and `doctor -- python PROGRAM` name the line, say torch cannot run,
and take the line out; applied, torch's convolution runs on the GPU (session 44's start-up death, against the
real framework rather than a CPU check of its cuDNN version).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu import REPO, require_gpus
from tests.test_frameworks_gpu import TORCH_PROGRAM, this_machine

pytestmark = pytest.mark.gpu


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


def _doctor(env: dict[str, str], *args: str) -> tuple[int, dict]:
    done = _run([sys.executable, "-m", "cudnnload", "doctor", "--json", *args], env)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)["result"]


def test_torchs_python_that_dies_in_a_pth_line_is_repaired_and_its_convolution_runs(tmp_path: Path) -> None:
    require_gpus()
    machine = this_machine()
    if isinstance(machine, str):
        pytest.skip(machine)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # the frameworks' site-packages (itself a venv's on the GPU machine: --system-site-packages would not reach
    # it) through a path line, read after the one that kills the start-up
    (site / "zz-frameworks.pth").write_text(f"{machine.site}\n")
    cut = tmp_path / "cut" / "libcudnn_graph.so.9"
    cut.parent.mkdir()
    with open(machine.wheel / "libcudnn_graph.so.9", "rb") as whole:
        cut.write_bytes(whole.read(1 << 20))
    line = f"import ctypes; ctypes.CDLL({str(cut)!r})"
    pth = site / "000-gpu-env.pth"
    pth.write_text(line + "\n")
    program = tmp_path / "torch_conv.py"
    program.write_text(TORCH_PROGRAM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}

    dies = _run([str(python), str(program)], env)
    assert dies.returncode == -7 and "conv ok" not in dies.stdout, (dies.returncode, dies.stderr[-500:])

    status, report = _doctor(env, "--python", str(python))
    assert status == 1
    [dead] = [f for f in report["findings"] if f["code"] == "startup-failed"]
    assert f"{pth} line 1" in dead["message"] and "SIGBUS" in dead["message"], dead
    assert dead["fix"]["actions"] == [{"do": "remove-line", "path": str(pth), "line": line}]
    says = {use["framework"]: use for use in report.get("frameworks", [])}
    assert says["torch"]["works"] is False, says  # its blocker: the start-up it cannot get past

    status, command = _doctor(env, "--", str(python), str(program))
    assert status == 1
    first = next(f for f in command["findings"] if f["severity"] == "error")
    assert {"do": "remove-line", "path": str(pth), "line": line} in first["fix"]["actions"], first

    pth.write_text("")  # the fix, applied
    ran = _run([str(python), str(program)], env)
    assert ran.returncode == 0 and "conv ok" in ran.stdout, ran.stderr[-1500:]
    status, again = _doctor(env, "--python", str(python))
    assert status == 0 and not [f for f in again["findings"] if f["severity"] == "error"], again["findings"]
    assert {use["framework"]: use["works"] for use in again["frameworks"]}.get("torch") is True, again["frameworks"]
