"""The registry through which syntax methods plug into :class:`SyntaxTransformerEncoder`.

A method is a small plain object made from the model config; the encoder asks it, through
three hooks, for the modules it contributes:

* :meth:`SyntaxMethod.build_self_attention`: the self-attention of the encoder layers listed by
  :meth:`SyntaxMethod.attention_layers` (SLA, Syntax-BERT, LISA). The module keeps the layer's
  own Q/K/V/output projections (a subclass of fairseq's ``MultiheadAttention``, usually of
  :class:`~syntax_nmt.models.modules.methods.mixed_attention.MixedSelfAttention`).
* :meth:`SyntaxMethod.build_layer_input`: a module applied to the input of an encoder layer
  (SEPREM).
* :meth:`SyntaxMethod.build_encoder_module`: a module applied to the final encoder states (SG-Net).

Layer-input and encoder modules get the batch's
:class:`~syntax_nmt.models.modules.syntax_context.SyntaxContext` as an argument; self-attention
modules, which fairseq's layer calls without it, read it from the shared
:class:`~syntax_nmt.models.modules.syntax_context.BoundContext`, bound by the layer call that runs
them (so also when ``--checkpoint-activations`` recomputes the layer in the backward pass). Each method
declares its options as a dataclass (``config``), which the model adds to its arguments.

A method's auxiliary losses are :class:`AuxLoss` classes listed in its ``losses``, with their options
in ``loss_config``: the criterion ``label_smoothed_cross_entropy_with_syntax`` takes those options from
every registered method and adds each active loss, without knowing any method by name.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

from torch import Tensor, nn

from syntax_nmt.registry import Registry

#: the published methods, in this order (the order of the table of systems and of the layers the ``all``
#: system gives them); the package's other modules follow in alphabetical order
BUILTIN = ("sgnet", "sla", "syntax_bert", "seprem", "lisa")
#: name -> method class (:class:`~syntax_nmt.registry.Registry`): every module of this package registers its
#: method with :func:`register_syntax_method`, and the first read imports them all. A module with only tensor
#: math (``*_masks``) registers nothing and needs no fairseq, which is why the package imports its modules on
#: first read and not when it is itself imported.
SYNTAX_METHODS: Registry = Registry("syntax method", __name__.rsplit(".", 1)[0], BUILTIN)
#: the source parse as the batch carries it: the streams its word tree is made of (heads, word boundaries); what a
#: method that reads the tree reads (:attr:`SyntaxMethod.streams`, :attr:`SyntaxMethod.inference_streams`)
PARSE = ("subword", "head")


def registered_methods() -> Registry:
    """Every registered method, name -> class (:data:`SYNTAX_METHODS`, discovered)."""
    return SYNTAX_METHODS.discover()


def register_syntax_method(name: str):
    """Class decorator registering a :class:`SyntaxMethod` under ``--syntax-attention NAME``."""
    return SYNTAX_METHODS.register(name)


def parse_methods(value) -> List[str]:
    """``"sgnet,sla"`` -> ``["sgnet", "sla"]``; ``"none"``/empty -> ``[]``; unknown names raise."""
    names = []
    methods = registered_methods()
    for item in (value or "").split(","):
        item = item.strip()
        if not item or item == "none":
            continue
        if item not in methods:
            raise ValueError(f"unknown --syntax-attention method {item!r}; choose from none, "
                             f"{', '.join(methods)} (comma-separated to combine)")
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
    #: what it does, in a few words (``--syntax-attention``'s help, the table of systems); default: the class
    #: docstring's first sentence
    title: str = ""
    #: the method's options (a ``FairseqDataclass``), or None
    config: Optional[type] = None
    #: streams the method reads in training (its forward pass and its auxiliary losses): the data must have them
    streams: Sequence[str] = PARSE
    #: streams its forward pass reads at inference (translation): :data:`PARSE`, or ``()`` for a method whose parse
    #: supervises training only (LISA: its parse head predicts the parse it attends with). A method whose need
    #: depends on its options sets its own in ``__init__`` (LISA with ``--lisa-inject-parse``). The model's need is
    #: the union with its features' (:func:`~syntax_nmt.models.modules.inference_needs.inference_needs`): what
    #: fairseq-generate reads, and whether raw text is parsed
    inference_streams: Sequence[str] = PARSE
    #: the option that gave an instance its own :attr:`inference_streams` (named in messages), or ""
    inference_option: str = ""
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
    #: further systems of the method, outside the default comparison: ``(name, model options beyond
    #: --syntax-attention NAME, note)``, e.g. SG-Net with recomputed activations for the bench
    extra_systems: Sequence[Tuple[str, Sequence[str], str]] = ()
    #: the benches' targets for the method's systems, so that a new method is judged (``make bench``, ratio to the
    #: stock transformer in the same run): system -> ``{measure: lowest ratio}`` (``train_wps``, ``gen_sps``) ...
    bench_targets: Dict[str, Dict[str, float]] = {}
    #: ... and system -> ``{measure: highest ratio}`` (``model_mem_mib``)
    bench_max_targets: Dict[str, Dict[str, float]] = {}
    #: ``make bench-length``'s targets for the method's encoder: ``time`` (lowest time ratio at T = 256),
    #: ``memory`` (highest backward-memory ratio at T = 512), ``ops`` (highest ratio of operations dispatched by
    #: the accelerator paths at T = 256, ``--count-ops``)
    length_targets: Dict[str, float] = {}
    #: the method's identity setting: model options under which the model, as built and after
    #: :meth:`set_identity`, computes what the stock Transformer computes with the same weights (up to float
    #: rounding; ``tests/integration/test_method_contract.py`` checks it). ``None``: the method has none, and
    #: :attr:`no_identity` says why
    identity_args: Optional[Sequence[str]] = None
    no_identity: str = ""
    #: options added after checkpoints were trained with the method: option dest -> the value that
    #: reproduces how such a checkpoint was trained, given when its saved args lack the option (the
    #: model's parser gives these options their config default, so the args of a new training have them)
    legacy_args: Dict[str, Any] = {}
    #: the criterion options of its auxiliary losses (a dataclass, fields of
    #: ``label_smoothed_cross_entropy_with_syntax``), or None ...
    loss_config: Optional[type] = None
    #: ... and the losses (:class:`AuxLoss` subclasses), in the order they are logged
    losses: Sequence[Type["AuxLoss"]] = ()

    def __init__(self, cfg, num_layers: int):
        self.cfg = cfg
        self.num_layers = num_layers

    @classmethod
    def set_identity(cls, model: nn.Module) -> None:
        """Put this method's modules in ``model`` (built with :attr:`identity_args`) in the identity setting where
        options cannot, in place. Default: the options suffice."""

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

    def predicted_parents(self, ctx) -> Optional[Tensor]:
        """The parse the method predicts for the batch whose encoder pass left ``ctx``: ``(B, T)`` long, each
        token's parent position (the first subword of its head word; itself at roots and special tokens), or None
        (this default: it predicts none)."""
        return None


def method_title(cls: Type[SyntaxMethod]) -> str:
    """``cls.title``, else the first sentence of its docstring."""
    if cls.title:
        return cls.title
    doc = " ".join((cls.__doc__ or "").split())
    return doc.split(". ")[0].rstrip(".") or cls.name


def build_methods(cfg, num_layers: int) -> List[SyntaxMethod]:
    """The methods selected by ``cfg.syntax_attention``, checked for conflicts.

    Raises:
        ValueError: unknown method, or two methods replacing the self-attention of the same layers.
    """
    registry = registered_methods()
    methods = [registry[n](cfg, num_layers) for n in parse_methods(getattr(cfg, "syntax_attention", "none"))]
    owner: Dict[int, str] = {}
    for m in methods:
        clash = sorted(k for k in m.attention_layers() if k in owner)
        if clash:
            other = owner[clash[0]]
            options = ", ".join(registry[n].layers_option for n in (other, m.name))
            raise ValueError(
                f"--syntax-attention {other} and {m.name} both replace the self-attention of encoder layers "
                f"{clash}; give them different layers ({options})"
            )
        for k in m.attention_layers():
            owner[k] = m.name
    return methods


class AuxLoss:
    """An auxiliary syntax loss of a method, computed by the criterion ``label_smoothed_cross_entropy_with_syntax``.

    Built from the criterion's options (the fields of its method's ``loss_config``) and the encoder dimension;
    its parameters (e.g. a classifier) are parameters of the criterion, which fairseq optimizes and checkpoints
    under ``"criterion"`` with the attribute names of :meth:`parameter_modules`. :meth:`terms` returns the summed
    negative log-likelihood over the items it covers, their number and how many were predicted right; the
    criterion adds ``weight * nll_sum / count * sample_size`` to the loss and logs ``NAME_loss`` and ``NAME_acc``.

    Args:
        options: the criterion config (or any object with the ``loss_config`` fields as attributes).
        embed_dim (int): dimension of the encoder output.
    """

    #: logged as ``NAME_loss`` / ``NAME_acc``; unique over all methods
    name: str = ""
    #: criterion options under which the loss draws nothing at random in training (tests compare runs whose
    #: batches draw from differently seeded generators, e.g. two DDP ranks against one process)
    deterministic_args: Sequence[str] = ()

    def __init__(self, options, embed_dim: int):
        self.embed_dim = int(embed_dim)
        #: the weight from the options (subclasses set it; 0: off)
        self.loss_weight = 0.0

    @property
    def requested(self) -> bool:
        """Whether the options ask for this loss explicitly (then a model without source syntax is an error)."""
        return self.loss_weight > 0

    def weight(self, ctx) -> float:
        """The weight of the loss for a batch whose syntax context is ``ctx`` (0: not computed).

        Raises:
            ValueError: the loss is requested but the model does not provide what it needs.
        """
        return self.loss_weight

    def parameter_modules(self) -> Dict[str, nn.Module]:
        """Attribute name on the criterion -> module with the loss's parameters (names kept stable for checkpoints)."""
        return {}

    def terms(self, ctx, x: Tensor, training: bool) -> Tuple[Tensor, Tensor, Tensor]:
        """``(nll_sum, count, n_correct)`` for the batch: ``ctx`` its syntax context, ``x`` the encoder output
        ``(B, T, C)``, ``training`` the criterion's mode."""
        raise NotImplementedError

    def check_dim(self, x: Tensor) -> None:
        """Raises ValueError if the encoder output ``x`` is not as wide as the loss's parameters were built for."""
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"the encoder output has dimension {x.shape[-1]} but the criterion's {self.name} loss "
                             f"was built for {self.embed_dim}")


def check_weight(option: str, value) -> None:
    """Raises ValueError unless ``value`` (a loss weight) is None or a finite number >= 0."""
    import math

    if value is not None and (value < 0 or not math.isfinite(value)):
        raise ValueError(f"{option} must be a finite value >= 0, got {value}")


def aux_losses() -> List[Type[AuxLoss]]:
    """Every registered method's loss classes, in registration order."""
    return [loss for m in registered_methods().values() for loss in m.losses]


def loss_configs() -> List[type]:
    """Every registered method's ``loss_config``, in registration order."""
    return [m.loss_config for m in registered_methods().values() if m.loss_config is not None]
