"""One error hierarchy: every error names the file (or call), the reason, and a fix."""

from __future__ import annotations

from cudnnload.codes import Code

# The most of a reason said: a reason may quote what it was given (a line of an --env-file, pip's error), and a
# 1 MB line was a 1 MB error line.
REASON_CHARS = 2000


def clipped(text: str, most: int = REASON_CHARS) -> str:
    """``text`` cut to ``most`` characters, saying how long it was."""
    return text if len(text) <= most else f"{text[:most - 30]}... ({len(text)} characters)"


class CudnnloadError(Exception):
    """Base of every error cudnnload raises on purpose; its reason at most `REASON_CHARS` long."""

    def __init__(self, reason: str, *, path: str | None = None, fix: str | None = None) -> None:
        self.reason = clipped(reason)
        self.path = path
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = f"{self.path}: " if self.path else ""
        tail = f" (fix: {self.fix})" if self.fix else ""
        return f"{where}{self.reason}{tail}"


class UsageError(CudnnloadError):
    """The caller asked for something malformed: a bad version range, an unknown name."""


class CannotRun(CudnnloadError):
    """cudnnload itself cannot do its work here: a package it needs (pyelftools) is missing or broken."""


class OutputError(CudnnloadError):
    """cudnnload's own output (a report file, standard output) could not be written: a full disk, a path
    that changed under it."""


class ElfError(CudnnloadError):
    """A file could not be read as the ELF shared object it claims to be; ``code`` says which problem it is
    (`verdicts.Code`: EMPTY_FILE, NOT_ELF, TRUNCATED, DAMAGED_ELF, UNREADABLE, NOT_A_REGULAR_FILE ...)."""

    def __init__(self, reason: str, *, path: str | None = None, fix: str | None = None,
                 code: Code = Code.DAMAGED_ELF) -> None:
        self.code = code
        super().__init__(reason, path=path, fix=fix)


class LoadError(CudnnloadError):
    """A library could not be loaded or failed its checks."""


class DriverUnavailable(LoadError):
    """The NVIDIA driver cannot be used: no cuda-python, no libcuda.so.1, or cuInit failed."""

    def __init__(self, code: str, reason: str, fix: str | None = None) -> None:
        self.code = code  # "ImportError", "DynamicLibNotFoundError", a CUresult name, ...
        super().__init__(reason, fix=fix)
