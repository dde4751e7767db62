# Model sizes and training presets of the WMT14 en-de recipe, sourced by train.sh, generate.sh and run_all.sh
# (through examples/common/).
#
#   config_args SYSTEM   (examples/common/systems.sh) the system's task and options from the plugin's table of
#                        systems, plus arch_args below: TASK_ARGS, ARCH, MODEL_ARGS, SYSTEM_ARGS, WARMUP_DEFAULT,
#                        BEAM_DEFAULT
#   preset_args [PRESET] sets the *_DEFAULT settings of the preset PRESET (default: $PRESET, else fairseq);
#                        call it after config_args (the fairseq preset keeps the SG-Net systems' warmup and beam)
#
# SYSTEM is any name of the table (python -m syntax_nmt.systems list --all), e.g.
#   transformer (baseline)          stock fairseq transformer_wmt_en_de (shared source/target/output embeddings)
#   syntax-infused (syntax)         Sundararaman et al. (2019): pos, case and subword-position embeddings of size
#                                   20, summed, concatenated to 492-d word embeddings (512 in all)
#   syntax-concat (syntax_concat)   its other variant: the three embeddings concatenated, 8+4+8 = 20, to 492-d words
#   sgnet, syntax+sgnet (syntax_sgnet), sla, syntax_bert, seprem, lisa, all: the methods, alone or combined
# (in brackets the recipe's old names, still accepted). Transformer base (6+6 layers, 512) for every system.
# PRESET (how it is trained, decoded and scored; see README.md, "Presets") is one of
#   fairseq        fairseq's standard WMT14 Transformer-base recipe (the default)
#   sit-paper      the setup of the Syntax-Infused Transformer paper (Sundararaman et al., 2019)
#   sgnet-paper    the setup of the SG-Net paper for NMT (Zhang et al., 2020, sec. 5.2)
# TINY=1 swaps the architectures for tiny CPU-sized ones (the offline test); every other flag is unchanged.
# shellcheck shell=bash

_CONFIGS_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../common/systems.sh
source "$_CONFIGS_HERE/../common/systems.sh"

CONFIGS_ALL="baseline syntax sgnet syntax_sgnet"
PRESETS_ALL="fairseq sit-paper sgnet-paper"
# Dimensions of the TINY baseline: those of the syntax_transformer_tiny architecture.
TINY_BASELINE_ARGS=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
    --encoder-ffn-embed-dim 128 --decoder-ffn-embed-dim 128 --encoder-attention-heads 4 --decoder-attention-heads 4)

# arch_args: ARCH and MODEL_ARGS of the loaded system (load_system) at Transformer-base size. The feature
# systems' source word embeddings are 492-d (512 - 20), so only the decoder shares its embeddings; the others
# share all of them, like the baseline. SG-Net systems train with the SG-Net paper's 8000 warmup updates and
# decode with its beam 5 under every preset.
arch_args() {
    ENCODER_LAYERS=6
    if (( SYSTEM_STOCK )); then
        ARCH=transformer_wmt_en_de
        MODEL_ARGS=(--share-all-embeddings)
        if [[ "${TINY:-0}" == 1 ]]; then ARCH=transformer; MODEL_ARGS+=("${TINY_BASELINE_ARGS[@]}"); fi
        return 0
    fi
    ARCH=syntax_transformer_wmt_en_de
    if (( SYSTEM_FEATURES )); then
        MODEL_ARGS=(--share-decoder-input-output-embed)
        # the paper's d = 20, summed, concatenated to the words (the architecture's defaults, written out for the log), unless the system
        # gives each feature its own width (syntax-concat)
        if [[ " ${SYSTEM_ARGS[*]} " != *" --feature-embed-dims "* ]]; then
            MODEL_ARGS+=(--feature-embed-dim 20 --feature-merge sum --feature-combine concat)
        fi
    else MODEL_ARGS=(--share-all-embeddings); fi
    if [[ ",$SYSTEM_METHODS," == *",sgnet,"* ]]; then
        WARMUP_DEFAULT=8000  # SG-Net paper
        BEAM_DEFAULT=5
    fi
    if [[ "${TINY:-0}" == 1 ]]; then ARCH=syntax_transformer_tiny; ENCODER_LAYERS=2; fi
    return 0
}

# Every setting a preset fixes, as NAME_DEFAULT; train.sh / generate.sh / run_all.sh use $NAME when it is set
# in the environment, else NAME_DEFAULT. BATCH_TOKENS is the number of tokens per update
# (MAX_TOKENS x NGPU x UPDATE_FREQ); UPDATE_FREQ defaults to what reaches it on NGPU GPUs.
preset_args() {
    local preset=${1:-${PRESET:-fairseq}}
    # fairseq's standard WMT14 recipe (Ott et al., 2018, scaled to 8 GPUs x 4096 tokens)
    TEST_SET_DEFAULT=full
    BPE_MERGES_DEFAULT=32000
    MAX_TOKENS_DEFAULT=4096
    BATCH_TOKENS_DEFAULT=32768
    ADAM_BETAS_DEFAULT='(0.9, 0.98)'
    ADAM_EPS_DEFAULT=1e-08
    LR_DEFAULT=7e-4
    WARMUP_INIT_LR_DEFAULT=1e-07
    MAX_UPDATE_DEFAULT=100000
    DROPOUT_DEFAULT=0.1
    ATTENTION_DROPOUT_DEFAULT=0.0
    LABEL_SMOOTHING_DEFAULT=0.1
    SAVE_INTERVAL_DEFAULT=1000
    AVERAGE_DEFAULT=5
    LENPEN_DEFAULT=0.6
    MAX_LEN_A_DEFAULT=0
    MAX_LEN_B_DEFAULT=200
    CHECKPOINT_DEFAULT=auto
    EVAL_BLEU_DEFAULT=0
    case "$preset" in
        fairseq) ;;
        sit-paper)
            # Sundararaman et al. (2019): "All hyperparameter settings of the baseline Transformer ... match
            # those of (Vaswani et al., 2017)", "training procedure is identical": where the paper is silent,
            # Vaswani et al.'s Transformer base.
            TEST_SET_DEFAULT=filtered          # newstest2014, 2737 sentences
            BPE_MERGES_DEFAULT=37000           # not given; Vaswani et al.: shared vocabulary of about 37000
            BATCH_TOKENS_DEFAULT=8192          # batch 4096, gradients accumulated over two batches
            ADAM_BETAS_DEFAULT='(0.9, 0.998)'
            ADAM_EPS_DEFAULT=1e-09             # Vaswani et al.
            WARMUP_DEFAULT=4000                # Vaswani et al.
            LR_DEFAULT=6.98771e-04             # Vaswani et al.: d^-0.5 * min(step^-0.5, step * 4000^-1.5)
            WARMUP_INIT_LR_DEFAULT=0
            BEAM_DEFAULT=4                     # Vaswani et al.: beam 4, length penalty 0.6,
            LENPEN_DEFAULT=0.6                 # output length up to input length + 50
            MAX_LEN_A_DEFAULT=1
            MAX_LEN_B_DEFAULT=50
            ;;
        sgnet-paper)
            # Zhang et al. (2020), sec. 5.2 and 5.3 (NMT); "a single V100 GPU".
            BPE_MERGES_DEFAULT=40000           # "the size of the vocabulary was set to 40,000"
            BATCH_TOKENS_DEFAULT=16384         # "approximately 4096 x 4 source tokens and 4096 x 4 target tokens"
            ADAM_EPS_DEFAULT=1e-09             # not given; Vaswani et al.
            WARMUP_DEFAULT=8000                # "a warm-up strategy with 8,000 steps"
            LR_DEFAULT=4.94106e-04             # not given; Vaswani et al.'s schedule: d^-0.5 * 8000^-0.5 at the peak
            WARMUP_INIT_LR_DEFAULT=0
            MAX_UPDATE_DEFAULT=300000          # "the training of 300,000 batches"
            ATTENTION_DROPOUT_DEFAULT=0.1      # "the attention dropout and residual dropout were p = 0.1"
            AVERAGE_DEFAULT=0                  # "the model with the highest BLEU score of the dev set"
            CHECKPOINT_DEFAULT=checkpoint_best.pt
            EVAL_BLEU_DEFAULT=1                # "validated the model with an interval of 1,000 batches"
            BEAM_DEFAULT=5                     # "the beam size was set to five"
            LENPEN_DEFAULT=1.0                 # not given: fairseq's default
            ;;
        *)
            echo "unknown preset '$preset' (expected one of: $PRESETS_ALL)" >&2
            return 1
            ;;
    esac
    return 0
}
