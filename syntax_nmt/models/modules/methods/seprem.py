"""``--syntax-attention seprem``: SEPREM's syntax-aware layer inputs (Xu et al., 2021)."""

from dataclasses import dataclass, field

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from torch import Tensor, nn

from syntax_nmt.models.modules.methods.base import SyntaxMethod, parse_layers, register_syntax_method
from syntax_nmt.syntax.tree import seprem_strength_from_tree

ACTIVATIONS = {
    "gelu": nn.functional.gelu,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "tanh": torch.tanh,
}


@dataclass
class SepremConfig(FairseqDataclass):
    seprem_layers: str = field(
        default="all",
        metadata={"help": "encoder layers (0-based, comma-separated, negative from the top, or 'all') whose "
                  "input becomes (1 - alpha) H + alpha sigma(W1 H + W2 D~ H) (SEPREM eq. 1, 5)"},
    )
    seprem_alpha_init: float = field(
        default=0.1, metadata={"help": "initial value of each layer's learnable alpha (eq. 1; small but not zero, "
                               "the paper reports learned values of 0.13-0.15)"}
    )
    seprem_activation: ChoiceEnum(list(ACTIVATIONS)) = field(
        default="gelu", metadata={"help": "the activation sigma of eq. 5 (the paper leaves it unnamed)"}
    )


class SepremInput(nn.Module):
    """SEPREM's syntax-aware representation mixed into a layer input, Xu et al. (2021),
    "Syntax-Enhanced Pre-trained Model", sec. 4.2-4.3, eq. 1 and 5:

    ``H' = (1 - alpha) H + alpha Ĥ`` with ``Ĥ = sigma(W1 H + W2 D̃ H)``.

    ``D̃`` is :func:`~syntax_nmt.syntax.tree.seprem_strength` (eq. 3-4), computed once per batch
    from the syntax context and shared by every layer. ``W1`` and ``W2`` (no bias, as in eq. 5)
    are held as one ``(2C, C)`` projection, and ``W2 D̃ H`` is computed as ``D̃ (W2 H)`` (equal by
    linearity). ``alpha`` is a free scalar, so ``alpha = 0`` gives exactly the plain layer input.

    Args:
        embed_dim (int): model dimension ``C``.
        alpha_init (float): initial ``alpha``.
        activation (str): a key of :data:`ACTIVATIONS`.
    """

    #: what ``alpha`` weighs (read by ``syntax-nmt-analyze gates``)
    alpha_weighs = "syntax-aware representation (SEPREM eq. 1)"

    def __init__(self, embed_dim: int, alpha_init: float = 0.1, activation: str = "gelu"):
        super().__init__()
        self.embed_dim = embed_dim
        self.activation = str(activation)
        self.proj = nn.Linear(embed_dim, 2 * embed_dim, bias=False)  # [W1; W2]
        self.alpha = nn.Parameter(torch.tensor(float(alpha_init)))

    def strength(self, ctx) -> Tensor:
        """``(B, T, T)`` float32 ``D̃`` of the batch (cached in the context)."""
        return ctx.cached("seprem_strength", lambda: seprem_strength_from_tree(ctx.tree))

    def forward(self, x: Tensor, ctx) -> Tensor:
        """``x``: ``(T, B, C)`` layer input, ``ctx``: the batch's ``SyntaxContext`` -> ``(T, B, C)``."""
        d = self.strength(ctx).to(x.dtype)  # B T T
        a, b = self.proj(x).chunk(2, dim=-1)  # W1 H, W2 H: T B C each
        h_hat = ACTIVATIONS[self.activation](a + torch.einsum("bij,jbc->ibc", d, b))
        alpha = self.alpha.to(x.dtype)
        return (1 - alpha) * x + alpha * h_hat


@register_syntax_method("seprem")
class Seprem(SyntaxMethod):
    """SEPREM's syntax-aware transformer (Xu et al., 2021, eq. 1-5): before each encoder layer of
    ``--seprem-layers``, the input becomes ``(1 - alpha) H + alpha sigma(W1 H + W2 D̃ H)``; see
    :class:`SepremInput`. Replaces no self-attention, so it combines with every other method."""

    config = SepremConfig
    layers_option = "--seprem-layers"
    # the demo's budget (400 updates; transformer 21.9 BLEU): DP+HP at 1 (the paper's plain sum) gave 10.0,
    # at 0.1 19.6, at 0.01 24.0 (seed 1): early in training the syntax losses take most of the clipped gradient
    system_losses = ("--dp-loss-weight", "0.01", "--hp-loss-weight", "0.01")

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        if str(cfg.seprem_activation) not in ACTIVATIONS:
            raise ValueError(f"--seprem-activation must be one of {list(ACTIVATIONS)}, got {cfg.seprem_activation!r}")
        self.layers = parse_layers(cfg.seprem_layers, num_layers, "--seprem-layers")

    def build_layer_input(self, layer, embed_dim, cfg, state):
        if layer not in self.layers:
            return None
        return SepremInput(embed_dim, alpha_init=self.cfg.seprem_alpha_init,
                           activation=str(self.cfg.seprem_activation))
