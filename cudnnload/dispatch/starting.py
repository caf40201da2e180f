"""`start`: load cuDNN and warm it up in a background thread, returning at once.

An application's first convolution waits for the CUDA context (~230 ms on an H200: cuInit ~105,
the primary context ~125), cuDNN's dlopens and VersionChecks, the handle, the plan and the first
load of each kernel. `start`, called first thing, begins the context in one thread
(`cudnnload.loading.cudadriver.prepare_context`) and the load and warm-up in another, and returns; the
application meanwhile imports its modules and reads its data. The driver and cuDNN calls are
ctypes calls, which release the GIL, so they overlap the application's Python work; the Python
work of the load itself (importing the loader, the dispatcher and its plugins) does not, which is
why this module imports nothing heavy: it runs on the caller's thread before anything overlaps.

The warm-up runs in a third thread from the start, not after the load: its Python work (importing
the dispatcher and the plugins) then happens while the driver makes the context, and its calls
wait for the load like any other. Both threads begin once the driver's ``cuInit`` has returned (~105 ms
on an H200), not at once: their Python work (~60 ms of CPU holding the GIL) otherwise lands on the
application's own imports and data, in the same window. Begun at once, the budget's program
(bench/bench_first_call.py) had its data at 228 ms, after the context; begun after cuInit, at 188 ms, and
the threads were still done before the context (~230 ms): first result 255.4 ms against 257.9, context
alone 225.8 (medians of 15 cold processes, H200, 2026-11-27). Deferring measured worse on 2026-11-22 (333
ms against 290), when an application call that came before the warm-up's claim built cuDNN's plan on
its own thread; such a call now runs on the quick plan (below).

`cudnnload.load` called from any other thread while a start is loading waits for it
(`cudnnload.loading.pending`) and returns its result; a failed start leaves that call to try again and
raise its own error.

numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins ~0.1 s (2^28
cycles) waiting for work before it sleeps: 15 spinning threads on the 16 cores of the H200 machine, in
the very window where the driver makes the context, cost the first result 40-45 ms (319 against 278
ms, median of 8, 2026-11-27). Unless ``blas_idle_spin=True``, or the variable is set already, or numpy
is imported already, `start` sets ``OPENBLAS_THREAD_TIMEOUT=4`` (2^4 cycles: its idle threads sleep at
once) for the import, and takes the variable out of the environment again once its threads are done,
so that no child process inherits it. OpenBLAS keeps the setting for the life of the process: a later
multi-threaded BLAS call then wakes its threads (microseconds) instead of finding them spinning.

An application call that comes before the warm-up has reached its problem (its thread may still be
importing the plugins) runs on the backend's quick plan, as one whose plan the warm-up is building
does, instead of building the problem's own plan on the application's thread
(`cudnnload.loading.pending.warm_ups_running`).

The threads are not daemons: a program that ends while they still run waits for them (a warm-up
ends ~100 ms after the context) instead of tearing the interpreter down under cuDNN calls in
flight. As daemons they did: on an H200, a program that printed its result before the warm-up
ended sometimes exited with no message and a failure status.
"""

from __future__ import annotations

import os
import sys
import threading

from cudnnload.loading import pending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from cudnnload.dispatch.problems import Activation, Problem
    from cudnnload.loading.loader import Loaded
    from cudnnload.resolve.discovery import Install


class Starting:
    """A `load` and its warm-up running in a thread (see `start`)."""

    def __init__(self, run: Callable[[Starting], Loaded]) -> None:
        self.ready = threading.Event()  # set once the load part is over (loaded or failed)
        self._done = threading.Event()
        self._result: Loaded | None = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(run,), name="cudnnload-start", daemon=False)

    def _run(self, run: Callable[[Starting], Loaded]) -> None:
        try:
            self._result = run(self)
        except BaseException as exc:  # given to wait(): a thread has nobody else to raise to
            self._error = exc
        finally:
            self.ready.set()
            self._done.set()

    def done(self) -> bool:
        """Whether the load and the warm-up are over."""
        return self._done.is_set()

    def failed(self) -> bool:
        """Whether it is over and raised."""
        return self._done.is_set() and self._error is not None

    def wait(self, timeout: float | None = None) -> Loaded:
        """The `Loaded` (warm-up included) once it is over; raises what the load raised, or TimeoutError."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"cudnnload.start() is still running after {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


_lock = threading.Lock()
_current: Starting | None = None


def _forked() -> None:
    """In the child of a fork(): the start's thread is not there; a start still under way is forgotten (its
    result would never come), one that is over stays (what it loaded is mapped in the child too)."""
    global _lock, _current
    _lock = threading.Lock()
    if _current is not None and not _current.done():
        _current = None


os.register_at_fork(after_in_child=_forked)


def start(source: str | os.PathLike[str] | Install | None = None, *, version: str | None = None,
          environ: Mapping[str, str] | None = None, use_cache: bool = True, timeout: float = 60.0,
          warmup: Sequence[Problem | Activation] = (), blas_idle_spin: bool = False) -> Starting:
    """Begin `cudnnload.load` (same arguments) and then the ``warmup`` problems in a background thread,
    and return at once. Any cudnnload call that needs cuDNN waits for the load part;
    ``Starting.wait()`` returns the `Loaded` once the warm-up is over too (its result in
    ``Loaded.warmup``), or raises the load's error. A second call returns the first one's `Starting`, unless that
    one failed (it is tried again, as `load` is) or the second asks for a source or a version: then it is a start of
    its own, whose `load` gives what is loaded already only where it is that source and in that range (else its
    `LoadError`, as `load`'s).
    ``blas_idle_spin=True`` leaves numpy's OpenBLAS threads spinning when idle, as OpenBLAS has them by
    default (see the module docstring).
    """
    global _current
    with _lock:
        if _current is not None and not _current.failed() and source is None and version is None:
            return _current
        from cudnnload.loading.cudadriver import INITIALIZED, prepare_context

        # the variable first: a setenv may move the environment's array while the context's thread reads it
        # (cuInit's getenv), a use after free under glibc before 2.40. Not proven the cause of the crash inside cuInit
        # seen once on the H200: 30 processes setting variables all through cuInit (glibc 2.39) did not crash
        calmed = not blas_idle_spin and _calm_openblas()
        driver_starting = prepare_context() is not None

        if warmup:  # counted from now: the application's first calls may come before the warm-up's thread is up
            pending.warm_up_began()

        def run(starting: Starting) -> Loaded:
            if driver_starting:  # the application's imports first (module docstring)
                INITIALIZED.wait(_AFTER_CUINIT_WAIT_S)
            warming = None
            if warmup:  # from now: its imports and plugins are ready by the time the context is
                from cudnnload.dispatch.warmup import Background

                warming = Background(warmup)
            from cudnnload.loading.loader import load, with_warmup

            try:
                try:
                    loaded = load(source, version=version, environ=environ, use_cache=use_cache, timeout=timeout)
                finally:
                    starting.ready.set()  # the warm-up's own calls wait for this
                warmed = warming.wait() if warming is not None else None
            finally:
                if warmup:
                    pending.warm_up_ended()
                if calmed:
                    _uncalm_environment()
            return loaded if warmed is None else with_warmup(warmed)

        _current = Starting(run)
        pending.announce(_current.thread, _current.ready)
    _current.thread.start()
    return _current


_AFTER_CUINIT_WAIT_S = 2.0  # at most; a cuInit that takes longer (many GPUs, no persistence mode) is not waited out

_OPENBLAS_SPIN = "OPENBLAS_THREAD_TIMEOUT"
_CALM = "4"  # OpenBLAS's least: idle threads spin 2^4 cycles, then sleep


def _calm_openblas() -> bool:
    """Set ``OPENBLAS_THREAD_TIMEOUT`` for numpy's coming import (module docstring); whether it was set here."""
    if _OPENBLAS_SPIN in os.environ or "numpy" in sys.modules:
        return False
    os.environ[_OPENBLAS_SPIN] = _CALM
    return True


def _uncalm_environment() -> None:
    """Take `_calm_openblas`'s variable out of the environment again (OpenBLAS read it when it started)."""
    if os.environ.get(_OPENBLAS_SPIN) == _CALM:
        del os.environ[_OPENBLAS_SPIN]
