"""cudnnload on odd and hostile inputs, every subcommand, run as a user would: what went wrong, counted.

    python bench/bench_reliability.py [--nobody N] [--reports N] [--jobs J] [--only SUBSTRING] [--out FILE.md]

Two corpora, each case a child process with a 60 s limit (fixtures/reliability/harness.py):

- odd inputs (fixtures/reliability/odd.py, issue 16): each subcommand with each odd path; standard input and
  output that cannot be used; odd cache folders and LD_LIBRARY_PATH values; programs that leave children
  behind. As this user, then (as root, with setpriv) N of them as ``nobody``.
- a hostile and unlucky world (fixtures/reliability/hostile.py, issue 29), by category: libraries planted
  where a search path looks (``planted``); reports of the wrong shape or with hostile words (``reports``);
  homes and cache variables that are not the user's (``caches``, as nobody); proofs whose world changed
  (``stale``); programs that become another user, a full TMPDIR, cudnnload killed mid-run, a fork mid-load,
  a current folder of planted Python modules (``processes``); closed streams, plot paths, a shim under
  another name, 3 000 LD_LIBRARY_PATH folders (``edges``).

Prints, per category: runs, clear ends, tracebacks, internal errors, hangs, unclear ends, orphans, changed
user files, wrong exit codes, planted code run, wrong output; and every case that was not clear. Goal: 0 of
each but runs and clear. Run it at low parallelism on a shared machine (``--jobs 2``, the default).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.reliability import nobody  # noqa: E402
from fixtures.reliability.harness import COLUMNS, Outcome, counts, run  # noqa: E402
from fixtures.reliability.hostile import hostile_cases, make_world, nobody_cases, remove_world, stale_outcomes, watched  # noqa: E402
from fixtures.reliability.odd import Case, cases, make_odd, remove_odd  # noqa: E402
from tests.wheels import lib_folder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nobody", type=int, default=80, help="odd-input cases also run as nobody (0: none)")
    parser.add_argument("--reports", type=int, default=400, help="fleets with one report of the wrong shape")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="only the cases whose name holds this")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args()
    wheel, cublas = lib_folder("cu12-9.28.0.42"), lib_folder("cublas-cu12-12.9.1.4")
    why = nobody.unavailable()
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cudnnload-odd-") as scratch:
        Path(scratch).chmod(0o755)
        staged = nobody.stage(Path(scratch) / "staged") if why is None else {}
        folder = Path(scratch) / "odd"
        folder.mkdir()
        odd = make_odd(folder, wheel)
        try:
            todo = [c for c in cases(odd, str(folder / "lib-folder"), odd["report.json"]) if args.only in c.name]
            files = sorted({p for p in odd.values() if not p.startswith(("/proc/", "/sys/"))})
            outcomes += _all(todo, files, args.jobs)
            if why is None and args.nobody:
                step = max(1, len(todo) // args.nobody)
                sample = [Case(f"nobody:{c.name}", c.argv, c.stdin, c.stdout, c.env, c.may_write, "odd inputs, nobody")
                          for c in todo[::step]][:args.nobody]
                outcomes += _all(sample, files, args.jobs, staged)
        finally:
            remove_odd(folder)
        synthetic = Path(scratch) / "synthetic"
        subprocess.run(["sh", str(REPO / "fixtures" / "synthetic" / "build.sh"), str(synthetic)], check=True,
                       capture_output=True)
        world = make_world(Path(scratch) / "world", synthetic, wheel, cublas, reports=args.reports)
        try:
            files = watched(world)
            outcomes += _all([c for c in hostile_cases(world) if args.only in c.name], files, args.jobs)
            if why is None:
                outcomes += _all([c for c in nobody_cases(world) if args.only in c.name], files, args.jobs, staged)
            if not args.only or args.only.startswith("stale"):
                outcomes += [o for o in stale_outcomes(world, run, files) if isinstance(o, Outcome)]
        finally:
            remove_world(world)
    lines = _table(outcomes, why, time.monotonic() - started)
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


def _all(todo: Sequence[Case], files: list[str], jobs: int, staged: dict[str, str] | None = None) -> list[Outcome]:
    """Each case once: those that write, and those that kill, one at a time; the rest ``jobs`` at once."""
    as_nobody = {"python": nobody.interpreter() or "", "env": staged, "prefix": nobody.prefix()} if staged else {}
    alone = [c for c in todo if c.may_write is not None or c.kill_after is not None]
    with ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(lambda c: run(c, watched=files, **as_nobody), [c for c in todo if c not in alone]))
    return done + [run(c, watched=files, **as_nobody) for c in alone]


def _table(outcomes: list[Outcome], why: str | None, seconds: float) -> list[str]:
    versions = subprocess.run([sys.executable, "-m", "cudnnload", "--version"], capture_output=True, text=True,
                              check=False).stdout.strip()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip()
    lines = [f"# cudnnload on odd and hostile inputs ({date.today()}, {platform.node()}, {platform.machine()}, "
             f"{os.cpu_count()} CPUs, Python {platform.python_version()}, glibc {platform.libc_ver()[1]}, "
             f"{versions}, commit {commit})", "",
             "| category | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    for category in dict.fromkeys(o.category for o in outcomes):
        total = counts(o for o in outcomes if o.category == category)
        lines.append(f"| {category} | " + " | ".join(str(total[key]) for key in COLUMNS) + " |")
    total = counts(outcomes)
    lines.append("| **all** | " + " | ".join(f"**{total[key]}**" for key in COLUMNS) + " |")
    lines += ["", f"{len(outcomes)} runs in {seconds:.0f} s" + (f"; not as nobody: {why}" if why else "")]
    slow = sorted(outcomes, key=lambda o: -o.seconds)[:3]
    lines += ["", "slowest: " + "; ".join(f"{o.case} {o.seconds:.1f} s" for o in slow)]
    bad = [o for o in outcomes if not o.ok]
    if bad:
        lines += ["", "not clear:"]
        for o in bad:
            tail = o.stderr.strip().splitlines()[-1:] or [""]
            lines.append(f"- {o.case!r}: {o.verdict}, exit {o.returncode}, orphans {o.orphans}, changed "
                         f"{list(o.replaced)[:3]}, wrong exit {o.wrong_exit}, planted {o.planted}, wrong output "
                         f"{o.wrong_output}: {tail[0][:200]}")
    return lines


if __name__ == "__main__":
    main()
