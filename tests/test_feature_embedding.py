"""Source feature embeddings: dimension arithmetic and the forward dispatch."""

import pytest
import torch
from torch import nn

from syntax_nmt.models.modules.source_feature_embedding import (
    SourceFeatureEmbedding,
    feature_output_dim,
    word_embedding_dim,
)


@pytest.mark.parametrize("model,k,d,merge,combine,expected", [
    (512, 3, 20, "sum", "concat", 492),   # the paper
    (512, 3, 20, "concat", "concat", 452),
    (512, 3, 512, "sum", "add", 512),     # BERT+POS-style addition
    (512, 2, 256, "concat", "add", 512),
    (512, 0, 20, "sum", "concat", 512),   # no features
])
def test_word_embedding_dim(model, k, d, merge, combine, expected):
    assert word_embedding_dim(model, k, d, merge, combine) == expected


@pytest.mark.parametrize("args,message", [
    ((512, 3, 20, "sum", "add"), "must be 512-dim|needs the merged features"),
    ((64, 3, 30, "concat", "concat"), "no room"),
    ((512, 3, 20, "mean", "concat"), "merge"),
    ((512, 3, 20, "sum", "mul"), "combine"),
])
def test_impossible_dimensions_raise(args, message):
    with pytest.raises(ValueError, match=message):
        word_embedding_dim(*args)


def test_forward_sum_concat_and_padding():
    torch.manual_seed(0)
    words = nn.Embedding(10, 12, padding_idx=1)
    emb = SourceFeatureEmbedding(words, {"pos": 6, "case": 4}, 4, merge="sum", combine="concat")
    assert emb.embedding_dim == 16 == feature_output_dim(2, 4, "sum") + 12
    tokens = torch.tensor([[1, 5, 6]])
    streams = {"pos": torch.tensor([[1, 4, 5]]), "case": torch.tensor([[1, 2, 3]])}
    out = emb(tokens, streams)
    assert out.shape == (1, 3, 16)
    assert torch.equal(out[0, 0], torch.zeros(16))  # pad everywhere -> zero vector
    expected = torch.cat([words(tokens)[0, 2], emb.features["pos"].weight[5] + emb.features["case"].weight[3]])
    torch.testing.assert_close(out[0, 2], expected)
    with pytest.raises(ValueError, match="missing"):
        emb(tokens, {"pos": streams["pos"]})
