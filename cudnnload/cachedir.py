"""Where cudnnload keeps what it remembers between processes (ELF facts, load verdicts, algorithm
choices), and how: data only, in a folder only its owner can write.

The caches are JSON: reading one can build strings, numbers, lists and the result records this module
is given the names of, never run code (a pickle can). The folder is created with mode 0700. As ssh does
for its keys, a cache folder or file is ignored, with one warning line, when it is not owned by the
current user or is writable by group or others, or when a folder above it is writable by others
without the sticky bit (anyone could swap the folder). A file that is not a regular file, or is larger
than ``MAX_BYTES``, is ignored too.

Nothing read is trusted: a file must be JSON (without NaN or Infinity) nested at most ``MAX_DEPTH``
deep, laid out as its `Layout` says, and each entry must have the types its record classes declare when
it is revived (`revive`). Anything else is ignored with one warning line naming the file and the reason,
and rebuilt: the entry by its user, the file by the next write. Writers merge (`write_entries`): under a
lock, each reads the file again, adds its entries as the newest, drops the oldest beyond the file's
bounds, and replaces the file atomically; so processes on different installs keep each other's entries.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Mapping
from enum import Enum

# glibc's preload file: what every process maps first, before LD_PRELOAD (elf/rtld.c)
PRELOAD_FILE = "/etc/ld.so.preload"

TYPE_CHECKING = False  # typing costs ~10 ms to import; type checkers treat this name as true
if TYPE_CHECKING:
    from typing import Any, TextIO

    Key = tuple[str, ...]  # an entry's keys, its section's first
    Kinds = Mapping[str, Callable[..., Any]]  # the classes a revive may make, by name
    # A parsed shape: (kind, text, arguments). kind "int", "str", "bool", "None": no arguments; "union": the
    # alternatives; "tuple": one shape per item; "tuple...", "list", "dict": the items' shape; "record": the
    # class's name.
    Shape = tuple[str, str, Any]

MAX_BYTES = 32 << 20  # larger was not written by cudnnload: writers drop their oldest entries to stay below
MAX_DEPTH = 32  # deeper nesting was not written by cudnnload (the ELF memo's records nest 8 deep)
LOCK_WAIT_S = 3.0  # a writer waits this long for another's lock, then skips its write (nothing is lost but time)
_INT_LIMIT = 1 << 63  # an int outside +-2**63 fits no field cudnnload writes (sizes, inodes, ns times, counts)
_warned: set[str] = set()


def cache_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """``$CUDNNLOAD_CACHE``, else ``$XDG_CACHE_HOME/cudnnload``, else ``$HOME/.cache/cudnnload``, else the
    same in this user's home as the password database has it; None when ``CUDNNLOAD_NO_CACHE`` is set, or
    when that folder cannot be trusted (then nothing is read or written there, and one warning line says
    why). As the XDG base directory rules say, an empty or relative value is ignored (a relative one with a
    warning line: it would be wherever the command runs). A folder found through HOME or XDG_CACHE_HOME
    that would be made in another user's folder (root run by ``sudo -E`` keeps the user's HOME) is not: the
    cache goes to this user's own home instead, and a warning line says where. A home folder that does not
    exist is not made: then no cache is kept, and a warning line says why."""
    env = os.environ if environ is None else environ
    if env.get("CUDNNLOAD_NO_CACHE"):
        return None
    given = _absolute(env, "CUDNNLOAD_CACHE")
    xdg = _absolute(env, "XDG_CACHE_HOME")
    home = _absolute(env, "HOME") or _own_home()
    folder = os.path.normpath(given or os.path.join(xdg or os.path.join(home, ".cache"), "cudnnload"))
    if given is None and xdg is None and not os.path.isdir(home):
        # a home is nobody's to make: HOME=/nonexistent/x made /nonexistent/x/.cache as root, and Debian gives
        # its system users the home /nonexistent, which must stay absent
        what = "is not a folder" if os.path.lexists(home) else "does not exist"
        warn_once(home, f"not making the cache folder {folder}: the home folder {home} {what}")
        return None
    if given is None and (theirs := _creation_problem(folder)) is not None:
        mine = os.path.join(_own_home(), ".cache", "cudnnload")
        warn_once(folder, f"not making the cache folder {folder}: {theirs}; using {mine}")
        folder = mine
    problem = folder_problem(folder)
    if problem is not None:
        warn_once(folder, f"not using the cache folder {folder}: {problem}")
        return None
    return folder


def _absolute(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value when it is an absolute path; None when it is unset or empty, and with one warning
    line when it is relative."""
    value = env.get(name) or ""
    if value and not value.startswith("/"):
        warn_once(name, f"ignoring {name}={value!r}: a cache folder is an absolute path (a relative one would be "
                  "wherever the command runs)")
    return value if value.startswith("/") else None


def _own_home() -> str:
    """This user's home folder, from the password database (not HOME); "/" when it has none."""
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_dir or "/"
    except KeyError:
        return "/"


def ownership(path: str, follow: bool = True) -> os.stat_result:
    """``path``'s metadata, of which only the type, mode, owner and group are read (what `recall` notes of it: a
    folder's times move with every file added to it)."""
    return os.stat(path) if follow else os.lstat(path)


def _creation_problem(folder: str) -> str | None:
    """Why ``folder`` must not be made here: the nearest folder above it that exists belongs to another user
    (not root, not this one), whose home it then is; None when it exists, or may be made."""
    existing = folder
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if existing == folder:
        return None
    try:
        owner = ownership(existing).st_uid
    except OSError:
        return None  # making it fails, and says why
    if owner in (0, os.geteuid()):
        return None
    import pwd

    try:
        name = pwd.getpwuid(owner).pw_name
    except KeyError:
        name = f"uid {owner}"
    return f"{existing} belongs to {name}, not to this user (uid {os.geteuid()})"


def folder_problem(folder: str) -> str | None:
    """Why ``folder`` cannot hold cudnnload's caches, or None. A folder that does not exist yet is
    judged by the folders above it (it will be created with mode 0700)."""
    uid = os.geteuid()
    try:
        info = ownership(folder)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if info is not None:
        if not stat.S_ISDIR(info.st_mode):
            return "it is not a folder"
        if info.st_uid != uid:
            return f"it belongs to uid {info.st_uid}, not to this user (uid {uid}); fix: use a folder of your own"
        if info.st_mode & 0o022:
            return (f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o}); "
                    f"fix: chmod 700 {folder}")
    parent = os.path.dirname(folder)
    while True:
        try:
            above = ownership(parent)
        except OSError:
            above = None
        if above is not None and above.st_mode & 0o002 and not above.st_mode & stat.S_ISVTX:
            return (f"{parent} above it is writable by everyone without the sticky bit (anyone could replace "
                    "the cache folder); fix: point CUDNNLOAD_CACHE at a folder of your own")
        if above is not None and above.st_uid not in (0, uid) and above.st_mode & 0o022:
            return f"{parent} above it belongs to uid {above.st_uid} and others can write to it"
        if parent == os.path.dirname(parent):
            return None
        parent = os.path.dirname(parent)


def stamp(path: str) -> tuple[int, int, int, int, int]:
    """(size, mtime_ns, inode, device, ctime_ns) of ``path`` (links followed): what is remembered of a file
    holds while these still match. The change time too: bytes written in place with the mtime put back
    (``touch -d``) leave size and mtime as they were, but the kernel moves ctime, and no one can set it.
    OSError when it cannot be read."""
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev, info.st_ctime_ns


def stamped(path: str) -> str:
    """``path`` and its `stamp` as text, or "absent" where it cannot be read: a folder stamped so moves when a file
    in it comes or goes, and one that comes into being (a wheel installed since) was absent."""
    try:
        return f"{path} {' '.join(map(str, stamp(path)))}"
    except OSError:
        return f"{path} absent"


def proven_under(env: Mapping[str, str]) -> tuple[str, ...]:
    """What a proof depends on besides its files, as text: the host and its boot (a driver or kernel module
    installed since; a home folder shared over NFS, a cache shared by containers with and without a GPU),
    glibc, and what the linker finds libraries with: ``/etc/ld.so.cache`` (ldconfig rewrites it when a
    library comes or goes, the driver's ``libcuda.so.1`` among them), ``/etc/ld.so.preload`` (what every process
    maps first: a probe remembered while it named the system's graph answered 9.14 for the venv's 9.19 once it was
    gone, on the H200) and each absolute LD_LIBRARY_PATH folder (a file added or removed there moves its change
    time). A few stats: the warm path stays lean."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
    except OSError:
        boot = "?"
    folders = [entry for entry in env.get("LD_LIBRARY_PATH", "").replace(";", ":").split(":") if entry.startswith("/")]
    return (os.uname().nodename, boot, os.confstr("CS_GNU_LIBC_VERSION") or "?",
            *(stamped(path) for path in dict.fromkeys(("/etc/ld.so.cache", PRELOAD_FILE, *folders))))


def warn_once(key: str, message: str) -> None:
    """One line on standard error, once per process for ``key``."""
    if key in _warned:
        return
    _warned.add(key)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"cudnnload: warning: {message}\n")


def read_json(path: str, limit: int = MAX_BYTES) -> Any | None:
    """The JSON in ``path``, or None: silently when it is missing, else with one warning line naming the
    file and the reason (unsafe, see the module docstring; larger than ``limit``; nested deeper than
    ``MAX_DEPTH``; not JSON, NaN and Infinity included). Opened without following a link, checked on the
    open file. A file of this user's that is damaged or too large is set aside (`_set_aside`), so no later
    command reads it again."""
    content, problem = _load(path, limit)
    if problem is not None:
        _ignored(path, problem)
    return content


def _load(path: str, limit: int = MAX_BYTES) -> tuple[Any, str | None]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None  # nothing remembered yet
    except OSError as exc:
        return None, "it is a symbolic link" if exc.errno == errno.ELOOP else f"it cannot be opened ({exc.strerror})"
    info = os.fstat(fd)
    problem = _file_problem(info, limit)
    if problem is not None:  # (a folder opens read-only too, and file objects refuse it: checked on the descriptor)
        os.close(fd)
        return None, problem
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(info.st_size + 1)
        except OSError as exc:
            return None, f"it cannot be read ({exc.strerror})"
    problem = _nesting_problem(data)
    if problem is not None:
        return None, problem
    import json

    try:
        return json.loads(data, parse_constant=_not_json, parse_float=_finite), None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a number beyond int's digit limit
        return None, f"it is not JSON ({exc})"
    except RecursionError:  # not JSON in a way that fooled the bracket count
        return None, "it is not JSON (nested too deep to read)"


def _ignored(path: str, problem: str) -> None:
    aside = _set_aside(path)
    warn_once(path, f"ignoring the cache file {path}: {problem}" + (f"; set aside as {aside}" if aside else ""))


def _set_aside(path: str) -> str | None:
    """Rename a damaged or oversized cache file of this user's to ``PATH.set-aside`` (replacing an older one)
    so that it is read once, not by every command until a write replaces it; None, and nothing renamed, for
    a file that is not a regular file of this user's that only they can write (not ours to move)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return None
    aside = f"{path}.set-aside"
    try:
        os.replace(path, aside)
    except OSError:
        return None
    return aside


_AS_SQUARE = bytes.maketrans(b"{}", b"[]")  # for counting levels, a bracket is a bracket
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def _nesting_problem(data: bytes) -> str | None:
    """Why ``data`` nests too deep to read, or None. json.loads recurses once per level and raises
    RecursionError past Python's limit (about 1000), so the depth is measured first, with bytes methods
    only (C speed; ``re`` is not imported on this path): escaped backslashes and quotes dropped, then what
    is inside strings, then all but brackets; each pass then removes the innermost pairs, one level."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(unescaped.split(b'"')[::2]).translate(_AS_SQUARE, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):
        if not brackets:
            return None
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            return "it is not JSON (its brackets do not pair up)"
        brackets = inner
    if brackets:
        return f"it is nested deeper than {MAX_DEPTH} levels (cudnnload writes no such file)"
    return None


def _not_json(literal: str) -> object:
    raise ValueError(f"{literal} is not a JSON number")


def _finite(literal: str) -> float:
    number = float(literal)
    if number - number != 0.0:  # inf - inf is nan
        raise ValueError(f"{literal} is beyond a double")
    return number


def _file_problem(info: os.stat_result, limit: int = MAX_BYTES) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.geteuid():
        return f"it belongs to uid {info.st_uid}, not to this user"
    if info.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    if info.st_size > limit:
        return f"it is {info.st_size} bytes, more than cudnnload writes ({limit})"
    return None


def write_json(path: str, content: object, limit: int = MAX_BYTES) -> bool:
    """Write ``content`` to ``path`` atomically (`files.write_atomic`), mode 0600 in a folder of mode
    0700. False when the folder cannot be written, or the text would be larger than ``limit`` (then
    nothing is written): a cache is never worth an error."""
    import json

    from cudnnload.files import write_atomic

    def dump(handle: TextIO) -> None:
        json.dump(content, handle, separators=(",", ":"), allow_nan=False)
        if handle.tell() > limit:
            raise ValueError(f"more than {limit} bytes")

    folder = os.path.dirname(path)
    if not _folder_ready(folder) or not write_atomic(path, dump, mode=0o600):
        return False
    _sweep(folder)
    return True


def _folder_ready(folder: str) -> bool:
    """``folder`` exists (made with mode 0700, never in another user's folder: `_creation_problem`) and can
    hold caches (`folder_problem`)."""
    if _creation_problem(folder) is not None:
        return False
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return folder_problem(folder) is None


def _sweep(folder: str, older_than_s: float = 3600.0) -> None:
    """Remove what writers killed mid-write left (``.tmp-*.json``, `write_atomic`'s, of more than an hour
    ago)."""
    import time

    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(".tmp-") and entry.name.endswith(".json"):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > older_than_s:
                        os.unlink(entry.path)


# --- cache files of entries ----------------------------------------------------------------------------

class Layout:
    """How one cache file holds its entries: ``{"format": FORMAT, SECTION: {KEY: ... {KEY: entry}}}``,
    ``depth`` keys from the top to an entry (its section's included), at most ``max_entries`` of them and
    ``max_bytes`` in all (every command that uses the file reads it whole: its size is their time).
    An entry is addressed by its keys, ``("plans", request)``; what an entry is, its user says when it
    revives it (`revive_entry`)."""

    __slots__ = ("name", "format", "sections", "depth", "max_entries", "_max_bytes")

    def __init__(self, name: str, format: int, sections: tuple[str, ...], depth: int, max_entries: int,
                 max_bytes: int | None = None) -> None:
        self.name, self.format, self.sections, self.depth, self.max_entries, self._max_bytes = (
            name, format, sections, depth, max_entries, max_bytes)

    @property
    def max_bytes(self) -> int:
        """This file's bound, never past `MAX_BYTES` (what any reader accepts)."""
        return MAX_BYTES if self._max_bytes is None else min(self._max_bytes, MAX_BYTES)

    def path(self, environ: Mapping[str, str] | None = None) -> str | None:
        """``NAME-vFORMAT.json`` in `cache_dir`; None when there is none."""
        root = cache_dir(environ)
        return None if root is None else os.path.join(root, f"{self.name}-v{self.format}.json")


def read_entries(path: str, layout: Layout) -> dict[Key, Any]:
    """The entries of the cache file at ``path``, oldest first: empty when it is missing, or (with one
    warning line, `read_json`) damaged or not of ``layout``. Each entry is JSON data, checked only when
    its user revives it (`revive_entry`)."""
    content = read_json(path, layout.max_bytes)
    entries: dict[Key, Any] = {}
    if content is None:
        return entries
    problem = _layout_problem(content, layout, entries)
    if problem is not None:
        _ignored(path, problem)
        return {}
    return entries


def _layout_problem(content: object, layout: Layout, entries: dict[Key, Any]) -> str | None:
    """Why ``content`` is not a file of ``layout``, or None; its entries go into ``entries``."""
    if not isinstance(content, dict) or type(content.get("format")) is not int or content["format"] != layout.format:
        return f"it is not a cudnnload cache of format {layout.format}"
    for section, table in content.items():
        if section == "format":
            continue
        if section not in layout.sections:
            return f"it has a section {section[:40]!r}, not one of {', '.join(layout.sections)}"
        problem = _flatten((section,), table, layout.depth, entries)
        if problem is not None:
            return problem
    if len(entries) > layout.max_entries:
        return f"it holds {len(entries)} entries, more than cudnnload keeps ({layout.max_entries})"
    return None


def _flatten(keys: Key, table: object, depth: int, into: dict[Key, Any]) -> str | None:
    if len(keys) == depth:
        into[keys] = table
        return None
    if not isinstance(table, dict):
        return f"{'/'.join(keys)} is {_kind(table)}, not an object"
    for key, value in table.items():
        problem = _flatten((*keys, key), value, depth, into)
        if problem is not None:
            return problem
    return None


def write_entries(path: str, layout: Layout, changes: Mapping[Key, object]) -> bool:
    """Merge ``changes`` into the cache file at ``path``, as one writer among many processes: under an
    exclusive lock on ``NAME.lock`` beside it, the file is read again, ``changes`` replace entries of the
    same keys and become the newest, and the whole is replaced atomically (`write_json`). To keep
    ``layout.max_entries`` and ``layout.max_bytes``, the entries first in the file go first: section by
    section, in each the ones written longest ago (past ``max_bytes``, the older half at a time). False, and
    nothing written, when the folder cannot be written or another process holds the lock for longer than
    ``LOCK_WAIT_S`` (a stuck writer must not stop this one's command)."""
    if not _folder_ready(os.path.dirname(path)):
        return False
    lock = _lock(path)
    if lock is None:
        return False
    try:
        entries = read_entries(path, layout)
        for key, value in changes.items():
            entries.pop(key, None)
            entries[key] = value
        kept = list(entries.items())[-layout.max_entries:]
        while not write_json(path, _nested(kept, layout), layout.max_bytes):
            if len(kept) <= 1:
                return False  # not writable at all
            kept = kept[len(kept) // 2:]  # larger than a reader takes: the older half goes
        return True
    finally:
        os.close(lock)  # releases the lock


def _nested(entries: list[tuple[Key, object]], layout: Layout) -> dict[str, object]:
    content: dict[str, Any] = {"format": layout.format, **{section: {} for section in layout.sections}}
    for keys, value in entries:
        table = content
        for key in keys[:-1]:
            table = table.setdefault(key, {})
        table[keys[-1]] = value
    return content


def _lock(path: str) -> int | None:
    """An open descriptor of ``PATH.lock`` (created 0600, never through a symbolic link) holding an
    exclusive ``flock``; None when that file is not a regular file of this user's or the lock is not
    free within ``LOCK_WAIT_S``. flock, not fcntl's record locks: a record lock is dropped when any
    descriptor of the file in the process closes; a flock lives with its open file and ends when that
    closes, also when the process is killed (flock(2); Linux's NFS client emulates it with a record
    lock on the server since 2.6.12)."""
    import fcntl
    import time

    lock = f"{path}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            warn_once(lock, f"not writing the cache file {path}: its lock {lock} is a symbolic link")
        return None
    problem = _file_problem(os.fstat(fd))
    if problem is not None:
        os.close(fd)
        warn_once(lock, f"not writing the cache file {path}: its lock {lock}: {problem}")
        return None
    deadline, pause = time.monotonic() + LOCK_WAIT_S, 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        except OSError:
            break  # ENOLCK: a file system without locks; writing unlocked could lose others' entries
    os.close(fd)
    return None


# --- records as data -----------------------------------------------------------------------------------

def plain(value: object) -> object:
    """``value`` as JSON data: a result record (named tuple) or dataclass becomes ``{"@": its class name,
    "f": [its fields]}``, a tuple a list; dict keys must be strings."""
    if isinstance(value, tuple):
        if hasattr(value, "_fields"):
            return {"@": type(value).__name__, "f": [plain(v) for v in value]}
        return [plain(v) for v in value]
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None:
        return {"@": type(value).__name__, "f": [plain(getattr(value, name)) for name in fields]}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def revive(value: object, shape: str, kinds: Kinds) -> Any:
    """The inverse of `plain`: JSON data ``value`` as the type ``shape`` names, written as an annotation
    (``int``, ``str``, ``bool``, ``None``, ``tuple[X, ...]``, ``tuple[X, Y]``, ``list[X]``,
    ``dict[str, X]``, ``X | Y``, or the name of a class in ``kinds``). A list becomes a tuple where a tuple
    is named; ``{"@": name, "f": [...]}`` becomes ``kinds[name](*fields)``, each field checked against that
    class's own annotations. Nothing else is made: ValueError says what does not fit (a wrong type, a
    tuple or record of another length, an int beyond 64 bits, a string holding NUL or a lone surrogate
    that no file name decodes to), and the caller drops the entry."""
    return _revive(value, _parsed(shape), kinds)


def revive_entry(path: str, stored: object, shape: str, kinds: Kinds,
                 check: Callable[[Any], str | None] | None = None) -> Any | None:
    """An entry of the cache file at ``path``, revived as ``shape`` (`revive`) and passing ``check`` (which
    says what is wrong with it, or None); else None, with one warning line naming the file. The caller
    then rebuilds the entry, and its next write replaces it."""
    try:
        value = revive(stored, shape, kinds)
        problem = check(value) if check is not None else None
    except ValueError as exc:
        problem = str(exc)
    if problem is None:
        return value
    warn_once(path, f"ignoring an entry of the cache file {path}: {problem}; it is rebuilt")
    return None


_shapes: dict[str, Shape] = {}
_fields: dict[object, tuple[tuple[str, Shape], ...]] = {}


def _parsed(original: str) -> Shape:
    shape = _shapes.get(original)
    if shape is None:
        text = original
        for mark in "[],|":
            text = text.replace(mark, f" {mark} ")
        tokens = text.split()
        shape, end = _union(tokens, 0)
        if end != len(tokens):
            raise TypeError(f"cannot read the shape {original!r}")
        _shapes[original] = shape
    return shape


def _union(tokens: list[str], at: int) -> tuple[Shape, int]:
    alternatives = []
    while True:
        shape, at = _primary(tokens, at)
        alternatives.append(shape)
        if at == len(tokens) or tokens[at] != "|":
            break
        at += 1
    if len(alternatives) == 1:
        return alternatives[0], at
    return ("union", " | ".join(a[1] for a in alternatives), tuple(alternatives)), at


def _primary(tokens: list[str], at: int) -> tuple[Shape, int]:
    name = tokens[at]
    at += 1
    if name in ("int", "str", "bool", "None"):
        return (name, name, ()), at
    if at == len(tokens) or tokens[at] != "[":
        return ("record", name, name), at
    items: list[Shape | None] = []
    while tokens[at] in ("[", ","):
        if tokens[at + 1] == "...":
            items.append(None)
            at += 2
        else:
            item, at = _union(tokens, at + 1)
            items.append(item)
    at += 1  # "]"
    text = f"{name}[{', '.join('...' if item is None else item[1] for item in items)}]"
    if name == "tuple" and items[-1] is None:
        return ("tuple...", text, items[0]), at
    if name == "tuple":
        return ("tuple", text, tuple(items)), at
    if name in ("list", "dict"):
        return (name, text, items[-1]), at  # dict keys: JSON's are strings
    raise TypeError(f"cannot read the shape {text!r}")


def _record_fields(make: Callable[..., Any]) -> tuple[tuple[str, Shape], ...]:
    """The names and shapes of a record's (named tuple, `resolve.records`) or dataclass's fields, in
    order, from its own annotations."""
    fields = _fields.get(make)
    if fields is None:
        declared = getattr(make, "__dataclass_fields__", None)
        if declared is not None:
            texts = {name: field.type for name, field in declared.items()}
        else:
            annotations = getattr(make, "__annotations__", {})
            texts = {name: annotations[name] for name in getattr(make, "_fields", ())}
        fields = _fields[make] = tuple((name, _parsed(text)) for name, text in texts.items())
    return fields


def _field(value: object, record: str, name: str, shape: Shape, kinds: Kinds) -> Any:
    try:
        return _revive(value, shape, kinds)
    except ValueError as exc:
        raise ValueError(f"{record}.{name}: {exc}") from None


def _revive(value: object, shape: Shape, kinds: Kinds) -> Any:
    kind, text, arguments = shape
    if kind == "str" and type(value) is str:
        if "\0" not in value:
            try:
                value.encode("utf-8", "surrogateescape")
                return value
            except UnicodeEncodeError:
                pass
    elif kind == "int" and type(value) is int:
        if -_INT_LIMIT <= value < _INT_LIMIT:
            return value
    elif kind == "bool" and type(value) is bool or kind == "None" and value is None:
        return value
    elif kind == "union":
        errors = []
        for alternative in arguments:
            try:
                return _revive(value, alternative, kinds)
            except ValueError as exc:
                errors.append((alternative[0], exc))
        meant = [exc for alternative, exc in errors if alternative != "None"]
        if value is not None and len(meant) == 1:
            raise meant[0]  # X | None: say what is wrong inside the X
    elif kind == "tuple..." and type(value) is list:
        if arguments[0] == "str" and all(type(item) is str for item in value):
            with contextlib.suppress(ValueError):  # names (cudnn_functions: hundreds), checked at once
                _revive("".join(value), arguments, kinds)
                return tuple(value)
        return tuple(_revive(item, arguments, kinds) for item in value)
    elif kind == "list" and type(value) is list:
        return [_revive(item, arguments, kinds) for item in value]
    elif kind == "dict" and type(value) is dict:
        return {key: _revive(item, arguments, kinds) for key, item in value.items()}
    elif kind == "tuple" and type(value) is list and len(value) == len(arguments):
        return tuple(_revive(item, each, kinds) for item, each in zip(value, arguments, strict=True))
    elif kind == "record" and type(value) is str and isinstance(word := kinds.get(arguments), type) \
            and issubclass(word, Enum):  # a word of an enum (`codes.Code`), stored as its value
        with contextlib.suppress(ValueError):
            return word(value)
    elif kind == "record" and type(value) is dict and value.keys() == {"@", "f"} and value["@"] == arguments:
        make = kinds.get(arguments)
        if make is None:
            raise TypeError(f"the shape {text} names no class of {sorted(kinds)}")  # the caller's mistake
        fields, stored = _record_fields(make), value["f"]
        if type(stored) is list and len(stored) == len(fields):
            return make(*(_field(item, arguments, name, each, kinds)
                          for item, (name, each) in zip(stored, fields, strict=True)))
    raise ValueError(f"{_kind(value)} where {text} belongs")


def _kind(value: object) -> str:
    """What ``value`` is, for a message: "int 5", "a list of 3", "the string 'x'", ..."""
    if isinstance(value, dict) and "@" in value:
        fields = value.get("f")
        return f"a {str(value['@'])[:40]!r} record" + (f" of {len(fields)} fields" if isinstance(fields, list) else "")
    if isinstance(value, (list, dict)):
        return f"{'a list' if isinstance(value, list) else 'an object'} of {len(value)}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "null" if value is None else f"{type(value).__name__} {str(value)[:40]}"
