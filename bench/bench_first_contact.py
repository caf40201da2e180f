"""What a new user waits for (issue 28), each figure beside its anchor measured in the same run:

- plain `cudnnload doctor`, cold (its memo empty, the page cache warm) and warm, beside `python -c pass` and
  `python -c 'import torch'` (goals on the GPU machine with PyTorch and JAX installed: cold <= 1.5 s, warm <= 0.7 s);
- `cudnnload which` beside the interpreter's own start-up (goal <= 2x), its answer kept from the run before
  (`cudnnload.recall`), and the run that makes it;
- cold `cudnnload inspect --no-cache FOLDER` of the cuDNN 9.28 wheel folder beside
  `readelf -d --dyn-syms -V` of the same files (goal <= 5x).

    python bench/bench_first_contact.py [--runs N] [--folder PATH] [--python PYTHON]

Each figure is the median of N fresh processes (cold doctor: each with an empty cache folder of its own), after
one untimed run of each command so the page cache is warm. The cudnnload measured is the one ``PYTHON`` imports
(default this interpreter, with this tree first on its path unless it is installed).
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"doctor cold s": 1.5, "doctor warm s": 0.7, "which / python": 2.0, "inspect / readelf": 5.0}


def wall(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    return time.perf_counter() - start, done.returncode


def median(argv: list[str], env: dict[str, str], runs: int, fresh_cache: bool = False,
           forget: str | None = None) -> tuple[float, int]:
    """``forget``: a folder removed before each run (a kept answer, to time the run that makes it)."""
    wall(argv, env)
    times, code = [], 0
    for _ in range(runs):
        if forget is not None:
            shutil.rmtree(forget, ignore_errors=True)
        if fresh_cache:
            with tempfile.TemporaryDirectory() as cache:
                seconds, code = wall(argv, {**env, "CUDNNLOAD_CACHE": cache})
        else:
            seconds, code = wall(argv, env)
        times.append(seconds)
    return statistics.median(times), code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folder", help="a cuDNN 9 wheel's nvidia/cudnn/lib (default: the test cache's 9.28 cu12)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if args.folder is None:
        sys.path.insert(0, str(ROOT))
        from tests.wheels import lib_folder

        args.folder = str(lib_folder("cu12-9.28.0.42"))
    files = sorted(glob.glob(os.path.join(args.folder, "libcudnn*.so*")))
    python = args.python
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as cache:
        env["CUDNNLOAD_CACHE"] = cache
        cli = [python, "-m", "cudnnload"]
        bare, _ = median([python, "-c", "pass"], env, args.runs)
        torch, torch_code = median([python, "-c", "import torch"], env, args.runs)
        cold, cold_code = median([*cli, "doctor"], env, args.runs, fresh_cache=True)
        warm, warm_code = median([*cli, "doctor"], env, args.runs)
        which, _ = median([*cli, "which"], env, args.runs)
        which_first, _ = median([*cli, "which"], env, args.runs, forget=os.path.join(cache, "answers-v1"))
        readelf, _ = median(["readelf", "-W", "-d", "--dyn-syms", "-V", *files], env, args.runs)
        inspect, _ = median([*cli, "inspect", "--no-cache", args.folder], env, args.runs)
    figures = {"doctor cold s": cold, "doctor warm s": warm, "which / python": which / bare,
               "inspect / readelf": inspect / readelf}
    print(f"issue 28 figures, {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()} ({os.cpu_count()} cores), "
          f"Python {platform.python_version()}, median of {args.runs}")
    rows = [("python -c pass", bare, ""), ("python -c 'import torch'", torch,
                                             "" if torch_code == 0 else "(no torch here)"),
            ("cudnnload doctor, cold (memo empty)", cold, f"exit {cold_code}; goal <= {GOALS['doctor cold s']} s"),
            ("cudnnload doctor, warm", warm, f"exit {warm_code}; goal <= {GOALS['doctor warm s']} s"),
            ("cudnnload which", which, f"{figures['which / python']:.2f}x python -c pass; goal <= 2x"),
            ("cudnnload which, its answer not kept yet", which_first, f"{which_first / bare:.2f}x python -c pass"),
            (f"readelf -W -d --dyn-syms -V ({len(files)} files)", readelf, ""),
            ("cudnnload inspect --no-cache FOLDER", inspect,
             f"{figures['inspect / readelf']:.2f}x readelf; goal <= 5x")]
    for name, seconds, note in rows:
        print(f"  {name:<42} {seconds * 1000:8.0f} ms  {note}")
    missed = [name for name, goal in GOALS.items() if figures[name] > goal]
    print("all goals met" if not missed else f"goals missed: {', '.join(missed)}")
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
