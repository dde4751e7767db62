"""Per-feature embedding widths (``--feature-embed-dims``): the Syntax-Infused Transformer's
concatenation variant, "feature embeddings concatenated ... such that their total dimensionality
is 20" (Sundararaman et al., 2019), next to the summed d=20 of its main model."""

import os

import pytest
import torch
from torch import nn

from conftest import USER_DIR, assert_option_error, build_task_and_model, run_cli
from syntax_nmt.models.modules.source_feature_embedding import (
    SourceFeatureEmbedding,
    feature_output_dim,
    parse_feature_dims,
    resolve_feature_dims,
    word_embedding_dim,
)

FEATS = ["pos", "case", "subword"]


def _n_params(model):
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------ resolving the widths
@pytest.mark.parametrize("dim,dims,merge,expected", [
    (20, "", "sum", [20, 20, 20]),           # the uniform shortcut (the paper's summed model)
    (None, "8,4,8", "concat", [8, 4, 8]),    # the paper's concatenation variant: 20 in all
    (None, " 8, 4 ,8 ", "concat", [8, 4, 8]),
    (None, "20,20,20", "sum", [20, 20, 20]),
    (8, "8,8,8", "concat", [8, 8, 8]),       # both given, consistently
    (None, "6,6,6", "sum", [6, 6, 6]),
])
def test_resolve_feature_dims(dim, dims, merge, expected):
    assert resolve_feature_dims(FEATS, dim, dims, merge) == expected


def test_no_features_no_widths():
    assert resolve_feature_dims([], 20, "", "sum") == []
    assert parse_feature_dims("") == [] and parse_feature_dims(None) == []


@pytest.mark.parametrize("dim,dims,merge,message", [
    (None, "8,4", "concat", "gives 2 dimensions for 3 --source-features \\(pos,case,subword\\)"),
    (None, "8,4,8,4", "concat", "gives 4 dimensions for 3"),
    (None, "8,0,8", "concat", "must be positive"),
    (None, "8,-4,8", "concat", "must be positive"),
    (None, "8,x,8", "concat", "comma-separated integers"),
    (None, "8,4,8", "sum", "--feature-merge sum adds the feature embeddings"),
    (20, "8,4,8", "concat", "--feature-embed-dim 20 contradicts --feature-embed-dims 8,4,8"),
    (8, "8,8,8,", "concat", "comma-separated integers"),
    (0, "", "sum", "--feature-embed-dim must be a positive integer"),
    (None, "8,4,8", "mean", "merge"),
])
def test_invalid_widths_are_refused(dim, dims, merge, message):
    with pytest.raises(ValueError, match=message):
        resolve_feature_dims(FEATS, dim, dims, merge)


@pytest.mark.parametrize("dims,merge,combine,expected", [
    ([8, 4, 8], "concat", "concat", 492),   # 512 - 20
    ([20, 20, 20], "sum", "concat", 492),
    ([256, 128, 128], "concat", "add", 512),
])
def test_word_embedding_dim_with_per_feature_widths(dims, merge, combine, expected):
    assert word_embedding_dim(512, 3, dims, merge, combine) == expected
    assert feature_output_dim(3, dims, merge) == (sum(dims) if merge == "concat" else dims[0])


def test_word_embedding_dim_refuses_impossible_widths():
    with pytest.raises(ValueError, match="needs the merged features to be 512-dim"):
        word_embedding_dim(512, 3, [8, 4, 8], "concat", "add")
    with pytest.raises(ValueError, match="leave no room"):
        word_embedding_dim(64, 3, [32, 16, 16], "concat", "concat")
    with pytest.raises(ValueError, match="equal feature widths"):
        feature_output_dim(3, [8, 4, 8], "sum")


# ------------------------------------------------------------------ the module
def test_each_feature_reaches_its_own_slice():
    torch.manual_seed(0)
    words = nn.Embedding(10, 12, padding_idx=1)
    emb = SourceFeatureEmbedding(words, {"pos": 7, "case": 4, "subword": 6}, [8, 4, 8], merge="concat")
    assert emb.embedding_dim == 12 + 20
    assert {n: e.weight.shape for n, e in emb.features.items()} == {
        "pos": (7, 8), "case": (4, 4), "subword": (6, 8)}
    slices = emb.feature_slices()
    assert slices == {"pos": slice(12, 20), "case": slice(20, 24), "subword": slice(24, 32)}
    tokens = torch.tensor([[4, 5, 6, 2]])
    streams = {"pos": torch.tensor([[4, 5, 6, 2]]), "case": torch.tensor([[2, 3, 3, 2]]),
               "subword": torch.tensor([[4, 5, 4, 2]])}
    out = emb(tokens, streams)
    assert out.shape == (1, 4, 32)
    torch.testing.assert_close(out[..., :12], words(tokens))
    for name, cols in slices.items():
        torch.testing.assert_close(out[..., cols], emb.features[name](streams[name]))

    # changing one feature's ids changes its columns and no other
    for name in FEATS:
        changed = dict(streams, **{name: streams[name].clone()})
        changed[name][0, 1] = 2 if int(streams[name][0, 1]) != 2 else 3
        diff = (emb(tokens, changed) != out).any(dim=1)[0]  # (32,) columns that moved
        expected = torch.zeros(32, dtype=torch.bool)
        expected[slices[name]] = True
        assert torch.equal(diff, expected), name


def test_embedding_init_scale_follows_each_width():
    torch.manual_seed(0)
    emb = SourceFeatureEmbedding(nn.Embedding(10, 12, padding_idx=1), {"pos": 4000, "case": 4000},
                                 [4, 64], merge="concat")
    for name, d in (("pos", 4), ("case", 64)):
        w = emb.features[name].weight
        assert torch.all(w[1] == 0)  # padding row
        assert abs(w[2:].std().item() - d ** -0.5) < 0.05 * d ** -0.5


def test_module_refuses_sum_of_unequal_widths():
    with pytest.raises(ValueError, match="equal feature widths"):
        SourceFeatureEmbedding(nn.Embedding(10, 12), {"pos": 5, "case": 3}, [8, 4], merge="sum")
    with pytest.raises(ValueError, match="2 feature widths"):
        SourceFeatureEmbedding(nn.Embedding(10, 12), {"pos": 5, "case": 3, "subword": 4}, [8, 4])
    emb = SourceFeatureEmbedding(nn.Embedding(10, 12), {"pos": 5, "case": 3}, [4, 4], merge="sum")
    with pytest.raises(ValueError, match="own columns"):
        emb.feature_slices()


# ------------------------------------------------------------------ through fairseq
CONCAT = ["--source-features", "pos,case,subword", "--feature-merge", "concat", "--feature-embed-dims", "8,4,8"]


def test_model_with_per_feature_widths(stream_bin):
    """Parameter count: stock - V_src * 20 (narrower words) + sum_k |F_k| * d_k; each feature's
    embedding reaches the encoder input at its own columns."""
    task, model, cfg = build_task_and_model(stream_bin, *CONCAT)
    _, std, _ = build_task_and_model(stream_bin, arch="transformer_tiny", task="translation")
    emb = model.encoder.embed_tokens
    assert cfg.model.feature_embed_dims == "8,4,8" and cfg.model.feature_embed_dim is None
    assert emb.word.embedding_dim == 64 - 20 and emb.embedding_dim == 64
    assert emb.feature_dims == {"pos": 8, "case": 4, "subword": 8}
    sizes = {f: len(task.stream_dicts[f]) for f in FEATS}
    expected = _n_params(std) - len(task.source_dictionary) * 20 + sizes["pos"] * 8 + sizes["case"] * 4 \
        + sizes["subword"] * 8
    assert _n_params(model) == expected

    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(6)])["net_input"]
    out = emb(net["src_tokens"], net["src_streams"])
    for name, cols in emb.feature_slices().items():
        torch.testing.assert_close(out[..., cols], emb.features[name].weight[net["src_streams"][name]])
    torch.testing.assert_close(out[..., :44], emb.word.weight[net["src_tokens"]])


def test_paper_concatenation_variant_keeps_492_dim_words(stream_bin):
    _, model, _ = build_task_and_model(stream_bin, "--feature-merge", "concat", "--feature-embed-dims", "8,4,8",
                                       arch="syntax_transformer_wmt_en_de")
    emb = model.encoder.embed_tokens
    assert emb.word.embedding_dim == 492 and emb.embedding_dim == 512
    assert emb.feature_slices() == {"pos": slice(492, 500), "case": slice(500, 504), "subword": slice(504, 512)}


def test_uniform_shortcut_equals_the_explicit_list(stream_bin):
    torch.manual_seed(0)
    _, short, _ = build_task_and_model(stream_bin, "--feature-merge", "concat", "--feature-embed-dim", 6)
    torch.manual_seed(0)
    _, both, _ = build_task_and_model(stream_bin, "--feature-merge", "concat", "--feature-embed-dim", 6,
                                      "--feature-embed-dims", "6,6,6")
    torch.manual_seed(0)
    _, listed, _ = build_task_and_model(stream_bin, "--feature-merge", "concat", "--feature-embed-dims", "6,6,6")
    for other in (both, listed):
        assert {k: v.shape for k, v in short.state_dict().items()} == {k: v.shape for k, v in other.state_dict().items()}
        assert all(torch.equal(a, b) for a, b in zip(short.state_dict().values(), other.state_dict().values()))


@pytest.mark.parametrize("extra,message", [
    (["--feature-embed-dims", "8,4"], "gives 2 dimensions for 3"),
    (["--feature-embed-dims", "8,4,8"], "--feature-merge sum adds"),  # the tiny arch merges by sum
    (["--feature-merge", "concat", "--feature-embed-dims", "8,4,8", "--feature-embed-dim", "8"],
     "--feature-embed-dim 8 contradicts"),
    (["--feature-merge", "concat", "--feature-embed-dims", "8,0,8"], "must be positive"),
    (["--feature-merge", "concat", "--feature-embed-dims", "40,20,8"], "leave no room"),
    (["--source-features", "", "--feature-embed-dims", "8,4,8"], "for 0 --source-features"),
])
def test_model_refuses_bad_widths(stream_bin, extra, message, capsys, monkeypatch):
    """fairseq's command line: a one-line usage error; in Python: ValueError."""
    assert_option_error(stream_bin, extra, message, capsys, monkeypatch)


@pytest.mark.e2e
def test_checkpoints_with_widths_and_old_checkpoints_load(stream_bin, tmp_path):
    """A checkpoint keeps its widths; one saved before --feature-embed-dims existed (no such
    key in its config) still loads with the uniform width."""
    from fairseq import checkpoint_utils

    import syntax_nmt.checkpoint_compat  # noqa: F401

    common = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
              "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1500", "--max-update", "1",
              "--no-epoch-checkpoints", "--no-progress-bar", "--disable-validation"]
    paths = {}
    for name, extra in (("concat", CONCAT[2:]), ("uniform", ["--feature-embed-dim", "6"])):
        run_cli("fairseq-train", stream_bin, *common, *extra, "--save-dir", tmp_path / name)
        paths[name] = str(tmp_path / name / "checkpoint_last.pt")

    models, cfg, _ = checkpoint_utils.load_model_ensemble_and_task([paths["concat"]])
    assert models[0].encoder.embed_tokens.feature_dims == {"pos": 8, "case": 4, "subword": 8}
    saved = torch.load(paths["concat"], map_location="cpu")["model"]
    assert all(torch.equal(saved[k], v) for k, v in models[0].state_dict().items())

    old = torch.load(paths["uniform"], map_location="cpu")
    del old["cfg"]["model"].feature_embed_dims  # as written before the option existed
    old_path = str(tmp_path / "old.pt")
    torch.save(old, old_path)
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([old_path])
    assert models[0].encoder.embed_tokens.feature_dims == {"pos": 6, "case": 6, "subword": 6}
    assert os.path.getsize(old_path) > 0
