"""On-disk memo of ``read_elf`` results, keyed by path, size, mtime, inode and device.

A repeat inspection in a new process then costs one small file read instead of
importing pyelftools (85 ms) and walking ten libraries. The memo is JSON data
(`cudnnload.cachedir`: never code, in a folder only its owner can write); an
entry is turned back into an ElfInfo only when it is asked for. A cache that
cannot be read, is from another cudnnload version or is corrupt is ignored and
rebuilt; a file whose size, mtime, inode or device changed is inspected again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping

from cudnnload.cachedir import cache_dir, plain, read_json, revive, stamp, write_json
from cudnnload.resolve.elf import ElfInfo, VersionNeed, read_elf
from cudnnload.resolve.fatbin import ArchCount, GpuCode
from cudnnload.resolve.versions import Release

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cudnnload.resolve.linker import LinkerDefaults

FORMAT = 6  # bump when ElfInfo's fields or the file layout change
# the only classes a memo can make (cachedir.revive)
KINDS = {kind.__name__: kind for kind in (ElfInfo, VersionNeed, Release, GpuCode, ArchCount)}


def cache_file(environ: Mapping[str, str] | None = None) -> str | None:
    """Where the memo lives, or None when ``CUDNNLOAD_NO_CACHE`` is set."""
    root = cache_dir(environ)
    return None if root is None else os.path.join(root, f"elf-v{FORMAT}.json")


def linker_defaults(cache: ElfCache, environ: Mapping[str, str]) -> LinkerDefaults:
    """The real ld.so's defaults (linker.probe_linker_defaults, a child process), remembered for
    this boot of this machine and these tunables: they depend on the CPU, glibc and GLIBC_TUNABLES.
    Kept as plain fields, so reading the memo does not import the linker model."""
    import dataclasses

    from cudnnload.resolve.linker import LinkerDefaults, probe_linker_defaults

    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
    except OSError:
        return probe_linker_defaults(environ)
    key = ("linker-defaults", boot, os.confstr("CS_GNU_LIBC_VERSION"), environ.get("GLIBC_TUNABLES"),
           environ.get("LD_HWCAP_MASK"))
    fields = cache.memo(key, lambda: dataclasses.asdict(probe_linker_defaults(environ)))
    return LinkerDefaults(**fields)


class ElfCache:
    """Read-through memo. ``inspect(path)`` returns the same ElfInfo ``read_elf`` would."""

    def __init__(self, location: str | None) -> None:
        self.location = location
        self.entries: dict[str, tuple[tuple[int, ...], ElfInfo]] = {}
        self.facts: dict[Hashable, Any] = {}  # other machine facts worth remembering (memo())
        self.dirty = False
        self._stored: dict[str, Any] = {}  # path -> [stamp, ElfInfo as data], revived on first use
        if location is not None:
            self._stored, self.facts = _load(location)

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """A remembered fact of this machine; ``key`` (a tuple of strings and numbers) must name
        everything the fact depends on; the fact is JSON data (tuples come back as tuples)."""
        if key not in self.facts:
            self.remember(key, compute())
        return self.facts[key]

    def recall(self, key: Hashable) -> Any | None:
        """A fact remembered under ``key``, or None."""
        return self.facts.get(key)

    def remember(self, key: Hashable, value: Any) -> None:
        self.facts[key] = value
        self.dirty = True

    def inspect(self, path: str) -> ElfInfo:
        key = stamp(path)
        hit = self.entries.get(path) or self._revived(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        info = read_elf(path)
        self.entries[path] = (key, info)
        self.dirty = True
        return info

    def _revived(self, path: str) -> tuple[tuple[int, ...], ElfInfo] | None:
        stored = self._stored.get(path)
        if stored is None:
            return None
        try:
            stamp, info = revive(stored, KINDS)
        except (ValueError, TypeError):
            return None
        if not isinstance(info, ElfInfo):
            return None
        self.entries[path] = (stamp, info)
        return stamp, info

    def save(self) -> None:
        """Write the memo atomically; a cache folder we cannot write is not an error."""
        if self.location is None or not self.dirty:
            return
        entries = dict(self._stored)
        entries.update({path: [list(stamp), plain(info)] for path, (stamp, info) in self.entries.items()})
        facts = [[plain(key), plain(value)] for key, value in self.facts.items()]
        if write_json(self.location, {"format": FORMAT, "entries": entries, "facts": facts}):
            self.dirty = False


def _load(location: str) -> tuple[dict[str, Any], dict[Hashable, Any]]:
    content = read_json(location)
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        return {}, {}  # missing, corrupt, unsafe or of another version: rebuilt
    entries, facts = content.get("entries"), content.get("facts")
    if not isinstance(entries, dict) or not isinstance(facts, list):
        return {}, {}
    remembered: dict[Hashable, Any] = {}
    for pair in facts:
        try:
            key, value = revive(pair, KINDS)
            remembered[key] = value
        except (ValueError, TypeError):
            continue  # not a [key, value] pair, an unhashable key, a record of no known kind
    return entries, remembered
