"""What every system of the demo is trained and translated with (the bench shares the optimisation and
:func:`system_command`): the model size, the optimiser, the generation options, the CPU allocator settings."""

from syntax_nmt.systems import fit_encoder_layers
from syntax_nmt.systems import get as get_system

#: the demo's encoder depth (a system that needs more layers, such as ``all``, gets them:
#: :func:`syntax_nmt.systems.fit_encoder_layers`)
ENCODER_LAYERS = 2
#: Model size and optimisation shared by every system (identical budgets): no dropout, small batches, pre-norm
#: layers (the measurements behind them: README.md, "Demo and benchmark", "Why these settings").
MODEL_ARGS = [
    "--encoder-embed-dim", "128", "--decoder-embed-dim", "128",
    "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-decoder-input-output-embed", "--dropout", "0.0",
    "--encoder-normalize-before", "--decoder-normalize-before",
]
OPTIM_ARGS = [
    "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--lr", "0.003", "--lr-scheduler", "inverse_sqrt",
    "--warmup-updates", "100", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
    "--clip-norm", "1.0",
]
GEN_ARGS = ["--beam", "4", "--lenpen", "0.6", "--batch-size", "128"]
#: glibc keeps freed buffers instead of returning them to the system after every training step and faulting them
#: in again (README.md, "Why these settings"); harmless on a GPU
CPU_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "1073741824", "MALLOC_TRIM_THRESHOLD_": "1073741824",
                  "MALLOC_TOP_PAD_": "268435456"}

def system_command(name: str, layers: int = ENCODER_LAYERS) -> tuple:
    """``(task, arch, options)`` of a system of the table at the demo's size (the options come after the
    shared ones, so a system may change the criterion)."""
    system = get_system(name)
    if system.stock:
        return system.task, "transformer_tiny", []
    return system.task, "syntax_transformer_tiny", [*system.args(), *fit_encoder_layers(system, layers)]
