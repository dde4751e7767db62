"""What the model does with the streams, observed from the outside.

* SG-Net: which source positions each encoder output depends on, measured with autograd on an
  encoder without ordinary layers, equals the SDOI mask that a naive reference builds from the
  text streams of the batch's sentences (subword tags B/O start words, EOS/BOS/pad are special),
  under both subword conventions, with BOS and with left and right padding.
* Source features: every ``--feature-merge`` / ``--feature-combine`` mode embeds exactly the
  documented combination of the embedding tables (named by their state-dict keys), and changing
  one feature of one token changes the model's output.
* A checkpoint refuses data whose stream dictionaries differ from the ones it was trained with.

The tests use only the model's public interface (forward, ``token_embeddings``, state-dict keys,
fairseq's checkpoint loading), so they hold however the encoder is organised inside.
"""

import re
import shutil

import pytest
import torch

from conftest import build_task_and_model
from support.naive import Ref, make_row

SPLIT = "valid"


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


def _batch(task, n, split=SPLIT):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def _encoder_inputs(net):
    return {k: v for k, v in net.items() if k != "prev_output_tokens"}


def dependency_pattern(encoder, net, dim):
    """``dep[b, i, j]``: the encoder output at (b, i) depends on the input embedding at (b, j).

    Small random token embeddings are fed through fairseq's ``token_embeddings`` argument; the
    output is projected on a random direction (a plain sum would cancel in the LayerNorm) and
    differentiated row by row. Attention weights of masked positions are exactly 0, so their
    gradients are exactly 0.
    """
    tokens = net["src_tokens"]
    B, T = tokens.shape
    g = torch.Generator().manual_seed(0)
    emb = (torch.randn(B, T, dim, generator=g) * 0.02).requires_grad_(True)
    out = encoder(tokens, net["src_lengths"], token_embeddings=emb, src_streams=net["src_streams"])
    out = out["encoder_out"][0]  # T x B x C
    direction = torch.randn(B, dim, generator=g)
    dep = torch.zeros(B, T, T, dtype=torch.bool)
    for i in range(T):
        (grad,) = torch.autograd.grad((out[i] * direction).sum(), emb, retain_graph=True)
        dep[:, i] = grad.abs().sum(-1) > 0
    return dep


def reference_masks(corpus, batch, left_pad, bos, convention, split=SPLIT):
    """SDOI masks of the batch rows, rebuilt from the TEXT streams by the naive reference.

    Returns ``(mask, real)``: ``(B, T, T)`` bool and the ``(B, T)`` non-pad positions.
    """
    tags, heads = _lines(f"{corpus[split]}.subword"), _lines(f"{corpus[split]}.head")
    T = batch["net_input"]["src_tokens"].shape[1]
    masks, real = [], []
    for sid in batch["id"].tolist():
        word_start = [t in ("B", "O") for t in tags[sid]]
        h, w, s, off = make_row([int(x) for x in heads[sid]], word_start, T, left_pad=left_pad, bos=bos)
        masks.append(Ref(h, w, s).sdoi(convention))
        n = len(tags[sid]) + 1 + int(bos)  # (BOS) tokens EOS
        start = T - n if left_pad else 0
        real.append([start <= i < start + n for i in range(T)])
    return torch.tensor(masks), torch.tensor(real)


@pytest.mark.parametrize("convention,left_pad,bos", [
    ("shared", True, False), ("shared", False, True), ("first", True, True), ("first", False, False),
])
def test_sgnet_attends_exactly_to_the_sdoi_of_the_batch(stream_corpus, stream_bin, convention, left_pad, bos):
    options = ["--syntax-attention", "sgnet", "--sgnet-subword", convention, "--encoder-layers", 0, "--dropout", 0,
               "--attention-dropout", 0, "--source-features", ""]
    if not left_pad:
        options.append("--left-pad-source")  # fairseq 0.12: the bare flag turns left padding OFF
    if bos:
        options.append("--source-prepend-bos")
    task, model, _ = build_task_and_model(stream_bin, *options)
    model.eval()
    batch = _batch(task, 8)
    net = batch["net_input"]
    expected, real = reference_masks(stream_corpus, batch, left_pad, bos, convention)

    # the batch exercises what the mask depends on
    tags = _lines(f"{stream_corpus[SPLIT]}.subword")
    used = [tags[sid] for sid in batch["id"].tolist()]
    assert any("O" in t for t in used) and any("B" in t for t in used) and any("M" in t for t in used)
    assert not real.all()  # some padding
    assert not torch.equal(expected, expected.transpose(1, 2))  # asymmetric
    d = task.source_dictionary
    assert (net["src_tokens"][real] != d.pad()).all() and (net["src_tokens"][~real] == d.pad()).all()

    dep = dependency_pattern(model.encoder, net, model.encoder.embed_tokens.embedding_dim)
    rows = real.unsqueeze(-1).expand_as(dep)  # pad rows are ignored downstream (encoder_padding_mask)
    assert torch.equal(dep[rows], expected[rows]), (dep ^ expected)[rows].sum()
    # pad columns are never attended to; and the pattern is not trivially all/self
    assert not dep[real.unsqueeze(-1) & ~real.unsqueeze(1)].any()
    assert dep[rows].sum() > real.sum()


def test_the_subword_conventions_give_different_masks_on_the_batch(stream_corpus, stream_bin):
    task, _, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    batch = _batch(task, 8)
    shared, _ = reference_masks(stream_corpus, batch, True, False, "shared")
    first, _ = reference_masks(stream_corpus, batch, True, False, "first")
    assert (shared & ~first).any() and not (first & ~shared).any()  # "first" only removes links


# ----------------------------------------------------------------------------- features
FEATURES = ["pos", "case", "subword", "dep"]


def expected_embedding(model, tokens, streams, merge, combine):
    """The documented input layer, from the state dict's tables: words (+/concat) merged features."""
    sd = model.state_dict()
    words = sd["encoder.embed_tokens.word.weight"][tokens]
    feats = [sd[f"encoder.embed_tokens.features.{name}.weight"][streams[name]] for name in FEATURES]
    merged = torch.stack(feats).sum(0) if merge == "sum" else torch.cat(feats, dim=-1)
    return torch.cat([words, merged], dim=-1) if combine == "concat" else words + merged


@pytest.mark.parametrize("merge,combine,dim,word_dim,sgnet", [
    ("sum", "concat", 8, 56, True),
    ("concat", "concat", 8, 32, False),
    ("sum", "add", 64, 64, False),
    ("concat", "add", 16, 64, True),
])
def test_every_feature_mode_feeds_the_documented_embedding(stream_bin, merge, combine, dim, word_dim, sgnet):
    torch.manual_seed(0)
    extra = ["--syntax-attention", "sgnet"] if sgnet else []
    task, model, _ = build_task_and_model(stream_bin, "--source-features", ",".join(FEATURES), "--feature-merge",
                                          merge, "--feature-combine", combine, "--feature-embed-dim", dim, *extra)
    model.eval()
    sd = model.state_dict()
    assert sd["encoder.embed_tokens.word.weight"].shape[1] == word_dim
    assert all(sd[f"encoder.embed_tokens.features.{f}.weight"].shape[1] == dim for f in FEATURES)
    net = _batch(task, 6)["net_input"]
    streams = net["src_streams"]
    enc_in = _encoder_inputs(net)
    with torch.no_grad():
        out = model.encoder(**enc_in)["encoder_out"][0]
        ref = model.encoder(**enc_in, token_embeddings=expected_embedding(model, net["src_tokens"], streams, merge,
                                                                          combine))["encoder_out"][0]
        assert torch.equal(out, ref)
        # every feature reaches the model's output: change one value of one real token
        logits = model(**net)[0]
        real = net["src_tokens"].ne(task.source_dictionary.pad())
        b, i = real.nonzero()[3].tolist()
        for name in FEATURES:
            changed = {k: v.clone() for k, v in streams.items()}
            d = task.stream_dicts[name]
            changed[name][b, i] = d.nspecial + (streams[name][b, i] - d.nspecial + 1) % (len(d) - d.nspecial)
            assert changed[name][b, i] != streams[name][b, i]
            other = model(**dict(net, src_streams=changed))[0]
            assert not torch.allclose(other[b], logits[b]), name
            assert torch.equal(other[:b], logits[:b]) and torch.equal(other[b + 1:], logits[b + 1:])


# --------------------------------------------------------------------------- checkpoints
def _save_checkpoint(model, cfg, path):
    """A checkpoint as fairseq-train writes it (cfg with the model's recorded streams, weights)."""
    from omegaconf import OmegaConf

    torch.save({"cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True), "model": model.state_dict(), "args": None, "extra_state": {},
                "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                                       "lr_scheduler_state": {}, "num_updates": 0}],
                "last_optimizer_state": None}, path)


def _swap_two_symbols(path):
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    lines[0], lines[1] = lines[1], lines[0]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)


@pytest.mark.parametrize("stream,edit,message", [
    ("pos", lambda p: open(p, "a", encoding="utf-8").write("XTRA 1\n"),
     r"dictionary of stream 'pos' differs from the one the checkpoint was trained with \((\d+) types, hash \w+ vs "
     r"(\d+) types, hash \w+\): binarize with --streamdict-dir"),
    ("subword", _swap_two_symbols, r"dictionary of stream 'subword' differs .* \((\d+) types, hash (\w+) vs (\d+) "
     r"types, hash (\w+)\)"),
    # the word dictionaries: same size, other order (only the hash tells; the model loaded and translated garbage)
    ("en", _swap_two_symbols, r"the source dictionary \S+/dict.en.txt differs from the one the checkpoint was trained "
     r"with \((\d+) types, hash (\w+) vs (\d+) types, hash (\w+)\): use the training data's dictionaries"),
    ("de", _swap_two_symbols, r"the target dictionary \S+/dict.de.txt differs .* \((\d+) types, hash (\w+) vs (\d+) "
     r"types, hash (\w+)\)"),
])
@pytest.mark.parametrize("legacy", [False, True], ids=["records", "old-signature-strings"])
def test_checkpoint_refuses_other_stream_dictionaries(stream_bin, tmp_path, stream, edit, message, legacy):
    """The dictionaries a checkpoint records (typed records since issue 57.4, kept as plain dicts; ``legacy``: the
    ``name:size:hash`` strings of the checkpoints trained before) load, and refuse other dictionaries by name."""
    from fairseq import checkpoint_utils

    import syntax_nmt.checkpoint_compat  # noqa: F401

    from syntax_nmt.data.signatures import DictionaryRecord
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    task, model, cfg = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    assert cfg.model.source_stream_dicts == [DictionaryRecord.of(n, task.stream_dicts[n]).to_record()
                                             for n in ("pos", "case", "subword")]
    assert cfg.model.word_dict_signature == [DictionaryRecord.of("source", task.source_dictionary).to_record(),
                                             DictionaryRecord.of("target", task.target_dictionary).to_record()]
    if legacy:
        for key in ("source_stream_dicts", "word_dict_signature"):
            setattr(cfg.model, key, ",".join(f"{r['name']}:{r['size']}:{r['digest']}" for r in getattr(cfg.model, key)))
        assert cfg.model.source_stream_dicts.startswith("pos:") and cfg.model.word_dict_signature.startswith("source:")
    path = str(tmp_path / "checkpoint.pt")
    _save_checkpoint(model, cfg, path)
    (loaded,), _ = checkpoint_utils.load_model_ensemble([path], arg_overrides={"data": stream_bin})
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in loaded.state_dict().items())

    other = tmp_path / "data-bin"
    shutil.copytree(stream_bin, other)
    edit(str(other / f"dict.{stream}.txt"))
    with pytest.raises(StreamConfigError, match=message) as e:
        checkpoint_utils.load_model_ensemble([path], arg_overrides={"data": str(other)})
    if stream in ("subword", "en", "de"):  # same size, other order: only the hash tells
        n1, h1, n2, h2 = re.search(message, str(e.value)).groups()
        assert n1 == n2 and h1 != h2
    else:
        n1, n2 = re.search(message, str(e.value)).groups()
        assert int(n2) == int(n1) + 1
