"""What every form of doctor does to its findings' fixes once the judge has said them, in one order: a wheel put
back with the entries that would put another folder's cuDNN beside it (`ahead`), a shared entry's removal and a
change the shell's frameworks would feel made for the program alone (`scoped`), a fix that writes on a read-only
file system said in words (`writable`), and each pip action said with the installer of the environment it names
(`by_installer`). doctor TARGET, ``doctor -- PROGRAM`` and ``doctor --pid`` call it; ``which`` and the verdict
before install, whose fixes name no environment of a process, take the installer's pass alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cudnnload.diagnose.ahead import ahead
from cudnnload.diagnose.installer import by_installer
from cudnnload.diagnose.readonly import writable
from cudnnload.diagnose.scoped import Others, scoped
from cudnnload.resolve.discovery import Context
from cudnnload.verdicts import Finding


def finished(findings: Iterable[Finding], environ: Mapping[str, str], ctx: Context | None = None,
             others: Others | None = None) -> list[Finding]:
    """``findings`` with their fixes as they are applied in ``environ`` (the module docstring)."""
    return by_installer(writable(scoped(ahead(findings, environ, ctx), environ, ctx, others)))
