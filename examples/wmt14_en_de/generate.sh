#!/usr/bin/env bash
# Translate newstest2014 with one trained configuration and score it.
#
#   DATA=wmt14/data-bin/p100 SAVE=wmt14/checkpoints/p100/syntax PREP=wmt14/prep/p100 \
#   EVAL=wmt14/eval/p100 bash generate.sh syntax [extra fairseq-generate args]
#
# Writes EVAL/CONFIG.gen (fairseq-generate log), EVAL/CONFIG.{tok,detok,json} (evaluate.py score).
# Environment (defaults in brackets; "preset" = set by PRESET, see README.md, "Presets"):
#   PRESET           fairseq | sit-paper | sgnet-paper                                [fairseq]
#   DATA, SAVE       as for train.sh                                                  [required]
#   PREP             prepare.py output (test.raw.de, test.de)                         [required]
#   EVAL             output directory                                                 [required]
#   CHECKPOINT       checkpoint file name in SAVE   [preset: checkpoint_avg.pt if present, else checkpoint_best.pt;
#                                                    sgnet-paper: checkpoint_best.pt (best dev BLEU)]
#   BEAM / LENPEN    beam size / length penalty   [preset: 4 (5 for SG-Net configs) / 0.6 | 4 / 0.6 | 5 / 1.0]
#   MAX_LEN_A/_B     output length limit a * source length + b          [preset: 0, 200 | 1, 50 | 0, 200]
#   SUBWORD          bpe | sentencepiece (how to undo subwords)                         [bpe]
#   MAX_TOKENS       generation batch size in tokens                                     [8192]
#   GEN_ARGS         extra fairseq-generate arguments (word-split), e.g. "--max-len-a 1.2 --max-len-b 10"
#   CPU, TINY, USER_DIR, PYTHON as for train.sh; FAIRSEQ_GENERATE                          [fairseq-generate]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=configs.sh
source "$HERE/configs.sh"

CONFIG=${1:?usage: generate.sh CONFIG [fairseq-generate args...]}
shift
config_args "$CONFIG"
preset_args "${PRESET:-fairseq}"

: "${DATA:?}" "${SAVE:?}" "${PREP:?}" "${EVAL:?}"
PYTHON=${PYTHON:-python}
BEAM=${BEAM:-$BEAM_DEFAULT}
LENPEN=${LENPEN:-$LENPEN_DEFAULT}
MAX_LEN_A=${MAX_LEN_A:-$MAX_LEN_A_DEFAULT}
MAX_LEN_B=${MAX_LEN_B:-$MAX_LEN_B_DEFAULT}
MAX_TOKENS=${MAX_TOKENS:-8192}
FAIRSEQ_GENERATE=${FAIRSEQ_GENERATE:-fairseq-generate}
USER_DIR=${USER_DIR:-$(find_user_dir)}
CHECKPOINT=${CHECKPOINT:-$CHECKPOINT_DEFAULT}
if [[ "$CHECKPOINT" == auto ]]; then
    CHECKPOINT=checkpoint_best.pt
    if [[ -f "$SAVE/checkpoint_avg.pt" ]]; then CHECKPOINT=checkpoint_avg.pt; fi
fi
case "${SUBWORD:-bpe}" in
    bpe) REMOVE_BPE="@@ " ;;
    sentencepiece) REMOVE_BPE=sentencepiece ;;
    *) echo "SUBWORD must be bpe or sentencepiece" >&2; exit 1 ;;
esac
DEVICE_ARGS=()
if [[ "${CPU:-0}" == 1 ]]; then DEVICE_ARGS=(--cpu); fi

mkdir -p "$EVAL"
# --required-batch-size-multiple 1: with fairseq's default of 8, batch_by_size drops the last batch when its
# size is not a multiple of 8, so 3 of the 3003 newstest2014 sentences would never be translated
# (facebookresearch/fairseq#5036; evaluate.py refuses incomplete output).
"$FAIRSEQ_GENERATE" "$DATA" \
    --user-dir "$USER_DIR" "${TASK_ARGS[@]}" --source-lang en --target-lang de \
    --path "$SAVE/$CHECKPOINT" --gen-subset test \
    --beam "$BEAM" --lenpen "$LENPEN" --max-len-a "$MAX_LEN_A" --max-len-b "$MAX_LEN_B" --remove-bpe "$REMOVE_BPE" \
    --max-tokens "$MAX_TOKENS" --required-batch-size-multiple 1 "${DEVICE_ARGS[@]}" ${GEN_ARGS:-} "$@" \
    > "$EVAL/$CONFIG.gen"
tail -n 2 "$EVAL/$CONFIG.gen"

"$PYTHON" "$HERE/evaluate.py" score --gen "$EVAL/$CONFIG.gen" \
    --ref-raw "$PREP/test.raw.de" --ref-tok "$PREP/test.de" --out-prefix "$EVAL/$CONFIG"
