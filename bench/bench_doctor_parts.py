"""Plain `cudnnload doctor` taken apart: where its wall time goes, stage by stage, memo warm.

    python bench/bench_doctor_parts.py [--runs N] [--program CODE]

Each stage is timed alone, in this process, after one warm-up (the memo and the consumer cache filled);
then `cudnnload doctor` as a user runs it (a fresh process), whose stages overlap: the probe and the
frameworks' facts run beside the rest.

With ``--program CODE``: `doctor -- python -c CODE` taken apart instead, as `observe.diagnose_program`
runs it (what it adds after the program has ended is what the user waits for).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_ms(work: Callable[[], Any], runs: int) -> float:
    work()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def program_parts(code: str, runs: int) -> None:
    """The phases of `doctor -- python -c CODE`, medians of ``runs`` (after one warm-up)."""
    from cudnnload.diagnose import launch, observe

    env, program = dict(os.environ), [sys.executable, "-c", code]
    phases: dict[str, list[float]] = {}

    def once() -> None:
        start = time.perf_counter()
        launched = launch.launch(program, environ=env, sample_s=launch.DOCTOR_SAMPLE_S)
        preparing = observe._Prepare(env, launched)
        ran = observe.run(program, launched=launched)
        ended = time.perf_counter()
        ctx = preparing.result()
        joined = time.perf_counter()
        seen = observe.observation(ran)
        for shim in seen.shims:
            observe._compare(shim, seen, env, ctx, preparing.alone)
        compared = time.perf_counter()
        stamps = {"the program, under watch (start to its end, seen by doctor)": ran.seconds,
                  "after it ended: its logs read (LD_DEBUG, cuDNN's)": ended - start - ran.seconds,
                  "after it ended: waiting for the model and the predictions": joined - ended,
                  "after it ended: the comparisons": compared - joined,
                  "predictions made while it ran": float(len(preparing.alone))}
        for what, seconds in stamps.items():
            phases.setdefault(what, []).append(seconds)

    once()
    for _ in range(runs):
        once()
    alone = median_ms(lambda: subprocess.run(program, capture_output=True, env=env), runs)
    print(f"| `doctor -- python -c ...` taken apart ({runs} runs) | median |\n|---|---|")
    print(f"| the program alone, a fresh process | {alone:.0f} ms |")
    for what, values in phases.items():
        value = statistics.median(values)
        print(f"| {what} | {value:.0f} |" if what.startswith("predictions") else f"| {what} | {value * 1000:.1f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--program", metavar="CODE", help="take `doctor -- python -c CODE` apart instead")
    args = parser.parse_args()
    if args.program:
        program_parts(args.program, args.runs)
        return
    from cudnnload.diagnose.doctor import doctor
    from cudnnload.diagnose.targets import resolve_target
    from cudnnload.diagnose.which import which
    from cudnnload.loading.gpu import gpu_facts
    from cudnnload.loading.probe import probe
    from cudnnload.resolve.consumers import find_consumers

    env = dict(os.environ)
    resolved = resolve_target(None, environ=env)
    install = resolved.install
    shim = install.file("shim") if install else None
    stages: list[tuple[str, Callable[[], Any]]] = [
        ("interpreter start and `import cudnnload.cli`",
         lambda: subprocess.run([sys.executable, "-c", "import cudnnload.cli"], check=True)),
        ("resolve the target (every install, the plan)", lambda: resolve_target(None, environ=env)),
        ("which (this Python's load order)", lambda: which(environ=env)),
        ("the driver's facts (gpu_facts)", lambda: gpu_facts(env)),
        ("the frameworks' facts (find_consumers)", lambda: find_consumers(None, environ=env, timeout=60)),
    ]
    if install is not None and shim is not None:
        stages.append(("the probe (a child loads cuDNN as an app does)",
                       lambda: probe([("shim", shim.path)], install.major, app=True, environ=env, timeout=60)))
    stages.append(("doctor(), all of it, in this process", lambda: doctor(env)))
    stages.append(("`cudnnload doctor`, a fresh process",
                   lambda: subprocess.run([sys.executable, "-m", "cudnnload", "doctor"], capture_output=True)))
    print("| stage | median |\n|---|---|")
    for what, work in stages:
        print(f"| {what} | {median_ms(work, args.runs):.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
