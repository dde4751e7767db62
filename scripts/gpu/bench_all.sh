#!/usr/bin/env bash
# Issue 49, item 4: one device call measures everything the GPU targets need, in stages, each under `timeout`, so a
# stage that runs long is cut and the rest still runs (the whole script ends within DEADLINE, 560 s, of its start):
#   1. enc-bf16    the encoders' table (python -m syntax_nmt.bench.length), bf16, T = 64 256 512, GPU peak memory
#   2. model-fp16  the whole models of every system of the table (python -m syntax_nmt.bench --fp16): fairseq-train
#                  words/s and fairseq-generate --fp16 sentences/s as ratios to the transformer of the same run,
#                  Transformer-base width (512, 8 heads, 6 + 6 layers), WMT-like lines (--join 1.0), 60 updates
#   3. enc-fp32    the encoders' table in fp32, T = 64 256
#   4. enc-compile the encoders with their layers compiled (--compile: --syntax-compile), bf16, T = 64 256, one
#                  process per method (syntax_bert first) so that each that finishes is kept
#   5. model-compile  if 100 s are left: the whole model of transformer and syntax_bert with --compile (--fp16)
# Every stage's JSON goes to $OUT as soon as it ends (model-fp16 after every system: a cut run keeps the systems it
# measured), its log into $OUT/logs.tar.gz. What comes back (7 files): bench-all.log (the tee below), enc-bf16.json,
# model-fp16.json, enc-fp32.json, enc-compile-bf16.json, model-compile-fp16.json, logs.tar.gz.
# Not measured here: the whole models' training memory (MEMORY=1 measures it: a process per system, about 10 s each).
#
# Here first: commit, then `bash ../shared/gpu/prepare.sh` from the project root (it downloads fairseq's wheels from the
# package registry and builds this project's wheel from HEAD into .gpu/whl). Then, one call (the checkout that
# travels must hold this commit):
#
#   run(command="bash scripts/gpu/bench_all.sh 2>&1 | tee $OUT/bench-all.log", carry=[".gpu"], timeout_s=600)
#
# then give_back(). Back here, with the reply's files_at:
#
#   python -m syntax_nmt.bench.gpu_targets $files_at/*.json --out results/gpu/issue49
#
# prints one table per measure against issue 49's targets (met / SHORT / not measured, with the device and
# precision of every figure) and writes results/gpu/issue49/gpu-targets.{md,json}; keep the JSON files beside them.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-$PWD/.gpu/out}
T0=$(date +%s); DEADLINE=${DEADLINE:-560}; RESERVE=10
W=/tmp/gpu-bench; LOGS=$W/logs
mkdir -p "$OUT" "$LOGS"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$LOGS/device.txt"
python3 -c "import torch, fairseq, syntax_nmt; print('torch', torch.__version__, 'fairseq', fairseq.__version__,
torch.cuda.get_device_name())" 2>&1 | tee -a "$LOGS/device.txt" || exit 1

left() { echo $(( DEADLINE - RESERVE - ($(date +%s) - T0) )); }
pack() {  # the logs so far (stages, benches, fairseq-train / -generate), without data or checkpoints
    (cd "$W" && find . -name data-bin -prune -o \( -name '*.log' -o -name '*.txt' -o -name '*.tsv' \) -print |
        tar czf "$OUT/logs.tar.gz" -T -) 2>/dev/null
}
# stage NAME CAP COMMAND...: COMMAND under `timeout` for at most CAP seconds, and never past the deadline; its
# output in $LOGS/NAME.log, its end printed here; skipped where under 20 s are left
stage() {
    local name=$1 cap=$2 t s rc; shift 2
    t=$(left); (( t > cap )) && t=$cap
    if (( t < 20 )); then
        echo "== $name: SKIPPED, ${t}s left"; printf '%s\tskipped\t0\n' "$name" >> "$LOGS/stages.tsv"; return 1
    fi
    echo "== t=$(( $(date +%s) - T0 ))s $name (at most ${t}s): $*"
    s=$(date +%s)
    timeout -k 10 "$t" "$@" > "$LOGS/$name.log" 2>&1; rc=$?
    if (( rc == 124 || rc == 137 )); then echo "== $name: CUT at ${t}s"; else echo "== $name: exit $rc"; fi
    grep -v -e Warn -e warn "$LOGS/$name.log" | tail -n 14
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - s ))" >> "$LOGS/stages.tsv"
    pack
    return $rc
}
keep() { [[ -f $1 ]] && cp "$1" "$OUT/$2" && echo "   -> $2"; }

ENC=(--dim 512 --heads 8 --layers 6 --tokens 16384 --repeats 5)
MODEL=(--fp16 --join 1.0 --layers 6 --dim 512 --heads 8 --max-tokens 8192 --max-update 60 --gen-len 40 --no-raw-text)
[[ ${MEMORY:-0} == 1 ]] || MODEL+=(--no-memory)

stage enc-bf16 90 python3 -m syntax_nmt.bench.length --out $W/enc-bf16 "${ENC[@]}" --precision bf16 --lengths 64 256 512
keep $W/enc-bf16/bench-length.json enc-bf16.json

# the systems never measured with this code first (a cut stage keeps the systems it measured)
stage model-fp16 300 python3 -m syntax_nmt.bench --out $W/model "${MODEL[@]}" \
    --systems transformer,lisa,sla,sgnet,syntax-infused,syntax+sgnet,syntax_bert,seprem,all
keep $W/model/bench.json model-fp16.json

stage enc-fp32 60 python3 -m syntax_nmt.bench.length --out $W/enc-fp32 "${ENC[@]}" --precision fp32 --lengths 64 256
keep $W/enc-fp32/bench-length.json enc-fp32.json

for m in syntax_bert seprem sla lisa sgnet; do
    stage enc-compile-$m 150 python3 -m syntax_nmt.bench.length --out $W/enc-compile-$m "${ENC[@]}" --precision bf16 \
        --lengths 64 256 --compile --systems $m
    # the methods measured so far, one file (one process each: each row holds its own stock encoder's time)
    python3 - "$OUT/enc-compile-bf16.json" $W/enc-compile-*/bench-length.json <<'PY' 2>/dev/null && echo "   -> enc-compile-bf16.json"
import json, sys
merged = None
for path in sys.argv[2:]:
    with open(path) as f:
        d = json.load(f)
    if merged is None:
        merged = d
    else:
        merged["rows"] += d["rows"]
        merged["args"]["systems"] += d["args"]["systems"]
if merged is None:
    sys.exit(1)
with open(sys.argv[1], "w") as f:
    json.dump(merged, f, indent=2)
PY
done

if (( $(left) >= 100 )); then
    # the same data (the done markers in $W/model), so no preparation; the transformer again, eager, as the reference;
    # the eager run's bench.json (kept above) removed first, so that a cut run brings back only what it measured
    rm -f $W/model/bench.json
    stage model-compile $(left) python3 -m syntax_nmt.bench --out $W/model "${MODEL[@]}" --compile \
        --systems transformer,syntax_bert
    keep $W/model/bench.json model-compile-fp16.json
else
    echo "== model-compile: SKIPPED, $(left)s left"; printf 'model-compile\tskipped\t0\n' >> "$LOGS/stages.tsv"
fi
pack
echo "== t=$(( $(date +%s) - T0 ))s done"; cat "$LOGS/stages.tsv"; ls -la "$OUT"
