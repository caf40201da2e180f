"""The GPU code compiled into a library: SASS and PTX per architecture, from ``.nv_fatbin``.

Only the 16-byte container headers and the 64-byte entry headers are read;
payloads (hundreds of MB, LZ4 or ZSTD compressed) are skipped by offset. Format
verified on every fatbin-bearing library of the 8.5, 8.9.7, 9.0 and 9.28
wheels against ``cuobjdump --list-elf/--list-ptx`` (cudnn-facts §3.1).

The walk ends on any content: each step moves forward by at least one header,
and a header that makes no sense (a container header shorter than itself, an
entry of unknown kind or architecture) stops it with ``problem`` set.
"""

from __future__ import annotations

import os
import struct
from collections import Counter

from cudnnload.resolve.records import record

TYPE_CHECKING = False  # typing costs ~10 ms to import; type checkers treat this name as true
if TYPE_CHECKING:
    from collections.abc import Callable

CONTAINER_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header_size, fat_size
_ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # kind .. flags (first 48 bytes of 64)
KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a
FLAG_FAMILY_SPECIFIC = 0x200000  # sm_100f, sm_120f
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000


@record
class ArchCount:
    arch: str  # "sm_90a"
    count: int


@record
class GpuCode:
    """What one library carries for the GPU."""

    sass: tuple[ArchCount, ...]  # cubins per architecture, ascending
    ptx: tuple[ArchCount, ...]
    containers: int
    compression: str  # "lz4", "zstd", "none" or "mixed"
    problem: str | None = None  # set when the section stops making sense part-way

    @property
    def sass_archs(self) -> tuple[str, ...]:
        return tuple(a.arch for a in self.sass)

    @property
    def ptx_archs(self) -> tuple[str, ...]:
        return tuple(a.arch for a in self.ptx)

    def runs_on(self, capability: tuple[int, int]) -> bool:
        """Whether a GPU of this compute capability can run this code.

        SASS runs on the same major with an equal or higher minor (sm_86 cubins
        run on sm_89); ``a`` cubins only on exactly that SM; PTX JIT-compiles for
        any newer SM, ``f`` PTX only within its family (CUDA programming guide,
        "Binary Compatibility" / "Family-specific features").
        """
        major, minor = capability
        for arch in self.sass_archs:
            sm, suffix = _split(arch)
            if suffix == "a" and sm == major * 10 + minor:
                return True
            if suffix != "a" and sm // 10 == major and sm % 10 <= minor:
                return True
        for arch in self.ptx_archs:
            sm, suffix = _split(arch)
            if suffix == "" and sm <= major * 10 + minor:
                return True
            if suffix == "f" and sm // 10 == major and sm % 10 <= minor:
                return True
        return False


def _split(arch: str) -> tuple[int, str]:
    digits = arch[3:].rstrip("af")
    return int(digits), arch[3 + len(digits):]


def _name(kind: int, arch: int, flags: int) -> str:
    # cuobjdump prints "a" for cubins but hides the family "f"; we keep both,
    # since sm_120f and sm_120 cubins differ in where they may run.
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
    return f"sm_{arch}{suffix}"


def _sort_key(arch: str) -> tuple[int, str]:
    return _split(arch)


def read_gpu_code(fd: int, offset: int, size: int, tick: Callable[[], None] | None = None) -> GpuCode:
    """Walk the containers of a ``.nv_fatbin`` section at ``offset`` of an open file; ``tick`` is called
    at every container and every 256 entries (elf.py's time limit raises from it).

    Each header is a ``pread`` of a few bytes. An ``mmap`` walk measured 220 MB
    peak RSS on 9.28's engines_precompiled (the kernel maps 64 KB around each
    faulting page), ``pread`` keeps the process near its baseline.
    """
    sass: Counter[str] = Counter()
    ptx: Counter[str] = Counter()
    compressions: set[str] = set()
    containers = 0
    pos, end = offset, offset + size
    problem = None
    while pos + _CONTAINER.size <= end:
        if tick is not None:
            tick()
        magic, _version, header_size, fat_size = _CONTAINER.unpack(os.pread(fd, _CONTAINER.size, pos))
        if magic != CONTAINER_MAGIC:
            # The real wheels pack containers back to back; anything else
            # means padding we do not know or a damaged file: stop, say so.
            if any(os.pread(fd, min(64, end - pos), pos)):
                problem = f"unrecognised data at section offset {pos - offset:#x}"
            break
        if header_size < _CONTAINER.size:  # shorter than itself: with no payload the walk would stand still
            problem = f"bad container header at section offset {pos - offset:#x}"
            break
        containers += 1
        entry, entries_end = pos + header_size, pos + header_size + fat_size
        if entries_end > end:
            problem = f"container at section offset {pos - offset:#x} runs past the section"
            entries_end = end
        walked = 0
        while entry + _ENTRY.size <= entries_end:
            walked += 1
            if tick is not None and not walked % 256:
                tick()
            fields = _ENTRY.unpack(os.pread(fd, _ENTRY.size, entry))
            kind, _ver, entry_header, padded = fields[0], fields[1], fields[2], fields[3]
            arch, flags = fields[8], fields[11]
            # An architecture number is major * 10 + minor (sm_120: 12.0); past 999 it is damage, and
            # would make every entry a new counter key.
            if kind not in (KIND_PTX, KIND_ELF) or entry_header < 64 or padded <= 0 or not 0 < arch < 1000:
                problem = f"bad fatbin entry at section offset {entry - offset:#x}"
                break
            (sass if kind == KIND_ELF else ptx)[_name(kind, arch, flags)] += 1
            compressions.add("lz4" if flags & FLAG_LZ4 else "zstd" if flags & FLAG_ZSTD else "none")
            entry += entry_header + padded
        if problem:
            break
        pos = entries_end
    compression = compressions.pop() if len(compressions) == 1 else "mixed" if compressions else "none"
    return GpuCode(
        sass=tuple(ArchCount(a, sass[a]) for a in sorted(sass, key=_sort_key)),
        ptx=tuple(ArchCount(a, ptx[a]) for a in sorted(ptx, key=_sort_key)),
        containers=containers,
        compression=compression,
        problem=problem,
    )
