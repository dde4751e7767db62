"""Source word embeddings combined with embedded linguistic features.

Implements the input layer of the Syntax-Infused Transformer (Sundararaman et al.,
2019, "Syntax-Infused Transformer and BERT models for Machine Translation and
Natural Language Understanding"), itself after Sennrich & Haddow (2016),
"Linguistic Input Features Improve Neural Machine Translation": each source
feature (POS, case, subword position, dependency label) has its own embedding;
the feature embeddings are merged by ``sum`` (the paper: d=20 each, summed) or
``concat``, then either concatenated to a narrower word embedding so the result
has the model dimension (the paper: 492 + 20 = 512), or ``add``-ed to a
full-width word embedding (the paper's BERT+POS variant).
"""

from typing import Dict, List, Sequence

import torch
from torch import Tensor, nn

MERGES = ("sum", "concat")
COMBINES = ("concat", "add")


def feature_output_dim(num_features: int, feature_dim: int, merge: str) -> int:
    """Width of the merged feature vector."""
    if merge not in MERGES:
        raise ValueError(f"feature merge must be one of {MERGES}, got {merge!r}")
    return feature_dim if merge == "sum" else feature_dim * num_features


def word_embedding_dim(model_dim: int, num_features: int, feature_dim: int, merge: str, combine: str) -> int:
    """Width the word embedding must have so that words + features give ``model_dim``.

    Raises:
        ValueError: when the dimensions cannot add up, with the numbers in the message.
    """
    if combine not in COMBINES:
        raise ValueError(f"feature combine must be one of {COMBINES}, got {combine!r}")
    if num_features == 0:
        return model_dim
    feat = feature_output_dim(num_features, feature_dim, merge)
    if combine == "add":
        if feat != model_dim:
            raise ValueError(
                f"--feature-combine add needs the merged features to be {model_dim}-dim (the model dimension), "
                f"got {feat} ({num_features} features x {feature_dim}, merge {merge}); "
                f"set --feature-embed-dim {model_dim if merge == 'sum' else 'model_dim / #features'}"
            )
        return model_dim
    if feat >= model_dim:
        raise ValueError(
            f"--feature-combine concat: {feat}-dim features leave no room for words in the {model_dim}-dim model"
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

    Args:
        word_embed (nn.Embedding): the word embedding (``model_dim - feature dims`` wide for concat).
        feature_vocab (Dict[str, int]): feature name -> vocabulary size, in a fixed order.
        feature_dim (int): width of each feature embedding.
        merge (str): ``sum`` or ``concat`` across features.
        combine (str): ``concat`` or ``add`` with the word embedding.
        padding_idx (int): padding id of the feature dictionaries (fairseq: 1).
    """

    def __init__(self, word_embed: nn.Embedding, feature_vocab: Dict[str, int], feature_dim: int,
                 merge: str = "sum", combine: str = "concat", padding_idx: int = 1):
        super().__init__()
        if not feature_vocab:
            raise ValueError("SourceFeatureEmbedding needs at least one feature")
        self.word = word_embed
        self.names: List[str] = list(feature_vocab)
        self.merge, self.combine = merge, combine
        self.features = nn.ModuleDict()
        for name, size in feature_vocab.items():
            emb = nn.Embedding(size, feature_dim, padding_idx=padding_idx)
            nn.init.normal_(emb.weight, mean=0, std=feature_dim ** -0.5)
            nn.init.constant_(emb.weight[padding_idx], 0)
            self.features[name] = emb
        feat = feature_output_dim(len(self.names), feature_dim, merge)
        self.embedding_dim = word_embed.embedding_dim + feat if combine == "concat" else word_embed.embedding_dim
        if combine == "add" and feat != word_embed.embedding_dim:
            raise ValueError(f"add-combined features must be {word_embed.embedding_dim}-dim, got {feat}")
        self.padding_idx = word_embed.padding_idx

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
