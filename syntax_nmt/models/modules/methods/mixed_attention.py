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

from syntax_nmt.models.modules.device_paths import cpu_paths


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
    #: on a CPU, batches up to this many tokens wide take the explicit path through :meth:`probabilities`
    #: (faster there than the fused kernels); 0: never
    explicit_cpu_max_length = 0
    #: on a CPU, batches up to this many tokens wide compute :meth:`fused_branches` from one score matrix
    #: (:func:`branch_softmax_attention`) instead of one fused attention call per branch; 0: never. A subclass
    #: sets it from its own measurement (faster there, and the two saved ``(B, H, T, T)`` distributions within
    #: the memory it may keep).
    one_score_cpu_max_length = 0
    #: True: :meth:`fused_attention` applies the attention dropout itself (one masked softmax, whose dropout is
    #: the fused kernel's), so training with attention dropout keeps the fused path; False: dropout acts on the
    #: mixed distribution and forces the explicit path
    fused_dropout = False

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
                or (self.training and self.dropout_module.p > 0 and not self.fused_dropout)
                or (cpu_paths(query) and T <= self.explicit_cpu_max_length)):
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
        (dropout acts on the mixed distribution), unless :attr:`fused_dropout`. This default runs :meth:`fused_branches` through
        torch's fused attention: ``sum_b w_b (softmax(S + M_b) V) = (sum_b w_b softmax(S + M_b)) V``
        when each ``w_b`` is one value per query; on a CPU, up to :attr:`one_score_cpu_max_length` tokens,
        through :func:`branch_softmax_attention` instead.

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
        if cpu_paths(q) and T <= self.one_score_cpu_max_length:
            return branch_softmax_attention(q, k, v, branches)
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


def key_padding_allowed(key_padding_mask: Optional[Tensor], B: int, T: int, device) -> Tensor:
    """``(B, T, T)`` bool: query ``i`` may attend to key ``j`` unless ``j`` is padding (the global softmax's mask, as
    a branch of :func:`stacked_additive`)."""
    if key_padding_mask is None:
        return torch.ones(B, T, T, dtype=torch.bool, device=device)
    return ~key_padding_mask.bool().view(B, 1, T).expand(B, T, T)


def stacked_additive(allowed: Tensor, dtype: torch.dtype, interleaved: bool = False) -> Tensor:
    """The additive mask of :func:`stacked_attention` for ``m`` bool masks ``allowed`` ``(B, m, T, T)`` (query x key):
    ``(B, 1, m * T, T)`` ``dtype``, 0 at allowed keys and the explicit path's large finite negative value elsewhere
    (a row with no allowed key gets a harmless uniform distribution, never NaN). Its rows are mask by mask (row
    ``j * T + t``), or with ``interleaved`` query by query (row ``t * m + j``). They are stored
    ``ceil(T / 16) * 16`` wide, the alignment of torch's memory-efficient attention kernel, which would otherwise
    copy the mask at every call; the last dimension is a view of the first ``T`` columns."""
    B, m, T, _ = allowed.shape
    width = -(-T // 16) * 16
    rows = allowed.transpose(1, 2) if interleaved else allowed
    out = torch.zeros(B, 1, m * T, width, dtype=dtype, device=allowed.device)
    out[..., :T].masked_fill_(~rows.reshape(B, 1, m * T, T), torch.finfo(dtype).min / 2)
    return out[..., :T]


def stacked_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, interleaved: bool = False) -> Tensor:
    """``softmax(Q K^T + M_j) V`` for ``m`` masks ``M_j`` at once, ``(B, H, m, T, hd)``: one call of torch's fused
    attention whose queries are ``Q`` repeated ``m`` times, against the keys and values as they are (so their
    gradients are summed inside the kernel), with the stacked mask of :func:`stacked_additive` (made with the same
    ``interleaved``).

    On a GPU a layer's masked softmaxes then cost one kernel (and one in the backward pass) instead of one per mask;
    no ``(B, H, T, T)`` scores are kept for the backward pass. The price is the repeated queries, ``m`` times
    ``Q``'s memory.

    With ``interleaved`` the repeated queries are laid out ``(B, T, m, H, hd)`` (the sequence before the heads, the
    layout torch's fused kernels work in: on a GPU they write their output that way whatever the queries' layout, on
    a CPU the output follows the queries'), and so is the result, ``(B, T, m, H, hd)``, contiguous: the ``m`` outputs
    of a query, every head, are one ``(m, H hd)`` matrix, so a per-query mixture of them is one batched product with
    no copy (Syntax-BERT's topical attention, :func:`~syntax_nmt.models.modules.methods.syntax_bert.topical_mixture`).
    (An output in another layout is copied into this one: the same values, more memory traffic.)

    Args:
        q, k, v: ``(B, H, T, hd)``, ``q`` already scaled.
        mask: ``(B, 1, m * T, T)`` additive, in ``q``'s dtype (:func:`stacked_additive`).
        interleaved: the mask's rows are query by query, and so is the result.
    """
    B, H, T, hd = q.shape
    m = mask.shape[2] // T
    if not interleaved:
        queries = q.unsqueeze(2).expand(B, H, m, T, hd).reshape(B, H, m * T, hd)
        out = torch.nn.functional.scaled_dot_product_attention(queries, k, v, attn_mask=mask, scale=1.0)
        return out.view(B, H, m, T, hd)
    queries = q.transpose(1, 2).unsqueeze(2).expand(B, T, m, H, hd).reshape(B, T * m, H, hd).transpose(1, 2)
    out = torch.nn.functional.scaled_dot_product_attention(queries, k, v, attn_mask=mask, scale=1.0)
    return out.transpose(1, 2).reshape(B, T, m, H, hd).contiguous()


def masked_softmax(scores: Tensor, additive: Tensor) -> Tensor:
    """float32 softmax of ``scores + additive`` over the last dimension."""
    return torch.softmax(scores + additive, dim=-1)


def branch_softmax_attention(q: Tensor, k: Tensor, v: Tensor,
                             branches: List[Tuple[Optional[Tensor], Optional[Tensor]]]) -> Tensor:
    """``(sum_b w_b softmax(Q K^T + M_b)) V`` ``(B, H, T, hd)`` (float32) from one score matrix: the branches of
    :meth:`MixedSelfAttention.fused_branches` without one attention call per branch.

    The scores ``Q K^T`` are computed once, in float32 as the explicit path does (float64 for float64 inputs), and
    each branch's distribution ``P_b`` is kept for the backward pass, which recomputes nothing: two ``(B, H, T, T)``
    float32 matrices for SLA's two branches (the explicit path through :meth:`MixedSelfAttention.probabilities`
    keeps three: both distributions and their mixture). On a CPU this is faster than one fused call per branch
    for short and medium widths (each fused call recomputes the scores in its backward pass), at the cost of
    memory growing with ``T``; see :attr:`MixedSelfAttention.one_score_cpu_max_length`. Autocast is off inside:
    the products after the scores run in float32 (the scores' own product in the dtype of ``Q`` and ``K``).

    Args:
        q, k, v: ``(B, H, T, hd)``, ``q`` already scaled.
        branches: ``[(w_b, M_b), ...]``: ``w_b`` float32 broadcastable to ``(B, 1, T, 1)`` (one value per query)
            or None for 1; ``M_b`` an additive mask broadcastable to ``(B, H, T, T)`` or None.
    """
    weights = [w for w, _ in branches]
    masks = [m for _, m in branches]
    return _BranchSoftmax.apply(q, k, v, len(branches), *weights, *masks)


class _BranchSoftmax(torch.autograd.Function):
    """See :func:`branch_softmax_attention`. With ``W = sum_b w_b P_b``, ``out = W V``: ``dV = W^T dO``,
    ``dW = dO V^T``, ``r_b = rowsum(dW * P_b)``, ``dw_b = r_b`` summed over heads, and the scores get
    ``dS = sum_b w_b P_b * (dW - r_b)`` (each softmax's backward), so ``dQ = dS K``, ``dK = dS^T Q``."""

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, n: int, *weights_and_masks):
        with torch.autocast(q.device.type, enabled=False):
            return _BranchSoftmax._forward(ctx, q, k, v, n, *weights_and_masks)

    @staticmethod
    def _forward(ctx, q: Tensor, k: Tensor, v: Tensor, n: int, *weights_and_masks):
        weights, masks = weights_and_masks[:n], weights_and_masks[n:]
        acc = torch.promote_types(q.dtype, torch.float32)  # float32, or float64 for float64 inputs
        scores = torch.matmul(q, k.transpose(-1, -2)).to(acc)
        probs = [torch.softmax(scores if m is None else scores + m, dim=-1) for m in masks]
        del scores
        mix = _mix(weights, probs)
        out = torch.matmul(mix, v.to(acc))
        ctx.n = n
        ctx.save_for_backward(q, k, v, *weights, *probs)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        with torch.autocast(grad.device.type, enabled=False):
            return _BranchSoftmax._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad: Tensor):
        n = ctx.n
        q, k, v, *rest = ctx.saved_tensors
        weights, probs = rest[:n], rest[n:]
        acc = torch.promote_types(q.dtype, torch.float32)
        grad = grad.to(acc)
        dv = torch.matmul(_mix(weights, probs).transpose(-1, -2), grad)
        dmix = torch.matmul(grad, v.to(acc).transpose(-1, -2))
        dscores, dweights = None, []
        for w, p in zip(weights, probs):
            r = (dmix * p).sum(-1, keepdim=True)  # B H T 1
            dweights.append(None if w is None or not ctx.needs_input_grad[4 + len(dweights)]
                            else r.sum_to_size(w.shape))
            part = (dmix - r).mul_(p)
            if w is not None:
                part.mul_(w)
            dscores = part if dscores is None else dscores.add_(part)
        dq = torch.matmul(dscores, k.to(acc))
        dk = torch.matmul(dscores.transpose(-1, -2), q.to(acc))
        return (dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, *dweights, *([None] * n))


def _mix(weights, probs) -> Tensor:
    """``sum_b w_b P_b``, a new tensor (``probs`` are left as they are)."""
    mix = None
    for w, p in zip(weights, probs):
        if mix is None:
            mix = p.clone() if w is None else p * w
        else:
            mix.add_(p if w is None else p * w)
    return mix
