"""A load another thread has begun, which `load()` on any other thread waits for.

`cudnnload.start` loads in a background thread; an application thread that calls
`cudnnload.load()` (or a backend that needs cuDNN) meanwhile should get that load's result, not
race it. The loader learns of such a load here instead of importing whoever began it: the
starter announces its thread and an event set once the load is over (loaded or failed), and the
loader waits on it.

Warm-ups running in the background are counted here too (`warm_up_began`, `warm_up_ended`): a backend
with a quick first plan runs an application's call on it while one is still on its way to that problem,
instead of building the problem's own plan on the application's thread (`warm_ups_running`).
"""

from __future__ import annotations

import os
import threading

_current: tuple[threading.Thread, threading.Event] | None = None
_warm_ups = 0
_warm_ups_lock = threading.Lock()


def _forked() -> None:
    """In the child of a fork(): no thread of the parent's is there, so none is loading or warming up, and
    nothing waits for one (issue 29)."""
    global _current, _warm_ups, _warm_ups_lock
    _current, _warm_ups, _warm_ups_lock = None, 0, threading.Lock()


os.register_at_fork(after_in_child=_forked)


def announce(thread: threading.Thread, ready: threading.Event) -> None:
    """``thread`` is loading cuDNN; ``ready`` is set when it has loaded or failed."""
    global _current
    _current = (thread, ready)


def wait(timeout: float | None = None) -> bool:
    """Until an announced load on another thread is over (at once if there is none); False when
    ``timeout`` seconds passed first (the other thread hangs: in the driver, on a FIFO ...)."""
    current = _current
    if current is not None and threading.current_thread() is not current[0]:
        return current[1].wait(timeout)
    return True


def warm_up_began() -> None:
    """A background warm-up begins (`cudnnload.start`, `cudnnload.preload(background=True)`)."""
    global _warm_ups
    with _warm_ups_lock:
        _warm_ups += 1


def warm_up_ended() -> None:
    """A background warm-up counted by `warm_up_began` is over (done or failed)."""
    global _warm_ups
    with _warm_ups_lock:
        _warm_ups -= 1


def warm_ups_running() -> bool:
    """Whether a background warm-up is running in this process."""
    return _warm_ups > 0
