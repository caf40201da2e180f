"""Opening the files cudnnload reads without blocking on them: only regular files are opened.

A FIFO named ``libcudnn.so.9`` blocks ``open()`` until a writer comes (glibc's own dlopen of it hangs
for ever); opening a device can have side effects (a tape rewinds) and reading one may never end
(``/dev/zero``). So a path is checked with ``stat`` before it is opened, opened non-blocking, and
checked again on the open descriptor (the file could have been swapped in between).
"""

from __future__ import annotations

import contextlib
import os
import stat

from cudnnload.errors import CudnnloadError, OutputError

TYPE_CHECKING = False  # typing costs ~10 ms to import; type checkers treat this name as true
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO, TextIO

ELF_MAGIC = b"\x7fELF"  # the first four bytes of every ELF file (elf(5) EI_MAG0..3)


class NotRegularFile(CudnnloadError):
    """A path that is a FIFO, a socket, a device or a folder where a file was expected."""


def kind_of(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


_PSEUDO_ROOTS = ("/proc", "/sys")


def _pseudo(info: os.stat_result) -> str | None:
    """A file of the kernel's pseudo file systems (``/proc/self/mem``, ``/sys/...``): "regular" to stat,
    but its size is not its content, and reading one can block, fail or have effects. Only where they are
    mounted: in a chroot without them, /proc is a plain folder of the root's own file system."""
    for root in _PSEUDO_ROOTS:
        try:
            device = os.stat(root).st_dev
            if device == info.st_dev and device != os.stat("/").st_dev:
                return f"a file of the kernel's {root} file system"
        except OSError:
            continue
    return None


def problem_of(info: os.stat_result) -> str | None:
    """Why a file with this ``stat`` is not one to read as a library ("a FIFO (named pipe)", "a file of
    the kernel's /proc file system" ...), or None for a plain regular file."""
    return kind_of(info.st_mode) or _pseudo(info)


def path_problem(path: str) -> tuple[str, str] | None:
    """(kind, reason) when ``path`` cannot be read as a regular file or searched as a folder, else None.
    Kinds: "missing", "broken-symlink", "symlink-loop", "permission" (the reason says which part),
    "not-regular" (a FIFO, a socket, a device, a /proc or /sys file)."""
    import errno

    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink-loop", "symbolic link loop"
        if exc.errno == errno.EACCES:
            return "permission", "permission denied (a folder on its path cannot be searched)"
        if os.path.islink(path):
            return "broken-symlink", f"symbolic link to {os.readlink(path)}, which does not exist"
        return "missing", "no such file or folder"
    if stat.S_ISDIR(info.st_mode):
        return None if os.access(path, os.X_OK) else ("permission", "permission denied (the folder cannot be "
                                                      "searched)")
    problem = problem_of(info)
    if problem is not None:
        return "not-regular", f"not a regular file: {problem}"
    if not os.access(path, os.R_OK):
        return "permission", "permission denied (the file cannot be read)"
    return None


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, when it is a regular file (symbolic links followed).
    Raises NotRegularFile naming what it is instead, or OSError."""
    problem = problem_of(os.stat(path))
    if problem is not None:
        raise NotRegularFile(f"not a regular file: {problem}", path=path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        problem = problem_of(os.fstat(fd))
        if problem is not None:
            raise NotRegularFile(f"not a regular file: {problem}", path=path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path`` (NotRegularFile, OSError otherwise)."""
    with open_regular(path) as handle:
        return handle.read(limit)


def record_digest(path: str) -> str | None:
    """The regular file ``path``'s sha256 as a wheel's RECORD writes it (PEP 376/627: urlsafe base64, unpadded);
    None where it cannot be read or is no regular file."""
    import base64
    import hashlib

    digest = hashlib.sha256()
    try:
        with open_regular(path) as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    except (OSError, NotRegularFile):
        return None
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def write_atomic(path: str, content: str | Callable[[TextIO], None], *, mode: int | None = None) -> bool:
    """``content`` (text, or a function that writes it to the open file) into ``path`` (its folders made),
    all of it or nothing (a reader, or a process killed mid-write, sees the old file or the new one):
    written beside it as ``.tmp-*NAME``, then renamed. With ``mode``, or the mode a plain ``open()`` would
    give (0666 less the umask). False when it cannot be written, or ``content`` raises ValueError or
    TypeError (what JSON raises for data it cannot write)."""
    try:
        _replace(path, content, mode)
        return True
    except (OSError, TypeError, ValueError, NotRegularFile):
        return False


def output_problem(path: str) -> str | None:
    """Why a report must not be written at ``path``, or None: it may be absent or a regular file of this
    user that is not an ELF object (a report written over a library would destroy it), nothing else. A
    symbolic link is refused, not followed; so are a FIFO, a socket, a device (``as root, --output
    /dev/null`` would otherwise replace the real ``/dev/null``), a /proc or /sys file and a folder. The
    folders on the way may not exist yet (they are made), but the nearest one that does must be writable."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except NotADirectoryError:
        return "a part of the path that should be a folder is a file"
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return exc.strerror or str(exc)
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            return "it is a symbolic link (not followed: write to the file itself)"
        kind = kind_of(info.st_mode) or _pseudo(info)
        if kind is not None:
            return f"it is {kind}, not a regular file"
        if info.st_uid != os.geteuid():
            return f"it belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()})"
        if _starts_with(path, ELF_MAGIC):
            return "it is an ELF file (a library or a program), not a report"
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"{folder} on its path is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"permission denied: cannot create a file in {folder}"
    return None


def _starts_with(path: str, magic: bytes) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.read(fd, len(magic)) == magic
    except OSError:
        return False
    finally:
        os.close(fd)


def write_output(path: str, text: str | bytes) -> None:
    """A report (text, or an image's bytes) written to ``path`` as `write_atomic` writes (never into what is
    there: beside it, then renamed over it), after `output_problem` allows it, checked again just before the
    rename. Keeps the mode of the file it replaces. Raises OutputError naming the path and the reason."""
    problem = output_problem(path)
    if problem is not None:
        raise OutputError(problem, path=path)
    try:
        mode = stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)
    except OSError:
        mode = None
    try:
        _replace(path, text, mode, check=output_problem)
    except NotRegularFile as exc:
        raise OutputError(exc.reason, path=path) from None
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc), path=path) from None


def _replace(path: str, content: str | bytes | Callable[[TextIO], None], mode: int | None,
             check: Callable[[str], str | None] | None = None) -> None:
    """Write beside ``path`` (mkstemp: a new file, O_EXCL, so no link is followed), then rename it over
    ``path`` (rename replaces a link or a device entry itself, never what it points to; ``check`` refuses
    those just before). Raises OSError, TypeError or ValueError; the temporary file never stays."""
    import tempfile  # 6 ms to import: only when something is written

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        if isinstance(content, bytes):
            with os.fdopen(fd, "wb") as raw:
                fd = -1
                raw.write(content)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                fd = -1
                if isinstance(content, str):
                    handle.write(content)
                else:
                    content(handle)
        problem = check(path) if check is not None else None
        if problem is not None:
            raise NotRegularFile(problem, path=path)
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
