#!/usr/bin/env bash
# One call on the GPU machine (the device tool): cudnnload from this source tree, with the in-tree
# backend plugins on the path and registered as an install would register them (pyproject.toml), over the
# cuDNN wheel installed there. Results go to $OUT (at most 8 files come back).
#
#   bash bench/gpu_run.sh [STEP...]     (needs the pyelftools wheel in .whl/, see README "Development")
#
# Steps, in this order whatever order they are given in (default: tests suite doctor):
#   tests       the gpu-marked tests                          -> pytest-gpu.txt
#   suite       the whole test suite                          -> pytest-all.txt
#   doctor      doctor (text and JSON), which and inspect    -> doctor.txt, doctor.json
#   loader      bench_preload and bench_inspect              -> bench_loader.txt
#   first-call  cold start to the first verified result     -> first_call.txt
#   trace       cudnnload trace of the four modes, and a plot -> trace.txt, trace.png
#   conv        the ResNet-50 convolution bench against PyTorch -> conv.txt
#   parts       a cold start taken apart                      -> parts.txt
#   frameworks  the real PyTorch and JAX broken twelve ways, every form of doctor and explain against what they
#               did (tests/test_frameworks_gpu.py, its first test)  -> frameworks.txt, frameworks.jsonl
#   more        the real PyTorch and JAX broken fifty-four more ways (bench/frameworks_more.py), asked the same ways
#                                                             -> more.txt, frameworks.jsonl
#   cudaerrors  CUDA errors provoked for real in PyTorch and CuPy, and what explain makes of each
#               (bench/gpu_cuda_errors.py)                    -> cuda_errors.txt, cuda_errors.jsonl
#   pins        the same breakages under `cudnnload run --for torch` and load(for_="torch") (its second test)
#                                                             -> pins.txt, frameworks.jsonl
#   readme      the README's first section: doctor, doctor -- a PyTorch program and run --for torch on the real
#               PyTorch, healthy and with the system cuDNN first (LD_PRELOAD, LD_LIBRARY_PATH) -> readme.txt
#   runcost     where a warm `python -m cudnnload run -- /bin/true` spends its time -> runcost.txt
#   timing      plain doctor (torch and JAX installed) warm, and doctor --pid of a PyTorch process
#                                                             -> timing.txt
#   diagnose    doctor TARGET / -- COMMAND timings, and their output on a PyTorch program and libtorch_cuda.so
#               and plain doctor and doctor -- a PyTorch program taken apart
#                                                             -> diagnose.md, diagnose.txt, doctor_parts.txt
#   limit       a PyTorch convolution under address-space limits (prlimit --as, as `ulimit -v` sets it): the
#               program alone, then plain doctor and doctor -- it under the same limit -> limit.txt
set -u
OUT=${OUT:-/tmp/cudnnload-out}
mkdir -p "$OUT"
STEPS=" ${*:-tests suite doctor} "
want() { [[ "$STEPS" == *" $1 "* ]]; }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
# The entry points an install of this tree would declare (pyproject.toml), so that the plugins load the
# way third-party ones do.
mkdir -p /tmp/site/cudnnload-0.1.0.dist-info
printf 'Metadata-Version: 2.1\nName: cudnnload\nVersion: 0.1.0\n' > /tmp/site/cudnnload-0.1.0.dist-info/METADATA
printf '[cudnnload.backends]\nnumpy = cudnnload_numpy:register\ncudnn-legacy = cudnnload_cudnn_legacy:register\ncudnn-graph = cudnnload_cudnn_graph:register\n' \
  > /tmp/site/cudnnload-0.1.0.dist-info/entry_points.txt
export PYTHONPATH=/tmp/site:$PWD:$PWD/plugins PYTHONUNBUFFERED=1 CUDNNLOAD_CACHE=/tmp/cudnnload-cache
unset PYTHONDONTWRITEBYTECODE  # compiled modules are part of a warm start
LIB=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
              "torch cuDNN", torch.backends.cudnn.version())'
  python3 -m pip show nvidia-cudnn-cu13 cuda-bindings 2>/dev/null | grep -E "^(Name|Version)"
  echo "cuDNN lib: $LIB"
  echo "steps:$STEPS"
} > "$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

if want tests; then  # the frameworks' breakages have steps of their own (they take minutes)
  python3 -m pytest -q -m gpu -rs -p no:cacheprovider --ignore tests/test_frameworks_gpu.py tests \
    > "$OUT/pytest-gpu.txt" 2>&1; tail -5 "$OUT/pytest-gpu.txt"
fi
if want frameworks; then
  # FRAMEWORKS_K="EXPR": only the breakages pytest's -k EXPR picks
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_frameworks_gpu.py \
    -k "every_way${FRAMEWORKS_K:+ and ($FRAMEWORKS_K)}" > "$OUT/frameworks.txt" 2>&1
  tail -5 "$OUT/frameworks.txt"
fi
if want more; then
  python3 bench/frameworks_more.py ${MORE:-} > "$OUT/more.txt" 2>&1  # MORE="NAME ...": only those
  tail -12 "$OUT/more.txt"
fi
if want cudaerrors; then
  python3 bench/gpu_cuda_errors.py --out "$OUT" > "$OUT/cuda_errors.txt" 2>&1; tail -3 "$OUT/cuda_errors.txt"
fi
if want pins; then
  python3 -m pytest -q -rs -p no:cacheprovider tests/test_frameworks_gpu.py -k pin > "$OUT/pins.txt" 2>&1
  tail -5 "$OUT/pins.txt"
fi
if want readme; then
  SYS=/lib/x86_64-linux-gnu
  printf 'import torch\nc = torch.nn.Conv2d(3, 8, 3).cuda()\nprint(c(torch.randn(1, 3, 16, 16, device="cuda")).shape)\n' \
    > /tmp/train.py
  { echo "== cudnnload doctor"; python3 -m cudnnload doctor; echo "exit $?"
    echo "== cudnnload doctor -- python train.py"; python3 -m cudnnload doctor -- python3 /tmp/train.py; echo "exit $?"
    echo "== LD_PRELOAD=$SYS/libcudnn_graph.so.9 cudnnload doctor"
    LD_PRELOAD=$SYS/libcudnn_graph.so.9 python3 -m cudnnload doctor; echo "exit $?"
    echo "== LD_PRELOAD=$SYS/libcudnn_graph.so.9 cudnnload doctor -- python train.py"
    LD_PRELOAD=$SYS/libcudnn_graph.so.9 python3 -m cudnnload doctor -- python3 /tmp/train.py; echo "exit $?"
    echo "== LD_LIBRARY_PATH=$SYS python train.py"; LD_LIBRARY_PATH=$SYS python3 /tmp/train.py 2>&1 | tail -1
    echo "== LD_LIBRARY_PATH=$SYS cudnnload run --for torch -- python train.py"
    LD_LIBRARY_PATH=$SYS python3 -m cudnnload run --for torch -- python3 /tmp/train.py; echo "exit $?"
    echo "== LD_PRELOAD=$SYS/libcudnn_graph.so.9 cudnnload run --for torch --replace-preload -- python train.py"
    LD_PRELOAD=$SYS/libcudnn_graph.so.9 python3 -m cudnnload run --for torch --replace-preload -- python3 /tmp/train.py
    echo "exit $?"
    echo "== cudnnload explain (torch's message)"
    python3 -m cudnnload explain "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 19, 0) but found runtime version (9, 14, 0). PyTorch already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the bundled cuDNN. one possibility is that there is a conflicting cuDNN in LD_LIBRARY_PATH."
  } > "$OUT/readme.txt" 2>&1; head -40 "$OUT/readme.txt"
fi
if want runcost; then  # where a warm `python -m cudnnload run -- /bin/true` spends its time here
  { python3 -m cudnnload run --cudnn "$LIB" -- /bin/true
    for i in 1 2 3; do /usr/bin/time -f "run: %e s wall, %U s user" python3 -m cudnnload run --cudnn "$LIB" -- /bin/true; done
    for i in 1 2 3; do /usr/bin/time -f "python -c pass: %e s wall" python3 -c pass; done
    python3 -X importtime -m cudnnload run --cudnn "$LIB" -- /bin/true 2>&1 | sort -t'|' -k2 -n | tail -25
    python3 -c 'import sys; print(len(sys.path), "sys.path entries")'; ls -la "$CUDNNLOAD_CACHE"
    # the run up to the execve of the program (cProfile would never print past it)
    python3 - "$LIB" <<'PROFILE'
import cProfile, os, pstats, runpy, sys
os.execve = lambda *args: sys.exit(0)
sys.argv = ["cudnnload", "run", "--cudnn", sys.argv[1], "--", "/bin/true"]
profile = cProfile.Profile()
try:
    profile.runcall(runpy.run_module, "cudnnload", run_name="__main__")
except SystemExit:
    pass
stats = pstats.Stats(profile)
stats.sort_stats("cumulative").print_stats(45)
stats.sort_stats("tottime").print_stats(25)
PROFILE
  } > "$OUT/runcost.txt" 2>&1; tail -12 "$OUT/runcost.txt"
fi
if want timing; then
  python3 bench/bench_doctor_time.py > "$OUT/timing.txt" 2>&1; cat "$OUT/timing.txt"
fi
if want suite; then
  python3 -m pytest -q -rfs --tb=short -p no:cacheprovider tests > "$OUT/pytest-all.txt" 2>&1; tail -5 "$OUT/pytest-all.txt"
fi
if want doctor; then
  { python3 -m cudnnload doctor; python3 -m cudnnload which; python3 -m cudnnload inspect "$LIB"; } > "$OUT/doctor.txt" 2>&1
  head -20 "$OUT/doctor.txt"
  python3 -m cudnnload doctor --json > "$OUT/doctor.json" 2>&1
fi
if want loader; then
  { python3 bench/bench_preload.py --folder "$LIB"; python3 bench/bench_inspect.py --folder "$LIB"; } 2>&1 \
    | tee "$OUT/bench_loader.txt"
fi
if want first-call; then
  # In the default environment (numpy's OpenBLAS threads as it starts them: cudnnload.start asks them to sleep
  # when idle, see cudnnload/dispatch/starting.py).
  python3 bench/bench_first_call.py --folder "$LIB" --runs 7 2>&1 | tee "$OUT/first_call.txt"
fi
if want trace; then
  { python3 -m cudnnload trace --lazy --preload --warm --start --runs 3 --folder "$LIB" --plot "$OUT/trace.png"
    python3 -m cudnnload backends; } 2>&1 | tee "$OUT/trace.txt"
fi
if want conv; then
  timeout 240 python3 bench/bench_conv.py --outputs 1 --out "$OUT/conv.md" > "$OUT/conv.txt" 2>&1; tail -25 "$OUT/conv.txt"
fi
if want parts; then
  python3 bench/bench_first_call_parts.py --folder "$LIB" --runs 5 --json "$OUT/parts.json" 2>&1 | tee "$OUT/parts.txt"
fi
if want diagnose; then
  TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  { python3 bench/bench_diagnose.py --program-only --folder "$LIB" --runs 9 --out "$OUT/diagnose.md"
    echo "== doctor -- a PyTorch program"
    python3 -m cudnnload doctor -- python3 -c 'import torch; c = torch.nn.Conv2d(3, 8, 3).cuda()
print(c(torch.randn(1, 3, 32, 32, device="cuda")).shape)'; echo "exit $?"
    echo "== doctor libtorch_cuda.so"; python3 -m cudnnload doctor "$TORCH_LIB/libtorch_cuda.so"; echo "exit $?"
    echo "== doctor libcudnn.so.9 (the soname)"; python3 -m cudnnload doctor libcudnn.so.9; echo "exit $?"
    echo "== explain"; python3 -m cudnnload explain "Could not load library libcudnn_cnn_infer.so.8"; echo "exit $?"
  } > "$OUT/diagnose.txt" 2>&1; cat "$OUT/diagnose.md"
  { python3 bench/bench_doctor_parts.py --runs 3
    python3 bench/bench_doctor_parts.py --runs 3 --program 'import torch
x = torch.randn(8, 32, 56, 56, device="cuda")
conv = torch.nn.Conv2d(32, 32, 3, padding=1).cuda()
torch.relu(conv(x)).sum().item()'; } 2>&1 | tee "$OUT/doctor_parts.txt"
fi
if want limit; then
  printf 'import torch\nc = torch.nn.Conv2d(3, 8, 3).cuda()\nprint(c(torch.randn(1, 3, 16, 16, device="cuda")).shape)\n' \
    > /tmp/train.py
  for GB in 2 4 16 64; do
    AS=$((GB * 1000000000))
    echo "=== limit $GB GB: the program alone"
    prlimit --as=$AS -- python3 /tmp/train.py 2>&1 | tail -2; echo "exit ${PIPESTATUS[0]}"
    echo "=== limit $GB GB: cudnnload doctor"
    prlimit --as=$AS -- python3 -m cudnnload doctor 2>&1 | grep -E "^  (error|warning) |^healthy|^PROBLEMS" | cut -c1-400
    echo "=== limit $GB GB: cudnnload doctor -- python3 train.py"
    prlimit --as=$AS -- python3 -m cudnnload doctor -- python3 /tmp/train.py 2>&1 \
      | grep -E "^python3 |^  (error|warning) |^      fix|^healthy|^PROBLEMS" | cut -c1-500
  done 2>&1 | tee "$OUT/limit.txt"
fi
