"""SG-Net's SDOI mask (Zhang et al., 2020, "SG-Net: Syntax Guided Transformer for Language Representation",
sec. 3.2, eq. 6) and its form as the attention mask of a fairseq encoder layer: pure torch, no fairseq.
"""

import torch
from torch import Tensor

from syntax_nmt.syntax.tree import subword_tree


def sdoi_mask(heads: Tensor, word_start: Tensor, special: Tensor, convention: str = "shared") -> Tensor:
    """SG-Net "syntactic dependency of interest" attention mask (eq. 6).

    Row ``i`` allows column ``j`` iff ``j`` is ``i`` itself or one of its
    ancestors (under the subword ``convention``, :mod:`syntax_nmt.syntax.tree`). Rows of special tokens allow
    only themselves; the diagonal is always True, so every row has at least one
    allowed entry (no NaN after softmax).

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        convention: ``"shared"`` (default) or ``"first"``.

    Returns:
        ``(B, T, T)`` bool "allowed" mask (query ``i`` x key ``j``).
    """
    return subword_tree(heads, word_start, special, convention).ancestor


def sdoi_attention_mask(allowed: Tensor, num_heads: int, dtype: torch.dtype) -> Tensor:
    """The float ``(batch * num_heads, T, T)`` attention mask of the SG layer for a bool SDOI mask ``allowed``
    ``(batch, T, T)``: 0 at allowed keys and, at blocked ones, the value fairseq's encoder layer puts there
    (-1e8 in float32, -1e4 otherwise, :meth:`TransformerEncoderLayerBase.forward`). The layer rewrites every
    non-zero entry of its ``attn_mask`` with that value, so this mask reaches the attention unchanged, the
    same values as the 0/1 mask the layer was once given; built once it can be shared (it is cached in the
    batch's syntax context by :class:`~syntax_nmt.models.modules.methods.sgnet.SGNetModule`)."""
    B, T, _ = allowed.shape
    fill = -1e8 if dtype == torch.float32 else -1e4
    add = torch.zeros(B, T, T, dtype=dtype, device=allowed.device).masked_fill(~allowed, fill)
    return add.unsqueeze(1).expand(B, num_heads, T, T).reshape(B * num_heads, T, T)
