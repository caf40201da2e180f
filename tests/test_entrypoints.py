"""Our entry-point reader gives what importlib.metadata gives, without its import cost."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from cudnnload.dispatch.entrypoints import entry_points


@pytest.mark.parametrize("group", ["console_scripts", "cudnnload.backends", "pytest11"])
def test_same_entry_points_as_importlib_metadata(group: str) -> None:
    ours = sorted((p.name, p.value) for p in entry_points(group))
    theirs = sorted((p.name, p.value) for p in importlib.metadata.entry_points(group=group))
    assert ours == theirs


def _dist(site: Path, folder: str, name: str, value: str) -> None:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[cudnnload.backends]\n# a comment\nfake = {value}\n\n[other]\nx = y:z\n")


def test_first_distribution_of_a_name_on_the_path_wins(tmp_path: Path) -> None:
    _dist(tmp_path / "a", "Fake_Plugin-1.0.dist-info", "Fake-Plugin", "first:register")
    _dist(tmp_path / "b", "fake_plugin-2.0.dist-info", "fake-plugin", "second:register")
    points = entry_points("cudnnload.backends", [str(tmp_path / "a"), str(tmp_path / "b")])
    assert [(p.name, p.value, p.distribution, p.version) for p in points] == [
        ("fake", "first:register", "Fake-Plugin", "1.0")]


def test_load_imports_the_attribute_path() -> None:
    point = next(p for p in entry_points("cudnnload.backends", sys.path) if p.name == "numpy")
    assert callable(point.load())
