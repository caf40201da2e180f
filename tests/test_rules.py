"""glibc's rules (cudnnload.resolve.rules) against the real ld.so of this machine.

Each scene of fixtures/glibc/rules.py (gcc-built libraries from fixtures/glibc/lib.c, a program from program.c) runs
under the real loader with ``LD_DEBUG=libs,files`` and is asked of cudnnload's process model
(`cudnnload.resolve.process`); the two must agree lookup by lookup (the candidates tried, the file mapped), object
by object (the maps at the end), on ld.so's messages and on each dlopen's result, and the model must cite the rule
the scene shows. Scenes needing /etc/ld.so.preload, a private ld.so.cache or a set-user-ID program run in a private
mount namespace (root only; skipped otherwise).
"""

from __future__ import annotations

import os

import pytest

from cudnnload.resolve import linker, rules
from cudnnload.resolve.linker import LinkerDefaults, LinkerEnv, resolve
from fixtures.glibc.rules import FOUND, SCENES
from fixtures.glibc.scene import Node, Scene, check, needs_root, replace
from fixtures.scenarios.layouts import needs_wheels

THIS = linker.THIS_GLIBC


def rule_of(scene: Scene) -> str:
    """The rule a scene shows: the longest rule id its name starts with."""
    return max((r.id for r in rules.RULES if scene.name == r.id or scene.name.startswith(r.id + "-")), key=len)


@pytest.mark.parametrize("scene", SCENES + FOUND, ids=[scene.name for scene in SCENES + FOUND])
def test_the_model_agrees_with_the_real_loader_and_cites_the_rule(scene: Scene) -> None:
    if scene.namespace and (why := needs_root()):
        pytest.skip(why)
    if scene.user != "root" and os.geteuid() != 0:
        pytest.skip("running as another user needs root")
    if any(isinstance(item, Node) and item.kind.startswith("wheel:") for item in scene.files):
        needs_wheels()
    predicted, observed, found = check(scene)
    assert not found, "\n".join(found) + f"\nscene: {scene.json()}"
    assert rule_of(scene) in predicted.cited, sorted(predicted.cited)


NOBODY = [scene for scene in SCENES if scene.user == "root" and not scene.namespace][::3]


@pytest.mark.parametrize("scene", NOBODY, ids=[scene.name for scene in NOBODY])
def test_the_same_scenes_run_by_an_ordinary_user_agree_too(scene: Scene) -> None:
    if os.geteuid() != 0:
        pytest.skip("running as another user needs root")
    predicted, observed, found = check(replace(scene, name=f"{scene.name}-nobody", user="nobody"))
    assert not found, "\n".join(found)


def test_every_rule_of_this_glibc_has_a_scene_or_says_why_not() -> None:
    assert THIS is not None
    shown = {rule_of(scene) for scene in SCENES}
    missing = [r.id for r in rules.RULES if r.holds(THIS) and r.untested is None and r.id not in shown]
    assert not missing


def test_each_scene_shows_a_rule_that_holds_for_this_glibc() -> None:
    assert THIS is not None
    assert [scene.name for scene in SCENES if not rules.rule(rule_of(scene)).holds(THIS)] == []


def test_the_table_has_one_entry_per_id_and_sound_version_ranges() -> None:
    ids = [r.id for r in rules.RULES]
    assert len(ids) == len(set(ids))
    for r in rules.RULES:
        assert rules.OLDEST <= r.since <= rules.NEWEST and (r.until is None or r.since <= r.until <= rules.NEWEST)
        assert r.source.startswith(("elf/", "sysdeps/")) and r.function and r.does.endswith(".")


def test_a_behaviour_that_changed_is_two_rules_that_meet() -> None:
    """ENOTDIR in a relative element: the rest of the list until 2.38 (bug 31035), passed over from 2.39."""
    old, new = rules.rule("relative-entry-not-folder-ends-list"), rules.rule("relative-entry-not-folder-passed")
    assert old.until is not None and new.since == (old.until[0], old.until[1] + 1)
    assert [old.holds((2, 38)), new.holds((2, 38)), old.holds((2, 39)), new.holds((2, 39))] == [True, False, False,
                                                                                                True]


@pytest.mark.parametrize("glibc", [(2, 27), (2, 42), None])
def test_a_loader_outside_the_known_versions_is_said_undecided_with_what_settles_it(
        glibc: tuple[int, int] | None, tmp_path: object) -> None:
    env = LinkerEnv(ld_library_path=(str(tmp_path),), defaults=LinkerDefaults(default_dirs=()), glibc=glibc)

    res = resolve("libnothing.so.1", None, env)

    assert res.undecided is not None and "LD_DEBUG=libs" in res.undecided
    assert resolve("libnothing.so.1", None, replace(env, glibc=(2, 36))).undecided is None


def test_the_relative_file_entry_depends_on_the_glibc_modelled(tmp_path: object) -> None:
    """The same search under 2.36 ends at a relative element that is a file; under 2.39 it goes on."""
    import pathlib

    base = pathlib.Path(str(tmp_path))
    (base / "file").write_text("text")
    (base / "b").mkdir()
    env = LinkerEnv(ld_library_path=("file", "b"), defaults=LinkerDefaults(default_dirs=()), cwd=str(base))

    old, new = (resolve("liba.so", None, replace(env, glibc=v)) for v in ((2, 36), (2, 39)))

    assert [a.path for a in old.trail] == ["file/liba.so"]
    assert [a.path for a in new.trail] == ["file/liba.so", "b/liba.so"]
    assert old.trail[0].by == "relative-entry-not-folder-ends-list"
    assert new.trail[0].by == "relative-entry-not-folder-passed"


def test_another_systems_glibc_decides_the_rules_the_linker_model_takes() -> None:
    """An image's C library (doctor --root: `context(glibc=...)`), not this machine's, picks the rules."""
    from cudnnload.resolve.discovery import context

    newer = context({"PATH": "/usr/bin:/bin"}, use_cache=False, glibc=(2, 39, 0))
    unknown = context({"PATH": "/usr/bin:/bin"}, use_cache=False, glibc=(2, 45))

    assert newer.linker.glibc == (2, 39) and newer.linker.holds("relative-entry-not-folder-passed")
    assert resolve("libnothing.so.1", None, unknown.linker).undecided is not None


def test_an_install_judged_for_a_loader_the_table_does_not_know_says_so(synthetic_dir: object) -> None:
    """A glibc outside 2.28-2.41: every lookup carries `undecided`, and the install's verdict has one
    loader-unknown finding naming LD_DEBUG=libs."""
    from cudnnload.codes import Code
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.resolve.discovery import context

    ctx = context({"PATH": "/usr/bin:/bin"}, use_cache=False)
    ctx = replace(ctx, linker=replace(ctx.linker, glibc=(2, 45)))
    judged = judged_install_of(f"{synthetic_dir}/v9-rpath/libcudnn.so.9", ctx, "test")

    assert judged is not None
    said = [f for f in judged.findings if f.code is Code.LOADER_UNKNOWN]
    assert len(said) == 1 and "glibc 2.45" in said[0].message and "LD_DEBUG=libs" in said[0].message
