#!/usr/bin/env bash
# One call on the GPU machine for issues 4 and 5: gpu-marked tests, the ResNet-50 conv bench (one output
# buffer), cold start to the first verified result, and trace of the three modes. Results in $OUT.
#   bash bench/gpu_run_conv.sh        (needs the pyelftools wheel in .whl/)
set -u
OUT=${OUT:-/tmp/cudnnload-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
# cudnnload runs from the tree: give it the entry points an install would (pyproject.toml)
mkdir -p /tmp/site/cudnnload-0.1.0.dist-info
printf 'Metadata-Version: 2.1\nName: cudnnload\nVersion: 0.1.0\n' > /tmp/site/cudnnload-0.1.0.dist-info/METADATA
printf '[cudnnload.backends]\nnumpy = cudnnload_numpy:register\ncudnn-legacy = cudnnload_cudnn_legacy:register\ncudnn-graph = cudnnload_cudnn_graph:register\n' \
  > /tmp/site/cudnnload-0.1.0.dist-info/entry_points.txt
export PYTHONPATH=/tmp/site:$PWD:$PWD/plugins PYTHONUNBUFFERED=1 CUDNNLOAD_CACHE=/tmp/cudnnload-cache
unset PYTHONDONTWRITEBYTECODE  # compiled modules are part of a warm start
LIB=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))')
[ "${PARTS:-}" ] && { python3 bench/bench_first_call_parts.py --folder "$LIB" --runs 5 --json "$OUT/parts.json" \
                      --only ${PARTS_ONLY:-timeline engine driver numpy step} 2>&1 | tee "$OUT/parts.txt"; }
[ "${ONLY_PARTS:-}" ] && exit 0
[ "${SKIP_TESTS:-}" ] || { python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests > "$OUT/pytest-gpu.txt" 2>&1;
                          tail -3 "$OUT/pytest-gpu.txt"; }
python3 bench/bench_first_call.py --folder "$LIB" --runs 5 2>&1 | tee "$OUT/first_call.txt"
# Again with OpenBLAS's threads off for every path: numpy's import starts 15 of them here, which spin for
# ~0.1 s (1.8 s of CPU time, measured) while cudnnload.start's threads and the driver want the cores.
OPENBLAS_NUM_THREADS=1 python3 bench/bench_first_call.py --folder "$LIB" --runs 5 --no-overhead 2>&1 \
  | tee "$OUT/first_call_openblas1.txt"
python3 -m cudnnload trace --lazy --preload --warm --start --runs 3 --folder "$LIB" --plot "$OUT/trace.png" 2>&1 \
  | tee "$OUT/trace.txt"
python3 -m cudnnload trace --json --warm --start --runs 3 --folder "$LIB" > "$OUT/trace.json" 2>&1
[ "${SKIP_CONV:-}" ] || { timeout 240 python3 bench/bench_conv.py --outputs 1 --out "$OUT/conv.md" > "$OUT/conv.txt" 2>&1;
                         tail -25 "$OUT/conv.txt"; }
python3 -m cudnnload backends 2>&1 | tee -a "$OUT/trace.txt"
