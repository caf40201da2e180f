"""Integrity from RECORD (issue 18 item 5): sizes always, sha256 with ``--verify``, remembered under the file's
stamp; a file that differs is named with its distribution. On a copy of the real 9.28 wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnnload.codes import Code
from cudnnload.diagnose.inventory import find
from tests.wheels import site_folder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    """A copy (not links: one file is changed in place) of the 9.28 cu12 wheel's site layout."""
    out = tmp_path / "site"
    shutil.copytree(site_folder("cu12-9.28.0.42"), out, ignore=shutil.ignore_patterns(".unpacked"))
    return out / "nvidia" / "cudnn" / "lib"


def flip_a_byte(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))


def mismatches(folder: Path, environ: dict[str, str], verify: bool) -> list[str]:
    inventory = find([str(folder)], environ=environ, verify=verify)
    return [f.message for i in inventory.installs for f in i.findings if f.code is Code.RECORD_MISMATCH]


def test_same_size_other_content_is_found_only_by_verify(wheel: Path, tmp_path: Path) -> None:
    environ = {**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    flip_a_byte(wheel / "libcudnn_ops.so.9")
    assert mismatches(wheel, environ, verify=False) == []
    (said,) = mismatches(wheel, environ, verify=True)
    assert "nvidia-cudnn-cu12 9.28.0.42's RECORD" in said


def test_a_different_size_is_found_without_verify(wheel: Path, tmp_path: Path) -> None:
    environ = {**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    with open(wheel / "libcudnn_adv.so.9", "ab") as handle:
        handle.write(b"\0")
    (said,) = mismatches(wheel, environ, verify=False)
    assert "in nvidia-cudnn-cu12 9.28.0.42's RECORD" in said


def test_the_digest_is_remembered_until_the_file_changes(wheel: Path, tmp_path: Path) -> None:
    environ = {**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    assert mismatches(wheel, environ, verify=True) == []
    flip_a_byte(wheel / "libcudnn_ops.so.9")  # a new mtime: the remembered digest no longer applies
    assert len(mismatches(wheel, environ, verify=True)) == 1


def test_inspect_and_doctor_take_verify(wheel: Path, tmp_path: Path) -> None:
    flip_a_byte(wheel / "libcudnn_ops.so.9")
    env = {**os.environ, "CUDNNLOAD_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    for command in ("inspect", "doctor"):
        done = subprocess.run([sys.executable, "-m", "cudnnload", command, "--verify", str(wheel)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and "record-mismatch" in done.stdout, done.stdout + done.stderr
