"""A checkpoint of this plugin as a stock fairseq checkpoint (``syntax-nmt-export``).

What makes a model exportable is what its inference computes: the words in, fairseq's ``transformer`` encoder and
decoder, nothing else. That holds for the stock ``transformer`` trained through the plugin's recipes, for LISA without
``--lisa-inject-parse`` (its parse head folds into an ordinary head: :func:`~syntax_nmt.export.fold.fold_biaffine_head`)
and for target factors without ``--target-factor-input`` (their output layers read the decoder's state and feed
nothing back, and the beam search scores the words alone: dropping them leaves the words' translation as it is). A
model with anything else at inference (source features, another syntax method, an injected parse, factor input, a BOS
the stock task does not prepend) is refused by :func:`plugin_needs`.

The export holds only what torch's weights-only loader accepts with nothing allow-listed (stock fairseq 0.12 loads
checkpoints with it under torch >= 2.6): tensors, and the configuration as plain nested dicts (fairseq makes its
OmegaConf object of them when it loads the checkpoint), with no ``argparse.Namespace``, no option or name of this
plugin, ``arch`` a stock architecture, task ``translation``.
"""

import argparse
import copy
import logging
import pickle
from collections import OrderedDict
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

import torch

from syntax_nmt.export.fold import fold_biaffine_head

logger = logging.getLogger(__name__)

#: the stock task, model and criterion an export names
STOCK_TASK, STOCK_MODEL, STOCK_CRITERION = "translation", "transformer", "label_smoothed_cross_entropy"
#: the criterion class name fairseq records in ``optimizer_history`` for :data:`STOCK_CRITERION`
STOCK_CRITERION_CLASS = "LabelSmoothedCrossEntropyCriterion"
#: the tasks and models of the checkpoints this command reads: the plugin's and the stock ones its recipes train
TASKS = ("syntax_translation", STOCK_TASK)
MODELS = ("syntax_transformer", STOCK_MODEL)
#: the state-dict prefix of the decoder's target-factor output layers (dropped)
FACTOR_OUT = "decoder.factor_out."


class ExportError(ValueError):
    """The checkpoint cannot become a stock one (one line for the user)."""


@dataclass
class Exported:
    """What :func:`export_checkpoint` made.

    Args:
        state: the stock checkpoint (``torch.save`` it).
        arch: its architecture.
        folded: ``(layer, head)`` of LISA's parse head folded into the query projection, or None.
        dropped: the state-dict keys left out (the parse head's ``U`` and ``u``, the target factors' outputs).
        notes: what a user of the export should know (one sentence each).
    """

    state: Dict[str, Any]
    arch: str
    folded: Optional[Tuple[int, int]] = None
    dropped: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def load_checkpoint(path: str) -> Dict[str, Any]:
    """A checkpoint as fairseq reads it (weights-only, the plugin's types allow-listed; old layouts upgraded), with
    ``cfg`` as plain containers and ``cfg["model"]`` an ``argparse.Namespace`` (copied).

    Raises:
        ExportError: not a fairseq checkpoint with a configuration.
    """
    from fairseq import checkpoint_utils
    from omegaconf import OmegaConf

    from syntax_nmt import checkpoint_compat  # noqa: F401  (allow-lists what fairseq checkpoints pickle)

    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    except (pickle.UnpicklingError, RuntimeError, KeyError, EOFError, AttributeError, TypeError, ValueError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(f"{path} is not a fairseq checkpoint torch can read ({msg})") from None
    if not isinstance(state, dict) or state.get("cfg") is None or "model" not in state:
        raise ExportError(f"{path} is not a fairseq checkpoint (no configuration or no model state)")
    cfg = state["cfg"]
    cfg = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True) if OmegaConf.is_config(cfg) else cfg
    model = cfg.get("model")
    if isinstance(model, dict):
        model = argparse.Namespace(**model)
    if not isinstance(model, argparse.Namespace) or not getattr(model, "arch", None):
        raise ExportError(f"{path}: its model configuration names no architecture")
    state["cfg"] = {**cfg, "model": copy.deepcopy(model)}
    return state


def model_name(arch: str) -> str:
    """The registered model of architecture ``arch`` (``syntax_transformer_tiny`` -> ``syntax_transformer``).

    Raises:
        ExportError: an architecture fairseq (with this plugin) does not know.
    """
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    if arch not in ARCH_MODEL_NAME_REGISTRY:
        raise ExportError(f"architecture {arch!r} is not registered with fairseq")
    return ARCH_MODEL_NAME_REGISTRY[arch]


def _applied(args: argparse.Namespace) -> argparse.Namespace:
    """A copy of the model's arguments with their architecture applied (the defaults of options added since)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    out = copy.deepcopy(args)
    ARCH_CONFIG_REGISTRY[out.arch](out)
    return out


def plugin_needs(args: argparse.Namespace) -> List[str]:
    """What in a model's inference needs this plugin (empty: it can be a stock checkpoint), one phrase each.

    Args:
        args: the model's arguments (a checkpoint's ``cfg.model``).
    """
    from syntax_nmt.models.modules.inference_needs import describe_needs
    from syntax_nmt.models.syntax_transformer import parse_options

    if model_name(args.arch) == STOCK_MODEL:
        return []
    a = _applied(args)
    options = parse_options(a)
    factors = bool(_target_factors(a))
    needs = []
    for reader, streams in options.inference_needs(factors).items():
        needs.append(describe_needs({reader: streams}))
    for m in options.methods:
        if m.name != "lisa" and not m.inference_streams:  # a method whose encoder the stock one is not
            needs.append(f"--syntax-attention {m.name} changes the encoder: no stock Transformer computes it")
    if factors and getattr(a, "target_factor_input", False):
        needs.append("--target-factor-input embeds the predicted target factors into the decoder's input")
    if getattr(a, "source_prepend_bos", False):
        needs.append("--source-prepend-bos: the model was trained on sources starting with BOS, which the stock "
                     "translation task does not prepend")
    return needs


def _target_factors(args) -> list:
    from syntax_nmt.data.signatures import TARGET_FACTORS_ARG, read_target_factors

    return read_target_factors(getattr(args, TARGET_FACTORS_ARG, None))


def stock_option_names(args: argparse.Namespace, criterion: str) -> set:
    """The names of the options stock fairseq's training parser gives a ``translation`` / ``transformer`` run with
    the checkpoint's optimizer and learning-rate scheduler (where stock), with every field of fairseq's
    ``TransformerConfig`` and ``TranslationConfig``: what an exported ``cfg.model`` may hold."""
    from fairseq import options
    from fairseq.models.transformer import TransformerConfig
    from fairseq.optim import OPTIMIZER_REGISTRY
    from fairseq.optim.lr_scheduler import LR_SCHEDULER_REGISTRY
    from fairseq.tasks.translation import TranslationConfig

    argv = ["DATA", "--task", STOCK_TASK, "--arch", STOCK_MODEL, "--criterion", criterion]
    if getattr(args, "optimizer", None) in OPTIMIZER_REGISTRY:
        argv += ["--optimizer", args.optimizer]
    if getattr(args, "lr_scheduler", None) in LR_SCHEDULER_REGISTRY:
        argv += ["--lr-scheduler", args.lr_scheduler]
    parsed = options.parse_args_and_arch(options.get_training_parser(), argv)
    return (set(vars(parsed)) | {f.name for f in fields(TransformerConfig)}
            | {f.name for f in fields(TranslationConfig)})


def _stock_section(section: Optional[dict], name: str, dataclass_type) -> dict:
    """A config section as the stock component ``name`` of ``dataclass_type`` has it: its fields' values from
    ``section`` where given (the plugin's extra fields left out), the others at their defaults."""
    section = section or {}
    out = {"_name": name}
    for f in fields(dataclass_type):
        if f.name.startswith("_"):
            continue
        if f.name in section:
            out[f.name] = section[f.name]
        else:
            default = dataclass_type().__getattribute__(f.name)
            out[f.name] = default if isinstance(default, (str, int, float, bool, type(None))) else str(default)
    return out


def stock_config(cfg: Dict[str, Any], arch: str, source_lang: Optional[str], target_lang: Optional[str],
                 data: Optional[str]) -> Dict[str, Any]:
    """The exported configuration: ``cfg`` (plain containers, ``cfg["model"]`` a Namespace) with the model's
    arguments as a plain dict of stock options only, architecture ``arch``, task ``translation`` (its
    ``TranslationConfig`` fields), the criterion the stock ``label_smoothed_cross_entropy`` where it was the
    plugin's, no ``--user-dir``."""
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterionConfig
    from fairseq.tasks.translation import TranslationConfig

    args: argparse.Namespace = cfg["model"]
    crit_section = cfg.get("criterion") or {}
    crit_name = crit_section.get("_name") or getattr(args, "criterion", None)
    stock_crit = crit_name if crit_name in CRITERION_REGISTRY and not _is_plugin_class(
        CRITERION_REGISTRY[crit_name]) else STOCK_CRITERION
    keep = stock_option_names(args, stock_crit)
    model = {k: v for k, v in vars(args).items() if k in keep}
    model.update(_name=arch, arch=arch, task=STOCK_TASK, criterion=stock_crit, user_dir=None)
    task = _stock_section(cfg.get("task"), STOCK_TASK, TranslationConfig)
    for key, value in (("source_lang", source_lang), ("target_lang", target_lang), ("data", data)):
        if value is not None:
            task[key] = value
            model[key] = value
    out = {k: v for k, v in cfg.items() if k not in ("model", "task", "criterion")}
    out["common"] = {**(out.get("common") or {}), "user_dir": None}
    out["model"] = model
    out["task"] = task
    if stock_crit == crit_name:
        out["criterion"] = crit_section
    else:
        out["criterion"] = _stock_section(crit_section, STOCK_CRITERION, LabelSmoothedCrossEntropyCriterionConfig)
    return _plain(out)


def _is_plugin_class(cls) -> bool:
    return cls.__module__.split(".")[0] == "syntax_nmt"


def _plain(obj):
    """``obj`` as builtins only (dict, list, str, int, float, bool, None): what the weights-only loader reads with
    nothing allow-listed.

    Raises:
        ExportError: a value of another type (named with its path).
    """

    def walk(x, path):
        if isinstance(x, dict):
            return {str(k): walk(v, f"{path}.{k}") for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(x)]
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise ExportError(f"the configuration holds a {type(x).__name__} at {path}: cannot be written as plain data")

    return walk(obj, "cfg")


def stock_model_state(model_state: Dict[str, torch.Tensor], args: argparse.Namespace) -> Tuple[
        "OrderedDict[str, torch.Tensor]", Optional[Tuple[int, int]], List[str]]:
    """The model's tensors as the stock Transformer has them: LISA's parse head folded into its layer's query
    projection (its ``U``, ``u`` dropped), the target factors' output layers dropped.

    Returns:
        ``(state, (layer, head) folded or None, dropped keys)``.

    Raises:
        ExportError: the parse head's tensors are missing.
    """
    state = OrderedDict((k, v) for k, v in model_state.items())
    dropped = [k for k in state if k.startswith(FACTOR_OUT)]
    for k in dropped:
        del state[k]
    folded = None
    if model_name(args.arch) != STOCK_MODEL:
        from syntax_nmt.models.syntax_transformer import parse_options

        a = _applied(args)
        lisa = [m for m in parse_options(a).methods if m.name == "lisa"]
        if lisa:
            layer, head = lisa[0].layer, lisa[0].cfg.lisa_head
            prefix = f"encoder.layers.{layer}.self_attn."
            names = [prefix + n for n in ("q_proj.weight", "q_proj.bias", "parse_bilinear", "parse_key_bias")]
            missing = [n for n in names if n not in state]
            if missing:
                raise ExportError(f"the checkpoint lacks LISA's parse head tensors {missing}")
            head_dim = a.encoder_embed_dim // a.encoder_attention_heads
            w, b = fold_biaffine_head(state[names[0]], state[names[1]], state[names[2]], state[names[3]], head,
                                      head_dim ** -0.5)  # fairseq's MultiheadAttention.scaling
            state[names[0]], state[names[1]] = w, b
            for n in names[2:]:
                del state[n]
                dropped.append(n)
            folded = (layer, head)
    return state, folded, dropped


def export_checkpoint(state: Dict[str, Any], source_lang: Optional[str] = None, target_lang: Optional[str] = None,
                      data: Optional[str] = None, path: str = "the checkpoint") -> Exported:
    """The stock checkpoint of a checkpoint of this plugin (:func:`load_checkpoint`'s state).

    Args:
        state: the loaded checkpoint.
        source_lang, target_lang, data: recorded in the export's task (default: the checkpoint's).
        path: the checkpoint in messages.

    Raises:
        ExportError: a task or model this command does not export, or a model whose inference needs the plugin
            (every reason, in one line).
    """
    cfg = state["cfg"]
    args: argparse.Namespace = cfg["model"]
    task_name = (cfg.get("task") or {}).get("_name") or getattr(args, "task", None)
    if task_name not in TASKS:
        raise ExportError(f"{path} was trained with task {task_name!r}: syntax-nmt-export reads checkpoints of the "
                          f"tasks {', '.join(TASKS)}")
    name = model_name(args.arch)
    if name not in MODELS:
        raise ExportError(f"{path} is a {name!r} model ({args.arch}): syntax-nmt-export reads the models "
                          f"{', '.join(MODELS)}")
    needs = plugin_needs(args)
    if needs:
        raise ExportError(f"{path} cannot be a stock fairseq checkpoint: its inference needs the plugin: "
                          + "; ".join(needs))
    arch = args.arch if name == STOCK_MODEL else STOCK_MODEL
    task_cfg = cfg.get("task") or {}
    src = source_lang or task_cfg.get("source_lang") or getattr(args, "source_lang", None)
    tgt = target_lang or task_cfg.get("target_lang") or getattr(args, "target_lang", None)
    model, folded, dropped = stock_model_state(state["model"], args)
    notes = []
    factors = [f.name for f in _target_factors(_applied(args))] if name != STOCK_MODEL else []
    if factors:
        notes.append(f"the target factors ({', '.join(factors)}) are not predicted by the export: the same words, "
                     f"no F- lines")
    if folded:
        notes.append(f"LISA's parse head (encoder layer {folded[0]}, head {folded[1]}) is an ordinary head of the "
                     f"export: the same translations, no --print-source-parse")
    history = (state.get("optimizer_history") or [{}])[-1]
    out = {
        "args": None,
        "cfg": stock_config(cfg, arch, src, tgt, data),
        "model": model,
        "criterion": None,
        "optimizer_history": [{
            "criterion_name": STOCK_CRITERION_CLASS,
            "optimizer_name": str(history.get("optimizer_name", "")),
            "lr_scheduler_state": {"best": _number(history.get("lr_scheduler_state", {}).get("best"))},
            "num_updates": int(history.get("num_updates", 0) or 0),
        }],
        "task_state": {},
        "extra_state": {"train_iterator": _plain_iterator((state.get("extra_state") or {}).get("train_iterator")),
                        "val_loss": _number((state.get("extra_state") or {}).get("val_loss"))},
        "last_optimizer_state": None,
    }
    return Exported(out, arch, folded, dropped, notes)


def _number(x) -> Optional[float]:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def _plain_iterator(it) -> Optional[dict]:
    if not isinstance(it, dict):
        return None
    return {k: v for k, v in it.items() if isinstance(v, (bool, int, float, str, type(None)))}


def build_stock_model(state: Dict[str, Any]):
    """fairseq's model built from an export's configuration the way fairseq's checkpoint loader builds it
    (``models.build_model`` of its ``cfg.model``, an OmegaConf object of the plain dicts) with dictionaries of the
    sizes of its embeddings, and its tensors loaded strictly (in eval mode): every key of the stock model, nothing
    else.

    Raises:
        RuntimeError: keys or shapes that do not fit the stock model (a bug of the export).
    """
    from fairseq import models
    from fairseq.data import Dictionary
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(state["cfg"], flags={"allow_objects": True})
    tensors = state["model"]

    def dictionary(rows: int) -> Dictionary:
        d = Dictionary()
        for i in range(rows - len(d)):
            d.add_symbol(f"w{i}")
        return d

    class _Task:  # what TransformerModel.build_model reads of the task
        source_dictionary = dictionary(tensors["encoder.embed_tokens.weight"].shape[0])
        target_dictionary = dictionary(tensors["decoder.embed_tokens.weight"].shape[0])

    model = models.build_model(cfg.model, _Task())
    model.load_state_dict(tensors, strict=True, model_cfg=cfg.model)
    return model.eval()
