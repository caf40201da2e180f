"""A program of no Python (C, linked against ``libcudnn.so.8``) on a machine with no cuDNN it can find, and no Python
environment active: ld.so stops it ("error while loading shared libraries: libcudnn.so.8: cannot open shared
object file"). doctor said, in the target form, ``python -m pip install 'nvidia-cudnn-cu12>=8,<9'`` (into whichever
Python that is, where the program never looks), and in the command form that nothing of cuDNN's loading failed
(the linker's log ends inside that lookup). Now both forms give the wheel a folder of its own and put its library
folder on LD_LIBRARY_PATH; the fix, applied (the pip install done from the unpacked wheel), makes the program run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.wheels import python_path, site_folder

ROOT = Path(__file__).resolve().parents[1]
EIGHT = "cu12-8.9.7.29"
APP = '#include <stdio.h>\nsize_t cudnnGetVersion(void);\nint main(void) { printf("%zu\\n", cudnnGetVersion()); ' \
      'return 0; }\n'
pytestmark = pytest.mark.wheels


@pytest.fixture
def app(tmp_path: Path) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the program linked against cuDNN 8")
    source, program = tmp_path / "app.c", tmp_path / "app"
    source.write_text(APP)
    lib = site_folder(EIGHT) / "nvidia" / "cudnn" / "lib"
    subprocess.run(["gcc", str(source), "-o", str(program), f"-L{lib}", "-l:libcudnn.so.8",
                    "-Wl,--allow-shlib-undefined"], check=True)
    return program


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX")}
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir(exist_ok=True)
    python3 = bin_folder / "python3"
    if not python3.exists():
        python3.symlink_to(sys.executable)
    return {**env, "HOME": str(tmp_path / "home"), "PATH": f"{bin_folder}:/usr/bin:/bin"}


def _fix(tmp_path: Path, *args: str) -> list[dict]:
    env = {**_env(tmp_path), "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    text = done.stdout if "--" not in args else (tmp_path / "report.json").read_text()
    errors = [f for f in json.loads(text)["result"]["findings"] if f["severity"] == "error"]
    assert errors, text
    return errors[0]["fix"]["actions"]


@pytest.mark.parametrize("form", ["target", "command"])
def test_a_c_program_that_finds_no_cudnn_8_gets_a_wheel_on_its_search_path_and_runs(
        app: Path, tmp_path: Path, form: str) -> None:
    before = subprocess.run([str(app)], env=_env(tmp_path), capture_output=True, text=True, check=False)
    assert before.returncode == 127 and "libcudnn.so.8: cannot open shared object file" in before.stderr
    args = (str(app),) if form == "target" else ("--output", str(tmp_path / "report.json"), "--", str(app))
    actions = _fix(tmp_path, *args)
    folder = str(tmp_path / "home" / ".local" / "lib" / "nvidia-cudnn-8")
    assert [a["do"] for a in actions] == ["pip-install", "env-set"], actions
    assert actions[0]["target"] == folder and actions[0]["requirements"] == ["nvidia-cudnn-cu12>=8,<9"]
    assert actions[0]["python"] == str(tmp_path / "bin" / "python3")
    assert actions[1]["variable"] == "LD_LIBRARY_PATH"
    # the pip install, done from the unpacked wheel (what `pip install --target` puts there)
    shutil.copytree(site_folder(EIGHT), folder, copy_function=os.link, ignore=shutil.ignore_patterns(".unpacked"))
    after = subprocess.run([str(app)], env={**_env(tmp_path), "LD_LIBRARY_PATH": actions[1]["value"]},
                           capture_output=True, text=True, check=False)
    assert after.returncode == 0 and after.stdout.strip() == "8907", after
