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

from cudnnload.errors import CudnnloadError

TYPE_CHECKING = False  # typing costs ~10 ms to import; type checkers treat this name as true
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO, TextIO


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


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, when it is a regular file (symbolic links followed).
    Raises NotRegularFile naming what it is instead, or OSError."""
    problem = kind_of(os.stat(path).st_mode)
    if problem is not None:
        raise NotRegularFile(f"not a regular file: {problem}", path=path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        problem = kind_of(os.fstat(fd).st_mode)
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


def write_atomic(path: str, content: str | Callable[[TextIO], None], *, mode: int | None = None) -> bool:
    """``content`` (text, or a function that writes it to the open file) into ``path`` (its folders made),
    all of it or nothing (a reader, or a process killed mid-write, sees the old file or the new one):
    written beside it as ``.tmp-*NAME``, then renamed. With ``mode``, or the mode a plain ``open()`` would
    give (0666 less the umask). False when it cannot be written, or ``content`` raises ValueError or
    TypeError (what JSON raises for data it cannot write)."""
    import tempfile  # 6 ms to import: only when something is written

    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    except OSError:
        return False
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if isinstance(content, str):
                handle.write(content)
            else:
                content(handle)
        os.replace(tmp, path)
        return True
    except (OSError, TypeError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
