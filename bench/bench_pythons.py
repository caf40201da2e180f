"""cudnnload on every supported Python this machine can get (3.10 to 3.13): the wheel built from this tree,
installed into a fresh venv of each, its CLI and Python API run against a real cuDNN wheel, and the unit tests
that need no cuDNN wheel run there too.

    python bench/bench_pythons.py [--pythons python3.10 python3.12 ...] [--tests]

Interpreters are looked for on PATH (``python3.N``) and in pyenv's folder; one that is missing is said and
skipped. Prints a row per interpreter: installed, commands that ran, tests passed, seconds. pip's downloads are
kept in the test cache (`fixtures.wheels.cache_root`), never in cudnnload's own cache.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.wheels import cache_root  # noqa: E402

SUPPORTED = ("3.10", "3.11", "3.12", "3.13")
CUDNN = ("nvidia_cudnn_cu12-9.28.0.42-", "nvidia_cublas_cu12-12.9.1.4-", "nvidia_cuda_nvrtc_cu12-12.9.86-")
API = """
import numpy, cudnnload
print(cudnnload.load().release)
x = numpy.ones((1, 2, 4, 4), numpy.float32); w = numpy.ones((3, 2, 3, 3), numpy.float32)
print(cudnnload.conv(x, w, padding=1, backend="numpy").shape)
"""


def interpreters(wanted: list[str] | None) -> list[tuple[str, str | None]]:
    """(version, path or None) for each supported version, or for each given name."""
    found = []
    for version in wanted or SUPPORTED:
        name = version if "/" in version or version.startswith("python") else f"python{version}"
        candidates = [*sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}"))),
                      shutil.which(name)]
        found.append((version, next((c for c in candidates if c and _runs(c)), None)))
    return found


def _runs(python: str) -> bool:
    """Whether it is an interpreter that starts (a pyenv shim of a version not selected does not)."""
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30, check=False).returncode == 0
    except OSError:
        return False


def run(argv: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**clean, **env},
                          check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pythons", nargs="*", help="interpreters (python3.12 or paths); default 3.10 to 3.13")
    parser.add_argument("--tests", action="store_true", help="also run the unit tests that need no cuDNN wheel")
    args = parser.parse_args()
    wheels = [next(iter(sorted((cache_root() / "wheels").glob(f"{stem}*.whl"))), None) for stem in CUDNN]
    if None in wheels:
        print(f"the cuDNN wheels are not in {cache_root() / 'wheels'}: run `make wheels`")
        return 2
    pip_cache = str(cache_root() / "pip")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        built = run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(ROOT)],
                    work)
        if built.returncode:
            print(built.stderr[-2000:])
            return 1
        wheel = next((work / "dist").glob("cudnnload-*.whl"))
        rows = []
        for version, python in interpreters(args.pythons):
            if python is None:
                rows.append((version, "not on this machine", "", "", 0.0))
                continue
            start = time.perf_counter()
            env = work / f"venv-{Path(python).name}"
            made = run([python, "-m", "venv", str(env)], work)
            py = str(env / "bin" / "python")
            steps = [made] if made.returncode else [
                run([py, "-m", "pip", "install", "-q", "--cache-dir", pip_cache, str(wheel),
                     *(("pytest", "hypothesis") if args.tests else ())], work),
                run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", *map(str, wheels)], work)]
            if any(step.returncode for step in steps):
                rows.append((version, "install failed: " + steps[-1].stderr.strip()[-200:], "", "", 0.0))
                continue
            actual = run([py, "-c", "import sys; print(sys.version.split()[0])"], work).stdout.strip()
            lib = run([py, "-c", "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "
                       "'lib'))"], work).stdout.strip()
            cli = str(env / "bin" / "cudnnload")
            commands = {"inspect": [cli, "inspect", lib], "which": [cli, "which"],
                        "doctor": [cli, "doctor", "--json", f"{lib}/libcudnn.so.9"],
                        "explain": [cli, "explain", "CUDNN_STATUS_NOT_INITIALIZED"],
                        "backends": [cli, "backends"], "api": [py, "-c", API]}
            ok = []
            for name, argv in commands.items():
                done = run(argv, work, CUDNNLOAD_CACHE=str(work / "cache"))
                good = done.returncode in (0, 1) and "Traceback" not in done.stderr \
                    and "internal error" not in done.stderr
                if name == "doctor" and good:
                    good = json.loads(done.stdout)["result"]["release"] == "9.28.0"
                ok.append(name if good else f"{name} FAILED")
            tests = ""
            if args.tests:
                done = run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow and not wheels and "
                            "not gpu", "tests/test_verdicts.py", "tests/test_layout.py", "tests/test_elf.py",
                            "tests/test_dispatch.py", "tests/test_numpy_backend.py", "tests/test_first_contact.py"],
                           ROOT, timeout=1800, PYTHONPATH=str(ROOT))
                tests = (done.stdout.strip().splitlines() or ["no output"])[-1]
            rows.append((version, actual, ", ".join(ok), tests, time.perf_counter() - start))
    print(f"cudnnload {wheel.name} on each Python ({time.strftime('%Y-%m-%d')}, {os.uname().machine})")
    print(f"{'python':<8} {'actual':<20} {'commands':<60} {'tests':<40} {'s':>6}")
    for version, actual, ok, tests, seconds in rows:
        print(f"{version:<8} {actual:<20} {ok:<60} {tests:<40} {seconds:>6.1f}")
    failed = [r for r in rows if "FAILED" in r[2] or "failed" in r[1] or " failed" in r[3]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
