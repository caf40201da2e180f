"""A finding: one problem (or notable fact) with a stable code, the file, the fix, and what the user will see.

Its own small module so that every stage can report findings without importing
the stages before it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ERROR, WARNING, INFO = "error", "warning", "info"


def rank(severity: str) -> int:
    """Errors first, then warnings, then information (an unknown severity last)."""
    return {ERROR: 0, WARNING: 1, INFO: 2}.get(severity, 3)

# What a failing load does to the program (`Consequence.effect`).
STATUS = "status"  # the calls return a cudnnStatus_t; the process goes on
ABORT = "abort"  # cuDNN prints a line and calls abort(): SIGABRT, exit status 134, "Aborted (core dumped)"
SIGBUS = "sigbus"  # the process dies of SIGBUS inside dlopen, printing nothing
HANG = "hang"  # dlopen never returns: glibc's open() of a FIFO blocks until something writes to it
NO_START = "no-start"  # the program, or its dlopen of cuDNN, fails before any cuDNN call
WRONG_RELEASE = "wrong-release"  # the calls work, against another release than the one installed


@dataclass(frozen=True)
class Consequence:
    """What the user will see because of a finding: which calls, what they do, and what is printed first."""

    calls: str  # "cudnnCnnVersionCheck and every convolution call (cudnnCreateConvolutionDescriptor, ...)"
    effect: str  # STATUS, ABORT, SIGBUS, HANG, NO_START or WRONG_RELEASE
    library: str  # what fails to load: a sub-library key ("cnn") or a dependency's soname
    status: int | None = None  # the cudnnStatus_t the calls return (STATUS)
    status_name: str | None = None
    message: str | None = None  # the first line cuDNN (or the dynamic linker) prints, as printed
    first_call: str | None = None  # the function that meets it first, in an application's usual order

    def __str__(self) -> str:
        said = f', after cuDNN prints "{self.message}"' if self.message and self.effect == STATUS else ""
        if self.effect == STATUS:
            return f"{self.calls}: each returns {self.status} {self.status_name}{said}; the process goes on"
        if self.effect == ABORT:
            return (f"{self.calls}: cuDNN prints \"{self.message}\" and calls abort(); the process dies of SIGABRT "
                    "(exit status 134, \"Aborted (core dumped)\")")
        if self.effect == SIGBUS:
            return f"{self.calls}: the process dies of SIGBUS inside dlopen ({self.message}), printing nothing"
        if self.effect == HANG:
            return f"{self.calls}: the process hangs inside dlopen ({self.message}), printing nothing"
        if self.effect == NO_START:
            return f"{self.calls}: {self.message}"
        return f"{self.calls}: {self.message}"


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact), with a stable code other tools can match on (README)."""

    code: str
    severity: str  # "error", "warning" or "info"
    message: str
    path: str | None = None
    fix: str | None = None
    consequences: tuple[Consequence, ...] = ()  # what the user will see because of it, where a load fails


def unique(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Each finding once (by code, path and message, the first kept), errors first."""
    seen: dict[tuple[str, str | None, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.code, f.path, f.message), f)
    return tuple(sorted(seen.values(), key=lambda f: rank(f.severity)))
