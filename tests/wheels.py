"""Where `make wheels` unpacked the real cuDNN wheels; tests skip with a reason when they are absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures.wheels import cache_root as test_cache_root

# tag -> unpacked folder name (fixtures/wheels.py)
WHEELS = {
    "cu12-9.28.0.42": "nvidia-cudnn-cu12-9.28.0.42",
    "cu13-9.28.0.42": "nvidia-cudnn-cu13-9.28.0.42",
    "cu12-9.0.0.312": "nvidia-cudnn-cu12-9.0.0.312",
    "cu12-8.9.7.29": "nvidia-cudnn-cu12-8.9.7.29",
    "cu11-8.5.0.96": "nvidia-cudnn-cu11-8.5.0.96",
    "cublas-cu12-12.9.1.4": "nvidia-cublas-cu12-12.9.1.4",
}
WHEEL_RELEASES = tuple(tag for tag in WHEELS if not tag.startswith("cublas"))  # the cuDNN wheels


def python_path(*first: str | Path) -> str:
    """PYTHONPATH for a child cudnnload: ``first``, then what this process was given (on the GPU machine,
    pyelftools and the plugins' entry points come that way)."""
    return os.pathsep.join(filter(None, (*map(str, first), os.environ.get("PYTHONPATH"))))


def cache_root() -> Path:
    """The test cache `make wheels` fills (fixtures/wheels.py), never the user's cudnnload cache."""
    return test_cache_root()


def site_folder(tag: str) -> Path:
    """The unpacked wheel: a site-packages-like folder holding nvidia/cudnn and the .dist-info."""
    folder = cache_root() / "unpacked" / WHEELS[tag]
    if not (folder / ".unpacked").exists():
        pytest.skip(f"cuDNN wheel {tag} not unpacked under {folder.parent}: run `make wheels`")
    return folder


def lib_folder(tag: str) -> Path:
    """The wheel's library folder: nvidia/cudnn/lib, or nvidia/cublas/lib for the cuBLAS wheel."""
    return site_folder(tag) / "nvidia" / ("cublas" if tag.startswith("cublas") else "cudnn") / "lib"
