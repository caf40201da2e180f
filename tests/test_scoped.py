"""A program whose own cuDNN (its DT_RUNPATH's) loses to an LD_LIBRARY_PATH entry (`shadowed-release`), judged
by cuDNN's compatibility rule; and an entry other programs get their cuDNN through, taken away for the failing
program alone (cudnnload/diagnose/scoped.py). Real wheels; a program gcc links against the shim."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cudnnload.diagnose.doctor import doctor
from cudnnload.verdicts import Finding
from tests.test_judge_fixes import BASE, W90, W928, folder_of
from tests.wheels import lib_folder

pytestmark = pytest.mark.wheels


def _program(tmp_path: Path, own: Path) -> Path:
    """A program that NEEDs libcudnn.so.9 and finds it through its DT_RUNPATH, ``own``."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the program")
    source = tmp_path / "program.c"
    source.write_text("int main(void) { return 0; }\n")
    program = tmp_path / "program"
    subprocess.run(["gcc", "-o", str(program), str(source), f"-L{own}", "-l:libcudnn.so.9", "-Wl,--no-as-needed",
                    "-Wl,--allow-shlib-undefined", f"-Wl,--enable-new-dtags,-rpath,{own}"], check=True)
    return program


def _shadowed(report: object) -> list:
    return [f for f in report.findings if f.code.value == "shadowed-release"]  # type: ignore[attr-defined]


def test_a_later_minor_release_on_the_path_is_a_warning_said_for_the_program_alone(tmp_path: Path) -> None:
    """9.28 on LD_LIBRARY_PATH over the program's own 9.0: cuDNN runs programs built against an earlier minor
    release, so it should run; the way back to its own is for it alone (others load 9.28 by name there)."""
    own, entry = folder_of(W90, tmp_path / "own"), folder_of(W928, tmp_path / "entry")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(entry)}, target=str(_program(tmp_path, own)), timeout=60)
    [found] = _shadowed(report)
    assert found.severity.value == "warning" and "cuDNN's compatibility rule" in found.message
    assert [a.json() for a in found.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_LIBRARY_PATH"]}]


def test_an_earlier_release_on_the_path_is_an_error_whose_removal_is_for_the_program_alone(tmp_path: Path) -> None:
    """9.0 on LD_LIBRARY_PATH over the program's own 9.28: not guaranteed to run it (an error). The 9.0 there is
    whole, and what a program asking for libcudnn.so.9 by name gets: taking it away from every program would change
    theirs, so the fix is for this program, the removal for all kept as the alternative."""
    own, entry = folder_of(W928, tmp_path / "own"), folder_of(W90, tmp_path / "entry")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(entry)}, target=str(_program(tmp_path, own)), timeout=60)
    [found] = _shadowed(report)
    assert found.severity.value == "error"
    assert [a.json() for a in found.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_LIBRARY_PATH"]}]
    assert {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(entry)} in [
        a.json() for a in found.fix.alternatives]
    assert "programs that load libcudnn.so.9 by name get cuDNN 9.0.0 there; without it they would get none" in \
        found.fix.text


def test_a_setting_that_leaves_out_the_entry_programs_by_name_get_cudnn_from_is_for_the_program_alone(
        tmp_path: Path) -> None:
    """A fix that sets LD_LIBRARY_PATH to a value without an entry of today's takes that entry away from everyone
    as a removal does (fix differential 3-7265: a relative entry made absolute, the wheel's folder left out, and a
    program by name that worked got no cuDNN): where programs by name get a whole cuDNN through it, the setting is
    made for the program alone."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, set_variable

    wheel, other = folder_of(W928, tmp_path / "wheel"), tmp_path / "other"
    other.mkdir()
    env = {**BASE, "LD_LIBRARY_PATH": f"{other}:{wheel}"}
    setting = Finding(Code.UNTRUSTED_LIBRARY, "m", Subject(SubjectKind.FILE, str(other)),
                      fix(set_variable("LD_LIBRARY_PATH", str(other))))
    [said] = scoped([setting], env)
    assert [a.json() for a in said.fix.actions] == [{"do": "run", "argv": ["env", f"LD_LIBRARY_PATH={other}"]}]
    assert "programs that load libcudnn.so.9 by name get cuDNN 9.28.0 there" in str(said.fix.text)
    # a setting that keeps every entry of today's takes nothing away
    first = Finding(Code.UNTRUSTED_LIBRARY, "m", Subject(SubjectKind.FILE, str(other)),
                    fix(set_variable("LD_LIBRARY_PATH", f"{tmp_path}:{other}:{wheel}")))
    assert scoped([first], env) == (first,)


def test_an_entry_whose_cudnn_does_not_load_is_taken_away_from_every_program(tmp_path: Path) -> None:
    """What a program asking by name gets through the entry does not load (a sub-library missing): the entry's
    removal is their fix too, and stays the first."""
    own = folder_of(W928, tmp_path / "own")
    entry = folder_of(W90, tmp_path / "entry", only=("libcudnn.so.9", "libcudnn_graph.so.9"))
    report = doctor({**BASE, "LD_LIBRARY_PATH": f"{entry}:{own}"}, target=str(_program(tmp_path, own)), timeout=60)
    removals = [a.json() for f in report.findings if f.severity.value == "error" for a in f.fix.actions
                if a.do.value == "env-remove-entry"]
    assert {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(entry)} in removals
    assert not any(a.do.value == "run" and a.argv[:1] == ("env",) for f in report.findings for a in f.fix.actions)


def test_a_wheel_put_back_takes_away_what_would_put_another_folders_cudnn_beside_it(tmp_path: Path) -> None:
    """A fix that reinstalls a cuDNN 9 wheel into a site: the LD_LIBRARY_PATH entry whose engines its graph would
    open first (DT_RUNPATH comes after LD_LIBRARY_PATH) and an LD_PRELOAD entry of another folder's cuDNN go with
    it (cudnnload/diagnose/ahead.py); an entry holding no cuDNN stays."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.ahead import ahead
    from cudnnload.verdicts import Finding, Subject, fix, pip_install

    site = tmp_path / "site"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)  # uninstalled: the folder is empty
    engines = folder_of(W90, tmp_path / "engines", only=("libcudnn_engines_precompiled.so.9",
                                                         "libcudnn_heuristic.so.9"))
    other = folder_of(W928, tmp_path / "other", only=("libcudnn_graph.so.9",))
    (tmp_path / "plain").mkdir()
    reinstall = pip_install(["nvidia-cudnn-cu12==9.28.0.42"], options=["--force-reinstall"], target=str(site))
    gone = Finding(Code.NOT_FOUND, "the shim is gone", Subject(SubjectKind.CONSUMER, "app", "shim"), fix(reinstall))
    env = {**BASE, "LD_LIBRARY_PATH": f"{tmp_path / 'plain'}:{engines}",
           "LD_PRELOAD": str(other / "libcudnn_graph.so.9")}
    [said] = ahead([gone], env)
    assert [a.json() for a in said.fix.actions] == [
        reinstall.json(), {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(engines)},
        {"do": "env-remove-entry", "variable": "LD_PRELOAD", "entry": str(other / "libcudnn_graph.so.9")}]
    assert ahead([gone], {**BASE, "LD_LIBRARY_PATH": str(tmp_path / "plain")}) == (gone,)


def test_a_wheel_put_back_takes_away_an_entry_that_answers_its_shims_own_names(tmp_path: Path) -> None:
    """The shim of the release a fix puts back is not on disk yet: 9.0's opens graph and ops with DT_RUNPATH
    (after LD_LIBRARY_PATH), 9.28's with DT_RPATH (before it). An entry holding copies of graph and ops (no engine
    library) is taken away with the reinstall, whichever release it is (measured: the 9.0 wheel put back under
    such an entry maps cuDNN from two folders, fix differential case 1-122)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.ahead import ahead
    from cudnnload.verdicts import Finding, Subject, fix, pip_install

    site = tmp_path / "site"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    copies = folder_of(W90, tmp_path / "copies", only=("libcudnn_graph.so.9", "libcudnn_ops.so.9"))
    reinstall = pip_install(["nvidia-cudnn-cu12==9.0.0.312"], options=["--force-reinstall"], target=str(site))
    mixed = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, str(site / "nvidia/cudnn/lib/libcudnn.so.9")),
                    fix(reinstall))
    [said] = ahead([mixed], {**BASE, "LD_LIBRARY_PATH": str(copies)})
    assert [a.json() for a in said.fix.actions] == [
        reinstall.json(), {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(copies)}]


def test_a_wheel_put_back_takes_away_each_entry_that_would_answer_in_turn(tmp_path: Path) -> None:
    """Two entries ahead of the reinstalled wheel's folder, each with a whole cuDNN (a conda env's, then another
    build's): without the first, the second answers the same names; both go with the reinstall (fix differential
    1-1298: only the first was taken away, and the program mapped cuDNN from the second and the wheel). Said for the
    program alone, the two removals for every program are one way, in words, not two alternatives."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.ahead import ahead
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, pip_install

    site = tmp_path / "site"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    first, second = folder_of(W928, tmp_path / "conda"), folder_of(W90, tmp_path / "other")
    reinstall = pip_install(["nvidia-cudnn-cu12>=9,<10"], options=["--force-reinstall"], target=str(site))
    gone = Finding(Code.NOT_FOUND, "the shim is gone", Subject(SubjectKind.CONSUMER, "app", "shim"), fix(reinstall))
    env = {**BASE, "LD_LIBRARY_PATH": f"{first}:{second}:{site / 'nvidia' / 'cudnn' / 'lib'}"}
    [said] = ahead([gone], env)
    assert [a.json() for a in said.fix.actions] == [
        reinstall.json(), {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(first)},
        {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(second)}]
    [alone] = scoped([said], env)
    assert [a.json() for a in alone.fix.actions] == [reinstall.json(), {"do": "run", "argv": [
        "env", f"LD_LIBRARY_PATH={site / 'nvidia' / 'cudnn' / 'lib'}"]}]
    assert not any(a.do.value == "env-remove-entry" for a in alone.fix.alternatives)
    assert f"for every program instead: remove {first} from LD_LIBRARY_PATH and remove {second}" in alone.fix.text


def test_removals_of_one_fix_are_judged_together_and_none_is_worse_than_a_doubtful_cudnn(tmp_path: Path) -> None:
    """A fix that takes two entries away: programs asking by name get a cuDNN the model doubts (a sub-library
    missing) through the first; without both entries they would get none. Alone, neither removal takes anything
    from them (the first's cuDNN does not load whole; the second's is not what they get), but together they leave
    them nothing: the fix is for the failing program alone."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, remove_entry

    doubtful = folder_of(W90, tmp_path / "doubtful", only=("libcudnn.so.9", "libcudnn_graph.so.9"))
    whole = folder_of(W928, tmp_path / "whole")
    env = {**BASE, "LD_LIBRARY_PATH": f"{doubtful}:{whole}"}
    both = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, str(whole / "libcudnn.so.9")),
                   fix(remove_entry("LD_LIBRARY_PATH", str(doubtful)), remove_entry("LD_LIBRARY_PATH", str(whole))))
    [said] = scoped([both], env)
    assert [a.json() for a in said.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_LIBRARY_PATH"]}]
    assert "without them they would get none" in said.fix.text
    one = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, str(whole / "libcudnn.so.9")),
                  fix(remove_entry("LD_LIBRARY_PATH", str(whole))))
    assert scoped([one], env) == (one,)  # they keep the first entry's: nothing taken from them


def _reinstalled(tmp_path: Path, name: str, requires: tuple[str, ...]) -> tuple[Path, Finding, Finding]:
    """A site holding ``name`` 9.28.0.42's metadata (requiring ``requires``, no RECORD entries) and nothing it
    requires; the finding whose fix reinstalls it with ``--no-deps``, and that finding as `ahead` says it."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.ahead import ahead
    from cudnnload.verdicts import Subject, fix, pip_install

    site = tmp_path / "site"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    info = site / f"{name.replace('-', '_')}-9.28.0.42.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.28.0.42\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("")
    reinstall = pip_install([f"{name}==9.28.0.42"], options=["--force-reinstall", "--no-deps"], target=str(site),
                            python="/venv/bin/python")
    damaged = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, str(site / "nvidia/cudnn/lib")),
                      fix(reinstall))
    [said] = ahead([damaged], BASE)
    return site, damaged, said


def test_a_wheel_put_back_without_its_dependencies_brings_back_what_it_requires_and_its_site_lacks(
        tmp_path: Path) -> None:
    """``--force-reinstall --no-deps`` puts the cuDNN wheel back but not nvidia-cublas, which its engines dlopen
    (measured: the 9.24 wheel put back after cuBLAS was uninstalled aborts in the heuristic, fix differential case
    1-330): the requirements its installed metadata names that the site lacks go with the reinstall."""
    from cudnnload.diagnose.ahead import ahead
    from cudnnload.verdicts import pip_install

    site, damaged, said = _reinstalled(tmp_path, "nvidia-cudnn-cu12", ("nvidia-cublas-cu12",))
    assert [a.json() for a in said.fix.actions] == [damaged.fix.actions[0].json(), pip_install(
        ["nvidia-cublas-cu12"], options=["--ignore-installed", "--no-deps"], target=str(site),
        python="/venv/bin/python").json()]
    (site / "nvidia_cublas_cu12-12.9.1.4.dist-info").mkdir()
    assert ahead([damaged], BASE) == (damaged,)


def test_a_requirement_left_out_is_put_in_the_site_whatever_pip_finds_elsewhere_and_of_the_wheels_cuda(
        tmp_path: Path) -> None:
    """CUDA 13's cuDNN wheel requires ``nvidia-cublas`` with no version; a ``--target`` folder on PYTHONPATH held
    one (fix differential 1-1367): a plain ``pip install nvidia-cublas`` said "already satisfied" and put nothing in
    the venv, whose engines then aborted in the heuristic. It goes in as a CUDA library does (``--ignore-installed
    --no-deps``), of the wheel's CUDA major."""
    _, _, said = _reinstalled(tmp_path, "nvidia-cudnn-cu13", ("nvidia-cublas", "nvidia-cuda-nvrtc>=13.0"))
    assert said.fix.actions[1].requirements == ("nvidia-cublas>=13,<14", "nvidia-cuda-nvrtc>=13.0")
    assert said.fix.actions[1].options == ("--ignore-installed", "--no-deps")


def test_a_change_that_would_make_a_working_framework_of_the_shell_fail_is_made_for_the_program_alone() -> None:
    """The shell's frameworks (``others``), judged in the world a fix makes: where one that works today would fail
    there (the preloaded shim of another release that the removed entry used to complete: fix differential 1-958),
    the change is made for the program alone, with the framework named; where none would, the fix stays as it is,
    and a framework that fails today already is no reason to keep a fix from the program."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import Fared, scoped
    from cudnnload.verdicts import Finding, Subject, fix, pip_install, remove_entry

    works, stops, calls_fail = Fared(None, (3, 0)), (1, 0), (2, 4)
    env = {**BASE, "LD_LIBRARY_PATH": "/venv/cudnn/lib:/other", "LD_PRELOAD": "/conda/lib/libcudnn.so.9"}
    reinstall = pip_install(["nvidia-cudnn-cu13==9.24.0.43"], options=["--force-reinstall"], target="/venv/site",
                            python="/venv/bin/python")
    finding = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, "/venv/cudnn/lib/libcudnn_ops.so.9"),
                      fix(reinstall, remove_entry("LD_LIBRARY_PATH", "/venv/cudnn/lib")))
    asked: list[dict[str, str]] = []

    def torch_needs_the_entry(world: dict[str, str]) -> dict[str, Fared]:
        asked.append(dict(world))
        return {"torch 2.14.1": works if "/venv/cudnn/lib" in world.get("LD_LIBRARY_PATH", "") else
                Fared("gets 9.0.0", stops)}

    [said] = scoped([finding], env, others=torch_needs_the_entry)
    assert [a.json() for a in said.fix.actions] == [
        reinstall.json(), {"do": "run", "argv": ["env", "LD_LIBRARY_PATH=/other"]}]
    # the removal for everyone needs the reinstall too: not an alternative on its own, said in words
    assert not said.fix.alternatives and "for every program instead: remove /venv/cudnn/lib from LD_LIBRARY_PATH " \
        "(after the steps before it)" in str(said.fix.text)
    assert "the shell's torch 2.14.1 fail (gets 9.0.0)" in said.fix.text
    assert scoped([finding], env, others=lambda world: {"torch 2.14.1": works}) == (finding,)
    assert scoped([finding], env, others=lambda world: {"torch 2.14.1": Fared("fails today", stops)}) == (finding,)
    unset = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, "/x"), fix(remove_entry(
        "LD_PRELOAD", "/conda/lib/libcudnn.so.9")))
    [alone] = scoped([unset], env, others=lambda world: {
        "jax": works if "LD_PRELOAD" in world else Fared("no cuDNN", (0, 0))})
    assert [a.json() for a in alone.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}]
    # a framework that fails today (its calls run, one fails) is harmed by a change after which it stops at its
    # version check: the change is made for the program alone too (the fix differential's 7-7: torch's graph
    # preloaded from 9.28, the app's fix for everyone gave torch the 9.0 of a relative LD_LIBRARY_PATH entry)
    [sooner] = scoped([unset], env, others=lambda world: {
        "torch 2.14.1": Fared("a call fails", calls_fail) if "LD_PRELOAD" in world else Fared("9.0.0", stops)})
    assert [a.json() for a in sooner.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}]
    assert "torch 2.14.1 fail sooner than today (9.0.0)" in sooner.fix.text
    # and one whose calls fail later after it, or that starts nowhere today, is not
    assert scoped([unset], env, others=lambda world: {
        "torch 2.14.1": Fared("x", (2, 1) if "LD_PRELOAD" in world else (2, 5))}) == (unset,)
    assert scoped([unset], env, others=lambda world: {"torch 2.14.1": Fared("x", (0, 0))}) == (unset,)


def test_a_change_kept_for_everyone_after_which_a_kept_preload_stops_every_start_is_seen(tmp_path: Path) -> None:
    """A 9.0 ops preloaded finds its graph through its own RUNPATH; with the 9.28 wheel's folder first on
    LD_LIBRARY_PATH its NEEDED graph is 9.28's, which lacks the release-private symbols it binds at start: every
    program stops before its own code (measured: ``env`` exits 127, "symbol lookup error"). The model says so, and
    nothing where no preload meets the change (fix differential 1-2957)."""
    from cudnnload.diagnose.scoped import _stops_start
    from cudnnload.resolve.discovery import context

    ops = folder_of(W90, tmp_path / "old") / "libcudnn_ops.so.9"
    new = folder_of(W928, tmp_path / "new")
    today = {**BASE, "LD_PRELOAD": str(ops)}
    said = _stops_start({**today, "LD_LIBRARY_PATH": str(new)}, context(today))
    assert said is not None and said.startswith(f"symbol lookup error: {ops}: undefined symbol:")
    run = subprocess.run(["env", "true"], env={**today, "LD_LIBRARY_PATH": str(new)}, capture_output=True, text=True)
    assert run.returncode == 127 and "symbol lookup error" in run.stderr
    assert _stops_start({**BASE, "LD_LIBRARY_PATH": str(new)}, context(BASE)) is None


def test_a_preload_goes_for_everyone_where_the_fix_puts_a_wheel_back_into_their_search_path(tmp_path: Path) -> None:
    """The venv's cuDNN 12 wheel uninstalled (its folder, first on LD_LIBRARY_PATH, gone) and another release's
    shim preloaded: a program asking by name gets the preloaded shim, whole from its own folder, and would get none
    without it today. The fix puts the wheel back into that folder: after it, the preload kept would take its
    sub-libraries from the wheel put back (LD_LIBRARY_PATH precedes its RUNPATH), so it goes for everyone with the
    reinstall, not for the failing program alone (fix differential 8-10: kept, it broke the app by soname); and the
    shell's framework whose site gets the wheel back is no reason to keep it (8-11)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import Fared, scoped
    from cudnnload.verdicts import Finding, Subject, fix, pip_install, remove_entry

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    gone = site / "nvidia" / "cudnn" / "lib"
    shim = folder_of(W90, tmp_path / "opt") / "libcudnn.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": str(gone), "LD_PRELOAD": str(shim)}
    reinstall = pip_install(["nvidia-cudnn-cu12>=9,<10"], options=["--force-reinstall"], target=str(site),
                            python=str(tmp_path / "venv" / "bin" / "python"))
    finding = Finding(Code.MISSING_FILE, "m", Subject(SubjectKind.FILE, str(gone / "libcudnn.so.9")),
                      fix(reinstall, remove_entry("LD_PRELOAD", str(shim))))
    torch = {"torch 2.14.1": Fared(None, (3, 0), str(site))}
    after = {"torch 2.14.1": Fared("finds no cuDNN", (0, 0), str(site))}
    assert scoped([finding], env, others=lambda world: torch if "LD_PRELOAD" in world else after) == (finding,)
    # the same without the wheel put back: programs by name would get none, the preload stays for them
    elsewhere = pip_install(["nvidia-cudnn-cu12>=9,<10"], options=["--force-reinstall"], target=str(tmp_path / "x"))
    [alone] = scoped([Finding(finding.code, "m", finding.subject, fix(elsewhere, remove_entry("LD_PRELOAD",
                                                                                             str(shim))))], env)
    assert [a.json() for a in alone.fix.actions][-1] == {"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}
    assert "the preloaded shim answers the name" in alone.fix.text


def test_a_wheel_put_back_that_the_framework_refuses_keeps_the_preload_for_it(tmp_path: Path) -> None:
    """The same, where the wheel the fix puts back into the framework's site is one it refuses: cuDNN 9.0's cu12
    wheel over the cu13 9.24 one torch pins (fix differential 3-16043: torch worked through a preloaded 9.28 shim,
    and the preload taken away for everyone with the reinstall left it 9.0). The preload goes for the failing
    program alone, with the pin that refuses the wheel as the reason; a wheel it takes, or one of a release the
    model cannot tell, keeps the change for everyone; where the release it was built with is known, its version check
    decides (a newer minor its exact pin excludes passes it)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import Fared, scoped
    from cudnnload.resolve.consumers import Pin
    from cudnnload.resolve.versions import Release
    from cudnnload.verdicts import Finding, Subject, fix, pip_install, remove_entry

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    gone = site / "nvidia" / "cudnn" / "lib"
    shim = folder_of(W90, tmp_path / "opt") / "libcudnn.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": str(gone), "LD_PRELOAD": str(shim)}
    pin = Pin("nvidia-cudnn-cu13", "==9.24.0.43", (), "9.24.0.43")
    torch = {"torch 2.14.1": Fared(None, (3, 0), str(site), (), (pin,), None)}
    after = {"torch 2.14.1": Fared("gets 9.0.0", (1, 0), str(site), (), (pin,), None)}

    def fixed(requirement: str) -> Finding:
        reinstall = pip_install([requirement], options=["--force-reinstall", "--no-deps"], target=str(site),
                                python=str(tmp_path / "venv" / "bin" / "python"))
        return Finding(Code.MISSING_FILE, "m", Subject(SubjectKind.FILE, str(gone / "libcudnn.so.9")),
                       fix(reinstall, remove_entry("LD_PRELOAD", str(shim))))

    def others(world: dict[str, str]) -> dict[str, Fared]:
        return torch if "LD_PRELOAD" in world else after

    [alone] = scoped([fixed("nvidia-cudnn-cu12==9.0.0.312")], env, others=others)
    assert [a.json() for a in alone.fix.actions][-1] == {"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}
    assert "its pin nvidia-cudnn-cu13==9.24.0.43 excludes" in alone.fix.text
    for taken in ("nvidia-cudnn-cu13==9.24.0.43", "nvidia-cudnn-cu12>=9,<10"):
        assert scoped([fixed(taken)], env, others=others) == (fixed(taken),)
    # the release it was built with known: its version check decides, whatever the pin (an older minor is refused,
    # a newer one taken)
    built = {label: f._replace(build=Release(9, 24, 0)) for label, f in torch.items()}
    unpinned = {label: f._replace(build=Release(9, 24, 0)) for label, f in after.items()}
    [alone] = scoped([fixed("nvidia-cudnn-cu13==9.0.0.312")], env,
                     others=lambda world: built if "LD_PRELOAD" in world else unpinned)
    assert "it was built with cuDNN 9.24.0: its version check refuses it" in alone.fix.text
    assert scoped([fixed("nvidia-cudnn-cu13==9.28.0.42")], env, others=lambda world: built if "LD_PRELOAD" in world
                  else unpinned) == (fixed("nvidia-cudnn-cu13==9.28.0.42"),)


def test_a_wheel_put_back_behind_a_copy_that_answers_first_keeps_the_preload_for_them(tmp_path: Path) -> None:
    """The same, with a partial copy (the shim and a graph cut to 40 bytes) in an app's lib/ before the venv's folder
    on LD_LIBRARY_PATH: a program asking by name gets the copy's shim once the preload is gone, whatever is put back
    into the venv's folder after it. The preload goes for the failing program alone (the fix differential's 3-7948:
    taken away for everyone, the app by soname met the copy and failed)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, pip_install, remove_entry

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    gone = site / "nvidia" / "cudnn" / "lib"
    copy = folder_of(W928, tmp_path / "app" / "lib", only=("libcudnn.so.9", "libcudnn_graph.so.9"))
    graph = copy / "libcudnn_graph.so.9"
    cut = graph.read_bytes()[:40]
    graph.unlink()
    graph.write_bytes(cut)
    shim = folder_of(W928, tmp_path / "opt") / "libcudnn.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": f"{copy}:{gone}", "LD_PRELOAD": str(shim)}
    reinstall = pip_install(["nvidia-cudnn-cu12>=9,<10"], options=["--force-reinstall"], target=str(site),
                            python=str(tmp_path / "venv" / "bin" / "python"))
    finding = Finding(Code.MISSING_FILE, "m", Subject(SubjectKind.FILE, str(gone / "libcudnn.so.9")),
                      fix(reinstall, remove_entry("LD_PRELOAD", str(shim))))
    [alone] = scoped([finding], env)
    assert [a.json() for a in alone.fix.actions][-1] == {"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}, alone.fix
    assert f"after it they would get {copy}/libcudnn.so.9" in alone.fix.text


def test_a_file_opened_behind_a_copy_that_answers_first_keeps_the_preload_for_them(tmp_path: Path) -> None:
    """The same with a fix that opens a sub-library closed to the user (``chmod``) in the folder after the copy: a
    program by name gets the copy's shim once the preload is gone, whatever the fix opens after it (the fix
    differential's 3-17083: the preload taken away for everyone, the app by soname met an app's copy of the shim
    with sub-libraries from the venv); with no copy before that folder, what it opens answers them, and the preload
    goes with the rest of the fix."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, chmod, fix, remove_entry

    venv = folder_of(W928, tmp_path / "venv" / "lib")
    copy = folder_of(W928, tmp_path / "app" / "lib", only=("libcudnn.so.9",))
    shim = folder_of(W90, tmp_path / "opt") / "libcudnn.so.9"
    opened = chmod(str(venv / "libcudnn_ops.so.9"), 0o644)
    finding = Finding(Code.UNREADABLE, "m", Subject(SubjectKind.FILE, str(venv / "libcudnn_ops.so.9")),
                      fix(opened, remove_entry("LD_PRELOAD", str(shim))))
    behind = {**BASE, "LD_LIBRARY_PATH": f"{copy}:{venv}", "LD_PRELOAD": str(shim)}
    [alone] = scoped([finding], behind)
    assert [a.json() for a in alone.fix.actions][-1] == {"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}, alone.fix
    first = {**BASE, "LD_LIBRARY_PATH": str(venv), "LD_PRELOAD": str(shim)}
    assert scoped([finding], first) == (finding,)


def test_a_wheel_put_back_behind_an_entry_the_same_fix_takes_away_answers_them_and_the_preload_goes(
        tmp_path: Path) -> None:
    """The layout above, but the fix takes the copy's entry away too (the fix differential's 3-8971: a folder of
    links before the venv's, removed by the fix that puts the venv's wheel back): after it the wheel answers programs
    by name whole, and the preload, kept for them, would hand them its own shim over the wheel's sub-libraries: it
    goes for everyone with the rest of the fix."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, pip_install, remove_entry

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    gone = site / "nvidia" / "cudnn" / "lib"
    links = tmp_path / "links"
    links.mkdir()
    os.symlink(lib_folder(W928) / "libcudnn.so.9", links / "libcudnn.so.9")
    shim = folder_of(W90, tmp_path / "opt") / "libcudnn.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": f"{links}:{gone}", "LD_PRELOAD": str(shim)}
    reinstall = pip_install(["nvidia-cudnn-cu12>=9,<10"], options=["--force-reinstall"], target=str(site),
                            python=str(tmp_path / "venv" / "bin" / "python"))
    finding = Finding(Code.MISSING_FILE, "m", Subject(SubjectKind.FILE, str(gone / "libcudnn.so.9")),
                      fix(reinstall, remove_entry("LD_PRELOAD", str(shim)),
                          remove_entry("LD_LIBRARY_PATH", str(links))))
    [kept] = scoped([finding], env)
    assert kept == finding, kept.fix


def test_a_preload_whose_removal_leaves_programs_by_name_no_whole_cudnn_either_way_goes_for_the_program_alone(
        tmp_path: Path) -> None:
    """Another release's shim preloaded over a partial copy of the venv's release on LD_LIBRARY_PATH (shim, graph
    and ops in an app's lib/, the rest from the venv's folder after it): a program asking by name gets the preloaded
    shim with sub-libraries of the other release today, and the copy's release from two folders without it.
    Neither loads whole from one folder; which is better, the model cannot say, and the preload is the user's
    own setting: it goes for the failing program alone, the removal for everyone kept as the alternative (the fix
    differential's 7-41: removed for everyone, the app by soname failed)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, remove_entry

    copy = folder_of(W928, tmp_path / "app" / "lib", only=("libcudnn.so.9", "libcudnn_graph.so.9",
                                                            "libcudnn_ops.so.9"))
    venv = folder_of(W928, tmp_path / "venv")
    shim = folder_of(W90, tmp_path / "opt") / "libcudnn.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": f"{copy}:{venv}", "LD_PRELOAD": str(shim)}
    finding = Finding(Code.MIXED_IN_PROCESS, "m", Subject(SubjectKind.FILE, str(venv / "libcudnn.so.9")),
                      fix(remove_entry("LD_PRELOAD", str(shim))))
    [said] = scoped([finding], env)
    assert [a.json() for a in said.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}]
    assert [a.json() for a in said.fix.alternatives] == [remove_entry("LD_PRELOAD", str(shim)).json()]
    assert "which is better, the model cannot say" in said.fix.text


def test_where_the_model_cannot_say_how_programs_by_name_fare_no_part_of_the_change_is_made_for_them(
        tmp_path: Path) -> None:
    """A cu12 9.28 shim preloaded, 9.0's folder first on LD_LIBRARY_PATH, a partial cu13 9.28 folder after it: a
    program asking by name gets the preloaded shim with 9.0's engines today, and the partial folder once both the
    entry and the preload are gone; neither loads whole, which is better the model cannot say, so the entry stays for
    everyone with the preload (the fix differential's 3-9265: the entry taken from everyone let the cu12 graph map
    the venv's cu13 engines, which 9.0's had kept out, and the app by soname failed)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import scoped
    from cudnnload.verdicts import Finding, Subject, fix, remove_entry

    old = folder_of(W90, tmp_path / "old")
    names = [p.name for p in (folder_of("cu13-9.28.0.42", tmp_path / "probe")).iterdir()]
    venv = folder_of("cu13-9.28.0.42", tmp_path / "venv", only=tuple(n for n in names if n != "libcudnn_ops.so.9"))
    shim = folder_of(W928, tmp_path / "opt") / "libcudnn.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": f"{old}:{venv}", "LD_PRELOAD": str(shim)}
    finding = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, str(venv / "libcudnn.so.9")),
                      fix(remove_entry("LD_LIBRARY_PATH", str(old)), remove_entry("LD_PRELOAD", str(shim))))
    [said] = scoped([finding], env)
    assert [a.json() for a in said.fix.actions] == [
        {"do": "run", "argv": ["env", "-u", "LD_PRELOAD", f"LD_LIBRARY_PATH={venv}"]}], said.fix
    assert "which is better, the model cannot say" in said.fix.text


def test_no_change_is_made_for_the_program_alone_while_a_preload_stops_every_start() -> None:
    """While an LD_PRELOAD entry stops every program started with it, `env` stops too, before it changes anything
    for the program it was to start (fix differential 3-6399: "env -u LD_PRELOAD app" exited 127, "symbol lookup
    error"), and the shell's frameworks stop today, so none has anything to lose: the change is made for
    everyone, whatever the model says the frameworks would meet after it."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.scoped import Fared, scoped
    from cudnnload.verdicts import Finding, Subject, fix, remove_entry

    env = {**BASE, "LD_PRELOAD": "/old/lib/libcudnn_ops.so.9"}
    stops = Finding(Code.PRELOAD_CANNOT_LOAD, "m", Subject(SubjectKind.VARIABLE, "/old/lib/libcudnn_ops.so.9",
                                                           variable="LD_PRELOAD", entry="/old/lib/libcudnn_ops.so.9"),
                    fix(remove_entry("LD_PRELOAD", "/old/lib/libcudnn_ops.so.9")))

    def torch_would_fail_after(world: dict[str, str]) -> dict[str, Fared]:
        return {"torch 2.14.1": Fared(None, (3, 0)) if "LD_PRELOAD" in world else Fared("no cuDNN", (1, 0))}

    assert scoped([stops], env, others=torch_would_fail_after) == (stops,)
    # without such a preload, the same change is made for the program alone
    other = Finding(Code.MIXED_RELEASE, "m", Subject(SubjectKind.FILE, "/x"), stops.fix)
    [alone] = scoped([other], env, others=torch_would_fail_after)
    assert [a.json() for a in alone.fix.actions] == [{"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}]


def test_no_doubt_keeps_a_preload_that_stops_every_start_today(tmp_path: Path) -> None:
    """A 9.0 ops preloaded before a 9.28 folder on LD_LIBRARY_PATH stops every start (its NEEDED graph lacks the
    symbols it binds): a wrapper for the program alone (``env -u LD_PRELOAD``) would not start either, so the
    model's doubt between two sets that do not load whole does not keep that preload for anyone (seed 2's 2-220:
    the wrapper exited 127, "symbol lookup error")."""
    from cudnnload.diagnose.scoped import _neither_whole
    from cudnnload.resolve.discovery import context

    ops = folder_of(W90, tmp_path / "old") / "libcudnn_ops.so.9"
    new = folder_of(W928, tmp_path / "new", only=("libcudnn.so.9", "libcudnn_graph.so.9"))
    today = {**BASE, "LD_PRELOAD": str(ops), "LD_LIBRARY_PATH": str(new)}
    assert _neither_whole(context(today), {**BASE, "LD_LIBRARY_PATH": str(new)}) is None


def test_a_preload_that_masks_a_start_up_lines_cudnn_for_the_shells_framework_stays_for_it(tmp_path: Path) -> None:
    """The fix differential's 3-13081: a sitecustomize line maps cuDNN 9.0's graph by path, and LD_PRELOAD maps a
    9.28 graph of the same name first, which answers torch's shim today. A fix that puts torch's wheel back (so
    the model judges torch only once it is there) and takes the preload from everyone would hand torch the start-up
    line's 9.0 graph: the change is made for the program alone. Observed on a real start-up (`doctor._masked`), and
    judged (`scoped`)."""
    from cudnnload.codes import Code, SubjectKind
    from cudnnload.diagnose.doctor import _masked
    from cudnnload.diagnose.scoped import Fared, scoped
    from cudnnload.resolve.startup import observe
    from cudnnload.verdicts import Subject, fix, pip_install, remove_entry

    preloaded, old = folder_of(W928, tmp_path / "new"), folder_of(W90, tmp_path / "old")
    (tmp_path / "site").mkdir()
    customize = tmp_path / "site" / "sitecustomize.py"
    customize.write_text(f"import ctypes\nctypes.CDLL({str(old / 'libcudnn_graph.so.9')!r}, mode=ctypes.RTLD_GLOBAL)\n")
    env = {**BASE, "PYTHONPATH": str(tmp_path / "site"), "LD_PRELOAD": str(preloaded / "libcudnn_graph.so.9")}
    masked = _masked(observe(None, env))
    assert [(name, os.path.realpath(path)) for name, path, _ in masked] == [
        ("libcudnn_graph.so.9", os.path.realpath(old / "libcudnn_graph.so.9"))]
    assert str(customize) in masked[0][2]
    assert _masked(observe(None, {k: v for k, v in env.items() if k != "LD_PRELOAD"})) == ()

    reinstall = pip_install(["nvidia-cudnn-cu12==9.28.0.42"], options=["--force-reinstall"], target="/venv/site",
                            python="/venv/bin/python")
    finding = Finding(Code.FOREIGN_ELF, "m", Subject(SubjectKind.FILE, "/venv/site/nvidia/cudnn/lib/libcudnn.so.9"),
                      fix(reinstall, remove_entry("LD_PRELOAD", env["LD_PRELOAD"])))
    torch = {"torch 2.14.1": Fared(None, (3, 0), "/venv/site", masked)}
    [said] = scoped([finding], env, others=lambda world: torch if "LD_PRELOAD" in world else {
        "torch 2.14.1": Fared("its own shim is another machine's", (0, 0), "/venv/site")})
    assert [a.json() for a in said.fix.actions] == [reinstall.json(),
                                                    {"do": "run", "argv": ["env", "-u", "LD_PRELOAD"]}]
    assert "its start-up maps it" in said.fix.text and "which the preload answers for it today" in said.fix.text
    # without a start-up line behind the preload, the site put back is judged once it is there: the fix stays
    plain = {"torch 2.14.1": Fared(None, (3, 0), "/venv/site")}
    assert scoped([finding], env, others=lambda world: plain if "LD_PRELOAD" in world else {
        "torch 2.14.1": Fared("its own shim is another machine's", (0, 0), "/venv/site")}) == (finding,)
