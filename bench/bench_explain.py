"""`cudnnload explain` on the corpus of real, resolved reports (fixtures/explain), per family, on the part it
was tuned on and on the held-out part it never was (issue 32; fixtures/explain/split.json).

    python bench/bench_explain.py [--reports both|tuning|held|held2|...|held20|all] [--print-priors]
                                  [--misses]
                                  [--catalog] [--ceiling]

For each report only its message is explained, twice: with an empty environment and with this process's;
the two rankings must be the same (explain without --here reads nothing of the machine). Prints, for each part:
reports, left without an answer, right cause first, right cause in the top 3, wrong cause first, wrong first
with a "confident" tag, and a cause about loading first for a report whose cause is not. The tuning part is
also shown with each report ranked by priors counted without it (leave-one-out: no report votes for its own
cause, as none of the held-out parts does), and per family (``--misses``: each of its reports not ranked right
first); the held-out parts only as their totals, so that nobody tunes on what they miss: "held-out" (issue
32's first 63), "held-out 2" to "held-out 4" (each split by a hash of the id, split.json) and "held-out 5" (the
sixth round, all held out; shown also without the reports its harvest called doubtful, split.json's
``held_out_5_doubtful``), "held-out 6" (the seventh round, split by a hash of the id), "held-out 7" (the
eighth round, all held out), "held-out 8" to "held-out 24" (the ninth to twenty-fifth rounds, split by a hash of the
id; shown also without their doubtful reports). Goals (issue 32, on the held-out parts): right first >= 80 %, top 3
>= 90 %, no answer <= 5 %, wrong confident 0, blames loading 0.
The held-out figures are the ones to quote. ``--ceiling`` prints what the message kind alone allows
(`scoring.ceiling`): the kind's prior alone, and the best any ranking that reads no more than the kind can do.

First it prints the message catalog's entries per source and per release read (``--catalog``: only that).
``--print-priors`` prints the table `cudnnload/diagnose/explain/ranking.py` keeps as PRIORS, counted on the
tuning part only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnnload.diagnose.explain.catalog import DATA  # noqa: E402
from fixtures.explain.corpus import PARTS, load_doubtful, load_reports  # noqa: E402
from fixtures.explain.harvest import print_counts  # noqa: E402
from fixtures.explain.scoring import (  # noqa: E402
    COLUMNS,
    GOALS,
    Outcome,
    ceiling,
    leave_one_out,
    measure,
    met,
    priors,
    priors_source,
    rates,
    same_ranking,
    split,
    table,
)


def report(name: str, outcomes: list[Outcome], differ: list[str], detail: bool, misses: bool) -> bool:
    """Print a part's figures: per family only with ``detail``, and each miss only with ``misses`` too. Only the
    tuning part gets either: what the held-out part misses, family by family, is what one would tune on."""
    rows = table(outcomes)
    shown = sorted(rows, key=lambda key: (key == "all", -rows[key]["reports"], key)) if detail else ["all"]
    width = max(len(family) for family in shown)
    print(f"\n{name}: {len(outcomes)} reports")
    print(f"{'family':<{width}}  " + "  ".join(f"{c:>15}" for c in COLUMNS))
    for family in shown:
        print(f"{family:<{width}}  " + "  ".join(f"{rows[family][c]:>15}" for c in COLUMNS))
    print(", ".join(f"{column} {value:.0%}" for column, value in rates(rows["all"]).items()))
    print(f"same ranking with an empty environment and this one: {'yes' if not differ else 'NO: ' + str(differ)}")
    ok = met(rows["all"]) and not differ
    print(f"goals (right first >= {GOALS['right first']:.0%}, top 3 >= {GOALS['top 3']:.0%}, no answer <= "
          f"{GOALS['no answer']:.0%}, wrong confident 0, blames loading 0): {'met' if ok else 'NOT met'}")
    if detail and misses:
        for outcome in outcomes:
            if not outcome.first:
                print(f"  {outcome.id}: {outcome.family} <- {', '.join(outcome.ranked[:4]) or 'not recognized'}"
                      f" [{outcome.confidence}]")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", default="both",
                        choices=("both", "tuning", "held", *(f"held{n}" for n in range(2, len(PARTS))), "all"))
    parser.add_argument("--print-priors", action="store_true", help="print PRIORS counted on the tuning part")
    parser.add_argument("--misses", action="store_true",
                        help="list each tuning report whose cause is not first (never the held-out ones)")
    parser.add_argument("--catalog", action="store_true", help="print only the catalog's entries per source")
    parser.add_argument("--ceiling", action="store_true",
                        help="print only what the message kind alone allows, on the tuning part and on all held-out "
                             "parts together (totals only)")
    args = parser.parse_args()
    if not args.print_priors:
        print("message catalog (cudnnload/diagnose/explain/catalog.json): ", end="")
        print_counts(json.loads(DATA.read_text(encoding="utf-8")))
        if args.catalog:
            return 0
    reports = load_reports()
    parts = split(reports)
    tuning = parts["tuning"]
    if args.print_priors:
        print(priors_source(priors(tuning)))
        return 0
    if args.ceiling:
        every_held = [report for part in PARTS[1:] for report in parts[part]]
        for name, chosen in (("tuning", tuning), (f"all held-out parts ({len(every_held)} reports)", every_held)):
            for how, (first, top3) in ceiling(chosen, tuning).items():
                print(f"{name}, {how}: right first {first:.0%}, top 3 {top3:.0%}")
        return 0
    doubtful = load_doubtful()
    held: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
    for number, part in enumerate(PARTS[1:], 1):
        suffix = f" {number}" if number > 1 else ""
        shown = held[f"held{suffix.strip()}"] = [(f"held-out{suffix} (the figure to quote)", parts[part])]
        if part in doubtful and len(doubtful[part]) < len(parts[part]):  # none left: nothing more to show
            shown.append((f"held-out{suffix} without the {len(doubtful[part])} its harvest called doubtful",
                          [r for r in parts[part] if r["id"] not in doubtful[part]]))
    chosen_parts = {"both": [*(entry for entries in held.values() for entry in entries), ("tuning", tuning)],
                    "tuning": [("tuning", tuning)], "all": [("all", reports)], **held}[args.reports]
    results = []
    for name, chosen in chosen_parts:
        empty = measure(chosen, environ={})
        results.append(report(name, empty, same_ranking(empty, measure(chosen, environ=os.environ)),
                              chosen is tuning, args.misses))
        if chosen is tuning:
            honest = rates(table(leave_one_out(tuning, environ={}))["all"])
            print("tuning, each report ranked with priors counted without it (leave-one-out): "
                  + ", ".join(f"{column} {value:.0%}" for column, value in honest.items()))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
