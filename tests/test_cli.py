"""The command line: exit codes, JSON with stable finding codes, one-line errors, no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudnnload.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, make_cli
from tests.wheels import lib_folder

pytestmark = pytest.mark.wheels

ENV = {"CUDNNLOAD_NO_CACHE": "1"}


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(make_cli(), list(args), env={**ENV, **(env or {})})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _all_findings(doc: dict) -> list[dict]:
    result = doc["result"]
    found = list(result["findings"])
    for install in result["installs"]:
        found += install["findings"]
    return found


def test_inspect_json_lists_installs_files_and_codes() -> None:
    code, out, _ = _run("inspect", "--json", str(lib_folder("cu12-9.28.0.42")))
    doc = json.loads(out)
    assert doc["schema"] == 1 and doc["kind"] == "inventory"
    install = doc["result"]["installs"][0]
    assert install["release"] == "9.28.0" and len(install["files"]) == 10
    shim = next(f for f in install["files"] if f["library"] == "shim")
    assert shim["elf"]["rpath"] == ["$ORIGIN"] and "cudnnOpsVersionCheck" in shim["elf"]["version_checks"]
    codes = {f["code"] for f in install["findings"]}
    assert "missing-dependency" in codes  # no cuBLAS wheel beside the unpacked cuDNN
    assert code == EXIT_PROBLEMS


def test_inspect_text_shows_inventory_plan_and_findings() -> None:
    _, out, _ = _run("inspect", str(lib_folder("cu12-9.0.0.312")))
    assert "cuDNN 9.0.0 (nvidia-cudnn-cu12 9.0.0.312)" in out
    assert "libcudnn_engines_precompiled.so.9" in out and "SASS 50 60 61 70 75 80 86 90" in out
    assert "what the shim would load at run time:" in out and "[this install, via runpath]" in out


@pytest.mark.parametrize("make_bad, code", [
    (lambda d: (d / "libcudnn_ops.so.9").write_bytes(b""), "empty-file"),
    (lambda d: (d / "libcudnn_ops.so.9").symlink_to(d / "nowhere"), "broken-symlink"),
    (lambda d: (d / "libcudnn_ops.so.9").symlink_to(d / "libcudnn_ops.so.9"), "symlink-loop"),
    (lambda d: (d / "notes.txt").write_text("x"), "no-cudnn"),
])
def test_bad_input_is_one_line_naming_the_path_and_exit_1(tmp_path: Path, make_bad, code: str) -> None:
    make_bad(tmp_path)
    exit_code, out, err = _run("inspect", "--json", str(tmp_path))
    assert exit_code == EXIT_PROBLEMS and "Traceback" not in out + err
    assert any(f["code"] == code and f["path"].startswith(str(tmp_path)) for f in _all_findings(json.loads(out)))


def test_missing_path_is_reported_with_exit_1(tmp_path: Path) -> None:
    code, out, _ = _run("inspect", str(tmp_path / "missing"))
    assert code == EXIT_PROBLEMS and f"{tmp_path / 'missing'}: no such file or folder" in out


def test_unknown_name_is_a_usage_error() -> None:
    code, _, err = _run("which", "libfoo.so")
    assert code == EXIT_USAGE and err.strip() == (
        "cudnnload: error: not a cuDNN library name: 'libfoo.so' (try libcudnn_ops.so.9, ops, or cnn_infer)")


@pytest.mark.parametrize("args", [("doctor", ""), ("doctor", "--root", ""), ("doctor", "--python", ""),
                                  ("doctor", "--requirements", ""), ("inspect", ""), ("trace", ""), ("fleet", ""),
                                  ("run", "--cudnn", "", "--", "/bin/true")])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(args: tuple[str, ...]) -> None:
    """A hostile user's `--root ''`, `run --cudnn ''`: read as the current folder, judged or pinned from there."""
    code, _, err = _run(*args)
    assert code == EXIT_USAGE and "an empty name is no path" in err, err


def test_unknown_option_is_a_usage_error() -> None:
    assert _run("inspect", "--bogus")[0] == EXIT_USAGE


def _run_fresh(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """In a new process: this one may have a cuDNN mapped already, which `which` rightly reports."""
    done = subprocess.run([sys.executable, "-m", "cudnnload", *args], capture_output=True, text=True,
                          env={**os.environ, **ENV, **env})
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout


def test_which_through_ld_library_path_shows_each_sublibrary_and_the_trail() -> None:
    folder = str(lib_folder("cu12-9.28.0.42"))
    code, out = _run_fresh("which", "-v", env={"LD_LIBRARY_PATH": folder})
    assert f"shim                       -> {folder}/libcudnn.so.9  [ld-library-path, cuDNN 9.28.0]" in out
    assert "ops                        -> libcudnn_ops.so.9 (beside the shim)  [rpath, cuDNN 9.28.0]" in out
    assert "rpath: " in out  # -v prints the trail
    assert code == EXIT_OK


def test_which_of_this_python_that_finds_no_cudnn_installs_one_into_it() -> None:
    """Without a target, the names resolve as this Python loads them: the fix is a pip install into it, not a
    folder of its own put on LD_LIBRARY_PATH (the fix for a program that is no Python's)."""
    code, out = _run_fresh("which", "--json", env={"LD_LIBRARY_PATH": "", "LD_PRELOAD": ""})
    if code == EXIT_OK:
        pytest.skip("this Python finds a cuDNN")
    [missing] = [f for f in json.loads(out)["result"]["findings"] if f["code"] == "not-found"]
    install = missing["fix"]["actions"][0]
    assert install["do"] == "pip-install" and install["python"] == sys.executable and install["target"] is None


def test_which_json_from_a_consumer_object(tmp_path: Path) -> None:
    folder = str(lib_folder("cu12-8.9.7.29"))
    code, out = _run_fresh("which", "--json", "--from", f"{folder}/libcudnn_cnn_train.so.8", "ops_infer",
                           env={"LD_LIBRARY_PATH": folder})
    steps = json.loads(out)["result"]["steps"]
    assert [s["library"] for s in steps] == ["ops_infer"]
    assert steps[0]["path"] == f"{folder}/libcudnn_ops_infer.so.8" and code == EXIT_OK


def test_console_script_runs_in_a_fresh_process() -> None:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "--help"], capture_output=True, text=True,
                          env={**os.environ, **ENV})
    assert done.returncode == 0 and "which" in done.stdout and "inspect" in done.stdout
