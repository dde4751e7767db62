"""``--syntax-attention seprem``: SEPREM's syntax-aware layer inputs (Xu et al., 2021)."""

import math
from dataclasses import dataclass, field

import torch
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from torch import Tensor, nn

from syntax_nmt.models.modules.methods.base import (PARSE, AuxLoss, SyntaxMethod, check_weight, parse_layers,
                                                    register_syntax_method)
from syntax_nmt.models.modules.methods.seprem_masks import (connected_word_pairs, distance_classes,
                                                            sample_pair_indices, seprem_strength)
from syntax_nmt.syntax.aux_losses import classification_terms, masked_log_softmax
from syntax_nmt.syntax.tree import real_word_starts

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

    ``D̃`` is :func:`~syntax_nmt.models.modules.methods.seprem_masks.seprem_strength` (eq. 3-4), computed once per batch
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

    def strength(self, ctx, dtype: torch.dtype = torch.float32) -> Tensor:
        """``(B, T, T)`` ``D̃`` of the batch in ``dtype`` (computed in float32 and cached in the context, once per
        dtype)."""
        d = ctx.cached("seprem_strength", lambda: seprem_strength(ctx.tree))
        return d if dtype == d.dtype else ctx.cached(("seprem_strength", dtype), lambda: d.to(dtype))

    def forward(self, x: Tensor, ctx) -> Tensor:
        """``x``: ``(T, B, C)`` layer input, ``ctx``: the batch's ``SyntaxContext`` -> ``(T, B, C)``.

        Four kernels: the projection ``[W1; W2] H``, ``W1 H + D̃ (W2 H)`` as one batched ``baddbmm`` over the
        sentences (on ``(B, T, C)`` views of the ``(T, B, C)`` projection, no copy), ``sigma``, and eq. 1's
        ``(1 - alpha) H + alpha Ĥ`` as one ``lerp``."""
        a, b = self.proj(x).chunk(2, dim=-1)  # W1 H, W2 H: T B C each
        d = self.strength(ctx, a.dtype)  # B T T
        h_hat = ACTIVATIONS[self.activation](torch.baddbmm(a.transpose(0, 1), d, b.transpose(0, 1)))  # B T C
        return torch.lerp(x, h_hat.transpose(0, 1).to(x.dtype), self.alpha.to(x.dtype))


@dataclass
class SepremLossConfig(FairseqDataclass):
    dp_loss_weight: float = field(
        default=0.0, metadata={"help": "weight of SEPREM's dependency distance prediction loss (0: off)"}
    )
    dp_max_distance: int = field(
        default=8, metadata={"help": "DP classes: tree distances 1..N, plus one class for farther pairs"}
    )
    dp_pair_rate: float = field(
        default=0.15, metadata={"help": "fraction of the connected word pairs of each sentence DP trains on "
                                "(the paper's 15%%; validation uses every pair)"}
    )
    hp_loss_weight: float = field(default=0.0, metadata={"help": "weight of the head prediction loss (0: off)"})


class DistanceLoss(AuxLoss):
    """DP, SEPREM's dependency distance prediction (Xu et al., 2021, sec. 4.4): for a sample of 15 % of the
    connected word pairs of each sentence, a linear classifier over the concatenated encoder outputs of the two
    words (their first subwords) predicts the tree distance ``1 .. --dp-max-distance`` or "farther"
    (``--dp-loss-weight``). The classifier is the criterion's ``dp_classifier``."""

    name = "dp"
    deterministic_args = ("--dp-pair-rate", "1")  # every pair, none sampled

    def __init__(self, options, embed_dim):
        super().__init__(options, embed_dim)
        self.loss_weight = float(getattr(options, "dp_loss_weight", 0.0))
        self.max_distance = int(getattr(options, "dp_max_distance", 8))
        self.pair_rate = float(getattr(options, "dp_pair_rate", 0.15))
        check_weight("--dp-loss-weight", self.loss_weight)
        if self.max_distance < 1:
            raise ValueError(f"--dp-max-distance must be >= 1, got {self.max_distance}")
        if not 0.0 < self.pair_rate <= 1.0:
            raise ValueError(f"--dp-pair-rate must lie in (0, 1], got {self.pair_rate}")
        if self.loss_weight > 0:
            # linear classifier over [h_w; h_u] (SEPREM sec. 4.4), classes: distance 1..N, farther
            self.classifier = nn.Linear(2 * self.embed_dim, self.max_distance + 1)

    def parameter_modules(self):
        return {"dp_classifier": self.classifier} if self.loss_weight > 0 else {}

    def terms(self, ctx, x, training):
        """In training only the sampled pairs are scored (a ``(B, K, classes)`` tensor with ``K`` about
        ``--dp-pair-rate`` of ``T^2``, :func:`~syntax_nmt.models.modules.methods.seprem_masks.sample_pair_indices`);
        in evaluation every connected pair counts, scored as one ``(B, T, T, classes)`` tensor."""
        self.check_dim(x)
        tree = ctx.tree
        pairs = connected_word_pairs(tree)
        C = self.embed_dim
        w, b = self.classifier.weight, self.classifier.bias
        # W [h_w; h_u] + b = (W_1 h_w + b) + W_2 h_u, so every pair costs O(classes), not O(C)
        first = nn.functional.linear(x, w[:, :C], b).float()  # B T K
        second = nn.functional.linear(x, w[:, C:]).float()
        classes = distance_classes(tree.dist, self.max_distance)  # B T T
        if not training:
            logp = torch.log_softmax(first.unsqueeze(2) + second.unsqueeze(1), dim=-1)  # B T T K
            return classification_terms(logp, classes, pairs)
        B, T, K = first.shape
        index, keep = sample_pair_indices(pairs, self.pair_rate)  # B N: flat pair i * T + j
        logits = (first.gather(1, (index // T).unsqueeze(-1).expand(-1, -1, K))
                  + second.gather(1, (index % T).unsqueeze(-1).expand(-1, -1, K)))  # B N K
        logp = torch.log_softmax(logits, dim=-1)
        return classification_terms(logp, classes.reshape(B, T * T).gather(1, index), keep)


class HeadLoss(AuxLoss):
    """HP, head prediction (used by SEPREM after Wang et al., 2020): each word's first subword points, with a
    pointer softmax over the first subwords of the sentence's words, at its head word; roots point to themselves
    (``--hp-loss-weight``). Its projections are the criterion's ``hp_query`` and ``hp_key``."""

    name = "hp"

    def __init__(self, options, embed_dim):
        super().__init__(options, embed_dim)
        self.loss_weight = float(getattr(options, "hp_loss_weight", 0.0))
        check_weight("--hp-loss-weight", self.loss_weight)
        if self.loss_weight > 0:
            self.query = nn.Linear(self.embed_dim, self.embed_dim)
            self.key = nn.Linear(self.embed_dim, self.embed_dim)

    def parameter_modules(self):
        return {"hp_query": self.query, "hp_key": self.key} if self.loss_weight > 0 else {}

    def terms(self, ctx, x, training):
        self.check_dim(x)
        tree = ctx.tree
        words = real_word_starts(tree)
        q, k = self.query(x).float(), self.key(x).float()
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.embed_dim)
        logp = masked_log_softmax(scores, words.unsqueeze(1))
        return classification_terms(logp, tree.parents, words)


@register_syntax_method("seprem")
class Seprem(SyntaxMethod):
    """SEPREM's syntax-aware transformer (Xu et al., 2021, eq. 1-5): before each encoder layer of
    ``--seprem-layers``, the input becomes ``(1 - alpha) H + alpha sigma(W1 H + W2 D̃ H)``; see
    :class:`SepremInput`. Replaces no self-attention, so it combines with every other method."""

    title = "SEPREM's syntax-aware layer inputs, distance and head prediction losses (Xu et al., 2021)"
    config = SepremConfig
    inference_streams = PARSE  # its layer inputs weight the parse's distances: translating needs the parse
    layers_option = "--seprem-layers"
    identity_args = ("--seprem-alpha-init", "0")  # (1 - alpha) H + alpha H^ = H
    # the demo's budget (400 updates; transformer 21.9 BLEU): DP+HP at 1 (the paper's plain sum) gave 10.0,
    # at 0.1 19.6, at 0.01 24.0 (seed 1): early in training the syntax losses take most of the clipped gradient
    system_losses = ("--dp-loss-weight", "0.01", "--hp-loss-weight", "0.01")
    bench_targets = {"seprem": {"train_wps": 0.85, "gen_sps": 0.9}}
    length_targets = {"time": 0.85, "memory": 2.0, "ops": 1.15}
    loss_config = SepremLossConfig
    losses = (DistanceLoss, HeadLoss)

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
