"""Let torch's weights-only ``torch.load`` read fairseq checkpoints.

torch >= 2.6 loads checkpoints with ``weights_only=True``. fairseq checkpoints
pickle an ``argparse.Namespace`` (``args``) and, in places, a few other plain
Python objects next to the tensors. We allow-list exactly those types instead of
switching weights-only loading off.
"""

import argparse
import collections

import torch

_SAFE_GLOBALS = [argparse.Namespace, collections.OrderedDict, collections.defaultdict]


def allow_fairseq_checkpoints() -> None:
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is not None:  # torch < 2.4 has no weights-only default
        add_safe_globals(_SAFE_GLOBALS)


allow_fairseq_checkpoints()
