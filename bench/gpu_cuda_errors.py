"""The CUDA runtime's errors as real programs print them, and what `cudnnload explain` makes of each (GPU machine).

    python bench/gpu_cuda_errors.py [--out DIR]

Each case provokes one CUDA error for real on this machine's GPU, in a child process of the real PyTorch or CuPy
(an index out of range on the GPU, a GPU number the process does not have, a null or misaligned pointer in a
kernel, a launch larger than the GPU gives, a kernel image built for another GPU, PTX newer than the driver, a
damaged image, memory beyond the GPU's, no GPU visible, CUDA in a forked child), keeps what the program printed,
and asks `explain` about it, with the cause that provoked it: "ok" where that cause is first, "top3", "MISS", or
"report" where no cause of the corpus's families is the provoked one (a damaged image, PTX that does not compile:
shown, not scored). Prints one line a case and the totals;
writes cuda_errors.jsonl under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudnnload.diagnose.explain import explain  # noqa: E402

# a kernel whose 64 live values take more registers than 1024 threads of a block may share
HEAVY = r'''
extern "C" __global__ void heavy(float* out, int n) {
    float a[64];
    #pragma unroll
    for (int i = 0; i < 64; i++) a[i] = out[i * n + threadIdx.x];
    float s = 0;
    #pragma unroll
    for (int i = 0; i < 64; i++) {
        #pragma unroll
        for (int j = 0; j < 64; j++) s += a[i] * a[j] * (float)(i + j);
    }
    out[threadIdx.x] = s;
}
'''

# (name, the cause that provoked it or None where no family of the corpus is it, environment, program)
CASES: list[tuple[str, str | None, dict[str, str], str]] = [
    ("torch index out of range on the GPU", "bad-param-usage", {}, """
        import torch
        x = torch.zeros(3, device="cuda"); i = torch.tensor([5], device="cuda")
        y = x[i]; torch.cuda.synchronize(); print(y)
    """),
    ("torch a GPU number the process does not have", "bad-param-usage", {}, """
        import torch
        torch.zeros(1, device="cuda:9")
    """),
    ("cupy a null pointer written in a kernel", "framework-bug", {}, """
        import cupy, numpy
        k = cupy.RawKernel('extern "C" __global__ void k(int* p) { p[threadIdx.x] = 1; }', "k")
        k((1,), (32,), (numpy.uint64(0),)); cupy.cuda.Device().synchronize()
    """),
    ("cupy a misaligned pointer read in a kernel", "framework-bug", {}, """
        import cupy, numpy
        a = cupy.zeros(64, dtype=cupy.int32)
        k = cupy.RawKernel('extern "C" __global__ void k(char* p) { *(int*)(p + 1) = 7; }', "k")
        k((1,), (1,), (numpy.uint64(a.data.ptr),)); cupy.cuda.Device().synchronize()
    """),
    ("cupy a block of 2048 threads", "bad-param-usage", {}, """
        import cupy
        a = cupy.zeros(4096, dtype=cupy.float32)
        k = cupy.RawKernel('extern "C" __global__ void k(float* p) { p[threadIdx.x] = 1; }', "k")
        k((1,), (2048,), (a,)); cupy.cuda.Device().synchronize()
    """),
    ("cupy more registers than a block of 1024 gets", "unsupported-configuration", {}, f"""
        import cupy, numpy
        k = cupy.RawKernel({HEAVY!r}, "heavy")
        print("registers", k.num_regs, "most threads", k.max_threads_per_block, flush=True)
        if k.max_threads_per_block >= 1024:
            raise SystemExit("not provoked: the kernel fits 1024 threads")
        a = cupy.zeros(64 * 1024, dtype=cupy.float32)
        k((1,), (1024,), (a, numpy.int32(1024))); cupy.cuda.Device().synchronize()
    """),
    ("cupy a kernel image built for an older GPU (sm_75 cubin)", "gpu-too-new", {}, """
        import cupy
        from cuda.bindings import nvrtc
        src = b'extern "C" __global__ void k(float* p) { p[0] = 1; }'
        err, prog = nvrtc.nvrtcCreateProgram(src, b"k.cu", 0, [], [])
        err, = nvrtc.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=sm_75"])
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        cupy.zeros(1)
        cupy.cuda.function.Module().load(cubin)
    """),
    ("cupy PTX of a newer toolkit than the driver", "driver-too-old", {}, """
        import cupy
        cupy.zeros(1)
        ptx = b".version 99.9\\n.target sm_90\\n.address_size 64\\n.visible .entry k() { ret; }\\n"
        cupy.cuda.function.Module().load(ptx)
    """),
    ("cupy a damaged kernel image", None, {}, """
        import cupy
        cupy.zeros(1)
        cupy.cuda.function.Module().load(b"\\x7fELF" + b"\\x02\\x01\\x01" + b"\\x00" * 57 + b"garbage" * 20)
    """),
    ("cupy PTX that does not compile", None, {}, """
        import cupy
        cupy.zeros(1)
        cupy.cuda.function.Module().load(b".version 8.0\\n.target sm_90\\n.address_size 64\\nthis is not ptx\\n")
    """),
    ("torch memory beyond the GPU's", "out-of-memory", {}, """
        import torch
        torch.empty(10**13, dtype=torch.uint8, device="cuda")
    """),
    ("cupy memory beyond the GPU's", "out-of-memory", {}, """
        import cupy
        cupy.empty(10**13, dtype=cupy.uint8)
    """),
    ("cupy no GPU visible (CUDA_VISIBLE_DEVICES=-1)", "no-gpu-or-driver", {"CUDA_VISIBLE_DEVICES": "-1"}, """
        import cupy
        cupy.zeros(1)
    """),
    ("torch no GPU visible (CUDA_VISIBLE_DEVICES=-1)", "no-gpu-or-driver", {"CUDA_VISIBLE_DEVICES": "-1"}, """
        import torch
        torch.zeros(1, device="cuda")
    """),
    ("cupy CUDA in a child forked after the parent used it", "bad-param-usage", {}, """
        import os, sys, cupy
        cupy.zeros(1); cupy.cuda.Device().synchronize()
        pid = os.fork()
        if pid == 0:
            try:
                cupy.zeros(1) + 1; cupy.cuda.Device().synchronize()
            except Exception:
                import traceback; traceback.print_exc()
            finally:
                sys.stderr.flush(); os._exit(1)
        os.waitpid(pid, 0)
        raise SystemExit(1)
    """),
    ("torch CUDA in a child forked after the parent used it", "bad-param-usage", {}, """
        import os, sys, torch
        torch.zeros(1, device="cuda")
        pid = os.fork()
        if pid == 0:
            try:
                torch.zeros(1, device="cuda")
            except Exception:
                import traceback; traceback.print_exc()
            finally:
                sys.stderr.flush(); os._exit(1)
        os.waitpid(pid, 0)
        raise SystemExit(1)
    """),
]


def run_case(program: str, environ: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(program)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **environ}, check=False)
    return done.returncode, (done.stdout + done.stderr).strip()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/cudnnload-out")))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    counts = {"ok": 0, "top3": 0, "MISS": 0, "report": 0, "not provoked": 0}
    with (args.out / "cuda_errors.jsonl").open("w", encoding="utf-8") as rows:
        for name, expected, environ, program in CASES:
            code, printed = run_case(program, environ)
            result = explain(printed, environ={})
            ranked = [cause.family for cause in result.causes]
            primary = result.reading.primary
            if code == 0 or "not provoked" in printed:
                verdict = "not provoked"
            elif expected is None:
                verdict = "report"
            else:
                verdict = "ok" if ranked[:1] == [expected] else "top3" if expected in ranked[:3] else "MISS"
            counts[verdict] += 1
            last = next((line for line in reversed(printed.splitlines()) if "rror" in line or "ailed" in line),
                        printed.splitlines()[-1] if printed else "")
            print(f"{verdict:<12} {name}\n    printed: {last[:200]}\n    explain: {ranked[:3]} "
                  f"(expected {expected}; read as {primary.kind if primary else None})", flush=True)
            rows.write(json.dumps({"case": name, "expected": expected, "exit": code, "printed": printed[-4000:],
                                   "ranked": ranked, "recognized": result.recognized,
                                   "kind": primary.kind if primary else None, "verdict": verdict}) + "\n")
    scored = counts["ok"] + counts["top3"] + counts["MISS"]
    print(f"\n{counts['ok']} of {scored} provoked errors with their cause first, {counts['ok'] + counts['top3']} in "
          f"the top 3; {counts['report']} shown without a family to score; {counts['not provoked']} not provoked")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
