"""The fix proof (fixtures/scenarios/fixes.py, issue 17 item 4): a fix is right when, applied to a copy of a
failing layout, it makes the app work; every fix the corpus declares is proven here, the harness is held to
its contract (actions applied as the JSON says, nothing of the corpus or the wheels touched), and doctor's own
fixes are proven wherever doctor gives actions.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from fixtures.scenarios.fixes import (
    MANUAL_ONLY,
    NEEDS_MANUAL,
    NO_ACTIONS,
    NO_ERROR,
    NO_REPORT,
    NOT_APPLIED,
    PROVEN,
    STILL_FAILING,
    advice,
    apply,
    attempt,
    clone,
    copies_root,
    failing,
    kinds,
    merge,
    placed,
    prove,
)
from fixtures.scenarios.layouts import (
    SITE,
    Layout,
    by_name,
    corpus_marks,
    ensure,
    manual,
    needs_wheels,
    reference_of,
    remove_entry,
)
from tests.wheels import lib_folder, site_folder

pytestmark = corpus_marks()

AUTOMATIC = [(layout, index) for layout in failing() for index, fix in enumerate(layout.fixes)
             if set(kinds(fix)) != {"manual"}]


@pytest.mark.timeout_s(300)  # the first pip install of a wheel unpacks ~1 GB (kept for the next run)
@pytest.mark.parametrize(("layout", "index"), AUTOMATIC, ids=[f"{layout.name}#{index}" for layout, index in AUTOMATIC])
def test_every_fix_the_corpus_declares_makes_its_layout_work(layout: object, index: int) -> None:
    needs_wheels()
    proof = prove(layout, "declared", declared=index)  # type: ignore[arg-type]
    assert proof.verdict == PROVEN, proof.why


def test_a_fix_made_of_manual_actions_is_reported_manual_and_never_proven() -> None:
    needs_wheels()
    proof = prove(by_name("app-opens-unversioned-name"), "declared")
    assert (proof.verdict, proof.why) == (MANUAL_ONLY, ("open libcudnn.so.9, the name the wheel ships",))


def test_an_applied_fix_that_does_not_cure_the_layout_says_how_the_app_still_fails() -> None:
    needs_wheels()
    layout = by_name("system-cudnn-fills-missing-graph")
    copy = clone(layout, copies_root() / "test-still-failing")
    verdict, why = attempt(copy, [placed(remove_entry("LD_LIBRARY_PATH", "{layout}/system"), copy)])
    assert verdict == STILL_FAILING and why == ("dies of SIGABRT in version:cudnnGetVersion",)


# --- the report's fixes, as the JSON contract gives them ----------------------------------------------------

def _report(*findings: dict[str, object]) -> dict[str, object]:
    return {"schema": 1, "kind": "doctor", "result": {"findings": list(findings)}}


def test_a_fix_still_given_as_text_counts_as_no_action() -> None:
    said = advice(_report({"code": "missing-sublibrary", "severity": "error", "fix": "pip install nvidia-cudnn-cu12"}))
    assert (said.codes, said.actions, said.texts) == (("missing-sublibrary",), (), ("pip install nvidia-cudnn-cu12",))


def test_only_error_findings_give_actions_each_once_in_order() -> None:
    unset = {"do": "env-unset", "variable": "LD_PRELOAD"}
    delete = {"do": "delete", "path": "/x/libcudnn.so.9"}
    said = advice(_report(
        {"code": "mixed-release", "severity": "error", "fix": {"text": "t", "actions": [unset, delete]}},
        {"code": "missing-dependency", "severity": "warning", "fix": {"text": "w", "actions": [manual("driver")]}},
        {"code": "record-mismatch", "severity": "error", "fix": {"text": "u", "actions": [delete]}},
        {"code": "mixed-release", "severity": "error", "fix": {"text": "t", "actions": [unset]}}))
    assert said.codes == ("mixed-release", "record-mismatch") and said.actions == (unset, delete)


def test_alternatives_are_ways_of_their_own_and_never_applied_beside_the_actions() -> None:
    remove = {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": "/old"}
    pin = {"do": "run", "argv": ["cudnnload", "run", "--cudnn", "/new", "--"]}
    said = advice(_report({"code": "mixed-release", "severity": "error",
                           "fix": {"text": "t", "actions": [remove], "alternatives": [pin]}}))
    assert said.actions == (remove,)


def test_a_typed_fix_in_a_doctor_report_is_applied_and_proven() -> None:
    """What doctor's report will carry (issue 17): the harness applies it as it applies the corpus's own."""
    needs_wheels()
    layout = by_name("partial-9.0-before-complete-9.28")
    copy = clone(layout, copies_root() / "test-typed")
    entry = str(copy.folder() / "partial")
    said = advice(_report({"code": "mixed-release", "severity": "error", "fix": {
        "text": f"remove {entry} from LD_LIBRARY_PATH",
        "actions": [{"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH", "entry": entry}]}}))
    assert attempt(copy, said.actions) == (PROVEN, ())


# --- applying actions ---------------------------------------------------------------------------------------

def test_ld_preload_entries_split_on_spaces_and_colons_as_glibc_does() -> None:
    layout = by_name("healthy-9.28-cu12")
    done = apply([{"do": "env-remove-entry", "variable": "LD_PRELOAD", "entry": "/b/libcudnn_ops.so.9"}], layout,
                 ["app"], {"LD_PRELOAD": "/a/libz.so.1 /b/libcudnn_ops.so.9:/c/libm.so.6"})
    assert done.env["LD_PRELOAD"] == "/a/libz.so.1 /c/libm.so.6" and not done.refused


def test_removing_the_last_entry_unsets_the_variable_and_a_missing_entry_is_refused() -> None:
    layout = by_name("healthy-9.28-cu12")
    gone = apply([remove_entry("LD_LIBRARY_PATH", "/x/lib/")], layout, ["app"], {"LD_LIBRARY_PATH": "/x/lib"})
    assert "LD_LIBRARY_PATH" not in gone.env and not gone.refused
    kept = apply([remove_entry("LD_LIBRARY_PATH", "/y")], layout, ["app"], {"LD_LIBRARY_PATH": "/x/lib"})
    assert kept.env == {"LD_LIBRARY_PATH": "/x/lib"} and kept.refused == ["/y is not an entry of LD_LIBRARY_PATH"]


def test_a_run_action_runs_the_program_through_its_argv_with_the_cudnnload_measured() -> None:
    layout = by_name("healthy-9.28-cu12")
    done = apply([{"do": "run", "argv": ["cudnnload", "run", "--"]}], layout, ["app", "x"], {})
    assert done.argv == [sys.executable, "-m", "cudnnload", "run", "--", "app", "x"]


def test_a_delete_outside_the_copy_is_refused_and_removes_nothing(tmp_path: Path) -> None:
    needs_wheels()
    outsider = tmp_path / "libcudnn.so.9"
    outsider.write_bytes(b"keep")
    copy = clone(by_name("healthy-9.28-cu12"), copies_root() / "test-delete")
    escape = str(copy.folder() / SITE / ".." / ".." / ".." / ".." / ".." / outsider.name)
    done = apply([{"do": "delete", "path": str(outsider)}, {"do": "delete", "path": escape}], copy, ["app"], {})
    assert outsider.read_bytes() == b"keep" and len(done.refused) == 2


def test_a_pip_fix_replaces_the_copy_s_files_and_never_touches_the_corpus_or_the_wheels() -> None:
    needs_wheels()
    layout = by_name("truncated-cnn")
    original = ensure(layout) / SITE / "libcudnn_cnn.so.9"
    unpacked = ensure(reference_of(layout)) / SITE / "libcudnn_graph.so.9"
    before = [(p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) for p in (original, unpacked)]
    proof = prove(layout, "declared")
    assert proof.verdict == PROVEN
    assert [(p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) for p in (original, unpacked)] == before
    fixed = copies_root() / "truncated-cnn-declared" / SITE / "libcudnn_cnn.so.9"
    assert fixed.stat().st_ino != original.stat().st_ino and fixed.stat().st_size > original.stat().st_size


# --- doctor's own fixes ------------------------------------------------------------------------------------------

# Layouts whose fix doctor cannot have proven here, and why: its fix holds a manual step this machine cannot
# apply or show working (each an xfail that must keep failing: strict).
KNOWN_UNPROVABLE: dict[str, str] = {}

DOCTOR_CASES = [pytest.param(layout, form, id=f"{layout.name}-{form}", marks=[pytest.mark.xfail(
    strict=True, reason=KNOWN_UNPROVABLE[layout.name])] if layout.name in KNOWN_UNPROVABLE else [])
    for layout in failing() for form in ("target", "command") if form == "command" or layout.static]


@pytest.mark.slow
@pytest.mark.timeout_s(300)
@pytest.mark.parametrize(("layout", "form"), DOCTOR_CASES)
def test_the_fix_doctor_gives_is_the_right_one_and_makes_the_app_work(layout: object, form: str) -> None:
    needs_wheels()
    proof = prove(layout, form)  # type: ignore[arg-type]
    manual_only = all(set(kinds(fix)) == {"manual"} for fix in layout.fixes)  # type: ignore[attr-defined]
    # a doctor that crashes, finds nothing wrong or gives its fix as text only has failed the case: never an
    # expected failure (that once hid a crash of every case behind "44 xfailed")
    assert proof.verdict not in (NO_REPORT, NO_ACTIONS, NO_ERROR), proof
    if manual_only:  # doctor's fix may have automatic steps too; its manual ones (a driver) are not taken here
        assert proof.verdict in (MANUAL_ONLY, NEEDS_MANUAL, PROVEN), proof
        return
    assert proof.verdict not in (NOT_APPLIED, MANUAL_ONLY), proof
    assert proof.verdict == PROVEN and proof.right_kinds, proof


# --- the other action kinds (issue 31: every kind of the contract applied, nothing shared written into) -------------

def _copy(name: str) -> Layout:
    needs_wheels()
    return clone(by_name("healthy-9.28-cu12"), copies_root() / name)


def test_relink_makes_the_path_a_link_and_refuses_one_that_leaves_the_copy() -> None:
    copy = _copy("test-relink")
    path = str(copy.folder() / SITE / "libcudnn_ops.so.9.28.0")
    done = apply([{"do": "relink", "path": path, "target": "libcudnn_ops.so.9"},
                  {"do": "relink", "path": path, "target": "../../../../../../../../etc/hostname"}], copy, ["app"], {})
    assert os.readlink(path) == "libcudnn_ops.so.9" and len(done.refused) == 1


def test_chmod_gives_the_copy_a_file_of_its_own_and_leaves_the_wheel_s_mode() -> None:
    copy = _copy("test-chmod")
    path = copy.folder() / SITE / "libcudnn_cnn.so.9"
    shared = os.stat(path)
    done = apply([{"do": "chmod", "path": str(path), "mode": "0600"}], copy, ["app"], {})
    assert not done.refused and stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_ino != shared.st_ino
    assert stat.S_IMODE(os.stat(lib_folder("cu12-9.28.0.42") / "libcudnn_cnn.so.9").st_mode) == \
        stat.S_IMODE(shared.st_mode)


def test_remove_line_writes_the_file_again_without_that_line() -> None:
    copy = _copy("test-remove-line")
    pth = copy.folder() / "site" / "preload.pth"
    line = "import ctypes; ctypes.CDLL('/old/libcudnn_graph.so.9')"
    pth.write_text(f"import os\n{line}\n")
    os.link(pth, copy.folder() / "shared.pth")
    done = apply([{"do": "remove-line", "path": str(pth), "line": line},
                  {"do": "remove-line", "path": str(pth), "line": "not there"}], copy, ["app"], {})
    assert pth.read_text() == "import os\n" and (copy.folder() / "shared.pth").read_text().count("\n") == 2
    assert done.refused == [f"remove-line {pth}: no line 'not there'"]


def test_pip_uninstall_removes_what_record_lists_and_the_folders_it_empties() -> None:
    copy = _copy("test-uninstall")
    site = copy.folder() / "site"
    done = apply([{"do": "pip-uninstall", "requirements": ["nvidia-cudnn-cu12"], "target": str(site), "python": None},
                  {"do": "pip-uninstall", "requirements": ["nvidia-cudnn-cu13"], "target": str(site), "python": None}],
                 copy, ["app"], {})
    assert not done.refused and done.notes == [f"pip-uninstall nvidia-cudnn-cu13: not installed in {site}"]
    assert not (site / "nvidia" / "cudnn").exists() and not list(site.glob("nvidia_cudnn*.dist-info"))
    assert (site / "nvidia" / "cublas" / "lib" / "libcublasLt.so.12").exists()  # no RECORD lists it


def test_an_empty_entry_of_a_search_path_is_an_entry_that_can_be_removed() -> None:
    done = apply([remove_entry("LD_LIBRARY_PATH", "")], by_name("healthy-9.28-cu12"), ["app"],
                 {"LD_LIBRARY_PATH": "/a::/b"})
    assert done.env["LD_LIBRARY_PATH"] == "/a:/b" and not done.refused


def test_a_pip_install_of_another_version_uninstalls_the_one_there() -> None:
    copy = _copy("test-merge")
    site = copy.folder() / "site"
    merge(site_folder("cu12-9.0.0.312"), site)
    assert sorted(d.name for d in site.glob("nvidia_cudnn*.dist-info")) == ["nvidia_cudnn_cu12-9.0.0.312.dist-info"]
    assert not (site / SITE.removeprefix("site/") / "libcudnn_ext.so.9").exists()  # 9.28's, which 9.0 does not ship
