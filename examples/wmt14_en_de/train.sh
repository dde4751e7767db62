#!/usr/bin/env bash
# The WMT14 recipe's train.sh: examples/common/train.sh with this recipe's configs.sh (model sizes, presets).
# Usage and environment: see examples/common/train.sh.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RECIPE_DIR="$HERE" exec bash "$HERE/../common/train.sh" "$@"
