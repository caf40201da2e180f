"""cuDNN 9 releases, each whole and with each of its libraries taken away in turn, judged against the real shim on
this machine: does doctor's model predict what the shim's calls do (its probe verdict), and does it say an error
wherever they fail?

    python bench/cudnn9_releases.py WHEEL... [--out FILE]

Each ``nvidia_cudnn_cu12-9.*`` wheel is unpacked into a pip site beside the test cache's cuBLAS 12.9.1.4 and NVRTC
12.9.86 (the wheels' RUNPATH finds them), with a stand-in for the CUDA toolkit's stub ``libcuda.so.1`` on
``LD_LIBRARY_PATH`` (bench/cudnn8_differential.py: every driver function the libraries name, each returning
CUDA_ERROR_STUB_LIBRARY), so that the engines that need the driver load on a machine without one. Releases between
those the tests hold (9.0, 9.24, 9.28) are where a rule measured on one release and carried to another shows: which
engines graph asks for and which it can do without, which names the shim tries, what each call returns.

Prints one line per layout: the release, what was taken away, doctor's probe verdict, its error findings; and the
totals. Exit 1 when a verdict disagrees or a failing layout gets no error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cudnn8_differential import place, stand_in  # noqa: E402

from fixtures.wheels import cache_root  # noqa: E402

CUBLAS, NVRTC = "nvidia-cublas-cu12-12.9.1.4", "nvidia-cuda-nvrtc-cu12-12.9.86"


def site_of(wheel: Path, folder: Path) -> Path:
    """``wheel``'s cuDNN libraries and the test cache's cuBLAS 12 and NVRTC 12 as pip lays them out; the cuDNN lib."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder / "unpacked", [n for n in archive.namelist() if n.startswith("nvidia/cudnn/lib/")])
    unpacked = cache_root() / "unpacked"
    place(unpacked / CUBLAS / "nvidia" / "cublas" / "lib", folder / "site" / "nvidia" / "cublas" / "lib")
    place(unpacked / NVRTC / "nvidia" / "cuda_nvrtc" / "lib", folder / "site" / "nvidia" / "cuda_nvrtc" / "lib")
    lib = folder / "site" / "nvidia" / "cudnn" / "lib"
    place(folder / "unpacked" / "nvidia" / "cudnn" / "lib", lib)
    return lib


def doctor(shim: Path, driver: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "cudnnload", "doctor", "--json", str(shim), "--env",
                           f"LD_LIBRARY_PATH={driver}"], capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "CUDNNLOAD_NO_CACHE": "1", "PYTHONPATH": str(ROOT)})
    try:
        return dict(json.loads(done.stdout)["result"])
    except (ValueError, KeyError, TypeError):
        return {"error": (done.stderr or done.stdout).strip()[-300:]}


def judge(release: str, removed: str, shim: Path, driver: Path) -> dict[str, object]:
    report = doctor(shim, driver)
    checks = [c for c in report.get("checks") or [] if isinstance(c, dict)]
    probe = next((str(c.get("summary")) for c in checks if c.get("name") == "probe"), "")
    findings = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    agrees = "error" not in report and not probe.startswith("the run disagrees") and not any(
        f.get("code") == "prediction-disagrees" for f in findings)
    failing = probe.startswith(("as predicted:", "the run disagrees"))  # the real calls failed somewhere
    errors = [str(f.get("code")) for f in findings if f.get("severity") == "error"
              and f.get("code") not in ("no-driver", "no-gpu", "driver-too-old")]
    return {"release": release, "removed": removed, "probe": probe, "agrees": agrees, "failing": failing,
            "errors": errors, "said": not failing or bool(errors)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="each layout's record (JSON lines)")
    args = parser.parse_args()
    if shutil.which("gcc") is None or not (cache_root() / "unpacked" / CUBLAS / ".unpacked").exists():
        print("needs gcc (the stand-in libcuda.so.1) and the test wheels (make wheels)")
        return 2
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        unpacked = cache_root() / "unpacked"
        driver = stand_in(Path(scratch) / "driver", [unpacked / CUBLAS / "nvidia" / "cublas" / "lib",
                                                      unpacked / NVRTC / "nvidia" / "cuda_nvrtc" / "lib",
                                                      *(unpacked / name / "nvidia" / "cudnn" / "lib" for name in
                                                        ("nvidia-cudnn-cu12-9.28.0.42",))]).parent
        for wheel in args.wheels:
            release = wheel.name.split("-")[1]
            folder = Path(scratch) / release
            lib = site_of(wheel, folder)
            names = sorted(p.name for p in lib.glob("libcudnn*.so.9"))
            for removed in ["", *(n for n in names if n != "libcudnn.so.9")]:
                aside = folder / "aside"
                if removed:
                    aside.mkdir(exist_ok=True)
                    (lib / removed).rename(aside / removed)
                record = judge(release, removed or "(whole)", lib / "libcudnn.so.9", driver)
                if removed:
                    (aside / removed).rename(lib / removed)
                records.append(record)
                print(f"{release:<10} {str(record['removed']):<40} {'agrees' if record['agrees'] else 'DISAGREES'}"
                      f" | {str(record['probe'])[:110]} | errors {','.join(record['errors']) or '-'}"  # type: ignore[arg-type]
                      f"{'' if record['said'] else ' | FAILS WITHOUT AN ERROR'}", flush=True)
            shutil.rmtree(folder, ignore_errors=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    agree = sum(bool(r["agrees"]) for r in records)
    said = sum(bool(r["said"]) for r in records)
    print(f"\n{len(records)} layouts of {len(args.wheels)} releases: probe verdict agrees with the model {agree}/"
          f"{len(records)}; failing {sum(bool(r['failing']) for r in records)}, each with an error: {said}/"
          f"{len(records)} said")
    return 0 if agree == len(records) and said == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
