"""cudnnload runs no code from where someone else can plant it (issue 29, 1): a library in a folder that
someone other than root and the user can write, or reached through an empty or relative search-path entry
(the current folder), is judged from its bytes and never mapped, not by cudnnload's own process, its probe,
``run``'s proof or ``trace``'s children; the verdict is an error naming it, since the program itself would
run it. A bare name on the command line is a name, never a file of the current folder.

The planted libraries (fixtures/synthetic/planted.c) append a line to ``$CUDNNLOAD_PLANTED`` the moment
anything maps them: every test asserts that line never appears.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.wheels import lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]
W928 = "cu12-9.28.0.42"
PLANTED_ENGINES = ("libcudnn_heuristic.so.9", "libcudnn_engines_precompiled.so.9",
                   "libcudnn_engines_runtime_compiled.so.9")

pytestmark = pytest.mark.wheels


def cli(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 120
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudnnload", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout, check=False)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "planted-ran"


@pytest.fixture
def environ(marker: Path, tmp_path: Path) -> dict[str, str]:
    """A child cudnnload's environment: cudnnload importable from the checkout (never from the current
    folder), a cache of its own, the planted libraries' marker."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": python_path(ROOT),
            "CUDNNLOAD_CACHE": os.environ.get("CUDNNLOAD_CACHE") or str(tmp_path / "cache"),
            "CUDNNLOAD_PLANTED": str(marker)}


def plant(folder: Path, synthetic_dir: Path, names: tuple[str, ...] = PLANTED_ENGINES, mode: int = 0o777) -> Path:
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(synthetic_dir / "planted" / name, folder / name)
    folder.chmod(mode)
    return folder


def findings(done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)["result"]["findings"]  # type: ignore[no-any-return]


def untrusted(found: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(f["path"]): f for f in found if f["code"] == "untrusted-library"}


# --- doctor ----------------------------------------------------------------------------------------------

def test_doctor_maps_no_library_from_a_world_writable_folder_and_calls_the_install_unhealthy(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    """Issue 29: with cuBLAS found, the doctor's probe ran the planted engines' constructors as root and then
    said `healthy`, exit 0, after one warning."""
    evil = plant(tmp_path / "evil", synthetic_dir)
    cublas = lib_folder("cublas-cu12-12.9.1.4")
    done = cli("doctor", "--json", str(lib_folder(W928)),
               env={**environ, "LD_LIBRARY_PATH": f"{evil}:{cublas}"})

    assert not marker.exists(), marker.read_text()
    assert done.returncode == 1, done.stderr
    named = untrusted(findings(done))
    assert {os.path.basename(path) for path in named} >= {"libcudnn_heuristic.so.9",
                                                          "libcudnn_engines_precompiled.so.9"}, named
    assert all(f["severity"] == "error" and str(evil) in str(f["message"]) for f in named.values())
    probe = next(c for c in json.loads(done.stdout)["result"]["checks"] if c["name"] == "probe")
    assert probe["status"] == "fail" and "not run" in probe["summary"]


def test_doctor_maps_nothing_the_current_folder_lends_through_an_empty_entry(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    here = plant(tmp_path / "work", synthetic_dir, mode=0o755)
    done = cli("doctor", "--json", str(lib_folder(W928)), env={**environ, "LD_LIBRARY_PATH": ":/nonexistent"},
               cwd=here)

    assert not marker.exists(), marker.read_text()
    assert done.returncode == 1
    assert any(os.path.basename(path) == "libcudnn_heuristic.so.9" for path in untrusted(findings(done)))


def test_a_bare_soname_is_a_name_never_the_file_of_that_name_in_the_current_folder(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    """Issue 29: `cd DIR && cudnnload doctor libcudnn.so.9` took a planted ./libcudnn.so.9 for the soname, ran
    it and reported cuDNN 9.99.99."""
    here = plant(tmp_path / "work", synthetic_dir, names=("libcudnn.so.9",), mode=0o755)
    env = {**environ, "LD_LIBRARY_PATH": str(lib_folder(W928))}
    doctor = cli("doctor", "--json", "libcudnn.so.9", env=env, cwd=here)
    which = cli("which", "--json", "libcudnn.so.9", env=env, cwd=here)

    assert not marker.exists(), marker.read_text()
    result = json.loads(doctor.stdout)["result"]
    assert result["target"]["kind"] == "soname" and result["release"] == "9.28.0", doctor.stdout[:2000]
    [step] = json.loads(which.stdout)["result"]["steps"]
    assert step["path"] == str(lib_folder(W928) / "libcudnn.so.9"), which.stdout[:2000]


def test_a_soname_an_empty_entry_finds_in_the_current_folder_is_named_never_run(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    """The linker itself would take ./libcudnn.so.9 here (the empty entry comes first): the doctor says so, as
    an error, and runs nothing of it; `which` says the same."""
    here = plant(tmp_path / "work", synthetic_dir, names=("libcudnn.so.9",), mode=0o755)
    env = {**environ, "LD_LIBRARY_PATH": f":{lib_folder(W928)}"}
    doctor = cli("doctor", "--json", "libcudnn.so.9", env=env, cwd=here)
    which = cli("which", "--json", "libcudnn.so.9", env=env, cwd=here)

    assert not marker.exists(), marker.read_text()
    assert doctor.returncode == 1 and which.returncode == 1
    assert "libcudnn.so.9" in untrusted(findings(doctor)) and "libcudnn.so.9" in untrusted(findings(which))
    assert json.loads(doctor.stdout)["result"]["release"] != "9.99.99"


# --- load(), run, trace --------------------------------------------------------------------------------------

_LOAD = """
import json, sys
from cudnnload.errors import LoadError
from cudnnload.loading.loader import load
try:
    got = load(sys.argv[1], use_cache=False)
    print(json.dumps({"loaded": got.folder}))
except LoadError as exc:
    print(json.dumps({"refused": exc.message}))
"""


def test_load_refuses_an_install_that_would_take_a_library_from_a_world_writable_folder(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    """load() maps the set by path, but what it skips (an engine that NEEDs the driver) the shim's graph then
    searches for, LD_LIBRARY_PATH first: the planted one, in the application's own process."""
    evil = plant(tmp_path / "evil", synthetic_dir)
    env = {**environ, "LD_LIBRARY_PATH": f"{evil}:{lib_folder('cublas-cu12-12.9.1.4')}"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_LOAD), str(lib_folder(W928))],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)

    assert not marker.exists(), marker.read_text()
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert "refused" in answer and str(evil) in answer["refused"], answer


def test_run_proves_nothing_by_running_a_planted_library_and_refuses_it(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    evil = plant(tmp_path / "evil", synthetic_dir)
    done = cli("run", "--cudnn", str(lib_folder(W928)), "--", "true",
               env={**environ, "LD_LIBRARY_PATH": f"{evil}:{lib_folder('cublas-cu12-12.9.1.4')}"}, cwd=tmp_path)

    assert not marker.exists(), marker.read_text()
    assert done.returncode == 2 and str(evil) in done.stderr, done.stderr


def test_an_install_in_a_world_writable_folder_is_never_probed_or_traced(
        tmp_path: Path, marker: Path, environ: dict[str, str], synthetic_dir: Path) -> None:
    """The shim itself where anyone could have replaced it: given by path, it is still judged from its bytes."""
    open_ = tmp_path / "open"
    open_.mkdir()
    for entry in lib_folder(W928).iterdir():
        os.link(entry, open_ / entry.name)
    os.unlink(open_ / "libcudnn_heuristic.so.9")
    shutil.copy(synthetic_dir / "planted" / "libcudnn_heuristic.so.9", open_)
    open_.chmod(0o777)
    doctor = cli("doctor", "--json", str(open_), env=environ)
    trace = cli("trace", "--runs", "1", "--no-conv", "--lazy", str(open_), env=environ)

    assert not marker.exists(), marker.read_text()
    assert doctor.returncode == 1 and str(open_ / "libcudnn.so.9") in untrusted(findings(doctor))
    assert trace.returncode == 2 and "untrusted-library" in trace.stderr, trace.stderr


def test_cudnnloads_own_process_never_maps_a_driver_planted_on_its_search_path(
        tmp_path: Path, synthetic_dir: Path, marker: Path, environ: dict[str, str]) -> None:
    """The driver is the one library cudnnload opens by name in its own process (the doctor's GPU facts, the
    backends' device count): one in a folder anyone can write is not opened, and the report says why."""
    evil = plant(tmp_path / "evil", synthetic_dir, names=("libcuda.so.1",))
    env = {**environ, "LD_LIBRARY_PATH": str(evil)}
    counted = subprocess.run([sys.executable, "-c", "from cudnnload.loading.gpu import device_count, gpu_facts\n"
                              "print(device_count()[1]); print(gpu_facts().reason)"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False)

    assert not marker.exists(), marker.read_text()
    assert counted.returncode == 0, counted.stderr
    assert counted.stdout.count(f"{evil}/libcuda.so.1") == 2, counted.stdout


# --- the probe on its own ---------------------------------------------------------------------------------------

def test_the_probe_leaves_untrusted_search_path_entries_out_of_its_child(
        tmp_path: Path, synthetic_dir: Path, marker: Path) -> None:
    """Whatever a caller asks: the child's LD_LIBRARY_PATH keeps only folders nobody else can write, and it
    runs outside the current folder."""
    from cudnnload.loading.probe import probe

    evil = plant(tmp_path / "evil", synthetic_dir)
    here = plant(tmp_path / "here", synthetic_dir, mode=0o755)
    shim = lib_folder(W928) / "libcudnn.so.9"
    os.chdir(here)
    try:
        result = probe([("shim", str(shim))], 9, app=True,
                       environ={"LD_LIBRARY_PATH": f"{evil}::rel:{lib_folder('cublas-cu12-12.9.1.4')}",
                                "CUDNNLOAD_PLANTED": str(marker),
                                "PATH": "/usr/bin:/bin"})
    finally:
        os.chdir(ROOT)
    assert not marker.exists(), marker.read_text()
    assert result.completed, result.verdict
    assert not any(str(evil) in path or str(here) in path for path in result.mapped)


def test_the_probe_refuses_a_file_someone_else_can_replace(tmp_path: Path, synthetic_dir: Path, marker: Path) -> None:
    from cudnnload.loading.probe import probe

    evil = plant(tmp_path / "evil", synthetic_dir, names=("libcudnn.so.9",))
    result = probe([("shim", str(evil / "libcudnn.so.9"))], 9, environ={"CUDNNLOAD_PLANTED": str(marker)})

    assert not marker.exists()
    assert result.outcome == "refused" and str(evil) in result.verdict and result.returncode is None


def test_root_asking_about_another_users_venv_runs_its_start_up_as_that_user(environ: dict[str, str]) -> None:
    """`doctor --python VENV` as root, of a venv ``nobody`` made: its start-up (a ``.pth`` line nobody wrote, which
    could do anything) is observed as nobody, never with root's rights; the answer is the same venv judged."""
    import pwd
    import tempfile

    from cudnnload.children import owner_of_python
    from fixtures.reliability import nobody

    why = nobody.unavailable()
    if why is not None:
        pytest.skip(f"cannot run as nobody: {why}")
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-nobody-"))  # where nobody can go, unlike tmp_path
    try:
        folder.chmod(0o777)
        venv = folder / "venv"
        subprocess.run([*nobody.prefix(), nobody.interpreter() or "", "-m", "venv", "--without-pip", str(venv)],
                       check=True, capture_output=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
        marker = folder / "ran"
        (site,) = venv.glob("lib/python3*/site-packages")
        planted = site / "zz-planted.pth"
        planted.write_text(f"import os; open({str(marker)!r}, 'a').write(str(os.geteuid()) + ' ')\n")
        user = pwd.getpwnam("nobody")
        os.chown(planted, user.pw_uid, user.pw_gid)
        done = cli("doctor", "--json", "--python", str(venv), env=environ)
        ran = marker.read_text().split() if marker.exists() else []
        assert ran and set(ran) == {str(user.pw_uid)}, (ran, done.stderr[-800:])
        assert owner_of_python(str(venv / "bin" / "python")) == user.pw_uid  # its framework's import too
        assert json.loads(done.stdout)["result"]["target"]["python"].startswith(str(venv)), done.stdout[:400]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_root_asking_about_its_own_venv_whose_site_packages_anyone_may_write_runs_its_start_up_as_nobody(
        environ: dict[str, str]) -> None:
    """`doctor --python VENV` as root, of root's own venv whose ``site-packages`` anyone may write: a ``.pth``
    line anyone could have put there runs as nobody, never as root (only the venv's owner counted before: root)."""
    import pwd
    import tempfile

    from fixtures.reliability import nobody

    why = nobody.unavailable()
    if why is not None or os.geteuid() != 0:
        pytest.skip(f"cannot run as nobody: {why or 'not root'}")
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-open-site-"))
    try:
        folder.chmod(0o777)
        venv = folder / "venv"
        subprocess.run([nobody.interpreter() or sys.executable, "-m", "venv", "--without-pip", str(venv)],
                       check=True, capture_output=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
        marker = folder / "ran"
        (site,) = venv.glob("lib/python3*/site-packages")
        site.chmod(0o777)
        (site / "zz-planted.pth").write_text(
            f"import os; open({str(marker)!r}, 'a').write(str(os.geteuid()) + ' ')\n")
        done = cli("doctor", "--json", "--python", str(venv), env=environ)
        ran = marker.read_text().split() if marker.exists() else []
        assert ran and set(ran) == {str(pwd.getpwnam("nobody").pw_uid)}, (ran, done.stderr[-800:])
        assert json.loads(done.stdout)["result"]["target"]["python"].startswith(str(venv)), done.stdout[:400]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_whose_code_a_python_runs_counts_everyone_who_may_write_where_its_start_up_reads(tmp_path: Path) -> None:
    """`owner_of_python`: the venv's owner; another user who owns a ``.pth`` file or a PYTHONPATH folder; nobody
    where a group or everyone may write its ``site-packages``."""
    from cudnnload.children import NOBODY, owner_of_python

    if os.geteuid() != 0:
        pytest.skip("needs root to give files to other users")
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = str(venv / "bin" / "python")
    assert owner_of_python(python) == 0
    pth = site / "a.pth"
    pth.write_text("\n")
    os.chown(pth, 4321, 4321)
    assert owner_of_python(python) == 4321  # root's venv, another's line: theirs
    os.chown(venv / "pyvenv.cfg", 1234, 1234)
    assert owner_of_python(python) == NOBODY  # two users' code: neither's
    os.chown(venv / "pyvenv.cfg", 0, 0)
    os.chown(pth, 0, 0)
    extra = tmp_path / "extra"
    extra.mkdir()
    os.chown(extra, 4321, 4321)
    assert owner_of_python(python, [str(extra)]) == 4321
    extra.chmod(0o777)
    site.chmod(0o775)
    os.chown(site, 0, 4321)  # a group with no name: not the owner's private one
    assert owner_of_python(python) == NOBODY
    site.chmod(0o755)
    assert owner_of_python(python) == 0
    assert owner_of_python(python, [str(extra)]) == NOBODY
