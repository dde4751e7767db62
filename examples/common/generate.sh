#!/usr/bin/env bash
# Translate one split with one trained system of a recipe and score it. The recipes call it through their own
# generate.sh, which sets RECIPE_DIR.
#
#   DATA=wmt14/data-bin/p100 SAVE=wmt14/checkpoints/p100/syntax PREP=wmt14/prep/p100 \
#   EVAL=wmt14/eval/p100 bash examples/wmt14_en_de/generate.sh syntax [extra fairseq-generate args]
#
# Writes EVAL/NAME.gen (fairseq-generate log), EVAL/NAME.{tok,detok,json} (syntax-nmt-evaluate score).
# Environment (defaults in brackets; "preset" = set by PRESET, see the recipe's README, "Presets"):
#   RECIPE_DIR       the recipe's directory (its configs.sh)                          [required]
#   PRESET           the recipe's preset                                   [the recipe's first preset]
#   DATA, SAVE       as for train.sh                                                  [required]
#   PREP, EVAL       the prepared text (references) and the output directory          [required]
#   GEN_SUBSET       binarized split to translate                                     [test]
#   REF              reference prefix: REF.raw.T (untokenized) and REF.T (tokenized), T = TGT_LANG [PREP/test]
#   TGT_LANG         the target language                                              [de]
#   TGT_SPACY_MODEL  the target's parser: with a target-side system whose tags are measured (target factors,
#                    interleaved tags: SYSTEM_TAGS), also score the predicted tags of each stream its target
#                    scheme scores against it (EVAL/NAME.factors.json)                 [none]
#   NAME             output name in EVAL                                              [SYSTEM]
#   CHECKPOINT       checkpoint file name in SAVE, or auto (checkpoint_avg.pt if present, else
#                    checkpoint_best.pt)                                              [preset]
#   BEAM / LENPEN    beam size / length penalty                                       [preset]
#   MAX_LEN_A/_B     output length limit a * source length + b                        [preset]
#   SUBWORD          bpe | sentencepiece (how to undo subwords)                         [bpe]
#   MAX_TOKENS       generation batch size in tokens                                     [8192]
#   GEN_ARGS         extra fairseq-generate arguments (word-split), e.g. "--max-len-a 1.2 --max-len-b 10"
#   CPU, TINY, USER_DIR, PYTHON, SYSTEMS_PYTHON as for train.sh; FAIRSEQ_GENERATE        [fairseq-generate]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${RECIPE_DIR:?set RECIPE_DIR to the recipe directory (its generate.sh does)}"
# shellcheck source=/dev/null
source "$RECIPE_DIR/configs.sh"

CONFIG=${1:?usage: generate.sh SYSTEM [fairseq-generate args...]}
shift
preset_args "${PRESET:-}"  # an unknown preset fails here, before the table of systems is read
config_args "$CONFIG"
preset_args "${PRESET:-}"  # again: a preset's warmup and beam override the system's defaults

: "${DATA:?}" "${SAVE:?}" "${PREP:?}" "${EVAL:?}"
PYTHON=${PYTHON:-python}
BEAM=${BEAM:-$BEAM_DEFAULT}
LENPEN=${LENPEN:-$LENPEN_DEFAULT}
MAX_LEN_A=${MAX_LEN_A:-$MAX_LEN_A_DEFAULT}
MAX_LEN_B=${MAX_LEN_B:-$MAX_LEN_B_DEFAULT}
MAX_TOKENS=${MAX_TOKENS:-8192}
GEN_SUBSET=${GEN_SUBSET:-test}
TGT_LANG=${TGT_LANG:-de}
REF=${REF:-$PREP/test}
NAME=${NAME:-$CONFIG}
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
# On a CPU, glibc returns the freed activation buffers of every step to the system and faults them in again
# (a quarter of a training's CPU time in the kernel): keep them (measured: +35 % tokens/s, identical results).
if [[ "${CPU:-0}" == 1 ]]; then
    export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-1073741824} MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-1073741824}
    export MALLOC_TOP_PAD_=${MALLOC_TOP_PAD_:-268435456}
fi

mkdir -p "$EVAL"
# --required-batch-size-multiple 1: with fairseq's default of 8, batch_by_size drops the last batch when its
# size is not a multiple of 8, so 3 of the 3003 newstest2014 sentences would never be translated
# (facebookresearch/fairseq#5036; evaluate.py refuses incomplete output).
"$FAIRSEQ_GENERATE" "$DATA" \
    --user-dir "$USER_DIR" "${TASK_ARGS[@]}" --source-lang en --target-lang "$TGT_LANG" \
    --path "$SAVE/$CHECKPOINT" --gen-subset "$GEN_SUBSET" \
    --beam "$BEAM" --lenpen "$LENPEN" --max-len-a "$MAX_LEN_A" --max-len-b "$MAX_LEN_B" --remove-bpe "$REMOVE_BPE" \
    --max-tokens "$MAX_TOKENS" --required-batch-size-multiple 1 "${DEVICE_ARGS[@]}" ${GEN_ARGS:-} "$@" \
    > "$EVAL/$NAME.gen"
tail -n 2 "$EVAL/$NAME.gen"

# the system's target scheme says how its hypotheses are scored (interleaved target tags are removed first)
"$PYTHON" "$HERE/evaluate.py" score --gen "$EVAL/$NAME.gen" --lang "$TGT_LANG" "${SYSTEM_EVALUATE_ARGS[@]}" \
    --ref-raw "$REF.raw.$TGT_LANG" --ref-tok "$REF.$TGT_LANG" --out-prefix "$EVAL/$NAME"
if [[ "${SYSTEM_TAGS:-0}" == 1 && -n "${TGT_SPACY_MODEL:-}" ]]; then
    "$PYTHON" "$HERE/evaluate.py" factors --gen "$EVAL/$NAME.gen" --parser "$TGT_SPACY_MODEL" \
        --target-scheme "$SYSTEM_TARGET" "${SYSTEM_EVALUATE_ARGS[@]}" --output "$EVAL/$NAME.factors.json"
fi
