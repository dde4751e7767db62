"""SG-Net's syntax-guided self-attention layer with dual context aggregation.

Zhang et al. (2020), "SG-Net: Syntax Guided Transformer for Language
Representation" (arXiv:1908.05147), sections 3.2-3.4: an extra multi-head
self-attention layer over the final encoder states ``H`` whose scores are masked
so that each token attends only to its syntactic dependency of interest (SDOI:
its ancestors in the dependency tree and itself, eq. 6-8); heads are
concatenated and followed by a feed-forward block with GELU, residual
connections and LayerNorm, giving ``H'``; the output is the dual context
aggregation ``H_bar = alpha * H + (1 - alpha) * H'`` (sec. 3.4.3), ``alpha = 0.5``
by default, optionally learned. For NMT (sec. 5.2) the decoder attends to ``H_bar``.
"""

import copy
import math

import torch
from torch import Tensor, nn

from syntax_nmt.syntax.tree import sdoi_mask


class DualContextAggregation(nn.Module):
    """``alpha * H + (1 - alpha) * H'`` with a fixed or learned ``alpha`` in [0, 1].

    A learned ``alpha`` is parameterised as ``sigmoid(logit)`` so it stays in (0, 1).
    """

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
    """

    def __init__(self, layer: nn.Module, num_heads: int, alpha: float = 0.5, learn_alpha: bool = False,
                 convention: str = "shared"):
        super().__init__()
        self.layer = layer
        self.num_heads = num_heads
        self.convention = convention
        self.aggregate = DualContextAggregation(alpha, learn_alpha)

    def forward(self, x: Tensor, heads: Tensor, word_start: Tensor, special: Tensor,
                padding_mask: Tensor) -> Tensor:
        """
        Args:
            x (Tensor): encoder output ``H`` of shape ``(src_len, batch, dim)``.
            heads (Tensor): relative head offsets ``(batch, src_len)``.
            word_start (Tensor): bool ``(batch, src_len)``, first subword of each word.
            special (Tensor): bool ``(batch, src_len)``, pad/EOS/BOS positions.
            padding_mask (Tensor): bool ``(batch, src_len)``, True at pads.

        Returns:
            ``H_bar`` of shape ``(src_len, batch, dim)``.
        """
        allowed = sdoi_mask(heads, word_start, special, self.convention)  # B x T x T
        B, T, _ = allowed.shape
        blocked = (~allowed).unsqueeze(1).expand(B, self.num_heads, T, T).reshape(B * self.num_heads, T, T)
        h_syntax = self.layer(x, encoder_padding_mask=padding_mask, attn_mask=blocked.to(x.dtype))
        if isinstance(h_syntax, tuple):
            h_syntax = h_syntax[0]
        return self.aggregate(x, h_syntax)


def gelu_layer_config(cfg):
    """A copy of a fairseq TransformerConfig whose layers use GELU (SG-Net's feed-forward)."""
    cfg = copy.deepcopy(cfg)
    cfg.activation_fn = "gelu"
    return cfg
