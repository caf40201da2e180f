"""The scenario corpus: the real loader's truth beside `doctor TARGET` and `doctor -- COMMAND`, and their cost.

    python bench/bench_diagnose.py [--runs N] [--out FILE] [--program-only] [--layouts NAME,...] [--folder LIB]

Part 1, per layout of fixtures/scenarios (built from the real wheels; `make wheels` first):
- truth: the scenario app run under the real dynamic linker (its calls' results, exit status or signal,
  LD_DEBUG=libs,files, /proc/self/maps), in words;
- TARGET: does `doctor TARGET`'s prediction, made before anything runs, agree with every call of the
  truth (every layout but the already-loaded one, which only a running process shows), and does it name the cause,
  what the user will see and the fix of each failure;
- COMMAND: does `doctor -- app` agree with the truth (exit or signal, the libcudnn files mapped, the line
  before an abort, the file a SIGBUS died in, a finding with a fix for each failure).
Part 2, timings, medians of N fresh processes, paired and alternated:
- `cudnnload doctor FOLDER` on a 9.28 folder, memo warm (budget 1.5 s on the 2-core CPU machine);
- `cudnnload doctor -- PROGRAM` against PROGRAM alone (budget: 10 % over the program's own time), for
  the scenario app, a ctypes program (alone, and with 0.3 s of its own after), and, where PyTorch can
  run a convolution here, a PyTorch program; then doctor's fixed cost (what it adds whatever the
  program) and the shortest program the budget holds for.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudnnload.diagnose.doctor import doctor  # noqa: E402
from cudnnload.diagnose.observe import diagnose_program  # noqa: E402
from cudnnload.verdicts import ERROR  # noqa: E402
from fixtures.scenarios.layouts import CORPUS, Layout, ensure  # noqa: E402
from fixtures.scenarios.truth import Truth, command, compare, record  # noqa: E402
from tests.wheels import cache_root  # noqa: E402

BUDGET = {"doctor_target_s": 1.5, "command_overhead": 0.10}

TORCH_PROGRAM = """
import torch
x = torch.randn(8, 32, 56, 56, device="cuda")
conv = torch.nn.Conv2d(32, 32, 3, padding=1).cuda()
torch.relu(conv(x)).sum().item()
"""

CTYPES_PROGRAM = """
import ctypes, sys
cudnn = ctypes.CDLL(sys.argv[1])
for check in ("Graph", "Ops", "Cnn", "Adv"):
    getattr(cudnn, f"cudnn{check}VersionCheck")()
handle = ctypes.c_void_p()
print(cudnn.cudnnGetVersion(), cudnn.cudnnCreate(ctypes.byref(handle)))
"""


def _met(within: bool) -> str:
    return "met" if within else "MISSED"


def _runs(argv: list[str]) -> bool:
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def truth_words(truth: Truth) -> str:
    if truth.returncode == 3 and truth.results.get("dlopen", "").startswith("error"):
        return "the app's dlopen fails"
    if truth.signal:
        return f"{truth.signal} in {truth.died_in}"
    if truth.hung:
        return f"hangs in {truth.died_in}"
    failing = [f"{call.split(':')[-1]} {result}" for call, result in truth.results.items()
               if result.startswith("status=") and result[7:] in ("3009", "1002", "14")]
    if not failing:
        return "exit 0, healthy"
    return "exit 0; " + ", ".join(failing[:2]) + (" ..." if len(failing) > 2 else "")


def health_words(layout: Layout, errors: list[object]) -> list[str]:
    """What is wrong with the error findings given the layout's own verdict (fixes.works checks it against the
    truth): none on a layout that works, at least one on a layout that does not."""
    if layout.healthy and errors:
        return [f"an error ({errors[0].code}) on a layout that works"]  # type: ignore[attr-defined]
    return [] if layout.healthy or errors else ["no error finding on a layout that fails"]


def target_verdict(layout: Layout, truth: Truth) -> tuple[str, bool]:
    if not layout.static:
        return "n/a (only a running process shows it)", True
    env = {"PATH": os.environ.get("PATH", ""), "CUDNNLOAD_CACHE": str(cache_root()), **layout.environ()}
    report = doctor(env, target=layout.path(layout.target), site_paths=[])
    install = next((i for i in report.inventory.installs if i.folder == report.chosen), None)
    wrong = compare(install.expected, truth) if install else ["no install"]
    errors = [f for f in report.findings if f.severity == ERROR]
    named = all(f.fix for f in errors) and (not errors or any(f.consequences for f in errors))
    wrong += health_words(layout, errors)
    cause = next((f.code for f in errors if f.consequences), errors[0].code if errors else "healthy")
    ok = not wrong and named
    return (f"agrees; {cause}" if ok else f"DISAGREES: {(wrong or ['no consequence named'])[0]}"), ok


def command_verdict(layout: Layout, truth: Truth) -> tuple[str, bool]:
    argv, env = command(layout)
    report = diagnose_program(argv, environ={**env, "CUDNNLOAD_CACHE": str(cache_root())},
                              timeout=layout.hangs_after or 120)
    run = report.observation
    wrong: list[str] = []
    if (run.returncode, run.signal) != (truth.returncode, truth.signal):
        wrong.append(f"ended {run.signal or run.returncode}, truth {truth.signal or truth.returncode}")
    if truth.mapped:
        mine = {os.path.realpath(o.path) for o in run.libraries
                if o.initialized and os.path.basename(o.path).startswith("libcudnn")}
        if mine != {os.path.realpath(p) for p in truth.mapped}:
            wrong.append("a different set of libcudnn files mapped")
    if truth.hung and not (run.timed_out and truth.log and truth.log.stuck_opening
                           and truth.log.stuck_opening in (run.died_in or "")):
        wrong.append("not the file the app hung opening")
    if truth.signal == "SIGABRT" and (not run.messages or run.messages[-1] != truth.stderr[-1]):
        wrong.append("not the line cuDNN printed before abort()")
    errors = [f for f in report.findings if f.severity == ERROR]
    wrong += health_words(layout, errors)
    causes = [f.code for f in errors if f.consequences] + [f.code for f in errors if f.code != "program-died"]
    said = causes[0] if causes else "died" if errors else "healthy"
    return ("agrees; " + said if not wrong else "DISAGREES: " + wrong[0]), not wrong


def corpus(names: list[str]) -> tuple[list[str], dict[str, int]]:
    lines = ["| layout | truth (the real loader) | doctor TARGET | doctor -- COMMAND |", "|---|---|---|---|"]
    totals = {"layouts": 0, "target": 0, "target_of": 0, "command": 0}
    for layout in CORPUS:
        if names and layout.name not in names:
            continue
        ensure(layout)
        truth = record(layout)
        target, target_ok = target_verdict(layout, truth)
        run, run_ok = command_verdict(layout, truth)
        totals["layouts"] += 1
        totals["target_of"] += layout.static
        totals["target"] += target_ok and layout.static
        totals["command"] += run_ok
        lines.append(f"| {layout.name} | {truth_words(truth)} | {target} | {run} |")
        print(lines[-1], flush=True)
    return lines, totals


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=False, timeout=600)
    return time.perf_counter() - start


def paired(alone: list[str], watched: list[str], env: dict[str, str],
           runs: int) -> tuple[float, float, float, list[float]]:
    """Median program time alone, under doctor, the median of the paired ratios, and each pair's difference."""
    timed(alone, env), timed(watched, env)  # warm the page cache and the memo
    pairs = [(timed(alone, env), timed(watched, env)) for _ in range(runs)]
    return (statistics.median(a for a, _ in pairs), statistics.median(w for _, w in pairs),
            statistics.median(w / a for a, w in pairs), [w - a for a, w in pairs])


def timings(runs: int, folder: str | None) -> list[str]:
    """``folder``: a cuDNN 9 lib folder to time on (default: the corpus's healthy 9.28 wheel)."""
    env = {**os.environ, "CUDNNLOAD_CACHE": str(cache_root())}
    lines = ["", "| what | median | budget |", "|---|---|---|"]
    healthy = next(layout for layout in CORPUS if layout.name == "healthy-9.28-cu12")
    folder = folder or str(ensure(healthy) / "site/nvidia/cudnn/lib")
    cli = [sys.executable, "-m", "cudnnload"]
    timed([*cli, "doctor", folder], env)
    target = statistics.median(timed([*cli, "doctor", folder], env) for _ in range(runs))
    lines.append(f"| `cudnnload doctor FOLDER` ({folder}, memo warm) | {target:.2f} s | "
                 f"{BUDGET['doctor_target_s']} s {_met(target <= BUDGET['doctor_target_s'])} |")
    with tempfile.TemporaryDirectory() as empty:
        cold = timed([*cli, "doctor"], {**env, "CUDNNLOAD_CACHE": empty})
    plain = statistics.median(timed([*cli, "doctor"], env) for _ in range(runs))
    lines.append(f"| plain `cudnnload doctor` (this environment, frameworks included): memo cold {cold:.2f} s, "
                 f"memo warm | {plain:.2f} s | {BUDGET['doctor_target_s']} s "
                 f"{_met(plain <= BUDGET['doctor_target_s'])} |")
    shim = os.path.join(folder, "libcudnn.so.9")
    programs = [("a Python program (ctypes: version checks, cudnnCreate)",
                 [sys.executable, "-c", CTYPES_PROGRAM, shim]),
                ("the same, then 0.3 s of its own (a sleep)",
                 [sys.executable, "-c", CTYPES_PROGRAM + "import time; time.sleep(0.3)\n", shim])]
    if folder.startswith(str(cache_root())):
        programs.insert(0, ("the scenario app (C)", command(healthy)[0]))
    if shutil.which("nvidia-smi") and _runs([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"]):
        programs.append(("a PyTorch convolution + ReLU", [sys.executable, "-c", TORCH_PROGRAM]))
    added: list[float] = []
    for what, program in programs:
        alone, watched, ratio, differences = paired(program, [*cli, "doctor", "--", *program], env, runs)
        if "PyTorch" not in what:  # its own time varies by ±0.1 s from run to run
            added += differences
        over = ratio - 1
        lines.append(f"| `doctor -- PROGRAM`, {what}: program {alone:.3f} s, under doctor {watched:.3f} s "
                     f"(+{(watched - alone) * 1000:.0f} ms) | +{over * 100:.1f} % | "
                     f"{BUDGET['command_overhead'] * 100:.0f} % {_met(over <= BUDGET['command_overhead'])} |")
    fixed = statistics.median(added)
    budget = BUDGET["command_overhead"]
    lines.append(f"\n`doctor -- PROGRAM` adds {fixed * 1000:.0f} ms whatever the program (the median difference of "
                 f"the pairs of every program above but PyTorch's): the {budget * 100:.0f} % budget holds for "
                 f"programs of {fixed / budget:.2f} s or more.")
    timed([sys.executable, "-c", "pass"], env)
    floor = statistics.median(timed([sys.executable, "-c", "pass"], env) for _ in range(runs))
    lines.append(f"Of that, {floor * 1000:.0f} ms is this Python's own start and exit (`python -c pass`), which "
                 f"any tool written in Python adds.")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", help="also write the tables to this file")
    parser.add_argument("--program-only", action="store_true", help="only the timings")
    parser.add_argument("--layouts", default="", help="comma-separated layout names (default: all)")
    parser.add_argument("--folder", help="time on this cuDNN 9 lib folder instead of the corpus's 9.28 wheel")
    args = parser.parse_args()
    lines: list[str] = []
    if not args.program_only:
        lines, totals = corpus([n for n in args.layouts.split(",") if n])
        summary = (f"\ntotals: {totals['layouts']} layouts; doctor TARGET agrees on {totals['target']} of "
                   f"{totals['target_of']} it can judge before anything runs; doctor -- COMMAND agrees on "
                   f"{totals['command']} of {totals['layouts']}")
        print(summary)
        lines.append(summary)
    table = timings(args.runs, args.folder)
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text("\n".join(lines + table) + "\n")


if __name__ == "__main__":
    main()
