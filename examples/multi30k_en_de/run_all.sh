#!/usr/bin/env bash
# The whole Multi30k en-de recipe: download -> prepare -> annotate -> binarize -> train -> evaluate [-> noise].
#
#   bash examples/multi30k_en_de/run_all.sh                        # PRESET=cpu: the main comparison, 3 seeds
#   SYSTEMS=default bash examples/multi30k_en_de/run_all.sh        # every system of the table, 3 seeds
#   MULTI30K_DIR=~/multi30k-dataset bash examples/multi30k_en_de/run_all.sh   # a clone instead of the download
#   PRESET=gpu SPACY_MODEL=en_core_web_trf bash examples/multi30k_en_de/run_all.sh
#   STAGES=noise NOISE_SYSTEM=syntax-infused bash examples/multi30k_en_de/run_all.sh
#
# Every stage skips work that is already done (each training and each translation on its own), so an
# interrupted run is resumed by running the same command again, and the trainings can run in pieces
# (SEEDS=1, then SEEDS="1 2 3"). Environment (defaults in brackets; "preset" = set by PRESET):
#   PRESET          cpu | gpu (README.md, "Presets")                                  [cpu]
#   WORK            root directory of all outputs                                     [multi30k_en_de]
#   STAGES          stages to run                  [download prepare annotate binarize train evaluate]
#                   (noise: the parse-noise experiment, README.md)
#   MULTI30K_DIR    a copy of the files on disk (a clone of github.com/multi30k/dataset or a directory)
#   MANIFEST        file list with checksums (download.py --manifest)                 [manifest.json]
#   SPLITS          splits to translate and score, the first for model selection  [valid test2016 test2017 mscoco]
#   BPE_MERGES      joint BPE merge operations                                        [14000]
#   SPACY_MODEL     spaCy pipeline (name or path) for the source parses              [en_core_web_sm]
#   TGT_LANG        target language: de or fr (examples/multi30k_en_fr/run_all.sh sets fr)        [de]
#   TGT_SPACY_MODEL spaCy pipeline for the target's parses: annotates the target too (the target streams that the
#                   systems run read binarized beside it, as their target schemes declare, and the copies of the
#                   data that the target schemes make, e.g. the target interleaved with POS tags:
#                   python -m syntax_nmt.targets), for the target-side systems (python -m syntax_nmt.systems list
#                   --all: factors, interleaved, lisa+factors)   [none]
#   SYSTEMS         systems to train and compare (names of python -m syntax_nmt.systems list --all; "default":
#                   every system of the default comparison; "target": the target-side comparison, from the
#                   target schemes' systems, python -m syntax_nmt.systems list --target; the first is the baseline)
#                   [transformer syntax-infused and the two methods best on validation (README.md)]
#   SEEDS           training seeds                                                    [1 2 3]
#   TRAIN_PERCENT   train on this percentage of the training pairs: one fixed subset (TRAIN_SEED), the same for
#                   every system and seed, with the BPE, dictionaries, validation and test sets of the whole
#                   (python -m syntax_nmt.data.subsample; WORK/data-bin/T-pPERCENT, checkpoints and eval in
#                   P-T-pPERCENT)                                                      [100]
#   TRAIN_SEED      seed of that subset                                               [1]
#   JOBS            trainings at a time (each with THREADS torch threads)            [CPU: nproc; GPU: 1]
#   THREADS         torch threads per training                                        [cores / JOBS]
#   SIGNIFICANCE    paired tests against the baseline: bs ar (bootstrap, approximate randomization) [bs ar]
#   PROGRESS_SECONDS  how often a running training prints its update, of MAX_UPDATE, and an ETA     [300]
#   NOISE_SYSTEM    the system of the noise stage                          [the best on validation]
#   NOISE_RATES     fractions of words whose head is corrupted (training, validation and test)  [0.3 1.0]
#   PYTHON          python with fairseq, syntax_nmt and the recipe's dependencies    [python]
#   SYSTEMS_CACHE   a directory keeping the table of systems between runs (stale once syntax_nmt changes)
#                   [a fresh one per run]
#   CPU             1: train and translate on the CPU                            [1 if torch sees no GPU]
#   MAX_TOKENS, LR, WARMUP, DROPOUT, MAX_UPDATE, ...: see examples/common/train.sh; BEAM, LENPEN, ...: generate.sh
# Outputs, with T = bpe$BPE_MERGES and P = $PRESET: WORK/download, WORK/work (tokenization cache),
# WORK/prep/T, WORK/annotated/T, WORK/data-bin/T (and T-SUFFIX: a target scheme's own data, e.g. T-tagged),
# WORK/checkpoints/P-T/SYSTEM/seedN,
# WORK/eval/P-T/{SPLIT/SYSTEM.seedN.*,results.md,results.json,*.png,translations/}, WORK/noise/P-T/...
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=configs.sh
source "$HERE/configs.sh"
PRESET=${PRESET:-cpu}
preset_args "$PRESET"

TGT_LANG=${TGT_LANG:-de}
TGT_SPACY_MODEL=${TGT_SPACY_MODEL:-}
WORK=${WORK:-multi30k_en_$TGT_LANG}
STAGES=${STAGES:-download prepare annotate binarize train evaluate}
BPE_MERGES=${BPE_MERGES:-$BPE_MERGES_DEFAULT}
if [[ ! "$BPE_MERGES" =~ ^[1-9][0-9]*$ ]]; then  # 0 or less: codes without merges, every word in characters
    echo "run_all.sh: error: BPE_MERGES must be a positive integer, got '$BPE_MERGES'" >&2
    exit 2
fi
SPACY_MODEL=${SPACY_MODEL:-en_core_web_sm}
SEEDS=${SEEDS:-1 2 3}
# distinct non-negative integers: fairseq-train takes each as --seed, and a repeated seed would train twice
if [[ ! " $SEEDS " =~ ^(\ +[0-9]+)+\ +$ ]] || [[ -n "$(tr ' ' '\n' <<< "$SEEDS" | grep . | sort | uniq -d)" ]]; then
    echo "run_all.sh: error: SEEDS must be distinct non-negative integers separated by spaces, got '$SEEDS'" >&2
    exit 2
fi
SIGNIFICANCE=${SIGNIFICANCE:-bs ar}
TRAIN_PERCENT=${TRAIN_PERCENT:-100}
TRAIN_SEED=${TRAIN_SEED:-1}
if [[ ! "$TRAIN_PERCENT" =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v p="$TRAIN_PERCENT" 'BEGIN { exit !(p > 0 && p <= 100) }' \
        || [[ ! "$TRAIN_SEED" =~ ^[0-9]+$ ]]; then
    echo "run_all.sh: error: TRAIN_PERCENT must be a number in (0, 100] and TRAIN_SEED a non-negative integer, got" \
         "'$TRAIN_PERCENT' and '$TRAIN_SEED'" >&2
    exit 2
fi
PROGRESS_SECONDS=${PROGRESS_SECONDS:-300}  # a long training prints its updates done and ETA this often
NOISE_RATES=${NOISE_RATES:-0.3 1.0}
PYTHON=${PYTHON:-python}
WORKERS=${WORKERS:-$(nproc)}
if [[ -z "${CPU:-}" ]]; then
    CPU=$("$PYTHON" -c 'import torch; print(0 if torch.cuda.is_available() else 1)')
fi
if [[ -z "${JOBS:-}" ]]; then JOBS=1; if [[ "$CPU" == 1 ]]; then JOBS=$(nproc); fi; fi
THREADS=${THREADS:-$(( $(nproc) / JOBS > 0 ? $(nproc) / JOBS : 1 ))}
export PYTHON PRESET CPU TGT_LANG TGT_SPACY_MODEL
# the table of systems is read once per system in this run (examples/common/systems.sh), in a directory of its own
# unless SYSTEMS_CACHE names one (kept: the tests read the table once for all their runs)
if [[ -z "${SYSTEMS_CACHE:-}" ]]; then
    SYSTEMS_CACHE=$(mktemp -d)
    trap 'rm -rf "$SYSTEMS_CACHE"' EXIT
fi
export SYSTEMS_CACHE

TAG="bpe$BPE_MERGES"
DOWNLOAD="$WORK/download"
PREP="$WORK/prep/$TAG"
ANN="$WORK/annotated/$TAG"
BIN="$WORK/data-bin/$TAG"
# (a target scheme with data of its own: $ANN-SUFFIX and $BIN-SUFFIX, made with TGT_SPACY_MODEL)
# the data the systems train on: BIN, or with TRAIN_PERCENT < 100 its training subset (valid and tests the same)
PART=""
if [[ "$TRAIN_PERCENT" != 100 ]]; then PART="-p$TRAIN_PERCENT"; fi
TRAIN_BIN="$BIN$PART"
CKPT="$WORK/checkpoints/$PRESET-$TAG$PART"
EVAL="$WORK/eval/$PRESET-$TAG$PART"
NOISE="$WORK/noise/$PRESET-$TAG$PART"
# binarized subset -> reference prefix in PREP (fairseq-preprocess names the test prefixes test, test1, test2)
declare -A SUBSET=([valid]=valid [test2016]=test [test2017]=test1 [mscoco]=test2)
SPLITS=${SPLITS:-valid test2016 test2017 mscoco}


# The systems: SYSTEMS, else the main comparison recorded for the preset, else the default comparison.
main_systems() {
    if [[ -n "${SYSTEMS:-}" ]]; then system_names "$SYSTEMS"; return; fi
    if [[ -n "${MAIN_SYSTEMS_DEFAULT:-}" ]]; then echo "$MAIN_SYSTEMS_DEFAULT"; return; fi
    system_names default
}

if has_stage download; then
    stage_start download
    "$PYTHON" "$HERE/download.py" --dest "$DOWNLOAD" ${MULTI30K_DIR:+--local "$MULTI30K_DIR"} \
        ${MANIFEST:+--manifest "$MANIFEST"}
    stage_end download
fi

if has_stage prepare; then
    stage_start prepare
    "$PYTHON" "$HERE/prepare.py" --download-dir "$DOWNLOAD" --work-dir "$WORK/work" --out-dir "$PREP" \
        --bpe-merges "$BPE_MERGES" --workers "$WORKERS" --tgt-lang "$TGT_LANG"
    stage_end prepare
fi

if has_stage annotate; then
    stage_start annotate
    # how prepare.py processed the text (sacremoses; no -a, no escaping), recorded for inference on raw text
    MOSES_SETTINGS="lang=en,normalize=1,aggressive_dash_splits=0,escape=0"
    mkdir -p "$ANN"
    for split in train valid test2016 test2017 mscoco; do  # one after the other: the parse speed in each log is the parser's own
        status=0
        syntax-nmt-annotate --source "$PREP/$split.en" --target "$PREP/$split.$TGT_LANG" --src-lang en --tgt-lang "$TGT_LANG" \
            --pretokenized --spacy-model "$SPACY_MODEL" --subword bpe --subword-model "$PREP/bpe.codes" \
            --output-prefix "$ANN/$split" --moses-settings "$MOSES_SETTINGS" --n-process 1 2>&1 \
            | tee "$ANN.$split.log" | { grep -iE "summary|error|warn" || true; } || status=$?
        if (( status != 0 )); then
            # e.g. files annotated before with another SPACY_MODEL: the annotator refuses to mix them
            echo "run_all.sh: error: annotating $split failed (status $status): see $ANN.$split.log; if $ANN was" \
                 "made with other settings (another SPACY_MODEL), remove it (or choose another WORK) and run again" >&2
            exit 1
        fi
        if [[ -n "$TGT_SPACY_MODEL" ]]; then
            # the target's own parse, its streams aligned with the same subwords (ANN/SPLIT.tgt.*)
            status=0
            syntax-nmt-annotate --source "$PREP/$split.$TGT_LANG" --src-lang "$TGT_LANG" --pretokenized \
                --spacy-model "$TGT_SPACY_MODEL" --subword bpe --subword-model "$PREP/bpe.codes" \
                --output-prefix "$ANN/$split.tgt" --moses-settings "lang=$TGT_LANG,normalize=1,aggressive_dash_splits=0,escape=0" \
                --n-process 1 2>&1 | tee "$ANN.$split.tgt.log" | { grep -iE "summary|error|warn" || true; } || status=$?
            if (( status != 0 )); then
                echo "run_all.sh: error: annotating the target of $split failed (status $status): see $ANN.$split.tgt.log" >&2
                exit 1
            fi
        fi
    done
    if [[ -n "$TGT_SPACY_MODEL" ]]; then
        # the copies of the data that the target schemes with data of their own make ($ANN-SUFFIX: e.g. the target
        # interleaved with its POS tags in $ANN-tagged), the source beside it
        "$PYTHON" -m syntax_nmt.targets write-data --annotated "$ANN" --splits "train valid test2016 test2017 mscoco" \
            --src-lang en --tgt-lang "$TGT_LANG" > /dev/null
    fi
    stage_end annotate
fi

# check_parses: stop, naming the change, when the annotations were made with another parser than SPACY_MODEL (or
# TGT_SPACY_MODEL): a run that skips the annotate stage would train and report the old parses under the new name
check_parses() {
    local prefix
    for prefix in "$ANN/train" "$BIN"; do
        "$PYTHON" -m syntax_nmt.recipes.markers annotated "$prefix" --setting SPACY_MODEL --model "$SPACY_MODEL" \
            || exit 2
    done
    if [[ -n "$TGT_SPACY_MODEL" ]]; then
        "$PYTHON" -m syntax_nmt.recipes.markers annotated "$ANN/train.tgt" --setting TGT_SPACY_MODEL \
            --model "$TGT_SPACY_MODEL" || exit 2
    fi
}
if has_stage binarize || has_stage train || has_stage evaluate || has_stage noise; then check_parses; fi

if has_stage binarize; then
    stage_start binarize
    if [[ -f "$BIN/.done" && -n "$(find "$ANN" -type f -newer "$BIN/.done" -print -quit)" ]]; then
        echo "$ANN changed after $BIN was made: binarizing again"
        rm -f "$BIN/.done"
    fi
    # the target streams that the systems run read from BIN, as their target schemes declare (systems.sh)
    streams=""
    if [[ -n "$TGT_SPACY_MODEL" ]]; then names=$(main_systems); streams=$(target_streams "$BIN" $names); fi
    if [[ -f "$BIN/.done" ]] && lacks_streams "$BIN" "$streams"; then
        echo "the systems read the target streams $streams, which $BIN lacks: binarizing again"
        rm -f "$BIN/.done"
    fi
    if [[ -f "$BIN/.done" ]]; then
        echo "$BIN is complete"
    else
        suffixes=()
        if [[ -n "$TGT_SPACY_MODEL" ]]; then mapfile -t suffixes < <("$PYTHON" -m syntax_nmt.targets data-suffixes); fi
        rm -rf "$BIN"
        for suffix in "${suffixes[@]}"; do rm -rf "${BIN:?}-$suffix"; done
        syntax-nmt-binarize --source-lang en --target-lang "$TGT_LANG" --trainpref "$ANN/train" --validpref "$ANN/valid" \
            --testpref "$ANN/test2016,$ANN/test2017,$ANN/mscoco" --destdir "$BIN" --joined-dictionary \
            --workers "$WORKERS" ${streams:+--target-streams "$streams"}
        for suffix in "${suffixes[@]}"; do  # a target scheme's own data: text only, for its systems
            syntax-nmt-binarize --source-lang en --target-lang "$TGT_LANG" --trainpref "$ANN-$suffix/train" \
                --validpref "$ANN-$suffix/valid" --testpref "$ANN-$suffix/test2016,$ANN-$suffix/test2017,$ANN-$suffix/mscoco" \
                --destdir "$BIN-$suffix" --joined-dictionary --workers "$WORKERS" --streams ""
            touch "$BIN-$suffix/.done"
        done
        touch "$BIN/.done"
    fi
    if [[ -n "$PART" ]]; then  # the training subset: the same lines of every stream, binarized with BIN's dictionaries
        if [[ -f "$TRAIN_BIN/.done" && ( "$BIN/.done" -nt "$TRAIN_BIN/.done" ) ]]; then rm -f "$TRAIN_BIN/.done"; fi
        if [[ -f "$TRAIN_BIN/.done" ]] && lacks_streams "$TRAIN_BIN" "$streams"; then rm -f "$TRAIN_BIN/.done"; fi
        if [[ -f "$TRAIN_BIN/.done" ]] && "$PYTHON" -c 'import sys; from syntax_nmt.data.subsample import is_done
sys.exit(0 if is_done(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])) else 1)' \
                "$ANN/train" "$ANN$PART/train" "$TRAIN_PERCENT" "$TRAIN_SEED"; then
            echo "$TRAIN_BIN is complete"
        else
            "$PYTHON" -m syntax_nmt.data.subsample --prefix "$ANN/train" --out-prefix "$ANN$PART/train" \
                --percent "$TRAIN_PERCENT" --seed "$TRAIN_SEED"
            rm -rf "$TRAIN_BIN"
            syntax-nmt-binarize --source-lang en --target-lang "$TGT_LANG" --trainpref "$ANN$PART/train" \
                --validpref "$ANN/valid" --testpref "$ANN/test2016,$ANN/test2017,$ANN/mscoco" --destdir "$TRAIN_BIN" \
                --joined-dictionary --srcdict "$BIN/dict.en.txt" --workers "$WORKERS" \
                ${streams:+--target-streams "$streams"}
            cp "$ANN$PART/train.subsample.json" "$TRAIN_BIN/subsample.json"
            touch "$TRAIN_BIN/.done"
        fi
    fi
    stage_end binarize
fi

# logged_update LOG: the newest update in a training's log: fairseq's in-epoch lines ("num_updates=N", every
# --log-interval updates), its end-of-epoch lines ("num_updates N"), or the checkpoint it resumed from ("@ N updates)")
logged_update() {
    grep -oE 'num_updates[ =][0-9]+|@ [0-9]+ updates' "$1" 2>/dev/null | tail -1 | grep -oE '[0-9]+' || true
}

# train_one DATA SAVEDIR SYSTEM SEED: one training, skipped when done. Each attempt (a resumption too) appends its
# wall and CPU seconds, the update it started from, the device, threads, library versions and settings to
# SAVE/parts.jsonl; SAVE/.done sums the parts (syntax_nmt/recipes/training_record.py). A finished training made
# with other settings (MAX_UPDATE raised, say) stops the run, naming the change.
train_one() {
    local data=$1 save=$2 system=$3 seed=$4
    local settings=()
    mapfile -t settings < <(training_settings "$system" "$seed")
    if [[ -f "$save/.done" ]]; then
        stale_training "$data" "$save" || return 1
        "$PYTHON" -m syntax_nmt.recipes.training_record check "$save" "${settings[@]/#/--setting=}" || return 1
        return 0
    fi
    mkdir -p "$save"
    local t0=$SECONDS status=0 device=cuda
    if [[ "$CPU" == 1 ]]; then device=cpu; fi
    # the subshell's status is the training's: errexit does not act inside a subshell, so the status is carried
    # past `times` by hand (a failed, killed or unresumable training is never marked done); the attempt is recorded
    # from within it, in the training's environment: the record's threads are torch's there (training_record.py)
    (
        export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
        status=0
        DATA="$data" SAVE="$save" SEED="$seed" bash "$HERE/train.sh" "$system" --num-workers 0 > "$save/stdout.log" 2>&1 \
            || status=$?
        times > "$save/times.txt"  # the second line: CPU seconds of the training processes (user, system)
        "$PYTHON" -m syntax_nmt.recipes.training_record part "$save" --wall "$((SECONDS - t0))" \
            --times "$save/times.txt" --status "$status" --log "$save/stdout.log" --device "$device" --data "$data" \
            "${settings[@]/#/--setting=}" || true
        exit "$status"
    ) &
    local pid=$! last=$SECONDS first=""
    local max_update
    max_update=$(grep -m1 '^MAX_UPDATE=' <<< "$(printf '%s\n' "${settings[@]}")" | cut -d= -f2)
    while kill -0 "$pid" 2>/dev/null; do  # progress every PROGRESS_SECONDS: updates done / total, ETA
        sleep 1
        if (( SECONDS - last >= PROGRESS_SECONDS )); then
            last=$SECONDS
            local now
            now=$(logged_update "$save/stdout.log")
            if [[ -n "$now" ]]; then
                if [[ -z "$first" ]]; then first="$now $SECONDS"; fi
                read -r u0 s0 <<< "$first"
                local eta="?"
                if (( now > u0 && max_update > 0 )); then
                    eta="$(( (SECONDS - s0) * (max_update - now) / (now - u0) / 60 )) min at most"
                fi
                echo "  $system seed $seed: update $now of ${max_update:-?} ($((SECONDS - t0)) s; ETA $eta)"
            fi
        fi
    done
    wait "$pid" || status=$?
    if (( status != 0 )); then
        echo "run_all.sh: error: training $system seed $seed failed (status $status): see $save/stdout.log" >&2
        return 1
    fi
    "$PYTHON" -m syntax_nmt.recipes.training_record done "$save" || return 1
    echo "  trained $system seed $seed in $((SECONDS - t0)) s"
}

# training_settings SYSTEM SEED: NAME=VALUE lines of what a training was made with (the environment's value, else
# the preset's), recorded in its .done and compared when the run meets a finished training again.
training_settings() {
    local name value
    echo "SYSTEM=$1"; echo "SEED=$2"; echo "PRESET=$PRESET"
    if [[ -n "$PART" ]]; then echo "TRAIN_PERCENT=$TRAIN_PERCENT"; echo "TRAIN_SEED=$TRAIN_SEED"; fi
    for name in MAX_TOKENS BATCH_TOKENS UPDATE_FREQ LR WARMUP WARMUP_INIT_LR MAX_UPDATE MAX_EPOCH PATIENCE DROPOUT \
            ATTENTION_DROPOUT LABEL_SMOOTHING CLIP_NORM SAVE_INTERVAL AVERAGE EVAL_BLEU TINY; do
        local default="${name}_DEFAULT"
        value=${!name:-${!default:-}}
        echo "$name=$value"
    done
}

# stale_training DATA SAVE: fails, saying so, when the data directory was made again after SAVE's training ended.
stale_training() {
    if [[ "$1/.done" -nt "$2/.done" ]]; then
        echo "run_all.sh: error: $2 was trained on an older $1 (made again since): remove $2 to train it again" >&2
        return 1
    fi
}

# run_jobs FUNCTION: read lines of arguments, run FUNCTION on each, JOBS at a time.
run_jobs() {
    local running=0 status=0 line
    while read -r -a line; do
        "$1" "${line[@]}" &
        running=$((running + 1))
        if (( running >= JOBS )); then wait -n || status=1; running=$((running - 1)); fi
    done
    while (( running > 0 )); do wait -n || status=1; running=$((running - 1)); done
    return $status
}

# evaluate_one DATA SAVE EVALDIR SYSTEM SEED: translate every split, score it and, for a system that predicts target
# tags, measure them; a split is skipped when its score and tags are there, valid and newer than the training's end
# (done together or not at all: a split whose tags failed, or whose marker is cut short, is done again;
# syntax_nmt/recipes/markers.py).
evaluate_one() {
    local data=$1 save=$2 out=$3 system=$4 seed=$5 split todo factors=() settings=()
    if [[ ! -f "$save/.done" ]]; then  # never score a checkpoint of a training that did not end
        echo "run_all.sh: error: $system seed $seed has not finished training ($save/.done is missing): run the" \
             "train stage first" >&2
        return 1
    fi
    stale_training "$data" "$save" || return 1
    load_system "$system" || return 1
    if [[ "$SYSTEM_TAGS" == 1 && -n "$TGT_SPACY_MODEL" ]]; then factors=(--factors); fi
    mapfile -t settings < <(generate_settings)
    todo=$("$PYTHON" -m syntax_nmt.recipes.markers todo --after "$save/.done" --eval "$out" --name "$system.seed$seed" \
        --splits "$SPLITS" "${factors[@]}" "${settings[@]/#/--setting=}") || return 1
    for split in $todo; do
        DATA="$data" SAVE="$save" PREP="$PREP" EVAL="$out/$split" GEN_SUBSET="${SUBSET[$split]}" REF="$PREP/$split" \
            NAME="$system.seed$seed" OMP_NUM_THREADS=$THREADS bash "$HERE/generate.sh" "$system" > /dev/null \
            || { echo "translating $split with $system seed $seed failed: see $out/$split/$system.seed$seed.gen" >&2
                 return 1; }
        "$PYTHON" -m syntax_nmt.recipes.markers record --eval "$out" --split "$split" --name "$system.seed$seed" \
            "${settings[@]/#/--setting=}" || return 1
    done
}

# generate_settings: NAME=VALUE lines of what the translations are made with (the environment's value, else the
# preset's), recorded beside each split's score: a split translated with other settings is made again.
generate_settings() {
    local name value
    for name in CHECKPOINT BEAM LENPEN MAX_LEN_A MAX_LEN_B SUBWORD GEN_ARGS TGT_SPACY_MODEL TINY; do
        local default="${name}_DEFAULT"
        value=${!name:-${!default:-}}
        echo "$name=$value"
    done
}

# report EVALDIR SYSTEMS CHECKPOINTS TITLE: the multi-seed tables, paired tests and charts; the translations behind
# them gzipped in EVALDIR/translations (to keep or publish: --translations recomputes every table from them)
report() {
    "$PYTHON" -m syntax_nmt.recipes.report --eval "$1" --systems "$2" --seeds "$SEEDS" --splits "$SPLITS" \
        --refs "$PREP" --tests "$SIGNIFICANCE" --checkpoints "$3" --title "$4" --pack "$1/translations" \
        --tgt-lang "$TGT_LANG"
}

# data_of SYSTEM: the data directory of a system (its target scheme's own, BIN-SUFFIX, if the scheme has one: the
# interleaved target for interleaved tags); fails, saying so, for a target-side system without TGT_SPACY_MODEL, or
# one whose target streams the data lacks (binarized before the run had that system).
data_of() {
    load_system "$1" || return 1
    if [[ -n "$SYSTEM_TARGET" && -z "$TGT_SPACY_MODEL" ]]; then
        echo "run_all.sh: error: $1 predicts target syntax: set TGT_SPACY_MODEL (the target's parser)" >&2
        return 1
    fi
    if [[ -z "$SYSTEM_DATA" && -d "$TRAIN_BIN" ]] && lacks_streams "$TRAIN_BIN" "$SYSTEM_TARGET_STREAMS"; then
        echo "run_all.sh: error: $1 reads the target streams $SYSTEM_TARGET_STREAMS, which $TRAIN_BIN lacks: run the" \
             "binarize stage with it among SYSTEMS (it binarizes them)" >&2
        return 1
    fi
    if [[ -n "$SYSTEM_DATA" ]]; then
        if [[ -n "$PART" ]]; then
            echo "run_all.sh: error: $1 trains on data of its own target scheme: TRAIN_PERCENT is not supported" >&2
            return 1
        fi
        echo "$BIN-$SYSTEM_DATA"
    else
        echo "$TRAIN_BIN"
    fi
}

if has_stage train; then
    stage_start train
    names=$(main_systems)  # an unknown name stops the run here
    read -r -a systems <<< "$names"
    declare -A DATA_OF=()
    for system in "${systems[@]}"; do DATA_OF[$system]=$(data_of "$system"); done
    echo "systems: ${systems[*]}; seeds: $SEEDS; $JOBS at a time with $THREADS thread(s) each"
    for seed in $SEEDS; do for system in "${systems[@]}"; do
        echo "${DATA_OF[$system]} $CKPT/$system/seed$seed $system $seed"
    done; done | run_jobs train_one
    stage_end train
fi

if has_stage evaluate; then
    stage_start evaluate
    names=$(main_systems)
    read -r -a systems <<< "$names"
    declare -A DATA_OF=()
    for system in "${systems[@]}"; do DATA_OF[$system]=$(data_of "$system"); done
    # the threads change the floating-point sums, hence the exact translations and scores (README.md, "Stages")
    echo "systems: ${systems[*]}; seeds: $SEEDS; $JOBS at a time with $THREADS thread(s) each"
    for seed in $SEEDS; do for system in "${systems[@]}"; do
        echo "${DATA_OF[$system]} $CKPT/$system/seed$seed $EVAL $system $seed"
    done; done | run_jobs evaluate_one
    # the parsers as recorded with the parses (name and version; not the path a pipeline was loaded from)
    parsers="parser $("$PYTHON" -m syntax_nmt.recipes.markers parser "$BIN" --default "$SPACY_MODEL")"
    if [[ -n "$TGT_SPACY_MODEL" ]]; then
        parsers+=", target parser $("$PYTHON" -m syntax_nmt.recipes.markers parser "$ANN/train.tgt" \
            --default "$TGT_SPACY_MODEL")"
    fi
    report "$EVAL" "${systems[*]}" "$CKPT" "Multi30k en-$TGT_LANG, preset $PRESET, BPE $BPE_MERGES, $parsers"
    # BLEU by source length on the first test set, first seed (SG-Net paper, Fig. 5)
    first=${SEEDS%% *}
    read -r -a splits <<< "$SPLITS"
    lsplit=${splits[1]:-${splits[0]}}
    gens=()
    for system in "${systems[@]}"; do  # not a target scheme's own data (the interleaved target: its hypotheses hold tags)
        if [[ "${DATA_OF[$system]}" == "$TRAIN_BIN" ]]; then gens+=(--system "$system=$EVAL/$lsplit/$system.seed$first.gen"); fi
    done
    if (( ${#gens[@]} )); then
        syntax-nmt-analyze length --data "$TRAIN_BIN" --split "${SUBSET[$lsplit]}" --ref-raw "$PREP/$lsplit.raw.$TGT_LANG" \
            --out "$EVAL/analysis" "${gens[@]}" > /dev/null
    else
        echo "no BLEU by length: every system's target is data of its target scheme (interleaved with tags)"
    fi
    echo "results: $EVAL/results.md"
    stage_end evaluate
fi

if has_stage noise; then
    stage_start noise
    system=${NOISE_SYSTEM:-$("$PYTHON" -m syntax_nmt.recipes.report --eval "$EVAL" --best-on-valid)}
    echo "noise: $system with $NOISE_RATES of its training, validation and test heads corrupted; seeds: $SEEDS;" \
         "$JOBS at a time with $THREADS thread(s) each"
    for rate in $NOISE_RATES; do
        data="$NOISE/data-bin/r$rate"
        if [[ ! -f "$data/noise-head.json" ]]; then  # the copy and its record appear together
            # --overwrite: a copy without its record (left by an older syntax-nmt) is made again
            syntax-nmt-analyze corrupt --data "$BIN" --out "$data" --stream head --rate "$rate" --overwrite \
                --splits train,valid,test,test1,test2 >&2  # stdout feeds run_jobs
        fi
        for seed in $SEEDS; do echo "$data $NOISE/checkpoints/r$rate/$system/seed$seed $system $seed"; done
    done | run_jobs train_one
    for rate in $NOISE_RATES; do for seed in $SEEDS; do
        echo "$NOISE/data-bin/r$rate $NOISE/checkpoints/r$rate/$system/seed$seed $NOISE/eval/r$rate $system $seed"
    done; done | run_jobs evaluate_one
    "$PYTHON" -m syntax_nmt.recipes.report --noise "$NOISE" --eval "$EVAL" --system "$system" --rates "$NOISE_RATES" \
        --seeds "$SEEDS" --splits "$SPLITS" --refs "$PREP" --tests "$SIGNIFICANCE" --pack "$NOISE/translations" \
        --tgt-lang "$TGT_LANG"
    stage_end noise
fi
