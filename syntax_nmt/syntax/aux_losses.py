"""Batched pieces shared by the methods' auxiliary losses (pure torch, no fairseq).

Used by the ``AuxLoss`` classes of the methods (``syntax_nmt.models.modules.methods``), which the criterion
``label_smoothed_cross_entropy_with_syntax`` computes: LISA's parse attention (Strubell et al., 2018) and
SEPREM's dependency distance and head prediction (Xu et al., 2021, sec. 4.4). Everything is a masked tensor
op over the whole padded batch: no Python loop over sentences, no indexing by a data-dependent count
(``nonzero``), so no host-device sync.
"""

from typing import Tuple

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
