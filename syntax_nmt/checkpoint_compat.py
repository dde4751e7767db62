"""Let torch's weights-only ``torch.load`` read fairseq checkpoints.

torch >= 2.6 loads checkpoints with ``weights_only=True``. fairseq checkpoints
pickle an ``argparse.Namespace`` (``args``) and, in places, a few other plain
Python objects next to the tensors. With ``--eval-bleu`` the saved metrics state
also holds small numpy integer arrays (the BLEU n-gram counts of the last
validation), so numpy array reconstruction is allow-listed too. We allow-list
exactly those types instead of switching weights-only loading off.
"""

import argparse
import collections

import numpy as np
import torch

# np.ndarray's pickle constructor: numpy._core.multiarray._reconstruct (numpy 2), numpy.core... (numpy 1)
_NP_RECONSTRUCT = np.ndarray(0).__reduce__()[0]
# the dtype classes of plain numeric arrays (numpy >= 1.25 pickles a dtype through its class)
_NP_DTYPES = sorted({type(np.dtype(t)) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                                 np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                                 np.float64)} - {np.dtype}, key=lambda c: c.__name__)
_SAFE_GLOBALS = [argparse.Namespace, collections.OrderedDict, collections.defaultdict,
                 _NP_RECONSTRUCT, np.ndarray, np.dtype, *_NP_DTYPES]


def allow_fairseq_checkpoints() -> None:
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is not None:  # torch < 2.4 has no weights-only default
        add_safe_globals(_SAFE_GLOBALS)
        if _NP_RECONSTRUCT.__module__ != "numpy.core.multiarray":
            try:  # checkpoints written under numpy 1 name the function by its old module
                add_safe_globals([(_NP_RECONSTRUCT, "numpy.core.multiarray._reconstruct")])
            except (TypeError, ValueError):  # torch without (object, name) entries
                pass


allow_fairseq_checkpoints()
