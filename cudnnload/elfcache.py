"""On-disk memo of ``read_elf`` results, keyed by path, size, mtime and inode.

A repeat inspection in a new process then costs one small file read instead of
importing pyelftools (85 ms) and walking ten libraries. A cache that cannot be
read, is from another cudnnload version or is corrupt is ignored and rebuilt;
a file whose size, mtime or inode changed is inspected again.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cudnnload.elf import ElfInfo, read_elf

FORMAT = 1  # bump when ElfInfo's fields change


def cache_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the memo lives, or None when ``CUDNNLOAD_NO_CACHE`` is set."""
    env = os.environ if environ is None else environ
    if env.get("CUDNNLOAD_NO_CACHE"):
        return None
    root = env.get("CUDNNLOAD_CACHE") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "cudnnload")
    return Path(root) / f"elf-v{FORMAT}.pickle"


def _key(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev)


class ElfCache:
    """Read-through memo. ``inspect(path)`` returns the same ElfInfo ``read_elf`` would."""

    def __init__(self, location: Path | None) -> None:
        self.location = location
        self.entries: dict[str, tuple[tuple[int, int, int, int], ElfInfo]] = {}
        self.dirty = False
        if location is not None:
            self.entries = _load(location)

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
            self.location.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.location.parent, prefix=".elf-", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((FORMAT, self.entries), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.location)
            self.dirty = False
        except OSError:
            pass


def _load(location: Path) -> dict[str, tuple[tuple[int, int, int, int], ElfInfo]]:
    try:
        with open(location, "rb") as handle:
            version, entries = pickle.load(handle)
    except Exception:  # missing, truncated, garbage, or an old class layout: rebuild
        return {}
    if version != FORMAT or not isinstance(entries, dict):
        return {}
    return entries
