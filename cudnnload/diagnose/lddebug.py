"""The dynamic linker's own account of a run (``LD_DEBUG=libs,files``), read back.

glibc writes one file per process with ``LD_DEBUG_OUTPUT=PREFIX`` (``PREFIX.PID``). The lines this
reads (glibc 2.36 elf/dl-load.c, dl-open.c, dl-init.c; the format is stable across 2.2x-2.4x)::

    file=libcudnn_ops.so.9 [0];  dynamically loaded by /x/libcudnn.so.9 [0]   a dlopen asks for a name
    file=libz.so.1 [0];  needed by /x/libcudnn_ops.so.9 [0]                    a DT_NEEDED entry asks
    find library=libcudnn_ops.so.9 [0]; searching                             a search begins
     search path=/x:/y		(RPATH from file /x/libcudnn.so.9)                  one search list, and whose
     search cache=/etc/ld.so.cache                                            ld.so.cache
      trying file=/x/libcudnn_ops.so.9                                         one candidate
    file=libcudnn_ops.so.9 [0];  generating link map                          the last candidate is mapped
    calling init: /x/libcudnn_ops.so.9                                         its initializer runs
    opening file=/x/libcudnn_ops.so.9 [0]; direct_opencount=2                 dlopen returns an object

An object already in the process is returned without a ``file=`` line: only ``opening file=`` with
a count above one shows it (the already-loaded rule). A search that never reaches ``generating link
map`` found nothing (dlopen failed, or for a DT_NEEDED entry the program did not start).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_PREFIX = re.compile(r"^\s*(\d+):\s?(.*)$")
_ASKS = re.compile(r"^file=(.+?) \[\d+\];\s+(dynamically loaded by|needed by) (.+?) \[\d+\]$")
_MAPS = re.compile(r"^file=(.+?) \[\d+\];\s+generating link map$")
_SEARCH_PATH = re.compile(r"^search path=.*?\t+\((RPATH|RUNPATH) from file (.+)\)$|^search path=.*?\t+\((.+)\)$")
_TRYING = re.compile(r"^trying file=(.+)$")
_INIT = re.compile(r"^calling init: (.+)$")
_OPENING = re.compile(r"^opening file=(.+?) \[\d+\]; direct_opencount=(\d+)$")

_SOURCES = {"LD_LIBRARY_PATH": "ld-library-path", "system search path": "default-dirs"}


@dataclass(frozen=True)
class Opened:
    """One object the linker mapped, and the rule that found it."""

    path: str  # as opened: the candidate it tried (a symlink stays one; /proc/PID/maps shows its target)
    name: str  # what was asked for
    requested_by: str  # the object whose dlopen or DT_NEEDED entry asked
    how: str  # "dlopen" or "needed"
    rule: str  # "direct-path", "rpath", "runpath", "ld-library-path", "ld-cache" or "default-dirs"
    via: str | None  # the object whose RPATH or RUNPATH it came through
    initialized: bool  # its initializer ran; False when the process ended while mapping it


@dataclass(frozen=True)
class Missed:
    """A name looked up in vain: nothing loadable was found."""

    name: str
    requested_by: str
    how: str
    tried: tuple[str, ...]


@dataclass(frozen=True)
class Reused:
    """A dlopen answered with an object already in the process (no search: the already-loaded rule)."""

    path: str
    after: tuple[str, ...]  # the names looked up in vain just before (the shim's more specific names)
    requested_by: str | None  # whose search those were


@dataclass(frozen=True)
class LinkerLog:
    pid: int
    opened: tuple[Opened, ...]
    missed: tuple[Missed, ...]
    reused: tuple[Reused, ...]
    last: str  # the last line: what the linker was doing when the log ends
    # the lookup the log ends inside: a process that was not killed ended there (glibc stops at a file it opened
    # and cannot use, "file too short", and a program's start then exits 127); one killed hung there
    unfinished: Missed | None = None

    @property
    def handed_over(self) -> str | None:
        """The program whose start the log ends at ("transferring control: NAME" and no line after, not even its
        exit's "calling fini"): the process replaced itself (exec) with a program that keeps no log (its
        environment cleared: ``env -i``, sudo, su; a set-user-ID program), or left through _exit before it loaded
        anything, or was killed; None where the log goes on."""
        head, _, name = self.last.partition("transferring control:")
        return name.strip() or None if not head else None

    def opened_named(self, prefix: str) -> tuple[Opened, ...]:
        return tuple(o for o in self.opened if os.path.basename(o.path).startswith(prefix))

    @property
    def dying_in(self) -> Opened | None:
        """An object mapped but never initialized, when the process ended: it died mapping it (SIGBUS on
        a cut file) or in its initializer."""
        return next((o for o in reversed(self.opened) if not o.initialized), None)

    @property
    def stuck_opening(self) -> str | None:
        """The file the linker was trying when the log ends: a lookup that never finished (glibc's open()
        of a FIFO blocks until something writes to it)."""
        found = _TRYING.match(self.last)
        return found.group(1) if found else None


class _Request:
    def __init__(self, name: str, how: str, requested_by: str) -> None:
        self.name, self.how, self.requested_by = name, how, requested_by
        self.tried: list[tuple[str, str, str | None]] = []  # (path, rule, via)
        self.rule: str = "direct-path" if "/" in name else ""
        self.via: str | None = None


def parse(lines: Iterable[str]) -> dict[int, LinkerLog]:
    """Every process's log, by pid (a process forked without exec writes into its parent's file)."""
    readers: dict[int, Reader] = {}
    for pid, text in pid_lines(lines):
        if pid not in readers:
            readers[pid] = Reader(pid)
        readers[pid].add(text)
    return {pid: reader.log() for pid, reader in readers.items()}


def pid_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """Each "PID: text" line of a log file, as (pid, text)."""
    for line in lines:
        match = _PREFIX.match(line.rstrip("\n"))
        if match:
            yield int(match.group(1)), match.group(2).strip()


class Reader:
    """One process's log read line by line (the line prefix "PID:" already removed), so that a log still
    being written can be followed without reading it again (`observe`)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.opened: list[Opened] = []
        self.missed: list[Missed] = []
        self.reused: list[Reused] = []
        self._request: _Request | None = None
        self._recent_misses: list[Missed] = []
        self.last = ""

    def _close(self) -> None:
        request, self._request = self._request, None
        if request is not None:
            miss = Missed(request.name, request.requested_by, request.how, tuple(p for p, _, _ in request.tried))
            self.missed.append(miss)
            self._recent_misses.append(miss)

    def feed(self, body: Iterable[str]) -> None:
        for text in body:
            self.add(text)

    def add(self, text: str) -> None:
        """One line of this process's log, its "PID:" prefix removed."""
        if not text:
            return
        self.last = text
        request, opened = self._request, self.opened
        if (found := _ASKS.match(text)) is not None:
            self._close()
            self._request = _Request(found.group(1), "dlopen" if found.group(2).startswith("dyn") else "needed",
                                     found.group(3))
        elif request is not None and (found := _SEARCH_PATH.match(text)) is not None:
            if found.group(1):
                request.rule, request.via = found.group(1).lower(), found.group(2)
            else:
                request.rule, request.via = _SOURCES.get(found.group(3), found.group(3)), None
        elif request is not None and text.startswith("search cache="):
            request.rule, request.via = "ld-cache", None
        elif request is not None and (found := _TRYING.match(text)) is not None:
            request.tried.append((found.group(1), request.rule, request.via))
        elif request is not None and (found := _MAPS.match(text)) is not None:
            path, rule, via = request.tried[-1] if request.tried else (request.name, request.rule, request.via)
            opened.append(Opened(path, request.name, request.requested_by, request.how, rule or "direct-path", via,
                                 False))
            self._request = None
            self._recent_misses.clear()
        elif (found := _INIT.match(text)) is not None:
            index = next((i for i in range(len(opened) - 1, -1, -1) if opened[i].path == found.group(1)), None)
            if index is not None:
                o = opened[index]
                opened[index] = Opened(o.path, o.name, o.requested_by, o.how, o.rule, o.via, True)
        elif (found := _OPENING.match(text)) is not None:
            self._close()
            if int(found.group(2)) > 1 or all(o.path != found.group(1) for o in opened):
                asker = self._recent_misses[-1].requested_by if self._recent_misses else None
                self.reused.append(Reused(found.group(1), tuple(m.name for m in self._recent_misses), asker))
            self._recent_misses.clear()

    def log(self) -> LinkerLog:
        """The log as read so far, the process having ended here."""
        unfinished = None
        if _TRYING.match(self.last) and (request := self._request) is not None:
            # the log ends inside a lookup: never finished (stuck_opening), or stopped there; not yet a miss
            unfinished = Missed(request.name, request.requested_by, request.how, tuple(p for p, _, _ in request.tried))
            self._request = None
        self._close()
        return LinkerLog(self.pid, tuple(self.opened), tuple(self.missed), tuple(self.reused), self.last, unfinished)


def read(prefix: str) -> dict[int, LinkerLog]:
    """The logs ``LD_DEBUG_OUTPUT=prefix`` left (``prefix.PID``), by pid; {} when there are none."""
    lines: list[str] = []
    for path in sorted(glob.glob(f"{glob.escape(prefix)}.*")):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines += handle.readlines()
        except OSError:
            continue
    return parse(lines)
