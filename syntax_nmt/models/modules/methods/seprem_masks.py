"""SEPREM's tensor math (Xu et al., 2021, "Syntax-Enhanced Pre-trained Model"): the correlation strength ``D̃``
of its syntax-aware layer inputs (sec. 4.3, eq. 3-4) and the word pairs, their sample and their classes for its
dependency distance prediction (sec. 4.4). Pure torch, no fairseq; batched with no Python loop over sentences
and no indexing by a data-dependent count (``nonzero``), so no host-device sync.
"""

import math
from typing import Optional, Tuple

import torch

from syntax_nmt.syntax.tree import WordTree, expand_word_matrix, real_word_starts, word_pieces


def connected_word_pairs(tree: WordTree) -> torch.Tensor:
    """``(B, T, T)`` bool on first-subword positions: ``[b, w, u]`` iff ``w != u`` are real words of
    the same tree (the pairs SEPREM's D̃ and distance prediction cover)."""
    T = tree.word_index.shape[1]
    starts = real_word_starts(tree)
    eye = torch.eye(T, dtype=torch.bool, device=starts.device)
    return tree.connected & ~eye & starts.unsqueeze(2) & starts.unsqueeze(1)


def seprem_strength(tree: WordTree) -> torch.Tensor:
    """SEPREM's normalised correlation strength ``D̃`` (Xu et al. 2021, sec. 4.3, eq. 3-4).

    Between words: ``D̃[w, u] = (1 / d(w, u)) / sum_z (1 / d(w, z))`` over the words ``z != w``
    of ``w``'s tree, with ``d`` the undirected tree distance (sec. 4.1); 0 on the diagonal,
    between different trees of a multi-root line, and in the rows and columns of special
    tokens. At subword level every subword ``i`` of word ``w(i)`` gives word ``u``'s weight
    to ``u``'s pieces in equal shares: ``D̃_sub[i, j] = D̃[w(i), w(j)] / pieces(w(j))``, so
    a row sums to 1, or to 0 where its word is alone in its tree (or the row is special);
    two pieces of the same word get 0.

    Args:
        tree: the batch's :class:`~syntax_nmt.syntax.tree.WordTree` (:func:`~syntax_nmt.syntax.tree.word_tree`).

    Returns:
        ``(B, T, T)`` float32, row = the attending subword ``i``, column = ``j``.
    """
    pairs = connected_word_pairs(tree)
    inv = torch.where(pairs, 1.0 / tree.dist.clamp(min=1).float(), torch.zeros((), device=pairs.device))
    total = inv.sum(dim=-1, keepdim=True)
    word = inv / torch.where(total > 0, total, torch.ones_like(total))  # rows without pairs stay 0
    pieces = word_pieces(tree.word_index).float()
    return expand_word_matrix(word, tree.word_index) / pieces.unsqueeze(1)


def pair_sample_capacity(T: int, rate: float) -> int:
    """A bound, known from the shapes alone, on the number of pairs :func:`sample_pair_indices` keeps in
    one sentence of length ``T``: ``round(rate * n) + 1`` for the most candidates a sentence can have,
    ``n = T (T - 1)`` (:func:`connected_word_pairs` leaves out the diagonal); the ``+ 1`` covers float32
    rounding of ``rate * n``. At least 1, at most ``T * T``."""
    return max(1, min(T * T, int(math.floor(T * (T - 1) * rate + 0.5)) + 1))


def sample_pair_indices(candidates: torch.Tensor, rate: float, generator: Optional[torch.Generator] = None
                        ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Sample ``round(rate * n_b)`` (at least one) of the ``n_b`` candidate pairs of every sentence ``b``,
    uniformly without replacement (SEPREM masks 15 % of the distances, sec. 4.4): the candidates with the
    smallest uniform keys, as a short list of flat pair indices per sentence. The list has a static length
    ``K =`` :func:`pair_sample_capacity` (no host sync), its first ``k_b`` entries are the sample and ``keep``
    says which entries count.

    Args:
        candidates: ``(B, T, T)`` bool.
        rate: fraction in ``(0, 1]``.
        generator: torch random generator (default: the global one of the device).

    Returns:
        ``(index, keep)``: ``(B, K)`` long indices into the flattened ``T * T`` pairs (``i * T + j``),
        distinct within a row, and ``(B, K)`` bool, True at the sampled pairs.
    """
    B, T, _ = candidates.shape
    flat = candidates.reshape(B, -1)
    n = flat.sum(dim=1)
    k = torch.floor(n.float() * rate + 0.5).long().clamp(min=1)
    r = torch.rand(flat.shape, generator=generator, device=flat.device).masked_fill(~flat, 2.0)
    index = r.argsort(dim=1)[:, :pair_sample_capacity(T, rate)]  # candidates first, by increasing key
    position = torch.arange(index.shape[1], device=flat.device).unsqueeze(0)
    return index, (position < k.unsqueeze(1)) & flat.gather(1, index)


def distance_classes(dist: torch.Tensor, max_distance: int) -> torch.Tensor:
    """Tree distances ``1 .. max_distance`` -> classes ``0 .. max_distance - 1``; farther ->
    ``max_distance`` (the "farther" bucket of the distance prediction, sec. 4.4). Distances < 1 (self,
    disconnected) map to 0 and must be masked out by the caller.

    Args:
        dist: long tensor of distances.
        max_distance: ``K`` >= 1.

    Returns:
        long tensor of the same shape with values in ``[0, K]``.
    """
    return dist.clamp(min=1, max=max_distance + 1) - 1
