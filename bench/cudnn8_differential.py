"""The at-load differential: seeded layouts of cuDNN 8 beside the cuBLAS and NVRTC of its CUDA, drawn from what
users do (a pip site, a tarball with cuBLAS beside it, folders on LD_LIBRARY_PATH, an NVRTC wheel without
``libnvrtc.so``, a ``libnvrtc.so`` link in one folder or another, cuBLASLt preloaded by a framework, a stand-in
``libcuda.so.1`` as the CUDA toolkit's stub is, with or without its ``libcuda.so`` link), each judged three ways on
this machine: the real shim's first calls in a child; `doctor`'s probe verdict, which says whether its model
predicted them; and, where the layout fails where a whole one of the same parts does not, doctor's first error fix
applied to a copy (`fixtures/scenarios/fixes.py`), the calls run again.

    python bench/cudnn8_differential.py [--seed 1] [--count 40] [--wheels DIR] [--out FILE] [--venv]

The wheels go into a bare folder (as ``pip --target`` makes), or with ``--venv`` into a venv's site-packages, whose
interpreter's pip a fix can install into (pip merges the ``nvidia`` folder there; ``--target`` keeps the one there).

The cuDNN 8 releases are the test cache's (``make wheels``: 8.5.0.96 cu11, 8.9.7.29 cu12) and every
``nvidia_cudnn_cu11-8.*`` or ``nvidia_cudnn_cu12-8.*`` wheel in ``--wheels`` (unpacked into the test cache), each with
the cuBLAS and NVRTC of its CUDA major (cu11: cuBLAS 11.11.3.6 and any ``nvidia_cublas_cu11`` wheel in ``--wheels``,
NVRTC 11.8.89; cu12: cuBLAS 12.9.1.4, NVRTC 12.9.86). What is drawn is the rule set of `catalog.OPENS_AT_LOAD` and
the shim's stale dlerror, without naming any rule: the generator only lays files out.

A layout "works" when its calls return what the same cuDNN, cuBLAS and stand-in return with cuBLAS beside the
shim, a ``libnvrtc.so`` linked there too and the stand-in's ``libcuda.so`` link (on a machine without the driver
that may be an abort at the first sub-library that opens libcuda: the reference says so, and a layout that gets as
far works). Prints one line per layout and the totals: probe verdicts that agree with the model, failing layouts,
fixed by doctor's first fix, left to a person (manual: no NVRTC anywhere and no interpreter of the site to
install it with), failing without an error finding (missed), working with one where the whole layout works (false
alarm; where it stops too, unjudged); exit 1 when a verdict disagrees, a fix fails or a failure is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.scenarios.fixes import apply  # noqa: E402
from fixtures.scenarios.layouts import link  # noqa: E402
from fixtures.wheels import WHEELS, cache_root, unpack  # noqa: E402

CALLS = ("cudnnGetVersion", "cudnnOpsInferVersionCheck", "cudnnCnnInferVersionCheck", "cudnnOpsTrainVersionCheck",
         "cudnnCnnTrainVersionCheck", "cudnnAdvInferVersionCheck")
CODE = ("import ctypes, sys\nshim = ctypes.CDLL(sys.argv[1])\nfor name in sys.argv[2:]:\n"
        "    print(name, getattr(shim, name)(), flush=True)\n")
NVRTC = {11: "nvidia-cuda-nvrtc-cu11-11.8.89", 12: "nvidia-cuda-nvrtc-cu12-12.9.86"}
CUBLAS = {11: ["nvidia-cublas-cu11-11.11.3.6"], 12: ["nvidia-cublas-cu12-12.9.1.4"]}
# A stand-in for the CUDA toolkit's stub libcuda.so.1 (stubs/, which users put on LD_LIBRARY_PATH): every driver
# function the libraries in play name, each returning CUDA_ERROR_STUB_LIBRARY (34)
STUB_LIBRARY = 34


@dataclass(frozen=True)
class Parts:
    cudnn: Path  # the unpacked wheel's root (its nvidia/cudnn/lib)
    cublas: Path
    nvrtc: Path
    cuda: int

    def lib(self, root: Path, name: str) -> Path:
        return root / "nvidia" / name / "lib"


def releases(wheels: Path | None) -> list[tuple[str, int, Path]]:
    """(name, CUDA major, unpacked root) of every cuDNN 8 here; the cuBLAS 11 wheels of ``wheels`` added to
    CUBLAS."""
    unpacked = cache_root() / "unpacked"
    found = {f"{dist}-{version}": unpacked / f"{dist}-{version}" for dist, version in WHEELS
             if dist.startswith("nvidia-cudnn-cu1") and version.startswith("8.")
             and (unpacked / f"{dist}-{version}" / ".unpacked").exists()}
    for wheel in sorted(wheels.glob("nvidia_*.whl")) if wheels else []:
        name = "-".join(wheel.name.split("-")[:2]).replace("_", "-")
        if name.startswith(("nvidia-cudnn-cu11-8.", "nvidia-cudnn-cu12-8.", "nvidia-cublas-cu11-")):
            unpack(wheel, unpacked / name)
            if name.startswith("nvidia-cudnn"):
                found[name] = unpacked / name
            elif name not in CUBLAS[11]:
                CUBLAS[11].append(name)
    return sorted((name, 11 if "-cu11-" in name else 12, root) for name, root in found.items())


def place(source: Path, folder: Path, names: list[str] | None = None) -> None:
    """The files of ``source`` (or those of ``names``) linked into ``folder`` (`layouts.link`: hard links)."""
    folder.mkdir(parents=True, exist_ok=True)
    for file in sorted(source.iterdir()):
        if file.is_file() and (names is None or file.name in names):
            link(file, folder / file.name)


def stand_in(folder: Path, libraries: list[Path]) -> Path:
    """A libcuda.so.1 with every driver function (``cu`` and a capital) the files of ``libraries`` name."""
    names: set[str] = set()
    for library in libraries:
        for file in library.glob("lib*.so*"):
            done = subprocess.run(["strings", "-n", "6", str(file)], capture_output=True, text=True, check=False)
            names.update(word for word in done.stdout.split() if re.fullmatch(r"cu[A-Z]\w+", word))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cuda.c").write_text("".join(f"int {name}(void) {{ return {STUB_LIBRARY}; }}\n"
                                           for name in sorted(names)))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"), str(folder / "cuda.c"),
                    "-Wl,-soname,libcuda.so.1"], check=True)
    return folder / "libcuda.so.1"


def draw(rng: random.Random, rels: list[tuple[str, int, Path]]) -> dict[str, object]:
    name, cuda, _ = rng.choice(rels)
    return {"cudnn": name, "cuda": cuda, "cublas_wheel": rng.choice(CUBLAS[cuda]),
            "cublas": rng.choice(("site", "site+path", "beside", "path")),
            "nvrtc": rng.choice(("none", "wheel", "wheel+path", "link-in-cublas", "link-on-path-first",
                                 "link-on-path-last", "link-beside-cudnn")),
            "libcuda": rng.choice(("none", "none", "stand-in", "stand-in+link")),
            "preload": rng.random() < 0.2}


def build(case: Path, spec: dict[str, object], rels: dict[str, Path], made_stand_in: Path) -> tuple[Path, dict[str,
                                                                                                              str]]:
    """The layout ``spec`` under ``case``: the shim's path and the program's environment."""
    cuda = int(str(spec["cuda"]))
    unpacked = cache_root() / "unpacked"
    cudnn_lib = rels[str(spec["cudnn"])] / "nvidia" / "cudnn" / "lib"
    cublas_lib = unpacked / str(spec["cublas_wheel"]) / "nvidia" / "cublas" / "lib"
    nvrtc_lib = unpacked / NVRTC[cuda] / "nvidia" / "cuda_nvrtc" / "lib"
    versioned = next(p.name for p in sorted(nvrtc_lib.glob("libnvrtc.so.*")) if "alt" not in p.name
                     and "builtins" not in p.name)
    site = _site(case, bool(spec.get("venv"))) / "nvidia"
    place(cudnn_lib, site / "cudnn" / "lib")
    path: list[str] = []
    cublas = {"site": site / "cublas" / "lib", "site+path": site / "cublas" / "lib", "beside": site / "cudnn" / "lib",
              "path": case / "opt" / "cublas"}[str(spec["cublas"])]
    place(cublas_lib, cublas)
    if spec["cublas"] in ("site+path", "path"):
        path.append(str(cublas))
    nvrtc = str(spec["nvrtc"])
    if nvrtc.startswith("wheel"):
        place(nvrtc_lib, site / "cuda_nvrtc" / "lib")
        if nvrtc == "wheel+path":
            path.append(str(site / "cuda_nvrtc" / "lib"))
    elif nvrtc != "none":
        place(nvrtc_lib, case / "opt" / "nvrtc" / "real")
        folder = {"link-in-cublas": cublas, "link-beside-cudnn": site / "cudnn" / "lib"}.get(
            nvrtc, case / "opt" / "nvrtc")
        (folder / "libnvrtc.so").symlink_to(case / "opt" / "nvrtc" / "real" / versioned)
        if nvrtc == "link-on-path-first":
            path.insert(0, str(folder))
        elif nvrtc == "link-on-path-last":
            path.append(str(folder))
    if spec["libcuda"] in ("stand-in", "stand-in+link"):  # the driver's folder: a copy of the stand-in (a relink to it
        driver = case / "opt" / "driver"                    # stays inside the case), its -dev link with "+link"
        place(made_stand_in.parent, driver, ["libcuda.so.1"])
        if spec["libcuda"] == "stand-in+link":
            (driver / "libcuda.so").symlink_to("libcuda.so.1")
        path.append(str(driver))
    env = {"LD_LIBRARY_PATH": ":".join(path)} if path else {}
    if spec["preload"]:
        env["LD_PRELOAD"] = str(cublas / f"libcublasLt.so.{cuda}")
    return site / "cudnn" / "lib" / "libcudnn.so.8", env


def _site(case: Path, venv: bool) -> Path:
    """Where the layout's wheels go: a bare folder (as ``pip --target`` makes), or a venv's site-packages (its
    interpreter this one, without pip of its own: the base's, through its system site-packages)."""
    if not venv:
        return case / "site"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(case / "venv")],
                   check=True)
    return case / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def real(shim: Path, env: dict[str, str]) -> tuple[str, ...]:
    """What the shim's first calls did: each call's value, then how the process ended."""
    base = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    done = subprocess.run([sys.executable, "-c", CODE, str(shim), *CALLS], capture_output=True, text=True,
                          env={**base, **env}, timeout=180, check=False)
    lines = tuple(done.stdout.split("\n")[:-1])
    if done.returncode == 0:
        return lines
    said = done.stderr.strip().splitlines()
    return (*lines, f"exit {done.returncode}: {said[-1][:160] if said else ''}")


def as_far(ran: tuple[str, ...], reference: tuple[str, ...]) -> bool:
    """Whether a layout's calls got as far as the whole one's, with the same values: the same run, or, where the
    whole one stops (no driver here: the first that opens libcuda aborts), at least as many calls returned."""
    calls = [line for line in ran if not line.startswith("exit ")]
    whole = [line for line in reference if not line.startswith("exit ")]
    return ran == reference or (len(whole) < len(reference) and calls[:len(whole)] == whole
                                and len(calls) >= len(whole))


def doctor(shim: Path, env: dict[str, str]) -> dict[str, object]:
    command = [sys.executable, "-m", "cudnnload", "doctor", "--json", str(shim)]
    for name in ("LD_LIBRARY_PATH", "LD_PRELOAD"):
        command += ["--env", f"{name}={env.get(name, '')}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "CUDNNLOAD_NO_CACHE": "1", "PYTHONPATH": str(ROOT)})
    try:
        return dict(json.loads(done.stdout)["result"])
    except (ValueError, KeyError, TypeError):
        return {"error": (done.stderr or done.stdout).strip()[-300:]}


class Case:
    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def folder(self) -> Path:
        return self._folder


def judge(index: int, spec: dict[str, object], scratch: Path, rels: dict[str, Path], made_stand_in: Path,
          references: dict[tuple[str, str, str], tuple[str, ...]]) -> dict[str, object]:
    key = (str(spec["cudnn"]), str(spec["cublas_wheel"]), str(spec["libcuda"] != "none"))
    if key not in references:
        healthy = {**spec, "cublas": "beside", "nvrtc": "link-beside-cudnn", "preload": False,
                   "libcuda": "stand-in+link" if spec["libcuda"] != "none" else "none"}
        shim, env = build(scratch / f"reference-{len(references)}", healthy, rels, made_stand_in)
        references[key] = real(shim, env)
    case = scratch / f"case-{index}"
    shim, env = build(case, spec, rels, made_stand_in)
    ran = real(shim, env)
    report = doctor(shim, env)
    checks = report.get("checks") or []
    probe = next((str(c.get("summary")) for c in checks if isinstance(c, dict) and c.get("name") == "probe"), "")
    findings = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    agrees = not probe.startswith("the run disagrees") and not any(f.get("code") == "prediction-disagrees"
                                                                   for f in findings) and "error" not in report
    errors = [f for f in findings if f.get("severity") == "error" and f.get("code") != "no-driver"]
    record: dict[str, object] = {"index": index, **spec, "real": list(ran), "probe": probe, "agrees": agrees,
                                 "codes": [f.get("code") for f in errors], "works": as_far(ran, references[key])}
    if not record["works"]:
        if not errors:
            record["outcome"] = "missed"
        else:
            actions = (errors[0].get("fix") or {}).get("actions") or []
            done = apply(actions, Case(case), [], dict(env))
            record["fix"] = (errors[0].get("fix") or {}).get("text")
            again = real(shim, done.env) if not done.refused and not done.manual else ()
            record["outcome"] = ("fixed" if as_far(again, references[key]) else "not fixed") if again else \
                "manual" if done.manual else "refused"
            record["after"] = list(again)
    elif errors:  # where the whole layout stops too (no driver here), what the error is about cannot be seen
        record["outcome"] = "false alarm" if not references[key][-1:][0].startswith("exit ") else "unjudged"
    shutil.rmtree(case, ignore_errors=True)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--wheels", type=Path, help="a folder of more nvidia_cudnn_cu11-8.* and cuBLAS 11 wheels")
    parser.add_argument("--out", type=Path, help="write each layout's record here (JSON lines)")
    parser.add_argument("--venv", action="store_true", help="lay the wheels out in a venv's site-packages (its "
                        "interpreter's pip installs there) instead of a bare folder")
    args = parser.parse_args()
    found = releases(args.wheels)
    if not found or shutil.which("gcc") is None:
        print("no cuDNN 8 wheel unpacked (run `make wheels`), or no gcc for the stand-in libcuda.so.1")
        return 2
    rels = {name: root for name, _, root in found}
    print(f"cuDNN 8: {', '.join(rels)}; cuBLAS 11: {', '.join(CUBLAS[11])}")
    rng = random.Random(args.seed)
    records = []
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        unpacked = cache_root() / "unpacked"
        made = stand_in(scratch / "stand-in", [*(root / "nvidia" / "cudnn" / "lib" for root in rels.values()),
                                               *(unpacked / name / "nvidia" / "cublas" / "lib"
                                                 for names in CUBLAS.values() for name in names),
                                               *(unpacked / name / "nvidia" / "cuda_nvrtc" / "lib"
                                                 for name in NVRTC.values())])
        references: dict[tuple[str, str, str], tuple[str, ...]] = {}
        for index in range(args.count):
            spec = {**draw(rng, found), "venv": args.venv}
            record = judge(index, spec, scratch, rels, made, references)
            records.append(record)
            last = record["real"][-1] if record["real"] else ""  # type: ignore[index]
            cublas = str(spec["cublas_wheel"]).rsplit("-", 1)[1]
            print(f"{args.seed}-{index} {str(spec['cudnn'])[13:]:<14} cuBLAS {cublas:<10}"
                  f" {spec['cublas']:<9} nvrtc {spec['nvrtc']:<18} libcuda {spec['libcuda']:<8}"
                  f" {'preload ' if spec['preload'] else ''}| {'works' if record['works'] else last[:70]}"
                  f" | {'agrees' if record['agrees'] else 'DISAGREES: ' + str(record['probe'])[:90]}"
                  f"{' | ' + str(record['outcome']) if 'outcome' in record else ''}", flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    failing = [r for r in records if not r["works"]]
    count = {name: sum(r.get("outcome") == name for r in records)
             for name in ("fixed", "not fixed", "manual", "refused", "missed", "false alarm", "unjudged")}
    agree = sum(bool(r["agrees"]) for r in records)
    print(f"\n{len(records)} layouts (seed {args.seed}): probe verdict agrees with the model {agree}/{len(records)};"
          f" failing {len(failing)}: fixed by doctor's first fix {count['fixed']}, not fixed {count['not fixed']},"
          f" manual {count['manual']}, refused {count['refused']}, missed {count['missed']};"
          f" working, with an error said: {count['false alarm']} (and {count['unjudged']} where the whole layout"
          " stops too, without a driver, so that what the error is about cannot be seen)")
    return 0 if agree == len(records) and not count["not fixed"] and not count["missed"] else 1


if __name__ == "__main__":
    sys.exit(main())
