"""Nested, seeded subsamples of a corpus (no fairseq import).

Used by the WMT14 recipe's ``prepare.py`` (``--subsample-percent``) and by the demo's
data-fraction runs (``python -m syntax_nmt.demo --fractions ...``).
"""

import numpy as np


def subsample_mask(n: int, percent: float, seed: int) -> np.ndarray:
    """Boolean mask over ``n`` lines selecting ``round(n * percent / 100)`` of them
    (at least one), deterministically by ``seed``.

    The selection is the first k entries of ``default_rng(seed).permutation(n)``,
    so for a fixed seed a smaller percentage selects a subset of a larger one.
    """
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], got {percent}")
    k = n if percent == 100 else max(1, int(round(n * percent / 100.0)))
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n)[:k]] = True
    return mask
