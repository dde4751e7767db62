"""``--syntax-attention sgnet``: SG-Net (Zhang et al., 2020), its options and registration; the layer is in
:mod:`~syntax_nmt.models.modules.methods.sgnet_layer`, the masks in
:mod:`~syntax_nmt.models.modules.methods.sgnet_masks`."""

from dataclasses import dataclass, field

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from torch import Tensor

from syntax_nmt.models.modules.methods.base import PARSE, SyntaxMethod, register_syntax_method
from syntax_nmt.models.modules.methods.mixed_attention import MixedSelfAttention, masked_softmax
from syntax_nmt.models.modules.methods.sgnet_layer import (LAYER_NORM_MODES, SPECIAL_MODES, SGNetLayer,
                                                           sgnet_layer_config)
from syntax_nmt.models.modules.methods.sgnet_masks import sdoi_attention_mask, sdoi_mask
from syntax_nmt.syntax.tree import expand_word_matrix


@dataclass
class SGNetConfig(FairseqDataclass):
    sgnet_alpha: float = field(
        default=0.5,
        metadata={"help": "SG-Net dual context aggregation: alpha * H + (1 - alpha) * H' (sec. 3.3, eq. 9)"},
    )
    sgnet_learn_alpha: bool = field(default=False, metadata={"help": "learn SG-Net's alpha (init --sgnet-alpha)"})
    sgnet_subword: ChoiceEnum(["shared", "first"]) = field(
        default="shared",
        metadata={"help": "subwords share their word's SDOI (shared), or the first subword heads the rest (first)"},
    )
    sgnet_specials: ChoiceEnum(list(SPECIAL_MODES)) = field(
        default="encoder",
        metadata={"help": "special tokens (EOS/BOS/pad) in the aggregation: encoder = keep the ordinary encoder "
                  "output there (the paper's footnote 11); aggregate = alpha H + (1 - alpha) H' like words "
                  "(what checkpoints trained before this option do)"},
    )
    sgnet_layer_norm: ChoiceEnum(list(LAYER_NORM_MODES)) = field(
        default="post",
        metadata={"help": "post: the SG layer is the paper's (sec. 3.1-3.2: LayerNorm on each residual sum, so H' "
                  "is normalised like H) in both norm orders of the encoder; encoder: the layer takes the "
                  "encoder's norm order (with --encoder-normalize-before its output H' is not normalised), "
                  "what checkpoints trained before this option use"},
    )
    sgnet_checkpoint_activations: bool = field(
        default=False,
        metadata={"help": "recompute the SG-Net layer in the backward pass instead of storing its activations "
                  "(about 9%% less training memory at Transformer-base depth, one more layer forward per step; "
                  "identical results). fairseq's --checkpoint-activations turns it on too"},
    )


def sdoi_allowed(ctx, convention: str) -> Tensor:
    """The batch's bool ``(B, T, T)`` SDOI (:func:`~syntax_nmt.models.modules.methods.sgnet_masks.sdoi_mask`), once per
    batch: with ``shared`` from the context's word tree."""
    key = ("sdoi", convention)
    if convention == "shared":
        return ctx.cached(key, lambda: expand_word_matrix(ctx.tree.ancestor, ctx.tree.word_index))
    return ctx.cached(key, lambda: sdoi_mask(ctx.heads, ctx.word_start, ctx.special, "first"))


class SDOIAttention(MixedSelfAttention):
    """The SG layer's self-attention (eq. 7-8, blocked keys excluded): every head attends within the SDOI, read as
    one additive ``(B, 1, T, T)`` mask made once per batch from the context, shared by the heads; one call of torch's
    fused attention (with the attention dropout inside), no per-head ``(B * H, T, T)`` mask. fairseq's own layer,
    which SG-Net's used before, takes a ``(B * H, T, T)`` float mask and rewrites it at every call. Same parameters
    (``q_proj`` ... ``out_proj``) and initialisation as fairseq's ``MultiheadAttention``, so checkpoints load as
    before. The SG layer (:class:`SGNetLayer`) records the analysis maps; this module records nothing."""

    fused_dropout = True

    def __init__(self, embed_dim, num_heads, dropout, state, convention: str = "shared", **kwargs):
        super().__init__(embed_dim, num_heads, dropout, state, **kwargs)
        self.convention = convention
        self.record = None  # not a recording module: the SG layer records

    def _mask(self, ctx, dtype) -> Tensor:
        return ctx.additive(("sdoi", self.convention), lambda: sdoi_allowed(ctx, self.convention), dtype).unsqueeze(1)

    def fused_attention(self, q, k, v, x, ctx, key_padding_mask):
        p = self.dropout_module.p if self.training else 0.0
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self._mask(ctx, q.dtype),
                                                                dropout_p=p, scale=1.0)

    def probabilities(self, scores, x, ctx, key_padding_mask):
        return masked_softmax(scores, self._mask(ctx, torch.float32))


class SGNetModule(SGNetLayer):
    """:class:`SGNetLayer` reading its mask from the batch's syntax context: its layer's self-attention is an
    :class:`SDOIAttention` (with a plain fairseq layer, the ``(B * H, T, T)`` mask of :func:`sdoi_attention_mask`,
    cached per batch)."""

    def forward(self, x, ctx):
        allowed = sdoi_allowed(ctx, self.convention)
        if hasattr(self.layer, "forward_with_context"):
            return super().forward(x, allowed, ctx.special, ctx=ctx)
        mask = ctx.cached(("sdoi_attn_mask", self.convention, self.num_heads, x.dtype),
                          lambda: sdoi_attention_mask(allowed, self.num_heads, x.dtype))
        return super().forward(x, allowed, ctx.special, attn_mask=mask)


@register_syntax_method("sgnet")
class SGNet(SyntaxMethod):
    """SG-Net (Zhang et al., 2020, "SG-Net: Syntax Guided Transformer for Language Representation",
    sec. 3.2-3.4, eq. 6-8): an SDOI-masked self-attention layer over the encoder output, fused by dual
    context aggregation; see :class:`~syntax_nmt.models.modules.methods.sgnet_layer.SGNetLayer`."""

    title = "SG-Net's SDOI-masked self-attention layer over the encoder output (Zhang et al., 2020)"
    config = SGNetConfig
    inference_streams = PARSE  # its SDOI mask is the parse's: translating needs the parse
    legacy_args = {"sgnet_layer_norm": "encoder"}
    extra_systems = (("sgnet-ckpt", ("--sgnet-checkpoint-activations",),
                      "SG-Net with recomputed activations (the same model; for the bench)"),)
    bench_targets = {"sgnet": {"train_wps": 0.9, "gen_sps": 0.95}, "sgnet-ckpt": {"train_wps": 0.85},
                     "syntax+sgnet": {"gen_sps": 0.95}}
    bench_max_targets = {"sgnet": {"model_mem_mib": 1.08}, "sgnet-ckpt": {"model_mem_mib": 1.08}}
    length_targets = {"time": 0.8, "memory": 2.0, "ops": 1.15}
    identity_args = ("--sgnet-alpha", "1")  # alpha H + (1 - alpha) H' = H

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        if not 0.0 <= cfg.sgnet_alpha <= 1.0:
            raise ValueError(f"--sgnet-alpha must lie in [0, 1], got {cfg.sgnet_alpha}")

    def build_encoder_module(self, encoder, state):
        cfg = self.cfg
        layer_cfg = sgnet_layer_config(cfg, cfg.sgnet_layer_norm)
        attention = (lambda dim, c: SDOIAttention(dim, c.encoder.attention_heads, c.attention_dropout, state,
                                                  convention=cfg.sgnet_subword, q_noise=c.quant_noise.pq,
                                                  qn_block_size=c.quant_noise.pq_block_size))
        return SGNetModule(
            encoder.build_syntax_encoder_layer(layer_cfg, attention),
            num_heads=cfg.encoder.attention_heads,
            alpha=cfg.sgnet_alpha,
            learn_alpha=cfg.sgnet_learn_alpha,
            convention=cfg.sgnet_subword,
            specials=cfg.sgnet_specials,
            checkpoint=cfg.sgnet_checkpoint_activations or cfg.checkpoint_activations,
        )
