#!/usr/bin/env bash
# The trainings of "where does syntax help a well-trained model?" (issue 54) on a CPU, in two lanes of one torch
# thread each, niced, resumable: run it again after a stop and every stage skips what is done, every training resumes
# from its checkpoint_last.pt. The recipe runs from a snapshot of examples/ and scripts/ (bash reads a script while it
# runs: editing run_all.sh in the checkout would change what a running lane does next).
#
#   ROOT=/work/runs MULTI30K_DIR=~/multi30k-dataset SPACY_MODEL=en_core_web_sm bash examples/multi30k_en_de/convergence_queue.sh data
#   ROOT=/work/runs bash examples/multi30k_en_de/convergence_queue.sh A &   # 1x seed 1, then PRESET=gpu seeds 2 3, then item 4
#   ROOT=/work/runs bash examples/multi30k_en_de/convergence_queue.sh B &   # 4x with dropout 0.3
#   ROOT=/work/runs bash examples/multi30k_en_de/convergence_queue.sh C &   # the data sizes (10 %, 25 %)
#
# ROOT holds everything (ROOT/m30k: the data and the trainings of the presets; ROOT/m30k-4x-drop03, ROOT/m30k-data:
# the variants, sharing ROOT/m30k's data). PYTHON and PATH must give the environment with fairseq and syntax_nmt.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT=${ROOT:?set ROOT, the folder of the runs (outside the checkout)}
LANE=${1:?usage: convergence_queue.sh data|A|B|C}
export CPU=1 JOBS=1 THREADS=1 PROGRESS_SECONDS=${PROGRESS_SECONDS:-600}
SNAP=$ROOT/snapshot-$LANE
rm -rf "$SNAP" && mkdir -p "$SNAP" && cp -r "$HERE/../../examples" "$HERE/../../scripts" "$SNAP"/
R=$SNAP/examples/multi30k_en_de/run_all.sh
export SYSTEMS_CACHE=$ROOT/systems-cache-$LANE  # the table of systems, read again from this syntax_nmt
rm -rf "$SYSTEMS_CACHE" && mkdir -p "$SYSTEMS_CACHE"
variant() {  # variant WORK: a WORK sharing the data of ROOT/m30k
    mkdir -p "$1"
    for d in download work prep annotated data-bin; do [[ -e "$1/$d" ]] || ln -s "$ROOT/m30k/$d" "$1/$d"; done
}
run() { echo "=== $(date -u +%FT%TZ) $*"; env "$@" nice -n 19 bash "$R"; echo "=== $(date -u +%FT%TZ) status $?"; }
case "$LANE" in
data)
    run WORK="$ROOT/m30k" STAGES="download prepare annotate binarize"
    ;;
A)
    # 1x (cpu preset) seed 1 of transformer and lisa: the real-data export check (issue 55)
    run WORK="$ROOT/m30k" PRESET=cpu STAGES="train evaluate" SYSTEMS="transformer lisa" SEEDS=1
    # item 1: the converged point (PRESET=gpu), seeds 2 and 3 of transformer and lisa
    run WORK="$ROOT/m30k" PRESET=gpu STAGES="train evaluate" SYSTEMS="transformer lisa" SEEDS="2 3"
    # item 4: the mission's methods at convergence, seed 1
    run WORK="$ROOT/m30k" PRESET=gpu STAGES="train evaluate" SYSTEMS="transformer syntax-infused sgnet" SEEDS=1
    ;;
B)
    # item 2 (a): the 4x budget with dropout 0.3 (the converged recipe's value), seeds 1 and 2
    variant "$ROOT/m30k-4x-drop03"
    run WORK="$ROOT/m30k-4x-drop03" PRESET=cpu MAX_UPDATE=6400 DROPOUT=0.3 STAGES="train evaluate" \
        SYSTEMS="transformer lisa" SEEDS="1 2"
    ;;
C)
    # item 3: data size, trained to convergence: the gpu preset with the cpu preset's batch and warmup (fixed by the
    # issue before any run)
    variant "$ROOT/m30k-data"
    for p in 10 25; do
        run WORK="$ROOT/m30k-data" PRESET=gpu TRAIN_PERCENT=$p TRAIN_SEED=1 MAX_TOKENS=2048 BATCH_TOKENS=2048 \
            WARMUP=400 MAX_UPDATE=32000 STAGES="binarize train evaluate" SYSTEMS="transformer lisa" SEEDS="1 2 3"
    done
    ;;
*)
    echo "convergence_queue.sh: error: the lane is data, A, B or C, got '$LANE'" >&2
    exit 2
    ;;
esac
