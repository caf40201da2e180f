"""`cudnnload backends`: the installed backends, as text and JSON, and exit 1 when a plugin is broken."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cudnnload.cli import EXIT_OK, EXIT_PROBLEMS, make_cli


def test_backends_lists_the_numpy_backend_as_available() -> None:
    result = CliRunner().invoke(make_cli(), ["backends"])

    assert result.exit_code == EXIT_OK
    numpy_line = next(line for line in result.stdout.splitlines() if line.startswith("numpy"))
    assert numpy_line.split()[1:3] == ["available", "cudnnload_numpy:register"]


def test_backends_json_says_where_each_comes_from_and_why_not() -> None:
    result = CliRunner().invoke(make_cli(), ["backends", "--json"], env={"CUDNNLOAD_BACKENDS": "numpy"})

    doc = json.loads(result.stdout)
    assert doc["kind"] == "backends"
    assert {"name": "numpy", "available": True, "reason": None, "broken": False}.items() <= doc["result"][0].items()


def test_a_broken_plugin_makes_backends_exit_1(monkeypatch, tmp_path) -> None:
    (tmp_path / "cl_cli_broken.py").write_text("raise ImportError('needs libfoo.so.3')\n")
    info = tmp_path / "cl_cli_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cl_cli_broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cudnnload.backends]\ncl-cli-broken = cl_cli_broken:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    result = CliRunner().invoke(make_cli(), ["backends"])

    assert result.exit_code == EXIT_PROBLEMS
    assert "cl-cli-broken  BROKEN" in result.stdout and "ImportError: needs libfoo.so.3" in result.stdout
