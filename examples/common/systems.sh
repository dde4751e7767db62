# Systems of the recipes, from the plugin's one table of systems (syntax_nmt/systems.py), sourced by the
# recipes' configs.sh.
#
#   load_system NAME   sets SYSTEM (the table's name; the WMT14 recipe's old names are aliases), SYSTEM_TASK,
#                      SYSTEM_ARGS (array: features, methods, their options, an auxiliary-loss criterion),
#                      SYSTEM_STOCK, SYSTEM_FEATURES (1/0), SYSTEM_METHODS (comma-separated), SYSTEM_MIN_LAYERS,
#                      SYSTEM_TARGET (its target scheme), SYSTEM_DATA (the suffix of the scheme's own data),
#                      SYSTEM_TARGET_STREAMS (the target streams it reads, comma-separated),
#                      SYSTEM_EVALUATE_ARGS (array: options of syntax-nmt-evaluate score/factors), SYSTEM_TAGS (1/0)
#   config_args NAME   load_system NAME, then the recipe's arch_args (which sets ARCH, MODEL_ARGS and
#                      ENCODER_LAYERS for its model size, and may set WARMUP_DEFAULT/BEAM_DEFAULT); leaves
#                      TASK_ARGS=(--task ...), MODEL_ARGS=(size and sharing, more encoder layers if the system
#                      needs them) and SYSTEM_ARGS, which go after the training options (a system may set the
#                      criterion)
#   system_names LIST  the table's names of a space- or comma-separated list ("default": the default comparison;
#                      "target": the target-side comparison, from the target schemes' systems)
#   target_streams DIR NAME...  the target streams that the systems NAME... read from the data directory DIR, as
#                      their target schemes declare (SYSTEM_TARGET_STREAMS; none for a system on its scheme's own
#                      data, SYSTEM_DATA), and those DIR holds already (binarizing again drops none), comma-separated
#   lacks_streams DIR STREAMS   whether the data directory DIR lacks one of the target STREAMS (comma-separated)
#   has_stage, stage_start, stage_end   the stages of a recipe's run_all.sh
#
# The table is read with $SYSTEMS_PYTHON (default: $PYTHON, else python), a Python with syntax_nmt installed
# (a few seconds: it imports fairseq); with SYSTEMS_CACHE set to a directory, each system is read once there
# (NAME.sh, also what system_names reads for a name; _default.list and _target.list, if present, the default and
# the target-side comparison).
# shellcheck shell=bash

_systems_python() { "${SYSTEMS_PYTHON:-${PYTHON:-python}}" "$@"; }

load_system() {
    local out cache="${SYSTEMS_CACHE:+$SYSTEMS_CACHE/${1//\//_}.sh}"
    unset SYSTEM
    # a table without them (an older cache)
    SYSTEM_TARGET="" SYSTEM_DATA="" SYSTEM_TARGET_STREAMS="" SYSTEM_TAGS=0 SYSTEM_EVALUATE_ARGS=()
    if [[ -n "$cache" && -f "$cache" ]]; then out=$(<"$cache")
    else
        out=$(_systems_python -m syntax_nmt.systems shell "$1") || return 1
        if [[ -n "$cache" && -n "$out" ]]; then printf '%s\n' "$out" > "$cache"; fi
    fi
    eval "$out"
    if [[ -z "${SYSTEM:-}" ]]; then
        echo "could not read the table of systems with ${SYSTEMS_PYTHON:-${PYTHON:-python}}: set SYSTEMS_PYTHON" \
             "(or PYTHON) to a python with syntax_nmt installed" >&2
        return 1
    fi
}

system_names() {
    local name out=() list="${SYSTEMS_CACHE:+$SYSTEMS_CACHE/_default.list}"
    if [[ "$*" == default || -z "$*" ]]; then
        if [[ -n "$list" && -f "$list" ]]; then tr '\n' ' ' < "$list"; return; fi
        _systems_python -m syntax_nmt.systems list | tr '\n' ' '; return
    fi
    if [[ "$*" == target ]]; then
        list="${SYSTEMS_CACHE:+$SYSTEMS_CACHE/_target.list}"
        if [[ -n "$list" && -f "$list" ]]; then tr '\n' ' ' < "$list"; return; fi
        _systems_python -m syntax_nmt.systems list --target | tr '\n' ' '; return
    fi
    for name in ${*//,/ }; do
        if [[ -n "${SYSTEMS_CACHE:-}" && -f "$SYSTEMS_CACHE/${name//\//_}.sh" ]]; then  # what load_system caches
            out+=("$(eval "$(<"$SYSTEMS_CACHE/${name//\//_}.sh")"; echo "$SYSTEM")")
        else
            out+=("$(_systems_python -m syntax_nmt.systems name "$name")") || return 1
        fi
    done
    echo "${out[*]}"
}

target_streams() {
    local dir=$1 system dict streams=()
    shift
    for system in "$@"; do
        load_system "$system" || return 1
        if [[ -z "$SYSTEM_DATA" ]]; then streams+=(${SYSTEM_TARGET_STREAMS//,/ }); fi
    done
    for dict in "$dir"/dict.tgt.*.txt; do
        if [[ -f "$dict" ]]; then dict=${dict##*/dict.tgt.}; streams+=("${dict%.txt}"); fi
    done
    if (( ${#streams[@]} )); then printf '%s\n' "${streams[@]}" | awk '!seen[$0]++' | paste -sd, -; fi
}

lacks_streams() {
    local stream
    for stream in ${2//,/ }; do
        if [[ ! -f "$1/dict.tgt.$stream.txt" ]]; then return 0; fi
    done
    return 1
}

# The stages of a recipe's run_all.sh: has_stage NAME (is it in $STAGES), stage_start / stage_end NAME (timed).
has_stage() { [[ " $STAGES " == *" $1 "* ]]; }
stage_start() { STAGE_T0=$SECONDS; echo "=== [$(date +%H:%M:%S)] $1"; }
stage_end() { echo "=== $1 done in $((SECONDS - STAGE_T0)) s"; }

# The syntax_nmt package directory for --user-dir, found without importing it (importing it imports fairseq: seconds).
find_user_dir() {
    _systems_python -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("syntax_nmt").origin))'
}

config_args() {
    load_system "$1" || return 1
    WARMUP_DEFAULT=${WARMUP_BASE_DEFAULT:-4000}
    BEAM_DEFAULT=${BEAM_BASE_DEFAULT:-4}
    arch_args || return 1
    TASK_ARGS=(--task "$SYSTEM_TASK")
    if (( SYSTEM_MIN_LAYERS > ENCODER_LAYERS )); then MODEL_ARGS+=(--encoder-layers "$SYSTEM_MIN_LAYERS"); fi
    return 0
}
