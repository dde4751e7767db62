"""Self-attention whose distribution is a syntax-aware mixture of masked softmaxes: the base class of the
methods that replace a layer's self-attention (SLA, Syntax-BERT, LISA).

:class:`MixedSelfAttention` subclasses fairseq's ``MultiheadAttention`` so that a layer keeps its
own ``q_proj``/``k_proj``/``v_proj``/``out_proj`` (same names, same initialisation); a subclass
only says how the attention probabilities are formed from the scaled scores ``Q K^T / sqrt(d)``
(:meth:`MixedSelfAttention.probabilities`). Scores and softmaxes are computed in float32 (as
fairseq's own softmax does) and blocked entries get a large finite negative value, so a fully
blocked row gives a uniform distribution, never NaN, in fp32, fp16 and bf16.
"""

from typing import Dict, List, Optional, Tuple

import torch
from fairseq.modules import MultiheadAttention
from torch import Tensor


class MixedSelfAttention(MultiheadAttention):
    """Base class; see the module docstring.

    Args:
        embed_dim (int): model dimension.
        num_heads (int): attention heads.
        dropout (float): attention dropout (on the final probabilities).
        state (SyntaxState): where the batch's syntax context is found.
    """

    #: the kind of what :attr:`recorded` holds, for ``syntax-nmt-analyze`` (``""``: records nothing)
    record_kind = ""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float, state, **kwargs):
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True, **kwargs)
        self.syntax_state = state
        #: when True, forward stores analysis tensors (detached) in ``recorded``, a dict whose keys
        #: ``record_kind`` (a class attribute) names for ``syntax-nmt-analyze``
        self.record = False
        self.recorded = None

    def analysis_maps(self, recorded: Dict[str, Tensor]) -> Optional[Dict]:
        """What ``syntax-nmt-analyze attention`` shows of ``recorded`` (this module's record of a batch): named
        ``(T, T)`` maps (e.g. attention, mean over heads), per-token vectors and bool masks of the batch's first
        sentence, each with a title, in the schema of :mod:`syntax_nmt.analyze.models`. None (this default):
        nothing, and the analysis lists the module as not shown."""
        return None

    def probabilities(self, scores: Tensor, x: Tensor, ctx, key_padding_mask: Optional[Tensor]) -> Tensor:
        """``(B, H, T, T)`` float32 attention probabilities from float32 scaled ``scores``.

        Args:
            scores: ``(B, H, T, T)`` float32, ``Q K^T / sqrt(d)`` (plus any ``attn_mask``).
            x: the layer input ``(T, B, C)`` (for gates).
            ctx: the batch's :class:`SyntaxContext`.
            key_padding_mask: bool ``(B, T)`` or None.
        """
        raise NotImplementedError

    def forward(self, query: Tensor, key: Optional[Tensor], value: Optional[Tensor],
                key_padding_mask: Optional[Tensor] = None, incremental_state=None, need_weights: bool = True,
                static_kv: bool = False, attn_mask: Optional[Tensor] = None, before_softmax: bool = False,
                need_head_weights: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """fairseq's ``MultiheadAttention.forward`` signature, for encoder self-attention."""
        if incremental_state is not None or static_kv or before_softmax:
            raise ValueError(f"{type(self).__name__} is an encoder self-attention (no incremental state)")
        T, B, C = query.shape
        H, hd = self.num_heads, self.head_dim
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(query)
        v = self.v_proj(query)
        q = q.view(T, B, H, hd).permute(1, 2, 0, 3)  # B H T hd
        k = k.view(T, B, H, hd).permute(1, 2, 0, 3)
        v = v.view(T, B, H, hd).permute(1, 2, 0, 3)
        out = None
        if not (self.record or need_weights or need_head_weights or attn_mask is not None
                or (self.training and self.dropout_module.p > 0)):
            out = self.fused_attention(q, k, v, query, self.syntax_state.current(), key_padding_mask)
        if out is not None:
            out = self.out_proj(out.to(v.dtype).permute(2, 0, 1, 3).reshape(T, B, C))
            return self.transform_output(out), None
        scores = torch.matmul(q, k.transpose(-1, -2)).float()
        if attn_mask is not None:  # fairseq's (T, T) or (B * H, T, T) additive mask
            m = attn_mask.float()
            scores = scores + (m.view(1, 1, T, T) if m.dim() == 2 else m.view(B, H, T, T))
        probs = self.probabilities(scores, query, self.syntax_state.current(), key_padding_mask)
        attn = self.dropout_module(probs).to(v.dtype)
        out = torch.matmul(attn, v)  # B H T hd
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(T, B, C))
        out = self.transform_output(out)
        weights = None
        if need_weights or need_head_weights:
            weights = probs.transpose(0, 1)  # H B T T, as fairseq returns per-head weights
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return out, weights

    def fused_attention(self, q: Tensor, k: Tensor, v: Tensor, x: Tensor, ctx,
                        key_padding_mask: Optional[Tensor]) -> Optional[Tensor]:
        """The attention output ``(B, H, T, hd)`` (before the output projection) computed without a
        ``(B, H, T, T)`` probability matrix, or None for the explicit path through :meth:`probabilities`.

        Called when no weights are asked for, nothing is recorded and no attention dropout is active
        (dropout acts on the mixed distribution). This default runs :meth:`fused_branches` through
        torch's fused attention: ``sum_b w_b (softmax(S + M_b) V) = (sum_b w_b softmax(S + M_b)) V``
        when each ``w_b`` is one value per query.

        Args:
            q, k, v: ``(B, H, T, hd)``, ``q`` already scaled by ``1 / sqrt(hd)``.
            x: the layer input ``(T, B, C)``.
            ctx: the batch's :class:`SyntaxContext`.
            key_padding_mask: bool ``(B, T)`` or None.
        """
        B, H, T, _ = q.shape
        branches = self.fused_branches(x, ctx, key_padding_mask, B, T, q.dtype)
        if branches is None:
            return None
        out = None
        for weight, mask in branches:
            part = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)
            part = part if weight is None else weight * part.float()
            out = part if out is None else out + part
        return out

    def fused_branches(self, x: Tensor, ctx, key_padding_mask: Optional[Tensor], B: int, T: int,
                       dtype: torch.dtype) -> Optional[List[Tuple[Optional[Tensor], Optional[Tensor]]]]:
        """The distribution as a per-query weighted sum of masked softmaxes, for torch's fused attention.

        A subclass whose :meth:`probabilities` is ``sum_b w_b softmax(scores + M_b)`` returns
        ``[(w_b, M_b), ...]``: ``w_b`` float32 ``(B, 1, T, 1)`` (or None for 1), ``M_b`` an additive mask in
        ``dtype`` broadcastable to ``(B, H, T, T)`` (finite, as :meth:`probabilities` uses, so a fully
        blocked row stays uniform) or None. Used when no weights are asked for, nothing is recorded and
        no attention dropout is active (dropout acts on the mixed distribution); None: the explicit path.
        """
        return None

    def transform_output(self, out: Tensor) -> Tensor:
        """Hook applied after the output projection (identity here)."""
        return out


def key_padding_additive(key_padding_mask: Optional[Tensor], B: int, T: int, device,
                         dtype: torch.dtype = torch.float32) -> Tensor:
    """``(B, 1, 1, T)`` ``dtype``: a large negative finite value at padded keys, 0 elsewhere."""
    if key_padding_mask is None:
        return torch.zeros(B, 1, 1, T, device=device, dtype=dtype)
    fill = torch.finfo(dtype).min / 2
    return torch.zeros(B, 1, 1, T, device=device, dtype=dtype).masked_fill(
        key_padding_mask.view(B, 1, 1, T).bool(), fill)


def masked_softmax(scores: Tensor, additive: Tensor) -> Tensor:
    """float32 softmax of ``scores + additive`` over the last dimension."""
    return torch.softmax(scores + additive, dim=-1)
