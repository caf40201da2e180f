"""Starting a program under watch: the witnesses' switches, a scratch folder, the child, and the threads
that watch it while it runs (its stderr passed through, its maps sampled, its deadline); then, once it
has ended, whatever it left running stopped (`family.Family`), so that nothing outlives the run.

The program stays in cudnnload's session and process group, as when the user runs it directly: it
keeps the controlling terminal (it can open ``/dev/tty``, and Ctrl-C reaches it). On the command line
(`own`), cudnnload owns the program: it is a child subreaper (prctl(2) ``PR_SET_CHILD_SUBREAPER``), so
that every orphan of the program's is re-parented to it rather than to init, setsid() or not; and
SIGINT, SIGTERM and SIGHUP are taken by one thread (`_Owner`): the first is passed on to the program
(unless the terminal sent it to the whole foreground group, the program with it), and cudnnload waits
for the program, stops what it left, reports, and then dies of that signal, as a shell expects of a
program interrupted (https://www.cons.org/cracauer/sigint.html); a second one stops everything at once.

Only what starting a process needs is imported here: ``os.posix_spawn`` rather than subprocess (whose
imports take 5 ms), no tempfile, shutil or contextlib (4 ms; `_Owner` needs ctypes, signal and threading:
4 ms), so that ``cudnnload doctor -- COMMAND`` can start the program before the rest of cudnnload is
imported (`early`): click, the linker model and the ELF memo then load beside the running program instead
of before it (35 ms on a 2-core machine, measured). `observe` reads the witnesses once it ends.
"""

from __future__ import annotations

import os
import sys
import time

from cudnnload.errors import UsageError
from cudnnload.resolve.mapped import mapped_libraries

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import NoReturn

    from cudnnload.diagnose.family import Family

_TAIL_BYTES = 64 * 1024


class Launched:
    """A program started under watch; `observe.run` waits for it and reads what the witnesses saw."""

    def __init__(self, program: str, command: tuple[str, ...], env: dict[str, str], *, api_level: int,
                 own_log: bool, linker_log: bool, timeout: float | None, sample_s: float,
                 json_out: bool = False) -> None:
        self.command = command
        self.program = program  # the file run, as execvp found it
        self.json_out = json_out
        self.environ = dict(env)  # as asked for, before the witnesses' switches
        self.scratch, box = _scratch_folder()
        from cudnnload.children import Watcher

        # before the program starts: should cudnnload be killed (SIGKILL) while it runs, this ends it
        self.watcher = Watcher(self.scratch, self.scratch)
        self.prefix = os.path.join(box, "ld") if linker_log else None
        self.log = os.path.join(box, "cudnn.log")
        self.theirs = env.get("CUDNN_LOGDEST_DBG") if not own_log else None  # the user's own log settings stand
        self.mine = self.theirs is None
        self.before = _sizes(self.theirs) if self.theirs else {}
        if self.prefix is not None:
            env.update(LD_DEBUG="libs,files", LD_DEBUG_OUTPUT=self.prefix)
        if self.mine:
            # 9.x reads CUDNN_LOGLEVEL_DBG, 8.x the legacy switches (cudnn-facts §6.1)
            env.update(CUDNN_LOGLEVEL_DBG=str(api_level), CUDNN_LOGERR_DBG="1", CUDNN_LOGDEST_DBG=self.log)
            if api_level >= 2:
                env["CUDNN_LOGWARN_DBG"] = "1"
            if api_level >= 3:
                env["CUDNN_LOGINFO_DBG"] = "1"
        self.started = time.monotonic()
        try:
            self.child = Child(program, command, env, mask=_owner.mask if _owner is not None else None,
                               stdout_to_stderr=json_out)
        except OSError as exc:
            self.cleanup()
            raise UsageError(f"cannot run it: {exc.strerror or exc}", path=command[0]) from None
        import threading

        from cudnnload.diagnose.family import Family

        # the scratch folder's name is in the environment of the program and of all it starts; its start
        # time is read before it can be reaped
        self.family = Family(self.child.pid, tag=self.scratch, reaper=_owner is not None and _owner.subreaper,
                             helpers=frozenset({self.watcher.pid}))
        self.watcher.program(*self.family.program)
        self.child.reap_when_it_ends()
        self.ended = threading.Event()
        if _owner is not None:
            _owner.watch(self)
        self.tail = _Tee(self.child)
        self.arrivals: dict[str, float] = {}  # mapped file -> ms after start, as sampled
        self.sampler = threading.Thread(target=_sample, args=(self, sample_s), daemon=True)
        self.sampler.start()
        self.deadline = _Deadline(self.child, self.family, timeout)

    @property
    def interrupted(self) -> str | None:
        """The signal (SIGINT, SIGTERM, SIGHUP) that interrupted cudnnload while it ran the program."""
        return _owner.received_name if _owner is not None else None

    def wait(self) -> tuple[int | None, bool, float]:
        """Block until the program ends, then stop what it left running: (its return code, None when
        killed at the deadline; whether the deadline fired; its wall time in seconds)."""
        from cudnnload.diagnose.family import INTERRUPTED, LEFT_RUNNING

        try:
            self.child.wait()
        except BaseException:  # KeyboardInterrupt in a caller's process: the program does not outlive it
            self.family.stop(INTERRUPTED, grace=0.0)
            self.child.wait()
            raise
        seconds = self.child.ended_at - self.started
        self.ended.set()
        timed_out = self.deadline.cancel()
        self.family.stop(LEFT_RUNNING)
        self.tail.finish()
        self.sampler.join()
        return (None if timed_out else self.child.returncode), timed_out, seconds

    def logs_lost(self) -> str | None:
        """Why the run's logs may be cut short, or None: the file system that holds them filled up (a full
        TMPDIR gives empty logs, not an error: glibc and cuDNN write them without telling anyone)."""
        free = _free_bytes(self.scratch)
        if free is None or free >= _FULL_BELOW:
            return None
        return f"the file system of {self.scratch} filled up while the program ran ({free} bytes left)"

    def cleanup(self) -> None:
        """Remove the scratch folder (the linker's logs, cuDNN's log); the watcher then has nothing to do."""
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)
        self.watcher.done()


def launch(command: Sequence[str], *, environ: Mapping[str, str] | None = None, timeout: float | None = None,
           api_level: int = 2, own_log: bool = False, linker_log: bool = True, sample_s: float = 0.02,
           json_out: bool = False) -> Launched:
    """Start ``command`` under watch; UsageError when it cannot be started. ``json_out``: the report is a JSON
    document on standard output (``--json`` without ``--output``), so the program's standard output goes to
    standard error, and what a pipe gets is one document.

    cuDNN's log: a user's own ``CUDNN_LOGDEST_DBG`` file stands, and what the run appends to it is read;
    ``own_log`` (``trace``, which needs every call) sets cudnnload's own destination all the same."""
    env = dict(os.environ if environ is None else environ)
    if not command:
        raise UsageError("no command to run", fix="cudnnload doctor -- python app.py")
    program = found_on_path(command[0], env)
    if program is None or not os.path.exists(program):
        raise UsageError("no such command", path=command[0], fix="give the program as you would run it")
    return Launched(program, tuple(command), env, api_level=api_level, own_log=own_log, linker_log=linker_log,
                    timeout=timeout, sample_s=sample_s, json_out=json_out)


# --- `doctor -- COMMAND` before the command line is parsed ---------------------------------------------

_early: Launched | None = None
# The bounds of every --timeout (click's `cli._seconds` and `early` read them). The longest is a week: a child's
# wait polls in milliseconds held in a C int (24.8 days) and a Timer waits at most threading.TIMEOUT_MAX, so
# `--timeout inf` (or 1e10) ended in a traceback, and `nan` failed every comparison and stopped the program at once.
SHORTEST_TIMEOUT_S, LONGEST_TIMEOUT_S = 0.1, 7 * 24 * 3600.0

# doctor's options that may come before `--` (click parses them again, the same way); anything else
# (a TARGET, --python, --help, a bad value) is left to the parser, whose error then comes before any run
_FLAGS = {"--json"}
_VALUED = {"--timeout", "--output", "--env"}


def assignment(text: str) -> tuple[str, str] | None:
    """``NAME=VALUE`` of ``doctor --env`` as (name, value); None when it is not one (NAME: letters, digits and
    underscores, not starting with a digit)."""
    name, equals, value = text.partition("=")
    ok = equals and name.isascii() and name.replace("_", "a").isalnum() and not name[0].isdigit()
    return (name, value) if ok else None
# doctor -- COMMAND watches the program's maps every 0.1 s: each read takes the child's mmap lock
# (torch's maps: 2.6 ms a read, measured), hence not the 20 ms of a trace
DOCTOR_SAMPLE_S = 0.1


def early(argv: Sequence[str]) -> bool:
    """Start the program of ``doctor [--json] [--timeout S] [--output PATH] -- COMMAND`` now, when
    ``argv`` (the command line after ``cudnnload``) is exactly that and the command exists; `take`
    hands it to the doctor once the command line is parsed. Whether it started one."""
    global _early
    if len(argv) < 3 or argv[0] != "doctor" or "--" not in argv:
        return False
    at = argv.index("--")
    options, command = list(argv[1:at]), tuple(argv[at + 1:])
    json_out = "--json" in options
    timeout: float | None = None
    environ: dict[str, str] | None = None
    while options:
        name, joined, value = options.pop(0).partition("=")
        if name in _FLAGS and not joined:
            continue
        if name not in _VALUED:
            return False
        if not joined:
            value = options.pop(0) if options else ""
        if name == "--env":
            parsed = assignment(value)
            if parsed is None:
                return False
            environ = {**(os.environ if environ is None else environ), parsed[0]: parsed[1]}
            continue
        if not value or value.startswith("-"):  # an empty value, or one the parser may read as an option
            return False
        if name == "--timeout":
            try:
                timeout = float(value)
            except ValueError:
                return False
            if not SHORTEST_TIMEOUT_S <= timeout <= LONGEST_TIMEOUT_S:  # as click's `_seconds`; refuses nan too
                return False
        if name == "--output" and _output_refused(value):
            return False  # refused before the program runs: the doctor says why
        if name == "--output":
            json_out = False  # the report goes to that file
    try:
        _early = launch(command, environ=environ, timeout=timeout, sample_s=DOCTOR_SAMPLE_S, json_out=json_out)
    except UsageError:
        return False  # the doctor tries again, and says why it cannot
    return True


def _output_refused(value: str) -> bool:
    """Whether ``--output`` names somewhere no report may be written (`files.output_problem`)."""
    import socket

    from cudnnload.files import output_problem

    path = value.replace("%N", socket.gethostname().split(".")[0]).replace("%%", "%")
    return output_problem(path) is not None


def take(command: Sequence[str], environ: Mapping[str, str] | None = None, json_out: bool = False
         ) -> Launched | None:
    """The program `early` started, if it is ``command`` in ``environ`` (default: this process's), its output where
    ``json_out`` wants it; once."""
    global _early
    launched, _early = _early, None
    wanted = dict(os.environ if environ is None else environ)
    return launched if launched is not None and launched.command == tuple(command) and launched.environ == wanted \
        and launched.json_out == json_out else None


# --- the command line's run: this process owns the program ------------------------------------------

_owner: _Owner | None = None
_SI_KERNEL = 0x80  # si_code of a signal the kernel raised: the terminal's ^C, a hangup (asm-generic/siginfo.h)


def own(argv: Sequence[str]) -> bool:
    """Make this process the owner of the program ``argv`` (the command line after ``cudnnload``) runs,
    when it is ``doctor ... -- COMMAND`` or ``trace ... -- COMMAND``: before it starts it, and before
    any other thread. Whether it did."""
    global _owner
    if len(argv) < 2 or argv[0] not in ("doctor", "trace") or "--" not in argv:
        return False
    _owner = _Owner()
    return True


def finish(code: int) -> NoReturn:
    """End this process once the report is out: by the signal that interrupted it, if one did, else
    with ``code``; without the interpreter's teardown (freeing ~160 modules and the linker model: 10-15
    ms, measured), which would only add to the run's time. Nothing on this path needs an exit handler."""
    sys.stdout.flush()
    sys.stderr.flush()
    if _owner is not None and _owner.received is not None:
        _die(_owner.received)
    os._exit(code)


class _Owner:
    """Subreaper, and the one thread that takes SIGINT, SIGTERM and SIGHUP (blocked in every other, the
    program's mask restored at its spawn); a signal this process ignores (``nohup``, ``&`` in a script)
    stays ignored, by the program too."""

    def __init__(self) -> None:
        import ctypes
        import signal
        import threading

        self.handled = {sig for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                        if signal.getsignal(sig) is not signal.SIG_IGN}
        if signal.SIGINT in self.handled:  # Python's KeyboardInterrupt handler: here, the default's death
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, self.handled)  # what the program gets back
        prctl = getattr(ctypes.CDLL(None), "prctl", None)  # none but on Linux: orphans then go to init
        # PR_SET_CHILD_SUBREAPER (linux/prctl.h), on; refused (a seccomp filter), `Family` looks further
        self.subreaper = prctl is not None and prctl(36, 1, 0, 0, 0) == 0
        self.received: int | None = None  # the first signal taken
        self._pending: int | None = None  # taken before the program started: passed on once it has
        self._launched: Launched | None = None
        self._lock = threading.Lock()
        threading.Thread(target=self._take, name="cudnnload-signals", daemon=True).start()

    @property
    def received_name(self) -> str | None:
        import signal

        return signal.Signals(self.received).name if self.received is not None else None

    def watch(self, launched: Launched) -> None:
        """The program to pass signals on to; one taken before it started is passed on now."""
        with self._lock:
            self._launched, pending, self._pending = launched, self._pending, None
        if pending is not None:
            _pass_on(launched, pending)

    def _take(self) -> None:
        import signal

        while True:
            info = signal.sigwaitinfo(self.handled)
            self._on(info.si_signo, info.si_code, info.si_pid)

    def _on(self, signo: int, code: int, sender: int) -> None:
        import signal

        from cudnnload.diagnose.family import descends

        with self._lock:
            launched = self._launched
            # the program signalled its own process group, which holds cudnnload (`trap 'kill 0' EXIT`): not
            # the user's interruption of cudnnload, whose report of the program's end stands (as sudo(8) takes
            # a signal its command sent to the group: not relayed, not its own); told by the sender's parents,
            # which reach this process (a program that has ended is a zombie of ours until it is reaped)
            if code != _SI_KERNEL and sender != os.getpid() and descends(
                    sender, launched.family.members if launched is not None else ()):
                return
            first = self.received is None
            if first:
                self.received = signo
            if launched is None:
                self._pending = signo
                return
        running = launched.child.running
        if first and running:
            # The terminal sends ^C to the whole foreground group, which holds the program; a process
            # of the program's own sent it to the group, or to us on purpose (as sudo(8) decides):
            # not again. Anyone else's (kill PID, a scheduler's SIGTERM, a shell's SIGHUP, the kernel's
            # hangup of the session leader): passed on.
            by_terminal = code == _SI_KERNEL and signo == signal.SIGINT
            if not by_terminal and not launched.family.includes(sender):
                _pass_on(launched, signo)
            return
        if first:
            return  # the program has ended: the report is being written, and then this process dies of it
        from cudnnload.diagnose.family import INTERRUPTED

        launched.family.hurry()  # a second one: everything now, SIGKILL
        launched.family.stop(INTERRUPTED)
        if not running:
            _die(self.received or signo)


def _pass_on(launched: Launched, signo: int) -> None:
    import contextlib

    with contextlib.suppress(ProcessLookupError):
        if launched.child.running:  # not reaped: its pid is still its own
            os.kill(launched.child.pid, signo)


def _die(signo: int) -> NoReturn:
    """End this process by ``signo``'s default action (its disposition is the default: `_Owner`),
    delivered to this thread alone, so that the signal thread's sigwaitinfo cannot take it."""
    import signal
    import threading

    sys.stdout.flush()
    sys.stderr.flush()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signo})
    signal.pthread_kill(threading.get_ident(), signo)
    os._exit(128 + signo)  # not reached


# --- the watchers -------------------------------------------------------------------------------------

def found_on_path(name: str, env: Mapping[str, str]) -> str | None:
    """The file ``name`` runs as a command, as execvp finds it: a name with a slash as it is; else, as
    ``shutil.which``, the first executable regular file on the environment's PATH."""
    if "/" in name:
        return name
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


_ROOM = 8 << 20  # a folder with less free space is passed over: the linker's log of a framework is some MB
_FULL_BELOW = 64 << 10  # less than this left after the run: the logs were likely cut short


def _free_bytes(folder: str) -> int | None:
    try:
        info = os.statvfs(folder)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize


def _scratch_folder() -> tuple[str, str]:
    """A new folder for the run's logs, in the first of ``$TMPDIR``, /tmp, /var/tmp that takes one and has
    room (one that is full is passed over, with a warning line: glibc and cuDNN would write empty logs there
    without a word, and every verdict would be made on nothing); and in it, the box the logs go to.

    The folder (mode 0711) cannot be listed by others; the box inside it (a random name, mode 1733) is
    writable by anyone who knows its name, so that a program the command runs as another user (``runuser
    -u alice --``, ``sudo -u``) can write its own logs there: glibc writes the linker's log to the
    program's standard output when it cannot open ``LD_DEBUG_OUTPUT`` (elf/rtld.c, ``process_envvars``),
    which would corrupt the program's output. Only the program's processes have its name (their
    environment), and the sticky bit keeps each one's files its own."""
    tried = []
    for base in dict.fromkeys(b for b in (os.environ.get("TMPDIR"), "/tmp", "/var/tmp") if b):
        free = _free_bytes(base)
        if free is not None and free < _ROOM:
            tried.append(f"{base} is full ({free} bytes free)")
            continue
        folder = os.path.join(base, f"cudnnload-observe-{os.urandom(8).hex()}")
        box = os.path.join(folder, os.urandom(8).hex())
        try:
            os.mkdir(folder, 0o700)
            os.mkdir(box, 0o700)
            os.chmod(box, 0o1733)
            os.chmod(folder, 0o711)
        except OSError as exc:
            tried.append(f"{base}: {exc.strerror or exc}")
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            continue
        if tried:
            sys.stderr.write(f"cudnnload: warning: the run's logs go to {folder}: {'; '.join(tried)}\n")
        return folder, box
    raise UsageError(f"no folder for the run's logs ({'; '.join(tried)})", fix="set TMPDIR to a writable folder "
                     "with room")

def _sizes(destination: str) -> dict[str, int]:
    """How long the user's log files already are: only what the run appends is its own."""
    if destination in ("stdout", "stderr") or "%i" in destination:
        return {}
    try:
        return {destination: os.path.getsize(destination)}
    except OSError:
        return {}


class Child:
    """The program, started with ``os.posix_spawn`` in this process's session and process group, its
    stderr into a pipe; what `Launched` needs of subprocess.Popen."""

    def __init__(self, program: str, argv: Sequence[str], env: Mapping[str, str], *,
                 mask: Iterable[int] | None = None, stdout_to_stderr: bool = False) -> None:
        import signal

        read, write = os.pipe()  # both close on exec; the dup2 onto 2 is the child's own
        try:
            # Python ignores SIGPIPE and SIGXFSZ; the program gets the defaults back, as Popen restores them.
            # Descriptors cudnnload inherited stay inherited, as when the user runs the program directly;
            # so does the signal mask (``mask``: the one this process had before `_Owner` blocked three).
            # (glibc's posix_spawn leaves its two internal signals, 32 and 33, ignored across the exec; so
            # does subprocess, which spawns this way where it can; glibc installs its handlers on use.)
            # (``stdout_to_stderr``: its standard output onto cudnnload's standard error, before that is the pipe)
            actions = [*([(os.POSIX_SPAWN_DUP2, 2, 1)] if stdout_to_stderr else []), (os.POSIX_SPAWN_DUP2, write, 2)]
            self.pid = os.posix_spawn(program, list(argv), env, file_actions=actions,
                                      setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                                      setsigmask=signal.pthread_sigmask(signal.SIG_BLOCK, ()) if mask is None else mask)
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
        import threading  # with functools, 2.5 ms: after the program has started

        self.stderr = read
        self.returncode: int | None = None
        self.ended_at = 0.0  # time.monotonic() when it was reaped
        self.ended_as: str | None = None  # its name (/proc/PID/stat's, 15 characters at most) when it ended
        self.reaped = threading.Event()

    def reap_when_it_ends(self) -> None:
        """From now on, reap it the moment it ends, whatever the main thread is doing (importing what
        explains it): its time is its own, and the deadline and the signals know it has ended."""
        import threading

        threading.Thread(target=self._reap, name="cudnnload-waitpid", daemon=True).start()

    def _reap(self) -> None:
        # its name as it ended, read while it is a zombie (not yet reaped): the program it last executed, which tells
        # a program that left through _exit from one that replaced itself (exec) where the linker's log cannot
        from cudnnload.children import proc_stat

        try:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            ended = proc_stat(self.pid)
            self.ended_as = ended.name if ended is not None else None
        except OSError:
            pass
        _, status = os.waitpid(self.pid, 0)
        self.returncode = os.waitstatus_to_exitcode(status)
        self.ended_at = time.monotonic()
        self.reaped.set()

    @property
    def running(self) -> bool:
        return not self.reaped.is_set()

    def wait(self) -> int:
        """Block until it ends; its return code, -N for signal N, as Popen's."""
        self.reaped.wait()
        assert self.returncode is not None
        return self.returncode


class _Tee:
    """Passes the child's stderr through to ours as it comes, keeping its last 64 KB, until `finish`:
    then what is in the pipe, and no more. A process the program left running that still holds the
    pipe's other end (one that could not be stopped) does not keep the run waiting."""

    def __init__(self, child: Child) -> None:
        import threading

        self.kept = bytearray()
        self._stderr = child.stderr
        self._wake, self._waker = os.pipe()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import select

        poll = select.poll()
        poll.register(self._stderr, select.POLLIN)
        poll.register(self._wake, select.POLLIN)
        try:
            while True:
                if any(fd == self._wake for fd, _ in poll.poll()):
                    os.set_blocking(self._stderr, False)
                    while self._pass(_read_ready(self._stderr)):
                        pass
                    return
                if not self._pass(os.read(self._stderr, 65536)):
                    return  # every writer has closed it
        finally:
            os.close(self._stderr)

    def _pass(self, chunk: bytes) -> bool:
        if not chunk:
            return False
        out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
        if out is not None:
            out.write(chunk)
            out.flush()
        else:
            sys.stderr.write(chunk.decode(errors="replace"))
        self.kept += chunk
        del self.kept[:-_TAIL_BYTES]
        return True

    def finish(self) -> None:
        """Pass on what the pipe holds, and stop."""
        os.write(self._waker, b"\0")
        self._thread.join()
        os.close(self._wake)
        os.close(self._waker)

    def lines(self) -> tuple[str, ...]:
        return tuple(line for line in self.kept.decode(errors="replace").splitlines() if line.strip())


def _read_ready(fd: int) -> bytes:
    """What a non-blocking pipe holds now (b"": nothing, or its end)."""
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return b""


def _sample(launched: Launched, period: float) -> None:
    """When each library first shows in the child's maps. Every read of /proc/PID/maps takes the child's
    mmap lock, which its own mmap()s then wait for: hence a period, not a busy loop."""
    pid = str(launched.child.pid)
    while launched.child.running:  # once it is reaped, its pid may be another process's
        now = (time.monotonic() - launched.started) * 1000
        for path in mapped_libraries(pid):
            launched.arrivals.setdefault(path, now)
        launched.child.reaped.wait(period)


class _Deadline:
    """Stops the program and every process it started once ``seconds`` have passed (none: never), if the
    program is still running then (what it left running once it ended, `Launched.wait` stops)."""

    def __init__(self, child: Child, family: Family, seconds: float | None) -> None:
        import threading

        self.fired = threading.Event()
        self._timer = threading.Timer(seconds, self._fire, args=(child, family)) if seconds is not None else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self, child: Child, family: Family) -> None:
        from cudnnload.diagnose.family import TIMEOUT

        if child.running:
            self.fired.set()
            family.stop(TIMEOUT)

    def cancel(self) -> bool:
        """Stop the clock; whether it had already run out."""
        if self._timer is not None:
            self._timer.cancel()
        return self.fired.is_set()
