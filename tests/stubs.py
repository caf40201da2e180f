"""Shared objects built with gcc at test time, for what no wheel shows: a library of a given SONAME under any name
(a cuDNN 7 shim that says no release, another library copied under cuDNN's name)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def stub_library(path: Path, soname: str, source: str = "int cudnnload_test_symbol;\n") -> Path:
    """``path`` built from ``source`` (C) with SONAME ``soname``; the test skips where gcc is not installed."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build a stub library")
    code = path.parent / f".{path.name}.c"
    code.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(code), f"-Wl,-soname,{soname}"], check=True)
    code.unlink()
    return path


def linked_to_shim(path: Path, folder: Path, soname: str = "libcudnn.so.9") -> Path:
    """A library at ``path`` that calls cudnnGetVersion, linked against ``folder``'s real shim ``soname`` (its
    NEEDED, with the version node the shim defines, and a DT_RUNPATH to ``folder``): a framework's library
    (libtorch_cuda.so) in small; the test skips where gcc is not installed."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build a library linked against cuDNN")
    code = path.parent / f".{path.name}.c"
    code.write_text("#include <stddef.h>\nsize_t cudnnGetVersion(void);\n"
                    "size_t v(void) { return cudnnGetVersion(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(code), "-o", str(path), f"-L{folder}", f"-l:{soname}",
                    f"-Wl,-rpath,{folder}"], check=True)
    code.unlink()
    return path
