"""Errors for calls that carry data (`cudnnload.conv`, `cudnnload.activation`, ...), raised before any backend runs.

Each names the argument at fault (``x``, ``w``, ``stride``, ``backend``) and the
reason; all are `UsageError`s (and ValueErrors, for callers that catch those).
"""

from __future__ import annotations

from cudnnload.errors import UsageError


class ArgumentError(UsageError, ValueError):
    """An argument of a call is malformed: an unknown activation, a negative stride, a non-array."""

    def __init__(self, argument: str, reason: str, *, fix: str | None = None) -> None:
        self.argument = argument
        super().__init__(reason, fix=fix)

    @property
    def message(self) -> str:
        return f"{self.argument}: {super().message}"


class ShapeError(ArgumentError):
    """Shapes that do not fit together: channels and groups, ranks, an output too small or of the wrong shape."""


class DtypeError(ArgumentError):
    """A dtype that is not supported, or two arguments whose dtypes differ."""


class DeviceError(ArgumentError):
    """Host and device memory mixed in one call, two devices, or memory of a kind cudnnload cannot address."""


class UnsupportedError(ArgumentError):
    """No backend of that name, or the chosen backend (every backend, for "auto") cannot run the call."""
