"""Source feature embeddings: dimension arithmetic and the forward dispatch."""

import pytest
import torch
from torch import nn

from syntax_nmt.models.modules.source_feature_embedding import (
    SourceFeatureEmbedding,
    combine_with_words,
    feature_output_dim,
    merge_features,
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


def test_merge_and_combine_exact():
    a, b, c = (torch.full((1, 2, 2), float(v)) for v in (1, 10, 100))
    assert merge_features([a, b, c], "sum").tolist() == [[[111.0, 111.0]] * 2]
    assert merge_features([a], "sum") is a
    assert merge_features([a, b, c], "concat").tolist() == [[[1.0, 1.0, 10.0, 10.0, 100.0, 100.0]] * 2]
    w = torch.tensor([[[2.0, 3.0]]])
    f = torch.tensor([[[5.0, 7.0]]])
    assert combine_with_words(w, f, "concat").tolist() == [[[2.0, 3.0, 5.0, 7.0]]]  # words first
    assert combine_with_words(w, f, "add").tolist() == [[[7.0, 10.0]]]
    with pytest.raises(ValueError, match=r"feature merge must be one of \('sum', 'concat'\), got 'mean'"):
        merge_features([a], "mean")
    with pytest.raises(ValueError, match=r"feature combine must be one of \('concat', 'add'\), got 'mul'"):
        combine_with_words(w, f, "mul")


@pytest.mark.parametrize("k,d,merge,expected", [(3, 20, "sum", 20), (3, 20, "concat", 60), (1, 7, "concat", 7)])
def test_feature_output_dim(k, d, merge, expected):
    assert feature_output_dim(k, d, merge) == expected


@pytest.mark.parametrize("merge,combine,d,word_dim", [
    ("sum", "concat", 4, 12), ("concat", "concat", 4, 12), ("sum", "add", 12, 12), ("concat", "add", 6, 12),
])
def test_forward_every_mode_exact(merge, combine, d, word_dim):
    """Each mode computes exactly words (+ or concat) the sum / concatenation of the features, in order."""
    torch.manual_seed(1)
    words = nn.Embedding(10, word_dim, padding_idx=1)
    emb = SourceFeatureEmbedding(words, {"pos": 6, "case": 4}, d, merge=merge, combine=combine)
    width = d if merge == "sum" else 2 * d
    assert emb.embedding_dim == (word_dim + width if combine == "concat" else word_dim)
    assert emb.names == ["pos", "case"] and emb.weight is words.weight and emb.padding_idx == 1
    tokens = torch.tensor([[4, 5, 6], [7, 8, 1]])
    streams = {"case": torch.tensor([[2, 3, 2], [3, 3, 1]]), "pos": torch.tensor([[4, 5, 2], [3, 2, 1]])}
    P, C, W = emb.features["pos"].weight, emb.features["case"].weight, words.weight
    for t in (P, C):
        assert (t[1] == 0).all() and t.std() > 0  # padding row zero, the rest random
    out = emb(tokens, streams)
    for b in range(2):
        for i in range(3):
            p, c, w = P[streams["pos"][b, i]], C[streams["case"][b, i]], W[tokens[b, i]]
            feats = p + c if merge == "sum" else torch.cat([p, c])
            expected = torch.cat([w, feats]) if combine == "concat" else w + feats
            assert torch.equal(out[b, i], expected), (b, i)
    out.sum().backward()
    assert (P.grad[1] == 0).all() and (P.grad[4] != 0).all()


def test_construction_errors():
    words = nn.Embedding(10, 12, padding_idx=1)
    with pytest.raises(ValueError, match="needs at least one feature"):
        SourceFeatureEmbedding(words, {}, 4)
    with pytest.raises(ValueError, match="add-combined features must be 12-dim, got 8"):
        SourceFeatureEmbedding(words, {"pos": 6, "case": 4}, 4, merge="concat", combine="add")
