"""The vocabulary of a verdict holds together: README's table of codes is this code's, every finding's
severity is one its code allows, and a fix's JSON is the contract other tools apply.

``python -m tests.test_verdicts`` rewrites README's table from `cudnnload.codes.Code`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from cudnnload.codes import ActionKind, Code, Severity, SubjectKind
from cudnnload.verdicts import (
    Finding,
    Subject,
    chmod,
    delete,
    fix,
    manual,
    pip_install,
    pip_uninstall,
    relink,
    remove_entry,
    remove_line,
    restart,
    run,
    set_variable,
    unset,
)

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- codes: generated from cudnnload/codes.py by `python -m tests.test_verdicts` -->"
END = "<!-- codes: end -->"


def codes_table() -> str:
    rows = ["| code | severity | blocks `load()` | meaning |", "|---|---|---|---|"]
    for code in Code:
        severities = " / ".join(s.value for s in code.severities)
        rows.append(f"| `{code.value}` | {severities} | {'yes' if code.blocks_load else ''} | {code.text} |")
    return "\n".join(rows)


def readme_table(text: str) -> str:
    match = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert match, "README's table of codes has lost its markers"
    return match.group(1)


def test_readme_lists_every_code_once_as_the_code_says() -> None:
    assert readme_table(README.read_text()) == codes_table(), "run: python -m tests.test_verdicts"


def test_codes_are_unique_and_each_has_its_severities_and_text() -> None:
    values = [code.value for code in Code]
    assert len(values) == len(set(values)) >= 55
    assert all(code.text and code.severity in code.severities for code in Code)


def test_a_finding_of_a_severity_its_code_never_has_is_refused() -> None:
    subject = Subject(SubjectKind.FILE, "/x")
    assert Finding(Code.NO_DRIVER, "m", subject, severity=Severity.ERROR).severity is Severity.ERROR
    assert Finding("mixed-release", "m", subject).code is Code.MIXED_RELEASE  # read back from JSON: a str
    with pytest.raises(ValueError, match="never info"):
        Finding(Code.MISSING_SUBLIBRARY, "m", subject, severity=Severity.INFO)
    with pytest.raises(ValueError, match="never error"):
        Finding(Code.LDCACHE_STALE, "m", subject, severity=Severity.ERROR)


def test_an_error_that_does_not_apply_here_may_be_said_as_a_warning() -> None:
    subject = Subject(SubjectKind.FILE, "/x")
    assert Finding(Code.MISSING_SUBLIBRARY, "m", subject, severity=Severity.WARNING).severity is Severity.WARNING


def test_each_action_kind_is_written_as_the_contract_says() -> None:
    steps = [remove_entry("LD_LIBRARY_PATH", "/opt/cudnn-9.0/lib"), unset("CUDA_VISIBLE_DEVICES"),
             set_variable("LD_LIBRARY_PATH", "/opt/cudnn/lib"), delete("/opt/x/libcudnn.so.9"),
             pip_install(["nvidia-cudnn-cu12==9.28.0.42"], options=("--force-reinstall", "--no-deps"),
                         target="/venv/lib/python3.11/site-packages", python="/venv/bin/python"),
             pip_uninstall(["nvidia-cudnn-cu12"], target="/home/me/.local/lib/python3.11/site-packages",
                           python="/venv/bin/python"),
             relink("/opt/cudnn/lib/libcudnn.so.9", "libcudnn.so.9.28.0"), chmod("/opt/x/libcudnn_cnn.so.9", 0o644),
             remove_line("/venv/lib/python3.11/site-packages/old.pth", "import ctypes; ctypes.CDLL('x')"),
             run(["cudnnload", "run", "--cudnn", "/opt/cudnn/lib", "--"]), restart(4840, ["python", "serve.py"]),
             manual("upgrade the NVIDIA driver")]
    written = fix(*steps).json()
    assert [a["do"] for a in written["actions"]] == [kind.value for kind in ActionKind]
    assert written["actions"][0] == {"do": "env-remove-entry", "variable": "LD_LIBRARY_PATH",
                                     "entry": "/opt/cudnn-9.0/lib"}
    assert written["actions"][4] == {"do": "pip-install", "requirements": ["nvidia-cudnn-cu12==9.28.0.42"],
                                     "options": ["--force-reinstall", "--no-deps"],
                                     "target": "/venv/lib/python3.11/site-packages", "python": "/venv/bin/python"}
    assert written["text"].startswith("remove /opt/cudnn-9.0/lib from LD_LIBRARY_PATH; then unset CUDA_VISIBLE_DEVICES")
    assert written["actions"][5:9] == [
        {"do": "pip-uninstall", "requirements": ["nvidia-cudnn-cu12"],
         "target": "/home/me/.local/lib/python3.11/site-packages", "python": "/venv/bin/python"},
        {"do": "relink", "path": "/opt/cudnn/lib/libcudnn.so.9", "target": "libcudnn.so.9.28.0"},
        {"do": "chmod", "path": "/opt/x/libcudnn_cnn.so.9", "mode": "0644", "owner": None},
        {"do": "remove-line", "path": "/venv/lib/python3.11/site-packages/old.pth",
         "line": "import ctypes; ctypes.CDLL('x')"}]
    assert written["actions"][10] == {"do": "restart", "pid": 4840, "argv": ["python", "serve.py"]}
    assert json.loads(json.dumps(written)) == written


def test_a_search_list_set_by_a_fix_names_each_folder_once_where_it_is_first() -> None:
    """A value built from a finding's folder and the entries already there may name one folder twice; the search
    looks in it at its first place only, so it is said once (an empty entry, the current folder, is kept first)."""
    assert set_variable("LD_LIBRARY_PATH", "/a:/b:/a::/c:").value == "/a:/b::/c"
    assert set_variable("CUDA_VISIBLE_DEVICES", "0,0").value == "0,0"  # not a list of folders


def test_an_unknown_fix_has_no_actions_never_a_guess() -> None:
    assert fix(note="report this layout").json() == {"text": "report this layout", "actions": []}
    assert fix().json() == {"text": None, "actions": []}


if __name__ == "__main__":
    text = README.read_text()
    old = readme_table(text)
    README.write_text(text.replace(old, codes_table()))
    print("README.md: table of codes rewritten", file=sys.stderr)
