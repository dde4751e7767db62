"""SG-Net's syntax-guided self-attention layer with dual context aggregation.

Zhang et al. (2020), "SG-Net: Syntax Guided Transformer for Language
Representation" (arXiv:1908.05147), sections 3.2-3.4: an extra multi-head
self-attention layer over the final encoder states ``H`` whose scores are masked
so that each token attends only to its syntactic dependency of interest (SDOI:
its ancestors in the dependency tree and itself, eq. 6-8); heads are
concatenated and followed by a feed-forward block with GELU, residual
connections and LayerNorm, giving ``H'``; the output is the dual context
aggregation ``H_bar = alpha * H + (1 - alpha) * H'`` (sec. 3.3, eq. 9), ``alpha = 0.5``
by default, optionally learned. For NMT (sec. 5.2) the decoder attends to ``H_bar``.

Deviations and readings (also in the README's table of methods):

* Eq. 7 writes the masked attention as ``softmax(M . (Q K^T) / sqrt(d_k))``, a product
  under which blocked pairs keep score 0 and still receive weight. The paper's text (only
  the SDOI is attended) and its Figure 6 (zero weight outside the SDOI) describe
  exclusion, which is what this layer does: blocked scores get a large negative value
  before the softmax, so they receive no weight.
* Footnote 11: special tokens attend only to themselves in the syntax-guided layer "and
  we will mask these weights in the following aggregation layer". With
  ``specials="encoder"`` (the default for new models) the aggregation keeps the ordinary
  encoder output ``H`` at special positions (EOS, BOS, pad); ``specials="aggregate"``
  applies ``alpha H + (1 - alpha) H'`` everywhere, the behaviour of checkpoints trained
  before this option existed (they load with it automatically, see
  :meth:`SyntaxTransformerEncoder.upgrade_state_dict_named`).
* Layer normalization: the paper's encoder layers (sec. 3.1, eq. 3-5, BERT's) apply LayerNorm to
  each residual sum, and its SG layer ends with "a layer normalization to the sum of output and
  initial representation" (sec. 3.2), so the ``H'`` of the aggregation is normalised, like ``H``.
  With ``--sgnet-layer-norm post`` (the default, :func:`sgnet_layer_config`) the layer is that
  post-norm layer also in a pre-norm encoder (``--encoder-normalize-before``, whose ``H`` is
  normalised by the encoder's final LayerNorm); ``encoder`` builds it in the encoder's norm order,
  which in a pre-norm encoder ends without a LayerNorm (``H' = h + FFN(LN(h))``, not normalised):
  what checkpoints trained before the option do (their saved args lack it; see
  ``SyntaxMethod.legacy_args``). In a post-norm encoder both give the same layer.
"""

import copy
import math
from typing import Optional

import torch
import torch.utils.checkpoint
from torch import Tensor, nn

from syntax_nmt.models.modules.methods.sgnet_masks import sdoi_attention_mask

#: ``--sgnet-specials`` choices.
SPECIAL_MODES = ("encoder", "aggregate")
#: ``--sgnet-layer-norm`` choices: ``post``, the paper's layer (LayerNorm after each residual sum) in both
#: norm orders of the encoder; ``encoder``, the encoder's norm order (checkpoints trained before the option).
LAYER_NORM_MODES = ("post", "encoder")


class DualContextAggregation(nn.Module):
    """``alpha * H + (1 - alpha) * H'`` with a fixed or learned ``alpha`` in [0, 1].

    A learned ``alpha`` is parameterised as ``sigmoid(logit)`` so it stays in (0, 1).
    """

    #: what ``alpha`` weighs (read by ``syntax-nmt-analyze gates``)
    alpha_weighs = "ordinary encoder states H (SG-Net eq. 9)"

    def __init__(self, alpha: float = 0.5, learn: bool = False):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"SG-Net alpha must lie in [0, 1], got {alpha}")
        self.learn = learn
        if learn:
            a = min(max(alpha, 1e-4), 1 - 1e-4)
            self.logit = nn.Parameter(torch.tensor(math.log(a / (1 - a))))
        else:
            self.register_buffer("fixed_alpha", torch.tensor(float(alpha)), persistent=False)

    @property
    def alpha(self) -> Tensor:
        return torch.sigmoid(self.logit) if self.learn else self.fixed_alpha

    def forward(self, h: Tensor, h_syntax: Tensor) -> Tensor:
        alpha = self.alpha.to(h.dtype)
        return alpha * h + (1 - alpha) * h_syntax


class SGNetLayer(nn.Module):
    """Syntax-guided attention on top of a fairseq Transformer encoder.

    Args:
        layer (nn.Module): a fairseq ``TransformerEncoderLayerBase`` (built by the encoder's
            own ``build_encoder_layer`` with GELU), used with the SDOI mask.
        num_heads (int): attention heads of ``layer`` (the mask is repeated per head).
        alpha (float): weight of the ordinary encoder output in the aggregation.
        learn_alpha (bool): learn ``alpha`` instead of fixing it.
        convention (str): subword convention of the tree (``shared`` or ``first``).
        specials (str): ``encoder``: special positions keep ``H`` (footnote 11);
            ``aggregate``: they are aggregated like words (checkpoints before this option).
    """

    #: ``recorded``: ``attn`` (B, H, T, T) probabilities and the SDOI ``mask`` (B, T, T)
    record_kind = "sgnet"

    def __init__(self, layer: nn.Module, num_heads: int, alpha: float = 0.5, learn_alpha: bool = False,
                 convention: str = "shared", specials: str = "encoder", checkpoint: bool = False):
        super().__init__()
        if specials not in SPECIAL_MODES:
            raise ValueError(f"--sgnet-specials must be one of {SPECIAL_MODES}, got {specials!r}")
        self.layer = layer
        self.num_heads = num_heads
        self.convention = convention
        self.aggregate = DualContextAggregation(alpha, learn_alpha)
        #: recompute the layer in the backward pass instead of keeping its activations
        self.checkpoint = checkpoint
        # a persistent buffer, so that the checkpoint, not the command line, decides how a
        # trained model treats special tokens
        self.register_buffer("keep_specials", torch.tensor(specials == "encoder"))
        #: when True, forward stores {"attn": (B, H, T, T), "mask": (B, T, T)} in ``recorded``
        self.record = False
        self.recorded = None

    def forward(self, x: Tensor, allowed: Tensor, special: Tensor, attn_mask: Optional[Tensor] = None,
                ctx=None) -> Tensor:
        """
        Args:
            x (Tensor): encoder output ``H`` of shape ``(src_len, batch, dim)``.
            allowed (Tensor): bool ``(batch, src_len, src_len)`` SDOI mask (query x key),
                e.g. from :func:`~syntax_nmt.models.modules.methods.sgnet_masks.sdoi_mask`.
            special (Tensor): bool ``(batch, src_len)``, pad/EOS/BOS positions.
            attn_mask (Tensor, optional): ``allowed`` as :func:`sdoi_attention_mask` gives it for
                ``x.dtype`` and this layer's heads (e.g. cached once per batch); built here if None. Not used
                with ``ctx``.
            ctx (SyntaxContext, optional): the batch's context, for a layer whose self-attention reads its mask
                there (a :class:`~syntax_nmt.models.modules.syntax_transformer_encoder.SyntaxEncoderLayer`, e.g. with
                :class:`~syntax_nmt.models.modules.methods.sgnet.SDOIAttention`): the layer is called with it.

        Returns:
            ``H_bar`` of shape ``(src_len, batch, dim)``.
        """
        if self.record:
            B, T, _ = allowed.shape
            blocked = (~allowed).unsqueeze(1).expand(B, self.num_heads, T, T).reshape(B * self.num_heads, T, T)
            self._record(x, blocked, allowed)
        if ctx is None and attn_mask is None:
            attn_mask = sdoi_attention_mask(allowed, self.num_heads, x.dtype)
        # The SDOI already excludes pads from every row (pad rows see only themselves), so no
        # key padding mask is passed: with one float mask and need_weights=False, fairseq's layer
        # reaches torch's fused scaled_dot_product_attention (through F.multi_head_attention_forward)
        # and avoids torch's "mismatched key_padding_mask and attn_mask" deprecation warning.
        if self.checkpoint and self.training and torch.is_grad_enabled():
            # same RNG state in the recomputation (dropout), so results are identical
            h_syntax = torch.utils.checkpoint.checkpoint(self._syntax_states, x, attn_mask, ctx, use_reentrant=False)
        else:
            h_syntax = self._syntax_states(x, attn_mask, ctx)
        out = self.aggregate(x, h_syntax)
        keep = (special.transpose(0, 1) & self.keep_specials).unsqueeze(-1)  # T x B x 1
        return torch.where(keep, x, out)

    def _syntax_states(self, x: Tensor, attn_mask: Optional[Tensor], ctx=None) -> Tensor:
        if ctx is not None:
            return self.layer.forward_with_context(x, None, None, ctx)
        h = self.layer(x, encoder_padding_mask=None, attn_mask=attn_mask)
        return h[0] if isinstance(h, tuple) else h

    @torch.no_grad()
    def _record(self, x: Tensor, blocked: Tensor, allowed: Tensor) -> None:
        """Store the per-head SDOI attention probabilities ``(B, H, T, T)`` and the mask.

        Computed from the layer's own projections (its attention takes torch's fused path, which returns no
        per-head weights), with the blocked keys at fairseq's layer's value: zero weight, as in the layer.
        """
        layer = self.layer
        attn = layer.self_attn
        h = layer.self_attn_layer_norm(x) if layer.normalize_before else x
        T, B, C = h.shape
        H = self.num_heads
        q = (attn.q_proj(h) * attn.scaling).view(T, B, H, C // H).permute(1, 2, 0, 3)
        k = attn.k_proj(h).view(T, B, H, C // H).permute(1, 2, 0, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)).float()
        fill = -1e8 if x.dtype == torch.float32 else -1e4  # what fairseq's layer adds at blocked keys
        probs = torch.softmax(scores.masked_fill(~allowed.unsqueeze(1), fill), dim=-1)
        self.recorded = {"attn": probs.detach(), "mask": allowed.detach()}

    def analysis_maps(self, recorded):
        """For ``syntax-nmt-analyze attention`` (the schema of :mod:`syntax_nmt.analyze.models`): the SDOI mask
        and the syntax-guided self-attention (mean over heads) of the batch's first sentence (the paper's
        Fig. 6)."""
        return {"title": "SG-Net",
                "masks": {"mask": {"title": "SDOI mask (row: token, black: keys it may attend)",
                                   "values": recorded["mask"][0]}},
                "maps": {"attn": {"title": "syntax-guided self-attention", "values": recorded["attn"][0].mean(0),
                                  "within": "mask"}}}


def sgnet_layer_config(cfg, layer_norm: str = "post"):
    """A copy of a fairseq TransformerConfig for SG-Net's layer: GELU feed-forward (sec. 3.2) and,
    with ``layer_norm="post"``, LayerNorm after each residual sum (sec. 3.1 eq. 3-5, sec. 3.2), whatever
    the encoder's ``--encoder-normalize-before``; ``"encoder"`` keeps the encoder's norm order.

    Raises:
        ValueError: ``layer_norm`` not in :data:`LAYER_NORM_MODES`.
    """
    if layer_norm not in LAYER_NORM_MODES:
        raise ValueError(f"--sgnet-layer-norm must be one of {LAYER_NORM_MODES}, got {layer_norm!r}")
    cfg = copy.deepcopy(cfg)
    cfg.activation_fn = "gelu"
    if layer_norm == "post":
        cfg.encoder.normalize_before = False
    return cfg
