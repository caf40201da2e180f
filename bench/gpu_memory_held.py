"""What another process holding a GPU's memory does to the real PyTorch and JAX (run on the GPU machine).

For each amount left free (MiB, or a percentage of the GPU's memory), a holder process takes the rest with plain
allocations (PyTorch's, cudaMalloc), then PyTorch's and JAX's own convolution programs (tests/test_frameworks_gpu)
run beside it: did each work, and its last line where not. Then the same with a JAX process as the holder, as JAX
starts (it preallocates a share of the GPU's memory). Each state's NVML reading (`cudnnload.loading.nvml`) is
printed beside nvidia-smi's, and with ``--doctor`` what `cudnnload doctor --json` says of each framework.

    python bench/gpu_memory_held.py [--doctor] [--jax-only] [KEEP ...]   (default: a sweep from 64 MiB to 80 %)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_frameworks_gpu import JAX_PROGRAM, TORCH_PROGRAM  # noqa: E402

TORCH_HOLDER = """
import sys, time, torch
keep = int(sys.argv[1])
blocks = []
while True:
    free, total = torch.cuda.mem_get_info()
    want = free - keep
    if want < 2**21:
        break
    try:
        blocks.append(torch.empty(min(want, 2**30), dtype=torch.uint8, device="cuda"))
    except RuntimeError:
        break
print("ready", torch.cuda.mem_get_info()[0] // 2**20, flush=True)
time.sleep(3600)
"""
JAX_HOLDER = """
import time, jax, jax.numpy as jnp
jnp.ones(8).block_until_ready()
print("ready", jax.devices()[0], flush=True)
time.sleep(3600)
"""
KEEPS = ("64", "256", "512", "768", "1024", "1536", "2048", "4096", "30%", "60%", "80%")


def smi() -> str:
    done = subprocess.run(["nvidia-smi", "--query-gpu=memory.total,memory.used,memory.free", "--format=csv,noheader"],
                          capture_output=True, text=True)
    apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                          capture_output=True, text=True)
    return f"{done.stdout.strip()} | apps: {apps.stdout.strip().replace(chr(10), '; ')}"


def nvml() -> str:
    from cudnnload.loading.gpu import gpu_facts
    from cudnnload.loading.nvml import memory_by_bus_id

    facts = gpu_facts()
    read = memory_by_bus_id([d.pci_bus_id for d in facts.devices])
    return "; ".join(f"{bus}: free {m.free >> 20} MiB of {m.total >> 20}, holders "
                     f"{[(h.pid, h.held and h.held >> 20, (h.command or '')[:40]) for h in m.holders]}"
                     for bus, m in read.items()) or "no NVML answer"


def total_mib() -> int:
    done = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0])


def program(source: str, timeout: float = 180, environ: dict[str, str] | None = None) -> tuple[bool, str, float]:
    import os

    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(environ or {})})
    except subprocess.TimeoutExpired:
        return False, "timed out", time.perf_counter() - start
    ok = done.returncode == 0 and "conv ok" in done.stdout
    # JAX's pool backing off from its share by tenths ("Failed to allocate device memory of 59.39GiB", ...): how
    # many tries failed and the last size refused, then what failed
    tries = re.findall(r"Failed to allocate device memory of ([\d.]+\w+)", done.stderr)
    backed = f"[{len(tries)} tries refused, {tries[0]} .. {tries[-1]}] " if tries else ""
    share = re.search(r"XLA backend (?:allocating|will use up to) (\d+) bytes", done.stderr)
    backed += f"[asked {int(share[1]) / 2**30:.2f} GiB] " if share else ""
    lines = [line for line in done.stderr.strip().splitlines()
             if ("rror" in line or "CUDNN" in line or "DNN" in line) and "Failed to allocate device memory" not in line]
    tail = backed + ("" if ok else " | ".join(lines[-3:] or done.stderr.strip().splitlines()[-1:])[:600])
    return ok, tail, time.perf_counter() - start


def doctor() -> str:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json"], capture_output=True, text=True,
                          timeout=300)
    try:
        result = json.loads(done.stdout)["result"]
    except ValueError:
        return f"doctor rc {done.returncode}: {done.stderr.strip()[-200:]}"
    says = {u["framework"]: u["works"] for u in result.get("frameworks", [])}
    memory = [f"{f['severity']} {f['code']}: {f['message'][:200]}" for f in result["findings"]
              if "memory" in f["code"]]
    return f"rc {done.returncode} works {says} {memory}"


# --jax-only: JAX's program alone, as it starts and without preallocation (whether what fails is its preallocation
# taking nearly all that is free, which depends on where its backing-off from 75 % of the GPU lands)
RUNS = [("torch", TORCH_PROGRAM, {}), ("jax", JAX_PROGRAM, {})]


def state(name: str, holder: list[str], ask_doctor: bool) -> None:
    started = subprocess.Popen(holder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = started.stdout.readline().strip() if started.stdout else ""
        print(f"== {name}: holder says {line!r}", flush=True)
        print("   nvidia-smi", smi(), flush=True)
        print("   nvml      ", nvml(), flush=True)
        for framework, source, environ in RUNS:
            ok, tail, took = program(source, environ=environ)
            said = " ".join(f"{k}={v}" for k, v in environ.items())
            print(f"   {framework:5} {'works' if ok else 'FAILS'} in {took:.1f} s {said} {tail}", flush=True)
        if ask_doctor:
            print("   doctor    ", doctor(), flush=True)
    finally:
        started.kill()
        started.wait()
        time.sleep(1)


def main() -> None:
    ask_doctor = "--doctor" in sys.argv
    if "--jax-only" in sys.argv:
        logged = {"TF_CPP_MIN_LOG_LEVEL": "0"}
        RUNS[:] = [("jax", JAX_PROGRAM, logged),
                   ("jax", JAX_PROGRAM, {**logged, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})]
    keeps = [a for a in sys.argv[1:] if not a.startswith("--")] or list(KEEPS)
    total = total_mib()
    print("alone:", smi(), "|", nvml(), flush=True)
    for keep in keeps:
        mib = total * int(keep[:-1]) // 100 if keep.endswith("%") else int(keep)
        state(f"torch holder leaves {keep} ({mib} MiB)", [sys.executable, "-c", TORCH_HOLDER, str(mib << 20)],
              ask_doctor)
    state("JAX holder as it starts", [sys.executable, "-c", JAX_HOLDER], ask_doctor)
    state("JAX holder, XLA_PYTHON_CLIENT_PREALLOCATE=false",
          ["env", "XLA_PYTHON_CLIENT_PREALLOCATE=false", sys.executable, "-c", JAX_HOLDER], ask_doctor)


if __name__ == "__main__":
    main()
