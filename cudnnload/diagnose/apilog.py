"""cuDNN's API log (``CUDNN_LOGLEVEL_DBG=3`` / ``CUDNN_LOGINFO_DBG=1``), parsed into timed calls.

Each API call is logged on entry as a block (cudnn-facts §6.2, verbatim from 9.28)::

    I! CuDNN (v92800 42) function cudnnCreate() called:
    i!     handle: location=host; addr=0x7f186149cbe0;
    i! Time: 2026-11-21T23:21:48.929469 (0d+0h+0m+0s since start)
    i! Process=10395; Thread=10395; GPU=NULL; Handle=NULL; StreamId=NULL.

(8.x: ``I! CuDNN (v8907) function ...``; ``E!``/``W!`` blocks for errors and warnings.) Only
entries are logged, so a call's duration is taken as the time to the next block of the same
thread: an upper bound that includes the caller's own work between calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

_HEAD = re.compile(r"^([IWE])! CuDNN \(v(\d+)(?: (\d+))?\) function (\w+)\(\) called:")
_TIME = re.compile(r"^[iwe]! Time: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)")
_WHO = re.compile(r"^[iwe]! Process=(\d+); Thread=(\d+)")
_STATUS = re.compile(r"status: type=cudnnStatus_t; val=(\w+)")
_ERROR = re.compile(r"Error: (CUDNN_STATUS_\w+); Reason: (.*)$")


@dataclass(frozen=True)
class ApiCall:
    function: str
    level: str  # "I", "W" or "E"
    at: float  # seconds since the epoch (the log's local wall-clock time)
    process: int
    thread: int
    status: str | None  # when the block names one
    reason: str | None = None  # an error block's "Reason: ..." (cuDNN's own words)


def parse(lines: Iterable[str]) -> tuple[ApiCall, ...]:
    """Every logged block, in file order; lines that belong to no block are skipped."""
    calls: list[ApiCall] = []
    head: re.Match[str] | None = None
    at: float | None = None
    status: str | None = None
    reason: str | None = None
    for line in lines:
        match = _HEAD.match(line)
        if match:
            head, at, status, reason = match, None, None, None
            continue
        if head is None:
            continue
        if (found := _TIME.match(line)) is not None:
            at = datetime.fromisoformat(found.group(1)).timestamp()
        elif (found := _STATUS.search(line)) is not None:
            status = found.group(1)
        elif (found := _ERROR.search(line)) is not None:
            status, reason = status or found.group(1), reason or found.group(2).strip()
        elif (found := _WHO.match(line)) is not None and at is not None:
            calls.append(ApiCall(head.group(4), head.group(1), at, int(found.group(1)), int(found.group(2)),
                                 status, reason))
            head = None
    return tuple(calls)


@dataclass(frozen=True)
class ApiSummary:
    """One API function: when it was first called, and how the first call compares with the rest."""

    function: str
    calls: int
    first_at_ms: float  # since the program started
    first_ms: float | None  # time to the next logged call on that thread; None for the last call
    later_median_ms: float | None
    errors: int


def summarize(calls: tuple[ApiCall, ...], started: float) -> tuple[ApiSummary, ...]:
    """Per function, in order of first use. ``started``: the program's start, epoch seconds."""
    durations: dict[int, float | None] = {}
    last: dict[int, int] = {}  # thread -> index of its previous call
    for index, call in enumerate(calls):
        if call.level != "I":
            continue
        previous = last.get(call.thread)
        if previous is not None:
            durations[previous] = (call.at - calls[previous].at) * 1000
        last[call.thread] = index
        durations.setdefault(index, None)
    by_function: dict[str, list[int]] = {}
    for index, call in enumerate(calls):
        if call.level == "I":
            by_function.setdefault(call.function, []).append(index)
    summaries = []
    for function, indices in by_function.items():
        later = sorted(d for i in indices[1:] if (d := durations.get(i)) is not None)
        summaries.append(ApiSummary(
            function=function,
            calls=len(indices),
            first_at_ms=(calls[indices[0]].at - started) * 1000,
            first_ms=durations.get(indices[0]),
            later_median_ms=later[len(later) // 2] if later else None,
            errors=sum(1 for c in calls if c.function == function and c.level == "E"),
        ))
    return tuple(sorted(summaries, key=lambda s: s.first_at_ms))
