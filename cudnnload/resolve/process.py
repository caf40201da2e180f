"""What a process maps before its cuDNN is asked for, in glibc's order: the model every entry point shares.

glibc (elf/rtld.c ``dl_main``, elf/dl-deps.c ``_dl_map_object_deps``) maps, in this order: the objects
already in the process (a running one's, `mapped`), then each ``LD_PRELOAD`` entry (separated by spaces or
colons; an entry with a '/' opened as given, a bare name searched as the program's own DT_NEEDED would be),
then what those preloaded objects NEED, breadth first. An object a preloaded entry put in the process
answers every later lookup of its soname (``already-loaded``): the cuDNN shim's own ``dlopen`` of
``libcudnn_graph.so.9`` then gets the preloaded file, whatever its RPATH says; and a program calling
``cudnnGetVersion`` binds to the first object of the global scope that exports it, a preloaded shim before
the one the program opened by path.

In a running process (``doctor --pid``) the preloaded objects are among `mapped` already: each is then
credited to the entry that names it (and what it NEEDs, to the same entry), as if it had been mapped now.
`preloaded` computes that state; `discovery.context` passes it to the linker model (``LinkerEnv.loaded``)
and keeps, for each preloaded file, the entry that brought it (`Context.preloads`): a fix can then name
the entry to remove. Secure-execution mode (a set-user-ID program) drops entries with a '/' and is not
modelled here: `judge.policy` warns about such programs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cudnnload.resolve import linker
from cudnnload.resolve.elf import ElfInfo
from cudnnload.resolve.startup import Source

# What `preloaded` asks of a file: its ELF facts, or None (`discovery.Context.elf` answers).
ElfReader = Callable[[str], ElfInfo | None]
# What a file needs from a version node that another file lacks (`discovery.Context.unresolved` answers).
Unresolved = Callable[[str, str, str], "tuple[str, ...] | None"]

# Always present with glibc and the compiler runtime: a preloaded object's NEEDED of these change nothing.
_SYSTEM = frozenset({"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
                     "libstdc++.so.6", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"})


@dataclass(frozen=True)
class Preload:
    """One object the process maps before the program asks for anything: an LD_PRELOAD entry, what such an
    entry NEEDs, or an object a running process already has."""

    name: str  # as asked for: the entry as written, or the NEEDED name
    path: str | None  # the file mapped; None when the entry is not found (glibc prints an error and goes on)
    entry: str | None  # the LD_PRELOAD entry that brought it (itself, or what NEEDs it); None: mapped already
    error: str | None = None  # why it was not mapped (ld.so: "cannot be preloaded ...: ignored")
    soname: str | None = None  # the SONAME it answers to (read from the file)
    kills: bool = False  # mapping it kills the process (SIGBUS on a cut segment): before the program starts
    # what put an already-mapped object there when that was Python's start-up (`startup.Mapped.source`: a .pth
    # import line, sitecustomize ...): the file and line a fix takes it out of
    cause: Source | None = None

    @property
    def stops_start(self) -> bool:
        """Whether this stops every program at start: a library an entry NEEDs that cannot be loaded (rtld.c
        maps the entries' dependencies with the program's: a failure there is fatal, "error while loading
        shared libraries"), or a file whose mapping kills the process. An entry that is itself not found or
        not loadable is only skipped (``do_preload``: "cannot be preloaded ...: ignored")."""
        return self.kills or (self.error is not None and self.entry is not None and self.name != self.entry)

    @property
    def printed(self) -> str:
        """What ld.so prints, after the program's name, when this stops a start."""
        if self.kills:
            return f"(nothing: SIGBUS mapping {self.path}, which is cut short)"
        error = self.error or ""
        return error if error.startswith("symbol lookup error") else f"error while loading shared libraries: {error}"


def preload_entries(environ: Mapping[str, str]) -> tuple[str, ...]:
    """LD_PRELOAD as ld.so splits it: on spaces and colons, empty entries dropped (rtld.c
    ``handle_preload_list``: " :")."""
    return tuple(entry for entry in re.split(r"[ :]", environ.get("LD_PRELOAD", "")) if entry)


def preloaded(environ: Mapping[str, str], env: linker.LinkerEnv, elf: ElfReader,
              mapped: Sequence[str] = (), unresolved: Unresolved | None = None,
              causes: Mapping[str, Source] | None = None) -> tuple[Preload, ...]:
    """What is in the process before the program's own loads: ``mapped`` (a running process's files), then
    each LD_PRELOAD entry and, breadth first, what they NEED (``elf`` reads a file's dynamic section). A cuDNN
    library NEEDed by a preloaded one that lacks a symbol of that version node the requester needs stops the
    start ("symbol lookup error: ...: undefined symbol: S, version libcudnn_graph.so.9", measured: a 9.0
    engine library preloaded with the 9.27 JIT graph on the path); ``unresolved`` tells."""
    found: list[Preload] = [Preload(os.path.basename(path), path, None, soname=_soname(path, elf),
                                    cause=(causes or {}).get(path)) for path in mapped]
    names: dict[str, str] = {}
    for item in found:
        _answers(item, names)
    queue: list[tuple[str, str, linker.Chain | None]] = [(entry, entry, None) for entry in preload_entries(environ)]
    while queue:
        name, entry, chain = queue.pop(0)
        requester = chain.requester.path if chain is not None and chain.requester is not None else None
        # a path entry is the file it leads to: glibc compares files (dev, inode), maps shows the real path
        already = names.get(name) or (names.get(os.path.realpath(name)) if "/" in name else None)
        if already is not None:
            at = next((i for i, item in enumerate(found) if item.path == already and item.entry is None), None)
            if at is not None:  # a running process's file: LD_PRELOAD put it there when the process started
                found[at] = replace(found[at], entry=entry)
                queue += _needed(already, entry, elf)
            # the object already there answers this NEEDED too: what the requester binds at start must be in it
            # (measured: a 9.28 cnn preloaded beside 9.0's ops, whose NEEDED graph cnn brought first)
            lookup = _lookup_error(unresolved, requester, already, name)
            if lookup is not None:
                found.append(Preload(name, already, entry, lookup, soname=_soname(already, elf)))
            continue
        res = linker.resolve(name, chain, replace(env, loaded=dict(names)))
        if res.kills:  # a file cut inside a segment: mapping it kills the process (SIGBUS), entry or NEEDED alike
            found.append(Preload(name, res.path, entry, kills=True))
            break
        if res.path is None or res.error is not None:
            error = res.error or f"{name}: cannot open shared object file: No such file or directory"
            found.append(Preload(name, None, entry, f"object '{name}' from LD_PRELOAD cannot be preloaded ({error}): "
                                 "ignored" if name == entry else error))
            continue
        item = Preload(name, res.path, entry, _lookup_error(unresolved, requester, res.path, name),
                       soname=_soname(res.path, elf))
        found.append(item)
        _answers(item, names)
        queue += _needed(res.path, entry, elf)
    return tuple(found)


def _lookup_error(unresolved: Unresolved | None, requester: str | None, provider: str, name: str) -> str | None:
    """ld.so's "symbol lookup error" when the cuDNN library ``provider``, answering ``requester``'s NEEDED
    ``name``, lacks a symbol of that version node the requester binds at start; None when nothing is missing."""
    if unresolved is None or requester is None or not name.startswith("libcudnn"):
        return None
    lacking = unresolved(requester, provider, name)
    return f"symbol lookup error: {requester}: undefined symbol: {lacking[0]}, version {name}" if lacking else None


def _needed(path: str, entry: str, elf: ElfReader) -> list[tuple[str, str, linker.Chain | None]]:
    """What the preloaded file at ``path`` NEEDs (beyond glibc's own), each asked for with its search path."""
    info = elf(path)
    if info is None:
        return []
    requester = linker.Chain((linker.Requester.from_elf(path, info),))
    return [(needed, entry, requester) for needed in info.needed if needed not in _SYSTEM]


def loaded_names(items: Sequence[Preload]) -> dict[str, str]:
    """Each name a mapped object answers to (its SONAME, its file name, the name it was asked for and its
    path) -> its path: the linker model's ``already-loaded`` table."""
    names: dict[str, str] = {}
    for item in items:
        _answers(item, names)
    return names


def _answers(item: Preload, names: dict[str, str]) -> None:
    if item.path is None:
        return
    for name in (item.soname, os.path.basename(item.path), item.name, item.path):
        if name:
            names.setdefault(name, item.path)


def _soname(path: str, elf: ElfReader) -> str | None:
    info = elf(path)
    return info.soname if info else None
