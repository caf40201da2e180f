"""cudnnload on odd inputs, every subcommand, run as a user would: what went wrong, counted.

    python bench/bench_reliability.py [--nobody N] [--jobs J] [--only SUBSTRING] [--out FILE.md]

Every case of fixtures/reliability/odd.py (each subcommand with each odd path; standard input and output
that cannot be used; odd cache folders and LD_LIBRARY_PATH values) runs as a child process with a
60 s limit, first as this user, then (as root, with setpriv) N of them as ``nobody``, for whom a folder
that can be searched but not listed is what it is. Prints the counts the issue asks for: inputs tried,
clear errors, tracebacks, hangs, orphans, objects replaced, and every case that was not clear.
Goal: 0 tracebacks, 0 hangs, 0 orphans, 0 replaced.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.reliability import nobody  # noqa: E402
from fixtures.reliability.harness import Outcome, counts, run  # noqa: E402
from fixtures.reliability.odd import Case, cases, make_odd, remove_odd  # noqa: E402
from tests.wheels import lib_folder  # noqa: E402

ORDER = ("inputs tried", "clear", "tracebacks", "hangs", "unclear", "orphans", "objects replaced")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nobody", type=int, default=80, help="cases also run as nobody (0: none)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="only the cases whose name holds this")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args()
    wheel = lib_folder("cu12-9.28.0.42")
    with tempfile.TemporaryDirectory(prefix="cudnnload-odd-") as scratch:
        folder = Path(scratch) / "odd"
        folder.mkdir()
        Path(scratch).chmod(0o755)
        odd = make_odd(folder, wheel)
        good = str(folder / "lib-folder")
        report = odd["report.json"]
        todo = [c for c in cases(odd, good, report) if args.only in c.name]
        watched = sorted({p for p in odd.values() if not p.startswith(("/proc/", "/sys/"))})
        started = time.monotonic()
        with ThreadPoolExecutor(args.jobs) as pool:
            mine = list(pool.map(lambda c: run(c, watched=watched), [c for c in todo if c.may_write is None]))
        mine += [run(c, watched=watched) for c in todo if c.may_write is not None]  # one at a time
        theirs: list[Outcome] = []
        why = nobody.unavailable() if args.nobody else "not asked for"
        if why is None:
            python = nobody.interpreter() or ""
            env = nobody.stage(Path(scratch) / "staged")
            step = max(1, len(todo) // args.nobody)
            sample = [Case(f"nobody:{c.name}", c.argv, c.stdin, c.stdout, c.env, c.may_write)
                      for c in todo[::step]][:args.nobody]
            theirs = [run(c, watched=watched, python=python, env=env, prefix=nobody.prefix()) for c in sample]
        remove_odd(folder)
    seconds = time.monotonic() - started
    lines = _table(mine, theirs, why, seconds)
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


def _table(mine: list[Outcome], theirs: list[Outcome], why: str | None, seconds: float) -> list[str]:
    lines = [f"# cudnnload on odd inputs ({date.today()}, {platform.node()}, Python {platform.python_version()})", "",
             "| | " + " | ".join(ORDER) + " |", "|---|" + "---|" * len(ORDER)]
    for who, outcomes in (("this user", mine), ("nobody", theirs)):
        total = counts(outcomes)
        lines.append(f"| {who} | " + " | ".join(str(total[key]) for key in ORDER) + " |")
    total = counts(mine + theirs)
    lines.append("| all | " + " | ".join(str(total[key]) for key in ORDER) + " |")
    lines += ["", f"{len(mine) + len(theirs)} runs in {seconds:.0f} s" + (f"; not as nobody: {why}" if why else "")]
    bad = [o for o in mine + theirs if not o.ok]
    slow = sorted(mine + theirs, key=lambda o: -o.seconds)[:3]
    lines += ["", "slowest: " + "; ".join(f"{o.case} {o.seconds:.1f} s" for o in slow)]
    if bad:
        lines += ["", "not clear:"]
        for o in bad:
            tail = o.stderr.strip().splitlines()[-1:] or [""]
            lines.append(f"- {o.case!r}: {o.verdict}, exit {o.returncode}, orphans {o.orphans}, replaced "
                         f"{list(o.replaced)}: {tail[0][:200]}")
    return lines


if __name__ == "__main__":
    main()
