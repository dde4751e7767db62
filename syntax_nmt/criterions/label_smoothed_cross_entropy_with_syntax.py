"""Criterion ``label_smoothed_cross_entropy_with_syntax``: translation plus syntax auxiliary losses.

fairseq's ``label_smoothed_cross_entropy`` (all of its options, unchanged with every syntax weight
at 0) plus, on the source side:

* **LISA** (Strubell et al., 2018, sec. 2.2): cross-entropy of the parse attention head of
  ``--syntax-attention lisa`` against each token's parent (the first subword of its head word;
  roots on themselves), over every real source token (``--lisa-loss-weight``).
* **DP**, SEPREM's dependency distance prediction (Xu et al., 2021, sec. 4.4): for a sample of
  15 % of the connected word pairs of each sentence, a linear classifier over the concatenated
  encoder outputs of the two words (their first subwords) predicts the tree distance
  ``1 .. --dp-max-distance`` or "farther" (``--dp-loss-weight``).
* **HP**, head prediction (used by SEPREM after Wang et al., 2020): each word's first subword
  points, with a pointer softmax over the first subwords of the sentence's words, at its head
  word; roots point to themselves (``--hp-loss-weight``).

Each auxiliary loss is the mean negative log-likelihood over the items it covers (real tokens,
sampled pairs, real words); it enters the loss as ``weight * mean * sample_size``, so that after
fairseq divides by the sample size it weighs ``weight`` times the per-target-token translation
loss. Each is logged (base 2, like fairseq's losses) as ``lisa_loss``/``dp_loss``/``hp_loss``
with its accuracy ``*_acc``. The DP and HP classifiers are parameters of this criterion (fairseq
optimizes and checkpoints them under ``"criterion"``; the translation model does not change).
"""

import logging
import math
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import torch
from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.logging import metrics
from omegaconf import II
from torch import Tensor, nn

from syntax_nmt.models.modules.methods.lisa import LISA_SCORES
from syntax_nmt.syntax.aux_losses import (classification_terms, distance_classes, masked_log_softmax,
                                         sample_pair_indices)
from syntax_nmt.syntax.tree import connected_word_pairs, real_word_starts, subword_parents_from_tree

logger = logging.getLogger(__name__)

SYNTAX_LOSSES = ("lisa", "dp", "hp")


@dataclass
class LabelSmoothedCrossEntropyWithSyntaxConfig(LabelSmoothedCrossEntropyCriterionConfig):
    lisa_loss_weight: Optional[float] = field(
        default=None,
        metadata={"help": "weight of LISA's parse attention loss (default: 1.0 when the model has "
                  "--syntax-attention lisa, else 0; a value > 0 requires lisa)"},
    )
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
    # the model's encoder dimension, for the DP/HP classifiers (not an option: read from the model's arguments)
    encoder_embed_dim: int = II("model.encoder_embed_dim")


@register_criterion("label_smoothed_cross_entropy_with_syntax", dataclass=LabelSmoothedCrossEntropyWithSyntaxConfig)
class LabelSmoothedCrossEntropyWithSyntaxCriterion(LabelSmoothedCrossEntropyCriterion):
    """Label-smoothed cross-entropy plus LISA, DP and HP syntax losses (see the module docstring).

    Args:
        task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy: as fairseq's
            ``LabelSmoothedCrossEntropyCriterion``.
        lisa_loss_weight (float or None): None: 1.0 if the model has a LISA head, else 0.
        dp_loss_weight (float), dp_max_distance (int), dp_pair_rate (float): DP.
        hp_loss_weight (float): HP.
        encoder_embed_dim (int): dimension of the encoder output (DP/HP classifier inputs).
    """

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 lisa_loss_weight=None, dp_loss_weight=0.0, dp_max_distance=8, dp_pair_rate=0.15,
                 hp_loss_weight=0.0, encoder_embed_dim=512):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        for name, w in (("--lisa-loss-weight", lisa_loss_weight), ("--dp-loss-weight", dp_loss_weight),
                        ("--hp-loss-weight", hp_loss_weight)):
            if w is not None and (w < 0 or not math.isfinite(w)):
                raise ValueError(f"{name} must be a finite value >= 0, got {w}")
        if dp_max_distance < 1:
            raise ValueError(f"--dp-max-distance must be >= 1, got {dp_max_distance}")
        if not 0.0 < dp_pair_rate <= 1.0:
            raise ValueError(f"--dp-pair-rate must lie in (0, 1], got {dp_pair_rate}")
        self.lisa_loss_weight = lisa_loss_weight
        self.dp_loss_weight = float(dp_loss_weight)
        self.hp_loss_weight = float(hp_loss_weight)
        self.dp_max_distance = int(dp_max_distance)
        self.dp_pair_rate = float(dp_pair_rate)
        dim = int(encoder_embed_dim)
        self.embed_dim = dim
        if self.dp_loss_weight > 0:
            # linear classifier over [h_w; h_u] (SEPREM sec. 4.4), classes: distance 1..N, farther
            self.dp_classifier = nn.Linear(2 * dim, self.dp_max_distance + 1)
        if self.hp_loss_weight > 0:
            self.hp_query = nn.Linear(dim, dim)
            self.hp_key = nn.Linear(dim, dim)
        self._syntax_logging: Dict[str, Tensor] = {}

    # -- fairseq hooks ----------------------------------------------------------------------
    def forward(self, model, sample, reduce=True):
        """fairseq's forward; :meth:`compute_loss` adds the syntax losses, logged here."""
        self._syntax_logging = {}
        loss, sample_size, logging_output = super().forward(model, sample, reduce=reduce)
        logging_output.update(self._syntax_logging)
        self._syntax_logging = {}
        return loss, sample_size, logging_output

    def compute_loss(self, model, net_output, sample, reduce=True):
        loss, nll_loss = super().compute_loss(model, net_output, sample, reduce=reduce)
        if not reduce:  # per-token losses: the syntax losses are per source token/pair, not added
            return loss, nll_loss
        terms = self.syntax_terms(net_output)
        if terms:
            sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
            for name, (weight, nll_sum, count, correct) in terms.items():
                loss = loss + (weight * sample_size) * nll_sum / count.clamp(min=1)
                self._syntax_logging[f"{name}_loss"] = nll_sum.data
                self._syntax_logging[f"{name}_count"] = count.data
                self._syntax_logging[f"{name}_correct"] = correct.data
        return loss, nll_loss

    def load_state_dict(self, state_dict, strict: bool = True, **kwargs):
        """Restore the DP/HP classifiers from a checkpoint's ``"criterion"`` entry.

        The syntax losses may change between runs (a checkpoint trained without DP, resumed with
        it, stores ``None`` there): classifiers the checkpoint lacks keep their fresh
        initialisation and ones it has but this run does not use are dropped, both with a warning.
        """
        state_dict = dict(state_dict or {})
        own = self.state_dict()
        usable = {k: v for k, v in state_dict.items() if k in own and own[k].shape == v.shape}
        fresh = sorted(set(own) - set(usable))
        dropped = sorted(set(state_dict) - set(usable))
        if fresh or dropped:
            logger.warning("syntax criterion: checkpoint lacks %s (initialised fresh), ignores %s",
                           fresh or "nothing", dropped or "nothing")
        return super().load_state_dict(usable, strict=False)

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        for name in SYNTAX_LOSSES:
            count = utils.item(sum(log.get(f"{name}_count", 0) for log in logging_outputs))
            if count > 0:
                nll = utils.item(sum(log.get(f"{name}_loss", 0) for log in logging_outputs))
                correct = utils.item(sum(log.get(f"{name}_correct", 0) for log in logging_outputs))
                metrics.log_scalar(f"{name}_loss", nll / count / math.log(2), count, round=3)
                metrics.log_scalar(f"{name}_acc", 100.0 * correct / count, count, round=2)

    # -- the syntax losses --------------------------------------------------------------------
    def syntax_terms(self, net_output) -> Dict[str, Tuple[float, Tensor, Tensor, Tensor]]:
        """name -> ``(weight, nll_sum, count, n_correct)`` of each active syntax loss.

        Raises:
            ValueError: a loss is asked for but the model does not provide what it needs.
        """
        wanted = [n for n, w in (("dp", self.dp_loss_weight), ("hp", self.hp_loss_weight)) if w > 0]
        if self.lisa_loss_weight is None or self.lisa_loss_weight > 0:
            wanted.insert(0, "lisa")
        if not wanted:
            return {}
        extra = net_output[1] if len(net_output) > 1 and isinstance(net_output[1], dict) else {}
        encoder_out = extra.get("encoder_out")
        ctx = encoder_out.get("syntax") if isinstance(encoder_out, dict) else None
        if ctx is None:
            explicit = [n for n in wanted if n != "lisa" or self.lisa_loss_weight is not None]
            if not explicit:  # default LISA weight, model without syntax: plain label smoothing
                return {}
            options = ", ".join(f"--{n}-loss-weight" for n in explicit)
            raise ValueError(
                f"{options} need the source syntax of the model: use --arch syntax_transformer* with a "
                "--syntax-attention method (e.g. seprem or lisa) on data with the head and subword streams"
            )
        terms = {}
        has_lisa = LISA_SCORES in ctx.outputs
        if "lisa" in wanted:
            if has_lisa:
                weight = 1.0 if self.lisa_loss_weight is None else self.lisa_loss_weight
                terms["lisa"] = (weight, *self.lisa_terms(ctx))
            elif self.lisa_loss_weight is not None:
                raise ValueError(f"--lisa-loss-weight {self.lisa_loss_weight} needs LISA's parse attention head: "
                                 "add lisa to --syntax-attention (or set --lisa-loss-weight 0)")
        if "dp" in wanted or "hp" in wanted:
            x = encoder_out["encoder_out"][0].transpose(0, 1)  # B T C
            if x.shape[-1] != self.embed_dim:
                raise ValueError(f"the encoder output has dimension {x.shape[-1]} but the criterion's DP/HP "
                                 f"classifiers were built for {self.embed_dim}")
            if "dp" in wanted:
                terms["dp"] = (self.dp_loss_weight, *self.dp_terms(ctx, x))
            if "hp" in wanted:
                terms["hp"] = (self.hp_loss_weight, *self.hp_terms(ctx, x))
        return terms

    def lisa_terms(self, ctx):
        """LISA: the parse head's distribution against each real token's parent position."""
        logp = torch.log_softmax(ctx.outputs[LISA_SCORES].float(), dim=-1)
        parents = ctx.cached("lisa_parents", lambda: subword_parents_from_tree(ctx.tree))
        return classification_terms(logp, parents, ~ctx.special)

    def dp_terms(self, ctx, x: Tensor):
        """DP: distance class of sampled connected word pairs from ``W [h_w; h_u] + b``.

        In training only the sampled pairs are scored (a ``(B, K, classes)`` tensor with ``K`` about
        ``--dp-pair-rate`` of ``T^2``, :func:`~syntax_nmt.syntax.aux_losses.sample_pair_indices`); in
        evaluation every connected pair counts, scored as one ``(B, T, T, classes)`` tensor.
        """
        tree = ctx.tree
        pairs = connected_word_pairs(tree)
        C = self.embed_dim
        w, b = self.dp_classifier.weight, self.dp_classifier.bias
        # W [h_w; h_u] + b = (W_1 h_w + b) + W_2 h_u, so every pair costs O(classes), not O(C)
        first = nn.functional.linear(x, w[:, :C], b).float()  # B T K
        second = nn.functional.linear(x, w[:, C:]).float()
        classes = distance_classes(tree.dist, self.dp_max_distance)  # B T T
        if not self.training:
            logp = torch.log_softmax(first.unsqueeze(2) + second.unsqueeze(1), dim=-1)  # B T T K
            return classification_terms(logp, classes, pairs)
        B, T, K = first.shape
        index, keep = sample_pair_indices(pairs, self.dp_pair_rate)  # B N: flat pair i * T + j
        logits = (first.gather(1, (index // T).unsqueeze(-1).expand(-1, -1, K))
                  + second.gather(1, (index % T).unsqueeze(-1).expand(-1, -1, K)))  # B N K
        logp = torch.log_softmax(logits, dim=-1)
        return classification_terms(logp, classes.reshape(B, T * T).gather(1, index), keep)

    def hp_terms(self, ctx, x: Tensor):
        """HP: pointer softmax of each real word over the sentence's words, target its head word."""
        tree = ctx.tree
        words = real_word_starts(tree)
        q, k = self.hp_query(x).float(), self.hp_key(x).float()
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.embed_dim)
        logp = masked_log_softmax(scores, words.unsqueeze(1))
        return classification_terms(logp, tree.parents, words)
