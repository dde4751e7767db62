"""Batched pieces of the syntax auxiliary losses (pure torch, no fairseq).

Used by the criterion ``label_smoothed_cross_entropy_with_syntax`` for LISA's parse attention
(Strubell et al., 2018) and SEPREM's dependency distance and head prediction (Xu et al., 2021,
sec. 4.4). Everything is a masked tensor op over the whole padded batch: no Python loop over
sentences, no indexing by a data-dependent count (``nonzero``), so no host-device sync.
"""

import math
from typing import Optional, Tuple

import torch


def masked_log_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """float32 log-softmax over the last dimension restricted to ``allowed`` entries.

    Forbidden entries get a large finite negative logit (so a row with nothing allowed is
    uniform, never NaN); their log-probabilities are meaningless.

    Args:
        scores: ``(..., K)`` logits, any float dtype.
        allowed: bool, broadcastable to ``scores``.
    """
    fill = torch.finfo(torch.float32).min / 2
    return torch.log_softmax(scores.float().masked_fill(~allowed, fill), dim=-1)


def classification_terms(logp: torch.Tensor, target: torch.Tensor, rows: torch.Tensor
                         ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Summed negative log-likelihood of ``target`` over the ``rows`` that count.

    Args:
        logp: ``(..., K)`` float log-probabilities.
        target: ``(...)`` long class indices in ``[0, K)``.
        rows: ``(...)`` bool, the items that count.

    Returns:
        ``(nll_sum, count, n_correct)``: float32 scalar, and long scalars (the number of
        counted items and of those whose arg-max is the target).
    """
    nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    nll_sum = torch.where(rows, nll, torch.zeros_like(nll)).sum()
    correct = (logp.argmax(-1) == target) & rows
    return nll_sum, rows.sum(), correct.sum()


def pair_sample_capacity(T: int, rate: float) -> int:
    """A bound, known from the shapes alone, on the number of pairs :func:`sample_pair_indices` keeps in
    one sentence of length ``T``: ``round(rate * n) + 1`` for the most candidates a sentence can have,
    ``n = T (T - 1)`` (:func:`~syntax_nmt.syntax.tree.connected_word_pairs` leaves out the diagonal); the
    ``+ 1`` covers float32 rounding of ``rate * n``. At least 1, at most ``T * T``."""
    return max(1, min(T * T, int(math.floor(T * (T - 1) * rate + 0.5)) + 1))


def sample_pair_indices(candidates: torch.Tensor, rate: float, generator: Optional[torch.Generator] = None
                        ) -> Tuple[torch.Tensor, torch.Tensor]:
    """The sample of :func:`sample_pairs` as a short list of flat pair indices per sentence.

    ``round(rate * n_b)`` (at least one) of the ``n_b`` candidate pairs of every sentence ``b``,
    uniformly without replacement: the candidates with the smallest uniform keys. The list has a
    static length ``K =`` :func:`pair_sample_capacity` (no host sync), its first ``k_b`` entries are
    the sample and ``keep`` says which entries count.

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


def sample_pairs(candidates: torch.Tensor, rate: float, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Sample ``round(rate * n_b)`` (at least one) of the ``n_b`` candidate pairs of every
    sentence ``b``, uniformly without replacement (SEPREM masks 15 % of the distances).

    The same draw as :func:`sample_pair_indices`, as a mask.

    Args:
        candidates: ``(B, T, T)`` bool.
        rate: fraction in ``(0, 1]``.
        generator: torch random generator (default: the global one of the device).

    Returns:
        ``(B, T, T)`` bool subset of ``candidates``.
    """
    B = candidates.shape[0]
    index, keep = sample_pair_indices(candidates, rate, generator)
    out = torch.zeros(B, candidates[0].numel(), dtype=torch.bool, device=candidates.device)
    return out.scatter_(1, index, keep).view_as(candidates)


def distance_classes(dist: torch.Tensor, max_distance: int) -> torch.Tensor:
    """Tree distances ``1 .. max_distance`` -> classes ``0 .. max_distance - 1``; farther ->
    ``max_distance`` (the "farther" bucket). Distances < 1 (self, disconnected) map to 0 and
    must be masked out by the caller.

    Args:
        dist: long tensor of distances.
        max_distance: ``K`` >= 1.

    Returns:
        long tensor of the same shape with values in ``[0, K]``.
    """
    return dist.clamp(min=1, max=max_distance + 1) - 1
