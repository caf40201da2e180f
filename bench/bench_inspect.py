"""Inspection speed against readelf, measured side by side in one run (issue 2).

    python bench/bench_inspect.py [--runs N] [--folder PATH]

Each figure is the median wall time of N fresh processes, after one untimed run
so that every tool reads from a warm page cache:
- ELF inspection: every file's ElfInfo (dynamic section, exports, version
  needs, build-id, release constant, SM inventory) with the memo off (cold)
  and on (a repeat in a new process); the issue's figure;
- cudnnload.inspect(): the same plus discovery, the shim's dlopen plan, the
  dependency search and host checks;
- which: the ``cudnnload which`` command for every name;
- readelf: ``readelf -W -d --dyn-syms`` over the same files, one process.
"in-proc" is the time inside the child from before its first cudnnload import.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.wheels import lib_folder  # noqa: E402  (the same folders the tests use)

BUDGET = {"cold_ms": 250.0, "cold_vs_readelf": 5.0, "cached_ms": 30.0, "rss_mb": 150.0, "which_ms": 150.0}

# Each child prints its in-process milliseconds (from before the first cudnnload import) and VmHWM (kB):
# ru_maxrss would not do, it survives exec and counts the parent.
_TAIL = """
print((time.perf_counter() - t) * 1000)
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")))
"""
ELF = """
import os, sys, time
t = time.perf_counter()
from cudnnload.resolve.elfcache import ElfCache, cache_file
memo = ElfCache(cache_file() if sys.argv[2] == "1" else None)
folder = sys.argv[1]
infos = [memo.inspect(os.path.join(folder, name)) for name in sorted(os.listdir(folder)) if ".so" in name]
memo.save()
assert len(infos) >= 7 and any(i.gpu_code and i.gpu_code.containers > 100 for i in infos)
""" + _TAIL
INSPECT = """
import sys, time
t = time.perf_counter()
import cudnnload
inv = cudnnload.inspect([sys.argv[1]], use_cache=sys.argv[2] == "1")
assert len(inv.installs[0].files) >= 7
""" + _TAIL


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = (time.perf_counter() - start) * 1000
    if cmd[0] != "readelf" and done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:3])} failed with {done.returncode}: {done.stderr[-2000:]}")
    return wall, done.stdout


def _median(cmd: list[str], env: dict[str, str], runs: int) -> tuple[float, float, float]:
    """Median wall ms, median in-process ms and largest VmHWM MB (the last two when the child prints them)."""
    _run(cmd, env)
    walls, inner, peaks = [], [], []
    for _ in range(runs):
        wall, out = _run(cmd, env)
        walls.append(wall)
        tail = out.strip().splitlines()[-2:]
        if len(tail) == 2 and tail[1].isdigit():
            inner.append(float(tail[0]))
            peaks.append(int(tail[1]) / 1024)
    nan = float("nan")
    return statistics.median(walls), statistics.median(inner) if inner else nan, max(peaks) if peaks else nan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--folder", default=None)
    args = parser.parse_args()
    folder = Path(args.folder) if args.folder else lib_folder("cu12-9.28.0.42")
    files = sorted(str(p) for p in folder.glob("libcudnn*.so*"))
    compileall.compile_dir(str(ROOT / "cudnnload"), quiet=1)  # as an installed package would have
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CUDNNLOAD_CACHE": cache,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        runs = args.runs
        bare, _, _ = _median([sys.executable, "-c", "pass"], env, runs)
        readelf, _, _ = _median(["readelf", "-W", "-d", "--dyn-syms", *files], env, runs)
        cold, cold_in, rss = _median([sys.executable, "-c", ELF, str(folder), "0"], env, runs)
        warm, warm_in, _ = _median([sys.executable, "-c", ELF, str(folder), "1"], env, runs)
        full, full_in, full_rss = _median([sys.executable, "-c", INSPECT, str(folder), "0"], env, runs)
        full_warm, full_warm_in, _ = _median([sys.executable, "-c", INSPECT, str(folder), "1"], env, runs)
        which, _, _ = _median([sys.executable, "-m", "cudnnload", "which"], env, runs)
    size = sum(os.path.getsize(f) for f in files) / 2**30
    rows = [
        ("python -c pass (interpreter start)", bare, None, ""),
        ("readelf -W -d --dyn-syms, 10 files", readelf, None, ""),
        ("ELF inspection, cold (no memo)", cold, cold_in,
         f"budget {BUDGET['cold_ms']:.0f} ms wall and {BUDGET['cold_vs_readelf']:.0f}x readelf"),
        ("ELF inspection, memo warm", warm, warm_in, f"budget {BUDGET['cached_ms']:.0f} ms in-process"),
        ("cudnnload.inspect(), cold", full, full_in, "+ linker plan, dependencies, host checks"),
        ("cudnnload.inspect(), memo warm", full_warm, full_warm_in, ""),
        ("cudnnload which (all names)", which, None, f"budget {BUDGET['which_ms']:.0f} ms wall"),
    ]
    print(f"inspection of {folder} ({len(files)} files, {size:.2f} GiB), median of {runs} fresh processes")
    print(f"{'what':<38} {'wall ms':>8} {'in-proc ms':>10} {'vs readelf':>10}  note")
    for name, ms, inner, note in rows:
        inner_text = f"{inner:.1f}" if inner is not None else ""
        print(f"{name:<38} {ms:>8.1f} {inner_text:>10} {ms / readelf:>9.2f}x  {note}")
    print(f"peak RSS (VmHWM): ELF inspection {rss:.0f} MB, cudnnload.inspect() {full_rss:.0f} MB "
          f"(budget {BUDGET['rss_mb']:.0f} MB)")
    ok = (cold <= BUDGET["cold_ms"] and cold / readelf <= BUDGET["cold_vs_readelf"] and rss <= BUDGET["rss_mb"]
          and warm_in <= BUDGET["cached_ms"] and which <= BUDGET["which_ms"])
    print("all budgets met" if ok else "BUDGET MISSED")


if __name__ == "__main__":
    main()
