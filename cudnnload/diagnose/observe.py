"""``cudnnload doctor -- COMMAND``: run the user's unmodified program and explain what really happened.

The program runs in a child, in cudnnload's session and process group, its output passed through, and three
witnesses on: the dynamic linker's own account (``LD_DEBUG=libs,files``, one file per process:
every cuDNN, cuBLAS, NVRTC and driver file it mapped and by which rule, every name it looked up in
vain, every dlopen answered by an object already loaded), cuDNN's API log at the error level
(``CUDNN_LOGLEVEL_DBG=2``; the 8.x switches too), and ``/proc/PID/maps`` sampled while it runs. Its
end (exit status, or the signal and the library it died in) is read beside them. Then, for each cuDNN
the program opened, the prediction cudnnload makes for the same shim in the same environment, with
what was already loaded when the shim came: where observation and prediction disagree, that is a
finding in itself.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.codes import ActionKind, Code, Effect, SubjectKind
from cudnnload.diagnose import lddebug
from cudnnload.diagnose.apilog import ApiCall, parse
from cudnnload.diagnose.family import LEFT_RUNNING, Killed, Process, Survivor
from cudnnload.diagnose.finishing import finished
from cudnnload.diagnose.launch import DOCTOR_SAMPLE_S, Launched, found_on_path, launch, take
from cudnnload.resolve import linker
from cudnnload.resolve.catalog import classify_bundled as classify
from cudnnload.resolve.catalog import generation
from cudnnload.resolve.mapped import is_cuda_family

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudnnload.diagnose.remedy import Judge
    from cudnnload.diagnose.targets import Resolved
    from cudnnload.judge.judged import Judged
    from cudnnload.judge.routes import Served, Use
    from cudnnload.resolve.consumers import Consumer
    from cudnnload.resolve.discovery import Context
    from cudnnload.resolve.routes import Route
    from cudnnload.resolve.startup import Startup
    from cudnnload.verdicts import Action, Finding, Fix, Subject

_FAMILY = ("libcudnn", "libcublas", "libnvrtc", "libcuda.", "libcudart")
# What cuDNN prints before it fails (the shims' format strings: "Could not load library %s. Error: %s",
# "Invalid handle. Cannot load symbol %s", "Could not load symbol %s. Error: %s"; graph's
# "Unable to load any of {...}"; cudnn-facts §1.2 and the scenario corpus).
_CUDNN_LINES = ("Could not load library ", "Invalid handle. Cannot load symbol ", "Could not load symbol ",
                "Unable to load any of {")


@dataclass(frozen=True)
class Run:
    """One run of a program under watch: how it ended, and what each witness saw."""

    command: tuple[str, ...]
    pid: int
    returncode: int | None  # None: killed at the timeout
    signal: str | None
    timed_out: bool
    seconds: float
    stderr_tail: tuple[str, ...]  # the end of what it wrote on stderr (also passed through)
    logs: dict[int, lddebug.LinkerLog]  # by pid: the program and every child it started
    api: tuple[ApiCall, ...]  # cuDNN's API log
    arrivals: dict[str, float] = field(default_factory=dict)  # mapped file -> ms after start, as sampled
    interrupted: str | None = None  # the signal that interrupted cudnnload while the program ran
    killed: tuple[Killed, ...] = ()  # the program's processes cudnnload ended (timeout, interrupt, left running)
    survivors: tuple[Survivor, ...] = ()  # those it could not end
    logs_lost: str | None = None  # why the witnesses' logs may be cut short (their file system filled up)
    address_limit: int | None = None  # its address-space limit (ulimit -v), inherited from cudnnload's own
    linker_logged: bool = True  # the linker's log was asked for (LD_DEBUG)
    static: bool = False  # the program run has no dynamic linker (no PT_INTERP: Go without cgo, static-pie): no log
    ended_as: str | None = None  # the process's name as it ended (/proc/PID/stat's): the program it last executed


def run(command: Sequence[str], *, environ: Mapping[str, str] | None = None, timeout: float | None = None,
        api_level: int = 2, own_log: bool = False, linker_log: bool = True, sample_s: float = 0.02,
        launched: Launched | None = None, json_out: bool = False) -> Run:
    """Run ``command`` and watch it (see the module docstring and `launch.launch`, whose options these
    are); UsageError when it cannot be started. ``launched``: the program, already started."""
    if launched is None:
        launched = launch(command, environ=environ, timeout=timeout, api_level=api_level, own_log=own_log,
                          linker_log=linker_log, sample_s=sample_s, json_out=json_out)
    try:
        returncode, timed_out, seconds = launched.wait()
        lost = launched.logs_lost()
        logs = lddebug.read(launched.prefix) if launched.prefix is not None else {}
        if launched.mine:
            api = _read_log(launched.log, 0)
        elif launched.theirs == "stderr":
            api = parse(line + "\n" for line in launched.tail.lines())
        else:
            api = tuple(call for path in _log_paths(launched.theirs or "", logs)
                        for call in _read_log(path, launched.before.get(path, 0)))
    finally:
        launched.cleanup()
    from cudnnload.loading.gpu import address_limit

    sig = signal.Signals(-returncode).name if returncode is not None and returncode < 0 else None
    return Run(launched.command, launched.child.pid, returncode, sig, timed_out, seconds, launched.tail.lines(),
               logs, api, launched.arrivals, launched.interrupted, tuple(launched.family.killed),
               tuple(launched.family.survivors), lost, address_limit(), launched.prefix is not None,
               not logs and _static(launched.program), launched.child.ended_as)


def _static(program: str) -> bool:
    """Whether ``program`` is an ELF program that names no dynamic linker (PT_INTERP): the kernel starts it
    itself, no ld.so runs, so it keeps no linker's log and maps no library by name (a script or a file that is no
    ELF: False)."""
    from cudnnload.errors import ElfError
    from cudnnload.resolve.elf import read_elf

    try:
        info = read_elf(program)
    except (ElfError, OSError):
        return False
    return info.elf_type in ("ET_EXEC", "ET_DYN") and info.interpreter is None and not info.soname


def _log_paths(destination: str, logs: Mapping[int, lddebug.LinkerLog]) -> tuple[str, ...]:
    """The files a CUDNN_LOGDEST_DBG destination names for the processes that ran (``%i``: the pid)."""
    if destination in ("stdout", "stderr", ""):
        return ()
    if "%i" not in destination:
        return (destination,)
    return tuple(destination.replace("%i", str(pid)) for pid in logs)


def _read_log(path: str, offset: int) -> tuple[ApiCall, ...]:
    """The API log the run wrote to ``path`` after ``offset``; () for a FIFO or device (not read)."""
    from cudnnload.files import NotRegularFile, open_regular

    try:
        with open_regular(path) as raw:
            raw.seek(offset)
            return parse(io.TextIOWrapper(raw, encoding="utf-8", errors="replace"))
    except (OSError, NotRegularFile):
        return ()


# --- what happened ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Observation:
    """What the program did with cuDNN, from the witnesses of a `Run`."""

    command: tuple[str, ...]
    returncode: int | None
    signal: str | None
    timed_out: bool
    seconds: float
    libraries: tuple[lddebug.Opened, ...]  # the cuDNN, cuBLAS, NVRTC and driver files mapped, in order
    missed: tuple[lddebug.Missed, ...]  # the names of those families looked up in vain
    reused: tuple[lddebug.Reused, ...]  # dlopens answered by an object already in the process
    messages: tuple[str, ...]  # what cuDNN printed
    api_errors: tuple[ApiCall, ...]  # the API log's error blocks
    died_in: str | None  # where the process died, when it died of a signal
    processes: int  # processes the linker logged (the program and its children)
    # files of those families seen in /proc/PID/maps that the linker's log does not show (its log off: a
    # setuid program, secure-execution mode; a process the log missed)
    unlogged: tuple[str, ...] = ()
    stuck_on: str | None = None  # the FIFO the linker was opening when the program was killed at the deadline
    interrupted: str | None = None  # the signal that interrupted cudnnload (SIGINT, SIGTERM, SIGHUP)
    pid: int = 0  # the program's
    killed: tuple[Killed, ...] = ()  # the program's processes cudnnload ended, each seen to end
    survivors: tuple[Survivor, ...] = ()  # the program's processes it could not end
    frameworks: tuple[str, ...] = ()  # framework libraries it mapped (libtorch_cuda.so, JAX's CUDA plugin, ...)
    stderr_tail: tuple[str, ...] = ()  # the last lines it wrote on stderr
    logs_lost: str | None = None  # why the linker's and cuDNN's logs may be cut short: then they prove nothing
    address_limit: int | None = None  # the address-space limit it ran under (ulimit -v); None: none
    unmapped: tuple[str, ...] = ()  # the files its dlopen failed to map under that limit (`_beyond_limit`)
    cut_on: str | None = None  # the file it died mapping (SIGBUS, SIGSEGV: a file cut inside a segment)
    # why what the program loaded after it started is not known (it replaced itself with a program started without
    # the linker's log switches: env -i, sudo, su), or None
    unwatched: str | None = None

    @property
    def shims(self) -> tuple[lddebug.Opened, ...]:
        return _shims(self.libraries)

    @property
    def ok(self) -> bool:
        """It ended by itself with status 0."""
        return self.returncode == 0 and not self.signal and not self.timed_out and not self.interrupted


def _shims(opened: Sequence[lddebug.Opened]) -> tuple[lddebug.Opened, ...]:
    return tuple(o for o in opened if _is_shim(o.path))


def _is_shim(path: str) -> bool:
    lib = classify(os.path.basename(path))
    return lib is not None and lib.key == "shim"


def observation(ran: Run) -> Observation:
    logs = ran.logs
    main = logs.get(ran.pid)
    order = [main] if main else []
    order += [log for pid, log in sorted(logs.items()) if pid != ran.pid]
    opened = [o for log in order for o in log.opened if os.path.basename(o.path).startswith(_FAMILY)]
    # a file whose link map the log shows generated but whose code the kernel refused to map (a file system mounted
    # noexec: `linker.noexec`; an address-space limit: `_beyond_limit`): dlopen failed there and the process may go
    # on; the log says no more of it
    asked = {m.requested_by for log in order for m in log.missed}
    noexec = [o for o in opened if not o.initialized and linker.noexec(o.path)]
    limited = [o for o in opened if not o.initialized and o not in noexec and _beyond_limit(o, ran, asked)]
    refused = noexec + limited
    libraries = tuple(o for o in opened if o not in refused)
    # a lookup a log ends inside, in a process that ended by itself: the linker stopped at a file it cannot use, or
    # found nothing under any name it tried (a program that NEEDs a shim the search does not find stops there:
    # "error while loading shared libraries", on stderr, not in the log)
    killed = {k.process.pid for k in ran.killed}
    ended = () if ran.timed_out or ran.interrupted else tuple(
        log.unfinished for log in order if log.unfinished is not None and log.pid not in killed
        and log.unfinished.tried)
    missed = tuple(m for m in (*(m for log in order for m in log.missed), *ended)
                   if os.path.basename(m.name).startswith(_FAMILY)) + tuple(
        dict.fromkeys(lddebug.Missed(o.name, o.requested_by, o.how, (o.path,)) for o in refused))
    reused = tuple(r for log in order for r in log.reused if os.path.basename(r.path).startswith(_FAMILY))
    messages = tuple(line for line in ran.stderr_tail if line.startswith(_CUDNN_LINES))
    errors = tuple(call for call in ran.api if call.level == "E")
    logged = {os.path.realpath(o.path) for log in order for o in log.opened}
    unlogged = tuple(path for path in ran.arrivals if os.path.realpath(path) not in logged)
    stuck = main.stuck_opening if ran.timed_out and main is not None else None
    fifo = stuck if stuck is not None and _is_fifo(stuck) else None
    frameworks = tuple(dict.fromkeys(o.path for log in order for o in log.opened if _FRAMEWORK_FILE.search(o.path)))
    return Observation(ran.command, ran.returncode, ran.signal, ran.timed_out, ran.seconds, libraries, missed, reused,
                       messages, errors, _died_in(ran, main, messages), len(logs), unlogged, fifo, ran.interrupted,
                       ran.pid, ran.killed, ran.survivors, frameworks, ran.stderr_tail, ran.logs_lost,
                       ran.address_limit, tuple(o.path for o in limited), _cut_on(ran, main), _unwatched(ran, main))


def _unwatched(ran: Run, main: lddebug.LinkerLog | None) -> str | None:
    """Why the linker's log cannot show what the program loaded, where it ended by itself: its log ends as it
    starts, the process having replaced itself (exec) with a program started without the log's switches (``env
    -i``, sudo, su clear the environment; a set-user-ID program ignores them), or there is no log of it at all.
    None where the log covers the run (a process killed or timed out ends its log wherever it was)."""
    if not ran.linker_logged or ran.returncode is None or ran.signal or ran.timed_out or ran.interrupted:
        return None
    if main is None:
        return None if ran.logs or ran.static else (
            "the dynamic linker kept no log of it (a set-user-ID program such as sudo ignores the log's switches, "
            "and so does what it starts)")
    if main.handed_over is None:
        return None
    started = os.path.basename(main.handed_over)
    run = os.path.basename(ran.command[0]) if ran.command else started
    if ran.ended_as in (started[:_NAME_KEPT], run[:_NAME_KEPT]):
        # it ended as the program whose start the log ends at, or as the command run (a script: the kernel names the
        # process after it, the log after its interpreter): it executed nothing after, it left through _exit (dash
        # does, always), and the log holds all it loaded
        return None
    if ran.ended_as is not None:
        return (f"the dynamic linker's log of it ends as {started} starts, and it ended as {ran.ended_as}: it "
                f"replaced itself (exec) with {ran.ended_as}, started without the log's switches (env -i, sudo and su "
                "clear the environment)")
    return (f"the dynamic linker's log of it ends as {started} starts: it replaced itself "
            "(exec) with a program started without the log's switches (env -i, sudo and su clear the environment), "
            "or left through _exit before it loaded anything")


# The length of the name the kernel keeps for a process (TASK_COMM_LEN less its NUL): the file name it executed, cut
_NAME_KEPT = 15


def _goes_on_without(name: str) -> bool:
    """Whether the cuDNN library ``name`` names is one its opener goes on without (graph without an engine library,
    `installs.optional_engines`): a program that ended well lost engines, not a call (fix differential 3-16585: an
    engine library closed to the program's user, no prediction of it, and an error for a program that worked)."""
    from cudnnload.judge.installs import optional_engines

    lib = classify(os.path.basename(name))
    return lib is not None and optional_engines(lib.major, lib.key)


def _cut_on(ran: Run, log: lddebug.LinkerLog | None) -> str | None:
    """The file the process died mapping (SIGBUS or SIGSEGV before its initializer ran); None otherwise."""
    dying = log.dying_in if log is not None and ran.signal in ("SIGBUS", "SIGSEGV") else None
    return dying.path if dying is not None and not dying.initialized else None


def _beyond_limit(opened: lddebug.Opened, ran: Run, asked: set[str]) -> bool:
    """A file the kernel would not map under the run's address-space limit (ulimit -v): glibc reserves a library's
    whole span in one mmap, which fails with ENOMEM once the process's address space would pass the limit ("failed
    to map segment from shared object"). Its link map was generated and never initialized, no lookup of its own
    failed, and the process did not die there (a file cut inside a segment kills it: SIGBUS); where the program's
    stderr says which file failed to map, only that one."""
    if ran.address_limit is None or ran.signal or ran.timed_out or opened.path in asked:
        return False
    said = [line for line in ran.stderr_tail if "failed to map segment from shared object" in line]
    name = os.path.basename(opened.path)
    return not said or any(name in line for line in said)


# The libraries that show a framework runs in the process (`consumers.consumers_mapped` reads their owners).
_FRAMEWORK_FILE = re.compile(r"/(torch/lib/libtorch_cuda|jax_plugins/xla_cuda|onnxruntime/capi/libonnxruntime_"
                             r"providers_cuda|tensorflow/libtensorflow_framework)")


def _is_fifo(path: str) -> bool:
    import stat

    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def _died_in(ran: Run, log: lddebug.LinkerLog | None, messages: tuple[str, ...]) -> str | None:
    """Where a process killed by a signal died: mapping a file (SIGBUS on a cut one), in a library's
    initializer, or in cuDNN after the line it printed (abort)."""
    if ran.timed_out and log is not None and log.stuck_opening is not None:
        from cudnnload.files import kind_of

        try:
            kind = kind_of(os.stat(log.stuck_opening).st_mode)
        except OSError:
            kind = None
        what = f", {kind}: glibc's open() waits for something to write to it" if kind and "FIFO" in kind else ""
        return f"the dynamic linker, opening {log.stuck_opening}{what}"
    if ran.signal is None:
        return None
    dying = log.dying_in if log else None
    if dying is not None and not dying.initialized and ran.signal in ("SIGBUS", "SIGSEGV"):
        return f"the dynamic linker, mapping {dying.path} (asked for by {os.path.basename(dying.requested_by)})"
    if ran.signal == "SIGABRT" and messages:
        shim = next((o.path for o in reversed(_shims(log.opened if log else ()))), "the cuDNN shim")
        return f"{shim}, which called abort() after printing \"{messages[-1]}\""
    if dying is not None:
        return f"{dying.path}, while it was being loaded"
    return None


# --- the program's report ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """The prediction for one shim the program opened, beside what the linker did."""

    shim: str  # as opened
    release: str | None
    predicted: tuple[tuple[str, str | None, str], ...]  # (sub-library, path, rule) in this environment alone
    observed: tuple[tuple[str, str | None, str], ...]  # (sub-library, path, rule) as the linker mapped them
    disagreements: tuple[str, ...]


@dataclass(frozen=True)
class ProgramReport:
    observation: Observation
    comparisons: tuple[Comparison, ...]
    findings: tuple[Finding, ...]
    headline: str = ""  # one line: why it stopped and the cause found, or the cuDNN a healthy run used
    frameworks: tuple[Use, ...] = ()  # the cuDNN each framework it ran got

    @property
    def healthy(self) -> bool:
        from cudnnload.verdicts import ERROR

        return self.observation.returncode == 0 and not any(f.severity is ERROR for f in self.findings)


def diagnose_program(command: Sequence[str], *, environ: Mapping[str, str] | None = None,
                     timeout: float | None = None, again: bool = True, json_out: bool = False) -> ProgramReport:
    """Run ``command`` (its output passed through; ``json_out``: its standard output onto standard error, which
    the report's JSON document leaves to it) and explain what it did with cuDNN. ``again``: where an LD_PRELOAD
    entry stopped it before it started, run it once more without that entry, for what follows (`_after_start`)."""
    env = dict(os.environ if environ is None else environ)
    # `cudnnload doctor -- COMMAND` started it before its command line was parsed (`launch.early`).
    # The linker's log is the account; the maps, sampled, catch what it cannot show.
    launched = take(command, env, json_out) or launch(command, environ=env, timeout=timeout, sample_s=DOCTOR_SAMPLE_S,
                                                       json_out=json_out)
    preparing = _Prepare(env, launched)  # the linker model, the memo and the predictions, while it runs
    ran = run(command, launched=launched)
    seen = observation(ran)
    comparisons: dict[tuple[str, tuple[str, ...]], Comparison] = {}
    findings: list[Finding] = []
    explained: dict[str, str] = {}  # function -> the status name the prediction gave it
    installs: dict[str, Judged] = {}  # shim as opened -> its install, as the program loaded it
    for shim in seen.shims:  # a program that never opened cuDNN needs no model
        if shim.path in installs:  # the same shim in another process (a worker): said once, counted
            continue
        comparison, said, expected, as_run = _compare(shim, seen, env, preparing.result(), preparing.alone)
        comparisons.setdefault((comparison.shim, comparison.disagreements), comparison)
        findings += said
        explained.update(expected)
        if as_run is not None:
            installs[shim.path] = as_run
    gpu = _gpu_findings(installs, env)
    # a Python program's start-up, as its command line starts it: the sys.path its frameworks' loaders search
    # (what put each entry there), and what its .pth files map; read once the run is over
    program, died = _python_start(seen.command, env) if installs or not seen.ok else (None, False)
    served = _frameworks(seen, installs, env, preparing.result(), [f for f in gpu if f.severity == "error"],
                         program) if installs else ()
    findings += [f for s in served for f in s.findings]
    findings += gpu
    findings += _run_findings(seen, explained, findings, preparing.result())
    findings = [*_versions_unmet(seen, installs, preparing.result()), *findings]  # it stopped there, before the rest
    if preparing.ctx is not None:
        preparing.ctx.cache.save()  # what the comparisons read, for the next run
    from cudnnload.verdicts import unique

    final = unique(_as_run(findings, seen, explained))
    # the order of what to do first: what the program's own code asked for in vain (not a cuDNN file: the
    # prediction knows why that one asks), with a change that gives it, is why it stopped; then what a framework's
    # own loader gets (its route decides which cuDNN it calls), where that has a change; then the rest
    def changes(f: Finding) -> bool:
        return f.severity == "error" and any(a.do is not ActionKind.MANUAL for a in f.fix.actions)

    # (and where it died mapping a file the prediction has a fix for: that fix)
    stopped = tuple(f for f in final if not seen.ok and changes(f) and (
        f.code is Code.LOAD_FAILED and f.subject.path and classify(os.path.basename(f.subject.path)) is None
        or f.code is Code.PROGRAM_DIED and seen.cut_on is not None))
    framework = tuple(f for f in final if changes(f) and f not in stopped and any(f in s.findings for s in served))
    stopped = _each_asked(stopped, seen)
    final = (*stopped, *framework, *(f for f in final if f not in stopped and f not in framework))
    # the program's Python environment installed as links into a cache that is gone: that first and alone, as in the
    # target form (`doctor.diagnose`): what else the run shows follows from it
    gone = _links_gone(program)
    final = (*gone, *final)
    first = next((f for f in final if f.severity == "error"), None) if not gone else None
    # the model's whole repair, first, where it has a change to make: where what the run showed has none of its
    # own (none, or only words for a person), or where the repair takes the first error's own change and goes on
    # (the next cause it reveals), or where the first error's own change, applied to the model, leaves it failing
    # (a relative entry made absolute keeps the other release it leads to); before a library the program stopped
    # for want of only where the repair takes that library's own change too (torch missing cuBLAS and cuDNN)
    if first is not None:
        from cudnnload.diagnose.remedy import goes_further

        whole, better = _whole_repair(seen, env, program, first, preparing.result(), served, died,
                                      [f for f in gpu if f.severity == "error"])
        steps = whole[0].fix.actions if whole else ()
        own = [a for a in first.fix.actions if a.do is not ActionKind.MANUAL]
        more = goes_further(steps, own)  # the first error's change, and what follows
        # a step for a person in it keeps it behind the run's own change, unless the program stopped for want of a
        # library and the repair takes that library's change and goes on: then it is the target form's repair,
        # whose steps after the person's may make that one unneeded (fix differential 3-13221: torch missing cuBLAS,
        # a partial copy in torch/lib that the repair deletes after "put back the complete cuDNN in torch/lib"); nor
        # where the run's own change is only a person's, and the repair has that and changes of its own (3-14272: a
        # partial copy in torch/lib, the venv's cuDNN folder closed: "put back the complete cuDNN", then open it)
        # a framework's own finding first, where the run did as predicted: the program failed as the model judged
        # that framework, and the repair judged on it is the target form's (`doctor --python`), said first there
        # (fix differential 3-18293: torch's partial 9.0 copy in torch/lib, its own wheel uninstalled; the finding's
        # fix put 9.0 back whole, which torch still refuses, where the repair installs its wheel too)
        theirs = first in framework and first.code in _FRAMEWORK_CODES and not any(
            f.code is Code.PREDICTION_DISAGREES for f in final) and any(
            a.do is not ActionKind.MANUAL for a in steps if a not in own)
        made = theirs or all(a.do is not ActionKind.MANUAL for a in steps) or (first in stopped and more and any(
            a.do is not ActionKind.MANUAL for a in steps if a not in own)) or (not own and any(
                a.do is not ActionKind.MANUAL for a in steps) and all(a in steps for a in first.fix.actions)) or (
            better and any(a.do is not ActionKind.MANUAL for a in steps if a not in own))
        if steps and made and (more if first in stopped else not own or better or more or theirs):
            final = (*whole, *final)
    final = _after_start(final, seen, env, command, timeout, json_out) if again else final
    # what a wheel put back meets, with it; a shared entry's, and a change the shell's frameworks would feel, for it
    # alone
    from cudnnload.diagnose.doctor import shell_frameworks

    final = tuple(finished(final, env, _started_context(program, preparing.result()),
                           shell_frameworks(env, timeout or 60.0, besides=_interpreter(seen.command))))
    return ProgramReport(seen, tuple(comparisons.values()), final, _headline(seen, final, served, installs),
                         tuple(s.use for s in served))


def _links_gone(program: Startup | None) -> tuple[Finding, ...]:
    """The links-gone findings of the folders on the program's Python's sys.path (`resolve.consumers.links_gone`)."""
    if program is None:
        return ()
    from cudnnload.judge.frameworks import links_gone as finding
    from cudnnload.resolve.consumers import links_gone

    return tuple(finding(each, program.interpreter) for each in links_gone(
        [entry.path for entry in program.path if entry.usable and os.path.isabs(entry.path)]))


def _started_context(program: Startup | None, ctx: Context) -> Context:
    """The process model with what the program's Python start-up maps (a ``.pth`` line, ``sitecustomize``: in the
    process before its first line, each with the line that did it), for what a wheel put back would meet."""
    from cudnnload.diagnose.targets import started_cuda
    from cudnnload.resolve.discovery import started_context

    return started_context(ctx, started_cuda(program)) if program is not None else ctx


def _after_start(final: tuple[Finding, ...], seen: Observation, env: Mapping[str, str], command: Sequence[str],
                 timeout: float | None, json_out: bool = False) -> tuple[Finding, ...]:
    """``final`` where the program never started because an LD_PRELOAD entry stops every program (its first error,
    whose fix changes the environment only): what the program does once started cannot be seen from a process
    that never ran, so it is run again with that change made (no code of it ran the first time), and where that run
    fails too, one repair of both comes first: the change, then the first fix that run gives."""
    from cudnnload.diagnose.remedy import ENVIRONMENT, World, kept_once
    from cudnnload.verdicts import Finding, Subject, fix

    first = next((f for f in final if f.severity == "error"), None)
    if first is None or first.code is not Code.PRELOAD_CANNOT_LOAD or seen.shims or not first.fix.actions or any(
            a.do not in ENVIRONMENT for a in first.fix.actions):
        return final
    changed = World(env).after(*first.fix.actions).environ
    sys.stderr.write(f"cudnnload: {os.path.basename(command[0])} did not start ({first.message}); run again with "
                     f"{'; '.join(map(str, first.fix.actions))}, for what follows\n")
    sys.stderr.flush()
    then = diagnose_program(command, environ=changed, timeout=timeout, again=False, json_out=json_out)
    after = next((f for f in then.findings if f.severity == "error"), None)
    steps = list(dict.fromkeys((*first.fix.actions, *(after.fix.actions if after is not None else ()))))
    if after is None or not any(a.do is not ActionKind.MANUAL for a in after.fix.actions):
        return final
    return (Finding(Code.REPAIR, f"what makes {os.path.basename(command[0])} start and work: {len(steps)} changes; "
                    f"once started without the preload, it showed: {after.message}",
                    Subject(SubjectKind.PROGRAM, command[0]), fix(*kept_once(steps), note=after.fix.note)), *final)


def _each_asked(stopped: tuple[Finding, ...], seen: Observation) -> tuple[Finding, ...]:
    """The libraries the program asked for in vain (or died mapping), more than one (torch's import wants cuBLAS and
    cuDNN, both uninstalled): one repair that gives each, first, so that following the first fix starts it; else as
    they are."""
    from cudnnload.verdicts import Finding, Subject, fix

    actions = list(dict.fromkeys(a for f in stopped for a in f.fix.actions if a.do is not ActionKind.MANUAL))
    if len(stopped) < 2 or len(actions) < 2:
        return stopped
    # (a death while mapping a file names that file, not the program)
    asked = ", ".join(dict.fromkeys(os.path.basename(
        (seen.cut_on if f.code is Code.PROGRAM_DIED else None) or f.subject.path or "") for f in stopped))
    return (Finding(Code.REPAIR, f"what makes {os.path.basename(seen.command[0])} start: {len(actions)} changes, "
                    f"one for each library it asked for in vain ({asked}; the errors below say why)",
                    Subject(SubjectKind.PROGRAM, seen.command[0]), fix(*actions)), *stopped)


def _whole_repair(seen: Observation, env: Mapping[str, str], program: Startup | None, first: Finding, ctx: Context,
                  served: Sequence[Served] = (), died: bool = False,
                  blockers: Sequence[Finding] = ()) -> tuple[tuple[Finding, ...], bool]:
    """The run failed: the whole repair (`doctor.repair`) of the cuDNN the program opened (its first shim), or of
    the shim name it asked for in vain, judged on the model in the program's environment; and whether the model
    shows ``first``'s own change insufficient (a change of the environment only, after which it still finds an
    error) where it does not show the repair so (each of its changes of the environment judged; a wheel it
    installs, whose files the model cannot see, is its plan's own step).
    A Python program whose frameworks ran (or stopped before any cuDNN was opened, their files mapped): the repair of
    its interpreter's environment with those frameworks, as
    ``doctor --python`` judges it (each changed world judged on what each framework's own loader gets there), not
    of the cuDNN it happened to open (which may be the stray one); ``died``: its interpreter died in its own start-up
    (a .pth line, sitecustomize), with the frameworks it has.
    ``blockers``: what the program's environment shows of the GPUs that stops any cuDNN call (CUDA_VISIBLE_DEVICES
    hiding every GPU), judged with the rest as plain `doctor` judges it: part of the repair, not left for a second
    run of doctor."""
    from cudnnload.diagnose.doctor import judge_again, repair
    from cudnnload.diagnose.remedy import World
    from cudnnload.diagnose.targets import resolve_target
    from cudnnload.errors import CudnnloadError
    from cudnnload.resolve.consumers import consumers_mapped
    from cudnnload.verdicts import unique

    named = _interpreter(seen.command)
    python = found_on_path(named, env) if named is not None else None
    # the frameworks that ran and fail on what they got; or, where the run stopped before any cuDNN was opened, those
    # whose files it mapped (torch's import that found no libcudnn.so.9): they are what the repair is for
    consumers = [s.route.consumer for s in served] if any(not s.works for s in served) else \
        list(consumers_mapped(seen.frameworks, environ=env)) if python is not None and not served and not seen.ok \
        else []
    dead = _had_it_started(python, env) if python is not None and not consumers and died else None
    consumers = consumers or list(dead[1] if dead is not None else ())
    if python is not None and (consumers or dead is not None):
        from cudnnload.loading.gpu import gpu_facts

        try:
            # the interpreter as `_had_it_started` read it already, when it dies in its start-up
            resolved = dead[0] if dead is not None else \
                resolve_target(None, python=python, environ=env, program=program)
            # frameworks its interpreter imports from its sys.path (not objects the program opened by path)
            if {c.site for c in consumers} <= set(resolved.target.site_paths or ()):
                judge = judge_again(None, python, None, False, consumers, gpu_facts(env), blockers, program)
                whole = repair(unique([*judge(World(env)), *blockers]), resolved.install, env, judge,
                               f"{os.path.basename(python)}'s {'frameworks' if consumers else 'start-up'}",
                               resolved.target.path, always=True,
                               keep=False)
                return whole, bool(whole) and _leaves_errors(first.fix.actions, env, judge) is True and \
                    _leaves_errors(whole[0].fix.actions, env, judge) is not True
        except CudnnloadError:
            pass  # an interpreter the model cannot ask: the cuDNN the program opened, below

    misses = _own_first([m for (stem, _), looked in _failed_lookups(seen).items() if stem == "libcudnn"
                         for m in looked], ctx)
    # the shim the program itself asked for, not one an LD_PRELOAD entry put there before it
    from cudnnload.resolve.process import preload_entries

    # (a bare name, LD_PRELOAD=libcudnn.so.9: the file the loader finds for it, as the process model has it)
    preloaded = {os.path.realpath(e) for e in preload_entries(env) if "/" in e} | \
        {os.path.realpath(p.path) for p in ctx.preloads if p.path and p.entry is not None}
    own = [o for o in seen.shims if os.path.realpath(o.path) not in preloaded]
    # only a preloaded shim served it: the program's own load was by name (answered by the object already
    # loaded), so the repair is judged for that name, the preload in its environment
    target = _asked(own[0]) if own else _shim_name(seen.shims[0].path) if seen.shims else \
        misses[0].name if misses else None
    if not own and seen.shims and (linked := _linked_to(seen.command, target, env, ctx)) is not None:
        # ...unless the program itself NEEDs that name: then the program is judged, as `doctor PROGRAM` judges it
        # (its RPATH leads the preloaded shim's dlopens too, when the shim has an RPATH of its own: fix differential
        # 3-12341, a conda program's sub-libraries under a preloaded wheel shim; judged as the bare name, the
        # repair took LD_LIBRARY_PATH's entry away and left the preload)
        target = linked
    if target is None:
        return (), False
    try:
        resolved = resolve_target(target, environ=env, program=program)
        judge = judge_again(target, None, None, False, (), None, blockers, program)
        whole = repair(unique([*judge(World(env)), *blockers]), resolved.install, env, judge,
                       f"{os.path.basename(seen.command[0])}'s cuDNN ({target})", target, always=True)
        better = bool(whole) and _leaves_errors(first.fix.actions, env, judge) is True and \
            _leaves_errors(whole[0].fix.actions, env, judge) is not True
        return whole, better
    except CudnnloadError:
        return (), False  # a target the model cannot read: the findings above say what the run showed


def _had_it_started(python: str, env: Mapping[str, str]) -> tuple[Resolved, tuple[Consumer, ...]] | None:
    """The interpreter ``python`` as `doctor --python` reads it, and its frameworks, when it dies in its own start-up
    (a `.pth` line or sitecustomize that maps a cuDNN whose graph is cut short: `targets._past_the_step`; fix
    differential 2-2034): the program ran none of them, and they, with the interpreter's start-up, are what the
    repair is for. None when its start-up does not die."""
    from cudnnload.diagnose.targets import resolve_target
    from cudnnload.errors import CudnnloadError
    from cudnnload.resolve.consumers import find_consumers

    try:
        resolved = resolve_target(None, python=python, environ=env)
    except CudnnloadError:
        return None
    if not any(f.code is Code.STARTUP_FAILED for f in resolved.findings):
        return None
    return resolved, find_consumers(list(resolved.target.site_paths or ()), environ=env,
                                    interpreter=resolved.target.python, run=False)


def _leaves_errors(actions: Sequence[Action], env: Mapping[str, str], judge: Judge) -> bool | None:
    """Whether the model still finds an error once ``actions`` are made: the target judged in the environment they
    change, less the findings that their changes of files take care of (`remedy.taken_care_of`: the model cannot see
    the files a wheel installed writes, but knows what such a change mends); None when one of them is a step the
    model cannot make (a person's, a wrapper, a restart)."""
    from cudnnload.diagnose.remedy import World, taken_care_of

    if not actions or any(a.do in (ActionKind.MANUAL, ActionKind.RUN, ActionKind.RESTART) for a in actions):
        return None
    return any(f.severity == "error" and not taken_care_of(f, actions) for f in judge(World(env).after(*actions)))


def _strays_said() -> Fix:
    """Two folders' cuDNN in one process, where the prediction's findings give the change (said once, there)."""
    from cudnnload.verdicts import fix

    return fix(note="one cuDNN per process: the prediction's findings say which folder gave the stray ones")


def _strays_fix(seen: Observation, major: int, places: set[str], ctx: Context) -> Fix:
    """One cuDNN per process, checked on the model for what the program asked for (its shim's name, or path):
    the model's own repair (`remedy.plan`: the least change of the environment first) when it finds that wrong;
    else, where the model finds the program's own load whole (the same release in two folders), every other folder
    taken away where an LD_LIBRARY_PATH or LD_PRELOAD entry put it in the process, and what that reveals repaired
    too; else said in words."""
    from cudnnload.diagnose.doctor import judge_again
    from cudnnload.diagnose.remedy import World, plan
    from cudnnload.errors import CudnnloadError
    from cudnnload.judge.fixes import undo as undo_preload
    from cudnnload.verdicts import fix, remove_entry

    unknown = _strays_said()
    preloaded = {os.path.realpath(p.path) for p in ctx.preloads if p.path}
    shims = [o for o in seen.shims if (lib := classify(os.path.basename(o.path))) and lib.major == major]
    opened = next((o for o in shims if os.path.realpath(o.path) not in preloaded), shims[0] if shims else None)
    if opened is None:
        return unknown
    home = os.path.dirname(os.path.realpath(opened.path))
    judge = judge_again(_asked(opened), None, None, False, (), None, ())

    def repaired(env: Mapping[str, str]) -> Fix | None:
        """The model's repair in ``env``: empty when nothing is wrong there; None when it knows none."""
        whole = plan(judge(World(env)), env, judge)
        if whole is None:
            return fix()
        return None if not whole.actions or any(a.do is ActionKind.MANUAL for a in whole.actions) else whole

    try:
        first = repaired(ctx.environ)
    except CudnnloadError:
        return unknown
    if first is not None and first.actions:
        return first
    actions = []
    for folder in sorted(places - {home}):
        entry = next((e for e in ctx.linker.ld_library_path if e and os.path.realpath(e) == folder), None)
        preload = next((p for p in ctx.preloads if p.path and os.path.dirname(os.path.realpath(p.path)) == folder),
                       None)
        undo = remove_entry("LD_LIBRARY_PATH", entry) if entry is not None else \
            undo_preload(preload) if preload is not None else None
        if undo is None:
            return unknown
        actions.append(undo)
    try:
        more = repaired(World(ctx.environ).after(*actions).environ) if actions else None
    except CudnnloadError:
        return unknown
    if more is None:
        return unknown
    return fix(*actions, *more.actions, note=f"the program's cuDNN is {home}'s; the model finds nothing wrong once "
               "this is done")


def _dependency_fix(miss: lddebug.Missed) -> Fix | None:
    """A CUDA library a pip-installed object asked for in vain (torch's libcublas.so.13): the pip distribution
    that has it (`catalog.dependency_requirement`), installed into the site that holds the object that asked."""
    from cudnnload.judge.fixes import dependency_into
    from cudnnload.resolve.catalog import dependency_requirement
    from cudnnload.resolve.consumers import site_of
    from cudnnload.resolve.pythons import along_of, interpreter_of_site
    from cudnnload.verdicts import fix

    requirement = dependency_requirement(miss.name)
    site = site_of(miss.requested_by)
    if requirement is None or site is None:
        return None
    pip_env = interpreter_of_site(site)
    return fix(dependency_into(requirement, site, pip_env, along=along_of(site, pip_env)),
               note=f"{os.path.basename(miss.requested_by)} needs {miss.name}; {requirement} has it")


def _asked(opened: lddebug.Opened) -> str:
    """What to judge for ``opened``: the name the program searched for, where its own search path (an RPATH or
    RUNPATH it came through) does not decide, else the path it got."""
    return opened.name if "/" not in opened.name and opened.via is None and \
        opened.rule not in ("rpath", "runpath") else opened.path


def _linked_to(command: Sequence[str], name: str | None, env: Mapping[str, str], ctx: Context) -> str | None:
    """The program ``command`` runs, found as execvp finds it, when its own DT_NEEDED names ``name``; else None."""
    from cudnnload.errors import CudnnloadError

    program = found_on_path(command[0], env) if command and name else None
    if program is None or _interpreter(command) is not None or ctx is None:
        return None
    try:
        needed = ctx.cache.inspect(os.path.realpath(program)).needed
    except (OSError, ValueError, CudnnloadError):
        return None
    return program if name in needed else None


def _shim_name(path: str) -> str:
    """The soname a shim answers to (``libcudnn.so.9``), else its path."""
    lib = classify(os.path.basename(path))
    return generation(lib.major).shim.soname if lib is not None and lib.key == "shim" else path


def _interpreter(command: Sequence[str]) -> str | None:
    """The program's interpreter when it is a Python (``python3``, ``/venv/bin/python3.11``), as the command names
    it: whose pip and sys.path a fix names. A name that starts with "python", as `pythons.interpreter_of_process`
    reads one (``ipython`` is a program of a Python, with no ``-m pip`` of its own)."""
    return command[0] if command and os.path.basename(command[0]).startswith("python") else None


def _python_start(command: Sequence[str], env: Mapping[str, str]) -> tuple[Startup | None, bool]:
    """The start-up of the program when it is a Python (what its .pth files and sitecustomize map), observed as
    that command line would start it (None for another program or one that cannot be observed), and whether it
    died in one of its steps (a .pth line, sitecustomize: `_had_it_started`)."""
    if _interpreter(command) is None:
        return None, False
    from cudnnload.errors import CudnnloadError
    from cudnnload.resolve.startup import StartupFailed, invocation, observe

    how = invocation(list(command))
    try:
        return observe(how.interpreter, env, run_as="-c" if how.run_as == "-" else how.run_as, flags=how.flags), \
            False
    except StartupFailed as exc:
        return None, exc.why == "died" and exc.step is not None
    except (CudnnloadError, OSError):
        return None, False


def _frameworks(seen: Observation, installs: Mapping[str, Judged], env: Mapping[str, str],
                ctx: Context, blockers: Sequence[Finding], program: Startup | None = None) -> tuple[Served, ...]:
    """Each framework the program ran, judged on the cuDNN it mapped (`_way`), and on ``blockers`` (no GPU
    visible)."""
    from cudnnload.judge.routes import serve
    from cudnnload.loading.gpu import gpu_facts
    from cudnnload.resolve.consumers import consumers_mapped

    consumers = consumers_mapped(seen.frameworks, environ=env)
    if not consumers:
        return ()
    devices = gpu_facts(env).devices
    python = _interpreter(seen.command)
    return tuple(serve(way, installs.get(way.shim or ""), ctx, gpu=bool(devices), device_count=len(devices),
                       environ=env, python=python, blockers=blockers, devices=devices)
                 for way in (_way(consumer, seen, env, ctx, program) for consumer in consumers))


def _way(consumer: Consumer, seen: Observation, env: Mapping[str, str], ctx: Context,
         program: Startup | None) -> Route:
    """The cuDNN ``consumer`` got in the run: the first shim mapped of the major it loads (one of another major, a
    preload by path of torch's glob taking a PYTHONPATH folder's libcudnn.so.8, is mapped beside under its own
    SONAME and does not answer its libcudnn.so.9: fix differential 3-16990), else the first shim of the process;
    one LD_PRELOAD put there is named so."""
    from cudnnload.resolve.routes import Route, copy_under, entry_holding

    shim = next((s for s in seen.shims if (lib := classify(os.path.basename(s.path))) is not None
                 and lib.major == consumer.cudnn_major), seen.shims[0])
    entry = next((p.entry for p in ctx.preloads if p.path and p.entry and _same_file(p.path, shim.path)), None)
    how = f"LD_PRELOAD entry {entry}" if entry else \
        f"mapped by the program: {shim.rule} ({shim.how} by {os.path.basename(shim.requested_by)})"
    if entry is not None and _own_anyway(consumer, env, ctx, program, shim.path):
        # the preload maps the very file, from the very folder, the framework's own loader opens: it changes
        # nothing for the framework, and taking it away fixes nothing (fix differential 3-15160: LD_PRELOAD=
        # libcudnn.so.9 found through LD_LIBRARY_PATH in torch's own wheel folder, which another release had
        # overwritten; removing the entry was the command form's whole fix)
        how = f"LD_PRELOAD entry {entry}, the file {consumer.framework}'s own loader opens anyway"
        entry = None
    way = Route(consumer=consumer, shim=shim.path, how=how, variable="LD_PRELOAD" if entry else None, entry=entry)
    if program is not None:  # the sys.path entry the shim lies in, and what put it there
        held_at = entry_holding(shim.path, (e.path for e in program.path if e.usable))
        held = next((e for e in program.path if e.path == held_at), None) if held_at is not None else None
        if held is not None:  # what takes a copy in the program's own folder away there (`judge.routes`)
            way = replace(way, source=held.source, path_entry=held.path, copy=copy_under(held.path, shim.path)
                          if held.source.kind == "program" else None)
    return way


def _own_anyway(consumer: Consumer, env: Mapping[str, str], ctx: Context, program: Startup | None,
                preloaded: str) -> bool:
    """Whether ``consumer``'s own loader, in the process's environment without LD_PRELOAD and on its sys.path, opens
    the ``preloaded`` shim anyway: the same file from the same folder (`resolve.routes.route`)."""
    from cudnnload.resolve.discovery import without_preload
    from cudnnload.resolve.routes import route

    clean = without_preload(env, ctx)
    paths = [e.path for e in program.path if e.usable] if program is not None else [consumer.site]
    found = route(consumer, clean, paths).shim
    return found is not None and _same_file(found, preloaded) and \
        os.path.dirname(os.path.normpath(found)) == os.path.dirname(os.path.normpath(preloaded))


def _gpu_findings(installs: Mapping[str, Judged], env: Mapping[str, str]) -> list[Finding]:
    """The driver and the GPUs as the program's environment shows them (CUDA_VISIBLE_DEVICES, ...), for the
    cuDNN it loaded: what `doctor` checks, without a probe."""
    if not installs:
        return []
    from cudnnload.judge.gpu import gpu_findings
    from cudnnload.loading.gpu import gpu_facts

    install = next(iter(installs.values()))
    shim = install.file("shim")
    return list(gpu_findings(gpu_facts(env), release=install.release, max_device_version=None,
                             cudart_version=shim.elf.cudart_version if shim and shim.elf else None,
                             gpu_code={c.library or "": c.elf.gpu_code for c in install.files if c.elf}))


# What stays an error after a run that ended well: what cudnnload itself did or could not do.
_OF_THE_RUN = (Code.PROCESSES_NOT_STOPPED, Code.PROGRAM_TIMED_OUT, Code.PROGRAM_DIED)


def _as_run(findings: Sequence[Finding], seen: Observation, explained: Mapping[str, str]) -> tuple[Finding, ...]:
    """A run that ended with status 0, in which cuDNN printed none of its loading errors and no call failed as
    the prediction said it would (cuDNN's API log), is the truth: what the prediction says would fail, it did
    not hit. A program that goes on after a failed call (status 3009, 1002) hit it."""
    from cudnnload.verdicts import ERROR, WARNING

    hit = bool(seen.messages) or any(explained.get(call.function) == call.status for call in seen.api_errors)
    if not seen.ok or hit:
        return tuple(findings)
    program = os.path.basename(seen.command[0])
    return tuple(replace(f, severity=WARNING, message=f"{f.message} (not hit by this run: {program} ended with "
                                                      "status 0)")
                 if f.severity is ERROR and f.code not in _OF_THE_RUN else f for f in findings)


def _used(install: Judged, seen: Observation) -> str:
    """The cuDNN a run used: its install's release and folder; the graph's (ops_infer's) release where the run
    mapped one of another release from elsewhere (the version it reports is that library's)."""
    mapped = {os.path.realpath(opened.path) for opened in seen.libraries}
    # the opener's next name first: it asks for it only once its own file failed to load (the H200's graph-is-ops:
    # the wheel's graph, a copy of ops, mapped and let go; the system's bare libcudnn_graph.so answered)
    graph = next((chosen for step in install.plan if step.library in ("graph", "ops_infer")
                  for chosen in (step.fallback, step) if chosen is not None and chosen.path
                  and os.path.realpath(chosen.path) in mapped), None)
    if graph is not None and graph.release and graph.release != install.release and not graph.inside_install:
        return f"cuDNN {graph.release} (its graph {graph.path}; the shim from {install.folder})"
    return f"cuDNN {install.release or install.major} from {install.folder}"


def _sampled_cudnn(seen: Observation) -> str | None:
    """A cuDNN file the maps' sampler caught that the linker's log does not show (its shim first, else any of its
    libraries): what the headline names and what makes a run whose log was cut short not wholly unseen."""
    return next((path for path in seen.unlogged if _is_shim(path)), None) or next(
        (path for path in seen.unlogged if "libcudnn" in os.path.basename(path)), None)


def _headline(seen: Observation, findings: Sequence[Finding], served: Sequence[Served],
              installs: Mapping[str, Judged]) -> str:
    """One line first: the cuDNN a healthy run used, or why the program stopped and the cause found."""
    from cudnnload.verdicts import ERROR

    program = os.path.basename(seen.command[0])
    if seen.logs_lost:
        return f"{program}: what it loaded is not known: {seen.logs_lost}"
    shim = seen.shims[0].path if seen.shims else None
    install = installs.get(shim or "")
    sampled = _sampled_cudnn(seen)
    used = (_used(install, seen) if install else f"cuDNN from {os.path.dirname(shim)}" if shim else
            f"cuDNN from {os.path.dirname(sampled)} (seen in its maps; the linker kept no log of it)" if sampled else
            "no cuDNN")
    workers = f" ({seen.processes} processes)" if seen.processes > 1 else ""
    cudnn_mapped = shim is not None or sampled is not None
    if seen.ok and not cudnn_mapped and seen.unwatched:
        return f"{program} ran and exited; what it loaded is not known: {seen.unwatched}"
    if seen.ok and not cudnn_mapped:  # not an error of the setup: a loader by name on first use maps none until then
        ran = f" (it ran {', '.join(dict.fromkeys(os.path.basename(f) for f in seen.frameworks))})" \
            if seen.frameworks else ""
        return (f"{program} ran and exited and never reached cuDNN{ran}: no cuDNN was mapped, so this run says "
                "nothing about the cuDNN set-up (a framework that opens cuDNN by name on first use, as ONNX Runtime's "
                "CUDA provider from 1.28 does, maps none until an operation needs it)")
    if seen.ok:
        return f"{program} ran with {used}{workers}"
    ended = (f"died of {seen.signal}" if seen.signal else "timed out" if seen.timed_out else
             f"exited with status {seen.returncode}")
    errors = [f for f in findings if f.severity is ERROR]
    # a framework's own finding; else one whose words the program printed as it stopped (the loader's "version `X'
    # not found (required by Y)"); else the run's, then a file's
    first = (next((f for f in errors if f.code is Code.LINKS_GONE), None) or  # what the rest follows from
             next((f for f in errors if f.code in _FRAMEWORK_CODES), None) or
             next((f for f in errors if _printed(f, seen.stderr_tail)), None) or
             next((f for f in errors if f.code in _OF_THE_RUN), None) or
             next((f for f in errors if f.subject.kind in (SubjectKind.FILE, SubjectKind.INSTALL,
                                                            SubjectKind.DISTRIBUTION)), None) or
             next(iter(errors), None))
    who = served[0].route.consumer.framework if served and first is not None and first.code in _FRAMEWORK_CODES \
        else program
    if first is not None:
        return f"{who} stopped ({ended}): {first.message}" + _because(first)
    read = _read_stderr(seen)
    return f"{program} {ended} with {used}" + (f"; its last lines read as: {read}" if read else
                                               "; nothing in cuDNN's loading explains it")


def _printed(finding: Finding, lines: Sequence[str]) -> bool:
    """Whether the program printed what ``finding`` says it would see (a consequence's message, in a line of its
    stderr)."""
    said = [c.message for c in finding.consequences if c.message and len(c.message) > 20]
    return any(message in line for message in said for line in lines)


_FRAMEWORK_CODES = (Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD, Code.CONSUMER_NEEDS_OTHER_MAJOR, Code.CONSUMER_KNOWN_BAD,
                    Code.FRAMEWORK_CALLS_FAIL, Code.CONSUMER_BROKEN)


def _because(finding: Finding) -> str:
    """The fix as the cause: "because LD_PRELOAD holds X" when the fix removes an entry, for everyone or (its
    first step running the program with the entry left out, the removal for everyone the alternative) for the
    program alone."""
    from cudnnload.codes import ActionKind

    steps = finding.fix.actions if finding.fix else ()
    first = steps[0] if steps else None
    alone = first is not None and first.do is ActionKind.RUN and len(steps) == 1
    candidates = (first,) if first is not None and not alone else finding.fix.alternatives if alone else ()
    action = next((a for a in candidates if a is not None and a.do is ActionKind.ENV_REMOVE_ENTRY), None)
    if action is not None:
        return f", because {action.variable} holds {action.entry}"
    return ""


def _read_stderr(seen: Observation) -> str | None:
    """What `explain` makes of the program's last lines of stderr: its most likely cause, or None."""
    from cudnnload.diagnose.explain import explain

    text = "\n".join(seen.stderr_tail)
    if not text.strip():
        return None
    explanation = explain(text)
    return explanation.causes[0].title if explanation.recognized and explanation.causes else None


class _Prepare(threading.Thread):
    """Builds the process model (ld.so's defaults, the ELF memo, the host) beside the running program;
    then, as the linker's log shows each cuDNN shim initialized, the prediction for it, so that little
    is left to do when the program ends."""

    def __init__(self, env: Mapping[str, str], launched: Launched) -> None:
        super().__init__(daemon=True)
        self.env: Mapping[str, str] = env
        self.launched = launched
        self.ctx: Context | None = None
        self.alone: dict[tuple[str, str], Judged | None] = {}  # (shim as opened, who opened it) -> its install
        self.start()

    def run(self) -> None:
        from cudnnload.resolve.discovery import context

        # A program that has ended within 50 ms needs the model only if it opened cuDNN (`result` builds it
        # then); meanwhile the main thread's imports have the interpreter to themselves (8 ms of a
        # `doctor -- /bin/true` on the 2-core machine, measured)
        if self.launched.child.reaped.wait(0.05):
            return
        self.ctx = context(self.env)
        if self.launched.prefix is not None:
            self._follow(f"{self.launched.prefix}.{self.launched.child.pid}", self.ctx)

    def _follow(self, path: str, ctx: Context) -> None:
        """Read the program's linker log as it grows (each line once); predict for each shim it initializes."""
        reader, partial, offset = lddebug.Reader(self.launched.child.pid), b"", 0
        while not self.launched.ended.wait(0.01):
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    raw = handle.read()
            except OSError:
                continue
            offset += len(raw)
            complete, _, partial = (partial + raw).rpartition(b"\n")
            if not complete:
                continue
            text = complete.decode(errors="replace")
            # only the program's own lines: a child it forks without exec writes into this file too
            reader.feed(line for pid, line in lddebug.pid_lines(text.splitlines()) if pid == reader.pid)
            if "calling init: " not in text or "libcudnn" not in text:
                continue
            for shim in _shims(reader.opened):
                key = (shim.path, shim.requested_by)
                if shim.initialized and key not in self.alone and not self.launched.ended.is_set():
                    self.alone[key] = _predict(shim, ctx)

    def result(self) -> Context:
        self.join()
        if self.ctx is None:
            from cudnnload.resolve.discovery import context

            self.ctx = context(self.env)
        return self.ctx


def _predict(shim: lddebug.Opened, ctx: Context) -> Judged | None:
    """The prediction for ``shim`` in this environment alone."""
    from cudnnload.diagnose.inventory import judged_install_of

    return judged_install_of(shim.path, ctx, f"opened by {os.path.basename(shim.requested_by)}")


def _compare(shim: lddebug.Opened, seen: Observation, env: Mapping[str, str], ctx: Context,
             ahead: Mapping[tuple[str, str], Judged | None]
             ) -> tuple[Comparison, list[Finding], dict[str, str], Judged | None]:
    """The prediction for ``shim`` in this environment, beside the linker's account; and the findings of
    the prediction made with what was already in the process when the shim came."""
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.resolve.discovery import context
    from cudnnload.verdicts import ERROR, INFO, WARNING, Finding, Subject, fix, manual

    # what the process had mapped when the shim came, by the name each answers: the first object of a name keeps it
    # (dl-load.c hands out the first in the link map; fix differential 3-16231: a preloaded 9.0 graph, then a .pth's
    # 9.28 one by path, and the shim got the 9.0 one)
    before: dict[str, str] = {}
    for o in seen.libraries[:seen.libraries.index(shim)]:
        if os.path.basename(o.path).startswith("libcudnn"):
            before.setdefault(os.path.basename(o.path), o.path)
    opened = (shim.path, shim.requested_by)
    alone = ahead[opened] if opened in ahead else _predict(shim, ctx)  # made while it ran, or now
    as_run = (judged_install_of(shim.path, context(env, loaded=before, cache=ctx.cache), "as the program loaded it")
              if before else alone)
    if as_run is not None and shim.rule == "ld-library-path":  # the same search without the entry: is it whole?
        from cudnnload.diagnose.targets import shadowed
        from cudnnload.resolve.discovery import chain, requester

        as_run = shadowed(as_run, shim.name, chain(requester(shim.requested_by, ctx.cache)), ctx, shim.path,
                          shim.rule)
    observed = _observed_plan(shim, seen)
    predicted = tuple((s.library, s.path, s.rule) for s in alone.plan) if alone else ()
    wrong: list[str] = []
    for key, path, rule in observed:
        guess = next(((p, r) for k, p, r in predicted if k == key), None)
        if guess is None or _same_file(guess[0], path):
            continue
        why = next((f"; it was already in the process (loaded by {os.path.basename(o.requested_by)}) when the shim "
                    f"asked for it, and the linker hands an already-loaded soname to anyone who asks"
                    for o in seen.libraries if _same_file(o.path, path) and o.path in before.values()), "")
        wrong.append(f"{key}: predicted {guess[0] or 'not found'} ({guess[1]}), the linker gave {path} ({rule}){why}")
    findings = [f for f in (as_run.findings if as_run else ()) if f.severity is not INFO]
    if wrong:
        earlier = any(_same_file(o.path, path) and o.path in before.values()
                      for _, path, _ in observed for o in seen.libraries)
        findings.append(Finding(Code.PREDICTION_DISAGREES, f"what {os.path.basename(seen.command[0])} loaded is not "
                                f"what this environment alone would give {shim.path}: {'; '.join(wrong)}",
                                Subject(SubjectKind.FILE, shim.path, "shim"),
                                fix(manual("load the cuDNN you want before anything else does (import order, or "
                                           "cudnnload.load() first), or remove the other one")) if before else
                                fix(note="report this layout: cudnnload's model of the linker missed something"),
                                severity=ERROR if earlier else WARNING))
    release = str(alone.release) if alone and alone.release else None
    gen = generation(as_run.major) if as_run else None
    expected = {e.call.function: gen.status_name(e.status) for e in (as_run.expected if as_run else ())
                if gen is not None and e.status is not None and e.outcome == Effect.STATUS}
    return Comparison(shim.path, release, predicted, observed, tuple(wrong)), findings, expected, as_run


def _observed_plan(shim: lddebug.Opened, seen: Observation) -> tuple[tuple[str, str | None, str], ...]:
    """Each sub-library the shim (or graph) got: the linker's opened file, or the already-loaded one."""
    got: dict[str, tuple[str, str | None, str]] = {}
    own = classify(os.path.basename(shim.path))
    for opened in seen.libraries:
        lib = classify(os.path.basename(opened.path)) or classify(opened.name)
        if lib is not None and lib.key != "shim" and lib.major == (own or lib).major:
            got.setdefault(lib.key, (lib.key, opened.path, opened.rule))
    for reuse in seen.reused:
        lib = classify(os.path.basename(reuse.path))
        if lib is not None and lib.key != "shim":
            got[lib.key] = (lib.key, reuse.path, "already-loaded")
    return tuple(got.values())


def _same_file(left: str | None, right: str | None) -> bool:
    if left is None or right is None:
        return left == right
    try:
        return os.path.samefile(left, right)
    except OSError:
        return os.path.realpath(left) == os.path.realpath(right)


def _run_findings(seen: Observation, explained: Mapping[str, str], said: Sequence[Finding],
                  ctx: Context) -> list[Finding]:
    """What the run itself shows; ``said``: the findings of the prediction, whose fix for the file the program
    hung on (a FIFO a distribution's RECORD lists: put back) is the fix of the hang too. A shim the program
    asked for and never got has the fix `doctor` gives for that name or path, in this environment (``ctx``)."""
    from cudnnload.verdicts import ERROR, INFO, WARNING, Finding, Subject, delete, fix

    program = os.path.basename(seen.command[0])
    about = Subject(SubjectKind.PROGRAM, seen.command[0])
    findings: list[Finding] = []
    if seen.timed_out:
        stuck = f"; it hung in {seen.died_in}" if seen.died_in else ""
        known = next((f.fix for f in said if seen.stuck_on and f.fix and f.fix.actions
                      and _same_file(f.subject.path, seen.stuck_on)), None)
        findings.append(Finding(Code.PROGRAM_TIMED_OUT, f"{program} did not end within the timeout{stuck}", about,
                                known or (fix(delete(seen.stuck_on), note="a library is a regular file")
                                          if seen.stuck_on else fix(note="raise --timeout"))))
    if seen.interrupted:
        findings.append(Finding(Code.PROGRAM_INTERRUPTED, f"cudnnload was interrupted by {seen.interrupted} while "
                                f"{program} ran: this report covers the run until then", about,
                                fix(note="run it again to the end; a second interrupt stops everything at once")))
    findings += _stopping_findings(seen, program)
    if seen.logs_lost:
        findings.append(Finding(Code.LOGS_LOST, f"the linker's and cuDNN's logs of {program}'s run may be cut short: "
                                f"{seen.logs_lost}; what it loaded is known only from its sampled maps", about,
                                fix(note="free space there, or set TMPDIR to a folder with room, and run it again")))
    if seen.unwatched and not seen.shims and _sampled_cudnn(seen) is None:
        findings.append(Finding(Code.PROGRAM_UNWATCHED, f"what it loaded is not known: {seen.unwatched}",
                                about, fix(note="put `cudnnload doctor --` inside that step, before the program "
                                           "it starts (`sudo cudnnload doctor -- python3 train.py`)")))
    preloaded: set[str] = set()  # the files of the preloads said to stop every start: what they NEED is theirs
    if not seen.ok and not seen.shims:  # stopped before it opened cuDNN: an LD_PRELOAD entry may stop every start
        from cudnnload.judge.preload import preload_findings

        stops = preload_findings(ctx.preloads)
        findings += stops
        preloaded = {os.path.realpath(p.path) for p in ctx.preloads if p.path} if stops else set()
    for path in () if seen.logs_lost else seen.unlogged:  # a lost log explains an unlogged load: said above
        if _is_shim(path):
            findings.append(Finding(Code.UNLOGGED_LOAD, f"{program} mapped {path} where the dynamic linker kept no "
                                    "log (LD_DEBUG is ignored in secure-execution mode, or was removed): which rule "
                                    "found it cannot be shown", Subject(SubjectKind.FILE, path, "shim"),
                                    fix(note=f"`cudnnload doctor {path}` predicts what it loads")))
    if seen.signal and seen.signal != seen.interrupted and seen.pid not in {k.process.pid for k in seen.killed}:
        where = f" in {seen.died_in}" if seen.died_in else ""
        # the prediction's fix for the file it died mapping (a wheel's file cut short: put its wheel back) is the
        # death's too (fix differential 3-14309: torch's preload by path of the venv's shim, cut to 4096 bytes)
        known = next((f.fix for f in said if seen.cut_on and f.severity is ERROR and f.fix and f.fix.actions
                      and _same_file(f.subject.path, seen.cut_on)), None)
        findings.append(Finding(Code.PROGRAM_DIED, f"{program} died of {seen.signal}{where}", about,
                                known or fix(note=_death_note(seen))))
    from cudnnload.judge.gpu import address_limit_fix, beyond_limit_words

    for (stem, _), looked in _failed_lookups(seen).items():
        if all(m.requested_by and os.path.realpath(m.requested_by) in preloaded for m in looked):
            continue
        misses = _own_first(looked, ctx)
        names = ", ".join(m.name for m in misses)
        searched = list(dict.fromkeys(os.path.dirname(path) for m in misses for path in m.tried
                                      if not _nested(os.path.dirname(path))))
        asker = misses[0].requested_by
        # a CUDA library a cuDNN file asked for is the prediction's (its missing-dependency finding says why)
        # the program's own request for a shim failed: it opened none, or the path it asked for is not what it got
        # (another shim, preloaded, is in the process all the same)
        own = stem == "libcudnn" and (not seen.shims or "/" in misses[0].name)
        refused = [path for m in misses for path in m.tried if linker.noexec(path)]
        limited = [path for m in misses for path in m.tried if path in seen.unmapped]
        cure = address_limit_fix() if limited else _unopened_fix(misses[0], ctx) if own else \
            _dependency_fix(misses[0]) if stem != "libcudnn" and classify(os.path.basename(asker)) is None else None
        where = f"the kernel refused to map {refused[0]}, on a file system mounted noexec" if refused else \
            beyond_limit_words(limited[0], seen.address_limit) if limited and seen.address_limit else \
            f"the linker found nothing loadable in {', '.join(searched)}" if searched else \
            "the linker could not load it" if all("/" in m.name for m in misses) else \
            "the linker found nothing loadable in no folder"
        # a cuDNN sub-library the prediction found missing or damaged: its finding's fix, and, for a program that
        # ended well, its severity (an engine library graph runs without: fix differential 3-8579)
        predicted = None if own or cure else next(
            (f for f in said if f.fix.actions and f.subject.path
             and os.path.basename(f.subject.path).startswith(f"{stem}.so")), None)
        findings.append(Finding(Code.LOAD_FAILED, f"{os.path.basename(asker)} asked for {stem} ({names}) and {where}"
                                + ("; the program ended well, as predicted" if predicted is not None and seen.ok
                                   and predicted.severity is not ERROR else ""),
                                Subject(SubjectKind.FILE, asker, stem),
                                cure or (predicted.fix if predicted is not None else
                                         fix(note="the prediction's findings name the file you need and where it "
                                                  "goes")),
                                severity=predicted.severity if predicted is not None and seen.ok else
                                WARNING if seen.ok and _goes_on_without(misses[0].name) else ERROR))
    folders: dict[int, set[str]] = {}
    for opened in seen.libraries:
        lib = classify(os.path.basename(opened.path))
        if lib is not None:
            folders.setdefault(lib.major, set()).add(os.path.dirname(os.path.realpath(opened.path)))
    for major, places in folders.items():
        if len(places) > 1:
            findings.append(Finding(Code.MIXED_IN_PROCESS, f"cuDNN {major} libraries from {len(places)} folders were "
                                    f"mapped in one process: {', '.join(sorted(places))}", about,
                                    _strays_said() if any(f.severity == "error" and f.fix.actions for f in said)
                                    else _strays_fix(seen, major, places, ctx)))
    for call in seen.api_errors:
        # an error the prediction gave this call (a missing library, no GPU here) is explained by its finding
        expected = explained.get(call.function) == call.status
        findings.append(Finding(Code.CUDNN_ERROR, f"{call.function} returned {call.status or 'an error'}"
                                + (f" ({call.reason})" if call.reason else "")
                                + (" (cuDNN's API log; as predicted)" if expected else " (cuDNN's API log)"), about,
                                fix() if expected else fix(note="the findings above name the cause when it is a "
                                                                "loading one"),
                                severity=INFO if expected else WARNING))
    if seen.returncode not in (0, None) and not seen.signal and not findings and seen.address_limit:
        findings += _short_of_address_space(seen, program, about)
    if seen.returncode not in (0, None) and not seen.signal and not findings:
        findings.append(Finding(Code.PROGRAM_FAILED, f"{program} exited with status {seen.returncode}", about,
                                fix(note="its own output says why; nothing of cuDNN's loading failed")))
    return findings


# What a program prints when memory or address space ran out at a start or a mapping (the CUDA runtime's "out of
# memory" from cudaGetDeviceCount, as PyTorch shows it, the driver's CUDA_ERROR_OUT_OF_MEMORY, glibc's "failed to map
# segment" and ENOMEM), not an allocation on the GPU that was too big (PyTorch's "Tried to allocate").
_SHORT_OF_SPACE = re.compile(r"(?i)\bout of memory\b|CUDA_ERROR_OUT_OF_MEMORY|failed to map segment from shared "
                             r"object|cannot allocate memory")


def _short_of_address_space(seen: Observation, program: str, about: Subject) -> list[Finding]:
    """A program that failed, nothing of cuDNN's loading explaining it, under an address-space limit, whose last
    words say memory ran out: the limit (measured on the H200: PyTorch's first CUDA call fails "Error 2: out of memory"
    under 16 GB, where doctor's own smaller process starts the driver; it works under 64 GB)."""
    from cudnnload.judge.gpu import address_limit_fix, size_words
    from cudnnload.verdicts import Finding

    said = next((line.strip() for line in reversed(seen.stderr_tail) if _SHORT_OF_SPACE.search(line)
                 and "Tried to allocate" not in line), None)
    if said is None or seen.address_limit is None:
        return []
    size = size_words(seen.address_limit)
    return [Finding(Code.ADDRESS_SPACE_LIMIT, f"{program} exited with status {seen.returncode} after \"{said[:200]}\" "
                    f"under an address-space limit of {size} (ulimit -v, RLIMIT_AS): the CUDA driver reserves far more "
                    "address space than it uses as it starts, and each library needs its whole span mapped; no memory "
                    "is short", about, address_limit_fix())]


def _versions_unmet(seen: Observation, installs: Mapping[str, Judged], ctx: Context) -> list[Finding]:
    """Each shim a program or library NEEDs whose file lacks a version the asker's symbols are bound to (a cuDNN
    of another major under its name): ld.so stops the load there (`targets.versions_unmet`)."""
    from cudnnload.diagnose.targets import versions_unmet

    findings: list[Finding] = []
    for shim in seen.shims:
        asked = classify(os.path.basename(shim.name))
        if asked is None:
            continue
        # the asker is the object that NEEDs it; or, for a shim opened another way first (torch's preload by path),
        # each object the loader said it failed for, with that shim's path ("PATH: version `libcudnn.so.9' not
        # found (required by .../libtorch_python.so)"): its NEEDED bound to the object already there
        askers = [shim.requested_by] if shim.how == "needed" else \
            [asker for provider, asker in _version_errors(seen.stderr_tail) if provider == shim.path]
        for asker in dict.fromkeys(askers):
            info = ctx.elf(asker)
            if info is not None:
                findings += versions_unmet(asker, info, generation(asked.major), shim.path, installs.get(shim.path),
                                           ctx, bool(info.interpreter))
    return findings


_VERSION_ERROR = re.compile(r"(/\S+): version `[^']+' not found \(required by (/[^)]+)\)")


def _version_errors(lines: Sequence[str]) -> list[tuple[str, str]]:
    """(provider, asker) of each of the loader's "version `X' not found" errors in ``lines``."""
    return [(match.group(1), match.group(2)) for line in lines for match in _VERSION_ERROR.finditer(line)]


def _stopping_findings(seen: Observation, program: str) -> list[Finding]:
    """What cudnnload ended of the program's processes (each seen to end), and what it could not."""
    from cudnnload.verdicts import Finding, Subject, fix, manual

    about = Subject(SubjectKind.PROGRAM, seen.command[0])
    findings = []
    if seen.killed:
        count, named = _listed([(k.process, f"{k.why}, {k.signal}") for k in seen.killed])
        findings.append(Finding(Code.PROCESSES_KILLED, f"cudnnload ended {count} of {program}'s, so that none "
                                f"outlives the run: {named}", about,
                                fix(note="a program that starts a service on purpose: start that part outside "
                                         "`cudnnload doctor --`") if any(k.why == LEFT_RUNNING for k in seen.killed)
                                else fix()))
    if seen.survivors:
        count, named = _listed([(s.process, s.reason) for s in seen.survivors])
        findings.append(Finding(Code.PROCESSES_NOT_STOPPED, f"{count} of {program}'s could not be ended and may still "
                                f"run: {named}", about, fix(manual("end them as their owner or root: kill -KILL "
                                                                   + " ".join(str(s.process.pid)
                                                                              for s in seen.survivors)))))
    return findings


def _listed(processes: Sequence[tuple[Process, str]]) -> tuple[str, str]:
    """("2 processes", "pid 12 (sleep 37): left running, SIGTERM; pid ...")."""
    count = f"{len(processes)} process{'es' if len(processes) > 1 else ''}"
    return count, "; ".join(f"pid {process.pid} ({process.command}): {detail}" for process, detail in processes)


def _unopened_fix(miss: lddebug.Missed, ctx: Context) -> Fix | None:
    """What `doctor` gives for the shim name (or path) the program asked for in vain, asked as it asked."""
    from cudnnload.diagnose.targets import unopened_fix
    from cudnnload.resolve.discovery import chain, requester

    asker = requester(miss.requested_by, ctx.cache) if miss.requested_by else None
    return unopened_fix(miss.name, chain(asker), ctx, _searching_venv(miss))


def _searching_venv(miss: lddebug.Missed) -> str | None:
    """The Python of the venv whose site-packages hold the library that asked in vain and that its search looked in
    (torch's ``libtorch_python.so``, its RUNPATH ``$ORIGIN/../../nvidia/cudnn/lib``): a wheel installed into that venv
    answers it, where one installed elsewhere and put on LD_LIBRARY_PATH was said before (torch's cu13 wheel
    uninstalled, no LD_LIBRARY_PATH: "a program that is no Python's ... pip install --target"); None for another."""
    from cudnnload.resolve.consumers import site_of
    from cudnnload.resolve.pythons import interpreter_of_site, venv_sites

    site = site_of(miss.requested_by) if miss.requested_by else None
    python = interpreter_of_site(site)[0] if site is not None else None
    sites = [os.path.realpath(s) for s in venv_sites(python) or ()] if python is not None else []
    searched = {os.path.realpath(os.path.dirname(path)) for path in miss.tried}
    return python if any(folder == s or folder.startswith(s + os.sep) for folder in searched for s in sites) else None


def _failed_lookups(seen: Observation) -> dict[tuple[str, str], list[lddebug.Missed]]:
    """cuDNN libraries, and the CUDA libraries beside them (cuBLAS, NVRTC: `mapped.is_cuda_family`),
    looked up in vain under every name tried (the v9 shim tries X.so.9.28.0, X.so.9.28, X.so.9, X.so: a name that
    fails before one that works is no failure), by library stem and major (a bare name joins its asker's last
    versioned one). Those whose names the program printed come first: torch's preload glob failing on a
    `libcudnn.so.8` of another machine before `libtorch_cuda.so` misses the `libcudnn.so.9` its ImportError names
    is that `.so.9`'s failure (fix differential 3-18279: the fix reinstalled the `.so.8`'s wheel)."""
    found = {_stem_major(o.path) for o in seen.libraries} | {_stem_major(r.path) for r in seen.reused}
    failed: dict[tuple[str, str], list[lddebug.Missed]] = {}
    last: dict[tuple[str, str], str] = {}  # (stem, asker) -> the major its last versioned miss asked for
    for miss in seen.missed:
        stem, major = _stem_major(miss.name)
        # the driver's libcuda missing is the no-driver finding's, said once there; a name of another major than
        # the one that loaded is another library (torch's libcublas.so.13 beside a cuDNN's libcublas.so.12)
        # a path asked for is served by that file alone: glibc answers a name by soname, never a path by another file
        served = any(os.path.realpath(o.path) == os.path.realpath(miss.name) for o in seen.libraries) \
            if "/" in miss.name else any(s == stem and (m == major or not m or not major) for s, m in found)
        if is_cuda_family(miss.name) and stem != "libcuda" and not served:
            major = major or last.get((stem, miss.requested_by), "")
            last[stem, miss.requested_by] = major
            failed.setdefault((stem, major), []).append(miss)
    printed = {key for key, misses in failed.items()
               if any(os.path.basename(m.name) + ":" in line for m in misses for line in seen.stderr_tail)}
    return dict(sorted(failed.items(), key=lambda item: item[0] not in printed))


def _own_first(misses: Sequence[lddebug.Missed], ctx: Context) -> list[lddebug.Missed]:
    """``misses`` with the program's own requests first: a name an LD_PRELOAD entry (or ``/etc/ld.so.preload``)
    gave ld.so at start is the preload's, which ld.so ignores and goes on (the fix differential's 3-8406:
    ``LD_PRELOAD=libcudnn.so.9`` found nothing, then the app's dlopen of the uninstalled wheel's shim by path failed;
    the fix answered the name, where the path was what the app needed)."""
    preloaded = {p.name for p in ctx.preloads if p.entry is not None and p.path is None}
    return sorted(misses, key=lambda miss: miss.name in preloaded)


def _stem_major(path: str) -> tuple[str, str]:
    """``libcublas.so.12.9.1`` -> ("libcublas", "12"); an unversioned name's major is ""."""
    stem, _, version = os.path.basename(path).partition(".so")
    return stem, version.lstrip(".").split(".")[0]


_NESTED = frozenset({"glibc-hwcaps", "tls", "x86_64", "haswell"})


def _nested(folder: str) -> bool:
    """An hwcaps or legacy platform subfolder ld.so tries inside every folder: not worth naming (a folder named
    for the multiarch triplet, ``/lib/x86_64-linux-gnu``, is no such subfolder)."""
    parts = folder.split("/")
    return any(part in _NESTED or part.startswith("avx512") for part in parts)


def _death_note(seen: Observation) -> str:
    if seen.signal == "SIGBUS":
        return "a library file is cut short (an interrupted download, a full disk): reinstall the package it is from"
    if seen.signal == "SIGABRT" and seen.messages:
        return "the other findings name the library cuDNN could not load, and the fix"
    return "run it under a debugger for the stack"

