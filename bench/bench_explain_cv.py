"""`cudnnload explain` cross-validated on the tuning part (issue 32): how well its priors generalise to reports of
programs they were not counted on, measured without looking at a held-out part.

    python bench/bench_explain_cv.py [--folds 5] [--misses] [--bare]

The tuning reports are split into ``--folds`` folds by a hash of the program they come from (the report's
`framework` and its source's host and repository: reports of one program stay in one fold, so a fold's
reports are not judged with counts of their own program's near-duplicates). Each fold is explained with
priors (`ranking.PRIORS`'s table) recounted on the other folds (`scoring.priors`), and the folds' outcomes
are summed into one table: the figure to optimise while tuning. The rules and the catalog were still written
while looking at every tuning report, so this is an upper bound on what a held-out part shows; it is lower than
the tuning part's own figure wherever the ranking leans on a prior counted on the very report it ranks.
``--misses`` lists each tuning report not ranked right first under cross-validation.

``--bare`` also cross-validates the tuning reports cut down to the line of their first message (what
`explain.read` finds first), the rest of the paste dropped: a message with little context, as most misses of the
held-out parts are (issue 32). It measures what the priors and the catalog give a message alone, where no rule
written while reading a tuning report's context can help; a report whose line alone holds no known message is
left without an answer there.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnnload.diagnose.explain import read  # noqa: E402
from fixtures.explain.corpus import load_reports  # noqa: E402
from fixtures.explain.scoring import COLUMNS, Outcome, measure, priors, rates, split, table  # noqa: E402


def program(report: dict[str, Any]) -> str:
    """The program a report comes from: its framework and its source's host and repository
    ("pytorch github.com/pytorch/pytorch")."""
    address = urlsplit(report["source"])
    repository = "/".join(address.path.strip("/").split("/")[:2])
    return f"{report['framework']} {address.netloc.lower()}/{repository.lower()}"


def fold_of(report: dict[str, Any], folds: int) -> int:
    return int(hashlib.sha1(program(report).encode("utf-8")).hexdigest(), 16) % folds


def cross_validate(reports: list[dict[str, Any]], folds: int) -> list[Outcome]:
    """Every report's outcome with priors counted on the folds it is not in, in the order given."""
    outcomes: dict[str, Outcome] = {}
    for fold in range(folds):
        held = [r for r in reports if fold_of(r, folds) == fold]
        rest = [r for r in reports if fold_of(r, folds) != fold]
        counted = priors(rest)
        outcomes.update((o.id, o) for o in measure(held, environ={}, priors=counted))
    return [outcomes[r["id"]] for r in reports]


def first_line(message: str) -> str:
    """The whole line of ``message`` that holds its first message (`Signal.line` is that line, stripped and cut
    short); the message itself where it holds none."""
    if (primary := read(message).primary) is None:
        return message
    return next((line for line in message.splitlines() if primary.line in line), primary.line)


def bare(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each report with its message cut down to the line of its first message (unchanged where it has none)."""
    return [{**r, "message": first_line(r["message"])} for r in reports]


def show(name: str, outcomes: list[Outcome]) -> None:
    row = table(outcomes)["all"]
    print(f"{name}: {len(outcomes)} reports")
    print("  ".join(f"{column} {row[column]}" for column in COLUMNS))
    print(", ".join(f"{column} {value:.0%}" for column, value in rates(row).items()))
    sure = sum(o.wrong_first and o.confidence in ("confident", "likely") for o in outcomes)
    print(f"wrong first tagged \"likely\" or \"confident\": {sure}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--misses", action="store_true", help="list each tuning report not ranked right first")
    parser.add_argument("--bare", action="store_true",
                        help="also cross-validate the reports cut down to the line of their first message")
    args = parser.parse_args()
    tuning = split(load_reports())["tuning"]
    sizes = [sum(fold_of(r, args.folds) == fold for r in tuning) for fold in range(args.folds)]
    outcomes = cross_validate(tuning, args.folds)
    show(f"tuning, {args.folds}-fold cross-validation by program (fold sizes {sizes})", outcomes)
    if args.bare:
        show("the same, each message cut down to the line of its first message", cross_validate(bare(tuning),
                                                                                                  args.folds))
    if args.misses:
        for outcome in outcomes:
            if not outcome.first or outcome.confidence in ("confident", "likely"):
                mark = "" if outcome.first else " MISS"
                print(f"  {outcome.id}: {outcome.family} <- {', '.join(outcome.ranked[:4]) or 'not recognized'}"
                      f" [{outcome.confidence}]{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
