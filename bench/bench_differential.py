"""The differential test against the real loader: random scenes, each run under the real ld.so as root and as an
ordinary user (nobody), compared lookup by lookup and object by object with cudnnload's process model, with the
coverage of glibc's rules (cudnnload/resolve/rules.py) per rule (fixtures/glibc/draw.py, fixtures/glibc/scene.py).

    python bench/bench_differential.py [--seed S] [--count N] [--start I] [--jobs J] [--out FILE]
    python bench/bench_differential.py --scene 'JSON'          (one scene again, kept for inspection)
    python bench/bench_differential.py --cudnn [--seed S] ...   (issue 18's: cuDNN layouts against doctor --json)

Prints each disagreement with the command that rebuilds its scene, then the rules and how many cases cited each
(a rule counts in a case when the model's account of either run names it), and the rules no case can show here.
Goal: 0 disagreements, every rule that holds for this glibc drawn at least 20 times in 1000 cases.
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
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--scene", help="run this one scene (JSON, as printed) and keep its folder")
    parser.add_argument("--cudnn", action="store_true", help="issue 18's differential: cuDNN layouts, doctor --json")
    parser.add_argument("--recipe", help="(--cudnn) run this one recipe (JSON, as printed) and keep its folder")
    parser.add_argument("--out", help="also write the summary to this file")
    args = parser.parse_args()
    if not (args.cudnn or args.recipe):
        sys.exit(rules_main(args))
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


def rules_main(args: argparse.Namespace) -> int:
    from fixtures.glibc.differential import cases, coverage_lines, run_scene
    from fixtures.glibc.scene import Scene

    if args.scene:
        result = run_scene(Scene.parse(args.scene), keep=True)
        print("\n".join(result.disagreements) or "no disagreement")
        return 1 if result.disagreements else 0
    started = time.monotonic()
    done = []
    for index, result in enumerate(cases(args.seed, args.count, args.start, args.jobs), 1):
        done.append(result)
        for disagreement in result.disagreements:
            print(f"{result.name}: {disagreement}\n    rebuild: python bench/bench_differential.py --scene "
                  f"'{result.scene}'", flush=True)
        if index % 50 == 0:
            print(f"... {index} cases, {sum(bool(r.disagreements) for r in done)} with disagreements, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    lines = coverage_lines(done, args.seed, args.start, time.monotonic() - started)
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 1 if any(r.disagreements for r in done) else 0


if __name__ == "__main__":
    main()
