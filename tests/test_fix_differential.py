"""The fix differential's harness (fixtures/fixdiff, bench/bench_fix_differential.py, issue 31 item 4): a case is
composed from its seed and rebuilt the same, its real programs run, doctor is asked in each form, the first fix's
actions are applied to the case restored from its snapshot, and the outcome is classified; nothing of the bases or
the wheels changes. What these tests hold is the instrument, not today's doctor: no test asserts how many fixes
work.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fixtures.fixdiff import bases, consumers, runner
from fixtures.fixdiff.case import Case
from fixtures.fixdiff.grammar import GRAMMAR, cases_root, compose, draw, verb
from fixtures.scenarios.fixes import apply, replace_file, unpacked_wheel
from fixtures.scenarios.layouts import corpus_marks, needs_wheels

pytestmark = corpus_marks()
ROOT = Path(__file__).resolve().parent.parent

FAILING = {runner.FIXED, runner.NOT_FIXED, runner.NO_REPORT, runner.NO_ERROR, runner.NO_ACTIONS, runner.ONLY_MANUAL,
           runner.REFUSED}
WORKING = {runner.QUIET, runner.FALSE_ALARM, runner.CHANGED, runner.NO_REPORT, runner.REFUSED}


def _base(name: str) -> bases.Base:
    needs_wheels()
    base = bases.by_name(name)
    why = bases.unavailable(base)
    if why:
        pytest.skip(why)
    try:
        bases.built(base)
    except subprocess.CalledProcessError as error:
        pytest.skip(f"base {name} could not be installed here: {error}")
    return base


def _fixed_without_breaks(index: int, kinds: list[str], which: Callable[[runner.Judged], bool], seed: int = 1) -> None:
    """``seed``'s case ``index``, run by the harness with the programs ``kinds``: each (program, form) ``which``
    picks failed, and the first fix doctor gave made it work without making another program fail."""
    _base(_drawn(seed, index).name)
    verdict = runner.differential(seed, index, kinds)
    assert verdict.error is None, verdict.error
    picked = [j for j in verdict.judged if which(j)]
    assert picked and all(j.failing and j.outcome == runner.FIXED and not j.broke for j in picked), picked


def _nothing_breaks(seed: int, index: int, kinds: list[str], base: bases.Base | None = None) -> runner.Verdict:
    """``seed``'s case ``index``, run by the harness with the programs ``kinds`` (on ``base``, default its drawn
    one): no fix doctor gave makes a program that worked fail. The harness's verdict."""
    _base((base or _drawn(seed, index)).name)
    verdict = runner.differential(seed, index, kinds)
    assert verdict.error is None, verdict.error
    assert not any(j.broke for j in verdict.judged), [j for j in verdict.judged if j.broke]
    return verdict


def _torch_works_and_nothing_breaks(index: int) -> None:
    """Seed 1's case ``index``, with the app and torch: torch works, and no fix doctor gave makes a program fail."""
    assert _nothing_breaks(1, index, ["app", "torch"]).runs["torch"].works


def _drawn(seed: int, index: int) -> bases.Base:
    """The base of case (seed, index); skipped where its verbs close a file or folder to others (its programs, and
    doctor, then run as nobody) and nobody cannot run this cudnnload (`_others_can_run_cudnnload`)."""
    _, base, verbs = draw(seed, index)
    if any(verb.name.startswith("unreadable-") for verb in verbs):
        _others_can_run_cudnnload()
    return base


def _chosen_verbs(monkeypatch: pytest.MonkeyPatch, base: str, *names: str) -> None:
    """Every case drawn from now on (in this test) is on ``base`` with the verbs ``names``, in order, and keeps its
    drawn generator: a family studied as `bench/fixdiff_targeted.py` composes it."""
    import fixtures.fixdiff.grammar as grammar

    _base(base)
    drawn = grammar.draw

    def chosen(seed: int, index: int) -> tuple[random.Random, bases.Base, list[grammar.Verb]]:
        return drawn(seed, index)[0], bases.by_name(base), [verb(name) for name in names]

    monkeypatch.setattr(grammar, "draw", chosen)
    monkeypatch.setattr(runner, "draw", chosen)


def _others_can_run_cudnnload() -> None:
    """Skip where another user (the harness's nobody) cannot run this cudnnload: a folder above its venv or its
    source that others may not search (a clone in a 0700 folder of ``mktemp -d``; /root the harness opens to them,
    fixtures/fixdiff/consumers.py)."""
    for path in (Path(sys.prefix), Path(__file__).resolve().parents[1]):
        for folder in (path, *path.parents):
            if folder != Path("/root") and not folder.stat().st_mode & stat.S_IXOTH:
                pytest.skip(f"another user cannot search {folder}, above cudnnload's interpreter or source")


def _case(name: str, base: str, *verbs: str) -> Case:
    """A case of ``base`` with ``verbs`` done in order (a generator of its own: the test chooses what is done)."""
    home = cases_root() / f"test-{name}-{os.getpid()}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    case = Case(0, 0, _base(base), str(home), random.Random(name))
    bases.clone(case.base, case.venv)
    case.start()
    for each in verbs:
        case.steps.append({"do": each, **verb(each).do(case)})
    return case


@pytest.fixture
def cleanup() -> Iterator[list[Case]]:
    made: list[Case] = []
    yield made
    for case in made:
        if case.held is not None and case.held.process.poll() is None:
            case.held.process.kill()
            case.held.process.wait()
        shutil.rmtree(case.folder(), ignore_errors=True)
        shutil.rmtree(f"{case.folder()}.pristine", ignore_errors=True)


def _tree(folder: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every path below ``folder`` and its inode, size, mtime and mode (a change to any file shows)."""
    return {str(p.relative_to(folder)): (s.st_ino, s.st_size, s.st_mtime_ns, s.st_mode)
            for p in folder.rglob("*") for s in [p.lstat()]}


# --- the grammar ---------------------------------------------------------------------------------------------------

def test_the_grammar_has_at_least_25_verbs_each_named_and_told() -> None:
    assert len(GRAMMAR) >= 25
    assert len({v.name for v in GRAMMAR}) == len(GRAMMAR)
    assert all(len(v.story) > 40 for v in GRAMMAR), [v.name for v in GRAMMAR if len(v.story) <= 40]


def test_a_case_is_drawn_from_its_seed_and_index_alone() -> None:
    first, again = draw(1, 7), draw(1, 7)
    assert (first[1], first[2]) == (again[1], again[2])
    assert [first[0].random() for _ in range(3)] == [again[0].random() for _ in range(3)]
    assert [draw(1, i)[1:] for i in range(20)] != [draw(2, i)[1:] for i in range(20)]
    assert all(2 <= len(draw(1, i)[2]) <= 4 for i in range(50))


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_case_is_replayed_exactly(cleanup: list[Case]) -> None:
    seed, index = next((1, i) for i in range(100) if draw(1, i)[1].name != "torch")
    _base(draw(seed, index)[1].name)
    built = compose(seed, index)
    cleanup.append(built)
    steps, tree = built.steps, {k: v[1:2] + v[3:] for k, v in _tree(built.folder()).items()}
    again = compose(seed, index)
    assert again.steps == steps
    assert {k: v[1:2] + v[3:] for k, v in _tree(again.folder()).items()} == tree  # same names, sizes, modes


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_every_verb_changes_its_case_and_never_the_base_or_the_wheels(cleanup: list[Case]) -> None:
    """Each verb on the cu13-9.28 base; one about torch's own folder (``copy-into-torch-lib``) on the torch base,
    where that base can be built here (else that verb alone is left out)."""
    base = _base("cu13-9.28")
    before = _tree(base.folder())
    torch = bases.by_name("torch")
    try:
        with_torch = bases.unavailable(torch) is None and bases.built(torch) is not None
    except subprocess.CalledProcessError:
        with_torch = False
    torch_before = _tree(torch.folder()) if with_torch else None
    wheel = bases.store_wheel("nvidia-cudnn-cu12", "9.0.0.312")
    assert wheel is not None
    unpacked = unpacked_wheel(wheel)
    wheels_before = _tree(unpacked)
    for each in GRAMMAR:
        if "torch" in each.name and not with_torch:
            continue
        case = _case(each.name, torch.name if "torch" in each.name else base.name)
        cleanup.append(case)
        start = _tree(case.folder())
        case.steps.append({"do": each.name, **each.do(case)})
        assert _tree(case.folder()) != start or case.held is not None, each.name
        if case.held is not None:
            case.held.process.kill()
            case.held.process.wait()
        shutil.rmtree(case.folder())
    assert _tree(base.folder()) == before and (torch_before is None or _tree(torch.folder()) == torch_before)
    assert _tree(unpacked) == wheels_before


@pytest.mark.slow
@pytest.mark.timeout_s(300)
def test_a_verb_that_reads_a_library_passes_over_the_links_an_earlier_step_left_dangling(
        cleanup: list[Case]) -> None:
    """Fix differential 2-3930: a sub-library made a dangling link, then a truncate drew it and raised before any
    doctor ran. Cutting short and closing a file read it, so they draw among the names that lead to a file."""
    case = _case("dangling", "cu13-9.28")
    cleanup.append(case)
    for path in case.lib.glob("libcudnn_*.so.9"):
        path.unlink()
        path.symlink_to(f"{path.name}.1.0")
    cut = verb("truncate-file").do(case)
    assert cut["library"] == "libcudnn.so.9"
    assert verb("unreadable-sublibrary").do(case) == {"library": None}


# --- the environment and the user ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout_s(300)
def test_the_profile_gives_the_environment_even_with_a_preload_that_stops_programs(cleanup: list[Case]) -> None:
    case = _case("profile", "cu12-9.28")
    cleanup.append(case)
    case.export("export LD_PRELOAD=/nonexistent/libcudnn_graph.so.9", "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:")
    env = case.environ()
    assert env["LD_PRELOAD"] == "/nonexistent/libcudnn_graph.so.9"
    assert env["LD_LIBRARY_PATH"] == f"{case.lib}:" and env["VIRTUAL_ENV"] == str(case.venv)


@pytest.mark.slow
@pytest.mark.timeout_s(300)
def test_a_folder_closed_to_others_stops_the_programs_of_nobody_not_of_root(cleanup: list[Case]) -> None:
    case = _case("nobody", "cu12-9.28", "unreadable-folder")
    cleanup.append(case)
    app = next(c for c in consumers.consumers(case, ["app"]) if c.name == "app-path")
    as_nobody = consumers.run(app, case.environ(), case.work, case.user)
    as_root = consumers.run(app, case.environ(), case.work, "root")
    assert case.user == "nobody" and not as_nobody.works and "Permission denied" in as_nobody.why[0]
    assert as_root.works, as_root.why


# --- what a fix may touch ----------------------------------------------------------------------------------------

def test_a_fix_naming_a_path_outside_the_case_is_an_outside_touch(tmp_path: Path) -> None:
    case = Case(0, 0, bases.BASES[0], str(tmp_path / "case"), random.Random(0))
    venv_python = str(case.python)
    env = {"LD_LIBRARY_PATH": "/opt/old/lib", "PATH": f"{sys.prefix}/bin:/usr/bin:/bin"}  # cudnnload's venv first
    own = os.path.join(sys.prefix, "lib", "python3.11", "site-packages", "nvidia", "cudnn", "lib")
    touches = {
        "system python": {"do": "pip-install", "requirements": ["x"], "python": "/usr/bin/python3.11"},
        "own venv": {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{own}:/opt/old/lib"},
        "outside file": {"do": "delete", "path": "/usr/lib/libcudnn.so.9"},
        "python on PATH": {"do": "pip-install", "requirements": ["x"], "python": None, "target": None},
    }
    stays = {
        "the venv": {"do": "pip-install", "requirements": ["x"], "python": venv_python},
        "an entry taken out": {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": "/opt/old/lib"},
        "an entry kept": {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{case.lib}:/opt/old/lib"},
        "manual": {"do": "manual", "text": "restart it"},
    }
    said = {name: runner.outside_touch(action, case, env) for name, action in touches.items()}
    assert all(said.values()), said
    assert "cudnnload's own environment" in str(said["own venv"]) and "own" in str(said["python on PATH"])
    assert {name: runner.outside_touch(action, case, env) for name, action in stays.items()} == dict.fromkeys(stays)


def test_the_first_error_finding_gives_the_fix() -> None:
    remove = {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": "/x"}
    report = {"schema": 1, "kind": "doctor", "result": {"findings": [
        {"code": "no-driver", "severity": "info", "fix": {"text": "i", "actions": []}},
        {"code": "mixed-release", "severity": "error", "fix": {"text": "t", "actions": [remove]}},
        {"code": "missing-dependency", "severity": "error", "fix": {"text": "u", "actions": [{"do": "manual"}]}}]}}
    said = runner.said_in(report, "app-path", "target")
    assert (said.codes, said.first, said.actions, said.text) == (("mixed-release", "missing-dependency"),
                                                                 "mixed-release", (remove,), "t")
    assert runner.said_in({"kind": "error", "result": {"error": "no such file"}}, "a", "target").failure


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_pip_fix_naming_the_venv_s_interpreter_installs_as_that_pip_would(cleanup: list[Case]) -> None:
    case = _case("pip", "cu12-9.28")
    cleanup.append(case)
    pydeps = case.opt / "pydeps"
    (pydeps / "nvidia").mkdir(parents=True)
    pip = {"do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.0.0.312"], "python": str(case.python)}
    done = apply([{**pip, "options": ["--force-reinstall", "--no-deps"], "target": str(case.site)},
                  {**pip, "options": ["--user"], "target": None},
                  {**pip, "options": [], "target": str(pydeps)}], case, ["app"], case.environ(),
                 find_links=[bases.store()])
    installed = sorted(d.name for d in case.site.glob("nvidia_cudnn*.dist-info"))
    assert installed == ["nvidia_cudnn_cu12-9.0.0.312.dist-info"]
    assert len(done.refused) == 1 and "User site-packages are not visible" in done.refused[0]
    # pip's --target keeps a top-level folder that is there: only the .dist-info folders land
    assert not any((pydeps / "nvidia").iterdir()) and (pydeps / "nvidia_cudnn_cu12-9.0.0.312.dist-info").is_dir()


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_user_install_by_an_interpreter_of_the_machine_lands_in_the_copys_home(cleanup: list[Case]) -> None:
    """Fix differential 3-9027: the repair installs cuBLAS with ``python3.11 -m pip install --user`` (the user site
    held the cuDNN torch found), an interpreter outside the copy: pip is only asked which wheels, and they land in
    the user site of the copy's HOME; an interpreter whose site is outside the copy installs nothing."""
    case = _case("pipuser", "cu12-9.28")
    cleanup.append(case)
    env = case.environ()
    python = os.path.basename(shutil.which("python3.11", path="/usr/local/bin:/usr/bin:/bin") or "")
    if not python:
        pytest.skip("no python3.11 on the default PATH")
    user = {"do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.0.0.312"], "python": python,
            "options": ["--user"], "target": None}
    done = apply([user], case, ["app"], {**env, "PATH": "/usr/local/bin:/usr/bin:/bin"}, find_links=[bases.store()])
    assert not done.refused, done.refused
    assert list(Path(case.user_home).glob(".local/lib/python3.11/site-packages/nvidia_cudnn_cu12-9.0.0.312.dist-info"))
    elsewhere = apply([{**user, "options": []}], case, ["app"], {**env, "PATH": "/usr/local/bin:/usr/bin:/bin"},
                      find_links=[bases.store()])
    assert elsewhere.refused  # no --user, no target: that interpreter's own site, outside the copy


# --- the whole round ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_failing_case_is_diagnosed_in_both_forms_and_each_fix_applied_and_classified(cleanup: list[Case]) -> None:
    case = _case("round", "cu12-9.28", "copy-shim-other-release", "ldlp-relative-entry")
    cleanup.append(case)
    verdict = runner._judge(case, ["app"])
    assert set(verdict.runs) == {"app-path", "app-soname"}
    assert not all(r.works for r in verdict.runs.values())  # the case fails: what the rest of the test is about
    assert {(j.said.consumer, j.said.form) for j in verdict.judged} == {
        (c, f) for c in verdict.runs for f in ("target", "command")}
    for judged in verdict.judged:
        assert judged.outcome in (FAILING if judged.failing else WORKING), judged
        if judged.outcome in (runner.FIXED, runner.NOT_FIXED, runner.CHANGED):
            assert set(judged.after) == set(verdict.runs) and judged.said.actions
        if judged.outcome != runner.NO_REPORT:
            assert judged.said.seconds > 0
    record = json.loads(json.dumps(verdict.json(), default=str))
    assert record["steps"] == case.steps and len(record["doctor"]) == 4


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_fix_that_makes_a_working_program_fail_is_a_break(cleanup: list[Case]) -> None:
    case = _case("break", "cu12-9.28")
    cleanup.append(case)
    pristine = Path(f"{case.folder()}.pristine")
    subprocess.run(["cp", "-al", str(case.folder()), str(pristine)], check=True)
    programs = consumers.consumers(case, ["app"])
    env = case.environ()
    before = {c.name: consumers.run(c, env, case.work, case.user) for c in programs}
    assert all(r.works for r in before.values())
    said = runner.Said("app-path", "target", codes=("mixed-release",), first="mixed-release",
                       actions=({"do": "delete", "path": str(case.lib / "libcudnn_graph.so.9")},))
    judged = runner._outcome(case, pristine, env, programs, programs[0], said, before, {})
    assert (judged.outcome, judged.broke) == (runner.CHANGED, ("app-path", "app-soname"))
    assert (pristine / "venv" / "lib" / "python3.11" / "site-packages" / "nvidia" / "cudnn" / "lib" /
            "libcudnn_graph.so.9").exists()  # the snapshot keeps the case as composed


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_program_whose_wheel_was_upgraded_under_it_is_asked_about_by_pid(cleanup: list[Case]) -> None:
    case = _case("held", "cu12-9.28", "upgrade-under-running-process")
    cleanup.append(case)
    assert case.held is not None and case.held.ready.startswith("version ")
    verdict = runner._judge(case, ["app"])
    held = [j for j in verdict.judged if j.said.consumer == "held"]
    assert [j.said.form for j in held] == ["pid"] and not verdict.runs["held"].works
    assert held[0].outcome in FAILING


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_pytorch_is_a_consumer_of_the_torch_base(cleanup: list[Case]) -> None:
    case = _case("torch", "torch", "cuda-visible-devices")
    cleanup.append(case)
    torch = next(c for c in consumers.consumers(case, ["app", "torch"]) if c.name == "torch")
    ran = consumers.run(torch, case.environ(), case.work, case.user)
    assert ran.works and ran.output[-1] == "92400", ran
    assert torch.target == ("--python", str(case.python))


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_the_bench_writes_a_record_per_case_and_its_tables(tmp_path: Path) -> None:
    seed = 11
    index = next(i for i in range(100) if draw(seed, i)[1].name != "torch")
    _base(draw(seed, index)[1].name)
    root = Path(__file__).resolve().parent.parent
    ran = subprocess.run([sys.executable, str(root / "bench" / "bench_fix_differential.py"), "--seed",
                          str(seed), "--start", str(index), "--count", "1", "--consumers", "app", "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=850, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "cases.jsonl").read_text().splitlines()]
    assert [r["case"] for r in records] == [f"{seed}-{index}"] and not records[0]["error"]
    summary = (tmp_path / "summary.md").read_text()
    assert "## Per grammar verb" in summary and "**Breaks**" in summary and "**Outside touches**" in summary
    assert not (cases_root() / f"{seed}-{index}").exists()  # removed once judged


def test_a_file_given_its_own_mode_is_a_new_file() -> None:
    """The permission verbs never chmod a shared inode (fixes.replace_file)."""
    folder = Path(os.environ["CUDNNLOAD_TEST_CACHE"]) / "fixdiff-test-mode"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "a").write_bytes(b"x")
    os.link(folder / "a", folder / "b")
    replace_file(folder / "b", mode=0o600)
    assert stat.S_IMODE((folder / "a").stat().st_mode) != 0o600
    assert stat.S_IMODE((folder / "b").stat().st_mode) == 0o600 and (folder / "b").read_bytes() == b"x"
    shutil.rmtree(folder)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_doctor_on_a_python_command_repairs_what_its_frameworks_get_not_the_cudnn_it_opened() -> None:
    """``doctor -- python -c 'import torch ...'`` with another cuDNN installed by ``pip --target`` on PYTHONPATH and
    a relative LD_LIBRARY_PATH entry of it (fix differential 1-892, 1-486, 1-525, 1-577): the program opened the
    stray cuDNN, and the repair of that one alone (unset LD_LIBRARY_PATH) left torch on the PYTHONPATH copy. The
    whole repair is judged as ``doctor --python`` judges the interpreter's environment, on what torch's own loader
    gets in each changed world; applied, torch runs. (A check of the harness round, on today's doctor.)"""
    _base(draw(1, 892)[1].name)
    verdict = runner.differential(1, 892, ["torch"])  # pip-install-target, copy-sublibrary-other-release, and
    assert verdict.error is None, verdict.error  # ldlp-relative-entry, as seed 1 draws them
    assert not verdict.runs["torch"].works
    [command] = [j for j in verdict.judged if j.said.form == "command"]
    assert command.outcome == runner.FIXED, command


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_sub_library_bound_to_a_preloaded_file_of_another_release_is_an_error_with_its_fix() -> None:
    """conda's 9.0 folder (its versioned names, ``libcudnn_ops.so.9.0.0``) first for a program by name, and
    LD_PRELOAD holding 9.28's ``libcudnn_ops.so.9`` (fix differential 1-913): the 9.0 shim opens its own ops by
    the versioned name, which the preloaded file does not answer, but cnn's and adv's DT_NEEDED
    ``libcudnn_ops.so.9`` binds to it; they load, and their version checks return 1002. ``doctor libcudnn.so.9``
    said no error; now the preload's entry goes, and the program works. (A check of the harness round.)"""
    _base(draw(1, 913)[1].name)
    verdict = runner.differential(1, 913, ["app"])
    assert verdict.error is None, verdict.error
    [target] = [j for j in verdict.judged if (j.said.consumer, j.said.form) == ("app-soname", "target")]
    assert target.failing and target.outcome == runner.FIXED, target


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_command_whose_first_error_change_the_model_shows_insufficient_gets_the_whole_repair() -> None:
    """LD_PRELOAD of 9.24's shim and the venv's graph deleted (fix differential 1-961): the app by path died in
    cudnnGetVersion; ``doctor -- APP`` gave the first error's own change (an LD_LIBRARY_PATH entry taken out), after
    which the model still finds an error, and the program still died. The whole repair (the wheel put back, the
    preload taken out) comes first when the model shows the first error's own change insufficient, and it works."""
    _base(draw(1, 961)[1].name)
    verdict = runner.differential(1, 961, ["app"])
    assert verdict.error is None, verdict.error
    [command] = [j for j in verdict.judged if (j.said.consumer, j.said.form) == ("app-path", "command")]
    assert command.failing and command.outcome == runner.FIXED, command


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_change_of_the_shared_environment_that_would_break_the_shell_s_torch_is_made_for_the_program_alone() -> None:
    """LD_PRELOAD of conda's 9.0 shim and LD_LIBRARY_PATH naming torch's cuDNN wheel in the same profile (fix
    differential 1-958): the app by soname got the preloaded 9.0 shim and the wheel's sub-libraries. Taking the
    wheel's entry away for everyone mended the app and made the venv's torch, which the entry completed, meet the
    9.0 shim alone: a break. The model judges the shell's frameworks in the changed world: the change is made for
    the app alone (``env -u LD_LIBRARY_PATH APP``), the app works, and torch is untouched."""
    _base(draw(1, 958)[1].name)
    verdict = runner.differential(1, 958, ["app", "torch"])
    assert verdict.error is None, verdict.error
    assert verdict.runs["torch"].works and not verdict.runs["app-soname"].works
    soname = [j for j in verdict.judged if j.said.consumer == "app-soname"]
    assert soname and all(j.outcome == runner.FIXED and not j.broke for j in soname), soname
    assert all(a.get("do") == "run" for j in soname for a in j.said.actions), soname


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_shim_reached_through_a_link_into_a_folder_closed_to_the_user_is_opened_and_its_folder_put_first() -> None:
    """nobody's app by soname, LD_LIBRARY_PATH leading to a symbolic link of the shim whose real folder is 0700
    (fix differential 1-594): the mode change alone left ``$ORIGIN`` the link's folder and the app died in
    cudnnGetVersion; with the real folder put first it works, in both forms."""
    _base(draw(1, 594)[1].name)
    _others_can_run_cudnnload()
    verdict = runner.differential(1, 594, ["app"])
    assert verdict.error is None, verdict.error
    soname = [j for j in verdict.judged if j.said.consumer == "app-soname"]
    assert soname and all(j.failing and j.outcome == runner.FIXED for j in soname), soname


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_relative_entry_to_a_partial_copy_with_the_wheel_gone_gets_the_wheel_back_and_its_folder() -> None:
    """``LD_LIBRARY_PATH=lib`` in a profile, ``lib`` a copy of the shim and adv only, the venv's cuDNN wheel
    uninstalled (fix differential 1-747): the repair kept the entry to the copy, as the folder of what the program
    loads, and ended in words. A copy no distribution owns and only a person could complete is no install to keep:
    the entry goes, the wheel comes back into the venv, and the app by soname works in both forms."""
    _fixed_without_breaks(747, ["app"], lambda j: j.said.consumer == "app-soname")


@pytest.mark.slow
@pytest.mark.timeout_s(600)
def test_a_program_a_preload_stops_before_it_starts_is_run_again_without_it_for_what_follows() -> None:
    """LD_PRELOAD of 9.0's ops, which cannot load, and LD_LIBRARY_PATH leading to other folders' cuDNN (fix
    differential 1-586): every program exits 127 before it starts, so ``doctor -- APP`` saw nothing of what it
    loads, and its fix (the preload taken out) left the next cause. It now runs the program again with that change
    made, and one repair of both comes first; applied, the app works in the command form too."""
    _fixed_without_breaks(586, ["app"], lambda j: j.said.form == "command")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_fix_for_a_working_torch_never_puts_back_a_release_its_rules_refuse() -> None:
    """``pip install --target opt/pydeps`` of 9.0 then 9.28 (the folder on PYTHONPATH holds 9.28's files, which
    torch accepts, under 9.0's RECORD), a sub-library deleted and one closed to others (fix differential 1-641):
    torch's calls are predicted to fail, and the fix put 9.0 back as its RECORD says, in the folder torch loads
    from: torch, which worked, failed its version check. A fix that installs a release the framework's rules refuse
    gives way to the framework's own cure (the PYTHONPATH entry out, its pinned wheel whole): nothing breaks."""
    _torch_works_and_nothing_breaks(641)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_fix_that_uninstalls_the_copy_a_working_torch_loads_judges_torch_without_its_files() -> None:
    """torch's own nvidia-cudnn-cu13 uninstalled, a user-site cuDNN 9.0 for CUDA 12 and the jit wheel installed, a
    ``.pth`` line preloading 9.28's graph library (fix differential 1-666): torch works, its calls are predicted to
    fail on the mix, and the repair took the line out and uninstalled the user site's copy, which torch was loading:
    it then found no cuDNN at all. An uninstall is applied to the model (its RECORD's files gone) and the target
    judged again there, so the repair goes on to what torch gets without that copy: nothing breaks."""
    _torch_works_and_nothing_breaks(666)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_whose_search_path_leads_to_another_release_is_restarted_with_the_path_for_it_alone(
        ) -> None:
    """A held ctypes program started with LD_LIBRARY_PATH naming a 9.0 folder, its wheel upgraded to 9.24 under it
    (fix differential 3-3913): the heuristic it loads later would come from 9.0. A restart in the environment it
    started with would mix 9.24 and 9.0 too, and was said in words; the model judges the start with the entry's own
    fix, made for the program alone, and the restart starts it with that search path (``env LD_LIBRARY_PATH=...``):
    it works."""
    _fixed_without_breaks(3913, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_with_strays_of_a_start_up_line_and_of_ld_preload_loses_both_then_restarts() -> None:
    """A held program started with LD_PRELOAD naming 9.28's ops of one folder and a ``.pth`` line mapping 9.0's shim
    of another, its wheel then replaced twice under it (fix differential 3-5529): the first error's fix took out the
    line alone, and the program started again still had the LD_PRELOAD stray. The restart is judged with each thing
    in its way taken away in turn, the line and then the entry, and goes with both."""
    _fixed_without_breaks(5529, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_whose_wheel_was_upgraded_under_it_asked_about_by_its_own_user_is_restarted() -> None:
    """``nobody``'s held program on 9.28, its wheel upgraded to 9.24 under it, asked about by ``nobody`` (fix
    differential 3-5060), who may not read /proc/PID/map_files: no file mapped told the release it runs, and doctor
    found no error. The shim it mapped is another build than the file now at its path (its first mapping is not as
    long): its later loads mix with it, and the restart is the fix."""
    _fixed_without_breaks(5060, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_stray_a_pth_line_mapped_into_a_running_program_goes_with_that_line_though_it_fails_now() -> None:
    """A ``.pth`` line maps 9.28-cuda13's ops from another folder into a held program on its wheel's 9.28; the wheel
    is then put back to 9.0 under it (fix differential 3-3587). Started now, the line fails (that ops needs a 9.28
    graph and finds 9.0's first), so the start-up maps nothing: the stray was said in words ("load ... first").
    The line still names the stray's path: it goes, with the restart; and the stray folder's own install, whose shim
    the program never loaded, no longer gives the first error."""
    _fixed_without_breaks(3587, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_behind_a_damaged_wheel_gets_the_wheel_rewritten_its_start_up_stray_taken_out_and_a_restart(
        ) -> None:
    """A held program on 9.28, its wheel upgraded to 9.24 under it, then a 9.0 shim copied over 9.24's and a
    sitecustomize line mapping 9.0's graph (fix differential 3-4877): the first error, the shim not the file its
    RECORD lists, was fixed by the reinstall alone, and the program went on running 9.28 beside 9.24's
    sub-libraries. The restart goes with the reinstall, and the start-up line that would map 9.0's graph into the
    restarted program goes too: the model judges the start afresh after both."""
    _fixed_without_breaks(4877, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_whose_wheel_another_cuda_majors_wheel_took_away_gets_it_rewritten() -> None:
    """A held program on nvidia-cudnn-cu13 9.28, installed over -cu12 in the same folder; -cu12 then upgraded to 9.0
    and to 8.9.7 under it (fix differential 3-4884): each uninstall of -cu12 took the files -cu13 had written, and
    left -cu13 listed as installed. The put-back of the release the program runs was a plain `pip install`, which
    pip answers "Requirement already satisfied" with nothing written; it rewrites the wheel (--force-reinstall)."""
    _fixed_without_breaks(4884, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_replaced_shim_s_later_loads_are_found_where_the_shim_it_runs_looks_first() -> None:
    """A held program on the cu12 9.28 wheel with a cu13 9.28 folder on LD_LIBRARY_PATH, the wheel downgraded to
    9.0 under it (fix differential 3-15475, "no error found"): the shim it runs (DT_RPATH $ORIGIN) gets 9.0's ops
    from its own folder first; the judge of the disk (9.0's shim, DT_RUNPATH) saw the other folder's. Restarted as
    doctor says, it works."""
    _fixed_without_breaks(15475, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_an_engine_that_needs_the_driver_goes_on_to_a_later_name_that_another_folder_answers() -> None:
    """conda's cu12 9.28 folder first on LD_LIBRARY_PATH before a cu13 9.28 venv whose folder holds
    ``libcudnn_engines_runtime_compiled.so.9.28``, a link to its precompiled engines (fix differential 3-17745, "no
    error found" for the program by name): on this machine without a driver conda's runtime_compiled fails for want
    of libcuda.so.1, graph tries its next name, and the venv's link answers: the process maps the venv's file under
    that name. doctor TARGET says so (``sublibrary-unloadable``); the venv's entry taken off LD_LIBRARY_PATH, the
    program gets one folder's cuDNN."""
    _fixed_without_breaks(17745, ["app"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torch_missing_its_cudnn_9_after_its_preload_glob_failed_on_a_cudnn_8_is_fixed_for_the_9() -> None:
    """cuDNN 8.5 for CUDA 11 installed, torch's cu13 wheel uninstalled, the ``libcudnn.so.8`` made a file of another
    machine (fix differential 3-18279): torch's preload glob fails on that ``.so.8`` by path, then
    ``libtorch_python.so`` misses the ``libcudnn.so.9`` its ImportError names. The command form grouped both misses
    as one and gave the ``.so.8``'s fix (its wheel reinstalled); now each major is its own, the one the program
    printed first, and torch works once its fix is applied."""
    _fixed_without_breaks(18279, ["torch"], lambda j: j.said.consumer == "torch" and j.said.form == "command", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_framework_that_failed_as_predicted_gets_the_repair_the_target_form_gives() -> None:
    """conda's and a system-like cuDNN 9.0 folder on LD_LIBRARY_PATH, torch's cu13 wheel uninstalled, 9.0's shim and
    adv copied into torch/lib (fix differential 3-18293): torch fails as predicted ("compiled against (9, 24, 0) but
    found runtime version (9, 0, 0)"). The command form's first error, torch's own finding, put 9.0 back whole in
    torch/lib, which torch still refuses; the repair judged on torch (the target form's, which installs its wheel)
    comes first now, and torch works once it is applied."""
    _fixed_without_breaks(18293, ["torch"], lambda j: j.said.consumer == "torch" and j.said.form == "command", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_by_name_without_ld_library_path_gets_a_whole_wheel_on_its_path_not_an_unsearched_put_back() -> None:
    """No LD_LIBRARY_PATH (``ldlp-none``), cuBLAS uninstalled, cuDNN 8.9.7 and 9.24 installed into one ``--target``
    folder, the second install taking the first's ``libcudnn.so.9`` (fix differential 3-18637): the app by name
    finds no shim. Its fix put that folder's wheel back, a folder no search of the app's reaches; now the venv's
    whole wheel's folder goes on its path (and cuBLAS back, the repair's next step), and the app works."""
    _fixed_without_breaks(18637, ["app"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_whose_wheel_was_replaced_under_it_is_restarted_where_the_disk_is_whole() -> None:
    """A held ctypes program's wheel replaced by another release while it runs (fix differential 1-801): the
    sub-libraries it loads later would be of the release now on disk. That release is whole there for a start
    afresh, so `doctor --pid` gives the restart as an action, not a `manual` line, and the program started again
    works."""
    _fixed_without_breaks(801, ["app"], lambda j: j.said.form == "pid")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_python_program_stopped_before_it_opened_a_cudnn_is_repaired_for_the_frameworks_it_mapped() -> None:
    """cuDNN 9.0 for CUDA 12 installed over torch's 9.24 wheel and its folder closed to the user (fix differential
    1-867): ``doctor -- python -c 'import torch ...'`` saw torch's import stop with no cuDNN opened, and its fix put
    9.0 back (the folder's distribution), which torch refuses. The repair of the frameworks whose files the run
    mapped comes first (as `doctor --python` gives it): torch's pinned wheel back too."""
    _fixed_without_breaks(867, ["torch"], lambda j: j.said.consumer == "torch")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_path_set_for_torch_that_would_give_programs_by_name_the_jit_wheel_is_set_for_torch_alone() -> None:
    """torch's own cuDNN uninstalled and the JIT wheel installed beside it, a conda env's program linked with
    RUNPATH to its own cuDNN 9.0 (fix differential 1-1278): `doctor --python`'s fix for torch set LD_LIBRARY_PATH to
    the JIT wheel's folder for everyone, which comes before that program's RUNPATH and gave it a cuDNN without ops,
    cnn or adv. The setting is made for torch alone: torch works, the program still does."""
    _fixed_without_breaks(1278, ["app", "torch"], lambda j: j.said.consumer == "torch")



@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_preload_that_completes_programs_by_name_is_taken_away_for_the_program_alone() -> None:
    """LD_PRELOAD of a 9.28 tarball's shim, the venv's cnn deleted (fix differential 1-1311): the app by soname gets
    the preloaded shim, which its own folder completes, and works; doctor's fix for the working torch took the
    preload away for everyone, and the app then got the venv's cuDNN without cnn. A change of LD_PRELOAD after
    which a program asking for the shim by name would see a call fail that succeeds today is made for the program
    alone: nothing breaks."""
    _torch_works_and_nothing_breaks(1311)


@pytest.mark.timeout_s(900)
def test_a_preload_that_masks_a_versioned_name_leading_to_ops_is_taken_away_for_the_program_alone() -> None:
    """LD_PRELOAD of a 9.28 tarball's shim in the profile, the venv's ``libcudnn_adv.so.9.24.0`` linked to its ops,
    a .pth line that loads the tarball's graph (fix differential 1-274, the break of session 16's acceptance run):
    the app by soname gets the preloaded shim and works; doctor's repair for the working torch took the preload
    away for everyone, and the app then got the venv's shim, whose adv name gives ops. The model now has that load
    as it happens (dlopen gives ops; each of adv's calls returns 3009 after "Could not load symbol"), and such an
    install as not whole: programs by name would fare worse, so the preload goes for torch alone."""
    _torch_works_and_nothing_breaks(274)


@pytest.mark.timeout_s(900)
def test_a_preload_that_is_the_only_cudnn_programs_by_name_get_stays_for_them() -> None:
    """As the user nobody: the venv's cuDNN folder closed to them, LD_PRELOAD of a 9.28 tarball's shim in the
    profile, a cuDNN 9.28 for CUDA 12 installed with ``--user`` (fix differential 1-695, the break of session 17's
    acceptance run): torch and the app by soname work through the preload. doctor's fix for torch took the preload
    away for everyone, since programs by name would then get no cuDNN at all (their only other entry is closed to
    them) and "none" was not counted as worse for a preload; the app then failed. Now it is: the preload goes for
    torch alone, the removal for everyone kept as the alternative."""
    _others_can_run_cudnnload()
    _torch_works_and_nothing_breaks(695)


def test_an_engine_name_of_graph_s_that_gives_ops_is_an_error_and_goes(tmp_path: Path) -> None:
    """``libcudnn_engines_runtime_compiled.so.9.24.0``, a name graph tries first, a link to ops (fix differential
    1-1): dlopen gives ops, graph's look-up of the engine's functions fails, and the first finalize returns 1008
    where the intact engine gives 2000 (torch's 9.24, whose engines load without a driver). It was a warning
    ("graph goes on without it"), so no fix took it away; now the prediction has the load fail as it does, the
    finding is an error, and its fix deletes the name: the real app then gets 2000 again."""
    from fixtures.scenarios.layouts import built

    wheel = bases.built(_base("torch")) / "lib" / "python3.11" / "site-packages" / "nvidia"
    lib = tmp_path / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for path in (wheel / "cudnn" / "lib").iterdir():
        (lib / path.name).symlink_to(path)
    (tmp_path / "nvidia" / "cu13").symlink_to(wheel / "cu13")
    name = lib / "libcudnn_engines_runtime_compiled.so.9.24.0"
    name.symlink_to("libcudnn_ops.so.9")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    step = "finalize:cudnnBackendFinalize"

    def finalize() -> str:
        # (what cuDNN prints on the way may hold bytes that are no UTF-8: once, a UnicodeDecodeError here)
        ran = subprocess.run([str(built("app")), str(lib / "libcudnn.so.9"), step], capture_output=True, text=True,
                             errors="replace", env=env, timeout=120, check=False)
        return next((line.split()[-1] for line in ran.stdout.splitlines() if line.startswith(f"end {step}")), "")

    assert finalize() == "status=1008"
    said = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", str(lib / "libcudnn.so.9")],
                          env={**env, "PYTHONPATH": str(ROOT), "CUDNNLOAD_CACHE": str(tmp_path / "cache")},
                          capture_output=True, text=True, timeout=300, check=False)
    findings = json.loads(said.stdout)["result"]["findings"]
    mismatch = next(f for f in findings if f["code"] == "soname-mismatch")
    assert mismatch["severity"] == "error" and mismatch["fix"]["actions"] == [{"do": "delete", "path": str(name)}]
    assert "1008" in json.dumps(mismatch.get("consequences")), mismatch  # what the app sees, predicted
    name.unlink()
    assert finalize() == "status=2000"


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_an_entry_that_completes_a_linked_shim_is_taken_away_for_the_program_alone() -> None:
    """``pip install --target`` twice, the venv's shim linked into a folder put first on LD_LIBRARY_PATH (fix
    differential 1-1412): programs by name get the link, whose ``$ORIGIN`` holds nothing else, and its
    sub-libraries through the venv's entry further on. Taking that entry away for everyone (doctor's fix for
    torch) left them a shim without sub-libraries; it is made for the program alone."""
    _torch_works_and_nothing_breaks(1412)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_release_the_framework_refuses_is_not_put_back_under_the_record_that_wrote_over_its_wheel() -> None:
    """nvidia-cudnn-cu12 9.0 installed over torch's cu13 9.24 wheel (both write nvidia/cudnn/lib), part of it
    uninstalled, 9.0 twice into a --target folder on PYTHONPATH (fix differential 1-1447): the repair took the
    PYTHONPATH entry out, then put back 9.0, the folder's RECORD owner, which torch refuses. A fix that installs a
    release the framework's rules refuse installs the wheel the framework pins instead: torch works."""
    _fixed_without_breaks(1447, ["torch"], lambda j: j.said.consumer == "torch")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_bare_soname_preload_that_an_entry_removed_would_point_at_a_partial_copy_is_judged_in_that_world() -> None:
    """``LD_PRELOAD=libcudnn.so.9`` found through a 9.28 tarball's folder first on LD_LIBRARY_PATH, a copy of the
    venv's shim alone in a folder after it (fix differential 2-2936, seed 2's held-out break of the eleventh
    session). The app by path maps the preloaded 9.28 shim and its own: both forms took the 9.28 folder away. For
    everyone, that left programs by name the preload found again through the copy, sub-libraries from the venv: no
    longer whole from one folder (a break); in the command form, the repair was judged for the preloaded shim, as
    the program's own (a bare name was not read as a preload), and the copy it then preloads went unseen. A shim a
    bare-name preload found is the preload's; programs by name that would no longer load whole are worse off; and
    the app, both forms, works with nothing broken."""
    _fixed_without_breaks(2936, ["app"], lambda j: j.said.consumer == "app-path", seed=2)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_path_the_program_could_not_open_beside_a_preloaded_shim_is_the_program_s_own_failure() -> None:
    """nobody's app opening the venv's shim by path, its folder 0700 and its shim another machine's, a 9.0 tarball's
    shim in LD_PRELOAD (fix differential 1-3074): the dlopen failed (Permission denied) while the preloaded shim was
    mapped, and `doctor -- APP` took that shim for the one the program asked for: "nothing in cuDNN's loading
    explains it". A path the program asked for is served by that file alone; its failed request (the linker's
    ``file=PATH; dynamically loaded by`` without a link map) gets doctor's fix for that path, which works."""
    _fixed_without_breaks(3074, ["app"], lambda j: j.said.consumer == "app-path")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_shim_of_another_machine_reached_only_through_a_link_is_put_back_with_its_folder_first() -> None:
    """cuDNN 8.9.7 for CUDA 12 installed over the venv's 9.x, its shim then another machine's, LD_LIBRARY_PATH at
    last only a folder of a link to that shim (fix differential 1-3052): programs by name got `pip install
    'nvidia-cudnn-cu13>=9,<10'`, which pip finds installed and leaves as it is. A link on the search path leads to
    the wheel it is of: its shim passed over is the wheel put back, and its folder put first (the link's $ORIGIN is
    the link's folder, where the sub-libraries are not): the app works both ways."""
    _fixed_without_breaks(3052, ["app"], lambda j: j.said.consumer == "app-soname")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_framework_s_shim_the_loader_passes_over_is_its_wheel_put_back_not_its_folder_put_on_the_path() -> None:
    """torch's wheel with another machine's shim and a truncated heuristic, a relative ``lib`` entry before it on
    LD_LIBRARY_PATH giving a 9.0 copy (fix differential 1-3158): `doctor --python`'s repair set LD_LIBRARY_PATH to
    the wheel's own folder, twice (its shim "on sys.path, not reached by torch's search"), and torch then found no
    cuDNN at all. A folder whose shim the loader cannot map is no place to point a framework at: its pinned wheel
    is put back, then the 9.0 copy is taken away from torch: torch works and nothing breaks."""
    _fixed_without_breaks(3158, ["app", "torch"], lambda j: j.said.consumer == "torch" and j.said.form == "target")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_folder_closed_to_the_user_is_put_back_without_the_names_its_shim_tries_first() -> None:
    """nobody's app opening the 9.28 wheel's shim by path, the wheel's folder 0700, a link by hand
    ``libcudnn_adv.so.9.28`` in it to a 9.0 tarball's adv, a conda program linked with ``$ORIGIN/../lib`` working
    (fix differential 2-3161, seed 2's held-out break of the twelfth session): the fix opened the folder and
    reinstalled the wheel, which rewrites what RECORD lists and leaves the link, so the app mapped 9.0's adv and the
    conda program, now reaching the venv through LD_LIBRARY_PATH, failed too. The names the shim tries before its
    own files that no wheel ships go with the reinstall, where they are there: the app works and nothing breaks."""
    _fixed_without_breaks(3161, ["app"], lambda j: j.said.consumer.startswith("app"), seed=2)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_link_on_the_path_into_a_folder_the_fix_opens_is_taken_away_for_everyone() -> None:
    """nobody's venv folder 0700, a link to its shim alone on LD_LIBRARY_PATH before a conda env's 9.0 folder (fix
    differential 1-1342): programs by name got conda's cuDNN (the link leads nowhere they can go). The fix for the
    app by path, and torch's reinstall (pip writes the folder anew, 0755), opened the folder: the link then gave
    them the 9.24 shim with $ORIGIN the link's folder, and conda's sub-libraries beside it. The link's entry, which
    serves nobody today, goes for everyone with the fix: the app and torch work and nothing breaks."""
    _fixed_without_breaks(1342, ["app", "torch"], lambda j: j.said.consumer in ("app-path", "torch"))


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_put_back_behind_a_start_up_file_that_maps_another_graph_loses_that_line_too() -> None:
    """torch's wheel with a truncated adv and another machine's shim, and a ``sitecustomize`` line mapping a 9.0
    tarball's graph with RTLD_GLOBAL (fix differential 1-3165): the repair put the wheel back, and torch then got
    9.0's graph through the name the start-up had taken (cuDNN version incompatibility); the target form began
    with words ("make one of them whole"). What a wheel put back meets at the interpreter's start-up goes with it
    (the line taken out), in both forms, and a finding that only sums up others comes after them."""
    _fixed_without_breaks(3165, ["app", "torch"], lambda j: j.said.consumer == "torch")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_whose_wheel_was_uninstalled_under_it_gets_its_release_back() -> None:
    """A held ctypes program running the 9.28 wheel's shim and graph, then 9.0 installed over it and the wheel
    uninstalled (fix differential 1-1308): nothing of the folder was left on disk to judge, so `doctor --pid`
    found no error while every later load of the shim (ops, cnn, adv) would find nothing. Searched from the shim's
    path as opened, they are missing; the release it runs goes back into its site, and the program works."""
    _fixed_without_breaks(1308, ["app"], lambda j: j.said.form == "pid")


@pytest.mark.slow
@pytest.mark.timeout_s(600)
@pytest.mark.parametrize("how", ["copied", "linked"])
def test_a_cudnn_in_the_folder_python_is_run_from_goes_for_torch(tmp_path: Path, how: str) -> None:
    """The real PyTorch run with ``python -c`` from a folder that holds an older cuDNN as nvidia/cudnn/lib (copied
    there, or a link to another cuDNN's folder): Python puts that folder first on sys.path, torch's preload takes
    it, and stops ("cuDNN version incompatibility"; the H200's cwd-holds-older-nvidia-cudnn composition, where
    doctor asked to reinstall the wheel torch already had, or to "put back the complete cuDNN 9.14.0" of the copy).
    No setting takes the program's own folder off sys.path without its modules: the copy's files go, or the link
    (never the files it leads to), in both forms, and torch runs."""
    base = _base("torch")
    python = str(base.folder() / "bin" / "python")
    wheel = bases.store_wheel("nvidia-cudnn-cu12", "9.0.0.312")
    assert wheel is not None
    older = unpacked_wheel(wheel) / "nvidia" / "cudnn" / "lib"
    here = tmp_path / "project"
    lib = here / "nvidia" / "cudnn" / "lib"
    if how == "copied":
        shutil.copytree(older, lib)
    else:
        lib.parent.mkdir(parents=True)
        lib.symlink_to(older)
    kept = sorted(os.listdir(older))
    code = "import torch; print(torch.backends.cudnn.version())"
    env = {**{k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH")},
           "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    ran = subprocess.run([python, "-c", code], cwd=here, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode != 0 and "cuDNN version incompatibility" in ran.stderr, ran.stderr[-500:]
    tool = {**env, "PYTHONPATH": str(ROOT)}
    for options in (["--python", python], ["--", python, "-c", code]):
        said = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", *options], cwd=here, env=tool,
                              capture_output=True, text=True, timeout=300)
        result = json.loads(said.stdout)["result"]
        first = next(f for f in result["findings"] if f["severity"] == "error")
        assert first["code"] == "consumer-runtime-older-than-build", first
        [action] = first["fix"]["actions"]
        assert action["do"] == "delete" and action["path"] == str(lib), action
        assert ("libcudnn.so.9" in action["names"]) if how == "copied" else "names" not in action, action
    if how == "copied":
        for name in action["names"]:
            (lib / name).unlink(missing_ok=True)
    else:
        lib.unlink()  # the link itself, as the contract's delete of a path does
    ran = subprocess.run([python, "-c", code], cwd=here, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and ran.stdout.strip() == "92400", ran.stderr[-500:]
    assert sorted(os.listdir(older)) == kept


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_working_process_whose_shim_was_replaced_under_it_is_no_error() -> None:
    """A held ctypes program running the 9.28 wheel's shim with 9.28's graph from an LD_LIBRARY_PATH folder, then
    9.0 installed over the wheel (fix differential 1-3196): the process works, and `doctor --pid` said
    `mixed-release` and `mixed-in-process` errors, judging the wheel's folder as the disk holds it now and the
    replaced shim's folder as a second one. The shim carries no release: what the process runs is told by the
    graph it mapped. What a restart would mix is a warning; the process is quiet, and nothing else changes."""
    _base(draw(1, 3196)[1].name)
    verdict = runner.differential(1, 3196, ["app"])
    assert verdict.error is None, verdict.error
    held = [j for j in verdict.judged if j.said.consumer == "held"]
    assert verdict.runs["held"].works and [(j.said.form, j.outcome) for j in held] == [("pid", runner.QUIET)]
    assert not [j for j in verdict.judged if j.broke]


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_repair_never_reinstalls_after_it_another_major_of_the_distribution_it_put_back() -> None:
    """cuDNN 8.9.7 installed over the 9.28 wheel of the same nvidia-cudnn-cu12, one of its links dangling (fix
    differential 1-3110): the repair put cuDNN 9 back for the app, then reinstalled 8.9.7 for the dangling link,
    and pip, keeping one version of a project, took cuDNN 9 away again. A later install that would swap back the
    distribution an earlier step put there goes; the app works both ways."""
    _fixed_without_breaks(3110, ["app"], lambda j: j.said.consumer == "app-path")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_put_back_over_a_stray_versioned_name_loses_that_name() -> None:
    """A link by hand ``libcudnn_ext.so.9.28.0`` in the 9.28 wheel's folder, then 8.9.7 installed over the wheel (fix
    differential 1-1160): the wheel put back opened the stray name (its shim tries ``X.so.9.28.0`` first), as no
    finding about the 8.9.7 install could say. Names a cuDNN 9 shim or graph tries before its own files that no
    distribution of the site ships go with the install: every program works."""
    _fixed_without_breaks(1160, ["app"], lambda j: j.said.consumer in ("app-path", "app-soname"))


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_link_into_a_folder_closed_to_the_user_leads_to_the_distribution_it_is_of() -> None:
    """nobody's app asking for the shim by name through a link on LD_LIBRARY_PATH into the venv's folder, closed to
    them, where a link by hand ``libcudnn_graph.so.9.28.0`` leads to another release (fix differential 1-1145): the
    fix opened the folder and put it first, but found no distribution for the link (which no RECORD lists), so the
    wheel was not put back and the stray name stayed. The link's distribution is its target's: it is put back
    without the names its shim tries first, and the app works both ways."""
    _fixed_without_breaks(1145, ["app"], lambda j: j.said.consumer == "app-soname")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_framework_whose_pinned_wheel_s_folder_is_closed_to_the_user_gets_it_opened_not_only_reinstalled() -> None:
    """nobody's torch, its pinned wheel's folder 0700, cuDNN 8.9.7 for CUDA 12 installed beside it and a link to the
    shim alone on LD_LIBRARY_PATH (fix differential 1-1331): torch's preload by path passes over the folder, so
    torch finds no cuDNN; its fix reinstalled the pinned wheel, which leaves the folder's mode as it was. The route
    records the wheel folder its search could not enter (`routes.Closed`), and the fix opens it as well: torch works
    in both forms, and nothing breaks."""
    _fixed_without_breaks(1331, ["app", "torch"], lambda j: j.said.consumer == "torch")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_path_set_for_everyone_that_would_stop_every_start_beside_a_kept_preload_goes_with_the_program() -> None:
    """A 9.0 ops on LD_PRELOAD (its graph from its own RUNPATH), a link to the 9.28 shim alone on LD_LIBRARY_PATH
    (fix differential 1-2957): the fix for the app by name set the wheel's folder first for everyone and took the
    preload away for the program alone (programs by name get their cuDNN through it). With the preload kept for
    everyone and the wheel's graph first on the path, the preload binds 9.28's graph and every program, the
    ``env`` wrapper included, stops at start (symbol lookup error, exit 127). The model sees that start stop
    (`process.Preload.stops_start`): the setting goes into the program's own wrapper too, and the app works."""
    _fixed_without_breaks(2957, ["app"], lambda j: j.said.consumer == "app-soname")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_requirement_a_wheel_put_back_lacks_lands_in_its_site_though_pythonpath_holds_one() -> None:
    """The 9.28 wheel's shim gone, nvidia-cublas uninstalled, 9.24 installed with ``--target`` into a folder on
    PYTHONPATH, and a link to the shim alone on LD_LIBRARY_PATH (fix differential 1-1367): the repair for the app by
    name ran ``pip install nvidia-cublas``, which the ``--target`` copy satisfied, so nothing landed in the venv and
    the engines aborted in the heuristic. It lands there, of the wheel's CUDA major: the app works both ways."""
    _fixed_without_breaks(1367, ["app"], lambda j: j.said.consumer == "app-soname")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_sub_library_of_another_build_preloaded_beside_a_whole_conda_cudnn_is_taken_away() -> None:
    """A conda env's 9.28 on LD_LIBRARY_PATH, the CUDA 13 build's ``libcudnn_ops.so.9`` on LD_PRELOAD (fix
    differential 1-1436): conda's shim loads its own ``libcudnn_ops.so.9.28.0`` and the preloaded ops stays beside
    it, so the app by name maps cuDNN from two folders. The target form found no error; it now says
    mixed-in-process with the entry taken away, and the app works both ways."""
    _fixed_without_breaks(1436, ["app"], lambda j: j.said.consumer == "app-soname")


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_closed_folder_holding_another_generation_gets_the_one_the_program_asks_for() -> None:
    """8.9.7 installed over the 9.28 wheel, its ``libcudnn.so.8`` another machine's, and the wheel's folder closed to
    nobody (fix differential 1-3212): the app asks for ``libcudnn.so.9`` there, by path and by name; the fix opened the
    folder and put 8.9.7 back, which has none. It installs cuDNN 9 of the wheel's CUDA instead: the app works both
    ways."""
    _fixed_without_breaks(3212, ["app"], lambda j: j.said.consumer.startswith("app"))


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_sub_library_unreadable_and_cut_short_is_opened_only_with_its_wheel_put_back() -> None:
    """The wheel's ``libcudnn_engines_runtime_compiled.so.9`` 0600 to nobody and cut to 4096 bytes, a link to the
    shim alone on LD_LIBRARY_PATH, 9.24 in a ``--target`` folder (fix differential 2-3677, the held-out break of
    the fourteenth session's slice): both apps work (the file cannot be opened, and cuDNN goes on without it); the
    fix opened it alone, and every program then died mapping the cut file. The mode change no longer counts as
    mending what the file holds: the wheel is put back with it, and nothing breaks."""
    _nothing_breaks(2, 3677, ["app"], base=draw(2, 3677)[1])


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_stray_name_deleted_reveals_the_wheels_own_file_and_what_it_lacks() -> None:
    """cuBLAS 13 uninstalled, 8.9.7 installed beside the CUDA 13 wheel, and a stray ``libcudnn_engines_precompiled
    .so.9.28.0`` to the CUDA 12 build's (fix differential 2-3639): the fix deleted the stray name, and the wheel's own
    engines then aborted for want of cuBLAS 13. A delete is applied to the model's world like an uninstall, so the
    repair sees what the name's opener gets next: cuBLAS 13 goes with it, and the app works both ways."""
    _fixed_without_breaks(3639, ["app"], lambda j: j.said.consumer.startswith("app"), seed=2)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_removal_that_the_repair_s_setting_writes_over_is_judged_in_the_world_the_whole_repair_makes() -> None:
    """The venv's shim linked into a folder on LD_LIBRARY_PATH, a copy of the shim and graph alone in a folder put
    before it (seed 3's 3-19, the first fresh seed at main's code): the repair took that folder out, then set
    LD_LIBRARY_PATH to the wheel's folder and the link's. The removal, judged alone, left programs by name the link
    without its sub-libraries, so it was made for the program alone, with ``env LD_LIBRARY_PATH=<links>`` written
    from today's value, which undid the setting before it. Judged in the world the whole repair makes, it takes
    nothing from them; the app by name works with nothing broken."""
    _fixed_without_breaks(19, ["app"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_without_its_tensor_ir_engines_is_not_whole_behind_a_link_either() -> None:
    """torch's 9.24 wheel without libcudnn_engines_tensor_ir.so.9, its shim linked into a folder on LD_LIBRARY_PATH
    and copied alone into one before it (seed 3's 3-20): the model took tensor_ir for optional, so the link's cuDNN
    was "whole" and the fix took the copy's folder away only. graph names it and cudnnBackendFinalize needs it: the
    repair puts the wheel back, and the app by name and by path works with nothing broken."""
    _fixed_without_breaks(20, ["app", "torch"], lambda j: j.said.consumer.startswith("app"), seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torch_under_a_preloaded_link_to_its_own_shim_gets_the_links_folder_and_its_fix() -> None:
    """LD_PRELOAD=libcudnn.so.9 finds, on LD_LIBRARY_PATH, a link in another folder to torch's own wheel shim (fix
    differential 3-4894): the same file, so torch's open of its shim gets that object back, whose $ORIGIN is the
    link's folder, where no sub-library is; every cuDNN call aborts. `doctor --python` said torch was not reached
    by it ("the same file") and found no error; it is torch's cuDNN, and the fix makes torch work."""
    _fixed_without_breaks(4894, ["torch"], lambda j: j.said.consumer == "torch" and j.said.form == "target", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_truncated_shim_reached_through_a_link_is_put_back_and_its_own_folder_put_first() -> None:
    """LD_LIBRARY_PATH holds a link in another folder to the wheel's shim, the shim is cut short and another
    release's sub-library is preloaded (fix differential 3-6243). The fix for a program by name put the wheel back
    and then ran it without LD_LIBRARY_PATH, which left it no cuDNN at all: the shim, once whole, is still reached
    through the link, whose $ORIGIN holds no sub-library. Its own folder goes first and the stray preload goes, and
    the program works."""
    _fixed_without_breaks(6243, ["app"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_preload_that_stops_every_start_goes_for_everyone_not_through_env() -> None:
    """A 9.0 ops preloaded before torch's 9.24 folder stops every program, `env` included (fix differential
    3-6399). The fix for the app ran it as "env -u LD_PRELOAD app", which exited 127 like the rest; the entry's
    removal, for everyone, makes every program of the case work."""
    _fixed_without_breaks(6399, ["app", "torch"], lambda j: True, seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_setting_that_leaves_out_the_wheels_folder_breaks_no_program_by_name() -> None:
    """A conda program that works, asked about anyway (fix differential 3-7265): its fix set LD_LIBRARY_PATH to a
    relative entry made absolute, leaving out the wheel's folder, where the app by name got its cuDNN, and broke
    it. The setting is now made for that program alone: no program that worked fails after any fix."""
    _nothing_breaks(3, 7265, ["app"])


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torch_whose_wheel_was_partly_uninstalled_beside_the_jit_wheel_gets_its_wheel_back() -> None:
    """torch's cuDNN wheel partly uninstalled, the JIT wheel beside it, LD_LIBRARY_PATH only a link folder (fix
    differential 3-6756): torch was pointed at the JIT wheel's folder, and the repair ended as "export
    LD_LIBRARY_PATH=<its own value>". Its wheel is put back, and torch works."""
    _fixed_without_breaks(6756, ["torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_folder_put_back_for_a_program_by_name_is_put_back_even_where_pip_sees_it_elsewhere() -> None:
    """The cuDNN 12 wheel uninstalled from the venv whose folder LD_LIBRARY_PATH names, the CUDA 13 one installed
    with --user (fix differential 3-7507): the fix installed it into the venv without --force-reinstall, and pip,
    seeing it in the user's site, put nothing there. It is put back as a gone wheel is (`which.wheel_put_back`),
    and the app by name works."""
    _fixed_without_breaks(7507, ["app"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_by_name_is_given_back_the_wheel_folder_it_searches_not_a_site_it_does_not() -> None:
    """Two cuDNN wheels installed twice into one --target folder on PYTHONPATH, the venv's wheel uninstalled (fix
    differential 3-7505): for the app by name, the fix reinstalled the --target folder's wheels, which it never
    searches. A program of no Python is given back the wheel of the folder it is pointed at, and works."""
    _fixed_without_breaks(7505, ["app", "torch"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_an_unreadable_wheel_file_is_made_readable_and_its_wheel_put_back() -> None:
    """torch's wheel's libcudnn_ops.so.9 closed to the program's user and replaced by an aarch64 build of the same
    size (fix differential 3-7558): the fix made it readable only, and the program by path still failed. What a file
    this user cannot read holds is unknown here: its wheel is put back too, and the program works."""
    _fixed_without_breaks(7558, ["app", "torch"], lambda j: j.said.consumer == "app-path", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_scoped_setting_brings_the_missing_dependency_of_the_install_it_keeps() -> None:
    """A working conda program by path, a relative ./lib entry of cuDNN 9.0 files before the venv's cuDNN 12
    folder, whose cuBLAS 12 is missing (`pip install --no-deps`; fix differential 3-7483): the repair took ./lib out
    and said the cuBLAS install only as a later step (its finding's first fix would take out the folder the program
    is meant to load), and the program then aborted. The finding's alternative that keeps that folder, the cuBLAS
    installed, is planned: nothing that worked fails after the fix."""
    _nothing_breaks(3, 7483, ["app", "torch"])


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_run_gets_the_whole_repair_when_it_sets_the_variable_its_own_way_and_goes_further() -> None:
    """The venv's cuBLAS uninstalled and two of its cuDNN sub-libraries gone, the shim reached through a symlink
    folder first on LD_LIBRARY_PATH (fix differential 3-7698): for the app by name, run, the first error's fix
    (the cuBLAS, LD_LIBRARY_PATH set) left the cuDNN incomplete, and the model's whole repair, which puts the cuDNN
    wheel back too, was not said first because it set LD_LIBRARY_PATH to another order of the same folders. A
    plan that sets the same variable (its value judged on the model) and goes on comes first; the app works."""
    _fixed_without_breaks(7698, ["app"], lambda j: j.said.consumer == "app-soname", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_run_by_path_beside_a_relative_entry_gets_the_whole_repair() -> None:
    """A complete cuDNN 9.28 under a relative ./lib entry first, a sub-library link of the venv's cuDNN dangling,
    LD_PRELOAD=libcudnn.so.9 (fix differential 3-7204): for the app by path, run, the first error's fix kept
    ./lib first and the process still mapped cuDNN from two folders; the model's whole repair comes first, and the
    app works."""
    _fixed_without_breaks(7204, ["app"], lambda j: j.said.consumer == "app-path", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torch_on_a_partial_copy_in_torch_lib_after_its_wheel_went_gets_its_pinned_wheel_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The venv's cuDNN wheel uninstalled, then 9.28's shim, cnn and runtime-compiled engines copied into torch/lib
    (fix differential 10-32, `bench/fixdiff_targeted.py --seed 10`): libtorch_cuda.so's RPATH ends in ``$ORIGIN``,
    so torch takes that shim and dies ("Invalid handle. Cannot load symbol cudnnGetVersion"). The copy's own fix is
    a person's ("put back the complete cuDNN 9 in torch/lib"); the wheel torch pins, which its RPATH finds first,
    is the fix now, and applied, torch runs (before: only manual, in both forms)."""
    _chosen_verbs(monkeypatch, "torch", "pip-uninstall-cudnn", "copy-into-torch-lib")
    verdict = runner.differential(10, 32, ["torch"])
    assert verdict.error is None, verdict.error
    assert not verdict.runs["torch"].works
    assert any("Invalid handle. Cannot load symbol cudnnGetVersion" in line for line in verdict.runs["torch"].output), \
        verdict.runs["torch"]
    judged = {j.said.form: j for j in verdict.judged if j.said.consumer == "torch"}
    assert set(judged) == {"target", "command"}, judged
    assert all(j.outcome == runner.FIXED for j in judged.values()), judged


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torch_without_ld_library_path_and_its_wheel_gets_it_installed_into_its_venv(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No LD_LIBRARY_PATH (``ldlp-none``, most users' shells) and torch's cuDNN wheel uninstalled: its import stops at
    ``libcudnn.so.9``, which ``libtorch_python.so`` looked for in vain through its RUNPATH into the venv. The command
    form said "a program that is no Python's": install the wheel into a folder of its own with another Python and
    put it on LD_LIBRARY_PATH; the venv whose site-packages that search looks in gets it now (its ``pip install``),
    and applied, torch runs."""
    _chosen_verbs(monkeypatch, "torch", "ldlp-none", "pip-uninstall-cudnn")
    verdict = runner.differential(13, 0, ["torch"])
    assert verdict.error is None, verdict.error
    assert not verdict.runs["torch"].works
    [command] = [j for j in verdict.judged if j.said.consumer == "torch" and j.said.form == "command"]
    assert command.outcome == runner.FIXED, command
    assert "--target" not in command.said.text and "LD_LIBRARY_PATH" not in command.said.text, command.said.text


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_folder_put_on_the_path_for_a_program_by_name_spares_another_wheel_loaded_by_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No LD_LIBRARY_PATH, torch's cu13 9.24 wheel in the venv and 9.28 installed with ``pip install --target`` on
    PYTHONPATH (`bench/fixdiff_targeted.py --seed 13`, case 13-7): the app by name finds no shim, and its fix put the
    9.28 folder on LD_LIBRARY_PATH for everyone, which hands its sub-libraries to the venv's 9.24 shim the app by path
    opens (LD_LIBRARY_PATH comes before the shim's own folder): that app broke. The setting is made for the program by
    name alone (``env LD_LIBRARY_PATH=...``), the setting for everyone the alternative: the app by name works, and
    nothing breaks."""
    _chosen_verbs(monkeypatch, "torch", "ldlp-none", "pip-install-target")
    verdict = runner.differential(13, 7, ["app", "torch"])
    assert verdict.error is None, verdict.error
    judged = [j for j in verdict.judged if j.said.consumer == "app-soname"]
    assert judged and all(j.failing and j.outcome == runner.FIXED and not j.broke for j in judged), judged
    assert not any(j.broke for j in verdict.judged), verdict.judged


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_that_needs_the_shim_a_preload_answers_is_judged_as_the_program() -> None:
    """A conda program (RPATH $ORIGIN/../lib) whose NEEDED libcudnn.so.9 a preloaded wheel shim answers (fix
    differential 3-12341): the shim has an RPATH of its own, so glibc searches the program's RPATH for its
    dlopens too, and the process maps the conda folder's sub-libraries beside it. `doctor -- PROGRAM` judged the
    bare name, without the program, and its repair took LD_LIBRARY_PATH's entry away: the process still mixed two
    folders. The program is judged now, as `doctor PROGRAM` judges it: the preload goes, and it works."""
    _fixed_without_breaks(12341, ["app"], lambda j: j.said.consumer == "program", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torchs_interpreter_that_dies_in_a_pth_line_gets_a_repair_in_both_forms() -> None:
    """A `.pth` import line dlopens another folder's ops, whose NEEDED graph LD_LIBRARY_PATH answers with the venv's
    graph cut short (fix differential 2-2034): every start of torch's Python dies of SIGBUS in that line.
    `doctor --python` refused it ("not a Python interpreter that answers") and `doctor -- python ...` had no change
    to offer. Both now judge it without that line: the line out, the wheel put back, and torch works."""
    _fixed_without_breaks(2034, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=2)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_on_a_graph_from_elsewhere_whose_wheel_was_replaced_under_it_is_restarted() -> None:
    """A held program on the 9.28 wheel's shim and, through a link by hand, a 9.24 tarball's graph; 9.0 then
    installed over the wheel (fix differential 3-13672): its later version checks fail (3009). The first error, a
    library 9.24's graph would dlopen that its own RUNPATH does not reach, had "load the folder's cuDNN before the
    one already in the process" in words: a restart is the fix, the model proving 9.0 whole for a start afresh."""
    _fixed_without_breaks(13672, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_of_nobody_whose_wheel_was_replaced_by_another_major_gets_it_back_then_restarts() -> None:
    """A program held as nobody on the 9.28 wheel, the wheel replaced under it by 9.0, then by 8.9.7 (fix
    differential 3-30102): its shim and graph are gone from disk, and their maps are readable by root alone, so
    `--pid` judged nothing ("no error found") though its later version checks return 3009. A wheel's shim searches
    as every cuDNN wheel's does ($ORIGIN), so its sub-libraries are found nowhere: the wheel of its major is put back
    for the CUDA of its site, the relative entry goes, and the program, whose release nobody can read, restarts."""
    _fixed_without_breaks(30102, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_sitecustomize_line_that_no_longer_maps_its_stray_still_goes_before_the_restart() -> None:
    """A program held on the 9.28 wheel with 9.28 cu13's ops mapped by a sitecustomize line, then 9.0 installed
    under it (fix differential 3-18975): the line now fails (the ops needs a graph the disk no longer holds), so the
    start-up maps nothing of it, and `--pid` said "restart the process" in words only. A sitecustomize line that
    names the stray by its path goes, as a .pth line that names it does, then the restart: the program works."""
    _fixed_without_breaks(18975, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_preloaded_ops_bound_to_another_graph_returns_1002_and_is_an_error_of_the_run() -> None:
    """9.0 installed over the wheel with ``--no-deps``, 9.24's ops in LD_PRELOAD, bound at start to 9.0's graph
    through LD_LIBRARY_PATH (fix differential 3-18920): the model failed that ops' load on the symbols 9.0's graph
    lacks, and predicted an abort at cudnnOpsVersionCheck; the program ran to its end, its checks returning 1002,
    and `doctor -- PROGRAM`, seeing no abort, made every finding a warning "not hit by this run". An object already
    in the process loaded when it was mapped: its checks return 1002, the run shows no contradiction, and the fix
    (the preload gone) makes the program work, in both forms."""
    _fixed_without_breaks(18920, ["app"], lambda j: j.said.consumer == "app-path", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_upgraded_to_a_cudnn_whose_cublas_never_came_gets_it_installed_then_restarts() -> None:
    """A program held on the 9.28 wheel, the wheel replaced under it by 9.0, then by cu13 9.24 with ``--no-deps`` (so
    no cuBLAS 13), a sitecustomize line loading 9.28's graph by path (fix differential 3-18899): its later version
    checks fail. `--pid` said "restart the process, once cuDNN dlopens libcublasLt.so.13 and it would not be found",
    in words only: the restart alone would stop there. The missing library's wheel is what pip writes into the
    site, the line is taken out of the start, and the restart follows: the program works."""
    _fixed_without_breaks(18899, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_running_program_behind_a_relative_entry_of_another_release_loses_the_entry_then_restarts() -> None:
    """A relative ``lib`` entry first on LD_LIBRARY_PATH holding 9.24's adv, then the program's wheel replaced by 9.0
    under it (fix differential 3-14550): untrusted-library, the first error for the running program, wrote the entry
    as its absolute folder (what loads stays what loads), and the restart kept 9.24's adv in front of 9.0's shim.
    Where another error's fix takes that entry away (here mixed-release's), untrusted-library's does too: the entry
    goes, the program restarts, and it works."""
    _fixed_without_breaks(14550, ["app"], lambda j: j.said.form == "pid", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_put_back_into_a_venv_that_sees_it_in_the_user_site_is_installed_there_anyway() -> None:
    """A venv with the system's site-packages (so the user site too) whose cuDNN wheel was uninstalled and a 9.0
    shim copied into its folder, nvidia-cudnn-cu13 9.28 in the user site (fix differential 3-14662): doctor's
    `python -m pip install 'nvidia-cudnn-cu13>=9,<10'` was "already satisfied" by the user site's wheel and put
    nothing into the venv. pip is told to ignore what it finds elsewhere, and the program works."""
    _fixed_without_breaks(14662, ["app"], lambda j: j.said.form in ("target", "command"), seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_preload_of_the_framework_s_own_file_is_not_what_gave_it_the_wrong_release() -> None:
    """LD_PRELOAD=libcudnn.so.9, found through LD_LIBRARY_PATH in torch's own wheel folder, which
    nvidia-cudnn-cu12 9.0 had overwritten (fix differential 3-15160): `doctor -- PROGRAM` judged torch's older
    runtime as the preload's and fixed it by running without the entry, which changed nothing. The preload is the
    very file torch's loader opens; the pinned wheel put back is the fix, and torch works."""
    _fixed_without_breaks(15160, ["torch"], lambda j: j.said.form == "command" and j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_preload_kept_for_everyone_never_meets_the_wheel_the_fix_puts_back_on_ld_library_path() -> None:
    """LD_PRELOAD of 9.0's ops, the venv's cuDNN folder on LD_LIBRARY_PATH with its graph a dangling link, 9.0 in a
    folder on PYTHONPATH (fix differential 3-16229): torch's repair put the venv's 9.24 back into that folder and
    kept the preload and the folder for everyone, each taken away for torch alone (`env -u LD_PRELOAD`, `env -u
    LD_LIBRARY_PATH`). The preloaded ops then bound 9.24's graph first: every program stopped at start, `env`
    too. The preload now goes for everyone where the fix puts a wheel back into an entry kept for everyone; torch
    and both apps work, in both forms, and nothing breaks."""
    _fixed_without_breaks(16229, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_the_shim_s_graph_is_the_first_one_mapped_not_the_last_of_its_name() -> None:
    """LD_PRELOAD of libcudnn_graph.so.9 found through LD_LIBRARY_PATH in a venv whose cu13 9.24 wheel a cu12 9.0 one
    overwrote, then a .pth line loading 9.28's graph by path (fix differential 3-16231): the shim got the preloaded
    9.0 graph (glibc hands out the first object of a name in the link map) and torch stopped on 9.0.0. `doctor --
    PROGRAM` took the last one mapped for the name, judged 9.28, and its repair left the cuDNN torch was built for
    out; it now judges what the linker gave, and its first fix puts the 9.24 wheel back."""
    _fixed_without_breaks(16231, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_put_back_that_torch_refuses_never_takes_away_the_preload_it_works_through() -> None:
    """cuDNN 9.0's cu12 wheel installed over the cu13 9.24 one torch pins, a 9.28 shim preloaded from /opt, the
    venv's ops a dangling link (fix differential 3-16043): the app by path aborts, torch works through the preload.
    The app's repair reinstalled 9.0 and took the preload away for everyone, excused for torch because a wheel went
    back into its site: the wheel torch's pin excludes, and torch failed. The preload now goes for the app alone."""
    _fixed_without_breaks(16043, ["app", "torch"], lambda j: j.said.consumer == "app-path", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_folder_that_keeps_a_preloaded_graph_from_the_venv_s_other_cuda_stays_for_everyone() -> None:
    """A cu12 9.28 shim preloaded, a 9.0 folder first on LD_LIBRARY_PATH, the venv's cu13 wheel upgraded to 9.28 (fix
    differential 3-14433): the app by name gets the preloaded shim, whose graph takes nothing that loads from the
    9.0 folder. torch's fix took that folder away for everyone, and the graph mapped the venv's cu13 engines beside
    it: the app failed. Mixed today and mixed after, which is better the model cannot say: the folder goes for
    torch alone, and nothing breaks."""
    verdict = _nothing_breaks(3, 14433, ["app", "torch"])
    [torch] = [j for j in verdict.judged if j.said.consumer == "torch" and j.said.form == "target"]
    assert torch.said.actions and torch.said.actions[0].get("do") == "run", torch.said


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_wheel_s_shim_cut_short_kills_torch_s_preload_by_path_whatever_is_already_mapped() -> None:
    """A sitecustomize line maps cuDNN 9.28's shim from /opt, the venv's shim is cut to 4096 bytes, and a partial copy
    sits first on LD_LIBRARY_PATH (fix differential 3-14309): torch's preload by path maps the venv's shim anew
    (another file, whatever answers its name) and dies of SIGBUS. Both forms said the shim in the process answered
    torch and took a folder off LD_LIBRARY_PATH; now the target form says torch stops there, the command form takes
    the fix of the file it died mapping, and each puts the wheel back: torch and both apps work."""
    _fixed_without_breaks(14309, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_run_whose_own_change_is_a_person_s_takes_the_repair_that_has_it_and_goes_on() -> None:
    """Four of cuDNN 9.28's files copied into torch/lib and the venv's nvidia/cudnn closed to others (fix differential
    3-14272): torch aborts at cudnnGetVersion. `doctor -- PROGRAM` said only "put back the complete cuDNN 9.28.0 in
    torch/lib", a person's step; the target form's repair, which has that step and opens the folder and puts the
    wheel back, fixed it. The command form now gives that repair first, and torch works."""
    _fixed_without_breaks(14272, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_an_engine_library_a_working_program_did_without_is_no_error() -> None:
    """cuDNN 9.24's engines_precompiled closed to the case's user, the shim reached through a link on LD_LIBRARY_PATH
    (fix differential 3-16585): the app by name works, graph going on without the engine library. `doctor --
    PROGRAM` made the failed lookup an error with no fix (a false alarm); it is now a warning, and no form of doctor
    says an error for a program that works."""
    _base(_drawn(3, 16585).name)
    verdict = runner.differential(3, 16585, ["app", "torch"])
    assert verdict.error is None, verdict.error
    assert not any(j.outcome == runner.FALSE_ALARM or j.broke for j in verdict.judged), verdict.judged


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_run_s_own_change_the_model_shows_insufficient_gives_way_to_the_repair() -> None:
    """Part of the venv's cuDNN 9.24 copied into torch/lib, a conda folder of 9.0 on LD_LIBRARY_PATH, cuDNN 9.0's cu12
    wheel installed with --no-deps over the cu13 9.24 one (fix differential 3-16836): torch stops at its version
    check. `doctor -- PROGRAM` ran torch with LD_LIBRARY_PATH set to the venv's folder, which holds 9.0 now; the
    model showed that change insufficient, but the repair, with a person's step in it, stayed behind it. Where the
    model shows the run's own change insufficient, the repair comes first, and torch works."""
    _fixed_without_breaks(16836, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_torch_is_judged_on_the_shim_of_its_own_major_when_its_preload_maps_another() -> None:
    """A PYTHONPATH folder holding cuDNN 8.9.7 (pip --target), cuDNN 9.0's cu12 wheel installed over the venv's cu13
    9.24 one (fix differential 3-16990): torch's preload by path globs libcudnn.so.* and maps the folder's
    libcudnn.so.8, which answers no libcudnn.so.9; its NEEDED takes the venv's 9.0 and torch stops at its version
    check. `doctor -- PROGRAM` judged torch on the first shim of the process, the 8.9.7 one, and told to take the
    folder off PYTHONPATH, which fixed nothing. It now judges torch on the shim of its own major, and puts the 9.24
    wheel back: torch works."""
    _fixed_without_breaks(16990, ["app", "torch"], lambda j: j.said.consumer == "torch", seed=3)


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_file_opened_behind_an_app_s_copy_of_the_shim_keeps_the_preload_for_programs_by_name() -> None:
    """cuBLAS uninstalled, another release's shim preloaded, the venv's ops closed to the user, a copy of the shim
    first on LD_LIBRARY_PATH (fix differential 3-17083): the app by path's repair opens ops and took the preload away
    for everyone, since what it opens would answer programs by name; but the copy answers them first, and the app by
    soname, which worked through the preload, met the copy with the venv's sub-libraries. The preload now goes for
    the app alone; nothing breaks."""
    verdict = _nothing_breaks(3, 17083, ["app", "torch"])
    assert all(j.outcome == runner.FIXED for j in verdict.judged if j.failing), verdict.judged


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_preload_by_name_a_program_finds_through_its_rpath_is_probed_as_it_finds_it() -> None:
    """``LD_PRELOAD=libcudnn_graph.so.9`` and a conda program linked with RPATH ``$ORIGIN/../lib`` (fix differential
    3-17029): the program maps its own graph and works; `doctor PROGRAM`'s probe child, with no such RPATH, took the
    venv's and died, and doctor said an error for a program that works. No form of doctor does now."""
    verdict = _nothing_breaks(3, 17029, ["app", "torch"])
    assert not any(j.outcome == runner.FALSE_ALARM for j in verdict.judged), verdict.judged


@pytest.mark.slow
@pytest.mark.timeout_s(900)
def test_a_program_printing_bytes_of_no_encoding_is_judged() -> None:
    """Three releases mixed in the app's process (fix differential 3-17043): cuDNN printed a cut message with bytes of
    no encoding ("viceCount(&countP-..."), and the harness's reading of the app's output stopped the case. It is
    read with those bytes replaced, and every failing program is fixed."""
    verdict = _nothing_breaks(3, 17043, ["app", "torch"])
    assert all(j.outcome == runner.FIXED for j in verdict.judged if j.failing), verdict.judged
