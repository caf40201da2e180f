"""Preload cost against the raw ctypes sequence, measured side by side in one run (issue 3).

    python bench/bench_preload.py [--runs N] [--folder PATH]

Each figure is the median over N fresh processes (after one untimed run each,
so both read from a warm page cache):
- raw ctypes: ``import ctypes``, dlopen every file of the set by absolute path
  with RTLD_GLOBAL, leaves first, then every ``cudnn*VersionCheck`` (on a GPU
  machine the first one creates the CUDA context);
- cudnnload.load(): the same files, the same calls, once its verdict is
  remembered on disk; the call itself, and separately the one-time
  ``import cudnnload.loading.loader`` (mostly CPython's dataclasses/enum machinery);
- probe: the child-process probe's round trip as seen by the caller.
Both sequences skip the files that cannot load on this machine (9.28's
engines_runtime_compiled without libcuda.so.1), as load() does.

Then ``cudnnload run`` (issue 19), whole processes timed from the outside,
the commands taken in turn in each round (median of the rounds):
- the preload of the set: a Python that does nothing, with ``LD_PRELOAD`` set
  to the set (what ``run`` gives the program), less the same Python without
  it; against raw ctypes: the same Python opening the same files with
  ``ctypes.CDLL``, less the same Python importing ctypes only. Both include
  what mapping the files costs at exit;
- ``cudnnload run --cudnn FOLDER -- /bin/true`` (the console entry, and
  ``python -m cudnnload``), verdict remembered, against ``/bin/true`` with the
  same ``LD_PRELOAD``: what cudnnload itself adds; and against ``/bin/true``
  alone, for scale.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUDGET = {"ratio": 1.2, "probe_ms": 400.0, "run_ms": 30.0, "preload_ratio": 1.2}

RAW = """
import sys, time, json, ctypes, os
t = time.perf_counter()
files, checks = json.loads(sys.argv[1]), json.loads(sys.argv[2])
handles = [ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL) for path in files]
for name in checks:
    assert getattr(handles[-1], name)() == 0, name
print((time.perf_counter() - t) * 1000)
"""
OURS = """
import sys, time
t = time.perf_counter()
import cudnnload.loading.loader
t1 = time.perf_counter()
got = cudnnload.loading.loader.load(sys.argv[1])
assert got.verdict_cached
print((time.perf_counter() - t1) * 1000, (t1 - t) * 1000)
"""


def _child_ms(cmd: list[str], env: dict[str, str]) -> list[float]:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[2][:40]!r}... failed: {done.stderr[-2000:]}")
    return [float(x) for x in done.stdout.strip().splitlines()[-1].split()]


def _median(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Median of each number the child prints, over ``runs`` runs after one untimed run."""
    _child_ms(cmd, env)
    samples = [_child_ms(cmd, env) for _ in range(runs)]
    return [statistics.median(column) for column in zip(*samples, strict=True)]


def _timed(commands: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, tuple[float, ...]]:
    """Each command's (median wall ms, minimum wall ms, median CPU ms: user + system of the process), a fresh
    process each time; every round runs each command once, in turn, so that a busy moment of the machine
    weighs on all of them alike (one untimed round first). On a shared machine the CPU time and the
    minimum are the figures least disturbed by other work."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, (argv, env) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            # no timeout: with one, Popen.wait polls, sleeping up to 50 ms a time, and the figures are its steps
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            took = (time.perf_counter() - start) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:
                wall[name].append(took)
                cpu[name].append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    return {name: (statistics.median(wall[name]), min(wall[name]), statistics.median(cpu[name])) for name in commands}


def _run_rows(folder: str, files: list[str], env: dict[str, str], runs: int) -> bool:
    """``cudnnload run`` against the same preload by hand, and the preload against raw ctypes; True when
    both budgets are met by every figure."""
    console = Path(sys.executable).parent / "cudnnload"
    preload = {**env, "LD_PRELOAD": ":".join(files)}
    quiet = [sys.executable, "-I", "-S", "-c"]
    run = ["run", "--cudnn", folder, "--", "/bin/true"]
    subprocess.run([sys.executable, "-m", "cudnnload", *run], env=env, check=True, timeout=300)  # proven once
    commands = {
        "/bin/true": (["/bin/true"], env),
        "/bin/true, LD_PRELOAD = the set": (["/bin/true"], preload),
        "python": ([*quiet, "pass"], env),
        "python with its site (as cudnnload starts)": ([sys.executable, "-c", "pass"], env),
        "python, LD_PRELOAD = the set": ([*quiet, "pass"], preload),
        "python, import ctypes": ([*quiet, "import ctypes, os, sys"], env),
        "python, ctypes.CDLL of each file": ([*quiet, "import ctypes, os, sys\nfor path in sys.argv[1].split(':'): "
                                              "ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)", ":".join(files)],
                                             env),
        "python -m cudnnload run -- /bin/true": ([sys.executable, "-m", "cudnnload", *run], env),
    }
    entry = "cudnnload run -- /bin/true" if console.exists() else "python -m cudnnload run -- /bin/true"
    if console.exists():
        commands[entry] = ([str(console), *run], env)
    timed = _timed(commands, runs)
    print(f"\ncudnnload run, whole processes, {runs} rounds (each command once a round, in turn), verdict remembered")
    print(f"{'what':<44} {'wall median':>12} {'wall min':>9} {'CPU median':>11}")
    for name, (median, least, cpu) in timed.items():
        print(f"{name:<44} {median:>12.1f} {least:>9.1f} {cpu:>11.1f}")
    ok = True
    for figure, at in (("wall median", 0), ("wall min", 1), ("CPU median", 2)):
        ms = {name: values[at] for name, values in timed.items()}
        added = ms[entry] - ms["/bin/true, LD_PRELOAD = the set"]
        module = ms["python -m cudnnload run -- /bin/true"] - ms["/bin/true, LD_PRELOAD = the set"]
        ours = ms["python, LD_PRELOAD = the set"] - ms["python"]
        raw = ms["python, ctypes.CDLL of each file"] - ms["python, import ctypes"]
        print(f"{figure:>11}: `{entry.split(' --')[0]}` adds {added:.1f} ms to /bin/true with the same LD_PRELOAD "
              f"(budget {BUDGET['run_ms']:.0f} ms; `python -m cudnnload run` {module:.1f} ms); the set by LD_PRELOAD "
              f"{ours:.1f} ms, by ctypes {raw:.1f} ms: {ours / raw:.2f}x (budget {BUDGET['preload_ratio']}x)")
        start = ms["python with its site (as cudnnload starts)"] - ms["/bin/true"]
        print(f"{'':>11}  of which the interpreter's own start with its site-packages (.pth files): {start:.1f} ms; "
              f"cudnnload's own work: {added - start:.1f} ms")
        ok = ok and added <= BUDGET["run_ms"] and ours / raw <= BUDGET["preload_ratio"]
    return ok


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--folder", default=None, help="a cuDNN lib folder (default: the 9.28 cu12 test wheel)")
    args = parser.parse_args()
    if args.folder:
        folder = args.folder
    else:
        from tests.wheels import lib_folder

        folder = str(lib_folder("cu12-9.28.0.42"))
    compileall.compile_dir(str(ROOT / "cudnnload"), quiet=1)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CUDNNLOAD_CACHE": cache,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # Prove and remember the set once; its plan says which files load here and in which order.
        plan = subprocess.run(
            [sys.executable, "-c", "import json, sys, cudnnload.loading.loader as L; g = L.load(sys.argv[1]); "
             "print(json.dumps([[p for _, p in g.files], [s.name for s in g.stages if s.status is not None], "
             "str(g.release)]))", folder], env=env, capture_output=True, text=True, timeout=300)
        if plan.returncode != 0:
            raise SystemExit(plan.stderr[-2000:])
        files, checks, release = json.loads(plan.stdout.strip().splitlines()[-1])
        (raw,) = _median([sys.executable, "-c", RAW, json.dumps(files), json.dumps(checks)], env, args.runs)
        ours, imports = _median([sys.executable, "-c", OURS, folder], env, args.runs)
        from cudnnload.loading.probe import probe

        keys = [(os.path.basename(p), p) for p in files]  # names only label the steps here
        probe(keys, int(release.split(".")[0]), environ=env)
        probes = []
        for _ in range(args.runs):
            start = time.perf_counter()
            result = probe(keys, int(release.split(".")[0]), environ=env)
            probes.append((time.perf_counter() - start) * 1000)
        probe_ms = statistics.median(probes)
    print(f"preload of cuDNN {release} from {folder}: {len(files)} files, {len(checks)} VersionChecks, "
          f"median of {args.runs} fresh processes")
    print(f"{'what':<44} {'ms':>8} {'ratio':>7}")
    print(f"{'raw ctypes: dlopen each + VersionChecks':<44} {raw:>8.1f} {1:>7.2f}")
    print(f"{'cudnnload.load(), verdict remembered':<44} {ours:>8.1f} {ours / raw:>7.2f}  "
          f"(budget {BUDGET['ratio']}x)")
    with_import = "  + import cudnnload.loading.loader (once a process)"
    print(f"{with_import:<44} {imports:>8.1f} {(ours + imports) / raw:>7.2f}  (load() with its import)")
    print(f"{'child-process probe, round trip':<44} {probe_ms:>8.1f} {probe_ms / raw:>7.2f}  "
          f"(budget {BUDGET['probe_ms']:.0f} ms; verdict: {result.verdict})")
    ok = ours / raw <= BUDGET["ratio"] and probe_ms <= BUDGET["probe_ms"]
    with tempfile.TemporaryDirectory() as cache:
        env = {**env, "CUDNNLOAD_CACHE": cache}
        ok = _run_rows(folder, files, env, args.runs) and ok
    print("all budgets met" if ok else "BUDGET MISSED")


if __name__ == "__main__":
    main()
