"""The differential test against the real loader (issue 18 item 7): random layouts made from the real wheels,
each run by the scenario app under the real dynamic linker, compared object by object with cudnnload's
prediction for the same layout and environment (fixtures/scenarios/differential.py).

    python bench/bench_differential.py [--seed S] [--count N] [--start I] [--out FILE]
    python bench/bench_differential.py --recipe 'JSON'        (one layout again, kept for inspection)

Prints each disagreement with the recipe that rebuilds it, then the classes of disagreement (the same kind of
difference on the same soname) with their count and one recipe each. Goal: 0 disagreements on 1000 layouts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures.scenarios.differential import (  # noqa: E402
    CAUSES,
    case_folder,
    cases,
    cause_of,
    first_of_each_class,
    rebuild_command,
    run_case,
)
from fixtures.scenarios.layouts import Recipe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0, help="the first case's index")
    parser.add_argument("--recipe", help="run this one recipe (JSON, as printed) and keep its folder")
    parser.add_argument("--out", help="also write the summary to this file")
    args = parser.parse_args()
    if args.recipe:
        case = run_case("recipe", Recipe.parse(args.recipe), keep=True)
        print(f"layout kept in {case_folder('recipe')}")
        print("\n".join(str(d) for d in case.disagreements) or "no disagreement")
        sys.exit(1 if case.disagreements else 0)
    started = time.monotonic()
    done = []
    for index, (name, recipe) in enumerate(cases(args.seed, args.count, args.start), 1):
        case = run_case(name, recipe)
        done.append(case)
        for disagreement in case.disagreements:
            print(f"{name}: {disagreement}\n    rebuild: {rebuild_command(recipe)}", flush=True)
        if index % 50 == 0:
            print(f"... {index} layouts, {sum(bool(c.disagreements) for c in done)} with disagreements, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    counts = Counter(d.key for c in done for d in c.disagreements)
    layouts = Counter(d.key for c in done for d in {x.key: x for x in c.disagreements}.values())
    lines = [f"\n{len(done)} layouts (seed {args.seed}, {args.start}..{args.start + len(done) - 1}), "
             f"{sum(bool(c.disagreements) for c in done)} with disagreements, {sum(counts.values())} disagreements, "
             f"{len(counts)} classes, {time.monotonic() - started:.0f} s", "",
             "| class | cause | disagreements | layouts | first case |", "|---|---|---|---|---|"]
    classes = first_of_each_class(done)
    for key, (case, disagreement) in sorted(classes.items(), key=lambda item: -counts[item[0]]):
        lines.append(f"| {key} | {cause_of(disagreement) or 'NEW'} | {counts[key]} | {layouts[key]} | {case.name} |")
    by_cause = Counter(cause_of(d) or "NEW" for c in done for d in c.disagreements)
    lines += ["", "| cause | disagreements | kept as |", "|---|---|---|"]
    lines += [f"| {cause} | {count} | {CAUSES[cause].layout if cause in CAUSES else '-'} |"
              for cause, count in by_cause.most_common()]
    lines += ["", "one recipe per class:", ""]
    lines += [f"- {key}: `{rebuild_command(case.recipe)}`" for key, (case, _) in classes.items()]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
