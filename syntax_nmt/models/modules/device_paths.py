"""Which code path the syntax modules take on a device.

Some modules have a path tuned for the CPU (explicit ``(B, H, T, T)`` softmaxes for short batches, one score matrix
for SLA's two branches, Syntax-BERT's sparse plans, which read mask sizes on the host) and a path for every other
device: few kernels per layer (one batched fused-attention call for all of a layer's masked softmaxes), no
host-device synchronisation. A GPU is launch-bound at Transformer-base width, so the number of operations the
accelerator path dispatches is what its speed follows.

:func:`cpu_paths` is how a module chooses. :func:`forced_accelerator_paths` makes the CPU take the accelerator paths
too, so they are tested on a machine without a GPU against the explicit ones, and their dispatched operations can be
counted there (``make bench-length BENCH_LENGTH_ARGS=--count-ops``).
"""

import contextlib
from typing import Iterator

import torch
from torch import Tensor

_forced = False


def cpu_paths(t: Tensor) -> bool:
    """Whether a module working on ``t`` takes its CPU-tuned paths: ``t`` is on the CPU, the accelerator paths are not
    forced (:func:`forced_accelerator_paths`) and the code is not being compiled (``--syntax-compile``): a compiled
    layer takes the accelerator paths on every device, whose shapes do not depend on the data (the CPU's sparse plans
    read mask sizes on the host) and whose few operations are what a compiler fuses."""
    return t.device.type == "cpu" and not _forced and not torch.compiler.is_compiling()


@contextlib.contextmanager
def forced_accelerator_paths(enabled: bool = True) -> Iterator[None]:
    """Within the block, tensors on the CPU take the accelerator (GPU) paths too (``enabled=False``: as usual)."""
    global _forced
    previous, _forced = _forced, bool(enabled)
    try:
        yield
    finally:
        _forced = previous
