# Model size and training presets of the Multi30k en-de recipe, sourced by train.sh, generate.sh and run_all.sh
# (through examples/common/).
#
#   config_args SYSTEM   (examples/common/systems.sh) the system's task and options from the plugin's table of
#                        systems, plus arch_args below: TASK_ARGS, ARCH, MODEL_ARGS, SYSTEM_ARGS
#   preset_args [PRESET] sets the *_DEFAULT settings of the preset PRESET (default: $PRESET, else cpu)
#
# The model of every system is Transformer-Tiny (Wu et al., ACL 2021, "Good for Misconceived Reasons";
# github.com/LividWo/Revisit-MMT): 4+4 post-norm layers, width 128, FFN 256, 4 heads, all embeddings shared
# (the feature systems share the decoder's only: their source word embeddings are 128 - 8 wide, the features
# summed in 8 dimensions). PRESET (how it is trained and decoded; README.md, "Presets"):
#   cpu   the comparison that fits a 2-core CPU: 1600 updates of 2048 tokens (~7 epochs), dropout 0.1, warmup 400,
#         the last checkpoint; chosen on the validation set (README.md)
#   gpu   Wu et al.'s Transformer-Tiny recipe: 8000 updates of 2 x 4096 tokens, dropout 0.3, lr 0.005 after
#         2000 warmup updates, patience 10 (epochs), the average of the last 10 epoch checkpoints, beam 5
# TINY=1 swaps the model for a 2+2-layer, 64-wide one (the offline test); every other flag is unchanged.
# shellcheck shell=bash

_CONFIGS_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../common/systems.sh
source "$_CONFIGS_HERE/../common/systems.sh"

PRESETS_ALL="cpu gpu"
SIZE_ARGS=(--encoder-layers 4 --decoder-layers 4 --encoder-embed-dim 128 --decoder-embed-dim 128
    --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256 --encoder-attention-heads 4 --decoder-attention-heads 4)
TINY_SIZE_ARGS=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
    --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 --encoder-attention-heads 2 --decoder-attention-heads 2)
FEATURE_DIM=8
# The main comparison (run_all.sh without SYSTEMS): the transformer, the syntax-infused Transformer and the two
# methods best on validation under the cpu preset, seed 1 of every system trained (README.md, "Results":
# lisa 35.76, seprem 35.62, transformer 35.54, sla 35.46, sgnet 33.48, syntax+sgnet 33.47, syntax-infused 32.99)
MAIN_SYSTEMS_DEFAULT=${MAIN_SYSTEMS_DEFAULT:-transformer syntax-infused lisa seprem}

# arch_args: ARCH, MODEL_ARGS and ENCODER_LAYERS of the loaded system (load_system).
arch_args() {
    local size=("${SIZE_ARGS[@]}")
    ENCODER_LAYERS=4
    if [[ "${TINY:-0}" == 1 ]]; then size=("${TINY_SIZE_ARGS[@]}"); ENCODER_LAYERS=2; fi
    if (( SYSTEM_STOCK )); then
        ARCH=transformer
        MODEL_ARGS=("${size[@]}" --share-all-embeddings)
    elif (( SYSTEM_FEATURES )); then
        ARCH=syntax_transformer
        MODEL_ARGS=("${size[@]}" --share-decoder-input-output-embed)
        # one width for every feature unless the system gives each its own (syntax-concat)
        if [[ " ${SYSTEM_ARGS[*]} " != *" --feature-embed-dims "* ]]; then
            MODEL_ARGS+=(--feature-embed-dim "$FEATURE_DIM")
        fi
    else
        ARCH=syntax_transformer
        MODEL_ARGS=("${size[@]}" --share-all-embeddings)
    fi
    return 0
}

# Every setting a preset fixes, as NAME_DEFAULT; train.sh / generate.sh / run_all.sh use $NAME when it is set
# in the environment, else NAME_DEFAULT.
preset_args() {
    local preset=${1:-${PRESET:-cpu}}
    # Transformer-Tiny as Wu et al. train it (their fairseq fork's defaults: Adam (0.9, 0.98), inverse_sqrt from
    # 1e-7, label smoothing 0.1, clip-norm 25, no weight decay)
    BPE_MERGES_DEFAULT=14000  # chosen on validation under the cpu preset (README.md)
    MAX_TOKENS_DEFAULT=4096
    BATCH_TOKENS_DEFAULT=8192
    ADAM_BETAS_DEFAULT='(0.9, 0.98)'
    ADAM_EPS_DEFAULT=1e-08
    LR_DEFAULT=0.005
    WARMUP_DEFAULT=2000
    WARMUP_INIT_LR_DEFAULT=1e-07
    MAX_UPDATE_DEFAULT=8000
    MAX_EPOCH_DEFAULT=0
    PATIENCE_DEFAULT=10
    CLIP_NORM_DEFAULT=25
    DROPOUT_DEFAULT=0.3
    ATTENTION_DROPOUT_DEFAULT=0.0
    LABEL_SMOOTHING_DEFAULT=0.1
    SAVE_INTERVAL_DEFAULT=0
    AVERAGE_DEFAULT=10
    EVAL_BLEU_DEFAULT=0
    BEAM_DEFAULT=5
    LENPEN_DEFAULT=1.0
    MAX_LEN_A_DEFAULT=0
    MAX_LEN_B_DEFAULT=200
    CHECKPOINT_DEFAULT=auto
    case "$preset" in
        gpu) ;;
        cpu)
            # about 20 minutes of one core per training (2 at a time on 2 cores); settings chosen on the
            # validation set with the transformer (README.md, "How the cpu preset was chosen")
            MAX_TOKENS_DEFAULT=2048
            BATCH_TOKENS_DEFAULT=2048
            WARMUP_DEFAULT=400
            MAX_UPDATE_DEFAULT=1600
            PATIENCE_DEFAULT=-1
            DROPOUT_DEFAULT=0.1
            SAVE_INTERVAL_DEFAULT=400
            AVERAGE_DEFAULT=0
            CHECKPOINT_DEFAULT=checkpoint_last.pt
            ;;
        *)
            echo "unknown preset '$preset' (expected one of: $PRESETS_ALL)" >&2
            return 1
            ;;
    esac
    return 0
}
