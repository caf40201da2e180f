"""Fixtures shared by the test modules: the synthetic libraries and the unpacked real wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.wheels import lib_folder

SYNTHETIC_SOURCES = Path(__file__).resolve().parent.parent / "fixtures" / "synthetic"


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The libraries of fixtures/synthetic/build.sh, built once per session (about a second)."""
    compiler = os.environ.get("CC", "gcc")
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is needed to build fixtures/synthetic")
    out = tmp_path_factory.mktemp("synthetic")
    build = subprocess.run(["sh", str(SYNTHETIC_SOURCES / "build.sh"), str(out)], capture_output=True, text=True,
                           check=False)
    if build.returncode:
        pytest.fail(f"fixtures/synthetic/build.sh failed:\n{build.stderr}")
    return out


@pytest.fixture
def wheel_lib() -> Callable[[str], Path]:
    """``wheel_lib("cu12-9.28.0.42")``: that wheel's nvidia/cudnn/lib; skips with "run `make wheels`"."""
    return lib_folder
