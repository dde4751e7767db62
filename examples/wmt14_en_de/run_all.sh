#!/usr/bin/env bash
# The whole WMT14 en-de recipe: download -> prepare -> annotate -> binarize -> train -> evaluate.
#
#   bash examples/wmt14_en_de/run_all.sh                       # everything, 100 % of the data, 1 GPU
#   PERCENT=5 NGPU=8 CONFIGS="baseline syntax" bash examples/wmt14_en_de/run_all.sh
#   STAGES="train evaluate" CONFIGS=sgnet bash examples/wmt14_en_de/run_all.sh
#   PRESET=sit-paper PERCENT="1 5 10 25 50 100" CONFIGS="baseline syntax" bash examples/wmt14_en_de/run_all.sh
#
# Every stage skips work that is already done, so an interrupted run is resumed by running the
# same command again. Environment (defaults in brackets; "preset" = set by PRESET):
#   PRESET          fairseq | sit-paper | sgnet-paper: whose setup (README.md, "Presets")   [fairseq]
#   WORK            root directory of all outputs                                 [wmt14_en_de]
#   STAGES          stages to run                [download prepare annotate binarize train evaluate]
#   WMT14_MIRROR    base URL / directory with the archives (download.py --mirror)   [statmt.org]
#   MANIFEST        archive list with checksums (download.py --manifest)           [manifest.json]
#   TEST_SET        newstest2014 variant: full (3003 lines) | filtered (2737)  [preset: full | filtered | full]
#   PERCENT         share(s) of the cleaned training data: one run per value, e.g. "1 5 10 25 50 100"  [100]
#   SEED            seed of the subsample                                           [1]
#   SUBWORD         bpe (subword-nmt) | sentencepiece                                [bpe]
#   BPE_MERGES      BPE merge operations                             [preset: 32000 | 37000 | 40000]
#   SPM_VOCAB       sentencepiece vocabulary size                                     [32000]
#   WORKERS         CPU processes for tokenization and binarization                  [nproc]
#   SPACY_MODEL     spaCy pipeline (name or path) for the source parses              [en_core_web_sm]
#   ANNOTATE_PROCS  spaCy processes per annotation shard                             [WORKERS]
#   ANNOTATE_SHARDS parallel annotation shards of the training data                  [1]
#   ANNOTATE_BATCH  spaCy batch size                                                 [256]
#   GPU_ID          spaCy GPU (-1: CPU); with ANNOTATE_SHARDS>1 shard i uses GPU_ID+i  [-1]
#   CHUNK_SIZE      lines per annotation chunk (unit of resuming)                     [100000]
#   CONFIGS         systems to train: names of the table of systems (python -m syntax_nmt.systems list --all;
#                   configs.sh), "default" for its default comparison  [baseline syntax sgnet syntax_sgnet]
#   SIGNIFICANCE    paired test against the baseline: bs (bootstrap) | ar             [bs]
#   PYTHON          python with fairseq, syntax_nmt and the recipe's dependencies    [python]
#   NGPU, MAX_TOKENS, BATCH_TOKENS, UPDATE_FREQ, LR, WARMUP, ..., AVERAGE, EVAL_BLEU, FP16, CPU, TINY: see train.sh
#   BEAM, LENPEN, MAX_LEN_A, MAX_LEN_B, CHECKPOINT, GEN_ARGS: see generate.sh
# Outputs, with T = pP for PRESET=fairseq and PRESET-pP otherwise: WORK/download, WORK/work (tokenization
# cache), WORK/prep/T, WORK/annotated/T, WORK/data-bin/T, WORK/checkpoints/T/CONFIG,
# WORK/eval/T/{CONFIG.*,summary.txt}.
set -euo pipefail

# Several percentages: one complete run each (the download and the tokenization cache are shared).
if [[ "${PERCENT:-100}" == *" "* ]]; then
    for p in $PERCENT; do PERCENT=$p bash "${BASH_SOURCE[0]}"; done
    exit 0
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=configs.sh
source "$HERE/configs.sh"
PRESET=${PRESET:-fairseq}
preset_args "$PRESET"

WORK=${WORK:-wmt14_en_de}
STAGES=${STAGES:-download prepare annotate binarize train evaluate}
TEST_SET=${TEST_SET:-$TEST_SET_DEFAULT}
PERCENT=${PERCENT:-100}
SEED=${SEED:-1}
SUBWORD=${SUBWORD:-bpe}
BPE_MERGES=${BPE_MERGES:-$BPE_MERGES_DEFAULT}
if [[ ! "$BPE_MERGES" =~ ^[1-9][0-9]*$ ]]; then  # 0 or less: codes without merges, every word in characters
    echo "run_all.sh: error: BPE_MERGES must be a positive integer, got '$BPE_MERGES'" >&2
    exit 2
fi
SPM_VOCAB=${SPM_VOCAB:-32000}
WORKERS=${WORKERS:-$(nproc)}
SPACY_MODEL=${SPACY_MODEL:-en_core_web_sm}
ANNOTATE_PROCS=${ANNOTATE_PROCS:-$WORKERS}
ANNOTATE_SHARDS=${ANNOTATE_SHARDS:-1}
ANNOTATE_BATCH=${ANNOTATE_BATCH:-256}
GPU_ID=${GPU_ID:--1}
CHUNK_SIZE=${CHUNK_SIZE:-100000}
CONFIGS=${CONFIGS:-$CONFIGS_ALL}
if [[ "$CONFIGS" == default ]]; then CONFIGS=$(system_names default); fi
SIGNIFICANCE=${SIGNIFICANCE:-bs}
PYTHON=${PYTHON:-python}
export PYTHON SUBWORD PRESET

TAG="p${PERCENT}"
if [[ "$PRESET" != fairseq ]]; then TAG="$PRESET-p${PERCENT}"; fi
DOWNLOAD="$WORK/download"
PREP="$WORK/prep/$TAG"
ANN="$WORK/annotated/$TAG"
BIN="$WORK/data-bin/$TAG"
CKPT="$WORK/checkpoints/$TAG"
EVAL="$WORK/eval/$TAG"


if has_stage download; then
    stage_start download
    "$PYTHON" "$HERE/download.py" --dest "$DOWNLOAD" --test-set "$TEST_SET" ${WMT14_MIRROR:+--mirror "$WMT14_MIRROR"} \
        ${MANIFEST:+--manifest "$MANIFEST"}
    stage_end download
fi

if has_stage prepare; then
    stage_start prepare
    "$PYTHON" "$HERE/prepare.py" --download-dir "$DOWNLOAD" --work-dir "$WORK/work" --out-dir "$PREP" \
        --test-set "$TEST_SET" --subsample-percent "$PERCENT" --seed "$SEED" --subword "$SUBWORD" \
        --bpe-merges "$BPE_MERGES" --spm-vocab-size "$SPM_VOCAB" --workers "$WORKERS"
    stage_end prepare
fi

if has_stage annotate; then
    stage_start annotate
    # how prepare.py processed the text (sacremoses; no --escape), recorded for inference on raw text
    MOSES_SETTINGS="lang=en,normalize=1,aggressive_dash_splits=1,escape=0"
    if [[ "$SUBWORD" == bpe ]]; then SUBWORD_ARGS=(--subword bpe --subword-model "$PREP/bpe.codes")
    else SUBWORD_ARGS=(--subword spm --subword-model "$PREP/spm.model"); fi
    annotate() {  # annotate SPLIT [extra args]
        local split=$1
        shift
        syntax-nmt-annotate --source "$PREP/$split.en" --target "$PREP/$split.de" --src-lang en --tgt-lang de \
            --pretokenized --spacy-model "$SPACY_MODEL" "${SUBWORD_ARGS[@]}" --output-prefix "$ANN/$split" \
            --moses-settings "$MOSES_SETTINGS" \
            --n-process "$ANNOTATE_PROCS" --batch-size "$ANNOTATE_BATCH" --chunk-size "$CHUNK_SIZE" "$@"
    }
    # all at once: the training shards (the last one to finish merges the outputs), dev and test
    pids=()
    for ((i = 0; i < ANNOTATE_SHARDS; i++)); do
        gpu=$GPU_ID
        if (( GPU_ID >= 0 )); then gpu=$((GPU_ID + i)); fi
        annotate train --shard-id "$i" --num-shards "$ANNOTATE_SHARDS" --gpu-id "$gpu" &
        pids+=($!)
    done
    annotate valid --gpu-id "$GPU_ID" --n-process 1 &
    pids+=($!)
    annotate test --gpu-id "$GPU_ID" --n-process 1 &
    pids+=($!)
    # wait for every one even when one fails (set -e would leave the others running on: a rerun would then parse
    # their chunks a second time beside them), then fail if one did
    failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    if (( failed )); then
        echo "run_all.sh: error: an annotation process failed (see above); rerun the same command to resume" >&2
        exit 1
    fi
    stage_end annotate
fi

if has_stage binarize; then
    stage_start binarize
    if [[ -f "$BIN/.done" ]]; then
        echo "$BIN is complete"
    else
        rm -rf "$BIN"
        syntax-nmt-binarize --source-lang en --target-lang de \
            --trainpref "$ANN/train" --validpref "$ANN/valid" --testpref "$ANN/test" \
            --destdir "$BIN" --joined-dictionary --workers "$WORKERS"
        touch "$BIN/.done"
    fi
    stage_end binarize
fi

if has_stage train; then
    for config in $CONFIGS; do
        stage_start "train $config"
        if [[ -f "$CKPT/$config/.done" ]]; then
            echo "$CKPT/$config is complete"
        else
            DATA="$BIN" SAVE="$CKPT/$config" bash "$HERE/train.sh" "$config"
            touch "$CKPT/$config/.done"
        fi
        stage_end "train $config"
    done
fi

if has_stage evaluate; then
    stage_start evaluate
    for config in $CONFIGS; do
        if [[ ! -f "$CKPT/$config/.done" ]]; then  # never score a checkpoint of a training that did not end
            echo "run_all.sh: error: $config has not finished training ($CKPT/$config/.done is missing): run the" \
                 "train stage first" >&2
            exit 1
        fi
    done
    prefixes=()
    for config in $CONFIGS; do
        DATA="$BIN" SAVE="$CKPT/$config" PREP="$PREP" EVAL="$EVAL" bash "$HERE/generate.sh" "$config"
        prefixes+=("$EVAL/$config")
    done
    baseline=()
    for config in $CONFIGS; do  # the stock transformer, under its old or its new name
        if [[ "$(system_names "$config")" == transformer ]]; then baseline=(--baseline "$EVAL/$config"); break; fi
    done
    "$PYTHON" "$HERE/../common/evaluate.py" summary --ref-raw "$PREP/test.raw.de" --ref-tok "$PREP/test.de" \
        "${baseline[@]}" "${prefixes[@]}" --test "$SIGNIFICANCE" \
        --title "WMT14 en-de, newstest2014 ($TEST_SET), ${PERCENT}% of the training data, preset $PRESET" \
        | tee "$EVAL/summary.txt"
    stage_end evaluate
fi
