"""Which install ``load()`` and ``cudnnload run`` take, why each other one is passed over, and what in the
process would keep the chosen set from being the one its sonames get: judgments on judged installs.

Pure: the installs' verdicts (`Code.blocks_load`), their releases, the caller's version range and the
objects the process holds (`resolve.process.Preload`) decide.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from cudnnload.codes import Code, SubjectKind
from cudnnload.judge.policy import relative_loads
from cudnnload.resolve.catalog import Release, classify
from cudnnload.resolve.discovery import Install
from cudnnload.resolve.process import Preload
from cudnnload.resolve.versions import VersionRange
from cudnnload.verdicts import Finding, Subject, fix, manual, remove_entry


@dataclass(frozen=True)
class Choice:
    """The install to load (None: none fits), why each other one was passed over, and what the caller is
    to be told about how it was chosen."""

    install: Install | None
    rejected: tuple[str, ...]
    notes: tuple[str, ...] = ()


def choose_for(installs: Sequence[Install], wanted: VersionRange | None = None, *, given: bool = False,
               frameworks: Sequence[str] = ()) -> Choice:
    """The install for ``frameworks`` (``--for torch``): where no framework is named, `choose_install`'s.
    The frameworks' own rules (their build version, their pins) are not applied yet: the choice is
    `choose_install`'s, and a note says so."""
    best, rejected = choose_install(installs, wanted, given=given)
    notes = (f"--for {', '.join(frameworks)}: the framework's own rules are not applied yet; chose as load() "
             "does (the newest coherent release)",) if frameworks else ()
    return Choice(best, rejected, notes)


def choose_install(installs: Sequence[Install], wanted: VersionRange | None = None, *, given: bool = False
                   ) -> tuple[Install | None, tuple[str, ...]]:
    """The install load() would take: the newest release without blocking findings inside
    ``wanted`` (among equals, the first found: pip wheels are searched first; an install whose release
    only the probe can tell, a cuDNN 7 without a versioned name, after those that say it), and none that
    would load a file an empty or relative search-path entry gave other than its own files in a folder the
    caller named (``given``); and why each other one was passed over."""
    rejected: list[str] = []
    usable: list[Install] = []
    for install in installs:
        blocking = [f for f in install.findings if f.code.blocks_load]
        if install.release is None and wanted is not None:
            rejected.append(f"{install.folder}: release unknown, so not known to be in {wanted.text}")
        elif install.release is not None and wanted is not None and not wanted.admits(install.release):
            rejected.append(f"{install.folder}: cuDNN {install.release} is outside {wanted.text}")
        elif blocking:
            rejected.append(f"{install.folder}: {blocking[0].code}: {blocking[0].message}")
        elif install.file("shim") is None:
            rejected.append(f"{install.folder}: no shim")
        elif (relative := through_relative_entry(install, given)) is not None:
            rejected.append(f"{install.folder}: {relative.code}: {relative.message}")
        else:
            usable.append(install)
    best = max(usable, key=lambda i: i.release or Release(0, 0, 0)) if usable else None
    return best, tuple(rejected)


def through_relative_entry(install: Install, given: bool) -> Finding | None:
    """Why load() passes over ``install``: a file it would load came from an empty or relative search-path
    entry, so it is whatever the folder the program runs in holds (judge.policy.relative_loads)."""
    paths = relative_loads(install.folder, install.plan + install.dependencies, given=given)
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
