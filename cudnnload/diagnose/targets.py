"""What ``cudnnload doctor TARGET`` is pointed at, and the cuDNN install that target would load.

TARGET is any of: a cuDNN library file of any generation (the install it belongs to, as that file
would load it); a folder; a consumer, that is a shared object or a program that is not cuDNN
(``libtorch_cuda.so``, a C++ program: its cuDNN found by its own DT_NEEDED entries and RPATH or
RUNPATH, as glibc would); a bare soname (``libcudnn.so.9``: what ``dlopen`` of that name from this
environment gets); or, with ``--python PATH``, another interpreter or venv. Nothing is loaded here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.children import owner_of_python
from cudnnload.codes import ActionKind, Code, Effect, Severity, SubjectKind
from cudnnload.diagnose.inventory import find, judged_install_of
from cudnnload.diagnose.scoped import run_without
from cudnnload.diagnose.which import (
    beside_its_libraries,
    consumer_generations,
    holder,
    not_found_fix,
    shim_for,
    wheel_put_back,
)
from cudnnload.errors import ElfError, UsageError
from cudnnload.files import ELF_MAGIC, path_problem
from cudnnload.judge.choose import choose_install
from cudnnload.judge.consequences import shim_cannot_load, shim_ends
from cudnnload.judge.fixes import readable_again
from cudnnload.judge.installs import whole
from cudnnload.judge.judged import Judged, JudgedInventory
from cudnnload.judge.policy import Mapped, search_path_findings, setuid_findings, untrusted_findings
from cudnnload.resolve import linker
from cudnnload.resolve.access import Access, Unreachable
from cudnnload.resolve.catalog import GENERATIONS, Generation
from cudnnload.resolve.catalog import classify_bundled as classify
from cudnnload.resolve.consumers import site_of
from cudnnload.resolve.discovery import (
    Context,
    context,
    lacking,
    python_requester,
    search_entry,
    wheel_site,
)
from cudnnload.resolve.elf import ElfInfo
from cudnnload.resolve.elfcache import open_cache
from cudnnload.resolve.mapped import is_cuda_family
from cudnnload.resolve.process import preload_entries
from cudnnload.resolve.pythons import (
    interpreter_of_site,
    not_an_interpreter,
    python_on_path,
    system_interpreter_of,
    tool_environment,
    venv_sites,
)
from cudnnload.resolve.sources import Distribution, cudnn_distributions
from cudnnload.resolve.startup import Source, Startup, StartupFailed, Step, observe, this_python
from cudnnload.verdicts import Consequence, Finding, Fix, Subject, delete, fix, manual, remove_entry, remove_line

_SONAME = re.compile(r"^lib[\w.+-]*\.so(\.\d+)*$")


@dataclass(frozen=True)
class Target:
    """What was diagnosed, and how its cuDNN was found."""

    given: str | None  # as typed; None: this Python's environment
    kind: str  # "environment", "library", "folder", "program", "shared-object", "soname" or "python"
    path: str | None  # the file, folder or interpreter, absolute
    description: str  # one line for people
    shim: str | None = None  # the shim the target loads, as opened, when that is how its cuDNN was found
    how: str | None = None  # the rule that found it: "rpath (from ...)", "ld-library-path", "ld-cache" ...
    python: str | None = None  # the interpreter whose environment it is (--python; the one whose site-packages
    # holds a shared-object target), else None: this one
    site_paths: tuple[str, ...] | None = None  # where its pip distributions and frameworks are


@dataclass(frozen=True)
class Resolved:
    """A target, the installs it concerns, the one it would load, and what was found on the way."""

    target: Target
    ctx: Context
    inventory: JudgedInventory
    install: Judged | None
    rejected: tuple[str, ...]  # why load() would pass over the others (the environment and folders)
    findings: tuple[Finding, ...] = field(default=())
    started: Startup | None = None  # the interpreter's start-up, observed (environment and --python targets)


def resolve_target(given: str | None, *, python: str | None = None, environ: Mapping[str, str] | None = None,
                   site_paths: Sequence[str] | None = None, verify: bool = False,
                   unstarted: frozenset[tuple[str, str]] = frozenset(), program: Startup | None = None,
                   observed: Callable[[], Startup | None] | None = None, gone: frozenset[str] = frozenset(),
                   startup_timeout: float = 20.0, asked: bool = False) -> Resolved:
    """Read TARGET (or ``--python``); UsageError, naming it and the reason, when it cannot be one. ``verify``:
    check each RECORD-listed file's sha256 too (remembered under the file's size, mtime and inode).
    ``unstarted``: start-up lines (``.pth`` file, line) taken as gone: what they map is not in the process.
    ``program``: the start-up of the Python program that opens a library TARGET (`doctor -- python ...`): what
    it maps is in the process first. ``observed``: gives this interpreter's start-up, observed already (plain
    doctor starts that while its modules load). ``gone``: files taken away in the world judged (a distribution
    uninstalled: `remedy.applied`). ``startup_timeout``: the longest ``--python``'s start-up may take to be
    observed. ``asked``: ``python`` is the user's ``--python``, checked to be an interpreter before it runs (the
    shell's python3 or a program's own interpreter, a pyenv shim among them, runs as the shell runs it)."""
    env = dict(os.environ if environ is None else environ)
    if python is not None:
        if given is not None:
            raise UsageError("give a TARGET or --python, not both", fix="cudnnload doctor --python PATH")
        return _python(python, env, verify, unstarted, gone, startup_timeout, asked=asked)
    if given is None and site_paths is None and (tool := tool_environment(env)) is not None:
        return _for_the_user(tool, env, verify)
    if given is None:
        # what `python -c ...` in this environment would have: its own sys.path (not cudnnload's, whose first
        # entry is its console script's folder) and what its start-up files map (a .pth that loads a cuDNN)
        started = (observed() if observed is not None else this_python(env)) if site_paths is None else None
        started = started.without(unstarted) if started is not None else None
        site_paths = list(started.sys_path) if started is not None else site_paths
        ctx = context(env, verify=verify, gone=gone, unstarted=unstarted,
                      started=started_cuda(started, unstarted) if started is not None else None)
        inventory = find(environ=env, site_paths=site_paths, ctx=ctx)
        install, rejected = choose_install(inventory.installs)
        target = Target(None, "environment", None, "this Python and its environment", site_paths=(
            tuple(site_paths) if site_paths is not None else None))
        return Resolved(target, ctx, inventory, install, rejected, started=started)
    if "/" not in given and _SONAME.match(given):  # a name, never a file of the current folder (issue 29)
        return _soname(given, env, verify, gone, unstarted)
    path = os.path.abspath(given)
    problem = path_problem(path)
    if problem is not None and problem[0] == "missing" and classify(os.path.basename(path)) is not None \
            and (os.path.isdir(os.path.dirname(path)) or _wheel_gone(path) is not None):
        return _missing_library(given, path, env, verify, gone, unstarted)
    if problem is not None and problem[0] == "permission" and classify(os.path.basename(path)) is not None:
        return _unreadable_library(given, path, env, verify, gone, unstarted)
    if problem is not None:
        raise UsageError(problem[1], path=given, fix="give a cuDNN library, a folder, a program or a shared "
                         "object that uses cuDNN, or a soname such as libcudnn.so.9")
    if os.path.isdir(path):
        ctx = context(env, verify=verify, gone=gone, unstarted=unstarted)
        inventory = find([path], environ=env, ctx=ctx)
        install, rejected = choose_install(inventory.installs)
        install = install or next(iter(inventory.installs), None)
        return Resolved(Target(given, "folder", path, f"the folder {path}"), ctx, inventory, install, rejected)
    lib = classify(os.path.basename(path))
    if lib is not None:
        ctx = context(env, verify=verify, gone=gone, unstarted=unstarted,
                      started=started_cuda(program, unstarted) if program is not None else None)
        # a shim the process has mapped already under another name (LD_PRELOAD's, a hard link to the same file):
        # dlopen of this path hands that object out, and its $ORIGIN decides
        opened = linker.resolve(path, None, ctx.linker) if lib.key == "shim" and ctx.preloads else None
        acting = opened.path if opened is not None and opened.rule == "already-loaded" and opened.path else None
        inventory = find([acting or path], environ=env, ctx=ctx)
        install = next(iter(inventory.installs), None)
        what = "shim" if lib.key == "shim" else f"{lib.key} sub-library"
        said = f"the cuDNN {lib.major} {what} {path}" + (f", the same file as {acting}, which the process has "
                                                          "already" if acting else "")
        return Resolved(Target(given, "library", path, said, acting, "already-loaded" if acting else None),
                        ctx, inventory, install, ())
    return _consumer(given, path, env, verify, gone, unstarted, startup_timeout)


def started_cuda(started: Startup, unstarted: frozenset[tuple[str, str]] = frozenset()) -> dict[str, Source]:
    """The CUDA-family files (cuDNN, cuBLAS, NVRTC, the driver) Python code mapped during the start-up, and the
    start-up file that did: in the process before the program's first line; not those of the start-up lines
    ``unstarted`` ((file, line text) taken as gone)."""
    return {m.path: m.source for m in started.mapped if m.source.kind != "loader" and is_cuda_family(m.path)
            and (m.source.file or "", m.source.text or "") not in unstarted}


def _for_the_user(tool: str, env: Mapping[str, str], verify: bool) -> Resolved:
    """Plain ``doctor`` run from cudnnload's own environment (`resolve.pythons`): the user's ``python3`` on PATH
    judged instead, and said; UsageError when there is none."""
    user = python_on_path(env, outside=tool)
    if user is None:
        raise UsageError(f"cudnnload runs from an environment of its own ({tool}) and no python3 is on PATH to "
                         "judge instead", fix="cudnnload doctor --python /path/to/python-or-venv")
    resolved = _python(user, env, verify)
    said = Finding(Code.TOOL_ENVIRONMENT, f"cudnnload runs from an environment of its own ({tool}), which no "
                   f"program of yours uses: judged the python3 on PATH, {user}, instead",
                   Subject(SubjectKind.TARGET, tool), fix(note="`cudnnload doctor --python PATH` judges another"))
    return replace(resolved, findings=(*resolved.findings, said))


def _missing_library(given: str, path: str, env: Mapping[str, str], verify: bool = False,
                     gone: frozenset[str] = frozenset(), unstarted: frozenset[tuple[str, str]] = frozenset()
                     ) -> Resolved:
    """A cuDNN library path that is not there, in a folder that is (a program opens it by path: ``ctypes.CDLL``,
    the JAX plugin, a config file): what dlopen of it does, and the fix `doctor -- COMMAND` gives for the same
    path (the distribution whose RECORD lists it put back; else cuDNN installed)."""
    ctx = context(env, verify=verify, gone=gone, unstarted=unstarted)
    inventory, cure = _missing_path(path, ctx)
    lib = classify(os.path.basename(path))
    gen = GENERATIONS[lib.major if lib else 9]
    error = f"{path}: cannot open shared object file: No such file or directory"
    what = "shim" if lib is None or lib.key == "shim" else f"{lib.key} sub-library"
    finding = Finding(Code.NOT_FOUND, f"dlopen(\"{path}\") would fail: no such file",
                      Subject(SubjectKind.FILE, path, lib.key if lib else "shim"), cure,
                      (shim_cannot_load(gen, error),) if what == "shim" else ())
    target = Target(given, "library", path, f"the cuDNN {gen.major} {what} {path} (not there)")
    return Resolved(target, ctx, inventory, None, (), (finding,))  # nothing loads: no install is the target's


def _missing_path(path: str, ctx: Context) -> tuple[JudgedInventory, Fix]:
    """What is in the folder of a cuDNN path that is not there, and the fix that puts it back: the distribution
    whose RECORD lists it; the wheel gone with its folder installed again; the finding about that path in the
    install its folder holds; else the shim's name found or installed."""
    folder = os.path.dirname(path)
    access = Access()
    if (stop := access.unreachable(path)) is not None and stop.folder:  # not gone: hidden from this user
        return JudgedInventory(ctx.host, ()), unreachable_fix(path, stop, access.user)
    inventory = find([folder], ctx=ctx) if os.path.isdir(folder) else JudgedInventory(ctx.host, ())  # folder gone too
    lib = classify(os.path.basename(path))
    gen = GENERATIONS[lib.major if lib else 9]
    said = next((f.fix for i in inventory.installs for f in i.findings
                 if f.subject.path == path and f.fix and f.fix.actions), None)  # the RECORD that lists it
    return inventory, said or _wheel_gone(path) or _installed_path_fix(path, ctx) or \
        _missing_fix(gen.shim.soname, gen, ctx)


def _wheel_gone(path: str) -> Fix | None:
    """A pip wheel's cuDNN file that is gone with its folder (``SITE/nvidia/cudnn/lib/X``, the distribution
    uninstalled, its site-packages still there): the wheel put back into that site (`which.wheel_put_back`); None
    for another path."""
    folder = os.path.dirname(path)
    site = wheel_site(folder)
    lib = classify(os.path.basename(path))
    if site is None or lib is None:
        return None
    return wheel_put_back(site, lib.major, f"{folder} is gone: the wheel that holds it was uninstalled")


def unreachable_fix(path: str, stop: Unreachable, user: int) -> Fix:
    """The fix for the cuDNN library ``path`` this user cannot reach (``stop``: what stops it): the mode change,
    and the wheel that holds it put back where the folder or the file is its (`fixes.readable_again`)."""
    return readable_again(stop, user, _wheel_holding(path), _generation(path))


def _generation(path: str) -> int | None:
    """The cuDNN generation a library's name is of (``libcudnn.so.9``: 9)."""
    lib = classify(os.path.basename(path))
    return lib.major if lib is not None else None


def _wheel_holding(path: str) -> Distribution | None:
    """The pip distribution whose wheel folder holds (or held) the cuDNN file ``path``, from its site's RECORDs."""
    site = wheel_site(os.path.dirname(path))
    return holder(cudnn_distributions((site,)), path) if site else None


def _unreadable_library(given: str, path: str, env: Mapping[str, str], verify: bool = False,
                        gone: frozenset[str] = frozenset(), unstarted: frozenset[tuple[str, str]] = frozenset()
                        ) -> Resolved:
    """A cuDNN library this user cannot reach (a folder on its path not searchable, or the file not readable): what
    a program of this user gets (dlopen fails: "Permission denied"), and the mode change that makes it readable
    when the user owns what stops it, else who can."""
    ctx = context(env, verify=verify, gone=gone, unstarted=unstarted)
    access = Access()
    stop = access.unreachable(path)
    blocker = stop.path if stop is not None else path
    lib = classify(os.path.basename(path))
    gen = GENERATIONS[lib.major if lib else 9]
    cure = unreachable_fix(path, stop, access.user) if stop is not None else \
        fix(manual(f"make {path} readable, or install cuDNN where you can read it"))
    error = f"{path}: cannot open shared object file: Permission denied"
    finding = Finding(Code.UNREADABLE, f"dlopen(\"{path}\") would fail: {blocker} cannot be "
                      + ("searched" if stop is not None and stop.folder else "read") + " by this user",
                      Subject(SubjectKind.FILE, blocker, lib.key if lib else "shim"), cure,
                      (shim_cannot_load(gen, error),))
    target = Target(given, "library", path, f"the cuDNN {gen.major} library {path} (not readable here)")
    return Resolved(target, ctx, JudgedInventory(ctx.host, ()), None, (), (finding,))


def _consumer(given: str, path: str, env: Mapping[str, str], verify: bool = False,
              gone: frozenset[str] = frozenset(), unstarted: frozenset[tuple[str, str]] = frozenset(),
              startup_timeout: float = 20.0) -> Resolved:
    """A program or shared object that uses cuDNN: its cuDNN as its own DT_NEEDED or dlopen would get it. A shared
    object of a Python environment (``.../site-packages/torch/lib/libtorch_cuda.so``) is opened in a process of that
    environment's interpreter: its start-up, observed as ``--python``'s is (`_owning_python`), gives the sys.path
    its framework's loader searches and what start-up code mapped before it."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise UsageError(exc.strerror or str(exc), path=given) from None
    if head != ELF_MAGIC:
        raise UsageError("not an ELF file: not a cuDNN library, a program or a shared object", path=given)
    cache = open_cache(env)
    try:
        info = cache.inspect(os.path.realpath(path))
    except (OSError, ElfError) as exc:
        raise UsageError(getattr(exc, "reason", str(exc)), path=given) from None
    program = bool(info.interpreter)
    consumer = linker.Requester.from_elf(path, info)
    if program:  # the main program: its $ORIGIN is its resolved folder, its RPATH serves every load
        consumer = replace(consumer, origin=os.path.dirname(os.path.realpath(path)))
    started = None if program else _owning_python(path, env, unstarted, startup_timeout)
    ctx = context(env, executable=consumer if program else None, cache=cache, verify=verify, gone=gone,
                  unstarted=unstarted, started=started_cuda(started, unstarted) if started is not None else None)
    python, sites = (started.executable, tuple(started.sys_path)) if started is not None else (None, None)
    needed = [name for name in info.needed if classify(name) is not None]
    kind = "program" if program else "shared-object"
    asks = f"NEEDs {', '.join(needed)}" if needed else "NEEDs no cuDNN (it may dlopen one by name)"
    access = Access()
    searched = search_path_findings(ctx.linker, consumer, access=access)  # its own lists, and the environment's
    chain = linker.Chain((consumer,))
    for major in consumer_generations(path, ctx):
        gen = GENERATIONS[major]
        # its own search only: this Python's pip wheels, which PyTorch and JAX open by path (`resolve.routes`),
        # are nothing to a program or library that asks by name (a C++ program, CTranslate2, ONNX Runtime)
        step = shim_for(gen, path, consumer, ctx, site_paths=())
        if step.path is None:
            continue
        install = judged_install_of(step.path, ctx, f"as {os.path.basename(path)} loads it ({step.rule})")
        wrong = None
        if install is not None:  # the model run once more without the entry that gave the shim, if one did
            without = _without_entry(gen.shim.soname, chain, ctx, step.path, step.rule)
            install = _with_entry_fix(install, gen.shim.soname, without)
            wrong = _shadowed_release(path, gen.shim.soname, install, without, ctx.linker.ld_library_path)
        target = Target(given, kind, path, f"the {kind.replace('-', ' ')} {path}, which {asks}", step.path,
                        step.rule + (f" from {step.requested_by}" if step.rule in ("rpath", "runpath") else ""),
                        python=python, site_paths=sites)
        inventory = JudgedInventory(ctx.host, (install,) if install else (), findings=searched)
        secure = setuid_findings(consumer, ctx.linker.defaults, step.path, access=access) if program else ()
        unmet = versions_unmet(path, info, gen, step.path, install, ctx, program)
        return Resolved(target, ctx, inventory, install, (), (*unmet, *secure, *((wrong,) if wrong else ())),
                        started=started)
    soname = needed[0] if needed else "libcudnn.so.9"
    asked = classify(soname)
    gen = GENERATIONS[asked.major if asked else 9]
    error = f"{soname}: cannot open shared object file: No such file or directory"
    consequence = shim_cannot_load(gen, error)
    finding = Finding(Code.NOT_FOUND, f"{os.path.basename(path)} {'NEEDs' if needed else 'asks for'} {soname}, which "
                      "its search (RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, the default folders) does not find",
                      Subject(SubjectKind.CONSUMER, path, "shim"),
                      _missing_fix(soname, gen, ctx, path if program else None), (consequence,))
    target = Target(given, kind, path, f"the {kind.replace('-', ' ')} {path}, which {asks}", python=python,
                    site_paths=sites)
    secure = setuid_findings(consumer, ctx.linker.defaults, access=access) if program else ()
    return Resolved(target, ctx, JudgedInventory(ctx.host, (), findings=searched), None, (), (finding, *secure),
                    started=started)


def _owning_python(path: str, env: Mapping[str, str], unstarted: frozenset[tuple[str, str]],
                   timeout: float) -> Startup | None:
    """The start-up of the interpreter whose site-packages holds the shared object ``path`` (a venv's
    ``bin/python``, a prefix's ``bin/pythonX.Y``: `pythons.interpreter_of_site`), observed in ``env`` as
    ``--python``'s is, without the start-up lines ``unstarted``; None for a file of no such folder (a ``--target``
    one, a user site, a library outside Python) or an interpreter whose start-up cannot be observed."""
    site = site_of(path)
    interpreter = (interpreter_of_site(site)[0] or system_interpreter_of(site)) if site is not None else None
    if interpreter is None or not os.path.isabs(interpreter):
        return None
    try:
        started = observe(interpreter, env, cwd="/", timeout=timeout, user=_owner(interpreter, env))
    except (StartupFailed, OSError):
        return None
    return started.without(unstarted)


def versions_unmet(path: str, info: ElfInfo, gen: Generation, shim: str, install: Judged | None, ctx: Context,
                   program: bool) -> tuple[Finding, ...]:
    """The versions ``path`` needs of its cuDNN shim (DT_VERNEED: ``cudnnCreate@libcudnn.so.8``) that the file its
    search gives (``shim``) does not define: ld.so (dl-version.c) stops the program at start, a dlopen of the
    library fails. A cuDNN of another major under the shim's name (``ln -s libcudnn.so.9 libcudnn.so.8``) is
    that file, and is what is wrong; the program needs its own major where it looks."""
    lacks = lacking(info, gen.shim.soname, shim, ctx)
    if not lacks:
        return ()
    shown = os.path.basename(path)
    said = f"{path}: {shim}: version `{lacks[0]}' not found (required by {path})"
    other = install is not None and install.major != gen.major
    held = f"cuDNN {install.release or install.major}'s shim" if install is not None and other else "a file"
    consequence = Consequence(calls=f"{shown}'s start" if program else f"dlopen of {shown}", effect=Effect.NO_START,
                              library="shim", message=said if program else said.partition(": ")[2])
    cure = _missing_fix(gen.shim.soname, gen, ctx, path if program else None)
    found = ctx.elf(shim)
    bound = f"was linked against cuDNN {gen.major} (its calls are bound to the version {', '.join(lacks)})" \
        if lacks == (gen.shim.soname,) else f"needs version {', '.join(lacks)} of {gen.shim.soname}"
    return (Finding(Code.CONSUMER_NEEDS_OTHER_MAJOR if other else Code.DEPENDENCY_VERSION,
                    f"{shown} {bound}, and what its search finds as {gen.shim.soname}, {shim}, is {held} (SONAME "
                    f"{found.soname if found else 'none'}), which does not define that version: {shown} "
                    f"{'does not start' if program else 'does not load'}", Subject(SubjectKind.CONSUMER, path, "shim"),
                    fix(delete(shim), *cure.actions, note=cure.note, alternatives=cure.alternatives) if other
                    else cure, (consequence,)),)


def _soname(name: str, env: Mapping[str, str], verify: bool = False, gone: frozenset[str] = frozenset(),
            unstarted: frozenset[tuple[str, str]] = frozenset()) -> Resolved:
    """What dlopen(``name``) from this Python, in this environment, gets."""
    ctx = context(env, verify=verify, gone=gone, unstarted=unstarted)
    access = Access()
    searched = search_path_findings(ctx.linker, access=access)
    res = linker.resolve(name, None, ctx.linker)
    lib = classify(name)
    gen = GENERATIONS[lib.major if lib else 9]
    if res.path is None or res.error is not None:
        error = res.error or f"{name}: cannot open shared object file: No such file or directory"
        finding = Finding(Code.NOT_FOUND, f"dlopen(\"{name}\") from this Python would fail: {error}",
                          Subject(SubjectKind.CONSUMER, res.path or name, "shim"),
                          _unloaded_fix(name, None, ctx, res), (_opening(gen, res, error),))
        target = Target(name, "soname", None, f"dlopen(\"{name}\") from this Python")
        return Resolved(target, ctx, JudgedInventory(ctx.host, (), findings=searched), None, (), (finding,))
    install = judged_install_of(res.path, ctx, f"dlopen(\"{name}\") ({res.rule})")
    if install is not None:
        install = shadowed(install, name, None, ctx, res.path, res.rule)
    target = Target(name, "soname", res.path, f"dlopen(\"{name}\") from this Python", res.path, res.rule)
    # a shim an empty or relative entry finds is the current folder's, whatever that holds: never run
    entry = search_entry(res.path, res.rule, ctx.linker)
    planted = untrusted_findings([Mapped(res.path, "shim", "LD_LIBRARY_PATH" if entry is not None else None, entry)],
                                 access, search_path=ctx.linker.ld_library_path)
    inventory = JudgedInventory(ctx.host, (install,) if install else (), findings=searched)
    return Resolved(target, ctx, inventory, install, (), planted)


def _opening(gen: Generation, res: linker.Resolution, error: str) -> Consequence:
    """What the application's dlopen of the shim the search (``res``) picked does: dies (a cut file), hangs (a
    FIFO) or fails."""
    if res.path is not None and (res.kills or res.hangs):
        return shim_ends(gen, res.path, Effect.SIGBUS if res.kills else Effect.HANG)
    return shim_cannot_load(gen, error)


def _unloaded_fix(name: str, chain: linker.Chain | None, ctx: Context, res: linker.Resolution,
                  program: str | None = None) -> Fix:
    """A shim name whose search (``res``) gets nothing that loads: the file that stops it put right where its
    install's finding has a change for it (a wheel's emptied shim: the wheel put back); else that file's
    LD_LIBRARY_PATH entry removed, where the search then gets a whole cuDNN; else as for a name not found (by
    ``program``, a venv's Python whose site-packages the search looks in: installed there)."""
    lib = classify(os.path.basename(name))
    own = _installed_path_fix(res.path, ctx) if res.path and res.error and os.path.lexists(res.path) else None
    if own is not None and res.path and any(a.do is not ActionKind.MANUAL for a in own.actions):
        # a shim the search reaches through a link in another folder is put right where it is, and is still loaded
        # through the link, whose $ORIGIN holds no sub-library: its own folder goes first (fix differential 3-6243)
        return beside_its_libraries(own, res.path, GENERATIONS[lib.major if lib else 9], ctx)
    repair = _shadow_fix(name, chain, ctx, res.path, res.rule) if res.path else None
    return repair or own or _missing_fix(name, GENERATIONS[lib.major if lib else 9], ctx, program)


def unopened_fix(name: str, chain: linker.Chain | None, ctx: Context, program: str | None = None) -> Fix | None:
    """The fix for a shim a program asked for and did not get (`doctor -- COMMAND`): opened by path, the fix
    of the finding about that file in the install it belongs to (a wheel's file gone: its distribution put
    back); by name, what `doctor NAME` gives (``program``: the venv's Python whose site-packages the search looks
    in, which a wheel installed there answers). None when the model finds it loads."""
    if "/" in name:
        return _missing_path(name, ctx)[1] if not os.path.lexists(name) else _installed_path_fix(name, ctx)
    res = linker.resolve(name, chain, ctx.linker)
    return None if res.path is not None and res.error is None else _unloaded_fix(name, chain, ctx, res, program)


def _installed_path_fix(path: str, ctx: Context) -> Fix | None:
    """The fix of the finding about ``path`` in the install its folder holds; None when there is none."""
    install = judged_install_of(path, ctx, "the path the program opened")
    about = next((f for f in install.findings if f.subject.path == path and f.fix and f.fix.actions), None) \
        if install is not None else None
    return about.fix if about else None


def _missing_fix(name: str, gen: Generation, ctx: Context, program: str | None = None) -> Fix:
    """A cuDNN name no search finds: the unversioned name pip does not ship said as such; an installed wheel's
    folder put on LD_LIBRARY_PATH; else cuDNN installed. ``program``: the one that asks; a venv's Python is asked
    about its own site-packages and installs into them; another program's wheels are looked for in this Python's
    (never in cudnnload's own tool environment)."""
    if name == "libcudnn.so" or name.endswith(".so"):
        return fix(manual(f"open {gen.shim.soname}: the pip wheels (and most packages) ship only the versioned "
                          f"name, {name} comes with the -dev package"))
    sites = venv_sites(program) if program is not None else None
    python = program if sites is not None else None
    if sites is None and tool_environment(ctx.environ) is not None:
        sites = []
    return not_found_fix(gen, ctx, sites, python)


def _without_entry(name: str, chain: linker.Chain | None, ctx: Context, path: str | None,
                   rule: str) -> tuple[str, str, Judged] | None:
    """Where ``name`` came through an LD_LIBRARY_PATH entry: that entry, and what the same search gets without
    it (its path and judged install), the model run again; None when it came another way or gets nothing."""
    entry = search_entry(path, rule, ctx.linker) if path else None
    if entry is None:
        return None
    entries = [text for text in ctx.linker.ld_library_path if text != entry]
    without = {**ctx.environ, "LD_LIBRARY_PATH": ":".join(entries)}
    if not entries:
        without.pop("LD_LIBRARY_PATH")
    other = context(without, executable=ctx.linker.executable, cache=ctx.cache, verify=ctx.verify,
                    gone=ctx.linker.gone)
    res = linker.resolve(name, chain, other.linker)
    if not res.found or res.path is None:
        return None
    install = judged_install_of(res.path, other, "without the entry")
    return (entry, res.path, install) if install is not None else None


def _shadow_fix(name: str, chain: linker.Chain | None, ctx: Context, path: str | None, rule: str,
                clean: bool = False) -> Fix | None:
    """Where ``name`` came through an LD_LIBRARY_PATH entry and the search without that entry gets a cuDNN
    that loads and is whole (``clean``: and has no error of its own either), the entry's removal: the model
    run again without it proves it."""
    return _entry_fix(name, _without_entry(name, chain, ctx, path, rule), clean)


def _entry_fix(name: str, found: tuple[str, str, Judged] | None, clean: bool) -> Fix | None:
    """`_shadow_fix`, given what the search gets without the entry (`_without_entry`)."""
    if found is None:
        return None
    entry, other, install = found
    if not whole(install) or (clean and any(f.severity is Severity.ERROR for f in install.findings)):
        return None
    return fix(remove_entry("LD_LIBRARY_PATH", entry),
               note=f"then {name} is {other}, cuDNN {install.release or install.major}, which is whole")


def _shadowed_release(program: str, name: str, install: Judged, found: tuple[str, str, Judged] | None,
                      ld_library_path: Sequence[str] = ()) -> Finding | None:
    """A program whose cuDNN comes from an LD_LIBRARY_PATH entry while its own search (its DT_RUNPATH, which
    glibc reads after LD_LIBRARY_PATH) would find a whole one of another release (``found``: `_without_entry`):
    it runs the entry's release."""
    if found is None or install.release is None:
        return None
    entry, other, own = found
    if own.release is None or own.release == install.release or not whole(own):
        return None
    seen = Consequence("every cuDNN call", Effect.WRONG_RELEASE, "shim", message=f"cudnnGetVersion() returns "
                       f"{install.release.number}, not {own.release.number}")
    said = (f"{os.path.basename(program)} runs cuDNN {install.release} from {install.folder} (the LD_LIBRARY_PATH "
            f"entry {entry}), not the cuDNN {own.release} its own search finds ({other}): LD_LIBRARY_PATH comes "
            "before a DT_RUNPATH")
    subject = Subject(SubjectKind.VARIABLE, install.folder, "shim", variable="LD_LIBRARY_PATH", entry=entry)
    if install.release.major == own.release.major and install.release.minor >= own.release.minor:
        # cuDNN's compatibility rule: a minor release runs what was built against the same or an earlier minor
        # one. The entry may serve other programs (their cuDNN by name): the change is for this program only.
        return Finding(Code.SHADOWED_RELEASE, f"{said}; a later minor release of the same major runs programs built "
                       "against an earlier one (cuDNN's compatibility rule), so it should run", subject,
                       fix(run_without(ld_library_path, [entry]), note=f"then {name} is {other}, cuDNN "
                           f"{own.release}, for this program only; removing the entry for every program changes what "
                           "the others load by name"),
                       (seen,), severity=Severity.WARNING)
    return Finding(Code.SHADOWED_RELEASE, said, subject,
                   fix(remove_entry("LD_LIBRARY_PATH", entry), note=f"then {name} is {other}, cuDNN {own.release}"),
                   (seen,))


def shadowed(install: Judged, name: str, chain: linker.Chain | None, ctx: Context, path: str,
             rule: str) -> Judged:
    """A broken install the program reaches through an LD_LIBRARY_PATH entry (``rule``), when without the
    entry the same search for ``name`` would reach a whole one (one without errors, when this one is whole
    too and fails only for want of something else, its cuBLAS): every error's fix is then the entry's removal
    (the install's own fix kept as the alternative)."""
    if not any(f.severity is Severity.ERROR for f in install.findings):
        return install  # nothing to fix: the search is not run again
    return _with_entry_fix(install, name, _without_entry(name, chain, ctx, path, rule))


def _with_entry_fix(install: Judged, name: str, found: tuple[str, str, Judged] | None) -> Judged:
    """`shadowed`, given what the search gets without the entry (`_without_entry`)."""
    if not any(f.severity is Severity.ERROR for f in install.findings):
        return install
    repair = _entry_fix(name, found, clean=whole(install))
    if repair is None:
        return install
    findings = tuple(replace(f, fix=Fix(repair.actions, repair.note, f.fix.actions + f.fix.alternatives))
                     if f.severity is Severity.ERROR else f for f in install.findings)
    return replace(install, verdict=replace(install.verdict, findings=findings))


def _python(python: str, env: Mapping[str, str], verify: bool = False,
            unstarted: frozenset[tuple[str, str]] = frozenset(), gone: frozenset[str] = frozenset(),
            timeout: float = 20.0, asked: bool = False) -> Resolved:
    """Another interpreter (or a venv's folder): its start-up observed (`startup.observe`: sys.path as it builds
    it, what its start-up files map), its executable, its frameworks. ``asked``: named by the user (``--python``),
    so checked to be an interpreter before it runs (`pythons.not_an_interpreter`)."""
    candidates = [python] if not os.path.isdir(python) else [
        os.path.join(python, "bin", name) for name in ("python", "python3")]
    interpreter = next((path for path in candidates if os.path.isfile(path) and os.access(path, os.X_OK)), None)
    if interpreter is None:
        raise UsageError("no Python interpreter there", path=python, fix="give a python executable or a venv folder")
    interpreter = os.path.abspath(interpreter)  # as given from here (a venv's link kept); its start-up runs in /
    if asked and (wrong := not_an_interpreter(interpreter)) is not None:
        raise UsageError(wrong, path=python, fix="give a python executable or a venv folder (for a pyenv shim: "
                         "`pyenv which python`)")
    stops: tuple[Finding, ...] = ()
    try:
        started = observe(interpreter, env, cwd="/", timeout=timeout, user=_owner(interpreter, env))
    except StartupFailed as exc:
        # a preloaded cuDNN library that cannot bind stops the interpreter too: its start-up is observed without
        # LD_PRELOAD's cuDNN entries (sys.path does not depend on them), and the failure said as theirs
        seen, stops = _without_preload(interpreter, env, exc, timeout)
        if seen is None:
            seen, stops = _past_the_step(interpreter, env, exc, unstarted, timeout)
        if seen is None:
            raise UsageError(f"not a Python interpreter that answers ({exc.reason})", path=python) from None
        started = seen
    started = started.without(unstarted)
    executable, site_paths = started.executable, list(started.sys_path)
    cache = open_cache(env)
    ctx = context(env, executable=python_requester(cache, executable), cache=cache, verify=verify, gone=gone,
                  unstarted=unstarted, started=started_cuda(started, unstarted))
    inventory = find(environ=env, site_paths=site_paths, ctx=ctx, python=executable)
    install, rejected = choose_install(inventory.installs)
    target = Target(python, "python", executable, f"the Python {executable} and its environment",
                    python=executable, site_paths=tuple(site_paths))
    if any(p.stops_start for p in ctx.preloads):  # the model's own account of it (judge.preload) is said
        stops = ()
    return Resolved(target, ctx, inventory, install, rejected, findings=stops, started=started)


def _owner(interpreter: str, env: Mapping[str, str]) -> int | None:
    """Whose code the interpreter's start-up runs (`owner_of_python`), with PYTHONPATH's folders too."""
    return owner_of_python(interpreter, env.get("PYTHONPATH", "").split(os.pathsep))


# A start-up that dies in more of its steps than this, each observed without the ones before, is refused.
MOST_STEPS = 3


def _past_the_step(interpreter: str, env: Mapping[str, str], failed: StartupFailed,
                   unstarted: frozenset[tuple[str, str]], timeout: float = 20.0
                   ) -> tuple[Startup | None, tuple[Finding, ...]]:
    """The interpreter's start-up when it dies in one of its steps (a `.pth` import line or sitecustomize that
    dlopens a cuDNN whose NEEDED graph is cut short: SIGBUS; fix differential 2-2034), observed without that step
    (its file not read, its module not imported), and again without the next one it dies in (more than MOST_STEPS:
    refused, naming them); and an error for each that says so: that line taken out, where the observation named
    it. In a world where that line is taken out already (a remove-line fix judged), no error: the real start-up
    runs it still, the one judged does not. (None, ()) when it does not start without them either."""
    deaths: list[tuple[StartupFailed, Step]] = []  # each failure with the step it died in
    while True:
        step = failed.step
        if (failed.why != "died" or step is None or step.kind == "site"
                or any((step.kind, step.file) == (seen.kind, seen.file) for _, seen in deaths)):
            return None, ()
        deaths.append((failed, step))
        if len(deaths) > MOST_STEPS:
            raise UsageError(f"not a Python interpreter that answers: it dies in more than {MOST_STEPS} steps of "
                             f"its start-up; in the first, {deaths[0][0].reason}", path=interpreter,
                             fix=f"take out the code that kills it in each of {', '.join(_places(deaths))}")
        try:
            started = observe(interpreter, env, cwd="/", timeout=timeout, user=_owner(interpreter, env),
                              skip=tuple(seen for _, seen in deaths))
            break
        except StartupFailed as exc:
            failed = exc
    places = _places(deaths)
    return started, tuple(finding for death, step in deaths
                          if (finding := _died_in(interpreter, death, step, places, unstarted)) is not None)


def _places(deaths: Sequence[tuple[StartupFailed, Step]]) -> list[str]:
    """The file or module of each step a start-up died in (`_past_the_step`), as its finding names it."""
    return [step.file or step.kind for _, step in deaths]


def _died_in(interpreter: str, failed: StartupFailed, step: Step, places: list[str],
             unstarted: frozenset[tuple[str, str]]) -> Finding | None:
    """The error of ``step``, a start-up step the interpreter died in (`_past_the_step`): ``places`` are every
    step's file or module it was observed without; None where its line is taken out already."""
    line = (step.file, step.text) if step.file is not None and step.text is not None else None
    if line is not None and line in unstarted:
        return None
    where = step.file or step.kind
    others = [place for place in places if place != where]
    seen = Consequence("every program this Python runs", Effect.NO_START, where, message=failed.reason)
    repair = fix(remove_line(*line)) if line is not None else fix(manual(
        f"take out of {where} ({step.kind}, run at every start of this Python) the code that kills it"))
    return Finding(Code.STARTUP_FAILED, f"{interpreter} does not start: {failed.reason}; without {where}"
                   + (f" and {' and '.join(others)}" if others else "") + " it does",
                   Subject(SubjectKind.TARGET, where), repair, (seen,))


def _without_preload(interpreter: str, env: Mapping[str, str], failed: StartupFailed, timeout: float = 20.0
                     ) -> tuple[Startup | None, tuple[Finding, ...]]:
    """The interpreter's start-up without the LD_PRELOAD entries that are cuDNN libraries, when it does not start
    with them, and the error that says so (their removal); (None, ()) when that does not start it either."""
    written = preload_entries(env)
    entries = [entry for entry in written if classify(os.path.basename(entry)) is not None]
    if not entries:
        return None, ()
    kept = " ".join(entry for entry in written if entry not in entries)
    rest = {k: v for k, v in env.items() if k != "LD_PRELOAD"} | ({"LD_PRELOAD": kept} if kept else {})
    try:
        started = observe(interpreter, rest, cwd="/", timeout=timeout, user=_owner(interpreter, rest))
    except StartupFailed:
        return None, ()
    subject = Subject(SubjectKind.VARIABLE, entries[0], variable="LD_PRELOAD", entry=entries[0])
    seen = Consequence("every program started with this LD_PRELOAD", Effect.NO_START, entries[0], message=failed.reason)
    return started, (Finding(Code.PRELOAD_CANNOT_LOAD, f"{interpreter} does not start with LD_PRELOAD="
                             f"{env['LD_PRELOAD']} ({failed.reason}); without its cuDNN entries it does", subject,
                             fix(*(remove_entry("LD_PRELOAD", entry) for entry in entries)), (seen,)),)
