"""Side by side with NVIDIA's own check (issue 33 item 4): ``python -m cudnn.collect_env`` (cudnn-frontend >= 1.27)
and ``cudnnload doctor`` on the same layouts, each in a venv of its own, recording per layout what each says.

Layouts (the scenario corpus's, fixtures/scenarios/layouts.py, made here from the machine's own wheel so that the
bench runs where there is no network, the GPU machine included):

- ``healthy``: a complete ``nvidia/cudnn/lib`` (with its cuBLAS where the wheel's sibling folder has one);
- ``mixed-ops-in-folder``: the same, with ``libcudnn_ops.so.9`` of another release (``--other-lib``);
- ``ld-library-path-shadowing``: complete, with another release's folder on ``LD_LIBRARY_PATH``;
- ``shim-only-folder``: ``libcudnn.so.9`` alone in the wheel's folder (pytorch/pytorch#188892's incomplete wheel).

collect_env runs as its users run it (``VENV/bin/python -m cudnn.collect_env --json``, the frontend wheel installed
in the venv with ``pip --no-deps`` from a file); doctor as ``cudnnload doctor --python VENV --json``, both with the
layout's environment. A layout that needs another release is built only where ``--other-lib`` names one (on this
machine: the 9.0 wheel of the test cache). collect_env needs no GPU (every probe of it is guarded; its PyTorch
convolution runs only where torch sees a GPU), so it runs here; on the GPU machine the same command runs with that
machine's wheel:

    .venv/bin/python bench/bench_collect_env.py [--layouts DIR] [--cudnn-lib DIR] [--other-lib DIR]
        [--frontend-wheel FILE] [--out bench/results/2026-11-28-collect-env.md]
"""

from __future__ import annotations

import argparse
import datetime
import glob
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEST_CACHE = Path(os.environ.get("CUDNNLOAD_TEST_CACHE", Path.home() / ".cache/cudnnload-test"))


@dataclass(frozen=True)
class Layout:
    name: str
    story: str
    lib: Callable[[Path, Path, Path | None], None]  # (wheel's lib folder to fill, the source, the other release)
    env: Mapping[str, str] = field(default_factory=dict)  # "{layout}" stands for the layout's folder
    needs_other: bool = False
    extra: Callable[[Path, Path | None], None] | None = None  # more files in the layout folder


def place(source: Path, target: Path) -> None:
    """A hard link where the file system allows one, else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _whole(lib: Path, source: Path, _other: Path | None) -> None:
    for path in sorted(source.iterdir()):
        if path.is_file():
            place(path, lib / path.name)


def _mixed_ops(lib: Path, source: Path, other: Path | None) -> None:
    _whole(lib, source, other)
    assert other is not None
    (lib / "libcudnn_ops.so.9").unlink()
    place(other / "libcudnn_ops.so.9", lib / "libcudnn_ops.so.9")


def _shim_only(lib: Path, source: Path, _other: Path | None) -> None:
    place(source / "libcudnn.so.9", lib / "libcudnn.so.9")


def _old_folder(folder: Path, other: Path | None) -> None:
    assert other is not None
    _whole(folder / "old", other, None)


LAYOUTS = (
    Layout("healthy", "a complete nvidia/cudnn/lib: the control", _whole),
    Layout("mixed-ops-in-folder", "two releases in one folder: another release's libcudnn_ops.so.9 among the wheel's "
           "files (scenario mixed-ops-in-folder)", _mixed_ops, needs_other=True),
    Layout("ld-library-path-shadowing", "a complete wheel, another release's folder on LD_LIBRARY_PATH (scenario "
           "ld-library-path-shadows-engines; pytorch/pytorch#185512)", _whole, {"LD_LIBRARY_PATH": "{layout}/old"},
           needs_other=True, extra=_old_folder),
    Layout("shim-only-folder", "libcudnn.so.9 alone in the wheel's folder (pytorch/pytorch#188892's incomplete "
           "wheel)", _shim_only),
)


def machine_wheel() -> Path | None:
    """This interpreter's own ``nvidia/cudnn/lib`` (its nvidia.cudnn package), where one is installed."""
    spec = importlib.util.find_spec("nvidia.cudnn") if importlib.util.find_spec("nvidia") else None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / "lib" / "libcudnn.so.9").exists():
            return Path(folder) / "lib"
    return None


def default_source() -> Path | None:
    found = machine_wheel()
    if found is not None:
        return found
    cached = TEST_CACHE / "unpacked/nvidia-cudnn-cu12-9.28.0.42/nvidia/cudnn/lib"
    return cached if cached.exists() else None


def default_other() -> Path | None:
    cached = TEST_CACHE / "unpacked/nvidia-cudnn-cu12-9.0.0.312/nvidia/cudnn/lib"
    return cached if cached.exists() else None


def run(argv: Sequence[str], env: Mapping[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=dict(env), cwd="/",
                          check=False)


def cublas_of(source: Path) -> Path | None:
    """The cuBLAS the cuDNN wheel's engines open: the wheel site's ``nvidia/cublas/lib``, else the test cache's
    cuBLAS of the same CUDA."""
    beside = source.parent.parent / "cublas" / "lib"
    if beside.is_dir():
        return beside
    cached = sorted(TEST_CACHE.glob("unpacked/nvidia-cublas-cu12-*/nvidia/cublas/lib"))
    return cached[-1] if cached and "cu12" in str(source) else None


def build(layout: Layout, folder: Path, source: Path, other: Path | None, frontend: Path) -> Path:
    """The layout's venv: the frontend wheel, and the cuDNN wheel's files in its site-packages."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(glob.glob(str(venv / "lib" / "python3*" / "site-packages"))[0])
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(site), str(frontend)], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the frontend wheel did not install: {done.stderr[-400:]}")
    layout.lib(site / "nvidia" / "cudnn" / "lib", source, other)
    wheel_site = source.parent.parent.parent
    for info in wheel_site.glob("nvidia_cudnn_cu*.dist-info"):  # its RECORD: what doctor checks the files against
        shutil.copytree(info, site / info.name)
    cublas = cublas_of(source)
    if cublas is not None:
        _whole(site / "nvidia" / "cublas" / "lib", cublas, None)
    if layout.extra is not None:
        layout.extra(folder, other)
    return venv


def collect_env(venv: Path, env: Mapping[str, str]) -> dict[str, Any]:
    done = run([str(venv / "bin" / "python"), "-m", "cudnn.collect_env", "--json"], env)
    said: dict[str, Any] = {"exit": done.returncode}
    if done.returncode:
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()]
        said["died"] = tail[-1][:200] if tail else f"exit {done.returncode}, nothing printed"
        return said
    report = json.loads(done.stdout)
    frontend = report.get("cuDNN Frontend", {})
    said["backend"] = frontend.get("cudnn backend (loaded)")
    said["search picks"] = frontend.get("backend search order picks") or frontend.get(
        "backend search order would pick")
    libraries = report.get("GPU Libraries: loaded vs on disk", {})
    cudnn = {k: v for k, v in libraries.items() if k.startswith("libcudnn")}
    said["libcudnn"] = {k: [line.strip() for line in str(v).strip().splitlines()] for k, v in cudnn.items()}
    said["warnings"] = [k for k in cudnn if "⚠" in k] + [line.strip() for v in cudnn.values()
                                                          for line in str(v).splitlines() if "⚠" in line]
    return said


def doctor(venv: Path, env: Mapping[str, str]) -> dict[str, Any]:
    done = run([sys.executable, "-m", "cudnnload", "doctor", "--python", str(venv / "bin" / "python"), "--json"],
               {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    try:
        result = json.loads(done.stdout)["result"]
    except (ValueError, KeyError):
        return {"exit": done.returncode, "died": done.stderr.strip()[-200:]}
    findings = result.get("findings", [])
    codes = {severity: sorted({f["code"] for f in findings if f["severity"] == severity})
             for severity in ("error", "warning")}
    return {"exit": done.returncode, "release": result.get("release"), "chosen": result.get("chosen"),
            "healthy": result.get("healthy"), "errors": codes["error"], "warnings": codes["warning"],
            "first error": next((f["message"] for f in findings if f["severity"] == "error"), None)}


def one(layout: Layout, folder: Path, source: Path, other: Path | None, frontend: Path) -> dict[str, Any]:
    venv = build(layout, folder, source, other, frontend)
    extra = {key: value.replace("{layout}", str(folder)) for key, value in layout.env.items()}
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LD_", "CUDNN", "PYTHON"))}
    env.update(extra)
    env["CUDNNLOAD_NO_CACHE"] = "1"
    return {"layout": layout.name, "story": layout.story, "env": extra, "collect_env": collect_env(venv, env),
            "doctor": doctor(venv, env)}


def _collect_said(said: Mapping[str, Any]) -> str:
    if "died" in said:
        return f"**did not print a report**: {said['died']} (exit {said['exit']})"
    loaded = [line for lines in said["libcudnn"].values() for line in lines if line.startswith("LOADED")]
    warnings = "; ".join(said["warnings"]) or "no warning"
    return (f"backend {said['backend']}; search picks {said['search picks']}; {len(loaded)} folder(s) LOADED "
            f"({', '.join(line.split()[1] for line in loaded)}); {warnings}")


def _doctor_said(said: Mapping[str, Any]) -> str:
    if "died" in said:
        return f"failed: {said['died']}"
    verdict = "healthy" if said["healthy"] else f"PROBLEMS: {', '.join(said['errors'])}"
    first = f" — {said['first error'][:220]}" if said.get("first error") else ""
    loads = f"cuDNN {said['release']} from {said['chosen']}" if said["chosen"] else "no cuDNN it would load"
    return f"{loads}; {verdict}{first}"


def markdown(results: Sequence[Mapping[str, Any]], skipped: Sequence[str], source: Path, other: Path | None,
             frontend: Path) -> str:
    gpu = "GPU" if shutil.which("nvidia-smi") else "no GPU"
    lines = [f"# collect_env and doctor, side by side ({datetime.date.today().isoformat()})", "",
             f"`bench/bench_collect_env.py` on {platform.node()} ({gpu}, Python {platform.python_version()}): "
             f"NVIDIA's `python -m cudnn.collect_env --json` ({frontend.name}) and "
             f"`cudnnload doctor --python VENV --json`, each layout a venv of its own built from {source}"
             + (f" (another release: {other})" if other else "") + ".", "",
             "| layout | collect_env says | doctor says |", "|---|---|---|"]
    for r in results:
        env = " (" + ", ".join(f"{k}={v}" for k, v in r["env"].items()) + ")" if r["env"] else ""
        lines.append(f"| {r['layout']}{env} | {_collect_said(r['collect_env'])} | {_doctor_said(r['doctor'])} |")
    for name in skipped:
        lines.append(f"| {name} | not built: no other release given (--other-lib) | |")
    lines += ["", "Each layout in full:", ""]
    for r in results:
        lines += [f"## {r['layout']}: {r['story']}", "", "```", json.dumps(r, indent=1), "```", ""]
    return "\n".join(lines)


def frontend_wheel(given: str | None, scratch: Path) -> Path:
    """The nvidia-cudnn-frontend wheel to install: the one given, else one downloaded once into the scratch folder
    (the only network use; give --frontend-wheel where there is none)."""
    if given:
        return Path(given)
    found = sorted(scratch.glob("nvidia_cudnn_frontend-*.whl"))
    if found:
        return found[-1]
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", tag[2:], "-d", str(scratch), "nvidia-cudnn-frontend>=1.27"], check=True)
    return sorted(scratch.glob("nvidia_cudnn_frontend-*.whl"))[-1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default=os.environ.get("CUDNNLOAD_BENCH_SCRATCH", "/tmp") + "/collect-env",
                        help="the folder the layouts (and their venvs) are built in")
    parser.add_argument("--cudnn-lib", help="a complete cuDNN 9 wheel's nvidia/cudnn/lib (default: this Python's, "
                        "else the test cache's 9.28 cu12)")
    parser.add_argument("--other-lib", help="another release's cuDNN 9 folder (default: the test cache's 9.0)")
    parser.add_argument("--frontend-wheel", help="the nvidia-cudnn-frontend wheel file (default: downloaded once)")
    parser.add_argument("--out", default=str(ROOT / "bench/results/2026-11-28-collect-env.md"))
    args = parser.parse_args(argv)
    source = Path(args.cudnn_lib) if args.cudnn_lib else default_source()
    if source is None or not (source / "libcudnn.so.9").exists():
        raise SystemExit("no complete cuDNN 9 wheel folder: give --cudnn-lib")
    other = Path(args.other_lib) if args.other_lib else default_other()
    layouts = Path(args.layouts)
    layouts.mkdir(parents=True, exist_ok=True)
    frontend = frontend_wheel(args.frontend_wheel, layouts)
    results, skipped = [], []
    for layout in LAYOUTS:
        if layout.needs_other and other is None:
            skipped.append(layout.name)
            continue
        results.append(one(layout, layouts / layout.name, source, other, frontend))
        print(f"{layout.name}: collect_env: {_collect_said(results[-1]['collect_env'])}\n    doctor: "
              f"{_doctor_said(results[-1]['doctor'])}", file=sys.stderr, flush=True)
        shutil.rmtree(layouts / layout.name)
    Path(args.out).write_text(markdown(results, skipped, source, other, frontend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
