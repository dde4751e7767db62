"""LISA's parse head folded into an ordinary attention head (pure torch, no fairseq import).

LISA's parse head (Strubell et al., 2018, sec. 2.2, after Dozat & Manning's biaffine parser) scores query ``i``
against key ``j`` with ``s_ij = q_i^T U k_j + u^T k_j``, where ``q_i = W_h x_i + b_h`` and ``k_j`` are that head's
slices of the layer's own query and key projections (not scaled). That is ``(U^T q_i + u)^T k_j``: a dot product
of the keys with an affine function of the layer input, i.e. an ordinary head whose query projection is
``U^T W_h`` with bias ``U^T b_h + u``. fairseq's ``MultiheadAttention`` scales the projected queries by
``s = d_head ** -0.5`` before the product, so the folded projection is divided by ``s``: the stock head then
computes ``(s (W' x + b'))^T k = (U^T q + u)^T k`` exactly (docs/deploy.md, "Serve without the plugin").
"""

from typing import Optional, Tuple

import torch
from torch import Tensor


def fold_biaffine_head(q_weight: Tensor, q_bias: Optional[Tensor], bilinear: Tensor, key_bias: Tensor, head: int,
                       scaling: float) -> Tuple[Tensor, Tensor]:
    """The query projection of a layer with head ``head``'s biaffine scores folded in.

    Args:
        q_weight: ``(H * d, C)`` the layer's query projection weight (``H`` heads of width ``d``).
        q_bias: ``(H * d,)`` its bias, or None (taken as 0).
        bilinear: ``(d, d)`` ``U``.
        key_bias: ``(d,)`` ``u``.
        head: the parse head's index, ``0 <= head < H``.
        scaling: the attention's query scaling ``s`` (fairseq: ``d ** -0.5``), applied to ``q_proj(x)``.

    Returns:
        ``(weight, bias)``: new tensors of ``q_weight``'s shape and dtype, equal to the old ones outside the head's
        rows; its rows ``U^T W_h / s`` and ``(U^T b_h + u) / s``, computed in float64.

    Raises:
        ValueError: shapes that do not fit, a head out of range or a scaling of 0.
    """
    d = bilinear.shape[0]
    if bilinear.shape != (d, d) or key_bias.shape != (d,):
        raise ValueError(f"the parse head's U {tuple(bilinear.shape)} and u {tuple(key_bias.shape)} are not "
                         f"(d, d) and (d,)")
    rows = q_weight.shape[0]
    if q_weight.dim() != 2 or rows % d or not 0 <= head < rows // d:
        raise ValueError(f"head {head} of width {d} does not fit a query projection of shape {tuple(q_weight.shape)}")
    if q_bias is not None and q_bias.shape != (rows,):
        raise ValueError(f"query bias of shape {tuple(q_bias.shape)} for a projection of {rows} rows")
    if scaling == 0:
        raise ValueError("the query scaling is 0")
    lo, hi = head * d, (head + 1) * d
    u_t = bilinear.detach().double().t()
    w_h = q_weight.detach()[lo:hi].double()
    b_h = q_bias.detach()[lo:hi].double() if q_bias is not None else torch.zeros(d, dtype=torch.float64)
    weight = q_weight.detach().clone()
    bias = q_bias.detach().clone() if q_bias is not None else torch.zeros(rows, dtype=q_weight.dtype)
    weight[lo:hi] = ((u_t @ w_h) / scaling).to(weight.dtype)
    bias[lo:hi] = ((u_t @ b_h + key_bias.detach().double()) / scaling).to(bias.dtype)
    return weight, bias
