"""Where cudnnload keeps what it remembers between processes (ELF facts, load verdicts, algorithm
choices), and how: data only, in a folder only its owner can write.

The caches are JSON: reading one can build strings, numbers, lists and the result records this module
is given the names of, never run code (a pickle can). The folder is created with mode 0700. As ssh does
for its keys, a cache folder or file is ignored, with one warning line, when it is not owned by the
current user or is writable by group or others, or when a folder above it is writable by others
without the sticky bit (anyone could swap the folder). A file that is not a regular file, or is larger
than ``MAX_BYTES``, is ignored too.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing costs ~10 ms to import; type checkers treat this name as true
if TYPE_CHECKING:
    from typing import Any

MAX_BYTES = 256 << 20  # a memo larger than this was not written by cudnnload
_warned: set[str] = set()


def cache_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """``$CUDNNLOAD_CACHE``, else ``$XDG_CACHE_HOME/cudnnload`` or ``~/.cache/cudnnload``; None when
    ``CUDNNLOAD_NO_CACHE`` is set, or when that folder cannot be trusted (then nothing is read or
    written there, and one warning line says why)."""
    env = os.environ if environ is None else environ
    if env.get("CUDNNLOAD_NO_CACHE"):
        return None
    folder = env.get("CUDNNLOAD_CACHE") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "cudnnload")
    folder = os.path.abspath(folder)
    problem = folder_problem(folder)
    if problem is not None:
        warn_once(folder, f"not using the cache folder {folder}: {problem}")
        return None
    return folder


def folder_problem(folder: str) -> str | None:
    """Why ``folder`` cannot hold cudnnload's caches, or None. A folder that does not exist yet is
    judged by the folders above it (it will be created with mode 0700)."""
    uid = os.geteuid()
    try:
        info = os.stat(folder)
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
            above = os.stat(parent)
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


def stamp(path: str) -> tuple[int, int, int, int]:
    """(size, mtime_ns, inode, device) of ``path`` (links followed): what is remembered of a file holds
    while these still match. OSError when it cannot be read."""
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev


def warn_once(key: str, message: str) -> None:
    """One line on standard error, once per process for ``key``."""
    if key in _warned:
        return
    _warned.add(key)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"cudnnload: warning: {message}\n")


def read_json(path: str) -> Any | None:
    """The JSON in ``path``, or None when it is missing, unsafe (see the module docstring), too large or
    not JSON. Opened without following a link, checked on the open file."""
    import json

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # missing, a symbolic link, or unreadable: nothing remembered
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        problem = _file_problem(info)
        if problem is not None:
            warn_once(path, f"ignoring the cache file {path}: {problem}")
            return None
        try:
            return json.loads(handle.read(info.st_size + 1))
        except (OSError, ValueError):
            return None  # truncated or garbage: rebuilt by the next write


def _file_problem(info: os.stat_result) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != os.geteuid():
        return f"it belongs to uid {info.st_uid}, not to this user"
    if info.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    if info.st_size > MAX_BYTES:
        return f"it is {info.st_size} bytes, more than cudnnload writes"
    return None


def write_json(path: str, content: object) -> bool:
    """Write ``content`` to ``path`` atomically (`files.write_atomic`), mode 0600 in a folder of mode
    0700. False when the folder cannot be written: a cache is never worth an error."""
    import json

    from cudnnload.files import write_atomic

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if folder_problem(folder) is not None or not write_atomic(
            path, lambda handle: json.dump(content, handle, separators=(",", ":")), mode=0o600):
        return False
    _sweep(folder)
    return True


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


def revive(value: object, kinds: Mapping[str, Callable[..., Any]]) -> Any:
    """The inverse of `plain`: lists become tuples, and ``{"@": name, "f": [...]}`` becomes
    ``kinds[name](*fields)``. Only the classes in ``kinds`` can be made; any other name, or fields that
    do not fit, raise ValueError (the caller drops the entry)."""
    if isinstance(value, list):
        return tuple(revive(v, kinds) for v in value)
    if isinstance(value, dict):
        if "@" in value:
            make = kinds.get(value["@"]) if isinstance(value["@"], str) else None
            fields = value.get("f")
            if make is None or not isinstance(fields, list):
                raise ValueError(f"not a known record: {value.get('@')!r}")
            try:
                return make(*(revive(v, kinds) for v in fields))
            except TypeError as exc:
                raise ValueError(str(exc)) from None
        return {k: revive(v, kinds) for k, v in value.items()}
    return value
