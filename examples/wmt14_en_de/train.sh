#!/usr/bin/env bash
# Train one configuration of the WMT14 en-de recipe, then average its last checkpoints.
#
#   DATA=wmt14/data-bin/p100 SAVE=wmt14/checkpoints/p100/syntax NGPU=8 bash train.sh syntax [extra fairseq-train args]
#
# CONFIG: baseline | syntax | sgnet | syntax_sgnet (see configs.sh).
# Environment (defaults in brackets):
#   DATA           binarized data (syntax-nmt-binarize --destdir)                       [required]
#   SAVE           checkpoint directory                                                  [required]
#   NGPU           GPUs to use; the batch stays MAX_TOKENS x 8 GPUs through --update-freq [1]
#   MAX_TOKENS     tokens per GPU per step                                               [4096]
#   UPDATE_FREQ    gradient accumulation                                                  [8 / NGPU]
#   LR             peak learning rate (inverse_sqrt); 5e-4 is the other common choice     [7e-4]
#   WARMUP         warmup updates                                        [4000; 8000 for SG-Net configs]
#   MAX_UPDATE     training updates                                                      [100000]
#   SAVE_INTERVAL  updates between checkpoints                                           [1000]
#   AVERAGE        last interval checkpoints kept and averaged into checkpoint_avg.pt (0: none) [5]
#   FP16           1: --fp16                                                             [1]
#   CPU            1: train on CPU (implies FP16=0)                                      [0]
#   TINY           1: tiny architectures (offline test)                                   [0]
#   USER_DIR       the syntax_nmt package directory                      [found with python]
#   FAIRSEQ_TRAIN  training command                                                     [fairseq-train]
#   PYTHON         python of the environment with fairseq and syntax_nmt                 [python]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=configs.sh
source "$HERE/configs.sh"

CONFIG=${1:?usage: train.sh CONFIG [fairseq-train args...]}
shift
config_args "$CONFIG"

: "${DATA:?set DATA to the binarized data directory}"
: "${SAVE:?set SAVE to the checkpoint directory}"
PYTHON=${PYTHON:-python}
NGPU=${NGPU:-1}
CPU=${CPU:-0}
MAX_TOKENS=${MAX_TOKENS:-4096}
UPDATE_FREQ=${UPDATE_FREQ:-$(( (8 + NGPU - 1) / NGPU ))}
LR=${LR:-7e-4}
WARMUP=${WARMUP:-$WARMUP_DEFAULT}
MAX_UPDATE=${MAX_UPDATE:-100000}
SAVE_INTERVAL=${SAVE_INTERVAL:-1000}
AVERAGE=${AVERAGE:-5}
FP16=${FP16:-1}
FAIRSEQ_TRAIN=${FAIRSEQ_TRAIN:-fairseq-train}
USER_DIR=${USER_DIR:-$(find_user_dir)}

DEVICE_ARGS=(--distributed-world-size "$NGPU")
if [[ "$CPU" == 1 ]]; then
    DEVICE_ARGS=(--cpu)
    FP16=0
fi
PRECISION_ARGS=()
if [[ "$FP16" == 1 ]]; then PRECISION_ARGS=(--fp16); fi

mkdir -p "$SAVE"
"$FAIRSEQ_TRAIN" "$DATA" \
    --user-dir "$USER_DIR" "${TASK_ARGS[@]}" --source-lang en --target-lang de \
    --arch "$ARCH" "${MODEL_ARGS[@]}" \
    --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0 \
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" --warmup-init-lr 1e-07 \
    --dropout 0.1 --weight-decay 0.0 \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --max-tokens "$MAX_TOKENS" --update-freq "$UPDATE_FREQ" --max-update "$MAX_UPDATE" \
    --save-dir "$SAVE" --save-interval-updates "$SAVE_INTERVAL" --keep-interval-updates $((AVERAGE > 1 ? AVERAGE : 1)) \
    --no-epoch-checkpoints --skip-invalid-size-inputs-valid-test \
    --log-format simple --log-interval 100 --seed "${SEED:-1}" \
    "${DEVICE_ARGS[@]}" "${PRECISION_ARGS[@]}" "$@" 2>&1 | tee -a "$SAVE/train.log"

if (( AVERAGE > 0 )); then
    "$PYTHON" "$HERE/../../scripts/average_checkpoints.py" --inputs "$SAVE" \
        --num-update-checkpoints "$AVERAGE" --output "$SAVE/checkpoint_avg.pt"
fi
