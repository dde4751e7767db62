#!/usr/bin/env bash
# The Multi30k English->French recipe: the stages of examples/multi30k_en_de/run_all.sh (every option there holds
# here) with French as the target, parsed too, by Explosion's fr_core_news_sm, so that the target-side systems
# can be trained: target POS factors, the target interleaved with its POS tags, LISA, LISA with target factors
# (README.md beside this file).
#
#   bash examples/multi30k_en_fr/run_all.sh                       # PRESET=cpu: the five systems, 3 seeds
#   SEEDS=1 bash examples/multi30k_en_fr/run_all.sh               # one seed first (the run resumes with more)
#   MULTI30K_DIR=~/multi30k-dataset bash examples/multi30k_en_fr/run_all.sh
#
# Besides the en-de recipe's environment: TGT_SPACY_MODEL, the French parser [fr_core_news_sm]; MANIFEST
# [manifest.json beside this file]; WORK [multi30k_en_fr]; SYSTEMS [target: the target-side comparison, from the
# target schemes' systems (python -m syntax_nmt.systems list --target): transformer factors interleaved lisa
# lisa+factors, and the systems of a scheme added since].
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export TGT_LANG=fr
export TGT_SPACY_MODEL=${TGT_SPACY_MODEL:-fr_core_news_sm}
export MANIFEST=${MANIFEST:-$HERE/manifest.json}
export WORK=${WORK:-multi30k_en_fr}
export SYSTEMS=${SYSTEMS:-target}
exec bash "$HERE/../multi30k_en_de/run_all.sh" "$@"
