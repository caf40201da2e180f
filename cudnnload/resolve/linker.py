"""What glibc's dynamic linker would open for a name, asked for by a given object, in a given process.

A model of ``_dl_map_object``, ``open_path`` and ``open_verify`` in glibc ``elf/dl-load.c``, rule by rule:
each step, attempt and outcome cites the rule of `cudnnload.resolve.rules` that decided it (``Attempt.by``,
``Resolution.by``), for the glibc version the process runs (``LinkerEnv.glibc``); for a glibc outside the
versions the table was read from the answer says it cannot decide (``Resolution.undecided``). Checked against
the real ``ld.so`` (``LD_DEBUG=libs`` and ``/proc/self/maps``) by tests/test_linker.py and tests/test_rules.py.
For a name without a '/':

0. an object already in the process whose soname, or a name it was opened under, equals the name is returned
   without any search (``already-loaded``);
1. DT_RPATH of the requester, then of the object whose DT_NEEDED loaded it, and on up the chain, then of the
   executable; all of it only when the requester itself has no DT_RUNPATH. An object of the chain with
   DT_RUNPATH contributes nothing (its DT_RPATH is ignored) but does not stop the walk (``rpath``);
2. LD_LIBRARY_PATH, unless the process runs in secure-execution mode (``ld-library-path``);
3. DT_RUNPATH of the requester (never inherited) (``runpath``);
4. ld.so.cache; with DF_1_NODEFLIB on the requester only entries outside the default directories count; not
   for a preload in secure mode (``ld-cache``);
5. the default directories, unless the requester has DF_1_NODEFLIB (``default-dirs``).

Every directory is tried with each hwcaps subdirectory first. A file of the other ELF class or machine is
skipped; a file that is not a loadable ELF file ends the whole lookup with an error; an open() error other
than ENOENT/EACCES (ENOTDIR too from glibc 2.39) abandons the rest of that search list. Names with a '/' are
opened as given, after ``$ORIGIN``/``$LIB``/``$PLATFORM`` expansion. Secure-execution mode (``LinkerEnv.secure``)
drops LD_LIBRARY_PATH and restricts ``$ORIGIN``; a lookup for a preload then takes only set-user-ID files
and skips the cache. Who opens decides what may be read (``LinkerEnv.user``: another user's permissions).

Nothing here reads ``os.environ`` except as the default of ``LinkerEnv.from_environ``
and :func:`probe_linker_defaults`; nothing is loaded.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import struct
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple

from cudnnload.files import ELF_MAGIC
from cudnnload.resolve.elf import EHDR, PHDR, ElfInfo, read_elf
from cudnnload.resolve.ldcache import LD_SO_CACHE, LdCache, accepted_flags, read_ld_cache
from cudnnload.resolve.records import record
from cudnnload.resolve.rules import Glibc, glibc_version, holds, undecided

# The search steps, in glibc's order; each is also the id of its rule (`rules`).
Rule = Literal[
    "already-loaded", "direct-path", "rpath", "ld-library-path", "runpath", "ld-cache", "default-dirs", "not-found",
]
# How the name is asked for: a dlopen, a DT_NEEDED entry, or a preload (LD_PRELOAD, /etc/ld.so.preload).
How = Literal["dlopen", "needed", "preload"]
Outcome = Literal[
    "found",
    "absent",  # directory exists, file does not
    "no-dir",  # directory does not exist (glibc then stops trying it)
    "not-dir",  # the search element is a file, not a folder (ENOTDIR)
    "broken-symlink",  # ENOENT through a dangling symlink: skipped
    "no-access",  # EACCES: skipped
    "nodeflib",  # ld.so.cache entry in a default directory, requester has DF_1_NODEFLIB: skipped
    "not-setuid",  # secure mode, a preload's file without the set-user-ID bit: skipped as if absent
    "dropped",  # a search element (or list) not searched at all: a DST without a value, secure mode
    "wrong-class",  # ELFCLASS32 in a 64-bit process: skipped (dlerror "wrong ELF class" if nothing else)
    "wrong-machine",  # another e_machine: skipped silently
    "symlink-loop",  # ELOOP: the rest of this search list is abandoned
    "open-error",  # another open() error: the rest of this search list is abandoned
    "too-short",  # fatal: "file too short"
    "not-elf",  # fatal: "invalid ELF header"
    "bad-elf",  # fatal: another header check of open_verify failed
    "truncated",  # fatal: program headers cut off, or the file unreadable: "cannot read file data"
    "cut-segments",  # fatal: a PT_LOAD segment past the end of the file; dlopen dies of SIGBUS
    "fifo",  # a named pipe: glibc's open() blocks until a writer comes, so dlopen hangs (never opened here)
    "device",  # fatal: a character or block device; glibc reads it and rejects it (never opened here)
    "executable",  # fatal: an ET_EXEC program
    "pie",  # fatal (glibc 2.30+): a position-independent program
    "no-dynamic",  # fatal: a shared object without a dynamic segment
    "noopen",  # fatal for a dlopen: DF_1_NOOPEN
    "execstack",  # fatal for a dlopen (glibc 2.41+): it asks for an executable stack
    "noexec",  # fatal: on a file system mounted noexec, the kernel refuses to map its code (EPERM)
]

_PASSED: frozenset[str] = frozenset(
    {"absent", "no-dir", "broken-symlink", "no-access", "nodeflib", "wrong-class", "wrong-machine", "not-setuid",
     "dropped"})
_ABANDON: frozenset[str] = frozenset({"symlink-loop", "open-error"})
# What open_verify's checks leave to the mapping (_dl_map_object_from_fd): an object already in the process
# under another path is found before them (`same-file`).
_AFTER_MAPPING: frozenset[str] = frozenset({"cut-segments", "executable", "pie", "no-dynamic", "noopen",
                                            "execstack", "noexec"})

# The rule that decides each outcome (`rules`); "not-dir" and the mapping checks depend on more (`_decided`).
_BY: dict[str, str] = {
    "absent": "open-enoent", "broken-symlink": "open-enoent", "no-dir": "folder-missing-remembered",
    "no-access": "open-eacces", "nodeflib": "nodeflib", "not-setuid": "preload-secure-setuid-only",
    "wrong-class": "skip-other-class", "wrong-machine": "skip-other-machine", "symlink-loop": "open-error-ends-list",
    "open-error": "open-error-ends-list", "too-short": "fatal-too-short", "not-elf": "fatal-not-elf",
    "bad-elf": "fatal-bad-header", "truncated": "fatal-unreadable", "cut-segments": "segments-past-end",
    "fifo": "fifo-blocks", "device": "device-read", "executable": "fatal-executable", "pie": "fatal-pie",
    "no-dynamic": "fatal-no-dynamic", "noopen": "fatal-noopen", "execstack": "execstack-refused-dlopen",
    "noexec": "fatal-noexec-mount",
}

DF_1_NODEFLIB = 0x800
DF_1_NOOPEN = 0x40
DF_1_PIE = 0x08000000

# e_machine numbers (elf.h) for the names pyelftools gives; cudnnload.resolve.elf reports those names.
MACHINES: dict[str, int] = {
    "EM_386": 3, "EM_PPC64": 21, "EM_S390": 22, "EM_ARM": 40, "EM_X86_64": 62, "EM_AARCH64": 183, "EM_RISCV": 243,
}

# The glibc of this process (os.confstr reads it from the libc it runs with).
THIS_GLIBC: Glibc | None = glibc_version(os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None)


@dataclass(frozen=True)
class Requester:
    """One object that asks for a library (glibc's ``struct link_map``, the parts a search reads)."""

    path: str  # as opened (l_name), not resolved: $ORIGIN is its directory
    rpath: tuple[str, ...] = ()  # DT_RPATH, unexpanded; ignored by glibc when runpath is set
    runpath: tuple[str, ...] = ()  # DT_RUNPATH, unexpanded
    flags_1: int = 0  # DT_FLAGS_1
    origin: str | None = None  # $ORIGIN when it is not the directory of path (the executable)
    program: bool = False  # the main program (secure mode checks its $ORIGIN entries against the trusted folders)

    @property
    def origin_dir(self) -> str:
        """``l_origin`` (elf/dl-object.c): the directory of the path as opened, made absolute, not resolved."""
        if self.origin is not None:
            return self.origin
        directory = os.path.dirname(self.path) or "."
        return directory if os.path.isabs(directory) else os.path.join(os.getcwd(), directory)

    @property
    def nodeflib(self) -> bool:
        return bool(self.flags_1 & DF_1_NODEFLIB)

    @classmethod
    def from_elf(cls, path: str, info: ElfInfo) -> Requester:
        """The object opened as ``path`` (a symlink stays one), described by ``info``."""
        return cls(path, info.rpath, info.runpath, info.flags_1)

    @classmethod
    def from_file(cls, path: str) -> Requester:
        """Read ``path`` (raises cudnnload.errors.ElfError)."""
        return cls.from_elf(path, read_elf(path))

    @classmethod
    def executable(cls, path: str) -> Requester:
        """The main program. Its $ORIGIN comes from /proc/self/exe (_dl_get_origin), so unlike a
        library's it is the directory of the resolved path: a symlinked executable's
        $ORIGIN is where the real file lives (measured on glibc 2.36)."""
        return replace(cls.from_file(path), origin=os.path.dirname(os.path.realpath(path)), program=True)


@record
class Chain:
    """The requester first, then the object whose DT_NEEDED loaded it, and on up (glibc's
    ``l_loader`` links).

    The chain of a dlopen'd object ends at it: ``_dl_map_object`` forgets the
    caller once the object is mapped, so a library dlopen'd by the cuDNN shim
    inherits the DT_RPATH of the shim (the requester) and of the executable
    (``LinkerEnv.executable``), not of whatever loaded the shim.
    """

    links: tuple[Requester, ...]

    @property
    def requester(self) -> Requester | None:
        return self.links[0] if self.links else None


@dataclass(frozen=True)
class LinkerDefaults:
    """What ld.so brings to every search: compiled-in directories and CPU-dependent values.

    The field defaults are upstream glibc's for x86-64; distributions differ
    (Debian: /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib, /usr/lib and
    $LIB = lib/x86_64-linux-gnu), so :func:`probe_linker_defaults` asks the real one.
    """

    default_dirs: tuple[str, ...] = ("/lib64", "/usr/lib64")
    subdirs: tuple[str, ...] = ("",)  # tried inside every search directory, in order; "" = the directory
    lib: str = "lib64"  # $LIB
    platform: str | None = "x86_64"  # $PLATFORM (AT_PLATFORM); None drops path elements using it
    elf_class: int = 64
    machine: str = "EM_X86_64"
    source: str = "upstream glibc x86-64 defaults"

    @property
    def first_parts(self) -> tuple[str, ...]:
        """The first folder name of each of ``subdirs`` ("" for the directory itself), in their order."""
        return tuple(sub.split("/", 1)[0] for sub in self.subdirs)

    @property
    def glibc_hwcaps(self) -> tuple[str, ...]:
        """Supported glibc-hwcaps names, preferred first (they rank ld.so.cache entries too)."""
        prefix = "glibc-hwcaps/"
        return tuple(sub[len(prefix):] for sub in self.subdirs if sub.startswith(prefix))

    @property
    def legacy_hwcaps(self) -> tuple[str, ...]:
        """The legacy hwcaps subfolders searched (``tls``, ``x86_64``, their combinations; glibc <= 2.36)."""
        return tuple(sub for sub in self.subdirs if sub and not sub.startswith("glibc-hwcaps/"))


@record
class User:
    """Whose permissions the process opens files with (root reads everything)."""

    uid: int
    gids: tuple[int, ...]

    @classmethod
    def of(cls, name_or_uid: str | int) -> User:
        import grp
        import pwd

        entry = pwd.getpwnam(name_or_uid) if isinstance(name_or_uid, str) else pwd.getpwuid(name_or_uid)
        groups = [g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem]
        return cls(entry.pw_uid, (entry.pw_gid, *groups))

    def may(self, info: os.stat_result, bit: int) -> bool:
        """Whether this user has permission ``bit`` (4 read, 1 search/execute) on a file with ``info``."""
        if self.uid == 0:
            return True
        shift = 6 if info.st_uid == self.uid else 3 if info.st_gid in self.gids else 0
        return bool(info.st_mode >> shift & bit)


@dataclass(frozen=True)
class LinkerEnv:
    """The process a lookup happens in. ``loaded`` maps each name an object already in the
    process answers to (its soname, or a name or path it was opened under) to its path."""

    ld_library_path: tuple[str, ...] = ()  # entries as split by glibc on ':' and ';', unexpanded
    ld_cache: LdCache = LdCache("", "")
    defaults: LinkerDefaults = LinkerDefaults()
    loaded: Mapping[str, str] = field(default_factory=dict)
    executable: Requester | None = None
    glibc: Glibc | None = THIS_GLIBC  # the loader's version: which rules hold (`rules`)
    secure: bool = False  # secure-execution mode (AT_SECURE: a set-user-ID program run by another user)
    user: User | None = None  # who opens files, when not this process's user
    cwd: str | None = None  # the process's current directory, when not this one's (relative paths start there)
    # files a change not yet made takes away (a distribution's RECORD, uninstalled): absent in this world
    gone: frozenset[str] = frozenset()
    # Directory contents read during this env's lookups: a name absent from a listing needs no
    # open(); ld.so likewise remembers directories that do not exist. One env per query, so a
    # change on disk is seen by the next query.
    listings: dict[str, frozenset[str] | bool | int] = field(default_factory=dict, compare=False, repr=False)
    subfolders: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    # (st_dev, st_ino) of each path looked at for `_same_file`, None when it cannot be stat'ed: a running
    # process has hundreds of objects mapped, each read once per query, not once per name
    identities: dict[str, tuple[int, int] | None] = field(default_factory=dict, compare=False, repr=False)
    # absolute search folders ld.so has found missing (or not a folder) in this process, with the position of the
    # hwcaps subfolder in its list (a subfolder listed twice has two entries, as in glibc's r_search_path_elem
    # status array): it tries them no more, so makes no call there that could set errno (folder-missing-remembered)
    remembered: set[tuple[str, int]] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def from_environ(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        loaded: Mapping[str, str] | None = None,
        executable: Requester | None = None,
        cache_path: str = LD_SO_CACHE,
        defaults: LinkerDefaults | None = None,
        secure: bool = False,
    ) -> LinkerEnv:
        """A process started now with ``environ``: its LD_LIBRARY_PATH, this machine's
        ld.so.cache and linker defaults (one short child process, see probe_linker_defaults,
        unless ``defaults`` are given)."""
        env = os.environ if environ is None else environ
        return cls(
            ld_library_path=split_ld_library_path(env.get("LD_LIBRARY_PATH", "")),
            ld_cache=read_ld_cache(cache_path),
            defaults=defaults or probe_linker_defaults(env),
            loaded=dict(loaded or {}),
            executable=executable,
            secure=secure,
        )

    def here(self, path: str) -> str:
        """``path`` as the process opens it: a relative one from its current directory."""
        return path if self.cwd is None or path.startswith("/") else os.path.join(self.cwd, path)

    def folders(self, directory: str) -> tuple[str, ...]:
        """``directory`` with each hwcaps subdirectory first, in the order ld.so tries them."""
        if directory not in self.subfolders:
            base = directory if directory.endswith("/") or not directory else f"{directory}/"
            self.subfolders[directory] = tuple(f"{base}{sub}".rstrip("/") if sub else directory
                                               for sub in self.defaults.subdirs)
        return self.subfolders[directory]

    def listing(self, directory: str) -> frozenset[str] | bool | int:
        """Names in ``directory``; True when it exists but cannot be listed (then open() on each candidate
        decides, as for ld.so); the errno (ENOENT, ENOTDIR ...) when it cannot be a folder; False when ld.so
        has forgotten it (`root-folder-forgotten`)."""
        if directory not in self.listings:
            try:
                names = frozenset(os.listdir(self.here(directory or ".")))
            except OSError as exc:
                self.listings[directory] = exc.errno or errno.ENOENT if exc.errno in _NOT_A_FOLDER else True
            else:
                names = frozenset(n for n in names if not self.is_gone(os.path.join(directory, n))) \
                    if self.gone else names
                self.listings[directory] = names if self.user is None else self._as_user(directory, names)
        return self.listings[directory]

    def is_gone(self, path: str) -> bool:
        """Whether ``path`` is a file this world's changes take away (`gone`), itself or a folder (or a link to one)
        it lies in."""
        if not self.gone:
            return False
        here = os.path.normpath(self.here(path))
        while here not in self.gone:
            parent = os.path.dirname(here)
            if parent == here:
                return False
            here = parent
        return True

    def _as_user(self, directory: str, names: frozenset[str]) -> frozenset[str] | bool | int:
        """The listing another user's process gets: EACCES when a folder above it may not be searched (ld.so's stat of
        the folder then fails and it is remembered as missing); True when only the folder itself may not be searched
        (each open() there fails with EACCES)."""
        assert self.user is not None
        where = self.here(directory or ".")
        parts = where.rstrip("/").split("/")
        try:
            for depth in range(1, len(parts)):
                if not self.user.may(os.stat("/".join(parts[:depth]) or "/"), 1):
                    return errno.EACCES
            return names if self.user.may(os.stat(where), 1) else True
        except OSError:
            return errno.EACCES

    def opens(self, path: str) -> int | None:
        """The errno ``open(path, O_RDONLY)`` fails with for this process's user before the file is read
        (EACCES for another user's permissions, checked on every folder of the way), or None."""
        if self.user is None:
            return None
        where = self.here(path)
        # every folder on the way, the path's as written and, through a symbolic link, its target's
        for folder in dict.fromkeys((os.path.dirname(where), os.path.dirname(os.path.realpath(where)))):
            parts = folder.split("/")
            for depth in range(1, len(parts) + 1):
                try:
                    if not self.user.may(os.stat("/".join(parts[:depth]) or "/"), 1):
                        return errno.EACCES
                except OSError as exc:
                    return exc.errno
        try:
            return None if self.user.may(os.stat(where), 4) else errno.EACCES
        except OSError as exc:
            return exc.errno

    def holds(self, rule_id: str) -> bool:
        """Whether the rule holds for this process's glibc (the newest known when it cannot be told)."""
        return holds(rule_id, self.glibc if self.glibc is not None else (2, 41))


_NOT_A_FOLDER = (errno.ENOENT, errno.ENOTDIR)


@record  # (one per candidate file: a named tuple is made in a third of a frozen dataclass's time)
class Attempt:
    """One candidate file tried (or one search element not tried: ``dropped``), and the rule that decided it."""

    path: str
    rule: Rule
    outcome: Outcome
    by: str = ""  # the rule (`rules`) that decided the outcome


@dataclass(frozen=True)
class Resolution:
    """Where a name leads. ``path`` is set when a file was picked: either it loads (``error``
    None) or dlopen fails on it (``error`` holds dlerror's text, e.g. "invalid ELF header")."""

    name: str
    path: str | None
    rule: Rule
    dirs: tuple[str, ...] = ()  # the expanded search list the file came from
    via: str | None = None  # whose list: the object with that DT_RPATH/DT_RUNPATH, or the cache file
    trail: tuple[Attempt, ...] = ()
    error: str | None = None
    by: str = ""  # the rule that decided where it leads ("rpath", "same-file", "not-found", "fatal-not-elf" ...)
    rules: tuple[str, ...] = ()  # every rule that shaped the answer, in the order the lookup met them
    undecided: str | None = None  # why the model cannot decide for this loader (then the rest is a guess)

    @property
    def found(self) -> bool:
        return self.path is not None and self.error is None

    @property
    def outcome(self) -> Outcome | Rule | None:
        """What opening the picked file does ("found", or why it fails: "not-elf", "cut-segments" ...);
        "already-loaded" for an object already in the process; None when nothing was picked."""
        if self.rule == "already-loaded":
            return "already-loaded"
        return next((attempt.outcome for attempt in reversed(self.trail) if attempt.path == self.path), None)

    @property
    def kills(self) -> bool:
        """dlopen of the picked file kills the process (SIGBUS mapping a cut segment) instead of failing."""
        return self.path is not None and self.outcome == "cut-segments"

    @property
    def hangs(self) -> bool:
        """dlopen of the picked file never returns (a FIFO: glibc's open() blocks)."""
        return self.path is not None and self.outcome == "fifo"

    @property
    def errno(self) -> int | None:
        """The errno glibc spells out after ``error`` (the last failed call of a search that found nothing, or the
        read that failed); None: none of this lookup's calls failed."""
        if self.error is None:
            return None
        if self.path is None:
            return last_errno(self.trail) if self.by == "not-found" else None
        code = next((c for c, text in _ERRNO_TEXTS.items() if self.error.endswith(f": {text}")), None)
        return code

    @property
    def skipped(self) -> tuple[Attempt, ...]:
        """What the search passed over or stopped at, each with its rule: every attempt but the plain misses
        (absent files, missing folders), which change nothing."""
        return tuple(a for a in self.trail if a.outcome not in ("absent", "no-dir", "found"))


def split_ld_library_path(value: str) -> tuple[str, ...]:
    """LD_LIBRARY_PATH as _dl_init_paths splits it: on ':' and ';'; empty means unset.
    An empty element stands for the current directory."""
    return tuple(re.split(r"[:;]", value)) if value else ()


def resolve(name: str, chain: Chain | None, env: LinkerEnv, *, how: How = "dlopen") -> Resolution:
    """What ``dlopen(name)``, a DT_NEEDED entry ``name`` (``how="needed"``) or a preload (``how="preload"``)
    of the first object of ``chain`` opens.

    No chain (or an empty one) means the executable asks: dlopen falls back to
    the main program's map when no object contains the caller.
    """
    if chain is None or not chain.links:
        chain = Chain((env.executable,) if env.executable is not None else ())
    search = _Search(name, chain, env, how)
    result = _resolve(search)
    doubts = [why for why in (undecided(env.glibc), *search.doubts) if why]
    used = tuple(dict.fromkeys((*search.used, result.by)))
    return replace(result, rules=used, undecided="; ".join(doubts) or None)


def _resolve(search: _Search) -> Resolution:
    name, env, asker = search.name, search.env, search.chain.requester
    if search.how == "preload":
        search.used.append("preload-as-program")
    if search.how == "needed" and "$" in name:  # dl-deps.c expand_dst, before anything else
        expanded = _needed_name(search)
        if not isinstance(expanded, str):
            return expanded
        name = expanded
        search.name = name
    loaded = _already_loaded(name, env.loaded)
    if loaded is not None:
        return Resolution(name, loaded, "already-loaded", by="already-loaded")
    if "/" in name:
        return _same_file(_open_direct(search, asker), env)
    for step in _STEPS:
        result = step(search)
        if result is not None:
            break
    else:
        reason, by = _not_found(search.trail, env)
        result = Resolution(name, None, "not-found", trail=tuple(search.trail), error=f"{name}: {reason}", by=by)
    return _same_file(result, env) if result.path is not None else result


def _needed_name(search: _Search) -> str | Resolution:
    """A DT_NEEDED name with its DSTs expanded with the needing object's values (dl-deps.c expand_dst), or the
    failure: any DST in secure mode, or one without a value."""
    name, env = search.name, search.env
    if _DST.search(name) is None:
        return name
    if env.secure:
        return Resolution(name, None, "not-found", error=f"{name}: DST not allowed in SUID/SGID programs",
                          by="needed-dst-secure")
    expanded = _expand(name, search.chain.requester, env.defaults, False, search.used)
    if not expanded:
        return Resolution(name, None, "not-found", error=f"{name}: empty dynamic string token substitution",
                          by="needed-dst")
    search.used.append("needed-dst")
    return expanded


def _same_file(result: Resolution, env: LinkerEnv) -> Resolution:
    """The object already in the process when the file picked is one it has mapped under another name (a hard
    link, a bind mount, another path to it): _dl_map_object_from_fd compares the file's (st_dev, st_ino) with
    every loaded object's and hands that one out again, before the checks of the mapping itself."""
    if result.path is None or not env.loaded or (result.error is not None and result.outcome not in _AFTER_MAPPING):
        return result
    found = _identity(result.path, env)
    if found is None:
        return result
    for other in dict.fromkeys(env.loaded.values()):  # the object itself too: a path that names it another way
        if _identity(other, env) == found:
            return Resolution(result.name, other, "already-loaded", trail=result.trail, by="same-file")
    return result


def _identity(path: str, env: LinkerEnv) -> tuple[int, int] | None:
    if path not in env.identities:
        try:
            info = os.stat(env.here(path))
        except OSError:
            env.identities[path] = None
        else:
            env.identities[path] = (info.st_dev, info.st_ino)
    return env.identities[path]


def resolve_many(names: Sequence[str], chain: Chain | None, env: LinkerEnv) -> Resolution:
    """The first of ``names`` that loads, each looked up in full, as the cuDNN 9 shim does with
    ``libX.so.9.28.0``, ``libX.so.9.28``, ``libX.so.9``, ``libX.so`` (cudnn-facts 1.2).
    Its trail holds the attempts for the names before it too; when none loads, the
    last name's resolution is returned with every attempt. A name whose file kills the process
    (cut segments: SIGBUS in dlopen, measured on the 9.28 and 8.9.7 wheels) ends the list there."""
    if not names:
        raise ValueError("resolve_many needs at least one name")
    results: list[Resolution] = []
    for name in names:
        results.append(resolve(name, chain, env))
        if results[-1].found or results[-1].kills or results[-1].hangs:  # a killed or hung process tries no more
            break
    return replace(results[-1], trail=tuple(attempt for result in results for attempt in result.trail),
                   rules=tuple(dict.fromkeys(rule for result in results for rule in result.rules)))


def _already_loaded(name: str, loaded: Mapping[str, str]) -> str | None:
    """_dl_name_match_p plus the soname check at the top of _dl_map_object."""
    if name in loaded:
        return loaded[name]
    return next((path for path in loaded.values() if path == name), None)


def _open_direct(search: _Search, asker: Requester | None) -> Resolution:
    """A name with a '/': DSTs expanded with the requester's values (the program's for a preload, rule
    preload-as-program; the caller's for a dlopen, rule dlopen-name-dst), then open_verify on that path alone."""
    name, env = search.name, search.env
    if "$" in name and asker is not None:
        search.used.append("needed-dst" if search.how == "needed" else
                           "preload-as-program" if search.how == "preload" else "dlopen-name-dst")
    path = _expand(name, asker, env.defaults, env.secure, search.used) if asker is not None else name
    if not path:  # a DST without a value (or refused in secure mode): glibc opens "" and fails with ENOENT
        trail = (Attempt(name, "direct-path", "dropped", _dropped_by(name, env)),)
        return Resolution(name, None, "not-found", trail=trail,
                          error=f"{name}: cannot open shared object file: No such file or directory",
                          by=trail[0].by)
    probe = _probe(path, env, search.how)
    outcome = probe.outcome
    if probe.reason and outcome == "found":
        search.used.append(probe.reason)
    trail = (Attempt(path, "direct-path", outcome, _decided(outcome, "direct-path", env)),)
    if outcome not in _PASSED | _ABANDON and outcome != "not-dir":
        return Resolution(name, path, "direct-path", trail=trail, error=_fatal_message(path, probe, name),
                          by=trail[0].by if outcome != "found" else "direct-path")
    if outcome == "wrong-class":
        return Resolution(name, None, "not-found", trail=trail,
                          error=f"{name}: wrong ELF class: ELFCLASS{96 - env.defaults.elf_class}",
                          by="wrong-class-error")
    return Resolution(name, None, "not-found", trail=trail,
                      error=f"{name}: cannot open shared object file: {os.strerror(probe.code or errno.ENOENT)}",
                      by="not-found")


def _dropped_by(text: str, env: LinkerEnv) -> str:
    """Why an element (or a direct name) with a DST came out empty: secure mode's $ORIGIN rules, or no value."""
    if env.secure and _ORIGIN.search(text):
        return "secure-origin-position" if not _origin_first(text) else "secure-origin-trusted"
    return "dst-no-value"


def _not_found(trail: Sequence[Attempt], env: LinkerEnv) -> tuple[str, str]:
    """dlerror's reason when nothing was picked, and its rule: _dl_map_object names the other class if it saw
    one, else the error of the last failed call (`last_errno`; ENOENT when none failed in this lookup: the
    process's errno from before, which `process` knows better)."""
    if any(attempt.outcome == "wrong-class" for attempt in trail):
        return f"wrong ELF class: ELFCLASS{96 - env.defaults.elf_class}", "wrong-class-error"
    code = last_errno(trail)
    return f"cannot open shared object file: {os.strerror(code if code is not None else errno.ENOENT)}", "not-found"


# The errno each outcome leaves (open_path: the candidate's open(), then stat() of a folder first found missing;
# open_verify sets ENOENT for a file it passes over); the others make no failing call.
_ERRNO = {"absent": errno.ENOENT, "broken-symlink": errno.ENOENT, "no-dir": errno.ENOENT, "not-setuid": errno.ENOENT,
          "wrong-class": errno.ENOENT, "wrong-machine": errno.ENOENT, "no-access": errno.EACCES,
          "not-dir": errno.ENOTDIR, "symlink-loop": errno.ELOOP, "open-error": errno.ENXIO}


def last_errno(trail: Sequence[Attempt]) -> int | None:
    """The errno a lookup leaves behind: that of its last failed call, None when it made none (glibc's errno is
    then what it was before; the message of a failed lookup spells it out, rule not-found). A folder ld.so
    remembers as missing costs no call."""
    return next((_ERRNO[a.outcome] for a in reversed(trail)
                 if a.outcome in _ERRNO and a.by != "folder-missing-remembered"), None)


_ERRNO_TEXTS = {code: os.strerror(code) for code in (errno.EISDIR, errno.EIO, errno.EACCES, errno.ENOENT)}


def rtld_strerror(code: int) -> str:
    """ld.so's own words for an errno (elf/dl-minimal.c __strerror_r: it knows six; "Error N" for the rest), used
    in what it prints at start; dlerror uses the C library's."""
    known = (errno.ENOMEM, errno.EINVAL, errno.ENOENT, errno.EPERM, errno.EIO, errno.EACCES)
    return os.strerror(code) if code in known else f"Error {code}"


class _Search:
    """One lookup of a name: what every step reads, and what they write (the trail, the rules used). A plain
    class: a dataclass here would cost `which` half a millisecond at import."""

    __slots__ = ("name", "chain", "env", "trail", "how", "doubts", "used")

    def __init__(self, name: str, chain: Chain, env: LinkerEnv, how: How) -> None:
        self.name, self.chain, self.env, self.how = name, chain, env, how
        self.trail: list[Attempt] = []
        self.doubts: list[str] = []  # what this loader may do that the model cannot tell
        self.used: list[str] = []  # the rules that shaped the answer, besides the attempts'

    @property
    def secure_preload(self) -> bool:
        return self.env.secure and self.how == "preload"


_Step = Callable[[_Search], "Resolution | None"]


def _search_rpaths(search: _Search) -> Resolution | None:
    """DT_RPATH of the chain, then of the executable; skipped when the requester has DT_RUNPATH."""
    chain, env = search.chain, search.env
    if chain.requester is not None and chain.requester.runpath:
        if chain.requester.rpath:
            search.used.append("rpath-ignored-beside-runpath")
        return None
    owners = chain.links + (
        (env.executable,) if env.executable is not None and env.executable not in chain.links else ())
    for owner in owners:
        if owner.rpath and owner.runpath:  # get-dynamic-info.h drops DT_RPATH beside DT_RUNPATH
            search.used.append("rpath-ignored-beside-runpath")
        elif owner.rpath:
            found = _search_list(search, _elements(search, owner.rpath, owner, "rpath"), "rpath", owner.path)
            if found is not None:
                return found
    return None


def _search_ld_library_path(search: _Search) -> Resolution | None:
    """$ORIGIN in LD_LIBRARY_PATH is the executable's (_dl_init_paths expands it with the main map); secure
    mode never reads the variable."""
    env = search.env
    if env.secure:
        if env.ld_library_path:
            search.trail.append(Attempt("LD_LIBRARY_PATH", "ld-library-path", "dropped",
                                        "secure-ignores-ld-library-path"))
        return None
    if not env.ld_library_path:
        return None
    search.used.append("ld-library-path-split")
    dirs = _elements(search, env.ld_library_path, env.executable, "ld-library-path")
    return _search_list(search, dirs, "ld-library-path", None)


def _search_runpath(search: _Search) -> Resolution | None:
    asker = search.chain.requester
    if asker is None or not asker.runpath:
        return None
    return _search_list(search, _elements(search, asker.runpath, asker, "runpath"), "runpath", asker.path)


def _search_ld_cache(search: _Search) -> Resolution | None:
    env, asker, name = search.env, search.chain.requester, search.name
    if search.secure_preload:  # _dl_map_object: no cache for __RTLD_SECURE in secure mode
        search.trail.append(Attempt(env.ld_cache.path or LD_SO_CACHE, "ld-cache", "dropped",
                                    "preload-secure-no-cache"))
        return None
    defaults = env.defaults
    legacy = defaults.legacy_hwcaps if env.holds("ld-cache-legacy-hwcap") else None
    if legacy == () and env.ld_cache.legacy_entries(name):
        search.doubts.append(f"{env.ld_cache.path} has legacy hwcap entries for {name}, which this glibc takes "
                             "by AT_HWCAP bits the model does not know: LD_DEBUG=libs shows which it opens")
    entry = env.ld_cache.lookup(name, accepted_flags(defaults.elf_class, defaults.machine), defaults.glibc_hwcaps,
                                legacy)
    if entry is None:
        return None
    search.used.append("ld-cache-new-format" if env.ld_cache.format == "new" else "ld-cache-old-format")
    if entry.named_hwcap:
        search.used.append("ld-cache-hwcaps-entries")
    elif entry.hwcap:
        search.used.append("ld-cache-legacy-hwcap")
    if any(other.flags != entry.flags for other in env.ld_cache.named(name)):
        search.used.append("ld-cache-flags")
    # dl-load.c compares the cached path with each system dir, trailing '/' included.
    in_default_dir = any(entry.path.startswith(directory.rstrip("/") + "/") for directory in defaults.default_dirs)
    if asker is not None and asker.nodeflib and in_default_dir:
        probe = _Probe("nodeflib")
    else:
        probe = _probe(entry.path, env, search.how)
    outcome = probe.outcome
    search.trail.append(Attempt(entry.path, "ld-cache", outcome,
                                _decided(outcome, "ld-cache", env) if outcome != "found" else "ld-cache"))
    search.used.append("ld-cache-entry-opened")
    if outcome in _PASSED | _ABANDON or outcome == "not-dir":
        return None
    if probe.reason and outcome == "found":
        search.used.append(probe.reason)
    return Resolution(search.name, entry.path, "ld-cache", (os.path.dirname(entry.path),), env.ld_cache.path,
                      tuple(search.trail), _fatal_message(entry.path, probe, name), search.trail[-1].by)


def _search_default_dirs(search: _Search) -> Resolution | None:
    asker = search.chain.requester
    if asker is not None and asker.nodeflib:
        search.used.append("nodeflib")
        return None
    return _search_list(search, search.env.defaults.default_dirs, "default-dirs", None)


_STEPS: tuple[_Step, ...] = (
    _search_rpaths, _search_ld_library_path, _search_runpath, _search_ld_cache, _search_default_dirs,
)


def _elements(search: _Search, entries: tuple[str, ...], owner: Requester | None, rule: Rule) -> tuple[str, ...]:
    """A search list as fillin_rpath builds it (`expand_all`); each element it drops is in the trail with the
    rule that dropped it, and the rules it followed (DSTs, empty, relative and '~' elements) are noted."""
    dirs, dropped = _expand_list(entries, owner, search.env.defaults, search.env.secure, search.used)
    search.trail.extend(Attempt(text, rule, "dropped", _dropped_by(text, search.env)) for text in dropped)
    for directory in dirs:
        if not directory:
            search.used.append("empty-entry-is-cwd")
        elif not directory.startswith("/"):
            search.used.append("tilde-not-expanded" if directory.startswith("~") else "relative-entry")
    return dirs


def _search_list(search: _Search, dirs: tuple[str, ...], rule: Rule, via: str | None) -> Resolution | None:
    """open_path: every directory, every subdirectory; None when the list yields nothing usable."""
    env, name, trail = search.env, search.name, search.trail
    if search.secure_preload and dirs:  # what this list may give a secure-mode preload: set-user-ID files only
        search.used.append("preload-secure-setuid-only")
    stop = _PASSED | _ABANDON
    firsts = env.defaults.first_parts
    forget_root = env.holds("root-folder-forgotten")
    for directory in dirs:
        outcome: Outcome = "absent"
        top = env.listing(directory)
        missing = isinstance(top, int) and not isinstance(top, bool)
        relative = not directory.startswith("/")
        for position, (folder, first) in enumerate(zip(env.folders(directory), firsts, strict=True)):
            # a subfolder whose first part the directory's listing lacks does not exist: no syscall for it
            # (a linear search of 3 000 LD_LIBRARY_PATH entries in milliseconds, not seconds)
            absent = top is False or missing or (isinstance(top, frozenset) and first not in top)
            if first and absent and not relative:
                outcome = "no-dir"  # a hwcaps subfolder that is not there: said nowhere, so not kept either
                continue
            names = env.listing(folder) if first else top
            if first and not (isinstance(names, int) and not isinstance(names, bool)):  # the subfolder is there
                search.used.append("hwcaps-subdirs" if first == "glibc-hwcaps" else "legacy-hwcaps-subdirs")
            candidate = f"{folder}/{name}" if folder and folder != "/" else f"{folder}{name}"
            missing_here = isinstance(names, int) and not isinstance(names, bool) and not relative
            if missing_here and (folder, position) in env.remembered:
                trail.append(Attempt(candidate, rule, "no-dir", "folder-missing-remembered"))
                outcome = "no-dir"
                continue
            probe = _tried(candidate, names, relative, search)
            outcome = probe.outcome
            by = "open-enoent" if outcome == "no-dir" else _decided(outcome, rule, env, relative)
            trail.append(Attempt(candidate, rule, outcome, by))
            if missing_here:
                env.remembered.add((folder, position))
            if outcome == "not-dir" and not relative:
                outcome = "no-dir"  # an absolute element that is a file is remembered as missing
            if outcome not in stop and outcome != "not-dir":
                if probe.reason and outcome == "found":
                    search.used.append(probe.reason)
                return Resolution(name, candidate, rule, dirs, via, tuple(trail),
                                  _fatal_message(candidate, probe, name), trail[-1].by if outcome != "found" else rule)
            if forget_root and directory == "/" and not first:  # bug 30435: '/' is marked missing
                env.listings["/"] = False
        # The errno of the directory's last try decides (open_path: "here_any && errno != ENOENT").
        if outcome in _ABANDON or (outcome == "not-dir" and env.holds("relative-entry-not-folder-ends-list")):
            return None
    return None


def _tried(candidate: str, names: frozenset[str] | bool | int, relative: bool, search: _Search) -> _Probe:
    """What opening ``candidate`` in a folder with listing ``names`` gives (`_probe` when it may be there)."""
    if names is False:
        return _Probe("no-dir")
    if isinstance(names, int) and not isinstance(names, bool):
        # a relative folder is never remembered as missing: each open() fails again (ENOENT or ENOTDIR)
        return _Probe("not-dir" if names == errno.ENOTDIR else "absent" if relative else "no-dir", names)
    if isinstance(names, frozenset) and os.path.basename(candidate) not in names:
        return _Probe("absent", errno.ENOENT)
    probe = _probe(candidate, search.env, search.how)
    if probe.outcome == "found" and search.secure_preload and not _setuid(candidate, search.env):
        return _Probe("not-setuid", errno.ENOENT)
    return probe


def _setuid(path: str, env: LinkerEnv) -> bool:
    try:
        return bool(os.stat(env.here(path)).st_mode & stat.S_ISUID)
    except OSError:
        return False


def _decided(outcome: Outcome, rule: Rule, env: LinkerEnv, relative: bool = False) -> str:
    """The rule that decided ``outcome`` for a candidate of search step ``rule``."""
    if outcome == "found":
        return rule
    if outcome == "no-dir" and rule in ("direct-path", "ld-cache"):
        return "open-enoent"  # the one open() of a path in a folder that is not there
    if outcome == "not-dir":
        if rule == "direct-path":
            return "not-found"
        if not relative:
            return "absolute-entry-not-folder"
        return ("relative-entry-not-folder-ends-list" if env.holds("relative-entry-not-folder-ends-list")
                else "relative-entry-not-folder-passed")
    return _BY.get(outcome, outcome)


def expand_all(entries: tuple[str, ...], owner: Requester | None, defaults: LinkerDefaults) -> tuple[str, ...]:
    """A search list as fillin_rpath builds it: DSTs expanded, elements whose DST has no value
    dropped, trailing slashes removed, duplicates dropped (first one kept)."""
    return _expand_list(entries, owner, defaults, False, [])[0]


def _expand_list(entries: tuple[str, ...], owner: Requester | None, defaults: LinkerDefaults, secure: bool,
                 used: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`expand_all` in secure mode or not, and the elements it dropped, as written."""
    dirs: dict[str, None] = {}  # ordered, and a duplicate found in constant time
    dropped: list[str] = []
    for entry in entries:
        directory = (_expand(entry, owner, defaults, secure, used) if "$" in entry else entry) if entry else ""
        if directory is None or (entry and not directory):
            dropped.append(entry)
            continue
        dirs.setdefault(directory.rstrip("/") or ("/" if directory else ""))
    return tuple(dirs), tuple(dropped)


# is_dst in dl-load.c: $NAME not followed by an identifier character, or ${NAME}.
_DST = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")
_ORIGIN = re.compile(r"\$(?:\{ORIGIN\}|ORIGIN(?![A-Za-z0-9_]))")
_TOKEN_RULES = {"LIB": "dst-lib", "PLATFORM": "dst-platform"}


def expand(text: str, owner: Requester | None, defaults: LinkerDefaults, *, secure: bool = False) -> str | None:
    """``$ORIGIN``/``${ORIGIN}``, ``$LIB``, ``$PLATFORM`` substituted (_dl_dst_substitute);
    None when a token has no value, which makes glibc drop the element. Other
    ``$`` sequences stay as they are. In secure mode (``secure``) an ``$ORIGIN`` that is not the whole first
    component gives None, and so does the program's ``$ORIGIN`` element outside the trusted folders."""
    return _expand(text, owner, defaults, secure, [])


def _expand(text: str, owner: Requester | None, defaults: LinkerDefaults, secure: bool,
            used: list[str]) -> str | None:
    """`expand`, noting in ``used`` the rules it followed."""
    values = {"ORIGIN": owner.origin_dir if owner is not None else None, "LIB": defaults.lib,
              "PLATFORM": defaults.platform}
    missing = False
    if secure and _ORIGIN.search(text) and not _origin_first(text):
        return None

    def substitute(match: re.Match[str]) -> str:
        nonlocal missing
        token = match.group(1) or match.group(2)
        value = values[token]
        missing = missing or value is None
        used.append(_TOKEN_RULES.get(token) or ("origin-program" if owner is not None and owner.program
                                                else "origin-library"))
        return value or ""

    expanded = _DST.sub(substitute, text)
    if "$" in text:
        used.append("dst-tokens")
    if missing:
        return None
    if secure and owner is not None and owner.program and _ORIGIN.search(text) and \
            not _trusted(expanded, defaults.default_dirs):
        return None
    return expanded


def _origin_first(text: str) -> bool:
    """$ORIGIN is the whole first component, and the only one (_dl_dst_substitute's secure-mode exception)."""
    origins = list(_ORIGIN.finditer(text))
    return len(origins) == 1 and origins[0].start() == 0 and text[origins[0].end():][:1] in ("", "/")


def _trusted(path: str, trusted: tuple[str, ...]) -> bool:
    """is_trusted_path_normalize: the path, '.' and '..' resolved textually, under one of the trusted folders."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    normal = "/" + "/".join(parts) + "/"
    return path.startswith("/") and any(normal.startswith(folder.rstrip("/") + "/") for folder in trusted)


class _Probe(NamedTuple):
    """What open_verify and the mapping's checks give for one file: the outcome, the errno of a failed open(),
    and glibc's own words for a header it rejects, or the rule a found file's trait calls on
    ("execstack-allowed")."""

    outcome: Outcome
    code: int | None = None
    reason: str | None = None


_DYN = {64: struct.Struct("<qQ"), 32: struct.Struct("<iI")}
_PT_LOAD, _PT_DYNAMIC, _PT_GNU_STACK = 1, 2, 0x6474E551
_DT_FLAGS_1 = 0x6FFFFFFB
_PF_X = 1
_FILEBUF = 832  # struct filebuf in dl-load.c: what open_verify reads first


def _probe(path: str, env: LinkerEnv, how: How = "dlopen") -> _Probe:
    """open_verify for one candidate, then the checks of the mapping: open it and check what glibc checks. Only a
    regular file (or a folder, which glibc opens and fails to read) is opened: glibc blocks on a FIFO,
    gets ENXIO from a socket (an open() error: the search list is abandoned) and reads a device."""
    where = env.here(path)
    if env.is_gone(path):
        return _Probe("absent", errno.ENOENT)
    denied = env.opens(path)
    if denied is not None:
        return _Probe(_open_failure(where, denied), denied)
    try:
        mode = os.stat(where).st_mode
    except OSError as exc:
        return _Probe(_open_failure(where, exc.errno), exc.errno)
    if stat.S_ISFIFO(mode):
        return _Probe("fifo")
    if stat.S_ISSOCK(mode):
        return _Probe("open-error", errno.ENXIO)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return _Probe("device")
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return _Probe(_open_failure(where, exc.errno), exc.errno)
    try:
        outcome, reason = _check_header(fd, env)
    except OSError as exc:  # a directory (EISDIR) or an I/O error: "cannot read file data: Is a directory"
        return _Probe("truncated", exc.errno)
    finally:
        os.close(fd)
    if outcome == "pie" and not env.holds("fatal-pie"):
        return _Probe("found")
    if outcome == "noopen" and how != "dlopen":
        return _Probe("found")
    if outcome == "execstack" and (how != "dlopen" or not env.holds("execstack-refused-dlopen")):
        return _Probe("found", reason="execstack-allowed" if env.holds("execstack-allowed") else None)
    if outcome == "found" and noexec(where):
        return _Probe("noexec")
    return _Probe(outcome, reason=reason)


def noexec(path: str) -> bool:
    """Whether the file system holding ``path`` is mounted ``noexec``: the loader opens and reads a library there,
    and the kernel refuses the mapping of its code (mmap with PROT_EXEC: EPERM)."""
    try:
        return bool(os.statvfs(path).f_flag & getattr(os, "ST_NOEXEC", 8))
    except OSError:
        return False


def _open_failure(path: str, code: int | None) -> Outcome:
    directory = os.path.dirname(path) or "."
    if code == errno.ENOTDIR:
        return "not-dir"
    if not os.path.isdir(directory):
        return "no-dir"
    if code == errno.ENOENT:
        return "broken-symlink" if os.path.islink(path) else "absent"
    if code == errno.EACCES:
        return "no-access"
    return "symlink-loop" if code == errno.ELOOP else "open-error"


# open_verify's words for each header it rejects (elf/dl-load.c), in the order it checks
_ELFOSABI_SYSV, _ELFOSABI_GNU, _LIBC_ABI_MAX = 0, 3, 4


def _check_header(fd: int, env: LinkerEnv) -> tuple[Outcome, str | None]:
    """The checks of open_verify, in its order, then those _dl_map_object_from_fd makes before it runs any code
    (ET_EXEC, no dynamic segment, DF_1_NOOPEN/DF_1_PIE, an executable stack), plus a truncation check glibc
    lacks: it maps PT_LOAD segments past the end of the file and the process dies of SIGBUS. Also glibc's words
    for a rejected header."""
    defaults = env.defaults
    size = os.fstat(fd).st_size
    head = os.read(fd, _FILEBUF)
    ehdr, phdr = EHDR[defaults.elf_class], PHDR[defaults.elf_class]
    if len(head) < ehdr.size:
        return "too-short", None
    if head[:4] != ELF_MAGIC:
        return "not-elf", None
    if head[4] != defaults.elf_class // 32:  # ELFCLASS32 = 1, ELFCLASS64 = 2
        return "wrong-class", None
    little = sys.byteorder == "little"
    if head[5] != (1 if little else 2):  # EI_DATA
        return "bad-elf", f"ELF file data encoding not {'little' if little else 'big'}-endian"
    if head[6] != 1:  # EI_VERSION
        return "bad-elf", "ELF file version ident does not match current one"
    osabi, abiversion = head[7], head[8]
    if osabi not in (_ELFOSABI_SYSV, _ELFOSABI_GNU):
        return "bad-elf", "ELF file OS ABI invalid"
    if abiversion and not (osabi == _ELFOSABI_GNU and abiversion < _LIBC_ABI_MAX):
        return "bad-elf", "ELF file ABI version invalid"
    if any(head[9:16]):
        return "bad-elf", "nonzero padding in e_ident"
    (_ident, e_type, e_machine, e_version, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum,
     *_sections) = ehdr.unpack_from(head)
    if e_version != 1:
        return "bad-elf", "ELF file version does not match current one"
    if e_machine != MACHINES.get(defaults.machine):
        return "wrong-machine", None
    if e_type not in (2, 3):  # ET_EXEC, ET_DYN
        return "bad-elf", "only ET_DYN and ET_EXEC can be loaded"
    if phentsize != phdr.size:
        return "bad-elf", "ELF file's phentsize not the expected size"
    # open_verify takes the table from the bytes it read first when it lies there, else preads it; that
    # pread fails for an offset of 2**63 or more (a negative off_t), even of 0 bytes, and comes back short
    # past the end of the file: "cannot read file data". Python's pread raises OverflowError for such an
    # offset, so the outcome is decided before it. (An offset whose sum with the length wraps around
    # 2**64 into the first bytes makes glibc read outside its buffer: fatal too, with another message.)
    length = phnum * phdr.size
    if phoff + length > len(head) and (phoff >= 1 << 63 or (length and phoff + length > size)):
        return "truncated", None
    table = os.pread(fd, length, phoff)
    if len(table) < length:
        return "truncated", None
    segments = list(_segments(table, phnum, defaults.elf_class))
    if e_type == 2:
        return "executable", None
    dynamic = next(((offset, filesz) for p_type, offset, filesz, _f in segments if p_type == _PT_DYNAMIC), None)
    # an empty PT_DYNAMIC (a separate debug-info file) counts as none from glibc 2.35
    if dynamic is None or (dynamic[1] == 0 and env.glibc is not None and env.glibc >= (2, 35)):
        return "no-dynamic", None
    for p_type, p_offset, p_filesz, _flags in segments:
        if p_type == _PT_LOAD and p_offset + p_filesz > size:
            return "cut-segments", None
    flags_1 = _flags_1(fd, dynamic, defaults.elf_class)
    if flags_1 & DF_1_PIE:
        return "pie", None
    if flags_1 & DF_1_NOOPEN:
        return "noopen", None
    if any(p_type == _PT_GNU_STACK and flags & _PF_X for p_type, _o, _s, flags in segments):
        return "execstack", None
    return "found", None


def _segments(table: bytes, count: int, elf_class: int) -> Iterator[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_filesz, p_flags) of each program header."""
    phdr = PHDR[elf_class]
    for index in range(count):
        entry = phdr.unpack_from(table, index * phdr.size)
        yield (entry[0], entry[2], entry[5], entry[1]) if elf_class == 64 else (entry[0], entry[1], entry[4],
                                                                                entry[6])


def _flags_1(fd: int, dynamic: tuple[int, int], elf_class: int) -> int:
    """DT_FLAGS_1 of the dynamic segment at (offset, size) in the file (0 when it has none)."""
    offset, size = dynamic
    data = os.pread(fd, min(size, 1 << 16), offset)
    entry = _DYN[elf_class]
    for at in range(0, len(data) - entry.size + 1, entry.size):
        tag, value = entry.unpack_from(data, at)
        if tag == 0:
            break
        if tag == _DT_FLAGS_1:
            return value
    return 0


_MESSAGES: dict[str, str] = {
    "too-short": "file too short",
    "not-elf": "invalid ELF header",
    "truncated": "cannot read file data",
    "cut-segments": "file ends inside a PT_LOAD segment (dlopen maps it and the process dies of SIGBUS)",
    "fifo": "a FIFO (named pipe): glibc's open() of it blocks until something writes to it, and dlopen hangs",
    "device": "a device, not a library: glibc opens and reads it, and rejects what it reads",
    "executable": "cannot dynamically load executable",
    "pie": "cannot dynamically load position-independent executable",
    "no-dynamic": "object file has no dynamic section",
    "noopen": "shared object cannot be dlopen()ed",
    "execstack": "cannot enable executable stack as shared object requires",
    "noexec": "failed to map segment from shared object",
}


def _fatal_message(path: str, probe: _Probe, name: str | None = None) -> str | None:
    """dlerror's text for a file that ends the lookup: open_verify names the file it tried, the mapping's checks
    (_dl_map_object_from_fd) the name asked for; an errno is spelled out after the words."""
    reason = probe.reason if probe.outcome == "bad-elf" else _MESSAGES.get(probe.outcome)
    if not reason:
        return None
    subject = name if name is not None and probe.outcome in _AFTER_MAPPING else path
    return f"{subject}: {reason}" + (f": {os.strerror(probe.code)}" if probe.code else "")


def opening(path: str, env: LinkerEnv) -> tuple[Outcome, str | None]:
    """What dlopen of ``path`` by its full path meets first: the outcome, and dlerror's text when it fails."""
    probe = _probe(path, env)
    if probe.outcome == "found":
        return probe.outcome, None
    return probe.outcome, _fatal_message(path, probe) or (
        f"{path}: cannot open shared object file: {os.strerror(probe.code)}" if probe.code
        else f"{path}: {probe.outcome}")


# --- the real linker of this machine -------------------------------------------------

_PROBE_LIB = "/cudnnload-probe-lib"
_PROBE_PLATFORM = "/cudnnload-probe-platform"
_PROBE_NAME = "libcudnnload-probe-absent.so"
_SEARCH_LINE = re.compile(r"search path=(.*?)\s+\((LD_LIBRARY_PATH|system search path)\)\s*$")
_HOST_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG", "LD_DEBUG_OUTPUT", "LD_AUDIT")


def probe_linker_defaults(environ: Mapping[str, str] | None = None, program: str = "/bin/sh") -> LinkerDefaults:
    """Ask the real ld.so: run ``program`` once with ``LD_DEBUG=libs``, an LD_LIBRARY_PATH of
    two marker directories using ``$LIB`` and ``$PLATFORM``, and an LD_PRELOAD that
    cannot be found. Its trace then shows the expanded tokens, the hwcaps
    subdirectories tried in every directory (they depend on the CPU and on
    GLIBC_TUNABLES/LD_HWCAP_MASK, hence ``environ``) and the system search path.
    Falls back to upstream defaults, saying why in ``source``."""
    env = {key: value for key, value in (os.environ if environ is None else environ).items()
           if key not in _HOST_VARIABLES}
    env.update(LD_DEBUG="libs", LD_PRELOAD=_PROBE_NAME,
               LD_LIBRARY_PATH=f"{_PROBE_LIB}/$LIB:{_PROBE_PLATFORM}/$PLATFORM")
    host = _host_elf(sys.executable)
    fallback = LinkerDefaults(elf_class=host[0], machine=host[1])
    import subprocess  # 10 ms to import: only when the linker is really probed

    try:
        run = subprocess.run([program, "-c", ":"], env=env, capture_output=True, text=True, timeout=30,
                             check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return replace(fallback, source=f"upstream glibc defaults; probe failed: {exc}")
    parsed = _parse_probe(run.stderr)
    if isinstance(parsed, str):
        return replace(fallback, source=f"upstream glibc defaults; {parsed}")
    default_dirs, subdirs, lib, platform = parsed
    return LinkerDefaults(default_dirs, subdirs, lib, platform, host[0], host[1],
                          f"LD_DEBUG=libs trace of {program}")


def _parse_probe(trace: str) -> tuple[tuple[str, ...], tuple[str, ...], str, str | None] | str:
    lists: dict[str, list[str]] = {}
    for line in trace.splitlines():
        match = _SEARCH_LINE.search(line)
        if match:
            lists.setdefault(match.group(2), match.group(1).split(":"))
    if "LD_LIBRARY_PATH" not in lists or "system search path" not in lists:
        return "no LD_DEBUG=libs search trace (not glibc?)"
    lib = _marker_group(lists["LD_LIBRARY_PATH"], _PROBE_LIB)
    platform = _marker_group(lists["LD_LIBRARY_PATH"], _PROBE_PLATFORM)
    if lib is None:
        return "unexpected LD_DEBUG trace"
    subdirs, lib_value = lib
    system = lists["system search path"]
    bases = system[len(subdirs) - 1::len(subdirs)]
    expected = [os.path.join(base, sub).rstrip("/") for base in bases for sub in subdirs]
    if expected != [entry.rstrip("/") for entry in system]:
        return "unexpected system search path in LD_DEBUG trace"
    return tuple(bases), subdirs, lib_value, platform[1] if platform else None


def _marker_group(entries: list[str], marker: str) -> tuple[tuple[str, ...], str] | None:
    """Subdirectories and token value from the entries ld.so built for ``marker/$TOKEN``."""
    group = [entry for entry in entries if entry.startswith(marker + "/")]
    if not group:
        return None
    base = group[-1]  # the directory itself comes last
    if not all(entry == base or entry.startswith(base + "/") for entry in group):
        return None
    return tuple(entry[len(base) + 1:] for entry in group), base[len(marker) + 1:]


def _host_elf(path: str) -> tuple[int, str]:
    """ELF class and machine name of this process's executable (the defaults' when unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return LinkerDefaults.elf_class, LinkerDefaults.machine
    number = int.from_bytes(head[18:20], sys.byteorder)
    machine = next((name for name, value in MACHINES.items() if value == number), f"EM_{number}")
    return (32 if head[4] == 1 else 64), machine


def default_dirs(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The directories this machine's ld.so searches last (its system search path)."""
    return probe_linker_defaults(environ).default_dirs
