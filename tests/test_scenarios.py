"""The scenario corpus (fixtures/scenarios): what `cudnnload doctor TARGET` predicts against what the real
dynamic linker and cuDNN do, layout by layout, on the real wheels.

Each layout is run once per session by the scenario app (truth.record: the app's report of every call,
its exit status or signal, LD_DEBUG=libs,files, /proc/self/maps). Each says whether it works; the run must
agree (fixes.works). doctor TARGET must predict every call's result before anything runs, and name the
cause, what the user will see and the fix; its own child probe must agree with both.

Where doctor does not (yet) do so on a layout, the test is marked xfail with the reason (`KNOWN_WRONG`, empty
today): the corpus keeps the truth, and the mark is taken off when the model learns it. A layout that runs
without an optional library (`Layout.optional`) is healthy, and doctor must warn of it with the layout's fix.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest

from cudnnload.diagnose.doctor import Report, doctor
from cudnnload.judge.consequences import disagreements
from cudnnload.verdicts import ERROR, WARNING
from fixtures.scenarios.fixes import kinds, reference_truth, works
from fixtures.scenarios.layouts import (
    CONTROL,
    CORPUS,
    Layout,
    by_name,
    corpus_marks,
    ensure,
    needs_wheels,
    reference_of,
)
from fixtures.scenarios.truth import Truth, compare, record
from tests.wheels import cache_root

pytestmark = [*corpus_marks(), pytest.mark.slow]  # ~100 s for the 60 layouts on the 2-core machine

# (test, layout) -> why doctor disagrees with the real loader there today
KNOWN_WRONG: dict[str, dict[str, str]] = {}


def _each(test: str, layouts: tuple[Layout, ...] | list[Layout]) -> list[object]:
    """``layouts`` as parameters, the ones doctor is known to get wrong in ``test`` marked xfail with why."""
    known = KNOWN_WRONG.get(test, {})
    return [pytest.param(layout, id=layout.name, marks=[pytest.mark.xfail(reason=known[layout.name], strict=False)]
                         if layout.name in known else []) for layout in layouts]


STATIC = [layout for layout in CORPUS if layout.static]


def _needs_wheels(layout: Layout) -> None:
    needs_wheels()
    ensure(layout)
    ensure(reference_of(layout))


@functools.cache
def truth(name: str) -> Truth:
    layout = by_name(name)
    _needs_wheels(layout)
    return record(layout)


@functools.cache
def diagnosis(name: str) -> Report:
    layout = by_name(name)
    _needs_wheels(layout)
    env = {"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(cache_root()), **layout.environ()}
    return doctor(env, target=layout.path(layout.target), site_paths=[])


def _expected(report: Report) -> tuple[object, ...]:
    installs = [i for i in report.inventory.installs if i.folder == report.chosen]
    return installs[0].expected if installs else ()


def test_the_corpus_holds_at_least_45_layouts_of_every_generation_each_with_a_verdict() -> None:
    assert len(CORPUS) >= 45
    assert {layout.major for layout in CORPUS} == {7, 8, 9}
    assert len({layout.name for layout in CORPUS}) == len(CORPUS)
    for layout in CORPUS:
        reference = reference_of(layout)  # an intact install of the release meant (the JIT wheel's is not healthy)
        assert reference.major == layout.major and (reference.healthy or not layout.healthy), layout.name
        if not layout.healthy:
            assert layout.family != CONTROL and layout.fixes, f"{layout.name}: a failing layout without family or fix"
            assert all(fix for fix in layout.fixes)


@pytest.mark.parametrize("layout", CORPUS, ids=lambda layout: layout.name)
def test_each_layout_works_exactly_when_it_says_it_does(layout: Layout) -> None:
    why = works(truth(layout.name), reference_truth(layout), layout.optional)
    assert (why == []) == layout.healthy, why or f"{layout.name} says it fails, but runs as {layout.reference}"


@pytest.mark.parametrize("layout", _each("predicts", STATIC))
def test_doctor_target_predicts_every_call_the_real_app_makes(layout: Layout) -> None:
    report = diagnosis(layout.name)
    expected = _expected(report) or next((f.consequences for f in report.findings if f.code == "not-found"), ())
    assert expected, f"{layout.name}: doctor found no install and no reason"
    if report.chosen:
        assert compare(_expected(report), truth(layout.name)) == []


@pytest.mark.parametrize("layout", _each("names", STATIC))
def test_doctor_target_names_the_cause_the_consequence_and_the_fix_of_every_failure(layout: Layout) -> None:
    seen, report = truth(layout.name), diagnosis(layout.name)
    errors = [f for f in report.findings if f.severity == ERROR]
    if layout.healthy:
        assert errors == [], [f"{f.code}: {f.message}" for f in errors]
        if layout.optional:  # it runs without an optional library: a warning, and its fix as the layout's
            warned = [f for f in report.findings if f.severity == WARNING and f.fix]
            assert any(set(kinds(fix)) <= {str(a.do) for f in warned for a in f.fix.actions} for fix in layout.fixes), \
                [f.code for f in warned]
        return
    assert errors and all(f.fix for f in errors), [f.code for f in errors]
    explained = [f for f in errors if f.consequences]
    assert explained, f"{layout.name}: no error finding says what the user will see"
    if seen.signal == "SIGABRT":
        printed = set(seen.stderr)
        assert any(c.effect == "abort" and any(c.message and line.startswith(c.message.split(". Error:")[0])
                                               for line in printed)
                   for f in explained for c in f.consequences), seen.stderr


@pytest.mark.parametrize("layout", _each("probe", STATIC))
def test_doctor_probe_agrees_with_its_prediction(layout: Layout) -> None:
    report = diagnosis(layout.name)
    if report.probe is None:
        pytest.skip("no shim to probe")
    from cudnnload.resolve.catalog import generation

    assert disagreements(_expected(report), report.probe.observed(generation(layout.major))) == []
    assert not any(f.code == "prediction-disagrees" for f in report.findings)


def test_nothing_in_the_layouts_changes_when_they_are_diagnosed(tmp_path: Path) -> None:
    layout = by_name("not-elf-cnn")
    _needs_wheels(layout)
    lib = layout.folder() / "site" / "nvidia" / "cudnn" / "lib"
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in lib.iterdir()}
    diagnosis(layout.name)
    assert {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in lib.iterdir()} == before


# --- doctor -- COMMAND: the same app, run under cudnnload ---------------------------------------------------

@functools.cache
def observed(name: str):  # type: ignore[no-untyped-def]
    from cudnnload.diagnose.observe import diagnose_program
    from fixtures.scenarios.truth import command

    layout = by_name(name)
    _needs_wheels(layout)
    argv, env = command(layout)
    return diagnose_program(argv, environ={**env, "CUDNNLOAD_CACHE": str(cache_root())},
                            timeout=layout.hangs_after or 120)


def _cudnn_files(paths: object) -> set[str]:
    return {os.path.realpath(p) for p in paths if os.path.basename(p).startswith("libcudnn")}  # type: ignore[attr-defined]


@pytest.mark.parametrize("layout", _each("command", CORPUS))
def test_doctor_command_agrees_with_the_recorded_truth(layout: Layout) -> None:
    seen, report = truth(layout.name), observed(layout.name)
    run = report.observation
    assert (run.returncode, run.signal) == (seen.returncode, seen.signal)
    if seen.mapped:  # the app ran to its end and printed /proc/self/maps
        assert _cudnn_files(o.path for o in run.libraries if o.initialized) == _cudnn_files(seen.mapped)
    if seen.signal == "SIGABRT":
        assert run.messages and run.messages[-1] == seen.stderr[-1]
        assert run.died_in and "called abort()" in run.died_in
    if seen.signal == "SIGBUS":
        assert seen.log is not None and seen.log.dying_in is not None
        assert run.died_in and seen.log.dying_in.path in run.died_in
    if seen.hung:
        assert run.timed_out and seen.log is not None and seen.log.stuck_opening is not None
        assert run.died_in and seen.log.stuck_opening in run.died_in
    errors = [f for f in report.findings if f.severity == ERROR]
    if layout.healthy:
        assert errors == [] and report.healthy, [f.code for f in errors]
    else:
        assert errors and all(f.fix for f in errors) and not report.healthy


def test_doctor_command_explains_an_older_cudnn_loaded_first_by_the_already_loaded_rule() -> None:
    report = observed("already-loaded-older-cudnn")
    (comparison,) = report.comparisons
    assert any("already in the process" in d for d in comparison.disagreements)
    codes = {f.code for f in report.findings}
    assert {"prediction-disagrees", "mixed-in-process", "program-died"} <= codes
    reused = {os.path.basename(r.path) for r in report.observation.reused}
    assert {"libcudnn_graph.so.9", "libcudnn_ops.so.9"} <= reused


# --- what the static report says of a few layouts ---------------------------------------------------------

def test_a_cut_sublibrary_is_shown_killing_the_process_not_not_found() -> None:
    layout = by_name("truncated-cnn")
    _needs_wheels(layout)
    from cudnnload.diagnose.inventory import find
    from cudnnload.report import install_text

    (install,) = find([str(layout.folder() / "site/nvidia/cudnn/lib")], environ={"CUDNNLOAD_NO_CACHE": "1"}).installs
    cnn = next(step for step in install.plan if step.library == "cnn")
    assert cnn.path and cnn.path.endswith("libcudnn_cnn.so.9") and cnn.outcome == "cut-segments"
    assert "KILLS THE PROCESS (SIGBUS)" in install_text(install)


def test_a_cudnn7_without_a_versioned_name_gets_its_release_and_cuda_from_the_probe(tmp_path: Path) -> None:
    layout = by_name("healthy-cudnn7")
    _needs_wheels(layout)
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copyfile(layout.folder() / "lib" / "libcudnn.so.7.6.5", lib / "libcudnn.so.7")  # one name, no version
    shutil.copyfile(layout.folder() / "lib" / "libcudart.so.10.2", lib / "libcudart.so.10.2")
    report = doctor({"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_NO_CACHE": "1"}, target=str(lib / "libcudnn.so.7"))
    assert report.release == "7.6.5" and report.healthy
    probe_check = next(c for c in report.checks if c.name == "probe")
    assert probe_check.status == "ok" and "built for CUDA 10.2 (driver 440.33 or newer)" in probe_check.summary


def test_a_cudnn7_whose_cuda_runtime_is_missing_says_which_and_where_to_get_it() -> None:
    report = diagnosis("cudnn7-without-cudart")
    missing = next(f for f in report.findings if f.code == "missing-dependency")
    assert "libcudart.so.10.2" in missing.message and "CUDA 10.2 runtime" in (missing.fix.text or "")
    assert [c.effect for c in missing.consequences] == ["no-start"]


def test_the_prediction_is_made_while_the_program_runs_and_equals_the_one_made_after() -> None:
    """doctor -- COMMAND predicts for each shim as soon as the linker's log shows it initialized (`_Prepare`):
    what it hands over is what `install_of` gives once the program has ended."""
    import sys

    from cudnnload.diagnose import launch, observe
    from cudnnload.resolve.discovery import context

    layout = by_name("healthy-9.28-cu12")
    _needs_wheels(layout)
    shim = layout.folder() / "site" / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    env = {**os.environ, "CUDNNLOAD_CACHE": str(cache_root())}
    program = [sys.executable, "-c", f"import ctypes, time; ctypes.CDLL({str(shim)!r}); time.sleep(1.5)"]
    started = launch.launch(program, environ=env)
    preparing = observe._Prepare(env, started)
    ran = observe.run(program, launched=started)
    ctx = preparing.result()
    [(key, ahead)] = preparing.alone.items()
    assert key[0] == str(shim) and ahead is not None
    opened = observe.observation(ran).shims[0]
    after = observe._predict(opened, context(env))
    assert after is not None and (opened.path, opened.requested_by) == key
    assert ahead.plan == after.plan and ahead.findings == after.findings and ctx is preparing.ctx
