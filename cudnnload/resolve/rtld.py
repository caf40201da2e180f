"""A whole process, object by object, as glibc's ld.so maps it (elf/rtld.c ``dl_main``, elf/dl-deps.c
``_dl_map_object_deps``, elf/dl-open.c ``dl_open_worker``, elf/dl-version.c): `start` maps the program, its
preloads (`process.preload_requests`), their DT_NEEDED entries breadth first and checks the version needs; `dlopen`
adds what one ``dlopen`` call maps, or nothing and dlerror's message when it fails. Every lookup, object and
message keeps the rule (`rules`) that decided it.

This is the model the real loader is held against (tests/test_rules.py, the rule differential
bench/bench_differential.py, fixtures/glibc/): doctor and which need only `process.preloaded` and the linker's
searches, so nothing on their path imports this module.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from cudnnload.resolve import linker
from cudnnload.resolve.elf import ElfInfo
from cudnnload.resolve.process import ElfReader, preload_reason, preload_requests


@dataclass(frozen=True)
class Mapped:
    """One object in the process (glibc's ``struct link_map``)."""

    path: str  # l_name: the file as found ("" for the program is not kept: its own path)
    name: str  # the name it was asked for first
    soname: str | None
    loader: str | None  # l_loader: the object whose DT_NEEDED loaded it (the program for a preload); None: dlopen
    requester: linker.Requester
    info: ElfInfo | None


@dataclass(frozen=True)
class Event:
    """One lookup: a preload, a DT_NEEDED entry or a dlopen, and where it led."""

    name: str  # as written
    asker: str | None  # the object whose DT_NEEDED or dlopen asks (the program for a preload)
    how: linker.How
    resolution: linker.Resolution
    new: bool  # it mapped an object that was not in the process
    by: str  # the rule that made this lookup ("start-order", "ld-preload", "ld-so-preload", "dlopen-caller")


@dataclass(frozen=True)
class Message:
    """What ld.so says on stderr (or dlerror returns), with the rule that made it say so."""

    text: str
    by: str
    fatal: bool  # the start stops (or the dlopen fails)
    dlerror: bool = False  # a dlopen's failure: dlerror returns it, nothing is printed


@dataclass(frozen=True)
class Process:
    """The objects a process has mapped, in order, and every lookup and message that got it there."""

    program: Mapped
    objects: tuple[Mapped, ...]  # the program first
    events: tuple[Event, ...] = ()
    messages: tuple[Message, ...] = ()
    started: bool = True  # False: it stopped (ld.so refused to start it) or died or hangs in a lookup
    names: Mapping[str, str] = field(default_factory=dict, repr=False)  # what each object answers to
    secure: bool = False  # it runs in secure-execution mode (rule secure-mode)
    end: str = "ran"  # "ran", "stopped" (ld.so ended it), "killed" (SIGBUS mapping a file), "hung" (a FIFO)
    rules: frozenset[str] = frozenset()  # rules that shaped it besides its lookups' and messages' (rtld-strerror)
    errno: int = 0  # what its last failed call left: a later failed lookup without a call of its own says it

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(obj.path for obj in self.objects)


# The objects in every process before the first lookup: ld.so itself, under the name a program's PT_INTERP gives it
# and its soname, and the vDSO.
_VDSO = "linux-vdso.so.1"


def start(program: linker.Requester, environ: Mapping[str, str], env: linker.LinkerEnv, elf: ElfReader, *,
          interpreter: str | None = None, file_entries: Sequence[str] = ()) -> Process:
    """A process started from ``program`` with ``environ``, modelled as rtld.c's ``dl_main`` maps it: the
    preloads (LD_PRELOAD's, then ``file_entries``: /etc/ld.so.preload's, `preload_file_entries` of
    `read_preload_file`), the DT_NEEDED entries breadth first, then the version needs. ``interpreter``: the
    program's PT_INTERP (ld.so's path)."""
    info = elf(program.path)
    interp = interpreter or (info.interpreter if info else None) or "/lib64/ld-linux-x86-64.so.2"
    main = Mapped(program.path, "", info.soname if info else None, None, program, info)
    names = {"": program.path, interp: interp, os.path.basename(interp): interp, _VDSO: _VDSO}
    state = _State(env=replace(env, executable=program, loaded=names), elf=elf, names=names, objects=[main])
    fresh = [main]
    for request in preload_requests(environ, env, file_entries):
        if request.ignored is not None:
            state.messages.append(Message(f"{request.entry}: ignored in secure-execution mode", request.ignored,
                                          False))
            continue
        res = state.look_up(request.entry, program.path, "preload", request.rule)
        if res.kills or res.hangs:
            return state.stopped(res)
        if res.found:
            if state.events[-1].new:
                fresh.append(state.objects[-1])
        else:
            reason = preload_reason(res.error or "", request.entry, res.path)
            state.messages.append(Message(f"ERROR: ld.so: object '{request.entry}' from {request.source} cannot be "
                                          f"preloaded ({reason}): ignored.", "preload-not-loadable", False))
    state.errno = 0  # _dl_map_object_deps starts from errno 0
    if not state.needed(fresh, "start-order", at_start=True):
        last = state.events[-1].resolution
        return state.process(started=False, end="hung" if last.hangs else "killed" if last.kills else None)
    for text in state.versions(state.objects, at_start=True):
        state.messages.append(text)
    return state.process(started=not any(m.fatal for m in state.messages))


def dlopen(process: Process, name: str, caller: str | None, env: linker.LinkerEnv, elf: ElfReader) -> Process:
    """``process`` after ``dlopen(name)`` called from the object at ``caller`` (None: the program): the object and
    what it NEEDs, breadth first, version needs checked; on any failure dlopen maps nothing (glibc unmaps what it
    mapped) and the message says why, as dlerror would."""
    state = _State(env=replace(env, executable=process.program.requester, loaded=dict(process.names)), elf=elf,
                   names=dict(process.names), objects=list(process.objects), events=list(process.events),
                   messages=list(process.messages), rules=set(process.rules), errno=process.errno)
    before = len(state.objects)
    res = state.look_up(name, caller, "dlopen", "dlopen-caller")
    if res.kills or res.hangs:
        return state.stopped(res)
    failed = None if res.found else Message(state.error(res, at_start=False), res.by, True)
    if failed is None and not state.needed(state.objects[before:], "start-order", at_start=False):
        last = state.events[-1].resolution
        if last.kills or last.hangs:
            return state.process(started=False, end="hung" if last.hangs else "killed")
        failed = state.messages.pop()
    if failed is None:
        failed = next(iter(state.versions(state.objects[before:], at_start=False)), None)
    if failed is None:
        return state.process(started=process.started)
    failed = replace(failed, dlerror=True)
    # dlopen fails: what it mapped is unmapped again, and the names those objects took are forgotten
    kept = process.names
    return replace(process, events=tuple(state.events), messages=(*process.messages, failed), names=kept)


@dataclass
class _State:
    env: linker.LinkerEnv
    elf: ElfReader
    names: dict[str, str]
    objects: list[Mapped]
    events: list[Event] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    errno: int = 0  # what the last failed call of the lookups left (glibc spells it out in "cannot open")
    rules: set[str] = field(default_factory=set)

    def error(self, res: linker.Resolution, *, at_start: bool) -> str:
        """The lookup's error as ld.so prints it at start (its own six errno words, rule rtld-strerror) or as dlerror
        returns it; a search that found nothing names the process's errno, that of the last failed call."""
        text = res.error or f"{res.name}: cannot open shared object file"
        code = res.errno
        if res.path is None and res.by == "not-found":
            # a dlopen whose search made no failing call reports the program's errno, which the model cannot know
            # (whatever its code last met; ENOENT, the likeliest, is assumed); at start it is known: 0 or the last
            # lookup's
            text, code = f"{res.name}: cannot open shared object file", self.errno or (0 if at_start else errno.ENOENT)
        elif code is not None:
            text = text.removesuffix(f": {os.strerror(code)}")
        if not code:
            return text
        if at_start and linker.rtld_strerror(code) != os.strerror(code):
            self.rules.add("rtld-strerror")
        return f"{text}: {linker.rtld_strerror(code) if at_start else os.strerror(code)}"

    def mapped(self, path: str) -> Mapped | None:
        return next((obj for obj in self.objects if obj.path == path), None)

    def chain(self, asker: str | None) -> linker.Chain | None:
        """The asker and its l_loader links up (a dlopen'd object has none)."""
        links: list[linker.Requester] = []
        obj = self.mapped(asker) if asker is not None else None
        while obj is not None and obj.requester not in links:
            links.append(obj.requester)
            obj = self.mapped(obj.loader) if obj.loader is not None else None
        return linker.Chain(tuple(links)) if links else None

    def look_up(self, name: str, asker: str | None, how: linker.How, by: str) -> linker.Resolution:
        env = replace(self.env, loaded=self.names)
        res = linker.resolve(name, self.chain(asker), env, how=how)
        code = linker.last_errno(res.trail)
        if code is not None:
            self.errno = code
        new = res.found and res.rule != "already-loaded"
        if new and res.path is not None:
            info = self.elf(env.here(res.path))
            loader = asker if how != "dlopen" else None
            requester = linker.Requester(res.path, info.rpath if info else (), info.runpath if info else (),
                                         info.flags_1 if info else 0,
                                         origin=os.path.dirname(os.path.join(env.cwd or os.getcwd(), res.path)))
            self.objects.append(Mapped(res.path, res.name, info.soname if info else None, loader, requester, info))
        if res.found and res.path is not None:
            # the names _dl_name_match_p knows it by: as found (l_name) and as asked (l_libname); a DT_NEEDED name
            # is asked for with its DSTs expanded (dl-deps.c), a dlopen or preload name as written
            for answer in (res.name, res.path, *((name,) if how != "needed" else ())):
                self.names.setdefault(answer, res.path)
            soname = next((obj.soname for obj in self.objects if obj.path == res.path), None)
            if soname:
                self.names.setdefault(soname, res.path)
        self.events.append(Event(name, asker, how, res, new, by))
        return res

    def needed(self, fresh: Sequence[Mapped], by: str, *, at_start: bool) -> bool:
        """Each object's DT_NEEDED entries, breadth first from ``fresh``, each looked up from the object that
        needs it; False (with the message: ld.so's at start, dlerror's in a dlopen) when one cannot be loaded."""
        queue = list(fresh)
        while queue:
            obj = queue.pop(0)
            for name in obj.info.needed if obj.info else ():
                count = len(self.objects)
                res = self.look_up(name, obj.path, "needed", by)
                if not res.found:
                    if res.kills or res.hangs:
                        self.stopped(res)
                    else:
                        text = self.error(res, at_start=at_start)
                        self.messages.append(Message(f"error while loading shared libraries: {text}" if at_start
                                                     else text, "needed-not-loadable", True))
                    return False
                queue += self.objects[count:]
        return True

    def versions(self, objects: Sequence[Mapped], *, at_start: bool) -> list[Message]:
        """dl-version.c for ``objects``: each (file, version) need against the object answering the file's name.
        At start every failure is said (and the warnings for providers without version definitions); in a
        dlopen only failures count."""
        said: list[Message] = []
        for obj in objects:
            for need in obj.info.version_needs if obj.info else ():
                provider = self.mapped(self.names.get(need.library, ""))
                if provider is None or provider.info is None:
                    continue
                shown = obj.path or obj.name
                if not provider.info.version_defs:
                    self.rules.add("version-no-verdef")
                    if at_start:
                        said.append(Message(f"{provider.path}: no version information available (required by "
                                            f"{shown})", "version-no-verdef", False))
                    continue
                said += [Message(f"{provider.path}: version `{version}' not found (required by {shown})",
                                 "version-needed", True)
                         for version in need.versions if version not in provider.info.version_defs]
        return said

    def stopped(self, res: linker.Resolution) -> Process:
        """The process dies (SIGBUS mapping a cut file) or hangs (a FIFO) in this lookup: ld.so says nothing."""
        self.messages.append(Message(f"{res.path}: {'hangs' if res.hangs else 'SIGBUS'}", res.by, True,
                                     dlerror=True))
        return self.process(started=False, end="hung" if res.hangs else "killed")

    def process(self, *, started: bool, end: str | None = None) -> Process:
        rules = frozenset({*self.rules, *(("secure-mode",) if self.env.secure else ())})
        return Process(self.objects[0], tuple(self.objects), tuple(self.events), tuple(self.messages), started,
                       dict(self.names), self.env.secure, end or ("ran" if started else "stopped"), rules, self.errno)
