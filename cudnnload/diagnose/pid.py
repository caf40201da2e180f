"""``cudnnload doctor --pid PID``: a running process diagnosed from what ``/proc`` shows of it, read-only.

Read: ``/proc/PID/maps`` (every file it has mapped, with the device and inode of the file mapped),
``environ`` (the environment it started with: what its dynamic linker read, LD_LIBRARY_PATH and
LD_PRELOAD included), ``exe`` (its program, whose RPATH serves every load) and ``cmdline``. No ptrace,
no signal: the process goes on as if nothing happened. Each of those reads is allowed to the process's
own user and root (proc(5): ``PTRACE_MODE_READ``); another user's process is one line, exit 2.

Then the stages as for ``doctor TARGET``: the process model (`discovery.context` with its environment,
its program and every object it has mapped, so that the linker model answers ``already-loaded`` for
those), the installs its cuDNN files belong to, judged (`judge.inventory`); and what only a running
process shows: cuDNN mapped from several folders or releases (``mixed-in-process``), a mapped file
replaced or deleted on disk since (``mapped-file-replaced``), and where each sub-library it has not
loaded yet would come from when the shim ``dlopen``s it later. Nothing is loaded (the ELF facts come from the
memo), and no child is started but one: a Python process's start-up observed as ``doctor --python`` observes it,
only where a restart is judged or cuDNN is mapped from two folders (what its ``.pth`` lines and ``sitecustomize``
map now: a stray's line, and what a restart would meet), as the user the process runs as (root never runs another
user's start-up code with its own rights). A healthy process costs about as much as reading the maps
and a warm ``inspect``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.children import ProcStat, owner_of_python, proc_stat
from cudnnload.codes import ActionKind, Code, SubjectKind
from cudnnload.diagnose.doctor import RELEVANT_VARIABLES, Check
from cudnnload.diagnose.finishing import finished
from cudnnload.diagnose.inventory import judged_install_of
from cudnnload.diagnose.targets import started_cuda, unreachable_fix
from cudnnload.diagnose.which import site_cuda
from cudnnload.errors import ElfError, UsageError
from cudnnload.files import NotRegularFile, read_regular
from cudnnload.judge.fixes import WHEEL_LIB, cudnn_requirement, pip_into
from cudnnload.judge.installs import unwhole, whole
from cudnnload.judge.inventory import judge_inventory
from cudnnload.judge.judged import Judged, JudgedInventory
from cudnnload.resolve import linker
from cudnnload.resolve.access import Access
from cudnnload.resolve.catalog import GENERATIONS, Release, SubLibrary, classify
from cudnnload.resolve.discovery import Context, Inventory, Step, context, gather, python_requester, started_context
from cudnnload.resolve.elf import ElfInfo, read_elf
from cudnnload.resolve.elfcache import ElfCache, open_cache
from cudnnload.resolve.mapped import MappedFile, first_span, is_cuda_family, read_maps
from cudnnload.resolve.pythons import along_of, interpreter_of_process, interpreter_of_site
from cudnnload.resolve.startup import Source, Startup, StartupFailed, invocation, observe
from cudnnload.verdicts import (
    ERROR,
    WARNING,
    Action,
    Finding,
    Fix,
    Subject,
    fix,
    manual,
    remove_entry,
    remove_line,
    restart,
    unique,
)

# include/linux/sched.h: PF_KTHREAD, "I am a kernel thread" (the flags are field 9 of /proc/PID/stat)
_PF_KTHREAD = 0x00200000
# what a mapped file is now, beside the file at its path (MappedLibrary.state)
ON_DISK, REPLACED, DELETED = "on-disk", "replaced", "deleted"
# a path this user cannot reach (a folder closed to it): what is there now is not known
UNREACHABLE = "unreachable"
CHANGED = (REPLACED, DELETED)  # a file the disk no longer holds at its path


@dataclass(frozen=True)
class RunningProcess:
    """What ``/proc/PID`` shows of a process, read once."""

    pid: int
    name: str  # its command name (/proc/PID/comm)
    executable: str  # /proc/PID/exe, " (deleted)" cut
    command: tuple[str, ...]  # its argv
    environ: Mapping[str, str]  # the environment it started with
    files: tuple[MappedFile, ...]  # what it has mapped
    cwd: str | None = None  # its current folder (/proc/PID/cwd), where it could be read
    uid: int | None = None  # the user it runs as (the owner of /proc/PID: its effective user), where known


@dataclass(frozen=True)
class MappedLibrary:
    """A cuDNN, cuBLAS, NVRTC or driver file the process has mapped."""

    path: str
    library: str | None  # catalog key ("shim", "graph" ...); None for another library of the family
    major: int | None  # the cuDNN generation
    release: Release | None  # of the file mapped (a replaced file read through /proc/PID/map_files, where allowed)
    state: str  # ON_DISK: the file at ``path`` is the one mapped; REPLACED: another is there now; DELETED: none is;
    # UNREACHABLE: this user cannot reach the path to know
    preloaded_by: str | None = None  # the LD_PRELOAD entry that put it in the process
    # the file as mapped, read once (a file gone from disk through its map_files entry); not in the report
    elf: ElfInfo | None = field(default=None, compare=False, repr=False)
    # REPLACED by a file of another build: its first mapping is not as long as the file at its path maps
    # (`mapped.first_span`), which tells without /proc/PID/map_files (root's) that the process runs another build
    other_build: bool = field(default=False, compare=False, repr=False)


@dataclass(frozen=True)
class Framework:
    name: str  # "torch", "jax", "onnxruntime", "tensorflow"
    folder: str  # the folder of its libraries the process has mapped (.../torch/lib)


@dataclass(frozen=True)
class ProcessReport:
    pid: int
    executable: str
    command: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]  # its variables that change what loads (doctor.RELEVANT_VARIABLES)
    libraries: tuple[MappedLibrary, ...]  # the CUDA-family files mapped, by path
    inventory: JudgedInventory  # the installs its cuDNN files belong to, judged in its environment
    pending: tuple[Step, ...]  # each sub-library not loaded yet, and where the shim's dlopen would get it
    frameworks: tuple[Framework, ...]
    checks: tuple[Check, ...]
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not any(f.severity is ERROR for f in self.findings)


# --- reading /proc ------------------------------------------------------------------------------------

def read_process(pid: int) -> RunningProcess:
    """The process's maps, environment, program and command line; UsageError (one line) when there is no
    such process, it is a kernel thread or has ended, is another user's, or ends while it is read."""
    before = proc_stat(pid)
    if before is None:
        raise UsageError(f"no process with PID {pid}", fix="give the PID of a running process (pgrep -f NAME)")
    if before.flags & _PF_KTHREAD:
        raise UsageError(f"PID {pid} is a kernel thread ({before.name}): it runs no program and maps no library")
    # a process whose first thread has ended (pthread_exit in main) lives on in its other threads: its own files
    # are empty then, a live thread's are the process's
    task: int | str = pid
    if before.state in "ZX":
        alive = _live_thread(pid)
        if alive is None:
            raise UsageError(f"process {pid} ({before.name}) has ended: a zombie maps nothing")
        task = f"{pid}/task/{alive}"
    where = f"/proc/{task}"
    try:
        files = read_maps(task)
        _same_root(task)
        with open(f"{where}/environ", "rb") as handle:
            environ = _environ(handle.read())
        with open(f"{where}/cmdline", "rb") as handle:
            command = tuple(os.fsdecode(part) for part in handle.read().split(b"\0")[:-1])
        executable = os.readlink(f"{where}/exe").removesuffix(" (deleted)")
    except PermissionError as exc:
        raise UsageError(f"permission denied: process {pid} ({before.name}) is another user's, or holds privileges "
                         "this one lacks (its maps and environment need ptrace read access, proc(5))",
                         path=exc.filename,
                         fix="run `cudnnload doctor --pid` as the user the process runs as, or as root") from None
    except OSError as exc:
        if _ended(pid, before):
            raise UsageError(f"process {pid} ({before.name}) ended while it was being read") from None
        raise UsageError(exc.strerror or str(exc), path=exc.filename) from None
    if _ended(pid, before):
        raise UsageError(f"process {pid} ({before.name}) ended while it was being read")
    try:
        cwd: str | None = os.readlink(f"{where}/cwd").removesuffix(" (deleted)")
    except OSError:
        cwd = None
    try:
        uid: int | None = os.stat(where).st_uid
    except OSError:
        uid = None
    return RunningProcess(pid, before.name, executable, command, environ, files, cwd, uid)


def _ended(pid: int, before: ProcStat) -> bool:
    after = proc_stat(pid)
    return after is None or after.started != before.started or (after.state in "ZX" and _live_thread(pid) is None)


def _live_thread(pid: int) -> int | None:
    """A thread of process ``pid`` that has not ended, or None."""
    try:
        threads = sorted(int(name) for name in os.listdir(f"/proc/{pid}/task") if name.isdigit())
    except OSError:
        return None
    return next((tid for tid in threads if (state := proc_stat(f"{pid}/task/{tid}")) is not None
                 and state.state not in "ZX"), None)


def _same_root(pid: int | str) -> None:
    """A process in another mount namespace or chroot (a container) names files this one cannot see, or sees
    as others: refused rather than judged on the wrong files."""
    theirs, ours = os.stat(f"/proc/{pid}/root/"), os.stat("/")
    if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino):
        raise UsageError(f"process {pid} sees another root file system (a container, a chroot): the paths it has "
                         "mapped are not this one's", fix="run cudnnload inside it")


def _environ(data: bytes) -> dict[str, str]:
    """``/proc/PID/environ``: NAME=VALUE entries, NUL-separated."""
    found: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals and name:
            found.setdefault(os.fsdecode(name), os.fsdecode(value))
    return found


# --- the diagnosis -------------------------------------------------------------------------------------

def diagnose_pid(pid: int, *, environ: Mapping[str, str] | None = None) -> ProcessReport:
    """Diagnose the running process ``pid`` (see the module docstring). ``environ`` is cudnnload's own (where
    its memo is), not the process's; UsageError as `read_process` raises it."""
    running = read_process(pid)
    cache = open_cache(os.environ if environ is None else environ)
    objects = [f.path for f in running.files if ".so" in os.path.basename(f.path) and f.path != running.executable]
    program = python_requester(cache, running.executable)
    observed = _startup_of(running)
    started = _started_here(running, observed)
    ctx = context(running.environ, executable=program, mapped=objects, cache=cache, started=started)
    inventory = _installs(running, ctx)
    libraries = _libraries(running.files, running.pid, ctx, inventory)
    cudnn = [lib for lib in libraries if lib.major is not None]
    shims = {os.path.dirname(lib.path) for lib in cudnn if lib.library == "shim"}
    installs = [i for i in inventory.installs if i.folder in shims and i.file("shim")]
    pending = tuple(step for i in installs for step in i.plan if step.rule != "already-loaded")
    replaced = {os.path.dirname(lib.path) for lib in cudnn if lib.library == "shim" and lib.state in CHANGED}
    shell = _shell_environ(running.environ, os.environ if environ is None else environ)
    restarting = _restart(running, inventory, _afresh(observed, cache, program), shell)
    stale = _stale(installs, cudnn, replaced, ctx)
    behind = replaced | {folder for _, _, folder in stale}  # folders the process runs another release from
    findings: list[Finding] = list(inventory.findings) + [
        _and_restart(_on_restart(f, running.pid) if i.folder in replaced else f, i.folder, restarting,
                     i.folder in behind)
        if i.folder in behind | shims else _not_its_shim(f, i, running.pid) if shims else f
        for i in inventory.installs for f in i.findings]
    findings += _mixed(cudnn, shims, running, restarting, started)
    findings += _changed(libraries, running, restarting)
    findings += _stale_findings(stale, pid, restarting)
    findings += _orphaned(cudnn, installs, running, ctx, observed)
    findings += _closed(cudnn, running)
    frameworks = _frameworks(running.files)
    checks = (_mapped_check(cudnn, inventory, program, ctx), _coherence_check(cudnn), _files_check(libraries),
              _pending_check(installs, pending, stale), _frameworks_check(frameworks))
    cache.save()
    return ProcessReport(pid, running.executable, running.command,
                         tuple((name, running.environ[name]) for name in RELEVANT_VARIABLES if name in running.environ),
                         libraries, inventory, pending, frameworks, checks,
                         unique(finished(findings, running.environ, ctx)))


def _installs(running: RunningProcess, ctx: Context) -> JudgedInventory:
    """The installs the mapped cuDNN files belong to (each folder's, as its mapped shim would load it), judged
    as `doctor TARGET` judges one, in the process's environment."""
    paths = [f.path for f in running.files if classify(os.path.basename(f.path)) and os.path.exists(f.path)]
    python = interpreter_of_process(running.executable, running.command, running.environ) \
        if os.path.basename(running.executable).startswith("python") else None
    if not paths:
        return judge_inventory(Inventory(ctx.host, ()), ctx, python, Access())
    facts = gather(paths, ctx=ctx, system=False)
    found = f"mapped in process {running.pid}"
    return judge_inventory(replace(facts, installs=tuple(replace(i, found_via=found) for i in facts.installs)),
                           ctx, python, Access())


def _libraries(files: Sequence[MappedFile], pid: int, ctx: Context,
               inventory: JudgedInventory) -> tuple[MappedLibrary, ...]:
    """The mapped files of the family, by path: what each is, its release as mapped, whether the disk still has
    it. Graph and ops carry their release; the shim and the others take that of the graph or ops mapped from
    their folder, else (the file still on disk) that of the install they belong to."""
    libraries = []
    for mapped in sorted((f for f in files if is_cuda_family(f.path)), key=lambda f: f.path):
        lib = classify(os.path.basename(mapped.path))
        state = _state(mapped)
        # a file no longer on disk is read through its map_files entry (root, or CAP_CHECKPOINT_RESTORE); the
        # others of the family carry no cuDNN release
        info = None if lib is None else ctx.elf(mapped.path) if state == ON_DISK else _read_mapped(pid, mapped)
        other = state == REPLACED and (span := first_span(mapped.path)) is not None and span != mapped.span
        libraries.append(MappedLibrary(mapped.path, lib.key if lib else None, lib.major if lib else None,
                                       info.release if info else None, state, ctx.preload_entry(mapped.path), info,
                                       other))
    return tuple(replace(lib, release=lib.release or _release_beside(lib, libraries, inventory))
                 for lib in libraries)


def _read_mapped(pid: int, mapped: MappedFile) -> ElfInfo | None:
    """The file ``pid`` mapped, read through its ``/proc/PID/map_files`` entry (what is on disk may be another file,
    or none)."""
    return _elf(f"/proc/{pid}/map_files/{mapped.addresses}")


def _elf(path: str) -> ElfInfo | None:
    try:
        return read_elf(path)
    except (OSError, ElfError):
        return None


def _release_beside(lib: MappedLibrary, libraries: Sequence[MappedLibrary], inventory: JudgedInventory
                    ) -> Release | None:
    if lib.major is None:
        return None
    folder = os.path.dirname(lib.path)
    beside = _releases([other for other in libraries if other.major == lib.major
                        and os.path.dirname(other.path) == folder])
    if len(beside) == 1:
        return beside[0]
    if lib.state in CHANGED:
        return None
    return next((i.release for i in inventory.installs if i.folder == folder and i.major == lib.major), None)


def _state(mapped: MappedFile) -> str:
    try:
        now = os.stat(mapped.path)
    except PermissionError:  # a folder on the way closed to this user: not taken for a file gone
        return UNREACHABLE
    except OSError:
        return DELETED
    return ON_DISK if (now.st_dev, now.st_ino) == (mapped.device, mapped.inode) else REPLACED


def _closed(cudnn: Sequence[MappedLibrary], running: RunningProcess) -> list[Finding]:
    """The folders of mapped cuDNN files this user cannot reach (closed since the process mapped them): what the
    process opens from there later, as this user, fails ("Permission denied"); fixed as `doctor TARGET` fixes a
    library this user cannot reach (`targets.unreachable_fix`), once per folder that stops it."""
    access, findings, said = Access(), [], set()
    for lib in cudnn:
        stop = access.unreachable(lib.path) if lib.state == UNREACHABLE else None
        if stop is None or stop.path in said:
            continue
        said.add(stop.path)
        findings.append(Finding(Code.UNREADABLE, f"process {running.pid} mapped {os.path.basename(lib.path)} from "
                                f"{os.path.dirname(lib.path)}, which this user cannot reach now: {stop.path} cannot "
                                f"be {'searched' if stop.folder else 'read'}, and what the process opens from there "
                                "later fails (Permission denied)", Subject(SubjectKind.FILE, stop.path, lib.library),
                                unreachable_fix(lib.path, stop, access.user)))
    return findings


def _by_major(cudnn: Sequence[MappedLibrary]) -> dict[int, list[MappedLibrary]]:
    grouped: dict[int, list[MappedLibrary]] = {}
    for lib in cudnn:
        grouped.setdefault(lib.major or 0, []).append(lib)
    return grouped


def _releases(libs: Sequence[MappedLibrary]) -> list[Release]:
    """The releases the files carry (graph and ops carry a version constant; the shim, cnn, the engines none)."""
    return sorted({lib.release for lib in libs if lib.release is not None})


def _mixed(cudnn: Sequence[MappedLibrary], shims: set[str], running: RunningProcess, restart: Restart,
           starting: Mapping[str, Source] | None = None) -> list[Finding]:
    """cuDNN files of one generation from several folders or releases: each binds to the others'
    release-private symbols. The cure: what brought the others taken away (their LD_PRELOAD entries, the start-up
    lines that map or name them: `_brought_by`), then a start afresh of the shim's install, where the model proves
    it maps one release whole (`_restart`); a file of another folder the process opened itself (by path) would be
    opened again by a restart: said in words."""
    findings, starting = [], starting or {}
    for major, libs in _by_major(_telling(cudnn)).items():
        folders = sorted({os.path.dirname(lib.path) for lib in libs})
        releases = _releases(libs)
        if len(folders) < 2 and len(releases) < 2:
            continue
        said = "; ".join(f"{os.path.basename(lib.path)} {lib.release or '(release unknown)'} from "
                         f"{os.path.dirname(lib.path)}" + (f" (LD_PRELOAD {lib.preloaded_by})" if lib.preloaded_by
                                                           else "") for lib in libs)
        home = next((folder for folder in folders if folder in shims), None)
        strays = [lib for lib in libs if os.path.dirname(lib.path) != home]
        entries = _stray_entries(strays) if home else []
        # what brought each stray, where the model knows: an LD_PRELOAD entry, a start-up line
        brought = [_brought_by(lib, starting) for lib in strays]
        removals = tuple(dict.fromkeys(action for action in brought if action is not None))
        known = all(action is not None for action in brought)
        cure = _with_lines(removals, restart(home, f"so that it maps one cuDNN {major}")) if home and known else \
            fix(manual(f"restart process {running.pid} so that it maps one cuDNN {major}: the findings about the "
                       "shim's install say where the others come from"))
        findings.append(Finding(Code.MIXED_IN_PROCESS, f"process {running.pid} has cuDNN {major} mapped from "
                                f"{len(folders)} folder{'s' * (len(folders) > 1)} and {len(releases)} "
                                f"release{'s' * (len(releases) > 1)}: {said}",
                                Subject(SubjectKind.PROGRAM, running.executable,
                                        variable="LD_PRELOAD" if entries else None,
                                        entry=entries[0] if len(entries) == 1 else None), cure))
    return findings


def _brought_by(lib: MappedLibrary, starting: Mapping[str, Source]) -> Action | None:
    """What takes away what brought a stray into the process: its LD_PRELOAD entry, or the start-up line that maps
    or names it; None where the model does not know (the program opened it itself)."""
    if lib.preloaded_by:
        return remove_entry("LD_PRELOAD", lib.preloaded_by)
    source = starting.get(lib.path)
    return remove_line(source.file, source.text) if source and source.file and source.text else None


def _with_lines(lines: Sequence[Action], then: Fix) -> Fix:
    """What brought a process's strays taken away (its LD_PRELOAD entries and start-up lines), then ``then`` (a
    restart, which judged a start afresh with what the start-up maps now: a line that no longer maps its file still
    names it, and goes)."""
    if not lines:
        return then
    return replace(then, actions=tuple(dict.fromkeys((*lines, *then.actions))))


def _telling(cudnn: Sequence[MappedLibrary]) -> list[MappedLibrary]:
    """The mapped cuDNN files that show what the process runs: all but a file gone from disk whose release it does
    not carry (a shim replaced under the process), whose folder alone says nothing of the release it ran."""
    return [lib for lib in cudnn if lib.state not in CHANGED or lib.release is not None]


def _stray_entries(strays: Sequence[MappedLibrary]) -> list[str]:
    """The LD_PRELOAD entries that brought every file mapped from outside the shim's folder; [] when some came
    otherwise (removing the entries would not be enough)."""
    if not all(lib.preloaded_by for lib in strays):
        return []
    return list(dict.fromkeys(lib.preloaded_by for lib in strays if lib.preloaded_by))


# How many times a restart's judgement applies the fix of what stands in its way and judges the start again
_ROUNDS = 4

# What takes a running process to the files now in a folder: a restart, where the model proves that a start afresh
# maps one whole release from there; else said in words (`_restart`)
Restart = Callable[[str, str], Fix]

# What the loader and a Python start-up read that a shell's profile sets (the process keeps what it started with)
_STARTING = (*RELEVANT_VARIABLES, "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE")


def _shell_environ(process: Mapping[str, str], shell: Mapping[str, str]) -> dict[str, str] | None:
    """The process's environment as a restart from this shell would give it (what the loader and a Python start-up
    read taken from the shell, whose profile may have changed since the process started); None where it is the
    same."""
    if all(process.get(name) == shell.get(name) for name in _STARTING):
        return None
    merged = {k: v for k, v in process.items() if k not in _STARTING}
    return {**merged, **{name: shell[name] for name in _STARTING if name in shell}}


def _restart(running: RunningProcess, inventory: JudgedInventory, fresh: Fresh,
             shell: Mapping[str, str] | None) -> Restart:
    """The fix that starts ``running`` again to map the files now in a folder, with why: the restart as an action
    (in the environment the process started with: README "Fixes") where the install of that folder, judged afresh
    there (without what the process has mapped), loads one release whole and has no error; where what stands in its
    way is a start-up line or a variable whose own fix the model can apply to the start (`_started_after`), that fix
    then the restart, where the model finds it whole after both; else the restart in words, with what stands in its
    way. Where a start from this shell (``shell``: its environment differs) would not load it whole, the note says
    so, and which variables to start it with."""
    made: dict[tuple[object, ...], Context] = {}
    # each judgement once: every finding of a folder asks for its restart, each round of a cure for a start again
    judgements: dict[tuple[object, ...], tuple[Judged | None, Finding | None]] = {}

    def verdict(folder: str, env: Mapping[str, str], unstarted: frozenset[tuple[str, str]] = frozenset()
                ) -> tuple[Judged | None, Finding | None]:
        key = (tuple(sorted(env.items())), unstarted)
        if (folder, key) in judgements:
            return judgements[folder, key]
        made[key] = made.get(key) or fresh(env, unstarted)
        shim = next((i.file("shim") for i in inventory.installs if i.folder == folder and i.file("shim")), None)
        judged = judged_install_of(shim.path, made[key], "a start afresh") if shim is not None else None
        judgements[folder, key] = judged, None if judged is None else next(
            (f for f in judged.findings if f.severity is ERROR), None)
        return judgements[folder, key]

    def cure(folder: str, why: str) -> Fix:
        environ: Mapping[str, str] = running.environ
        first: tuple[Action, ...] = ()
        unstarted: frozenset[tuple[str, str]] = frozenset()
        judged, error = verdict(folder, environ)
        # what stands in the way: the error, else what keeps the folder from loading whole (a warning: a library
        # another release's folder on the search path would give, which the program may never ask for); its fix
        # applied to the start where the model can (`_started_after`), judged again, and so on while each round
        # takes something away (a start-up line, then an LD_PRELOAD entry)
        for _ in range(_ROUNDS):
            stands = error or next((f for f in judged.findings if unwhole(f)), None) if judged is not None else None
            actions = tuple(dict.fromkeys((*first, *stands.fix.actions))) if stands is not None else first
            after = _started_after(actions, running.environ) if actions != first else None
            mended, again = verdict(folder, *after) if after is not None else (None, None)
            if after is None or mended is None:
                break
            judged, error, environ, first, unstarted = mended, again, after[0], actions, after[1]
        if judged is not None and (error is not None or not whole(judged)) and \
                (rewritten := rewritten_then(folder, judged, first)) is not None:
            # the wheels pip writes into the folder's site, with what the model applies to a start: then the restart
            written = ", ".join(r for a in rewritten if a.do is ActionKind.PIP_INSTALL for r in a.requirements)
            return fix(*rewritten, restart(running.pid, running.command),
                       note=f"{why}: once pip has written {written} into the site of {folder} as released, the model "
                            f"finds nothing else that keeps cuDNN {judged.release or judged.major} there from loading "
                            "whole for a start afresh")
        if judged is None or not whole(judged) or error is not None:
            return fix(manual(f"restart process {running.pid} {why}" + (f", once {error.message}" if error else "")))
        note = f"{why}: the model finds cuDNN {judged.release or judged.major} in {folder} whole for a start afresh"
        if shell is not None:  # a restart is in the environment it started with: said where this shell's would fail
            here, trouble = verdict(folder, shell, unstarted)
            if here is None or not whole(here) or trouble is not None:
                differ = ", ".join(f"{name}={environ.get(name, '(unset)')}" for name in _STARTING
                                   if environ.get(name) != shell.get(name))
                note += (f", in the environment it was started with ({differ}); started from this shell, whose "
                         f"environment differs, it would not load it whole" + (f": {trouble.message}" if trouble
                                                                               else ""))
        return fix(*first, restart(running.pid, running.command), note=note)

    def rewritten_then(folder: str, judged: Judged, first: tuple[Action, ...]) -> tuple[Action, ...] | None:
        """What a start afresh of the folder's install needs where what is in its way includes wheels pip writes
        into its site (`_installs_for`: its own wheel rewritten, a library it needs installed), which the model
        cannot apply to a start (the files are not there yet): those, and ``first`` (what was applied to the start
        already) with the fixes of the others where the model applies them to the start (`_started_after`) and finds
        nothing left in the way but such installs; None otherwise. Seed 3's 3-18899: a process held under an
        upgrade to a cuDNN whose cuBLAS was never installed (``--no-deps``) was told only to restart."""
        standing = [f for f in judged.findings if f.severity is ERROR or unwhole(f)]
        installs = [f for f in standing if _installs_for(f, folder)]
        if not installs:
            return None
        others = tuple(dict.fromkeys((*first, *(a for f in standing if f not in installs for a in f.fix.actions))))
        if others != first:
            after = _started_after(others, running.environ)
            mended = verdict(folder, *after)[0] if after is not None else None
            if mended is None or any(not _installs_for(f, folder) for f in mended.findings
                                     if f.severity is ERROR or unwhole(f)):
                return None
        return (*dict.fromkeys(a for f in installs for a in f.fix.actions), *others)

    return cure


def _not_its_shim(finding: Finding, install: Judged, pid: int) -> Finding:
    """An error of an install whose shim the process has not mapped, where it runs another folder's: it is judged
    for a program that loads its shim, which this process does not; what of it the process did map is a stray
    (`_mixed` says it, with its fix). A warning, said as such (seed 3's 3-3587: a ``.pth`` line's stray ops made its
    folder's "load ... first", in words, the first error)."""
    if finding.severity is not ERROR:
        return finding
    return replace(finding, severity=WARNING, message=f"for a program that loads the shim of {install.folder} (process "
                   f"{pid} runs another folder's, and has only a stray of this one): {finding.message}")


def _and_restart(finding: Finding, folder: str, restart: Restart, behind: bool = False) -> Finding:
    """An error of an install the process runs, whose fix changes only what a start gets (a start-up line, a
    variable) or rewrites the folder's own wheel: the process goes on running what it mapped, so its restart goes
    with the fix, judged with every other thing in the way of a start afresh taken away where the model can
    (`_restart`); else the finding as it is. Seed 3's 3-4877: a record-mismatch's reinstall alone left the held
    program's later version checks failing; 3-5529: a start-up line's removal alone, an LD_PRELOAD stray left.

    In a folder the process runs another release from than the disk now holds (``behind``), an error whose fix is
    only said in words is of what the process mapped (a file "already loaded" that a restart does not map): the
    restart is its fix where the model proves a start afresh whole. Seed 3's 3-13672: a process on 9.24's graph, 9.0
    installed under it, was told to load the folder's cuDNN before the one it had mapped."""
    actions = finding.fix.actions
    if finding.severity is ERROR and behind and actions and all(a.do is ActionKind.MANUAL for a in actions):
        then = restart(folder, "to run the files now on disk")
        return replace(finding, fix=then) if any(a.do is ActionKind.RESTART for a in then.actions) else finding
    if finding.severity is not ERROR or not actions or not (
            _installs_for(finding, folder) or _started_after(actions, {}) is not None):
        return finding
    then = restart(folder, "so that it starts with the fix")
    if not any(a.do is ActionKind.RESTART for a in then.actions) or not set(actions) <= set(then.actions):
        return finding
    return replace(finding, fix=then)


def _installs_for(finding: Finding, folder: str) -> bool:
    """Whether ``finding``'s fix is pip writing wheels into the site that holds ``folder``, and nothing else: the
    folder's own files put back as released (``--force-reinstall``), or, for a library cuDNN needs that would not
    be found, the wheel that brings it (the judge's fix of a missing dependency)."""
    actions = finding.fix.actions
    return bool(actions) and all(
        a.do is ActionKind.PIP_INSTALL and a.target is not None and folder.startswith(a.target.rstrip("/") + "/")
        and ("--force-reinstall" in a.options or finding.code is Code.MISSING_DEPENDENCY) for a in actions)


def _started_after(actions: Sequence[Action], environ: Mapping[str, str]
                   ) -> tuple[dict[str, str], frozenset[tuple[str, str]]] | None:
    """The environment, and the start-up lines taken out (file, line), that a start gets once ``actions`` are done:
    lines taken out of start-up files, variables set, unset or with an entry taken out; None where another action
    is among them (the model does not apply it to a start)."""
    env, unstarted = dict(environ), set()
    for action in actions:
        if action.do is ActionKind.REMOVE_LINE and action.path and action.line is not None:
            unstarted.add((action.path, action.line))
        elif action.do is ActionKind.ENV_REMOVE_ENTRY and action.variable:
            kept = [e for e in env.pop(action.variable, "").split(":") if e != action.entry]
            env.update({action.variable: ":".join(kept)} if any(kept) else {})
        elif action.do is ActionKind.ENV_UNSET and action.variable:
            env.pop(action.variable, None)
        elif action.do is ActionKind.ENV_SET and action.variable and action.value is not None:
            env[action.variable] = action.value
        else:
            return None
    return (env, frozenset(unstarted)) if actions else None


# A start afresh of the process: its context in an environment, with start-up lines taken out (`_afresh`)
Fresh = Callable[[Mapping[str, str], frozenset[tuple[str, str]]], Context]


# What a Python process's start-up maps now, in an environment (`_startup_of`); None where it cannot be observed
Observed = Callable[[Mapping[str, str]], "Startup | None"]


def _startup_of(running: RunningProcess) -> Observed:
    """What ``running``'s start-up maps now, in an environment: a Python interpreter's ``.pth`` lines and
    ``sitecustomize``, observed as ``doctor --python`` observes them, in a child, as it was started (its options, its
    folder) and as the user it runs as (root asking about another user's process runs that user's start-up code
    with that user's rights, never its own: `children.as_owner`; nobody's where others may write its site-packages:
    `children.owner_of_python`), once per environment; None for another program,
    or where it cannot be observed."""
    seen: dict[tuple[tuple[str, str], ...], Startup | None] = {}

    def observed(environ: Mapping[str, str]) -> Startup | None:
        key = tuple(sorted(environ.items()))
        if key in seen:
            return seen[key]
        seen[key] = None
        if (os.path.basename(running.executable).startswith("python") and running.command
                and running.uid is not None and os.geteuid() in (0, running.uid)):
            how = invocation(running.command)
            with contextlib.suppress(StartupFailed, UsageError, OSError):
                interpreter = interpreter_of_process(running.executable, running.command, running.environ)
                user = owner_of_python(interpreter, environ.get("PYTHONPATH", "").split(os.pathsep), running.uid)
                seen[key] = observe(interpreter, environ, run_as="-c" if how.run_as == "-" else how.run_as,
                                    flags=how.flags, user=user,
                                    cwd=running.cwd if running.cwd and os.path.isdir(running.cwd) else "/")
        return seen[key]

    return observed


def _afresh(observed: Observed, cache: ElfCache, program: linker.Requester | None) -> Fresh:
    """The context of the process started again, in an environment (nothing mapped): what its start-up maps now
    (written since it started, perhaps) mapped first, but the lines taken out."""
    def start(environ: Mapping[str, str], unstarted: frozenset[tuple[str, str]]) -> Context:
        ctx, started = context(environ, executable=program, cache=cache), observed(environ)
        return ctx if started is None else started_context(ctx, started_cuda(started, unstarted))

    return start


def _started_here(running: RunningProcess, observed: Observed) -> dict[str, Source] | None:
    """The cuDNN files the process has mapped that its start-up maps now, and the start-up line that does: where
    the stray of a mixed process came from (its fix takes that line out). Observed only where the process maps
    cuDNN from more than one folder."""
    mapped = {f.path for f in running.files if classify(os.path.basename(f.path))}
    if len({os.path.dirname(path) for path in mapped}) < 2:
        return None
    started = observed(running.environ)
    if started is None:
        return None
    found = {path: source for path, source in started_cuda(started).items() if path in mapped}
    # a .pth import line or a line of sitecustomize (usercustomize) that names the file by its path, though it no
    # longer maps it (the file needs a library of a release the disk no longer holds: the line fails now, Python says
    # so and goes on; fix differential 3-18975, a sitecustomize line)
    named = [Source("pth-import", pth.path, line.number, line.text)
             for pth in started.pth_files for line in pth.lines if line.kind == "import"]
    named += [Source(custom.name, custom.file, number, text) for custom in started.customize if custom.file
              for number, text in _lines_of(custom.file)]
    for path in sorted(mapped - set(found)):
        found.update(next(({path: source} for source in named if path in (source.text or "")), {}))
    return found


def _lines_of(path: str, limit: int = 1 << 20) -> list[tuple[int, str]]:
    """The lines of a start-up module (numbered from 1, without their line breaks), of its first ``limit`` bytes;
    none where it is no regular file (a FIFO is never waited on) or cannot be read."""
    try:
        data = read_regular(path, limit)
    except (OSError, NotRegularFile):
        return []
    text = data.decode("utf-8", "surrogateescape")
    return [(number, line.rstrip("\r")) for number, line in enumerate(text.split("\n"), 1)]


def _changed(libraries: Sequence[MappedLibrary], running: RunningProcess, restart: Restart) -> list[Finding]:
    findings = []
    for lib in libraries:
        if lib.state not in CHANGED:
            continue
        now = "another file is at that path now" if lib.state == REPLACED else "no file is at that path now"
        findings.append(Finding(Code.MAPPED_FILE_REPLACED, f"{lib.state} on disk since process {running.pid} mapped "
                                f"it: it runs the file it mapped, {now}", Subject(SubjectKind.FILE, lib.path,
                                                                                  lib.library),
                                restart(os.path.dirname(lib.path), "to run the files now on disk")))
    return findings


def _on_restart(finding: Finding, pid: int) -> Finding:
    """A finding of an install whose shim the process mapped before it was replaced or deleted on disk: the
    judge weighed the release the disk holds now, which the process does not run. A release mixed with it
    (`mixed-release`) is what a start afresh would map: said as a warning about a restart (what the process will
    still load is `_stale`'s and `_orphaned`'s, from what it runs). Any other finding stands as it is."""
    if finding.code is not Code.MIXED_RELEASE or finding.severity is not ERROR:
        return finding
    return replace(finding, severity=WARNING, message=f"once process {pid} starts again (its shim was replaced on "
                   f"disk since it mapped it, and it runs the one it mapped): {finding.message}")


def _stale(installs: Sequence[Judged], cudnn: Sequence[MappedLibrary], replaced: set[str], ctx: Context
           ) -> list[tuple[Step, Release | None, str]]:
    """Sub-libraries not loaded yet from a folder whose files were replaced by another release since the
    process mapped its own, with the release it runs: the shim's later dlopen would mix the two (the judge,
    reading the disk alone, sees one release there). The release it runs is that of what it mapped from the folder;
    where that is only a shim replaced since (``replaced``: it carries no release), that of the graph and ops it
    mapped, wherever from (the shim runs with the graph it loaded). Each with the install's folder: the one a
    restart maps afresh (the sub-library may come from another folder the search reaches first). Where no file it
    mapped tells its release (this user may not read /proc/PID/map_files, which is root's) but a file it mapped from
    the folder was replaced by another build (`MappedLibrary.other_build`), it runs a release not known (None) that
    is not the disk's: every sub-library not loaded yet from there would mix with it. What the shim itself opens
    is searched as the shim it runs searches (`_shim_gets`: the mapped file's DT_RPATH, not the DT_RUNPATH of the
    release on disk now: cuDNN 9.28's shim carries DT_RPATH $ORIGIN, which comes before LD_LIBRARY_PATH, 9.0's
    DT_RUNPATH, which comes after it)."""
    stale: list[tuple[Step, Release | None, str]] = []
    for install in installs:
        here = [lib for lib in cudnn if os.path.dirname(lib.path) == install.folder and lib.major == install.major]
        mine = _releases(here)
        if not mine and install.folder in replaced:
            mine = _releases([lib for lib in _telling(cudnn) if lib.major == install.major])
        if not mine and any(lib.other_build for lib in here):
            stale += [(step, None, install.folder) for step in install.plan if step.rule != "already-loaded"
                      and step.path and step.inside_install]
            continue
        if len(mine) != 1 or mine[0] == install.release:
            continue
        shim = next((lib for lib in cudnn if lib.library == "shim" and os.path.dirname(lib.path) == install.folder
                     and lib.state in CHANGED and lib.elf is not None), None)
        asked = _shim_gets(shim, cudnn, ctx) if shim is not None else []
        for lib, found, release in asked:
            if shim is None or found is None or not found.path:  # (no shim: nothing asked)
                continue
            inside = os.path.dirname(found.path) == install.folder
            release = install.release if release is None and inside else release  # cnn, engines: the folder's
            if release not in (None, mine[0]):
                stale.append((Step(lib.key, shim.path, (found.name,), found.path, found.by, inside, release),
                              mine[0], install.folder))
        by_shim = {lib.key for lib, _, _ in asked}
        stale += [(step, mine[0], install.folder) for step in install.plan if step.rule != "already-loaded"
                  and step.path and step.release not in (None, mine[0]) and step.library not in by_shim]
    return stale


def _running(release: Release | None) -> str:
    return f"cuDNN {release}" if release is not None else \
        "another build (its release is not readable as this user: /proc/PID/map_files is root's)"


def _stale_findings(stale: Sequence[tuple[Step, Release | None, str]], pid: int, restart: Restart
                    ) -> list[Finding]:
    return [Finding(Code.MIXED_RELEASE, f"not loaded yet: when the shim asks for {step.library}, it gets {step.path} "
                    f"(cuDNN {step.release}, on disk now), while process {pid} runs {_running(running)} from this "
                    "folder",
                    Subject(SubjectKind.FILE, step.path, step.library),
                    restart(folder, f"before it loads {os.path.basename(step.path or '')}, so that it maps one "
                            "release"))
            for step, running, folder in stale]


def _orphaned(cudnn: Sequence[MappedLibrary], installs: Sequence[Judged], running: RunningProcess,
              ctx: Context, observed: Observed) -> list[Finding]:
    """A shim the process runs whose file is gone from disk, with nothing of its generation left in its folder to
    judge (its wheel uninstalled, or replaced by another generation's): what it opens later by name is searched as
    its dlopen will search, from the path it was opened at (``$ORIGIN``, its DT_RPATH or DT_RUNPATH read from the
    mapped file through ``/proc/PID/map_files``) and the process's own search path. A sub-library found nowhere, or
    of another release, fails every call it serves (cudnn-facts §4.1: "Invalid handle. Cannot load symbol"). The
    fix puts the release it runs back where it ran from (a wheel's folder: that wheel, into its site, by whoever
    installs there); then its later loads find their own files, and nothing needs restarting. What its start-up
    maps now of another release of that generation (a line written since it started) goes too (`_started_others`):
    a start afresh would map it before the release put back."""
    findings = []
    judged = {i.folder for i in installs}
    for shim in (lib for lib in cudnn if lib.library == "shim" and lib.state in CHANGED):
        folder = os.path.dirname(shim.path)
        if folder in judged:
            continue
        info = shim.elf  # (unreadable, or a generation not known: `_shim_gets` says what it can, or nothing)
        asked = (info.names_release if info else None) or shim.release  # its own build's names
        wrong = [f"{lib.soname}: " + (f"{found.path} (cuDNN {release})" if found else "none")
                 for lib, found, release in _shim_gets(shim, cudnn, ctx)
                 if found is None or (release is not None and asked is not None and release != asked)]
        if not wrong:
            continue
        cuda = next((lib.elf.cudart_version for lib in cudnn if os.path.dirname(lib.path) == folder
                     and lib.elf is not None and lib.elf.cudart_version), None)
        put_back = _put_back(folder, shim, cuda // 1000 if cuda else None)
        if shim.release is None and any(a.do is not ActionKind.MANUAL for a in put_back.actions):
            # the release it runs is not known (its file is gone, and its map is readable by root alone): what is
            # put back may be another, which its later loads would mix with the one it runs; a start afresh maps the
            # one put back whole (fix differential 3-30102: its wheel replaced by 9.0, then by 8.9.7, as nobody)
            put_back = replace(put_back, actions=(*put_back.actions, restart(running.pid, running.command)),
                               note=f"{put_back.note}; the release it runs cannot be read as this user (its file is "
                                    "gone, and only root reads its map), so it is started again on the one put back")
        findings.append(Finding(
            Code.MISSING_SUBLIBRARY if all(w.endswith(": none") for w in wrong) else Code.MIXED_RELEASE,
            f"process {running.pid} runs cuDNN {shim.release or shim.major} from {folder}, whose shim is gone from "
            f"disk: when it first needs them, its shim gets {'; '.join(wrong)}, and the calls they serve fail",
            Subject(SubjectKind.FILE, shim.path, "shim"),
            _started_others(put_back, shim, running, ctx, observed)))
    return findings


def _shim_gets(shim: MappedLibrary, cudnn: Sequence[MappedLibrary], ctx: Context
               ) -> list[tuple[SubLibrary, linker.Resolution | None, Release | None]]:
    """What the shim the process runs (``shim.elf``: the file as mapped, whatever is at its path now) gets when it
    first dlopens each required sub-library it has not loaded yet: searched as its dlopen searches, from the path it
    was opened at (``$ORIGIN``), its own DT_RPATH or DT_RUNPATH, the process's search path, by the names of its own
    build. Each as (the sub-library, where its first name found leads or None, that file's release)."""
    info, gen = shim.elf, GENERATIONS.get(shim.major) if shim.major is not None else None
    folder = os.path.dirname(shim.path)
    if gen is None or (info is None and not folder.endswith("/" + WHEEL_LIB)):
        return []
    # a wheel's shim that cannot be read (gone from disk, its map root's alone) searches as every cuDNN wheel's
    # does: its RUNPATH is $ORIGIN
    opener = linker.Requester(shim.path, rpath=info.rpath if info else (), runpath=info.runpath if info else
                              ("$ORIGIN",))
    here = {lib.library for lib in cudnn if os.path.dirname(lib.path) == folder}
    asked = (info.names_release if info else None) or shim.release
    gets = []
    for lib in gen.sublibraries:
        if lib.opened_by != "shim" or not lib.required or lib.key in here:
            continue
        found = next((r for r in (linker.resolve(name, linker.Chain((opener,)), ctx.linker)
                                  for name in lib.names_tried(asked)) if r.path), None)
        found_info = ctx.elf(found.path) if found is not None and found.path else None
        gets.append((lib, found, found_info.release if found_info is not None else None))
    return gets


def _started_others(put_back: Fix, shim: MappedLibrary, running: RunningProcess, ctx: Context, observed: Observed
                    ) -> Fix:
    """``put_back`` (the release ``shim`` runs, back where it runs it from), then the start-up lines that map a
    file of its generation and another release now (written since the process started: seed 3's 3-10105, a
    ``.pth`` line that loads 9.28's ops beside the 9.24 put back): the running process never ran them, a start of it
    afresh would, and would map that release first."""
    release = shim.release
    started = observed(running.environ) if release is not None and put_back.actions else None
    if release is None or started is None:
        return put_back
    lines: dict[Action, None] = {}
    files = []
    for path, source in sorted(started_cuda(started).items()):
        info = ctx.elf(path)
        theirs = info.release if info is not None else None
        if source.file and source.text and theirs is not None and theirs.major == release.major and theirs != release:
            lines[remove_line(source.file, source.text)] = None
            files.append(f"{os.path.basename(path)} {theirs}")
    if not lines:
        return put_back
    goes = "the lines go" if len(lines) > 1 else "the line goes"
    why = (f"its start-up now maps {', '.join(files)} (a line written since it started): a start afresh would map "
           f"{'those' if len(files) > 1 else 'that'} first, so {goes} too")
    return replace(put_back, actions=(*put_back.actions, *lines),
                   note=f"{put_back.note}; {why}" if put_back.note else why)


def _put_back(folder: str, shim: MappedLibrary, cuda: int | None) -> Fix:
    """The release a process runs put back into the folder it runs it from: a wheel's folder gets that wheel again
    (``--force-reinstall``), into its site, by whoever installs there; another folder, in words."""
    marker = "/" + WHEEL_LIB
    wanted = f"cuDNN {shim.release or shim.major}"
    site = folder[:-len(marker)] if folder.endswith(marker) else None
    cuda = cuda if cuda is not None or site is None else site_cuda(site)  # else the CUDA its site's wheels are for
    requirement = cudnn_requirement(shim.major, cuda, shim.release) if shim.major is not None else None
    if site is not None and requirement is not None:
        pip_env = interpreter_of_site(site)
        # rewritten whatever pip's metadata says: a wheel of another CUDA major in the same folder (-cu12 over
        # -cu13) or another release's uninstall takes the files and leaves this one listed as installed, and a
        # plain install of it is then "Requirement already satisfied" with nothing put back (seed 3's 3-4884)
        return fix(pip_into([requirement], site, pip_env, options=("--force-reinstall",),
                            along=along_of(site, pip_env)),
                   note=f"{wanted}, the release it runs, back where it runs it from")
    return fix(manual(f"put {wanted} back in {folder}: the process runs that release from there"))


def _frameworks(files: Sequence[MappedFile]) -> tuple[Framework, ...]:
    """The frameworks whose libraries are mapped, by the folders `consumers.SOURCES` names for each."""
    from cudnnload.resolve.consumers import SOURCES

    found: dict[str, Framework] = {}
    for mapped in files:
        for source in SOURCES.values():
            for folder in source.folders:
                at = mapped.path.find(f"/{folder}/")
                if at >= 0 and source.framework not in found:
                    found[source.framework] = Framework(source.framework, mapped.path[:at + len(folder) + 1])
    return tuple(found.values())


# --- checks --------------------------------------------------------------------------------------------

def _mapped_check(cudnn: Sequence[MappedLibrary], inventory: JudgedInventory, program: linker.Requester | None,
                  ctx: Context) -> Check:
    if not cudnn:
        shim = GENERATIONS[9].shim.soname
        res = linker.resolve(shim, linker.Chain((program,)) if program else None, ctx.linker)
        would = f"{res.path} ({res.rule})" if res.path else "nothing: it is not on the program's search path"
        return Check("mapped", "info", f"no cuDNN mapped (yet); dlopen(\"{shim}\") from it would get {would}")
    said = []
    for major, libs in sorted(_by_major(cudnn).items(), reverse=True):
        for folder in dict.fromkeys(os.path.dirname(lib.path) for lib in libs):
            here = [lib for lib in libs if os.path.dirname(lib.path) == folder]
            install = next((i for i in inventory.installs if i.folder == folder and i.major == major), None)
            release = ", ".join(map(str, _releases(here))) or (install.release if install else None) or f"{major}.x"
            dist = f" ({install.distribution})" if install and install.distribution else ""
            said.append(f"cuDNN {release} from {folder}{dist}: {len(here)} file{'s' * (len(here) > 1)}")
    return Check("mapped", "ok", "; ".join(said))


def _coherence_check(cudnn: Sequence[MappedLibrary]) -> Check:
    if not cudnn:
        return Check("coherent", "skip", "no cuDNN mapped")
    said, broken, telling = [], False, _telling(cudnn)
    for major, libs in _by_major(telling).items():
        folders = {os.path.dirname(lib.path) for lib in libs}
        releases = _releases(libs)
        if len(folders) > 1 or len(releases) > 1:
            broken = True
            said.append(f"cuDNN {major} from {len(folders)} folders, releases "
                        f"{', '.join(map(str, releases)) or 'unknown'}")
        else:
            said.append(f"one cuDNN {major} release ({releases[0] if releases else 'unknown'}), from one folder")
    untold = len(cudnn) - len(telling)
    said += [f"{untold} file{'s' * (untold > 1)} replaced on disk whose release the file does not carry"] if untold \
        else []
    return Check("coherent", "fail" if broken else "ok", "; ".join(said))


def _files_check(libraries: Sequence[MappedLibrary]) -> Check:
    changed = [lib for lib in libraries if lib.state in CHANGED]
    unreached = [lib for lib in libraries if lib.state == UNREACHABLE]
    if not libraries:
        return Check("files", "skip", "no cuDNN, cuBLAS, NVRTC or driver library mapped")
    if not changed and not unreached:
        return Check("files", "ok", f"each of the {len(libraries)} cuDNN, cuBLAS, NVRTC and driver files mapped is "
                     "the file on disk")
    said = [f"{len(changed)} replaced or deleted on disk since mapped: "
            + ", ".join(f"{os.path.basename(lib.path)} ({lib.state})" for lib in changed)] if changed else []
    said += [f"{len(unreached)} not checked: this user cannot reach their folder "
             f"({', '.join(sorted({os.path.dirname(lib.path) for lib in unreached}))})"] if unreached else []
    return Check("files", "warn", "; ".join(said))


def _pending_check(installs: Sequence[Judged], pending: Sequence[Step],
                   stale: Sequence[tuple[Step, Release | None, str]]) -> Check:
    if not installs:
        return Check("pending", "skip", "no cuDNN shim mapped: nothing it would load later")
    if not pending:
        return Check("pending", "ok", "every sub-library the shim loads is mapped already")
    outside = [step for step in pending if not step.inside_install]
    if outside:
        return Check("pending", "fail", "the shim would get these from outside its folder, when it asks: "
                     + ", ".join(f"{step.library} ({step.path or 'not found'})" for step in outside))
    if stale:
        return Check("pending", "fail", "the shim would get these from its folder, now of another release than the "
                     "one mapped: " + ", ".join(f"{step.library} ({step.release}, not "
                                                f"{running or 'the build mapped'})" for step, running, _ in stale))
    return Check("pending", "ok", f"the shim would get the {len(pending)} sub-libraries it has not loaded yet from "
                 f"its own folder ({', '.join(step.library for step in pending)})")


def _frameworks_check(frameworks: Sequence[Framework]) -> Check:
    if not frameworks:
        return Check("frameworks", "skip", "no PyTorch, JAX, ONNX Runtime or TensorFlow library mapped")
    return Check("frameworks", "info", ", ".join(f"{f.name} ({f.folder})" for f in frameworks))
