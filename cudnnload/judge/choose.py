"""Which install ``load()`` takes, and why each other one is passed over: a judgment on judged installs.

``choose_install`` is pure: the installs' verdicts (`Code.blocks_load`), their releases and the caller's
version range decide.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from cudnnload.codes import Code, SubjectKind
from cudnnload.judge.policy import relative_loads
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.discovery import Install
from cudnnload.resolve.versions import VersionRange
from cudnnload.verdicts import Finding, Subject, fix, manual, remove_entry


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
