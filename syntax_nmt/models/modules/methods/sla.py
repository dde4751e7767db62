"""``--syntax-attention sla``: syntax-aware local attention (Li et al., 2021)."""

from dataclasses import dataclass, field

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from torch import Tensor, nn

from syntax_nmt.models.modules.device_paths import cpu_paths
from syntax_nmt.models.modules.methods.base import PARSE, SyntaxMethod, parse_layers, register_syntax_method
from syntax_nmt.models.modules.methods.mixed_attention import (MixedSelfAttention, key_padding_additive,
                                                               key_padding_allowed, masked_softmax, stacked_additive,
                                                               stacked_attention)
from syntax_nmt.models.modules.methods.sla_masks import WINDOW_UNITS, sla_mask, wla_mask


@dataclass
class SLAConfig(FairseqDataclass):
    sla_layers: str = field(
        default="all",
        metadata={"help": "encoder layers (0-based, comma-separated, negative from the top, or 'all') whose "
                  "self-attention becomes syntax-aware local attention"},
    )
    sla_threshold: int = field(
        default=3, metadata={"help": "SLA threshold m: key j is local to query i iff D(i, j) <= m (eq. 2-3; the "
                             "paper uses 3 or 4)"}
    )
    sla_window: int = field(
        default=0, metadata={"help": "> 0: the paper's window baseline (WLA) instead of SLA: key j is local iff "
                             "|w(i) - w(j)| <= K, counted in --sla-window-unit"}
    )
    sla_window_unit: ChoiceEnum(list(WINDOW_UNITS)) = field(
        default="word", metadata={"help": "what the WLA window counts: word (the pieces of a word share its "
                                  "position, as SLA's tree distances do) or token (subword tokens, the paper's "
                                  "wording)"}
    )


class SyntaxLocalAttention(MixedSelfAttention):
    """Syntax-aware local attention, Li et al. (2021), "Improving BERT with Syntax-aware Local
    Attention", eq. 2-6.

    Global scores ``S_glb = softmax(Q K^T / sqrt(d))`` and local scores
    ``S_loc = softmax(Q K^T / sqrt(d) + M_loc)`` (eq. 4) share the layer's projections; a gate
    ``g_i = sigmoid(W_g h_i + b_g)`` per token (eq. 5) mixes them:
    ``A_i = (g_i S_loc_i + (1 - g_i) S_glb_i) V`` (eq. 6), followed by the layer's output
    projection. With ``g = 0`` it is the standard self-attention. ``M_loc`` comes from
    :func:`~syntax_nmt.models.modules.methods.sla_masks.sla_mask` (threshold ``m``) or, with ``window > 0``,
    :func:`~syntax_nmt.models.modules.methods.sla_masks.wla_mask` (the paper's WLA baseline, counting words or
    tokens).

    One gate per token, shared by the heads (eq. 5 has one ``g_i``). The gate reads the module's
    input, the vector Q, K and V are projected from: in the paper (BERT, post-norm) that is ``h_i``,
    "the hidden vector of token x_i from the previous layer" (sec. 2.1 and 3.2); in a pre-norm layer
    (``--encoder-normalize-before``) the self-attention reads ``LN(h_i)``, and so does the gate: the
    pre-norm counterpart of BERT's layer-normalised ``h_i``, on the same scale in every layer, while
    the raw residual stream grows with depth.
    """

    #: ``recorded``: ``gate`` (B, T), ``local`` and ``global`` (B, H, T, T) probabilities
    record_kind = "sla"
    #: On a CPU, batches up to 384 tokens wide compute both branches from one score matrix
    #: (:func:`~syntax_nmt.models.modules.methods.mixed_attention.branch_softmax_attention`), wider ones through
    #: torch's fused attention, as other devices always do (the measurements: README.md, "Length scaling").
    one_score_cpu_max_length = 384

    def __init__(self, embed_dim, num_heads, dropout, state, threshold: int = 3, window: int = 0,
                 window_unit: str = "word", **kwargs):
        super().__init__(embed_dim, num_heads, dropout, state, **kwargs)
        if window_unit not in WINDOW_UNITS:
            raise ValueError(f"--sla-window-unit must be one of {WINDOW_UNITS}, got {window_unit!r}")
        self.threshold = threshold
        self.window = window
        self.window_unit = window_unit
        self.gate = nn.Linear(embed_dim, 1)

    def local_key(self):
        return ("wla", self.window, self.window_unit) if self.window > 0 else ("sla", self.threshold)

    def local_mask(self, ctx) -> Tensor:
        """Bool ``(B, T, T)`` ``M_loc`` of the batch (computed once per batch, shared by layers)."""
        if self.window > 0:
            return ctx.cached(self.local_key(),
                              lambda: wla_mask(ctx.word_start, ctx.special, self.window, self.window_unit))
        return ctx.cached(self.local_key(), lambda: sla_mask(ctx.tree, self.threshold))

    def compute_gate(self, x: Tensor) -> Tensor:
        """``(B, T)`` float32 gate values ``g_i`` from the layer input ``x`` ``(T, B, C)``."""
        return torch.sigmoid(self.gate(x).float()).squeeze(-1).transpose(0, 1)

    def fused_branches(self, x, ctx, key_padding_mask, B, T, dtype):
        """``g S_loc + (1 - g) S_glb``: the gate is one value per query, so eq. 6 is ``g (S_loc V) + (1 - g) (S_glb V)``."""
        loc = ctx.additive(self.local_key(), lambda: self.local_mask(ctx), dtype).unsqueeze(1)  # B 1 T T
        glb = None if key_padding_mask is None else key_padding_additive(key_padding_mask, B, T, x.device, dtype)
        g = self.compute_gate(x).view(B, 1, T, 1)
        return [(g, loc), (1 - g, glb)]

    def fused_attention(self, q, k, v, x, ctx, key_padding_mask):
        """Eq. 6 without a ``(B, H, T, T)`` matrix. On a CPU, :meth:`fused_branches` (the base class's kernels);
        elsewhere both branches in one fused attention call (:func:`stacked_attention`, the local mask and the key
        padding stacked once per batch) and ``g S_loc V + (1 - g) S_glb V`` as one ``lerp``: few kernels per layer,
        which is what a GPU's time follows at this width."""
        if cpu_paths(q):
            return super().fused_attention(q, k, v, x, ctx, key_padding_mask)
        B, H, T, _ = q.shape

        def masks():
            glb = key_padding_allowed(key_padding_mask, B, T, q.device)
            return stacked_additive(torch.stack([self.local_mask(ctx), glb], dim=1), q.dtype)

        out = stacked_attention(q, k, v, ctx.cached(("stacked", self.local_key(), q.dtype), masks))
        g = self.compute_gate(x).view(B, 1, T, 1).to(out.dtype)
        local, glb = out.unbind(2)  # one gradient for both (two selects would write two stacked-size zeros and add)
        return torch.lerp(glb, local, g)

    def probabilities(self, scores, x, ctx, key_padding_mask):
        B, H, T, _ = scores.shape
        loc = ctx.additive(self.local_key(), lambda: self.local_mask(ctx)).unsqueeze(1)  # B 1 T T
        p_loc = masked_softmax(scores, loc)
        p_glb = masked_softmax(scores, key_padding_additive(key_padding_mask, B, T, scores.device))
        g = self.compute_gate(x).view(B, 1, T, 1)
        if self.record:
            self.recorded = {"gate": g.view(B, T).detach(), "local": p_loc.detach(), "global": p_glb.detach()}
        return g * p_loc + (1 - g) * p_glb

    def analysis_maps(self, recorded):
        """The local and global attention (mean over heads) and the gate, as in the paper's Fig. 3."""
        return {"title": "SLA",
                "maps": {"local": {"title": "local attention S_loc (eq. 4)", "values": recorded["local"][0].mean(0)},
                         "global": {"title": "global attention S_glb", "values": recorded["global"][0].mean(0)}},
                "vectors": {"gate": {"title": "gate g (local weight)", "values": recorded["gate"][0]}}}


@register_syntax_method("sla")
class SLA(SyntaxMethod):
    """Syntax-aware local attention in the encoder layers listed by ``--sla-layers`` (Li et al., 2021,
    eq. 2-6); see :class:`SyntaxLocalAttention`."""

    title = "syntax-aware local attention in the listed layers (Li et al., 2021)"
    config = SLAConfig
    inference_streams = PARSE  # its local windows are the parse's: translating needs the parse
    layers_option = "--sla-layers"
    replaces_attention = True
    bench_targets = {"sla": {"train_wps": 0.85, "gen_sps": 0.9}}
    length_targets = {"time": 0.85, "memory": 2.0, "ops": 1.15}
    identity_args = ()

    @classmethod
    def set_identity(cls, model):
        """Gate ``g = 0``, so eq. 6 is the global attention alone. No option closes the gate (``sigmoid`` is never
        0): ``W_g = 0`` and a bias far below where ``sigmoid`` underflows to 0, in every float format."""
        for module in model.modules():
            if isinstance(module, SyntaxLocalAttention):
                with torch.no_grad():
                    module.gate.weight.zero_()
                    module.gate.bias.fill_(-1e4)

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        if cfg.sla_threshold < 0 or cfg.sla_window < 0:
            raise ValueError("--sla-threshold and --sla-window must be >= 0")
        self.layers = parse_layers(cfg.sla_layers, num_layers, "--sla-layers")

    def attention_layers(self):
        return self.layers

    def build_self_attention(self, layer, embed_dim, cfg, state):
        return SyntaxLocalAttention(
            embed_dim, cfg.encoder.attention_heads, cfg.attention_dropout, state,
            threshold=self.cfg.sla_threshold, window=self.cfg.sla_window, window_unit=self.cfg.sla_window_unit,
        )
