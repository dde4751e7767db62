#!/usr/bin/env bash
# Train one configuration of the WMT14 en-de recipe, then average its last checkpoints.
#
#   DATA=wmt14/data-bin/p100 SAVE=wmt14/checkpoints/p100/syntax NGPU=8 bash train.sh syntax [extra fairseq-train args]
#
# CONFIG: baseline | syntax | syntax_concat | sgnet | syntax_sgnet (see configs.sh).
# Environment (defaults in brackets; "preset" = set by PRESET, see README.md, "Presets"):
#   PRESET         fairseq | sit-paper | sgnet-paper                                     [fairseq]
#   DATA           binarized data (syntax-nmt-binarize --destdir)                       [required]
#   SAVE           checkpoint directory                                                  [required]
#   NGPU           GPUs to use                                                           [1]
#   MAX_TOKENS     tokens per GPU per step                                               [4096]
#   BATCH_TOKENS   tokens per update, reached through --update-freq   [preset: 32768 | 8192 | 16384]
#   UPDATE_FREQ    gradient accumulation                       [BATCH_TOKENS / (MAX_TOKENS x NGPU)]
#   LR             peak learning rate (inverse_sqrt)                 [preset: 7e-4 | 6.98771e-4 | 4.94106e-4]
#   WARMUP         warmup updates                  [preset: 4000, 8000 for SG-Net configs | 4000 | 8000]
#   WARMUP_INIT_LR learning rate at update 0                               [preset: 1e-7 | 0 | 0]
#   ADAM_BETAS, ADAM_EPS                             [preset: (0.9, 0.98) 1e-8 | (0.9, 0.998) 1e-9 | (0.9, 0.98) 1e-9]
#   DROPOUT, ATTENTION_DROPOUT, LABEL_SMOOTHING                [preset: 0.1 0 0.1 | 0.1 0 0.1 | 0.1 0.1 0.1]
#   MAX_UPDATE     training updates                                [preset: 100000 | 100000 | 300000]
#   SAVE_INTERVAL  updates between checkpoints (and validations)                         [1000]
#   AVERAGE        last interval checkpoints averaged into checkpoint_avg.pt (0: none)  [preset: 5 | 5 | 0]
#   EVAL_BLEU      1: validate with beam-BEAM dev BLEU every SAVE_INTERVAL updates and keep the best
#                  dev-BLEU checkpoint as checkpoint_best.pt (fairseq --eval-bleu)     [preset: 0 | 0 | 1]
#   BEAM           beam of the dev BLEU (EVAL_BLEU=1)                                    [preset]
#   FP16           1: --fp16                                                             [1]
#   CPU            1: train on CPU (implies FP16=0)                                      [0]
#   TINY           1: tiny architectures (offline test)                                   [0]
#   SEED           --seed                                                                [1]
#   SUBWORD        bpe | sentencepiece (how dev BLEU undoes subwords)                    [bpe]
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
preset_args "${PRESET:-fairseq}"

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

mkdir -p "$SAVE"
"$FAIRSEQ_TRAIN" "$DATA" \
    --user-dir "$USER_DIR" "${TASK_ARGS[@]}" --source-lang en --target-lang de \
    --arch "$ARCH" "${MODEL_ARGS[@]}" \
    --optimizer adam --adam-betas "$ADAM_BETAS" --adam-eps "$ADAM_EPS" --clip-norm 0.0 \
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" --warmup-init-lr "$WARMUP_INIT_LR" \
    --dropout "$DROPOUT" --attention-dropout "$ATTENTION_DROPOUT" --weight-decay 0.0 \
    --criterion label_smoothed_cross_entropy --label-smoothing "$LABEL_SMOOTHING" \
    --max-tokens "$MAX_TOKENS" --update-freq "$UPDATE_FREQ" --max-update "$MAX_UPDATE" \
    --save-dir "$SAVE" --save-interval-updates "$SAVE_INTERVAL" --keep-interval-updates $((AVERAGE > 1 ? AVERAGE : 1)) \
    --no-epoch-checkpoints --skip-invalid-size-inputs-valid-test "${VALID_ARGS[@]}" \
    --log-format simple --log-interval 100 --seed "${SEED:-1}" \
    "${DEVICE_ARGS[@]}" "${PRECISION_ARGS[@]}" "$@" 2>&1 | tee -a "$SAVE/train.log"

if (( AVERAGE > 0 )); then
    "$PYTHON" "$HERE/../../scripts/average_checkpoints.py" --inputs "$SAVE" \
        --num-update-checkpoints "$AVERAGE" --output "$SAVE/checkpoint_avg.pt"
fi
