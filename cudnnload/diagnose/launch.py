"""Starting a program under watch: the witnesses' switches, a scratch folder, the child in its own
process group, and the threads that watch it while it runs (its stderr passed through, its maps
sampled, its deadline).

Only what starting a process needs is imported here: ``os.posix_spawn`` rather than subprocess (whose
imports take 5 ms), no tempfile or shutil (4 ms), so that ``cudnnload doctor -- COMMAND`` can start the
program before the rest of cudnnload is imported (`early`): click, the linker model and the ELF memo
then load beside the running program instead of before it (35 ms on a 2-core machine, measured).
`observe` reads the witnesses once it ends.
"""

from __future__ import annotations

import os
import sys
import time

from cudnnload.errors import UsageError
from cudnnload.resolve.mapped import mapped_libraries

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_TAIL_BYTES = 64 * 1024


class Launched:
    """A program started under watch; `observe.run` waits for it and reads what the witnesses saw."""

    def __init__(self, program: str, command: tuple[str, ...], env: dict[str, str], *, api_level: int,
                 own_log: bool, linker_log: bool, timeout: float | None, sample_s: float) -> None:
        self.command = command
        self.scratch = _scratch_folder()
        self.prefix = os.path.join(self.scratch, "ld") if linker_log else None
        self.log = os.path.join(self.scratch, "cudnn.log")
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
            self.child = Child(program, command, env)
        except OSError as exc:
            self.cleanup()
            raise UsageError(f"cannot run it: {exc.strerror or exc}", path=command[0]) from None
        import threading

        self.tail = _Tee(self.child)
        self.arrivals: dict[str, float] = {}  # mapped file -> ms after start, as sampled
        self.ended = threading.Event()
        self.sampler = threading.Thread(target=_sample, args=(self, sample_s), daemon=True)
        self.sampler.start()
        self.deadline = _Deadline(self.child, timeout)

    def wait(self) -> tuple[int | None, bool, float]:
        """Block until the program ends: (its return code, None when killed at the deadline; whether the
        deadline fired; its wall time in seconds)."""
        self.child.wait()
        seconds = time.monotonic() - self.started
        self.ended.set()
        timed_out = self.deadline.cancel()
        self.tail.join()
        self.sampler.join()
        return (None if timed_out else self.child.returncode), timed_out, seconds

    def cleanup(self) -> None:
        """Remove the scratch folder (the linker's logs, cuDNN's log)."""
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)


def launch(command: Sequence[str], *, environ: Mapping[str, str] | None = None, timeout: float | None = None,
           api_level: int = 2, own_log: bool = False, linker_log: bool = True, sample_s: float = 0.02) -> Launched:
    """Start ``command`` under watch; UsageError when it cannot be started.

    cuDNN's log: a user's own ``CUDNN_LOGDEST_DBG`` file stands, and what the run appends to it is read;
    ``own_log`` (``trace``, which needs every call) sets cudnnload's own destination all the same."""
    env = dict(os.environ if environ is None else environ)
    if not command:
        raise UsageError("no command to run", fix="cudnnload doctor -- python app.py")
    program = command[0] if "/" in command[0] else _which(command[0], env.get("PATH", os.defpath))
    if program is None or not os.path.exists(program):
        raise UsageError("no such command", path=command[0], fix="give the program as you would run it")
    return Launched(program, tuple(command), env, api_level=api_level, own_log=own_log, linker_log=linker_log,
                    timeout=timeout, sample_s=sample_s)


# --- `doctor -- COMMAND` before the command line is parsed ---------------------------------------------

_early: Launched | None = None
# doctor's options that may come before `--` (click parses them again, the same way); anything else
# (a TARGET, --python, --help, a bad value) is left to the parser, whose error then comes before any run
_FLAGS = {"--json"}
_VALUED = {"--timeout", "--output"}
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
    timeout: float | None = None
    while options:
        name, joined, value = options.pop(0).partition("=")
        if name in _FLAGS and not joined:
            continue
        if name not in _VALUED:
            return False
        if not joined:
            value = options.pop(0) if options else ""
        if not value or value.startswith("-"):  # an empty value, or one the parser may read as an option
            return False
        if name == "--timeout":
            try:
                timeout = float(value)
            except ValueError:
                return False
            if not timeout >= 0.1:  # click's FloatRange(0.1); also refuses nan
                return False
    try:
        _early = launch(command, timeout=timeout, sample_s=DOCTOR_SAMPLE_S)
    except UsageError:
        return False  # the doctor tries again, and says why it cannot
    return True


def take(command: Sequence[str]) -> Launched | None:
    """The program `early` started, if it is ``command``; once."""
    global _early
    launched, _early = _early, None
    return launched if launched is not None and launched.command == tuple(command) else None


# --- the watchers -------------------------------------------------------------------------------------

def _which(name: str, path: str) -> str | None:
    """``shutil.which`` for a name without a slash: the first executable regular file on ``path``."""
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _scratch_folder() -> str:
    """A new folder only this user can read, for the logs (0700, in the first of ``$TMPDIR``, /tmp,
    /var/tmp that takes one, as ``tempfile.mkdtemp`` would)."""
    tried = []
    for base in dict.fromkeys(b for b in (os.environ.get("TMPDIR"), "/tmp", "/var/tmp") if b):
        folder = os.path.join(base, f"cudnnload-observe-{os.urandom(8).hex()}")
        try:
            os.mkdir(folder, 0o700)
            return folder
        except OSError as exc:
            tried.append(f"{base}: {exc.strerror or exc}")
    raise UsageError(f"no folder for the run's logs ({'; '.join(tried)})", fix="set TMPDIR to a writable folder")

def _sizes(destination: str) -> dict[str, int]:
    """How long the user's log files already are: only what the run appends is its own."""
    if destination in ("stdout", "stderr") or "%i" in destination:
        return {}
    try:
        return {destination: os.path.getsize(destination)}
    except OSError:
        return {}


class Child:
    """The program, started with ``os.posix_spawn`` in a session of its own (its process group: the
    deadline kills it with everything it started), its stderr into a pipe; what `Launched` needs of
    subprocess.Popen."""

    def __init__(self, program: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        import signal

        read, write = os.pipe()  # both close on exec; the dup2 onto 2 is the child's own
        try:
            # Python ignores SIGPIPE and SIGXFSZ; the program gets the defaults back, as Popen restores them.
            # Descriptors cudnnload inherited stay inherited, as when the user runs the program directly.
            # (glibc's posix_spawn leaves its two internal signals, 32 and 33, ignored across the exec; so
            # does subprocess, which spawns this way where it can; glibc installs its handlers on use.)
            self.pid = os.posix_spawn(program, list(argv), env, file_actions=[(os.POSIX_SPAWN_DUP2, write, 2)],
                                      setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
        import threading  # with functools, 2.5 ms: after the program has started

        self.stderr = os.fdopen(read, "rb")
        self.returncode: int | None = None
        self.reaped = threading.Event()

    def wait(self) -> int:
        """Block until it ends (the GIL released); its return code, -N for signal N, as Popen's."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
            self.reaped.set()
        return self.returncode


class _Tee:
    """Passes the child's stderr through to ours as it comes, keeping its last 64 KB."""

    def __init__(self, child: Child) -> None:
        import threading

        self.child, self.kept = child, bytearray()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
        with self.child.stderr as stream:
            for chunk in iter(lambda: stream.read1(65536), b""):
                if out is not None:
                    out.write(chunk)
                    out.flush()
                else:
                    sys.stderr.write(chunk.decode(errors="replace"))
                self.kept += chunk
                del self.kept[:-_TAIL_BYTES]

    def join(self) -> None:
        self._thread.join()

    def lines(self) -> tuple[str, ...]:
        return tuple(line for line in self.kept.decode(errors="replace").splitlines() if line.strip())


def _sample(launched: Launched, period: float) -> None:
    """When each library first shows in the child's maps. Every read of /proc/PID/maps takes the child's
    mmap lock, which its own mmap()s then wait for: hence a period, not a busy loop."""
    pid = str(launched.child.pid)
    while not launched.ended.is_set():
        now = (time.monotonic() - launched.started) * 1000
        for path in mapped_libraries(pid):
            launched.arrivals.setdefault(path, now)
        launched.ended.wait(period)


class _Deadline:
    """Kills the program's process group once ``seconds`` have passed (none: never)."""

    def __init__(self, child: Child, seconds: float | None) -> None:
        import threading

        self.fired = threading.Event()
        self._timer = threading.Timer(seconds, self._fire, args=(child,)) if seconds is not None else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self, child: Child) -> None:
        self.fired.set()
        kill_group(child)

    def cancel(self) -> bool:
        """Stop the clock; whether it had already run out."""
        if self._timer is not None:
            self._timer.cancel()
        return self.fired.is_set()


def kill_group(child: Child, grace: float = 2.0) -> None:
    """The program and every process it started (its own session): SIGTERM; then, once it has ended or
    ``grace`` seconds have passed, SIGKILL for whatever of the group is left."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        child.reaped.wait(grace)  # `wait` reaps it, in the thread that waits for the program
