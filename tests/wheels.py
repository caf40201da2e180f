"""Where `make wheels` unpacked the real cuDNN wheels; tests skip with a reason when they are absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# tag -> unpacked folder name (fixtures/wheels.py)
WHEELS = {
    "cu12-9.28.0.42": "nvidia-cudnn-cu12-9.28.0.42",
    "cu13-9.28.0.42": "nvidia-cudnn-cu13-9.28.0.42",
    "cu12-9.0.0.312": "nvidia-cudnn-cu12-9.0.0.312",
    "cu12-8.9.7.29": "nvidia-cudnn-cu12-8.9.7.29",
}
WHEEL_RELEASES = tuple(WHEELS)


def cache_root() -> Path:
    return Path(os.environ.get("CUDNNLOAD_CACHE") or Path.home() / ".cache" / "cudnnload")


def site_folder(tag: str) -> Path:
    """The unpacked wheel: a site-packages-like folder holding nvidia/cudnn and the .dist-info."""
    folder = cache_root() / "unpacked" / WHEELS[tag]
    if not (folder / ".unpacked").exists():
        pytest.skip(f"cuDNN wheel {tag} not unpacked under {folder.parent}: run `make wheels`")
    return folder


def lib_folder(tag: str) -> Path:
    return site_folder(tag) / "nvidia" / "cudnn" / "lib"
