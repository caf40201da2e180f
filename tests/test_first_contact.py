"""What a new user meets first: the environment they mean (a framework built without CUDA is said to be one and
gets no cuDNN to install; cudnnload's own tool venv is never judged), output a person can read and paste (wrapped
to the terminal, shell-quoted, coloured only on a terminal), and a memo that stays small and is read once."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cudnnload.cachedir import read_entries
from cudnnload.codes import Code
from cudnnload.diagnose.doctor import doctor
from cudnnload.report import for_terminal
from cudnnload.resolve import elfcache
from cudnnload.resolve.consumers import cpu_builds
from cudnnload.resolve.pythons import python_on_path, tool_environment
from cudnnload.verdicts import delete, manual, pip_install, remove_entry
from tests.wheels import lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]
CPU_TORCH = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def dist_info(site: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("")


def torch_layout(site: Path, wheel: Path | None = None) -> None:
    """torch's dist-info and the names of torch/lib as a wheel has them (the real CPU wheel's listing when it
    is on this machine), the libraries as empty files: what decides a CPU build is which files exist."""
    if wheel is not None and wheel.exists():
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if ".dist-info/" in name:
                    archive.extract(name, site)
                elif name.startswith("torch/lib/"):
                    (site / name).parent.mkdir(parents=True, exist_ok=True)
                    (site / name).touch()
        return
    dist_info(site, "torch", "2.13.0+cpu")
    (site / "torch" / "lib").mkdir(parents=True)
    for name in ("libtorch_cpu.so", "libtorch.so", "libc10.so", "libtorch_global_deps.so"):
        (site / "torch" / "lib" / name).touch()


# --- the environment the user means ---------------------------------------------------------------------------

def test_a_cpu_build_of_pytorch_is_named_and_gets_no_cudnn_to_install(tmp_path: Path) -> None:
    site = tmp_path / "site"
    torch_layout(site, CPU_TORCH)
    builds = cpu_builds([str(site)])
    assert [(b.framework, b.platform) for b in builds] == [("torch", "CPU")]
    assert builds[0].version.startswith("2.13.0")
    report = doctor({"PATH": os.environ["PATH"], "CUDNNLOAD_CACHE": str(tmp_path / "cache")}, site_paths=[str(site)])
    codes = {f.code for f in report.findings}
    assert Code.CPU_ONLY_BUILD in codes and Code.NO_CUDNN not in codes
    assert not any(a.do.value == "pip-install" and any("cudnn" in r for r in a.requirements)
                   for f in report.findings for a in (*f.fix.actions, *f.fix.alternatives))
    assert any(c.name == "torch" and c.status == "warn" and "without CUDA" in c.summary for c in report.checks)


def test_cuda_builds_and_their_plugins_are_not_cpu_builds(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist_info(site, "torch", "2.11.0")
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "torch" / "lib" / "libtorch_cuda.so").touch()
    dist_info(site, "jaxlib", "0.8.0")
    dist_info(site, "jax-cuda13-plugin", "0.8.0")
    dist_info(site, "onnxruntime", "1.23.0")  # CPU onnxruntime beside onnxruntime-gpu: the GPU one counts
    dist_info(site, "onnxruntime-gpu", "1.23.0")
    assert cpu_builds([str(site)]) == ()
    alone = tmp_path / "alone"
    dist_info(alone, "jaxlib", "0.8.0")
    dist_info(alone, "onnxruntime", "1.23.0")
    assert sorted(b.framework for b in cpu_builds([str(alone)])) == ["jax", "onnxruntime"]


def test_cudnnloads_own_tool_venv_is_told_apart_from_the_users(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    site = tool / "lib" / "python3.11" / "site-packages"
    dist_info(site, "cudnnload", "0.1.0", ("click>=8.1", "numpy>=1.24", "pytest>=7; extra == 'test'"))
    dist_info(site, "click", "8.1.7")
    dist_info(site, "numpy", "2.1.0")
    dist_info(site, "pip", "24.0")
    base = "/usr"
    assert tool_environment({}, prefix=str(tool), base_prefix=base) == str(tool.resolve())
    assert tool_environment({"VIRTUAL_ENV": str(tool)}, prefix=str(tool), base_prefix=base) is None  # activated
    dist_info(site, "nvidia-cudnn-cu12", "9.28.0.42")  # a cuDNN beside it: the user's environment
    assert tool_environment({}, prefix=str(tool), base_prefix=base) is None
    pipx = tmp_path / "home" / ".local" / "pipx" / "venvs" / "cudnnload"
    pipx.mkdir(parents=True)
    assert tool_environment({}, prefix=str(pipx), base_prefix=base) == str(pipx.resolve())
    assert tool_environment({}, prefix=base, base_prefix=base) is None  # not a venv


def test_the_python_on_path_is_found_outside_the_tool_venv(tmp_path: Path) -> None:
    tool_bin, user_bin = tmp_path / "tool" / "bin", tmp_path / "user" / "bin"
    for folder in (tool_bin, user_bin):
        folder.mkdir(parents=True)
        (folder / "python3").write_text("#!/bin/sh\n")
        (folder / "python3").chmod(0o755)
    path = f"{tool_bin}::relative:{user_bin}"
    assert python_on_path({"PATH": path}, outside=str(tmp_path / "tool")) == str(user_bin / "python3")
    assert python_on_path({"PATH": "relative:"}) is None


# --- output a person can read and paste -------------------------------------------------------------------------

def test_a_python_program_of_another_environment_is_told_apart_from_cudnnloads_own(tmp_path: Path) -> None:
    """`run`'s program: a ``python`` of another venv is another environment even though both interpreters are links
    to one base; this interpreter, however named, and a program that is no Python are not."""
    from cudnnload.resolve.pythons import environment_of, program_python

    other = tmp_path / "venv"
    (other / "bin").mkdir(parents=True)
    (other / "pyvenv.cfg").write_text("home = /usr/bin\n")
    os.symlink(os.path.realpath(sys.executable), other / "bin" / "python3")
    env = {"PATH": f"{other / 'bin'}:{os.environ.get('PATH', '')}"}
    assert environment_of(str(other / "bin" / "python3")) == str(other.resolve())
    assert program_python(["python3", "train.py"], env) == str(other / "bin" / "python3")
    assert program_python([sys.executable, "-c", "pass"], env) is None
    assert program_python(["/bin/true"], env) is None and program_python([], env) is None


def test_long_lines_are_wrapped_under_their_own_indent_never_cut() -> None:
    path = "/opt/" + "x" * 90 + "/libcudnn.so.9"
    text = "  error   missing-file             " + " ".join(["word"] * 30) + f" {path} end"
    out = for_terminal(text, 60, colour=False).split("\n")
    assert all(len(line) <= 60 or line.strip() == path for line in out), out
    assert all(line.startswith("      ") for line in out[1:])
    assert " ".join(" ".join(out).split()) == " ".join(text.split())  # nothing lost
    coloured = for_terminal("  ok    probe      fine\nhealthy", 80, colour=True)
    assert coloured == "  \x1b[32mok\x1b[0m    probe      fine\n\x1b[32mhealthy\x1b[0m"


def test_commands_in_fixes_are_shell_quoted_and_pasteable() -> None:
    odd = "/opt/my cudnn/lib"
    assert str(delete(f"{odd}/libcudnn.so.9")) == "delete '/opt/my cudnn/lib/libcudnn.so.9'"
    assert str(remove_entry("LD_LIBRARY_PATH", odd)) == "remove '/opt/my cudnn/lib' from LD_LIBRARY_PATH"
    said = str(pip_install(["nvidia-cudnn-cu12>=9,<10"], python="/my venv/bin/python"))
    assert said == "'/my venv/bin/python' -m pip install 'nvidia-cudnn-cu12>=9,<10'"
    import shlex

    assert shlex.split(said) == ["/my venv/bin/python", "-m", "pip", "install", "nvidia-cudnn-cu12>=9,<10"]
    assert str(manual("install the driver")) == "install the driver"


def _at_terminal(args: list[str], env: dict[str, str], columns: int = 80) -> str:
    """What ``cudnnload ARGS`` prints to a terminal ``columns`` wide (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    child = subprocess.Popen([sys.executable, "-m", "cudnnload", *args], stdout=follower, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            child.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    child.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")


@pytest.mark.wheels
def test_doctor_fits_an_80_column_terminal_in_colour_and_a_pipe_gets_plain_text(tmp_path: Path) -> None:
    lib = lib_folder("cu12-9.0.0.312")
    env = {**{k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")},
           "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "TERM": "xterm",
           "LD_LIBRARY_PATH": str(lib)}
    seen = _at_terminal(["doctor", str(lib / "libcudnn.so.9")], env)
    plain = ANSI.sub("", seen)
    words = {w for line in plain.split("\n") for w in line.split() if len(w) > 70}  # a path longer than a line
    assert all(len(line) <= 80 or line.strip() in words for line in plain.split("\n")), plain
    assert ANSI.search(seen), seen
    assert not ANSI.search(_at_terminal(["doctor", str(lib / "libcudnn.so.9")], {**env, "NO_COLOR": "1"}))
    piped = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", str(lib / "libcudnn.so.9")], env=env,
                           capture_output=True, text=True, timeout=300)
    assert not ANSI.search(piped.stdout) and piped.stdout.strip()


def test_the_programs_command_line_is_echoed_shell_quoted(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--", sys.executable, "-c",
                           "print('a b')"], env=env, capture_output=True, text=True, timeout=300)
    echo = next(line for line in done.stdout.splitlines() if line.startswith("cudnnload doctor --"))
    assert echo == f"cudnnload doctor -- {sys.executable} -c 'print('\"'\"'a b'\"'\"')'", echo


# --- the memo: bounded, set aside when damaged, read once a command -----------------------------------------------

def test_the_elf_memo_never_grows_past_its_bound(tmp_path: Path) -> None:
    layout = elfcache.LAYOUT
    path = str(tmp_path / "elf.json")
    from cudnnload.cachedir import write_entries

    blob = "x" * 4000
    for start in range(0, 1500, 250):
        assert write_entries(path, layout, {("entries", f"/lib/{i}.so"): [[1, 2, 3, 4], blob]
                                            for i in range(start, start + 250)})
        assert os.path.getsize(path) <= layout.max_bytes
    kept = read_entries(path, layout)
    assert 0 < len(kept) <= layout.max_entries and ("entries", "/lib/1499.so") in kept  # the newest stay


def test_a_damaged_or_oversized_memo_is_set_aside_and_never_read_twice(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    layout = elfcache.LAYOUT
    for name, content in (("damaged.json", b'{"format": 7, "entries": {'),
                          ("big.json", b" " * (layout.max_bytes + 1))):
        path = tmp_path / name
        path.write_bytes(content)
        path.chmod(0o600)
        assert read_entries(str(path), layout) == {}
        assert not path.exists() and (tmp_path / f"{name}.set-aside").exists()
        assert "set aside" in capsys.readouterr().err
        assert read_entries(str(path), layout) == {}  # nothing to read the second time


@pytest.mark.wheels
def test_doctor_reads_the_memo_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"PATH": os.environ["PATH"], "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    site = lib_folder("cu12-9.28.0.42").parents[2]
    doctor(env, site_paths=[str(site)])  # fills the memo
    reads: list[str] = []
    real = elfcache.read_entries
    monkeypatch.setattr(elfcache, "read_entries", lambda path, layout: reads.append(path) or real(path, layout))
    elfcache._open.clear()
    report = doctor(env, site_paths=[str(site)])
    assert report.release == "9.28.0"
    assert reads == [elfcache.cache_file(env)], reads


def test_the_json_of_a_doctor_run_still_parses_with_colour_forced(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache"),
           "FORCE_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "cudnnload", "explain", "--json", "CUDNN_STATUS_NOT_INITIALIZED"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["kind"] == "explain"


def _wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A wheel as pip reads one (PEP 427): ``files``, and METADATA, WHEEL and a RECORD with their sha256."""
    import base64
    import hashlib

    info = f"{name.replace('-', '_')}-{version}.dist-info"
    members = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
               f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n"}
    record = "".join(f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                      f"{len(data)}\n" for path, data in members.items()) + f"{info}/RECORD,,\n"
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in {**members, f"{info}/RECORD": record.encode()}.items():
            archive.writestr(member, data)
    return path


def test_onnxruntime_installed_over_onnxruntime_gpu_is_the_cpu_build_and_its_fix_puts_the_gpu_one_back(
        tmp_path: Path) -> None:
    """Both packages write the folder onnxruntime/; pip installing the CPU one after the GPU one (a dependency of
    insightface, rembg, ...) leaves the CPU one's compiled module there: ONNX Runtime has no CUDA provider, though
    onnxruntime-gpu is listed as installed. doctor says so from RECORD's hashes, and its fix, applied with pip,
    leaves the GPU build alone in the folder."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    module = "onnxruntime/capi/onnxruntime_pybind11_state.so"
    _wheel(wheels, "onnxruntime-gpu", "1.20.1", {"onnxruntime/__init__.py": b"", module: b"\x7fELF gpu build",
                                                 "onnxruntime/capi/libonnxruntime_providers_cuda.so": b"\x7fELF cuda"})
    _wheel(wheels, "onnxruntime", "1.20.1", {"onnxruntime/__init__.py": b"", module: b"\x7fELF cpu build"})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = next((venv / "lib").glob("python3*/site-packages"))
    if not _pip_takes_python():
        pytest.skip("this pip has no --python option to install into a venv without pip")
    pip = [sys.executable, "-m", "pip", "--python", python]
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("onnxruntime-gpu", "onnxruntime"):  # the GPU one first, then the CPU one over it
        subprocess.run([*pip, "install", "-q", name], check=True, env=offline)

    (build,) = cpu_builds([str(site)])
    assert (build.framework, build.over) == ("onnxruntime", "onnxruntime-gpu==1.20.1") and module in build.why
    report = doctor({"PATH": os.environ["PATH"], "CUDNNLOAD_CACHE": str(tmp_path / "cache")}, site_paths=[str(site)])
    finding = next(f for f in report.findings if f.code is Code.CPU_ONLY_BUILD)
    uninstall, install = finding.fix.actions
    assert (uninstall.do.value, uninstall.requirements) == ("pip-uninstall", ("onnxruntime", "onnxruntime-gpu"))
    assert (install.do.value, install.requirements) == ("pip-install", ("onnxruntime-gpu==1.20.1",))
    subprocess.run([*pip, "uninstall", "-y", *uninstall.requirements], check=True, env=offline)
    subprocess.run([*pip, "install", "-q", *install.requirements], check=True, env=offline)
    assert cpu_builds([str(site)]) == () and (site / module).read_bytes() == b"\x7fELF gpu build"
    # the other order: the GPU build's files are the ones there, and nothing is said
    subprocess.run([*pip, "install", "-q", "--no-deps", "onnxruntime"], check=True, env=offline)
    subprocess.run([*pip, "install", "-q", "--force-reinstall", "--no-deps", "onnxruntime-gpu"], check=True,
                   env=offline)
    assert cpu_builds([str(site)]) == ()


def _pip_takes_python() -> bool:
    """pip 22.3+ installs into another interpreter's environment with its general option --python."""
    done = subprocess.run([sys.executable, "-m", "pip", "--help"], capture_output=True, text=True)
    return "--python" in done.stdout


def test_what_a_venvs_pip_counts_as_installed_elsewhere_is_read_from_its_configuration(tmp_path: Path) -> None:
    """pip says "Requirement already satisfied" for a distribution on any folder its interpreter searches: with the
    system's site-packages, the user site of HOME and the base installation's; PYTHONPATH always; never the
    venv's own site-packages, and no user site under PYTHONNOUSERSITE."""
    from cudnnload.resolve.pythons import seen_elsewhere

    venv, home, base = tmp_path / "venv", tmp_path / "home", tmp_path / "base"
    site = venv / "lib" / "python3.11" / "site-packages"
    dist_info(site, "nvidia-cudnn-cu12", "9.0.0.312")
    dist_info(home / ".local" / "lib" / "python3.11" / "site-packages", "nvidia-cudnn-cu13", "9.28.0.42")
    dist_info(base / "lib" / "python3.11" / "site-packages", "numpy", "2.1.0")
    dist_info(tmp_path / "extra", "nvidia-cublas-cu12", "12.9.1.4")
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = true\n")
    env = {"HOME": str(home), "PYTHONPATH": str(tmp_path / "extra")}
    assert seen_elsewhere(str(site), env) == {"nvidia-cudnn-cu13", "numpy", "nvidia-cublas-cu12"}
    assert seen_elsewhere(str(site), {**env, "PYTHONNOUSERSITE": "1"}) == {"numpy", "nvidia-cublas-cu12"}
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n")
    assert seen_elsewhere(str(site), env) == {"nvidia-cublas-cu12"}
    assert seen_elsewhere(str(tmp_path / "extra"), env) == frozenset()  # no site-packages of an interpreter
