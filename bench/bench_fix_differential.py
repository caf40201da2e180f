"""The fix differential (issue 31 item 4): do doctor's fixes work on breakages nobody enumerated?

    python bench/bench_fix_differential.py --seed S --count N [--start I] [--jobs J] [--consumers app,torch]
                                           [--out DIR] [--with-verbs VERB,...]
    python bench/bench_fix_differential.py --replay SEED-INDEX [--consumers app,torch]
    python bench/bench_fix_differential.py --summarize DIR [DIR...]

Each case (fixtures/fixdiff) is a healthy venv (the real PyTorch 2.14.1 with its cuDNN 9.24 for CUDA 13, or the
cuDNN 9.28 wheel for CUDA 12 or 13) to which 2 to 4 things users really do were done, drawn from a grammar of 37
(fixtures/fixdiff/grammar.py) with a generator seeded by (S, index). Real programs run in it (the scenario app
opening the shim by path and by soname, PyTorch's ``cudnn.version()``, a conda program linked with RPATH or
RUNPATH, a long-running ctypes program whose wheel was upgraded under it); every one is diagnosed by ``cudnnload
doctor --json TARGET`` and ``doctor -- COMMAND`` (``--pid`` for the running one), the first error finding's fix
``actions`` are applied to a copy of the case and every program runs again (fixtures/fixdiff/runner.py).

Prints, and writes to DIR (default ``$CUDNNLOAD_TEST_CACHE/fixdiff/results/seed-S``) as ``summary.md`` and one JSON
record per case in ``cases.jsonl``: the fraction of failing programs fixed per form and per grammar verb, the
outcomes (fixed, not fixed, no report, no error found, no actions, only manual, refused), the fixes that broke a
program that worked, those that touch a path outside the case, what doctor said of programs that work, and the most
common failure patterns with their case ids. ``--replay`` runs one case again, keeps its folder
(``$CUDNNLOAD_TEST_CACHE/fixdiff/cases/SEED-INDEX``, as composed) and prints its record; ``--summarize`` prints
the tables again from the ``cases.jsonl`` of one run or several together.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures.fixdiff.bases import BASES, built, by_name, fingerprint, root, store, store_wheel, unavailable  # noqa: E402
from fixtures.fixdiff.case import OTHER_USER  # noqa: E402
from fixtures.fixdiff.consumers import references  # noqa: E402
from fixtures.fixdiff.grammar import CUBLAS, CUDNN, GRAMMAR, JIT, NVRTC, draw  # noqa: E402
from fixtures.fixdiff.runner import (  # noqa: E402
    FILE_KINDS,
    FIXED,
    NO_ACTIONS,
    NO_ERROR,
    NO_REPORT,
    NOT_FIXED,
    ONLY_MANUAL,
    REFUSED,
    differential,
)
from fixtures.scenarios.fixes import unpacked_wheel  # noqa: E402

UNFIXED = (NOT_FIXED, NO_REPORT, NO_ERROR, NO_ACTIONS, ONLY_MANUAL, REFUSED)

Record = dict[str, object]
KINDS: list[str] = []


def _one(job: tuple[int, int, bool]) -> Record:
    seed, index, keep = job
    return differential(seed, index, KINDS, keep=keep).json()


def prepare(seed: int, indices: Iterable[int]) -> dict[str, int]:
    """What every case shares, made once before the workers start: the store, the grammar's wheels unpacked, the
    bases drawn, the references; the bases' fingerprints."""
    store()
    for project, version, *_ in (*CUDNN, *CUBLAS, *NVRTC, JIT):
        wheel = store_wheel(project, version)
        if wheel is not None:
            unpacked_wheel(wheel)
    prints: dict[str, int] = {}
    for name in sorted({draw(seed, i)[1].name for i in indices}):
        base = next(b for b in BASES if b.name == name)
        if unavailable(base) is None:
            print(f"base {name}: {built(base)}", flush=True)
            prints[name] = fingerprint(base)
    references()
    return prints


def _pairs(records: Sequence[Record]) -> list[tuple[Record, dict[str, object]]]:
    return [(r, j) for r in records for j in r.get("doctor", []) if isinstance(j, dict)]  # type: ignore[attr-defined]


def _short(text: str) -> str:
    """A reason with the case's own paths and numbers taken out, so that reasons group."""
    text = re.sub(r"/\S*/fixdiff/cases/[\w.-]+", "CASE", text)
    return re.sub(r"\b\d{3,}\b", "N", text)[:160]


def _fraction(good: int, total: int) -> str:
    return f"{good}/{total} ({100 * good / total:.1f} %)" if total else "0/0"


def summary(records: Sequence[Record], seed: str, wall: float | None) -> list[str]:
    """The tables of the run (``seed``: its seed or seeds; ``wall``: its minutes, when known)."""
    ran = [r for r in records if not r.get("skipped") and not r.get("error")]
    seconds = [float(r["seconds"]) for r in ran]  # type: ignore[arg-type]
    lines = [f"# Fix differential, seed {seed}", "",
             f"{len(records)} cases: {len(ran)} run, {sum(1 for r in records if r.get('skipped'))} skipped, "
             f"{sum(1 for r in records if r.get('error'))} harness errors; "
             f"{statistics.mean(seconds) if seconds else 0:.1f} s per case (median "
             f"{statistics.median(seconds) if seconds else 0:.1f} s)"
             + (f", {wall / 60:.1f} min in all" if wall is not None else ""), ""]
    programs = Counter(name for r in ran for name in r["consumers"])  # type: ignore[attr-defined]
    failing = Counter(name for r in ran for name, run in r["consumers"].items()  # type: ignore[attr-defined]
                      if not run["works"])
    lines += ["| program | runs | failing |", "|---|---|---|"]
    lines += [f"| {name} | {count} | {failing[name]} |" for name, count in sorted(programs.items())]
    pairs = _pairs(ran)
    lines += ["", "## Failing programs: the first fix applied, per form", "",
              "| form | failing | fixed | " + " | ".join(UNFIXED) + " |", "|---|---|---|" + "---|" * len(UNFIXED)]
    for form in ("target", "command", "pid"):
        mine = [j for _, j in pairs if j["form"] == form and j["failing"]]
        if not mine:
            continue
        count = Counter(str(j["outcome"]) for j in mine)
        lines.append(f"| {form} | {len(mine)} | **{_fraction(count[FIXED], len(mine))}** | "
                     + " | ".join(str(count[o]) for o in UNFIXED) + " |")
    broke = [(r, j) for r, j in pairs if j["broke"]]
    outside = [(r, j) for r, j in pairs if j["outside"]]
    lines += ["", f"**Breaks** (a fix applied, a program that worked fails after it): {len(broke)}"
              + (": " + ", ".join(sorted({f"{r['case']} ({j['consumer']}/{j['form']}: {', '.join(j['broke'])})"
                                          for r, j in broke})) if broke else ""),
              "", f"**Outside touches** (a fix naming a path outside the case): {len(outside)}"
              + (": " + "; ".join(sorted({f"{r['case']} {_short(str(j['why'][0]))}" for r, j in outside})[:12])
                 if outside else ""), ""]
    as_root = [j for r, j in pairs if j["failing"] and r["user"] == OTHER_USER
               and any(a.get("do") in FILE_KINDS for a in j["actions"])]  # type: ignore[attr-defined]
    lines += [f"Fixes of programs run as nobody that change root's files (applied as root; that user could not): "
              f"{len(as_root)}, of which fixed {sum(1 for j in as_root if j['outcome'] == FIXED)}", ""]
    working = Counter(str(j["outcome"]) for _, j in pairs if not j["failing"])
    lines += ["Programs that work, doctor asked anyway: " + ", ".join(f"{k} {v}" for k, v in sorted(working.items())),
              "", "## Per grammar verb (cases holding it)", "",
              "| verb | cases | failing (program, form) | fixed | not fixed, by outcome |", "|---|---|---|---|---|"]
    for verb in GRAMMAR:
        holding = [r for r in ran if verb.name in r["verbs"]]  # type: ignore[operator]
        mine = [j for r, j in pairs if r in holding and j["failing"]]
        count = Counter(str(j["outcome"]) for j in mine)
        rest = ", ".join(f"{k} {v}" for k, v in count.most_common() if k != FIXED)
        lines.append(f"| {verb.name} | {len(holding)} | {len(mine)} | {_fraction(count[FIXED], len(mine))} | {rest} |")
    patterns: dict[tuple[str, ...], list[tuple[Record, dict[str, object]]]] = defaultdict(list)
    for r, j in pairs:
        if j["failing"] and j["outcome"] != FIXED:
            kinds = ",".join(str(a.get("do")) for a in j["actions"]) or "-"  # type: ignore[attr-defined]
            why = _short(str((j["why"] or [""])[0]))
            patterns[(str(j["consumer"]), str(j["outcome"]), str(j["first"]), kinds, why)].append((r, j))
    lines += ["", "## The most common failure patterns", "",
              "| # | program | outcome | first finding | its actions | why (first) | pairs | forms | cases |",
              "|---|---|---|---|---|---|---|---|---|"]
    ranked = sorted(patterns.items(), key=lambda item: -len(item[1]))
    for number, (key, found) in enumerate(ranked[:10], start=1):
        forms = Counter(str(j["form"]) for _, j in found)
        cases = sorted({str(r["case"]) for r, _ in found}, key=lambda c: tuple(map(int, c.split("-"))))
        lines.append(f"| {number} | {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {len(found)} | "
                     + ", ".join(f"{f} {n}" for f, n in forms.items()) + f" | {', '.join(cases[:8])} |")
    errors = [r for r in records if r.get("error")]
    if errors:
        lines += ["", "## Harness errors", ""] + [f"- {r['case']}: {str(r['error']).strip().splitlines()[-1]}"
                                                   for r in errors]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (this machine has 2 cores)")
    parser.add_argument("--consumers", default="app,torch", help="app, torch (default both)")
    parser.add_argument("--replay", help="one case, SEED-INDEX: run again, its folder kept, its record printed")
    parser.add_argument("--out", help="folder for summary.md and cases.jsonl")
    parser.add_argument("--with-verbs", metavar="VERB,...", default="",
                        help="only the cases among START..START+COUNT-1 whose drawn verbs include one of these")
    parser.add_argument("--summarize", metavar="DIR", nargs="+",
                        help="only the tables again, from each DIR/cases.jsonl together")
    args = parser.parse_args()
    KINDS[:] = [k for k in args.consumers.split(",") if k]
    if args.summarize:
        records = [json.loads(line) for folder in args.summarize
                   for line in (Path(folder) / "cases.jsonl").read_text().splitlines()]
        records.sort(key=lambda r: (int(r["seed"]), int(r["index"])))
        seeds = " and ".join(sorted({str(r["seed"]) for r in records}))
        print("\n".join(summary(records, seeds, None)) if records else "no records")
        return
    if args.replay:
        seed, index = map(int, args.replay.split("-"))
        prepare(seed, [index])
        record = _one((seed, index, True))
        print(json.dumps(record, indent=1, default=str))
        print(f"case folder: {root() / 'cases' / args.replay}")
        return
    wanted = {name for name in args.with_verbs.split(",") if name}
    unknown = wanted - {v.name for v in GRAMMAR}
    if unknown:
        parser.error(f"--with-verbs: not verbs of the grammar: {', '.join(sorted(unknown))}")
    indices = [i for i in range(args.start, args.start + args.count)
               if not wanted or wanted & {v.name for v in draw(args.seed, i)[2]}]
    prints = prepare(args.seed, indices)
    out = Path(args.out) if args.out else root() / "results" / f"seed-{args.seed}"
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    records: list[Record] = []
    jobs = [(args.seed, i, False) for i in indices]
    with open(out / "cases.jsonl", "w") as stream, multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for record in pool.imap_unordered(_one, jobs):
            records.append(record)
            stream.write(json.dumps(record, default=str) + "\n")
            stream.flush()
            pairs = record.get("doctor") or []
            fixed = sum(1 for j in pairs if j["failing"] and j["outcome"] == FIXED)  # type: ignore[index,union-attr]
            failing = sum(1 for j in pairs if j["failing"])  # type: ignore[index,union-attr]
            broke = sorted({name for j in pairs for name in j.get("broke") or ()})  # type: ignore[union-attr]
            state = record.get("skipped") or ("ERROR" if record.get("error") else f"{fixed}/{failing} fixed")
            state += f", BROKE {','.join(broke)}" if broke else ""
            print(f"[{len(records)}/{len(jobs)}] {record['case']} {record['base']} {','.join(record['verbs'])}: "
                  f"{state} ({record['seconds']} s)", flush=True)
    records.sort(key=lambda r: int(r["index"]))  # type: ignore[call-overload]
    lines = summary(records, str(args.seed), time.monotonic() - started)
    changed = sorted(name for name, was in prints.items() if fingerprint(by_name(name)) != was)
    lines += ["", f"Bases written into by the run (through a hard link): {', '.join(changed) or 'none'}"]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwritten: {out / 'summary.md'}, {out / 'cases.jsonl'}")


if __name__ == "__main__":
    main()
