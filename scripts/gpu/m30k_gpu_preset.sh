#!/usr/bin/env bash
# The Multi30k EN->DE recipe's PRESET=gpu trainings on a lent GPU machine (issue 44: the converged point of the
# budget curve), side by side: Transformer-Tiny is launch-bound on a GPU, so SYSTEMS x SEEDS trainings share one.
# Run from the project root on the GPU machine, after `bash ../shared/gpu/prepare.sh` here and after copying the
# recipe's binarized data into .gpu/m30k/data-bin/bpe14000 (the data-bin of `run_all.sh`, with its .done):
#
#   run(command="SEEDS='2 3' bash scripts/gpu/m30k_gpu_preset.sh 2>&1 | tee $OUT/gpu-run.log", carry=[".gpu"])
#
# The trainings run in their own process session, so that if the call ends first, a second call on the warm machine
# (`bash scripts/gpu/m30k_collect.sh SECONDS`, no other argument) waits for them and collects. What comes back in
# $OUT: each finished training's averaged checkpoint without its optimizer state, cut in pieces of 15 MiB
# (SYSTEM.sSEED.avg.pt.part-aa, -ab: `cat` them), and one archive of the logs and training records.
# Back here: cat the pieces into WORK/checkpoints/gpu-bpe14000/SYSTEM/seedN/checkpoint_avg.pt, unpack the records
# beside them, then `PRESET=gpu CPU=1 STAGES=evaluate SYSTEMS=... SEEDS=... bash examples/multi30k_en_de/run_all.sh`.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-$PWD/.gpu/out} T0=${T0:-$(date +%s)}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())" || exit 1
# RUN_GROUPS: several runs of the recipe side by side, "SYSTEMS:SEEDS" separated by ';' (default: SYSTEMS x SEEDS; issue
# 54's six trainings: scripts/gpu/m30k_issue54.sh)
RUN_GROUPS=${RUN_GROUPS:-${SYSTEMS:-transformer lisa}:${SEEDS:-1}}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
mkdir -p /tmp/m30k && cp -r .gpu/m30k/data-bin /tmp/m30k/
# MAX_TOKENS=8192: the preset's 8,192 tokens per update in one batch (not 2 x 4,096 with --update-freq 2): half the
# launches; the same tokens per update
# The data-size runs of issue 54 (item 3): TRAIN_PERCENT=10 MAX_TOKENS=2048 BATCH_TOKENS=2048 WARMUP=400
# MAX_UPDATE=32000 (the gpu preset with the cpu preset's batch and warmup), the subset's data-bin (data-bin/bpe14000-p10,
# made here by run_all.sh's binarize stage) copied beside the whole one; those settings pass through to run_all.sh.
RUNS="" i=0
IFS=';' read -r -a groups <<< "$RUN_GROUPS"
for g in "${groups[@]}"; do  # each group one run_all.sh in its own process session, its trainings side by side
    i=$((i + 1)) systems=${g%%:*} seeds=${g#*:}
    n=$(( $(wc -w <<< "$systems") * $(wc -w <<< "$seeds") ))
    setsid nohup env PYTHON=python3 WORK=/tmp/m30k PRESET=gpu MAX_TOKENS="${MAX_TOKENS:-8192}" SYSTEMS="$systems" \
        SEEDS="$seeds" STAGES=train JOBS="$n" THREADS=2 PROGRESS_SECONDS=60 \
        bash examples/multi30k_en_de/run_all.sh > "/tmp/m30k-train-group$i.log" 2>&1 < /dev/null &
    echo "$n trainings started: $systems x seeds $seeds"
    for n in $seeds; do for s in $systems; do RUNS="$RUNS $s.s$n"; done; done
done
RUNS="$RUNS" bash scripts/gpu/m30k_collect.sh "${DEADLINE:-560}"
