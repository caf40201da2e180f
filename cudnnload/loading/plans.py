"""The cuDNN set a process is to hold, chosen and proven: what `load()` maps into this process and
``cudnnload run`` preloads into a program (`pin`), and the verdicts remembered between processes.

A set is one install's every readable file, by absolute path, in the catalog's load order (leaves first,
shim last). Mapped that way, each soname is taken before anything searches for it: the linker hands an
already-loaded soname to whoever asks, the shim's own ``dlopen`` of its sub-libraries included
(loading-in-the-wild §4). So the install is judged as such a process holds it (`as_mapped`: discovery's
model with the set's files already mapped), not as the shim's own search would go: another release first
on ``LD_LIBRARY_PATH`` or in ``ld.so.cache`` changes nothing for it, and what that search would do is
kept as notes (`Loaded.findings`). What does matter is a process that holds, or whose ``LD_PRELOAD``
gives, another copy of a cuDNN file before the set (`held`, judged by `judge.choose.held_findings`):
the caller checks that (its ``vet``) before the set is proven. The child probe then loads exactly the
set, the same files by path in the same order, and must map no other cuDNN file (`_prove`).

A proven set is remembered (`PLANS`: the `Plan` under "plans", the notes under "notes", by the request):
a later process checks that each file still has the size, mtime, inode, device and change time it was
proven on, and that it runs under what the proof was made under (`proven_under`: the host and its boot,
glibc, the linker's cache, each LD_LIBRARY_PATH folder: a set proven with the driver's libcuda.so.1
there preloads a library that NEEDs it, and without it no program starts) and that every folder where a library
the set looks for by name could appear is as it was (its own, its RUNPATH's, the system's: a cuBLAS wheel
uninstalled since leaves a set that no program starts with preloaded), and does no search, no ELF
reading and no probe; anything else is proven again. This module imports only lean records on that path (the
warm ``cudnnload run`` is a few milliseconds of Python); discovery, the judge and the probe are imported
when a set is chosen and proven.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence

from cudnnload.cachedir import Layout, plain, proven_under, read_entries, revive_entry, stamp, stamped, write_entries
from cudnnload.codes import Code
from cudnnload.errors import LoadError, UsageError
from cudnnload.resolve.records import record
from cudnnload.resolve.versions import Release, VersionRange

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudnnload.judge.judged import Judged
    from cudnnload.resolve.consumers import Consumer
    from cudnnload.resolve.discovery import Context, Install
    from cudnnload.resolve.process import Preload
    from cudnnload.resolve.sources import Distribution
    from cudnnload.verdicts import Finding

    Source = str | os.PathLike[str] | Install | None
    Files = tuple[tuple[str, str], ...]
    # A caller's check of a set (its files, release and folder) against the process it is to live in:
    # LoadError when that process holds another cuDNN, else the environment to prove the set in.
    Vet = Callable[[Files, Release | None, str], dict[str, str]]
    # The program's interpreter and its sys.path, when they are not this process's (`pythons.program_python`)
    Python = tuple[str, tuple[str, ...]]

PLAN_FORMAT = 8  # bump when Plan's fields or the file layout change
# "plans": request key -> Plan; "notes": request key -> the findings load() reports with it
PLANS = Layout("plans", PLAN_FORMAT, ("plans", "notes"), depth=2, max_entries=512)


@record
class Plan:
    """A proven set: what to load, in which order, and what it was proven on."""

    folder: str
    major: int
    release: Release
    files: tuple[tuple[str, str], ...]  # (catalog key, path), in load order: leaves first, shim last
    skipped: tuple[tuple[str, str, str], ...]  # (key, path, why): files that cannot load here, as expected
    verdict: str  # the child probe's one line
    choice: tuple[str, ...]  # what the choice says to tell the caller (`judge.choose.Choice.notes`)
    # (size, mtime_ns, inode, device, ctime_ns) of each file and skipped one (`cachedir.stamp`)
    stamps: tuple[tuple[int, int, int, int, int], ...]
    under: tuple[str, ...]  # what else it was proven under (`proven_under`)
    # (folder, `cachedir.stamped` text) of every folder where a library the set's files look for by name could
    # appear (`probe.searched_folders`): a cuBLAS wheel uninstalled since, or one put first on a RUNPATH
    folders: tuple[tuple[str, str], ...]


def proven(source: Source, wanted: VersionRange | None, env: dict[str, str], vet: Vet, *,
           frameworks: Sequence[str] = (), use_cache: bool = True, timeout: float = 60.0, notes: bool = False,
           by_key: bool = True, python: Python | None = None) -> tuple[Plan, dict[str, str], tuple[Finding, ...], bool]:
    """The set for the request (``source``: an install folder, a file of one, an `Install`, or None for
    the best on the machine; ``wanted``: a version range; ``frameworks``: `judge.choose.choose_for`),
    checked by ``vet`` and proven in a child process in the environment ``vet`` returns: (the plan, that
    environment, with ``notes`` what discovery noted that does not stop the load, whether it was
    remembered). LoadError names the cause when no set fits. ``by_key``: the caller finds the files by their
    catalog key (load(): the shim's handle), so a remembered plan must name a shim of a known generation
    (`unloadable`, which imports the catalog); a preload names the files by path only. ``python``: the interpreter
    and sys.path of the program the set is for, when it is not this one's (`cudnnload run -- /other/venv/bin/python
    ...`, or run from cudnnload's own environment): its wheels and frameworks are the ones searched."""
    store = PLANS.path(env) if use_cache else None
    key = request_key(source, wanted, env, frameworks, python)
    under = proven_under(env)
    plan = recall(store, key, by_key=by_key, under=under)
    remembered = recall_notes(store, key) if plan is not None and notes else ()
    if plan is not None and remembered is not None:
        return plan, vet(plan.files, plan.release, plan.folder), remembered, True
    install, choice, found, ctx, dists = _choose(source, wanted, env, frameworks, python)
    files = set_files(install)
    vetted = vet(files, install.release, install.folder)
    plan = _prove(install, files, choice, vetted, timeout, under)
    if plan.skipped:  # what the probe could not map, the shim's own search looks for later: from where?
        skipped = {key for key, _, _ in plan.skipped}
        refuse([f for f in as_mapped(install, ctx, dists, without=skipped).findings
                if f.code is Code.UNTRUSTED_LIBRARY])
    if store is not None:
        remember(store, key, plan, found)
    return plan, vetted, found, False


def request_key(source: Source, wanted: VersionRange | None, env: Mapping[str, str],
                frameworks: Sequence[str] = (), python: Python | None = None) -> str:
    folder = getattr(source, "folder", None)  # an Install
    where = folder if isinstance(folder, str) else os.path.abspath(os.fspath(source)) if source is not None else ""  # type: ignore[arg-type]
    relevant = [env.get(name, "") for name in ("LD_LIBRARY_PATH", "CUDNN_PATH", "CUDNN_HOME", "CUDA_HOME",
                                               "CUDA_PATH", "CONDA_PREFIX")]
    # The text itself, not a digest of it: hashlib's OpenSSL binding costs ~5 ms to import.
    executable, paths = python if python is not None else (sys.executable, tuple(sys.path))
    return "\0".join([where, wanted.text if wanted else "", ",".join(frameworks), executable, *relevant, *paths])


def set_files(install: Install) -> tuple[tuple[str, str], ...]:
    """(key, path) of the install's readable files, in load order: leaves first, shim last."""
    from cudnnload.resolve.catalog import generation

    return tuple((lib.key, cand.path) for lib in generation(install.major).libraries
                 if (cand := install.file(lib.key)) is not None and cand.elf is not None)


# --- choosing -------------------------------------------------------------------

def _choose(source: Source, wanted: VersionRange | None, env: dict[str, str], frameworks: Sequence[str],
            python: Python | None = None) -> tuple[Judged, tuple[str, ...], tuple[Finding, ...], Context,
                                                   Sequence[Distribution]]:
    """The install to load, each judged as the process holds it once its set is mapped (`as_mapped`);
    what the choice says; the notes: what that judgment found short of blocking, what the shim's own
    search would do (the install's findings as found), and the installs passed over for an empty or
    relative search-path entry; and the context and distributions it was judged with."""
    from cudnnload.judge.choose import choose_for, through_relative_entry
    from cudnnload.judge.inventory import judge_inventory
    from cudnnload.judge.judged import Judged
    from cudnnload.resolve.access import Access
    from cudnnload.resolve.discovery import Install, context, gather

    ctx = context(env)
    if isinstance(source, Install):
        installs: Sequence[Install] = (source,)
        dists: Sequence[Distribution] = ()
    else:
        # a file stands for the install it belongs to, as that file would load it (discovery.install_of)
        facts = gather([os.fspath(source)] if source is not None else [], ctx=ctx,
                       site_paths=list(python[1]) if python is not None else None)
        inventory = judge_inventory(facts, ctx, python[0] if python is not None else sys.executable, Access())
        ctx.cache.save()  # what judging read, for the next process (as `cudnnload.find` does)
        installs, dists = inventory.installs, inventory.distributions
        if not installs and inventory.given:  # missing, a device, a folder without cuDNN ...: why, in its words
            raise LoadError(inventory.given[0].reason, path=inventory.given[0].path,
                            fix="give the folder that holds libcudnn.so.N, or a file of it")
    mapped = [as_mapped(install, ctx, dists) for install in installs]
    given = source is not None
    consumers = frameworks_named(frameworks, given, env, python)
    choice = choose_for(mapped, wanted, given=given, consumers=consumers)
    if choice.install is None:
        where = f" in {os.fspath(source)}" if isinstance(source, (str, os.PathLike)) else ""
        pins = sorted({pin.requirement for c in consumers for pin in c.pins if not pin.extras})
        raise LoadError(f"no loadable cuDNN{where}" + (f" matching {wanted.text}" if wanted else "") +
                        ("; rejected: " + "; ".join(choice.rejected) if choice.rejected else ": none installed"),
                        fix=f"pip install --force-reinstall --no-deps {' '.join(pins)} (what the framework pins)"
                        if pins else "pip install nvidia-cudnn-cu12 (or -cu13), or run `cudnnload doctor`")
    chosen = choice.install
    searched = next(install for install, judged in zip(installs, mapped, strict=True) if judged is chosen)
    said = {(f.code, f.subject) for f in chosen.findings}
    notes = tuple(f for f in chosen.findings if f.severity != "info") + tuple(
        f for f in (searched.findings if isinstance(searched, Judged) else ())  # a bare Install: facts only
        if f.severity != "info" and (f.code, f.subject) not in said) + tuple(
        found for install in mapped if (found := through_relative_entry(install, given)))
    return chosen, choice.notes, notes, ctx, dists


def frameworks_named(named: Sequence[str], given: bool, env: Mapping[str, str], python: Python | None = None
                     ) -> tuple[Consumer, ...]:
    """The frameworks whose rules the choice follows: those ``named`` (``for_``, ``--for``), else, when no
    install was given, every one installed on this Python's path (``python``'s, when given). LoadError for a
    name not installed."""
    if given and not named:
        return ()
    from cudnnload.resolve.consumers import FRAMEWORKS, find_consumers

    found = find_consumers(list(python[1]) if python is not None else None, environ=env,
                           interpreter=python[0] if python is not None else None)
    # the frameworks with rules of their own, and any other doctor judges as a consumer here (CTranslate2: the major
    # its libraries NEED)
    known = {*FRAMEWORKS, *(c.framework for c in found)}
    unknown = [name for name in named if name not in known]
    if unknown:
        raise UsageError(f"unknown framework {unknown[0]!r}: cudnnload knows {', '.join(sorted(known))}",
                        fix="name one of those, or give the cuDNN to load")
    missing = [name for name in named if not any(c.framework == name for c in found)]
    if missing:
        where = f"{python[0]}'s path" if python is not None else "this Python's path"
        raise UsageError(f"{missing[0]} is not installed on {where} (or uses no cuDNN): there are no rules "
                        "of its to choose by", fix=f"run it with the Python that has {missing[0]}, or give the cuDNN "
                        "to load")
    return tuple(c for c in found if not named or c.framework in named)


def as_mapped(install: Install, ctx: Context, dists: Sequence[Distribution], without: Collection[str] = ()
              ) -> Judged:
    """``install`` judged in a process that already holds its set (discovery's process model, `mapped`):
    its shim and graph then get each sub-library the set has as already loaded; what the set lacks, or
    leaves out (``without``: keys of files that could not be mapped), is still searched for, and what its
    files NEED besides cuDNN (libz, cuBLASLt) too. Its folder stays as it was found (a relative one is still
    one an empty or relative search-path entry gave)."""
    from cudnnload.judge.installs import judge_install
    from cudnnload.resolve.access import Access
    from cudnnload.resolve.discovery import build_install, context

    holding = context(ctx.environ, cache=ctx.cache, mapped=[path for key, path in set_files(install)
                                                            if key not in without])
    facts = build_install(install.folder, install.major, [cand.path for cand in install.files], install.found_via,
                          holding, dists)
    return judge_install(facts, holding, Access(), sys.executable)


# --- proving ----------------------------------------------------------------------

def _prove(install: Install, files: Files, choice: tuple[str, ...], env: Mapping[str, str], timeout: float,
           under: tuple[str, ...]) -> Plan:
    from cudnnload.loading.probe import probe, searched_folders

    result = probe(files, install.major, environ=env, timeout=timeout)
    if not result.ok:
        said = install.release or f"{install.major}.x (release unknown)"  # a shim without a version constant
        raise LoadError(f"cuDNN {said} in {install.folder} fails in a child process: {result.verdict}",
                        path=install.folder, fix="run `cudnnload doctor` for the cause and the fix")
    own = {os.path.realpath(path) for _, path in files}
    strays = [path for path in result.mapped if os.path.basename(path).startswith("libcudnn") and path not in own]
    if strays:  # /proc/PID/maps names real paths
        raise LoadError(f"loading cuDNN {install.release} from {install.folder} by path in a child process also "
                        f"mapped {strays[0]}: the set is not what the process would hold", path=strays[0],
                        fix="run `cudnnload doctor` for where it comes from")
    skipped = tuple((key, path, step.note) for key, path in files
                    if (step := result.step(f"dlopen {key}")) is not None and not step.ok and step.expected)
    kept = tuple(f for f in files if f[0] not in {s[0] for s in skipped})
    release = result.release or install.release
    assert release is not None
    folders = searched_folders([path for _, path in files] + list(result.mapped))
    return Plan(install.folder, install.major, release, kept, skipped, result.verdict, choice,
                tuple(stamp(path) for _, path in kept) + tuple(stamp(path) for _, path, _ in skipped), under,
                tuple((folder, stamped(folder)) for folder in folders))


# --- what else the process holds -------------------------------------------------

def held(files: Files, release: Release | None, folder: str, env: Mapping[str, str],
         mapped: Sequence[str] = ()) -> tuple[Finding, ...]:
    """Why the set (``files`` of cuDNN ``release`` in ``folder``) cannot be the one its sonames get in a
    process started with ``env`` that has ``mapped`` (files: `resolve.mapped`) already: the cuDNN files,
    not the set's own, that the process holds or that ``LD_PRELOAD`` gives it (the process model,
    `resolve.process`; an entry that is one of the set's own files is the set). Without LD_PRELOAD and with
    nothing foreign mapped it returns at once: nothing to model, nothing read."""
    own = {os.path.realpath(path) for _, path in files}
    strays = [path for path in mapped if os.path.basename(path).startswith("libcudnn")
              and os.path.realpath(path) not in own]
    if not strays and not env.get("LD_PRELOAD", "").strip(" :"):
        return ()
    from cudnnload.judge.choose import held_findings
    from cudnnload.resolve.catalog import classify
    from cudnnload.resolve.discovery import context, release_near
    from cudnnload.resolve.process import Preload

    ctx = context(env)
    items: dict[str, Preload] = {os.path.realpath(p.path): p for p in ctx.preloads if p.path is not None}
    for path in strays:  # what LD_PRELOAD did not bring, the process mapped itself
        items.setdefault(os.path.realpath(path), Preload(os.path.basename(path), path, None))
    foreign = [(item, release_near(item.path, ctx.cache)) for real, item in items.items()
               if real not in own and item.path is not None
               and classify(item.soname or os.path.basename(item.path)) is not None]
    sonames = {lib.soname for _, path in files if (lib := classify(os.path.basename(path))) is not None}
    return held_findings(release, folder, sonames, foreign)


def refuse(findings: Sequence[Finding]) -> None:
    """LoadError with the first finding's words and fix, if there is one."""
    if findings:
        raise LoadError(findings[0].message, fix=findings[0].fix.text)


# --- the remembered verdicts ----------------------------------------------------
# JSON data in the cache folder (cudnnload.cachedir): a plan is trusted only while it has the types Plan
# declares, every file it was proven on still has the same stamp (`cachedir.stamp`), the process runs under
# what it was proven under (`proven_under`), and (for load(), which finds the shim by its key) it names a
# shim of a known generation.

def recall(store: str | None, key: str, *, by_key: bool = True, under: tuple[str, ...] | None = None) -> Plan | None:
    """The plan remembered for ``key`` while its files are unchanged and it was proven ``under`` the same
    (default: this process's `proven_under`) (``by_key``: and it names a shim of a known generation,
    `unloadable`), else None."""
    if store is None:
        return None
    stored = read_entries(store, PLANS).get(("plans", key))
    plan: Plan | None = None if stored is None else revive_entry(store, stored, "Plan", _PLAN_KINDS,
                                                                  unloadable if by_key else None)
    if plan is None or plan.under != (proven_under(os.environ) if under is None else under):
        return None  # another host, another driver, another search path: prove it again
    paths = [path for _, path in plan.files] + [path for _, path, _ in plan.skipped]
    try:
        if tuple(stamp(path) for path in paths) != plan.stamps:
            return None  # a file changed since it was proven
    except OSError:
        return None
    if any(stamped(folder) != was for folder, was in plan.folders):
        return None  # a library the set's files look for by name came or went where they look
    return plan


def recall_notes(store: str | None, key: str) -> tuple[Finding, ...] | None:
    """The notes remembered with a plan (None: none, or damaged: then the plan is proven again)."""
    if store is None:
        return None
    from cudnnload.codes import ActionKind, Code, Effect, Severity, SubjectKind
    from cudnnload.verdicts import Action, Consequence, Finding, Fix, Subject

    kinds = {kind.__name__: kind for kind in (Finding, Consequence, Subject, Fix, Action, Code, Severity,
                                              SubjectKind, ActionKind, Effect)}
    stored = read_entries(store, PLANS).get(("notes", key))
    found: tuple[Finding, ...] | None = None if stored is None else revive_entry(
        store, stored, "tuple[Finding, ...]", kinds)
    return found


_PLAN_KINDS = {"Plan": Plan, "Release": Release}


def remember(store: str, key: str, plan: Plan, notes: tuple[Finding, ...]) -> None:
    # merged with what other processes remembered; unwritable: the next process probes again
    write_entries(store, PLANS, {("plans", key): plain(plan), ("notes", key): plain(notes)})


def unloadable(plan: Plan) -> str | None:
    """Why a plan of the right types still cannot be what `_prove` made, or None."""
    from cudnnload.resolve.catalog import generation

    try:
        known = {lib.key for lib in generation(plan.major).libraries}
    except ValueError as exc:
        return str(exc)
    keys = [key for key, _ in plan.files]
    if "shim" not in keys or not known.issuperset(keys):
        return f"a verdict for cuDNN {plan.major} that loads {', '.join(keys) or 'nothing'}"
    return None
