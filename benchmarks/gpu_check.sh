#!/usr/bin/env bash
# The GPU check: on a machine with a CUDA GPU, PyTorch, torchvision, pandas, seaborn and scikit-learn (Snakemake
# not needed: it calls the package's functions), in ≤ 8 minutes on one H100-class GPU:
#   1. the GPU tests (tests/gpu: every network trains on CUDA; stacked seeds, CPU against GPU, kill and resume,
#      logits against the CPU's),
#   2. the GPU benchmark (bench_training.py --device cuda: whole epochs, the engine's measures on CUDA),
#   3. a tiny training-and-logits run through the workflow's stages on the GPU and the CPU (gpu_tiny_run.py).
# Usage, from the repository root: bash benchmarks/gpu_check.sh [FOLDER]   (default benchmarks/results/gpu)
# Writes FOLDER/machine.txt, tests.log, bench.log, training_gpu.csv, training_gpu_measures.csv, tiny_run.log;
# exits non-zero if any step failed.
set -uo pipefail
out=${1:-benchmarks/results/gpu}
mkdir -p "$out"
export PYTHONPATH="$PWD/workflow:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
failed=()
{
    date -u +%Y-%m-%dT%H:%MZ
    echo "commit ${TRUSTCAL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$py" -c 'import platform, torch; print("Python", platform.python_version(), "PyTorch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
    nproc
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

step() {  # step NAME LOG SECONDS COMMAND...: run it, its output on the console and in LOG, and remember a failure
    local name=$1 log=$2 limit=$3
    shift 3
    echo "== $name"
    timeout "$limit" "$@" 2>&1 | tee "$out/$log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || failed+=("$name (exit $rc)")
}

step "GPU tests" tests.log 200 "$py" -m pytest tests/gpu -p no:cacheprovider -q -rs -W default -m gpu
step "GPU benchmark" bench.log 200 "$py" benchmarks/bench_training.py --device cuda --out "$out/training_gpu.csv"
step "tiny training-and-logits run" tiny_run.log 60 "$py" benchmarks/gpu_tiny_run.py --devices cuda cpu

if [ ${#failed[@]} -gt 0 ]; then
    printf 'gpu_check: failed: %s\n' "${failed[@]}"
    exit 1
fi
echo "gpu_check: every step passed"
