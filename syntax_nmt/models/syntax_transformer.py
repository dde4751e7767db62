"""Model ``syntax_transformer``: a fairseq Transformer whose encoder uses source syntax.

* Source feature embeddings (Sundararaman et al., 2019, Syntax-Infused Transformer):
  ``--source-features pos,case,subword`` embedded and merged by ``--feature-merge``
  (sum | concat), then ``--feature-combine`` (concat to a narrower word embedding, the
  paper's 492 + 20 = 512, or add to the full word embedding, the paper's BERT+POS variant).
* SG-Net (Zhang et al., 2020): ``--syntax-attention sgnet`` adds a syntax-guided
  self-attention layer over the encoder output whose mask is built from the head
  stream on the model's device, fused by dual context aggregation.

With no features and no syntax attention the model is exactly fairseq's ``transformer``
(same parameters, same state-dict keys, same output).
"""

import logging
from dataclasses import dataclass, field
from typing import List, Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel, base_architecture

from syntax_nmt.data.streams import HEAD_STREAM, TAG_STREAMS, parse_stream_list
from syntax_nmt.models.modules.source_feature_embedding import (
    COMBINES,
    MERGES,
    SourceFeatureEmbedding,
    word_embedding_dim,
)
from syntax_nmt.models.modules.syntax_transformer_encoder import SYNTAX_ATTENTIONS, SyntaxTransformerEncoder

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
    feature_embed_dim: int = field(default=20, metadata={"help": "dimension of each feature embedding"})
    feature_combine: ChoiceEnum(COMBINES) = field(
        default="concat",
        metadata={
            "help": "concat: merged features are concatenated to a (dim - feature dims)-wide word embedding "
            "(Syntax-Infused Transformer); add: added to the full word embedding (its BERT+POS variant)"
        },
    )
    syntax_attention: ChoiceEnum(SYNTAX_ATTENTIONS) = field(
        default="none", metadata={"help": "syntax-guided attention on the encoder: none | sgnet (SG-Net)"}
    )
    sgnet_alpha: float = field(
        default=0.5, metadata={"help": "SG-Net dual context aggregation: alpha * H + (1 - alpha) * H'"}
    )
    sgnet_learn_alpha: bool = field(default=False, metadata={"help": "learn SG-Net's alpha (init --sgnet-alpha)"})
    sgnet_subword: ChoiceEnum(["shared", "first"]) = field(
        default="shared",
        metadata={"help": "subwords share their word's SDOI (shared), or the first subword heads the rest (first)"},
    )


def _features(args) -> List[str]:
    feats = parse_stream_list(getattr(args, "source_features", "") or "")
    bad = [f for f in feats if f not in TAG_STREAMS]
    if bad:
        raise ValueError(f"--source-features {bad} cannot be embedded; choose from {list(TAG_STREAMS)}")
    return feats


def required_streams(args) -> List[str]:
    """Streams the model reads: its features, plus heads and word boundaries for syntax attention."""
    needed = _features(args)
    if getattr(args, "syntax_attention", "none") != "none":
        for s in ("subword", HEAD_STREAM):
            if s not in needed:
                needed.append(s)
    return needed


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
        gen_parser_from_dataclass(parser, SyntaxModelConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        syntax_base_architecture(args)
        features = _features(args)
        if args.feature_merge not in MERGES or args.feature_combine not in COMBINES:
            raise ValueError(f"--feature-merge must be in {MERGES} and --feature-combine in {COMBINES}")
        if args.encoder_embed_dim % args.encoder_attention_heads:
            raise ValueError(
                f"--encoder-embed-dim {args.encoder_embed_dim} is not divisible by "
                f"--encoder-attention-heads {args.encoder_attention_heads}"
            )
        word_dim = word_embedding_dim(args.encoder_embed_dim, len(features), args.feature_embed_dim,
                                      args.feature_merge, args.feature_combine)
        if features and word_dim != args.encoder_embed_dim and args.share_all_embeddings:
            raise ValueError(
                f"--share-all-embeddings cannot share the {word_dim}-dim source word embeddings "
                f"(--feature-combine concat leaves {args.encoder_embed_dim} - {args.encoder_embed_dim - word_dim} "
                f"for words) with the {args.decoder_embed_dim}-dim decoder embeddings; use "
                "--share-decoder-input-output-embed, or --feature-combine add with --feature-embed-dim "
                f"{args.encoder_embed_dim}"
            )
        if args.syntax_attention != "none" and not 0.0 <= args.sgnet_alpha <= 1.0:
            raise ValueError(f"--sgnet-alpha must lie in [0, 1], got {args.sgnet_alpha}")

        needed = required_streams(args)
        provide = getattr(task, "provide_streams", None)
        if needed and provide is None:
            raise ValueError(
                f"the model needs source streams {needed}: use --task syntax_translation (got {type(task).__name__})"
            )
        recorded = getattr(args, "source_stream_dicts", None)
        if provide is not None:
            args.source_stream_dicts = provide(needed, recorded)
        args.source_streams = ",".join(needed)
        if "subword" in needed and args.syntax_attention != "none":
            d = task.stream_dicts["subword"]
            args.word_start_ids = ",".join(str(d.index(t)) for t in ("B", "O") if t in d.indices)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        features = _features(cfg)
        if features:
            word_dim = word_embedding_dim(cfg.encoder.embed_dim, len(features), cfg.feature_embed_dim,
                                          cfg.feature_merge, cfg.feature_combine)
            if word_dim != embed_tokens.embedding_dim:
                embed_tokens = cls.build_embedding(cfg, src_dict, word_dim, cfg.encoder.embed_path)
            sizes = {}
            for item in (cfg.source_stream_dicts or "").split(","):
                if item:
                    name, size, _ = item.split(":")
                    sizes[name] = int(size)
            embed_tokens = SourceFeatureEmbedding(
                embed_tokens, {f: sizes[f] for f in features}, cfg.feature_embed_dim,
                merge=cfg.feature_merge, combine=cfg.feature_combine,
            )
        return SyntaxTransformerEncoder(cfg, src_dict, embed_tokens)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, src_streams=None):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   src_streams=src_streams)
        return self.decoder(
            prev_output_tokens,
            encoder_out=encoder_out,
            features_only=features_only,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
            src_lengths=src_lengths,
            return_all_hiddens=return_all_hiddens,
        )


@register_model_architecture("syntax_transformer", "syntax_transformer")
def syntax_base_architecture(args):
    args.source_features = getattr(args, "source_features", "")
    args.feature_merge = getattr(args, "feature_merge", "sum")
    args.feature_embed_dim = getattr(args, "feature_embed_dim", 20)
    args.feature_combine = getattr(args, "feature_combine", "concat")
    args.syntax_attention = getattr(args, "syntax_attention", "none")
    args.sgnet_alpha = getattr(args, "sgnet_alpha", 0.5)
    args.sgnet_learn_alpha = getattr(args, "sgnet_learn_alpha", False)
    args.sgnet_subword = getattr(args, "sgnet_subword", "shared")
    base_architecture(args)


@register_model_architecture("syntax_transformer", "syntax_transformer_wmt_en_de")
def syntax_transformer_wmt_en_de(args):
    """Sundararaman et al. (2019): Transformer base, POS+case+subword features summed in d=20,
    concatenated to 492-dim source word embeddings; the decoder keeps 512-dim embeddings."""
    args.source_features = getattr(args, "source_features", "pos,case,subword")
    args.feature_merge = getattr(args, "feature_merge", "sum")
    args.feature_embed_dim = getattr(args, "feature_embed_dim", 20)
    args.feature_combine = getattr(args, "feature_combine", "concat")
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "syntax_transformer_sgnet_wmt_en_de")
def syntax_transformer_sgnet_wmt_en_de(args):
    """Zhang et al. (2020), sec. 5.2: Transformer base (6+6 layers, 512/2048, 8 heads) with the
    SG-Net layer on the encoder; add ``--source-features`` to combine with feature embeddings."""
    args.syntax_attention = getattr(args, "syntax_attention", "sgnet")
    syntax_base_architecture(args)


@register_model_architecture("syntax_transformer", "syntax_transformer_tiny")
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
    args.feature_embed_dim = getattr(args, "feature_embed_dim", 8)
    syntax_base_architecture(args)
