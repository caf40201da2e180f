"""What glibc's dynamic linker would open for a name, asked for by a given object, in a given process.

A model of ``_dl_map_object``, ``open_path`` and ``open_verify`` in glibc
``elf/dl-load.c`` (2.36), checked against the real ``ld.so`` (``LD_DEBUG=libs``
and ``/proc/self/maps``) by tests/test_linker.py. For a name without a '/':

0. an object already in the process whose soname, or a name it was opened
   under, equals the name is returned without any search;
1. DT_RPATH of the requester, then of the object whose DT_NEEDED loaded it, and
   on up the chain, then of the executable; all of it only when the requester
   itself has no DT_RUNPATH. An object of the chain with DT_RUNPATH contributes
   nothing (its DT_RPATH is ignored) but does not stop the walk;
2. LD_LIBRARY_PATH;
3. DT_RUNPATH of the requester (never inherited);
4. ld.so.cache; with DF_1_NODEFLIB on the requester only entries outside the
   default directories count;
5. the default directories, unless the requester has DF_1_NODEFLIB.

Every directory is tried with each hwcaps subdirectory first
(``glibc-hwcaps/x86-64-v3/``, and before glibc 2.37 legacy ones like ``tls/``).
A file of the other ELF class or machine is skipped; a file that is not a
loadable ELF file ends the whole lookup with an error; an open() error other
than ENOENT/EACCES (a symlink loop) abandons the rest of that search list.
Names with a '/' are opened as given, after ``$ORIGIN``/``$LIB``/``$PLATFORM``
expansion. Secure (setuid) mode is not modelled.

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
from typing import Literal

from cudnnload.resolve.elf import ElfInfo, read_elf
from cudnnload.resolve.ldcache import LD_SO_CACHE, LdCache, accepted_flags, read_ld_cache

Rule = Literal[
    "already-loaded", "direct-path", "rpath", "ld-library-path", "runpath", "ld-cache", "default-dirs", "not-found",
]
Outcome = Literal[
    "found",
    "absent",  # directory exists, file does not
    "no-dir",  # directory does not exist (glibc then stops trying it)
    "broken-symlink",  # ENOENT through a dangling symlink: skipped
    "no-access",  # EACCES: skipped
    "nodeflib",  # ld.so.cache entry in a default directory, requester has DF_1_NODEFLIB: skipped
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
]

# glibc open_path: after these the next candidate is tried; after _ABANDON the
# next search list; after _FATAL open_verify calls _dl_signal_error and dlopen fails.
_SKIPPED: frozenset[str] = frozenset(
    {"absent", "no-dir", "broken-symlink", "no-access", "nodeflib", "wrong-class", "wrong-machine"})
_ABANDON: frozenset[str] = frozenset({"symlink-loop", "open-error"})

DF_1_NODEFLIB = 0x800

# e_machine numbers (elf.h) for the names pyelftools gives; cudnnload.resolve.elf reports those names.
MACHINES: dict[str, int] = {
    "EM_386": 3, "EM_PPC64": 21, "EM_S390": 22, "EM_ARM": 40, "EM_X86_64": 62, "EM_AARCH64": 183, "EM_RISCV": 243,
}


@dataclass(frozen=True)
class Requester:
    """One object that asks for a library (glibc's ``struct link_map``, the parts a search reads)."""

    path: str  # as opened (l_name), not resolved: $ORIGIN is its directory
    rpath: tuple[str, ...] = ()  # DT_RPATH, unexpanded; ignored by glibc when runpath is set
    runpath: tuple[str, ...] = ()  # DT_RUNPATH, unexpanded
    flags_1: int = 0  # DT_FLAGS_1
    origin: str | None = None  # $ORIGIN when it is not the directory of path (the executable)

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
        return replace(cls.from_file(path), origin=os.path.dirname(os.path.realpath(path)))


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LinkerEnv:
    """The process a lookup happens in. ``loaded`` maps each name an object already in the
    process answers to (its soname, or a name or path it was opened under) to its path."""

    ld_library_path: tuple[str, ...] = ()  # entries as split by glibc on ':' and ';', unexpanded
    ld_cache: LdCache = LdCache("", "")
    defaults: LinkerDefaults = LinkerDefaults()
    loaded: Mapping[str, str] = field(default_factory=dict)
    executable: Requester | None = None
    # Directory contents read during this env's lookups: a name absent from a listing needs no
    # open(); ld.so likewise remembers directories that do not exist. One env per query, so a
    # change on disk is seen by the next query.
    listings: dict[str, frozenset[str] | bool] = field(default_factory=dict, compare=False, repr=False)
    subfolders: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    # (st_dev, st_ino) of each path looked at for `_same_file`, None when it cannot be stat'ed: a running
    # process has hundreds of objects mapped, each read once per query, not once per name
    identities: dict[str, tuple[int, int] | None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_environ(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        loaded: Mapping[str, str] | None = None,
        executable: Requester | None = None,
        cache_path: str = LD_SO_CACHE,
        defaults: LinkerDefaults | None = None,
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
        )

    def folders(self, directory: str) -> tuple[str, ...]:
        """``directory`` with each hwcaps subdirectory first, in the order ld.so tries them."""
        if directory not in self.subfolders:
            base = directory if directory.endswith("/") or not directory else f"{directory}/"
            self.subfolders[directory] = tuple(f"{base}{sub}".rstrip("/") if sub else directory
                                               for sub in self.defaults.subdirs)
        return self.subfolders[directory]

    def listing(self, directory: str) -> frozenset[str] | bool:
        """Names in ``directory``; False when it does not exist; True when it exists but cannot be
        listed (then open() on each candidate decides, as for ld.so)."""
        if directory not in self.listings:
            try:
                self.listings[directory] = frozenset(os.listdir(directory or "."))
            except OSError as exc:
                self.listings[directory] = exc.errno not in (errno.ENOENT, errno.ENOTDIR)
        return self.listings[directory]


@dataclass(frozen=True)
class Attempt:
    path: str
    rule: Rule
    outcome: Outcome


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


def split_ld_library_path(value: str) -> tuple[str, ...]:
    """LD_LIBRARY_PATH as _dl_init_paths splits it: on ':' and ';'; empty means unset.
    An empty element stands for the current directory."""
    return tuple(re.split(r"[:;]", value)) if value else ()


def resolve(name: str, chain: Chain | None, env: LinkerEnv) -> Resolution:
    """What ``dlopen(name)``, or a DT_NEEDED entry ``name``, of the first object of ``chain`` opens.

    No chain (or an empty one) means the executable asks: dlopen falls back to
    the main program's map when no object contains the caller.
    """
    if chain is None or not chain.links:
        chain = Chain((env.executable,) if env.executable is not None else ())
    asker = chain.requester
    loaded = _already_loaded(name, env.loaded)
    if loaded is not None:
        return Resolution(name, loaded, "already-loaded")
    if "/" in name:
        return _same_file(_open_direct(name, asker, env), env)
    trail: list[Attempt] = []
    for step in _STEPS:
        result = step(name, chain, env, trail)
        if result is not None:
            return _same_file(result, env)
    return Resolution(name, None, "not-found", trail=tuple(trail), error=f"{name}: {_not_found(trail, env)}")


def _same_file(result: Resolution, env: LinkerEnv) -> Resolution:
    """The object already in the process when the file picked is one it has mapped under another name (a hard
    link, a bind mount, another path to it): _dl_map_object_from_fd compares the file's (st_dev, st_ino) with
    every loaded object's and hands that one out again."""
    if result.path is None or result.error is not None or not env.loaded:
        return result
    found = _identity(result.path, env)
    if found is None:
        return result
    for other in dict.fromkeys(env.loaded.values()):
        if other != result.path and _identity(other, env) == found:
            return Resolution(result.name, other, "already-loaded", trail=result.trail)
    return result


def _identity(path: str, env: LinkerEnv) -> tuple[int, int] | None:
    if path not in env.identities:
        try:
            info = os.stat(path)
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
    return replace(results[-1], trail=tuple(attempt for result in results for attempt in result.trail))


def _already_loaded(name: str, loaded: Mapping[str, str]) -> str | None:
    """_dl_name_match_p plus the soname check at the top of _dl_map_object."""
    if name in loaded:
        return loaded[name]
    return next((path for path in loaded.values() if path == name), None)


def _open_direct(name: str, asker: Requester | None, env: LinkerEnv) -> Resolution:
    path = expand(name, asker, env.defaults) if asker is not None else name
    if path is None:
        return Resolution(name, None, "not-found", error=f"{name}: cannot expand $ORIGIN")
    outcome = _probe(path, env.defaults)
    trail = (Attempt(path, "direct-path", outcome),)
    if outcome not in _SKIPPED | _ABANDON:
        return Resolution(name, path, "direct-path", trail=trail, error=_fatal_message(path, outcome))
    return Resolution(name, None, "not-found", trail=trail, error=f"{path}: {_not_found(trail, env)}")


def _not_found(trail: Sequence[Attempt], env: LinkerEnv) -> str:
    """dlerror's reason when nothing was picked: _dl_map_object names the other class if it saw one."""
    if any(attempt.outcome == "wrong-class" for attempt in trail):
        return f"wrong ELF class: ELFCLASS{96 - env.defaults.elf_class}"
    return "cannot open shared object file: No such file or directory"


_Step = Callable[[str, Chain, LinkerEnv, list[Attempt]], Resolution | None]


def _search_rpaths(name: str, chain: Chain, env: LinkerEnv, trail: list[Attempt]) -> Resolution | None:
    """DT_RPATH of the chain, then of the executable; skipped when the requester has DT_RUNPATH."""
    if chain.requester is not None and chain.requester.runpath:
        return None
    owners = chain.links + (
        (env.executable,) if env.executable is not None and env.executable not in chain.links else ())
    for owner in owners:
        if owner.rpath and not owner.runpath:  # get-dynamic-info.h drops DT_RPATH beside DT_RUNPATH
            found = _search_list(name, expand_all(owner.rpath, owner, env.defaults), "rpath", owner.path, env,
                                 trail)
            if found is not None:
                return found
    return None


def _search_ld_library_path(name: str, chain: Chain, env: LinkerEnv, trail: list[Attempt]) -> Resolution | None:
    """$ORIGIN in LD_LIBRARY_PATH is the executable's (_dl_init_paths expands it with the main map)."""
    dirs = expand_all(env.ld_library_path, env.executable, env.defaults)
    return _search_list(name, dirs, "ld-library-path", None, env, trail)


def _search_runpath(name: str, chain: Chain, env: LinkerEnv, trail: list[Attempt]) -> Resolution | None:
    asker = chain.requester
    if asker is None or not asker.runpath:
        return None
    return _search_list(name, expand_all(asker.runpath, asker, env.defaults), "runpath", asker.path, env, trail)


def _search_ld_cache(name: str, chain: Chain, env: LinkerEnv, trail: list[Attempt]) -> Resolution | None:
    defaults, asker = env.defaults, chain.requester
    entry = env.ld_cache.lookup(name, accepted_flags(defaults.elf_class, defaults.machine), defaults.glibc_hwcaps)
    if entry is None:
        return None
    # dl-load.c compares the cached path with each system dir, trailing '/' included.
    in_default_dir = any(entry.path.startswith(directory.rstrip("/") + "/") for directory in defaults.default_dirs)
    outcome: Outcome = "nodeflib" if asker is not None and asker.nodeflib and in_default_dir else _probe(
        entry.path, defaults)
    trail.append(Attempt(entry.path, "ld-cache", outcome))
    if outcome in _SKIPPED | _ABANDON:
        return None
    return Resolution(name, entry.path, "ld-cache", (os.path.dirname(entry.path),), env.ld_cache.path,
                      tuple(trail), _fatal_message(entry.path, outcome))


def _search_default_dirs(name: str, chain: Chain, env: LinkerEnv, trail: list[Attempt]) -> Resolution | None:
    if chain.requester is not None and chain.requester.nodeflib:
        return None
    return _search_list(name, env.defaults.default_dirs, "default-dirs", None, env, trail)


_STEPS: tuple[_Step, ...] = (
    _search_rpaths, _search_ld_library_path, _search_runpath, _search_ld_cache, _search_default_dirs,
)


def _search_list(
    name: str, dirs: tuple[str, ...], rule: Rule, via: str | None, env: LinkerEnv, trail: list[Attempt]
) -> Resolution | None:
    """open_path: every directory, every subdirectory; None when the list yields nothing usable."""
    stop = _SKIPPED | _ABANDON
    firsts = env.defaults.first_parts
    for directory in dirs:
        outcome: Outcome = "absent"
        top = env.listing(directory)
        for folder, first in zip(env.folders(directory), firsts, strict=True):
            # a subfolder whose first part the directory's listing lacks does not exist: no syscall for it
            # (a linear search of 3 000 LD_LIBRARY_PATH entries in milliseconds, not seconds: issue 29)
            names = False if top is False or (first and top is not True and first not in top) else env.listing(folder)
            if names is False and first:
                outcome = "no-dir"  # a hwcaps subfolder that is not there: said nowhere, so not kept either
                continue
            candidate = f"{folder}/{name}" if folder and folder != "/" else f"{folder}{name}"
            outcome = ("no-dir" if names is False else "absent" if names is not True and name not in names
                       else _probe(candidate, env.defaults))
            trail.append(Attempt(candidate, rule, outcome))
            if outcome not in stop:
                return Resolution(name, candidate, rule, dirs, via, tuple(trail), _fatal_message(candidate, outcome))
        # The errno of the directory's last try decides (open_path: "here_any && errno != ENOENT").
        if outcome in _ABANDON:
            return None
    return None


def expand_all(entries: tuple[str, ...], owner: Requester | None, defaults: LinkerDefaults) -> tuple[str, ...]:
    """A search list as fillin_rpath builds it: DSTs expanded, elements whose DST has no value
    dropped, trailing slashes removed, duplicates dropped (first one kept)."""
    dirs: dict[str, None] = {}  # ordered, and a duplicate found in constant time
    for entry in entries:
        directory = (expand(entry, owner, defaults) if "$" in entry else entry) if entry else ""  # "": here
        if directory is None or (entry and not directory):
            continue
        dirs.setdefault(directory.rstrip("/") or ("/" if directory else ""))
    return tuple(dirs)


# is_dst in dl-load.c: $NAME not followed by an identifier character, or ${NAME}.
_DST = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")


def expand(text: str, owner: Requester | None, defaults: LinkerDefaults) -> str | None:
    """``$ORIGIN``/``${ORIGIN}``, ``$LIB``, ``$PLATFORM`` substituted (_dl_dst_substitute);
    None when a token has no value, which makes glibc drop the element. Other
    ``$`` sequences stay as they are."""
    values = {"ORIGIN": owner.origin_dir if owner is not None else None, "LIB": defaults.lib,
              "PLATFORM": defaults.platform}
    missing = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal missing
        value = values[match.group(1) or match.group(2)]
        missing = missing or value is None
        return value or ""

    expanded = _DST.sub(substitute, text)
    return None if missing else expanded


_EHDR = {64: struct.Struct("<16sHHIQQQIHHHHHH"), 32: struct.Struct("<16sHHIIIIIHHHHHH")}
_PHDR = {64: struct.Struct("<IIQQQQQQ"), 32: struct.Struct("<IIIIIIII")}
_PT_LOAD = 1
_FILEBUF = 832  # struct filebuf in dl-load.c: what open_verify reads first


def _probe(path: str, defaults: LinkerDefaults) -> Outcome:
    """open_verify for one candidate: open it and check what glibc checks before mapping. Only a
    regular file (or a folder, which glibc opens and fails to read) is opened: glibc blocks on a FIFO,
    gets ENXIO from a socket (an open() error: the search list is abandoned) and reads a device."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return _open_failure(path, exc.errno)
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "open-error"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return _open_failure(path, exc.errno)
    try:
        return _check_header(fd, defaults)
    except OSError:  # a directory (EISDIR) or an I/O error: "cannot read file data"
        return "truncated"
    finally:
        os.close(fd)


def _open_failure(path: str, code: int | None) -> Outcome:
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        return "no-dir"
    if code == errno.ENOENT:
        return "broken-symlink" if os.path.islink(path) else "absent"
    if code == errno.EACCES:
        return "no-access"
    return "symlink-loop" if code == errno.ELOOP else "open-error"


def _check_header(fd: int, defaults: LinkerDefaults) -> Outcome:
    """The checks of open_verify, in its order, plus a truncation check it lacks: glibc maps
    PT_LOAD segments past the end of the file and the process dies of SIGBUS."""
    size = os.fstat(fd).st_size
    head = os.read(fd, _FILEBUF)
    ehdr, phdr = _EHDR[defaults.elf_class], _PHDR[defaults.elf_class]
    if len(head) < ehdr.size:
        return "too-short"
    if head[:4] != b"\x7fELF":
        return "not-elf"
    if head[4] != defaults.elf_class // 32:  # ELFCLASS32 = 1, ELFCLASS64 = 2
        return "wrong-class"
    if head[5] != (1 if sys.byteorder == "little" else 2) or head[6] != 1:  # EI_DATA, EI_VERSION
        return "bad-elf"
    (_ident, e_type, e_machine, e_version, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum,
     *_sections) = ehdr.unpack_from(head)
    if e_version != 1:
        return "bad-elf"
    if e_machine != MACHINES.get(defaults.machine):
        return "wrong-machine"
    if e_type not in (2, 3) or phentsize != phdr.size:  # ET_EXEC, ET_DYN
        return "bad-elf"
    # open_verify takes the table from the bytes it read first when it lies there, else preads it; that
    # pread fails for an offset of 2**63 or more (a negative off_t), even of 0 bytes, and comes back short
    # past the end of the file: "cannot read file data". Python's pread raises OverflowError for such an
    # offset, so the outcome is decided before it. (An offset whose sum with the length wraps around
    # 2**64 into the first bytes makes glibc read outside its buffer: fatal too, with another message.)
    length = phnum * phdr.size
    if phoff + length > len(head) and (phoff >= 1 << 63 or (length and phoff + length > size)):
        return "truncated"
    table = os.pread(fd, length, phoff)
    if len(table) < length:
        return "truncated"
    for p_type, p_offset, p_filesz in _segments(table, phnum, defaults.elf_class):
        if p_type == _PT_LOAD and p_offset + p_filesz > size:
            return "cut-segments"
    return "found"


def _segments(table: bytes, count: int, elf_class: int) -> Iterator[tuple[int, int, int]]:
    """(p_type, p_offset, p_filesz) of each program header."""
    phdr = _PHDR[elf_class]
    for index in range(count):
        entry = phdr.unpack_from(table, index * phdr.size)
        yield (entry[0], entry[2], entry[5]) if elf_class == 64 else (entry[0], entry[1], entry[4])


_MESSAGES: dict[str, str] = {
    "too-short": "file too short",
    "not-elf": "invalid ELF header",
    "bad-elf": "not a loadable ELF object for this machine (data encoding, version or type)",
    "truncated": "cannot read file data",
    "cut-segments": "file ends inside a PT_LOAD segment (dlopen maps it and the process dies of SIGBUS)",
    "fifo": "a FIFO (named pipe): glibc's open() of it blocks until something writes to it, and dlopen hangs",
    "device": "a device, not a library: glibc opens and reads it, and rejects what it reads",
}


def _fatal_message(path: str, outcome: Outcome) -> str | None:
    reason = _MESSAGES.get(outcome)
    return f"{path}: {reason}" if reason else None


def opening(path: str, env: LinkerEnv) -> tuple[Outcome, str | None]:
    """What dlopen of ``path`` by its full path meets first: the outcome, and dlerror's text when it fails."""
    outcome = _probe(path, env.defaults)
    return outcome, _fatal_message(path, outcome) or (None if outcome == "found" else f"{path}: {outcome}")


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
