"""What a wheel pip would install says, read from the wheel where it lies, before it is installed.

Only what matters is fetched: the zip's central directory (its last bytes), the ``RECORD`` (every file the
wheel writes, PEP 376/627) and, for a cuDNN wheel, the one library whose ELF states the release and the CUDA
runtime it was built with (graph in cuDNN 9, ops_infer in 8: ``elf.read_elf``'s ``release`` and
``cudart_version``). A remote wheel is read with HTTP range requests (PyPI's file host answers them with
206); a server that ignores them sends the whole file, which is then read from a download. A local wheel
(``file://``, pip's find-links) is read in place.

The facts of each wheel are remembered in cudnnload's cache folder (``wheels/<sha256>.json``), so a second
prediction of the same set fetches nothing; the library read for them is deleted once read.
"""

from __future__ import annotations

import csv
import io
import os
import struct
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from cudnnload.cachedir import cache_dir, read_json, write_json
from cudnnload.errors import CudnnloadError, ElfError
from cudnnload.resolve.catalog import Release, classify, parse_release
from cudnnload.resolve.elf import ElfInfo, read_elf

FACTS_FORMAT = 3  # bump when WheelFacts' fields change: remembered facts of another format are read again
_TAIL = 1 << 16  # the end of central directory record and its comment fit in the last 64 KB + 22 bytes
_CHUNK = 1 << 22
_EOCD = struct.Struct("<4sHHHHIIH")  # signature, disk numbers, entries here, entries, cd size, cd offset, comment
_EOCD64_LOCATOR = struct.Struct("<4sIQI")
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # central directory file header (46 bytes)
_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # local file header (30 bytes)
# The library whose exported version constant and cudnnGetCudartVersion tell a cuDNN wheel's release and CUDA
# (cudnn-facts §1; measured on the 8.5, 8.9.7, 9.0 and 9.28 wheels: only graph / ops_infer carry both).
FACTS_LIBRARY = {9: "graph", 8: "ops_infer", 7: "shim"}

Progress = Callable[[str], None]


class WheelError(CudnnloadError):
    """A wheel that cannot be read as one: no RECORD, not a zip, a download that failed."""


@dataclass(frozen=True)
class RecordEntry:
    """One line of a wheel's RECORD: a file it writes, relative to site-packages."""

    path: str
    digest: str | None  # "sha256=..." as RECORD writes it
    size: int | None


@dataclass(frozen=True)
class CudnnBuild:
    """A cuDNN wheel's release and CUDA runtime, read from its own library."""

    library: str  # the wheel's path of the file read ("nvidia/cudnn/lib/libcudnn_graph.so.9")
    release: Release | None  # its exported version constant
    cudart_version: int | None  # what its cudnnGetCudartVersion returns (12090: CUDA 12.9)
    runpath: tuple[str, ...] = ()  # its DT_RUNPATH: where it, and the engines beside it, open cuBLASLt and NVRTC
    shim_rpath: tuple[str, ...] = ()  # the shim's DT_RPATH (9.28: $ORIGIN, searched before LD_LIBRARY_PATH)
    shim_runpath: tuple[str, ...] = ()  # the shim's DT_RUNPATH (9.0: $ORIGIN, searched after it)


@dataclass(frozen=True)
class WheelFacts:
    name: str
    version: str
    filename: str
    sha256: str | None
    record: tuple[RecordEntry, ...]
    cudnn: CudnnBuild | None  # for an nvidia-cudnn-* wheel
    fetched: int  # bytes read from the network for these facts (0: remembered, or a local file)
    how: str  # "range requests", "whole file", "local file", "remembered"
    size: int  # the wheel's own size in bytes

    def writes(self, path: str) -> RecordEntry | None:
        return next((entry for entry in self.record if entry.path == path), None)


# --- reading bytes of a wheel -----------------------------------------------------------------------------


class _Source:
    """Bytes of one wheel at given offsets: a local file, or a URL read by ranges (``whole`` once it is not)."""

    def __init__(self, url: str, progress: Progress | None) -> None:
        self.url, self.progress, self.fetched = url, progress, 0
        self.how = "range requests"
        self._local: str | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme in ("", "file"):
            self._local, self.how = urllib.request.url2pathname(parsed.path), "local file"
        self.size = os.path.getsize(self._local) if self._local else self._remote_size()

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()

    def _remote_size(self) -> int:
        request = urllib.request.Request(self.url, headers={"Range": "bytes=0-0"})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                if answer.status == 206:
                    total = answer.headers.get("Content-Range", "").rpartition("/")[2]
                    if total.isdigit():
                        return int(total)
                self._download(answer)  # no ranges: the whole file, from this answer
        except OSError as exc:
            raise WheelError(f"cannot read {self.url}: {exc}") from None
        assert self._local is not None
        return os.path.getsize(self._local)

    def _download(self, answer: io.BufferedIOBase) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="cudnnload-wheel-")
        self._local = os.path.join(self._scratch.name, "wheel.zip")
        self.how = "whole file (the server ignores range requests)"
        with open(self._local, "wb") as out:
            self._copy(answer, out, None, "the whole wheel")

    def _copy(self, answer: io.BufferedIOBase, out: io.BufferedIOBase, size: int | None, what: str) -> None:
        shown = time.monotonic()
        done = 0
        while chunk := answer.read(_CHUNK):
            out.write(chunk)
            done += len(chunk)
            self.fetched += len(chunk)
            if self.progress is not None and time.monotonic() - shown > 2:
                shown = time.monotonic()
                self.progress(f"{what}: {done >> 20} of {size >> 20 if size else '?'} MB")

    def read(self, offset: int, size: int) -> bytes:
        if size <= 0:
            return b""
        if offset < 0 or offset + size > self.size:
            raise WheelError(f"a zip entry points outside the wheel (bytes {offset}-{offset + size} of {self.size})")
        if self._local is not None:
            with open(self._local, "rb") as handle:
                handle.seek(offset)
                return handle.read(size)
        buffer = io.BytesIO()
        self._ranged(offset, size, buffer, None)
        return buffer.getvalue()

    def _ranged(self, offset: int, size: int, out: io.BufferedIOBase, what: str | None) -> None:
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={offset}-{offset + size - 1}"})
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                if answer.status != 206:
                    raise WheelError(f"{self.url}: the server answered a range request with {answer.status}")
                self._copy(answer, out, size, what or "")
        except OSError as exc:
            raise WheelError(f"cannot read {self.url}: {exc}") from None

    def copy(self, offset: int, size: int, out: io.BufferedIOBase, what: str) -> None:
        """``size`` bytes from ``offset`` into ``out`` (a member's compressed data), with progress."""
        if self._local is not None:
            with open(self._local, "rb") as handle:
                handle.seek(offset)
                left = size
                while left > 0 and (chunk := handle.read(min(_CHUNK, left))):
                    out.write(chunk)
                    left -= len(chunk)
            return
        self._ranged(offset, size, out, what)


@dataclass(frozen=True)
class _Member:
    name: str
    method: int  # 0 stored, 8 deflate
    compressed: int
    size: int
    header: int  # offset of its local file header


def _central_directory(source: _Source) -> dict[str, _Member]:
    """The zip's entries by name (APPNOTE 4.3.16 end record, 4.3.15 ZIP64 locator, 4.3.12 central headers)."""
    tail_size = min(source.size, _TAIL + _EOCD.size)
    tail = source.read(source.size - tail_size, tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0:
        raise WheelError("not a zip file (no end of central directory)")
    _sig, _disk, _cd_disk, _here, count, cd_size, cd_offset, _comment = _EOCD.unpack_from(tail, at)
    if at >= _EOCD64_LOCATOR.size and tail[at - _EOCD64_LOCATOR.size:at - _EOCD64_LOCATOR.size + 4] == b"PK\x06\x07":
        _sig64, _disk64, end64, _disks = _EOCD64_LOCATOR.unpack_from(tail, at - _EOCD64_LOCATOR.size)
        record = source.read(end64, _EOCD64.size)
        if record[:4] == b"PK\x06\x06":
            *_, count, cd_size, cd_offset = _EOCD64.unpack(record)
    directory = source.read(cd_offset, cd_size)
    members: dict[str, _Member] = {}
    pos = 0
    for _ in range(count):
        if directory[pos:pos + 4] != b"PK\x01\x02":
            raise WheelError("damaged zip central directory")
        fields = _CENTRAL.unpack_from(directory, pos)
        method, compressed, size = fields[4], fields[8], fields[9]
        name_len, extra_len, comment_len, header = fields[10], fields[11], fields[12], fields[16]
        name = directory[pos + 46:pos + 46 + name_len].decode("utf-8", "replace")
        extra = directory[pos + 46 + name_len:pos + 46 + name_len + extra_len]
        size, compressed, header = _zip64(extra, size, compressed, header)
        members[name] = _Member(name, method, compressed, size, header)
        pos += 46 + name_len + extra_len + comment_len
    return members


def _zip64(extra: bytes, size: int, compressed: int, header: int) -> tuple[int, int, int]:
    """The ZIP64 extended information field's values for the fields that overflowed (APPNOTE 4.5.3)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        if tag == 1:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, pos + 4))
            size = next(values) if size == 0xFFFFFFFF else size
            compressed = next(values) if compressed == 0xFFFFFFFF else compressed
            header = next(values) if header == 0xFFFFFFFF else header
        pos += 4 + length
    return size, compressed, header


def _data_offset(source: _Source, member: _Member) -> int:
    local = source.read(member.header, _LOCAL.size)
    if local[:4] != b"PK\x03\x04":
        raise WheelError(f"damaged zip entry {member.name}")
    *_, name_len, extra_len = _LOCAL.unpack(local)
    return member.header + _LOCAL.size + name_len + extra_len


def _chunks(source: _Source, member: _Member, what: str) -> Iterator[bytes]:
    """The member's bytes, decompressed, in pieces (a 150 MB library is never held whole)."""
    if member.method not in (0, 8):
        raise WheelError(f"{member.name}: zip compression method {member.method} (only stored and deflate are read)")
    with tempfile.TemporaryFile() as raw:
        source.copy(_data_offset(source, member), member.compressed, raw, what)  # type: ignore[arg-type]
        raw.seek(0)
        inflate = zlib.decompressobj(-zlib.MAX_WBITS) if member.method == 8 else None
        while block := raw.read(_CHUNK):
            yield inflate.decompress(block) if inflate else block
        if inflate is not None:
            yield inflate.flush()


def _read_member(source: _Source, member: _Member) -> bytes:
    return b"".join(_chunks(source, member, member.name))


# --- the facts ----------------------------------------------------------------------------------------------


def wheel_facts(name: str, version: str, url: str, sha256: str | None, *, cudnn: bool,
                environ: Mapping[str, str] | None = None, progress: Progress | None = None) -> WheelFacts:
    """The RECORD of the wheel at ``url`` and, with ``cudnn``, its cuDNN build; remembered by sha256.
    WheelError for a wheel without RECORD or that cannot be read."""
    filename = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    memo = _memo_path(sha256, environ)
    known = _remembered(memo, cudnn) if memo else None
    if known is not None:
        return known
    source = _Source(url, progress)
    try:
        members = _central_directory(source)
        record_name = next((n for n in members if n.endswith(".dist-info/RECORD") and n.count("/") == 1), None)
        if record_name is None:
            raise WheelError(f"{filename} has no .dist-info/RECORD: not a wheel pip installs (PEP 427)")
        record = _record(_read_member(source, members[record_name]).decode("utf-8", "replace"))
        build = _cudnn_build(source, members, filename, progress) if cudnn else None
    finally:
        source.close()
    facts = WheelFacts(name, version, filename, sha256, record, build, source.fetched, source.how, source.size)
    if memo:
        write_json(memo, _plain(facts))
    return facts


def _record(text: str) -> tuple[RecordEntry, ...]:
    rows = []
    for row in csv.reader(io.StringIO(text, newline="")):
        if row:
            size = int(row[2]) if len(row) > 2 and row[2].isdigit() else None
            rows.append(RecordEntry(row[0], row[1] if len(row) > 1 and row[1] else None, size))
    return tuple(rows)


def _cudnn_build(source: _Source, members: Mapping[str, _Member], filename: str,
                 progress: Progress | None) -> CudnnBuild | None:
    """The release and CUDA runtime of the newest generation's facts library in the wheel."""
    found = [(lib.major, name) for name in members
             if (lib := classify(name.rsplit("/", 1)[-1])) is not None and FACTS_LIBRARY.get(lib.major) == lib.key]
    if not found:
        return None
    major, name = max(found)
    shim = next((n for n in members if (lib := classify(n.rsplit("/", 1)[-1])) is not None and lib.key == "shim"
                 and lib.major == major), None)
    if progress is not None:
        progress(f"{filename}: reading {name} ({members[name].compressed >> 20} MB compressed)")
    graph = _elf(source, members[name])
    shim_info = _elf(source, members[shim]) if shim else None
    if graph is None:  # not readable as ELF: the release is then the wheel's version's
        return CudnnBuild(name, None, None)
    return CudnnBuild(name, graph.release, graph.cudart_version, graph.runpath,
                      shim_info.rpath if shim_info else (), shim_info.runpath if shim_info else ())


def _elf(source: _Source, member: _Member) -> ElfInfo | None:
    """A library of the wheel read as ELF, from a temporary file that is gone after."""
    with tempfile.TemporaryDirectory(prefix="cudnnload-lib-") as folder:
        path = os.path.join(folder, member.name.rsplit("/", 1)[-1])
        with open(path, "wb") as out:
            for block in _chunks(source, member, member.name):
                out.write(block)
        try:
            return read_elf(path)
        except (OSError, ElfError):
            return None


def _memo_path(sha256: str | None, environ: Mapping[str, str] | None) -> str | None:
    folder = cache_dir(environ)
    if folder is None or not sha256 or not all(c in "0123456789abcdef" for c in sha256):
        return None
    return os.path.join(folder, "wheels", f"{sha256}.json")


def _plain(facts: WheelFacts) -> dict[str, object]:
    build = facts.cudnn
    return {"format": FACTS_FORMAT, "name": facts.name, "version": facts.version, "filename": facts.filename,
            "sha256": facts.sha256, "size": facts.size, "record": [[e.path, e.digest, e.size] for e in facts.record],
            "cudnn": None if build is None else [build.library, str(build.release) if build.release else None,
                                                 build.cudart_version, list(build.runpath), list(build.shim_rpath),
                                                 list(build.shim_runpath)]}


def _remembered(path: str, cudnn: bool) -> WheelFacts | None:
    """Facts written by `_plain`, checked field by field; None for anything else (read again then)."""
    data = read_json(path)
    try:
        if not isinstance(data, dict) or data.get("format") != FACTS_FORMAT:
            return None
        record = tuple(RecordEntry(str(p), d if isinstance(d, str) else None, s if isinstance(s, int) else None)
                       for p, d, s in data["record"])
        raw = data["cudnn"]
        build = None if raw is None else CudnnBuild(str(raw[0]), parse_release(raw[1]) if raw[1] else None,
                                                    raw[2] if isinstance(raw[2], int) else None,
                                                    *(tuple(str(x) for x in part) for part in raw[3:6]))
        if cudnn and build is None and any(classify(e.path.rsplit("/", 1)[-1]) for e in record):
            return None  # remembered without the cuDNN facts now asked for
        return WheelFacts(str(data["name"]), str(data["version"]), str(data["filename"]), data.get("sha256"), record,
                          build, 0, "remembered", int(data["size"]))
    except (KeyError, TypeError, ValueError):
        return None


def progress_to_stderr(line: str) -> None:
    print(f"cudnnload: {line}", file=sys.stderr, flush=True)
