"""The differential test against the real loader (fixtures/scenarios/differential.py, issue 18 item 7): random
layouts made from the real wheels, run under the real dynamic linker, compared object by object with
cudnnload's prediction. A 50-case slice runs here (marked slow); bench/bench_differential.py runs 1000.

A disagreement of a known cause (differential.CAUSES: the model's gaps found so far, each kept as a named layout
of the corpus, which is checked here to still show it) marks its case xfail with the cause; a disagreement of
any other class fails, printing the recipe that rebuilds it.
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

from cudnnload.resolve import rules
from fixtures.glibc.differential import CLOSURE, PYTHON, coverage_lines, run_scene
from fixtures.glibc.draw import draw
from fixtures.glibc.scene import Scene, needs_root
from fixtures.scenarios.differential import (
    CAUSES,
    NO_START,
    RAN,
    Disagreement,
    Outcome,
    cases,
    cause_of,
    compare,
    observed,
    predicted,
    random_recipe,
    rebuild_command,
    run_case,
)
from fixtures.scenarios.layouts import W90, W928, Folder, Recipe, by_name, corpus_marks, ensure, needs_wheels
from fixtures.scenarios.truth import record
from tests.wheels import cache_root

pytestmark = corpus_marks()



def _slice() -> list[tuple[str, Recipe]]:
    """The 50 random cases; none where the wheels they are drawn from are not unpacked (their tests skip)."""
    try:
        return cases(seed=18, count=50)
    except pytest.skip.Exception:
        return []


SLICE = _slice()
KEPT = sorted({cause.layout for cause in CAUSES.values()})


def test_a_recipe_reads_back_from_the_json_it_prints() -> None:
    rng = random.Random(0)
    recipes = [random_recipe(rng) for _ in range(200)]
    assert all(Recipe.parse(recipe.json()) == recipe for recipe in recipes)
    assert len({recipe.json() for recipe in recipes}) > 150  # random enough to explore


def test_a_case_is_rebuilt_from_its_seed_and_index_alone() -> None:
    assert [r.json() for _, r in cases(5, 4, start=10)] == [r.json() for _, r in cases(5, 20)[10:14]]


def test_the_process_is_compared_before_the_objects_and_each_soname_after() -> None:
    graph = {"libcudnn_graph.so.9": ("/a/libcudnn_graph.so.9",)}
    assert compare(Outcome(RAN, graph), Outcome(RAN, graph)) == []
    assert [d.key for d in compare(Outcome(RAN, graph), Outcome("died:SIGABRT", note="Invalid handle"),
                                   preload=True)] == ["process: predicted ran, observed died:SIGABRT (Invalid handle) "
                                                      "[LD_PRELOAD]"]
    assert compare(Outcome(NO_START), Outcome(NO_START, note="other words")) == []
    seen = Outcome(RAN, {"libcudnn_graph.so.9": ("/b/libcudnn_graph.so.9",), "libcudnn_ops.so.9": ("/b/o",)},
                   asked=frozenset({"libcudnn_adv.so.9"}))
    assert compare(Outcome(RAN, {**graph, "libcudnn_adv.so.9": ("/a/adv",)}), seen) == [
        Disagreement("not-mapped", "libcudnn_adv.so.9", "/a/adv", "none", "not found"),
        Disagreement("other-file", "libcudnn_graph.so.9", "/a/libcudnn_graph.so.9", "/b/libcudnn_graph.so.9"),
        Disagreement("unpredicted", "libcudnn_ops.so.9", "none", "/b/o")]


def test_a_built_recipe_is_what_the_real_loader_runs() -> None:
    """An empty shim first on LD_LIBRARY_PATH stops the app's dlopen by soname; a conda-style folder (real files
    X.so.9.28.0) behind it is never reached."""
    needs_wheels()
    recipe = Recipe((Folder("a", W90, damaged=(("libcudnn.so.9", "empty"),)), Folder("b", W928, versioned=True)),
                    "soname", 9, ("a", "b"))
    layout = recipe.layout("test-recipe").moved(cache_root() / "differential" / "test-recipe")
    shutil.rmtree(layout.folder(), ignore_errors=True)
    layout.build(layout.folder())
    assert (layout.folder() / "b" / "libcudnn_graph.so.9").resolve().name == "libcudnn_graph.so.9.28.0"
    seen = observed(record(layout))
    assert seen.process == NO_START and "file too short" in seen.note


@pytest.mark.slow
@pytest.mark.timeout_s(120)
@pytest.mark.parametrize(("name", "recipe"), SLICE, ids=[name for name, _ in SLICE])
def test_cudnnload_predicts_what_the_real_loader_maps(name: str, recipe: Recipe) -> None:
    needs_wheels()
    case = run_case(name, recipe)
    unknown = [d for d in case.disagreements if cause_of(d) is None]
    assert not unknown, "\n".join(map(str, unknown)) + f"\nrebuild: {rebuild_command(recipe)}"
    if case.disagreements:
        pytest.xfail("; ".join(sorted({str(cause_of(d)) for d in case.disagreements})))


@pytest.mark.parametrize("name", KEPT)
def test_each_known_cause_is_kept_by_a_corpus_layout_that_still_shows_it(name: str) -> None:
    needs_wheels()
    layout = by_name(name)
    ensure(layout)
    found = compare(predicted(layout), observed(record(layout)), preload=bool(layout.env.get("LD_PRELOAD")))
    if not found:
        return  # the model learnt it: CAUSES can lose this entry
    causes = {cause_of(d) for d in found}
    assert None not in causes, [str(d) for d in found if cause_of(d) is None]
    own = {key for key, cause in CAUSES.items() if cause.layout == name}
    assert own & causes, f"{name} no longer shows {own}, but {causes}"
    pytest.xfail("; ".join(sorted(str(c) for c in causes)))


# --- the rule differential -------------------------------------------------------------------------------

RULE_SLICE = [draw(18, index) for index in range(30)]


def test_a_drawn_scene_reads_back_from_the_json_it_prints() -> None:
    scenes = [draw(7, index) for index in range(200)]
    assert all(Scene.parse(scene.json()) == scene for scene in scenes)
    assert len({scene.json() for scene in scenes}) > 190  # random enough to explore


def test_a_scene_is_rebuilt_from_its_seed_and_index_alone() -> None:
    assert draw(5, 12).json() == draw(5, 12).json() != draw(5, 13).json()


@pytest.mark.parametrize("scene", RULE_SLICE, ids=[scene.name for scene in RULE_SLICE])
def test_the_model_agrees_with_the_real_loader_as_root_and_as_nobody(scene: Scene) -> None:
    if os.geteuid() != 0 or needs_root():
        pytest.skip("runs as nobody and in a private mount namespace: needs root")
    result = run_scene(scene)
    assert not result.disagreements, "\n".join(result.disagreements) + \
        f"\nrebuild: python bench/bench_differential.py --scene '{result.scene}'"


def test_the_coverage_names_every_rule_what_this_glibc_cannot_show_and_each_closure_member() -> None:
    lines = coverage_lines([], 1, 0, 0.0)
    rows = {line.split(" | ")[0].removeprefix("| ") for line in lines if line.startswith("| ")}
    assert {rule.id for rule in rules.RULES} <= rows
    assert {*CLOSURE, PYTHON} <= rows
    assert any("relative-entry-not-folder-passed" in line and "does not hold for this glibc" in line
               for line in lines)
