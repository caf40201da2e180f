"""Fixes are derived from the model, not from a template: the cases issue 17 found wrong, on real wheels.

Each layout is made of hard links into the unpacked wheels; each test reads the fix's actions (the JSON
contract) and checks the one a user can follow, then applies it and asks the model again: the target
must then be whole. The end-to-end proof (apply the actions, run the program again) is bench/bench_fixes.py
and tests/test_fixes.py over the scenario corpus.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cudnnload.codes import Code
from cudnnload.diagnose.doctor import doctor
from cudnnload.judge.fixes import (
    cudnn_install,
    cudnn_requirement,
    dependency_manual,
    pip_into,
    readable_again,
    unversioned_link,
)
from cudnnload.judge.installs import whole
from cudnnload.judge.judged import Judged
from cudnnload.resolve.access import Unreachable
from cudnnload.resolve.catalog import dependency_folder, dependency_requirement
from cudnnload.resolve.pythons import along_in_target
from cudnnload.resolve.sources import Distribution
from cudnnload.verdicts import Action, ActionKind, delete
from fixtures.scenarios.fixes import Folder, apply
from tests.wheels import lib_folder, site_folder

W928, W90, CUBLAS = "cu12-9.28.0.42", "cu12-9.0.0.312", "cublas-cu12-12.9.1.4"
BASE = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CUDNNLOAD_CACHE": os.environ.get("CUDNNLOAD_CACHE", ""),
        "HOME": os.environ.get("HOME", "/root")}


def a_venv(venv: Path) -> tuple[Path, Path]:
    """A folder shaped as a venv (``pyvenv.cfg``, ``bin/python``, an empty site-packages): the venv and its site."""
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin").mkdir()
    os.symlink(sys.executable, venv / "bin" / "python")
    return venv, site


def folder_of(tag: str, target: Path, only: tuple[str, ...] | None = None) -> Path:
    """Hard links to the wheel's lib files in ``target`` (only the named ones, when given)."""
    target.mkdir(parents=True)
    for entry in lib_folder(tag).iterdir():
        if only is None or entry.name in only:
            os.link(entry, target / entry.name)
    return target


def venv_at(prefix: Path) -> Path:
    """A venv's shape at ``prefix`` (pyvenv.cfg and an executable bin/python): its site-packages folder, made."""
    site = prefix / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "python").write_text("#!/bin/sh\n")
    (prefix / "bin" / "python").chmod(0o755)
    return site


def actions(report: object) -> list[dict[str, object]]:
    """Every error finding's own actions, in the JSON contract (not the whole repair's, which chains them)."""
    return [a.json() for f in report.findings if f.severity.value == "error"  # type: ignore[attr-defined]
            and f.code.value != "repair" for a in f.fix.actions]


def chosen_whole(report: object) -> bool:
    """Whether the install the target loads is whole (one release, from its own folder)."""
    installs = [i for i in report.inventory.installs if i.folder == report.chosen]  # type: ignore[attr-defined]
    return bool(installs) and whole(installs[0])


def applied(env: dict[str, str], steps: list[dict[str, object]]) -> dict[str, str]:
    """The environment after the env-* actions (what a user, or bench_fixes, does)."""
    env = dict(env)
    for step in steps:
        variable = str(step.get("variable"))
        if step["do"] == "env-remove-entry":
            kept = [e for e in env.get(variable, "").split(":") if e != step["entry"]]
            env[variable] = ":".join(kept)
            if not kept:
                env.pop(variable)
        elif step["do"] == "env-unset":
            env.pop(variable, None)
        elif step["do"] == "env-set":
            env[variable] = str(step["value"])
    return env


def test_a_partial_release_first_on_the_path_is_the_entry_removed_not_the_whole_one(tmp_path: Path) -> None:
    partial = folder_of(W90, tmp_path / "cudnn-9.0", only=("libcudnn.so.9", "libcudnn_graph.so.9"))
    complete = folder_of(W928, tmp_path / "cudnn-9.28")
    env = {**BASE, "LD_LIBRARY_PATH": f"{partial}:{complete}"}

    report = doctor(env, target="libcudnn.so.9", timeout=60)
    steps = actions(report)

    assert not report.healthy and steps
    assert {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(partial)} in steps
    assert not any(s.get("entry") == str(complete) for s in steps)  # the whole one stays
    fixed = doctor(applied(env, steps), target="libcudnn.so.9", timeout=60)
    assert fixed.chosen == str(complete) and chosen_whole(fixed)


def test_an_empty_shim_first_on_the_path_is_its_entry_removed(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "libcudnn.so.9").write_bytes(b"")
    good = folder_of(W928, tmp_path / "good")
    env = {**BASE, "LD_LIBRARY_PATH": f"{empty}:{good}"}

    steps = actions(doctor(env, target="libcudnn.so.9", timeout=60))

    assert steps == [{"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(empty)}]
    assert chosen_whole(doctor(applied(env, steps), target="libcudnn.so.9", timeout=60))


def test_a_truncated_shim_shadowing_a_good_one_is_its_entry_removed(tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    cut.mkdir()
    with open(lib_folder(W928) / "libcudnn.so.9", "rb") as shim:
        (cut / "libcudnn.so.9").write_bytes(shim.read(20000))
    good = folder_of(W928, tmp_path / "good")
    env = {**BASE, "LD_LIBRARY_PATH": f"{cut}:{good}"}

    steps = actions(doctor(env, target="libcudnn.so.9", timeout=60))

    assert {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(cut)} in steps


def test_the_unversioned_name_pip_does_not_ship_is_said_as_such(tmp_path: Path) -> None:
    good = folder_of(W928, tmp_path / "good")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(good)}, target="libcudnn.so", timeout=60)
    [finding] = [f for f in report.findings if f.code == "not-found"]
    assert [a.do for a in finding.fix.actions] == [ActionKind.MANUAL]
    assert "open libcudnn.so.9" in (finding.fix.text or "")


def test_a_damaged_file_of_a_pip_wheel_is_put_back_by_its_distribution_into_its_site(tmp_path: Path) -> None:
    site = tmp_path / "site"
    source = lib_folder(W928).parents[2]
    shutil.copytree(source, site, copy_function=os.link)
    lib = site / "nvidia" / "cudnn" / "lib"
    (lib / "libcudnn_cnn.so.9").unlink()
    (lib / "libcudnn_cnn.so.9").write_bytes(b"")

    report = doctor({**BASE}, target=str(lib), timeout=60)
    steps = actions(report)

    # a folder of no interpreter (pip's --target): --upgrade, without which pip keeps the nvidia folder there and
    # puts nothing back (fixes.pip_into); with cuBLAS, which the wheel requires and the folder lacks (ahead.py), and
    # all that the report's other fixes put there (remedy.one_set_per_target)
    [reinstall] = list({str(a): a for a in steps if a["do"] == "pip-install"}.values())  # the same in each
    assert reinstall["requirements"][:2] == ["nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"], reinstall
    assert {"--force-reinstall", "--no-deps", "--upgrade"} <= set(reinstall["options"]), reinstall
    assert (reinstall["target"], reinstall["python"]) == (str(site), sys.executable)


def test_no_wheel_is_suggested_for_cudnn_7_or_cuda_10() -> None:
    assert cudnn_requirement(7, 10) is None and cudnn_requirement(9, 10) is None
    assert [a.do for a in cudnn_install(7, 10, None).actions] == [ActionKind.MANUAL]
    assert dependency_requirement("libcudart.so.10.2") is None
    assert "CUDA 10.2 runtime" in (dependency_manual("libcudart.so.10.2").text or "")
    assert cudnn_requirement(8, 11) == "nvidia-cudnn-cu11>=8,<9"
    assert cudnn_requirement(9, 13) == "nvidia-cudnn-cu13>=9,<10"
    assert dependency_requirement("libcublasLt.so.13") == "nvidia-cublas>=13,<14"
    assert dependency_requirement("libnvrtc.so.12") == "nvidia-cuda-nvrtc-cu12"


def test_whole_means_one_release_from_its_own_folder(tmp_path: Path) -> None:
    from cudnnload.diagnose.inventory import inspect

    [install] = inspect([str(folder_of(W928, tmp_path / "good"))], environ=BASE).installs
    assert whole(install)  # its missing cuBLAS is a finding, not a hole in the install


def test_a_shadowed_complete_install_is_also_fixed_by_pinning_it_with_run(tmp_path: Path) -> None:
    """Issue 19 item 4: where pinning fixes the finding, the fix carries `cudnnload run` beside the permanent
    one, and `cudnnload run` proves that set."""
    from cudnnload.codes import Code
    from cudnnload.loading.pin import run_environment

    old = folder_of(W90, tmp_path / "cudnn-9.0")
    whole = folder_of(W928, tmp_path / "cudnn-9.28")
    env = {**BASE, "LD_LIBRARY_PATH": str(old), "CUDNNLOAD_CACHE": str(tmp_path / "cache")}
    report = doctor(env, target=str(whole / "libcudnn.so.9"), timeout=60)
    mixed = [f for f in report.findings if f.code is Code.MIXED_RELEASE and f.fix and f.fix.alternatives]
    assert mixed, [(f.code, f.fix.text if f.fix else None) for f in report.findings]
    # (the 9.0 entry is what programs asking for libcudnn.so.9 by name get: its removal for every program is an
    # alternative too, diagnose/scoped.py)
    (alternative,) = [a for a in mixed[0].fix.alternatives if a.argv[:1] == ("cudnnload",)]
    assert alternative.argv == ("cudnnload", "run", "--cudnn", str(whole), "--")
    pinned = run_environment(alternative.argv[3], environ=env)
    assert pinned.release.minor == 28 and pinned.files[-1] == str(whole / "libcudnn.so.9")


def test_what_a_preloaded_graph_needs_goes_with_its_ld_preload_entry_never_with_an_install(tmp_path: Path) -> None:
    """9.0's graph in LD_PRELOAD under a 9.28 shim: the engines that graph opens from its own folder and the
    cuBLASLt it cannot find are that graph's problems, whose fix is its entry's removal, not a pip install."""
    system = folder_of(W90, tmp_path / "system")
    wheel = folder_of(W928, tmp_path / "wheel")
    entry = str(system / "libcudnn_graph.so.9")
    report = doctor({**BASE, "LD_PRELOAD": entry}, target=str(wheel / "libcudnn.so.9"), timeout=60)
    codes = {f.code.value for f in report.findings if f.severity.value == "error"}

    assert {"mixed-release", "missing-dependency"} <= codes
    assert {tuple(sorted(a.items())) for a in actions(report)} == {
        (("do", "env-remove-entry"), ("entry", entry), ("variable", "LD_PRELOAD"))}


def test_a_library_its_distribution_never_ships_comes_from_the_full_wheel_of_its_cuda(tmp_path: Path) -> None:
    """nvidia-cudnn-jit-cu13 has no ops, cnn or adv (its RECORD lists none): reinstalling it cannot help; the
    full nvidia-cudnn-cu13 beside it does, once LD_LIBRARY_PATH leads to it instead."""
    from fixtures.scenarios.layouts import JIT, install, needs_wheels

    needs_wheels()
    site = tmp_path / "site"
    install(site, JIT)
    jit = site / "nvidia" / "cudnn_jit" / "lib"
    report = doctor({**BASE, "LD_LIBRARY_PATH": f"{jit}:/opt/other"}, target="libcudnn.so.9", timeout=60)
    ops = next(f for f in report.findings if f.code == "missing-sublibrary" and f.subject.library == "ops")

    assert "nvidia-cudnn-jit-cu13 9.27.0.42 does not ship it" in ops.message
    assert "JIT configuration, by design the graph API alone" in ops.message  # the wheel is not broken: said so
    install, path = (a.json() for a in ops.fix.actions)
    # (a folder of no interpreter, pip's --target: the JIT wheel it holds comes along, --upgrade replacing the
    # nvidia folder whole, with all that the report's other fixes put there: remedy.one_set_per_target)
    assert install["requirements"][:2] == ["nvidia-cudnn-jit-cu13==9.27.0.42", "nvidia-cudnn-cu13>=9,<10"], install
    assert "--upgrade" in install["options"] and install["target"] == str(site)
    assert path == {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{site}/nvidia/cudnn/lib:/opt/other"}
    # the coherent check names what the findings say is missing, not tensor_ir, which the JIT wheel's graph asks
    # for and goes on without (no heuristic library: SubLibrary.fails_after)
    [coherent] = [c for c in report.checks if c.name == "coherent"]
    assert coherent.status == "fail" and "ops (not found)" in coherent.summary, coherent
    assert "tensor_ir" not in coherent.summary, coherent


def test_a_folder_two_distributions_claim_belongs_to_the_one_whose_files_are_there(tmp_path: Path) -> None:
    """cu12 then cu13 installed into one site: the files are cu13's, so they need cuBLASLt 13 (not there), and
    the conflict keeps cu13; no file is called damaged against cu12's RECORD."""
    from fixtures.scenarios.layouts import CUBLAS, W928_13, install, needs_wheels

    needs_wheels()
    site = tmp_path / "site"
    for tag in (W928, CUBLAS, W928_13):
        install(site, tag)
    report = doctor({**BASE}, target=str(site / "nvidia" / "cudnn" / "lib"), timeout=60)
    errors = [f for f in report.findings if f.severity.value == "error"]

    assert report.distribution == "nvidia-cudnn-cu13 9.28.0.42"
    assert not any(f.code == "record-mismatch" for f in errors)
    assert any(f.code == "missing-dependency" and "libcublasLt.so.13" in f.message for f in errors)
    conflict = next(f for f in report.findings if f.code == "record-conflict")  # fragile: a warning
    assert conflict.severity.value == "warning"
    assert "uninstall -y nvidia-cudnn-cu12" in (conflict.fix.text or "")


def test_a_dependency_of_a_folder_pip_does_not_own_is_said_in_words_never_a_pip_install_without_target(
        tmp_path: Path) -> None:
    report = doctor({**BASE}, target=str(folder_of(W928, tmp_path / "bare")), timeout=60)
    [missing] = [f for f in report.findings if f.code == "missing-dependency" and f.severity.value == "error"]
    assert [a.do for a in missing.fix.actions] == [ActionKind.MANUAL]
    assert "pip install nvidia-cublas-cu12 and add the folder" in (missing.fix.text or "")


def test_a_shim_path_a_program_opened_in_vain_is_put_back_by_its_distribution(tmp_path: Path) -> None:
    """`doctor -- COMMAND`, when the program's dlopen of a wheel's shim by path failed: the fix `doctor` gives
    for that path (the wheel reinstalled into its site), not a note."""
    from cudnnload.diagnose.targets import unopened_fix
    from cudnnload.resolve.discovery import chain, context

    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    shim.unlink()

    cure = unopened_fix(str(shim), chain(), context(BASE))
    assert cure is not None and [a.json() for a in cure.actions] == [
        {"do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.28.0.42"],
         "options": ["--force-reinstall", "--no-deps", "--upgrade"], "target": str(site), "python": sys.executable}]


def test_doctor_on_a_wheels_shim_path_that_is_gone_reports_it_with_the_distributions_fix(tmp_path: Path) -> None:
    """`doctor PATH` where PATH is a cuDNN library that is not there, in a folder that is (what a program that
    opens the shim by path asks for): a report, not a usage error: nothing loads, not-found with the fix of
    the RECORD that lists it."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    shim.unlink()

    report = doctor(BASE, target=str(shim), timeout=60)

    assert report.chosen is None and not report.healthy
    found = next(f for f in report.findings if f.code == "not-found")
    assert found.path == str(shim) and found.severity == "error"
    # the site lacks what the wheel requires (nvidia-cublas-cu12, as the test's unpacked wheel has no cuBLAS): a
    # reinstall without its dependencies brings that back too (diagnose/ahead.py)
    # (the test's site is a folder of no interpreter, pip's --target: both in one install, with --upgrade, which
    # replaces the nvidia folder whole; without it pip keeps the one there and puts nothing into it)
    [install] = [a.json() for a in found.fix.actions]
    assert install["requirements"][:2] == ["nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"], install
    assert {"--force-reinstall", "--upgrade"} <= set(install["options"]), install
    assert (install["target"], install["python"]) == (str(site), sys.executable)


def test_a_wheels_shim_of_another_machine_is_put_back_not_pointed_at(tmp_path: Path) -> None:
    """The wheel's shim replaced by the aarch64 wheel's (its e_machine EM_AARCH64), the wheel's folder on
    LD_LIBRARY_PATH, a program asking for libcudnn.so.9 by name (fix differential 1-2949): the loader passes over
    that file in its search, and finds none. The fix was to put the folder on LD_LIBRARY_PATH, where it already is;
    it is the wheel put back."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    data = bytearray(shim.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    shim.unlink()  # a new file: the old one is a hard link of the test's wheel
    shim.write_bytes(bytes(data))

    report = doctor({**BASE, "LD_LIBRARY_PATH": str(shim.parent)}, target="libcudnn.so.9", timeout=60)

    first = next(f for f in report.findings if f.severity == "error")
    put_back = first.fix.actions[0].json()
    assert {k: put_back.get(k) for k in ("do", "requirements", "options", "target")} == {
        "do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"],
        "options": ["--force-reinstall", "--no-deps", "--upgrade"], "target": str(site)}, first
    assert not any(a.do is ActionKind.ENV_SET for a in first.fix.actions), first
    assert "EM_AARCH64" in (first.fix.note or "") or any("EM_AARCH64" in f.message for f in report.findings)

def test_a_library_path_in_a_folder_that_is_not_there_stays_a_usage_error(tmp_path: Path) -> None:
    import pytest

    from cudnnload.errors import UsageError

    with pytest.raises(UsageError, match="no such file or folder"):
        doctor(BASE, target=str(tmp_path / "gone" / "libcudnn.so.9"), timeout=60)


def test_a_program_that_asks_by_name_never_gets_this_pythons_pip_wheel(tmp_path: Path) -> None:
    """A C program NEEDing libcudnn.so.9 that its search does not find stops at start, whatever pip wheels this
    Python has (only PyTorch and JAX open those by path): not-found, with the wheel's folder as the fix, never
    "healthy" (found in a fresh clone after `make demo`, which puts nvidia-cudnn-cu12 into the venv)."""
    import pytest

    from fixtures.scenarios.layouts import linked_program

    if shutil.which("gcc") is None:
        pytest.skip("gcc builds the program")
    (tmp_path / "bin").mkdir()
    program = tmp_path / "bin" / "program"
    os.link(linked_program(True), program)  # RUNPATH $ORIGIN/../lib: there is no lib
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "path", [str(site), *sys.path])
        report = doctor(BASE, target=str(program), timeout=60)
    assert report.chosen is None and not report.healthy
    found = next(f for f in report.findings if f.code == "not-found")
    assert found.fix.actions and found.fix.actions[0].do is ActionKind.ENV_SET


def test_a_preload_by_name_is_probed_as_the_program_finds_it_through_its_own_rpath(tmp_path: Path) -> None:
    """A program with RPATH ``$ORIGIN/../lib`` holding a cuDNN, ``LD_PRELOAD=libcudnn_graph.so.9`` and another
    release on LD_LIBRARY_PATH (the fix differential's 3-17029): ld.so looks the preload up with the program's RPATH
    first and maps its own graph, and the program works. The probe's child, which has no such RPATH, mapped the
    other release's graph and died mixing it with the program's shim: "probe-crashed", a false alarm. The probe now
    preloads the file the program maps."""
    import pytest

    from fixtures.scenarios.layouts import linked_program

    if shutil.which("gcc") is None:
        pytest.skip("gcc builds the program")
    (tmp_path / "bin").mkdir()
    program = tmp_path / "bin" / "program"
    os.link(linked_program(False), program)  # RPATH $ORIGIN/../lib
    folder_of(W928, tmp_path / "lib")
    other = folder_of(W90, tmp_path / "other")
    env = {**BASE, "LD_LIBRARY_PATH": str(other), "LD_PRELOAD": "libcudnn_graph.so.9"}
    from cudnnload.resolve.catalog import generation

    steps = [str(call) for call in generation(9).exercise]
    truth = subprocess.run([str(program), "-", *steps], env=env, capture_output=True, text=True, timeout=60,
                           check=False)
    assert truth.returncode == 0 and "Cannot load symbol" not in truth.stdout + truth.stderr, truth
    report = doctor(env, target=str(program), timeout=60)
    codes = {f.code.value for f in report.findings}
    assert not codes & {"probe-crashed", "prediction-disagrees"}, report.findings


def test_a_program_by_name_with_no_cudnn_anywhere_gets_the_wheel_in_the_active_venv_and_its_folder(
        tmp_path: Path) -> None:
    """``libcudnn.so.9`` by name, no cuDNN anywhere, a venv active in the shell: the wheel goes into the venv's site
    and its folder onto LD_LIBRARY_PATH (a bare ``pip install``, by no interpreter and into no site, left the
    program asking in vain: a program by name never gets a pip wheel off its search path)."""
    venv, site = a_venv(tmp_path / "venv")
    report = doctor({**BASE, "VIRTUAL_ENV": str(venv)}, target="libcudnn.so.9", timeout=60)
    found = next(f for f in report.findings if f.code == "not-found")
    install, setting = found.fix.actions
    assert install.do is ActionKind.PIP_INSTALL and install.target == str(site)
    assert install.python == str(venv / "bin" / "python") and install.requirements[0].startswith("nvidia-cudnn-cu")
    assert setting.json() == {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{site}/nvidia/cudnn/lib"}


def test_the_whole_repair_is_the_least_change_the_model_finds_nothing_wrong_after(tmp_path: Path) -> None:
    """Two causes at once: 9.0's graph in LD_PRELOAD and an empty shim first on LD_LIBRARY_PATH, before a complete
    9.28 and its cuBLAS. Each finding alone is fixed by something else (or not at all: "install cuDNN"); the repair,
    said first, is the smallest change of the environment after which the model finds nothing wrong (both entries
    taken away, the complete folder kept), and applied, it is so."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "libcudnn.so.9").write_bytes(b"")
    good, cublas = folder_of(W928, tmp_path / "good"), folder_of(CUBLAS, tmp_path / "cublas")
    graph = folder_of(W90, tmp_path / "old") / "libcudnn_graph.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": f"{empty}:{good}:{cublas}", "LD_PRELOAD": str(graph)}
    report = doctor(env, target="libcudnn.so.9", timeout=60)
    first = report.findings[0]
    assert first.code is Code.REPAIR
    steps = [a.json() for a in first.fix.actions]
    assert sorted(steps, key=str) == sorted([
        {"do": "env-remove-entry", "variable": "LD_PRELOAD", "entry": str(graph)},
        {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": str(empty)}], key=str)
    fixed = doctor(applied(env, steps), target="libcudnn.so.9", timeout=60)
    assert fixed.healthy and chosen_whole(fixed)


def test_a_shim_linked_into_a_folder_on_the_path_is_repaired_by_the_findings_own_setting(tmp_path: Path) -> None:
    """LD_LIBRARY_PATH leads a program asking by name to a symbolic link of the shim in another folder (``$ORIGIN``
    is the link's folder, where no sub-library is) and then to an empty entry (the current folder, holding 9.0's
    adv: fix differential 1-912, "dies of SIGABRT"). Taking entries away leaves the program no cuDNN (the repair
    was "install cuDNN" for a program no pip wheel serves); the finding's own setting of the variable (the link's
    real folder first) is one of the candidates the model judges, and the one it finds nothing wrong after."""
    real = folder_of(W928, tmp_path / "site" / "nvidia" / "cudnn" / "lib")
    folder_of(CUBLAS, tmp_path / "site" / "nvidia" / "cublas" / "lib")
    links, work = tmp_path / "links", folder_of(W90, tmp_path / "work", only=("libcudnn_adv.so.9",))
    links.mkdir()
    os.symlink(real / "libcudnn.so.9", links / "libcudnn.so.9")
    env = {**BASE, "LD_LIBRARY_PATH": f"{links}:"}
    cwd = os.getcwd()
    os.chdir(work)
    try:
        report = doctor(env, target="libcudnn.so.9", timeout=60)
    finally:
        os.chdir(cwd)
    first = report.findings[0]
    assert first.code is Code.REPAIR, [f.code for f in report.findings]
    [setting] = first.fix.actions
    assert setting.do is ActionKind.ENV_SET and setting.value is not None
    assert setting.value.split(":")[0] == str(real) and not any(a.do is ActionKind.PIP_INSTALL
                                                                for a in first.fix.actions)


def test_a_working_target_gets_no_repair(tmp_path: Path) -> None:
    good = folder_of(W928, tmp_path / "good")
    cublas = folder_of(CUBLAS, tmp_path / "cublas")
    report = doctor({**BASE, "LD_LIBRARY_PATH": f"{good}:{cublas}"}, target="libcudnn.so.9", timeout=60)
    assert not any(f.code is Code.REPAIR for f in report.findings)


def test_a_wheel_folder_this_user_cannot_search_is_opened_then_put_back_whole() -> None:
    """What an unsearchable folder holds cannot be seen: a file gone or another release's copied in stays
    hidden until the mode changes, so the distribution that owns it is put back too, by its owner. So is what an
    unreadable file of its RECORD holds: another machine's build of the same size under its name stays after the
    mode change (fix differential 3-7558), one rule for the judge and the library target."""
    lib = "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib"
    wheel = Distribution("nvidia-cudnn-cu12", "9.28.0.42", "/venv/lib/python3.11/site-packages", (lib,),
                         (f"{lib}/libcudnn.so.9",), (), (), pip_env=("/venv/bin/python", ()))
    folder = readable_again(Unreachable(lib, True, 0, "root"), 65534, wheel)
    assert [a.do for a in folder.actions] == [ActionKind.CHMOD, ActionKind.PIP_INSTALL]
    assert folder.actions[0].owner == "root" and folder.actions[1].requirements == ("nvidia-cudnn-cu12==9.28.0.42",)
    assert "what it holds is unknown here" in (folder.note or "")
    file = readable_again(Unreachable(f"{lib}/libcudnn.so.9", False, 0, "root"), 65534, wheel)
    assert [a.do for a in file.actions] == [ActionKind.CHMOD, ActionKind.PIP_INSTALL]
    assert "--force-reinstall" in file.actions[1].options and "what it holds is unknown here" in (file.note or "")
    elsewhere = readable_again(Unreachable("/opt/app/lib", True, 0, "root"), 65534, wheel)
    assert [a.do for a in elsewhere.actions] == [ActionKind.CHMOD]  # a folder no RECORD lists files in


def test_a_folder_closed_to_the_user_holding_another_generation_gets_the_asked_one_not_its_own_back() -> None:
    """cuDNN 8.9.7 installed over the 9.28 wheel of the same nvidia-cudnn-cu12, its folder then closed to the user,
    and a program asking for ``libcudnn.so.9`` there (fix differential 1-3212): putting 8.9.7 back gives no such
    file. The folder is opened and cuDNN 9 of the wheel's CUDA installed in 8.9.7's place, by its owner."""
    lib = "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib"
    eight = Distribution("nvidia-cudnn-cu12", "8.9.7.29", "/venv/lib/python3.11/site-packages", (lib,),
                         (f"{lib}/libcudnn.so.8",), (), (), pip_env=("/venv/bin/python", ()))
    asked = readable_again(Unreachable(lib, True, 0, "root"), 65534, eight, wanted=9)
    assert [a.do for a in asked.actions] == [ActionKind.CHMOD, ActionKind.PIP_INSTALL]
    assert asked.actions[1].requirements == ("nvidia-cudnn-cu12>=9,<10",) and "--force-reinstall" not in \
        asked.actions[1].options
    same = readable_again(Unreachable(lib, True, 0, "root"), 65534, eight, wanted=8)
    assert same.actions[1].requirements == ("nvidia-cudnn-cu12==8.9.7.29",)


def test_a_wheel_put_back_unseen_also_loses_the_names_its_shim_tries_first_that_no_wheel_ships() -> None:
    """pip's reinstall rewrites what RECORD lists and nothing else: a link by hand ``libcudnn_adv.so.9.28`` to
    another release, hidden in a folder this user cannot search, would still be what the shim opens. Those names
    (`SubLibrary.names_tried` before the soname), for each library the wheel has, are deleted where there; the
    shim's own name (opened by the application) has none."""
    lib = "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib"
    files = tuple(f"{lib}/{name}" for name in ("libcudnn.so.9", "libcudnn_adv.so.9", "libcudnn_graph.so.9"))
    wheel = Distribution("nvidia-cudnn-cu12", "9.28.0.42", "/venv/lib/python3.11/site-packages", (lib,), files, (),
                         (), pip_env=("/venv/bin/python", ()))
    repair = readable_again(Unreachable(lib, True, 0, "root"), 65534, wheel)
    assert [a.do for a in repair.actions] == [ActionKind.CHMOD, ActionKind.PIP_INSTALL, ActionKind.DELETE]
    names = repair.actions[2].names
    assert repair.actions[2].path == lib and set(names) == {
        "libcudnn_adv.so.9.28.0", "libcudnn_adv.so.9.28", "libcudnn_graph.so.9.28.0", "libcudnn_graph.so.9.28"}
    assert repair.actions[2].json() == {"do": "delete", "path": lib, "names": list(names)}
    assert str(repair.actions[2]) == f"in {lib}, delete whichever are there of libcudnn_{{adv,graph}}.so.9.28{{.0,}}"
    assert delete("/x").json() == {"do": "delete", "path": "/x"}  # a delete of the path itself has no names



def test_a_wheel_folder_on_ld_library_path_whose_wheel_is_gone_gets_it_back_by_its_venvs_python(
        tmp_path: Path) -> None:
    """A program of no Python, pointed by LD_LIBRARY_PATH at a venv's nvidia/cudnn/lib whose wheel was uninstalled
    (leftovers only): cuDNN goes back into that venv's site by that venv's interpreter, never a bare `python`."""
    from cudnnload.diagnose.which import not_found_fix
    from cudnnload.resolve.catalog import GENERATIONS
    from cudnnload.resolve.discovery import context

    venv = tmp_path / "venv"
    site = venv_at(venv)
    lib = site / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    said = not_found_fix(GENERATIONS[9], context({"PATH": "/usr/bin", "LD_LIBRARY_PATH": str(lib)}), [], None)
    [action] = said.actions
    assert (action.do, action.target, action.python) == (ActionKind.PIP_INSTALL, str(site), str(venv / "bin/python"))
    assert action.requirements[0].startswith("nvidia-cudnn-cu")


def test_a_versioned_name_that_leads_to_another_sub_library_is_an_error_and_goes(tmp_path: Path) -> None:
    """``libcudnn_adv.so.9.28.0 -> libcudnn_ops.so.9`` (an ``ln -s`` by hand): the shim opens that name before
    ``libcudnn_adv.so.9`` and gets ops, whose SONAME is not adv's: adv's functions are not there (measured: its
    check returns 3009, fix differential case 1-274). The name goes; no wheel ships it. Compared with readelf."""
    import subprocess

    good = folder_of(W928, tmp_path / "good")
    (good / "libcudnn_adv.so.9.28.0").symlink_to("libcudnn_ops.so.9")
    read = subprocess.run(["readelf", "-d", str(good / "libcudnn_adv.so.9.28.0")], capture_output=True, text=True)
    assert "Library soname: [libcudnn_ops.so.9]" in read.stdout
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(good)}, target=str(good / "libcudnn.so.9"), timeout=60)
    [finding] = [f for f in report.findings if f.code == "soname-mismatch"]
    assert finding.severity.value == "error" and "gets ops (SONAME libcudnn_ops.so.9), not adv" in finding.message
    assert [a.json() for a in finding.fix.actions] == [{"do": "delete", "path": str(good / "libcudnn_adv.so.9.28.0")}]


def test_a_dependency_a_copied_cudnn_cannot_find_is_put_on_the_path_from_the_wheel_that_holds_it(
        tmp_path: Path) -> None:
    """A cuDNN copied into a folder pip does not own loses its wheel's RUNPATH ``$ORIGIN/../../cublas/lib``:
    cuBLASLt is not found. The venv named on LD_LIBRARY_PATH has it in its nvidia/cublas/lib: that folder goes
    on LD_LIBRARY_PATH (fix differential 1-383: the by-name app aborted in the heuristic), never a bare pip
    install nor words only."""
    copy = folder_of(W928, tmp_path / "app" / "lib")
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    wheel = folder_of(W928, site / "nvidia" / "cudnn" / "lib")
    shutil.copytree(lib_folder(CUBLAS), site / "nvidia" / "cublas" / "lib", copy_function=os.link)
    env = {**BASE, "LD_LIBRARY_PATH": f"{copy}:{wheel}"}
    report = doctor(env, target=str(copy / "libcudnn.so.9"), timeout=60)
    [missing] = [f for f in report.findings if f.code == "missing-dependency" and "libcublasLt" in f.message]
    assert [a.json() for a in missing.fix.actions] == [
        {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{copy}:{wheel}:{site / 'nvidia/cublas/lib'}"}]


def test_a_wheel_folder_whose_wheel_is_gone_gets_back_the_wheel_its_site_requires(tmp_path: Path) -> None:
    """``pip uninstall nvidia-cudnn-cu13`` and then another release's shim copied into its folder (fix
    differential 1-532: the app and torch aborted in cudnnGetVersion): no distribution owns the folder, so it is
    put back by pip into its own site, by that venv's interpreter, as the wheel its frameworks require (torch's
    pin), never as words only."""
    prefix = tmp_path / "venv"
    site = venv_at(prefix)
    lib = folder_of(W928, site / "nvidia" / "cudnn" / "lib", only=("libcudnn.so.9",))
    info = site / "torch-2.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\nRequires-Dist: "
                                   "nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n")
    report = doctor({**BASE}, target=str(lib / "libcudnn.so.9"), timeout=60)
    assert {"do": "pip-install", "requirements": ["nvidia-cudnn-cu13==9.19.0.56"], "options": [],
            "target": str(site), "python": str(prefix / "bin" / "python")} in actions(report)


def test_a_versioned_name_leading_to_the_same_release_in_another_folder_goes(tmp_path: Path) -> None:
    """``libcudnn_cnn.so.9.28 -> /elsewhere/libcudnn_cnn.so.9`` of the same release number (fix differential
    1-437): it loads, and the process maps cuDNN from two folders. The name goes; no wheel ships it."""
    good = folder_of(W928, tmp_path / "good")
    other = folder_of(W928, tmp_path / "other")
    (good / "libcudnn_cnn.so.9.28").symlink_to(other / "libcudnn_cnn.so.9")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(good)}, target=str(good / "libcudnn.so.9"), timeout=60)
    [finding] = [f for f in report.findings if f.code == "sublibrary-elsewhere"]
    assert finding.severity.value == "error" and str(other / "libcudnn_cnn.so.9") in finding.message
    assert "gets through a link in this install's folder, " in finding.message, finding.message
    assert [a.json() for a in finding.fix.actions] == [{"do": "delete", "path": str(good / "libcudnn_cnn.so.9.28")}]


def test_a_shim_name_stopped_by_an_emptied_wheel_file_gets_the_wheel_put_back(tmp_path: Path) -> None:
    """``libcudnn.so.9`` found first on LD_LIBRARY_PATH in a wheel's folder, emptied: glibc stops there ("file
    too short", fix differential 1-440). The wheel is put back; that folder is not added to the path again."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    lib = site / "nvidia" / "cudnn" / "lib"
    (lib / "libcudnn.so.9").unlink()
    (lib / "libcudnn.so.9").write_bytes(b"")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(lib)}, target="libcudnn.so.9", timeout=60)
    [finding] = [f for f in report.findings if f.code == "not-found"]
    # (a folder of no interpreter, pip's --target: with the cuBLAS the wheel requires, in one install: ahead.py)
    assert [(a.do, a.requirements) for a in finding.fix.actions][0] == (
        ActionKind.PIP_INSTALL, ("nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"))
    assert not any(a.do is ActionKind.ENV_SET for a in finding.fix.actions)


def test_a_release_is_required_with_any_build_of_its_wheel() -> None:
    from cudnnload.resolve.catalog import Release

    assert cudnn_requirement(9, 12, Release(9, 28, 0)) == "nvidia-cudnn-cu12==9.28.0.*"


def test_an_optional_engine_of_another_release_that_stays_mapped_is_an_error() -> None:
    """9.28's engines_precompiled under 9.24's graph (fix differential 1-519; measured: it loads with RTLD_NOW
    beside that graph, which then declines it): graph goes on without it, but the process maps two releases'
    files. One that does not load at all is a warning (graph goes on with fewer engines)."""
    from cudnnload.judge.consequences import UNLOADABLE, Load
    from cudnnload.judge.installs import step_findings
    from cudnnload.resolve.catalog import Release
    from cudnnload.resolve.discovery import Install, Step

    stray = "/stray/libcudnn_engines_precompiled.so.9"
    install = Install("/wheel/lib", 9, Release(9, 24, 0), "graph", "path", None, 13, (), (), ())
    step = Step("engines_precompiled", "/wheel/lib/libcudnn_graph.so.9", ("libcudnn_engines_precompiled.so.9",),
                stray, "ld-library-path", False, Release(9, 28, 0), entry="/stray", variable="LD_LIBRARY_PATH")

    def severity(stays: bool) -> str:
        load = Load("engines_precompiled", stray, Release(9, 28, 0), UNLOADABLE, "declined", "engines_precompiled",
                    stays_mapped=stays)
        [finding] = step_findings(step, install, loads={"engines_precompiled": load})
        assert finding.code == "mixed-release"
        return finding.severity.value

    assert severity(True) == "error" and severity(False) == "warning"


def test_a_program_by_name_is_not_led_to_the_jit_wheel_but_gets_the_full_one(tmp_path: Path) -> None:
    """Only nvidia-cudnn-jit-cu13 has a libcudnn.so.9 in the venv (the full wheel replaced by cuDNN 8's): putting
    its folder on LD_LIBRARY_PATH gives a by-name program a cuDNN whose legacy calls all fail (fix differential
    1-571, 1-666, 1-698: 9.27's JIT shim answered). The full wheel is installed into that venv instead."""
    from cudnnload.diagnose.which import not_found_fix
    from cudnnload.resolve.catalog import GENERATIONS
    from cudnnload.resolve.discovery import context
    from fixtures.scenarios.layouts import JIT, unpacked

    venv = tmp_path / "venv"
    site = venv_at(venv)
    shutil.copytree(unpacked(JIT), site, copy_function=os.link, dirs_exist_ok=True)
    lib = site / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    said = not_found_fix(GENERATIONS[9], context({"PATH": "/usr/bin", "LD_LIBRARY_PATH": str(lib)}), [str(site)],
                         None)
    [action] = said.actions
    assert (action.do, action.target, action.python) == (ActionKind.PIP_INSTALL, str(site), str(venv / "bin/python"))
    assert action.requirements[0].startswith("nvidia-cudnn-cu") and "jit" not in action.requirements[0]


def test_a_versioned_name_that_puts_another_engine_in_an_optional_engines_place_is_an_error(tmp_path: Path) -> None:
    """``libcudnn_engines_precompiled.so.9.28.0 -> libcudnn_engines_tensor_ir.so.9`` (fix differential 1-794):
    graph opens that name first and maps tensor_ir, which loads; graph runs without its precompiled engines and the
    process maps a library the healthy wheel does not (measured: "mapped also libcudnn_engines_tensor_ir.so.9").
    An error, whose fix deletes the name; the whole repair has that deletion (an environment change alone, which
    keeps the name, is not offered)."""
    good = folder_of(W928, tmp_path / "good")
    (good / "libcudnn_engines_precompiled.so.9.28.0").symlink_to("libcudnn_engines_tensor_ir.so.9")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(good)}, target=str(good / "libcudnn.so.9"), timeout=60)
    [finding] = [f for f in report.findings if f.code == "soname-mismatch"]
    assert finding.severity.value == "error" and "with fewer engines" not in finding.message
    deletion = {"do": "delete", "path": str(good / "libcudnn_engines_precompiled.so.9.28.0")}
    assert [a.json() for a in finding.fix.actions] == [deletion]
    first = next(f for f in report.findings if f.severity.value == "error")
    assert deletion in [a.json() for a in first.fix.actions]


def test_an_engine_file_record_does_not_list_is_not_taken_for_the_installs_release() -> None:
    """9.28's engines_tensor_ir copied over 9.24's in its wheel (fix differential 1-892; measured: it stays mapped
    and cudnnBackendFinalize returns 1002, not the healthy 2000). The engines carry no version constant: the release
    the model gives them is their neighbours', which says nothing of a file RECORD does not list as it is. So such a
    file that loads is not "another build of the same release" (a warning): it stays an error, the wheel put back.
    An optional engine's (precompiled) is an error too when the process maps it, a warning when it never does."""
    from cudnnload.judge.consequences import Load, Prediction
    from cudnnload.judge.installs import _loads_as_released, _records, _Repairs
    from cudnnload.resolve.catalog import Release
    from cudnnload.resolve.discovery import Install, Record

    lib = "/site/nvidia/cudnn/lib/"
    records = tuple(Record(lib + name, 201345448, 249581552) for name in
                    ("libcudnn_engines_tensor_ir.so.9", "libcudnn_engines_precompiled.so.9"))
    install = Install(lib.rstrip("/"), 9, Release(9, 24, 0), "graph", "wheel", "nvidia-cudnn-cu13 9.24.0.43", 13, (),
                      (), (), records=records, site="/site")

    def severities(**loads: Load) -> list[str]:
        found = list(_records(install, _Repairs(install, None), loads))
        assert [f.code for f in found] == ["record-mismatch"] * 2
        prediction = Prediction(loads, {}, ())
        return [_loads_as_released(f, prediction, install).severity.value for f in found]

    def load(key: str, asked: bool = True) -> Load:
        return Load(key, f"{lib}libcudnn_{key}.so.9", Release(9, 24, 0), None, None, None, asked=asked)

    assert severities(engines_tensor_ir=load("engines_tensor_ir"),
                      engines_precompiled=load("engines_precompiled")) == ["error", "error"]
    assert severities(engines_tensor_ir=load("engines_tensor_ir"),
                      engines_precompiled=load("engines_precompiled", asked=False)) == ["error", "warning"]


def test_a_plan_says_a_variable_once_when_a_later_round_sets_it_again() -> None:
    """Two rounds that each set LD_LIBRARY_PATH (the second value holds the first's entries): only the last is
    said (fix differential 1-794: "export LD_LIBRARY_PATH=A; then export LD_LIBRARY_PATH=A:B")."""
    from cudnnload.diagnose.remedy import kept_once
    from cudnnload.verdicts import delete, set_variable

    first, second = set_variable("LD_LIBRARY_PATH", "/a"), set_variable("LD_LIBRARY_PATH", "/a:/b")
    other = set_variable("LD_PRELOAD", "/x.so")
    assert kept_once([first, delete("/f"), other, second]) == [delete("/f"), other, second]


def test_a_cuda_library_a_wheel_lacks_goes_into_its_site_whatever_pip_finds_elsewhere(tmp_path: Path) -> None:
    """cuBLAS gone from a venv whose PYTHONPATH folder (a ``pip install --target`` of another cuDNN) has it: pip
    says "Requirement already satisfied" and installs nothing where the wheel's RUNPATH looks (fix differential
    1-895, 1-949, 1-985: the fix applied, the app still aborted in the heuristic). The install into the site is
    made whatever pip finds elsewhere (--ignore-installed), and alone (--no-deps: the site's other packages stay)."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    lib = site / "nvidia" / "cudnn" / "lib"
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(lib)}, target=str(lib / "libcudnn.so.9"), timeout=60)
    [missing] = [f for f in report.findings if f.code == "missing-dependency" and "libcublasLt" in f.message]
    [action] = missing.fix.actions
    # the test's site is pip's --target folder: the wheels of its nvidia folder come along (`fixes.pip_into`)
    assert (action.do, action.requirements[:2], action.target) == (
        ActionKind.PIP_INSTALL, ("nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"), str(site))
    assert action.options[:3] == ("--ignore-installed", "--no-deps", "--upgrade")


def test_a_program_that_asked_for_several_libraries_in_vain_gets_one_repair_that_gives_each() -> None:
    """torch's import wanting cuBLAS (libcusolver NEEDs it) and cuDNN, both uninstalled (fix differential 1-988):
    each miss has its own pip install; the first fix alone left the import failing on the other. One repair with
    both comes first; a single miss stays as it is."""
    from types import SimpleNamespace

    from cudnnload.codes import Code as C
    from cudnnload.diagnose.observe import _each_asked
    from cudnnload.verdicts import Finding, Subject, SubjectKind, fix, pip_install

    cublas = pip_install(["nvidia-cublas"], options=("--ignore-installed", "--no-deps"), target="/s", python="/p")
    cudnn = pip_install(["nvidia-cudnn-cu13>=9,<10"], python="/p")
    misses = tuple(Finding(C.LOAD_FAILED, f"asked for {name} in vain", Subject(SubjectKind.FILE, f"/s/{name}"),
                           fix(action)) for name, action in (("libcublas.so.13", cublas), ("libcudnn.so.9", cudnn)))
    seen = SimpleNamespace(command=["/venv/bin/python", "-c", "import torch"])
    whole, *rest = _each_asked(misses, seen)  # type: ignore[arg-type]
    assert whole.code is C.REPAIR and list(whole.fix.actions) == [cublas, cudnn] and tuple(rest) == misses
    assert _each_asked(misses[:1], seen) == misses[:1]  # type: ignore[arg-type]
    # a death while mapping a cut shim beside a library asked for in vain: the shim is named, not the program
    died = Finding(C.PROGRAM_DIED, "it died", Subject(SubjectKind.PROGRAM, "/venv/bin/python"), fix(cudnn))
    cut = SimpleNamespace(command=["/venv/bin/python", "-c", "import torch"],
                          cut_on="/s/nvidia/cudnn/lib/libcudnn.so.9")
    whole, *_ = _each_asked((misses[0], died), cut)  # type: ignore[arg-type]
    assert "(libcublas.so.13, libcudnn.so.9;" in whole.message and "python" not in whole.message.split("(")[1]


def test_a_cuda_library_a_cudnn_outside_pip_lacks_goes_into_the_shell_s_environment_and_onto_its_path(
        tmp_path: Path) -> None:
    """A cuDNN copied to a folder pip does not own (9.28 for CUDA 12, whose graph dlopens libcublasLt.so.12), in a
    shell whose venv is active and holds no cuBLAS (fix differential 1-838: said in words only): pip installs the
    distribution that has it into the venv's site, and the folder pip puts it in goes on LD_LIBRARY_PATH; the
    words stay as the alternative. Without an active environment, the words alone."""
    assert dependency_folder("nvidia-cublas-cu12", "/s") == "/s/nvidia/cublas/lib"
    assert dependency_folder("nvidia-cuda-nvrtc-cu11", "/s") == "/s/nvidia/cuda_nvrtc/lib"
    assert dependency_folder("nvidia-cublas>=13,<14", "/s") == "/s/nvidia/cu13/lib"
    copied = folder_of(W928, tmp_path / "opt" / "cudnn-9.28" / "lib")
    venv, site = a_venv(tmp_path / "venv")

    def missing(env: dict[str, str]) -> list:
        report = doctor(env, target=str(copied), timeout=60)
        return [f for f in report.findings if f.code is Code.MISSING_DEPENDENCY
                and f.subject.library == "libcublasLt.so.12"]

    [found] = missing({**BASE, "VIRTUAL_ENV": str(venv), "LD_LIBRARY_PATH": str(copied)})
    assert [a.json() for a in found.fix.actions] == [
        {"do": "pip-install", "requirements": ["nvidia-cublas-cu12"], "options": ["--ignore-installed", "--no-deps"],
         "target": str(site), "python": str(venv / "bin" / "python")},
        {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{copied}:{site}/nvidia/cublas/lib"}]
    assert [a.do for a in found.fix.alternatives] == [ActionKind.MANUAL]
    [alone] = missing({**BASE, "LD_LIBRARY_PATH": str(copied)})
    assert [a.do for a in alone.fix.actions] == [ActionKind.MANUAL]


def test_only_a_folder_under_nvidia_is_a_wheel_s_and_has_a_site_above_it() -> None:
    """``SITE/nvidia/cudnn/lib`` (and ``cudnn_jit``, ``cu13``) is a wheel's folder; a tarball's
    ``/opt/cudnn-9.0.0/lib`` or CUDA's ``/usr/local/cuda/lib`` is not (their "site" was ``/`` and ``/usr``: a
    wheel put back there, a copied cuDNN's dependency installed there)."""
    from cudnnload.resolve.discovery import wheel_site

    assert wheel_site("/s/nvidia/cudnn/lib") == wheel_site("/s/nvidia/cu13/lib/") == "/s"
    assert wheel_site("/s/nvidia/cudnn_jit/lib") == "/s"
    assert wheel_site("/opt/cudnn-9.0.0-cuda12/lib") is None and wheel_site("/usr/local/cuda/lib") is None


def test_a_shim_this_user_cannot_reach_through_a_link_also_gets_its_real_folder_on_the_path(tmp_path: Path) -> None:
    """The shim reached by name through a symbolic link in a folder of no sub-libraries, and its real folder closed
    to this user (fix differential 1-594, 1-699, 1-488, 1-906): opening the folder alone leaves ``$ORIGIN`` the
    link's folder, and the program dies in cudnnGetVersion; the real folder goes first on LD_LIBRARY_PATH with the
    mode change. A link beside its sub-libraries, or a plain file, keeps the fix as it is."""
    from cudnnload.diagnose.which import beside_its_libraries
    from cudnnload.resolve.catalog import generation
    from cudnnload.resolve.discovery import context
    from cudnnload.verdicts import chmod, fix

    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    (real / "libcudnn.so.9").write_bytes(b"")
    os.symlink(real / "libcudnn.so.9", links / "libcudnn.so.9")
    ctx = context({**BASE, "LD_LIBRARY_PATH": str(links)}, use_cache=False)
    opened = fix(chmod(str(real), 0o755, owner="root"), note="closed")
    said = beside_its_libraries(opened, str(links / "libcudnn.so.9"), generation(9), ctx)
    assert said.actions[0] == opened.actions[0]
    assert said.actions[1].json() == {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{real}:{links}"}
    assert beside_its_libraries(opened, str(real / "libcudnn.so.9"), generation(9), ctx) == opened
    (links / "libcudnn_graph.so.9").write_bytes(b"")
    assert beside_its_libraries(opened, str(links / "libcudnn.so.9"), generation(9), ctx) == opened
    # a sub-library of another folder preloaded would answer the shim's name once it is reached (1-965): it goes
    ops = str(lib_folder(W90) / "libcudnn_ops.so.9")
    preloaded = context({**BASE, "LD_PRELOAD": ops}, use_cache=False)
    said = beside_its_libraries(opened, str(real / "libcudnn.so.9"), generation(9), preloaded)
    assert [a.json() for a in said.actions][1:] == [{"do": "env-remove-entry", "variable": "LD_PRELOAD",
                                                     "entry": ops}]


def test_a_partial_copy_no_distribution_owns_is_no_install_to_keep_its_entry_for(tmp_path: Path) -> None:
    """LD_LIBRARY_PATH leads a program asking by name to a copy of two files of cuDNN 9 (the shim and adv), which no
    distribution owns, and nothing else is installed, in a shell whose venv is active (fix differential 1-747: the
    repair kept the entry, as the folder of what the program loads, and its end was "put back the complete cuDNN"
    in words). A copy only a person can complete is no install to keep: its entry goes, and the wheel comes into
    the venv with its folder on the path, one value said."""
    partial = folder_of(W928, tmp_path / "work" / "lib", only=("libcudnn.so.9", "libcudnn_adv.so.9"))
    venv, site = a_venv(tmp_path / "venv")
    report = doctor({**BASE, "VIRTUAL_ENV": str(venv), "LD_LIBRARY_PATH": str(partial)}, target="libcudnn.so.9",
                    timeout=60)
    first = report.findings[0]
    assert first.code is Code.REPAIR, [f.code for f in report.findings]
    steps = [a.json() for a in first.fix.actions]
    assert {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{site}/nvidia/cudnn/lib"} in steps, steps
    assert any(s["do"] == "pip-install" and s["target"] == str(site) for s in steps), steps
    assert not any(str(partial) in json_text for json_text in map(str, steps)), steps


def test_a_variable_set_then_an_entry_taken_out_of_it_is_one_setting() -> None:
    from cudnnload.diagnose.remedy import kept_once
    from cudnnload.verdicts import remove_entry, set_variable

    assert kept_once([set_variable("LD_LIBRARY_PATH", "/a:/b"), remove_entry("LD_LIBRARY_PATH", "/a"),
                  remove_entry("LD_PRELOAD", "/p")]) == [set_variable("LD_LIBRARY_PATH", "/b"),
                                                         remove_entry("LD_PRELOAD", "/p")]


def test_a_cudnn_wheel_a_later_step_writes_over_whole_is_not_installed_first() -> None:
    """A repair that put back the program's nvidia-cudnn-cu12 9.0, then torch's nvidia-cudnn-cu13 9.24 with
    --force-reinstall into the same site (fix differential 1-867): both write nvidia/cudnn/lib/libcudnn*.so.9, so
    the first is a download for nothing. Another major's files, another folder, a range pip decides, or a later
    step that would leave out the first's dependencies keep it."""
    from cudnnload.diagnose.remedy import kept_once
    from cudnnload.verdicts import pip_install

    def install(requirement: str, *options: str, target: str = "/site") -> Action:
        return pip_install([requirement], options=options, target=target, python="/venv/bin/python")

    cu12, cu13 = install("nvidia-cudnn-cu12==9.0.0.312", "--force-reinstall", "--no-deps"), \
        install("nvidia-cudnn-cu13==9.24.0.43", "--force-reinstall", "--no-deps")
    assert kept_once([cu12, cu13]) == [cu13] and kept_once([cu13, cu12]) == [cu12]
    assert kept_once([cu12, install("nvidia_cudnn_cu13>=9,<10", "--force-reinstall")]) == \
        [install("nvidia_cudnn_cu13>=9,<10", "--force-reinstall")]
    for kept in (install("nvidia-cudnn-cu12==8.9.7.29", "--force-reinstall", "--no-deps"),
                 install("nvidia-cudnn-cu13==9.24.0.43", "--force-reinstall", "--no-deps", target="/other"),
                 install("nvidia-cudnn-cu12>=9", "--force-reinstall", "--no-deps"),
                 install("nvidia-cudnn-cu12==9.0.0.312", "--force-reinstall")):
        assert kept_once([kept, cu13]) == [kept, cu13], kept
    assert kept_once([cu12, install("nvidia-cudnn-cu13==9.24.0.43")]) == [cu12, install("nvidia-cudnn-cu13==9.24.0.43")]


def test_a_cuda_library_the_shell_s_environment_holds_already_is_put_on_the_path_not_installed_again(
        tmp_path: Path) -> None:
    """The copied cuDNN lacks libcublasLt.so.12, and the active venv holds it already (a framework's, pinned): its
    folder goes on LD_LIBRARY_PATH; no pip install over the framework's pin."""
    copied = folder_of(W928, tmp_path / "opt" / "cudnn-9.28" / "lib")
    venv, site = a_venv(tmp_path / "venv")
    cublas = folder_of(CUBLAS, site / "nvidia" / "cublas" / "lib")
    report = doctor({**BASE, "VIRTUAL_ENV": str(venv), "LD_LIBRARY_PATH": str(copied)}, target=str(copied),
                    timeout=60)
    [found] = [f for f in report.findings if f.code is Code.MISSING_DEPENDENCY
               and f.subject.library == "libcublasLt.so.12"]
    assert [a.json() for a in found.fix.actions] == [
        {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": f"{copied}:{cublas}"}], found


def test_a_framework_refuses_another_major_and_a_runtime_older_than_its_build() -> None:
    from types import SimpleNamespace

    from cudnnload.judge.frameworks import rejects
    from cudnnload.resolve.versions import parse_release

    torch = SimpleNamespace(framework="torch", build=parse_release("9.24.0"))
    assert rejects(torch, parse_release("9.0.0")) and rejects(torch, parse_release("8.9.7"))  # type: ignore[arg-type]
    assert not rejects(torch, parse_release("9.28.0")) and not rejects(torch, parse_release("9.24.0"))  # type: ignore[arg-type]


def test_a_fix_installs_a_release_the_framework_refuses_only_when_it_pins_it() -> None:
    """An exact pin names the release pip installs; a range leaves it to pip (its newest), so it is not judged."""
    from types import SimpleNamespace

    from cudnnload.judge.routes import _installs_refused
    from cudnnload.resolve.versions import parse_release
    from cudnnload.verdicts import fix, pip_install

    torch = SimpleNamespace(framework="torch", build=parse_release("9.24.0"))
    for requirement, refused in (("nvidia-cudnn-cu12==9.0.0.312", True), ("nvidia-cudnn-cu13 == 9.0.0.312", True),
                                 ("nvidia-cudnn-cu13==9.28.0.42", False), ("nvidia-cudnn-cu13>=9,<10", False),
                                 ("nvidia-cublas==12.9.1.4", False), ("not a requirement ==", False)):
        assert _installs_refused(fix(pip_install([requirement])), torch) is refused, requirement  # type: ignore[arg-type]


def test_an_uninstall_takes_its_records_files_out_of_the_model_s_world(tmp_path: Path) -> None:
    """A ``pip uninstall`` of a fix is applied to the model as its RECORD's files gone from the folder it
    uninstalls from (`remedy.uninstalled`): a program by name then finds nothing there, and the install is not
    in the inventory; the files on disk are untouched."""
    from cudnnload.diagnose.remedy import uninstalled
    from cudnnload.diagnose.targets import resolve_target
    from cudnnload.verdicts import pip_uninstall

    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    lib = site / "nvidia" / "cudnn" / "lib"
    gone = uninstalled(pip_uninstall(["nvidia_cudnn_cu12"], target=str(site)))
    assert str(lib / "libcudnn.so.9") in gone and str(lib / "libcudnn_graph.so.9") in gone
    assert not uninstalled(pip_uninstall(["nvidia-cudnn-cu13"], target=str(site)))  # not installed there

    env = {**BASE, "LD_LIBRARY_PATH": str(lib)}
    today = resolve_target("libcudnn.so.9", environ=env)
    after = resolve_target("libcudnn.so.9", environ=env, gone=gone)
    assert today.install is not None and today.install.folder == str(lib)
    assert after.install is None or after.install.folder != str(lib)
    assert (lib / "libcudnn.so.9").is_file()


def test_a_sub_library_of_another_folder_preloaded_that_the_install_does_not_take_is_two_cudnns(
        tmp_path: Path) -> None:
    """A conda-shaped folder (each file under its full version, ``libcudnn_ops.so.9.28.0``, the shim asks for that
    name first) and another build's ``libcudnn_ops.so.9`` on LD_PRELOAD (fix differential 1-1436): the install loads
    its own ops, the preloaded one stays in the process beside it, and the program maps cuDNN from two folders
    (measured there: both files in its maps). The target form said nothing; the command form saw it. Now both say
    mixed-in-process, fixed by taking the entry away; where the preload is what the install's load takes (a wheel's
    folder, no versioned names), it is the finding of that load, not this one."""
    conda = tmp_path / "conda" / "lib"
    conda.mkdir(parents=True)
    for entry in lib_folder(W928).iterdir():
        versioned = f"{entry.name}.28.0"  # libcudnn_ops.so.9 -> libcudnn_ops.so.9.28.0
        os.link(entry, conda / versioned)
        os.symlink(versioned, conda / entry.name)
    ops = folder_of("cu13-9.28.0.42", tmp_path / "other") / "libcudnn_ops.so.9"
    env = {**BASE, "LD_LIBRARY_PATH": str(conda), "LD_PRELOAD": str(ops)}
    report = doctor(env, target="libcudnn.so.9", timeout=60)
    found = [f for f in report.findings if f.code == "mixed-in-process"]
    assert [(f.path, f.severity) for f in found] == [(str(ops), "error")]
    assert [a.json() for a in found[0].fix.actions] == [{"do": "env-remove-entry", "variable": "LD_PRELOAD",
                                                         "entry": str(ops)}]
    wheel = folder_of(W928, tmp_path / "wheel")
    taken = doctor({**BASE, "LD_LIBRARY_PATH": str(wheel), "LD_PRELOAD": str(ops)}, target="libcudnn.so.9",
                   timeout=60)
    assert not [f for f in taken.findings if f.code == "mixed-in-process"]


def test_a_mode_change_mends_a_mode_not_what_the_file_holds() -> None:
    """A sub-library unreadable to the user and cut short too (fix differential 2-3677, a held-out break): the
    repair counted the ``chmod`` as taking care of the finding about its content (its RECORD's size), so the fix
    opened a truncated file to every program, which then died mapping it. A mode change takes care of findings
    about the mode; a reinstall still follows for the content."""
    from cudnnload.codes import SubjectKind
    from cudnnload.diagnose.remedy import taken_care_of
    from cudnnload.verdicts import Finding, Subject, chmod, fix, pip_install

    path = "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_engines_runtime_compiled.so.9"
    mode = chmod(path, 0o644, owner="root")
    reinstall = pip_install(["nvidia-cudnn-cu12==9.28.0.42"], options=["--force-reinstall", "--no-deps"],
                            target="/venv/lib/python3.11/site-packages")
    unreadable = Finding(Code.UNREADABLE, "u", Subject(SubjectKind.FILE, path), fix(mode))
    cut = Finding(Code.RECORD_MISMATCH, "r", Subject(SubjectKind.FILE, path), fix(reinstall))
    assert taken_care_of(unreadable, [mode]) and not taken_care_of(cut, [mode])
    assert taken_care_of(cut, [mode, reinstall])


def test_a_name_deleted_is_gone_from_the_world_the_repair_judges_next(tmp_path: Path) -> None:
    """A delete takes a name away: the repair judges again with it gone, so that what its opener gets next (the
    wheel's own file, and what that one lacks: cuBLAS uninstalled) is planned too (fix differential 2-3639: the
    stray ``libcudnn_engines_precompiled.so.9.28.0`` deleted, the program still aborted for want of cuBLAS 13)."""
    from cudnnload.diagnose.remedy import World
    from cudnnload.verdicts import delete

    folder = tmp_path / "lib"
    world = World({}).after(delete(str(folder), ["libcudnn_ops.so.9.28.0"]), delete(str(folder / "x.so")))
    assert world.gone == {str(folder / "libcudnn_ops.so.9.28.0"), str(folder / "x.so")}


def test_a_versioned_name_found_in_another_folder_is_never_deleted_there(tmp_path: Path) -> None:
    """A wheel's shim relinked to another folder's (a system package's, whose files carry their full version,
    ``libcudnn_graph.so.9.28.0``), that folder on LD_LIBRARY_PATH: the shim asks for the versioned name first and the
    search finds that folder's own file. The fix used to delete it ("no wheel ships that name"), a file of the
    system's own install (seen on the H200: the system's ``libcudnn_graph.so.9.14.0``). Only a name in the install's
    own folder is deleted; for one found elsewhere, what led the search there goes."""
    system = tmp_path / "system"
    system.mkdir()
    for entry in lib_folder(W928).iterdir():
        versioned = f"{entry.name}.28.0"
        os.link(entry, system / versioned)
        os.symlink(versioned, system / entry.name)
    wheel = folder_of(W928, tmp_path / "wheel")
    (wheel / "libcudnn.so.9").unlink()
    (wheel / "libcudnn.so.9").symlink_to(system / "libcudnn.so.9")
    report = doctor({**BASE, "LD_LIBRARY_PATH": str(system)}, target=str(wheel / "libcudnn.so.9"), timeout=60)
    deletes = [path for f in report.findings for a in f.fix.actions for path in a.deletes]
    assert not any(path.startswith(f"{system}/") for path in deletes), deletes
    assert any(f.path and f.path.startswith(f"{system}/") for f in report.findings)  # the name is still said


def test_a_wheel_the_plan_installs_takes_care_of_a_finding_only_when_it_asks_for_nothing_more() -> None:
    """A framework's finding whose fix is the wheel the plan installs already and a start-up line taken out: the
    install alone does not take care of it (the `.pth` line that maps another release's graph would meet the
    wheel); one that asks for that wheel alone is taken care of."""
    from cudnnload.codes import SubjectKind
    from cudnnload.diagnose.remedy import taken_care_of
    from cudnnload.verdicts import Finding, Subject, fix, pip_install, remove_line

    site = "/venv/lib/python3.11/site-packages"
    wheel = pip_install(["nvidia-cudnn-cu13==9.24.0.43"], target=site)
    line = remove_line(f"{site}/old.pth", "import ctypes; ctypes.CDLL('/opt/old/libcudnn_graph.so.9')")
    alone = Finding(Code.CONSUMER_BROKEN, "a", Subject(SubjectKind.CONSUMER, site), fix(wheel))
    more = Finding(Code.CONSUMER_BROKEN, "b", Subject(SubjectKind.CONSUMER, site), fix(wheel, line))
    assert taken_care_of(alone, [wheel])
    assert not taken_care_of(more, [wheel]) and taken_care_of(more, [wheel, line])


def test_no_nvrtc_anywhere_is_its_wheel_installed_by_the_site_interpreter_and_linked() -> None:
    """libnvrtc.so opened as a library loads, no NVRTC on the machine: with the site's own interpreter, pip
    installs the NVRTC wheel of that CUDA there and the link points at the file it ships (CUDA 11's keeps the
    11.2 soname); a bare ``--target`` folder (pip keeps the ``nvidia`` folder already there and installs nothing)
    or a ``--user`` one (its files go elsewhere) gets words."""
    site = "/v/lib/python3.11/site-packages"
    done = unversioned_link("libnvrtc.so", f"{site}/nvidia/cublas/lib", None, 11, site, ("/v/bin/python", ()))
    install, link = done.actions
    assert (install.do, install.requirements, install.python) == (ActionKind.PIP_INSTALL, ("nvidia-cuda-nvrtc-cu11",),
                                                                  "/v/bin/python")
    assert (link.do, link.path, link.target) == (ActionKind.RELINK, f"{site}/nvidia/cublas/lib/libnvrtc.so",
                                                 f"{site}/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2")
    twelve = unversioned_link("libnvrtc.so", f"{site}/nvidia/cudnn/lib", None, 12, site, ("/v/bin/python", ()))
    assert twelve.actions[1].target == f"{site}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    for pip_env in ((None, ()), ("python3.11", ("--user",))):
        words = unversioned_link("libnvrtc.so", "/t/nvidia/cudnn/lib", None, 11, "/t", pip_env)
        assert [a.do for a in words.actions] == [ActionKind.MANUAL], pip_env


def test_into_a_target_folder_a_missing_library_comes_with_the_wheels_its_nvidia_folder_holds(tmp_path: Path) -> None:
    """A folder pip installs into with --target (no interpreter of its own) holding the cuDNN 9.28 wheel and no
    cuBLAS. pip --target keeps an ``nvidia`` folder that is already there and puts nothing into it ("Target directory
    ... already exists"; only cuBLAS's .dist-info lands), so the fix installs the wheels that folder holds along
    with cuBLAS, with --upgrade (pip then replaces it whole). Applied as pip does it
    (`fixtures.scenarios.fixes.place_target`), both are there and the error is gone."""
    source = site_folder(W928)
    site = tmp_path / "site"
    folder_of(W928, site / "nvidia" / "cudnn" / "lib")
    info = next(source.glob("*.dist-info"))
    shutil.copytree(info, site / info.name)
    shim = str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    report = doctor(BASE, target=shim, timeout=60)
    [first] = [f for f in report.findings if f.severity.value == "error" and f.code is Code.MISSING_DEPENDENCY]
    [install] = first.fix.actions
    assert (install.requirements[:2], install.target) == (("nvidia-cudnn-cu12==9.28.0.42", "nvidia-cublas-cu12"),
                                                          str(site))
    assert "--upgrade" in install.options and "--no-deps" in install.options
    done = apply([a.json() for a in first.fix.actions], Folder(tmp_path), [], {})
    assert not done.refused and not done.manual, (done.refused, done.manual)
    assert (site / "nvidia" / "cublas" / "lib" / "libcublasLt.so.12").is_file()
    assert (site / "nvidia" / "cudnn" / "lib" / "libcudnn_engines_precompiled.so.9").is_file()
    again = doctor(BASE, target=shim, timeout=60)
    assert not [f for f in again.findings if f.code is Code.MISSING_DEPENDENCY and f.severity.value == "error"]


def test_a_target_folder_whose_nvidia_folder_holds_what_no_record_lists_gets_words(tmp_path: Path) -> None:
    """Replaced whole, an ``nvidia`` folder with a folder no installed distribution's RECORD lists (a copy) would
    lose it: no pip --target action then, words."""
    site = tmp_path / "site"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (site / "nvidia" / "copied" / "lib").mkdir(parents=True)
    (site / "nvidia_cudnn_cu12-9.28.0.42.dist-info").mkdir()
    (site / "nvidia_cudnn_cu12-9.28.0.42.dist-info" / "RECORD").write_text(
        "nvidia/__init__.py,,\nnvidia/cudnn/lib/libcudnn.so.9,sha256=x,1\n")
    assert along_in_target(str(site)) is None
    shutil.rmtree(site / "nvidia" / "copied")
    assert along_in_target(str(site)) == ("nvidia-cudnn-cu12==9.28.0.42",)
    assert along_in_target(str(tmp_path / "empty")) == ()
    said = pip_into(["nvidia-cublas-cu12"], str(site), (None, ()), along=None)
    assert said.do is ActionKind.MANUAL and "would keep its nvidia folder" in (said.text or "")
    venv = pip_into(["nvidia-cublas-cu12"], str(site), ("/v/bin/python", ()), along=None)
    assert venv.do is ActionKind.PIP_INSTALL and venv.requirements == ("nvidia-cublas-cu12",)


def test_a_setting_for_a_folder_whose_install_the_plan_made_needless_names_the_plans_folder() -> None:
    """Round 1 installs the full wheel into the JIT wheel's venv; round 2 (the model cannot see files a step will
    install) still finds libcudnn.so.9 nowhere a by-name program looks, and its fix installs the same wheel into
    ``~/.local/lib/nvidia-cudnn-9`` and sets LD_LIBRARY_PATH there. That install is dropped (installed already):
    the setting names the venv's folder, which holds the files once the plan is done, not one nothing makes."""
    from cudnnload.diagnose.remedy import plan
    from cudnnload.verdicts import Finding, Subject, SubjectKind, fix, pip_install, set_variable

    venv, user = "/v/lib/python3.11/site-packages", "/home/u/.local/lib/nvidia-cudnn-9"
    wheel = "nvidia-cudnn-cu13>=9,<10"
    ops = Finding(Code.MISSING_SUBLIBRARY, "libcudnn_ops.so.9 is missing", Subject(SubjectKind.INSTALL, venv),
                  fix(pip_install([wheel], target=venv, python="/v/bin/python")))
    by_name = Finding(Code.NOT_FOUND, "dlopen(libcudnn.so.9) would fail", Subject(SubjectKind.TARGET, "libcudnn.so.9"),
                      fix(pip_install([wheel], target=user), set_variable("LD_LIBRARY_PATH",
                                                                          f"{user}/nvidia/cudnn/lib")))
    rounds = iter([[ops, by_name], [by_name], [by_name], []])
    said = plan([ops, by_name], {"PATH": "/usr/bin"}, lambda world: next(rounds, []))
    assert said is not None
    assert [str(a) for a in said.actions][-1] == f"export LD_LIBRARY_PATH={venv}/nvidia/cudnn/lib", said.actions
    assert not any(user in str(a) for a in said.actions), said.actions


def test_the_same_words_with_another_fix_are_planned_again() -> None:
    """Fix differential 3-8313: torch meets cuDNN 9.0 from a ``.pth`` line's folder; with that line gone, it meets 9.0
    from a PYTHONPATH folder, and the finding reads the same word for word. Its fix differs (the PYTHONPATH entry
    out): the plan takes that as a new problem, not one it has handled, and ends with torch getting its own cuDNN."""
    from cudnnload.diagnose.remedy import plan
    from cudnnload.verdicts import Finding, Subject, SubjectKind, fix, remove_entry, remove_line

    site = "/v/lib/python3.11/site-packages"
    said = "torch was built with cuDNN 9.24 and needs a minor of at least 24; the cuDNN that loads is 9.0.0"
    line = remove_line(f"{site}/vendored.pth", "import sys; sys.path.insert(0, '/opt/vendored')")
    first = Finding(Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD, said, Subject(SubjectKind.CONSUMER, site), fix(line))
    again = Finding(Code.CONSUMER_RUNTIME_OLDER_THAN_BUILD, said, Subject(SubjectKind.CONSUMER, site),
                    fix(remove_entry("PYTHONPATH", "/opt/pydeps")))
    rounds = iter([[again], []])
    made = plan([first], {"PYTHONPATH": "/opt/pydeps"}, lambda world: next(rounds, []) if world.unstarted else [first])
    assert made is not None and [a.do for a in made.actions] == [ActionKind.REMOVE_LINE, ActionKind.ENV_REMOVE_ENTRY]


def _wheel(folder: Path, name: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of ``name`` 1.0 holding ``files`` (path -> text), made by hand (no build backend)."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-1.0.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    rows = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip('=')},"
            f"{len(text.encode())}" for path, text in files.items()]
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join([*rows, f"{info}/RECORD,,"]) + "\n")
    return wheel


def test_a_framework_put_back_into_a_target_folder_is_put_back_by_real_pip(tmp_path: Path) -> None:
    """A framework installed with ``pip install --target`` and damaged: ``pip install --target T --force-reinstall
    name==v`` keeps its folder that is there ("Target directory T/name already exists. Specify --upgrade to force
    replacement.") and puts nothing back. The reinstall carries ``--upgrade``, which replaces each of its top-level
    folders whole, with the distributions whose files share them (a namespace folder two plugins install into).
    Run by the real pip, offline, from hand-made wheels."""
    from cudnnload.judge.fixes import reinstall
    from cudnnload.resolve.pythons import sharing_in_target

    wheels, target = tmp_path / "wheels", tmp_path / "target"
    wheels.mkdir()
    _wheel(wheels, "fwk", {"fwk/__init__.py": "A = 1\n", "fwk_plugins/fwk_cuda.py": "B = 1\n"})
    _wheel(wheels, "fwk_pjrt", {"fwk_plugins/fwk_pjrt.py": "C = 1\n"})
    _wheel(wheels, "other", {"other/__init__.py": "D = 1\n"})
    offline = ["--no-index", "--find-links", str(wheels), "--disable-pip-version-check", "--no-cache-dir"]

    def pip(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pip", *argv, *offline], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    pip("install", "--target", str(target), "fwk==1.0", "fwk_pjrt==1.0", "other==1.0")
    assert sharing_in_target(str(target), "fwk") == ("fwk-pjrt==1.0",)
    assert sharing_in_target(str(target), "other") == ()
    (target / "fwk" / "__init__.py").unlink()
    action = reinstall("fwk", "1.0", str(target), (None, ()), along=sharing_in_target(str(target), "fwk"))
    assert "--upgrade" in action.options and action.requirements == ("fwk-pjrt==1.0", "fwk==1.0"), action
    # without --upgrade, pip says it keeps the folder and puts nothing back
    said = pip("install", "--force-reinstall", "--no-deps", "--target", str(target), "fwk==1.0")
    assert "Specify --upgrade" in said and not (target / "fwk" / "__init__.py").exists()
    pip("install", *action.options, "--target", str(target), *action.requirements)
    assert (target / "fwk" / "__init__.py").read_text() == "A = 1\n"
    assert (target / "fwk_plugins" / "fwk_pjrt.py").exists() and (target / "fwk_plugins" / "fwk_cuda.py").exists()
    assert (target / "other" / "__init__.py").exists()


def test_a_link_to_a_wheels_shim_another_release_overwrote_is_mended_by_putting_that_wheel_back(
        tmp_path: Path) -> None:
    """A folder first on LD_LIBRARY_PATH holds only a link to a pip wheel's shim (the wheel's folder next), and
    9.0's shim was copied over that file (fix differential 3-390, 3-573: the fix was "replace the link with the
    shim of 9.28's release", in words). The link's target is the wheel's file: the wheel put back into its site
    mends it, as it does for a program that opens the wheel's folder itself; after it the model finds no mix."""
    site = tmp_path / "site"
    shutil.copytree(lib_folder(W928).parents[2], site, copy_function=os.link)
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    shim.unlink()  # a new file: the old one is a hard link of the test's wheel
    shutil.copyfile(lib_folder(W90) / "libcudnn.so.9", shim)
    links = tmp_path / "links"
    links.mkdir()
    os.symlink(shim, links / "libcudnn.so.9")
    env = {**BASE, "LD_LIBRARY_PATH": f"{links}:{shim.parent}"}  # the link first, then the wheel's own folder

    report = doctor(env, target="libcudnn.so.9", timeout=60)

    older = next(f for f in report.findings if f.code == "mixed-release" and f.path == str(links / "libcudnn.so.9"))
    put_back = older.fix.actions[0].json()
    assert {k: put_back.get(k) for k in ("do", "target")} == {"do": "pip-install", "target": str(site)}, older
    assert put_back["requirements"][0] == "nvidia-cudnn-cu12==9.28.0.42", put_back
    assert not any(a.do is ActionKind.MANUAL for a in older.fix.actions), older

    shim.unlink()  # what pip's --force-reinstall does: the wheel's own file back in its place
    os.link(lib_folder(W928) / "libcudnn.so.9", shim)
    after = doctor(env, target="libcudnn.so.9", timeout=60)
    assert not any(f.code == "mixed-release" for f in after.findings), [f.code for f in after.findings]


def test_a_framework_is_never_pointed_at_the_jit_wheels_folder(tmp_path: Path) -> None:
    """A framework that finds no cuDNN is pointed at the shim folder of its site that its search does not reach,
    only where that folder holds every sub-library a framework's calls need (fix differential 3-6756: torch, its
    own wheel partly uninstalled, was pointed at the JIT wheel's folder, which has no ops, cnn or adv, and the
    repair ended as a setting of LD_LIBRARY_PATH to its own value)."""
    from cudnnload.resolve.discovery import context
    from cudnnload.resolve.routes import _shim_on_path
    from fixtures.scenarios.layouts import JIT, install, needs_wheels

    needs_wheels()
    site = tmp_path / "site"
    install(site, JIT)
    ctx = context(BASE)
    assert _shim_on_path([str(site)], 9, ctx) is None
    full = folder_of(W928, site / "nvidia" / "cudnn" / "lib")
    assert _shim_on_path([str(site)], 9, ctx) == str(full)


def test_a_change_that_leaves_the_environment_as_it_is_is_no_repair() -> None:
    """The least change is a change: a setting of a variable to the value it has mends nothing, whatever the
    model finds after it (fix differential 3-6756's "export LD_LIBRARY_PATH=<its own value>")."""
    from cudnnload.codes import Severity, SubjectKind
    from cudnnload.diagnose.remedy import least_change
    from cudnnload.verdicts import Finding, Subject, fix, set_variable

    env = {**BASE, "LD_LIBRARY_PATH": "/nonexistent/links"}  # (a folder that is not there: no removal is tried)
    same = Finding(Code.CONSUMER_BROKEN, "m", Subject(SubjectKind.FILE, "/x"),
                   fix(set_variable("LD_LIBRARY_PATH", "/nonexistent/links")), severity=Severity.ERROR)

    def judge(world):  # type: ignore[no-untyped-def]  # the model finds the error today, in no changed world
        return [same] if world.environ == env else []
    assert least_change(env, judge, findings=[same]) is None
    other = Finding(Code.CONSUMER_BROKEN, "m", Subject(SubjectKind.FILE, "/x"),
                    fix(set_variable("LD_LIBRARY_PATH", "/nonexistent/wheel")), severity=Severity.ERROR)
    found = least_change(env, judge, findings=[other])
    assert found is not None and [a.json() for a in found.actions] == [
        {"do": "env-set", "variable": "LD_LIBRARY_PATH", "value": "/nonexistent/wheel"}]


def test_a_program_by_name_gets_back_the_wheel_on_its_search_path_not_one_only_pythons_see(tmp_path: Path) -> None:
    """Fix differential 3-8534: a program of no Python, LD_LIBRARY_PATH naming a venv's wheel folder whose shim is
    another machine's (the loader passes over it), and a PYTHONPATH folder, first on the sys.path doctor reads,
    whose wheel's RECORD lists a shim that is gone. Putting that one back gave the program nothing (it does not
    search PYTHONPATH): the wheel on its search path is put back, by its venv's interpreter."""
    from cudnnload.diagnose.which import not_found_fix
    from cudnnload.resolve.catalog import GENERATIONS
    from cudnnload.resolve.discovery import context

    pydeps = tmp_path / "pydeps"
    shutil.copytree(site_folder("cu12-9.28.0.42"), pydeps, copy_function=os.link)
    (pydeps / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").unlink()
    venv = tmp_path / "venv"
    site = venv_at(venv)
    shutil.copytree(site_folder("cu12-9.28.0.42"), site, copy_function=os.link, dirs_exist_ok=True)
    lib = site / "nvidia" / "cudnn" / "lib"
    shim = lib / "libcudnn.so.9"
    data = bytearray(shim.read_bytes())
    shim.unlink()
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    shim.write_bytes(bytes(data))
    said = not_found_fix(GENERATIONS[9], context({"PATH": "/usr/bin", "LD_LIBRARY_PATH": str(lib)}),
                         [str(pydeps), str(site)], None)
    [action] = said.actions
    assert (action.do, action.target, action.python) == (ActionKind.PIP_INSTALL, str(site), str(venv / "bin/python"))
    assert "the loader passes over it" in str(said.note)


def _judged_through_a_link(tmp_path: Path, change: Callable[[Path], None]) -> tuple[Judged, Path, Path]:
    """A venv holding the 9.28 cu12 wheel, its library folder changed by ``change``, and LD_LIBRARY_PATH naming a
    folder holding only a link to its shim, then the wheel's folder: the install of the link as judged, the venv
    and the wheel's library folder."""
    from cudnnload.diagnose.inventory import judged_install_of
    from cudnnload.resolve.discovery import context
    from cudnnload.resolve.sources import cudnn_distributions

    venv = tmp_path / "venv"
    site = venv_at(venv)
    shutil.copytree(site_folder("cu12-9.28.0.42"), site, copy_function=os.link, dirs_exist_ok=True)
    lib = site / "nvidia" / "cudnn" / "lib"
    change(lib)
    links = tmp_path / "links"
    links.mkdir()
    (links / "libcudnn.so.9").symlink_to(lib / "libcudnn.so.9")
    ctx = context({"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": f"{links}:{lib}"})
    judged = judged_install_of(str(links / "libcudnn.so.9"), ctx, "test", cudnn_distributions([str(site)]))
    assert judged is not None
    return judged, venv, lib


def test_an_optional_engine_library_whose_load_kills_the_process_is_an_error_not_one_graph_goes_without(
        tmp_path: Path) -> None:
    """Fix differential 3-8957: the wheel's heuristic cut at 1 MB, reached through a link to its shim on
    LD_LIBRARY_PATH. Graph would run without a heuristic library, but this one is there and its dlopen dies of
    SIGBUS (the app died in cudnnBackendFinalize): its record mismatch is an error, put back by the wheel."""
    def cut(lib: Path) -> None:
        heuristic = lib / "libcudnn_heuristic.so.9"
        head = heuristic.read_bytes()[:1 << 20]
        heuristic.unlink()  # a hard link to the test cache's file: cut a copy
        heuristic.write_bytes(head)

    judged, _, _ = _judged_through_a_link(tmp_path, cut)
    [mismatch] = [f for f in judged.findings if f.code is Code.RECORD_MISMATCH]
    assert mismatch.severity.value == "error" and "fewer engines" not in mismatch.message
    assert mismatch.fix.actions[0].requirements == ("nvidia-cudnn-cu12==9.28.0.42",)


def test_a_shim_linked_into_a_wheel_is_judged_against_that_wheels_record(tmp_path: Path) -> None:
    """Fix differential 3-8607: LD_LIBRARY_PATH names a folder holding only a link to a venv wheel's shim, then the
    wheel's folder, in which a sub-library is another release's (no version constant of its own says so: its size
    against RECORD does; in the case, an engine library). The process maps it through the link (measured:
    cudnnBackendFinalize returned 1002). The install of the link is judged against the wheel's RECORD, and the wheel
    is put back by its venv's python."""
    def other_release(lib: Path) -> None:
        (lib / "libcudnn_cnn.so.9").unlink()
        shutil.copy(lib_folder("cu12-9.0.0.312") / "libcudnn_cnn.so.9", lib / "libcudnn_cnn.so.9")

    judged, venv, lib = _judged_through_a_link(tmp_path, other_release)
    [mismatch] = [f for f in judged.findings if f.code is Code.RECORD_MISMATCH]
    assert mismatch.severity.value == "error" and mismatch.subject.path == str(lib / "libcudnn_cnn.so.9")
    [action] = mismatch.fix.actions
    assert (action.do, action.python) == (ActionKind.PIP_INSTALL, str(venv / "bin/python"))
    assert action.requirements == ("nvidia-cudnn-cu12==9.28.0.42",)


def test_no_change_is_a_repair_where_the_model_finds_nothing_wrong_today() -> None:
    """The errors of a run the model does not see (cuInit's out of memory under an address-space limit, on the
    H200): every changed world is as clean as today's, and the first change tried ("remove /usr/local/nvidia/lib64
    from LD_LIBRARY_PATH") was said as the repair. The model shows no change mends anything: none is."""
    from cudnnload.diagnose.remedy import least_change

    assert least_change({**BASE, "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64:/"}, lambda world: []) is None


def _site_of(tmp_path: Path, *unpacked: str) -> Path:
    """A site-packages folder holding the libraries of each of ``unpacked`` (folders under the test cache's unpacked/,
    their nvidia/*/lib files hard-linked) and their .dist-info."""
    site = tmp_path / "site"
    for name in unpacked:
        source = site_folder(W90).parent / name
        if not source.is_dir():
            pytest.skip(f"{name} not unpacked under {source.parent}: run `make wheels`")
        for lib in source.glob("nvidia/*/lib"):
            folder = site / lib.relative_to(source)
            folder.mkdir(parents=True, exist_ok=True)
            for entry in lib.iterdir():
                if entry.is_file():
                    os.link(entry, folder / entry.name)
        info = next(source.glob("*.dist-info"))
        shutil.copytree(info, site / info.name)
    return site


def test_a_dependency_pip_puts_where_the_runpath_of_cudnn_9_0_does_not_reach_goes_on_the_search_path(
        tmp_path: Path) -> None:
    """cuDNN 9.0's wheel names ``$ORIGIN/../../nvrtc/lib`` in its RUNPATH (as does 9.1's for CUDA 11), where
    nvidia-cuda-nvrtc-cu12 puts libnvrtc.so.12 in ``nvidia/cuda_nvrtc/lib``. With that wheel installed, graph's run-time
    dlopen of NVRTC finds nothing, and the fix was to install the wheel (the same finding, and fix, after it). The
    folder goes on LD_LIBRARY_PATH: the finding is gone, and the real loader then opens libnvrtc.so.12 after graph."""
    site = _site_of(tmp_path, "nvidia-cudnn-cu12-9.0.0.312", "nvidia-cublas-cu12-12.9.1.4",
                    "nvidia-cuda-nvrtc-cu12-12.9.86")
    shim = site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    nvrtc = site / "nvidia" / "cuda_nvrtc" / "lib"

    def said(env: dict[str, str]) -> list[object]:
        report = doctor(env, target=str(shim), timeout=60)
        return [f for f in report.findings if f.code is Code.MISSING_DEPENDENCY and "libnvrtc.so.12" in f.message]

    [finding] = said(BASE)
    [setting] = finding.fix.actions  # type: ignore[attr-defined]
    assert (setting.do, setting.variable, setting.value) == (ActionKind.ENV_SET, "LD_LIBRARY_PATH", str(nvrtc))
    env = applied(BASE, [a.json() for a in finding.fix.actions])  # type: ignore[attr-defined]
    assert said(env) == []
    opens = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); ctypes.CDLL('libnvrtc.so.12')"
    graph = str(shim.parent / "libcudnn_graph.so.9")
    assert subprocess.run([sys.executable, "-c", opens, graph], env=env, capture_output=True).returncode == 0
    assert subprocess.run([sys.executable, "-c", opens, graph], env=BASE, capture_output=True).returncode != 0
    # without NVRTC installed: the wheel, then the same setting
    shutil.rmtree(nvrtc.parent)
    [finding] = said(BASE)
    install, setting = finding.fix.actions  # type: ignore[attr-defined]
    assert install.do is ActionKind.PIP_INSTALL and "nvidia-cuda-nvrtc-cu12" in install.requirements
    assert (setting.do, setting.value) == (ActionKind.ENV_SET, str(nvrtc))


def test_a_shim_of_another_major_in_a_wheel_s_folder_gets_the_wheel_its_site_requires(tmp_path: Path) -> None:
    """nvidia-cudnn-cu11 8.5 installed in a venv whose torch is built for CUDA 13, and a cuDNN 9.28 shim copied into
    that wheel's folder (fix differential 3-14377): the cuDNN 9 it lacks comes from the wheel torch requires
    (nvidia-cudnn-cu13), not from a cuDNN 9 for the CUDA 11 of the folder's distribution (no such wheel serves a
    CUDA 13 torch)."""
    venv, site = a_venv(tmp_path / "venv")
    shutil.copytree(site_folder("cu11-8.5.0.96"), site, dirs_exist_ok=True, copy_function=os.link)
    lib = site / "nvidia" / "cudnn" / "lib"
    os.link(lib_folder(W928) / "libcudnn.so.9", lib / "libcudnn.so.9")
    info = site / "torch-2.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\nRequires-Dist: "
                                   "nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n")
    report = doctor({**BASE}, target=str(lib / "libcudnn.so.9"), timeout=60)
    installs = [a for a in actions(report) if a["do"] == "pip-install"]
    assert installs and all(a["requirements"] == ["nvidia-cudnn-cu13==9.19.0.56"] for a in installs), installs
