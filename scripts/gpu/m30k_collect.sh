#!/usr/bin/env bash
# Wait for the trainings m30k_gpu_preset.sh (or m30k_issue54.sh) started until DEADLINE seconds after T0 (default:
# now), then copy what they left into $OUT (see m30k_gpu_preset.sh). Run it again in a later call on the warm machine
# to wait longer and bring the rest.
# A call brings back at most 8 files and 64 MiB: a finished training's averaged checkpoint without its optimizer state
# is about 12 MB (Transformer-Tiny, fp32; the tied embeddings that averaging unties stored once again), so this brings finished ones in the order of RUNS (default SYSTEMS x SEEDS,
# "SYSTEM.sSEED ...") while they fit in 60 MiB and 7 files (the 8th: the logs). COLLECT="SYSTEM.sSEED ..." limits it
# to those. LAST=1: a training that has not finished by the deadline brings its checkpoint_last.pt instead (with its
# optimizer state, about 37 MB: resume it elsewhere; its training record says which part ran where).
DEADLINE=${1:-540}; T0=${T0:-$(date +%s)}
export PYTHONPATH=${PYTHONPATH:-/tmp/site} PATH=/tmp/site/bin:$PATH
C=/tmp/m30k/checkpoints/gpu-bpe14000
if [[ -n "${TRAIN_PERCENT:-}" && "$TRAIN_PERCENT" != 100 ]]; then C=$C-p$TRAIN_PERCENT; fi  # run_all.sh's P-T-pPERCENT
if [[ -z "${RUNS:-}" ]]; then
    SYSTEMS=${SYSTEMS:-$(ls $C 2>/dev/null | tr '\n' ' ')}
    SEEDS=${SEEDS:-$(ls $C/*/ 2>/dev/null | grep -o 'seed[0-9]*' | sort -u | tr -d seed | tr '\n' ' ')}
    RUNS=$(for n in $SEEDS; do for s in $SYSTEMS; do echo -n "$s.s$n "; done; done)
fi
while :; do
    line="t=$(( $(date +%s) - T0 ))s" all=1
    for r in $RUNS; do
        d=$C/${r%.s*}/seed${r##*.s}
        u=$(grep -oE 'num_updates [0-9]+' $d/train.log 2>/dev/null | tail -1 | cut -d' ' -f2)
        line="$line | $r ${u:-0}"
        if [[ -f $d/.done ]]; then line="$line done"; else all=0; fi
    done
    echo "$line"
    (( all )) && break
    pgrep -f multi30k_en_de/run_all.sh > /dev/null || { echo "the recipe is no longer running"; break; }
    (( $(date +%s) - T0 >= DEADLINE )) && break
    sleep 20
done
bytes=0 files=0 limit=$((60 * 1024 * 1024))
bring() {  # bring SRC NAME: SRC without its optimizer state (unless KEEP_OPT=1) as NAME, in pieces of 15 MiB
    KEEP_OPT=${KEEP_OPT:-0} python3 - "$1" "$OUT/$2" <<'PY'
import os, sys, torch
import syntax_nmt.checkpoint_compat  # noqa: F401  weights-only loading of fairseq checkpoints
state = torch.load(sys.argv[1], map_location="cpu")
if os.environ["KEEP_OPT"] != "1":
    state["last_optimizer_state"] = None  # not needed to translate
# averaging unties the tied embeddings (each key averaged apart: 26 MB, not 12): equal tensors share one storage again
import hashlib
seen = {}
for k, v in list(state["model"].items()):
    h = (v.dtype, tuple(v.shape), hashlib.sha256(v.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest())
    state["model"][k] = seen.setdefault(h, v)
torch.save(state, sys.argv[2])
PY
    local size pieces
    size=$(stat -c %s "$OUT/$2"); pieces=$(( (size + 15728639) / 15728640 ))
    if (( bytes + size > limit || files + pieces > 7 )); then
        echo "not brought in this call (no room): $2"; rm -f "$OUT/$2"; return 1
    fi
    (cd "$OUT" && split -b 15M "$2" "$2.part-" && rm "$2")
    bytes=$((bytes + size)) files=$((files + pieces))
    echo "brought $2 ($size bytes, $pieces piece(s))"
}
for r in $RUNS; do
    d=$C/${r%.s*}/seed${r##*.s}
    if [[ -n "${COLLECT:-}" && " $COLLECT " != *" $r "* ]]; then continue; fi
    if [[ -f $d/.done && -f $d/checkpoint_avg.pt ]]; then
        bring "$d/checkpoint_avg.pt" "$r.avg.pt"
    elif [[ "${LAST:-0}" == 1 && -f $d/checkpoint_last.pt ]]; then
        KEEP_OPT=1 bring "$d/checkpoint_last.pt" "$r.last.pt"
    fi
done
tar czf "$OUT/m30k-logs.tar.gz" -C /tmp/m30k --exclude='*.pt' checkpoints /tmp/m30k-train*.log 2>/dev/null
ls -la "$OUT"
