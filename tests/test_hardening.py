"""Hostile caches and odd files: a planted cache runs nothing, an unsafe cache folder is not used, a FIFO,
a socket or a device where a library is looked for is a finding, never a hang."""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudnnload.cachedir import cache_dir, folder_problem, plain, read_json, revive, write_json
from cudnnload.resolve.elfcache import KINDS, ElfCache, cache_file
from tests.wheels import lib_folder, python_path, site_folder

ROOT = Path(__file__).resolve().parents[1]
W928 = "cu12-9.28.0.42"


class _Payload:
    """What an attacker plants: unpickling it runs a shell command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return os.system, (f"touch {self.marker}",)


def cli(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": python_path(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "cudnnload", *args], capture_output=True, text=True, env=environ,
                          timeout=timeout, check=False)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    return folder


# --- caches hold data -------------------------------------------------------------------------------------

@pytest.mark.wheels
def test_a_planted_pickle_runs_nothing_under_any_cache_name(cache: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(marker))
    names = ["elf-v2.pickle", "elf-v5.pickle", "plans-v2.pickle", "plans-v3.pickle", os.path.basename(
        cache_file({"CUDNNLOAD_CACHE": str(cache)}) or ""), "plans-v4.json", "algos-v1.json"]
    for name in names:
        (cache / name).write_bytes(payload)
        (cache / name).chmod(0o600)
    done = cli("inspect", "--json", str(lib_folder(W928)), env={"CUDNNLOAD_CACHE": str(cache)})
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr  # 1: no cuBLAS beside it
    assert not marker.exists(), "a cache file ran code"
    assert json.loads(done.stdout)["result"]["installs"][0]["release"] == "9.28.0"
    # the garbage under the memo's own name was replaced by JSON data
    assert isinstance(read_json(str(cache / names[4])), dict)


@pytest.mark.wheels
def test_a_cache_file_others_can_write_is_ignored_with_one_warning(cache: Path, tmp_path: Path) -> None:
    env = {"CUDNNLOAD_CACHE": str(cache)}
    assert "Traceback" not in cli("inspect", str(lib_folder(W928)), env=env).stderr
    memo = Path(cache_file(env) or "")
    content = json.loads(memo.read_text())
    content["entries"] = {}  # what a planted memo would change; here: nothing remembered
    memo.write_text(json.dumps(content))
    memo.chmod(0o666)
    done = cli("inspect", str(lib_folder(W928)), env=env)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("cudnnload: warning:")]
    assert len(warnings) == 1 and str(memo) in warnings[0] and "writable by group or others" in warnings[0]


def test_a_cache_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    assert cache_dir({"CUDNNLOAD_CACHE": str(folder)}) is None
    assert "chmod 700" in (folder_problem(str(folder)) or "")
    done = cli("inspect", str(tmp_path), env={"CUDNNLOAD_CACHE": str(folder)})
    assert done.stderr.count("cudnnload: warning: not using the cache folder") == 1
    assert os.listdir(folder) == []  # nothing written there


def test_a_cache_folder_under_a_world_writable_folder_without_sticky_bit_is_not_used(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    assert "without the sticky bit" in (folder_problem(str(open_folder / "cudnnload")) or "")
    open_folder.chmod(0o1777)  # like /tmp: others cannot rename what is ours
    assert folder_problem(str(open_folder / "cudnnload")) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    assert "belongs to uid 65534" in (folder_problem(str(folder)) or "")
    assert cache_dir({"CUDNNLOAD_CACHE": str(folder)}) is None


# --- where the cache goes (issue 29, 4) -----------------------------------------------------------------

@pytest.fixture
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's home as the password database has it, for the fallback (never the real one's cache)."""
    import cudnnload.cachedir

    home = tmp_path / "own-home"
    home.mkdir()
    monkeypatch.setattr(cudnnload.cachedir, "_own_home", lambda: str(home))
    return home


@pytest.fixture
def other_home(tmp_path: Path) -> Path:
    """Another user's home (uid 54321), as `sudo -E` leaves HOME: no .cache in it yet."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    home = tmp_path / "alice"
    home.mkdir(mode=0o755)
    os.chown(home, 54321, 54321)
    return home


def test_no_folder_is_made_in_a_home_of_another_user_and_the_fallback_is_said(
        other_home: Path, own_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: root with another user's HOME (sudo -E) made ~/.cache, owned by root, in that home, which then
    broke that user's pip."""
    folder = cache_dir({"HOME": str(other_home)})

    assert folder == str(own_home / ".cache" / "cudnnload")
    assert write_json(os.path.join(folder, "x.json"), {"a": 1})
    assert os.listdir(other_home) == []
    warning = capsys.readouterr().err
    assert warning.count("cudnnload: warning:") == 1 and str(other_home) in warning and folder in warning


def test_a_home_that_does_not_exist_is_not_made_and_no_cache_is_kept(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """HOME=/nonexistent/x (Debian's system users have /nonexistent, which must stay absent) made /nonexistent/x/.cache
    as root; a home is nobody's to make."""
    home = tmp_path / "nonexistent" / "x"
    assert cache_dir({"HOME": str(home)}) is None
    assert os.listdir(tmp_path) == []
    warning = capsys.readouterr().err
    assert warning.count("cudnnload: warning:") == 1 and f"the home folder {home} does not exist" in warning


@pytest.mark.parametrize("variables", [{"HOME": ""}, {"HOME": "relative-home"},
                                       {"HOME": "", "XDG_CACHE_HOME": "relative-xdg"},
                                       {"HOME": "", "CUDNNLOAD_CACHE": "relative-cache"},
                                       {"HOME": "", "XDG_CACHE_HOME": "", "CUDNNLOAD_CACHE": ""}])
def test_empty_or_relative_cache_variables_are_ignored_as_the_xdg_rules_say(
        variables: dict[str, str], own_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: an empty HOME wrote /.cache/cudnnload; a relative XDG_CACHE_HOME or CUDNNLOAD_CACHE made folders
    in the current folder (the XDG base directory rules: a relative path is invalid and is ignored)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    folder = cache_dir(variables)

    assert folder == str(own_home / ".cache" / "cudnnload")
    assert write_json(os.path.join(folder, "x.json"), {"a": 1})
    assert os.listdir(work) == []


def test_a_relative_xdg_cache_home_leaves_the_current_folder_alone_on_the_command_line(
        tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    done = subprocess.run([sys.executable, "-m", "cudnnload", "inspect", str(tmp_path / "missing")], cwd=work,
                          env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": python_path(ROOT), "HOME": str(home),
                               "XDG_CACHE_HOME": "cache", "CUDNNLOAD_CACHE": "also-relative"},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert os.listdir(work) == []
    assert (home / ".cache" / "cudnnload").is_dir()
    assert "CUDNNLOAD_CACHE='also-relative'" in done.stderr


def test_the_cache_folder_is_created_owner_only(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "cudnnload"
    assert write_json(str(folder / "x.json"), {"a": 1})
    assert (folder.stat().st_mode & 0o777) == 0o700 and ((folder / "x.json").stat().st_mode & 0o777) == 0o600


def test_a_cache_file_that_is_a_symlink_or_a_fifo_is_not_read(cache: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.json").write_text('{"format": 6}')
    (cache / "link.json").symlink_to(tmp_path / "elsewhere.json")
    os.mkfifo(cache / "pipe.json")
    started = time.monotonic()
    assert read_json(str(cache / "link.json")) is None
    assert read_json(str(cache / "pipe.json")) is None
    assert time.monotonic() - started < 1


def test_records_come_back_only_as_the_kinds_given() -> None:
    from cudnnload.resolve.elf import read_elf

    info = read_elf(sys.executable)
    assert revive(json.loads(json.dumps(plain(info))), "ElfInfo", KINDS) == info
    with pytest.raises(ValueError):
        revive({"@": "system", "f": ["touch /tmp/x"]}, "ElfInfo", KINDS)
    with pytest.raises(ValueError):
        revive({"@": "ElfInfo", "f": [1]}, "ElfInfo", KINDS)  # fields that do not fit


@pytest.mark.wheels
def test_the_memo_round_trips_and_a_changed_file_is_read_again(cache: Path, tmp_path: Path) -> None:
    shim = tmp_path / "libcudnn.so.9"
    shim.write_bytes((lib_folder(W928) / "libcudnn.so.9").read_bytes())
    location = str(cache / "elf.json")
    first = ElfCache(location)
    info = first.inspect(str(shim))
    first.remember(("a", 1, (2, 3)), {"x": (1, 2)})
    first.save()
    again = ElfCache(location)
    assert again.inspect(str(shim)) == info and not again.dirty  # from the memo
    assert again.recall(("a", 1, (2, 3)), "dict[str, tuple[int, ...]]") == {"x": (1, 2)}
    shim.write_bytes(shim.read_bytes()[:4096])  # replaced: another size, another mtime
    with pytest.raises(Exception, match="truncated|damaged"):
        ElfCache(location).inspect(str(shim))


@pytest.mark.wheels
def test_a_planted_verdict_does_not_skip_the_probe(cache: Path) -> None:
    """A verdict memo in the right place, for the right folder, but not proven on these files (or in a
    folder others can write): load() proves the set again in its child process."""
    folder = str(lib_folder(W928))
    script = ("import sys, cudnnload; got = cudnnload.load(sys.argv[1]); "
              "print('cached' if got.verdict_cached else 'probed')")
    env = {"CUDNNLOAD_CACHE": str(cache), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": python_path(ROOT)}

    def load() -> str:
        return subprocess.run([sys.executable, "-c", script, folder], capture_output=True, text=True, env=env,
                              timeout=60, check=True).stdout.strip()

    assert load() == "probed"
    assert load() == "cached"
    store = next(cache.glob("plans-v*.json"))
    content = json.loads(store.read_text())
    for plan in content["plans"].values():
        plan["f"][-1] = [[1, 2, 3, 4] for _ in plan["f"][-1]]  # stamps of other files
    store.write_text(json.dumps(content))
    assert load() == "probed"
    store.chmod(0o666)  # and a verdict others could have written is not read at all
    assert load() == "probed"


# --- files that are not files ------------------------------------------------------------------------------

@pytest.fixture
def odd_folder(tmp_path: Path) -> Iterator[Path]:
    """A FIFO, a socket and /dev/zero, named as sub-libraries a 9.28 shim looks for on LD_LIBRARY_PATH."""
    folder = tmp_path / "odd"
    folder.mkdir()
    os.mkfifo(folder / "libcudnn_engines_precompiled.so.9")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "libcudnn_heuristic.so.9"))
    (folder / "libcudnn_engines_runtime_compiled.so.9").symlink_to("/dev/zero")
    yield folder
    server.close()


ODD = {"libcudnn_engines_precompiled.so.9": "a FIFO", "libcudnn_heuristic.so.9": "a socket",
       "libcudnn_engines_runtime_compiled.so.9": "a character device"}


def _odd_findings(stdout: str, folder: Path) -> dict[str, str]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("  error   not-a-regular-file"):
            name = next(n for n in ODD if str(folder / n) in line)
            found[name] = line
    return found


def test_inspect_names_a_fifo_a_socket_and_a_device_at_once(odd_folder: Path, cache: Path) -> None:
    started = time.monotonic()
    done = cli("inspect", str(odd_folder), env={"CUDNNLOAD_CACHE": str(cache)}, timeout=10)
    assert time.monotonic() - started < 10
    assert done.returncode == 1 and "Traceback" not in done.stderr
    found = _odd_findings(done.stdout, odd_folder)
    assert set(found) == set(ODD) and all(ODD[name] in line for name, line in found.items()), done.stdout
    assert "empty file" not in done.stdout  # /dev/zero is a device, not a 0-byte library


@pytest.mark.wheels
@pytest.mark.parametrize("command", ["which", "doctor"])
def test_which_and_doctor_with_them_on_ld_library_path_do_not_hang(odd_folder: Path, cache: Path,
                                                                   command: str) -> None:
    env = {"CUDNNLOAD_CACHE": str(cache), "LD_LIBRARY_PATH": str(odd_folder),
           "PYTHONPATH": python_path(ROOT, site_folder(W928))}
    started = time.monotonic()
    done = cli(command, env=env, timeout=10)
    assert time.monotonic() - started < 10
    assert done.returncode == 1 and "Traceback" not in done.stderr
    fifo = str(odd_folder / "libcudnn_engines_precompiled.so.9")
    assert f"hangs inside dlopen (opening {fifo}, a FIFO" in done.stdout
    if command == "doctor":
        assert set(_odd_findings(done.stdout, odd_folder)) == set(ODD)
        assert "probe      not run: as predicted, cudnnBackendFinalize hangs" in done.stdout


def test_the_linker_model_never_opens_them_and_agrees_with_glibc(odd_folder: Path) -> None:
    """glibc: a FIFO blocks open() (dlopen hangs), a socket's ENXIO abandons that search list, a device is
    read and rejected. Checked against the real dlopen in a child process with a time limit."""
    from cudnnload.resolve import linker

    env = linker.LinkerEnv.from_environ({"LD_LIBRARY_PATH": str(odd_folder)})
    fifo, sock, device = (str(odd_folder / name) for name in ODD)
    assert linker.opening(fifo, env)[0] == "fifo"
    assert linker.opening(device, env)[0] == "device"
    tried = linker.resolve(os.path.basename(sock), None, env).trail
    assert next(a.outcome for a in tried if a.path == sock) == "open-error"

    def dlopen(path: str) -> str:
        try:
            return subprocess.run([sys.executable, "-c", "import ctypes, sys\ntry:\n ctypes.CDLL(sys.argv[1]); "
                                   "print('loaded')\nexcept OSError as e: print(e)", path],
                                  capture_output=True, text=True, timeout=3, check=False).stdout
        except subprocess.TimeoutExpired:
            return "hung"

    assert dlopen(fifo) == "hung"
    assert "invalid ELF header" in dlopen(device) or "file too short" in dlopen(device)
    assert "No such file" in dlopen(sock) or "cannot open" in dlopen(sock)


def test_what_a_killed_writer_left_is_swept_but_a_writer_at_work_is_not(cache: Path) -> None:
    stale, fresh = cache / ".tmp-dead.json", cache / ".tmp-busy.json"
    stale.write_text("{half")
    fresh.write_text("{half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert write_json(str(cache / "x.json"), [1])
    assert not stale.exists() and fresh.exists() and read_json(str(cache / "x.json")) == [1]
