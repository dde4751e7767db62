"""The head stream's text form: one line of relative head offsets per sentence (``0``: a root), checked and
parsed into the array the datasets store (pure numpy; ``syntax-nmt-binarize`` and raw-text inference use it)."""

from typing import Optional

import numpy as np

from syntax_nmt.data.streams import SPECIAL_HEAD


class StreamMismatchError(ValueError):
    """A stream does not line up with the source text."""


def parse_heads(line: str, path: str = "<heads>", lineno: int = 0) -> np.ndarray:
    """One line of relative head offsets -> int array with the EOS value appended."""
    try:
        values = [int(x) for x in line.split()]
    except ValueError as e:
        raise StreamMismatchError(f"{path}:{lineno}: head offsets must be integers ({e})") from None
    offsets = np.asarray(values, dtype=np.int64)
    heads = np.arange(len(offsets)) + offsets
    outside = np.nonzero((heads < 0) | (heads >= len(offsets)))[0]
    if len(outside):
        i = int(outside[0])
        raise StreamMismatchError(f"{path}:{lineno}: head offset {values[i]} of token {i + 1} points outside the "
                                  f"sentence")
    on_cycle = cycle_token(offsets)
    if on_cycle is not None:  # as a CoNLL-U file with a cycle is refused (syntax-nmt-analyze corrupt may make them)
        raise StreamMismatchError(f"{path}:{lineno}: the heads form a cycle through token {on_cycle + 1} (every token "
                                  f"must lead to a root, offset 0)")
    return np.asarray(values + [SPECIAL_HEAD], dtype=np.int64)


def cycle_token(offsets: np.ndarray) -> Optional[int]:
    """A token (0-based) on a cycle of the heads given as relative offsets (``0``: a root), or None if every token
    leads to a root. Pointer doubling: after ``ceil(log2 n)`` squarings every token that leads to a root is at one
    (roots are fixed points); a token that does not has reached the cycle it runs into."""
    n = len(offsets)
    parent = np.arange(n) + offsets
    for _ in range(max(1, int(n).bit_length())):
        parent = parent[parent]
    stuck = np.nonzero(offsets[parent] != 0)[0]
    return int(parent[stuck[0]]) if len(stuck) else None
