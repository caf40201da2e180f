"""What `cudnnload doctor --pid PID` costs, beside reading the process's maps alone (issue 18: <= 0.3 s warm).

    python bench/bench_pid.py [--runs N] [--pid PID]

The process: a Python that loaded the 9.28 cu12 wheel's shim by path and called cudnnGetVersion (graph mapped),
waiting on its stdin (or ``--pid``: one of yours, e.g. a PyTorch program on the GPU machine). Each figure is the
median wall time of N fresh processes after one untimed run (the ELF memo and the linker's defaults warm, as on
any run after the first): ``cudnnload doctor --pid`` (the entry point beside this interpreter, report
discarded), ``cat /proc/PID/maps`` (the floor: one process reading the file doctor starts from), and, inside one
process, `diagnose_pid` alone (the work, without the interpreter's start and the imports).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_doctor_parts import median_ms  # noqa: E402  (one warm-up, then the median of the runs)
from tests.wheels import lib_folder  # noqa: E402  (the same folders the tests use)

BUDGET_MS = 300.0
_CHILD = "import ctypes, sys; ctypes.CDLL(sys.argv[1]).cudnnGetVersion(); print('ready', flush=True); sys.stdin.read()"


def command(argv: Sequence[str]) -> Callable[[], object]:
    return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--pid", type=int, help="measure this running process instead of starting one")
    args = parser.parse_args()
    child = None
    pid = args.pid
    if pid is None:
        shim = lib_folder("cu12-9.28.0.42") / "libcudnn.so.9"
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(shim)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        pid = child.pid
    try:
        from cudnnload.diagnose.pid import diagnose_pid

        doctor = os.path.join(os.path.dirname(sys.executable), "cudnnload")
        rows = [("`cudnnload doctor --pid`", median_ms(command([doctor, "doctor", "--pid", str(pid)]), args.runs)),
                (f"`cat /proc/{pid}/maps`", median_ms(command(["cat", f"/proc/{pid}/maps"]), args.runs)),
                ("`diagnose_pid()` in one process", median_ms(lambda: diagnose_pid(pid), args.runs))]
        with open(f"/proc/{pid}/maps") as maps:
            lines = sum(1 for _ in maps)
    finally:
        if child is not None:
            child.kill()
            child.wait()
    print(f"| process {pid} ({lines} lines of maps; {args.runs} runs, {os.cpu_count()} CPUs) | median |\n|---|---|")
    for what, ms in rows:
        print(f"| {what} | {ms:.1f} ms |")
    verdict = "within" if rows[0][1] <= BUDGET_MS else "OVER"
    print(f"\n`doctor --pid` {verdict} the budget of {BUDGET_MS:.0f} ms")


if __name__ == "__main__":
    main()
