"""`cudnnload fleet FOLDER` on a thousand reports: its time against reading the same files with json.load
alone, and its memory for 100 and 1 000 nodes of the same setups.

    python bench/bench_fleet.py [--nodes N] [--groups G] [--runs R] [--out FILE]

The reports are real `cudnnload doctor libcudnn.so.9 --json` reports of this machine (the 9.28 and 9.0
wheels on LD_LIBRARY_PATH, and none), varied into G setups (another LD_LIBRARY_PATH, driver or cuDNN
folder) and written N times, as `srun cudnnload doctor --output reports/%N.json` leaves them.
Budget (issue 12): reading and grouping 1 000 reports in 2 s on the 2-core CPU machine; memory that grows
with the number of setups, not of nodes.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_doctor_parts import median_ms  # noqa: E402
from cudnnload.diagnose import fleet  # noqa: E402
from tests.wheels import cache_root, lib_folder  # noqa: E402

BUDGET_S = 2.0


def real_reports() -> list[dict[str, Any]]:
    env = {**os.environ, "CUDNNLOAD_CACHE": str(cache_root()), "PYTHONPATH": str(ROOT)}
    cublas = lib_folder("cublas-cu12-12.9.1.4")
    docs = []
    for tag in ("cu12-9.28.0.42", "cu12-9.0.0.312", None):
        extra = {"LD_LIBRARY_PATH": f"{lib_folder(tag)}:{cublas}"} if tag else {}
        done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", "libcudnn.so.9"],
                              capture_output=True, text=True, env={**env, **extra}, check=False)
        docs.append(json.loads(done.stdout))
    return docs


def setups(base: list[dict[str, Any]], groups: int) -> list[dict[str, Any]]:
    """``groups`` distinct reports: the real ones, then copies with another driver or LD_LIBRARY_PATH entry."""
    out = list(base)
    index = 0
    while len(out) < groups:
        doc = copy.deepcopy(base[index % len(base)])
        result = doc["result"]
        result["gpu"] = {**(result.get("gpu") or {}), "driver_version": f"5{70 + index}.00"}
        result["environment"] = [*result.get("environment", []), ["CUDA_HOME", f"/opt/cuda-12.{index}"]]
        out.append(doc)
        index += 1
    return out[:groups]


def write(folder: Path, docs: list[dict[str, Any]], nodes: int) -> None:
    texts = [json.dumps(doc, indent=2) for doc in docs]
    for node in range(nodes):
        # most nodes alike, a few odd ones: setup 0 for 90 %, the others share the rest
        which = 0 if node % 10 else 1 + (node // 10) % (len(texts) - 1)
        (folder / f"node{node:04d}.json").write_text(texts[which])


def timed(work: Any, runs: int) -> float:
    return median_ms(work, runs) / 1000


def json_alone(folder: Path) -> None:
    for path in sorted(folder.iterdir()):
        with open(path, encoding="utf-8") as handle:
            json.load(handle)


def grouped(folder: Path) -> fleet.Fleet:
    return fleet.summarize(fleet.read_folder(str(folder)))


def peak_mb(folder: Path) -> float:
    tracemalloc.start()
    grouped(folder)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=12)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    docs = setups(real_reports(), args.groups)
    with tempfile.TemporaryDirectory() as scratch:
        many, few = Path(scratch, "many"), Path(scratch, "few")
        many.mkdir()
        few.mkdir()
        write(many, docs, args.nodes)
        write(few, docs, args.nodes // 10)
        size = sum(p.stat().st_size for p in many.iterdir())
        alone = timed(lambda: json_alone(many), args.runs)
        mine = timed(lambda: grouped(many), args.runs)
        cli = timed(lambda: subprocess.run([sys.executable, "-m", "cudnnload", "fleet", str(many)],
                                           capture_output=True, check=False), args.runs)
        result = grouped(many)
        memory_many, memory_few = peak_mb(many), peak_mb(few)
    lines = [f"{args.nodes} reports ({size / 1e6:.1f} MB) of {len(result.groups)} setups, median of {args.runs}",
             "", "| what | time | vs json.load alone | budget |", "|---|---|---|---|",
             f"| json.load of every file | {alone:.3f} s | 1.00x | |",
             f"| fleet.summarize(read_folder(...)), in-process | {mine:.3f} s | {mine / alone:.2f}x | |",
             f"| `cudnnload fleet FOLDER`, a fresh process | {cli:.3f} s | {cli / alone:.2f}x | {BUDGET_S} s "
             f"{'met' if cli <= BUDGET_S else 'MISSED'} |",
             "", "| nodes | setups | peak traced memory |", "|---|---|---|",
             f"| {args.nodes // 10} | {len(result.groups)} | {memory_few:.1f} MB |",
             f"| {args.nodes} | {len(result.groups)} | {memory_many:.1f} MB |"]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
