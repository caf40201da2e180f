"""Whose pip a fix runs (`diagnose.installer`): an environment uv made holds no pip, and ``python -m pip install``
stops there ("No module named pip"); its fixes are said with uv's pip interface (``uv pip install --python ...``),
and applied as said they make the program work (a real uv venv, the real cuDNN wheel)."""

from __future__ import annotations

import ctypes  # noqa: F401  (the program below uses it in its own process)
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind
from cudnnload.resolve.pythons import installer_of, lacks_pip
from cudnnload.verdicts import pip_install, pip_uninstall
from tests.wheels import cache_root, python_path

ROOT = Path(__file__).resolve().parents[1]
WHEEL = "nvidia-cudnn-cu12==9.28.0.42"
PROGRAM = ("import ctypes, glob, sys; lib = ctypes.CDLL(glob.glob(sys.prefix + '/lib/python*/site-packages/nvidia/"
           "cudnn/lib/libcudnn.so.9')[0]); d = ctypes.c_void_p(); "
           "sys.exit(lib.cudnnCreateTensorDescriptor(ctypes.byref(d)))")


def _venv(folder: Path, config: str, pip: bool) -> str:
    """A venv's skeleton: its pyvenv.cfg, a bin/python, and pip in its site-packages where ``pip``."""
    (folder / "bin").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text(config)
    python = folder / "bin" / "python"
    python.symlink_to(sys.executable)
    site = folder / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if pip:
        (site / "pip").mkdir()
        (site / "pip" / "__init__.py").write_text("")
    return str(python)


@pytest.mark.parametrize(("config", "pip", "expected", "with_uv"), [
    ("home = /usr/bin\nuv = 0.13.9\ninclude-system-site-packages = false\n", False, "uv", "uv"),
    ("home = /usr/bin\nuv = 0.13.9\n", True, "pip", "pip"),  # `uv venv --seed` puts pip in
    # `python -m venv --without-pip`: uv's where uv is on PATH, else pip's (its fix says to put pip in first)
    ("home = /usr/bin\ninclude-system-site-packages = false\n", False, "pip", "uv"),
    ("home = /usr/bin\nuv = 0.13.9\ninclude-system-site-packages = true\n", False, "pip", "pip"),  # the base's pip
])
def test_the_installer_of_an_environment_is_read_off_its_venv(tmp_path: Path, config: str, pip: bool,
                                                              expected: str, with_uv: str) -> None:
    python = _venv(tmp_path / "v", config, pip)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "uv").write_text("#!/bin/sh\n")
    (tools / "uv").chmod(0o755)
    assert installer_of(python, {"PATH": str(tmp_path / "none")}) == expected
    assert installer_of(python, {"PATH": str(tools)}) == with_uv
    assert lacks_pip(python) == (not pip and "= true" not in config)
    assert installer_of(None) == "pip" and installer_of("python3.11") == "pip" and not lacks_pip("python3.11")


def test_a_conda_prefix_without_pip_is_one_pip_cannot_install_into(tmp_path: Path) -> None:
    """pixi's environments (a conda prefix, its PyPI packages installed by uv, conda-forge's python bringing no pip):
    ``python -m pip`` there answers "No module named pip"; with pip in it, or without ``conda-meta``, it is pip's."""
    python = _venv(tmp_path / "env", "", False)
    (tmp_path / "env" / "pyvenv.cfg").unlink()
    assert not lacks_pip(python)  # a base interpreter: its pip may be anywhere
    (tmp_path / "env" / "conda-meta").mkdir()
    assert lacks_pip(python)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "uv").write_text("#!/bin/sh\n")
    (tools / "uv").chmod(0o755)
    assert installer_of(python, {"PATH": str(tools)}) == "uv" and installer_of(python, {"PATH": ""}) == "pip"
    site = next((tmp_path / "env").glob("lib/python*/site-packages"))
    (site / "pip").mkdir()
    (site / "pip" / "__init__.py").write_text("")
    assert not lacks_pip(python)


def test_a_pip_action_said_with_uv_keeps_its_meaning() -> None:
    install = pip_install(["nvidia-cudnn-cu12==9.28.0.42"], options=("--force-reinstall", "--no-deps"),
                          target="/v/lib/python3.11/site-packages", python="/v/bin/python")
    assert str(install) == "/v/bin/python -m pip install --force-reinstall --no-deps nvidia-cudnn-cu12==9.28.0.42"
    assert "installer" not in install.json()
    uv = replace(install, installer="uv")
    assert str(uv) == "uv pip install --python /v/bin/python --reinstall --no-deps nvidia-cudnn-cu12==9.28.0.42"
    assert uv.json()["installer"] == "uv" and uv.json()["options"] == ["--force-reinstall", "--no-deps"]
    both = pip_install(["x"], options=("--ignore-installed", "--force-reinstall"), python="/v/bin/python")
    assert str(replace(both, installer="uv")) == "uv pip install --python /v/bin/python " \
        "--reinstall x"
    gone = pip_uninstall(["nvidia-cudnn-cu13"], python="/v/bin/python")
    assert str(replace(gone, installer="uv")) == \
        "uv pip uninstall --python /v/bin/python nvidia-cudnn-cu13"


@pytest.mark.parametrize(("lock", "environment", "add"), [
    ("uv.lock", ".venv", "uv add"), ("poetry.lock", ".venv", "poetry add"),
    ("pixi.lock", ".pixi/envs/default", "pixi add --pypi"),
])
def test_a_version_put_into_a_locked_projects_environment_is_said_with_its_tools_add(
        tmp_path: Path, lock: str, environment: str, add: str) -> None:
    """A uv, Poetry or pixi project's environment (``PROJECT/.venv``, ``PROJECT/.pixi/envs/NAME``) beside its lock
    file: ``uv pip install X==V`` there is undone by the next ``uv sync`` where the lock pins another version. The
    fix says so, with the tool's own command; a reinstall of the same version (which sync keeps) and an environment
    with no lock beside it say nothing more."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.installer import by_installer
    from cudnnload.verdicts import Finding, Subject, fix

    project = tmp_path / "project"
    python = _venv(project / environment, "home = /usr/bin\n", True)
    (project / lock).write_text("")
    change = pip_install(["nvidia-cudnn-cu12==9.28.0.42"], python=python)
    same = pip_install(["nvidia-cudnn-cu12==9.28.0.42"], options=("--force-reinstall", "--no-deps"), python=python)
    said = [by_installer([Finding(Code.SUBLIBRARY_UNLOADABLE, "m", Subject(SubjectKind.FILE, "/x"), fix(action))])[0]
            for action in (change, same)]
    assert f"run {add} nvidia-cudnn-cu12==9.28.0.42 there" in (said[0].fix.note or ""), said[0].fix
    assert str(project) in (said[0].fix.note or "") and said[1].fix.note is None
    (project / lock).unlink()
    assert by_installer([Finding(Code.SUBLIBRARY_UNLOADABLE, "m", Subject(SubjectKind.FILE, "/x"),
                                 fix(change))])[0].fix.note is None


def test_a_venv_without_pip_whose_python_has_no_ensurepip_says_which_package_brings_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian's and Ubuntu's system Python keeps ensurepip in the python3.X-venv package: without it, a venv made
    ``--without-pip`` cannot be given pip with ``-m ensurepip`` ("No module named ensurepip"); the fix names the
    package. Its Python's standard library is found through the interpreter's links, or ``pyvenv.cfg``'s ``home``
    (a venv made ``--copies``); where it is not found at all, the usual words stay."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.installer import by_installer
    from cudnnload.resolve.pythons import without_ensurepip
    from cudnnload.verdicts import Finding, Subject, fix

    monkeypatch.setenv("PATH", str(tmp_path / "no-uv"))
    base = tmp_path / "usr"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "python3.11").write_text("")
    (base / "lib" / "python3.11").mkdir(parents=True)
    (base / "lib" / "python3.11" / "os.py").write_text("")
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n"
                                     "version = 3.11.2\n")
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(base / "bin" / "python3.11")
    copied = tmp_path / "copies"
    shutil.copytree(venv, copied, symlinks=False)  # `python -m venv --copies`: its own file, its version in the cfg
    for python in (str(venv / "bin" / "python"), str(copied / "bin" / "python")):
        assert lacks_pip(python) and without_ensurepip(python) == "3.11", python
        said = by_installer([Finding(Code.SUBLIBRARY_UNLOADABLE, "m", Subject(SubjectKind.FILE, "/x"),
                                     fix(pip_install(["nvidia-cudnn-cu12==9.28.0.42"], python=python)))])[0]
        assert "the python3.11-venv package): install that, then run" in (said.fix.note or ""), said.fix
    (base / "lib" / "python3.11" / "ensurepip").mkdir()
    (base / "lib" / "python3.11" / "ensurepip" / "__init__.py").write_text("")
    assert without_ensurepip(str(venv / "bin" / "python")) is None
    assert without_ensurepip(str(tmp_path / "nowhere" / "bin" / "python")) is None  # no standard library found


def _uv() -> str:
    uv = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
    if uv is None:
        pytest.skip("uv is not installed (the test extra installs it)")
    return uv


def _uv_env(tmp_path: Path, cache: str = "uv-cache") -> dict[str, str]:
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / cache), "UV_NO_CONFIG": "1"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("UV_LINK_MODE", None)
    return env


def _local() -> list[str]:
    """uv's options that take the wheels from the test cache, never the network."""
    return ["--no-index", "--find-links", str(cache_root() / "wheels")]


def _uv_venv(tmp_path: Path, *how: str) -> tuple[str, dict[str, str], Path, str]:
    """A venv ``uv venv`` made, the cuDNN wheel installed into it by ``uv pip install`` (with ``how``): uv, its
    environment, the venv and its interpreter."""
    uv, env, venv = _uv(), _uv_env(tmp_path), tmp_path / "v"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], env=env, check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "-q", "--python", python, *how, *_local(), WHEEL], env=env, check=True)
    return uv, env, venv, python


def _doctor(python: str, env: dict[str, str], tmp_path: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "--python", python],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**env, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")})
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)["result"]


@pytest.mark.wheels
def test_an_environment_whose_links_into_uvs_cache_are_gone_is_installed_again(tmp_path: Path) -> None:
    """``uv pip install --link-mode=symlink`` links every file of a wheel from uv's cache; ``uv cache clean`` then
    leaves links to nothing, METADATA included. doctor said "no cuDNN (none found)" and to install cuDNN (already
    installed: nothing happens); now the first error names the links and the folder gone, and its fix (every such
    distribution installed again, nothing else changed), run as said, makes the program work."""
    uv, env, venv, python = _uv_venv(tmp_path, "--link-mode=symlink")
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode == 0
    shutil.rmtree(tmp_path / "uv-cache")  # what `uv cache clean` does
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode != 0
    findings = _doctor(python, env, tmp_path)["findings"]
    first = findings[0]
    assert first["code"] == "links-gone" and str(tmp_path / "uv-cache") in first["message"], first
    assert "nvidia-cudnn-cu12 9.28.0.42" in first["message"] and "no-cudnn" not in {f["code"] for f in findings}
    assert first["fix"]["text"].startswith(f"uv pip install --python {python} --reinstall --no-deps "), first["fix"]
    # the command form: the program's run, the same first error and fix
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "--output", str(report), "--", python, "-c",
                    PROGRAM], capture_output=True, text=True, timeout=300, check=False,
                   env={**env, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")})
    checks = {c["name"]: c for c in _doctor(python, env, tmp_path)["checks"]}
    assert "links-gone" in checks["installs"]["summary"], checks["installs"]
    run_first = json.loads(report.read_text())["result"]["findings"][0]
    assert run_first["code"] == "links-gone" and run_first["fix"] == first["fix"], run_first
    words = shlex.split(first["fix"]["text"].split(" (")[0])
    subprocess.run([uv, *words[1:], *_local()], env=_uv_env(tmp_path, "uv-cache-2"), check=True, capture_output=True)
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode == 0
    assert not any(f["severity"] == "error" for f in _doctor(python, env, tmp_path)["findings"])


@pytest.mark.wheels
def test_a_uv_environment_gets_fixes_uv_runs_and_they_make_the_program_work(tmp_path: Path) -> None:
    """A venv made by ``uv venv`` (no pip in it), the cuDNN wheel installed by ``uv pip install``, a sub-library
    deleted: doctor's fix is ``uv pip install --python .../bin/python --reinstall --no-deps nvidia-cudnn-cu12==...``
    (it was ``.../bin/python -m pip install ...``, which answers "No module named pip"); run as said (with the
    wheel taken from the test cache, not the network), the program's cudnnCreateTensorDescriptor works again."""
    uv, env, venv, python = _uv_venv(tmp_path)
    assert subprocess.run([python, "-m", "pip", "--version"], capture_output=True, env=env).returncode != 0
    ops = next(venv.glob("lib/python*/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9"))
    ops.unlink()
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode != 0

    first = next(f for f in _doctor(python, env, tmp_path)["findings"] if f["severity"] == "error")
    action = first["fix"]["actions"][0]
    assert action["do"] == ActionKind.PIP_INSTALL.value and action["installer"] == "uv", first
    assert first["fix"]["text"].startswith(f"uv pip install --python {python} "), first["fix"]["text"]
    words = shlex.split(first["fix"]["text"])
    subprocess.run([uv, *words[1:], *_local()], env=env, check=True, capture_output=True)
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode == 0
    assert not any(f["severity"] == "error" for f in _doctor(python, env, tmp_path)["findings"])


def test_a_cuda_build_whose_files_are_links_to_nothing_is_not_called_a_cpu_build(tmp_path: Path) -> None:
    """torch's CUDA build in such an environment: its libtorch_cuda.so is a link to nothing, not absent. It was said
    to be "a CPU build (torch/lib holds no libtorch_cuda.so)"; the links gone are the finding."""
    from cudnnload.resolve.consumers import cpu_builds, links_gone

    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "torch" / "lib" / "libtorch_cuda.so").symlink_to(tmp_path / "cache" / "libtorch_cuda.so")
    info = site / "torch-2.14.1.dist-info"
    info.mkdir()
    (info / "METADATA").symlink_to(tmp_path / "cache" / "archive-v0" / "x" / "torch-2.14.1.dist-info" / "METADATA")
    (info / "INSTALLER").write_text("uv\n")
    assert cpu_builds([str(site)]) == ()
    (gone,) = links_gone([str(site)])
    assert gone.requirements == ("torch==2.14.1",) and gone.installer == "uv"
    assert gone.into == str(tmp_path / "cache" / "archive-v0" / "x")


SYSTEM_PYTHON = "/usr/bin/python3"
USER_PROGRAM = ("import ctypes, glob, site, sys; lib = ctypes.CDLL(glob.glob(site.getusersitepackages() + '/nvidia/"
                "cudnn/lib/libcudnn.so.9')[0]); d = ctypes.c_void_p(); "
                "sys.exit(lib.cudnnCreateTensorDescriptor(ctypes.byref(d)))")


@pytest.mark.wheels
@pytest.mark.wheels
def test_a_venv_made_without_pip_gets_uv_where_uv_is_at_hand_and_else_pip_put_in_first(tmp_path: Path) -> None:
    """``python -m venv --without-pip`` (no uv mark in its pyvenv.cfg), the cuDNN wheel installed into it by uv, a
    sub-library deleted. doctor's fix was ``.../bin/python -m pip install ...``, "No module named pip" there. With uv
    on PATH it is uv's; without, it says to put pip in first (``-m ensurepip``); either, run as said, makes the
    program work."""
    uv, env = _uv(), _uv_env(tmp_path)
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env=env, check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "-q", "--python", python, *_local(), WHEEL], env=env, check=True)
    ops = next(venv.glob("lib/python*/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9"))
    ops.unlink()
    assert subprocess.run([python, "-m", "pip", "--version"], capture_output=True, env=env).returncode != 0
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode != 0

    without = {**env, "PATH": "/usr/bin:/bin"}
    first = next(f for f in _doctor(python, without, tmp_path)["findings"] if f["severity"] == "error")
    assert f"{python} has no pip: run {python} -m ensurepip first" in first["fix"]["text"], first["fix"]
    action = first["fix"]["actions"][0]
    assert action["do"] == ActionKind.PIP_INSTALL.value and "installer" not in action, action
    with_uv = {**env, "PATH": f"{os.path.dirname(uv)}:/usr/bin:/bin"}
    said = next(f for f in _doctor(python, with_uv, tmp_path)["findings"] if f["severity"] == "error")
    assert said["fix"]["text"].startswith(f"uv pip install --python {python} "), said["fix"]["text"]
    assert "ensurepip" not in said["fix"]["text"]

    subprocess.run([python, "-m", "ensurepip"], env=without, check=True, capture_output=True)
    subprocess.run([python, "-m", "pip", "install", "-q", *action["options"], *action["requirements"], *_local()],
                   env={**without, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}, check=True, capture_output=True)
    assert subprocess.run([python, "-c", PROGRAM], capture_output=True, env=env).returncode == 0


def test_a_python_marked_externally_managed_gets_fixes_its_pip_accepts(tmp_path: Path) -> None:
    """Debian's own Python (PEP 668's EXTERNALLY-MANAGED beside its standard library): the cuDNN wheel installed into
    the user site (``pip install --user --break-system-packages``, as it only can be), a sub-library deleted. doctor's
    fix, ``python3.X -m pip install --force-reinstall --no-deps --user ...``, answered "error:
    externally-managed-environment"; it now carries ``--break-system-packages``, and run as said the program works."""
    from cudnnload.resolve.pythons import externally_managed

    if not externally_managed(SYSTEM_PYTHON) or subprocess.run([SYSTEM_PYTHON, "-m", "pip", "--version"],
                                                               capture_output=True).returncode:
        pytest.skip(f"{SYSTEM_PYTHON} is not a Python marked externally managed with pip (PEP 668)")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_BREAK_SYSTEM_PACKAGES", "PYTHONUSERBASE"):
        env.pop(name, None)
    subprocess.run([SYSTEM_PYTHON, "-m", "pip", "install", "-q", "--user", "--break-system-packages", *_local(),
                    WHEEL], env=env, check=True, capture_output=True)
    ops = next((tmp_path / "home").glob(".local/lib/python*/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9"))
    ops.unlink()
    assert subprocess.run([SYSTEM_PYTHON, "-c", USER_PROGRAM], capture_output=True, env=env).returncode != 0
    first = next(f for f in _doctor(os.path.realpath(SYSTEM_PYTHON), env, tmp_path)["findings"]
                 if f["severity"] == "error")
    words = shlex.split(first["fix"]["text"])
    assert "--break-system-packages" in words and "--user" in words, first["fix"]
    refused = subprocess.run([w for w in words if w != "--break-system-packages"] + _local(), env=env,
                             capture_output=True, text=True)
    assert "externally-managed-environment" in refused.stderr, refused.stderr  # as it was said before
    subprocess.run([*words, *_local()], env=env, check=True, capture_output=True)
    assert subprocess.run([SYSTEM_PYTHON, "-c", USER_PROGRAM], capture_output=True, env=env).returncode == 0
