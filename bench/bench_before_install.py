"""Issue 34, proven by doing it: each requirement set predicted before anything is installed, then installed for
real and judged; a root file system judged from outside, then entered and judged from inside.

Requirement sets (``SETS``: PyTorch, TensorFlow, JAX, ONNX Runtime, CTranslate2, their combinations, CUDA 12 and
13 mixes, all on PyPI for Python 3.11 x86-64; torch 2.14.1 and its CUDA 13 wheels come from the local index pip's
configuration here names), one at a time, to keep the disk free:

1. ``cudnnload doctor --requirements SET --json``: the prediction (pip's dry run, the wheels' facts by range
   requests);
2. ``python3.11 -m venv`` and ``pip install --no-cache-dir -r SET`` into it (pip's own "Installing collected
   packages" line is its real order);
3. ``cudnnload doctor --json --python VENV``: plain doctor on what was installed;
4. a real consumer per framework, in the venv: the framework imported and its own loader run (torch's
   ``backends.cudnn.version()``, JAX's plugin start-up, ONNX Runtime's CUDA provider's ``dlopen`` of
   ``libcudnn.so.9`` by name, CTranslate2's bundled shim), then ``/proc/self/maps`` read and ``cudnnGetVersion``
   called through the shim that process mapped; where the prediction's fix sets a variable, the consumer runs again
   with it (the fix applied);
5. the prediction compared with 3 and 4: the installation order, whose files stay in each overwritten folder,
   each framework's cuDNN release and folder and whether it works, and the finding codes both can give.

Root: a Debian bookworm root from ``debootstrap --variant=minbase --include=python3``, the real cuDNN 9.28 cu12
wheel (with its cuBLAS and NVRTC) installed into its ``dist-packages`` with ``pip --target``, a cuDNN 9.0 folder
under /opt reached through an absolute link, cudnnload itself; judged with ``doctor --root`` from outside and by
``chroot ROOT python3 -m cudnnload doctor`` from inside, in three cases (as is; ``LD_LIBRARY_PATH`` from an env
file; an ``ld.so.conf`` drop-in the cache lacks, outside with ``--driver`` beside inside after ``ldconfig``).

    .venv/bin/python bench/bench_before_install.py [--sets NAME ...] [--no-root] [--no-sets]
        [--scratch DIR] [--out bench/results/2026-11-28-before-install.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "cudnnload"]
PYTHON = "python3.11"
# The codes both a prediction and doctor on the installed set can give (the rest are one side's own: the driver
# of the machine, the probe, `which`'s information, a framework version the survey lacks).
COMPARABLE = frozenset({"record-conflict", "consumer-pin-unmet", "consumer-runtime-older-than-build",
                        "consumer-needs-other-major", "mixed-release", "missing-sublibrary"})
# (requirements, frameworks a consumer runs for)
SETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "torch-cu13": (("torch==2.14.1",), ("torch",)),
    "tensorflow-and-cuda": (("tensorflow[and-cuda]==2.21.0",), ("tensorflow",)),
    "jax-cuda12": (("jax[cuda12]",), ("jax",)),
    "jax-cuda13": (("jax[cuda13]",), ("jax",)),
    "onnxruntime-gpu": (("onnxruntime-gpu[cuda,cudnn]",), ("onnxruntime",)),
    "ctranslate2-4.4-cudnn8": (("ctranslate2==4.4.0", "nvidia-cudnn-cu12==8.9.7.29"), ("ctranslate2",)),
    "ctranslate2-4.5-cudnn9": (("ctranslate2==4.5.0", "nvidia-cudnn-cu12==9.28.0.42"), ("ctranslate2",)),
    "cudnn-cu12-and-cu13": (("nvidia-cudnn-cu12==9.28.0.42", "nvidia-cudnn-cu13==9.24.0.43"), ()),
    "torch-and-tensorflow": (("torch==2.14.1", "tensorflow[and-cuda]==2.21.0"), ("torch", "tensorflow")),
    "torch-and-jax-cuda12": (("torch==2.14.1", "jax[cuda12]"), ("torch", "jax")),
    "torch-and-jax-cuda13": (("torch==2.14.1", "jax[cuda13]"), ("torch", "jax")),
    "torch-and-onnxruntime": (("torch==2.14.1", "onnxruntime-gpu[cuda,cudnn]"), ("torch", "onnxruntime")),
    "jax-cuda12-and-tensorflow": (("jax[cuda12]", "tensorflow[and-cuda]==2.21.0"), ("jax", "tensorflow")),
}

# The consumer: the framework's own loader run, then what the process mapped and what its shim says.
CONSUMER = r"""
import ctypes, json, os, sys
framework, out = sys.argv[1], {}
try:
    if framework == "torch":
        import torch
        out["api"] = torch.backends.cudnn.version()
    elif framework == "jax":
        import jax
        try:
            jax.devices()
        except Exception as error:
            out["note"] = f"{type(error).__name__}: {str(error)[:120]}"
    elif framework == "onnxruntime":
        import onnxruntime
        try:  # what its CUDA provider does when it first needs cuDNN: dlopen by name, no path, no RPATH of its own
            ctypes.CDLL("libcudnn.so.9")
            out["dlopen"] = "ok"
        except OSError as error:
            out["dlopen"] = str(error)
    elif framework == "tensorflow":
        import tensorflow as tf
        tf.config.list_physical_devices("GPU")
    elif framework == "ctranslate2":
        import ctranslate2
except Exception as error:
    out["error"] = f"{type(error).__name__}: {str(error)[:200]}"
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "libcudnn" in line and line.rstrip().split()[-1][:1] == "/"})
out["mapped"] = mapped
names = [p for p in mapped if os.path.basename(p).split(".so")[0] in ("libcudnn",) or
         os.path.basename(p).startswith("libcudnn-")]
out["shim"] = names[0] if names else None
print(json.dumps(out), flush=True)
if names:
    print(json.dumps({"version": int(ctypes.CDLL(names[0]).cudnnGetVersion())}), flush=True)
"""


def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 3600,
        cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd,
                          env=dict(os.environ if env is None else env))


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        return dict(json.loads(done.stdout)["result"])
    except (ValueError, KeyError):
        return {"error": (done.stderr or done.stdout).strip()[-400:]}


def du(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def free_gb() -> float:
    return shutil.disk_usage("/").free / 1e9


# --- one requirement set ----------------------------------------------------------------------------------------


def consumer(python: str, framework: str, env: Mapping[str, str]) -> dict[str, Any]:
    done = run([python, "-c", CONSUMER, framework], env=env, timeout=600)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    found: dict[str, Any] = {}
    for line in lines:
        found.update(line)
    if done.returncode:
        tail = [x for x in done.stderr.strip().splitlines() if x.strip()][-1:]
        found["died"] = f"exit {done.returncode}" + (f": {tail[0][:200]}" if tail else "")
    return found


def release_text(number: int | None) -> str | None:
    if not number:
        return None
    return f"{number // 10000}.{number % 10000 // 100}.{number % 100}" if number >= 10000 else \
        f"{number // 1000}.{number % 1000 // 100}.{number % 100}"


def one_set(name: str, scratch: Path) -> dict[str, Any]:
    lines, frameworks = SETS[name]
    folder = scratch / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    requirements = folder / "requirements.txt"
    requirements.write_text("\n".join(lines) + "\n")
    venv = folder / "venv"
    run([PYTHON, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    result: dict[str, Any] = {"set": name, "requirements": list(lines)}
    start = time.monotonic()
    predicted = run([*CLI, "doctor", "--requirements", str(requirements), "--python", python, "--json"])
    result["predict_s"] = time.monotonic() - start
    result["prediction"] = report_of(predicted)
    result["predict_exit"] = predicted.returncode
    start = time.monotonic()
    installed = run([python, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "-r",
                     str(requirements)], timeout=5400)
    result["install_s"] = time.monotonic() - start
    order_line = next((x for x in installed.stdout.splitlines() if x.startswith("Installing collected packages:")), "")
    result["pip_order"] = [x.strip() for x in order_line.split(":", 1)[1].split(",")] if order_line else []
    result["install_exit"] = installed.returncode
    if installed.returncode:
        result["install_error"] = installed.stderr.strip()[-600:]
    result["site_mb"] = du(venv) / 1e6
    judged = run([*CLI, "doctor", "--python", python, "--json"])
    result["doctor"] = report_of(judged)
    result["doctor_exit"] = judged.returncode
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LD_", "CUDNN"))}
    result["consumers"] = {fw: consumer(python, fw, env) for fw in frameworks}
    result["fixed"] = {}
    for fw in frameworks:
        value = _fix_variable(result["prediction"], fw)
        if value is not None:
            result["fixed"][fw] = {"LD_LIBRARY_PATH": value, **consumer(python, fw, {**env, "LD_LIBRARY_PATH": value})}
    result["compare"] = compare(result)
    shutil.rmtree(folder)
    return result


def _fix_variable(prediction: Mapping[str, Any], framework: str) -> str | None:
    """The LD_LIBRARY_PATH the prediction's fix for ``framework`` sets, if one does."""
    for finding in prediction.get("findings", []):
        if finding["code"] not in ("not-found", "missing-sublibrary"):
            continue
        for action in finding["fix"]["actions"]:
            if action["do"] == "env-set" and action["variable"] == "LD_LIBRARY_PATH" and \
                    framework in json.dumps(finding).lower():
                return str(action["value"])
    return None


def outcome(seen: Mapping[str, Any]) -> str | None:
    """What a consumer run shows: "ok RELEASE", "fails" (it died, its own call raised, its dlopen failed), or
    None when it never reached cuDNN (TensorFlow without a GPU): nothing to compare."""
    if seen.get("died") or seen.get("error") or seen.get("dlopen", "ok") != "ok":
        return "fails"
    return f"ok {release_text(seen['version'])}" if seen.get("version") else None


def compare(result: Mapping[str, Any]) -> dict[str, Any]:
    """Where the prediction and what was installed agree, field by field."""
    prediction, doctor = result["prediction"], result["doctor"]
    checks: dict[str, Any] = {}
    if result["pip_order"]:  # what the fresh venv already had (setuptools, pip) pip leaves out of its line
        real = [name.lower().replace("_", "-") for name in result["pip_order"]]
        checks["order"] = [label.split(" ")[0] for label in prediction.get("installs", [])
                           if label.split(" ")[0] in real] == real
    # whose files stay: each overwrite's last writer against the distribution doctor finds on disk there
    on_disk = {i["folder"]: i.get("distribution") for i in doctor.get("inventory", {}).get("installs", [])}
    for pair in prediction.get("overwrites", []):
        folder = os.path.join(prediction["site"], os.path.dirname(pair["paths"][0]))
        if folder in on_disk:
            checks[f"files in {os.path.relpath(folder, prediction['site'])}"] = on_disk[folder] == pair["last"]
    used = {u["distribution"]: u for u in doctor.get("frameworks", [])}
    for expected in prediction.get("frameworks", []):
        label = f"{expected['distribution']} {expected['version']}"
        use = used.get(expected["distribution"])
        if use is not None:
            checks[f"{label}: release (doctor)"] = expected["release"] == use["release"]
            checks[f"{label}: works (doctor)"] = expected["works"] == use["works"]
        seen = result["consumers"].get(expected["framework"])
        real = outcome(seen) if seen is not None else None
        if real is not None:
            said = f"ok {expected['release']}" if expected["works"] else "fails"
            checks[f"{label}: {said} (consumer: {real})"] = said == real
            if expected["shim"] and seen and seen.get("shim"):
                checks[f"{label}: folder (consumer)"] = os.path.dirname(expected["shim"]) == \
                    os.path.dirname(seen["shim"])
    for fw, seen in result["fixed"].items():
        real = outcome(seen)
        checks[f"{fw}: the predicted fix applied (consumer: {real})"] = bool(real and real.startswith("ok"))
    # the codes of the frameworks doctor judges too (it knows no CTranslate2), and those of no framework
    judged = {e["distribution"] for e in prediction.get("frameworks", []) if e["distribution"] in used}
    of_frameworks = {c for e in prediction.get("frameworks", []) for c in e["codes"]}
    kept = {c for e in prediction.get("frameworks", []) if e["distribution"] in judged for c in e["codes"]}
    predicted_codes = {f["code"] for f in prediction.get("findings", [])
                       if f["code"] not in of_frameworks or f["code"] in kept} & COMPARABLE
    doctor_codes = {f["code"] for f in doctor.get("findings", [])} & COMPARABLE
    checks["finding codes"] = predicted_codes == doctor_codes
    return {"checks": checks, "agree": all(checks.values()), "predicted_codes": sorted(predicted_codes),
            "doctor_codes": sorted(doctor_codes)}


# --- the root -------------------------------------------------------------------------------------------------


def build_root(scratch: Path) -> Path:
    """Debian bookworm, minbase, with python3: debootstrap once (cached in the scratch folder)."""
    base = scratch / "rootfs"
    if not (base / "etc" / "ld.so.cache").exists():
        shutil.rmtree(base, ignore_errors=True)
        done = run(["debootstrap", "--variant=minbase", "--include=python3", "bookworm", str(base),
                    "http://deb.debian.org/debian"], timeout=1800)
        if done.returncode:
            raise SystemExit(f"debootstrap failed: {done.stderr[-500:]}")
    return base


def root_case(base: Path, scratch: Path, wheels: Path) -> Path:
    """The base root with the real cuDNN 9.28 cu12 wheel, its cuBLAS and NVRTC and cudnnload in dist-packages, and
    cuDNN 9.0's folder at /opt/cudnn-9.0/lib, reached as /usr/local/cudnn/lib through an absolute link."""
    root = scratch / "root-case"
    shutil.rmtree(root, ignore_errors=True)
    run(["cp", "-al", str(base), str(root)])
    site = root / "usr/local/lib/python3.11/dist-packages"
    wanted = ["nvidia_cudnn_cu12-9.28.0.42-*.whl", "nvidia_cublas_cu12-*.whl", "nvidia_cuda_nvrtc_cu12-*.whl"]
    files = [str(next(wheels.glob(pattern))) for pattern in wanted]
    for argv in ([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), *files],
                 [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(ROOT)],
                 [sys.executable, "-m", "pip", "install", "-q", "--target", str(site), "pyelftools", "click", "numpy",
                  "cuda-python", "packaging"]):
        done = run(argv, timeout=1800)
        if done.returncode:
            raise SystemExit(f"{' '.join(argv[:6])} failed: {done.stderr[-500:]}")
    old = next(p for p in (wheels.parent / "unpacked").glob("nvidia-cudnn-cu12-9.0.0.312/nvidia/cudnn/lib"))
    (root / "opt/cudnn-9.0").mkdir(parents=True)
    run(["cp", "-al", str(old), str(root / "opt/cudnn-9.0/lib")])
    (root / "usr/local/cudnn").symlink_to("/opt/cudnn-9.0")
    return root


def inside(root: Path, env: Mapping[str, str]) -> dict[str, Any]:
    variables = [f"{k}={v}" for k, v in {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                         "HOME": "/root", **env}.items()]
    done = run(["chroot", str(root), "/usr/bin/env", "-i", *variables, "python3", "-m", "cudnnload", "doctor",
                "--json"], timeout=600)
    return report_of(done)


def outside(root: Path, *extra: str) -> dict[str, Any]:
    return report_of(run([*CLI, "doctor", "--root", str(root), *extra, "--json"], timeout=600))


def root_facts(report: Mapping[str, Any]) -> dict[str, Any]:
    """What both sides say of a root: the install chosen, every install with its plan, the finding codes."""
    installs = {i["folder"]: {"release": i.get("release"), "found_via": i.get("found_via"),
                              "plan": {s["library"]: [s.get("path"), s.get("rule")] for s in i.get("plan", [])}}
                for i in report.get("inventory", {}).get("installs", [])}
    own = {"ldcache-stale", "only-by-path", "probe-crashed", "prediction-disagrees", "no-driver", "driver-unchecked"}
    return {"chosen": report.get("chosen"), "release": report.get("release"), "installs": installs,
            "codes": sorted({f["code"] for f in report.get("findings", [])} - own)}


def root_cases(scratch: Path, wheels: Path) -> list[dict[str, Any]]:
    base = build_root(scratch)
    root = root_case(base, scratch, wheels)
    env_file = scratch / "image.env"
    env_file.write_text("LD_LIBRARY_PATH=/usr/local/cudnn/lib\n")
    (root / "etc/ld.so.conf.d").mkdir(exist_ok=True)
    cases = []
    cases.append(("as built", outside(root), inside(root, {})))
    cases.append(("LD_LIBRARY_PATH from the image's env file (an absolute link)",
                  outside(root, "--env-file", str(env_file)),
                  inside(root, {"LD_LIBRARY_PATH": "/usr/local/cudnn/lib"})))
    (root / "etc/ld.so.conf.d/cudnn.conf").write_text("/usr/local/cudnn/lib\n")
    stale_outside = outside(root)
    cases.append(("ld.so.conf drop-in not in the cache", stale_outside, inside(root, {})))
    started = outside(root, "--driver", "580.65.06")
    cache = root / "etc/ld.so.cache"
    saved = cache.read_bytes()
    run(["chroot", str(root), "/sbin/ldconfig"])  # what the NVIDIA container toolkit runs when the container starts
    cases.append(("the drop-in once ldconfig runs at start (outside: --driver)", started, inside(root, {})))
    cache.unlink()  # the image as built again (ldconfig replaced the file: a new inode, the base's is untouched)
    cache.write_bytes(saved)
    out = []
    for label, out_report, in_report in cases:
        a, b = root_facts(out_report), root_facts(in_report)
        out.append({"case": label, "outside": a, "inside": b, "agree": a == b,
                    "stale": [f["message"] for f in out_report.get("findings", []) if f["code"] == "ldcache-stale"]})
    shutil.rmtree(root)
    return out


# --- the report ------------------------------------------------------------------------------------------------


def markdown(results: Sequence[Mapping[str, Any]], roots: Sequence[Mapping[str, Any]], started: str) -> str:
    lines = [f"# Before install: prediction against the real install ({started})", "",
             f"`bench/bench_before_install.py` on {os.uname().nodename} (2 cores, no GPU, Python 3.11 x86-64, pip "
             f"{results[0]['prediction'].get('pip', '?') if results else '?'}). Each set: `cudnnload doctor "
             "--requirements` first, then `pip install -r` into a fresh venv, plain `cudnnload doctor --python VENV`, "
             "and a real consumer per framework (its own loader, then `/proc/self/maps` and `cudnnGetVersion` through "
             "the shim it mapped). The prediction's cache of wheel facts starts empty at the run's start: a set "
             "fetches what no set before it read (torch's CUDA 13 wheels lie on this disk), beside what its wheels "
             "weigh; \"order\" compares pip's own \"Installing collected packages\" line with the predicted order of "
             "the same distributions (the line leaves out what "
             "the fresh venv already holds: setuptools).", ""]
    if results:
        agree = sum(1 for r in results if r["compare"]["agree"])
        lines += [f"**{agree} of {len(results)} sets: prediction and reality agree on every check.**", "",
                  "| set | predicted in | wheels read: fetched of their size | installed in (site) | order | "
                  "frameworks: predicted → doctor / consumer | codes predicted / doctor | agree |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in results:
            p = r["prediction"]
            fetched = sum(x["fetched"] for x in p.get("read", [])) / 1e6
            size = sum(x["size"] for x in p.get("read", [])) / 1e6
            fws = "; ".join(_framework_cell(r, e) for e in p.get("frameworks", [])) or "-"
            c = r["compare"]
            lines.append(f"| {r['set']} | {r['predict_s']:.0f} s (exit {r['predict_exit']}) | "
                         f"{len(p.get('read', []))}: "
                         f"{fetched:.0f} of {size:.0f} MB | {r['install_s']:.0f} s "
                         f"({r['site_mb'] / 1e3:.1f} GB) | "
                         f"{'same' if c['checks'].get('order') else c['checks'].get('order', 'n/a')} | {fws} | "
                         f"{', '.join(c['predicted_codes']) or '-'} / {', '.join(c['doctor_codes']) or '-'} | "
                         f"{'yes' if c['agree'] else 'NO'} |")
        lines.append("")
        for r in results:
            lines += [f"## {r['set']}: `{' '.join(r['requirements'])}`", ""]
            p = r["prediction"]
            if "error" in p:
                lines += [f"prediction failed: {p['error']}", ""]
                continue
            lines.append(f"- order ({p['order']}): {', '.join(p['installs'])}")
            pip_line = ", ".join(r["pip_order"]) or f"(install failed: {r.get('install_error', '')})"
            lines.append(f"- pip's own line: {pip_line}")
            for pair in p.get("overwrites", []):
                lines.append(f"- overwrites: {pair['first']} → {pair['last']} ({len(pair['paths'])} files)")
            for f in p.get("findings", []):
                lines.append(f"- predicted {f['severity']} `{f['code']}`: {f['message'][:300]}"
                             + (f" — fix: {f['fix']['text'][:200]}" if f['fix'].get('text') else ""))
            for f in r["doctor"].get("findings", []):
                if f["code"] in COMPARABLE or f["severity"] == "error":
                    lines.append(f"- doctor after install {f['severity']} `{f['code']}`: {f['message'][:300]}")
            for fw, seen in r["consumers"].items():
                lines.append(f"- consumer {fw}: {json.dumps(seen)[:400]}")
            for fw, seen in r["fixed"].items():
                lines.append(f"- consumer {fw} with the predicted fix applied: {json.dumps(seen)[:400]}")
            lines.append(f"- checks: {json.dumps(r['compare']['checks'])}")
            lines.append("")
    if roots:
        agree = sum(1 for r in roots if r["agree"])
        lines += ["## --root: judged from outside, then from inside (chroot)", "",
                  f"**{agree} of {len(roots)} cases agree** (chosen install, every install's release, how it was found "
                  "and each sub-library's path and rule, and the finding codes; left out: `ldcache-stale`, which only "
                  "`--root` gives, and what only a run inside can give: `only-by-path` from `which`, the probe's, and "
                  "the driver's).", "", "| case | chosen (outside / inside) | installs | codes outside / inside | "
                  "agree |", "|---|---|---|---|---|"]
        for r in roots:
            a, b = r["outside"], r["inside"]
            lines.append(f"| {r['case']} | {a['chosen']} {a['release']} / {b['chosen']} {b['release']} | "
                         f"{len(a['installs'])} / {len(b['installs'])} | {', '.join(a['codes']) or '-'} / "
                         f"{', '.join(b['codes']) or '-'} | {'yes' if r['agree'] else 'NO'} |")
        for r in roots:
            if r["stale"]:
                lines += ["", f"{r['case']}: {r['stale'][0]}"]
        lines.append("")
    return "\n".join(lines)


def _framework_cell(result: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    used = next((u for u in result["doctor"].get("frameworks", []) if u["distribution"] == expected["distribution"]),
                None)
    seen = result["consumers"].get(expected["framework"], {})
    real = outcome(seen) or "never reached cuDNN"
    doctor = f"{used['release']} {'ok' if used['works'] else 'fail'}" if used else "not judged"
    return (f"{expected['distribution']} {expected['release'] or 'none'} {'ok' if expected['works'] else 'fail'} → "
            f"{doctor} / {str(real)[:60]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    parser.add_argument("--no-root", action="store_true")
    parser.add_argument("--no-sets", action="store_true")
    parser.add_argument("--scratch", default=os.environ.get("CUDNNLOAD_BENCH_SCRATCH", "/work/scratch-before"))
    parser.add_argument("--wheels", default=str(Path(os.environ.get("CUDNNLOAD_TEST_CACHE",
                                                                    Path.home() / ".cache/cudnnload-test")) / "wheels"))
    parser.add_argument("--out", default=str(ROOT / "bench/results/2026-11-28-before-install.md"))
    parser.add_argument("--raw", help="also write every result as JSON here")
    args = parser.parse_args(argv)
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now().isoformat(timespec="minutes")
    results = []
    for name in [] if args.no_sets else args.sets:
        print(f"[{name}] {free_gb():.1f} GB free", file=sys.stderr, flush=True)
        results.append(one_set(name, scratch))
        print(f"[{name}] agree={results[-1]['compare']['agree']} {results[-1]['compare']['checks']}", file=sys.stderr,
              flush=True)
        if args.raw:
            Path(args.raw).write_text(json.dumps(results, indent=1))
    roots = [] if args.no_root else root_cases(scratch, Path(args.wheels))
    Path(args.out).write_text(markdown(results, roots, started))
    if args.raw:
        Path(args.raw).write_text(json.dumps({"sets": results, "roots": roots}, indent=1))
    print(Path(args.out).read_text())
    return 0 if all(r["compare"]["agree"] for r in results) and all(r["agree"] for r in roots) else 1


if __name__ == "__main__":
    sys.exit(main())
