"""Who may change what a process would load: the facts `judge.policy` turns into search-path findings.

Who may write: a file or folder is writable by someone other than root and its owner when it is
world-writable, or group-writable for a group that is not its owner's user private group (the Debian and
Fedora default under umask 002: a group named after the user, with no other member). For a search folder
the sticky bit (``/tmp``) does not help: it stops others deleting your files, not adding theirs. A folder on
the way to it counts when such a writer can rename entries in it (no sticky bit): the folder can be moved
away and another put in its place. A search folder that does not exist counts when it can be created: its
nearest existing parent is writable by others.

Whom cudnnload trusts with code (`Access.replaceable`, `untrusted_entry`, `guarded_environment`): it maps
or runs a library only when nobody but root and the user it runs as can change what its path gives: the
file, and every folder from ``/`` down to it (a folder writable by anyone else lets them rename an entry
and put their own in its place, unless its sticky bit keeps them off entries that are not theirs); and a
path reached through the current folder (a relative path, an empty or relative search-path entry) is
whatever folder the process runs in. Such a file is judged from its bytes, never mapped (issue 29).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Mapping

# records, not dataclasses: `cudnnload run` asks `secure_mode` on its warm path (resolve/records.py says why)
from cudnnload.cachedir import ownership
from cudnnload.resolve.records import record


@record
class Plantable:
    """Why someone other than root and the owner can put a file in a search folder."""

    why: str  # "it is writable by anyone", "/opt above it is writable by the group staff without the sticky bit"
    culprit: str  # the folder whose mode lets them
    sticky: bool  # the culprit has the sticky bit (then only taking the folder off the path helps)


@record
class FileAccess:
    """Who may change one file (links followed)."""

    path: str
    real: str
    writer: str | None  # "anyone", "the group G", or None: nobody but root and the owner
    owner: int
    owner_name: str


@record
class Unreachable:
    """What stops this user reading a file: the first folder on its way it cannot search, else the file."""

    path: str
    folder: bool
    owner: int
    owner_name: str


class Access:
    """Reads modes, owners and names on demand (the judge asks; nothing is read it does not ask for)."""

    def __init__(self, cwd: str | None = None, user: int | None = None) -> None:
        self.user = os.geteuid() if user is None else user
        self._cwd = cwd
        self._stats: dict[str, os.stat_result | None] = {}  # the folders above many search folders, once each

    def _stat(self, path: str) -> os.stat_result | None:
        if path not in self._stats:
            try:
                self._stats[path] = ownership(path)
            except OSError:
                self._stats[path] = None
        return self._stats[path]

    @property
    def cwd(self) -> str:
        if self._cwd is not None:
            return self._cwd
        try:
            return os.getcwd()
        except OSError:  # the current directory was removed
            return "(the current directory)"

    def user_name(self, uid: int) -> str:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"uid {uid}"

    def group_name(self, gid: int) -> str:
        try:
            return grp.getgrgid(gid).gr_name
        except KeyError:
            return f"gid {gid}"

    def plantable(self, folder: str) -> Plantable | None:
        """Why someone other than root and the owner can put a file in ``folder`` (absolute); None when
        nobody can."""
        existing = folder
        while not os.path.lexists(existing):
            existing = os.path.dirname(existing)
        real = os.path.realpath(existing)
        try:
            info = ownership(real)
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return None  # a file in the way: glibc's open() fails with ENOTDIR and the entry finds nothing
        where = "it" if real == folder else f"its real folder {real}" if existing == folder else \
            f"it does not exist but can be created in {real}, which"
        writer = self._other_writers(info)
        if writer is not None:
            sticky = bool(info.st_mode & stat.S_ISVTX)
            return Plantable(f"{where} is writable by {writer}" + (
                " (the sticky bit stops others deleting your files there, not adding theirs)" if sticky else ""),
                real, sticky)
        child, parent = real, os.path.dirname(real)
        while parent != child:
            above = self._stat(parent)
            if above is None:
                return None
            writer = None if above.st_mode & stat.S_ISVTX else self._other_writers(above)
            if writer is not None:
                return Plantable(f"{parent} is writable by {writer} without the sticky bit (they can move {child} "
                                 "away and put their own in its place)", parent, False)
            child, parent = parent, os.path.dirname(parent)
        return None

    def replaceable(self, path: str) -> Plantable | None:
        """Why someone other than root and this user can change what ``path`` gives (the file, links followed,
        or any folder on the way to it or to a link on the way), or None: then cudnnload may map it. A
        relative path is the current folder's."""
        if not path.startswith("/"):
            return Plantable(f"{path} is reached through the current folder ({self.cwd}), whatever folder the "
                             "process runs in", self.cwd, False)
        real = os.path.realpath(path)
        try:
            info = ownership(real)
        except OSError:
            return None  # nothing there to run
        why = self._changer(info)
        if why is not None:
            return Plantable(f"{real} is {why}", real, False)
        entries = [real] + ([path] if os.path.islink(path) else [])
        for entry in entries:
            found = self._renamable(entry)
            if found is not None:
                return found
        return None

    def _renamable(self, entry: str) -> Plantable | None:
        """Why someone other than root and this user can replace ``entry`` (absolute) or a folder above it."""
        child, parent = entry, os.path.dirname(entry)
        while parent != child:
            try:
                info, own = ownership(parent), ownership(child, follow=False)
            except OSError:
                return None
            why = self._changer(info)
            if why is not None and not (info.st_mode & stat.S_ISVTX and own.st_uid in (0, self.user)
                                        and info.st_uid in (0, self.user)):
                sticky = " (its sticky bit does not cover what is not yours)" if info.st_mode & stat.S_ISVTX else ""
                return Plantable(f"{parent}, which holds {child}, is {why}{sticky}: they can put their own in its "
                                 "place", parent, bool(info.st_mode & stat.S_ISVTX))
            child, parent = parent, os.path.dirname(parent)
        return None

    def _changer(self, info: os.stat_result) -> str | None:
        """Who besides root and this user may change a file or folder: "writable by anyone", "writable by the
        group G", "owned by NAME"; None when nobody."""
        writer = self._other_writers(info)
        if writer is not None:
            return f"writable by {writer}"
        if info.st_uid not in (0, self.user):
            return f"owned by {self.user_name(info.st_uid)}"
        return None

    def untrusted_entry(self, entry: str) -> str | None:
        """Why the search-path folder ``entry`` (an element of LD_LIBRARY_PATH, as written) may hold a library
        someone other than root and this user put there, or None: an empty or relative entry is the current
        folder; an absolute one counts when others can add a file to it (`plantable`) or it is another
        user's."""
        if not entry.startswith("/"):
            return f"'{entry}' is the current folder" if not entry else f"'{entry}' is relative to the current folder"
        plantable = self.plantable(entry)
        if plantable is not None:
            return f"{entry}: {plantable.why}"
        try:
            owner = ownership(entry).st_uid
        except OSError:
            return None
        return None if owner in (0, self.user) else f"{entry} is owned by {self.user_name(owner)}"

    def file(self, path: str) -> FileAccess | None:
        try:
            info = ownership(path)
        except OSError:
            return None
        return FileAccess(path, os.path.realpath(path), self._other_writers(info), info.st_uid,
                          self.user_name(info.st_uid))

    def unreachable(self, path: str, _hops: int = 0) -> Unreachable | None:
        """What stops this user opening ``path`` (absolute): the first folder on its way it may not search, else
        the file when it may not read it; None when nothing does (or it is not there). A symbolic link on the way
        is followed: what stops it is then on its target's way (a link to a file in a folder this user may not
        search)."""
        parts = os.path.abspath(path).split("/")
        for depth in range(2, len(parts) + 1):
            here = "/".join(parts[:depth])
            folder = depth < len(parts)
            if not os.access(here, os.X_OK if folder else os.R_OK, effective_ids=True):
                if os.path.islink(here) and _hops < 40:  # (glibc's own limit on links is 40)
                    target = os.path.realpath(here)
                    if target != here:
                        return self.unreachable("/".join([target, *parts[depth:]]), _hops + 1)
                info = self._stat(here)
                if info is None:
                    return None
                return Unreachable(here, folder, info.st_uid, self.user_name(info.st_uid))
        return None

    def secure_mode(self, path: str) -> str | None:
        """Why running ``path`` may set AT_SECURE (the kernel sets it when the effective ids differ from the
        real ones, or file capabilities were granted), or None."""
        try:
            info = ownership(path)
        except OSError:
            return None
        if info.st_mode & stat.S_ISUID:
            return f"set-user-ID (owner {self.user_name(info.st_uid)})"
        if info.st_mode & stat.S_ISGID:
            return f"set-group-ID (group {self.group_name(info.st_gid)})"
        try:
            os.getxattr(path, "security.capability")
        except OSError:
            return None
        return "granted file capabilities"

    def _other_writers(self, info: os.stat_result) -> str | None:
        """Who besides root and the owner may write: "anyone", "the group G", or None."""
        if info.st_mode & stat.S_IWOTH:
            return "anyone"
        from cudnnload.children import private_group  # here: a warm `run` reads access, and children its dataclasses

        if info.st_mode & stat.S_IWGRP and not private_group(info.st_uid, info.st_gid):
            return f"the group {self.group_name(info.st_gid)}"
        return None


# The variables whose entries ld.so maps or searches, with the characters it splits each on (elf/rtld.c:
# LD_LIBRARY_PATH on ':' and ';' (_dl_init_paths via fillin_rpath), LD_PRELOAD on ' ' and ':'
# (handle_preload_list), LD_AUDIT on ':' (process_dl_audit)).
_LOADER_LISTS = {"LD_LIBRARY_PATH": ":;", "LD_PRELOAD": " :", "LD_AUDIT": ":"}


def unblocked(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the LD_PRELOAD and LD_AUDIT entries that are FIFOs: glibc's open() of one waits for a
    writer, so a child started with it never runs its first line (an LD_PRELOAD entry of one held doctor's
    observation of a Python's start-up for its whole 20 s, and the probe for its 60). What a program started
    with them does, the model says (`process.Preload.hangs`)."""
    import re

    env = dict(environ)
    for name in ("LD_PRELOAD", "LD_AUDIT"):
        if not env.get(name):
            continue
        entries = [entry for entry in re.split(f"[{re.escape(_LOADER_LISTS[name])}]", env[name]) if entry]
        kept = [entry for entry in entries if not ("/" in entry and _is_fifo(entry))]
        if len(kept) < len(entries):
            env[name] = ":".join(kept)
    return env


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def guarded_environment(environ: Mapping[str, str], access: Access | None = None) -> dict[str, str]:
    """``environ`` for a process of cudnnload's own (the probe, a trace's child): without the entries of the
    linker's variables that could give it a library someone other than root and this user put there (a
    search folder `Access.untrusted_entry` refuses; a preloaded path `Access.replaceable` refuses). What the
    program itself would map from them, the judge says (`judge.policy.untrusted_findings`); and without cuDNN's
    log switches (``CUDNN_LOG*``), so that a user's log file is never overwritten by a process of cudnnload's."""
    import re

    access = access or Access()
    env = unblocked(environ)
    for name, separators in _LOADER_LISTS.items():
        if name not in env:
            continue
        kept = []
        for entry in re.split(f"[{re.escape(separators)}]", env[name]):
            if name != "LD_LIBRARY_PATH" and not entry:
                continue  # LD_PRELOAD and LD_AUDIT skip empty entries themselves
            untrusted = access.untrusted_entry(entry) if name == "LD_LIBRARY_PATH" else \
                "/" in entry and access.replaceable(entry) is not None
            if not untrusted:
                kept.append(entry)
        if kept:
            env[name] = ":".join(kept)
        else:
            del env[name]
    # cuDNN's own log switches are the user's, for their programs: cuDNN opens CUDNN_LOGDEST_DBG's file for writing
    # (truncating it) in every process that loads it, and cudnnload's own children would overwrite it
    for name in [name for name in env if name.startswith("CUDNN_LOG")]:
        del env[name]
    return env


def planted_on_path(name: str, environ: Mapping[str, str], access: Access | None = None) -> str | None:
    """Why ``dlopen(name)`` in a process started with ``environ`` would take a file someone other than root
    and this user put there, or None: LD_LIBRARY_PATH is searched before the system's folders (elf/dl-load.c
    ``_dl_map_object``), so its first entry that holds ``name`` decides, when that entry is untrusted
    (`Access.untrusted_entry`) or the file there is (`Access.replaceable`). A few stats: for cudnnload's own
    dlopen of the driver, which must not pay for the linker model."""
    import re

    access = access or Access()
    for entry in re.split(r"[:;]", environ.get("LD_LIBRARY_PATH", "")) if environ.get("LD_LIBRARY_PATH") else ():
        path = os.path.join(entry, name) if entry else name
        if not os.path.exists(path):
            continue
        why = access.untrusted_entry(entry)
        if why is None:
            replaceable = access.replaceable(os.path.abspath(path))
            why = replaceable.why if replaceable is not None else None
        return None if why is None else f"{name} would come from {os.path.abspath(path)} ({why})"
    return None
