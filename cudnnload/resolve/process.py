"""What a process maps, in glibc's order: the model every entry point shares.

glibc (elf/rtld.c ``dl_main``, elf/dl-deps.c ``_dl_map_object_deps``) maps, in this order: the program, then each
``LD_PRELOAD`` entry (separated by spaces or colons; an entry with a '/' opened as given, after its DSTs take the
program's values; a bare name searched as the program's own DT_NEEDED would be, '$' and all), then each entry of
``/etc/ld.so.preload`` (rule ld-so-preload), then the DT_NEEDED entries breadth first: the program's, each
preload's, then theirs (rule start-order). An object a preloaded entry put in the process answers every later
lookup of its soname (``already-loaded``): the cuDNN shim's own ``dlopen`` of ``libcudnn_graph.so.9`` then gets
the preloaded file, whatever its RPATH says. Secure-execution mode (``LinkerEnv.secure``) ignores LD_PRELOAD
entries with a '/', and takes a searched preload only from a set-user-ID file (rules preload-secure-*). Each
object's version needs are then checked against the object that answers the file they name (dl-version.c:
"version `V' not found (required by F)"): at start all are printed and the program exits with status 1, in a
dlopen the first fails it.

`preloaded` is what `discovery.context` needs: what is in the process before the program asks for anything (a
running process's files, then the preloads and what they NEED); `rtld` models a whole process from these
requests, object by object with the rule that decided each.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.cachedir import PRELOAD_FILE
from cudnnload.resolve import linker
from cudnnload.resolve.elf import ElfInfo
from cudnnload.resolve.records import record
from cudnnload.resolve.startup import Source

# What `preloaded` asks of a file: its ELF facts, or None (`discovery.Context.elf` answers).
ElfReader = Callable[[str], ElfInfo | None]
# What a file needs from a version node that another file lacks (`discovery.Context.unresolved` answers).
Unresolved = Callable[[str, str, str], "tuple[str, ...] | None"]

# dl-main.h: LD_PRELOAD entries this long are skipped (PATH_MAX), in secure mode from NAME_MAX
_PATH_MAX, _NAME_MAX = 4096, 255

# Always present with glibc and the compiler runtime: a preloaded object's NEEDED of these change nothing.
_SYSTEM = frozenset({"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
                     "libstdc++.so.6", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"})


@dataclass(frozen=True)
class Preload:
    """One object the process maps before the program asks for anything: a preload entry, what such an
    entry NEEDs, or an object a running process already has."""

    name: str  # as asked for: the entry as written, or the NEEDED name
    path: str | None  # the file mapped; None when the entry is not found (glibc prints an error and goes on)
    entry: str | None  # the preload entry that brought it (itself, or what NEEDs it); None: mapped already
    error: str | None = None  # why it was not mapped (ld.so: "cannot be preloaded ...: ignored")
    soname: str | None = None  # the SONAME it answers to (read from the file)
    kills: bool = False  # mapping it kills the process (SIGBUS on a cut segment): before the program starts
    hangs: bool = False  # opening it never returns (a FIFO: glibc's open() waits for a writer): nor does the start
    source: str = "LD_PRELOAD"  # where the entry is written: "LD_PRELOAD" or the preload file
    by: str = "ld-preload"  # the rule that put it here, or dropped it ("preload-secure-filter" ...)
    # what put an already-mapped object there when that was Python's start-up (`startup.Mapped.source`: a .pth
    # import line, sitecustomize ...): the file and line a fix takes it out of
    cause: Source | None = None
    line: str | None = None  # the preload file's line that holds its entry alone: the line a fix takes out

    @property
    def stops_start(self) -> bool:
        """Whether this stops every program at start: a library an entry NEEDs that cannot be loaded (rtld.c
        maps the entries' dependencies with the program's: a failure there is fatal, "error while loading
        shared libraries"), or a file whose mapping kills the process. An entry that is itself not found or
        not loadable is only skipped (``do_preload``: "cannot be preloaded ...: ignored")."""
        return self.kills or self.hangs or (self.error is not None and self.entry is not None
                                            and self.name != self.entry)

    @property
    def printed(self) -> str:
        """What ld.so prints, after the program's name, when this stops a start."""
        if self.kills:
            return f"(nothing: SIGBUS mapping {self.path}, which is cut short)"
        if self.hangs:
            return f"(nothing: it waits for ever opening {self.path}, a FIFO)"
        error = self.error or ""
        return error if error.startswith("symbol lookup error") else f"error while loading shared libraries: {error}"


def preload_entries(environ: Mapping[str, str]) -> tuple[str, ...]:
    """LD_PRELOAD as ld.so splits it: on spaces and colons, empty entries and those of PATH_MAX bytes or more
    dropped (rtld.c ``handle_preload_list``: " :")."""
    return tuple(entry for entry in re.split(r"[ :]", environ.get("LD_PRELOAD", ""))
                 if entry and len(os.fsencode(entry)) < _PATH_MAX)


def preload_file_entries(text: str) -> tuple[str, ...]:
    """/etc/ld.so.preload as rtld.c's dl_main reads it: entries separated by spaces, tabs, newlines and ':', and
    '#' starting a comment, blanked by glibc's own loop, which searches for each '#' from the start of the file
    but only as far as the length left after the comments before it: a later comment may be read as entries
    (measured on glibc 2.36: "# two" at the end of a line after a first comment line preloads '#' and 'two')."""
    data = bytearray(text.encode("utf-8", "surrogateescape"))
    rest = len(data)
    while rest > 0:
        at = data.find(b"#", 0, rest)  # memchr (runp, '#', rest): runp never moves
        if at < 0:
            break
        rest -= at
        while True:  # do *comment = ' '; while (--rest > 0 && *++comment != '\n');
            data[at] = 0x20
            rest -= 1
            if rest <= 0:
                break
            at += 1
            if data[at] == 0x0A:
                break
    return tuple(entry for entry in re.split(r"[: \t\n]", data.decode("utf-8", "surrogateescape")) if entry)


def preload_file_lines(text: str) -> dict[str, str]:
    """The lines of the preload file that hold one entry alone, and no comment, by that entry: taking such a line
    out takes that entry away and nothing else."""
    lines: dict[str, str] = {}
    for line in text.splitlines():
        entries = preload_file_entries(line)
        if len(entries) == 1 and "#" not in line:
            lines.setdefault(entries[0], line)
    return lines


def without_lines(text: str, lines: Collection[str]) -> str:
    """``text`` with each line equal to one of ``lines`` taken out, as a remove-line fix takes it out."""
    return "".join(line for line in text.splitlines(keepends=True) if line.rstrip("\n") not in lines)


def read_preload_file(path: str = PRELOAD_FILE, env: linker.LinkerEnv | None = None) -> str:
    """The preload file's text, when the process's user may read it (rtld.c: ``access(R_OK)``); empty when it is
    absent, unreadable or not a regular file."""
    from cudnnload.files import NotRegularFile, read_regular

    if env is not None and env.opens(path) is not None:
        return ""
    try:
        return read_regular(path, 1 << 20).decode("utf-8", "surrogateescape")
    except (OSError, NotRegularFile):
        return ""


@record
class Request:
    """One preload the loader is asked for: the entry, where it is written, and whether it is tried at all."""

    entry: str
    source: str  # "LD_PRELOAD" or the preload file
    ignored: str | None = None  # the rule that drops it unread (secure mode: an LD_PRELOAD entry with a '/')

    @property
    def rule(self) -> str:
        """The rule that asks for it: ld-preload (the variable) or ld-so-preload (the file)."""
        return "ld-preload" if self.source == "LD_PRELOAD" else "ld-so-preload"


def preload_requests(environ: Mapping[str, str], env: linker.LinkerEnv,
                     file_entries: Sequence[str] = ()) -> tuple[Request, ...]:
    """LD_PRELOAD's entries, then the preload file's, in rtld.c's order; in secure mode an LD_PRELOAD entry with
    a '/' (or of NAME_MAX bytes or more) is ignored without a message (dso_name_valid_for_suid)."""
    requests = [Request(entry, "LD_PRELOAD", "preload-secure-filter" if env.secure and (
        "/" in entry or len(os.fsencode(entry)) >= _NAME_MAX) else None) for entry in preload_entries(environ)]
    requests += [Request(entry, PRELOAD_FILE) for entry in file_entries]
    return tuple(requests)


def preloaded(environ: Mapping[str, str], env: linker.LinkerEnv, elf: ElfReader,
              mapped: Sequence[str] = (), unresolved: Unresolved | None = None,
              file_entries: Sequence[str] = (), causes: Mapping[str, Source] | None = None,
              lines: Mapping[str, str] | None = None) -> tuple[Preload, ...]:
    """What is in the process before the program's own loads: ``mapped`` (a running process's files), then
    each preload (LD_PRELOAD's entries, then ``file_entries``, the preload file's) and, breadth first, what they
    NEED (``elf`` reads a file's dynamic section). A cuDNN library NEEDed by a preloaded one that lacks a symbol
    of that version node the requester needs stops the start ("symbol lookup error: ...: undefined symbol: S,
    version libcudnn_graph.so.9", measured: a 9.0 engine library preloaded with the 9.27 JIT graph on the path);
    ``unresolved`` tells. ``causes``: what put each of ``mapped`` there when Python's start-up did (those come
    after the preloads and what they NEED: start-up runs once ld.so is done). ``lines``: the preload file's lines
    that hold one entry alone (`preload_file_lines`), by entry."""
    causes = causes or {}
    found: list[Preload] = []
    names: dict[str, str] = {}

    def there(path: str) -> None:  # a file in the process already, with what put it there when start-up did
        _add(Preload(os.path.basename(path), path, None, soname=_soname(path, elf), cause=causes.get(path)), found,
             names)

    for path in (p for p in mapped if p not in causes):
        there(path)
    queue: list[tuple[str, Request, linker.Chain | None]] = []
    for request in preload_requests(environ, env, file_entries):
        if request.ignored is not None:
            found.append(Preload(request.entry, None, request.entry, "ignored in secure-execution mode (an entry "
                                 "with a '/')", source=request.source, by=request.ignored))
        else:
            queue.append((request.entry, request, None))
    while queue:
        name, request, chain = queue.pop(0)
        entry = request.entry
        requester = chain.requester.path if chain is not None and chain.requester is not None else None
        # a path entry is the file it leads to: glibc compares files (dev, inode), maps shows the real path
        already = names.get(name) or (names.get(os.path.realpath(name)) if "/" in name else None)
        if already is not None:
            at = next((i for i, item in enumerate(found) if item.path == already and item.entry is None), None)
            if at is not None:  # a running process's file: a preload put it there when the process started
                found[at] = replace(found[at], entry=entry, source=request.source, by=request.rule)
                queue += _needed(already, request, elf)
            # the object already there answers this NEEDED too: what the requester binds at start must be in it
            # (measured: a 9.28 cnn preloaded beside 9.0's ops, whose NEEDED graph cnn brought first)
            lookup = _lookup_error(unresolved, requester, already, name)
            if lookup is not None:
                found.append(Preload(name, already, entry, lookup, soname=_soname(already, elf),
                                     source=request.source, by="start-order"))
            continue
        how: linker.How = "needed" if chain is not None else "preload"
        res = linker.resolve(name, chain, replace(env, loaded=dict(names)), how=how)
        by = request.rule if how == "preload" else "start-order"
        # a file cut inside a segment: mapping it kills the process (SIGBUS); a FIFO: opening it blocks for ever
        # (an LD_PRELOAD entry of one hung the probe's child for its whole timeout), entry or NEEDED alike
        if res.kills or res.hangs:
            found.append(Preload(name, res.path, entry, kills=res.kills, hangs=res.hangs, source=request.source,
                                 by=res.by))
            break
        if res.path is None or res.error is not None:
            error = res.error or f"{name}: cannot open shared object file: No such file or directory"
            found.append(Preload(name, None, entry, f"object '{name}' from {request.source} cannot be preloaded "
                                 f"({preload_reason(error, name, res.path)}): ignored" if how == "preload" else error,
                                 source=request.source, by="preload-not-loadable" if how == "preload" else res.by))
            continue
        item = Preload(name, res.path, entry, _lookup_error(unresolved, requester, res.path, name),
                       soname=_soname(res.path, elf), source=request.source, by=by)
        _add(item, found, names)
        queue += _needed(res.path, request, elf)
    # Python's start-up runs after ld.so mapped every preload and what it NEEDs: a .pth line's dlopen by path of
    # another file with a name a preload's NEEDED answered already maps a second object, which answers that name
    # for nobody (measured: a 9.0 graph loaded by a .pth beside a preloaded 9.28 ops, whose graph torch's shim got)
    if not any(item.kills or item.hangs for item in found):
        for path in (p for p in mapped if p in causes):
            there(path)
    lines = lines or {}
    return tuple(replace(item, line=lines.get(item.entry)) if item.source == PRELOAD_FILE and item.entry is not None
                 else item for item in found)


def preload_reason(error: str, name: str, path: str | None) -> str:
    """The reason do_preload prints in parentheses: the error's own words, without the object's name (glibc
    prints the exception's message, not dlerror's text with the errno spelled out)."""
    for prefix in (f"{path}: " if path else None, f"{name}: "):
        if prefix and error.startswith(prefix):
            error = error[len(prefix):]
    return error.split(": ", 1)[0] if error.startswith("cannot open shared object file") else error


def _lookup_error(unresolved: Unresolved | None, requester: str | None, provider: str, name: str) -> str | None:
    """ld.so's "symbol lookup error" when the cuDNN library ``provider``, answering ``requester``'s NEEDED
    ``name``, lacks a symbol of that version node the requester binds at start; None when nothing is missing."""
    if unresolved is None or requester is None or not name.startswith("libcudnn"):
        return None
    lacking = unresolved(requester, provider, name)
    return f"symbol lookup error: {requester}: undefined symbol: {lacking[0]}, version {name}" if lacking else None


def _needed(path: str, request: Request, elf: ElfReader) -> list[tuple[str, Request, linker.Chain | None]]:
    """What the preloaded file at ``path`` NEEDs (beyond glibc's own), each asked for with its search path."""
    info = elf(path)
    if info is None:
        return []
    requester = linker.Chain((linker.Requester.from_elf(path, info),))
    return [(needed, request, requester) for needed in info.needed if needed not in _SYSTEM]


def loaded_names(items: Sequence[Preload]) -> dict[str, str]:
    """Each name a mapped object answers to (its SONAME, the name it was asked for and its path) -> its path: the
    linker model's ``already-loaded`` table."""
    names: dict[str, str] = {}
    for item in items:
        _answers(item, names)
    return names


def _add(item: Preload, found: list[Preload], names: dict[str, str]) -> None:
    """``item`` in the process, in order, answering its names where no earlier object does."""
    found.append(item)
    _answers(item, names)


def _answers(item: Preload, names: dict[str, str]) -> None:
    """_dl_name_match_p: the path as loaded (l_name) and each name it was asked for; the soname too (matched
    on first use). A running process's file (no entry) answers its file name as well: its request is unknown."""
    if item.path is None:
        return
    own = (os.path.basename(item.path),) if item.entry is None else ()
    for name in (item.soname, item.name, item.path, *own):
        if name:
            names.setdefault(name, item.path)


def _soname(path: str, elf: ElfReader) -> str | None:
    info = elf(path)
    return info.soname if info else None
