#!/usr/bin/env bash
# Issue 54's converged trainings on one lent GPU, side by side (Transformer-Tiny is launch-bound: six share one GPU
# and 16 cores): item 1, seeds 2 and 3 of transformer and lisa at PRESET=gpu; item 4, syntax-infused and sgnet, seed 1.
# Prepare as for m30k_gpu_preset.sh (the recipe's data-bin in .gpu/m30k/data-bin/bpe14000), then
#
#   run(command="bash scripts/gpu/m30k_issue54.sh 2>&1 | tee $OUT/gpu-run.log", carry=[".gpu"], timeout_s=600)
#
# It brings back the finished trainings' averaged checkpoints that fit in one call (5 of about 12 MB); a second call
# on the warm machine brings the rest (LAST=1: an unfinished one's checkpoint_last.pt, to resume elsewhere):
#
#   run(command="RUNS='sgnet.s1' LAST=1 bash scripts/gpu/m30k_collect.sh 150")
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-$PWD/.gpu/out} T0=${T0:-$(date +%s)}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())" || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p /tmp/m30k && cp -r .gpu/m30k/data-bin /tmp/m30k/
start() {  # start SYSTEMS SEEDS NAME: one run_all.sh training SYSTEMS x SEEDS side by side, in its own session
    local n=$(( $(wc -w <<< "$1") * $(wc -w <<< "$2") ))
    setsid nohup env PYTHON=python3 WORK=/tmp/m30k PRESET=gpu MAX_TOKENS=8192 SYSTEMS="$1" SEEDS="$2" \
        STAGES=train JOBS="$n" THREADS=2 PROGRESS_SECONDS=60 \
        bash examples/multi30k_en_de/run_all.sh > "/tmp/m30k-train-$3.log" 2>&1 < /dev/null &
    echo "$n trainings started: $1 x seeds $2"
}
start "transformer lisa" "2 3" item1
start "syntax-infused sgnet" 1 item4
RUNS="transformer.s2 lisa.s2 transformer.s3 lisa.s3 syntax-infused.s1 sgnet.s1" \
    bash scripts/gpu/m30k_collect.sh "${DEADLINE:-540}"
