"""``--syntax-attention lisa``: LISA's syntactically-informed self-attention head (Strubell et al., 2018)."""

from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq.dataclass import FairseqDataclass
from torch import Tensor, nn

from syntax_nmt.models.modules.device_paths import cpu_paths
from syntax_nmt.models.modules.methods.base import (PARSE, AuxLoss, SyntaxMethod, check_weight, parse_layers,
                                                    register_syntax_method)
from syntax_nmt.models.modules.methods.lisa_masks import lisa_parents
from syntax_nmt.models.modules.methods.mixed_attention import MixedSelfAttention, key_padding_additive
from syntax_nmt.syntax.aux_losses import classification_terms

#: key of the context output holding the parse head's masked scores (read by the criterion)
LISA_SCORES = "lisa_scores"


@dataclass
class LisaConfig(FairseqDataclass):
    lisa_layer: int = field(
        default=-1, metadata={"help": "encoder layer (0-based, negative from the top) of LISA's parse attention head"}
    )
    lisa_head: int = field(default=0, metadata={"help": "which head of that layer attends to syntactic parents"})
    lisa_inject_parse: bool = field(
        default=False,
        metadata={"help": "replace the parse head's attention by the given parse's one-hot parents, in training and "
                  "at inference (Strubell et al.'s injected parse); the head's scores are still trained by "
                  "--lisa-loss-weight"},
    )


@dataclass
class LisaLossConfig(FairseqDataclass):
    lisa_loss_weight: Optional[float] = field(
        default=None,
        metadata={"help": "weight of LISA's parse attention loss (default: 1.0 when the model has "
                  "--syntax-attention lisa, else 0; a value > 0 requires lisa)"},
    )


class LisaLoss(AuxLoss):
    """LISA (Strubell et al., 2018, sec. 2.2): cross-entropy of the parse head's distribution against each real
    token's parent position (the first subword of its head word; roots on themselves), over every real source
    token (``--lisa-loss-weight``; unset: 1.0 when the model has the head)."""

    name = "lisa"

    def __init__(self, options, embed_dim):
        super().__init__(options, embed_dim)
        self.loss_weight = getattr(options, "lisa_loss_weight", None)
        check_weight("--lisa-loss-weight", self.loss_weight)

    @property
    def requested(self):
        return self.loss_weight is not None and self.loss_weight > 0

    def weight(self, ctx):
        if self.loss_weight == 0:
            return 0.0
        if LISA_SCORES in ctx.outputs:
            return 1.0 if self.loss_weight is None else float(self.loss_weight)
        if self.loss_weight is not None:
            raise ValueError(f"--lisa-loss-weight {self.loss_weight} needs LISA's parse attention head: "
                             "add lisa to --syntax-attention (or set --lisa-loss-weight 0)")
        return 0.0

    def terms(self, ctx, x, training):
        logp = torch.log_softmax(ctx.outputs[LISA_SCORES].float(), dim=-1)
        parents = ctx.cached("lisa_parents", lambda: lisa_parents(ctx.tree))
        return classification_terms(logp, parents, ~ctx.special)


class LisaAttention(MixedSelfAttention):
    """A self-attention layer with one syntactically-informed head, Strubell et al. (2018),
    "Linguistically-Informed Self-Attention for Semantic Role Labeling", sec. 2.2.

    Head ``h`` scores query ``i`` against key ``j`` with a biaffine form (Dozat & Manning, 2017,
    as LISA does): ``s[i, j] = q_i^T U k_j + u^T k_j`` where ``q``/``k`` are that head's slices of
    the layer's own query/key projections; ``U`` starts as ``I / sqrt(d_head)`` and ``u`` at 0,
    so the head starts as the standard scaled dot-product head. Its distribution
    ``softmax_j(s[i, j])`` weights the head's values; the criterion
    ``label_smoothed_cross_entropy_with_syntax`` trains it with cross-entropy to put its mass on
    each token's parent (:func:`~syntax_nmt.models.modules.methods.lisa_masks.lisa_parents`: the first
    subword of the head word; roots and special tokens on themselves). The masked scores go to
    ``ctx.outputs["lisa_scores"]`` (``(B, T, T)`` float32). The other heads are unchanged.

    With ``inject_parse`` the head's distribution is the one-hot parent of the given parse
    instead (the paper's injected parse), at training and inference.

    Args:
        embed_dim, num_heads, dropout, state: as :class:`MixedSelfAttention`.
        head (int): index of the parse head.
        inject_parse (bool): see above.
    """

    #: ``recorded``: the parse head's distribution ``parse_head`` (B, T, T) and the parse's ``parents`` (B, T, T) bool
    record_kind = "lisa"

    def __init__(self, embed_dim, num_heads, dropout, state, head: int = 0, inject_parse: bool = False, **kwargs):
        super().__init__(embed_dim, num_heads, dropout, state, **kwargs)
        if not 0 <= head < num_heads:
            raise ValueError(f"--lisa-head {head} does not exist (the layer has {num_heads} heads, 0-based)")
        self.head = head
        self.inject_parse = inject_parse
        hd = self.head_dim
        self.parse_bilinear = nn.Parameter(torch.eye(hd) * hd ** -0.5)  # U
        self.parse_key_bias = nn.Parameter(torch.zeros(hd))  # u

    def _head_slice(self, proj: nn.Linear, x: Tensor) -> Tensor:
        """``(B, T, d_head)``: head ``self.head`` of a projection of ``x`` ``(T, B, C)``."""
        lo, hi = self.head * self.head_dim, (self.head + 1) * self.head_dim
        bias = proj.bias[lo:hi] if proj.bias is not None else None
        return nn.functional.linear(x, proj.weight[lo:hi], bias).transpose(0, 1)

    def parse_scores(self, x: Tensor) -> Tensor:
        """Unmasked ``(B, T, T)`` float32 biaffine scores of the parse head."""
        return self.biaffine(self._head_slice(self.q_proj, x), self._head_slice(self.k_proj, x))

    def biaffine(self, q: Tensor, k: Tensor, q_scale: float = 1.0) -> Tensor:
        """``(B, T, T)`` float32 ``q_i^T U k_j + u^T k_j`` from the head's queries ``q`` (multiplied by ``q_scale``)
        and keys ``k``, ``(B, T, d_head)``: ``U`` takes ``1 / q_scale``, so scaled queries give the same scores."""
        q, k = q.float(), k.float()
        u_mat, u_vec = self.parse_bilinear.float(), self.parse_key_bias.float()
        if q_scale != 1.0:
            u_mat = u_mat / q_scale
        return torch.baddbmm((k @ u_vec).unsqueeze(1), q @ u_mat, k.transpose(1, 2))

    def fused_attention(self, q, k, v, x, ctx, key_padding_mask):
        """Off the CPU: every head through one fused attention call, then the parse head's output replaced by its
        own distribution times its values; its biaffine scores come from the layer's projections already made
        (``q`` is scaled: :meth:`biaffine` takes the scale back). One ``(B, T, T)`` matrix (the parse head's,
        which its loss reads) instead of ``(B, H, T, T)`` scores. On a CPU: the explicit path."""
        if cpu_paths(q):
            return None
        B, H, T, hd = q.shape
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, scale=1.0, attn_mask=None if key_padding_mask is None
            else key_padding_additive(key_padding_mask, B, T, q.device, q.dtype))
        parse = self.biaffine(q[:, self.head], k[:, self.head], self.scaling)
        if key_padding_mask is not None:
            parse = parse + key_padding_additive(key_padding_mask, B, T, q.device).squeeze(1)
        ctx.record_output(LISA_SCORES, parse)
        if self.inject_parse:
            parents = ctx.cached("lisa_parents", lambda: lisa_parents(ctx.tree))
            p_head = nn.functional.one_hot(parents, T)
        else:
            p_head = torch.softmax(parse, dim=-1)
        head = torch.matmul(p_head.to(v.dtype), v[:, self.head]).unsqueeze(1)  # B 1 T hd
        return torch.cat([out[:, :self.head], head, out[:, self.head + 1:]], dim=1)

    def probabilities(self, scores, x, ctx, key_padding_mask):
        B, H, T, _ = scores.shape
        pad = key_padding_additive(key_padding_mask, B, T, scores.device)  # B 1 1 T
        probs = torch.softmax(scores + pad, dim=-1)
        parse = self.parse_scores(x) + pad.squeeze(1)  # B T T
        ctx.record_output(LISA_SCORES, parse)
        if self.inject_parse:
            parents = ctx.cached("lisa_parents", lambda: lisa_parents(ctx.tree))
            p_head = nn.functional.one_hot(parents, T).to(probs.dtype)
        else:
            p_head = torch.softmax(parse, dim=-1)
        if self.record:
            self.recorded = {"parse_head": p_head.detach()}
            if ctx.has_parse:  # raw text translated without a parser has none to compare with
                parents = ctx.cached("lisa_parents", lambda: lisa_parents(ctx.tree))
                self.recorded["parents"] = nn.functional.one_hot(parents, T).bool()
        return torch.cat([probs[:, :self.head], p_head.unsqueeze(1), probs[:, self.head + 1:]], dim=1)

    def analysis_maps(self, recorded):
        """For ``syntax-nmt-analyze attention`` (the schema of :mod:`syntax_nmt.analyze.models`): the parse head's
        distribution against the parse's parent of each token (the target of its loss), first sentence (the head's
        distribution alone for a batch without the parse)."""
        head = {"title": f"parse head {self.head}", "values": recorded["parse_head"][0]}
        if "parents" not in recorded:
            return {"title": "LISA", "maps": {"parse_head": head}}
        return {"title": "LISA",
                "masks": {"parents": {"title": "parse: each token's parent (the head's training target)",
                                      "values": recorded["parents"][0]}},
                "maps": {"parse_head": {**head, "within": "parents"}}}


@register_syntax_method("lisa")
class Lisa(SyntaxMethod):
    """LISA's parse attention head (Strubell et al., 2018, sec. 2.2) in layer ``--lisa-layer``,
    head ``--lisa-head``; see :class:`LisaAttention`. Train it with the criterion
    ``label_smoothed_cross_entropy_with_syntax`` (``--lisa-loss-weight``)."""

    title = "LISA's parse-trained attention head (Strubell et al., 2018)"
    config = LisaConfig
    # the parse supervises training only: the head attends with the parse it predicts (Strubell et al., sec. 2.2);
    # with --lisa-inject-parse it attends with the given parse, at inference too (__init__)
    inference_streams = ()
    layers_option = "--lisa-layer"
    replaces_attention = True
    # as initialised (U = I / sqrt(d_head), u = 0) the parse head is the scaled dot-product head
    identity_args = ()
    # the demo's budget (400 updates; transformer 21.9 BLEU): weight 1 gave 16.9, 0.1 gave 27.5 (seed 1)
    system_losses = ("--lisa-loss-weight", "0.1")
    bench_targets = {"lisa": {"train_wps": 0.95, "gen_sps": 0.9}}
    length_targets = {"time": 0.9, "memory": 2.0, "ops": 1.15}
    loss_config = LisaLossConfig
    losses = (LisaLoss,)

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        self.layer = parse_layers(str(cfg.lisa_layer), num_layers, "--lisa-layer")[0]
        heads = cfg.encoder.attention_heads
        if not 0 <= cfg.lisa_head < heads:
            raise ValueError(f"--lisa-head {cfg.lisa_head} does not exist (the encoder has {heads} heads, 0-based)")
        if cfg.lisa_inject_parse:
            self.inference_streams, self.inference_option = PARSE, "--lisa-inject-parse"

    def attention_layers(self):
        return [self.layer]

    def predicted_parents(self, ctx):
        """The parse head's argmax over the keys (its scores left in ``ctx.outputs["lisa_scores"]``, padded keys
        masked): each token's predicted parent position, ``(B, T)`` long."""
        scores = ctx.outputs.get(LISA_SCORES)
        return None if scores is None else scores.argmax(-1)

    def build_self_attention(self, layer, embed_dim, cfg, state):
        return LisaAttention(embed_dim, cfg.encoder.attention_heads, cfg.attention_dropout, state,
                             head=self.cfg.lisa_head, inject_parse=self.cfg.lisa_inject_parse)
