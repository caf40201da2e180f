"""Fixtures shared by the test modules (the synthetic libraries, the unpacked real wheels), and the watchdog.

The watchdog: no phase of a test (setup, call, teardown) runs longer than `WATCHDOG_S` seconds, or what
``@pytest.mark.timeout_s(N)`` gives it. Past that, SIGALRM fails the test with the stacks of every
thread (a lock that is never released, a child that never ends), and the run goes on; a test stuck in a
C call that never returns to Python (where no signal handler can run) is ended by faulthandler after a
grace period, which prints every thread's stack and ends the run. ``CUDNNLOAD_TEST_WATCHDOG=S`` sets
the default (``0`` turns the watchdog off, for a debugger session).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.wheels import cache_root, lib_folder

# Nothing the suite runs writes into the user's own folders: every cudnnload in it (in this process and in
# the children that inherit its environment) keeps its caches in the test cache, and HOME is a folder there
# too (a default that reads `~`, a child's pip, a user site). Set at import, before any test module reads the
# environment. `make clean-test-cache` removes all of it.
TEST_CACHE = cache_root()
os.environ["CUDNNLOAD_TEST_CACHE"] = str(TEST_CACHE)
os.environ["CUDNNLOAD_CACHE"] = str(TEST_CACHE)
os.environ.pop("XDG_CACHE_HOME", None)
os.environ["HOME"] = str(TEST_CACHE / "home")
os.makedirs(os.environ["HOME"], exist_ok=True)

SYNTHETIC_SOURCES = Path(__file__).resolve().parent.parent / "fixtures" / "synthetic"


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The libraries of fixtures/synthetic/build.sh, built once per session (about a second)."""
    compiler = os.environ.get("CC", "gcc")
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is needed to build fixtures/synthetic")
    out = tmp_path_factory.mktemp("synthetic")
    build = subprocess.run(["sh", str(SYNTHETIC_SOURCES / "build.sh"), str(out)], capture_output=True, text=True,
                           check=False)
    if build.returncode:
        pytest.fail(f"fixtures/synthetic/build.sh failed:\n{build.stderr}")
    return out


@pytest.fixture
def wheel_lib() -> Callable[[str], Path]:
    """``wheel_lib("cu12-9.28.0.42")``: that wheel's nvidia/cudnn/lib; skips with "run `make wheels`"."""
    return lib_folder


# --- the watchdog ------------------------------------------------------------------------------------------

WATCHDOG_S = 60.0
_stderr_fd: int | None = None  # the terminal's stderr, kept before capturing: where faulthandler writes


def pytest_configure(config: pytest.Config) -> None:
    global _stderr_fd
    config.addinivalue_line("markers", "timeout_s(seconds): this test's watchdog limit per phase, instead of "
                            f"{WATCHDOG_S:g} s (tests/conftest.py)")
    if _stderr_fd is None:
        with contextlib.suppress(OSError, ValueError):
            _stderr_fd = os.dup(sys.__stderr__.fileno() if sys.__stderr__ else 2)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _stderr_fd
    if _stderr_fd is not None:
        with contextlib.suppress(OSError):
            os.close(_stderr_fd)
        _stderr_fd = None


def watchdog_limit(item: pytest.Item) -> float | None:
    """Seconds this test's phases may take; None when the watchdog is off."""
    marker = item.get_closest_marker("timeout_s")
    if marker is not None:
        return float(marker.args[0])
    default = os.environ.get("CUDNNLOAD_TEST_WATCHDOG")
    limit = WATCHDOG_S if default is None else float(default)
    return limit or None


def _stacks() -> str:
    """Every thread but this one, with its stack: what the test was waiting for."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    me = threading.get_ident()
    parts = [f"thread {names.get(ident, ident)!r}:\n" + "".join(traceback.format_stack(frame)[-8:])
             for ident, frame in sys._current_frames().items() if ident != me]
    return "\n".join(parts)


@contextlib.contextmanager
def _watchdog(item: pytest.Item, phase: str) -> Iterator[None]:
    limit = watchdog_limit(item)
    if limit is None or threading.current_thread() is not threading.main_thread():
        yield  # signal handlers run on the main thread only
        return

    def expired(signum: int, frame: object) -> None:
        others = _stacks()
        pytest.fail(f"{item.nodeid}: its {phase} is still running after {limit:g} s (the watchdog of "
                    "tests/conftest.py; a test that needs longer says so with @pytest.mark.timeout_s(N))"
                    + (f"\nthe other threads:\n{others}" if others else ""), pytrace=True)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    if _stderr_fd is not None:  # the last resort, for a call that never returns to Python
        faulthandler.dump_traceback_later(limit + min(limit, 30.0), exit=True, file=_stderr_fd)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # also when the alarm's exception lands here: the last resort must never outlive the test
            faulthandler.cancel_dump_traceback_later()
            signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)  # the old style, which pytest 7 knows too
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _watchdog(item, "setup"):
        yield


@pytest.hookimpl(hookwrapper=True)  # the old style, which pytest 7 knows too
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _watchdog(item, "call"):
        yield


@pytest.hookimpl(hookwrapper=True)  # the old style, which pytest 7 knows too
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with _watchdog(item, "teardown"):
        yield


@pytest.fixture
def noexec_dir(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs mounted ``noexec`` (root only; skipped where none can be mounted), unmounted at teardown."""
    folder = tmp_path / "noexec"
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root, to mount a noexec tmpfs")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=64m", "tmpfs", str(folder)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        pytest.skip(f"cannot mount a noexec tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], Path]]:
    """``read_only(folder)``: the folder bind-mounted over itself read-only (root only; skipped where it cannot be
    mounted), unmounted at teardown whatever the test did."""
    mounted: list[Path] = []

    def mount(folder: Path) -> Path:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("needs root, to bind-mount a folder read-only")
        for options in (["--bind"], ["-o", "remount,bind,ro"]):
            done = subprocess.run(["mount", *options, str(folder), str(folder)], capture_output=True, text=True,
                                  check=False)
            if options == ["--bind"] and done.returncode == 0:
                mounted.append(folder)
            if done.returncode:
                pytest.skip(f"cannot bind-mount {folder} read-only here: {done.stderr.strip()}")
        return folder

    yield mount
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
