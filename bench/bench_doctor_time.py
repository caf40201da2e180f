"""How long plain `cudnnload doctor` takes with PyTorch and JAX installed, warm (its memo filled by a first run),
and `cudnnload doctor --pid` of a running PyTorch process that has run a convolution (issue 18's figures:
<= 1.0 s and <= 0.3 s). Peers in the same run: the interpreter's own start, and `import torch`.

    python bench/bench_doctor_time.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TORCH_PROCESS = """
import sys, torch
conv = torch.nn.Conv2d(3, 8, 3).cuda()
conv(torch.randn(1, 3, 16, 16, device="cuda")).sum().item()
print("ready", flush=True)
sys.stdin.read()
"""


def timed(argv: list[str], runs: int) -> tuple[float, int]:
    """Median wall time of ``runs`` runs, and the last exit status."""
    times, code = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        code = subprocess.run(argv, capture_output=True, check=False).returncode
        times.append(time.perf_counter() - start)
    return statistics.median(times), code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    python = [sys.executable, "-c", "pass"]
    doctor = [sys.executable, "-m", "cudnnload", "doctor"]
    first, _ = timed(doctor, 1)
    warm, code = timed(doctor, runs)
    bare, _ = timed(python, runs)
    torch_import, _ = timed([sys.executable, "-c", "import torch"], runs)
    print(f"plain doctor, first run (memo empty):     {first:.3f} s")
    print(f"plain doctor, warm (median of {runs}):         {warm:.3f} s (exit {code}; goal <= 1.0 s)")
    print(f"  peers: python -c pass {bare:.3f} s, python -c 'import torch' {torch_import:.3f} s")
    child = subprocess.Popen([sys.executable, "-c", TORCH_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        pid_first, _ = timed(doctor + ["--pid", str(child.pid)], 1)
        pid_warm, pid_code = timed(doctor + ["--pid", str(child.pid)], runs)
        maps, _ = timed(["cat", f"/proc/{child.pid}/maps"], runs)
        out = subprocess.run(doctor + ["--pid", str(child.pid)], capture_output=True, text=True, check=False).stdout
    finally:
        child.kill()
        child.wait()
    print(f"doctor --pid of a PyTorch process, first: {pid_first:.3f} s")
    print(f"doctor --pid, warm (median of {runs}):        {pid_warm:.3f} s (exit {pid_code}; goal <= 0.3 s); "
          f"cat /proc/PID/maps {maps * 1000:.1f} ms")
    print("\n".join(out.splitlines()[:14]))


if __name__ == "__main__":
    main()
