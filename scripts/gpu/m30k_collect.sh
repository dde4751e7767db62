#!/usr/bin/env bash
# Wait for the trainings m30k_gpu_preset.sh started until DEADLINE seconds after T0 (default: now), then copy what
# they left into $OUT (see m30k_gpu_preset.sh). Run it again in a later call on the warm machine to wait longer.
# A call brings back at most 8 files and 64 MiB: two checkpoints (2 pieces each) and the logs; with more trainings,
# COLLECT="SYSTEM.sSEED ..." names the ones to bring in this call (default: the first two finished).
DEADLINE=${1:-540}; T0=${T0:-$(date +%s)}
export PYTHONPATH=${PYTHONPATH:-/tmp/site} PATH=/tmp/site/bin:$PATH
C=/tmp/m30k/checkpoints/gpu-bpe14000
if [[ -n "${TRAIN_PERCENT:-}" && "$TRAIN_PERCENT" != 100 ]]; then C=$C-p$TRAIN_PERCENT; fi  # run_all.sh's P-T-pPERCENT
SYSTEMS=${SYSTEMS:-$(ls $C 2>/dev/null | tr '\n' ' ')}
SEEDS=${SEEDS:-$(ls $C/*/ 2>/dev/null | grep -o 'seed[0-9]*' | sort -u | tr -d seed | tr '\n' ' ')}
while :; do
    line="t=$(( $(date +%s) - T0 ))s" all=1
    for s in $SYSTEMS; do for n in $SEEDS; do
        u=$(grep -oE 'num_updates [0-9]+' $C/$s/seed$n/train.log 2>/dev/null | tail -1 | cut -d' ' -f2)
        line="$line | $s.$n ${u:-0}"
        if [[ -f $C/$s/seed$n/.done ]]; then line="$line done"; else all=0; fi
    done; done
    echo "$line"
    (( all )) && break
    pgrep -f multi30k_en_de/run_all.sh > /dev/null || { echo "the recipe is no longer running"; break; }
    (( $(date +%s) - T0 >= DEADLINE )) && break
    sleep 20
done
brought=0
for s in $SYSTEMS; do for n in $SEEDS; do
    d=$C/$s/seed$n
    [[ -f $d/.done && -f $d/checkpoint_avg.pt ]] || continue
    if [[ -n "${COLLECT:-}" ]]; then [[ " $COLLECT " == *" $s.s$n "* ]] || continue
    elif (( brought >= 2 )); then echo "not brought in this call: $s.s$n (COLLECT=$s.s$n)"; continue; fi
    brought=$((brought + 1))
    python3 - "$d/checkpoint_avg.pt" "$OUT/$s.s$n.avg.pt" <<'PY'
import sys, torch
import syntax_nmt.checkpoint_compat  # noqa: F401  weights-only loading of fairseq checkpoints
state = torch.load(sys.argv[1], map_location="cpu")
state["last_optimizer_state"] = None  # not needed to translate
torch.save(state, sys.argv[2])
PY
    (cd "$OUT" && split -b 15M "$s.s$n.avg.pt" "$s.s$n.avg.pt.part-" && rm "$s.s$n.avg.pt")
done; done
tar czf "$OUT/m30k-logs.tar.gz" -C /tmp/m30k --exclude='*.pt' checkpoints /tmp/m30k-train.log 2>/dev/null
ls -la "$OUT"
