"""Who may change what a process would load: the facts `judge.policy` turns into search-path findings.

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
import stat

# records, not dataclasses: `cudnnload run` asks `secure_mode` on its warm path (resolve/records.py says why)
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


class Access:
    """Reads modes, owners and names on demand (the judge asks; nothing is read it does not ask for)."""

    def __init__(self, cwd: str | None = None, user: int | None = None) -> None:
        self.user = os.geteuid() if user is None else user
        self._cwd = cwd

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
            info = os.stat(real)
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
            try:
                info = os.stat(parent)
            except OSError:
                return None
            writer = None if info.st_mode & stat.S_ISVTX else self._other_writers(info)
            if writer is not None:
                return Plantable(f"{parent} is writable by {writer} without the sticky bit (they can move {child} "
                                 "away and put their own in its place)", parent, False)
            child, parent = parent, os.path.dirname(parent)
        return None

    def file(self, path: str) -> FileAccess | None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return FileAccess(path, os.path.realpath(path), self._other_writers(info), info.st_uid,
                          self.user_name(info.st_uid))

    def secure_mode(self, path: str) -> str | None:
        """Why running ``path`` may set AT_SECURE (the kernel sets it when the effective ids differ from the
        real ones, or file capabilities were granted), or None."""
        try:
            info = os.stat(path)
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
        if info.st_mode & stat.S_IWGRP and not _private_group(info.st_uid, info.st_gid):
            return f"the group {self.group_name(info.st_gid)}"
        return None


def _private_group(uid: int, gid: int) -> bool:
    try:
        owner, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    return group.gr_name == owner.pw_name and owner.pw_gid == gid and set(group.gr_mem) <= {owner.pw_name}
