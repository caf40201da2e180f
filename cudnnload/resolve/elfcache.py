"""On-disk memo of ``read_elf`` results, keyed by path, size, mtime, inode, device and change time.

A repeat inspection in a new process then costs one small file read instead of
importing pyelftools (85 ms) and walking ten libraries. The memo is JSON data
(`cudnnload.cachedir`: never code, in a folder only its owner can write); an
entry is turned back into an ElfInfo only when it is asked for, and only when every
field has the type ElfInfo declares. A memo that cannot be read, is from another
cudnnload version or is damaged is ignored and rebuilt, with one warning line; so is
a damaged entry; a file whose size, mtime, inode, device or change time changed is inspected again.
Processes merge what they learned into the file (`cachedir.write_entries`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Mapping

from cudnnload.cachedir import Layout, plain, read_entries, revive_entry, stamp, write_entries
from cudnnload.resolve.elf import ElfInfo, VersionNeed, read_elf
from cudnnload.resolve.fatbin import ArchCount, GpuCode
from cudnnload.resolve.versions import Release

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cudnnload.cachedir import Key, Kinds
    from cudnnload.resolve.linker import LinkerDefaults

FORMAT = 12  # bump when ElfInfo's fields, the stamp (`cachedir.stamp`), the file layout or what read_elf refuses change
# "entries": path -> [stamp, ElfInfo]; "facts": a fact's key as JSON text -> the fact (ElfCache.memo).
# Every command reads the whole memo: 2 MiB (~600 cuDNN-sized entries, every install of a busy machine) is
# read in ~20 ms; past it the oldest entries go. The test suite's runs never write the user's (Makefile).
LAYOUT = Layout("elf", FORMAT, ("entries", "facts"), depth=2, max_entries=1024, max_bytes=2 << 20)
# the only classes a memo entry can make (cachedir.revive)
KINDS = {kind.__name__: kind for kind in (ElfInfo, VersionNeed, Release, GpuCode, ArchCount)}
_ENTRY = "tuple[tuple[int, int, int, int, int], ElfInfo]"


def cache_file(environ: Mapping[str, str] | None = None) -> str | None:
    """Where the memo lives, or None when ``CUDNNLOAD_NO_CACHE`` is set."""
    return LAYOUT.path(environ)


_open: dict[str, tuple[tuple[int, ...] | None, ElfCache]] = {}  # location -> (its stamp when read, the memo)
_opening = threading.Lock()


def open_cache(environ: Mapping[str, str] | None = None) -> ElfCache:
    """The memo of ``environ``'s cache folder, read once per process: every stage of a command (discovery,
    the consumers, a target's reader) shares one. It is read again only when the file changed since
    (another process wrote it); what this process learned is kept either way."""
    location = cache_file(environ)
    if location is None:
        return ElfCache(None)
    with _opening:
        held = _open.get(location)
        now = _stamp_or_none(location)
        if held is not None and held[0] == now:
            return held[1]
        cache = ElfCache(location)
        if held is not None:
            cache.adopt(held[1])
        _open[location] = (_stamp_or_none(location), cache)
        return cache


def _stamp_or_none(path: str) -> tuple[int, ...] | None:
    try:
        return stamp(path)
    except OSError:
        return None


def linker_defaults(cache: ElfCache, environ: Mapping[str, str]) -> LinkerDefaults:
    """The real ld.so's defaults (linker.probe_linker_defaults, a child process), remembered for
    this boot of this machine and these tunables: they depend on the CPU, glibc and GLIBC_TUNABLES."""
    from cudnnload.resolve.linker import LinkerDefaults, probe_linker_defaults

    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
    except OSError:
        return probe_linker_defaults(environ)
    key = ("linker-defaults", boot, os.confstr("CS_GNU_LIBC_VERSION"), environ.get("GLIBC_TUNABLES"),
           environ.get("LD_HWCAP_MASK"))
    defaults: LinkerDefaults = cache.memo(key, lambda: probe_linker_defaults(environ), "LinkerDefaults",
                                          {"LinkerDefaults": LinkerDefaults})
    return defaults


class ElfCache:
    """Read-through memo. ``inspect(path)`` returns the same ElfInfo ``read_elf`` would."""

    def __init__(self, location: str | None) -> None:
        self.location = location
        self.entries: dict[str, tuple[tuple[int, ...], ElfInfo]] = {}
        self._facts: dict[Hashable, Any] = {}  # other machine facts worth remembering (memo())
        # what the file holds, as data, revived on first use; and what this process learned, to merge in
        self._stored: dict[Key, Any] = read_entries(location, LAYOUT) if location is not None else {}
        self._learned: dict[Key, object] = {}
        self._saving = threading.Lock()  # a command's threads (doctor's consumers, its probe) learn and save at once

    @property
    def dirty(self) -> bool:
        """Whether this process learned something the file does not hold yet."""
        return bool(self._learned)

    def memo(self, key: Hashable, compute: Callable[[], Any], shape: str, kinds: Kinds | None = None) -> Any:
        """A remembered fact of this machine; ``key`` (a tuple of strings and numbers) must name
        everything the fact depends on; ``shape`` is its type (`cachedir.revive`), made of ``kinds``."""
        found = self.recall(key, shape, kinds)
        if found is None:
            found = compute()
            self.remember(key, found)
        return found

    def recall(self, key: Hashable, shape: str, kinds: Kinds | None = None) -> Any | None:
        """A fact remembered under ``key``, as ``shape`` (`cachedir.revive`, with ``kinds``); None when none
        is, or what is there does not fit."""
        if key in self._facts:
            return self._facts[key]
        stored = self._stored.get(("facts", _fact_key(key)))
        if stored is None or self.location is None:
            return None
        fact = revive_entry(self.location, stored, shape, kinds or {})
        if fact is not None:
            self._facts[key] = fact
        return fact

    def remember(self, key: Hashable, value: Any) -> None:
        self._facts[key] = value
        self._learned["facts", _fact_key(key)] = plain(value)

    def inspect(self, path: str) -> ElfInfo:
        key = stamp(path)
        hit = self.entries.get(path) or self._revived(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        info = read_elf(path)
        self.entries[path] = (key, info)
        self._learned["entries", path] = [list(key), plain(info)]
        return info

    def _revived(self, path: str) -> tuple[tuple[int, ...], ElfInfo] | None:
        stored = self._stored.get(("entries", path))
        if stored is None or self.location is None:
            return None

        def other_file(hit: tuple[tuple[int, ...], ElfInfo]) -> str | None:
            return None if (hit[1].path, hit[1].size) == (path, hit[0][0]) else "it describes another file"

        hit: tuple[tuple[int, ...], ElfInfo] | None = revive_entry(self.location, stored, _ENTRY, KINDS, other_file)
        if hit is not None:
            self.entries[path] = hit
        return hit

    def adopt(self, older: ElfCache) -> None:
        """Keep what ``older`` (this file, as an earlier read in this process saw it) learned and has not
        written yet."""
        self._learned = {**older._learned, **self._learned}
        self._facts = {**older._facts, **self._facts}

    def save(self) -> None:
        """Merge what this process learned into the memo; a cache folder we cannot write is not an error."""
        if self.location is None or not self._learned:
            return
        with self._saving:
            learned = dict(self._learned)
            if not write_entries(self.location, LAYOUT, learned):
                return
            for key in learned:
                if self._learned.get(key) is learned[key]:
                    del self._learned[key]
            with _opening:
                if _open.get(self.location, (None, None))[1] is self:
                    _open[self.location] = (_stamp_or_none(self.location), self)


def _fact_key(key: Hashable) -> str:
    import json

    return json.dumps(plain(key), separators=(",", ":"))
