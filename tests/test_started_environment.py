"""The loader's variables are what the process was started with: a sitecustomize (or a .pth line) that sets
``os.environ["LD_PRELOAD"]`` or ``LD_LIBRARY_PATH`` changes nothing for the loads of a program started from the same
shell (ld.so read them at its start), so it must not reach the program `cudnnload run` and `doctor --` start, nor
doctor's model. Before, it did: the program ran with a preload it never has without cudnnload."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SHOW = 'echo "[$LD_PRELOAD][$LD_LIBRARY_PATH]"'


@pytest.fixture
def startup(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "startup"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text('import os\nos.environ["LD_PRELOAD"] = "/nonexistent/planted.so"\n'
                                             'os.environ["LD_LIBRARY_PATH"] = "/nonexistent/lib"\n')
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
    return {**env, "PYTHONPATH": os.pathsep.join([str(folder), str(root)]), "CUDNNLOAD_NO_CACHE": "1"}


def _cudnnload(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudnnload", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_run_starts_the_program_with_the_loader_variables_the_shell_gave(startup: dict[str, str]) -> None:
    done = _cudnnload("run", "--", "sh", "-c", SHOW, env=startup)
    assert done.stdout.splitlines()[0] == "[][]", done
    assert "planted.so" not in done.stderr
    kept = _cudnnload("run", "--", "sh", "-c", SHOW, env={**startup, "LD_LIBRARY_PATH": "/from/the/shell"})
    assert kept.stdout.splitlines()[0] == "[][/from/the/shell]", kept


def test_doctor_runs_the_command_with_them_too(startup: dict[str, str]) -> None:
    done = _cudnnload("doctor", "--", "sh", "-c", SHOW, env=startup)
    assert "[][]" in done.stdout and "planted.so" not in done.stdout + done.stderr, done
