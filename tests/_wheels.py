"""The real cuDNN wheels (tests/wheels.py) with the facts the capi/status/probe tests expect of them.

cuDNN libraries of one major share SONAMEs, and the shim resolves its
sub-libraries by SONAME against whatever the process already mapped (the first
copy loaded wins, loading-in-the-wild §4). So in-process tests use one cuDNN 9
(9.28 cu12) and one cuDNN 8 (8.9.7); other releases and broken sets go through
child processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudnnload.loading.capi import CudnnApi
from cudnnload.resolve.catalog import Release, generation
from cudnnload.resolve.mapped import mapped_libraries
from tests.wheels import lib_folder


@dataclass(frozen=True)
class Wheel:
    """One unpacked wheel and the facts the tests expect of it (cudnn-facts §1.3, §1.5)."""

    tag: str  # key of tests/wheels.py
    release: Release
    cudart: int  # cudnnGetCudartVersion()
    max_device: int  # cudnnGetMaxDeviceVersion()
    version_checks: int  # how many cudnn*VersionCheck the shim exports

    def __str__(self) -> str:
        return self.tag

    @property
    def major(self) -> int:
        return self.release.major

    @property
    def lib_dir(self) -> Path:
        """The wheel's nvidia/cudnn/lib; skips the test when the wheels were not fetched."""
        return lib_folder(self.tag)

    def files(self, folder: Path | None = None, without: tuple[str, ...] = ()) -> list[tuple[str, str]]:
        """(catalog key, path) of the libraries present in ``folder``, leaves first, shim last."""
        folder = folder or self.lib_dir
        return [(lib.key, str(folder / lib.soname)) for lib in generation(self.major).libraries
                if lib.key not in without and (folder / lib.soname).exists()]

    def symlink_farm(self, target: Path, without: tuple[str, ...] = ()) -> list[tuple[str, str]]:
        """Symlinks to this wheel's libraries in ``target``, minus ``without``. The links are what
        gets opened, so $ORIGIN is ``target`` (loading-in-the-wild §5): a left-out sibling is missing."""
        for _key, path in self.files(without=without):
            (target / os.path.basename(path)).symlink_to(path)
        return self.files(target)


CU12_928 = Wheel("cu12-9.28.0.42", Release(9, 28, 0), 12090, 1210, 5)
CU13_928 = Wheel("cu13-9.28.0.42", Release(9, 28, 0), 13050, 1210, 5)
CU12_90 = Wheel("cu12-9.0.0.312", Release(9, 0, 0), 12030, 900, 4)  # no ext, so no Subquadratic check
CU12_897 = Wheel("cu12-8.9.7.29", Release(8, 9, 7), 12020, 900, 6)
ALL = (CU12_928, CU13_928, CU12_90, CU12_897)


def driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


needs_no_driver = pytest.mark.skipif(driver_present(), reason="asserts the behaviour of a machine without a GPU driver")


@functools.cache
def _load_in_process(wheel: Wheel) -> CudnnApi:
    folder = wheel.lib_dir
    for key, path in wheel.files():
        if key != "shim":
            # engines_runtime_compiled fails without libcuda.so.1; nothing these tests call needs it.
            with contextlib.suppress(OSError):
                ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    api = CudnnApi(folder / f"libcudnn.so.{wheel.major}", wheel.major)
    stray = [path for path in mapped_libraries()
             if os.path.basename(path).startswith("libcudnn") and path.endswith(f".so.{wheel.major}")
             and os.path.dirname(path) != os.path.realpath(folder)]
    if stray:
        pytest.fail(f"another cuDNN {wheel.major} was loaded in this test process before {wheel}: {stray}; "
                    "load releases other than 9.28 cu12 and 8.9.7 in child processes")
    return api


def in_process(wheel: Wheel) -> CudnnApi:
    """The API of ``wheel`` loaded into the test process (once), leaves first, shim last."""
    if wheel not in (CU12_928, CU12_897):
        raise ValueError(f"{wheel} shares SONAMEs with an in-process release; probe it in a child")
    return _load_in_process(wheel)
