"""A finding: one problem (or notable fact) with a stable code, the file, and the fix.

Its own small module so that every stage can report findings without importing
the stages before it.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact), with a stable code other tools can match on (README)."""

    code: str
    severity: str  # "error", "warning" or "info"
    message: str
    path: str | None = None
    fix: str | None = None
