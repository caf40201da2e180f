"""doctor: every check in one report with fixes; diff: only what matters between two reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudnnload.cli import EXIT_PROBLEMS, EXIT_USAGE, make_cli
from cudnnload.diagnose.doctor import diff_reports, doctor
from cudnnload.resolve.ldcache import read_ld_cache
from tests.wheels import lib_folder, python_path, site_folder

pytestmark = pytest.mark.wheels
ROOT = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(tmp_path / "cache"), **extra}


def _checks(report) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}


# doctor of this environment, with pip distributions looked for only in the given site folder (not in
# whatever the user installed into the venv the tests run in: `make demo` puts a cuDNN wheel there)
_DOCTOR = """import json, sys
from cudnnload.diagnose.doctor import doctor
from cudnnload.report import dumps
report = doctor(site_paths=[sys.argv[1]])
print(dumps("doctor", report))
"""


def _fresh(tmp_path: Path, site: Path, **extra: str) -> dict:
    """doctor's JSON from a new process: this one has a cuDNN mapped already, which doctor would report."""
    env = {**_env(tmp_path, **extra), "PYTHONPATH": python_path(ROOT, site)}
    done = subprocess.run([sys.executable, "-c", _DOCTOR, str(site)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)["result"]


def test_doctor_on_a_pip_wheel_reports_each_check_and_the_missing_cublas(tmp_path: Path) -> None:
    report = doctor(_env(tmp_path), site_paths=[str(site_folder("cu12-9.28.0.42"))])
    assert report.release == "9.28.0" and report.distribution == "nvidia-cudnn-cu12 9.28.0.42"
    checks = _checks(report)
    assert checks["installs"] == "ok" and checks["coherent"] == "ok"
    assert report.probe is not None and report.probe.step("cudnnGetVersion").value == 92800
    # the unpacked wheel has no nvidia-cublas-cu12 beside it: the graph API's first engine heuristic aborts,
    # as doctor says before the probe shows it
    cublas = next(f for f in report.findings if f.code == "missing-dependency" and "libcublasLt" in f.message)
    assert [c.effect for c in cublas.consequences] == ["abort"]
    assert checks["probe"] == "fail" and report.probe.signal == "SIGABRT"
    assert report.probe.died_in == "cudnnBackendCreateDescriptor"
    assert "as predicted" in next(c.summary for c in report.checks if c.name == "probe")
    if not report.gpu.driver_found:
        assert checks["handle"] in ("skip", "fail") and "NOT_INITIALIZED" in next(
            c.summary for c in report.checks if c.name == "handle")


def test_doctor_blames_ld_library_path_for_a_mixed_release(tmp_path: Path) -> None:
    stray = str(lib_folder("cu12-9.0.0.312"))
    report = _fresh(tmp_path, site_folder("cu12-9.28.0.42"), LD_LIBRARY_PATH=stray)
    mixed = [f for f in report["findings"] if f["code"] == "mixed-release"]
    # the wheel has its own engines: the entry that shadows them goes (derived from the step's entry); a program
    # that asks for libcudnn.so.9 by name gets the whole 9.0 there, so it goes for this program alone
    # (diagnose/scoped.py), the removal for every program kept as an alternative
    assert mixed and all(f["fix"]["actions"] == [{"do": "run", "argv": ["env", "-u", "LD_LIBRARY_PATH"]}]
                         for f in mixed)
    # and, changing nothing, the wheel's set pinned (issue 19)
    wheel = str(lib_folder("cu12-9.28.0.42"))
    assert all(f["fix"]["alternatives"] == [
        {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": stray},
        {"do": "run", "argv": ["cudnnload", "run", "--cudnn", wheel, "--"]}]
        and f["fix"]["text"].startswith(f"run the program as: env -u LD_LIBRARY_PATH <program> [args...]; or remove "
                                        f"{stray} from LD_LIBRARY_PATH; or run the program as") for f in mixed)
    assert all("programs that load libcudnn.so.9 by name get cuDNN 9.0.0 there" in f["fix"]["text"] for f in mixed)
    assert "libcudnn_graph.so.9 would load engines_precompiled" in " ".join(f["message"] for f in mixed)
    assert not report["healthy"]


def test_doctor_with_no_cudnn_says_how_to_install_it(tmp_path: Path) -> None:
    if any(entry.name.startswith("libcudnn") for entry in read_ld_cache().entries):
        pytest.skip("this machine has a system cuDNN in ld.so.cache")
    report = _fresh(tmp_path, tmp_path)
    assert report["chosen"] is None and {c["name"]: c["status"] for c in report["checks"]}["installs"] == "fail"
    assert any(f["code"] == "not-found" and any(a["do"] == "pip-install" and a["requirements"][0].startswith(
        "nvidia-cudnn-cu") for a in f["fix"]["actions"]) for f in report["findings"])


def test_diff_shows_the_variable_and_the_files_that_changed(tmp_path: Path) -> None:
    site = site_folder("cu12-9.28.0.42")
    good = {"kind": "doctor", "result": _fresh(tmp_path, site)}
    stray = str(lib_folder("cu12-9.0.0.312"))
    bad = {"kind": "doctor", "result": _fresh(tmp_path, site, LD_LIBRARY_PATH=stray)}
    changed = {d.what: (d.left, d.right) for d in diff_reports(good, bad)}
    assert changed["$LD_LIBRARY_PATH"] == (None, stray)
    assert any(key.startswith("finding mixed-release") for key in changed)
    assert diff_reports(good, good) == ()


def test_diff_shows_how_the_probe_ended_and_whether_the_report_was_healthy(tmp_path: Path) -> None:
    """A probe that completed against one that died of SIGABRT, a report healthy against one that is not: both were
    "no difference that matters" where the verdict's words were alike (a hostile user's edited report)."""
    import copy

    good = {"kind": "doctor", "result": _fresh(tmp_path, site_folder("cu12-9.28.0.42"))}
    good["result"]["probe"].update(outcome="completed", signal=None, returncode=0)
    died = copy.deepcopy(good)
    died["result"]["probe"].update(outcome="signal", signal="SIGABRT", returncode=-6)
    died["result"]["healthy"] = not good["result"]["healthy"]
    changed = {d.what: (d.left, d.right) for d in diff_reports(good, died)}
    assert changed["probe outcome"][1] == "signal SIGABRT"
    assert set(changed) == {"probe outcome", "healthy"}


def test_diff_of_a_file_that_is_not_a_report_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "b.json").write_text("not json")
    result = CliRunner().invoke(make_cli(), ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert result.exit_code == EXIT_USAGE and "Traceback" not in result.output
    assert result.stderr.startswith(f"cudnnload: error: {tmp_path / 'a.json'}: not a `cudnnload doctor --json`")


@pytest.mark.parametrize(("kind", "form"), [("doctor-program", "-- COMMAND"), ("doctor-process", "--pid PID"),
                                             ("doctor-requirements", "--requirements")])
def test_diff_of_a_report_of_doctor_s_other_forms_says_which_form_wrote_it(tmp_path: Path, kind: str,
                                                                           form: str) -> None:
    """A `doctor -- COMMAND` report given to diff (found on session 17's hostile pass: "not a `cudnnload doctor
    --json` report (kind 'doctor-program')", of a file doctor --json wrote): the form that wrote it, and which
    reports diff compares."""
    (tmp_path / "a.json").write_text(json.dumps({"schema": 1, "kind": kind, "result": {}}))
    result = CliRunner().invoke(make_cli(), ["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json")])
    assert result.exit_code == EXIT_USAGE and "Traceback" not in result.output
    assert f"the report of `cudnnload doctor {form}`" in result.stderr and "cudnnload doctor --json [TARGET]" in \
        result.stderr


def test_diff_of_a_fifo_is_refused_without_reading_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a.json")
    (tmp_path / "b.json").write_text("{}")
    result = CliRunner().invoke(make_cli(), ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == f"cudnnload: error: {tmp_path / 'a.json'}: not a regular file: a FIFO (named pipe)\n"


def test_doctor_command_exit_code_follows_the_findings(tmp_path: Path) -> None:
    result = CliRunner().invoke(make_cli(), ["doctor"], env=_env(tmp_path, LD_LIBRARY_PATH=str(
        lib_folder("cu12-9.28.0.42"))))
    assert result.exit_code in (0, EXIT_PROBLEMS) and "Traceback" not in result.output
    assert "cudnnload doctor: cuDNN 9.28.0" in result.stdout


def test_python_given_by_a_path_relative_to_the_current_folder_is_that_interpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``doctor --python venv/bin/python`` from the venv's parent: the interpreter is the one the path names from
    here (its start-up runs in ``/``, where the relative path named nothing: "not a Python interpreter that
    answers")."""
    from cudnnload.diagnose.targets import resolve_target

    here = Path(sys.executable)
    monkeypatch.chdir(here.parent.parent)
    resolved = resolve_target(None, python=os.path.join(here.parent.name, here.name), environ=dict(os.environ))
    assert resolved.target.python is not None and os.path.samefile(resolved.target.python, sys.executable)


def test_a_python_program_is_one_whose_command_names_a_python() -> None:
    """``doctor -- COMMAND``: the program is a Python (its start-up observed, its pip named by fixes) when the
    command's first word is one (``python3``, ``/venv/bin/python3.11``), as a running process is read; not
    ``ipython``, which has no ``-m pip`` of its own."""
    from cudnnload.diagnose.observe import _interpreter

    assert _interpreter(["/venv/bin/python3.11", "-c", "pass"]) == "/venv/bin/python3.11"
    assert _interpreter(["python3", "train.py"]) == "python3"
    assert _interpreter(["ipython", "train.py"]) is None and _interpreter([]) is None


def test_a_finding_about_the_install_a_framework_gets_concerns_the_environment_whose_choice_is_another() -> None:
    """Fix differential 3-8554: ``doctor --python`` where LD_LIBRARY_PATH gives load() a cuDNN 8.9.7 folder, and torch
    gets its 9.0 shim from its wheel folder, whose graph a partial 9.28 copy on LD_LIBRARY_PATH would be mixed with.
    That finding is about the folder torch maps, so it is part of the environment's repair (taken out of
    LD_LIBRARY_PATH, then the wheel torch pins): without it the repair was torch's finding alone, said as its own
    fix, and the mixed-release error said first was applied alone, leaving torch on 9.0."""
    from cudnnload.codes import Code
    from cudnnload.diagnose.doctor import _concerns
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.judge.routes import Served
    from cudnnload.resolve.consumers import Consumer
    from cudnnload.resolve.discovery import context
    from cudnnload.resolve.routes import Route
    from cudnnload.verdicts import Finding, Subject, SubjectKind, fix, remove_entry

    ctx = context({"PATH": "/usr/bin:/bin"})
    chosen = judged_install_of(str(lib_folder("cu12-8.9.7.29") / "libcudnn.so.8"), ctx, "test")
    torchs = judged_install_of(str(lib_folder("cu12-9.0.0.312") / "libcudnn.so.9"), ctx, "test")
    assert chosen is not None and torchs is not None
    graph = str(lib_folder("cu12-9.0.0.312") / "libcudnn_graph.so.9")
    mixed = Finding(Code.MIXED_RELEASE, "the shim would load graph 9.0.0, not this install's 9.28.0",
                    Subject(SubjectKind.FILE, graph), fix(remove_entry("LD_LIBRARY_PATH", "./lib")))
    torch = Consumer("torch", "torch", "2.14.1", "/site", (), (), None, None, "test")
    served = Served(Route(torch, torchs.folder + "/libcudnn.so.9", "by path"), torchs, None, (), (), frozenset())
    assert not _concerns(mixed, chosen)
    assert _concerns(mixed, chosen, served=[served])


@pytest.mark.parametrize(("value", "gpu", "expected"), [
    ("cpu", True, "error"), ("cpu", False, "warning"), ("CPU, tpu", True, "error"),
    ("cuda,cpu", True, None), ("gpu", True, None), ("", True, None)])
def test_jax_platforms_without_cuda_keeps_jax_off_the_gpu_and_unsetting_it_is_the_fix(value: str, gpu: bool,
                                                                                      expected: str | None) -> None:
    """H200 (bench/frameworks_more.py jax-platforms-cpu): JAX_PLATFORMS=cpu, JAX's convolution ran on the CPU and
    its CUDA plugin, and cuDNN, were never loaded. The cuDNN JAX would get is healthy: the variable is the cause."""
    from cudnnload.codes import Code
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.judge.routes import serve
    from cudnnload.resolve.consumers import Consumer
    from cudnnload.resolve.discovery import context
    from cudnnload.resolve.routes import Route

    ctx = context({"PATH": "/usr/bin:/bin"})
    install = judged_install_of(str(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9"), ctx, "test")
    assert install is not None
    jax = Consumer("jax", "jax-cuda12-plugin", "0.8.1", "/site", (), (), None, None, "test")
    route = Route(jax, install.folder + "/libcudnn.so.9", "by path")
    served, unset = (serve(route, install, ctx, gpu=gpu, device_count=1, environ=environ, python=None)
                     for environ in ({"JAX_PLATFORMS": value}, {}))
    off = [f for f in served.findings if f.code is Code.FRAMEWORK_GPU_OFF]
    assert [f for f in served.findings if f not in off] == list(unset.findings)  # (this folder lacks cuBLAS)
    if expected is None:
        assert off == []
        return
    assert [f.severity for f in off] == [expected]
    assert f"JAX_PLATFORMS={value!r}" in off[0].message and "loads no cuDNN" in off[0].message
    assert [(a.do.value, a.variable) for a in off[0].fix.actions] == [("env-unset", "JAX_PLATFORMS")]
