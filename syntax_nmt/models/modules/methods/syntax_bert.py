"""``--syntax-attention syntax_bert``: Syntax-BERT sub-networks with topical attention (Bai et al., 2021)."""

import math
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from torch import Tensor, nn

from syntax_nmt.models.modules.device_paths import cpu_paths
from syntax_nmt.models.modules.methods.base import PARSE, SyntaxMethod, parse_layers, register_syntax_method
from syntax_nmt.models.modules.methods.mixed_attention import (MixedSelfAttention, key_padding_additive,
                                                               key_padding_allowed, stacked_additive,
                                                               stacked_attention)
from syntax_nmt.models.modules.methods.syntax_bert_masks import (SYNTAX_BERT_SIBLINGS, syntax_bert_mask_names,
                                                                 syntax_bert_masks, syntax_bert_num_masks)

MASK_MODES = ("exclude", "product")
#: ``--syntax-bert-sibling`` of a checkpoint trained before the option (its saved args lack it)
LEGACY_SIBLING = "disjoint"


@dataclass
class SyntaxBertConfig(FairseqDataclass):
    syntax_bert_layers: str = field(
        default="all",
        metadata={"help": "encoder layers (0-based, comma-separated, negative from the top, or 'all') whose "
                  "self-attention becomes Syntax-BERT's masked sub-networks + topical attention"},
    )
    syntax_bert_max_distance: int = field(
        default=3, metadata={"help": "sub-networks for tree distances d = 1..D of the parent, child and sibling "
                             "masks (3*D masks, 3*D-1 with --syntax-bert-sibling disjoint; the paper: 15)"}
    )
    syntax_bert_sibling: ChoiceEnum(list(SYNTAX_BERT_SIBLINGS)) = field(
        default="lca", metadata={"help": "sibling mask at distance d: lca = the pair has a lowest common ancestor "
                                 "(one tree), parent/child pairs included (the paper, sec. 3.2); disjoint = one "
                                 "tree and neither is an ancestor of the other (no d = 1 mask: always empty), "
                                 "what checkpoints trained before this option use"}
    )
    no_syntax_bert_global: bool = field(
        default=False, metadata={"help": "leave out the unmasked self-attention, which otherwise takes part as one "
                                 "more sub-network (then tokens with no allowed key in any mask, e.g. EOS, get a "
                                 "zero attention output, output bias included)"}
    )
    syntax_bert_mask_mode: ChoiceEnum(list(MASK_MODES)) = field(
        default="exclude", metadata={"help": "exclude: masked keys get no weight; product: the paper's literal "
                                     "softmax(Q K^T * M / sqrt(d)), masked keys keep score 0"}
    )


class SyntaxBertAttention(MixedSelfAttention):
    """Syntax-BERT's syntactic attention layer, Bai et al. (2021), "Syntax-BERT: Improving
    Pre-trained Transformers with Syntax Trees", sec. 3.2-3.3, eq. 1-2.

    Every sub-network ``j`` (a parent/child/sibling mask at distance ``d``, plus the unmasked
    attention with ``global_subnet``) attends with the layer's own projections (eq. 1):
    ``H_j = concat_h(softmax(Q_h K_h^T / sqrt(d_h) masked by M_j) V_h) W^O + b^O``. Topical
    attention (eq. 2) aggregates them per token with a learned task query ``q_task``:
    ``H^O = sum_j softmax_j(q_task . (H_j W^K) / sqrt(d)) H_j W^V``.

    Computed without materialising the ``H_j``: since ``W^O``, ``W^K`` and ``W^V`` are linear,
    ``q_task . H_j W^K = A_j . (W^O^T W^K^T q_task) + const`` and, with weights ``w_j`` summing
    to 1, ``sum_j w_j H_j = (sum_j w_j A_j) W^O + b^O`` with ``A_j = P_j V``. In ``exclude`` mode each
    ``A_j`` is one call of torch's fused ``scaled_dot_product_attention`` with the sub-network's additive
    mask (:meth:`fused_attention`): no ``(B, M, H, T, T)`` distribution is kept for backward. The explicit
    path (one batched softmax over a ``(B, M, H, T, T)`` score tensor, :meth:`probabilities`) serves
    ``product`` mode, attention dropout, recorded or returned weights. ``W^V`` starts as the identity (so
    that one all-allowed sub-network is exactly the standard layer).

    A token with no allowed key in a sub-network (a leaf in the parent masks, every special
    token) leaves that sub-network out of its topical softmax; a token with no sub-network at
    all (only possible with ``global_subnet=False``: special tokens, one-word sentences) has
    no weights ``w_j`` (the empty sum) and gets a zero attention output, the output bias ``b^O``
    included (only its residual passes).

    Args:
        embed_dim, num_heads, dropout, state: as :class:`MixedSelfAttention`.
        max_distance (int): ``D``, the largest tree distance of a mask.
        global_subnet (bool): the unmasked self-attention is one more sub-network.
        mask_mode (str): ``exclude`` (masked keys get no weight) or ``product`` (eq. 1's literal
            ``QK^T * M``).
        sibling (str): reading of the sibling mask, ``lca`` (the paper) or ``disjoint``
            (see :func:`~syntax_nmt.models.modules.methods.syntax_bert_masks.syntax_bert_masks`).
    """

    #: ``recorded``: ``topical`` weights and ``valid`` sub-networks (B, M, T), the mixed ``attn`` (B, H, T, T)
    record_kind = "syntax_bert"

    def __init__(self, embed_dim, num_heads, dropout, state, max_distance: int = 3, global_subnet: bool = True,
                 mask_mode: str = "exclude", sibling: str = "lca", **kwargs):
        super().__init__(embed_dim, num_heads, dropout, state, **kwargs)
        if mask_mode not in MASK_MODES:
            raise ValueError(f"--syntax-bert-mask-mode must be one of {MASK_MODES}, got {mask_mode!r}")
        if sibling not in SYNTAX_BERT_SIBLINGS:
            raise ValueError(f"--syntax-bert-sibling must be one of {SYNTAX_BERT_SIBLINGS}, got {sibling!r}")
        self.max_distance = max_distance
        self.global_subnet = global_subnet
        self.mask_mode = mask_mode
        self.sibling = sibling
        #: number of syntax masks (sub-networks besides the global one)
        self.num_masks = syntax_bert_num_masks(max_distance, sibling)
        self.q_task = nn.Parameter(torch.empty(embed_dim).normal_(0, embed_dim ** -0.5))
        self.topic_key = nn.Linear(embed_dim, embed_dim, bias=False)  # W^K of eq. 2
        self.topic_value = nn.Linear(embed_dim, embed_dim, bias=False)  # W^V of eq. 2
        nn.init.eye_(self.topic_value.weight)

    def _key(self):
        return ("syntax_bert", self.max_distance, self.sibling)

    def subnet_masks(self, ctx) -> Tensor:
        """Bool ``(B, M, T, T)``: the syntax masks (computed once per batch)."""
        return ctx.cached(self._key(), lambda: syntax_bert_masks(ctx.tree, self.max_distance, self.sibling))

    def subnet_valid(self, ctx) -> Tensor:
        """Bool ``(B, M, T)``: the token has an allowed key in syntax mask ``j`` (computed once per batch)."""
        return ctx.cached(("valid", self._key()), lambda: self.subnet_masks(ctx).any(-1))

    def has_subnetwork(self, ctx) -> Tensor:
        """Bool ``(B, T)``: the token takes part in at least one sub-network (always, with the global
        one or in ``product`` mode, where every sub-network is valid for every token)."""
        return ctx.cached(("has", self._key()), lambda: self.subnet_valid(ctx).any(1))

    #: On a CPU, batches up to this many tokens wide take the explicit path (one batched softmax over the
    #: ``(B, M, H, T, T)`` scores): there the 3D + 2 attention calls per layer cost more than the scores they
    #: avoid. The length bench's encoder (6 layers, width 256, 4 heads, D = 3, 4,096 tokens, 1 thread,
    #: interleaved, median of 5), time ratio to the stock encoder, explicit / fused+sparse: 0.74 / 0.59 at
    #: T = 8, 0.71 / 0.58 at 32, 0.58-0.59 / 0.51-0.55 at 64, 0.47 / 0.58 at 80, 0.24 / 0.56 at 128.
    #: Other devices always take the fused kernels.
    explicit_cpu_max_length = 64

    def fused_attention(self, q, k, v, x, ctx, key_padding_mask):
        """Eq. 1-2 from the sub-networks' outputs ``A_j = softmax(Q K^T / sqrt(d_h) + M_j) V`` (before ``W^O``),
        each through torch's fused attention, so no ``(B, M, H, T, T)`` distribution is kept for backward.

        The topical logit of eq. 2 is linear in ``A_j`` (:meth:`topical_weights`:
        ``q_task . H_j W^K = A_j . r + const``), and ``sum_j w_j P_j V = sum_j w_j A_j`` since each ``w_j`` is
        one value per query. A row with no allowed key gets the finite additive mask of the explicit path
        (a harmless distribution over every key, never NaN) and weight 0. ``product`` mode (eq. 1's literal
        ``QK^T * M`` is no masked softmax) takes the explicit path, as do CPU batches up to
        :attr:`explicit_cpu_max_length` tokens wide.
        """
        if self.num_masks > 0 and self.mask_mode != "exclude":
            return None
        if not cpu_paths(q):
            return self.stacked_subnetworks(q, k, v, ctx, key_padding_mask)
        B, H, T, _ = q.shape
        attend = torch.nn.functional.scaled_dot_product_attention
        outs, valid = [], []
        if self.num_masks > 0:
            # the sparse plans read the masks' sizes on the host: free on a CPU; elsewhere every sub-network
            # goes through torch's fused kernels, with no host-device synchronisation
            keys = self.subnet_keys(ctx) if cpu_paths(q) else [None] * self.num_masks
            dense = [j for j, plan in enumerate(keys) if plan is None]
            if dense:  # the additive masks of the sub-networks computed densely, for this batch
                add = ctx.additive((self._key(), "dense", tuple(dense)), lambda: self.subnet_masks(ctx)[:, dense],
                                   q.dtype)
            for j, plan in enumerate(keys):
                if plan is None:
                    i = dense.index(j)
                    outs.append(attend(q, k, v, attn_mask=add[:, i:i + 1], scale=1.0))
                else:
                    outs.append(sparse_attention(q, k, v, plan))
            valid.append(self.subnet_valid(ctx))
        if self.global_subnet or self.num_masks == 0:
            pad = None if key_padding_mask is None else key_padding_additive(key_padding_mask, B, T, q.device, q.dtype)
            outs.append(attend(q, k, v, attn_mask=pad, scale=1.0))
            valid.append(torch.ones(B, 1, T, dtype=torch.bool, device=q.device))
        r = self.topic_direction()  # H hd
        logits = torch.stack([torch.einsum("bhtd,hd->bt", a.float(), r) for a in outs], dim=1)  # B M T
        weights = self.topical_softmax(logits, torch.cat(valid, dim=1))
        out = None
        for j, a in enumerate(outs):
            part = weights[:, j].view(B, 1, T, 1) * a.float()
            out = part if out is None else out + part
        if self.num_masks > 0 and not self.global_subnet and all(p is not None and p[0] != "edges" for p in keys):
            # only gathers and empty masks: no score took part, so Q and K (and V, when every mask is empty) get a
            # zero gradient (as the dense softmaxes give), not none (DDP expects a gradient for every parameter)
            out = out + (q.sum() + k.sum() + v.sum()).float() * 0
        return out

    def stacked_subnetworks(self, q, k, v, ctx, key_padding_mask) -> Tensor:
        """:meth:`fused_attention` off the CPU: every sub-network of the layer (the syntax masks, then the global
        one) in one fused attention call (:func:`stacked_attention`, the masks stacked once per batch, query by
        query), then eq. 2 as one autograd node (:func:`topical_mixture`: the logits as one product with ``r``,
        :meth:`topic_direction`, the softmax over the sub-networks and the mixture as one batched product), with
        no host-device synchronisation and a number of kernels that does not grow with the number of masks.

        What the layer writes beyond the stock attention is then four tensors ``M`` times the queries' size: the
        repeated queries and the ``M`` outputs in the forward pass, their gradients in the backward pass (the
        mixture's backward writes its ``M`` gradients once, for both of eq. 2's uses of each output)."""
        B, H, T, hd = q.shape

        def masks():
            allowed = [self.subnet_masks(ctx)] if self.num_masks > 0 else []
            valid = [self.subnet_valid(ctx)] if self.num_masks > 0 else []
            if self.global_subnet or self.num_masks == 0:
                allowed.append(key_padding_allowed(key_padding_mask, B, T, q.device).unsqueeze(1))
                valid.append(torch.ones(B, 1, T, dtype=torch.bool, device=q.device))
            valid = torch.cat(valid, dim=1).transpose(1, 2)  # B T M
            return stacked_additive(torch.cat(allowed, dim=1), q.dtype, True), topical_valid(valid)

        mask, valid = ctx.cached(("interleaved", self._key(), self.global_subnet, q.dtype), masks)
        out = stacked_attention(q, k, v, mask, True)  # B T M H hd
        return topical_mixture(out, self.topic_direction(), valid)

    def subnet_keys(self, ctx) -> List[Optional[Tuple[Tensor, ...]]]:
        """How :meth:`fused_attention` computes each syntax mask's sub-network in this batch (once per batch,
        shared by the layers): ``None``, torch's fused attention over every key with the additive mask; else
        the plan of :func:`sparse_attention`, from the mask's allowed pairs alone, when it is cheaper
        (:func:`sparse_edges_limit`): an empty mask; a gather when no row has more than one allowed key (a
        child mask, whose key is the query's ancestor at distance ``d``, when the ancestor words are one
        piece); an edge-list softmax otherwise (rows with several keys: a multi-piece ancestor word, the
        children of a word in a parent mask). Used on a CPU above :attr:`explicit_cpu_max_length`, where reading
        the sizes costs nothing (on a GPU it would cost a host-device synchronisation per batch). The length
        bench (6 layers, width 256, 4,096 tokens, 1 thread, D = 3) with these plans against the explicit path:
        time ratio to the stock encoder
        0.53 / 0.53 / 0.54 against 0.50 / 0.30 / 0.15 at T = 64 / 128 / 256, backward memory 2.5x against
        3.3x / 5.4x / 9.6x."""

        def plan():
            masks = self.subnet_masks(ctx)  # B M T T
            B, M, T, _ = masks.shape
            counts = masks.sum(-1)  # B M T
            edges = counts.sum(dim=(0, 2)).tolist()
            widths = counts.amax(dim=(0, 2)).tolist() if counts.numel() else [0] * M
            limit = sparse_edges_limit(T) * B * T
            return [sparse_plan(masks[:, j]) if edges[j] <= limit or widths[j] <= 1 else None for j in range(M)]

        return ctx.cached(("keys", self._key()), plan)

    def probabilities(self, scores, x, ctx, key_padding_mask):
        B, H, T, _ = scores.shape
        pad = key_padding_additive(key_padding_mask, B, T, scores.device).unsqueeze(1)  # B 1 1 1 T
        s = scores.unsqueeze(1)  # B 1 H T T
        if self.num_masks > 0:
            masks = self.subnet_masks(ctx)  # B M T T
            if self.mask_mode == "exclude":
                add = ctx.additive(self._key(), lambda: self.subnet_masks(ctx))
                logits = s + add.unsqueeze(2)  # B M H T T
                valid = self.subnet_valid(ctx)  # B M T
            else:  # the paper's literal element-wise product: masked scores become 0
                logits = s * masks.unsqueeze(2).to(s.dtype) + pad
                valid = torch.ones(masks.shape[:3], dtype=torch.bool, device=masks.device)
            if self.global_subnet:
                logits = torch.cat([logits, (s + pad).expand(B, 1, H, T, T)], dim=1)
                valid = torch.cat([valid, torch.ones(B, 1, T, dtype=torch.bool, device=valid.device)], dim=1)
        else:
            logits = s + pad  # B 1 H T T
            valid = torch.ones(B, 1, T, dtype=torch.bool, device=scores.device)
        p = torch.softmax(logits, dim=-1)  # B M H T T
        weights = self.topical_weights(p, x, valid)  # B M T
        mixed = torch.einsum("bmhik,bmi->bhik", p, weights)
        if self.record:
            self.recorded = {"topical": weights.detach(), "valid": valid.detach(), "attn": mixed.detach()}
        return mixed

    def subnet_names(self) -> List[str]:
        """Names of the sub-networks in the order of :meth:`probabilities` (the masks', then ``global``)."""
        names = syntax_bert_mask_names(self.max_distance, self.sibling)
        return names + ["global"] if self.global_subnet or not names else names

    def analysis_maps(self, recorded):
        """The attention of the layer (the sub-networks' distributions mixed by the topical weights, mean over
        heads) and the topical weights of every sub-network in which the token has a key (eq. 2)."""
        names = self.subnet_names()
        return {"title": "Syntax-BERT",
                "maps": {"attn": {"title": "attention (sub-networks mixed by topical attention)",
                                  "values": recorded["attn"][0].mean(0)},
                         "topical": {"title": "topical weight of each sub-network (eq. 2)",
                                     "values": recorded["topical"][0].t(), "columns": names, "within": "valid"}},
                "masks": {"valid": {"title": "sub-networks in which the token has a key",
                                    "values": recorded["valid"][0].t(), "columns": names}}}

    def topic_direction(self) -> Tensor:
        """``(H, hd)`` float32 ``r = W^O^T W^K^T q_task / sqrt(d)``, split per head: eq. 2's topical logit of
        sub-network ``j`` at token ``i`` is ``A_j[i] . r`` plus a term that does not depend on ``j``
        (``q_task . b^O W^K``), where ``A_j = P_j V`` is the sub-network's output before ``W^O``."""
        u = self.topic_key.weight.t().float() @ self.q_task.float()  # C
        return (self.out_proj.weight.t().float() @ u).view(self.num_heads, self.head_dim) / math.sqrt(self.embed_dim)

    def topical_softmax(self, logits: Tensor, valid: Tensor) -> Tensor:
        """Eq. 2's softmax over the sub-networks ``(B, M, T)`` in which the token has a key; a token with
        none gets weight 0 everywhere."""
        logits = logits.masked_fill(~valid, torch.finfo(torch.float32).min / 2)
        w = torch.softmax(logits, dim=1)
        return w * valid.any(dim=1, keepdim=True)

    def topical_weights(self, p: Tensor, x: Tensor, valid: Tensor) -> Tensor:
        """Topical attention weights ``(B, M, T)`` over the sub-networks (eq. 2) from their distributions
        ``p`` ``(B, M, H, T, T)``."""
        B, M, H, T, _ = p.shape
        v = self.v_proj(x).float().view(T, B, H, self.head_dim)
        e = torch.einsum("tbhd,hd->bht", v, self.topic_direction())  # e_h[k] = v_h[k] . r_h
        return self.topical_softmax(torch.einsum("bmhik,bhk->bmi", p, e), valid)

    def transform_output(self, out):
        """``W^V`` of eq. 2; zero at tokens with no sub-network (``out`` holds ``b^O`` there)."""
        out = self.topic_value(out)
        if self.global_subnet or self.mask_mode == "product" or self.num_masks == 0:
            return out
        has = self.has_subnetwork(self.syntax_state.current())  # B T
        return out * has.t().unsqueeze(-1).to(out.dtype)


def topical_mixture(out: Tensor, r: Tensor, valid) -> Tensor:
    """Eq. 2 from the sub-networks' outputs ``A_j`` (before ``W^O``): ``sum_j w_j A_j`` ``(B, H, T, hd)`` with
    ``w = softmax_j(A_j . r)`` over the sub-networks in which the token has a key (:meth:`SyntaxBertAttention.
    topical_softmax`: a token with none gets weight 0), as one autograd node.

    With the ``M`` outputs of a query adjacent (``(M, H hd)`` matrices, :func:`stacked_attention` interleaved), the
    logits are one matrix-vector product, the mixture one batched product, each writing only its result; the
    backward pass writes ``dA_j = w_j dY + dlogit_j r`` once, as one batched product, where autograd writes one
    product for each use of ``A_j``, their sum and copies, each ``M`` times the queries' size. Products in ``out``'s
    dtype, the softmax in float32 (as the explicit path); autocast is off inside.

    Args:
        out: ``(B, T, M, H, hd)`` contiguous (:func:`stacked_attention` interleaved).
        r: ``(H, hd)`` float32 (:meth:`SyntaxBertAttention.topic_direction`).
        valid: bool ``(B, T, M)``, the token has an allowed key in sub-network ``j``; or :func:`topical_valid` of it,
            made once per batch.

    Returns:
        ``(B, H, T, hd)``, a view of a ``(B, T, H, hd)`` tensor.
    """
    blocked, has = valid if isinstance(valid, tuple) else topical_valid(valid)
    return _TopicalMixture.apply(out, r, blocked, has)


def topical_valid(valid: Tensor) -> Tuple[Tensor, Tensor]:
    """What :func:`topical_mixture` reads of ``valid`` ``(B, T, M)``: ``~valid`` and ``valid.any(-1)`` as float32
    ``(B, T, 1)``."""
    return ~valid, valid.any(-1, keepdim=True).float()


class _TopicalMixture(torch.autograd.Function):
    """See :func:`topical_mixture`. With ``s = softmax(logits)`` over the valid sub-networks, ``w = s * has`` and
    ``y = sum_j w_j A_j``: ``dw_j = dY . A_j``, ``dlogit = softmax_backward(has * dw, s)`` (0 where ``s`` is: at
    invalid ``j``, or everywhere for a token with none, whose ``has`` is 0), ``dA_j = w_j dY + dlogit_j r``,
    ``dr = sum dlogit_j A_j``: five products on views, few operations (a GPU at this width is bound by launches)."""

    @staticmethod
    def forward(ctx, out: Tensor, r: Tensor, blocked: Tensor, has: Tensor) -> Tensor:
        with torch.autocast(out.device.type, enabled=False):
            B, T, M, H, hd = out.shape
            acc = torch.float64 if out.dtype == torch.float64 else torch.float32
            rows = out.view(B * T, M, H * hd)
            logits = torch.mm(out.view(B * T * M, H * hd), r.to(out.dtype).view(H * hd, 1)).view(B, T, M)
            s = torch.softmax(logits.to(acc).masked_fill(blocked, torch.finfo(torch.float32).min / 2), dim=-1)
            w = s * has  # B T M
            y = torch.bmm(w.to(out.dtype).view(B * T, 1, M), rows)  # B*T 1 H*hd
        ctx.r_dtype = r.dtype
        ctx.save_for_backward(out, r, has, s, w)
        return y.view(B, T, H, hd).transpose(1, 2)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        out, r, has, s, w = ctx.saved_tensors
        B, T, M, H, hd = out.shape
        with torch.autocast(out.device.type, enabled=False):
            dy = grad.to(out.dtype).transpose(1, 2).reshape(B * T, 1, H * hd)
            rows = out.view(B * T, M, H * hd)
            dw = torch.bmm(rows, dy.transpose(1, 2)).view(B, T, M).to(s.dtype)
            dlogit = torch._softmax_backward_data(dw * has, s, -1, s.dtype)
            # dA_j = w_j dY + dlogit_j r: one product (B T, M, 2) x (B T, 2, H hd)
            coef = torch.stack([w, dlogit], dim=-1).to(out.dtype).view(B * T, M, 2)
            rr = r.to(out.dtype).view(1, 1, H * hd)
            dout = torch.bmm(coef, torch.cat([dy, rr.expand(B * T, 1, H * hd)], dim=1))
            dr = torch.mm(dlogit.to(out.dtype).view(1, B * T * M), out.view(B * T * M, H * hd))
        return dout.view(B, T, M, H, hd), dr.view(H, hd).to(ctx.r_dtype), None, None


def sparse_edges_limit(T: int) -> float:
    """The mean number of allowed keys per row (``T`` keys in all) up to which :func:`sparse_attention`'s edge-list
    softmax replaces the fused attention over every key. Measured on the CPU (one thread, width 256, 4 heads,
    8192 tokens, the length bench's trees, forward + backward of one sub-network): 1.1-1.25 keys per row (the
    parent and child masks), 2.4-3.9x faster than the fused attention at T = 128 and 4.3-4.8x at T = 256; 2.4
    keys (the d = 1 sibling mask), 0.96x and 1.6x; 4.7 keys, 4x and 2.7x slower."""
    return min(3.0, T / 64)


def sparse_plan(allowed: Tensor) -> Tuple[Tensor, ...]:
    """The plan of :func:`sparse_attention` for a bool mask ``allowed`` ``(B, T, T)`` (query x key). Rows and
    keys are numbered ``t * B + b``, the order of the ``(T, B, H, hd)`` layout of the attention's projections.

    Returns:
        ``("empty",)`` when no row has a key; ``("gather", key)`` when every row has at most one: ``key`` long
        ``(T * B,)`` the row's key (itself when it has none); else ``("edges", rows, keys)``, long ``(E,)``
        the ``E`` allowed pairs, by row.
    """
    B, T, _ = allowed.shape
    a = allowed.transpose(0, 1).reshape(T * B, T)  # row t * B + b, key position
    rows, pos = a.nonzero(as_tuple=True)
    keys = pos * B + rows % B
    if rows.numel() == 0:
        return ("empty",)
    if not a.sum(-1).gt(1).any():
        key = torch.arange(T * B, device=allowed.device).index_copy(0, rows, keys)
        return ("gather", key)
    return ("edges", rows, keys)


def sparse_attention(q: Tensor, k: Tensor, v: Tensor, plan: Tuple[Tensor, ...]) -> Tensor:
    """``softmax(Q K^T + M) V`` ``(B, H, T, hd)`` from the allowed pairs of the mask ``M`` alone (:func:`sparse_plan`):
    no ``(B, H, T, T)`` scores.

    ``gather`` (at most one key per row): the softmax over one key is 1, so the output is ``V`` at that key
    (no scores at all, and no gradient to ``Q`` and ``K``, as the dense softmax gives none). ``edges``: the
    score of each allowed pair, a softmax over each row's pairs (shifted by the row's maximum) and the
    weighted sum of their values, in float32. A row with no allowed key gets 0 (``gather``: ``V`` at the row
    itself), which the caller weighs by 0, as it weighs the uniform distribution the dense path gives it.

    Args:
        q, k, v: ``(B, H, T, hd)``, ``q`` already scaled.
        plan: from :func:`sparse_plan`.
    """
    B, H, T, hd = q.shape
    if plan[0] == "empty":
        return q.new_zeros(B, H, T, hd)

    def flat(t: Tensor) -> Tensor:  # (T * B, H, hd), row t * B + b (a view in the attention's own layout)
        return t.permute(2, 0, 1, 3).reshape(T * B, H, hd)

    def unflat(t: Tensor) -> Tensor:
        return t.view(T, B, H, hd).permute(1, 2, 0, 3)

    if plan[0] == "gather":
        return unflat(flat(v).index_select(0, plan[1]))
    _, rows, keys = plan
    return unflat(_EdgeSoftmax.apply(flat(q), flat(k), flat(v), rows, keys))


class _EdgeSoftmax(torch.autograd.Function):
    """``out[r] = sum_e w_e V[c_e]`` over the allowed pairs ``e = (r_e, c_e)``, ``w = softmax`` of ``Q[r_e] . K[c_e]``
    over each row's pairs, in float32. Keeps only ``Q``, ``K``, ``V`` (saved by the layer's other attention calls
    anyway), the pairs and the weights ``(E, H)`` for the backward pass, which gathers the pairs again: keeping the
    gathered ``(E, H, hd)`` queries, keys and values would double Syntax-BERT's memory."""

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, rows: Tensor, keys: Tensor) -> Tensor:
        N, H, hd = q.shape
        scores = (q.index_select(0, rows).float() * k.index_select(0, keys).float()).sum(-1)  # E H
        top = torch.full((N, H), float("-inf"), device=q.device).scatter_reduce(
            0, rows.unsqueeze(1).expand(-1, H), scores, "amax")
        e = torch.exp(scores - top.index_select(0, rows))
        z = torch.zeros(N, H, device=q.device).index_add_(0, rows, e)
        w = e / z.index_select(0, rows)
        values = v.index_select(0, keys).float()
        out = torch.zeros(N, H, hd, device=q.device).index_add_(0, rows, w.unsqueeze(-1) * values)
        ctx.save_for_backward(q, k, v, rows, keys, w)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        q, k, v, rows, keys, w = ctx.saved_tensors
        N, H, hd = q.shape
        grad = grad.float()
        g = grad.index_select(0, rows)  # E H hd
        dv = torch.zeros(N, H, hd, device=q.device).index_add_(0, keys, w.unsqueeze(-1) * g)
        dw = (g * v.index_select(0, keys).float()).sum(-1)  # E H
        del g
        ds = w * (dw - torch.zeros(N, H, device=q.device).index_add_(0, rows, w * dw).index_select(0, rows))
        ds = ds.unsqueeze(-1)
        dq = torch.zeros(N, H, hd, device=q.device).index_add_(0, rows, ds * k.index_select(0, keys).float())
        dk = torch.zeros(N, H, hd, device=q.device).index_add_(0, keys, ds * q.index_select(0, rows).float())
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None


@register_syntax_method("syntax_bert")
class SyntaxBert(SyntaxMethod):
    """Syntax-BERT masked sub-networks with topical attention in the encoder layers listed by
    ``--syntax-bert-layers`` (Bai et al., 2021, sec. 3.2-3.3); see :class:`SyntaxBertAttention`."""

    title = "Syntax-BERT's masked sub-networks with topical attention (Bai et al., 2021)"
    config = SyntaxBertConfig
    inference_streams = PARSE  # its masks are the parse's: translating needs the parse
    layers_option = "--syntax-bert-layers"
    replaces_attention = True
    system_args = ("--syntax-bert-max-distance", "3")
    bench_targets = {"syntax_bert": {"train_wps": 0.6, "gen_sps": 0.9}}
    length_targets = {"time": 0.5, "memory": 4.0, "ops": 1.6}
    # no syntax mask: the global sub-network alone, mixed by topical attention with W^V as initialised (I)
    identity_args = ("--syntax-bert-max-distance", "0")
    legacy_args = {"syntax_bert_sibling": LEGACY_SIBLING}

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        if cfg.syntax_bert_max_distance < 0:
            raise ValueError("--syntax-bert-max-distance must be >= 0")
        if cfg.syntax_bert_max_distance == 0 and cfg.no_syntax_bert_global:
            raise ValueError("--syntax-bert-max-distance 0 with --no-syntax-bert-global leaves no sub-network")
        self.layers = parse_layers(cfg.syntax_bert_layers, num_layers, "--syntax-bert-layers")

    def attention_layers(self):
        return self.layers

    def build_self_attention(self, layer, embed_dim, cfg, state):
        c = self.cfg
        return SyntaxBertAttention(
            embed_dim, cfg.encoder.attention_heads, cfg.attention_dropout, state,
            max_distance=c.syntax_bert_max_distance, global_subnet=not c.no_syntax_bert_global,
            mask_mode=c.syntax_bert_mask_mode, sibling=c.syntax_bert_sibling,
        )
