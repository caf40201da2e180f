"""`cudnnload explain` on the corpus's reports pasted the ways people paste them: quoted in a reply, behind a
logger's time stamps or a log collector's prefix (docker compose, journald, `docker logs -t`, Ray's workers),
escaped as a string (Docker's json-file log, a JSON answer, Python's repr of an exception), marked up by Markdown
(bold, a list of inline code), as a page's HTML source, hard-wrapped by a terminal's copy or re-flowed by a mail. Each
form is a message as its program printed it, so each should rank as the report as given does.

    python bench/bench_explain_forms.py [--reports tuning|held|both]

Prints, per form, how many reports keep the same causes in the same order, the same first cause, lose their
answer, and are ranked right first (against the same reports as given); the held-out parts (split.json) as their
totals only.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnnload.diagnose.explain import explain  # noqa: E402
from fixtures.explain.corpus import PARTS, load_reports  # noqa: E402
from fixtures.explain.scoring import split  # noqa: E402


def _lines(form: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(form(line) for line in text.splitlines())


def _terminal(width: int) -> Callable[[str], str]:
    return lambda text: "\n".join(line[at:at + width] for line in text.splitlines()
                                  for at in range(0, max(len(line), 1), width))


FORMS: dict[str, Callable[[str], str]] = {
    "quoted": _lines(lambda line: "> " + line),
    "loguru": _lines(lambda line: "2025-01-02 12:00:00.123 | ERROR    | app.main:run:42 - " + line),
    "logging": _lines(lambda line: "2025-01-02 12:00:00,123 - app - ERROR - " + line),
    "html": lambda text: text.replace("&", "&amp;").replace('"', "&quot;").replace("'", "&#39;")
                             .replace("<", "&lt;").replace(">", "&gt;"),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "reflowed-72": _lines(lambda line: textwrap.fill(line, 72)),
    "reflowed-80": _lines(lambda line: textwrap.fill(line, 80)),
    "reflowed-100": _lines(lambda line: textwrap.fill(line, 100)),
    "terminal-80": _terminal(80),
    "terminal-120": _terminal(120),
    "compose": _lines(lambda line: "frigate-1  | " + line),
    "journal": _lines(lambda line: "Dec 05 07:50:05 gpu-node-3 python3[12345]: " + line),
    "timestamps": _lines(lambda line: "2024-01-01T00:00:00.1234567Z " + line),
    "ray": _lines(lambda line: "(RayTrainWorker pid=4242, ip=10.0.0.7) " + line),
    "docker-json": _lines(lambda line: json.dumps({"log": line + "\n", "stream": "stderr"})),
    "json": lambda text: json.dumps({"error": text}),
    "repr": lambda text: f"RuntimeError({text!r})",
    "markdown-bold": _lines(lambda line: f"**{line}**" if line.strip() else line),
    "markdown-code": _lines(lambda line: f"- `{line}`" if line.strip() else line),
}


def ranked(text: str) -> tuple[str, ...]:
    return tuple(cause.family for cause in explain(text, environ={}, site_paths=[]).causes)


def measure(reports: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    given = {report["id"]: ranked(report["message"]) for report in reports}
    rows: dict[str, Counter[str]] = {"as given": Counter(
        reports=len(reports), **{"right first": sum(given[r["id"]][:1] == (r["family"],) for r in reports)})}
    for name, form in FORMS.items():
        row = rows[name] = Counter(reports=len(reports))
        for report in reports:
            before, after = given[report["id"]], ranked(form(report["message"]))
            row.update({"same order": after == before, "same first": after[:1] == before[:1],
                        "lost answer": bool(before) and not after, "right first": after[:1] == (report["family"],)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", choices=("tuning", "held", "both"), default="both")
    args = parser.parse_args()
    parts = split(load_reports())
    chosen = {"tuning": parts["tuning"], "held-out (all parts, totals)": [r for p in PARTS[1:] for r in parts[p]]}
    for name, reports in chosen.items():
        if args.reports != "both" and not name.startswith(args.reports):
            continue
        print(f"{name}: {len(reports)} reports")
        print(f"{'form':16s} {'same order':>11s} {'same first':>11s} {'lost answer':>12s} {'right first':>12s}")
        for form, row in measure(reports).items():
            print(f"{form:16s} {row['same order']:>11d} {row['same first']:>11d} {row['lost answer']:>12d} "
                  f"{row['right first']:>12d}" if form != "as given" else
                  f"{form:16s} {'':>11s} {'':>11s} {'':>12s} {row['right first']:>12d}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
