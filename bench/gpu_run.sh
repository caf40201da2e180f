#!/usr/bin/env bash
# One call on the GPU machine (device tool): the gpu-marked tests, the whole suite, doctor, which/inspect
# and the benchmarks, over the cuDNN installed there. Results go to $OUT (at most 8 files).
#   bash bench/gpu_run.sh        (needs the pyelftools wheel in .whl/, see README "Development")
set -u
OUT=${OUT:-/tmp/cudnnload-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
LIB=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
              "torch cuDNN", torch.backends.cudnn.version())'
  python3 -m pip show nvidia-cudnn-cu13 cuda-bindings 2>/dev/null | grep -E "^(Name|Version)"
  echo "cuDNN lib: $LIB"
} > "$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"
python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest-gpu.txt" | tail -15
python3 -m pytest -q -rfs --tb=short -p no:cacheprovider tests > "$OUT/pytest-all.txt" 2>&1; tail -4 "$OUT/pytest-all.txt"
python3 -m cudnnload doctor 2>&1 | tee "$OUT/doctor.txt"
python3 -m cudnnload doctor --json > "$OUT/doctor.json" 2>&1
{ python3 -m cudnnload which; python3 -m cudnnload inspect "$LIB"; } > "$OUT/resolve.txt" 2>&1
python3 bench/bench_preload.py --folder "$LIB" 2>&1 | tee "$OUT/bench_preload.txt"
python3 bench/bench_inspect.py --folder "$LIB" 2>&1 | tee "$OUT/bench_inspect.txt"
