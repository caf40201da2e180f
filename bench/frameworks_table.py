"""The GPU framework tests' record (``frameworks.jsonl``, written by tests/test_frameworks_gpu.py through
bench/gpu_run.sh) as the markdown tables of bench/results/.

    python bench/frameworks_table.py OUT/frameworks.jsonl [OUT/versions.txt] > bench/results/DATE-h100-frameworks.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")[:160]


def main() -> None:
    records = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()]
    versions = Path(sys.argv[2]).read_text().strip() if len(sys.argv) > 2 else ""
    print("# The real PyTorch and JAX broken on the GPU machine: what they did, and what cudnnload said\n")
    if versions:
        print("```\n" + versions + "\n```\n")
    asked = [r for r in records if "worked" in r]
    print("## Every way of asking (tests/test_frameworks_gpu.py, first test)\n")
    print("| breakage | torch ran | jax ran | doctor says torch / jax works | doctor libtorch_cuda.so / JAX plugin "
          "(exit) | doctor -- torch / jax (exit) | explain's top causes (torch) | disagreements |")
    print("|---|---|---|---|---|---|---|---|")
    for r in asked:
        doctor = r.get("doctor", {})
        print(f"| {r['breakage']} | {r['worked']['torch']} | {r['worked']['jax']} | {doctor.get('torch')} / "
              f"{doctor.get('jax')} | {r.get('doctor torch library')} / {r.get('doctor jax library')} | "
              f"{r.get('doctor -- torch', ['?'])[0]} / {r.get('doctor -- jax', ['?'])[0]} | "
              f"{', '.join(r.get('explain torch') or []) or '-'} | {len(r['wrong']) or 'none'} |")
    print("\nThe first line `doctor -- python torch_conv.py` printed, for each run that failed:\n")
    for r in asked:
        line = r.get("doctor -- torch", [0, ""])
        if line[0]:
            print(f"- {r['breakage']}: `{_cell(line[1])}`")
    pinned = [r for r in records if "run --for torch" in r]
    if pinned:
        print("\n## Pins (second test): `cudnnload run --for torch` and `load(for_=\"torch\")` before `import torch`\n")
        print("| breakage | run --for torch (exit, stderr's end) | load(for_=\"torch\") (exit, stderr's end) |")
        print("|---|---|---|")
        for r in pinned:
            run, load = r["run --for torch"], r["load(for_=torch)"]
            print(f"| {r['breakage']} | {run[0]}: {_cell(run[1][-120:])} | {load[0]}: {_cell(load[1][-120:])} |")


if __name__ == "__main__":
    main()
