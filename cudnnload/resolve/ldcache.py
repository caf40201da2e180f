"""glibc's ``/etc/ld.so.cache``, read the way ``ld.so`` reads it, without running ldconfig.

Layouts (glibc ``sysdeps/generic/dl-cache.h``, ``elf/dl-cache.c``, ``elf/cache.c``):

- new, ``glibc-ld.so.cache1.1``, the only format ldconfig writes by default since
  glibc 2.32: a 48-byte header (magic, nlibs, len_strings, endianness flags,
  extension_offset), ``nlibs`` 24-byte entries (flags, key, value, osversion,
  hwcap) and the strings. Entry strings count from the start of this header.
  The extension directory at ``extension_offset`` (a file offset) names the
  generator and the ``glibc-hwcaps`` subdirectories; an entry whose hwcap has
  bit 62 set keeps the index of its subdirectory in the low 32 bits.
- old, ``ld.so-1.7.0``: a 16-byte header and 12-byte entries (flags, key,
  value) whose strings count from the end of the entry array. ``ldconfig -c
  compat`` appends a new-format cache to it (8-byte aligned); ``ld.so`` then
  reads only the new one, and so does this module.

The cache is small (tens of kilobytes), so it is read whole.
"""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import dataclass
from functools import cached_property

from cudnnload.files import NotRegularFile, read_regular

LD_SO_CACHE = "/etc/ld.so.cache"

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"

# flags = FLAG_ELF_LIBC6 (type, low byte) | architecture (FLAG_REQUIRED_MASK),
# as ldconfig -p prints them (elf/cache.c print_entry, sysdeps/generic/ldconfig.h).
FLAG_TYPE_MASK = 0x00FF
FLAG_REQUIRED_MASK = 0xFF00
FLAG_ELF_LIBC6 = 0x0003
_ARCH_LABELS = {
    0x0100: "64bit", 0x0200: "IA-64", 0x0300: "x86-64", 0x0400: "64bit", 0x0500: "64bit",
    0x0600: "N32", 0x0700: "64bit", 0x0800: "x32", 0x0900: "hard-float", 0x0A00: "AArch64",
    0x0B00: "soft-float", 0x0C00: "nan2008", 0x0D00: "N32,nan2008", 0x0E00: "64bit,nan2008",
    0x0F00: "soft-float", 0x1000: "double-float",
}

# The only flags value a 64-bit x86 or Arm ld.so accepts (_DL_CACHE_DEFAULT_ID and
# _dl_cache_check_flags in sysdeps/unix/sysv/linux/{x86_64,aarch64}/dl-cache.h);
# elsewhere glibc's generic rule accepts 1 (plain ELF) and 3 (libc6).
_HOST_FLAGS = {(64, "EM_X86_64"): (0x0303,), (64, "EM_AARCH64"): (0x0A03,)}
_GENERIC_FLAGS = (0x0001, 0x0003)

# Bit 62 of hwcap marks a glibc-hwcaps entry; bits 32..41 hold an x86 ISA level
# (dl-cache.h DL_CACHE_HWCAP_EXTENSION, DL_CACHE_HWCAP_ISA_LEVEL_MASK).
HWCAP_EXTENSION = 1 << 62
_ISA_LEVEL_MASK = 0x3FF
_EXTENSION_MAGIC = 0xEAA42174  # (uint32_t) -358342284, cache_extension_magic
_TAG_GENERATOR, _TAG_GLIBC_HWCAPS = 0, 1

_MAX_BYTES = 64 << 20  # an ld.so.cache is some hundred KB
_ORDER = "<" if sys.byteorder == "little" else ">"
_NEW_HEADER = struct.Struct(_ORDER + "20sIIB3xI12x")  # magic+version, nlibs, len_strings, flags, ext offset
_NEW_ENTRY = struct.Struct(_ORDER + "iIIIQ")  # flags, key, value, osversion, hwcap
_OLD_HEADER = struct.Struct(_ORDER + "11sxI")  # magic, pad, nlibs
_OLD_ENTRY = struct.Struct(_ORDER + "iII")
_U32 = struct.Struct(_ORDER + "I")
_EXT_SECTION = struct.Struct(_ORDER + "IIII")  # tag, flags, offset, size
# cache_file_new.flags: 2 = little-endian, 3 = big-endian, 0 = written before endianness was recorded.
_OWN_ENDIAN = 2 if sys.byteorder == "little" else 3


def accepted_flags(elf_class: int, machine: str) -> tuple[int, ...]:
    """The entry flags ``ld.so`` of this ELF class and machine accepts."""
    return _HOST_FLAGS.get((elf_class, machine), _GENERIC_FLAGS)


def is_named_hwcap(hwcap: int) -> bool:
    """True for a glibc-hwcaps entry (dl_cache_hwcap_extension in dl-cache.h)."""
    return (hwcap >> 32) & ~_ISA_LEVEL_MASK == HWCAP_EXTENSION >> 32


@dataclass(frozen=True)
class CacheEntry:
    """One line of ``ldconfig -p``: a soname, the file it maps to, and for which ABI."""

    name: str  # the key ld.so compares with the requested name (the soname)
    path: str
    flags: int
    hwcap: int = 0
    hwcaps_subdir: str | None = None  # "x86-64-v3" for a lib found in glibc-hwcaps/x86-64-v3/

    @property
    def abi(self) -> str:
        """The parenthesised ABI ``ldconfig -p`` prints: ``libc6,x86-64``."""
        kind = "libc6" if self.flags & FLAG_TYPE_MASK == FLAG_ELF_LIBC6 else "unknown or unsupported flag"
        required = self.flags & FLAG_REQUIRED_MASK
        arch = _ARCH_LABELS.get(required, str(required)) if required else None
        return f"{kind},{arch}" if arch else kind

    @property
    def named_hwcap(self) -> bool:
        return is_named_hwcap(self.hwcap)


@dataclass(frozen=True)
class LdCache:
    """A parsed cache. An unreadable or malformed file gives no entries and a ``problem``."""

    path: str
    format: str  # "new", "old", "old+new", or "" when nothing could be read
    entries: tuple[CacheEntry, ...] = ()
    generator: str | None = None  # "ldconfig (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36"
    problem: str | None = None

    def lookup(self, name: str, flags: tuple[int, ...], hwcaps: tuple[str, ...] = (),
               legacy: tuple[str, ...] | None = None) -> CacheEntry | None:
        """The entry ``ld.so`` would pick for ``name`` (``search_cache`` in dl-cache.c).

        ``flags``: what the host accepts (:func:`accepted_flags`). ``hwcaps``: the
        glibc-hwcaps subdirectories the CPU supports, most preferred first. Among
        the entries for ``name`` (ldconfig sorts glibc-hwcaps entries first), the
        supported glibc-hwcaps entry of highest priority wins; otherwise the first
        plain entry. ``legacy``: the legacy hwcaps subfolders the loader supports (``tls``, ``x86_64``...,
        glibc <= 2.39 takes such entries, rule ld-cache-legacy-hwcap): a legacy entry (written by ldconfig
        for a library in one of them) counts when its folder ends with one of them; None: the loader takes
        none (glibc 2.40+).
        """
        best: CacheEntry | None = None
        best_priority = len(hwcaps)
        for entry in self.named(name):
            if entry.flags not in flags:
                continue
            if entry.named_hwcap:
                if entry.hwcaps_subdir in hwcaps and hwcaps.index(entry.hwcaps_subdir) < best_priority:
                    best, best_priority = entry, hwcaps.index(entry.hwcaps_subdir)
            elif best is None and (entry.hwcap == 0 or (legacy and _in_legacy(entry.path, legacy))):
                return entry
        return best  # a glibc-hwcaps entry, which ldconfig sorts before the plain ones

    def legacy_entries(self, name: str) -> bool:
        """Whether ``name`` has legacy hwcap entries (ldconfig before 2.37 wrote them for tls/, x86_64/ ...)."""
        return any(entry.hwcap and not entry.named_hwcap for entry in self.named(name))

    def named(self, name: str) -> tuple[CacheEntry, ...]:
        """The entries for ``name``, in the file's order (looked up in an index: a cache of thousands of entries is
        not scanned once per lookup)."""
        return self._by_name.get(name, ())

    @cached_property
    def _by_name(self) -> dict[str, tuple[CacheEntry, ...]]:
        index: dict[str, list[CacheEntry]] = {}
        for entry in self.entries:
            index.setdefault(entry.name, []).append(entry)
        return {name: tuple(entries) for name, entries in index.items()}


def _in_legacy(path: str, legacy: tuple[str, ...]) -> bool:
    folder = os.path.dirname(path)
    return any(folder.endswith("/" + sub) for sub in legacy)


def read_ld_cache(path: str = LD_SO_CACHE) -> LdCache:
    """Parse ``path``; never raises: a missing or garbage file gives an empty cache with a problem."""
    try:  # some hundred KB; a FIFO or a device there would block or never end
        data = read_regular(path, _MAX_BYTES)
    except NotRegularFile as exc:
        return LdCache(path, "", problem=exc.reason)
    except OSError as exc:
        return LdCache(path, "", problem=f"cannot read: {exc.strerror or exc}")
    if data.startswith(NEW_MAGIC):
        return _parse_new(path, data, 0, "new")
    if data.startswith(OLD_MAGIC):
        return _parse_old(path, data)
    return LdCache(path, "", problem=f"not an ld.so.cache (starts with {data[:20]!r})")


def _parse_old(path: str, data: bytes) -> LdCache:
    if len(data) < _OLD_HEADER.size:
        return LdCache(path, "", problem="old-format header truncated")
    _magic, nlibs = _OLD_HEADER.unpack_from(data)
    entries_end = _OLD_HEADER.size + nlibs * _OLD_ENTRY.size
    if entries_end > len(data):
        return LdCache(path, "", problem=f"old-format cache claims {nlibs} entries, file has {len(data)} bytes")
    embedded = (entries_end + 7) & ~7  # ALIGN_CACHE: alignment of struct cache_file_new
    if data[embedded:embedded + len(NEW_MAGIC)] == NEW_MAGIC:
        return _parse_new(path, data, embedded, "old+new")
    strings = data[entries_end:]
    entries: list[CacheEntry] = []
    for index in range(nlibs):
        flags, key, value = _OLD_ENTRY.unpack_from(data, _OLD_HEADER.size + index * _OLD_ENTRY.size)
        if key >= len(strings) or value >= len(strings):
            return LdCache(path, "old", tuple(entries), problem=f"entry {index} points outside the file")
        entries.append(CacheEntry(_cstring(strings, key), _cstring(strings, value), flags))
    return LdCache(path, "old", tuple(entries))


def _parse_new(path: str, data: bytes, start: int, label: str) -> LdCache:
    if len(data) - start < _NEW_HEADER.size:
        return LdCache(path, "", problem="new-format header truncated")
    _magic, nlibs, _len_strings, endian, ext_offset = _NEW_HEADER.unpack_from(data, start)
    if endian not in (0, _OWN_ENDIAN):
        # cache_file_new_matches_endian: ld.so ignores such a cache entirely.
        return LdCache(path, "", problem=f"cache endianness flag {endian} does not match this machine")
    first = start + _NEW_HEADER.size
    if first + nlibs * _NEW_ENTRY.size > len(data):
        return LdCache(path, "", problem=f"cache claims {nlibs} entries, file has {len(data)} bytes")
    strings = data[start:]  # entry strings count from the new header
    generator, hwcaps_names = _extensions(data, ext_offset)
    entries: list[CacheEntry] = []
    for index in range(nlibs):
        flags, key, value, _osversion, hwcap = _NEW_ENTRY.unpack_from(data, first + index * _NEW_ENTRY.size)
        if key >= len(strings) or value >= len(strings):
            return LdCache(path, label, tuple(entries), generator,
                           problem=f"entry {index} points outside the file")
        subdir = hwcaps_names.get(hwcap & 0xFFFFFFFF) if is_named_hwcap(hwcap) else None
        entries.append(CacheEntry(_cstring(strings, key), _cstring(strings, value), flags, hwcap, subdir))
    return LdCache(path, label, tuple(entries), generator)


def _extensions(data: bytes, offset: int) -> tuple[str | None, dict[int, str]]:
    """Generator string and glibc-hwcaps names (cache_extension_load in dl-cache.h).

    Offsets here count from the start of the file, and so do the string indices
    of the hwcaps array, as both ld.so (glibc_hwcaps_compare) and ``ldconfig -p``
    read them. In a ``-c compat`` file that start is not the new header the
    writer counted from, so glibc 2.36 reads garbage names there; so do we.
    """
    if offset == 0 or offset % 4 or offset + 8 > len(data):
        return None, {}
    magic, count = struct.unpack_from(_ORDER + "II", data, offset)
    if magic != _EXTENSION_MAGIC or offset + 8 + count * _EXT_SECTION.size > len(data):
        return None, {}
    generator: str | None = None
    names: dict[int, str] = {}
    for index in range(count):
        tag, _flags, start, size = _EXT_SECTION.unpack_from(data, offset + 8 + index * _EXT_SECTION.size)
        if start + size > len(data):
            return None, {}
        if tag == _TAG_GENERATOR:
            generator = data[start:start + size].decode("utf-8", "replace")
        elif tag == _TAG_GLIBC_HWCAPS and size and start % 4 == 0 and size % 4 == 0:
            for slot in range(size // 4):
                (string_index,) = _U32.unpack_from(data, start + 4 * slot)
                if string_index < len(data):
                    names[slot] = _cstring(data, string_index)
    return generator, names


def _cstring(data: bytes, offset: int) -> str:
    end = data.find(b"\0", offset)
    return os.fsdecode(data[offset:end if end >= 0 else len(data)])
