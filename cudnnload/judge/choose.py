"""Which install ``load()`` and ``cudnnload run`` take, why each other one is passed over, and what in the
process would keep the chosen set from being the one its sonames get: judgments on judged installs.

Pure: the installs' verdicts (`Code.blocks_load`), their releases, the caller's version range and the
objects the process holds (`resolve.process.Preload`) decide.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from cudnnload.codes import Code, Severity, SubjectKind
from cudnnload.judge.judged import Judged
from cudnnload.judge.policy import relative_loads
from cudnnload.resolve.catalog import Release, classify
from cudnnload.resolve.consumers import Consumer
from cudnnload.resolve.process import Preload
from cudnnload.resolve.versions import VersionRange
from cudnnload.verdicts import Finding, Subject, fix, manual, remove_entry


@dataclass(frozen=True)
class Choice:
    """The install to load (None: none fits), why each other one was passed over, and what the caller is
    to be told about how it was chosen."""

    install: Judged | None
    rejected: tuple[str, ...]
    notes: tuple[str, ...] = ()


def choose_for(installs: Sequence[Judged], wanted: VersionRange | None = None, *, given: bool = False,
               consumers: Sequence[Consumer] = ()) -> Choice:
    """The install for the frameworks ``consumers`` (those installed, or the ones named: ``--for torch``,
    ``load(for_="torch")``), in this order: among the installs `choose_install` accepts (coherent, inside
    ``wanted``), those every framework's own rule accepts (the major its libraries NEED, its build version
    against the release: PyTorch needs the same major and a minor at least its build's); of those, the ones
    that also meet every framework's pin on an nvidia-cudnn wheel; then the newest release (the first found
    among equals). None when no install satisfies them all: ``rejected`` then lists each framework's need and
    each install's release."""
    usable, rejected = _usable(installs, wanted, given)
    if not consumers:
        return Choice(_newest(usable), rejected)
    fitting: list[tuple[bool, Judged]] = []
    for install in usable:
        errors, pinned = _fit(install, consumers)
        if errors:
            rejected += (f"{install.folder}: cuDNN {install.release or install.major}: {errors[0]}",)
        else:
            fitting.append((pinned, install))
    needs = "; ".join(need(c) for c in consumers)
    if not fitting:
        return Choice(None, rejected + (f"the frameworks need: {needs}",))
    chosen = max(fitting, key=lambda pair: (pair[0], pair[1].release or Release(0, 0, 0)))[1]
    return Choice(chosen, rejected, (f"chosen for {', '.join(c.label for c in consumers)} ({needs})",))


def _fit(install: Judged, consumers: Sequence[Consumer]) -> tuple[list[str], bool]:
    """Why the frameworks' rules refuse ``install`` (their error findings' messages), and whether it meets
    every pin too."""
    from cudnnload.judge.frameworks import consumer_findings

    version = install.distribution.split()[-1] if install.distribution else None
    found = [f for c in consumers for f in consumer_findings(c, install.release, install.major,
                                                             install_version=version)]
    errors = [f.message for f in found if f.severity is Severity.ERROR]
    loading = version or install.release
    pinned = loading is not None and all(pin.allows(loading) for c in consumers for pin in c.pins if not pin.extras)
    return errors, pinned


def need(consumer: Consumer) -> str:
    """What a framework needs, in words: "torch 2.11.0: cuDNN 9.x >= 9.19 (its build), nvidia-cudnn-cu13==9.19.0.56"."""
    from cudnnload.resolve.consumers import FRAMEWORKS

    rule = FRAMEWORKS[consumer.framework].rule if consumer.framework in FRAMEWORKS else None
    build = consumer.build
    parts = [f"cuDNN {build.major}.x >= {build.major}.{build.minor} (its build, {build})" if build and rule else
             f"cuDNN {consumer.build_major}" if consumer.build_major else ""]
    parts += [pin.requirement for pin in consumer.pins]
    return f"{consumer.label}: " + (", ".join(p for p in parts if p) or "any cuDNN")


def choose_install(installs: Sequence[Judged], wanted: VersionRange | None = None, *, given: bool = False
                   ) -> tuple[Judged | None, tuple[str, ...]]:
    """The install load() would take: the newest release without blocking findings inside
    ``wanted`` (among equals, the first found: pip wheels are searched first; an install whose release
    only the probe can tell, a cuDNN 7 without a versioned name, after those that say it), and none that
    would load a file an empty or relative search-path entry gave other than its own files in a folder the
    caller named (``given``); and why each other one was passed over."""
    usable, rejected = _usable(installs, wanted, given)
    return _newest(usable), rejected


def _newest(installs: Sequence[Judged]) -> Judged | None:
    return max(installs, key=lambda i: i.release or Release(0, 0, 0)) if installs else None


def _usable(installs: Sequence[Judged], wanted: VersionRange | None, given: bool
            ) -> tuple[list[Judged], tuple[str, ...]]:
    """The installs load() may take, and why each other one is passed over (`choose_install`)."""
    rejected: list[str] = []
    usable: list[Judged] = []
    for install in installs:
        # an error that blocks; the same code said as a warning (an optional engine library of another release,
        # which graph goes on without) does not
        blocking = [f for f in install.findings if f.code.blocks_load and f.severity is Severity.ERROR]
        if install.release is None and wanted is not None:
            rejected.append(f"{install.folder}: release unknown, so not known to be in {wanted.text}")
        elif install.release is not None and wanted is not None and not wanted.admits(install.release):
            rejected.append(f"{install.folder}: cuDNN {install.release} is outside {wanted.text}")
        elif blocking:
            about = blocking[0].subject.path or ""
            # the file is named first, but for a missing sub-library, whose message is its name ("X is missing")
            named = f"{posixpath.basename(about)}: " if about.startswith(install.folder + "/") and \
                blocking[0].code is not Code.MISSING_SUBLIBRARY else ""
            rejected.append(f"{install.folder}: {blocking[0].code}: {named}{blocking[0].message}")
        elif install.file("shim") is None:
            rejected.append(f"{install.folder}: no shim")
        elif (relative := through_relative_entry(install, given)) is not None:
            rejected.append(f"{install.folder}: {relative.code}: {relative.message}")
        else:
            usable.append(install)
    return usable, tuple(rejected)


def through_relative_entry(install: Judged, given: bool) -> Finding | None:
    """Why load() passes over ``install``: a file it would load came from an empty or relative search-path
    entry, so it is whatever the folder the program runs in holds (judge.policy.relative_loads)."""
    paths = relative_loads(install.folder, install.verdict.lent, given=given)
    if not paths:
        return None
    own = paths[0] == install.folder
    step = next((s for s in install.plan + install.dependencies if s.path == paths[0]), None)
    repair = fix(manual(f"load({posixpath.abspath(install.folder)!r}) if that folder is the one meant")) if own \
        else fix(remove_entry("LD_LIBRARY_PATH", step.entry)) if step is not None and step.entry is not None \
        else fix(manual("remove the empty or relative entry (in LD_LIBRARY_PATH: a leading, trailing or doubled "
                        "':')"))
    return Finding(Code.RELATIVE_SEARCH_PATH, f"load() passed over {install.folder}: it would load "
                   f"{'its files' if own else paths[0]} through an empty or relative search-path entry, which names "
                   "another folder wherever the program runs", Subject(SubjectKind.INSTALL, install.folder), repair)


def held_findings(release: Release | None, folder: str, sonames: Collection[str],
                  held: Sequence[tuple[Preload, Release | None]]) -> tuple[Finding, ...]:
    """Why the set of cuDNN ``release`` in ``folder`` (its files' ``sonames``) cannot be pinned in a
    process that holds ``held``: other cuDNN files (another release, or another copy), each with its
    release, that LD_PRELOAD puts in the process (`Preload.entry` says which entry) or that are mapped in
    it already. The first object of a soname answers every later request for it (glibc's
    ``_dl_map_object`` matches names before it searches), and a program's ``cudnn*`` calls bind to the
    first object of the global scope that exports them (`resolve.process`): a set mapped after such an
    object would share the process with it. Each finding names the file and what put it there; its fix
    takes that away."""
    found = []
    ours = f"cuDNN {release} from {folder}" if release else f"the cuDNN in {folder}"
    for item, its_release in held:
        lib = classify(item.soname or posixpath.basename(item.path or item.name))
        what = f"{item.path} (cuDNN {its_release})" if its_release else f"{item.path}"
        need = (f"{ours} needs its own {lib.key}" if lib is not None and lib.soname in sonames else
                f"{ours} would share the process with it (a program's cudnn* calls bind to the first library "
                "of the process that exports them)")
        subject = Subject(SubjectKind.FILE, item.path, lib.key if lib else None,
                          variable="LD_PRELOAD" if item.entry else None, entry=item.entry)
        if item.entry is None:
            found.append(Finding(Code.MIXED_RELEASE, f"{what} is already loaded in this process (by another "
                                 f"library); {need}: the linker hands the loaded copy to anyone asking for "
                                 f"{item.soname or item.name}", subject,
                                 fix(manual("call cudnnload.load() before importing the framework that loaded it, "
                                            "or load that same cuDNN"))))
            continue
        brings = "puts" if item.name == item.entry else f"(its entry {item.entry}, which NEEDs {item.name}) puts"
        found.append(Finding(Code.MIXED_RELEASE, f"LD_PRELOAD {brings} {what} in every process; {need}", subject,
                             fix(remove_entry("LD_PRELOAD", item.entry))))
    return tuple(found)
