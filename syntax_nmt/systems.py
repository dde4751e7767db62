"""The one table of systems that the demo, the bench and the recipes compare.

A *system* is what goes into the encoder: the stock Transformer, the source feature embeddings
(Sundararaman et al.), one or more syntax methods with their options and the weights of their auxiliary
losses. Model size, optimisation and decoding are not part of it: each consumer (``make demo``,
``make bench``, ``examples/*/``) sets them, identically for every system it compares.

The table is built from the registries of the syntax methods
(:func:`~syntax_nmt.models.modules.methods.base.registered_methods`) and of the target-side schemes
(:func:`~syntax_nmt.targets.base.registered_schemes`): every registered method brings its own system, named like the
method, with the options its class declares (``system_args``, ``system_losses``), and every target scheme the
systems its class lists (``systems``), so a method or a target scheme added to the plugin is compared from then on
without editing this file. Besides those: ``transformer`` (stock fairseq, the baseline), ``syntax-infused`` (the
feature embeddings), ``syntax+sgnet`` (features and SG-Net), ``all`` (the features and a fixed list of methods,
:data:`ALL_METHODS`, those that replace a layer's self-attention in fixed distinct layers, :data:`ALL_LAYERS`),
and systems outside the default comparison: ``syntax-concat`` (the features' concatenated variant,
8+4+8), ``sgnet-ckpt`` (SG-Net with recomputed activations: the same model, measured by the bench) and the
target schemes' systems (for a recipe whose target is parsed too, compared by :func:`target_systems`): ``factors``
(target POS factors, their previous values embedded) and ``lisa+factors`` (scheme ``factors``), ``interleaved`` (the
stock transformer on the target interleaved with POS tags, scheme ``tags``).

From a shell (the recipes)::

    python -m syntax_nmt.systems list             # the default comparison, in order
    python -m syntax_nmt.systems list --target    # the target-side comparison, in order
    python -m syntax_nmt.systems args sgnet       # its fairseq options, shell-quoted
    python -m syntax_nmt.systems task sgnet       # translation | syntax_translation
    eval "$(python -m syntax_nmt.systems shell sgnet)"   # SYSTEM, SYSTEM_ARGS (array), ... (examples/common)
"""

import argparse
import logging
import shlex
import sys
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

#: the source features of the feature systems (the paper's: POS, case, subword position)
FEATURES = "pos,case,subword"
#: the baseline every comparison is made against
BASELINE = "transformer"
#: old names (the WMT14 recipe's configurations) -> table names
ALIASES = {"baseline": "transformer", "syntax": "syntax-infused", "syntax_sgnet": "syntax+sgnet",
           "syntax_concat": "syntax-concat"}


@dataclass(frozen=True)
class System:
    """One row of the table.

    Args:
        name: its name in results and on command lines.
        features: whether the source feature embeddings (:data:`FEATURES`) are on.
        methods: the ``--syntax-attention`` methods.
        model_args: further model options (the methods' own, e.g. layer choices).
        criterion_args: options of ``label_smoothed_cross_entropy_with_syntax`` (auxiliary loss weights);
            empty: the consumer's translation criterion alone.
        min_encoder_layers: encoder layers it needs (methods replacing the self-attention of distinct layers).
        default: part of the default comparison.
        note: what it is, for listings.
        target: its target-side scheme (a name of :func:`~syntax_nmt.targets.base.registered_schemes`, e.g.
            ``factors``: the decoder predicts the target's tags beside each token; ``tags``: the target interleaved
            with its tags, data of its own for the stock model), or empty.
    """

    name: str
    features: bool = False
    methods: Tuple[str, ...] = ()
    model_args: Tuple[str, ...] = ()
    criterion_args: Tuple[str, ...] = ()
    min_encoder_layers: int = 1
    default: bool = True
    note: str = ""
    target: str = ""

    @property
    def scheme(self):
        """Its target scheme (an instance of the registered class), or None."""
        from syntax_nmt.targets import registered_schemes

        return registered_schemes().get_class(self.target)() if self.target else None

    @property
    def stock(self) -> bool:
        """No features, no method and no target scheme that needs the syntax model (target factors): fairseq's own
        ``translation`` task and ``transformer`` model (interleaved tags are data)."""
        return not self.features and not self.methods and not (self.target and self.scheme.needs_syntax_model)

    @property
    def task(self) -> str:
        return "translation" if self.stock else "syntax_translation"

    def args(self) -> List[str]:
        """The fairseq-train options of the system (after the consumer's shared ones: a system may set the
        criterion). Empty for the stock Transformer."""
        if self.stock:
            return []
        out = ["--source-features", FEATURES if self.features else ""]
        if self.methods:
            out += ["--syntax-attention", ",".join(self.methods)]
        out += list(self.model_args)
        scheme = self.scheme
        if scheme is not None:
            out += list(scheme.train_args)
        if self.criterion_args or (scheme is not None and scheme.syntax_criterion):
            out += ["--criterion", "label_smoothed_cross_entropy_with_syntax", *self.criterion_args]
        return out

    def uses(self, method: str) -> bool:
        return method in self.methods


def _method_system(name: str, cls) -> System:
    from syntax_nmt.models.modules.methods.base import method_title

    title = method_title(cls)
    return System(name, methods=(name,), model_args=tuple(cls.system_args),
                  criterion_args=tuple(cls.system_losses), note=title if len(title) <= 90 else title[:89] + "…")


#: ``all``: the features and these methods, fixed, so that its published rows reproduce (it was every registered
#: method, and a new method changed its layers and size). A method joins ``all`` only by an edit here, with its
#: layer if it replaces a layer's self-attention (:data:`ALL_LAYERS`).
ALL_METHODS = ("sgnet", "sla", "syntax_bert", "seprem", "lisa")
#: the layers of ``all``'s methods that replace a layer's self-attention (distinct layers; -1: the top one)
ALL_LAYERS = {"sla": 0, "syntax_bert": 1, "lisa": -1}


def _all_system(methods: Dict[str, type]) -> System:
    chosen = {n: methods[n] for n in ALL_METHODS if n in methods}
    args: List[str] = []
    for name, layer in ALL_LAYERS.items():
        if name in chosen:
            args += [chosen[name].layers_option, str(layer)]
    for cls in chosen.values():
        args += list(cls.system_args)
    losses = [a for cls in chosen.values() for a in cls.system_losses]
    layers = [layer for name, layer in ALL_LAYERS.items() if name in chosen]
    return System("all", features=True, methods=tuple(chosen), model_args=tuple(args), criterion_args=tuple(losses),
                  min_encoder_layers=max([1, len(layers)] + [layer + 1 for layer in layers]),
                  note="the features and " + ", ".join(chosen) + " (" + ", ".join(
                      f"{n} in layer {layer}" for n, layer in ALL_LAYERS.items() if n in chosen) + ")")


def systems() -> Dict[str, System]:
    """The table: name -> :class:`System`, in the order of comparison (the baseline first)."""
    from syntax_nmt.models.modules.methods import registered_methods
    from syntax_nmt.targets import registered_schemes

    methods = registered_methods()
    table = [System(BASELINE, note="stock fairseq transformer"),
             System("syntax-infused", features=True, note="POS, case and subword-position embeddings "
                    "(Sundararaman et al., 2019)")]
    table += [_method_system(n, c) for n, c in methods.items()]
    if "sgnet" in methods:
        sgnet = _method_system("sgnet", methods["sgnet"])
        table.insert(3, System("syntax+sgnet", features=True, methods=("sgnet",), model_args=sgnet.model_args,
                               criterion_args=sgnet.criterion_args, note="the features and SG-Net"))
    table.append(_all_system(dict(methods)))
    table.append(System("syntax-concat", features=True, model_args=(
        "--feature-merge", "concat", "--feature-embed-dims", "8,4,8"), default=False,
        note="the features concatenated (8+4+8) instead of summed"))
    for scheme, cls in registered_schemes().items():  # the target schemes' systems (with their source methods)
        for name, used, note in cls.systems:
            if all(m in methods for m in used):
                own = [_method_system(m, methods[m]) for m in used]
                table.append(System(name, methods=tuple(used), model_args=sum((s.model_args for s in own), ()),
                                    criterion_args=sum((s.criterion_args for s in own), ()), target=scheme,
                                    default=False, note=note))
    for name, cls in methods.items():  # a method's further systems (e.g. sgnet-ckpt), outside the comparison
        for extra, args, note in cls.extra_systems:
            own = _method_system(name, cls)
            table.append(System(extra, methods=(name,), model_args=(*args, *own.model_args),
                                criterion_args=own.criterion_args, default=False, note=note))
    return {s.name: s for s in table}


def extra_systems() -> List[str]:
    """The names of the methods' further systems (their classes' ``extra_systems``), measured by the bench."""
    from syntax_nmt.models.modules.methods import registered_methods

    return [extra for cls in registered_methods().values() for extra, _, _ in cls.extra_systems]


def default_systems() -> List[str]:
    """The names of the default comparison, in order."""
    return [n for n, s in systems().items() if s.default]


def target_systems() -> List[str]:
    """The target-side comparison (a recipe whose target is parsed too), from the registered target schemes' systems,
    in the registry's order: the baseline; the systems that add no source method (each scheme alone); the source
    methods the others add, each alone (its own system); then those others (a scheme with the methods)."""
    table = systems()
    own = [s for s in table.values() if s.target]
    combined = [s for s in own if s.methods]
    return list(dict.fromkeys([BASELINE, *(s.name for s in own if not s.methods),
                               *(m for s in combined for m in s.methods if m in table), *(s.name for s in combined)]))


def get(name: str) -> System:
    """A system by name (or by one of the WMT14 recipe's old names, :data:`ALIASES`).

    Raises:
        KeyError: with the names to choose from.
    """
    table = systems()
    name = ALIASES.get(name, name)
    if name not in table:
        raise KeyError(f"unknown system {name!r}; choose from {', '.join(table)}")
    return table[name]


def parse_systems(value: str, option: str = "--systems") -> List[str]:
    """``"transformer,sgnet"`` -> names (aliases resolved); ``"default"`` or empty -> the default comparison.

    Raises:
        ValueError: naming the unknown systems and the choices.
    """
    items = [v.strip() for v in str(value or "").replace(" ", ",").split(",") if v.strip()]
    if not items or items == ["default"]:
        return default_systems()
    table = systems()
    names = [ALIASES.get(v, v) for v in items]
    unknown = [v for v, n in zip(items, names) if n not in table]
    if unknown:
        raise ValueError(f"{option}: unknown systems {unknown}; choose from {', '.join(table)}")
    return list(dict.fromkeys(names))


def fit_encoder_layers(system: System, layers: int) -> List[str]:
    """``--encoder-layers`` for a consumer whose encoder has ``layers``, when the system needs more."""
    return ["--encoder-layers", str(system.min_encoder_layers)] if system.min_encoder_layers > layers else []


def _cli(argv: Sequence[str] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m syntax_nmt.systems", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="the default comparison, one name a line (--all: every system, with notes; "
                        "--target: the target-side comparison, from the target schemes)")
    which = ls.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true")
    which.add_argument("--target", action="store_true")
    for cmd, text in (("shell", "bash assignments of SYSTEM, SYSTEM_TASK, SYSTEM_ARGS (an array), SYSTEM_STOCK, "
                                "SYSTEM_FEATURES (1/0), SYSTEM_METHODS, SYSTEM_MIN_LAYERS, SYSTEM_TARGET (its target "
                                "scheme), SYSTEM_DATA (the suffix of its scheme's own data directory), "
                                "SYSTEM_TARGET_STREAMS (the target streams it reads, comma-separated), "
                                "SYSTEM_EVALUATE_ARGS (an array: syntax-nmt-evaluate options), SYSTEM_TAGS (1/0: its "
                                "tags are measured), for eval"),
                      ("args", "its fairseq-train options, shell-quoted on one line"),
                      ("task", "its fairseq task"), ("methods", "its --syntax-attention methods, comma-separated"),
                      ("min-encoder-layers", "the encoder layers it needs"), ("name", "its name (aliases resolved)")):
        sub.add_parser(cmd, help=text).add_argument("system")
    a = p.parse_args(argv)
    logging.getLogger("fairseq").setLevel(logging.WARNING)  # its import-time notices are no output of ours
    if a.cmd == "list" and a.target:
        print("\n".join(target_systems()))
        return 0
    if a.cmd == "list":
        table = systems()
        for name, s in table.items():
            if a.all:
                print(f"{name:<16} {'' if s.default else '(not default) '}{s.note}")
            elif s.default:
                print(name)
        return 0
    try:
        s = get(a.system)
    except KeyError as e:
        print(f"{p.prog}: error: {e.args[0]}", file=sys.stderr)
        return 2
    q = shlex.quote
    scheme = s.scheme
    out = {"shell": lambda: "\n".join([
        f"SYSTEM={q(s.name)}", f"SYSTEM_TASK={q(s.task)}", f"SYSTEM_ARGS=({' '.join(q(x) for x in s.args())})",
        f"SYSTEM_STOCK={int(s.stock)}", f"SYSTEM_FEATURES={int(s.features)}",
        f"SYSTEM_METHODS={q(','.join(s.methods))}", f"SYSTEM_MIN_LAYERS={s.min_encoder_layers}",
        f"SYSTEM_TARGET={q(s.target)}", f"SYSTEM_DATA={q(scheme.data_suffix if scheme else '')}",
        f"SYSTEM_TARGET_STREAMS={q(','.join(scheme.target_streams if scheme else ()))}",
        f"SYSTEM_EVALUATE_ARGS=({' '.join(q(x) for x in (scheme.evaluate_args if scheme else ()))})",
        f"SYSTEM_TAGS={int(bool(scheme and scheme.scored_streams))}"]),
        "args": lambda: " ".join(q(x) for x in s.args()), "task": lambda: s.task,
           "methods": lambda: ",".join(s.methods), "min-encoder-layers": lambda: str(s.min_encoder_layers),
           "name": lambda: s.name}[a.cmd]()
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
