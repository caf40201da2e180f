"""Long fuzzing of the ELF readers (issue 11): many mutants of real libraries, on every core.

    python bench/bench_fuzz.py [--mutants N] [--seed S] [--jobs J] [--trace] [--out FILE.md] [--replay I]

Mutant ``i`` is drawn from base ``i mod 5`` of fixtures/fuzz/mutants.py by ``random.Random(S * 2**32 + i)``,
so a run is reproducible mutant by mutant whatever the number of jobs (``--replay I`` prints one's
recipe and verdict). Each mutant gets what tests/test_fuzz_elf.py gives it: ``read_elf``,
``read_dynamic_symbols`` and ``linker.opening`` must answer (an ElfInfo, an ElfError, an outcome)
within 2 s and 64 MB above the file's size. Memory is the growth of the worker's peak RSS over the
mutant (``/proc/self/clear_refs`` resets the peak before each), which counts the file's mapped pages
too; ``--trace`` uses tracemalloc's peak instead (Python allocations only, three times slower).

Printed: mutants tried, answers by finding code and by linker outcome, the slowest mutant (ms and
recipe), peak memory, mutants/s and the failures, each saved as a recipe in
bench/results/fuzz-failures/ (fixtures/fuzz/README.md: shrink it, keep it there, fix the reader).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures.fuzz.mutants import BASES, Recipe, base, draw, examine  # noqa: E402

KEYS = tuple(BASES)
CHUNK = 250  # mutants per task handed to a worker
FAILURES = ROOT / "bench" / "results" / "fuzz-failures"
MEMORY = 64 << 20  # the bound above the file's size, as in the test


def recipe_of(seed: int, index: int) -> Recipe:
    rng = random.Random(seed * 2**32 + index)
    return draw(KEYS[index % len(KEYS)], rng.randint)


def _status(name: str) -> int:
    """A /proc/self/status figure in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) << 10 for line in status if line.startswith(name + ":"))


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets VmHWM to the current RSS (proc(5))


@dataclass
class Tally:
    """What a chunk of mutants, or the whole run, came to."""

    tried: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    openings: Counter[str] = field(default_factory=Counter)
    slowest: tuple[float, int] = (0.0, -1)  # seconds, mutant index
    peak: tuple[int, int] = (0, -1)  # bytes above the file's size (or traced), mutant index
    worker_rss: int = 0  # the highest VmHWM of a worker, bytes
    failures: list[tuple[int, str]] = field(default_factory=list)  # mutant index, what broke

    def add(self, other: Tally) -> None:
        self.tried += other.tried
        self.codes.update(other.codes)
        self.openings.update(other.openings)
        self.slowest = max(self.slowest, other.slowest)
        self.peak = max(self.peak, other.peak)
        self.worker_rss = max(self.worker_rss, other.worker_rss)
        self.failures += other.failures


def run_chunk(task: tuple[int, int, int, bool]) -> Tally:
    seed, start, stop, trace = task
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="cudnnload-fuzz-") as folder:
        for index in range(start, stop):
            recipe = recipe_of(seed, index)
            path = os.path.join(folder, recipe.base.partition("/")[2].partition("#")[0])
            content = recipe.build()
            with open(path, "wb") as out:
                out.write(content)
            if not trace:
                _reset_peak()
                before = _status("VmRSS")
            verdict = examine(path, trace=trace, memory=MEMORY)
            used = verdict.peak if trace else _status("VmHWM") - before - len(content)
            failure = verdict.failure
            if failure is None and used > MEMORY:
                failure = f"RSS grew {used >> 20} MB above the file's {len(content)} bytes"
            tally.tried += 1
            tally.codes[verdict.code or "(no answer)"] += 1
            tally.openings[verdict.opening or "(no answer)"] += 1
            tally.slowest = max(tally.slowest, (verdict.seconds, index))
            tally.peak = max(tally.peak, (used, index))
            if failure is not None:
                tally.failures.append((index, failure))
    tally.worker_rss = _status("VmHWM")
    return tally


def _warm() -> None:
    """Each worker lays out the bases and reads one whole (the readers' imports) before its first mutant."""
    for key in KEYS:
        draw(key, random.Random(0).randint)
    with tempfile.TemporaryDirectory(prefix="cudnnload-fuzz-") as folder:
        path = os.path.join(folder, "base.so")
        Path(path).write_bytes(base(KEYS[0]))
        examine(path, trace=False)


def fuzz(mutants: int, seed: int, jobs: int, trace: bool) -> tuple[Tally, float]:
    import pytest  # tests/wheels.py says a missing wheel with pytest.skip

    try:
        for key in KEYS:
            base(key)  # read once, here: the forked workers inherit them
    except pytest.skip.Exception as exc:
        raise SystemExit(str(exc)) from None
    tasks = [(seed, start, min(start + CHUNK, mutants), trace) for start in range(0, mutants, CHUNK)]
    total = Tally()
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_warm) as pool:
        for done, tally in enumerate(pool.imap_unordered(run_chunk, tasks), 1):
            total.add(tally)
            if done % 40 == 0 or done == len(tasks):
                print(f"  {total.tried} mutants, {len(total.failures)} failures, "
                      f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return total, time.perf_counter() - started


def save_failures(seed: int, tally: Tally) -> list[Path]:
    saved = []
    for index, failure in sorted(tally.failures):
        FAILURES.mkdir(parents=True, exist_ok=True)
        path = FAILURES / f"seed{seed}-mutant{index}.json"
        path.write_text(json.dumps({"found": f"bench_fuzz --seed {seed}, mutant {index}: {failure}",
                                    **recipe_of(seed, index).plain()}, indent=1) + "\n")
        saved.append(path)
    return saved


def report(args: argparse.Namespace, tally: Tally, seconds: float, saved: list[Path]) -> str:
    import elftools

    slow_ms, slow_index = tally.slowest
    peak, peak_index = tally.peak
    lines = [
        f"Mutants tried: {tally.tried} (seed {args.seed}, {args.jobs} worker processes), in {seconds:.0f} s: "
        f"**{tally.tried / seconds:.0f} mutants/s**.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"pyelftools {elftools.__version__}.",
        "",
        "| read_elf's answer (discovery's finding code) | mutants | | linker.opening | mutants |",
        "|---|---:|---|---|---:|",
    ]
    codes, openings = tally.codes.most_common(), tally.openings.most_common()
    for row in range(max(len(codes), len(openings))):
        code = codes[row] if row < len(codes) else ("", "")
        opening = openings[row] if row < len(openings) else ("", "")
        lines.append(f"| {code[0]} | {code[1]} | | {opening[0]} | {opening[1]} |")
    lines += [
        "",
        f"Slowest mutant: {slow_ms * 1000:.1f} ms, mutant {slow_index}: "
        f"`{json.dumps(recipe_of(args.seed, slow_index).plain())}`",
        "",
        f"Peak memory: {peak / 2**20:.1f} MB {'traced (tracemalloc)' if args.trace else 'of RSS growth above the file'}"
        f" (mutant {peak_index}); the workers' peak RSS {tally.worker_rss / 2**20:.0f} MB.",
        "",
        f"Failures: {len(tally.failures)}" + ("." if not tally.failures else ":"),
    ]
    lines += [f"- mutant {index}: {failure} (saved: {path.relative_to(ROOT)})"
              for (index, failure), path in zip(sorted(tally.failures), saved, strict=True)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--trace", action="store_true", help="memory by tracemalloc instead of RSS")
    parser.add_argument("--out", type=Path, help="also write the report (markdown) here")
    parser.add_argument("--replay", type=int, metavar="I", help="print mutant I's recipe and verdict, run nothing else")
    args = parser.parse_args()
    if args.replay is not None:
        recipe = recipe_of(args.seed, args.replay)
        print(json.dumps(recipe.plain()))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, recipe.base.partition("/")[2].partition("#")[0])
            Path(path).write_bytes(recipe.build())
            print(examine(path))
        return
    tally, seconds = fuzz(args.mutants, args.seed, args.jobs, args.trace)
    text = report(args, tally, seconds, save_failures(args.seed, tally))
    print(text)
    if args.out:
        args.out.write_text(text)
    sys.exit(1 if tally.failures else 0)


if __name__ == "__main__":
    main()
