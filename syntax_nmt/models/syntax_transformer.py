"""Model ``syntax_transformer``: a fairseq Transformer whose encoder uses source syntax.

* Source feature embeddings (Sundararaman et al., 2019, Syntax-Infused Transformer):
  ``--source-features pos,case,subword`` embedded and merged by ``--feature-merge``
  (sum | concat), then ``--feature-combine`` (concat to a narrower word embedding, the
  paper's 492 + 20 = 512, or add to the full word embedding, the paper's BERT+POS variant).
* Syntax methods, ``--syntax-attention`` (comma-separated, combinable; ``python -m syntax_nmt.models``
  lists them): each is one module of :mod:`syntax_nmt.models.modules.methods` with its own options,
  its masks and weights built from the head stream on the model's device, once per batch.

With no features and no syntax method the model is exactly fairseq's ``transformer``
(same parameters, same state-dict keys, same output).
"""

import functools
import logging
from argparse import Namespace
from dataclasses import dataclass, field, fields, replace
from typing import Dict, List, Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel, base_architecture
from torch import Tensor

from syntax_nmt.data.signatures import (SOURCE_STREAMS_ARG, TARGET_FACTORS_ARG, DictionaryRecord, TargetFactor,
                                        read_dictionaries, read_target_factors)
from syntax_nmt.data.streams import TAG_STREAMS, parse_stream_list
from syntax_nmt.models.modules.source_feature_embedding import (
    COMBINES,
    MERGES,
    SourceFeatureEmbedding,
    resolve_feature_dims,
    word_embedding_dim,
)
from syntax_nmt.models.modules.compiled import COMPILE_MODES
from syntax_nmt.models.modules.inference_needs import inference_needs, required_streams
from syntax_nmt.models.modules.methods import SyntaxMethod, build_methods, registered_methods
from syntax_nmt.models.modules.methods.base import method_title
from syntax_nmt.models.modules.syntax_transformer_encoder import SyntaxTransformerEncoder
from syntax_nmt.models.modules.target_factors import FactoredTransformerDecoder
from syntax_nmt.registry import compose_config

logger = logging.getLogger(__name__)


@dataclass
class SyntaxModelConfig(FairseqDataclass):
    source_features: str = field(
        default="",
        metadata={"help": "comma-separated source features to embed: pos,case,subword,dep (empty: none)"},
    )
    feature_merge: ChoiceEnum(MERGES) = field(
        default="sum", metadata={"help": "how feature embeddings are merged across features"}
    )
    feature_embed_dim: int = field(
        default=20, metadata={"help": "dimension of every feature embedding (shortcut for --feature-embed-dims D,D,...)"}
    )
    feature_embed_dims: str = field(
        default="",
        metadata={
            "help": "comma-separated dimension of each --source-features entry, in its order, e.g. 8,4,8 "
            "(--feature-merge concat: 20 in all; sum needs them equal); replaces --feature-embed-dim"
        },
    )
    feature_combine: ChoiceEnum(COMBINES) = field(
        default="concat",
        metadata={
            "help": "concat: merged features are concatenated to a (dim - feature dims)-wide word embedding "
            "(Syntax-Infused Transformer); add: added to the full word embedding (its BERT+POS variant)"
        },
    )
    syntax_attention: str = field(
        default="none", metadata={"help": "syntax methods of the encoder (the list: --help)"},
    )
    syntax_compile: bool = field(
        default=False,
        metadata={"help": "compile the encoder layers with torch.compile, with dynamic shapes (batches of other "
                  "lengths reuse the compiled code); a compiled layer's syntax method takes its accelerator path on "
                  "every device. Off by default: its effect on a GPU, and under --fp16, is not measured yet"},
    )
    syntax_compile_mode: ChoiceEnum(list(COMPILE_MODES)) = field(
        default="default", metadata={"help": "torch.compile's mode with --syntax-compile (reduce-overhead: CUDA "
                                     "graphs, recorded once per batch shape)"}
    )
    target_factor_input: bool = field(
        default=False,
        metadata={"help": "with the task's --target-factors: embed the previous target token's factors and add them "
                  "to its embedding at the decoder input (Sockeye's target factor input); decoding feeds each "
                  "hypothesis's own predictions"},
    )


def syntax_attention_help() -> str:
    """The help of ``--syntax-attention``, listing every registered method."""
    listed = "; ".join(f"{name}: {method_title(cls)}" for name, cls in registered_methods().items())
    return ("syntax methods of the encoder, comma-separated to combine (none: the stock encoder). A method may "
            "replace the self-attention of some layers, change layer inputs, add a layer on the encoder output or "
            f"train an auxiliary loss; each has its own options below. {listed}")


def model_config() -> type:
    """The model's own options as one dataclass, composed like fairseq's ``TransformerConfig`` from its parts: the
    features' and ``--syntax-attention`` (:class:`SyntaxModelConfig`) and every registered method's ``config``, in
    the registry's order (fairseq's Transformer options come from ``TransformerModel``, the parent).

    Raises:
        TypeError: two methods (or a method and the model) declare the same option.
    """
    return compose_config("SyntaxTransformerConfig", SyntaxModelConfig,
                          [(f"method {cls.name}", cls.config) for cls in registered_methods().values() if cls.config])


def _features(args) -> List[str]:
    feats = parse_stream_list(getattr(args, "source_features", "") or "")
    bad = [f for f in feats if f not in TAG_STREAMS]
    if bad:
        raise ValueError(f"--source-features {bad} cannot be embedded; choose from {list(TAG_STREAMS)}")
    return feats


def _default_feature_dim(args, dim: int) -> None:
    """``--feature-embed-dim`` defaults to ``dim`` unless ``--feature-embed-dims`` gives the widths
    (then it stays ``None``, so that giving both inconsistently is caught)."""
    if getattr(args, "feature_embed_dim", None) is None:
        args.feature_embed_dim = None if getattr(args, "feature_embed_dims", "") else dim


class ModelOptionError(ValueError):
    """Model options the model cannot be built with. In a fairseq console script it ends the run with one line
    ``fairseq-train: error: ...`` and exit status 2 (:func:`syntax_nmt.cli_errors.fairseq_errors_one_line`, set up
    by the task module); in Python it is a ``ValueError``."""


@dataclass
class SyntaxOptions:
    """The model's own options parsed and checked (:func:`parse_options`, the one place that parses
    ``--syntax-attention`` and builds its methods): what the model, its encoder and its decoder are built from.

    Args:
        features: the ``--source-features`` to embed.
        feature_dims: the width of each (``--feature-embed-dim`` / ``--feature-embed-dims``).
        methods: the built syntax methods of ``--syntax-attention``, in its order.
        target_factors: the target factors the decoder predicts (the task's record in the arguments, read by
            :meth:`SyntaxTransformerModel.build_model`; empty: none, or not read yet).
        source_dictionaries: the dictionaries of the source streams the model reads (the task's records, kept in the
            arguments, :data:`~syntax_nmt.data.signatures.SOURCE_STREAMS_ARG`; the feature embeddings' sizes; empty:
            none, or not read yet).
    """

    features: List[str]
    feature_dims: List[int]
    methods: List[SyntaxMethod]
    target_factors: List[TargetFactor] = field(default_factory=list)
    source_dictionaries: List[DictionaryRecord] = field(default_factory=list)

    @property
    def required_streams(self) -> List[str]:
        """The streams the model reads in training (:func:`~.inference_needs.required_streams`)."""
        return required_streams(self.features, self.methods)

    def inference_needs(self, factors: bool = False) -> Dict[str, List[str]]:
        """What the model reads at inference, by reader (:func:`~.inference_needs.inference_needs`); ``factors``:
        whether its decoder predicts target factors."""
        return inference_needs(self.features, self.methods, factors)

    def __repr__(self) -> str:
        # fairseq-train logs its configuration, with the arguments that carry this (OPTIONS_ARG): names, no addresses
        return (f"SyntaxOptions(features={self.features}, feature_dims={self.feature_dims}, "
                f"methods={[m.name for m in self.methods]}, target_factors={[f.name for f in self.target_factors]})")


def parse_options(args) -> SyntaxOptions:
    """Every check of the model options that needs no data (``args`` has its architecture applied): features and
    their widths, the syntax methods (unknown names, layers outside the encoder, two methods replacing the same
    layer's self-attention, each method's own options), and the methods built.

    Raises:
        ModelOptionError: naming the option(s).
    """
    try:
        features = _features(args)
        if args.feature_merge not in MERGES or args.feature_combine not in COMBINES:
            raise ValueError(f"--feature-merge must be in {MERGES} and --feature-combine in {COMBINES}")
        if args.encoder_embed_dim % args.encoder_attention_heads:
            raise ValueError(f"--encoder-embed-dim {args.encoder_embed_dim} is not divisible by "
                             f"--encoder-attention-heads {args.encoder_attention_heads}")
        dims = resolve_feature_dims(features, getattr(args, "feature_embed_dim", None),
                                    getattr(args, "feature_embed_dims", ""), args.feature_merge)
        word_dim = word_embedding_dim(args.encoder_embed_dim, len(features), dims, args.feature_merge,
                                      args.feature_combine)
        if features and word_dim != args.encoder_embed_dim and getattr(args, "share_all_embeddings", False):
            raise ValueError(
                f"--share-all-embeddings cannot share the {word_dim}-dim source word embeddings "
                f"(--feature-combine concat leaves {args.encoder_embed_dim} - {args.encoder_embed_dim - word_dim} "
                f"for words) with the {args.decoder_embed_dim}-dim decoder embeddings; use "
                "--share-decoder-input-output-embed, or --feature-combine add with --feature-embed-dim "
                f"{args.encoder_embed_dim}"
            )
        methods = build_methods(TransformerConfig.from_namespace(args), args.encoder_layers)
    except ModelOptionError:
        raise
    except ValueError as e:
        raise ModelOptionError(str(e)) from None
    return SyntaxOptions(features, dims, methods)


#: the attribute of the model's arguments that carries their :class:`SyntaxOptions` from where they are parsed, the
#: architecture hook (:func:`_architecture`), to the model built from these arguments and on to its encoder and
#: decoder builders (fairseq hands those the arguments only). fairseq applies an architecture twice: while parsing
#: the command line (the check, so that bad options are a usage error before any data is loaded) and again in its
#: ``build_model``, on the arguments it copied from the parsed ones, attribute for attribute: the parse rides along,
#: so a run parses ``--syntax-attention`` and builds each method once (tests/e2e/test_options_parsed_once.py counts
#: them in a fairseq-train run). Never saved: :meth:`SyntaxTransformerModel.build_model` takes it off the arguments
#: before they reach a checkpoint (the same test reads the saved checkpoint)
OPTIONS_ARG = "_syntax_options"


def take_options(args) -> SyntaxOptions:
    """The options the architecture hook parsed into ``args``, taken off them (a later model built from the same
    arguments parses its own, so that no two models share a method object), else :func:`parse_options` of them."""
    options = vars(args).pop(OPTIONS_ARG, None) if isinstance(args, Namespace) else None
    return options if options is not None else parse_options(args)


def _architecture(name: str):
    """``register_model_architecture("syntax_transformer", name)``, the registered function parsing and checking the
    options once the architecture is applied (:func:`parse_options`), unless the arguments carry a parse already: on
    fairseq's command line (fairseq-train applies it while parsing) options the model cannot be built with are a
    usage error like argparse's own, one line ``PROG: error: ...`` with exit status 2, before any data is loaded
    (:class:`ModelOptionError`). The parse rides on the arguments (:data:`OPTIONS_ARG`) to the model built from them.
    The decorated function itself (called by :meth:`build_model`, and by the other architectures) stays as it is."""

    def deco(fn):
        @functools.wraps(fn)
        def arch(args):
            fn(args)
            if getattr(args, OPTIONS_ARG, None) is None:
                options = parse_options(args)
                if isinstance(args, Namespace):  # (an omegaconf config holds no such object: parsed again)
                    setattr(args, OPTIONS_ARG, options)

        register_model_architecture("syntax_transformer", name)(arch)
        return fn

    return deco


@register_model("syntax_transformer")
class SyntaxTransformerModel(TransformerModel):
    """Transformer (Vaswani et al., 2017) with syntax in the encoder.

    See the module docstring; the task ``syntax_translation`` supplies the streams.
    """

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        """A :class:`~syntax_nmt.hub.SyntaxHubInterface` that translates raw text (see :mod:`syntax_nmt.hub`)."""
        from syntax_nmt import hub

        return hub.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                   archive_map=cls.hub_models(), **kwargs)

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, model_config()(), delete_default=True)
        for action in parser._actions:
            if action.dest == "syntax_attention":  # listed when asked, so that a method registered later joins
                action.help = syntax_attention_help()
        # an option with a legacy value: a new training records the default in its args, so that only
        # the saved args of a checkpoint trained before the option lack it (syntax_base_architecture)
        for method in registered_methods().values():
            if method.legacy_args:
                defaults = {f.name: f.default for f in fields(method.config) if f.name in method.legacy_args}
                parser.set_defaults(**defaults)

    @classmethod
    def build_model(cls, args, task):
        """fairseq's, from the options parsed once (:func:`take_options`), handed to :meth:`build_encoder` and
        :meth:`build_decoder` on the arguments (:data:`OPTIONS_ARG`, taken off again before this returns); the task
        (``syntax_translation``) checks that it delivers the streams the model reads and returns their dictionaries'
        records (:class:`~syntax_nmt.data.signatures.DictionaryRecord`), recorded in the arguments (so in checkpoints)
        as plain dicts; a checkpoint's records (or its signature string, from before they were typed) are read here,
        once."""
        syntax_base_architecture(args)
        options = take_options(args)
        needed = options.required_streams
        dictionaries_of = getattr(task, "model_stream_dictionaries", None)
        if needed and dictionaries_of is None:
            raise ValueError(
                f"the model needs source streams {needed}: use --task syntax_translation (got {type(task).__name__})"
            )
        options = replace(options, target_factors=read_target_factors(getattr(args, TARGET_FACTORS_ARG, None)))
        if dictionaries_of is not None:
            recorded = getattr(args, SOURCE_STREAMS_ARG, None)
            dictionaries = dictionaries_of(needed, None if recorded is None else
                                           read_dictionaries(recorded, SOURCE_STREAMS_ARG),
                                           options.inference_needs(bool(options.target_factors)))
            options = replace(options, source_dictionaries=dictionaries)
            setattr(args, SOURCE_STREAMS_ARG, [d.to_record() for d in dictionaries])
        args.source_streams = ",".join(needed)
        if "subword" in needed and options.methods and "subword" in getattr(task, "stream_dicts", {}):
            d = task.stream_dicts["subword"]  # (a checkpoint translating without the stream keeps its recorded ids)
            args.word_start_ids = ",".join(str(d.index(t)) for t in ("B", "O") if t in d.indices)
        setattr(args, OPTIONS_ARG, options)
        try:
            model = super().build_model(args, task)
        finally:
            vars(args).pop(OPTIONS_ARG, None)
        vars(model.cfg).pop(OPTIONS_ARG, None)  # fairseq's config of the model, made from the arguments, has a copy
        return model

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        """A :class:`SyntaxTransformerEncoder` with the options :meth:`build_model` parsed (parsed here when called
        on its own)."""
        cfg = TransformerConfig.from_namespace(args)
        options = getattr(cfg, OPTIONS_ARG, None) or parse_options(cfg)
        if options.features:
            word_dim = word_embedding_dim(cfg.encoder.embed_dim, len(options.features), options.feature_dims,
                                          cfg.feature_merge, cfg.feature_combine)
            if word_dim != embed_tokens.embedding_dim:
                embed_tokens = cls.build_embedding(cfg, src_dict, word_dim, cfg.encoder.embed_path)
            dictionaries = options.source_dictionaries or read_dictionaries(getattr(cfg, SOURCE_STREAMS_ARG, None),
                                                                            SOURCE_STREAMS_ARG)
            sizes = {d.name: d.size for d in dictionaries}
            embed_tokens = SourceFeatureEmbedding(
                embed_tokens, {f: sizes[f] for f in options.features}, options.feature_dims,
                merge=cfg.feature_merge, combine=cfg.feature_combine,
            )
        return SyntaxTransformerEncoder(cfg, src_dict, embed_tokens, methods=options.methods)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        """fairseq's decoder, or with target factors (the task's ``--target-factors``, recorded in the model's
        arguments as typed records, :class:`~syntax_nmt.data.signatures.TargetFactor`, read once by
        :meth:`build_model`, read here when called on its own) a :class:`FactoredTransformerDecoder`."""
        options = getattr(args, OPTIONS_ARG, None)
        factors = (options.target_factors if options is not None
                   else read_target_factors(getattr(args, TARGET_FACTORS_ARG, None)))
        if not factors:
            return super().build_decoder(args, tgt_dict, embed_tokens)
        return FactoredTransformerDecoder(args, tgt_dict, embed_tokens, {f.name: f.size for f in factors},
                                          factor_input=bool(getattr(args, "target_factor_input", False)),
                                          no_encoder_attn=getattr(args, "no_cross_attention", False))

    @property
    def syntax_methods(self) -> List[SyntaxMethod]:
        """The encoder's syntax methods (built objects, in ``--syntax-attention``'s order)."""
        return list(getattr(self.encoder, "methods", []))

    @property
    def predicts_source_parse(self) -> bool:
        """Whether a syntax method of the encoder predicts the source parse (LISA's parse head)."""
        return any(type(m).predicted_parents is not SyntaxMethod.predicted_parents for m in self.syntax_methods)

    def predict_source_parents(self, net_input) -> Tensor:
        """``(B, T)`` long: each source token's parent position as the model predicts it (the first method's that
        predicts one, :meth:`~syntax_nmt.models.modules.methods.base.SyntaxMethod.predicted_parents`), from one
        encoder pass over ``net_input`` (``src_tokens``, ``src_lengths`` and any ``src_streams``).

        Raises:
            ValueError: no method of the model predicts a parse.
        """
        out = self.encoder.forward_torchscript(net_input)
        ctx = out.get("syntax")
        for m in self.syntax_methods:
            parents = m.predicted_parents(ctx) if ctx is not None else None
            if parents is not None:
                return parents
        raise ValueError("the model predicts no parse of the source: only --syntax-attention lisa has a parse head")

    @property
    def target_factors(self) -> List[str]:
        """The target factors the decoder predicts (empty: none)."""
        return list(getattr(self.decoder, "factor_names", []))

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, src_streams=None, prev_output_factors=None):
        """fairseq's, plus ``src_streams`` and, for target factors, ``prev_output_factors``; with syntax methods the
        decoder's extra dict also holds ``"encoder_out"`` (the encoder output with its ``"syntax"`` context) for the
        syntax losses of the criterion ``label_smoothed_cross_entropy_with_syntax``, with target factors
        ``"factor_logits"``."""
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   src_streams=src_streams)
        factors = {} if prev_output_factors is None or not self.target_factors else {
            "prev_output_factors": prev_output_factors}
        decoder_out = self.decoder(
            prev_output_tokens,
            encoder_out=encoder_out,
            features_only=features_only,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
            src_lengths=src_lengths,
            return_all_hiddens=return_all_hiddens,
            **factors,
        )
        if "syntax" in encoder_out:
            decoder_out[1]["encoder_out"] = encoder_out
        return decoder_out


@_architecture("syntax_transformer")
def syntax_base_architecture(args):
    args.source_features = getattr(args, "source_features", "")
    args.feature_merge = getattr(args, "feature_merge", "sum")
    _default_feature_dim(args, 20)
    args.feature_embed_dims = getattr(args, "feature_embed_dims", "")
    args.feature_combine = getattr(args, "feature_combine", "concat")
    args.syntax_attention = getattr(args, "syntax_attention", "none")
    args.target_factor_input = getattr(args, "target_factor_input", False)
    args.syntax_compile = getattr(args, "syntax_compile", False)
    args.syntax_compile_mode = getattr(args, "syntax_compile_mode", "default")
    for method in registered_methods().values():
        for name, value in method.legacy_args.items():
            if not hasattr(args, name):  # the saved args of a checkpoint trained before the option
                setattr(args, name, value)
    own = {f.name for f in fields(SyntaxModelConfig)}  # set above (--feature-embed-dim may stay None)
    for f in fields(model_config()):
        if f.name not in own and getattr(args, f.name, None) is None:
            setattr(args, f.name, f.default)
    base_architecture(args)


@_architecture("syntax_transformer_wmt_en_de")
def syntax_transformer_wmt_en_de(args):
    """Sundararaman et al. (2019): Transformer base, POS+case+subword features summed in d=20,
    concatenated to 492-dim source word embeddings; the decoder keeps 512-dim embeddings."""
    args.source_features = getattr(args, "source_features", "pos,case,subword")
    args.feature_merge = getattr(args, "feature_merge", "sum")
    _default_feature_dim(args, 20)
    args.feature_combine = getattr(args, "feature_combine", "concat")
    syntax_base_architecture(args)


@_architecture("syntax_transformer_sgnet_wmt_en_de")
def syntax_transformer_sgnet_wmt_en_de(args):
    """Zhang et al. (2020), sec. 5.2: Transformer base (6+6 layers, 512/2048, 8 heads) with the
    SG-Net layer on the encoder; add ``--source-features`` to combine with feature embeddings."""
    args.syntax_attention = getattr(args, "syntax_attention", "sgnet")
    syntax_base_architecture(args)


@_architecture("syntax_transformer_tiny")
def syntax_transformer_tiny(args):
    """A CPU-sized model for tests and the demo: fairseq's ``transformer_tiny`` dimensions
    (64-dim, FFN 64, 2+2 layers, 2 heads) with the paper's features in d=8."""
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 64)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 64)
    args.encoder_layers = getattr(args, "encoder_layers", 2)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 2)
    args.decoder_layers = getattr(args, "decoder_layers", 2)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 2)
    args.source_features = getattr(args, "source_features", "pos,case,subword")
    _default_feature_dim(args, 8)
    syntax_base_architecture(args)
