"""`cudnnload doctor --pid PID`: a running process that loaded a real cuDNN wheel's shim, read from /proc and
diagnosed without being touched; bad PIDs answered in one line with exit 2."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cudnnload.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from cudnnload.codes import ActionKind, Code, Severity
from cudnnload.diagnose import pid as pid_module
from cudnnload.diagnose.pid import DELETED, ON_DISK, REPLACED, ProcessReport, diagnose_pid, read_process
from cudnnload.errors import UsageError
from fixtures.reliability import nobody
from tests.test_doctor_targets import cli, one_line_error
from tests.wheels import lib_folder

W928, W90, CUBLAS = "cu12-9.28.0.42", "cu12-9.0.0.312", "cublas-cu12-12.9.1.4"
_LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG", "LD_AUDIT")
BASE = {key: value for key, value in os.environ.items() if key not in _LOADER_VARIABLES}

# Loads the shim by path and asks its version (the shim then maps graph), says so, and waits: each line it reads
# names a shim function to call (the shim then maps what serves it), answered with the libcudnn files mapped.
_CHILD = """
import ctypes, json, sys
shim = ctypes.CDLL(sys.argv[1])
shim.cudnnGetVersion()
for extra in sys.argv[2:]:
    ctypes.CDLL(extra)
print("ready", flush=True)
for line in sys.stdin:
    getattr(shim, line.strip())()
    maps = sorted({line.split(maxsplit=5)[5].strip() for line in open("/proc/self/maps") if "libcudnn" in line})
    print(json.dumps(maps), flush=True)
"""


class Child:
    """A Python that loaded a shim and waits on its stdin."""

    def __init__(self, shim: Path, environ: dict[str, str], extra: tuple[Path, ...] = ()) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _CHILD, str(shim), *map(str, extra)], env=environ,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    @property
    def pid(self) -> int:
        return self.process.pid

    def call(self, function: str) -> list[str]:
        """The shim's ``function`` called in the child; the libcudnn files it has mapped then."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(function + "\n")
        self.process.stdin.flush()
        mapped: list[str] = json.loads(self.process.stdout.readline())
        return mapped

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


@pytest.fixture
def child() -> Iterator[Callable[..., Child]]:
    """``child(shim, environ)``: a child that loaded ``shim``, killed at teardown whatever the test did."""
    started: list[Child] = []

    def start(shim: Path, environ: dict[str, str] | None = None, extra: tuple[Path, ...] = ()) -> Child:
        started.append(Child(shim, environ or BASE, extra))
        return started[-1]

    yield start
    for each in started:
        each.end()


def _with_cublas() -> dict[str, str]:
    """The child's environment with the cuBLAS wheel on LD_LIBRARY_PATH (cuDNN dlopens cuBLASLt at run time)."""
    return {**BASE, "LD_LIBRARY_PATH": str(lib_folder(CUBLAS))}


def _codes(report: ProcessReport) -> set[Code]:
    return {f.code for f in report.findings}


def _copy(folder: Path, into: Path) -> Path:
    """``folder``'s files hard-linked into ``into`` (the cache's own files are never written)."""
    into.mkdir(parents=True)
    for path in folder.iterdir():
        os.link(path, into / path.name)
    return into


# --- a process that loaded the 9.28 wheel -----------------------------------------------------------------

def test_the_mapped_shim_and_graph_are_named_with_their_release_and_wheel(child: Callable[..., Child]) -> None:
    lib = lib_folder(W928)
    running = child(lib / "libcudnn.so.9", _with_cublas())
    report = diagnose_pid(running.pid)
    cudnn = {os.path.basename(m.path): m for m in report.libraries if m.major == 9}
    assert set(cudnn) == {"libcudnn.so.9", "libcudnn_graph.so.9"}
    assert all((m.release and str(m.release), m.state, os.path.dirname(m.path)) == ("9.28.0", ON_DISK, str(lib))
               for m in cudnn.values())
    (install,) = report.inventory.installs
    assert (install.folder, install.distribution) == (str(lib), "nvidia-cudnn-cu12 9.28.0.42")
    assert report.healthy and {c.name: c.status for c in report.checks}["coherent"] == "ok"


def test_each_sub_library_not_loaded_yet_is_predicted_where_the_shim_then_gets_it(
        child: Callable[..., Child]) -> None:
    """The prediction for cnn, made while the process has not loaded it, is the file it maps when it does."""
    lib = lib_folder(W928)
    running = child(lib / "libcudnn.so.9", _with_cublas())
    report = diagnose_pid(running.pid)
    pending = {step.library: step for step in report.pending}
    assert {"ops", "cnn", "adv", "heuristic", "engines_precompiled"} <= set(pending)
    assert "graph" not in pending  # mapped already
    assert all(step.inside_install and os.path.dirname(step.path or "") == str(lib) for step in pending.values())
    assert pending["cnn"].rule == "rpath"
    mapped = running.call("cudnnCnnVersionCheck")
    assert pending["cnn"].path in mapped and pending["ops"].path in mapped


def test_the_command_line_prints_the_report_and_exits_0_for_a_healthy_process(
        child: Callable[..., Child]) -> None:
    running = child(lib_folder(W928) / "libcudnn.so.9", _with_cublas())
    done = cli("doctor", "--pid", str(running.pid))
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert done.stdout.startswith(f"cudnnload doctor --pid {running.pid}: ")
    assert "libcudnn_graph.so.9" in done.stdout and "cuDNN 9.28.0" in done.stdout
    assert "not loaded yet" in done.stdout and done.stdout.rstrip().endswith("healthy")
    as_json = cli("doctor", "--pid", str(running.pid), "--json")
    document = json.loads(as_json.stdout)
    assert (document["kind"], document["result"]["pid"], document["result"]["healthy"]) == (
        "doctor-process", running.pid, True)
    assert running.process.poll() is None  # read, never stopped


# --- what only a running process shows ------------------------------------------------------------------

def test_a_preloaded_graph_of_another_release_is_mixed_release_naming_ld_preload(
        child: Callable[..., Child]) -> None:
    preload = str(lib_folder(W90) / "libcudnn_graph.so.9")
    running = child(lib_folder(W928) / "libcudnn.so.9", {**_with_cublas(), "LD_PRELOAD": preload})
    report = diagnose_pid(running.pid)
    graph = next(m for m in report.libraries if m.library == "graph")
    assert (graph.path, str(graph.release), graph.preloaded_by) == (preload, "9.0.0", preload)
    mixed = [f for f in report.findings if f.code is Code.MIXED_RELEASE and f.subject.variable == "LD_PRELOAD"]
    assert mixed and all(f.subject.entry == preload for f in mixed)
    # the entry goes, then the process starts again: it runs what it mapped until then (the model finds 9.28's
    # wheel whole for a start without the entry)
    assert [(a.do, a.variable, a.entry, a.pid) for a in mixed[0].fix.actions] == [
        (ActionKind.ENV_REMOVE_ENTRY, "LD_PRELOAD", preload, None), (ActionKind.RESTART, None, None, running.pid)]
    in_process = next(f for f in report.findings if f.code is Code.MIXED_IN_PROCESS)
    assert [(a.do, a.entry) for a in in_process.fix.actions] == [(ActionKind.ENV_REMOVE_ENTRY, preload),
                                                                  (ActionKind.RESTART, None)]
    assert not report.healthy
    done = cli("doctor", "--pid", str(running.pid))
    assert done.returncode == EXIT_PROBLEMS and f"LD_PRELOAD {preload}" in done.stdout


def test_two_releases_mapped_from_the_shims_folder_now_whole_are_cured_by_a_restart(
        child: Callable[..., Child], tmp_path: Path) -> None:
    """A 9.0 graph under a versioned name in the 9.28 wheel's folder, opened by the process, then taken away: the
    process maps two releases of one folder, whose disk now holds 9.28 whole. Started afresh it maps one release,
    so the restart is the action (it was a `manual` line); from another folder, the process's own opening of it by
    path would happen again, and that stays said in words."""
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    stray = lib / "libcudnn_graph.so.9.0.0"
    os.link(lib_folder(W90) / "libcudnn_graph.so.9", stray)
    running = child(lib / "libcudnn.so.9", _with_cublas(), (stray,))
    stray.unlink()
    mixed = next(f for f in diagnose_pid(running.pid).findings if f.code is Code.MIXED_IN_PROCESS)
    assert [a.do for a in mixed.fix.actions] == [ActionKind.RESTART] and "whole for a start afresh" in str(
        mixed.fix.note)
    elsewhere = child(lib / "libcudnn.so.9", _with_cublas(), (lib_folder(W90) / "libcudnn_graph.so.9",))
    mixed = next(f for f in diagnose_pid(elsewhere.pid).findings if f.code is Code.MIXED_IN_PROCESS)
    assert [a.do for a in mixed.fix.actions] == [ActionKind.MANUAL]


def test_a_restart_is_judged_with_what_the_pythons_start_up_maps_now(child: Callable[..., Child],
                                                                       tmp_path: Path) -> None:
    """The process of the test above; since it started, a ``sitecustomize`` on its PYTHONPATH came to load 9.0's
    ops (fix differential 3-605: a ``.pth`` line written after the process started). A restart runs its start-up
    again and maps 9.0's ops before the program's shim: not one release; the line taken out, then the restart; where
    no line can be taken out, the restart in words, with why. A start from a shell whose LD_LIBRARY_PATH differs is
    judged too, and said in the restart's note."""
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    stray = lib / "libcudnn_graph.so.9.0.0"
    os.link(lib_folder(W90) / "libcudnn_graph.so.9", stray)
    startup = tmp_path / "startup"
    startup.mkdir()
    running = child(lib / "libcudnn.so.9", {**_with_cublas(), "PYTHONPATH": str(startup)}, (stray,))
    stray.unlink()
    mixed = next(f for f in diagnose_pid(running.pid).findings if f.code is Code.MIXED_IN_PROCESS)
    assert [a.do for a in mixed.fix.actions] == [ActionKind.RESTART], mixed.fix

    shell = {**os.environ, "PYTHONPATH": str(startup)}  # this shell lacks the cuBLAS folder the process has
    mixed = next(f for f in diagnose_pid(running.pid, environ=shell).findings if f.code is Code.MIXED_IN_PROCESS)
    assert [a.do for a in mixed.fix.actions] == [ActionKind.RESTART], mixed.fix
    assert f"LD_LIBRARY_PATH={lib_folder(CUBLAS)}" in str(mixed.fix.note) and "libcublasLt" in str(mixed.fix.note)

    # the start-up line is taken out first (its finding's own fix, which the model applies to the start), then the
    # restart: whole after both
    ops = lib_folder(W90) / "libcudnn_ops.so.9"
    line = f"ctypes.CDLL({str(ops)!r}, mode=ctypes.RTLD_GLOBAL)"
    (startup / "sitecustomize.py").write_text(f"import ctypes\n{line}\n")
    mixed = next(f for f in diagnose_pid(running.pid).findings if f.code is Code.MIXED_IN_PROCESS)
    assert [(a.do, a.path, a.line) for a in mixed.fix.actions] == [
        (ActionKind.REMOVE_LINE, str(startup / "sitecustomize.py"), line), (ActionKind.RESTART, None, None)], mixed.fix

    # a start-up whose stray the model cannot take out by a line: the restart in words, with what stands in its way
    (startup / "sitecustomize.py").write_text(f"import ctypes\nfor _ in range(1):\n    {line}\n")
    mixed = next(f for f in diagnose_pid(running.pid).findings if f.code is Code.MIXED_IN_PROCESS)
    [words] = mixed.fix.actions
    # (9.0's ops brings 9.0's graph, which the 9.28 shim then takes: the graph-API functions it forwards are missing)
    assert words.do is ActionKind.MANUAL and f"({lib_folder(W90)}/libcudnn_graph.so.9, cuDNN 9.0.0)" in str(
        words.text), mixed.fix


@pytest.mark.parametrize("how", [REPLACED, DELETED])
def test_a_mapped_file_replaced_or_deleted_since_is_reported(child: Callable[..., Child], tmp_path: Path,
                                                              how: str) -> None:
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    running = child(lib / "libcudnn.so.9", _with_cublas())
    graph = lib / "libcudnn_graph.so.9"
    if how == REPLACED:
        os.link(lib_folder(W90) / "libcudnn_graph.so.9", tmp_path / "other")
        os.replace(tmp_path / "other", graph)
    else:
        graph.unlink()
    report = diagnose_pid(running.pid)
    mapped = next(m for m in report.libraries if m.library == "graph")
    assert (mapped.path, mapped.state) == (str(graph), how)
    if os.geteuid() == 0:  # the file mapped, read through /proc/PID/map_files
        assert str(mapped.release) == "9.28.0"
    replaced = [f for f in report.findings if f.code is Code.MAPPED_FILE_REPLACED]
    assert [f.path for f in replaced] == [str(graph)]
    assert {c.name: c.status for c in report.checks}["files"] == "warn"
    # the folder holds two releases now (or lacks its graph): a restart alone would not map one whole release
    assert [a.do for a in replaced[0].fix.actions] == [ActionKind.MANUAL]


@pytest.mark.skipif(os.geteuid() != 0, reason="the release of a replaced file is read through map_files (root)")
def test_sub_libraries_not_loaded_yet_from_a_folder_now_of_another_release_are_mixed(
        child: Callable[..., Child], tmp_path: Path) -> None:
    """The wheel replaced by 9.0's while the process runs 9.28's shim and graph: each sub-library it loads
    later comes from 9.0 (the disk alone shows one release)."""
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    running = child(lib / "libcudnn.so.9", _with_cublas())
    for path in lib.iterdir():
        path.unlink()
    for path in lib_folder(W90).iterdir():
        os.link(path, lib / path.name)
    report = diagnose_pid(running.pid)
    stale = {f.subject.library for f in report.findings if f.code is Code.MIXED_RELEASE}
    assert {"ops", "cnn", "heuristic"} <= stale
    assert {c.name: c.status for c in report.checks}["pending"] == "fail"
    # the disk holds 9.0 whole: started again, the process maps one release, and the fix says so as an action
    first = next(f for f in report.findings if f.code is Code.MIXED_RELEASE)
    assert [a.json() for a in first.fix.actions] == [
        {"do": "restart", "pid": running.pid, "argv": list(read_process(running.pid).command)}]


@pytest.mark.skipif(os.geteuid() != 0, reason="the shim's search paths are read through map_files (root)")
def test_the_later_loads_of_a_replaced_shim_are_searched_as_the_shim_it_runs_searches(
        child: Callable[..., Child], tmp_path: Path) -> None:
    """Fix differential 3-15475 (it was "no error found"): the process runs the cu12 9.28 wheel's shim with a cu13
    9.28 folder on LD_LIBRARY_PATH, and the wheel is replaced by 9.0's under it. 9.28's shim carries DT_RPATH
    $ORIGIN, searched before LD_LIBRARY_PATH, so its later dlopen of ops gets the 9.0 file in its own folder (the
    real process: "Invalid handle. Cannot load symbol cudnnOpsVersionCheck"); 9.0's shim, now on disk, carries
    DT_RUNPATH, searched after it, and the judge of the disk alone saw the other folder's 9.28 ops: no mix."""
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    other = _copy(lib_folder("cu13-9.28.0.42"), tmp_path / "other")
    running = child(lib / "libcudnn.so.9", {**BASE, "LD_LIBRARY_PATH": f"{other}:{lib_folder(CUBLAS)}"})
    for path in lib.iterdir():
        path.unlink()
    for path in lib_folder(W90).iterdir():
        os.link(path, lib / path.name)
    report = diagnose_pid(running.pid)
    stale = [f for f in report.findings if f.code is Code.MIXED_RELEASE and f.severity is Severity.ERROR]
    assert {"ops", "cnn", "adv"} <= {f.subject.library for f in stale}, [f.message for f in report.findings]
    assert all(f.subject.path.startswith(str(lib)) and "9.0.0" in f.message for f in stale)
    assert [a.json() for a in stale[0].fix.actions][0]["do"] == "restart"
    after = running.call("cudnnOpsVersionCheck")  # the real loader: 9.0's ops, from the shim's own folder
    assert str(lib / "libcudnn_ops.so.9") in after or not any("libcudnn_ops" in m for m in after), after


@pytest.mark.parametrize("release", [W90, W928])
def test_a_wheel_replaced_under_a_process_whose_release_this_user_cannot_read_is_told_by_its_build(
        child: Callable[..., Child], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: str) -> None:
    """The wheel replaced while the process runs 9.28's shim and graph, asked by a user who may not read
    /proc/PID/map_files (root's: the user whose own process it is, the common case): no file mapped tells the
    release it runs (it was "no error"). Its mappings tell the build: a shim mapped longer or shorter than the file
    now at its path maps is another build, so the sub-libraries it loads later mix with it (9.0's: restart); the
    same release written again (new files, same build) is no error."""
    monkeypatch.setattr(pid_module, "_read_mapped", lambda pid, mapped: None)  # as a user without map_files
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    running = child(lib / "libcudnn.so.9", _with_cublas())
    for path in lib.iterdir():
        path.unlink()
    for path in lib_folder(release).iterdir():
        shutil.copyfile(path, lib / path.name)  # new files: every mapped one is REPLACED
    report = diagnose_pid(running.pid)
    assert {m.state for m in report.libraries if m.major == 9} == {REPLACED}
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    if release == W928:
        assert not errors, [f.message for f in errors]
        return
    stale = [f for f in errors if f.code is Code.MIXED_RELEASE]
    assert {"ops", "cnn", "heuristic"} <= {f.subject.library for f in stale}
    assert all("runs another build" in f.message for f in stale), stale[0].message
    assert [a.json() for a in stale[0].fix.actions] == [
        {"do": "restart", "pid": running.pid, "argv": list(read_process(running.pid).command)}]


def test_the_first_mapping_of_a_library_is_as_long_as_its_first_load_segment_as_readelf_shows_it() -> None:
    """`mapped.first_span` against /proc/self/maps of a process that loaded the library, and against the first
    LOAD of `readelf -lW` (offset 0, file size, page-aligned)."""
    import re

    from cudnnload.resolve.mapped import first_span

    paths = [lib_folder(W928) / "libcudnn.so.9", lib_folder(W90) / "libcudnn.so.9",
             lib_folder(W90) / "libcudnn_ops.so.9"]
    code = ("import ctypes, sys\nfor p in sys.argv[1:]: ctypes.CDLL(p)\n"
            "print(open('/proc/self/maps').read())")
    maps = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, check=True,
                          env=_with_cublas()).stdout.splitlines()
    page = os.sysconf("SC_PAGE_SIZE")
    for path in paths:
        first = next(line.split()[0] for line in maps if line.endswith(str(path)))
        start, end = (int(x, 16) for x in first.split("-"))
        load = next(line.split() for line in subprocess.run(["readelf", "-lW", str(path)], capture_output=True,
                                                             text=True, check=True).stdout.splitlines()
                    if re.match(r"\s*LOAD\s", line))
        address, in_file = int(load[2], 16), int(load[4], 16)
        assert first_span(str(path)) == end - start == -(-(address + in_file) // page) * page - address // page * page
    assert first_span(str(paths[0])) != first_span(str(paths[1]))  # 9.28's shim and 9.0's: two builds
    assert first_span("/etc/passwd") is None
    fifo = Path(tempfile.mkdtemp()) / "libcudnn.so.9"
    os.mkfifo(fifo)  # planted where a mapped file was: read, it would hold the reader for good
    try:
        assert first_span(str(fifo)) is None
    finally:
        shutil.rmtree(fifo.parent)


def test_a_replaced_shim_runs_with_the_graph_it_mapped_and_its_later_loads_are_judged_by_it(
        child: Callable[..., Child], tmp_path: Path) -> None:
    """9.28's shim loaded from its wheel's folder with 9.28's graph preloaded from another copy, then the wheel
    replaced by 9.0's: the shim carries no release, so what the process runs is told by the graph it mapped. The
    install as the disk holds it now (9.0, beside the 9.28 graph) is what a restart would mix: a warning. The
    sub-libraries the shim has not loaded yet come from the folder now of 9.0, while it runs 9.28: those are
    errors of the running process, and the process is not taken for two folders."""
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    other = _copy(lib_folder(W928), tmp_path / "other")
    running = child(lib / "libcudnn.so.9", {**_with_cublas(), "LD_PRELOAD": str(other / "libcudnn_graph.so.9")})
    for path in lib.iterdir():
        path.unlink()
    for path in lib_folder(W90).iterdir():
        os.link(path, lib / path.name)
    report = diagnose_pid(running.pid)
    shim = next(m for m in report.libraries if m.library == "shim")
    assert shim.state == REPLACED and Code.MIXED_IN_PROCESS not in _codes(report)
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert errors and {f.code for f in errors} == {Code.MIXED_RELEASE}
    assert {f.subject.library for f in errors} >= {"ops", "cnn"} and all("runs cuDNN 9.28.0" in f.message
                                                                          for f in errors)
    restart = [f for f in report.findings if f.code is Code.MIXED_RELEASE and f.severity is Severity.WARNING]
    assert restart and all(f.message.startswith(f"once process {running.pid} starts again") for f in restart)


@pytest.mark.skipif(os.geteuid() != 0, reason="the shim's search paths are read through map_files (root)")
def test_a_shim_whose_folder_was_emptied_under_it_finds_its_later_loads_nowhere(
        child: Callable[..., Child], tmp_path: Path) -> None:
    """Every file of the folder deleted while the process runs 9.28's shim and graph (its wheel uninstalled, or
    replaced by cuDNN 8's): nothing on disk is left to judge, and the shim's later dlopen of ops, cnn and adv,
    searched from its path as opened, finds none. That is an error, not a healthy process; the fix outside a
    wheel's folder says in words to put that release back there."""
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    running = child(lib / "libcudnn.so.9", _with_cublas())
    for path in lib.iterdir():
        path.unlink()
    report = diagnose_pid(running.pid)
    gone = [f for f in report.findings if f.code is Code.MISSING_SUBLIBRARY]
    assert len(gone) == 1 and gone[0].severity is Severity.ERROR and "libcudnn_ops.so.9: none" in gone[0].message
    assert [a.do for a in gone[0].fix.actions] == [ActionKind.MANUAL] and "9.28.0" in str(gone[0].fix.text)


def test_a_wheel_uninstalled_under_a_process_is_put_back_and_a_start_up_line_of_another_release_goes(
        child: Callable[..., Child], tmp_path: Path) -> None:
    """A process runs 9.28's shim and graph from a wheel's folder; the wheel is uninstalled under it. Its later
    loads find nothing: the wheel goes back, and nothing needs restarting. Where, since it started, a
    ``sitecustomize`` came to load 9.0's ops (fix differential 3-10105: a ``.pth`` line loading 9.28's ops beside the
    9.24 a held program runs), that line goes too: the running process never ran it, but a start afresh would map
    9.0's ops and graph before the 9.28 put back."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    [site] = (tmp_path / "venv").glob("lib/python3*/site-packages")
    lib = _copy(lib_folder(W928), site / "nvidia" / "cudnn" / "lib")
    startup = tmp_path / "startup"
    startup.mkdir()
    running = child(lib / "libcudnn.so.9", {**_with_cublas(), "PYTHONPATH": str(startup)})
    for path in lib.iterdir():
        path.unlink()

    def put_back() -> tuple[list[tuple[ActionKind, str | None]], str]:
        [gone] = [f for f in diagnose_pid(running.pid).findings if f.code is Code.MISSING_SUBLIBRARY]
        assert gone.severity is Severity.ERROR
        return [(a.do, a.line) for a in gone.fix.actions], str(gone.fix.text)

    actions, text = put_back()
    assert [do for do, _ in actions] == [ActionKind.PIP_INSTALL] and "nvidia-cudnn-cu12==9.28.0.*" in text, text
    line = f"ctypes.CDLL({str(lib_folder(W90) / 'libcudnn_ops.so.9')!r}, mode=ctypes.RTLD_GLOBAL)"
    (startup / "sitecustomize.py").write_text(f"import ctypes\n{line}\n")
    actions, text = put_back()
    assert actions[1:] == [(ActionKind.REMOVE_LINE, line)] and actions[0][0] is ActionKind.PIP_INSTALL, text
    assert "libcudnn_ops.so.9 9.0.0" in text and "a start afresh would map those first" in text, text


def test_frameworks_whose_libraries_are_mapped_are_named(child: Callable[..., Child], tmp_path: Path) -> None:
    torch_lib = tmp_path / "site" / "torch" / "lib"
    torch_lib.mkdir(parents=True)
    shutil.copy(lib_folder(W928) / "libcudnn.so.9", torch_lib / "libc10.so")  # any shared object will do
    running = child(lib_folder(W928) / "libcudnn.so.9", _with_cublas(), extra=(torch_lib / "libc10.so",))
    report = diagnose_pid(running.pid)
    assert [(f.name, f.folder) for f in report.frameworks] == [("torch", str(torch_lib))]


# --- bad PIDs: one line, exit 2 ---------------------------------------------------------------------------

def test_a_pid_that_does_not_exist_is_one_line() -> None:
    with open("/proc/sys/kernel/pid_max") as handle:
        never = int(handle.read()) + 1
    one_line_error(cli("doctor", "--pid", str(never)), EXIT_USAGE, f"no process with PID {never}")


@pytest.mark.parametrize("given", ["0", "-3", "abc", "1.5"])
def test_a_pid_that_is_not_a_positive_number_is_a_usage_error(given: str) -> None:
    one_line_error(cli("doctor", f"--pid={given}"), EXIT_USAGE, "--pid")


def test_a_kernel_thread_is_one_line() -> None:
    threads = [int(name) for name in os.listdir("/proc") if name.isdigit() and _kernel_thread(int(name))]
    if not threads:
        pytest.skip("no kernel thread visible here (a PID namespace)")
    one_line_error(cli("doctor", "--pid", str(threads[0])), EXIT_USAGE, "kernel thread")


def _kernel_thread(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return False
    return bool(int(fields[6]) & 0x00200000)


def test_a_zombie_is_one_line() -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        while _state(ended.pid) != "Z":
            time.sleep(0.01)
        one_line_error(cli("doctor", "--pid", str(ended.pid)), EXIT_USAGE, "has ended")
    finally:
        ended.wait()


@pytest.mark.wheels
def test_a_process_whose_first_thread_ended_is_read_through_a_thread_that_lives() -> None:
    """pthread_exit in main leaves the process running in its other threads, its first thread a zombie whose
    /proc files are empty: it was "has ended: a zombie maps nothing", with cuDNN mapped in the threads that ran."""
    graph = lib_folder("cu12-9.28.0.42") / "libcudnn_graph.so.9"
    code = ("import ctypes, threading, time\n"
            f"ctypes.CDLL({str(graph)!r})\n"
            "threading.Thread(target=time.sleep, args=(60,)).start()\n"
            "time.sleep(0.2)\n"
            "ctypes.CDLL(None).pthread_exit(None)\n")
    running = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while _state(running.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        done = cli("doctor", "--pid", str(running.pid))
        assert done.returncode != EXIT_USAGE, done.stderr
        assert f"libcudnn_graph.so.9              cuDNN 9.28.0  {graph}" in done.stdout, done.stdout
    finally:
        running.kill()
        running.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rpartition(b")")[2].split()[0].decode()


def test_a_target_and_a_pid_together_are_a_usage_error(tmp_path: Path) -> None:
    one_line_error(cli("doctor", str(tmp_path), "--pid", str(os.getpid())), EXIT_USAGE, "not both", "--pid")


def test_a_process_that_cannot_be_read_is_one_line(child: Callable[..., Child]) -> None:
    """As ``nobody``, root's process: its maps need ptrace read access (proc(5))."""
    why = nobody.unavailable()
    if why is not None:
        pytest.skip(f"cannot run as nobody: {why}")
    running = child(lib_folder(W928) / "libcudnn.so.9")
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-nobody-"))  # where nobody can go, unlike tmp_path
    try:
        folder.chmod(0o755)
        environ = nobody.stage(folder / "staged")
        done = subprocess.run([*nobody.prefix(), nobody.interpreter() or "", "-m", "cudnnload", "doctor", "--pid",
                               str(running.pid)], capture_output=True, text=True, env=environ, cwd=folder,
                              timeout=120, check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    one_line_error(done, EXIT_USAGE, "permission denied", f"/proc/{running.pid}/maps")
    assert running.process.poll() is None


def test_permission_denied_on_any_proc_file_is_one_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int | str) -> None:
        raise PermissionError(13, "Permission denied", f"/proc/{pid}/maps")

    monkeypatch.setattr(pid_module, "read_maps", refused)
    with pytest.raises(UsageError, match="permission denied") as caught:
        diagnose_pid(os.getpid())
    assert caught.value.path == f"/proc/{os.getpid()}/maps"


def test_a_process_that_ends_while_it_is_read_is_one_usage_error(child: Callable[..., Child],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    running = child(lib_folder(W928) / "libcudnn.so.9")
    reading = pid_module.read_maps

    def ending(pid: int | str) -> object:
        files = reading(pid)
        os.kill(running.pid, signal.SIGKILL)
        running.process.wait(timeout=30)
        return files

    monkeypatch.setattr(pid_module, "read_maps", ending)
    with pytest.raises(UsageError, match="ended while it was being read"):
        diagnose_pid(running.pid)


def test_a_mapped_file_this_user_cannot_reach_is_not_taken_for_one_deleted(child: Callable[..., Child],
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder of the files a process of this user mapped closed to it since (the `chmod 0700` of the wheel's
    folder of fix differential 3-945, whose process was root's): ``stat`` says "Permission denied", not that the
    files are gone. They are not said deleted ("restart to run the files now on disk" named none); what the
    process opens from there later fails, and the fix is the one `doctor TARGET` gives a library this user cannot
    reach."""
    from cudnnload.resolve.access import Access, Unreachable

    running = child(lib_folder(W928) / "libcudnn.so.9", _with_cublas())
    folder = str(lib_folder(W928))
    stat = os.stat

    def closed(path: str, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).startswith(folder + "/"):
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pid_module.os, "stat", closed)
    monkeypatch.setattr(Access, "unreachable", lambda self, path, _hops=0: Unreachable(folder, True, 0, "root")
                        if path.startswith(folder + "/") else None)
    report = diagnose_pid(running.pid)
    monkeypatch.undo()

    states = {m.library: m.state for m in report.libraries if m.major is not None}
    assert set(states.values()) == {pid_module.UNREACHABLE}, states
    assert Code.MAPPED_FILE_REPLACED not in _codes(report)
    [closed_folder] = [f for f in report.findings if f.code is Code.UNREADABLE]
    assert closed_folder.path == folder and closed_folder.severity is Severity.ERROR
    assert closed_folder.fix.actions[0].do is ActionKind.CHMOD and closed_folder.fix.actions[0].path == folder
    files = {c.name: c for c in report.checks}["files"]
    assert files.status == "warn" and "cannot reach their folder" in files.summary, files


def test_a_stray_the_pythons_start_up_mapped_into_the_process_goes_with_its_line(child: Callable[..., Child],
                                                                                   tmp_path: Path) -> None:
    """A ``sitecustomize`` that loads 9.0's ops before the program opens 9.28's shim (fix differential 3-2514,
    3-3091, 3-3120): the process maps cuDNN from two folders, the 9.0 graph taken by the 9.28 shim. Where the stray
    came from is the start-up line that maps it now: that line goes (it was "load ... first, or another import
    order", in words, for a process already running)."""
    startup = tmp_path / "startup"
    startup.mkdir()
    line = f"ctypes.CDLL({str(lib_folder(W90) / 'libcudnn_ops.so.9')!r}, mode=ctypes.RTLD_GLOBAL)"
    (startup / "sitecustomize.py").write_text(f"import ctypes\n{line}\n")
    lib = _copy(lib_folder(W928), tmp_path / "lib")
    running = child(lib / "libcudnn.so.9", {**_with_cublas(), "PYTHONPATH": str(startup)})
    report = diagnose_pid(running.pid)
    strays = [f for f in report.findings if f.severity is Severity.ERROR and f.code is Code.MIXED_RELEASE]
    assert strays, [f.code for f in report.findings]
    assert all([(a.do, a.path, a.line) for a in f.fix.actions] == [
        (ActionKind.REMOVE_LINE, str(startup / "sitecustomize.py"), line), (ActionKind.RESTART, None, None)]
        for f in strays), [f.fix for f in strays]  # then the restart: the process runs what it mapped until then


def _stray_of_a_sitecustomize(folder: Path, as_nobody: bool, open_startup: bool
                              ) -> tuple[list[str], list[str], ProcessReport, Path]:
    """A Python process (``nobody``'s, else root's) that maps 9.28's shim after its ``sitecustomize`` (in a
    PYTHONPATH folder, anyone may write it where ``open_startup``) loaded 9.0's ops and wrote the user it ran as
    into a marker, diagnosed by this user: the users the start-up ran as before the diagnosis and after it, the
    report, and the start-up folder. The process is killed before it returns."""
    folder.chmod(0o755)
    lib, old = _copy(lib_folder(W928), folder / "lib"), _copy(lib_folder(W90), folder / "old")
    marker = folder / "ran"
    marker.touch(mode=0o666)
    marker.chmod(0o666)
    startup = folder / "startup"
    startup.mkdir()
    (startup / "sitecustomize.py").write_text(
        f"import ctypes, os\nopen({str(marker)!r}, 'a').write(f'{{os.geteuid()}}\\n')\n"
        f"ctypes.CDLL({str(old / 'libcudnn_ops.so.9')!r}, mode=ctypes.RTLD_GLOBAL)\n")
    for path in [*folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    if open_startup:
        startup.chmod(0o777)
    environ = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(startup), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [*nobody.prefix(), nobody.interpreter() or ""] if as_nobody else [nobody.interpreter() or sys.executable]
    process = subprocess.Popen([*argv, "-c", _CHILD, str(lib / "libcudnn.so.9")], env=environ, cwd=folder,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        before = marker.read_text().split()
        report = diagnose_pid(process.pid)
        return before, marker.read_text().split(), report, startup
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_the_start_up_of_another_users_process_runs_as_that_user(tmp_path: Path) -> None:
    """The same stray, in a process ``nobody`` runs, asked about by root: to learn where the stray came from, root
    runs that user's start-up code (a ``sitecustomize`` nobody may have written to do anything) as nobody, never
    as root; the stray goes with its line as in root's own process."""
    why = nobody.unavailable()
    if why is not None:
        pytest.skip(f"cannot run as nobody: {why}")
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-nobody-"))  # where nobody can go, unlike tmp_path
    try:
        ran_as_nobody, runs, report, startup = _stray_of_a_sitecustomize(folder, as_nobody=True, open_startup=False)
        nobody_uid = pwd.getpwnam("nobody").pw_uid
        assert len(runs) > len(ran_as_nobody) and set(runs) == {str(nobody_uid)}, runs
        strays = [f for f in report.findings if f.severity is Severity.ERROR and f.code is Code.MIXED_RELEASE]
        assert strays, [f.code for f in report.findings]
        assert all([(a.do, a.path) for a in f.fix.actions] == [
            (ActionKind.REMOVE_LINE, str(startup / "sitecustomize.py"))] for f in strays), [f.fix for f in strays]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_start_up_of_roots_own_process_from_a_folder_anyone_may_write_runs_as_nobody(tmp_path: Path) -> None:
    """The same stray, in root's own process whose ``sitecustomize`` lies in a PYTHONPATH folder anyone may write:
    anyone may have written it, so root observes it as nobody (as root before: only the process's user counted);
    the stray still goes with its line."""
    why = nobody.unavailable()
    if why is not None or os.geteuid() != 0:
        pytest.skip(f"cannot run as nobody: {why or 'not root'}")
    folder = Path(tempfile.mkdtemp(prefix="cudnnload-nobody-"))  # where nobody can go, unlike tmp_path
    try:
        ran_as_root, runs, report, startup = _stray_of_a_sitecustomize(folder, as_nobody=False, open_startup=True)
        nobody_uid = pwd.getpwnam("nobody").pw_uid
        assert len(runs) > len(ran_as_root) and set(runs[len(ran_as_root):]) == {str(nobody_uid)}, runs
        strays = [f for f in report.findings if f.severity is Severity.ERROR and f.code is Code.MIXED_RELEASE]
        assert strays, [f.code for f in report.findings]
        assert all([(a.do, a.path) for a in f.fix.actions] == [
            (ActionKind.REMOVE_LINE, str(startup / "sitecustomize.py"))] for f in strays), [f.fix for f in strays]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
