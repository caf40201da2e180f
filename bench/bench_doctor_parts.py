"""Plain `cudnnload doctor` taken apart: where its wall time goes, stage by stage, memo warm.

    python bench/bench_doctor_parts.py [--runs N]

Each stage is timed alone, in this process, after one warm-up (the memo and the consumer cache filled);
then `cudnnload doctor` as a user runs it (a fresh process), whose stages overlap: the probe and the
frameworks' facts run beside the rest.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from cudnnload.diagnose.consumers import find_consumers
    from cudnnload.diagnose.doctor import doctor
    from cudnnload.diagnose.targets import resolve_target
    from cudnnload.loading.gpu import gpu_facts
    from cudnnload.loading.probe import probe
    from cudnnload.resolve.which import which

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
