"""cuDNN 8 releases the test wheels do not hold, each beside cuBLAS 11.11 (what TensorFlow 2.14 and PyTorch 2.1
cu118 pinned), with and without an NVRTC that answers ``libnvrtc.so``, on this machine: the real shim's first calls
in a child, and `doctor`'s probe verdict, which says whether the run agreed with the model's prediction.

    python bench/cudnn8_families.py WHEEL_OR_FOLDER... [--cublas DIR] [--nvrtc DIR]

Each argument is an ``nvidia_cudnn_cu11-8.x`` wheel (unpacked into a temporary folder) or its unpacked
``nvidia/cudnn/lib`` folder. ``--cublas``: cuBLAS 11.11's lib folder (default: the test cache's); ``--nvrtc``: a
folder whose ``libnvrtc.so`` is NVRTC 11 (default: one made with a link to the test cache's NVRTC 11.8).
Prints one line per layout: what the real shim did, what doctor's probe said; exit 1 when any disagrees.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.wheels import cache_root  # noqa: E402

CALLS = ("cudnnGetVersion", "cudnnOpsInferVersionCheck", "cudnnCnnInferVersionCheck", "cudnnOpsTrainVersionCheck",
         "cudnnCnnTrainVersionCheck")
CODE = ("import ctypes, sys\nshim = ctypes.CDLL(sys.argv[1])\nfor name in sys.argv[2:]:\n"
        "    print(name, getattr(shim, name)(), flush=True)\n")


def real(shim: Path, path: str) -> str:
    done = subprocess.run([sys.executable, "-c", CODE, str(shim), *CALLS], capture_output=True, text=True,
                          env={**os.environ, "LD_LIBRARY_PATH": path}, timeout=120, check=False)
    ran = [line.split()[0] for line in done.stdout.splitlines()]
    if done.returncode == 0:
        return f"all {len(ran)} calls return"
    stopped = CALLS[len(ran)] if len(ran) < len(CALLS) else "?"
    return f"aborts at {stopped}: {done.stderr.strip().splitlines()[-1][:110] if done.stderr.strip() else ''}"


def probe(folder: Path, path: str) -> str:
    command = [sys.executable, "-m", "cudnnload", "doctor", str(folder), "--env", f"LD_LIBRARY_PATH={path}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "CUDNNLOAD_NO_CACHE": "1", "PYTHONPATH": str(ROOT)})
    line = next((line for line in done.stdout.splitlines() if line.strip().startswith(("ok    probe", "fail  probe",
                                                                                        "warn  probe"))), "")
    return " ".join(line.split()[2:]) or done.stderr.strip()[-200:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cudnn", nargs="+")
    parser.add_argument("--cublas", default=str(cache_root() / "unpacked" / "nvidia-cublas-cu11-11.11.3.6" / "nvidia"
                                                / "cublas" / "lib"))
    parser.add_argument("--nvrtc")
    args = parser.parse_args()
    disagree = 0
    with tempfile.TemporaryDirectory() as scratch:
        nvrtc = Path(args.nvrtc) if args.nvrtc else Path(scratch) / "nvrtc"
        if not args.nvrtc:
            nvrtc.mkdir()
            (nvrtc / "libnvrtc.so").symlink_to(cache_root() / "unpacked/nvidia-cuda-nvrtc-cu11-11.8.89/nvidia/"
                                               "cuda_nvrtc/lib/libnvrtc.so.11.2")
        for given in args.cudnn:
            folder = Path(given)
            if folder.suffix == ".whl":
                unpacked = Path(scratch) / folder.stem
                with zipfile.ZipFile(folder) as wheel:
                    wheel.extractall(unpacked, [n for n in wheel.namelist() if n.startswith("nvidia/cudnn/lib/")])
                folder = unpacked / "nvidia/cudnn/lib"
            for label, path in (("cuBLAS 11.11", args.cublas),
                                ("cuBLAS 11.11 + libnvrtc.so", f"{args.cublas}:{nvrtc}")):
                said = probe(folder, path)
                agrees = said.startswith(("as predicted", "cuDNN"))
                disagree += not agrees
                print(f"{Path(given).name[:40]:<40} {label:<28} real: {real(folder / 'libcudnn.so.8', path)}\n"
                      f"{'':<40} {'':<28} doctor: {said[:150]}  [{'agrees' if agrees else 'DISAGREES'}]", flush=True)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
