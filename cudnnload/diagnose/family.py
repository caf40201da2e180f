"""The program `doctor -- COMMAND` runs and every process it started: found, stopped and reaped, so that
none outlives cudnnload.

Who belongs to the program, from ``/proc`` (Linux), each process known by its pid and its start time
(``/proc/PID/stat`` field 22, proc(5)), which a reused pid does not share:

- the program, and every process whose parent belongs (the PPid chain);
- when cudnnload is a child subreaper (the command line's run, `launch.own`): every child of its main
  thread, which started the program and starts nothing else. An orphan, its parent gone, is re-parented
  to the nearest subreaper ancestor's first live thread, the main one (``find_new_reaper`` in
  ``kernel/exit.c``), so a process that called ``setsid()`` and forked again is still found.
  cudnnload's own helpers (the linker's probe) are children of other threads and are never counted;
- any process born after the program whose environment holds the run's scratch folder (the linker's
  or cuDNN's log destination, which every descendant inherits): an orphan re-parented to init, where
  the kernel lacks ``/proc/PID/task/TID/children`` (``CONFIG_PROC_CHILDREN``) or the run is in-process.
  A descendant that both cleared its environment and lost its parent before the sweep is then missed.

`Family.stop` ends them as systemd stops a unit (systemd.kill(5)): SIGTERM, then SIGCONT so that a
stopped process can act on it; SIGKILL for whatever is left after a grace period; each one's end
verified (gone, or a zombie), its zombie reaped when it is cudnnload's child. What it says it killed,
it saw die.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Container
from dataclasses import dataclass

from cudnnload.children import ProcStat, environ_of, proc_stat

_COMMAND_CHARS = 200
# why cudnnload ended a process (`Killed.why`)
TIMEOUT = "timeout"  # --timeout ran out while the program ran
INTERRUPTED = "interrupted"  # a second SIGINT/SIGTERM/SIGHUP, or Ctrl-C in an in-process caller
LEFT_RUNNING = "left running"  # still running when the program had ended


@dataclass(frozen=True)
class Process:
    """One process for good: its pid and start time (clock ticks after boot), and its command line as
    read when cudnnload first signalled it (a process just forked still shows its parent's, and one in
    the middle of execve() none)."""

    pid: int
    started: int
    command: str


@dataclass(frozen=True)
class Killed:
    """A process of the program's that cudnnload ended: the last signal it sent it, and why it stopped
    it (TIMEOUT, INTERRUPTED, LEFT_RUNNING)."""

    process: Process
    signal: str
    why: str


@dataclass(frozen=True)
class Survivor:
    """A process of the program's that cudnnload could not end, and why ("permission denied": a setuid
    program of another user; "still running after SIGKILL": stuck in the kernel)."""

    process: Process
    reason: str


def _command(pid: int) -> str:
    """The process's command line, NULs as spaces, cut at 200 characters; its name for a zombie."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(_COMMAND_CHARS * 4)
        if not raw:
            with open(f"/proc/{pid}/comm", "rb") as handle:
                raw = b"[" + handle.read().strip() + b"]"
    except OSError:
        return "?"
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    return text if len(text) <= _COMMAND_CHARS else text[:_COMMAND_CHARS - 3] + "..."


def _thread_children(pid: int, tid: int) -> set[int] | None:
    """The children a thread started, or was handed as orphans; None where the kernel keeps no such list
    (``CONFIG_PROC_CHILDREN``) or the thread is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
            return {int(part) for part in handle.read().split()}
    except (OSError, ValueError):
        return None


def _children(pid: int) -> set[int]:
    """The children of all of a process's threads."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return set()
    return {child for tid in threads for child in _thread_children(pid, int(tid)) or ()}


def descends(pid: int, members: Container[int] = ()) -> bool:
    """Whether ``pid`` is this process, one of ``members``, or a process whose PPid chain reaches one of them (a
    program that has ended is a zombie of its parent's until reaped, its chain still readable)."""
    for _ in range(4096):  # a chain longer than any real one: a loop read mid-change
        if pid <= 1:
            return False
        if pid == os.getpid() or pid in members:
            return True
        stat = proc_stat(pid)
        if stat is None:
            return False
        pid = stat.ppid
    return False


class Family:
    """The program (pid ``pid``) and its descendants, found as the module docstring says. ``tag``: a
    string only the program's environment holds ("": none); ``reaper``: this process is a child
    subreaper and its main thread started the program."""

    def __init__(self, pid: int, *, tag: str, reaper: bool, helpers: frozenset[int] = frozenset()) -> None:
        """``helpers``: children of cudnnload's own its main thread started (the run's `children.Watcher`),
        never the program's."""
        first = proc_stat(pid)
        self._helpers = helpers
        self.program = (pid, first.started if first else 0)
        self.members: dict[int, int] = {pid: self.program[1]}  # pid -> start time
        self.killed: list[Killed] = []
        self.survivors: list[Survivor] = []
        self._tag = tag.encode()
        self._reaper = reaper
        self._untagged: set[tuple[int, int]] = set()  # (pid, start): environments read, not holding the tag
        self._hurry = threading.Event()
        self._lock = threading.Lock()

    def includes(self, pid: int) -> bool:
        """Whether ``pid`` is one of the program's processes, or of this one's: its PPid chain reaches a
        member or this process (the sender of a signal, say)."""
        return descends(pid, self.members)

    def hurry(self) -> None:
        """From now on, `stop` sends SIGKILL at once (a second interrupt)."""
        self._hurry.set()

    def stop(self, why: str, grace: float = 2.0) -> None:
        """End every live member (`Killed`, added to those of earlier calls), or say why not (`Survivor`, as of
        this call); see the module docstring."""
        with self._lock:
            named: dict[int, Process] = {}  # each member signalled, its command line as read then
            last: dict[int, signal.Signals] = {}  # the last signal each was sent
            refused: set[int] = set()
            kill_at = time.monotonic() + grace
            killing_since: float | None = None
            while True:
                alive = self._alive()
                if not alive.keys() - refused:
                    break
                now = time.monotonic()
                due = signal.SIGKILL if self._hurry.is_set() or now >= kill_at else signal.SIGTERM
                if due == signal.SIGKILL:
                    killing_since = killing_since or now
                    if now - killing_since > 1.0:  # SIGKILLed a second ago and still there
                        break
                for pid, started in alive.items():
                    if pid in refused or last.get(pid) in (due, signal.SIGKILL):
                        continue
                    named.setdefault(pid, Process(pid, started, _command(pid)))
                    try:
                        os.kill(pid, due)
                        if due == signal.SIGTERM:
                            os.kill(pid, signal.SIGCONT)
                    except PermissionError:
                        refused.add(pid)
                        continue
                    except ProcessLookupError:
                        continue
                    last[pid] = due
                self._hurry.wait(0.01)
            self.survivors = [Survivor(named.get(pid) or Process(pid, started, _command(pid)), "permission denied"
                                       if pid in refused else "still running after SIGKILL")
                              for pid, started in alive.items()]
            self.killed += [Killed(named[pid], sig.name, why) for pid, sig in last.items() if pid not in alive]

    def _alive(self) -> dict[int, int]:
        """The members alive now, the family brought up to date first; the zombies among the orphans
        re-parented here reaped (the program's own exit status is left to its waiter)."""
        orphans = _thread_children(os.getpid(), os.getpid()) if self._reaper else None
        found = self._walk(orphans - self._helpers) if orphans is not None else self._scan()
        for pid, stat in found.items():
            self.members.setdefault(pid, stat.started)
        alive: dict[int, int] = {}
        for pid, started in list(self.members.items()):
            now = found.get(pid) or proc_stat(pid)
            if now is None or now.started != started:
                del self.members[pid]  # gone, and the pid maybe another process's by now
            elif now.alive:
                alive[pid] = started
            elif pid != self.program[0] and now.ppid == os.getpid():
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        return alive

    def _walk(self, orphans: set[int]) -> dict[int, ProcStat]:
        """The members and the orphans handed to this process, and everything below them, down the
        kernel's lists of children: a few reads, where a scan of /proc reads every process's."""
        found: dict[int, ProcStat] = {}
        todo = [*self.members, *orphans]
        while todo:
            pid = todo.pop()
            stat = proc_stat(pid) if pid not in found else None
            known = self.members.get(pid)
            if stat is None or (known is not None and known != stat.started):
                continue
            found[pid] = stat
            todo += _children(pid)
        return found

    def _scan(self) -> dict[int, ProcStat]:
        """Where the kernel keeps no lists of children, or this process is no subreaper: every process
        started since the program whose parent is a member, or whose environment holds the tag."""
        born: dict[int, ProcStat] = {}
        for name in os.listdir("/proc"):
            stat = proc_stat(int(name)) if name.isdigit() else None
            if stat is not None and stat.started >= self.program[1]:
                born[int(name)] = stat
        found = {pid: stat for pid, stat in born.items() if self.members.get(pid) == stat.started}
        changed = True
        while changed:  # down the PPid chains from every member
            changed = False
            for pid, stat in born.items():
                if pid not in found and stat.ppid in found:
                    found[pid] = stat
                    changed = True
        found.update((pid, stat) for pid, stat in born.items() if pid not in found and self._tagged(pid, stat.started))
        return found

    def _tagged(self, pid: int, started: int) -> bool:
        """Whether the process's environment holds the tag (each process's read once it can be told:
        `environ_of`, a process in the middle of an exec)."""
        if not self._tag or (pid, started) in self._untagged:
            return False
        environ = environ_of(pid, started)
        if environ is None:  # cannot be told yet: read again at the next sweep
            return False
        if self._tag in environ:
            return True
        self._untagged.add((pid, started))
        return False
