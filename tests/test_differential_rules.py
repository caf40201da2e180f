"""The rule differential (fixtures/glibc/differential.py): random scenes of fixtures/glibc/draw.py, each run under
the real ld.so as root and as nobody and compared with cudnnload's process model. A slice runs here;
bench/bench_differential.py runs 1000 per seed and prints the coverage of each rule.
"""

from __future__ import annotations

import os

import pytest

from fixtures.glibc.differential import coverage_lines, run_scene
from fixtures.glibc.draw import draw
from fixtures.glibc.scene import Scene, needs_root

SLICE = [draw(18, index) for index in range(30)]


def test_a_drawn_scene_reads_back_from_the_json_it_prints() -> None:
    scenes = [draw(7, index) for index in range(200)]
    assert all(Scene.parse(scene.json()) == scene for scene in scenes)
    assert len({scene.json() for scene in scenes}) > 190  # random enough to explore


def test_a_scene_is_rebuilt_from_its_seed_and_index_alone() -> None:
    assert draw(5, 12).json() == draw(5, 12).json() != draw(5, 13).json()


@pytest.mark.parametrize("scene", SLICE, ids=[scene.name for scene in SLICE])
def test_the_model_agrees_with_the_real_loader_as_root_and_as_nobody(scene: Scene) -> None:
    if os.geteuid() != 0 or needs_root():
        pytest.skip("runs as nobody and in a private mount namespace: needs root")
    result = run_scene(scene)
    assert not result.disagreements, "\n".join(result.disagreements) + \
        f"\nrebuild: python bench/bench_differential.py --scene '{result.scene}'"


def test_the_coverage_names_every_rule_and_what_this_glibc_cannot_show() -> None:
    lines = coverage_lines([], 1, 0, 0.0)
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| rule")]
    assert len(table) > 80
    assert any("relative-entry-not-folder-passed" in line and "does not hold for this glibc" in line
               for line in table)
