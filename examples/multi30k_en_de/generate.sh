#!/usr/bin/env bash
# The Multi30k recipe's generate.sh: examples/common/generate.sh with this recipe's configs.sh (model size, presets).
# Usage and environment: see examples/common/generate.sh.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RECIPE_DIR="$HERE" exec bash "$HERE/../common/generate.sh" "$@"
