"""The verdict on one install: what is wrong with its files, its plan and its dependencies, what an
application will see (`consequences`), and the fix for each problem (`fixes`), from the facts `resolve`
gathered (`resolve.discovery.Install`). Pure: files are asked about through the context's facts
(`Context.elf`, `Context.unresolved`, `resolve.access.Access`), never read here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from cudnnload.codes import ActionKind, Code, Effect, SubjectKind
from cudnnload.judge import fixes
from cudnnload.judge.consequences import (
    HANGS,
    KILLS,
    UNLOADABLE,
    Load,
    Planned,
    Prediction,
    in_engine_chain,
    mapped_files,
    plan_loads,
    predict,
    reads_stale_dlerror,
)
from cudnnload.judge.judged import Judged, Verdict
from cudnnload.judge.policy import Mapped, install_findings, lent_loads, untrusted_findings
from cudnnload.resolve import linker
from cudnnload.resolve.access import Access
from cudnnload.resolve.catalog import (
    Generation,
    Release,
    SubLibrary,
    bundled_copy,
    classify,
    dependency_folder,
    dependency_requirement,
    generation,
)
from cudnnload.resolve.discovery import Candidate, Context, Host, Install, Step, asked_for, not_cudnn
from cudnnload.resolve.elf import ElfInfo
from cudnnload.resolve.process import PRELOAD_FILE
from cudnnload.verdicts import (
    ERROR,
    INFO,
    NO_FIX,
    WARNING,
    Action,
    Consequence,
    Finding,
    Fix,
    Subject,
    delete,
    fix,
    manual,
    remove_entry,
    set_variable,
)

# What is wrong with a file itself, when it cannot be read as the library it should be.
FILE_PROBLEMS = frozenset({Code.MISSING_FILE, Code.EMPTY_FILE, Code.TRUNCATED, Code.NOT_ELF, Code.DAMAGED_ELF,
                           Code.UNREADABLE, Code.BROKEN_SYMLINK, Code.NOT_A_REGULAR_FILE, Code.SYMLINK_LOOP})


def judge_install(install: Install, ctx: Context, access: Access, python: str | None = None) -> Judged:
    """``install`` with its verdict: every finding (its files' first), each with what the user will see and
    its fix, and the calls an application makes, predicted. ``python``: the interpreter whose environment
    it is (pip fixes name it)."""
    gen = generation(install.major)
    preloads = {p.path: act for p in ctx.preloads if p.path is not None and (act := fixes.undo(p)) is not None}
    repair = _Repairs(install, python, _entry_of(install.folder, ctx.linker), preloads, ctx.linker.ld_library_path,
                      (ctx.shell_site, ctx.shell_pip) if ctx.shell_site else None)
    files = [_readable(f, access, repair) for cand in install.files
             for f in file_findings(cand, install.major, ctx.host, repair)]
    shim = install.file("shim")
    stray_shim = _stray_shim(install, ctx, repair)
    findings: list[Finding] = [*_renamed_shim(shim, install)]
    findings += _missing(gen, install, repair, ignore_asked=stray_shim is not None, ctx=ctx)
    findings += _mixed(install, repair)
    if stray_shim is not None:
        findings.append(stray_shim)
    prediction = predict_install(install, ctx)
    findings += _records(install, repair, prediction.loads)
    # what only a shim of another release asks for (ext, of a 9.28 shim over 9.0's folder) is that shim's
    # finding, not one more missing library
    only_asked = {lib.key for lib in gen.sublibraries if not lib.required} if stray_shim is not None else set()
    for step in install.plan:
        if step.library not in only_asked or step.path is not None:
            findings += step_findings(step, install, repair, prediction.loads)
    findings += [f for step in install.dependencies for f in _dependency_findings(step, install, repair, ctx.host)]
    findings += _other_shims(install, ctx, repair, prediction.loads)
    doubt = next((step.undecided for step in install.plan + install.dependencies if step.undecided), None)
    if doubt is not None:  # the model guessed: said once, with what settles it
        findings.append(Finding(Code.LOADER_UNKNOWN, doubt, Subject(SubjectKind.INSTALL, install.folder), NO_FIX))
    # a link to what is no library (a device, a FIFO, a folder) has no sub-libraries beside its target either
    if (shim is not None and shim.real_path and shim.problem is not Code.NOT_A_REGULAR_FILE
            and posixpath.dirname(shim.real_path) != _real_folder(install)):
        findings += _symlinked_shim(shim, gen, install, ctx.linker)
    findings += _fallbacks(prediction, install, repair)
    # a shim the kernel refuses to map never runs: what it would load is moot, and the mount is the one fix
    findings = _noexec(install) or findings
    shim_fails = bool(prediction.expectations) and prediction.expectations[0].outcome == Effect.NO_START
    origin = any(f.code is Code.ORIGIN_THROUGH_SYMLINK for f in findings)
    foreign = any(f.code is Code.SONAME_MISMATCH and f.severity is ERROR and f.subject.library == "shim" for f in files)
    if (shim_fails or origin or foreign) and not any(c.library not in ("shim", None) for c in install.files):
        findings = [f for f in findings if f.code is not Code.MISSING_SUBLIBRARY]  # only the shim: said once
    findings = [_loads_as_released(f, prediction, install) for f in findings]
    told: set[str] = set()
    said = _with_consequences(files, prediction, told) + _with_consequences(findings, prediction, told)
    said += install_findings(install.folder, install.found_via,
                             [linker.Requester.from_elf(c.path, c.elf) for c in install.files if c.elf],
                             install.plan + install.dependencies, ctx.linker.defaults, access)
    taken = {a.entry for f in said if f.severity is ERROR for a in f.fix.actions
             if a.do is ActionKind.ENV_REMOVE_ENTRY and a.variable == "LD_LIBRARY_PATH" and a.entry is not None}
    said += untrusted_findings(_would_map(install, prediction, ctx, access.cwd, repair.entry), access,
                                ctx.linker.ld_library_path, taken)
    said += tuple(f for f in _unexplained(prediction, said, install, repair) if f.subject.library not in only_asked)
    said = tuple(_aborts_without_driver(f, install.major) for f in said)
    maps = () if shim_fails or shim is None else _with_preloaded(mapped_files(
        gen, prediction.loads, shim.path, set(shim.elf.cudnn_functions) if shim.elf else None), ctx)
    lent = lent_loads(install.folder, install.plan + install.dependencies, cwd=access.cwd)
    return Judged.of(install, Verdict(said, prediction.expectations, maps, lent))


def _other_shims(install: Install, ctx: Context, repair: _Repairs, loads: Mapping[str, Load]) -> Iterable[Finding]:
    """A shim of the same generation from another folder that is in the process before the program (LD_PRELOAD,
    Python's start-up): a program that opens this install's shim by path maps both (glibc compares files, not
    sonames, for a path), and its calls by name bind to the first; two cuDNNs in one process. The same for a
    sub-library of another folder that no load of this install takes (its opener asks for its own by a name the
    preloaded file does not answer, ``X.so.9.28.0``; ``loads``: what each load of it gets, as predicted): it stays
    in the process beside this install's own."""
    shim = install.file("shim")
    own = {shim.path, shim.real_path} if shim is not None else set()
    used = {step.path for step in install.plan} | {load.path for load in loads.values()}
    for item in ctx.preloads:
        lib = classify(posixpath.basename(item.soname or item.path or ""))
        if item.path is None or lib is None or lib.major != install.major or item.path in own or item.path in used \
                or _inside(item.path, install.folder) \
                or (item.entry is None and item.cause is None):  # a running process's own file: doctor --pid's
            continue
        undo = repair.preloads.get(item.path)
        before = " is in the process before the program" + (f" ({undo})" if undo else "")
        if lib.key == "shim" and shim is not None and posixpath.realpath(item.path) == shim.real_path:
            message = (f"{item.path}, this install's shim through a link in another folder,{before}: opening "
                       f"{install.folder}'s shim gets that object back (glibc compares files), and its $ORIGIN is "
                       f"{posixpath.dirname(item.path)}: its sub-libraries are searched there")
        elif lib.key == "shim":
            message = (f"{item.path}, another cuDNN {install.major} shim,{before}: opening {install.folder}'s shim "
                       "maps a second one, and calls made by name bind to the first")
        else:
            message = (f"{item.path}, a cuDNN {install.major} {lib.key} of another folder,{before}: this install "
                       f"loads its own {lib.key}, so the process maps cuDNN from two folders")
        yield Finding(Code.MIXED_IN_PROCESS, message, Subject(SubjectKind.FILE, item.path, lib.key),
                      fix(undo) if undo else NO_FIX)


def _inside(path: str, folder: str) -> bool:
    return posixpath.normpath(posixpath.dirname(path)) == posixpath.normpath(folder)


def _would_map(install: Install, prediction: Prediction, ctx: Context, cwd: str,
               entry: str | None = None) -> Iterable[Mapped]:
    """Every file a program loading ``install`` could map, with the entry that gave it: its own files, what
    LD_PRELOAD puts in the process, each planned sub-library (and what its opener's later names get when it
    fails), and what cuDNN NEEDs or dlopens. A relative path (an empty or relative search-path entry gave it)
    is the current folder's, whatever that holds; but one that names a file of the install's own folder from
    ``cwd`` (a relative entry that leads to the folder the caller named) is that file."""
    own = posixpath.normpath(install.folder)

    def placed(path: str) -> str:
        here = posixpath.join(cwd, path)
        return here if own.startswith("/") and posixpath.normpath(posixpath.dirname(here)) == own else path

    by = ("LD_LIBRARY_PATH", entry) if entry is not None else (None, None)  # the entry that gives the install
    yield from (Mapped(placed(cand.path), cand.library, *by) for cand in install.files if cand.elf is not None)
    yield from (Mapped(p.path, p.name, "LD_PRELOAD" if p.entry else None, p.entry) for p in ctx.preloads
                if p.path is not None)
    for step in (*install.plan, *(s.fallback for s in install.plan if s.fallback), *install.dependencies):
        if step.path is not None:
            yield Mapped(placed(step.path), step.library, step.variable, step.entry)
    yield from (Mapped(placed(load.path), key) for key, load in prediction.loads.items() if load.path is not None)


def _with_preloaded(maps: tuple[str, ...], ctx: Context) -> tuple[str, ...]:
    """``maps`` and, after them, each cuDNN file LD_PRELOAD (or a running process) put in the process that they
    do not name: it is mapped whether anything binds to it or not."""
    have = {posixpath.normpath(path) for path in maps}
    extra = [p.path for p in ctx.preloads if p.path is not None and not p.kills and not p.hangs
             and posixpath.basename(p.path).startswith("libcudnn") and posixpath.normpath(p.path) not in have]
    return maps + tuple(dict.fromkeys(extra))


# What keeps an install from being the one a search should lead to instead: a file that does not load, or a
# sub-library from elsewhere. A missing cuBLAS or driver is not the install's own (it fails the same anywhere).
_NOT_WHOLE = frozenset({Code.SUBLIBRARY_UNLOADABLE, Code.SUBLIBRARY_ELSEWHERE, Code.MISSING_SHIM})


def whole(install: Judged) -> bool:
    """Whether the install loads as one release from its own folder: no finding that keeps ``load()`` from
    it, and nothing taken from elsewhere (`unwhole`)."""
    return not any(unwhole(f) for f in install.findings)


def unwhole(finding: Finding) -> bool:
    """Whether ``finding`` keeps its install from loading as one release from its own folder."""
    return finding.code.blocks_load or finding.code in _NOT_WHOLE or (finding.code is Code.SONAME_MISMATCH and
                                                                      finding.severity is ERROR)


def predict_install(install: Install, ctx: Context, *, gpu: bool | None = None,
                    calls: frozenset[str] | None = None) -> Prediction:
    """What an application would see with this install (`consequences`): the loads the plan makes,
    and a consequence per cause of failure; on a machine with a usable GPU when ``gpu`` (default:
    when libcuda.so.1 was found); of only the exercise's calls of ``calls`` where given (`predict`)."""
    gen = generation(install.major)
    planned = {step.library: Planned.of(step) for step in install.plan}
    missing = {step.library: step.library for step in install.dependencies if step.path is None}
    shim = install.file("shim")
    if gpu is None:
        gpu = any(step.library == "libcuda.so.1" and step.path for step in install.dependencies)
    present: dict[str, str] = {}
    for item in ctx.preloads:  # the first object of a soname in the process answers it
        if item.path is not None and item.soname is not None:
            present.setdefault(item.soname, item.path)
    loads = {} if gen.major == 7 else plan_loads(gen, install.release, planned, missing, ctx, present)
    return predict(gen, install.release, loads, missing_dependencies=missing, shim=shim.elf if shim else None,
                   shim_fails=_preload_stops(ctx) or _shim_load(install, missing), facts=ctx, gpu=gpu,
                   opened=dict(install.opened_at_load) if install.opened_at_load else None, calls=calls)


def _noexec(install: Install) -> list[Finding]:
    """The shim on a file system mounted noexec (the linker model's outcome of opening it, `linker.noexec`): the
    loader opens it and the kernel refuses to map its code, so every dlopen of it fails, by path or by name (the
    search ends there). Its fix is the mount's, or another file system's copy: never the files, which are whole."""
    shim = install.file("shim")
    outcome, error = install.opening or ("found", None)
    if shim is None or outcome != "noexec":
        return []
    return [Finding(Code.NOEXEC_MOUNT, f"{install.folder} is on a file system mounted noexec: the loader opens "
                    f"{posixpath.basename(shim.path)} and the kernel refuses to map its code ({error})",
                    Subject(SubjectKind.FILE, shim.path, "shim"),
                    fix(manual(f"mount the file system that holds {install.folder} without noexec (`findmnt -T "
                               f"{install.folder}` names it; `mount -o remount,exec` it, or drop noexec from its "
                               "entry in /etc/fstab or the container's volume options), or install cuDNN on one "
                               "mounted without it and load it from there")))]


def _preload_stops(ctx: Context) -> Load | None:
    """An LD_PRELOAD entry that stops every program before it starts (`judge.preload`): the application never
    gets to open the shim."""
    item = next((p for p in ctx.preloads if p.stops_start), None)
    if item is None:
        return None
    fails = KILLS if item.kills else HANGS if item.hangs else UNLOADABLE
    return Load("shim", item.path, None, fails, item.printed, item.name)


def _shim_load(install: Install, missing: Mapping[str, str]) -> Load | None:
    """Why the application's own dlopen of the shim fails, if it does: the file, or a library it NEEDs."""
    shim = install.file("shim")
    if shim is None:
        return None
    outcome, error = install.opening or ("found", None)
    if shim.elf is None or outcome != "found":
        problem = error or shim.reason or "it cannot be read"
        fails = KILLS if outcome == "cut-segments" else HANGS if outcome == "fifo" else UNLOADABLE
        return Load("shim", shim.path, None, fails, problem, "shim")
    needed = next((name for name in shim.elf.needed if name in missing), None)
    if needed is not None:
        return Load("shim", shim.path, None, UNLOADABLE,
                    f"{needed}: cannot open shared object file: No such file or directory", needed)
    return None


# --- the fixes of this install's problems -------------------------------------------------------------

class _Repairs:
    """The fixes for one install, from who installed it: pip (its distribution, put back whole), or
    another package manager (said in words); an install that is there only as an LD_LIBRARY_PATH entry
    (``entry``) is first taken off that path. A file that is only in the process because of another one
    (its requester, preloaded or itself taken from elsewhere) is fixed by that one's fix (`requester_fix`)."""

    def __init__(self, install: Install, python: str | None, entry: str | None = None,
                 preloads: Mapping[str, Action] | None = None, search_path: Sequence[str] = (),
                 shell: tuple[str, fixes.PipEnv] | None = None) -> None:
        self.install, self.python, self.entry = install, python, entry
        self.shell = shell  # the site-packages of the shell's active Python environment, and who installs into it
        # a file in the process before the program starts -> what takes it out (`fixes.undo`)
        self.preloads = dict(preloads or {})
        self.search_path = tuple(search_path)  # LD_LIBRARY_PATH's entries, as written
        name, _, version = (install.distribution or "").partition(" ")
        self.dist = (name, version) if install.distribution else None

    def put_back(self) -> Fix:
        """The install as it was released: every file back."""
        if self.dist is not None:  # and what would shadow its files once they are back
            return fix(fixes.reinstall(*self.dist, self.install.site, self.install.pip_env, self.python,
                                       self.install.along),
                       *map(delete, self.install.shadowing),
                       note=f"{', '.join(map(posixpath.basename, self.install.shadowing))}: no file of "
                       f"{' '.join(self.dist)}, named as its release's loaders look first" if self.install.shadowing
                       else None)
        again = self._wheel_again()  # the folder is where its wheel goes back: the entry may stay
        if again is not None:
            return fix(again, note=f"no installed distribution owns {self.install.folder}")
        whole = fixes.manual_reinstall(self.install.folder, self.install.major, self.install.release)
        if self.entry is not None:
            return fix(remove_entry("LD_LIBRARY_PATH", self.entry), alternatives=[whole])
        return fix(whole)

    def _wheel_again(self) -> Action | None:
        """A pip wheel's folder whose wheel is gone: the wheel its site's frameworks require (else the one of its
        files' release and CUDA) installed there again, by that site's interpreter (pip writes over what is there)."""
        install = self.install
        if install.distribution is not None or install.site is None or install.pip_env[0] is None:
            return None
        requirement = install.wanted or fixes.cudnn_requirement(install.major, install.cuda_major, install.release)
        if requirement is None:
            return None
        return fixes.pip_into([requirement], install.site, install.pip_env, python=self.python,
                              elsewhere=install.elsewhere)

    def file(self, cand: Candidate) -> Fix:
        """A damaged, missing or foreign file: put back by its distribution when RECORD lists it; a file of
        no distribution in a pip-owned folder (a stray copy) deleted; a shim that links to a wheel's file from a
        folder no distribution owns, by putting that wheel back."""
        if cand.library == "shim" and self.dist is None and self.install.shim_owner is not None:
            return _Repairs(self.install.shim_owner, self.python).put_back()
        recorded = {r.path for r in self.install.records}
        if self.dist is not None and recorded and cand.path not in recorded and cand.library != "shim":
            return fix(delete(cand.path), note="it is no file of " + " ".join(self.dist))
        return self.put_back()

    def unshipped(self, lib: SubLibrary) -> bool:
        """The install's distribution does not ship ``lib`` at all (its RECORD lists no such file in the folder:
        nvidia-cudnn-jit-cu13 has no ops, cnn, adv or ext): reinstalling it cannot bring it back."""
        if self.dist is None or not self.install.records:
            return False
        return all(posixpath.basename(r.path) != lib.soname for r in self.install.records)

    def full_wheel(self, lib: SubLibrary) -> Fix:
        """``lib`` from the full cuDNN wheel of the same CUDA major, installed beside the distribution that
        lacks it, and the program led to that wheel's folder: the LD_LIBRARY_PATH entry that names this
        install replaced by it, or (opened by path) in words."""
        install = self.install
        # the site's frameworks' pin of this major first (a cuDNN 9 shim in an 8.5 cu11 wheel's folder, beside a torch
        # built for CUDA 13, is served by torch's nvidia-cudnn-cu13, not by a cu11 cuDNN 9)
        requirement = install.wanted or fixes.cudnn_requirement(install.major, install.cuda_major)
        if requirement is None or install.site is None:
            return fix(manual(f"install a complete cuDNN {install.major} ({lib.soname} included; "
                              f"{install.distribution} has none) and load it instead"))
        folder = posixpath.join(install.site, fixes.WHEEL_LIB)
        installed = fixes.pip_into([requirement], install.site, install.pip_env, python=self.python,
                                   along=install.along, elsewhere=install.elsewhere)
        shim = posixpath.join(folder, generation(install.major).shim.soname)
        if self.entry is None:
            return fix(installed, manual(f"open {shim} (the full wheel's shim) instead of "
                                         f"{posixpath.join(install.folder, posixpath.basename(shim))}"))
        value = ":".join(folder if text == self.entry else text for text in self.search_path)
        return fix(installed, set_variable("LD_LIBRARY_PATH", value),
                   note=f"{install.distribution} ships no {lib.soname}; {requirement} does")

    def requester_fix(self, path: str | None) -> Fix | None:
        """The fix of the file that asks for a library, when that file is itself a problem: preloaded (its
        LD_PRELOAD entry goes), taken from outside the install (its step's fix), or a file of another release
        in the install's folder (put back): what it asks for goes with it."""
        if path is None:
            return None
        if path in self.preloads:
            return fix(self.preloads[path])
        step = next((s for s in self.install.plan if s.path == path and not s.inside_install), None)
        if step is not None:
            return _stray_fix(step, self.install.file(step.library), self)
        cand = next((c for c in self.install.files if c.path == path), None)
        return self.file(cand) if cand is not None and _of_another_release(cand, self.install) else None


def _entry_of(folder: str, env: linker.LinkerEnv) -> str | None:
    """The LD_LIBRARY_PATH entry, as written, that names ``folder``."""
    for text in env.ld_library_path:
        expanded = linker.expand(text, env.executable, env.defaults) if text else ""
        if expanded is not None and posixpath.normpath(expanded or ".") == posixpath.normpath(folder):
            return text
    return None


def file_findings(cand: Candidate, major: int, host: Host, repair: _Repairs | None = None) -> Iterable[Finding]:
    """What is wrong with one file of a cuDNN of ``major`` on ``host``: it cannot be read as a library, is
    for another machine, or needs a newer glibc or libstdc++ than the host has."""
    subject = Subject(SubjectKind.FILE, cand.path, cand.library)
    repair = repair or _Repairs(Install(posixpath.dirname(cand.path), major, None, None, "", None, None, (), (),
                                        ()), None)
    if cand.problem is not None:
        yield Finding(cand.problem, cand.reason or cand.problem.text, subject, repair.file(cand))
        return
    info = cand.elf
    if info is None:
        return
    if host.foreign(info):
        yield Finding(Code.FOREIGN_ELF, f"ELF{info.elf_class} for {info.machine}; this machine needs ELF64 for "
                      f"{host.machine}", subject, repair.file(cand))
        return
    lib = generation(major).library(cand.library) if cand.library else None
    if lib and info.soname and info.soname != lib.soname and not_cudnn(info):
        yield Finding(Code.SONAME_MISMATCH, f"not cuDNN: its SONAME is {info.soname} and it exports no cuDNN "
                      f"function; what asks for {lib.soname} gets it, and no cudnn* call resolves (\"undefined "
                      f"symbol: cudnn...\")", subject, repair.file(cand), severity=ERROR)
    elif lib and info.soname and info.soname != lib.soname and not bundled_copy(info.soname):
        yield Finding(Code.SONAME_MISMATCH, f"SONAME is {info.soname}, expected {lib.soname}", subject,
                      repair.file(cand))
    what = {"GLIBC_": "glibc", "GLIBCXX_": "libstdc++", "CXXABI_": "libstdc++ (C++ ABI)"}
    newer = manual("put a newer libstdc++ (GCC >= 7) before the system's: conda install libstdcxx-ng, or a newer OS "
                   "image")
    for prefix, need, have in host.lacking(info):
        if prefix == "GLIBC_":
            yield Finding(Code.GLIBC_TOO_OLD, f"needs {prefix}{_dotted(need)}, this machine's {what[prefix]} provides "
                          f"{prefix}{_dotted(have)}", subject, fix(manual(
                              f"run it where glibc provides {prefix}{_dotted(need)} (a newer OS image), or use a "
                              "cuDNN release built for an older glibc (9.0 needs only GLIBC_2.14)")))
            continue
        # the libstdc++ found first may be one an LD_LIBRARY_PATH entry puts before the system's: that entry goes
        shadow = host.libstdcxx_entry
        where = f" ({host.libstdcxx}, through the LD_LIBRARY_PATH entry {shadow})" if shadow is not None else ""
        yield Finding(Code.LIBSTDCXX_TOO_OLD, f"needs {prefix}{_dotted(need)}, the {what[prefix]} found first"
                      f"{where} provides {prefix}{_dotted(have)}", subject,
                      fix(remove_entry("LD_LIBRARY_PATH", shadow), alternatives=[newer]) if shadow is not None
                      else fix(newer))


def _readable(finding: Finding, access: Access, repair: _Repairs) -> Finding:
    """An unreadable file's fix is the mode change that lets the user read it (`fixes.make_readable`); where its
    wheel's RECORD lists it, that wheel put back too: what a file this user cannot read holds is unknown here (another
    machine's or release's copy of the same size under its name), as for a folder it cannot search
    (`fixes.readable_again`)."""
    path = finding.subject.path
    if finding.code is not Code.UNREADABLE or path is None or (stop := access.unreachable(path)) is None:
        return finding
    dist = repair.dist
    if dist is None or stop.folder or path not in {r.path for r in repair.install.records}:
        return replace(finding, fix=fix(fixes.make_readable(stop, access.user)))
    return replace(finding, fix=fixes.unknown_put_back(stop, access.user, " ".join(dist), *repair.put_back().actions))


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _graph_step(install: Install) -> Step | None:
    """The install's own graph: what a graph of another folder asks for is not this folder's to hold (the mix is
    said as such)."""
    return next((step for step in install.plan if step.library == "graph" and step.inside_install), None)


def _expected(gen: Generation, install: Install, ignore_asked: bool) -> tuple[SubLibrary, ...]:
    """Sub-libraries this install must have: required ones, plus those the shim asks for by VersionCheck, or its
    graph by name (`discovery.asked_for`; unless the shim is of another release than the folder: then what it
    asks for says nothing), where graph goes on without it only once another library loaded, that one found
    (`SubLibrary.fails_after`: engines_tensor_ir beside heuristic, not in a JIT wheel)."""
    shim = install.file("shim")
    found = {step.library for step in install.plan if step.path}

    def would_load(key: str | None) -> bool:  # found, and so is the library its opener must have loaded first
        return key is None or (key in found and would_load(gen.library(key).after))

    return tuple(lib for lib in gen.sublibraries if lib.required
                 or (not ignore_asked and asked_for(lib, shim, _graph_step(install))
                     and any(step.library == lib.key for step in install.plan)
                     and (lib.fails_after is None or would_load(lib.fails_after)))
                 or in_engine_chain(lib, install.release))


def _missing(gen: Generation, install: Install, repair: _Repairs, ignore_asked: bool,
             ctx: Context) -> Iterable[Finding]:
    # (a sub-library the search finds in the folder the shim's own file is in, the shim a link, is the install's)
    present = {c.library for c in install.files} | {s.library for s in install.plan if s.path and s.inside_install}
    if "shim" not in present:
        yield Finding(Code.MISSING_SHIM, f"no {gen.shim.soname} in this folder: only the sub-libraries are here",
                      Subject(SubjectKind.INSTALL, install.folder, "shim"), repair.put_back(),
                      severity=WARNING if gen.major == 9 else ERROR)
    if gen.major == 7:
        return
    # a shim a wheel bundles alone looks its sub-libraries up by name: they go where it looks, not in its folder
    shim = install.file("shim")
    alone = posixpath.basename(shim.path) if shim is not None and bundled_copy(posixpath.basename(shim.path)) else None
    by_name = _bundled_fix(install, ctx) if alone else None
    for lib in _expected(gen, install, ignore_asked):
        if lib.key not in present:
            unshipped = repair.unshipped(lib)
            graph_only = unshipped and _graph_only(install)
            if by_name is not None:
                yield Finding(Code.MISSING_SUBLIBRARY, f"{lib.soname} is missing: the shim {alone} is a copy a "
                              "wheel bundles alone (auditwheel's name), which opens it by that name through "
                              "LD_LIBRARY_PATH and the loader's cache, never from its own folder",
                              Subject(SubjectKind.FILE, posixpath.join(install.folder, lib.soname), lib.key),
                              by_name)
                continue
            yield Finding(Code.MISSING_SUBLIBRARY, f"{lib.soname} is missing" + (
                f": {install.distribution} does not ship it (its RECORD lists no such file)" if unshipped else "")
                + ("; it is cuDNN's JIT configuration, by design the graph API alone: a program that makes only "
                   "graph-API calls runs on it, and every framework's legacy calls (PyTorch, TensorFlow, ONNX Runtime, "
                   "CTranslate2) need the full wheel" if graph_only else ""),
                          Subject(SubjectKind.FILE, posixpath.join(install.folder, lib.soname), lib.key),
                          repair.full_wheel(lib) if unshipped else repair.put_back())


def _graph_only(install: Install) -> bool:
    """The install is a distribution of cuDNN's JIT configuration (the nvidia-cudnn-jit wheels, conda's
    libcudnn-jit): the shim, graph and the runtime-compiled engines, and by design none of the legacy API's
    sub-libraries (ops, cnn, adv, ext), whose calls then return CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE."""
    return "cudnn-jit" in (install.distribution or "")


def _mixed(install: Install, repair: _Repairs) -> Iterable[Finding]:
    for cand in install.files:
        if _of_another_release(cand, install) and cand.elf is not None:
            yield Finding(Code.MIXED_RELEASE, f"is cuDNN {cand.elf.release}, the rest of the folder is "
                          f"{install.release}: sub-libraries bind to each other's release-private symbols and fail "
                          "to load across releases", Subject(SubjectKind.FILE, cand.path, cand.library),
                          repair.file(cand))


def _of_another_release(cand: Candidate, install: Install) -> bool:
    """A file in the install's folder that dates itself to another release than the install's."""
    return bool(install.release and cand.elf and cand.elf.release and cand.elf.release != install.release)


def _stray_shim(install: Install, ctx: Context, repair: _Repairs) -> Finding | None:
    """A shim of a newer release than the graph it loads (it forwards graph-API functions that graph does
    not export): 9.28's shim over 9.0's sub-libraries, whose every cudnnCreate then aborts."""
    shim = install.file("shim")
    graph = next((s for s in install.plan if s.library == "graph" and s.path and s.error is None), None)
    if shim is None or shim.elf is None or graph is None or graph.path is None:
        return None
    graph_info = ctx.elf(graph.path)
    if graph_info is None:
        return None
    ahead = sorted(name for name in shim.elf.cudnn_functions
                   if name.startswith("cudnnBackend") and name not in graph_info.cudnn_functions)
    if not ahead:
        return _older_shim(shim, graph, graph_info, install, repair)
    # a graph from elsewhere is the cause (its step's fix); the install's own graph: the shim is the stray file
    cure = None if graph.inside_install else _stray_fix(graph, install.file("graph"), repair)
    return Finding(Code.MIXED_RELEASE, f"the shim is of a newer release than the graph it loads ({graph.path}, cuDNN "
                   f"{graph.release or '?'}): it forwards {ahead[0]} and {len(ahead) - 1} more graph-API functions "
                   "that graph does not export", Subject(SubjectKind.FILE, shim.path, "graph",
                                                         variable=graph.variable, entry=graph.entry),
                   cure or repair.file(shim) if cure or install.distribution or install.shim_owner else fix(manual(
                       f"replace {shim.path} with the shim of cuDNN {graph.release or 'the folder'}'s release, or "
                       "the folder with one complete release")))


def _older_shim(shim: Candidate, graph: Step, graph_info: ElfInfo, install: Install,
                repair: _Repairs) -> Finding | None:
    """A shim of an older release than the graph it loads (graph exports graph-API functions it does not
    forward): 9.0's shim over 9.28's sub-libraries. Everything loads and runs, as the older API: a program built
    against the newer one finds its functions missing (measured: cudnnSubquadraticOpsVersionCheck and
    cudnnBackendPopulateCudaGraph absent, ext never opened)."""
    if shim.elf is None or not graph.inside_install:  # a graph from elsewhere: that step's finding says it
        return None
    behind = sorted(name for name in graph_info.cudnn_functions
                    if name.startswith("cudnnBackend") and name not in shim.elf.cudnn_functions)
    if not behind:
        return None
    seen = Consequence(f"the functions of cuDNN {graph.release or 'the graph'}'s API the shim does not forward "
                       f"({', '.join(behind[:3])}{', ...' if len(behind) > 3 else ''})", Effect.WRONG_RELEASE,
                       "shim", message=f"dlsym finds no {behind[0]} in {shim.path}")
    return Finding(Code.MIXED_RELEASE, f"the shim is of an older release than the graph it loads ({graph.path}, "
                   f"cuDNN {graph.release or '?'}): it does not forward {behind[0]} and {len(behind) - 1} more "
                   "graph-API functions that graph exports", Subject(SubjectKind.FILE, shim.path, "shim"),
                   repair.file(shim) if install.distribution or install.shim_owner else fix(manual(
                       f"replace {shim.path} with the shim of cuDNN {graph.release or 'the folder'}'s release")),
                   (seen,))


def _records(install: Install, repair: _Repairs, loads: Mapping[str, Load]) -> Iterable[Finding]:
    """What RECORD lists but is not on disk, or is on disk with another size (or sha256, with --verify); for a shim
    linked into a wheel's folder, that wheel's files the install maps, put back by that wheel."""
    owner = install.shim_owner if install.distribution is None else None
    if owner is not None:
        repair = _Repairs(owner, repair.python)
    name = (owner or install).distribution or "its distribution"
    for record in install.records:
        key = _key_of(record.path)
        subject = Subject(SubjectKind.DISTRIBUTION, record.path, key, name=install.distribution)
        # an optional engine library: graph runs without it (catalog), so the install works, with fewer engines;
        # not another release's file in its place that the process maps all the same (measured: 9.28's tensor_ir
        # in 9.24's wheel stays mapped, and cudnnBackendFinalize returns 1002, not the healthy 2000)
        # nor a file whose load ends the process (cut inside a segment: SIGBUS in dlopen; fix differential 3-8957)
        optional = key is not None and optional_engines(install.major, key, install.release) and \
            not _maps_stray(loads.get(key), record.path, _own_release(install, record.path)) and \
            not _ends_process(loads.get(key), record.path)
        effect = "; graph runs without it, with fewer engines" if optional else ""
        severity = WARNING if optional else ERROR
        if record.on_disk is None:
            yield Finding(Code.RECORD_MISSING_FILE, f"{name} lists it in RECORD but it is not on disk{effect}", subject,
                          repair.put_back(), severity=severity)
        elif record.size is not None and record.size != record.on_disk:
            yield Finding(Code.RECORD_MISMATCH, f"{record.on_disk} bytes on disk, {record.size} in {name}'s RECORD: "
                          f"not the file that was installed (replaced by another release's, or damaged){effect}",
                          subject, repair.put_back(), severity=severity)
        elif record.digest_differs:
            yield Finding(Code.RECORD_MISMATCH, f"its sha256 is not the one {name}'s RECORD lists: not the file that "
                          f"was installed{effect}", subject, repair.put_back(), severity=severity)


def aborts_without_driver(finding: Finding) -> bool:
    """A no-driver finding whose consequence is an abort (the 8.5 shim's stale dlerror), not only a status."""
    return finding.code is Code.NO_DRIVER and any(c.effect is Effect.ABORT for c in finding.consequences)


def _no_driver(major: int, *, aborts: bool) -> str:
    """The no-driver finding's words: expected on a machine without a GPU, unless this shim then aborts."""
    who = "libcudnn_engines_runtime_compiled cannot load" if major >= 9 else "cnn_infer's own dlopen of it fails"
    said = f"libcuda.so.1 (the NVIDIA driver) is not installed: {who} and no handle can be created"
    return said + (": this shim then aborts the process (see what you will see)" if aborts else
                   "; expected on a machine without an NVIDIA GPU")


def _aborts_without_driver(finding: Finding, major: int) -> Finding:
    if not aborts_without_driver(finding) or finding.severity is ERROR:
        return finding
    return replace(finding, severity=ERROR, message=_no_driver(major, aborts=True))


def _loads_as_released(finding: Finding, prediction: Prediction, install: Install) -> Finding:
    """A file RECORD does not list as it is that loads and serves as the install's own release (another build of
    it: cu12's graph in a cu13 wheel, whose engines bring their own cuBLASLt) is a warning: the program runs."""
    if finding.code is not Code.RECORD_MISMATCH or finding.severity is not ERROR or not finding.subject.library:
        return finding
    load = prediction.loads.get(finding.subject.library)
    if load is None or load.fails is not None or not load.asked or load.path is None or load.release is None or \
            load.release != install.release or posixpath.basename(load.path) != posixpath.basename(finding.path or "") \
            or _own_release(install, finding.path) != install.release:
        return finding
    return replace(finding, severity=WARNING, message=finding.message + f"; it loads and serves as cuDNN "
                   f"{install.release}'s (another build of the same release)")


def _complete(install: Install) -> bool:
    """Every library the install must have is in its folder and readable: a set `cudnnload run` can pin."""
    gen = generation(install.major)
    present = {c.library for c in install.files if c.problem is None and c.elf is not None}
    return "shim" in present and all(lib.key in present for lib in _expected(gen, install, False))


def optional_engines(major: int, key: str, release: Release | None = None) -> bool:
    """A library graph opens for extra engines and runs without (`catalog`: heuristic, engines_precompiled), as
    the graph of ``release`` does (9.0's needs both: `consequences.in_engine_chain`)."""
    gen = generation(major)
    return any(lib.key == key and lib.optional and not in_engine_chain(lib, release) for lib in gen.libraries)


def _key_of(path: str) -> str | None:
    from cudnnload.resolve.catalog import classify

    lib = classify(posixpath.basename(path))
    return lib.key if lib else None


def step_findings(step: Step, install: Install, repair: _Repairs | None = None,
                  loads: Mapping[str, Load] | None = None) -> Iterable[Finding]:
    """``mixed-release`` or ``sublibrary-elsewhere`` when a planned load leaves the install's folder;
    ``sublibrary-unloadable`` when the file it would get from there cannot be loaded. ``loads``: what the
    prediction says each first dlopen does (an optional engine library of another release that binds to graph
    loads, and the process maps two releases)."""
    if step.path is None:
        return
    repair = repair or _Repairs(install, None)
    opener = posixpath.basename(step.requested_by) if step.requested_by else "the shim"
    if step.inside_install:
        yield from _versioned_name(step, install, repair, opener, (loads or {}).get(step.library))
        return
    own = install.file(step.library)
    subject = Subject(SubjectKind.FILE, step.path, step.library, variable=step.variable, entry=step.entry)
    cure = _stray_fix(step, own, repair)
    via = f"{step.rule}, put in the process by LD_PRELOAD" if step.variable == "LD_PRELOAD" else step.rule
    # an optional engine library that does not load beside graph: graph goes on without it; one that stays mapped
    # (it binds to graph's symbols; graph then declines another release's) puts a second folder in the process
    optional = optional_engines(install.major, step.library, install.release) and \
        not _maps_stray((loads or {}).get(step.library), step.path, install.release)
    severity = WARNING if optional else ERROR
    if step.error is not None:
        yield Finding(Code.SUBLIBRARY_UNLOADABLE, f"{opener} would load {step.library} from {step.path} (via "
                      f"{via}), which cannot load: {step.error}" + ("; graph goes on without it, with fewer engines"
                                                                   if optional else ""), subject, cure,
                      severity=severity)
        return
    if install.release and step.release and step.release != install.release:
        yield Finding(Code.MIXED_RELEASE, f"{opener} would load {step.library} from {step.path} (cuDNN "
                      f"{step.release}, found via {via}), not this install's {install.release}"
                      + ("; it does not load beside graph (a symbol of graph's release missing), so graph goes on "
                         "without it, with fewer engines" if optional else ""), subject, cure, severity=severity)
    else:
        yield Finding(Code.SUBLIBRARY_ELSEWHERE, f"{opener} would load {step.library} from {step.path} (via "
                      f"{via}), outside this install", subject, cure)


def _ends_process(load: Load | None, path: str) -> bool:
    """Whether the process's load of ``path`` as that library kills it (SIGBUS) or hangs it (a FIFO)."""
    return load is not None and load.asked and load.path == path and load.fails in (KILLS, HANGS)


def _maps_stray(load: Load | None, path: str, release: Release | None) -> bool:
    """Whether the process maps ``path`` as that library's load, as a file of another release than ``release``
    (it binds to graph's symbols, and graph then declines it or not) or of none known."""
    return load is not None and load.asked and load.path == path and (load.fails is None or load.stays_mapped) \
        and (load.release is None or release is None or load.release != release)


def _own_release(install: Install, path: str | None) -> Release | None:
    """The release a file of the install says it is by its own version constant; None for one that carries none
    (the shim, cnn, heuristic and the engines: the model then gives it its neighbours' release, which says
    nothing of a file RECORD does not list as it is)."""
    own = next((c for c in install.files if c.path == path), None)
    return own.elf.release if own is not None and own.elf is not None else None


def _versioned_name(step: Step, install: Install, repair: _Repairs, opener: str, load: Load | None
                    ) -> Iterable[Finding]:
    """A name in the install's own folder that its opener tries before the library's own file (cuDNN 9's shim
    and graph try ``X.so.9.28.0`` and ``X.so.9.28`` before ``X.so.9``), leading to another release's file, or to
    another sub-library's file (its SONAME says which: ``soname-mismatch``): that is what loads. The name goes
    (`delete`: no wheel ships it), or the install is put back where RECORD lists it; a name the search found in
    another folder (a system package's ``X.so.9.14.0`` through the loader's cache) is that folder's own file, never
    deleted: what led the search there goes (`_stray_fix`). Another sub-library's file
    in an optional engine's place is an error all the same when it loads (``load``): the process maps a library
    the healthy install does not, and graph runs without the engines it asked for."""
    own, path = install.file(step.library), step.path
    if own is None or path is None or path == own.path:
        return
    listed = any(r.path == path for r in install.records)
    # a name in the install's own folder that no RECORD lists was put there by hand: it goes; one the search found in
    # another folder is that folder's own file (a system package's X.so.9.14.0): what led the search there goes
    goes = repair.put_back() if listed else fix(delete(path), note="no wheel ships that name") \
        if _inside(path, install.folder) else _stray_fix(step, own, repair)
    soname = step.soname
    expected = generation(install.major).library(step.library).soname
    if soname and soname != expected and (other := classify(soname)) is not None:
        # the name leads to another sub-library's file: glibc finds that object loaded already (the same file, or
        # its SONAME) or loads it, and the functions of step.library are not in it
        optional = optional_engines(install.major, step.library, install.release) and \
            (load is None or not load.asked or (load.fails is not None and not load.stays_mapped))
        yield Finding(Code.SONAME_MISMATCH, f"{opener} opens {posixpath.basename(path)}, a name it tries before "
                      f"{posixpath.basename(own.path)}, and gets {other.key} (SONAME {soname}), not {step.library}: "
                      f"{step.library}'s functions are not there" + ("; graph goes on without it, with fewer engines"
                                                                     if optional else ""),
                      Subject(SubjectKind.FILE, path, step.library),
                      goes, severity=WARNING if optional else ERROR)
        return
    if not install.release or not step.release or step.release == install.release:
        real, own_real = step.real_path or path, own.real_path or own.path
        if posixpath.dirname(real) != posixpath.dirname(own_real):
            # a release of the same number from another folder (another CUDA's build, another copy): the process
            # maps cuDNN from two places, and what that folder holds next decides this install's loads
            # the name itself may lie in the install's folder, a link by hand to the file elsewhere
            link = "through a link in this install's folder, " if _inside(path, install.folder) and real != path else ""
            yield Finding(Code.SUBLIBRARY_ELSEWHERE, f"{opener} opens {posixpath.basename(path)}, a name it tries "
                          f"before {posixpath.basename(own.path)}, and gets {link}{real}, outside this install",
                          Subject(SubjectKind.FILE, path, step.library),
                          goes)
        return
    yield Finding(Code.MIXED_RELEASE, f"{opener} opens {posixpath.basename(path)}, a name it tries before "
                  f"{posixpath.basename(own.path)}, and gets cuDNN {step.release}'s {step.library}, not this install's "
                  f"{install.release}", Subject(SubjectKind.FILE, path, step.library),
                  goes)


def _fallbacks(prediction: Prediction, install: Install, repair: _Repairs) -> Iterable[Finding]:
    """``sublibrary-unloadable`` for a file of the install whose load fails where a later name of its opener then
    gets another file (`Load.instead_of`): a warning where that file is of the install's release and loads (the
    program runs, on a file from elsewhere), an error where it is of another release or is another library's file
    (it stays mapped and its functions are not there; what its calls then do is said with it). The fix is the
    file's own where the file is what fails; where a library it needs is missing (a machine without the driver's
    libcuda.so.1: nothing of the install to mend), what leads the later name elsewhere goes (`_stray_fix`)."""
    for key, load in prediction.loads.items():
        if load.instead_of is None or load.path is None:
            continue
        step = next((s for s in install.plan if s.library == key), None)
        opener = posixpath.basename(step.requested_by) if step is not None and step.requested_by else "the shim"
        own = install.file(key)
        same = load.release is None or install.release is None or load.release == install.release
        fallback = step.fallback if step is not None else None
        rule = fallback.rule if fallback is not None else "the search"
        release = f"cuDNN {load.release}, " if load.release else ""
        wrong = f"; {load.error}" if load.fails is not None and load.stays_mapped else ""
        cure = _stray_fix(fallback, own, repair) if load.instead_cause not in (None, key) and fallback is not None \
            else repair.file(own) if own is not None else repair.put_back()
        yield Finding(Code.SUBLIBRARY_UNLOADABLE, f"{opener} cannot load {key} from {load.instead_of} "
                      f"({load.instead_error}); it goes on to its next name, {posixpath.basename(load.path)}, and gets "
                      f"{load.path} ({release}via {rule}), outside this install"
                      + ("" if same else f", not its {install.release}") + wrong,
                      Subject(SubjectKind.FILE, load.instead_of, key),
                      cure, severity=WARNING if same and not wrong else ERROR)


def _stray_fix(step: Step, own: Candidate | None, repair: _Repairs) -> Fix:
    """A sub-library taken from outside the install: a preloaded one (LD_PRELOAD) goes; one asked for by a file
    that is itself a problem goes with that file's fix; where the install has its own copy, the search-path
    entry that shadows it goes; where it has none, the install is made whole and the entry goes too (graph
    searches its RUNPATH after LD_LIBRARY_PATH: the entry would still shadow the files put back), or only
    the entry goes when the install's release does not use that library (ext under a 9.0 shim)."""
    pin = fixes.pin(repair.install.folder)
    if step.variable in ("LD_PRELOAD", PRELOAD_FILE) and step.entry is not None:
        # the preload file's line that holds it alone, where one does (`fixes.undo`)
        line = repair.preloads.get(step.path or "") if step.variable == PRELOAD_FILE else None
        return fix(line or fixes.removal(step.variable, step.entry),
                   alternatives=[fixes.pin(repair.install.folder, True)] if _complete(repair.install) else [])
    brought = repair.requester_fix(step.requested_by)
    if brought is not None:
        return brought
    if own is not None and own.problem is None and step.entry is not None and step.variable is not None:
        return fix(remove_entry(step.variable, step.entry), alternatives=[pin] if _complete(repair.install) else [])
    if step.rule == "already-loaded" and step.path in repair.preloads:  # what put it there before the program
        return fix(repair.preloads[step.path])
    if own is not None and own.problem is None and step.rule == "already-loaded":
        return fix(manual(f"load {own.path}'s cuDNN before the one already in the process (cudnnload.load() "
                          "first, or another import order)"))
    if step.variable == "LD_LIBRARY_PATH" and step.entry is not None:
        entry = remove_entry("LD_LIBRARY_PATH", step.entry)
        used = {lib.key for lib in _expected(generation(repair.install.major), repair.install, False)}
        if own is None and step.library not in used:
            return fix(entry)
        whole = repair.put_back()
        if repair.dist is None and repair.entry is not None:
            return whole  # the install itself leaves the path: what it took from elsewhere goes with it
        return fix(*whole.actions, entry, note=whole.note, alternatives=whole.alternatives)
    return repair.put_back()


def _bundled_fix(install: Install, ctx: Context) -> Fix:
    """The sub-libraries of a shim a wheel bundles alone, installed where it looks (`fixes.bundled_sublibraries`):
    by the interpreter of the site-packages its folder is in, for the CUDA the wheel's own libraries beside it were
    built for (`Install.bundler`), into the home folder of ``ctx``'s environment."""
    python, cuda = install.bundler or (None, None)
    return fixes.bundled_sublibraries(install, python=python, cuda=cuda, home=ctx.environ.get("HOME"),
                                      search_path=ctx.linker.ld_library_path)


def _renamed_shim(shim: Candidate | None, install: Install) -> Iterable[Finding]:
    """A shim under another major's name (``ln -s libcudnn.so.9 libcudnn.so.8``, the advice of many a thread for a
    program built for cuDNN 8): discovery made it an install of the major its SONAME says; what asks for the name
    gets that cuDNN, not the one it was built for."""
    if shim is None or shim.elf is None:
        return
    named = classify(posixpath.basename(shim.path))
    if named is None or named.major == install.major:
        return
    name, release = posixpath.basename(shim.path), install.release or install.major
    yield Finding(Code.SONAME_MISMATCH, f"{name} is cuDNN {release}'s shim (SONAME {shim.elf.soname}) under cuDNN "
                  f"{named.major}'s name: what asks for {name} gets cuDNN {install.major}; a program linked against "
                  f"cuDNN {named.major} does not start (\"version `{name}' not found\"), and one that opens it by "
                  f"name gets cuDNN {install.major}'s functions, not cuDNN {named.major}'s",
                  Subject(SubjectKind.FILE, shim.path, "shim"),
                  fix(delete(shim.path), note=f"then cuDNN {named.major} where the program looks, for a program built "
                      f"for it, or a build of the program for cuDNN {install.major}"), severity=ERROR)


def _symlinked_shim(shim: Candidate, gen: Generation, install: Install,
                    env: linker.LinkerEnv) -> Iterable[Finding]:
    names = {c.library for c in install.files}
    if all(lib.key in names for lib in gen.sublibraries if lib.required):
        return
    real = posixpath.dirname(shim.real_path or "")
    found = {step.library: step.path for step in install.plan if step.path}
    if all(found.get(lib.key) and posixpath.dirname(posixpath.realpath(found[lib.key])) == posixpath.realpath(real)
           for lib in gen.sublibraries if lib.required):
        return  # a search path leads each of them to the folder the shim's file is in: one release, as it should
    value = ":".join([real, *env.ld_library_path]) if env.ld_library_path else real
    yield Finding(Code.ORIGIN_THROUGH_SYMLINK, f"the shim is a symbolic link to {shim.real_path}; $ORIGIN is the "
                  f"folder of the link ({install.folder}), where the sub-libraries are not",
                  Subject(SubjectKind.FILE, shim.path, "shim"),
                  fix(set_variable("LD_LIBRARY_PATH", value),
                      note=f"or link the whole folder {real} instead of the shim alone"))


def _dependency_findings(step: Step, install: Install, repair: _Repairs, host: Host) -> Iterable[Finding]:
    """A library cuDNN needs that would not be found, or whose copy found first lacks a version its requester
    needs. What only a problem file asks for (a stray graph's cuBLASLt, another release's ops_infer's cuBLAS 11)
    goes with that file's fix; a pip install's dependency is installed into its site-packages; a folder pip does
    not own finds it only on its own search path, said in words."""
    if step.path is not None:
        yield from _version_findings(step, install, repair, host)
        return
    folders = list(dict.fromkeys(line.split(": ", 1)[1].rsplit("/", 1)[0] for line in step.trail
                                 if "(dropped" not in line))
    where = f"searched {', '.join(folders)}" if folders else "not found by the linker"
    subject = Subject(SubjectKind.FILE, step.requested_by, step.library)
    if step.library == "libcuda.so.1":
        yield Finding(Code.NO_DRIVER, _no_driver(install.major, aborts=False), subject,
                      fix(fixes.dependency_manual(step.library)), severity=INFO)
        return
    if step.library in _UNVERSIONED:  # a development link's name, opened as a library loads (`OPENS_AT_LOAD`)
        driver = next((d.path for d in install.dependencies if d.library == "libcuda.so.1"), "")
        if step.library == "libcuda.so" and not driver:
            return  # no driver at all: the no-driver finding says it (and carries what the user will see)
        by = posixpath.basename(step.requested_by or "") or "a library"
        yield Finding(Code.MISSING_DEPENDENCY, f"{by} dlopens {step.library} as it loads "
                      f"({_UNVERSIONED[step.library]}), and it would not be found ({where})", subject,
                      fixes.unversioned_link(step.library, posixpath.dirname(step.requested_by or ""),
                                             driver if step.library == "libcuda.so" else step.elsewhere,
                                             install.cuda_major, install.site, install.pip_env, install.along),
                      severity=ERROR if _aborts_on(step.library, install) else WARNING)
        return
    cure = repair.requester_fix(step.requested_by) or _install_dependency(step.library, install, repair,
                                                                          step.elsewhere, folders)
    if step.library.startswith(("libcublasLt", "libnvrtc")):
        severity = ERROR if step.library.startswith("libcublasLt") else WARNING
        yield Finding(Code.MISSING_DEPENDENCY, f"cuDNN dlopens {step.library} at run time and it would not be found "
                      f"({where})", subject, cure, severity=severity)
    else:
        yield Finding(Code.MISSING_DEPENDENCY, f"needs {step.library}, which would not be found ({where})", subject,
                      cure)


def _aborts_on(name: str, install: Install) -> bool:
    """Whether the cuDNN 8 shim aborts on the error a failed dlopen of ``name`` leaves: it reads a stale dlerror
    (`consequences.reads_stale_dlerror`) and ``name`` is the last a sub-library's load opens (`Install.opened_at_load`),
    whether or not the prediction gets that far: an abort before it (another name missing) hides it until that one
    is mended (the at-load differential's 2-16: libnvrtc.so linked, 8.6's cnn_infer then stopped on libcuda.so)."""
    shim = install.file("shim")
    exports = set(shim.elf.cudnn_functions) if shim is not None and shim.elf is not None else None
    return reads_stale_dlerror(install.release, exports) and any(
        names and names[-1] == name for _, names in install.opened_at_load)


# The unversioned names a library opens as it loads (`catalog.OPENS_AT_LOAD`), which only a development link
# answers: no wheel ships one
_UNVERSIONED = {"libcuda.so": "the driver's unversioned name, which only its development link answers",
                "libnvrtc.so": "NVRTC's unversioned name, which only a CUDA toolkit's development link answers: "
                               "nvidia-cuda-nvrtc-cuXX ships libnvrtc.so.XX alone"}


def _version_findings(step: Step, install: Install, repair: _Repairs, host: Host) -> Iterable[Finding]:
    """``dependency-version`` when the file found for ``step`` lacks a version node its requester needs (a
    cuDNN file's needs of the host's libstdc++ are ``libstdcxx-too-old`` already)."""
    own = {cand.path for cand in install.files}
    said = step.requested_by in own and step.path == host.libstdcxx
    lacks = [version for version in step.lacks if not (said and version.startswith(("GLIBCXX_", "CXXABI_")))]
    if not lacks:
        return
    shadow = fix(remove_entry("LD_LIBRARY_PATH", step.entry)) \
        if step.variable == "LD_LIBRARY_PATH" and step.entry is not None else None
    cure = shadow or repair.requester_fix(step.path) or _install_dependency(step.library, install, repair)
    yield Finding(Code.DEPENDENCY_VERSION, f"{step.requested_by} needs version {', '.join(lacks)} of "
                  f"{step.library}, and {step.path}, the copy found first ({step.rule}), lacks it: the load fails "
                  f"with \"version `{lacks[0]}' not found (required by {step.requested_by})\"",
                  Subject(SubjectKind.FILE, step.path, step.library, variable=step.variable, entry=step.entry), cure)


def _install_dependency(library: str, install: Install, repair: _Repairs, elsewhere: str | None = None,
                        searched: Sequence[str] = ()) -> Fix:
    """A dependency put where the install finds it: its pip distribution into the install's site-packages; for a
    folder pip does not own, the wheel folder of this environment that holds it (``elsewhere``) put on
    LD_LIBRARY_PATH; else its distribution installed into the site of the shell's active Python environment and
    the folder pip puts it in added to LD_LIBRARY_PATH; else what to install, in words.

    Where the folders the requester's search went through (``searched``) do not hold the one pip puts it in, that
    folder goes on LD_LIBRARY_PATH too (and the install is left out where the file is there already): cuDNN 9.0's
    and 9.1's wheels name ``$ORIGIN/../../nvrtc/lib`` in their RUNPATH, where nvidia-cuda-nvrtc-cuNN puts its
    library in ``nvidia/cuda_nvrtc/lib``: installing it alone left the same finding, with the same fix."""
    requirement = dependency_requirement(library)
    if requirement is not None and install.site is not None:
        folder = dependency_folder(requirement, install.site)
        put = fixes.dependency_into(requirement, install.site, install.pip_env, python=repair.python,
                                    along=install.along)
        reached = {posixpath.normpath(entry) for entry in searched}
        if not searched or posixpath.normpath(folder) in reached:
            return fix(put)
        there = elsewhere is not None and posixpath.dirname(elsewhere) == folder
        return fix(*(() if there else (put,)), set_variable("LD_LIBRARY_PATH", ":".join([*repair.search_path, folder])),
                   note=f"pip puts {library} in {folder}, which this cuDNN's search does not reach (its RUNPATH "
                        "names another folder): LD_LIBRARY_PATH leads there")
    if elsewhere is not None:
        folder = posixpath.dirname(elsewhere)
        return fix(set_variable("LD_LIBRARY_PATH", ":".join([*repair.search_path, folder])),
                   note=f"{elsewhere} is installed, in a folder this cuDNN's search does not reach")
    if requirement is not None and repair.shell is not None:
        site, pip_env = repair.shell
        folder = dependency_folder(requirement, site)
        return fix(fixes.dependency_into(requirement, site, pip_env),
                   set_variable("LD_LIBRARY_PATH", ":".join([*repair.search_path, folder])),
                   note=f"pip puts {library} in {folder}, a folder this cuDNN's search reaches only through "
                        "LD_LIBRARY_PATH", alternatives=[fixes.dependency_manual(library, requirement)])
    return fix(fixes.dependency_manual(library, requirement))


def _real_folder(install: Install) -> str:
    """The install's folder as its files' real paths name it."""
    shim = install.file("shim")
    if shim is not None and shim.real_path and posixpath.basename(shim.real_path) == posixpath.basename(shim.path):
        return posixpath.dirname(posixpath.join(install.folder, posixpath.basename(shim.path)))
    return install.folder


def _with_consequences(findings: Sequence[Finding], prediction: Prediction, told: set[str]) -> tuple[Finding, ...]:
    """The findings, each with what the user will see because of it (info findings get theirs too: the
    no-driver one says what a machine without a GPU shows); each cause's consequences go with the first
    finding about it (``told``: the causes said already, updated)."""
    out = []
    for finding in findings:
        library = finding.subject.library
        causes = [cause for cause in ((library, f"{library}-release") if library else ())
                  if cause in prediction.consequences and cause not in told]
        if finding.code is Code.ORIGIN_THROUGH_SYMLINK:
            causes = [cause for cause in ("graph", "ops_infer") if cause in prediction.consequences
                      and cause not in told]
        if finding.code is Code.NO_DRIVER:  # the driver's other name, opened as a library loads, is its too
            causes += [cause for cause in ("libcuda.so",) if cause in prediction.consequences and cause not in told]
        told.update(causes)
        found = tuple(c for cause in causes for c in prediction.consequences[cause])
        # a warning of what then stops the process (an abort) is an error
        severity = ERROR if finding.severity is WARNING and any(c.effect is Effect.ABORT for c in found) else \
            finding.severity
        out.append(replace(finding, consequences=found, severity=severity) if found else finding)
    return tuple(out)


def _unexplained(prediction: Prediction, findings: Sequence[Finding], install: Install,
                 repair: _Repairs) -> tuple[Finding, ...]:
    """A finding for each cause of failure no other finding carries, so that none goes unsaid."""
    said = {c.library for f in findings for c in f.consequences}
    first = prediction.expectations[0] if prediction.expectations else None
    if first is not None and first.outcome in (Effect.ABORT, Effect.SIGBUS, Effect.NO_START):
        # the first call dies: nothing else is reached, and where no error names its cause (the loader refuses a
        # file whose structures the ELF reader took), that death is the finding
        cause = first.cause or "shim"
        file = install.file(cause)
        # only a death in a file of this install's own (a preload of another folder that stops every program is
        # the preload's finding, said where the process's environment is judged)
        if first.cause in said or any(f.severity is ERROR for f in findings) or file is None \
                or file.path not in (first.message or ""):
            return ()
        return (Finding(Code.DAMAGED_ELF, f"{cause} would not load: {first.message or first.outcome}",
                        Subject(SubjectKind.FILE, file.path, cause), repair.put_back(),
                        prediction.consequences.get(cause, ())),)
    extra = []
    for cause, consequences in prediction.consequences.items():
        load = prediction.loads.get(cause)
        if cause in said or load is None:
            continue
        bound = next((b for b in prediction.loads.values() if b.cause == cause and b.bound_to), None)
        if bound is not None and bound.bound_to is not None:  # a file already in the process answered its soname
            undo = repair.preloads.get(bound.bound_to)
            effect = f"and that file lacks what it binds to ({bound.error})" if bound.fails is not None else \
                f"of another release ({bound.error}): its version check says so"
            extra.append(Finding(Code.MIXED_RELEASE, f"{bound.key} would "
                                 + ("not load" if bound.fails is not None else "load bound to another release")
                                 + f": it NEEDs {cause}, which {bound.bound_to}, already in the process"
                                 + (f" ({undo})" if undo else "") + f", answers, {effect}",
                                 Subject(SubjectKind.FILE, bound.bound_to, cause),
                                 fix(undo) if undo else NO_FIX, consequences))
            continue
        extra.append(Finding(Code.SUBLIBRARY_UNLOADABLE, f"{cause} would not load: {load.error}",
                             Subject(SubjectKind.FILE, load.path or install.folder, cause), repair.put_back(),
                             consequences))
    return tuple(extra)
