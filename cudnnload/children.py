"""Processes cudnnload starts: none imports code from the current folder, none outlives cudnnload (issue 29).

Its own Python children (the probe, a trace's cold processes, the interpreter `doctor --python` asks for its
``sys.path``, a node's doctor under Ray) run `isolated`: the code given with ``-c`` first drops from
``sys.path`` the current folder Python puts there (``-P`` does the same, from 3.11 only), before it imports
anything; and they run in ``/``. Those whose life is cudnnload's own call `die_with_parent` first thing:
the kernel then sends them SIGKILL when the thread that started them ends, however it ends (prctl(2)
``PR_SET_PDEATHSIG``; a parent gone before that call is seen by ``getppid``).

A program cudnnload observes (``doctor -- COMMAND``, ``trace -- COMMAND``) is the user's, and may start
set-user-ID programs that drop a parent-death signal: a `Watcher` ends it instead. It is a small child
process started before the program, holding the read end of a pipe whose write end only cudnnload holds;
when cudnnload ends without saying it is done (a SIGKILL: nothing of cudnnload runs then), the pipe's end
wakes it, and it kills every process of the program (the program's pid, each process whose environment
holds the run's tag) and removes the run's scratch folder. Each process is known by its pid and start time
(``/proc/PID/stat`` field 22), which a reused pid does not share.

Code cudnnload runs on purpose but does not trust (a Python's start-up with its ``.pth`` lines, a framework's
import that reads its build version) runs in a session of its own with a variable only it holds (`tagged`): once it
has ended, its process group and every process holding that variable are killed (`end_tagged`: a daemon's
``setsid()`` leaves the group, not the environment), and of what it wrote only a bounded tail is kept (`tails`).
Where that code is another user's (root asking about a venv or a process of theirs), it runs as that user
(`as_owner`), never with root's rights.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator, Mapping

# Put first in the code of every Python child of cudnnload's: `python -c` puts "" (the current folder) at
# the front of sys.path, where a json.py planted there would be imported by the child's first `import json`.
ISOLATE = "import sys\nsys.path[:] = [p for p in sys.path if p and p.startswith('/')]\n"

@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` cudnnload needs (proc(5): 2 comm, 3 state, 4 ppid, 9 flags, 22
    starttime, clock ticks after boot: a reused pid does not share it)."""

    name: str
    state: str
    ppid: int
    flags: int
    started: int

    @property
    def alive(self) -> bool:
        return self.state not in "ZX"  # a zombie has ended; only its exit status is left to collect


def proc_stat(pid: int | str) -> ProcStat | None:
    """``/proc/PID/stat`` read (the one reader of it); None when there is no such process (or it was reaped).
    ``pid`` may name a thread of it too: ``"PID/task/TID"``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    name, _, rest = data.partition(b" (")[2].rpartition(b")")  # the name, in parentheses, may hold anything
    fields = rest.split()
    try:
        return ProcStat(name.decode(errors="replace"), fields[0].decode(), int(fields[1]), int(fields[6]),
                        int(fields[19]))
    except (IndexError, ValueError):
        return None


_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_SIGKILL = 9


def isolated(code: str) -> str:
    """``code`` for ``python -c``, importing nothing from the current folder (see the module docstring)."""
    return ISOLATE + code


def die_with_parent(parent: int) -> None:
    """In a child of cudnnload's, first thing: be killed when the thread that started it ends (SIGKILL, by the
    kernel, whatever ends the parent); exit at once if ``parent`` (its pid) is gone already."""
    import ctypes

    prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


# The watcher's own code: stdlib only, no cudnnload import (it must start fast and survive anything of
# cudnnload's). argv: the tag, the scratch folder. Its standard input: the pipe; lines "PID START" name the
# program; "done" says cudnnload stopped everything itself; the end of the pipe without it, that it died.
_WATCHER = r"""
import os, shutil, signal, sys, time
for signo in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
    signal.signal(signo, signal.SIG_IGN)
tag, scratch = sys.argv[1].encode(), sys.argv[2]
programs, done, pending = [], False, b""
while True:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    pending += chunk
    *lines, pending = pending.split(b"\n")
    for line in lines:
        if line == b"done":
            done = True
        elif line:
            pid, start = line.split()
            programs.append((int(pid), int(start)))

def started(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rpartition(b")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return None

def members():
    found = {pid for pid, start in programs if started(pid) == start}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if any(tag in item for item in handle.read().split(b"\0")):
                    found.add(int(name))
        except OSError:
            continue
    return found

if not done:
    quiet = 0
    for _ in range(50):  # a process forking as it is killed: again, until none is left twice running
        left = members()  # (one in the middle of an exec reads no environment: children.environ_of)
        quiet = 0 if left else quiet + 1
        if quiet == 2:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
if scratch:
    shutil.rmtree(scratch, ignore_errors=True)
"""


class Watcher:
    """Ends the program and removes ``scratch`` should cudnnload end without `done` (module docstring).
    ``tag``: a string only the environment of the program and of what it starts holds."""

    def __init__(self, tag: str, scratch: str) -> None:
        read, self._write = os.pipe()  # neither is inherited by the program (PEP 446)
        try:
            self.pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _WATCHER, tag, scratch],
                                      {}, file_actions=[(os.POSIX_SPAWN_DUP2, read, 0)])
        except OSError:
            os.close(self._write)
            self._write = -1
            self.pid = 0  # no watcher: what `Family` does while cudnnload lives is all there is
        finally:
            os.close(read)

    def program(self, pid: int, started: int) -> None:
        """The program's pid and start time, once it runs."""
        self._say(f"{pid} {started}\n")

    def done(self, *, reap: bool = False) -> None:
        """cudnnload stopped everything itself: the watcher only removes the scratch folder, and ends. ``reap``:
        wait for it here (a moment: it has nothing to sweep), so that no child of cudnnload's is left for a
        program `run` puts in its place (execve) to find among its own."""
        self._say("done\n")
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
        if self.pid and reap:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        elif self.pid:
            import threading

            threading.Thread(target=os.waitpid, args=(self.pid, 0), daemon=True).start()  # reaped, unwaited

    def _say(self, line: str) -> None:
        if self._write >= 0:
            with contextlib.suppress(OSError):  # the watcher gone: nothing left to tell it
                os.write(self._write, line.encode())



def tagged(env: Mapping[str, str]) -> tuple[dict[str, str], bytes]:
    """``env`` with a variable only this child and what it starts hold, and that tag (for `end_tagged`)."""
    tag = f"CUDNNLOAD_CHILD={os.urandom(8).hex()}"
    return {**env, "CUDNNLOAD_CHILD": tag.partition("=")[2]}, tag.encode()


@contextlib.contextmanager
def untrusted(env: Mapping[str, str]) -> Iterator[tuple[dict[str, str], bytes]]:
    """The environment for children that run code cudnnload runs on purpose but does not trust, and their tag
    (`tagged`). On leaving, every process holding the tag is ended (`end_tagged`); should cudnnload end first
    (SIGTERM, SIGKILL), a `Watcher` ends them: in sessions of their own, Ctrl-C at the terminal does not reach
    them, and a Python's start-up observed by `doctor --python` ran on for as long as its .pth line slept."""
    child_env, tag = tagged(env)
    since = ticks()
    watcher = Watcher(tag.decode(), "")
    try:
        yield child_env, tag
    finally:
        end_tagged(tag, since)
        watcher.done(reap=True)


def owner_of_python(interpreter: str, paths: Sequence[str] = (), owner: int | None = None) -> int | None:
    """The user whose code a Python's start-up and imports run: ``owner`` where given (the user a running
    process runs as), else the owner of its venv (the ``pyvenv.cfg`` above ``interpreter``), else of the
    interpreter as given (a link's own owner); None where none can be read.

    Where another user could have written that code (a site-packages folder of the installation, a ``.pth`` file
    or ``sitecustomize`` in it, or one of ``paths``, such as PYTHONPATH's entries, owned by another user or
    writable by more than its owner), it is that user's, or `NOBODY`'s where more than one may write: a root-owned
    venv whose ``site-packages`` anyone may write would otherwise run, as root, what anyone put there."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(interpreter)))
    for path in (os.path.join(folder, "pyvenv.cfg"), interpreter) if owner is None else ():
        try:
            owner = os.lstat(path).st_uid
            break
        except OSError:
            continue
    if owner is None:
        return None
    writers = {writer for path in (*_code_folders(folder), *(p for p in paths if os.path.isabs(p)))
               for writer in _writers(path, owner)}
    if not writers:
        return owner
    return writers.pop() if len(writers) == 1 and owner == 0 and NOBODY not in writers else NOBODY


NOBODY = 65534  # the unprivileged user of Linux distributions (nobody, nogroup)


def _code_folders(prefix: str) -> list[str]:
    """The site-packages (and Debian's dist-packages) folders of the installation at ``prefix``, with the
    ``.pth`` files and ``sitecustomize``/``usercustomize`` modules in them: where its start-up reads code."""
    import glob

    prefixes = [prefix] + ([os.path.join(prefix, "local")] if prefix == "/usr" else [])
    folders = [path for base in prefixes for kind in ("site-packages", "dist-packages")
               for path in glob.glob(os.path.join(glob.escape(base), "lib*", "python*", kind))]
    found = []
    for folder in folders:
        found.append(folder)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found += [os.path.join(folder, name) for name in names if name.endswith(".pth")
                  or name in ("sitecustomize.py", "usercustomize.py", "sitecustomize", "usercustomize")]
    return found


def _writers(path: str, owner: int) -> set[int]:
    """Users other than root and ``owner`` who may change ``path`` or what its link leads to (its owner;
    `NOBODY` for "more than one": a group or everyone may write it)."""
    import stat

    found: set[int] = set()
    for follow in (False, True):
        try:
            info = os.stat(path, follow_symlinks=follow)
        except OSError:
            continue
        found |= {info.st_uid} - {0, owner}
        if stat.S_ISLNK(info.st_mode):
            continue  # a link's own mode is 0777 and means nothing; its target is read next
        if info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP
                                           and not private_group(info.st_uid, info.st_gid)):
            found.add(NOBODY)
    return found


def private_group(uid: int, gid: int) -> bool:
    """Whether ``gid`` is ``uid``'s own group (its name, its primary group, no other member): a group that lets
    nobody else write."""
    import grp
    import pwd

    try:
        owner, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    return group.gr_name == owner.pw_name and owner.pw_gid == gid and set(group.gr_mem) <= {owner.pw_name}


def as_owner(owner: int | None) -> dict[str, object]:
    """Popen's arguments that start a child as ``owner`` (with the owner's own group and no other) where cudnnload
    runs as root and ``owner`` is another user: code of theirs runs with their rights, not root's. Empty where
    nothing changes (not root, the owner is root or unknown)."""
    if owner is None or owner == 0 or os.geteuid() != 0:
        return {}
    import pwd

    try:
        group = pwd.getpwuid(owner).pw_gid
    except KeyError:  # a user with no entry (a container's): its own number, as the kernel allows
        group = owner
    return {"user": owner, "group": group, "extra_groups": []}


def end_tagged(tag: bytes, since: int = 0) -> None:
    """SIGKILL every process of this user whose environment holds ``tag`` (`tagged`), until none is left: what
    a child left running in a session of its own (``setsid()``, a daemon's double fork), which the kill of
    its process group misses. One that cleared its environment is missed too. ``since``: the clock tick
    (`ticks`) the tag was made at; a process born since whose environment cannot be told yet (`environ_of`)
    is looked at again, for at most a tenth of a second."""
    import signal
    import time

    for _ in range(50):  # a process forking as it is killed: again, until none is left
        left, unsure = _holding(tag, since)
        if not left and not unsure:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not left:
            time.sleep(0.002)


def _holding(entry: bytes, since: int) -> tuple[list[int], list[int]]:
    """The pids of the processes (other than this one) whose environment holds ``entry`` (``NAME=VALUE``), among
    those this user may read; and those born since tick ``since`` whose environment cannot be told yet."""
    found, unsure = [], []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        environ = environ_of(int(name), since)
        if environ is None:
            unsure.append(int(name))
        elif entry in environ.split(b"\0"):
            found.append(int(name))
    return found, unsure


def holding(entry: bytes) -> list[int]:
    """The pids of the processes (other than this one) whose environment holds ``entry`` (``NAME=VALUE``), among
    those this user may read now."""
    return _holding(entry, 0)[0]


_PF_KTHREAD = 0x00200000  # linux/sched.h: a kernel thread, which has no environment


def environ_of(pid: int, since: int = 0) -> bytes | None:
    """The environment of process ``pid`` (``NAME=VALUE\\0...``); empty when it is gone, another user's or a
    kernel thread; None when it cannot be told yet. A process in the middle of an exec reads as empty: opened
    before the exec and read after, the file reads the old memory, let go by then; opened after the new memory
    is in place but before the new program's environment is laid in it (``create_elf_tables``), it reads
    nothing too. A daemon exec'ing as `end_tagged` looked was missed (CI, 2026-12-02). So an empty read of a
    live process born since tick ``since`` (other than a kernel thread) is unsure: look again. One that
    cleared its environment is unsure too, until the caller stops looking."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:  # gone, or another user's
        return b""
    if data:
        return data
    stat = proc_stat(pid)
    if stat is None or not stat.alive or stat.flags & _PF_KTHREAD or stat.started < since:
        return b""
    return None


def ticks() -> int:
    """The clock tick after boot now, as ``/proc/PID/stat`` counts a process's start (field 22), less one: a
    process started at this moment is at or after it."""
    import time

    return max(0, int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK")) - 1)


def end_group(child: subprocess.Popen[bytes]) -> None:
    """The child's process group (a session of its own) killed, the child reaped; what left the session, as a
    daemon does, `end_tagged` ends."""
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def tails(child: subprocess.Popen[bytes], deadline: float, limit: int = 64 << 10) -> tuple[bytes, bytes, bool]:
    """The last ``limit`` bytes the child (started with ``stdout`` and ``stderr`` pipes, in a session of its own)
    wrote on each, read until it has ended or until ``deadline`` (``time.monotonic()``); whether it ended. Its
    process group is killed then, and it is reaped. Code cudnnload runs on purpose but does not trust (a framework's
    import) can write gigabytes (``communicate`` kept them all: 12 GB of memory for 3 GB written) or leave a process
    holding the pipes open (``communicate`` waited for it until the deadline): neither costs more than ``limit``
    bytes kept, or time past the child's own end."""

    assert child.stdout is not None and child.stderr is not None
    out, err = child.stdout.fileno(), child.stderr.fileno()
    kept = {out: bytearray(), err: bytearray()}
    try:
        gone = os.pidfd_open(child.pid)  # readable once the child has ended (Linux 5.3+)
    except (OSError, AttributeError):
        gone = -1  # then the child is asked every 50 ms
    try:
        ended = _read_tails(child, deadline, limit, kept, gone)
    finally:  # also when interrupted (Ctrl-C): it, if it still runs, and what it left in its group
        if gone >= 0:
            os.close(gone)
        end_group(child)
        child.stdout.close()
        child.stderr.close()
    return bytes(kept[out]), bytes(kept[err]), ended


def _read_tails(child: subprocess.Popen[bytes], deadline: float, limit: int, kept: dict[int, bytearray],
                gone: int) -> bool:
    """`tails`' reading: whether the child ended by ``deadline``."""
    import selectors
    import time

    ended, after = False, 0
    with selectors.DefaultSelector() as selector:
        for fd in (*kept, gone) if gone >= 0 else tuple(kept):
            selector.register(fd, selectors.EVENT_READ)
        while after < 16:  # once it has ended, only what its pipes hold already: what it left may write on
            left = deadline - time.monotonic()
            if left <= 0 and not ended:
                break
            ready = selector.select(0 if ended else left if gone >= 0 else min(left, 0.05))
            if ended and not any(key.fd in kept for key, _ in ready):
                break
            for key, _ in ready:
                if key.fd == gone:
                    selector.unregister(gone)
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                kept[key.fd] += chunk
                del kept[key.fd][:-limit]
            after += ended
            # ended, not yet reaped (WNOWAIT): its pid, and so its process group, are not anyone else's yet
            ended = ended or os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    return ended
