"""The syntax_transformer model: equivalences with stock fairseq, dimensions, SG-Net invariants, decoding."""

import copy

import pytest
import torch

from conftest import assert_option_error, build_task_and_model
from syntax_nmt.models.modules.methods.sgnet_layer import SGNetLayer, sgnet_layer_config
from syntax_nmt.models.modules.syntax_context import SyntaxContext


def _n_params(model):
    return sum(p.numel() for p in model.parameters())


def _encoder_inputs(net):
    return {k: v for k, v in net.items() if k != "prev_output_tokens"}


def _batch(task, split="valid", n=8):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def test_no_features_is_the_stock_transformer(stream_bin):
    torch.manual_seed(0)
    t_syn, syn, _ = build_task_and_model(stream_bin, "--source-features", "", "--encoder-embed-dim", 32,
                                         "--decoder-embed-dim", 32, arch="syntax_transformer_tiny")
    torch.manual_seed(0)
    t_std, std, _ = build_task_and_model(stream_bin, "--encoder-embed-dim", 32, "--decoder-embed-dim", 32,
                                         arch="transformer_tiny", task="translation")
    assert _n_params(syn) == _n_params(std)
    assert list(syn.state_dict()) == list(std.state_dict())
    syn.load_state_dict(std.state_dict())
    syn.eval(), std.eval()
    batch = _batch(t_syn)
    net = batch["net_input"]
    out_syn = syn(**net)[0]
    out_std = std(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])[0]
    assert torch.equal(out_syn, out_std)


@pytest.mark.parametrize("merge,combine,dim", [("sum", "concat", 8), ("concat", "concat", 4), ("sum", "add", 64)])
def test_parameter_count_matches_the_paper_formula(stream_bin, merge, combine, dim):
    """Features: stock params - V_src * (feature width) [concat] + sum_k |F_k| * d."""
    task, model, cfg = build_task_and_model(stream_bin, "--feature-merge", merge, "--feature-combine", combine,
                                            "--feature-embed-dim", dim)
    _, std, _ = build_task_and_model(stream_bin, arch="transformer_tiny", task="translation",
                                     )
    feats = ["pos", "case", "subword"]
    width = dim if merge == "sum" else dim * len(feats)
    v_src = len(task.source_dictionary)
    expected = _n_params(std) + sum(len(task.stream_dicts[f]) * dim for f in feats)
    if combine == "concat":
        expected -= v_src * width
    assert _n_params(model) == expected
    assert model.encoder.embed_tokens.embedding_dim == 64


def test_paper_architecture_dimensions(stream_bin):
    """syntax_transformer_wmt_en_de: 492-dim source words + 20-dim summed features, decoder 512."""
    _, model, _ = build_task_and_model(stream_bin, arch="syntax_transformer_wmt_en_de")
    emb = model.encoder.embed_tokens
    assert emb.word.embedding_dim == 492
    assert {n: e.embedding_dim for n, e in emb.features.items()} == {"pos": 20, "case": 20, "subword": 20}
    assert emb.embedding_dim == 512
    assert model.decoder.embed_tokens.embedding_dim == 512
    assert len(model.encoder.layers) == 6 and len(model.decoder.layers) == 6


@pytest.mark.parametrize("extra,message", [
    (["--share-all-embeddings"], "share-all-embeddings"),
    (["--feature-combine", "add"], "feature-combine add"),
    (["--feature-embed-dim", "64"], "no room for words"),
    (["--encoder-attention-heads", "3"], "not divisible"),
    (["--source-features", "pos,head"], "cannot be embedded"),
])
def test_conflicting_options_fail_clearly(stream_bin, extra, message, capsys, monkeypatch):
    """fairseq's command line: a one-line usage error; in Python: ValueError."""
    assert_option_error(stream_bin, extra, message, capsys, monkeypatch)


def test_sgnet_alpha_one_gives_the_plain_encoder(stream_bin):
    task, sg, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--sgnet-alpha", 1.0)
    _, plain, _ = build_task_and_model(stream_bin)
    missing = plain.load_state_dict(sg.state_dict(), strict=False)
    assert not missing.missing_keys and all(k.startswith("encoder.syntax_modules.sgnet.") for k in missing.unexpected_keys)
    sg.eval(), plain.eval()
    net = _batch(task)["net_input"]
    assert torch.equal(sg.encoder(**{k: v for k, v in net.items() if k != "prev_output_tokens"})["encoder_out"][0],
                       plain.encoder(**{k: v for k, v in net.items() if k != "prev_output_tokens"})["encoder_out"][0])
    assert torch.equal(sg(**net)[0], plain(**net)[0])


def test_sgnet_layer_with_an_all_allowing_mask_is_a_plain_encoder_layer(stream_bin, monkeypatch):
    task, sg, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--dropout", 0)
    layer: SGNetLayer = sg.encoder.syntax_modules["sgnet"]
    layer.eval()
    x = torch.randn(7, 3, 64)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    allowed = torch.ones(3, 7, 7, dtype=torch.bool)
    ctx = SyntaxContext(torch.zeros(3, 7, dtype=torch.long), ~pad, pad, pad)
    ctx.cached(("sdoi", layer.convention), lambda: allowed)  # what the SDOI attention reads
    out = SGNetLayer.forward(layer, x, allowed, pad, ctx=ctx)
    plain = sg.encoder.build_plain_encoder_layer(sgnet_layer_config(sg.encoder.cfg)).eval()
    plain.load_state_dict(layer.layer.state_dict())  # fairseq's own layer with the SG layer's weights
    torch.testing.assert_close(out, 0.5 * x + 0.5 * plain(x, encoder_padding_mask=pad))


def test_gradients_reach_every_parameter_and_alpha_gets_the_exact_gradient(stream_bin):
    """Features + SG-Net with a learned alpha: every parameter gets a non-zero gradient (none is cut
    off from the loss), padding rows of the feature embeddings get none, and alpha's gradient equals
    a central finite difference of the loss (float64 model)."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    task, sg, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--sgnet-learn-alpha",
                                       "--sgnet-alpha", 0.3, "--dropout", 0)
    sg.double()
    batch = _batch(task)
    net, pad = batch["net_input"], task.target_dictionary.pad()

    def loss():
        lprobs = F.log_softmax(sg(**net)[0], dim=-1)  # in float64 (fairseq's log_softmax is float32)
        return F.nll_loss(lprobs.view(-1, lprobs.size(-1)), batch["target"].view(-1), ignore_index=pad,
                          reduction="sum")

    loss().backward()
    params = dict(sg.named_parameters())
    assert [n for n, p in params.items() if p.grad is None or not (p.grad != 0).any()] == []
    assert any(n.startswith("encoder.embed_tokens.features.") for n in params)
    for name in ("pos", "case", "subword"):
        grad = params[f"encoder.embed_tokens.features.{name}.weight"].grad
        assert (grad[task.stream_dicts[name].pad()] == 0).all()
    logits = [n for n in params if "syntax" in n and n.endswith("logit")]
    assert len(logits) == 1
    logit = params[logits[0]]
    assert torch.sigmoid(logit).item() == pytest.approx(0.3)
    eps = 1e-3  # fairseq's attention softmax runs in float32: smaller steps drown in its rounding
    with torch.no_grad():
        logit += eps
        up = loss().item()
        logit -= 2 * eps
        down = loss().item()
        logit += eps
    assert logit.grad.item() == pytest.approx((up - down) / (2 * eps), rel=1e-3)
    assert abs(logit.grad.item()) > 1e-3


def _generator(task, model, beam):
    from argparse import Namespace

    return task.build_generator([model], Namespace(beam=beam, max_len_b=20, max_len_a=0, min_len=1))


@pytest.mark.parametrize("arch_args", [[], ["--syntax-attention", "sgnet"]])
def test_beam_one_equals_greedy_and_batched_equals_one_by_one(stream_bin, arch_args):
    torch.manual_seed(1)
    task, model, _ = build_task_and_model(stream_bin, *arch_args)
    model.eval()
    batch = _batch(task, "test", n=6)
    gen = _generator(task, model, beam=1)
    hyps = task.inference_step(gen, [model], batch)
    tgt = task.target_dictionary
    ds = task.dataset("test")
    with torch.no_grad():
        for i, sid in enumerate(batch["id"].tolist()):  # greedy, no cache, each sentence encoded on its own
            one = model.encoder(**_encoder_inputs(ds.collater([ds[sid]])["net_input"]))
            prev = torch.tensor([[tgt.eos()]])
            for _ in range(20):
                logits = model.decoder(prev, encoder_out=one)[0][0, -1]
                logits[tgt.pad()] = -float("inf")
                nxt = logits.argmax()
                prev = torch.cat([prev, nxt.view(1, 1)], dim=1)
                if nxt == tgt.eos():
                    break
            greedy = prev[0, 1:].tolist()
            if greedy[-1] != tgt.eos():  # the generator ends a hypothesis at max length with a forced EOS
                greedy.append(tgt.eos())
            assert greedy == hyps[i][0]["tokens"].tolist()
    # batched == one by one (beam 3), with padding changing from batch to batch
    gen3 = _generator(task, model, beam=3)
    batched = task.inference_step(gen3, [model], batch)
    for i, sid in enumerate(batch["id"].tolist()):
        single = task.inference_step(gen3, [model], ds.collater([ds[sid]]))
        assert single[0][0]["tokens"].tolist() == batched[i][0]["tokens"].tolist()
        torch.testing.assert_close(single[0][0]["score"], batched[i][0]["score"], atol=1e-4, rtol=1e-4)
