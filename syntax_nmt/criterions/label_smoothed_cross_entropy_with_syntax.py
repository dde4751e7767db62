"""Criterion ``label_smoothed_cross_entropy_with_syntax``: translation plus the syntax methods' auxiliary losses.

fairseq's ``label_smoothed_cross_entropy`` (all of its options, unchanged with every syntax weight
at 0) plus, on the source side, the auxiliary losses of the registered syntax methods
(:class:`~syntax_nmt.models.modules.methods.base.AuxLoss`, listed in each method's ``losses``, their
options in its ``loss_config``, which this criterion's options include). Today:

* ``lisa`` (:class:`~syntax_nmt.models.modules.methods.lisa.LisaLoss`): LISA's parse head against each
  token's parent (``--lisa-loss-weight``);
* ``dp`` and ``hp`` (:mod:`~syntax_nmt.models.modules.methods.seprem`): SEPREM's dependency distance
  prediction and head prediction (``--dp-loss-weight``, ``--hp-loss-weight``);

and, on the target side, the cross-entropy of each target factor the decoder predicts (the task's
``--target-factors``; :mod:`~syntax_nmt.models.modules.target_factors`) over the real target tokens,
``--target-factor-loss-weight`` (default 1, Sockeye's), logged as ``factor_NAME_loss`` / ``factor_NAME_acc``.

Each auxiliary loss is the mean negative log-likelihood over the items it covers (real tokens,
sampled pairs, real words); it enters the loss as ``weight * mean * ntokens`` (``ntokens``: the batch's target
tokens), so that it weighs ``weight`` times the per-target-token translation loss whatever fairseq then divides
both by: the target tokens, or with ``--sentence-avg`` the sentences (the translation loss is then a sum per
sentence, and so is every auxiliary loss: a target factor's is ``weight`` times its cross-entropy summed over the
sentence's tokens, as the translation loss; before, it stayed a mean per token under ``--sentence-avg``, so the
same weight meant another balance). Each is logged (base 2, like fairseq's losses) as ``NAME_loss`` with its
accuracy ``NAME_acc``.
The losses' parameters (e.g. the DP and HP classifiers) are parameters of this criterion (fairseq
optimizes and checkpoints them under ``"criterion"``; the translation model does not change).
"""

import dataclasses
import logging
import math
from types import SimpleNamespace
from typing import Dict, Tuple

import torch
from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.logging import metrics
from omegaconf import II
from torch import Tensor

from syntax_nmt.models.modules.methods import base as methods
from syntax_nmt.models.modules.target_factors import FACTOR_LOGITS
from syntax_nmt.registry import compose_config

logger = logging.getLogger(__name__)


def syntax_criterion_config() -> type:
    """The criterion's config: fairseq's label smoothing options, every registered method's ``loss_config`` and
    the encoder dimension (read from the model's arguments, not an option)."""
    return compose_config(
        "LabelSmoothedCrossEntropyWithSyntaxConfig", LabelSmoothedCrossEntropyCriterionConfig,
        [(f"method {m.name}", m.loss_config) for m in methods.registered_methods().values() if m.loss_config],
        [("encoder_embed_dim", int, dataclasses.field(default=II("model.encoder_embed_dim"))),
         ("target_factor_loss_weight", float, dataclasses.field(
             default=1.0, metadata={"help": "weight of each target factor's cross-entropy (the task's "
                                    "--target-factors), per target token like the translation loss (also with --sentence-avg: then "
                                    "both are sums per sentence)"}))],
    )


NAME = "label_smoothed_cross_entropy_with_syntax"
LabelSmoothedCrossEntropyWithSyntaxConfig = syntax_criterion_config()


def _loss_option_names():
    return {f.name for c in methods.loss_configs() for f in dataclasses.fields(c)}


@register_criterion(NAME, dataclass=LabelSmoothedCrossEntropyWithSyntaxConfig)
class LabelSmoothedCrossEntropyWithSyntaxCriterion(LabelSmoothedCrossEntropyCriterion):
    """Label-smoothed cross-entropy plus the registered syntax methods' auxiliary losses (module docstring).

    Args:
        task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy: as fairseq's
            ``LabelSmoothedCrossEntropyCriterion``.
        encoder_embed_dim (int): dimension of the encoder output (inputs of the losses' classifiers).
        **loss_options: fields of the methods' ``loss_config`` (e.g. ``lisa_loss_weight=0.1``); unset: defaults.
    """

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 encoder_embed_dim=512, target_factor_loss_weight=1.0, **loss_options):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        methods.check_weight("--target-factor-loss-weight", target_factor_loss_weight)
        self.factor_weight = float(target_factor_loss_weight)
        unknown = sorted(set(loss_options) - _loss_option_names())
        if unknown:
            raise TypeError(f"unknown syntax loss options {unknown}")
        defaults = {f.name: f.default for c in methods.loss_configs() for f in dataclasses.fields(c)}
        options = SimpleNamespace(**{**defaults, **loss_options})
        self.embed_dim = int(encoder_embed_dim)
        #: name -> the loss (parameters registered on this criterion under fixed names)
        self.losses: Dict[str, methods.AuxLoss] = {}
        for cls in methods.aux_losses():
            loss = cls(options, self.embed_dim)
            for attr, module in loss.parameter_modules().items():
                if hasattr(self, attr):
                    raise ValueError(f"syntax loss {loss.name!r}: criterion attribute {attr!r} is taken")
                setattr(self, attr, module)
            self.losses[loss.name] = loss
        self._syntax_logging: Dict[str, Tensor] = {}

    @classmethod
    def add_args(cls, parser):
        """fairseq's hook: the options of the methods registered by now, so that a method a user module
        registers after this module was imported adds its loss options too (fairseq builds the criterion's
        config from the dataclass registered under its name, refreshed here)."""
        from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
        from fairseq.dataclass.utils import gen_parser_from_dataclass

        from hydra.core.config_store import ConfigStore

        config = syntax_criterion_config()
        # where fairseq's register_criterion put the dataclass: the class, the registry and hydra's config store
        setattr(cls, "__dataclass", config)
        CRITERION_DATACLASS_REGISTRY[NAME] = config
        node = config()
        node._name = NAME
        ConfigStore.instance().store(name=NAME, group="criterion", node=node, provider="fairseq")
        gen_parser_from_dataclass(parser, config())

    @classmethod
    def build_criterion(cls, cfg, task):
        """fairseq's hook: the base options by name, and every loss option the config has."""
        loss_options = {n: getattr(cfg, n) for n in _loss_option_names() if hasattr(cfg, n)}
        return cls(task, cfg.sentence_avg, cfg.label_smoothing, getattr(cfg, "ignore_prefix_size", 0),
                   getattr(cfg, "report_accuracy", False), encoder_embed_dim=cfg.encoder_embed_dim,
                   target_factor_loss_weight=getattr(cfg, "target_factor_loss_weight", 1.0), **loss_options)

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
        terms.update(self.factor_terms(net_output, sample))
        if terms:
            # the target tokens, not the sample size: with --sentence-avg fairseq divides the summed translation loss
            # by the sentences, and each term must keep its ratio to it (weight x the per-token translation loss)
            scale = sample["ntokens"]
            for name, (weight, nll_sum, count, correct) in terms.items():
                loss = loss + (weight * scale) * nll_sum / count.clamp(min=1)
                self._syntax_logging[f"{name}_loss"] = nll_sum.data
                self._syntax_logging[f"{name}_count"] = count.data
                self._syntax_logging[f"{name}_correct"] = correct.data
        return loss, nll_loss

    def load_state_dict(self, state_dict, strict: bool = True, **kwargs):
        """Restore the auxiliary losses' own parameters (e.g. SEPREM's DP and HP classifiers) from a checkpoint's
        ``"criterion"`` entry.

        The syntax losses may change between runs (a checkpoint trained without a loss, resumed with
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
        factors = sorted({k[: -len("_count")] for log in logging_outputs for k in log
                          if k.startswith("factor_") and k.endswith("_count")})
        for name in [*(loss.name for loss in methods.aux_losses()), *factors]:
            count = utils.item(sum(log.get(f"{name}_count", 0) for log in logging_outputs))
            if count > 0:
                nll = utils.item(sum(log.get(f"{name}_loss", 0) for log in logging_outputs))
                correct = utils.item(sum(log.get(f"{name}_correct", 0) for log in logging_outputs))
                metrics.log_scalar(f"{name}_loss", nll / count / math.log(2), count, round=3)
                metrics.log_scalar(f"{name}_acc", 100.0 * correct / count, count, round=2)

    # -- the syntax losses --------------------------------------------------------------------
    def factor_terms(self, net_output, sample) -> Dict[str, Tuple[float, Tensor, Tensor, Tensor]]:
        """``factor_NAME`` -> ``(weight, nll_sum, count, n_correct)`` of each target factor the decoder predicts,
        over the target's real tokens (EOS included, as the translation loss counts it)."""
        extra = net_output[1] if len(net_output) > 1 and isinstance(net_output[1], dict) else {}
        logits = extra.get(FACTOR_LOGITS)
        if not logits or self.factor_weight == 0:
            return {}
        targets = sample.get("target_factors")
        if targets is None:
            raise ValueError("the model predicts target factors but the batch has none: train with the task's "
                             "--target-factors on data binarized with --target-streams")
        real = sample["target"].ne(self.padding_idx)
        terms = {}
        for name, scores in logits.items():
            logp = torch.log_softmax(scores.float(), dim=-1)
            gold = targets[name]
            nll = -logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
            correct = (logp.argmax(-1) == gold) & real
            terms[f"factor_{name}"] = (self.factor_weight, nll.masked_fill(~real, 0).sum(), real.sum(),
                                       correct.sum())
        return terms

    def syntax_terms(self, net_output) -> Dict[str, Tuple[float, Tensor, Tensor, Tensor]]:
        """name -> ``(weight, nll_sum, count, n_correct)`` of each active syntax loss.

        Raises:
            ValueError: a loss is asked for but the model does not provide what it needs.
        """
        extra = net_output[1] if len(net_output) > 1 and isinstance(net_output[1], dict) else {}
        encoder_out = extra.get("encoder_out")
        ctx = encoder_out.get("syntax") if isinstance(encoder_out, dict) else None
        if ctx is None:
            requested = [loss.name for loss in self.losses.values() if loss.requested]
            if not requested:  # e.g. LISA's default weight with a model without syntax: plain label smoothing
                return {}
            options = ", ".join(f"--{n}-loss-weight" for n in requested)
            raise ValueError(
                f"{options} need the source syntax of the model: use --arch syntax_transformer* with a "
                "--syntax-attention method (e.g. seprem or lisa) on data with the head and subword streams"
            )
        x = encoder_out["encoder_out"][0].transpose(0, 1)  # B T C
        terms = {}
        for name, loss in self.losses.items():
            weight = loss.weight(ctx)
            if weight > 0:
                terms[name] = (weight, *loss.terms(ctx, x, self.training))
        return terms
