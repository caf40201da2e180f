"""Edges a hostile or unlucky user reaches (issue 29, 6): `trace --plot` refused before any work where
`--output` would be; closed standard streams; a cuDNN shim preloaded under another file name; a long
LD_LIBRARY_PATH."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.wheels import lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]
W928 = "cu12-9.28.0.42"
CUDNNLOAD = f"{sys.executable} -m cudnnload"


def environ(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": python_path(ROOT), **extra}


def shell(script: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``script`` in bash, where ``$CUDNNLOAD`` runs cudnnload: for the redirections a shell makes."""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False,
                          env=environ(CUDNNLOAD=CUDNNLOAD, **extra))


def no_internal_error(done: subprocess.CompletedProcess[str]) -> None:
    text = done.stdout + done.stderr
    assert "internal error" not in text and "Traceback" not in text, text


# --- trace --plot ---------------------------------------------------------------------------------------------

@pytest.mark.wheels
@pytest.mark.parametrize("kind", ["symlink", "no-extension", "device", "missing-folder", "fifo"])
def test_trace_plot_is_refused_before_any_work_where_nothing_may_be_written(tmp_path: Path, kind: str) -> None:
    """Issue 29: --plot wrote through a symlink, appended .png to a path without an extension (a device path
    too), and gave `internal error` for a missing folder only after the whole trace had run."""
    real = tmp_path / "real.png"
    real.write_bytes(b"mine")
    target = {"symlink": tmp_path / "link.png", "no-extension": tmp_path / "waterfall",
              "device": tmp_path / "null", "missing-folder": tmp_path / "no" / "such" / "w.png",
              "fifo": tmp_path / "pipe.png"}[kind]
    if kind == "symlink":
        target.symlink_to(real)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("only root can make a device node")
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(target)
    before = sorted(os.listdir(tmp_path))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cudnnload", "trace", "--runs", "3", str(lib_folder(W928)), "--plot",
                           str(target)], capture_output=True, text=True, env=environ(), timeout=120, check=False)

    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "--plot" in lines[0], done.stderr
    assert time.monotonic() - started < 5  # before the three traced processes
    assert sorted(os.listdir(tmp_path)) == before and real.read_bytes() == b"mine"


@pytest.mark.wheels
def test_trace_plot_writes_a_new_file_whole(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "waterfall.svg"
    done = subprocess.run([sys.executable, "-m", "cudnnload", "trace", "--runs", "1", "--no-conv", "--lazy",
                           str(lib_folder(W928)), "--plot", str(target)], capture_output=True, text=True,
                          env=environ(), timeout=300, check=False)
    no_internal_error(done)
    assert target.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert os.listdir(tmp_path) == ["waterfall.svg"]


# --- closed standard streams ------------------------------------------------------------------------------------

@pytest.mark.wheels
@pytest.mark.parametrize("closed", [">&-", "2>&-", "<&-", ">&- 2>&-", "<&- >&- 2>&-"])
@pytest.mark.parametrize("command", ["which", "inspect {lib}", "doctor --json {lib}", "explain -",
                                     "explain CUDNN_STATUS_NOT_INITIALIZED", "fleet /nonexistent"])
def test_a_closed_standard_stream_is_never_an_internal_error(command: str, closed: str) -> None:
    """Issue 29: `>&-` gave `internal error (AttributeError ...)`, exit 3."""
    line = command.format(lib=lib_folder(W928))
    done = shell(f'exec 3>&2; $CUDNNLOAD {line} {closed}; echo "exit=$?" >&3')
    no_internal_error(done)
    assert done.stderr.strip().splitlines()[-1] != "exit=3", done.stderr


@pytest.mark.wheels
@pytest.mark.parametrize("closed", ["2>&-", ">&-", "<&-"])
def test_run_runs_the_program_with_its_streams_as_given(tmp_path: Path, closed: str) -> None:
    """Issue 29: `run -- prog 2>&-` did not run the program. It runs, and finds the stream closed, as without
    cudnnload."""
    marker = tmp_path / "ran"
    fd = {"2>&-": 2, ">&-": 1, "<&-": 0}[closed]
    program = f"if [ -e /proc/self/fd/{fd} ]; then s=open; else s=closed; fi; echo $s > {marker}"
    done = shell(f"$CUDNNLOAD run --cudnn {lib_folder(W928)} -- sh -c '{program}' {closed}")
    no_internal_error(done)
    assert marker.read_text().strip() == "closed", done.stderr


# --- a shim under another name -------------------------------------------------------------------------------

@pytest.mark.wheels
def test_a_cudnn_shim_preloaded_under_another_name_is_judged_by_its_contents(tmp_path: Path) -> None:
    """Issue 29: a shim in LD_PRELOAD as libmyshim.so gave `AssertionError` in doctor and which."""
    copy = tmp_path / "libmyshim.so"
    shutil.copy(lib_folder(W928) / "libcudnn.so.9", copy)
    which = subprocess.run([sys.executable, "-m", "cudnnload", "which", "--json"], capture_output=True, text=True,
                           env=environ(LD_PRELOAD=str(copy)), timeout=120, check=False)
    doctor = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "--env", f"LD_PRELOAD={copy}"],
                            capture_output=True, text=True, env=environ(LD_PRELOAD=""), timeout=120, check=False)
    for done in (which, doctor):
        no_internal_error(done)
        assert done.returncode == 1, done.stderr  # its sub-libraries are not beside it
        assert f"{tmp_path}/libcudnn_graph.so.9" in done.stdout  # the shim's own search, from its folder


# --- a long LD_LIBRARY_PATH -------------------------------------------------------------------------------------

@pytest.fixture
def short_folder() -> Iterator[Path]:
    """A folder with a short name: 3 000 entries under pytest's long tmp_path exceed one variable's 128 KiB."""
    folder = Path(tempfile.mkdtemp(prefix="l", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_long_ld_library_path_costs_which_little_time(short_folder: Path) -> None:
    """Issue 29: each LD_LIBRARY_PATH entry cost `which` 4.3 ms (3 000: 13 s; glibc itself: 0.04 s). Now the
    search is linear with a small constant: 3 000 existing folders add less than 0.5 s."""
    folders = [short_folder / str(index) for index in range(3000)]
    for folder in folders:
        folder.mkdir()

    def best(value: str | None) -> float:
        env = environ(LD_LIBRARY_PATH=value) if value else {k: v for k, v in environ().items()
                                                            if k != "LD_LIBRARY_PATH"}
        times = []
        for _ in range(3):
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "cudnnload", "which"], capture_output=True, text=True,
                                  env=env, timeout=120, check=False)
            times.append(time.monotonic() - started)
            no_internal_error(done)
        return min(times)

    assert best(":".join(map(str, folders))) - best(None) < 0.5


# --- a timeout that is no number of seconds ---------------------------------------------------------------------

@pytest.mark.parametrize("seconds", ["nan", "inf", "1e10", "-0"])
@pytest.mark.parametrize("command", ["doctor --timeout {s} -- touch {marker}", "doctor /nonexistent --timeout {s}",
                                     "fleet /nonexistent --timeout {s}", "fleet --ray --connect-timeout {s}"])
def test_a_timeout_that_is_no_number_of_seconds_is_a_usage_error_before_any_work(tmp_path: Path, command: str,
                                                                                 seconds: str) -> None:
    """`--timeout inf` (or 1e10) was `internal error (OverflowError ...)`, or with `-- COMMAND` a traceback from
    the deadline's thread and no deadline; `--timeout nan` passed click's range check and ended the program at
    once as timed out. Now each is one line, exit 2, and the program does not run."""
    marker = tmp_path / "ran"
    done = subprocess.run([sys.executable, "-m", "cudnnload", *command.format(s=seconds, marker=marker).split()],
                          capture_output=True, text=True, env=environ(), timeout=60, check=False)
    no_internal_error(done)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "timeout" in lines[0], done.stderr
    assert not marker.exists()
