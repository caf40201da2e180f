"""What one file on disk is: soname, needs, search paths, exports, GPU code, release.

pyelftools reads the ELF header and the section table. The tables that are
large or walked per entry (``.dynamic``, ``.dynsym``, version sections, the
build-id note) are decoded with ``struct`` from a read-only ``mmap``, and the
``.nv_fatbin`` headers with ``pread`` (fatbin.py): pyelftools' per-symbol
parsing measured 55 µs a symbol (156 ms for the 2 853 symbols of 9.28's
libcudnn_graph), thirty times over the inspection budget, while ``mmap`` and
``pread`` touch only the bytes asked for, so a 600 MB library costs a few
megabytes of reads.
"""

from __future__ import annotations

import mmap
import os
import struct

from cudnnload.errors import ElfError
from cudnnload.resolve.fatbin import GpuCode, read_gpu_code
from cudnnload.resolve.records import record
from cudnnload.resolve.versions import VERSION_SYMBOLS, Release, decode_packed_version

# typing costs ~10 ms to import; type checkers treat any TYPE_CHECKING name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

    from elftools.elf.elffile import ELFFile

ELF_MAGIC = b"\x7fELF"

# Dynamic tags (elf.h).
DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1 = 1, 5, 14, 15, 29, 0x6FFFFFFB
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
STT_FUNC, STT_GNU_IFUNC = 2, 10
STV_DEFAULT, STV_PROTECTED = 0, 3

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


@record
class _Section:
    name: str
    type: str
    offset: int
    size: int
    addr: int
    link: int


class _Reader:
    """Struct decoding for one class and byte order."""

    def __init__(self, data: mmap.mmap, elf_class: int, little: bool) -> None:
        self.data = data
        order = "<" if little else ">"
        wide = elf_class == 64
        self.dyn = struct.Struct(order + ("qQ" if wide else "iI"))
        # Elf64_Sym: name, info, other, shndx, value, size; Elf32_Sym: name, value, size, info, other, shndx.
        self.sym = struct.Struct(order + ("IBBHQQ" if wide else "IIIBBH"))
        self.wide = wide
        self.u32 = struct.Struct(order + "I")
        self.verneed = struct.Struct(order + "HHIII")
        self.vernaux = struct.Struct(order + "IHHII")
        self.verdef = struct.Struct(order + "HHHHIII")
        self.verdaux = struct.Struct(order + "II")
        self.note = struct.Struct(order + "III")

    def cstring(self, table: int, table_end: int, offset: int) -> str:
        start = table + offset
        end = self.data.find(b"\0", start, table_end)
        return self.data[start:end if end >= 0 else table_end].decode("utf-8", "replace")


def read_elf(path: str | os.PathLike[str]) -> ElfInfo:
    """Inspect one file. Raises ElfError naming the file and the reason."""
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # noqa: SIM115 (closed by the with below; open's own error is reported here)
    except OSError as exc:
        raise ElfError(exc.strerror or str(exc), path=name) from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise ElfError("empty file (0 bytes)", path=name)
        head = handle.read(64)
        if head[:4] != ELF_MAGIC:
            raise ElfError("not an ELF file", path=name)
        if len(head) < 52:
            raise ElfError(f"truncated ELF header ({size} bytes)", path=name)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                return _inspect(name, size, handle, data)
            except ElfError:
                raise
            except Exception as exc:  # pyelftools raises many types on damaged input
                raise ElfError(f"damaged ELF file ({type(exc).__name__}: {exc})", path=name) from None


def _elffile(handle: BinaryIO) -> ELFFile:
    from elftools.elf.elffile import ELFFile  # 85 ms import: only when a file is really parsed

    return ELFFile(handle)


def _inspect(path: str, size: int, handle: BinaryIO, data: mmap.mmap) -> ElfInfo:
    elf = _elffile(handle)
    header = elf.header
    shoff, shnum, shentsize = header["e_shoff"], header["e_shnum"], header["e_shentsize"]
    if shoff + shnum * shentsize > size:
        raise ElfError(f"truncated: section table ends at byte {shoff + shnum * shentsize}, file has {size}",
                       path=path)
    sections = [
        _Section(s.name, s["sh_type"], s["sh_offset"], s["sh_size"], s["sh_addr"], s["sh_link"])
        for s in elf.iter_sections()
    ]
    for sec in sections:
        if sec.type != "SHT_NOBITS" and sec.offset + sec.size > size:
            raise ElfError(f"truncated: section {sec.name} ends at byte {sec.offset + sec.size}, file has {size}",
                           path=path)
    reader = _Reader(data, elf.elfclass, elf.little_endian)
    by_name = {sec.name: sec for sec in sections}
    dynamic = _dynamic(reader, sections, by_name.get(".dynamic"))
    exported, functions, release_symbol, release, cudart = _symbols(reader, sections, by_name.get(".dynsym"))
    fatbin = by_name.get(".nv_fatbin")
    return ElfInfo(
        path=path,
        size=size,
        elf_class=elf.elfclass,
        machine=str(header["e_machine"]),
        elf_type=str(header["e_type"]),
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
        gpu_code=read_gpu_code(handle.fileno(), fatbin.offset, fatbin.size) if fatbin and fatbin.size else None,
        interpreter=_interpreter(reader, by_name.get(".interp")),
        cudart_version=cudart,
    )


def _interpreter(reader: _Reader, interp: _Section | None) -> str | None:
    if interp is None or interp.type == "SHT_NOBITS" or not interp.size:
        return None
    return reader.cstring(interp.offset, interp.offset + interp.size, 0) or None


@record
class _Dynamic:
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    flags_1: int


def _split_path(text: str | None) -> tuple[str, ...]:
    return tuple(text.split(":")) if text else ()


def _dynamic(reader: _Reader, sections: list[_Section], dyn: _Section | None) -> _Dynamic:
    if dyn is None:
        return _Dynamic(None, (), (), (), 0)
    strtab = sections[dyn.link]
    entries: list[tuple[int, int]] = []
    for tag, value in reader.dyn.iter_unpack(reader.data[dyn.offset:dyn.offset + dyn.size]):
        if tag == 0:  # DT_NULL ends the table
            break
        entries.append((tag, value))

    def text(value: int) -> str:
        return reader.cstring(strtab.offset, strtab.offset + strtab.size, value)

    first = {tag: value for tag, value in reversed(entries)}
    return _Dynamic(
        soname=text(first[DT_SONAME]) if DT_SONAME in first else None,
        needed=tuple(text(value) for tag, value in entries if tag == DT_NEEDED),
        rpath=_split_path(text(first[DT_RPATH]) if DT_RPATH in first else None),
        runpath=_split_path(text(first[DT_RUNPATH]) if DT_RUNPATH in first else None),
        flags_1=first.get(DT_FLAGS_1, 0),
    )


# cudnnGetCudartVersion returns a constant of the build (cudnn-facts §1.5): its body holds it as the
# immediate of a `mov $imm32, %eax` (opcode B8). Found so in every cuDNN wheel checked (8.5, 8.9.7, 9.0,
# 9.28 cu12 and cu13: 11070, 12020, 12030, 12090, 13050); a CUDA version is major*1000 + minor*10.
_CUDART_FUNCTION = "cudnnGetCudartVersion"
_MOV_EAX = 0xB8


def _cudart_constant(reader: _Reader, section: _Section, value: int, size: int) -> int | None:
    if section.type == "SHT_NOBITS" or not 0 < size <= 4096:
        return None
    offset = section.offset + value - section.addr
    if not section.offset <= offset <= section.offset + section.size - size:
        return None
    code = reader.data[offset:offset + size]
    found = [reader.u32.unpack_from(code, i + 1)[0] for i in range(len(code) - 4) if code[i] == _MOV_EAX]
    plausible = [number for number in found if 9000 <= number < 30000 and number % 10 == 0]
    return plausible[-1] if plausible else None


def _symbols(
    reader: _Reader, sections: list[_Section], dynsym: _Section | None
) -> tuple[int, tuple[str, ...], str | None, Release | None, int | None]:
    if dynsym is None:
        return 0, (), None, None, None
    cudart: int | None = None
    data, strtab = reader.data, sections[dynsym.link]
    str_start, str_end = strtab.offset, strtab.offset + strtab.size
    exported = 0
    functions: list[str] = []
    release_symbol: str | None = None
    release: Release | None = None
    wide = reader.wide
    for fields in reader.sym.iter_unpack(data[dynsym.offset:dynsym.offset + dynsym.size]):
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
        if data[str_start + st_name:str_start + st_name + 5] != b"cudnn":
            continue
        symbol = reader.cstring(str_start, str_end, st_name)
        if kind in (STT_FUNC, STT_GNU_IFUNC):
            functions.append(symbol)
            if symbol == _CUDART_FUNCTION and shndx < len(sections):
                cudart = _cudart_constant(reader, sections[shndx], value, size)
        elif symbol in VERSION_SYMBOLS and release is None and shndx < len(sections):
            section = sections[shndx]
            offset = section.offset + value - section.addr
            if section.type != "SHT_NOBITS" and section.offset <= offset <= section.offset + section.size - 4:
                release_symbol = symbol
                release = decode_packed_version(reader.u32.unpack_from(data, offset)[0])
    return exported, tuple(sorted(functions)), release_symbol, release, cudart


def _version_needs(reader: _Reader, sections: list[_Section], sec: _Section | None) -> tuple[VersionNeed, ...]:
    if sec is None:
        return ()
    strtab = sections[sec.link]
    start, end = strtab.offset, strtab.offset + strtab.size
    needs: list[VersionNeed] = []
    pos = sec.offset
    while True:
        _version, count, file_name, aux, following = reader.verneed.unpack_from(reader.data, pos)
        names: list[str] = []
        entry = pos + aux
        for _ in range(count):
            _hash, _flags, _other, name, after = reader.vernaux.unpack_from(reader.data, entry)
            names.append(reader.cstring(start, end, name))
            entry += after
        needs.append(VersionNeed(reader.cstring(start, end, file_name), tuple(names)))
        if not following:
            return tuple(needs)
        pos += following


def _version_defs(reader: _Reader, sections: list[_Section], sec: _Section | None) -> tuple[str, ...]:
    if sec is None:
        return ()
    strtab = sections[sec.link]
    start, end = strtab.offset, strtab.offset + strtab.size
    names: list[str] = []
    pos = sec.offset
    while True:
        _version, _flags, _ndx, count, _hash, aux, following = reader.verdef.unpack_from(reader.data, pos)
        if count:
            name, _next = reader.verdaux.unpack_from(reader.data, pos + aux)
            names.append(reader.cstring(start, end, name))
        if not following:
            return tuple(names)
        pos += following


def _build_id(reader: _Reader, sec: _Section | None) -> str | None:
    if sec is None or sec.size < 16:
        return None
    name_size, desc_size, _type = reader.note.unpack_from(reader.data, sec.offset)
    desc = sec.offset + 12 + (name_size + 3) // 4 * 4
    return reader.data[desc:desc + desc_size].hex()


@record
class DynamicSymbols:
    """The dynamic symbols of one file by name: those it defines (exports), and those it needs from each
    version node (cuDNN names its version nodes after the soname: ``libcudnn_ops_train.so.8``)."""

    defined: frozenset[str]
    needed: dict[str, frozenset[str]]  # version name -> undefined symbols bound to it

    def unresolved(self, version: str, provider: DynamicSymbols) -> tuple[str, ...]:
        """What this file needs from ``version`` that ``provider`` does not define: dlopen fails on the first
        ("undefined symbol: NAME, version VERSION")."""
        return tuple(sorted(self.needed.get(version, frozenset()) - provider.defined))


def read_dynamic_symbols(path: str | os.PathLike[str]) -> DynamicSymbols:
    """Every dynamic symbol's name and binding: for the rare question whether two files of different cuDNN
    releases link (8.5's libcudnn_ops_train beside 8.9.7's libcudnn_cnn_train does not: cnn_train needs
    cudnnPooling4dBackward@libcudnn_ops_train.so.8). Not memoised: tens of thousands of names."""
    name = os.fspath(path)
    try:
        handle = open(name, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise ElfError(exc.strerror or str(exc), path=name) from None
    with handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        try:
            elf = _elffile(handle)
            sections = [_Section(s.name, s["sh_type"], s["sh_offset"], s["sh_size"], s["sh_addr"], s["sh_link"])
                        for s in elf.iter_sections()]
            return _dynamic_symbols(_Reader(data, elf.elfclass, elf.little_endian), sections)
        except Exception as exc:  # pyelftools and struct raise many types on damaged input
            raise ElfError(f"damaged ELF file ({type(exc).__name__}: {exc})", path=name) from None


def _dynamic_symbols(reader: _Reader, sections: list[_Section]) -> DynamicSymbols:
    by_name = {sec.name: sec for sec in sections}
    dynsym, versym, verneed = by_name.get(".dynsym"), by_name.get(".gnu.version"), by_name.get(".gnu.version_r")
    if dynsym is None:
        return DynamicSymbols(frozenset(), {})
    versions: dict[int, str] = {}  # vna_other -> version name
    if verneed is not None:
        strtab = sections[verneed.link]
        start, end = strtab.offset, strtab.offset + strtab.size
        pos = verneed.offset
        while True:
            _version, count, _file, aux, following = reader.verneed.unpack_from(reader.data, pos)
            entry = pos + aux
            for _ in range(count):
                _hash, _flags, other, vname, after = reader.vernaux.unpack_from(reader.data, entry)
                versions[other] = reader.cstring(start, end, vname)
                entry += after
            if not following:
                break
            pos += following
    strtab = sections[dynsym.link]
    start, end = strtab.offset, strtab.offset + strtab.size
    indices = struct.unpack_from(("<" if reader.u32.format.startswith("<") else ">") + f"{versym.size // 2}H",
                                 reader.data, versym.offset) if versym is not None else ()
    defined: set[str] = set()
    needed: dict[str, set[str]] = {}
    for index, fields in enumerate(reader.sym.iter_unpack(reader.data[dynsym.offset:dynsym.offset + dynsym.size])):
        st_name, info, other, shndx = (fields[0], fields[1], fields[2], fields[3]) if reader.wide else \
            (fields[0], fields[3], fields[4], fields[5])
        if not st_name or info >> 4 not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE):
            continue
        symbol = reader.cstring(start, end, st_name)
        if shndx != 0:
            if other & 3 in (STV_DEFAULT, STV_PROTECTED):
                defined.add(symbol)
        elif index < len(indices) and (version := versions.get(indices[index] & 0x7FFF)) is not None:
            needed.setdefault(version, set()).add(symbol)
    return DynamicSymbols(frozenset(defined), {version: frozenset(names) for version, names in needed.items()})
