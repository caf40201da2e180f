"""On-disk memo of ``read_elf`` results, keyed by path, size, mtime and inode.

A repeat inspection in a new process then costs one small file read instead of
importing pyelftools (85 ms) and walking ten libraries. A cache that cannot be
read, is from another cudnnload version or is corrupt is ignored and rebuilt;
a file whose size, mtime or inode changed is inspected again.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Hashable, Mapping

from cudnnload.cachedir import cache_dir
from cudnnload.resolve.elf import ElfInfo, read_elf

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cudnnload.resolve.linker import LinkerDefaults

FORMAT = 5  # bump when ElfInfo's fields, its module path or the file layout change


def cache_file(environ: Mapping[str, str] | None = None) -> str | None:
    """Where the memo lives, or None when ``CUDNNLOAD_NO_CACHE`` is set."""
    root = cache_dir(environ)
    return None if root is None else os.path.join(root, f"elf-v{FORMAT}.pickle")


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


def _key(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev)


class ElfCache:
    """Read-through memo. ``inspect(path)`` returns the same ElfInfo ``read_elf`` would."""

    def __init__(self, location: str | None) -> None:
        self.location = location
        self.entries: dict[str, tuple[tuple[int, int, int, int], ElfInfo]] = {}
        self.facts: dict[Hashable, Any] = {}  # other machine facts worth remembering (memo())
        self.dirty = False
        if location is not None:
            self.entries, self.facts = _load(location)

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """A remembered fact of this machine; ``key`` must name everything the fact depends on."""
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
        stat = os.stat(path)
        key = _key(stat)
        hit = self.entries.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        info = read_elf(path)
        self.entries[path] = (key, info)
        self.dirty = True
        return info

    def save(self) -> None:
        """Write the memo atomically; a cache folder we cannot write is not an error."""
        if self.location is None or not self.dirty:
            return
        try:
            import tempfile  # 6 ms to import: only when something new must be written

            folder = os.path.dirname(self.location)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".elf-", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((FORMAT, self.entries, self.facts), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.location)
            self.dirty = False
        except OSError:
            pass


def _load(location: str) -> tuple[dict[str, tuple[tuple[int, int, int, int], ElfInfo]], dict[Hashable, Any]]:
    try:
        with open(location, "rb") as handle:
            version, entries, facts = pickle.load(handle)
    except Exception:  # missing, truncated, garbage, or an old class layout: rebuild
        return {}, {}
    if version != FORMAT or not isinstance(entries, dict) or not isinstance(facts, dict):
        return {}, {}
    return entries, facts
