"""cuDNN 9 releases, each whole and with each of its libraries taken away in turn, judged against the real shim on
this machine: does doctor's model predict what the shim's calls do (its probe verdict), and does it say an error
wherever they fail?

    python bench/cudnn9_releases.py WHEEL... [--engine-pairs] [--out FILE]

Each ``nvidia_cudnn_cuXX-9.*`` or ``nvidia_cudnn_jit_cuXX-9.*`` wheel (or the test cache's folder one is unpacked
in) is laid out in a pip site beside the test cache's cuBLAS and NVRTC of its CUDA major (cu11, cu12, cu13: the
wheels' RUNPATH finds them), with a stand-in for the CUDA toolkit's stub ``libcuda.so.1`` on ``LD_LIBRARY_PATH``
(bench/cudnn8_differential.py: every driver function the libraries name, each returning CUDA_ERROR_STUB_LIBRARY),
so that the engines that need the driver load as on a GPU machine. Releases between those the tests hold (9.0,
9.24, 9.28, the 9.27 JIT wheel) are where a rule measured on one release and carried to another shows: which
engines graph asks for and which it can do without, which names the shim tries, what each call returns.
``--engine-pairs`` also takes away every two of the engine and heuristic libraries together (graph's order of
them: heuristic only after the precompiled engines, and engines_tensor_ir missing fails only beside heuristic).

Prints one line per layout: the release, what was taken away, doctor's probe verdict, its error findings; and the
totals. Exit 1 when a verdict disagrees or a failing layout gets no error.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
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

# The wheels a cuDNN 9 wheel's RUNPATH finds its CUDA libraries in, per CUDA major: the test cache's cuBLAS and
# NVRTC of that major (`companions`), laid out where their own wheel puts them (nvidia/cublas/lib, nvidia/cu13/lib).
COMPANIONS = ("nvidia-cublas", "nvidia-cuda-nvrtc")


# A wheel's library file: nvidia/cudnn/lib/X, nvidia/cudnn_jit/lib/X, nvidia/cu13/lib/X
_LIB_MEMBER = re.compile(r"nvidia/[^/]+/lib/[^/]+")
_NAME = re.compile(r"nvidia[-_]cudnn[-_](?P<kind>(?:jit[-_])?cu(?P<cuda>\d+))-(?P<version>9[\d.]*\d)")


def named(wheel: Path) -> tuple[str, int]:
    """("9.27.0.42 jit-cu13", 13): the release and the CUDA major of a cuDNN wheel (``nvidia_cudnn_jit_cu13-9.27...
    .whl``) or of the test cache's folder it is unpacked in (``nvidia-cudnn-jit-cu13-9.27.0.42``)."""
    found = _NAME.match(wheel.name)
    if not found:
        raise SystemExit(f"{wheel}: not an nvidia-cudnn(-jit)-cuXX wheel of cuDNN 9, nor one unpacked")
    return f"{found['version']} {found['kind'].replace('_', '-')}", int(found["cuda"])


def cuda_of(wheel: Path) -> int:
    return named(wheel)[1]


# Folders ``--with`` wheels are unpacked in (``nvidia-cublas-cu12-12.1.3.1``): taken before the test cache's
CHOSEN: list[Path] = []


def companions(cuda: int) -> list[Path]:
    """The unpacked cuBLAS and NVRTC wheels of CUDA ``cuda``, one of each: a ``--with`` wheel's, else the test
    cache's newest."""
    found = []
    for prefix in COMPANIONS:
        stem = "libcublas" if prefix.endswith("cublas") else "libnvrtc"
        fits = [sorted(folder for folder in folders if folder.name.startswith(f"{prefix}-")
                       and (not folder.name.startswith(f"{prefix}-cu") or folder.name.startswith(f"{prefix}-cu{cuda}-"))
                       and any(folder.rglob(f"{stem}.so.{cuda}*")))
                for folders in (CHOSEN, list((cache_root() / "unpacked").glob(f"{prefix}-*")))]
        chosen = fits[0] or fits[1]
        if chosen:
            found.append(chosen[-1])
    return found


def unpack_companion(wheel: Path, scratch: Path) -> Path:
    """A cuBLAS or NVRTC wheel unpacked under ``scratch`` in a folder named as the test cache names them."""
    name, version = wheel.name.split("-")[:2]
    folder = scratch / "with" / f"{name.replace('_', '-')}-{version}"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder, [n for n in archive.namelist() if _LIB_MEMBER.fullmatch(n)])
    return folder


def site_of(wheel: Path, folder: Path) -> Path:
    """``wheel``'s cuDNN libraries (a wheel, or the folder one is unpacked in) and the test cache's cuBLAS and NVRTC
    of its CUDA as pip lays them out; the cuDNN lib folder (nvidia/cudnn/lib, nvidia/cudnn_jit/lib for the JIT
    wheel)."""
    if wheel.is_dir():
        members = [str(p.relative_to(wheel)) for p in wheel.glob("nvidia/*/lib/*")]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "unpacked").symlink_to(wheel.resolve())
    else:
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if _LIB_MEMBER.fullmatch(n)]
            archive.extractall(folder / "unpacked", members)
    shims = [m for m in members if m.endswith("/libcudnn.so.9")]
    if not shims:
        raise SystemExit(f"{wheel}: holds no nvidia/*/lib/libcudnn.so.9")
    for unpacked in companions(cuda_of(wheel)):
        for lib in unpacked.glob("nvidia/*/lib"):
            place(lib, folder / "site" / lib.relative_to(unpacked))
    relative = Path(shims[0]).parent
    lib = folder / "site" / relative
    place(folder / "unpacked" / relative, lib)
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
    parser.add_argument("wheels", nargs="+", type=Path, help="cuDNN 9 wheels, or the folders they are unpacked in")
    parser.add_argument("--out", type=Path, help="each layout's record (JSON lines)")
    parser.add_argument("--with", dest="companions", nargs="*", type=Path, default=[], metavar="WHEEL",
                        help="cuBLAS or NVRTC wheels to lay out beside cuDNN instead of the test cache's of their CUDA")
    parser.add_argument("--engine-pairs", action="store_true",
                        help="also every two of the engine and heuristic libraries taken away together")
    args = parser.parse_args()
    cudas = sorted({cuda_of(wheel) for wheel in args.wheels})
    lacking = [cuda for cuda in cudas if len(companions(cuda)) < len(COMPANIONS)]
    if shutil.which("gcc") is None or lacking:
        print("needs gcc (the stand-in libcuda.so.1) and the test wheels (make wheels): cuBLAS and NVRTC of CUDA "
              f"{', '.join(map(str, lacking)) or '-'}")
        return 2
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        CHOSEN.extend(unpack_companion(wheel, Path(scratch)) for wheel in args.companions)
        unpacked = cache_root() / "unpacked"
        libraries = [lib for cuda in cudas for wheel in companions(cuda) for lib in wheel.glob("nvidia/*/lib")]
        driver = stand_in(Path(scratch) / "driver", [*libraries, unpacked / "nvidia-cudnn-cu12-9.28.0.42" / "nvidia"
                                                     / "cudnn" / "lib"]).parent
        for wheel in args.wheels:
            release = named(wheel)[0]
            folder = Path(scratch) / release.replace(" ", "-")
            lib = site_of(wheel, folder)
            print(f"# {release} beside {', '.join(c.name for c in companions(cuda_of(wheel)))}", flush=True)
            names = sorted(p.name for p in lib.glob("libcudnn*.so.9"))
            sets = [(), *((n,) for n in names if n != "libcudnn.so.9")]
            if args.engine_pairs:  # every two of the libraries graph opens for its engines, taken away together
                engines = [n for n in names if n.startswith(("libcudnn_engines_", "libcudnn_heuristic"))]
                sets += list(itertools.combinations(engines, 2))
            for removed in sets:
                aside = folder / "aside"
                aside.mkdir(exist_ok=True)
                for name in removed:
                    (lib / name).rename(aside / name)
                record = judge(release, "+".join(removed) or "(whole)", lib / "libcudnn.so.9", driver)
                for name in removed:
                    (aside / name).rename(lib / name)
                records.append(record)
                print(f"{release:<18} {str(record['removed']):<40} {'agrees' if record['agrees'] else 'DISAGREES'}"
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
