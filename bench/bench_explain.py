"""`cudnnload explain` on the corpus of real, resolved reports (fixtures/explain), per family.

    python bench/bench_explain.py [--reports all|train|held] [--priors-from table|train] [--print-priors]

For each report only its message is explained, twice: with an empty environment and with this process's;
the two rankings must be the same (explain without --here reads nothing of the machine). Prints, per family
and for all: reports, recognized, right cause first, right cause in the top 3, wrong cause first, and wrong
first with a "confident" tag. Goals (issue 20): right first >= 80 %, top 3 >= 95 %, wrong confident 0.

Held-out check: ``--reports held --priors-from train`` ranks the third of the corpus the rules were not
written from (fixtures/explain/scoring.py `split`) with priors counted on the other two thirds only.
``--print-priors`` prints the table `cudnnload/diagnose/explain/ranking.py` keeps as PRIORS.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnnload.diagnose.explain import ranking  # noqa: E402
from fixtures.explain.corpus import load_reports  # noqa: E402
from fixtures.explain.scoring import (  # noqa: E402
    COLUMNS,
    GOALS,
    measure,
    priors,
    priors_source,
    rates,
    same_ranking,
    split,
    table,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", choices=("all", "train", "held"), default="all")
    parser.add_argument("--priors-from", choices=("table", "train"), default="table",
                        help="table: ranking.PRIORS as kept in the code; train: counted on the two thirds")
    parser.add_argument("--print-priors", action="store_true", help="print PRIORS counted on the whole corpus")
    parser.add_argument("--misses", action="store_true", help="list each report whose cause is not first")
    args = parser.parse_args()
    reports = load_reports()
    if args.print_priors:
        print(priors_source(priors(reports)))
        return 0
    train, held = split(reports)
    if args.priors_from == "train":
        ranking.PRIORS.clear()
        ranking.PRIORS.update(priors(train))
    chosen = {"all": reports, "train": train, "held": held}[args.reports]
    empty = measure(chosen, environ={})
    mine = measure(chosen, environ=os.environ)
    differ = same_ranking(empty, mine)
    rows = table(empty)
    width = max(len(name) for name in rows)
    print(f"{len(chosen)} reports ({args.reports}), priors from {args.priors_from}")
    print(f"{'family':<{width}}  " + "  ".join(f"{c:>15}" for c in COLUMNS))
    for family in sorted(rows, key=lambda name: (name == "all", -rows[name]["reports"], name)):
        row = rows[family]
        print(f"{family:<{width}}  " + "  ".join(f"{row[c]:>15}" for c in COLUMNS))
    total = rates(rows["all"])
    print("\n" + ", ".join(f"{name} {value:.0%}" for name, value in total.items()))
    print(f"same ranking with an empty environment and this one: {'yes' if not differ else 'NO: ' + str(differ)}")
    met = (total["right first"] >= GOALS["right first"] and total["top 3"] >= GOALS["top 3"]
           and rows["all"]["wrong confident"] == 0 and not differ)
    print("goals (right first >= 80 %, top 3 >= 95 %, wrong confident 0):", "met" if met else "NOT met")
    if args.misses:
        for outcome in empty:
            if not outcome.first:
                print(f"  {outcome.id}: {outcome.family} <- {', '.join(outcome.ranked[:4]) or 'not recognized'}"
                      f" [{outcome.confidence}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
