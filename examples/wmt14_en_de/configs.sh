# Model configurations of the WMT14 en-de recipe, sourced by train.sh and generate.sh.
#
#   config_args CONFIG   sets the arrays TASK_ARGS and MODEL_ARGS, and ARCH, WARMUP_DEFAULT, BEAM_DEFAULT
#
# CONFIG is one of
#   baseline       stock fairseq transformer_wmt_en_de (shared source/target/output embeddings)
#   syntax         syntax-infused Transformer (Sundararaman et al., 2019): pos, case and subword-position
#                  embeddings of size 20, summed, concatenated to 492-d word embeddings (512 in all)
#   sgnet          SG-Net (Zhang et al., 2020): syntax-guided self-attention from the dependency heads
#   syntax_sgnet   both
# TINY=1 swaps the architectures for tiny CPU-sized ones (the offline test); every other flag is unchanged.
# shellcheck shell=bash

CONFIGS_ALL="baseline syntax sgnet syntax_sgnet"
FEATURE_ARGS=(--source-features pos,case,subword --feature-merge sum --feature-embed-dim 20 --feature-combine concat)
# Dimensions of the TINY baseline: those of the syntax_transformer_tiny architecture.
TINY_BASELINE_ARGS=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
    --encoder-ffn-embed-dim 128 --decoder-ffn-embed-dim 128 --encoder-attention-heads 4 --decoder-attention-heads 4)

# The syntax_nmt package directory for --user-dir, found without importing it (importing it imports fairseq: seconds).
find_user_dir() {
    "${PYTHON:-python}" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("syntax_nmt").origin))'
}

config_args() {
    local config=$1
    WARMUP_DEFAULT=4000
    BEAM_DEFAULT=4
    case "$config" in
        baseline)
            TASK_ARGS=(--task translation)
            ARCH=transformer_wmt_en_de
            MODEL_ARGS=(--share-all-embeddings)
            if [[ "${TINY:-0}" == 1 ]]; then ARCH=transformer; MODEL_ARGS+=("${TINY_BASELINE_ARGS[@]}"); fi
            ;;
        syntax)
            TASK_ARGS=(--task syntax_translation)
            ARCH=syntax_transformer_wmt_en_de
            # word embeddings are 492-d (512 - 20) in the encoder only: no --share-all-embeddings
            MODEL_ARGS=("${FEATURE_ARGS[@]}" --share-decoder-input-output-embed)
            ;;
        sgnet)
            TASK_ARGS=(--task syntax_translation)
            ARCH=syntax_transformer_sgnet_wmt_en_de
            # no source features: 512-d word embeddings, shared like the baseline's
            MODEL_ARGS=(--syntax-attention sgnet --source-features "" --share-all-embeddings)
            WARMUP_DEFAULT=8000  # SG-Net paper
            BEAM_DEFAULT=5
            ;;
        syntax_sgnet)
            TASK_ARGS=(--task syntax_translation)
            ARCH=syntax_transformer_sgnet_wmt_en_de
            MODEL_ARGS=(--syntax-attention sgnet "${FEATURE_ARGS[@]}" --share-decoder-input-output-embed)
            WARMUP_DEFAULT=8000
            BEAM_DEFAULT=5
            ;;
        *)
            echo "unknown config '$config' (expected one of: $CONFIGS_ALL)" >&2
            return 1
            ;;
    esac
    if [[ "${TINY:-0}" == 1 && "$ARCH" == syntax_* ]]; then ARCH=syntax_transformer_tiny; fi
    return 0
}
