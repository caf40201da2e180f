"""LD_PRELOAD entries that stop every program before it starts: a pure judgement of `resolve.process`'s
preloads.

glibc (elf/rtld.c ``dl_main``) maps each LD_PRELOAD entry with ``do_preload``, which only prints "object
... cannot be preloaded ...: ignored" when the entry itself cannot be opened; the libraries the entries
NEED are then mapped with the program's own (``_dl_map_object_deps``), where a failure is fatal: "error
while loading shared libraries: NAME: cannot open shared object file", exit status 127, before main. Every
program started in that environment stops so, the shell's tools and cudnnload's own Python included
(measured on the 9.0 wheel: its engine library preloaded without its graph). No report can then be written
from inside that environment: ``LD_PRELOAD= cudnnload doctor --env LD_PRELOAD=...`` judges it from outside.
"""

from __future__ import annotations

from collections.abc import Iterable

from cudnnload.codes import Code, Effect, SubjectKind
from cudnnload.judge import fixes
from cudnnload.resolve.process import Preload
from cudnnload.verdicts import Consequence, Finding, Subject, fix


def preload_findings(preloads: Iterable[Preload]) -> tuple[Finding, ...]:
    """One error per preload entry (LD_PRELOAD's, /etc/ld.so.preload's) that stops programs at start, its fix the
    entry's removal."""
    said: dict[str, Finding] = {}
    for item in preloads:
        if not item.stops_start or item.entry is None or item.entry in said:
            continue
        if item.kills:
            why = f"mapping {item.path} kills the process (SIGBUS: the file is shorter than its segments)"
            seen = Consequence(f"every program started with this {item.source}", Effect.SIGBUS, item.name,
                               message=f"{item.path} is cut short")
        elif item.hangs:
            why = f"opening {item.path}, a FIFO, never returns (glibc's open() waits for something to write to it)"
            seen = Consequence(f"every program started with this {item.source}", Effect.HANG, item.name,
                               message=f"{item.path} is a FIFO")
        else:
            lacks = item.path is not None  # found, but a symbol of its version node is missing from it
            why = (f"it needs {item.name}, and the one found ({item.path}, of another release) lacks a symbol it "
                   "binds to" if lacks else f"it needs {item.name}, which cannot be found")
            seen = Consequence(f"every program started with this {item.source}", Effect.NO_START, item.name,
                               message=item.printed)
        said[item.entry] = Finding(
            Code.PRELOAD_CANNOT_LOAD, f"the {item.source} entry {item.entry} stops every program before it starts: "
            f"{why}", Subject(SubjectKind.VARIABLE, item.entry, variable=item.source if item.source == "LD_PRELOAD"
                              else None, entry=item.entry),
            fix(fixes.removal(item.source, item.entry, item.line)), (seen,))
    return tuple(said.values())
