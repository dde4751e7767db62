"""``--syntax-compile``: the encoder layers through ``torch.compile``, with dynamic shapes.

fairseq's batches differ in length and size at every step; the layers are compiled with symbolic sizes
(``dynamic=True``), so a batch of another length runs the code compiled for the first one. What a layer's code
depends on besides the sizes makes a few variants, each compiled once (counted by
``tests/integration/test_compiled_layers.py``): the first layer reads a transposed input (fairseq's ``(B, T, C)`` ->
``(T, B, C)`` view) and the others a contiguous one; batches with and without padding (fairseq passes no padding mask
when there is none); training, evaluation and inference without gradients; and, for the methods that read stacked
masks, whether ``T`` is a multiple of 16 (their masks' rows are stored 16-aligned, a view when it is not).

What the compiled code does:

* fairseq's own layers: :meth:`torch.nn.Module.compile` (the module keeps its parameters and their names, so
  checkpoints load either way);
* the syntax methods' layers (:class:`~syntax_nmt.models.modules.syntax_transformer_encoder.SyntaxEncoderLayer`):
  the layer's computation with the batch's context given (its input modules, then fairseq's layer), compiled once
  for every layer, called inside the context's binding (the binding itself, a Python context manager, stays eager);
* the per-batch syntax context (word tree, masks: :meth:`~syntax_nmt.models.modules.syntax_context.SyntaxContext.
  cached`) is computed eagerly where a compiled layer first reads it (a graph break there, in the first layer that
  reads it): its loops depend on the length (the ancestor doubling runs ``log2 T`` steps), which would otherwise
  recompile for every power of two;
* inside compiled code the syntax modules take their accelerator paths on every device
  (:func:`~syntax_nmt.models.modules.device_paths.cpu_paths`): shapes that do not depend on the data, few operations.

Off by default: on a GPU its effect (speed, memory, behaviour under ``--fp16``) is not measured yet
(``docs/benchmarks.md``); ``make bench-length BENCH_LENGTH_ARGS=--compile`` times it.
"""

from typing import Any, Callable, Dict, Optional, Tuple

#: ``--syntax-compile-mode``: torch.compile's modes (``reduce-overhead`` adds CUDA graphs, recorded per shape)
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: how many compiled variants of one function torch keeps before it falls back to eager code (torch's default: 8).
#: The variants above multiply: (first layer, other layers) x (padding, none) x (T multiple of 16 or not) x
#: (training, evaluation) already make 16 for one function.
RECOMPILE_LIMIT = 64

_compiled: Dict[Tuple[Callable, Tuple], Callable] = {}


def compile_options(cfg) -> Optional[Dict[str, Any]]:
    """The ``torch.compile`` options of the model config ``cfg`` (``--syntax-compile``, ``--syntax-compile-mode``), or
    None when the layers stay eager."""
    if not getattr(cfg, "syntax_compile", False):
        return None
    mode = getattr(cfg, "syntax_compile_mode", "default") or "default"
    if mode not in COMPILE_MODES:
        raise ValueError(f"--syntax-compile-mode must be one of {COMPILE_MODES}, got {mode!r}")
    return {"dynamic": True, "mode": None if mode == "default" else mode}


def _allow_variants() -> None:
    import torch._dynamo  # here, not at the top: the benches read COMPILE_MODES without importing torch

    from syntax_nmt.models.modules.syntax_context import untraced_context

    if torch._dynamo.config.recompile_limit < RECOMPILE_LIMIT:
        torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    untraced_context()


def compiled(fn: Callable, options: Dict[str, Any]) -> Callable:
    """``torch.compile(fn, **options)``, made once per function and options (the layers of a model share it, and so
    its compiled variants)."""
    import torch

    key = (fn, tuple(sorted(options.items())))
    if key not in _compiled:
        _allow_variants()
        _compiled[key] = torch.compile(fn, **options)
    return _compiled[key]


def compile_module(module, options: Dict[str, Any]):
    """``module.compile(**options)`` in place (same parameters, same state-dict keys); returns ``module``."""
    _allow_variants()
    module.compile(**options)
    return module
