"""What `cudnnload doctor -- COMMAND` adds to a program's wall time, as a user sees it.

    python bench/bench_observe_overhead.py [--runs N] [-- COMMAND ...]

For each program (default: ``/bin/true`` and ``sleep 0.3``), the median of N fresh runs of the program
alone, then of ``cudnnload doctor -- PROGRAM`` (the `cudnnload` entry point beside this interpreter, its
report discarded), and the difference. One warm-up run of each first (the ELF memo and the linker's
defaults cached, as on any run after the first). Wall time from spawn to exit, as hyperfine measures it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence


def median_ms(argv: Sequence[str], runs: int) -> float:
    """The median wall time of ``runs`` fresh runs of ``argv`` (after one warm-up), in ms."""
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("command", nargs="*", help="one program to measure instead of the defaults")
    args = parser.parse_args()
    doctor = os.path.join(os.path.dirname(sys.executable), "cudnnload")
    programs = [args.command] if args.command else [["/bin/true"], ["sleep", "0.3"]]
    print(f"| program ({args.runs} runs, {os.cpu_count()} CPUs) | alone | under doctor | added |\n|---|---|---|---|")
    for program in programs:
        alone = median_ms(program, args.runs)
        watched = median_ms([doctor, "doctor", "--", *program], args.runs)
        print(f"| `{' '.join(program)}` | {alone:.1f} ms | {watched:.1f} ms | +{watched - alone:.1f} ms |")


if __name__ == "__main__":
    main()
