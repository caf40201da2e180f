"""Search-path policy: where the linker would look that moves with the current directory or that others can
write, cuDNN files others can change, and the ``$ORIGIN`` a set-user-ID program loses.

Pure functions from the linker model (`linker.LinkerEnv`, `linker.Requester`) and the file modes on disk to
Findings; nothing is loaded and ``os.environ`` is never read. glibc 2.36's rules, each checked against the
real ``ld.so`` in tests/test_policy.py (secure mode with a set-user-ID program run by another user; set-group-ID
and file capabilities set AT_SECURE by the same kernel rule and are not run there):

- an empty element of LD_LIBRARY_PATH, DT_RPATH or DT_RUNPATH is the current directory (``fillin_rpath``
  in elf/dl-load.c keeps "" as a directory name), and a relative element is opened relative to it;
- in secure-execution mode (``AT_SECURE``: a set-user-ID or set-group-ID program run by someone else, or a
  program with file capabilities) LD_LIBRARY_PATH is ignored (rtld.c drops the unsecure variables), and
  in the program's own DT_RPATH/DT_RUNPATH an element using ``$ORIGIN`` is dropped unless ``$ORIGIN``
  starts it and the expanded path lies under a system folder (``_dl_dst_substitute``,
  ``is_trusted_path_normalize``). A library's ``$ORIGIN`` at the start of an element is still expanded
  there, so the wheel's shim keeps its sub-libraries.

Who may write: a file or folder is writable by someone other than root and its owner when it is
world-writable, or group-writable for a group that is not its owner's user private group (the Debian and
Fedora default under umask 002: a group named after the user, with no other member). For a search folder
the sticky bit (``/tmp``) does not help: it stops others deleting your files, not adding theirs. A folder on
the way to it counts when such a writer can rename entries in it (no sticky bit): the folder can be moved
away and another put in its place. A search folder that does not exist counts when it can be created: its
nearest existing parent is writable by others.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from cudnnload.findings import ERROR, WARNING, Finding
from cudnnload.resolve.linker import LinkerDefaults, LinkerEnv, Requester, expand

RELATIVE_SEARCH_PATH = "relative-search-path"
WRITABLE_SEARCH_PATH = "writable-search-path"
WRITABLE_LIBRARY = "writable-library"
FOREIGN_OWNER = "foreign-owner"
ORIGIN_IN_SETUID = "origin-in-setuid"
CODES = frozenset({RELATIVE_SEARCH_PATH, WRITABLE_SEARCH_PATH, WRITABLE_LIBRARY, FOREIGN_OWNER, ORIGIN_IN_SETUID})


class Found(Protocol):
    """One library as the linker would find it (`discovery.Step`)."""

    @property
    def library(self) -> str: ...

    @property
    def requested_by(self) -> str | None: ...

    @property
    def path(self) -> str | None: ...

    @property
    def rule(self) -> str: ...


@dataclass(frozen=True)
class _Entry:
    """One element of a search list, as written and as glibc uses it."""

    search_list: str  # "LD_LIBRARY_PATH", "DT_RPATH" or "DT_RUNPATH"
    owner: str | None  # the object whose DT_RPATH/DT_RUNPATH it is
    text: str  # as written
    folder: str  # DSTs expanded, trailing '/' removed; "" is the current directory

    @property
    def where(self) -> str:
        return f"the {self.search_list} of {self.owner}" if self.owner else self.search_list


# --- the search lists ----------------------------------------------------------------

def search_path_findings(env: LinkerEnv, *objects: Requester, cwd: str | None = None) -> tuple[Finding, ...]:
    """LD_LIBRARY_PATH, then the DT_RPATH/DT_RUNPATH of the executable and of ``objects``: each empty or
    relative entry (``relative-search-path``), each folder others can write (``writable-search-path``)."""
    here = _cwd(cwd)
    llp = list(_entries("LD_LIBRARY_PATH", None, env.ld_library_path, env.executable, env.defaults))
    owners = {owner.path: owner for owner in (env.executable, *objects) if owner is not None}
    lists = [entry for owner in owners.values() for entry in _object_entries(owner, env.defaults)]
    fix = _ld_library_path_fix(llp, here)
    return (tuple(_relative(entry, here, fix) for entry in llp if not entry.folder.startswith("/"))
            + tuple(_relative(entry, here, _RELINK) for entry in lists if not entry.folder.startswith("/"))
            + _writable_folders(llp + lists))


def install_findings(folder: str, found_via: str, files: Sequence[Requester], loads: Sequence[Found],
                     defaults: LinkerDefaults, *, cwd: str | None = None, user: int | None = None
                     ) -> tuple[Finding, ...]:
    """An install's own: what it would load through an empty or relative entry, its files that others can
    write or another user owns, and the empty, relative or writable entries of their DT_RPATH/DT_RUNPATH
    (``$ORIGIN`` expanded with each file's folder as opened)."""
    here = _cwd(cwd)
    found: list[Finding] = []
    if not os.path.isabs(folder):
        found.append(Finding(RELATIVE_SEARCH_PATH, WARNING, f"found through a relative folder ({found_via}): "
                             f"'{folder}' is {os.path.join(here, folder)} only while a program runs in {here}; "
                             "load() passes it over unless given the folder", folder,
                             "write the folder as an absolute path"))
    through: dict[tuple[str, str, str], list[Found]] = {}  # (opener, rule, folder as searched): its loads
    for load in _lent(folder, loads):
        opener = os.path.basename(load.requested_by) if load.requested_by else "the program"
        through.setdefault((opener, load.rule, os.path.dirname(load.path or "")), []).append(load)
    for (opener, rule, searched), group in through.items():
        found.append(Finding(
            RELATIVE_SEARCH_PATH, WARNING, f"{opener} would load {', '.join(load.library for load in group)} from "
            f"{searched or 'the current directory'} through an empty or relative {_LISTS.get(rule, rule)} entry: "
            f"{os.path.join(here, searched)} from here, other files wherever the program runs", group[0].path,
            "remove the empty or relative entry (in LD_LIBRARY_PATH: a leading, trailing or doubled ':')"))
    found += file_findings([file.path for file in files], user=user)
    entries = [entry for file in files for entry in _object_entries(file, defaults)]
    found += [_relative(entry, here, _RELINK) for entry in entries if not entry.folder.startswith("/")]
    found += _writable_folders(entries)
    return tuple(found)


def relative_loads(folder: str, loads: Iterable[Found], *, given: bool = False) -> tuple[str, ...]:
    """Paths an install would load that an empty or relative search-path entry gave (the linker model joins
    such an entry to the name, so the path stays relative): its own files when its folder is relative,
    unless ``given`` (the caller named it), and every planned load with a relative path outside its own
    folder (one inside is the file the install has anyway)."""
    found = [] if given or os.path.isabs(folder) else [folder]
    return (*found, *(load.path for load in _lent(folder, loads) if load.path is not None))


def _lent(folder: str, loads: Iterable[Found]) -> list[Found]:
    """Planned loads with a relative path, the mark of an empty or relative entry, from outside ``folder``."""
    own = os.path.realpath(folder)
    return [load for load in loads if load.path is not None and not os.path.isabs(load.path)
            and os.path.realpath(os.path.dirname(load.path)) != own]


def _cwd(cwd: str | None) -> str:
    if cwd is not None:
        return cwd
    try:
        return os.getcwd()
    except OSError:  # the current directory was removed
        return "(the current directory)"


def _entries(search_list: str, owner: str | None, texts: Sequence[str], expander: Requester | None,
             defaults: LinkerDefaults) -> Iterator[_Entry]:
    """The list as fillin_rpath builds it: DSTs expanded (an element whose DST has no value is dropped),
    trailing slashes removed; "" stays, as the current directory."""
    for text in dict.fromkeys(texts):
        folder = expand(text, expander, defaults) if text else ""
        if folder is None or (text and not folder):
            continue
        yield _Entry(search_list, owner, text, folder.rstrip("/") or ("/" if folder else ""))


def _object_entries(obj: Requester, defaults: LinkerDefaults) -> Iterator[_Entry]:
    """The list glibc uses for ``obj``'s own loads: DT_RUNPATH, else DT_RPATH (ignored beside DT_RUNPATH)."""
    what, texts = ("DT_RUNPATH", obj.runpath) if obj.runpath else ("DT_RPATH", obj.rpath)
    return _entries(what, obj.path, texts, obj, defaults)


_LISTS = {"ld-library-path": "LD_LIBRARY_PATH", "rpath": "DT_RPATH", "runpath": "DT_RUNPATH"}
_RELINK = "relink it without the entry (patchelf --set-rpath), or use $ORIGIN/... for a folder beside the file"


def _relative(entry: _Entry, here: str, fix: str) -> Finding:
    if entry.folder:
        what = (f"the relative entry '{entry.text}': glibc opens it from the current directory "
                f"({os.path.join(here, entry.folder)} from here)")
    else:
        shape = "a leading, trailing or doubled ':'" if entry.owner is None else "an empty element"
        what = f"an empty entry ({shape}): glibc searches the current directory for it ({here} from here)"
    return Finding(RELATIVE_SEARCH_PATH, WARNING, f"{entry.where} has {what}, so a program loads libraries from "
                   "whatever folder it runs in", entry.owner, fix)


def _ld_library_path_fix(entries: Sequence[_Entry], here: str) -> str:
    kept = [entry.text if entry.folder.startswith("/") else os.path.join(here, entry.folder)
            for entry in entries if entry.folder]
    if not kept:
        return "unset LD_LIBRARY_PATH"
    relative = any(entry.folder and not entry.folder.startswith("/") for entry in entries)
    return f"export LD_LIBRARY_PATH={':'.join(dict.fromkeys(kept))}" + (
        " (relative entries written from here: use the folders you mean)" if relative else "")


def _writable_folders(entries: Sequence[_Entry]) -> tuple[Finding, ...]:
    """One finding per absolute folder others can put a library in, naming every list that searches it."""
    named: dict[str, dict[str, list[str]]] = {}  # folder -> search list -> the files whose list it is
    for entry in entries:
        if entry.folder.startswith("/"):
            owners = named.setdefault(entry.folder, {}).setdefault(entry.search_list, [])
            if entry.owner and os.path.basename(entry.owner) not in owners:
                owners.append(os.path.basename(entry.owner))
    found = []
    for folder, lists in named.items():
        plantable = _plantable(folder)
        if plantable is not None:
            why, culprit, sticky = plantable
            by = " and ".join(f"the {name} of {', '.join(owners)}" if owners else name
                              for name, owners in lists.items())
            fix = f"take {folder} off the search path" + (
                "" if sticky else f", or make {culprit} writable by its owner only (chmod go-w {culprit})")
            found.append(Finding(WRITABLE_SEARCH_PATH, WARNING, f"searched for libraries by {by}, and {why}: they can "
                                 "put a library there that a program using this search path loads", folder, fix))
    return tuple(found)


def _plantable(folder: str) -> tuple[str, str, bool] | None:
    """Why someone other than root and the owner can put a file in ``folder`` (absolute): the reason, the
    folder to fix, and whether it is sticky (then only taking it off the path helps); None when nobody can."""
    existing = folder
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    real = os.path.realpath(existing)
    try:
        info = os.stat(real)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None  # a file in the way: glibc's open() fails with ENOTDIR and the entry finds nothing
    where = "it" if real == folder else f"its real folder {real}" if existing == folder else \
        f"it does not exist but can be created in {real}, which"
    writer = _other_writers(info)
    if writer is not None:
        sticky = bool(info.st_mode & stat.S_ISVTX)
        return (f"{where} is writable by {writer}"
                + (" (the sticky bit stops others deleting your files there, not adding theirs)" if sticky else ""),
                real, sticky)
    child, parent = real, os.path.dirname(real)
    while parent != child:
        try:
            info = os.stat(parent)
        except OSError:
            return None
        writer = None if info.st_mode & stat.S_ISVTX else _other_writers(info)
        if writer is not None:
            return (f"{parent} is writable by {writer} without the sticky bit (they can move {child} away and "
                    "put their own in its place)", parent, False)
        child, parent = parent, os.path.dirname(parent)
    return None


# --- the files ---------------------------------------------------------------------

def file_findings(paths: Iterable[str], *, user: int | None = None) -> tuple[Finding, ...]:
    """cuDNN files (symlinks followed) that someone other than root and their owner can write
    (``writable-library``), or that belong to a user who is neither root nor ``user`` (default: this
    process's effective user) (``foreign-owner``)."""
    me = os.geteuid() if user is None else user
    found: list[Finding] = []
    for path in dict.fromkeys(paths):
        try:
            info = os.stat(path)
        except OSError:
            continue  # discovery reports missing and unreadable files
        real = os.path.realpath(path)
        shown = "" if real == path else f" ({real})"
        writer = _other_writers(info)
        if writer is not None:
            found.append(Finding(WRITABLE_LIBRARY, WARNING, f"writable by {writer}{shown}: they can change the code "
                                 "of every program that loads this cuDNN", path, f"chmod go-w {real}"))
        if info.st_uid not in (0, me):
            found.append(Finding(FOREIGN_OWNER, WARNING, f"owned by {_user_name(info.st_uid)}{shown}, neither root "
                                 f"nor you ({_user_name(me)}): that user can change the code of every program of "
                                 "yours that loads it", path, "install cuDNN as yourself (your own venv) or as "
                                 f"root, or chown root {real}"))
    return tuple(found)


def _other_writers(info: os.stat_result) -> str | None:
    """Who besides root and the owner may write: "anyone", "the group G", or None."""
    if info.st_mode & stat.S_IWOTH:
        return "anyone"
    if info.st_mode & stat.S_IWGRP and not _private_group(info.st_uid, info.st_gid):
        return f"the group {_group_name(info.st_gid)}"
    return None


def _private_group(uid: int, gid: int) -> bool:
    try:
        owner, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    return group.gr_name == owner.pw_name and owner.pw_gid == gid and set(group.gr_mem) <= {owner.pw_name}


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid {gid}"


# --- set-user-ID programs ----------------------------------------------------------------

# is_dst: $ORIGIN not followed by an identifier character, or ${ORIGIN}
_ORIGIN = re.compile(r"\$(?:\{ORIGIN\}|ORIGIN(?![A-Za-z0-9_]))")


def setuid_findings(program: Requester, defaults: LinkerDefaults, found: str | None = None) -> tuple[Finding, ...]:
    """``origin-in-setuid`` for each entry of a set-user-ID, set-group-ID or file-capability program's
    DT_RPATH/DT_RUNPATH that secure-execution mode drops for its ``$ORIGIN``: an error when ``found`` (the
    cuDNN the program loads, as predicted) came from that entry, else a warning. ``program``: the main
    program, its ``$ORIGIN`` its resolved folder (`Requester.executable`)."""
    why = _secure_mode(program.path)
    if why is None:
        return ()
    what, texts = ("DT_RUNPATH", program.runpath) if program.runpath else ("DT_RPATH", program.rpath)
    findings = []
    for text in dict.fromkeys(texts):
        if not _ORIGIN.search(text):
            continue
        folder = expand(text, program, defaults)
        if folder is None or _secure_keeps(text, folder, defaults):
            continue
        folder = folder.rstrip("/") or "/"
        tried = {os.path.normpath(os.path.join(folder, sub)) for sub in defaults.subdirs}  # with each hwcaps subfolder
        hit = found is not None and os.path.normpath(os.path.dirname(found)) in tried
        cause = (f"; {found}, the cuDNN it loads, is found through that entry and will not be found then: the "
                 "program does not start, or its dlopen fails") if hit else ""
        findings.append(Finding(
            ORIGIN_IN_SETUID, ERROR if hit else WARNING,
            f"{why}: run by anyone else, glibc runs it in secure-execution mode (AT_SECURE) and "
            f"drops the entry '{text}' ({folder}) of its {what}, because $ORIGIN counts there only at the start "
            f"of an entry that expands under a system folder ({', '.join(defaults.default_dirs)}); LD_LIBRARY_PATH "
            f"is ignored then too{cause}", program.path,
            "install cuDNN under a system folder (and point the entry there), link with an absolute path to a folder "
            "only root can write, or drop the bit (chmod u-s,g-s)"))
    return tuple(findings)


def _secure_mode(path: str) -> str | None:
    """Why running ``path`` may set AT_SECURE (the kernel sets it when the effective ids differ from the
    real ones, or file capabilities were granted), or None."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if info.st_mode & stat.S_ISUID:
        return f"set-user-ID (owner {_user_name(info.st_uid)})"
    if info.st_mode & stat.S_ISGID:
        return f"set-group-ID (group {_group_name(info.st_gid)})"
    try:
        os.getxattr(path, "security.capability")
    except OSError:
        return None
    return "granted file capabilities"


def _secure_keeps(text: str, folder: str, defaults: LinkerDefaults) -> bool:
    """_dl_dst_substitute under __libc_enable_secure, for the executable: its only $ORIGIN must start the
    element, followed by '/' or nothing, and the expanded path, normalized, must lie under a system folder."""
    origins = list(_ORIGIN.finditer(text))
    if len(origins) != 1 or origins[0].start() != 0 or text[origins[0].end():][:1] not in ("", "/"):
        return False
    normal = os.path.normpath(re.sub("/+", "/", folder)).rstrip("/") + "/"
    return any(normal.startswith(system.rstrip("/") + "/") for system in defaults.default_dirs)
