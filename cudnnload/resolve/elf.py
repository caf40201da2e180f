"""What one file on disk is: soname, needs, search paths, exports, GPU code, release.

Everything is decoded with ``struct`` from a read-only ``mmap``: the ELF header, the section table
and the tables walked per entry (``.dynamic``, ``.dynsym``, version sections, the build-id note); the
``.nv_fatbin`` headers with ``pread`` (fatbin.py). pyelftools only names e_type and e_machine: its
per-symbol parsing measured 55 µs a symbol (156 ms for the 2 853 symbols of 9.28's libcudnn_graph),
thirty times over the inspection budget, while ``mmap`` and ``pread`` touch only the bytes asked
for, so a 600 MB library costs a few megabytes of reads.

Any content gives an ElfInfo or an ElfError, never another exception, a hang or memory out of
proportion (tests/test_fuzz_elf.py mutates real libraries to hold this): every offset, size and count
read from the file is checked against the file, or the table it points into, before it is used;
chains of records can hold no more records than their section; the walks check a CPU-time limit
(INSPECTION_LIMIT_S); and the names decoded from one file are bounded in total (a million symbols
pointing at one long string would otherwise cost a million copies of it).
"""

from __future__ import annotations

import collections
import errno
import mmap
import os
import re
import struct
import time

from cudnnload.codes import Code
from cudnnload.errors import CannotRun, ElfError
from cudnnload.files import ELF_MAGIC, NotRegularFile, open_regular
from cudnnload.resolve.fatbin import GpuCode, read_gpu_code
from cudnnload.resolve.records import record
from cudnnload.resolve.versions import VERSION_SYMBOLS, Release, decode_packed_version

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from typing import BinaryIO, TypeVar

    T = TypeVar("T")


# Dynamic tags (elf.h).
DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1 = 1, 5, 14, 15, 29, 0x6FFFFFFB
DT_BIND_NOW, DT_FLAGS, DT_RELACOUNT, DT_RELCOUNT = 24, 30, 0x6FFFFFF9, 0x6FFFFFFA
DF_BIND_NOW, DF_1_NOW = 0x8, 0x1
SHT_RELA, SHT_REL = 4, 9
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
STT_FUNC, STT_GNU_IFUNC = 2, 10
STV_DEFAULT, STV_PROTECTED = 0, 3
SHT_NOBITS = 8
SHN_XINDEX = 0xFFFF  # e_shstrndx: the index is section 0's sh_link (gABI, "Extended Section Numbering")
ET_EXEC, ET_DYN = 2, 3  # e_type: a program, a shared object (or a position-independent program)
PN_XNUM = 0xFFFF  # e_phnum: the count is section 0's sh_info (gABI, "Extended Program Header Numbering")

# CPU seconds, not wall time, so that a slow or cold disk never trips it. The largest real library
# (9.28's 560 MB libcudnn_engines_precompiled) takes about 0.1 s; only tables damaged into millions of
# entries get near it.
INSPECTION_LIMIT_S = 5.0
# Bytes of names decoded from one file, on top of a quarter of its size: 9.28's graph decodes 7 KB for
# read_elf, 8.9.7's cnn_infer 7 MB for read_dynamic_symbols.
_NAME_BUDGET = 16 << 20
# The sections read; the others are only checked to lie in the file.
_WANTED = frozenset({".dynamic", ".dynsym", ".gnu.version", ".gnu.version_r", ".gnu.version_d",
                     ".note.gnu.build-id", ".interp", ".nv_fatbin", ".rela.dyn", ".rel.dyn", ".rodata", ".text"})
# A cuDNN library that dlopens others by name (the shim, graph): its .rodata holds their names
_OPENERS = ("libcudnn.so.", "libcudnn_graph.so.")
_STEM_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz_")


@record
class VersionNeed:
    """One DT_VERNEED entry: versions of ``library`` this file's symbols bind to."""

    library: str
    versions: tuple[str, ...]


@record
class ElfInfo:
    path: str
    size: int
    elf_class: int  # 32 or 64
    machine: str  # pyelftools' name, e.g. "EM_X86_64"
    elf_type: str  # "ET_DYN" for shared objects
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]  # DT_RPATH, split on ':'
    runpath: tuple[str, ...]  # DT_RUNPATH, split on ':'
    flags_1: int
    exported_count: int  # defined GLOBAL/WEAK/UNIQUE dynamic symbols, default or protected
    cudnn_functions: tuple[str, ...]  # exported functions named cudnn*, sorted
    version_needs: tuple[VersionNeed, ...]
    version_defs: tuple[str, ...]  # names of .gnu.version_d entries (a libstdc++ lists GLIBCXX_*)
    build_id: str | None
    release: Release | None  # from an exported version constant, without running code
    release_symbol: str | None
    gpu_code: GpuCode | None
    interpreter: str | None = None  # PT_INTERP (.interp): set for a program, not for a shared library
    cudart_version: int | None = None  # what its cudnnGetCudartVersion returns (12090: CUDA 12.9), read, not run
    # the libcudnn_* names (stems) in the .rodata of a shim or graph, which dlopens them by name: a library its
    # release does not name is never asked for (9.0's graph names no engines_tensor_ir); empty: not read
    opens: tuple[str, ...] = ()
    # the release whose versioned names (libcudnn_graph.so.9.14.0) a cuDNN 9 shim dlopens first, read from its
    # code (`_names_release`): the shim exports no version constant; None: not such a shim, or not read
    names_release: Release | None = None
    # the address space mapping it takes (`address_span`): what an address-space limit (ulimit -v) is checked against
    address_span: int | None = None

    @property
    def version_checks(self) -> tuple[str, ...]:
        return tuple(name for name in self.cudnn_functions if name.endswith("VersionCheck"))

    def max_needed(self, prefix: str) -> tuple[int, ...] | None:
        """Highest version of ``prefix`` (``GLIBC_``, ``GLIBCXX_``, ``CXXABI_``) this file needs."""
        return max_version(v for need in self.version_needs for v in need.versions if v.startswith(prefix))


def max_version(names: object) -> tuple[int, ...] | None:
    """``GLIBC_2.27`` style names to the highest numeric tuple; None when there are none."""
    best: tuple[int, ...] | None = None
    for name in names:  # type: ignore[attr-defined]
        tail = str(name).rpartition("_")[2]
        try:
            number = tuple(int(part) for part in tail.split("."))
        except ValueError:
            continue
        best = number if best is None or number > best else best
    return best


def _damaged(what: str) -> ElfError:
    """The error for content that cannot be right (discovery reports it as ``damaged-elf``)."""
    return ElfError(f"damaged ELF file ({what})")


@record
class _Section:
    name: str
    type: int
    offset: int
    size: int
    addr: int
    link: int


class _Reader:
    """One mapped file: its ELF header, struct decoding for its class and byte order, and the checks
    every read needs (bounds, the time limit, the name budget)."""

    def __init__(self, fd: int, data: mmap.mmap) -> None:
        self.fd, self.data, self.size = fd, data, len(data)
        elf_class, encoding = data[4], data[5]
        if elf_class not in (1, 2):
            raise _damaged(f"EI_CLASS {elf_class}: neither 1 (32-bit) nor 2 (64-bit)")
        if encoding not in (1, 2):
            raise _damaged(f"EI_DATA {encoding}: neither 1 (little-endian) nor 2 (big-endian)")
        order = "<" if encoding == 1 else ">"
        wide = elf_class == 2
        self.wide, self.elf_class = wide, 64 if wide else 32
        (_ident, self.e_type, self.e_machine, _version, _entry, phoff, self.shoff, _flags, _ehsize, phentsize,
         phnum, self.shentsize, self.shnum, self.shstrndx) = struct.unpack_from(
            order + ("16sHHIQQQIHHHHHH" if wide else "16sHHIIIIIHHHHHH"), data)
        _loadable_headers(self.e_type, phoff, phentsize, phnum, wide, self.size)
        # name, type, flags, addr, offset, size, link, info, addralign, entsize
        self.shdr = struct.Struct(order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
        self.dyn = struct.Struct(order + ("qQ" if wide else "iI"))
        # Elf64_Sym: name, info, other, shndx, value, size; Elf32_Sym: name, value, size, info, other, shndx.
        self.sym = struct.Struct(order + ("IBBHQQ" if wide else "IIIBBH"))
        self.u16 = struct.Struct(order + "H")
        self.u32 = struct.Struct(order + "I")
        self.verneed = struct.Struct(order + "HHIII")
        self.vernaux = struct.Struct(order + "IHHII")
        self.verdef = struct.Struct(order + "HHHHIII")
        self.verdaux = struct.Struct(order + "II")
        self.note = struct.Struct(order + "III")
        self.names_left = _NAME_BUDGET + self.size // 4
        self.stop = time.process_time() + INSPECTION_LIMIT_S

    def tick(self) -> None:
        """Called from every walk that could be long; raises once the time limit has passed."""
        if time.process_time() > self.stop:
            raise ElfError(f"inspection took longer than {INSPECTION_LIMIT_S:g} s of CPU time: its tables "
                           "claim implausibly many entries")

    def contents(self, sec: _Section) -> tuple[int, int]:
        """Where the bytes of a section read as a table lie, checked to be in the file."""
        if sec.type == SHT_NOBITS:
            raise _damaged(f"section {sec.name or '(unnamed)'} is read as a table but has no bytes (SHT_NOBITS)")
        if sec.offset + sec.size > self.size:
            raise ElfError(f"truncated: section {sec.name} ends at byte {sec.offset + sec.size}, file has {self.size}",
                           code=Code.TRUNCATED)
        return sec.offset, sec.offset + sec.size

    def entries(self, sec: _Section, layout: struct.Struct) -> Iterator[tuple[int, ...]]:
        """Each fixed-size entry of a table section."""
        start, end = self.contents(sec)
        if (end - start) % layout.size:
            raise _damaged(f"section {sec.name}: its size {end - start} is not a whole number of {layout.size}-byte "
                           "entries")
        for index, at in enumerate(range(start, end, layout.size)):
            if not index & 0x3FF:
                self.tick()
            yield layout.unpack_from(self.data, at)

    def cstring(self, table: tuple[int, int], offset: int) -> str:
        """The NUL-terminated string at ``offset`` of a string table (its end ends a string without NUL)."""
        start, end = table
        if offset >= end - start:
            if not offset:
                return ""
            raise _damaged(f"a name at offset {offset} of a {end - start}-byte string table")
        at = start + offset
        stop = self.data.find(b"\0", at, end)
        raw = self.data[at:stop if stop >= 0 else end]
        self.names_left -= len(raw)
        if self.names_left < 0:
            raise _damaged(f"names add up to more than {(_NAME_BUDGET + self.size // 4) >> 20} MB: its tables point "
                           "many entries at long strings")
        return raw.decode("utf-8", "replace")


def _loadable_headers(e_type: int, phoff: int, phentsize: int, phnum: int, wide: bool, size: int) -> None:
    """What glibc's loader checks of a shared object's or program's program headers before it maps anything
    (``dl-load.c``, ``_dl_map_object_from_fd``): an entry size other than its class's ("ELF file's phentsize not the
    expected size"), and a table past the end of the file ("cannot read file data"). Raises for either. The loader
    takes e_phnum as the count even where it is PN_XNUM (it reads no extended numbering: a real count of 65535 headers
    or more is a core file's, never a loadable object's)."""
    if e_type not in (ET_EXEC, ET_DYN) or not phnum:
        return
    expected = 56 if wide else 32
    if phentsize != expected:
        raise _damaged(f"e_phentsize {phentsize}, not the {expected} bytes of a program header: the loader refuses "
                       "it (\"ELF file's phentsize not the expected size\")")
    if phoff + phnum * phentsize > size:
        raise ElfError(f"truncated: program headers end at byte {phoff + phnum * phentsize}, file has {size} (the "
                       "loader: \"cannot read file data\")", code=Code.TRUNCATED)


class _Sections:
    """The section table, read by index on demand: a damaged header can claim millions of sections."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.count, self.names = 0, (0, 0)
        shoff, shentsize, size = reader.shoff, reader.shentsize, reader.size
        if shoff == 0:  # no section table
            return
        if shentsize < reader.shdr.size:
            raise _damaged(f"e_shentsize {shentsize}, smaller than a {reader.shdr.size}-byte section header")
        if shoff + reader.shdr.size > size:
            raise ElfError(f"truncated: section table starts at byte {shoff}, file has {size}", code=Code.TRUNCATED)
        first = reader.shdr.unpack_from(reader.data, shoff)
        count = reader.shnum or first[5]  # e_shnum 0: section 0's sh_size holds the count
        end = shoff + count * shentsize
        if end > size:
            raise ElfError(f"truncated: section table ends at byte {end}, file has {size}", code=Code.TRUNCATED)
        self.count = count
        names = first[6] if reader.shstrndx == SHN_XINDEX else reader.shstrndx
        if names:  # SHN_UNDEF: no section names
            self.names = reader.contents(self._section(names, ".shstrtab"))

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> _Section:
        return self._section(index, None)

    def _section(self, index: int, name: str | None) -> _Section:
        if not 0 <= index < self.count:
            raise _damaged(f"a link to section {index}; the file has {self.count}")
        reader = self.reader
        row = reader.shdr.unpack_from(reader.data, reader.shoff + index * reader.shentsize)
        return _Section(reader.cstring(self.names, row[0]) if name is None else name, row[1], row[4], row[5],
                        row[3], row[6])

    def wanted(self) -> dict[str, _Section]:
        """The sections of _WANTED by name (the last of a name wins), after checking that every section
        with bytes lies in the file."""
        found: dict[str, _Section] = {}
        for index in range(self.count):
            if not index & 0x3FF:
                self.reader.tick()
            sec = self[index]
            if sec.type != SHT_NOBITS:
                self.reader.contents(sec)  # "truncated: ..." when it ends past the end of the file
            if sec.name in _WANTED:
                found[sec.name] = sec
        return found


def read_elf(path: str | os.PathLike[str]) -> ElfInfo:
    """Inspect one file. Raises ElfError naming the file and the reason."""
    return _read(os.fspath(path), _inspect)


def _read(name: str, parse: Callable[[str, _Reader], T]) -> T:
    """``parse`` run on the mapped file; whatever goes wrong is an ElfError naming the file."""
    handle = _open(name)
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise ElfError("empty file (0 bytes)", path=name, code=Code.EMPTY_FILE)
        head = handle.read(64)
        if head[:4] != ELF_MAGIC:
            raise ElfError("not an ELF file", path=name, code=Code.NOT_ELF)
        if len(head) < (64 if head[4:5] == b"\x02" else 52):
            raise ElfError(f"truncated ELF header: the file ends at byte {size}", path=name, code=Code.TRUNCATED)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                return parse(name, _Reader(handle.fileno(), data))
            except ElfError as exc:
                raise ElfError(exc.reason, path=name, fix=exc.fix, code=exc.code) from None
            except ImportError as exc:  # cudnnload's own install, not the file: no finding against the file
                raise CannotRun(f"cannot read ELF files: {exc}", fix="pip install pyelftools") from None
            except Exception as exc:  # a check missed: still an answer about this file, not a crash
                raise ElfError(f"damaged ELF file ({type(exc).__name__}: {exc})", path=name) from None


def _open(name: str) -> BinaryIO:
    """The file, when it is a regular one: a FIFO would block the open, a device never end the read."""
    try:
        return open_regular(name)
    except NotRegularFile as exc:
        raise ElfError(exc.reason, path=name, code=Code.NOT_A_REGULAR_FILE) from None
    except OSError as exc:
        code = {errno.ENOENT: Code.MISSING_FILE, errno.ELOOP: Code.SYMLINK_LOOP}.get(exc.errno or 0, Code.UNREADABLE)
        raise ElfError(exc.strerror or str(exc), path=name, code=code) from None


# ELF header and program header layouts, by class: what `address_span` and the linker model's checks read
EHDR = {64: struct.Struct("<16sHHIQQQIHHHHHH"), 32: struct.Struct("<16sHHIIIIIHHHHHH")}
PHDR = {64: struct.Struct("<IIQQQQQQ"), 32: struct.Struct("<IIIIIIII")}


def address_span(path: str) -> int | None:
    """The address space mapping ``path`` takes (its PT_LOAD segments, first start to last end, in whole pages), as
    _dl_map_segments reserves it in one mmap; None for a file that is not a readable ELF of this machine's class.
    Under an address-space limit (``ulimit -v``, RLIMIT_AS) that reservation is what fails: "failed to map segment
    from shared object"."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            if head[:4] != ELF_MAGIC or len(head) < 64:
                return None
            elf_class = 64 if head[4] == 2 else 32
            ehdr, phdr = EHDR[elf_class], PHDR[elf_class]
            fields = ehdr.unpack_from(head)
            phoff, phentsize, phnum = fields[5], fields[9], fields[10]
            if phentsize != phdr.size or not 0 < phnum < 1 << 12:
                return None
            handle.seek(phoff)
            table = handle.read(phnum * phdr.size)
    except (OSError, struct.error, OverflowError, ValueError):
        return None
    loads = []
    for index in range(len(table) // phdr.size):
        entry = phdr.unpack_from(table, index * phdr.size)
        p_type, vaddr, memsz = (entry[0], entry[3], entry[6]) if elf_class == 64 else (entry[0], entry[2], entry[5])
        if p_type == 1:  # PT_LOAD
            loads.append((vaddr, vaddr + memsz))
    if not loads:
        return None
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    start, end = min(a for a, _ in loads) // page * page, max(b for _, b in loads)
    return (end - start + page - 1) // page * page


def _enum_name(table: Mapping[str, object], value: int) -> str:
    """pyelftools' name for an e_type or e_machine value (the last of two names for one value, as its
    header parser gives), else the number."""
    names = {number: name for name, number in table.items() if name != "_default_"}
    return str(names.get(value, value))


def _inspect(path: str, reader: _Reader) -> ElfInfo:
    from elftools.elf.enums import ENUM_E_MACHINE, ENUM_E_TYPE  # 20 ms import: only when a file is parsed

    sections = _Sections(reader)
    by_name = sections.wanted()
    dynamic = _dynamic(reader, sections, by_name.get(".dynamic"))
    exported, functions, release_symbol, release, cudart = _symbols(reader, sections, by_name.get(".dynsym"))
    fatbin = by_name.get(".nv_fatbin")
    if fatbin is not None and fatbin.size:
        start, end = reader.contents(fatbin)
        gpu_code: GpuCode | None = read_gpu_code(reader.fd, start, end - start, reader.tick)
    else:
        gpu_code = None
    return ElfInfo(
        path=path,
        size=reader.size,
        elf_class=reader.elf_class,
        machine=_enum_name(ENUM_E_MACHINE, reader.e_machine),
        elf_type=_enum_name(ENUM_E_TYPE, reader.e_type),
        soname=dynamic.soname,
        needed=dynamic.needed,
        rpath=dynamic.rpath,
        runpath=dynamic.runpath,
        flags_1=dynamic.flags_1,
        exported_count=exported,
        cudnn_functions=functions,
        version_needs=_version_needs(reader, sections, by_name.get(".gnu.version_r")),
        version_defs=_version_defs(reader, sections, by_name.get(".gnu.version_d")),
        build_id=_build_id(reader, by_name.get(".note.gnu.build-id")),
        release=release,
        release_symbol=release_symbol,
        gpu_code=gpu_code,
        interpreter=_interpreter(reader, by_name.get(".interp")),
        cudart_version=cudart,
        opens=_rodata_names(reader, by_name.get(".rodata")) if (dynamic.soname or "").startswith(_OPENERS) else (),
        names_release=_names_release(reader, by_name.get(".text"), 9)
        if dynamic.soname == "libcudnn.so.9" and reader.e_machine == _EM_X86_64 else None,
        address_span=address_span(path),
    )


_EM_X86_64 = 62
# The cuDNN 9 shim exports no version constant (cudnn-facts §2), yet it dlopens the names of its own release
# first: snprintf(name, 64, "%s.%d.%d.%d", stem, MAJOR, MINOR, PATCH), then "%s.%d.%d" and "%s.%d". The release
# is in the code of those calls. x86-64, System V: the major is moved into r8d (41 b8 imm32), the minor into r9d
# (41 b9 imm32, or 45 31 c9: xor for 0), the patch pushed (6a imm8). Around each move of the major: the minor
# must be one value, the patch is the one pushed there most. Read right on the shims of 9.0 to 9.28, whatever
# compiler built them (tests/test_elf.py, bench/shim_releases.py: 3 to 78 moves of the major in each).
_NEAR = 48  # bytes either side of the major's move
_MOVES = 1024  # a file with more is no shim as NVIDIA builds it: its release is not read (a hostile file stays quick)
_MINOR = re.compile(rb"\x41\xb9(....)|\x45\x31\xc9", re.S)
_PATCH = re.compile(rb"\x6a(.)", re.S)


def _names_release(reader: _Reader, text: _Section | None, major: int) -> Release | None:
    if text is None or text.type == SHT_NOBITS or not text.size:
        return None
    start, end = reader.contents(text)
    data, move = reader.data, b"\x41\xb8" + struct.pack("<I", major)
    minors: set[int] = set()
    patches: collections.Counter[int] = collections.Counter()
    at, moves = start, 0
    while (at := data.find(move, at, end)) >= 0:
        moves += 1
        if moves > _MOVES:
            return None
        near = data[max(start, at - _NEAR):min(end, at + _NEAR)]
        found = {struct.unpack("<I", m.group(1))[0] if m.group(1) else 0 for m in _MINOR.finditer(near)}
        if found:
            minors |= found
            patches.update({m.group(1)[0] for m in _PATCH.finditer(near)})
        at += len(move)
    ranked = patches.most_common(2)
    if len(minors) != 1 or not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return Release(major, minors.pop(), ranked[0][0])


def _rodata_names(reader: _Reader, rodata: _Section | None) -> tuple[str, ...]:
    """The stems of the ``libcudnn_*.so`` names in ``.rodata`` (``libcudnn_ops``), sorted."""
    if rodata is None or rodata.type == SHT_NOBITS or not rodata.size:
        return ()
    start, end = reader.contents(rodata)
    data, found, at = reader.data, set(), start
    while (at := data.find(b"libcudnn_", at, end)) >= 0:
        stop = at + len(b"libcudnn_")
        while stop < end and data[stop] in _STEM_BYTES:
            stop += 1
        if data[stop:stop + 3] == b".so" and stop > at + len(b"libcudnn_"):
            found.add(data[at:stop].decode())
        at = stop
    return tuple(sorted(found))


def _interpreter(reader: _Reader, interp: _Section | None) -> str | None:
    if interp is None or interp.type == SHT_NOBITS or not interp.size:
        return None
    return reader.cstring(reader.contents(interp), 0) or None


@record
class _Dynamic:
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    flags_1: int


def _split_path(text: str | None) -> tuple[str, ...]:
    return tuple(text.split(":")) if text else ()


def _dynamic(reader: _Reader, sections: _Sections, dyn: _Section | None) -> _Dynamic:
    if dyn is None:
        return _Dynamic(None, (), (), (), 0)
    strings = reader.contents(sections[dyn.link])
    needed: list[str] = []
    first: dict[int, int] = {}  # the first value of each tag read
    for tag, value in reader.entries(dyn, reader.dyn):
        if tag == 0:  # DT_NULL ends the table
            break
        if tag == DT_NEEDED:
            needed.append(reader.cstring(strings, value))
        elif tag in (DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1) and tag not in first:
            first[tag] = value

    def text(tag: int) -> str | None:
        return reader.cstring(strings, first[tag]) if tag in first else None

    return _Dynamic(
        soname=text(DT_SONAME),
        needed=tuple(needed),
        rpath=_split_path(text(DT_RPATH)),
        runpath=_split_path(text(DT_RUNPATH)),
        flags_1=first.get(DT_FLAGS_1, 0),
    )


# cudnnGetCudartVersion returns a constant of the build (cudnn-facts §1.5): its body holds it as the
# immediate of a `mov $imm32, %eax` (opcode B8). Found so in every cuDNN wheel checked (8.5, 8.9.7, 9.0,
# 9.28 cu12 and cu13: 11070, 12020, 12030, 12090, 13050); a CUDA version is major*1000 + minor*10.
_CUDART_FUNCTION = "cudnnGetCudartVersion"
_MOV_EAX = 0xB8


def _cudart_constant(reader: _Reader, section: _Section, value: int, size: int) -> int | None:
    if section.type == SHT_NOBITS or not 0 < size <= 4096:
        return None
    offset = section.offset + value - section.addr
    if not section.offset <= offset <= section.offset + section.size - size:
        return None
    code = reader.data[offset:offset + size]
    found = [reader.u32.unpack_from(code, i + 1)[0] for i in range(len(code) - 4) if code[i] == _MOV_EAX]
    plausible = [number for number in found if 9000 <= number < 30000 and number % 10 == 0]
    return plausible[-1] if plausible else None


def _symbols(
    reader: _Reader, sections: _Sections, dynsym: _Section | None
) -> tuple[int, tuple[str, ...], str | None, Release | None, int | None]:
    if dynsym is None:
        return 0, (), None, None, None
    cudart: int | None = None
    data, strings = reader.data, reader.contents(sections[dynsym.link])
    str_start, str_end = strings
    exported = 0
    functions: list[str] = []
    release_symbol: str | None = None
    release: Release | None = None
    wide = reader.wide
    for fields in reader.entries(dynsym, reader.sym):
        if wide:
            st_name, info, other, shndx, value, size = fields
        else:
            st_name, value, size, info, other, shndx = fields
        bind, kind, visibility = info >> 4, info & 0xF, other & 3
        if shndx == 0 or bind not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE):
            continue
        if visibility not in (STV_DEFAULT, STV_PROTECTED):
            continue
        exported += 1
        if data[str_start + st_name:min(str_start + st_name + 5, str_end)] != b"cudnn":
            continue
        symbol = reader.cstring(strings, st_name)
        if kind in (STT_FUNC, STT_GNU_IFUNC):
            functions.append(symbol)
            if symbol == _CUDART_FUNCTION and shndx < len(sections):
                cudart = _cudart_constant(reader, sections[shndx], value, size)
        elif symbol in VERSION_SYMBOLS and release is None and shndx < len(sections):
            section = sections[shndx]
            offset = section.offset + value - section.addr
            if section.type != SHT_NOBITS and section.offset <= offset <= section.offset + section.size - 4:
                release_symbol = symbol
                release = decode_packed_version(reader.u32.unpack_from(data, offset)[0])
    return exported, tuple(sorted(functions)), release_symbol, release, cudart


def _take(left: int, table: tuple[int, int], at: int, size: int, what: str) -> int:
    """One more record of a chain at ``at``: it must lie in its section, and the section must have room
    for it (records of a well-formed chain never overlap, so a chain longer than that loops)."""
    if not table[0] <= at <= table[1] - size:
        raise _damaged(f"{what} record at byte {at}, outside its section")
    if left <= 0:
        raise _damaged(f"{what} records chained in a loop")
    return left - 1


def _needs(reader: _Reader, sec: _Section) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """Each Elf_Verneed of ``.gnu.version_r``: its file name offset and the (vna_other, vna_name) of its
    Elf_Vernaux records, followed by vn_next and vna_next up to vn_cnt or the first 0 (glibc's
    _dl_check_map_versions stops at 0 alone)."""
    table = reader.contents(sec)
    left = (table[1] - table[0]) // 16  # Elf_Verneed and Elf_Vernaux are 16 bytes, 32- and 64-bit
    pos = table[0]
    while True:
        left = _take(left, table, pos, 16, ".gnu.version_r")
        _version, count, file_name, aux, following = reader.verneed.unpack_from(reader.data, pos)
        versions: list[tuple[int, int]] = []
        entry = pos + aux
        for _ in range(count):
            left = _take(left, table, entry, 16, ".gnu.version_r")
            _hash, _flags, other, name, after = reader.vernaux.unpack_from(reader.data, entry)
            versions.append((other, name))
            if not after:
                break
            entry += after
        yield file_name, versions
        if not following:
            return
        pos += following


def _version_needs(reader: _Reader, sections: _Sections, sec: _Section | None) -> tuple[VersionNeed, ...]:
    if sec is None:
        return ()
    strings = reader.contents(sections[sec.link])
    return tuple(VersionNeed(reader.cstring(strings, file_name), tuple(reader.cstring(strings, name)
                                                                       for _other, name in versions))
                 for file_name, versions in _needs(reader, sec))


def _version_defs(reader: _Reader, sections: _Sections, sec: _Section | None) -> tuple[str, ...]:
    if sec is None:
        return ()
    strings = reader.contents(sections[sec.link])
    table = reader.contents(sec)
    left = (table[1] - table[0]) // reader.verdef.size
    names: list[str] = []
    pos = table[0]
    while True:
        left = _take(left, table, pos, reader.verdef.size, ".gnu.version_d")
        _version, _flags, _ndx, count, _hash, aux, following = reader.verdef.unpack_from(reader.data, pos)
        if count:
            _take(1, table, pos + aux, reader.verdaux.size, ".gnu.version_d")
            name, _next = reader.verdaux.unpack_from(reader.data, pos + aux)
            names.append(reader.cstring(strings, name))
        if not following:
            return tuple(names)
        pos += following


def _build_id(reader: _Reader, sec: _Section | None) -> str | None:
    """The build-id note's descriptor in hex; None when the note does not hold one whole."""
    if sec is None or sec.type == SHT_NOBITS or sec.size < 16:
        return None
    name_size, desc_size, _type = reader.note.unpack_from(reader.data, sec.offset)
    desc = sec.offset + 12 + (name_size + 3) // 4 * 4
    if desc + desc_size > sec.offset + sec.size:
        return None
    return reader.data[desc:desc + desc_size].hex()


@record
class DynamicSymbols:
    """The dynamic symbols of one file by name: those it defines (exports), and those it needs from each
    version node (cuDNN names its version nodes after the soname: ``libcudnn_ops_train.so.8``)."""

    defined: frozenset[str]
    needed: dict[str, frozenset[str]]  # version name -> undefined symbols bound to it
    # the undefined functions bound lazily: through the PLT at their first call, as at a program's start
    # (measured: a 9.28 cnn preloaded with the 9.27 JIT graph on the path starts, a 9.0 engine library whose
    # missing symbol is a vtable does not). Not those a relocation of .rela.dyn names (a function whose address
    # the code takes: R_X86_64_GLOB_DAT, R_X86_64_64), which ld.so resolves when it maps the file, nor any in a
    # file linked with -z now (DF_BIND_NOW): measured, a 9.28 cnn preloaded beside 9.0's ops does not start.
    functions: frozenset[str] = frozenset()

    def unresolved(self, version: str, provider: DynamicSymbols, *, at_start: bool = False) -> tuple[str, ...]:
        """What this file needs from ``version`` that ``provider`` does not define: dlopen fails on the first
        ("undefined symbol: NAME, version VERSION"). ``at_start``: only what a lazily bound start resolves
        (not the functions)."""
        missing = self.needed.get(version, frozenset()) - provider.defined
        return tuple(sorted(missing - self.functions if at_start else missing))


class _Everything:
    """Every symbol index (a file linked with -z now binds them all when it is mapped)."""

    def __contains__(self, index: object) -> bool:
        return True


def _bound_at_load(reader: _Reader, by_name: dict[str, _Section]) -> set[int] | _Everything:
    """The .dynsym indices ld.so resolves when it maps the file, lazy binding or not: those the relocations of
    .rela.dyn (.rel.dyn) name, past the relative ones DT_RELACOUNT counts first; every one under DF_BIND_NOW."""
    dynamic, relative = by_name.get(".dynamic"), 0
    if dynamic is not None and dynamic.type != SHT_NOBITS:
        for tag, value in reader.entries(dynamic, reader.dyn):
            now = tag == DT_BIND_NOW or (tag == DT_FLAGS and value & DF_BIND_NOW) or (
                tag == DT_FLAGS_1 and value & DF_1_NOW)
            if now:
                return _Everything()
            if tag in (DT_RELACOUNT, DT_RELCOUNT):
                relative = value
    eager: set[int] = set()
    for name in (".rela.dyn", ".rel.dyn"):
        sec = by_name.get(name)
        if sec is None or sec.type not in (SHT_RELA, SHT_REL):
            continue
        layout = struct.Struct(reader.u16.format[0] + (("QQq" if sec.type == SHT_RELA else "QQ") if reader.wide
                                                       else ("IIi" if sec.type == SHT_RELA else "II")))
        start, end = reader.contents(sec)
        if (end - start) % layout.size:
            continue
        shift = 32 if reader.wide else 8
        for at in range(start + min(relative, (end - start) // layout.size) * layout.size, end, layout.size):
            symbol = layout.unpack_from(reader.data, at)[1] >> shift
            if symbol:
                eager.add(symbol)
    return eager


def read_dynamic_symbols(path: str | os.PathLike[str]) -> DynamicSymbols:
    """Every dynamic symbol's name and binding: for the rare question whether two files of different cuDNN
    releases link (8.5's libcudnn_ops_train beside 8.9.7's libcudnn_cnn_train does not: cnn_train needs
    cudnnPooling4dBackward@libcudnn_ops_train.so.8). Not memoised: tens of thousands of names."""
    return _read(os.fspath(path), _dynamic_symbols)


def _dynamic_symbols(_path: str, reader: _Reader) -> DynamicSymbols:
    sections = _Sections(reader)
    by_name = sections.wanted()
    dynsym, versym, verneed = by_name.get(".dynsym"), by_name.get(".gnu.version"), by_name.get(".gnu.version_r")
    if dynsym is None:
        return DynamicSymbols(frozenset(), {})
    versions: dict[int, str] = {}  # vna_other -> version name
    if verneed is not None:
        strings = reader.contents(sections[verneed.link])
        for _file, entries in _needs(reader, verneed):
            for other, name in entries:
                versions[other] = reader.cstring(strings, name)
    eager = _bound_at_load(reader, by_name)
    strings = reader.contents(sections[dynsym.link])
    indices = reader.contents(versym) if versym is not None else (0, 0)  # one 16-bit version index a symbol
    defined: set[str] = set()
    needed: dict[str, set[str]] = {}
    functions: set[str] = set()
    for index, fields in enumerate(reader.entries(dynsym, reader.sym)):
        st_name, info, other, shndx = (fields[0], fields[1], fields[2], fields[3]) if reader.wide else \
            (fields[0], fields[3], fields[4], fields[5])
        if not st_name or info >> 4 not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE):
            continue
        symbol = reader.cstring(strings, st_name)
        if shndx != 0:
            if other & 3 in (STV_DEFAULT, STV_PROTECTED):
                defined.add(symbol)
            continue
        if info & 0xF in (STT_FUNC, STT_GNU_IFUNC) and index not in eager:
            functions.add(symbol)
        at = indices[0] + 2 * index
        if at + 2 > indices[1]:
            continue
        version = versions.get(reader.u16.unpack_from(reader.data, at)[0] & 0x7FFF)
        if version is not None:
            needed.setdefault(version, set()).add(symbol)
    return DynamicSymbols(frozenset(defined), {version: frozenset(names) for version, names in needed.items()},
                          frozenset(functions))
