#!/usr/bin/env bash
# Train one system of a recipe (examples/wmt14_en_de, examples/multi30k_en_de), then average its last
# checkpoints. The recipes call it through their own train.sh, which sets RECIPE_DIR.
#
#   DATA=wmt14/data-bin/p100 SAVE=wmt14/checkpoints/p100/syntax NGPU=8 bash examples/wmt14_en_de/train.sh syntax [args]
#
# SYSTEM: a name of the table of systems (python -m syntax_nmt.systems list --all; the WMT14 recipe's old
# names baseline, syntax, syntax_concat, syntax_sgnet are aliases); the recipe's configs.sh gives the model size
# (arch_args) and the preset's settings (preset_args).
# Environment (defaults in brackets; "preset" = set by PRESET, see the recipe's README, "Presets"):
#   RECIPE_DIR     the recipe's directory (its configs.sh)                              [required]
#   PRESET         the recipe's preset                                     [the recipe's first preset]
#   DATA           binarized data (syntax-nmt-binarize --destdir)                       [required]
#   SAVE           checkpoint directory                                                  [required]
#   NGPU           GPUs to use                                                           [1]
#   MAX_TOKENS     tokens per GPU per step                                               [preset]
#   BATCH_TOKENS   tokens per update, reached through --update-freq                     [preset]
#   UPDATE_FREQ    gradient accumulation                       [BATCH_TOKENS / (MAX_TOKENS x NGPU)]
#   LR             peak learning rate (inverse_sqrt)                                     [preset]
#   WARMUP         warmup updates                                   [preset; WMT14: 8000 for SG-Net systems]
#   WARMUP_INIT_LR learning rate at update 0                                             [preset]
#   ADAM_BETAS, ADAM_EPS, DROPOUT, ATTENTION_DROPOUT, LABEL_SMOOTHING, CLIP_NORM             [preset]
#   MAX_UPDATE     training updates                                                      [preset]
#   MAX_EPOCH      training epochs (0: no limit)                                         [preset]
#   PATIENCE       stop after this many validations without a better dev loss (-1: never) [preset]
#   SAVE_INTERVAL  updates between checkpoints (and validations; 0: one per epoch)       [preset]
#   AVERAGE        last checkpoints averaged into checkpoint_avg.pt, the final state (checkpoint_last.pt) included
#                  where it was saved after the newest numbered checkpoint (0: none)     [preset]
#   EVAL_BLEU      1: validate with beam-BEAM dev BLEU every SAVE_INTERVAL updates and keep the best
#                  dev-BLEU checkpoint as checkpoint_best.pt (fairseq --eval-bleu)       [preset]
#   BEAM           beam of the dev BLEU (EVAL_BLEU=1)                                    [preset]
#   FP16           1: --fp16                                                             [1]
#   CPU            1: train on CPU (implies FP16=0)                                      [0]
#   TINY           1: tiny architectures (offline tests)                                  [0]
#   SEED           --seed                                                                [1]
#   SUBWORD        bpe | sentencepiece (how dev BLEU undoes subwords)                    [bpe]
#   USER_DIR       the syntax_nmt package directory                      [found with python]
#   FAIRSEQ_TRAIN  training command                                                     [fairseq-train]
#   PYTHON         python of the environment with fairseq and syntax_nmt                 [python]
#   SYSTEMS_PYTHON python that reads the table of systems                                [PYTHON]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${RECIPE_DIR:?set RECIPE_DIR to the recipe directory (its train.sh does)}"
# shellcheck source=/dev/null
source "$RECIPE_DIR/configs.sh"

CONFIG=${1:?usage: train.sh SYSTEM [fairseq-train args...]}
shift
preset_args "${PRESET:-}"  # an unknown preset fails here, before the table of systems is read
config_args "$CONFIG"
preset_args "${PRESET:-}"  # again: a preset's warmup and beam override the system's defaults

: "${DATA:?set DATA to the binarized data directory}"
: "${SAVE:?set SAVE to the checkpoint directory}"
PYTHON=${PYTHON:-python}
NGPU=${NGPU:-1}
CPU=${CPU:-0}
MAX_TOKENS=${MAX_TOKENS:-$MAX_TOKENS_DEFAULT}
BATCH_TOKENS=${BATCH_TOKENS:-$BATCH_TOKENS_DEFAULT}
UPDATE_FREQ=${UPDATE_FREQ:-$(( (BATCH_TOKENS + MAX_TOKENS * NGPU - 1) / (MAX_TOKENS * NGPU) ))}
if (( MAX_TOKENS * NGPU * UPDATE_FREQ != BATCH_TOKENS )); then
    echo "note: $MAX_TOKENS tokens x $NGPU GPU(s) x update-freq $UPDATE_FREQ = $((MAX_TOKENS * NGPU * UPDATE_FREQ))" \
         "tokens per update, not the preset's $BATCH_TOKENS" >&2
fi
LR=${LR:-$LR_DEFAULT}
WARMUP=${WARMUP:-$WARMUP_DEFAULT}
WARMUP_INIT_LR=${WARMUP_INIT_LR:-$WARMUP_INIT_LR_DEFAULT}
ADAM_BETAS=${ADAM_BETAS:-$ADAM_BETAS_DEFAULT}
ADAM_EPS=${ADAM_EPS:-$ADAM_EPS_DEFAULT}
DROPOUT=${DROPOUT:-$DROPOUT_DEFAULT}
ATTENTION_DROPOUT=${ATTENTION_DROPOUT:-$ATTENTION_DROPOUT_DEFAULT}
LABEL_SMOOTHING=${LABEL_SMOOTHING:-$LABEL_SMOOTHING_DEFAULT}
MAX_UPDATE=${MAX_UPDATE:-$MAX_UPDATE_DEFAULT}
MAX_EPOCH=${MAX_EPOCH:-${MAX_EPOCH_DEFAULT:-0}}
PATIENCE=${PATIENCE:-${PATIENCE_DEFAULT:--1}}
CLIP_NORM=${CLIP_NORM:-${CLIP_NORM_DEFAULT:-0.0}}
SAVE_INTERVAL=${SAVE_INTERVAL:-$SAVE_INTERVAL_DEFAULT}
AVERAGE=${AVERAGE:-$AVERAGE_DEFAULT}
EVAL_BLEU=${EVAL_BLEU:-$EVAL_BLEU_DEFAULT}
BEAM=${BEAM:-$BEAM_DEFAULT}
FP16=${FP16:-1}
FAIRSEQ_TRAIN=${FAIRSEQ_TRAIN:-fairseq-train}
USER_DIR=${USER_DIR:-$(find_user_dir)}

DEVICE_ARGS=(--distributed-world-size "$NGPU")
if [[ "$CPU" == 1 ]]; then
    DEVICE_ARGS=(--cpu)
    FP16=0
fi
# On a CPU, glibc returns the freed activation buffers of every step to the system and faults them in again
# (a quarter of a training's CPU time in the kernel): keep them (measured: +35 % tokens/s, identical results).
if [[ "${CPU:-0}" == 1 ]]; then
    export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-1073741824} MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-1073741824}
    export MALLOC_TOP_PAD_=${MALLOC_TOP_PAD_:-268435456}
fi
PRECISION_ARGS=()
if [[ "$FP16" == 1 ]]; then PRECISION_ARGS=(--fp16); fi
# Checkpoint selection: the lowest dev loss (fairseq's default), or with EVAL_BLEU=1 the highest dev BLEU,
# tokenized like multi-bleu (BPE removed, no detokenization), with the test-time beam.
VALID_ARGS=()
if [[ "$EVAL_BLEU" == 1 ]]; then
    case "${SUBWORD:-bpe}" in
        bpe) REMOVE_BPE="@@ " ;;
        sentencepiece) REMOVE_BPE=sentencepiece ;;
        *) echo "SUBWORD must be bpe or sentencepiece" >&2; exit 1 ;;
    esac
    VALID_ARGS=(--eval-bleu --eval-bleu-args "{\"beam\": $BEAM}" --eval-bleu-remove-bpe "$REMOVE_BPE"
        --eval-tokenized-bleu --validate-interval-updates "$SAVE_INTERVAL"
        --best-checkpoint-metric bleu --maximize-best-checkpoint-metric)
fi

# Checkpoints: every SAVE_INTERVAL updates (the last AVERAGE kept), or with SAVE_INTERVAL=0 one per epoch.
KEEP=$((AVERAGE > 1 ? AVERAGE : 1))
if (( SAVE_INTERVAL > 0 )); then
    SAVE_ARGS=(--save-interval-updates "$SAVE_INTERVAL" --keep-interval-updates "$KEEP" --no-epoch-checkpoints)
    AVERAGE_ARGS=(--num-update-checkpoints "$AVERAGE")
else
    SAVE_ARGS=(--keep-last-epochs "$KEEP")
    AVERAGE_ARGS=(--num-epoch-checkpoints "$AVERAGE")
fi

mkdir -p "$SAVE"
TRAIN_CMD=("$FAIRSEQ_TRAIN" "$DATA"
    --user-dir "$USER_DIR" "${TASK_ARGS[@]}" --source-lang en --target-lang "${TGT_LANG:-de}"
    --arch "$ARCH" "${MODEL_ARGS[@]}"
    --optimizer adam --adam-betas "$ADAM_BETAS" --adam-eps "$ADAM_EPS" --clip-norm "$CLIP_NORM"
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" --warmup-init-lr "$WARMUP_INIT_LR"
    --dropout "$DROPOUT" --attention-dropout "$ATTENTION_DROPOUT" --weight-decay 0.0
    --criterion label_smoothed_cross_entropy --label-smoothing "$LABEL_SMOOTHING" "${SYSTEM_ARGS[@]}"
    --max-tokens "$MAX_TOKENS" --update-freq "$UPDATE_FREQ" --max-update "$MAX_UPDATE" --max-epoch "$MAX_EPOCH"
    --patience "$PATIENCE" --save-dir "$SAVE" "${SAVE_ARGS[@]}"
    --skip-invalid-size-inputs-valid-test "${VALID_ARGS[@]}"
    --log-format simple --log-interval 100 --seed "${SEED:-1}"
    "${DEVICE_ARGS[@]}" "${PRECISION_ARGS[@]}" "$@")
# A training that ended (fairseq-train exited 0) with this very command line is not trained again: resumed from
# checkpoint_last.pt, fairseq-train takes one more step before it looks at --max-update (update 101 of 100) and
# rewrites checkpoint_last.pt and checkpoint_best.pt, one update more at each retry. Only the averaging runs again
# (after it failed, say). Another command line (MAX_UPDATE raised) trains on from checkpoint_last.pt.
ENDED="$SAVE/.train_ended"
printf -v COMMAND_LINE '%q ' "${TRAIN_CMD[@]}"
if [[ -f "$ENDED" && "$(cat "$ENDED")" == "$COMMAND_LINE" ]]; then
    # the update it ended at, as fairseq logs it (the recipe's training record reads it from this line)
    ENDED_AT=$(grep -oE 'num_updates[ =][0-9]+' "$SAVE/train.log" 2>/dev/null | tail -1 | grep -oE '[0-9]+' || true)
    echo "train.sh: the training in $SAVE ended${ENDED_AT:+ at num_updates $ENDED_AT} with this command line" \
         "($ENDED): not trained again" | tee -a "$SAVE/train.log"
else
    rm -f "$ENDED"
    "${TRAIN_CMD[@]}" 2>&1 | tee -a "$SAVE/train.log"
    printf '%s' "$COMMAND_LINE" > "$ENDED"
fi

# the last AVERAGE checkpoints, the final state included (scripts/average_checkpoints.py), its messages and errors
# in train.log beside the training's
if (( AVERAGE > 0 )); then
    "$PYTHON" "$HERE/../../scripts/average_checkpoints.py" --inputs "$SAVE" \
        "${AVERAGE_ARGS[@]}" --output "$SAVE/checkpoint_avg.pt" 2>&1 | tee -a "$SAVE/train.log"
fi
