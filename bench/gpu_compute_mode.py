"""What a GPU's compute mode does to the real PyTorch and JAX, and what `doctor` says of it (on the GPU machine, as
root: it sets the mode with nvidia-smi and sets it back to DEFAULT after, whatever happens).

    python bench/gpu_compute_mode.py

Two states: EXCLUSIVE_PROCESS with another process holding a context on the GPU, and PROHIBITED. In each, PyTorch's
and JAX's own convolution programs run (the truth), then `cudnnload doctor --json`: its gpu findings and what it says
of each framework.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_frameworks_gpu import JAX_PROGRAM, TORCH_PROGRAM  # noqa: E402

HOLDER = "import time, torch; torch.zeros(1, device='cuda'); print('ready', flush=True); time.sleep(600)"


def mode(name: str) -> str:
    done = subprocess.run(["nvidia-smi", "-i", "0", "-c", name], capture_output=True, text=True)
    return f"nvidia-smi -c {name}: rc {done.returncode} {(done.stdout + done.stderr).strip()[:200]}"


def ask() -> None:
    for framework, source in (("torch", TORCH_PROGRAM), ("jax", JAX_PROGRAM)):
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=180)
        ok = done.returncode == 0 and "conv ok" in done.stdout
        lines = [line for line in done.stderr.splitlines() if "rror" in line or "busy" in line or "devices" in line]
        print(f"   {framework:5} {'works' if ok else 'FAILS'} {' | '.join(lines[-2:])[:400]}", flush=True)
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json"], capture_output=True, text=True,
                          timeout=300)
    try:
        result = json.loads(done.stdout)["result"]
    except ValueError:
        print(f"   doctor rc {done.returncode}: {done.stderr.strip()[-300:]}", flush=True)
        return
    says = {u["framework"]: u["works"] for u in result.get("frameworks", [])}
    gpu = [f"{f['severity']} {f['code']}: {f['message'][:220]} FIX {f['fix']['text'][:160]}"
           for f in result["findings"] if f["code"].startswith("gpu") or f["code"] in ("probe-failed", "repair")]
    print(f"   doctor rc {done.returncode} works {says}", flush=True)
    for line in gpu:
        print(f"     {line}", flush=True)


def main() -> None:
    try:
        print(mode("EXCLUSIVE_PROCESS"), flush=True)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
        try:
            said = holder.stdout.readline().strip() if holder.stdout else ""
            print("== exclusive-process, holder:", said, flush=True)
            ask()
        finally:
            holder.kill()
            holder.wait()
        time.sleep(1)
        print("== exclusive-process, no holder", flush=True)
        ask()
        print(mode("PROHIBITED"), flush=True)
        print("== prohibited", flush=True)
        ask()
    finally:
        print(mode("DEFAULT"), flush=True)


if __name__ == "__main__":
    main()
