"""The registry through which syntax methods plug into :class:`SyntaxTransformerEncoder`.

A method is a small plain object made from the model config; the encoder asks it, through
three hooks, for the modules it contributes:

* :meth:`SyntaxMethod.build_self_attention`: the self-attention of the encoder layers listed by
  :meth:`SyntaxMethod.attention_layers` (SLA, Syntax-BERT, LISA). The module keeps the layer's
  own Q/K/V/output projections (a subclass of fairseq's ``MultiheadAttention``).
* :meth:`SyntaxMethod.build_layer_input`: a module applied to the input of an encoder layer
  (SEPREM).
* :meth:`SyntaxMethod.build_encoder_module`: a module applied to the final encoder states (SG-Net).

Layer-input and encoder modules get the batch's
:class:`~syntax_nmt.models.modules.syntax_context.SyntaxContext` as an argument; self-attention
modules, which fairseq's layer calls without it, read it from the shared
:class:`~syntax_nmt.models.modules.syntax_context.SyntaxState`, bound by the layer call that runs
them (so also when ``--checkpoint-activations`` recomputes the layer in the backward pass). Each method
declares its options as a dataclass (``config``), which the model adds to its arguments.
"""

from typing import Any, Dict, List, Optional, Sequence, Type

from torch import nn

#: name -> method class, filled by :func:`register_syntax_method`.
SYNTAX_METHODS: Dict[str, Type["SyntaxMethod"]] = {}


def register_syntax_method(name: str):
    """Class decorator registering a :class:`SyntaxMethod` under ``--syntax-attention NAME``."""

    def deco(cls):
        if name in SYNTAX_METHODS:
            raise ValueError(f"syntax method {name!r} registered twice")
        cls.name = name
        SYNTAX_METHODS[name] = cls
        return cls

    return deco


def parse_methods(value) -> List[str]:
    """``"sgnet,sla"`` -> ``["sgnet", "sla"]``; ``"none"``/empty -> ``[]``; unknown names raise."""
    names = []
    for item in (value or "").split(","):
        item = item.strip()
        if not item or item == "none":
            continue
        if item not in SYNTAX_METHODS:
            raise ValueError(f"unknown --syntax-attention method {item!r}; choose from none, "
                             f"{', '.join(SYNTAX_METHODS)} (comma-separated to combine)")
        if item not in names:
            names.append(item)
    return names


def parse_layers(spec, num_layers: int, option: str) -> List[int]:
    """Encoder layer indices from ``"all"`` or a comma list of 0-based indices (negative:
    from the top, ``-1`` = last layer).

    Raises:
        ValueError: naming ``option`` for an index outside the encoder.
    """
    spec = str(spec).strip()
    if spec in ("", "all"):
        return list(range(num_layers))
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            k = int(item)
        except ValueError:
            raise ValueError(f"{option} takes 'all' or comma-separated layer indices, got {spec!r}") from None
        if not -num_layers <= k < num_layers:
            raise ValueError(f"{option}: layer {k} does not exist (the encoder has {num_layers} layers, 0-based)")
        k %= num_layers
        if k not in out:
            out.append(k)
    return sorted(out)


class SyntaxMethod:
    """Base class of a syntax method (see the module docstring).

    Args:
        cfg: the fairseq model config (``TransformerConfig`` carrying the method's fields).
        num_layers (int): number of encoder layers.
    """

    name: str = ""
    #: the method's options (a ``FairseqDataclass``), or None
    config: Optional[type] = None
    #: streams the method reads
    streams: Sequence[str] = ("subword", "head")
    #: the option that lists the layers whose self-attention it replaces (for messages)
    layers_option: str = ""
    #: whether it replaces the self-attention of the layers of ``layers_option`` (two such methods need
    #: different layers; the ``all`` system of :mod:`syntax_nmt.systems` gives them distinct ones)
    replaces_attention: bool = False
    #: the method's own system in the table of systems (:mod:`syntax_nmt.systems`): its model options
    #: beyond ``--syntax-attention NAME`` ...
    system_args: Sequence[str] = ()
    #: ... and the criterion options it trains with (weights of its auxiliary losses, read by
    #: ``label_smoothed_cross_entropy_with_syntax``); empty: the translation loss alone
    system_losses: Sequence[str] = ()
    #: options added after checkpoints were trained with the method: option dest -> the value that
    #: reproduces how such a checkpoint was trained, given when its saved args lack the option (the
    #: model's parser gives these options their config default, so the args of a new training have them)
    legacy_args: Dict[str, Any] = {}

    def __init__(self, cfg, num_layers: int):
        self.cfg = cfg
        self.num_layers = num_layers

    def attention_layers(self) -> List[int]:
        """Encoder layers whose self-attention this method replaces."""
        return []

    def build_self_attention(self, layer: int, embed_dim: int, cfg, state) -> nn.Module:
        raise NotImplementedError(f"{self.name} replaces no self-attention")

    def build_layer_input(self, layer: int, embed_dim: int, cfg, state) -> Optional[nn.Module]:
        """A module ``m(x, ctx) -> x`` applied to the input of encoder layer ``layer``, or None."""
        return None

    def build_encoder_module(self, encoder, state) -> Optional[nn.Module]:
        """A module ``m(x, ctx) -> x`` applied to the final encoder states, or None."""
        return None


def build_methods(cfg, num_layers: int) -> List[SyntaxMethod]:
    """The methods selected by ``cfg.syntax_attention``, checked for conflicts.

    Raises:
        ValueError: unknown method, or two methods replacing the self-attention of the same layers.
    """
    methods = [SYNTAX_METHODS[n](cfg, num_layers) for n in parse_methods(getattr(cfg, "syntax_attention", "none"))]
    owner: Dict[int, str] = {}
    for m in methods:
        clash = sorted(k for k in m.attention_layers() if k in owner)
        if clash:
            other = owner[clash[0]]
            options = ", ".join(SYNTAX_METHODS[n].layers_option for n in (other, m.name))
            raise ValueError(
                f"--syntax-attention {other} and {m.name} both replace the self-attention of encoder layers "
                f"{clash}; give them different layers ({options})"
            )
        for k in m.attention_layers():
            owner[k] = m.name
    return methods
