"""What a running process has mapped: the files ``/proc/PID/maps`` lists.

The linker model's "already loaded" rule starts from this (a soname mapped in the process wins
over any search), the child probe reports it, ``trace`` samples it while a program runs, and
``doctor --pid`` reads another process's.
"""

from __future__ import annotations

import os

from cudnnload.resolve.records import record

# Libraries worth reporting ("libcuda" also covers a dynamic libcudart).
_MAPPED_PREFIXES = ("libcudnn", "libcublas", "libnvrtc", "libcuda")
# proc(5): the kernel appends this to the path of a file whose name was unlinked after it was mapped (os.replace
# over it, or rm); the process keeps running the old file.
_DELETED = " (deleted)"


@record
class MappedFile:
    """One file a process has mapped, as ``/proc/PID/maps`` shows it (proc(5)): the first mapping of it."""

    path: str  # the real path (a library opened through a symlink appears under its target), " (deleted)" cut
    device: int  # os.makedev(major, minor) of the file mapped
    inode: int
    deleted: bool  # its name was unlinked since it was mapped: what is at ``path`` now, if anything, is another file
    addresses: str  # "start-end" of that mapping: its entry in /proc/PID/map_files

    @property
    def span(self) -> int:
        """The length of that first mapping: the file's first loadable segment, page-aligned (`first_span`)."""
        start, _, end = self.addresses.partition("-")
        return int(end, 16) - int(start, 16)


def read_maps(pid: int | str = "self") -> tuple[MappedFile, ...]:
    """Every file mapped into a process (default: this one), once each, in address order. OSError as
    opening or reading ``/proc/PID/maps`` raises it (the process is gone, or is another user's)."""
    found: dict[tuple[str, int, int], MappedFile] = {}
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            # address perms offset dev inode path; the path may hold spaces, and is absent for anonymous memory
            fields = line.rstrip("\n").split(maxsplit=5)
            if len(fields) < 6 or not fields[5].startswith("/") or fields[4] == "0":
                continue
            path, deleted = fields[5], fields[5].endswith(_DELETED)
            if deleted:
                path = path[:-len(_DELETED)]
            major, _, minor = fields[3].partition(":")
            device, inode = os.makedev(int(major, 16), int(minor, 16)), int(fields[4])
            found.setdefault((path, device, inode), MappedFile(path, device, inode, deleted, fields[0]))
    return tuple(found.values())


def first_span(path: str) -> int | None:
    """How long the first mapping of ``path`` is when ld.so maps it (`MappedFile.span`): its first PT_LOAD segment,
    from its page to the page its file contents end on (glibc's _dl_map_segments maps the segments' file extents
    page by page; the rest of the span is mapped again with other rights, a mapping of its own in /proc/PID/maps).
    Builds of a library differ in it (cuDNN 9.0, 9.24 and 9.28's shims map 96, 124 and 128 KiB), so a mapping whose
    length is not the disk file's tells that the process runs another build, where its release cannot be read.
    None for what is not a little-endian 64-bit ELF file, or cannot be read."""
    import struct

    from cudnnload.files import NotRegularFile, open_regular

    page = os.sysconf("SC_PAGE_SIZE")
    try:
        with open_regular(path) as handle:  # a FIFO planted at the path would hold open() for good
            head = handle.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4:6] != b"\x02\x01":
                return None
            (table,), (size, count) = struct.unpack_from("<Q", head, 0x20), struct.unpack_from("<HH", head, 0x36)
            handle.seek(table)
            headers = handle.read(size * count)
    except (OSError, NotRegularFile):
        return None
    for index in range(count if size >= 56 and len(headers) >= size * count else 0):
        kind, _, _, address, _, in_file = struct.unpack_from("<IIQQQQ", headers, index * size)
        if kind == 1:  # PT_LOAD
            return -(-(address + in_file) // page) * page - (address - address % page)
    return None


def mapped_libraries(pid: int | str = "self") -> tuple[str, ...]:
    """The CUDA-family files (libcudnn*, libcublas*, libnvrtc*, libcuda*) mapped into a process
    (default: this one), sorted; () when the process is gone."""
    try:
        files = read_maps(pid)
    except OSError:
        return ()
    return tuple(sorted({f.path for f in files if is_cuda_family(f.path)}))


def is_cuda_family(path: str) -> bool:
    """A cuDNN, cuBLAS, NVRTC or driver (or dynamic CUDA runtime) library, by its file name."""
    return os.path.basename(path).startswith(_MAPPED_PREFIXES)
