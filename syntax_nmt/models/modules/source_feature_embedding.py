"""Source word embeddings combined with embedded linguistic features.

Implements the input layer of the Syntax-Infused Transformer (Sundararaman et al.,
2019, "Syntax-Infused Transformer and BERT models for Machine Translation and
Natural Language Understanding"), itself after Sennrich & Haddow (2016),
"Linguistic Input Features Improve Neural Machine Translation": each source
feature (POS, case, subword position, dependency label) has its own embedding;
the feature embeddings are merged by ``sum`` (the paper: d=20 each, summed) or
``concat`` (the paper's other variant: widths adding up to 20, e.g. 8+4+8; each
feature may have its own width, ``--feature-embed-dims``), then either concatenated to a narrower word embedding so the result
has the model dimension (the paper: 492 + 20 = 512), or ``add``-ed to a
full-width word embedding (the paper's BERT+POS variant).
"""

from typing import Dict, List, Optional, Sequence, Union

import torch
from torch import Tensor, nn

MERGES = ("sum", "concat")
COMBINES = ("concat", "add")

#: A feature width: one ``int`` for every feature, or one per feature.
FeatureDims = Union[int, Sequence[int]]


def parse_feature_dims(value: Optional[str]) -> List[int]:
    """``"8,4,8"`` (``--feature-embed-dims``) -> ``[8, 4, 8]``; empty or ``None`` -> ``[]``.

    Raises:
        ValueError: on a field that is not an integer.
    """
    items = [x.strip() for x in (value or "").split(",")]
    if items == [""]:
        return []
    try:
        return [int(x) for x in items]
    except ValueError:
        raise ValueError(f"--feature-embed-dims must be comma-separated integers, got {value!r}") from None


def resolve_feature_dims(features: Sequence[str], feature_dim: Optional[int], feature_dims: Optional[str],
                         merge: str) -> List[int]:
    """Width of each feature embedding, from ``--feature-embed-dim D`` or ``--feature-embed-dims d1,...,dk``.

    Args:
        features: the ``--source-features`` names, in order.
        feature_dim: the uniform width (``None``: not given).
        feature_dims: one width per feature, comma-separated (empty: not given).
        merge: ``sum`` (all widths must be equal) or ``concat``.

    Returns:
        One positive width per feature (``[]`` without features).

    Raises:
        ValueError: when the count does not match the features, a width is not positive, ``sum``
            gets unequal widths, or ``feature_dim`` contradicts ``feature_dims``; the message names
            the options and the values.
    """
    if merge not in MERGES:
        raise ValueError(f"feature merge must be one of {MERGES}, got {merge!r}")
    dims = parse_feature_dims(feature_dims)
    if not dims:
        if not features:
            return []
        if feature_dim is None or feature_dim <= 0:
            raise ValueError(f"--feature-embed-dim must be a positive integer, got {feature_dim}")
        return [int(feature_dim)] * len(features)
    if len(dims) != len(features):
        raise ValueError(
            f"--feature-embed-dims {feature_dims} gives {len(dims)} dimensions for {len(features)} "
            f"--source-features ({','.join(features) or 'none'}): give one per feature, in the same order"
        )
    if min(dims) <= 0:
        raise ValueError(f"--feature-embed-dims must be positive, got {feature_dims}")
    if feature_dim is not None and any(d != feature_dim for d in dims):
        raise ValueError(
            f"--feature-embed-dim {feature_dim} contradicts --feature-embed-dims {feature_dims}: give only one "
            "(--feature-embed-dim D is the shortcut for D,D,...)"
        )
    if merge == "sum" and len(set(dims)) > 1:
        raise ValueError(
            f"--feature-merge sum adds the feature embeddings, so they need one width; got --feature-embed-dims "
            f"{feature_dims} (use --feature-merge concat for different widths)"
        )
    return dims


def _dims(num_features: int, feature_dim: FeatureDims) -> List[int]:
    if isinstance(feature_dim, int):
        return [feature_dim] * num_features
    dims = [int(d) for d in feature_dim]
    if len(dims) != num_features:
        raise ValueError(f"{len(dims)} feature widths {dims} for {num_features} features")
    return dims


def feature_output_dim(num_features: int, feature_dim: FeatureDims, merge: str) -> int:
    """Width of the merged feature vector.

    Args:
        num_features: number of features.
        feature_dim: the width of every feature (``int``) or one width per feature.
        merge: ``sum`` (the common width) or ``concat`` (the sum of the widths).
    """
    if merge not in MERGES:
        raise ValueError(f"feature merge must be one of {MERGES}, got {merge!r}")
    if isinstance(feature_dim, int):
        return feature_dim if merge == "sum" else feature_dim * num_features
    dims = _dims(num_features, feature_dim)
    if merge == "concat":
        return sum(dims)
    if len(set(dims)) > 1:
        raise ValueError(f"feature merge sum needs equal feature widths, got {dims}")
    return dims[0] if dims else 0


def word_embedding_dim(model_dim: int, num_features: int, feature_dim: FeatureDims, merge: str,
                       combine: str) -> int:
    """Width the word embedding must have so that words + features give ``model_dim``.

    Args:
        feature_dim: the width of every feature (``int``) or one width per feature.

    Raises:
        ValueError: when the dimensions cannot add up, with the numbers in the message.
    """
    if combine not in COMBINES:
        raise ValueError(f"feature combine must be one of {COMBINES}, got {combine!r}")
    if num_features == 0:
        return model_dim
    feat = feature_output_dim(num_features, feature_dim, merge)
    widths = (f"{num_features} features x {feature_dim}" if isinstance(feature_dim, int)
              else f"features of widths {list(feature_dim)}")
    if combine == "add":
        if feat != model_dim:
            raise ValueError(
                f"--feature-combine add needs the merged features to be {model_dim}-dim (the model dimension), "
                f"got {feat} ({widths}, merge {merge}); "
                f"set --feature-embed-dim {model_dim if merge == 'sum' else 'model_dim / #features'}"
            )
        return model_dim
    if feat >= model_dim:
        raise ValueError(
            f"--feature-combine concat: {feat}-dim features ({widths}, merge {merge}) leave no room for words "
            f"in the {model_dim}-dim model"
        )
    return model_dim - feat


def merge_features(embedded: Sequence[Tensor], merge: str) -> Tensor:
    """Merge per-feature embeddings, each ``(batch, len, d)``, by sum or concatenation."""
    if merge == "sum":
        out = embedded[0]
        for e in embedded[1:]:
            out = out + e
        return out
    if merge == "concat":
        return torch.cat(list(embedded), dim=-1)
    raise ValueError(f"feature merge must be one of {MERGES}, got {merge!r}")


def combine_with_words(words: Tensor, features: Tensor, combine: str) -> Tensor:
    """Combine ``(batch, len, dw)`` word and ``(batch, len, df)`` feature embeddings."""
    if combine == "concat":
        return torch.cat([words, features], dim=-1)
    if combine == "add":
        return words + features
    raise ValueError(f"feature combine must be one of {COMBINES}, got {combine!r}")


class SourceFeatureEmbedding(nn.Module):
    """Word embedding plus embedded source features, ``embedding_dim`` wide.

    With ``combine="concat"`` the output is ``[word ; merged features]``; with ``merge="concat"``
    the merged features are the feature embeddings side by side in ``feature_vocab`` order, so
    feature ``k`` occupies columns ``word_dim + sum(d_0..d_{k-1})`` to ``... + d_k`` (see
    :meth:`feature_slices`).

    Args:
        word_embed (nn.Embedding): the word embedding (``model_dim - feature dims`` wide for concat).
        feature_vocab (Dict[str, int]): feature name -> vocabulary size, in a fixed order.
        feature_dim (int or Sequence[int]): width of every feature embedding, or one width per
            feature in ``feature_vocab`` order (``merge="sum"`` needs them equal).
        merge (str): ``sum`` or ``concat`` across features.
        combine (str): ``concat`` or ``add`` with the word embedding.
        padding_idx (int): padding id of the feature dictionaries (fairseq: 1).
    """

    #: its forward pass reads its features' streams at inference too (the parser's tags, cases, subword positions):
    #: a model with features needs the annotation to translate
    #: (:func:`~syntax_nmt.models.modules.inference_needs.inference_needs`)
    reads_features_at_inference: bool = True

    def __init__(self, word_embed: nn.Embedding, feature_vocab: Dict[str, int], feature_dim: FeatureDims,
                 merge: str = "sum", combine: str = "concat", padding_idx: int = 1):
        super().__init__()
        if not feature_vocab:
            raise ValueError("SourceFeatureEmbedding needs at least one feature")
        self.word = word_embed
        self.names: List[str] = list(feature_vocab)
        self.merge, self.combine = merge, combine
        dims = _dims(len(self.names), feature_dim)
        feat = feature_output_dim(len(self.names), dims, merge)
        self.feature_dims: Dict[str, int] = dict(zip(self.names, dims))
        self.features = nn.ModuleDict()
        for (name, size), dim in zip(feature_vocab.items(), dims):
            emb = nn.Embedding(size, dim, padding_idx=padding_idx)
            nn.init.normal_(emb.weight, mean=0, std=dim ** -0.5)
            nn.init.constant_(emb.weight[padding_idx], 0)
            self.features[name] = emb
        self.embedding_dim = word_embed.embedding_dim + feat if combine == "concat" else word_embed.embedding_dim
        if combine == "add" and feat != word_embed.embedding_dim:
            raise ValueError(f"add-combined features must be {word_embed.embedding_dim}-dim, got {feat}")
        self.padding_idx = word_embed.padding_idx

    def feature_slices(self) -> Dict[str, slice]:
        """Columns of the output that hold each feature's embedding (``merge=concat``,
        ``combine=concat`` only; with ``sum`` or ``add`` features share columns)."""
        if self.merge != "concat" or self.combine != "concat":
            raise ValueError("features have their own columns only with merge concat and combine concat")
        out, start = {}, self.word.embedding_dim
        for name in self.names:
            out[name] = slice(start, start + self.feature_dims[name])
            start += self.feature_dims[name]
        return out

    @property
    def weight(self) -> Tensor:
        """The word embedding matrix (what fairseq code expects of ``embed_tokens.weight``)."""
        return self.word.weight

    def forward(self, tokens: Tensor, streams: Dict[str, Tensor]) -> Tensor:
        """Embed ``(batch, len)`` token ids and feature ids into ``(batch, len, embedding_dim)``."""
        missing = [n for n in self.names if n not in streams]
        if missing:
            raise ValueError(f"source feature streams {missing} are missing from the batch (have {sorted(streams)})")
        feats = merge_features([self.features[n](streams[n]) for n in self.names], self.merge)
        return combine_with_words(self.word(tokens), feats, self.combine)
