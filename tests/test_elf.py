"""ELF answers checked against readelf on the real wheels, and bad files turned into clear errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.errors import ElfError
from cudnnload.resolve.catalog import Release
from cudnnload.resolve.elf import read_elf
from tests.wheels import WHEEL_RELEASES, lib_folder

pytestmark = pytest.mark.wheels


def _readelf(*args: str) -> str:
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True, text=True).stdout


def _readelf_dynamic(path: Path) -> dict[str, list[str]]:
    tags: dict[str, list[str]] = {}
    for match in re.finditer(r"\((NEEDED|SONAME|RPATH|RUNPATH)\)\s+\S+ \S+: \[(.*)\]", _readelf("-d", str(path))):
        tags.setdefault(match.group(1), []).append(match.group(2))
    return tags


def _readelf_exported(path: Path) -> int:
    count = 0
    for line in _readelf("--dyn-syms", str(path)).splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0].endswith(":") and cols[6] != "UND" \
                and cols[4] in ("GLOBAL", "WEAK", "UNIQUE") and cols[5] in ("DEFAULT", "PROTECTED"):
            count += 1
    return count


@pytest.mark.parametrize("wheel", WHEEL_RELEASES)
def test_dynamic_section_and_exports_match_readelf(wheel: str) -> None:
    folder = lib_folder(wheel)
    libraries = sorted(folder.glob("libcudnn*.so*"))
    assert len(libraries) >= 7
    for path in libraries:
        info = read_elf(path)
        tags = _readelf_dynamic(path)
        assert info.soname == tags["SONAME"][0] == path.name
        assert list(info.needed) == tags.get("NEEDED", [])
        assert ":".join(info.rpath) == ":".join(tags.get("RPATH", []))
        assert ":".join(info.runpath) == ":".join(tags.get("RUNPATH", []))
        assert info.exported_count == _readelf_exported(path), path.name


@pytest.mark.parametrize("wheel", WHEEL_RELEASES)
def test_build_id_and_glibc_needs_match_readelf(wheel: str) -> None:
    for path in sorted(lib_folder(wheel).glob("libcudnn*.so*")):
        info = read_elf(path)
        # readelf -n skips notes in 8-aligned sections (9.0, 8.9.7), so compare raw bytes: the
        # 20-byte SHA-1 ends the section after the 16-byte note header and "GNU\0".
        dump = _readelf("-x", ".note.gnu.build-id", str(path))
        raw = "".join(word for line in dump.splitlines() if line.strip().startswith("0x")
                      for word in line.split()[1:5] if re.fullmatch("[0-9a-f]{8}", word))
        assert info.build_id and raw.endswith(info.build_id) and len(info.build_id) == 40
        versions = set(re.findall(r"Name: (GLIBC_[\d.]+)", _readelf("-V", str(path))))
        highest = max(tuple(int(x) for x in v[6:].split(".")) for v in versions)
        assert info.max_needed("GLIBC_") == highest


@pytest.mark.parametrize("wheel", WHEEL_RELEASES)
def test_the_cudnn_9_shims_release_is_read_from_its_code_and_no_other_files(wheel: str) -> None:
    """The shim exports no version constant, but it dlopens the names of its own release first (libcudnn_graph.
    so.9.28.0): the release its code formats them with. Read right on the 9.0 and 9.28 shims here, and on those of
    9.1.1 to 9.19 (bench/shim_releases.py); no other file (graph, cuDNN 8's shim) gets one."""
    major, minor, patch = (int(part) for part in wheel.split("-")[1].split(".")[:3])
    shim = read_elf(lib_folder(wheel) / f"libcudnn.so.{major}")
    assert shim.names_release == (Release(major, minor, patch) if major == 9 else None)
    assert all(read_elf(path).names_release is None for path in lib_folder(wheel).glob("libcudnn_*.so.*"))


def test_a_shim_whose_code_moves_the_major_too_often_gets_no_release_and_is_read_quickly(tmp_path: Path) -> None:
    """A file named and built as a shim whose code holds the major's move thousands of times (no shim NVIDIA built
    holds more than 78): no release is read from it, and reading it stays quick."""
    import time

    from elftools.elf.elffile import ELFFile

    shim = tmp_path / "libcudnn.so.9"
    data = bytearray((lib_folder("cu12-9.28.0.42") / "libcudnn.so.9").read_bytes())
    with open(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9", "rb") as handle:
        text = ELFFile(handle).get_section_by_name(".text")
        start, size = text["sh_offset"], text["sh_size"]
    moves = b"\x41\xb8\x09\x00\x00\x00\x41\xb9\x05\x00\x00\x00" * (size // 12)
    data[start:start + len(moves)] = moves
    shim.write_bytes(bytes(data))
    started = time.process_time()
    assert read_elf(shim).names_release is None and time.process_time() - started < 1


def test_the_jit_wheels_shim_asks_for_the_names_of_its_release() -> None:
    from fixtures.scenarios.layouts import JIT, library_folder

    assert read_elf(library_folder(JIT) / "libcudnn.so.9").names_release == Release(9, 27, 0)


def test_shim_of_928_uses_rpath_and_exports_every_version_check() -> None:
    info = read_elf(lib_folder("cu12-9.28.0.42") / "libcudnn.so.9")
    assert info.rpath == ("$ORIGIN",) and info.runpath == ()
    assert info.version_checks == ("cudnnAdvVersionCheck", "cudnnCnnVersionCheck", "cudnnGraphVersionCheck",
                                   "cudnnOpsVersionCheck", "cudnnSubquadraticOpsVersionCheck")
    assert len(info.cudnn_functions) == 243


@pytest.mark.parametrize("wheel, library, release", [
    ("cu12-9.28.0.42", "libcudnn_graph.so.9", Release(9, 28, 0)),
    ("cu13-9.28.0.42", "libcudnn_ops.so.9", Release(9, 28, 0)),
    ("cu12-9.0.0.312", "libcudnn_adv.so.9", Release(9, 0, 0)),
    ("cu12-8.9.7.29", "libcudnn_ops_infer.so.8", Release(8, 9, 7)),
])
def test_release_is_read_from_the_exported_version_constant(wheel: str, library: str, release: Release) -> None:
    assert read_elf(lib_folder(wheel) / library).release == release


def test_sm_inventory_of_precompiled_engines_matches_cuobjdump_counts() -> None:
    # Per-arch cubin counts listed by cuobjdump 13.5 for 9.28 cu12 (cudnn-facts §3.2).
    code = read_elf(lib_folder("cu12-9.28.0.42") / "libcudnn_engines_precompiled.so.9").gpu_code
    assert code is not None and code.problem is None
    assert code.containers == 1543 and code.compression == "lz4"
    counts = {a.arch: a.count for a in code.sass}
    assert sum(counts.values()) == 5615
    assert counts["sm_50"] == 336 and counts["sm_90a"] == 333 and counts["sm_120f"] == 460
    assert [(a.arch, a.count) for a in code.ptx] == [("sm_120f", 97)]


def test_cu13_drops_pre_turing_code_and_uses_zstd() -> None:
    code = read_elf(lib_folder("cu13-9.28.0.42") / "libcudnn_engines_precompiled.so.9").gpu_code
    assert code is not None and code.compression == "zstd"
    assert code.sass_archs[0] == "sm_75" and sum(a.count for a in code.sass) == 4257


def test_compute_capability_check_follows_sass_and_ptx_rules() -> None:
    ops = read_elf(lib_folder("cu12-9.28.0.42") / "libcudnn_ops.so.9").gpu_code
    assert ops is not None
    assert ops.runs_on((9, 0))  # sm_90a cubin
    assert ops.runs_on((8, 9))  # sm_80 cubin runs on 8.9
    assert not ops.runs_on((7, 0))  # Volta: nothing below sm_75
    assert ops.runs_on((12, 1))  # sm_120f PTX within the family


def test_big_library_is_read_lazily() -> None:
    path = lib_folder("cu12-9.28.0.42") / "libcudnn_engines_precompiled.so.9"
    # VmHWM, not ru_maxrss: the latter survives exec and would count the pytest parent.
    code = ("import sys; from cudnnload.resolve.elf import read_elf; read_elf(sys.argv[1]); "
            "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))")
    rss_kb = int(subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True,
                                text=True).stdout)
    assert rss_kb < 150_000, f"peak RSS {rss_kb} KB for a {path.stat().st_size >> 20} MB file"


@pytest.mark.parametrize("content, reason", [
    (b"", "empty file (0 bytes)"),
    (b"this is a text file\n", "not an ELF file"),
    (b"\x7fELF\x02\x01\x01", "truncated ELF header"),
])
def test_bad_files_raise_an_error_naming_path_and_reason(tmp_path: Path, content: bytes, reason: str) -> None:
    bad = tmp_path / "libcudnn_ops.so.9"
    bad.write_bytes(content)
    with pytest.raises(ElfError) as caught:
        read_elf(bad)
    assert caught.value.path == str(bad) and reason in caught.value.reason
    assert bad.read_bytes() == content  # nothing the user had is changed


def test_truncated_library_is_reported_not_parsed(tmp_path: Path) -> None:
    whole = (lib_folder("cu12-9.28.0.42") / "libcudnn.so.9").read_bytes()
    cut = tmp_path / "libcudnn.so.9"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ElfError, match="truncated"):
        read_elf(cut)


def test_missing_file_error_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ElfError) as caught:
        read_elf(tmp_path / "nope.so")
    assert caught.value.path == str(tmp_path / "nope.so") and "No such file" in caught.value.reason
    assert not os.path.exists(tmp_path / "nope.so")


@pytest.mark.parametrize("wheel", ["cu12-9.0.0.312", "cu12-9.28.0.42"])
def test_the_names_a_shim_or_graph_dlopens_are_those_strings_finds(wheel: str) -> None:
    """``opens``: the libcudnn_* names in the .rodata of the shim and graph, compared with readelf's dump of it;
    9.0's graph names no engines_tensor_ir and 9.0's shim no ext, 9.28's both; other files are not read."""
    folder = lib_folder(wheel)
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        text = subprocess.run(["readelf", "-p", ".rodata", str(folder / name)], capture_output=True,
                              text=True, errors="replace").stdout
        assert read_elf(folder / name).opens == tuple(sorted(set(re.findall(r"(libcudnn_[a-z_]+)\.so", text))))
    newer = wheel.endswith("9.28.0.42")
    assert ("libcudnn_engines_tensor_ir" in read_elf(folder / "libcudnn_graph.so.9").opens) is newer
    assert ("libcudnn_ext" in read_elf(folder / "libcudnn.so.9").opens) is newer
    assert read_elf(folder / "libcudnn_ops.so.9").opens == ()


@pytest.mark.parametrize("field, value, code, loader", [
    (56, 0x7FFF, "truncated", "cannot read file data"),  # e_phnum: the table past the end of the file
    # e_phnum PN_XNUM (0xffff): the loader reads no extended numbering and takes it as the count (a hostile user's)
    (56, 0xFFFF, "truncated", "cannot read file data"),
    (54, 48, "damaged-elf", "ELF file's phentsize not the expected size"),  # e_phentsize
])
def test_program_headers_the_loader_refuses_are_refused_as_it_refuses_them(
        tmp_path: Path, field: int, value: int, code: str, loader: str) -> None:
    """A shared object whose program header table the loader cannot read (it checks them before it maps
    anything): read_elf refuses it with the code of what is wrong, and glibc's dlopen fails with the message that
    says so (`cudnnload inspect` said [OK] of it)."""
    import ctypes
    import shutil
    import struct

    copy = tmp_path / "libcudnn.so.9"
    shutil.copyfile("/lib/x86_64-linux-gnu/libm.so.6", copy)
    data = bytearray(copy.read_bytes())
    struct.pack_into("<H", data, field, value)
    copy.write_bytes(bytes(data))
    with pytest.raises(ElfError) as refused:
        read_elf(copy)
    assert refused.value.code.value == code
    with pytest.raises(OSError, match=re.escape(loader)):
        ctypes.CDLL(str(copy))


@pytest.mark.wheels
def test_a_first_call_the_model_says_dies_is_an_error_where_no_file_finding_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's invariant: where the prediction's first call dies (the application's dlopen of the shim fails)
    and no error names a cause, that death is an error finding of its own, never "healthy" (a hostile user's shim
    with program headers the ELF reader took and the loader refuses was "healthy", exit 0)."""
    from dataclasses import replace

    from cudnnload.codes import Code
    from cudnnload.diagnose.inventory import inspect
    from cudnnload.judge import installs
    from cudnnload.judge.consequences import Effect

    real = installs.predict_install

    def dying(install, ctx):  # type: ignore[no-untyped-def]
        predicted = real(install, ctx)
        first = replace(predicted.expectations[0], outcome=Effect.NO_START, cause="shim",
                        message=f"{install.file('shim').path}: cannot read file data")
        return replace(predicted, expectations=(first, *predicted.expectations[1:]))

    monkeypatch.setattr(installs, "predict_install", dying)
    judged = inspect([str(lib_folder("cu12-9.28.0.42"))], use_cache=False,
                     environ={"LD_LIBRARY_PATH": str(lib_folder("cublas-cu12-12.9.1.4"))}).installs[0]
    assert not judged.healthy
    assert (Code.DAMAGED_ELF, "shim") in [(f.code, f.subject.library) for f in judged.findings
                                          if f.severity.value == "error"]
    monkeypatch.setattr(installs, "predict_install", real)  # the same install, as the model predicts it: whole
    assert inspect([str(lib_folder("cu12-9.28.0.42"))], use_cache=False,
                   environ={"LD_LIBRARY_PATH": str(lib_folder("cublas-cu12-12.9.1.4"))}).installs[0].healthy
