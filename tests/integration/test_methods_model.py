"""SLA, Syntax-BERT and the method registry inside the model: the masks the layers apply,
composition, one syntax context per forward, Syntax-BERT without its global sub-network in low
precision, decoding, what ``syntax-nmt-analyze attention`` shows of each method's records. What every method guarantees (identity setting, low precision, gradients,
batching, padding, recomputation): tests/integration/test_method_contract.py."""

from argparse import Namespace

import pytest
import torch

from conftest import assert_option_error, build_task_and_model
from syntax_nmt.models.modules import syntax_context
from syntax_nmt.models.modules.methods.sla import SyntaxLocalAttention
from syntax_nmt.models.modules.methods.syntax_bert import SyntaxBertAttention
from syntax_nmt.models.modules.methods.sgnet_layer import SGNetLayer
from syntax_nmt.models.modules.methods.sla_masks import sla_mask
from syntax_nmt.models.modules.methods.syntax_bert_masks import syntax_bert_masks
from syntax_nmt.syntax import tree as T_

ALL = ["--syntax-attention", "sgnet,sla,syntax_bert", "--sla-layers", "0", "--syntax-bert-layers", "1"]


def _batch(task, split="valid", n=8, left_pad=None):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def _enc_in(batch):
    return {k: v for k, v in batch["net_input"].items() if k != "prev_output_tokens"}


def _record_layers(model, cls):
    mods = [m for m in model.encoder.modules() if isinstance(m, cls)]
    for m in mods:
        m.record = True
    return mods


@pytest.mark.parametrize("left_pad", [True, False])
def test_sla_layers_apply_the_pure_functions_mask(stream_bin, left_pad):
    """The local distribution each SLA layer uses is zero exactly outside sla_mask(batch streams)."""
    pad_arg = [] if left_pad else ["--left-pad-source"]  # fairseq: the bare flag turns left padding off
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla", "--sla-threshold", 1,
                                          "--source-prepend-bos", *pad_arg)
    model.eval()
    batch = _batch(task, n=8)
    net = batch["net_input"]
    assert bool(net["src_tokens"][:, 0].eq(task.src_dict.pad()).any()) == left_pad
    mods = _record_layers(model, SyntaxLocalAttention)
    assert len(mods) == 2
    with torch.no_grad():
        model.encoder(**_enc_in(batch))
    ctx_ws = (net["src_streams"]["subword"].unsqueeze(-1) == model.encoder.word_start_ids).any(-1)
    special = model.encoder.special_positions(net["src_tokens"])
    expected = sla_mask(T_.word_tree(net["src_streams"]["head"], ctx_ws, special), 1)
    # the mask is asymmetric and non-trivial on this batch
    assert not torch.equal(expected, expected.transpose(1, 2)) or not expected.all()
    for m in mods:
        local = m.recorded["local"]  # B H T T
        assert torch.equal(local.gt(0).any(1), expected)
        torch.testing.assert_close(local.sum(-1), torch.ones_like(local.sum(-1)))
        g = m.recorded["gate"]
        assert g.shape == net["src_tokens"].shape and ((g > 0) & (g < 1)).all()


def test_word_start_comes_from_B_and_O_tags(stream_bin):
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla")
    d = task.stream_dicts["subword"]
    assert sorted(model.encoder.word_start_ids.tolist()) == sorted([d.index("B"), d.index("O")])


@pytest.mark.parametrize("sibling", [None, "disjoint"])
def test_syntax_bert_layers_apply_the_pure_functions_masks(stream_bin, monkeypatch, sibling):
    """Each sub-network's distribution is a distribution over exactly the keys of its mask (the
    global one: every non-pad key), and the topical weights cover the sub-networks with a key."""
    extra = [] if sibling is None else ["--syntax-bert-sibling", sibling]
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "syntax_bert",
                                          "--syntax-bert-max-distance", 2, "--source-prepend-bos", *extra)
    model.eval()
    batch = _batch(task, n=8)
    net = batch["net_input"]
    mods = _record_layers(model, SyntaxBertAttention)
    assert len(mods) == 2 and all(m.sibling == (sibling or "lca") for m in mods)
    seen = {}
    orig = SyntaxBertAttention.topical_weights

    def capture(self, p, x, valid):  # the per-sub-network distributions are the topical weights' input
        seen[self] = p.detach()
        return orig(self, p, x, valid)

    monkeypatch.setattr(SyntaxBertAttention, "topical_weights", capture)
    with torch.no_grad():
        model.encoder(**_enc_in(batch))
    ws = (net["src_streams"]["subword"].unsqueeze(-1) == model.encoder.word_start_ids).any(-1)
    special = model.encoder.special_positions(net["src_tokens"])
    pad = net["src_tokens"].eq(task.src_dict.pad())
    masks = syntax_bert_masks(T_.word_tree(net["src_streams"]["head"], ws, special), 2, sibling or "lca")
    M = 6 if sibling is None else 5  # the disjoint reading has no distance-1 sibling sub-network
    assert masks.shape[1] == M and masks.flatten(2).any(-1).any(0).all()  # no sub-network is empty
    for m in mods:
        p = seen[m]  # B M+1 H T T
        assert p.shape[1] == M + 1
        valid = m.recorded["valid"]  # B M+1 T: sub-network j has an allowed key for token i
        assert torch.equal(valid[:, :M], masks.any(-1))
        assert valid[:, M].all()  # the global sub-network
        rows = valid.unsqueeze(2).expand_as(p[..., 0])  # B M+1 H T
        allowed = torch.cat([masks, ~pad.view(-1, 1, 1, pad.shape[1]).expand_as(masks[:, :1])], dim=1)
        allowed = allowed.unsqueeze(2).expand_as(p)
        # zero exactly outside the mask (rows with at least one key), summing to 1
        assert (p[rows][~allowed[rows]] == 0).all()
        assert (p[rows][allowed[rows]] > 0).all()
        torch.testing.assert_close(p[rows].sum(-1), torch.ones_like(p[rows].sum(-1)))
        w = m.recorded["topical"]
        torch.testing.assert_close(w.sum(1), torch.ones_like(w.sum(1)))
        assert (w[~valid] == 0).all() and (w[valid] > 0).all()


def test_syntax_bert_masks_reach_the_attention(stream_bin, monkeypatch):
    """Replacing the sub-network masks changes the output (the masks are used, not just computed)."""
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "syntax_bert", "--dropout", 0)
    model.eval()
    batch = _batch(task)
    with torch.no_grad():
        a = model.encoder(**_enc_in(batch))["encoder_out"][0]
    orig = syntax_bert_masks
    import syntax_nmt.models.modules.methods.syntax_bert as sbmod

    # (a transpose would only swap the parent and child sub-networks: topical attention is
    # invariant to the order of its sub-networks)
    monkeypatch.setattr(sbmod, "syntax_bert_masks", lambda tree, d, sib: orig(tree, d, sib).roll(1, dims=3))
    with torch.no_grad():
        b = model.encoder(**_enc_in(batch))["encoder_out"][0]
    assert (a - b).abs().max() > 1e-4


def test_tree_is_built_once_per_forward_for_every_method(stream_bin, monkeypatch):
    task, model, _ = build_task_and_model(stream_bin, *ALL, "--encoder-layers", 3, "--sla-layers", "0,2")
    model.eval()
    calls = []
    orig = syntax_context.word_tree
    monkeypatch.setattr(syntax_context, "word_tree", lambda *a: calls.append(1) or orig(*a))
    batch = _batch(task)
    with torch.no_grad():
        model(**batch["net_input"])
    assert len(calls) == 1


@pytest.mark.parametrize("extra,message", [
    (["--syntax-attention", "sla,syntax_bert"], r"sla and syntax_bert both replace .* layers \[0, 1\]"),
    (["--syntax-attention", "sla", "--sla-layers", "5"], "--sla-layers: layer 5 does not exist"),
    (["--syntax-attention", "sgnet,nope"], "unknown --syntax-attention method 'nope'"),
    (["--syntax-attention", "syntax_bert", "--syntax-bert-max-distance", "0", "--no-syntax-bert-global"],
     "leaves no sub-network"),
])
def test_method_option_errors_are_clear(stream_bin, extra, message, capsys, monkeypatch):
    """On fairseq's command line (parse_args_and_arch) a usage error, one line with exit status 2;
    a model built in Python (the parser's hook off) raises ValueError with the same message."""
    assert_option_error(stream_bin, extra, message, capsys, monkeypatch)


def test_composition_places_each_method_where_asked(stream_bin):
    _, model, _ = build_task_and_model(stream_bin, *ALL)
    enc = model.encoder
    assert isinstance(enc.layers[0].self_attn, SyntaxLocalAttention)
    assert isinstance(enc.layers[1].self_attn, SyntaxBertAttention)
    assert isinstance(enc.syntax_modules["sgnet"], SGNetLayer)
    assert enc.required_streams == ["pos", "case", "subword", "head"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_no_nan_without_the_global_sub_network(stream_bin, dtype):
    """Tokens with no key in any Syntax-BERT mask (EOS, pads, one-word lines) get a zero attention output, no
    NaN (each method with its default options: tests/integration/test_method_contract.py)."""
    task, model, _ = build_task_and_model(stream_bin, *ALL, "--no-syntax-bert-global")
    model.eval()
    model.to(dtype)
    net = _batch(task, n=12)["net_input"]
    out = model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])["encoder_out"][0]
    assert out.dtype == dtype and torch.isfinite(out.float()).all()
    logits = model(**net)[0]
    assert torch.isfinite(logits.float()).all()


def test_batched_generation_equals_one_by_one(stream_bin):
    torch.manual_seed(1)
    task, model, _ = build_task_and_model(stream_bin, *ALL)
    model.eval()
    batch = _batch(task, "test", n=6)
    gen = task.build_generator([model], Namespace(beam=3, max_len_b=20, max_len_a=0, min_len=1))
    batched = task.inference_step(gen, [model], batch)
    ds = task.dataset("test")
    for i, sid in enumerate(batch["id"].tolist()):
        single = task.inference_step(gen, [model], ds.collater([ds[sid]]))
        assert single[0][0]["tokens"].tolist() == batched[i][0]["tokens"].tolist()
        torch.testing.assert_close(single[0][0]["score"], batched[i][0]["score"], atol=1e-4, rtol=1e-4)


def test_sgnet_special_positions_keep_the_encoder_output(stream_bin):
    """Footnote 11: at EOS/BOS/pad the aggregation keeps H; words get alpha H + (1 - alpha) H'."""
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--source-features", "")
    model.eval()
    batch = _batch(task)
    layer = model.encoder.syntax_modules["sgnet"]
    captured = {}
    layer.register_forward_pre_hook(lambda mod, args: captured.update(x=args[0]))
    with torch.no_grad():
        out = model.encoder(**_enc_in(batch))["encoder_out"][0]
    special = model.encoder.special_positions(batch["net_input"]["src_tokens"]).t()
    x = captured["x"]
    assert torch.equal(out[special], x[special])
    assert (out[~special] - x[~special]).abs().max() > 1e-3
    layer.keep_specials.fill_(False)  # the old behaviour
    with torch.no_grad():
        old = model.encoder(**_enc_in(batch))["encoder_out"][0]
    assert (old[special] - x[special]).abs().max() > 1e-3
    assert torch.equal(old[~special], out[~special])


def test_pre_registry_sgnet_checkpoint_state_is_upgraded(stream_bin):
    """A state dict with SG-Net at encoder.syntax_layer (before the registry) loads into the new
    layout and keeps aggregating special tokens, as it was trained."""
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    state = {k.replace("encoder.syntax_modules.sgnet.", "encoder.syntax_layer."): v
             for k, v in model.state_dict().items() if not k.endswith("keep_specials")}
    assert any(k.startswith("encoder.syntax_layer.") for k in state)
    _, fresh, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    fresh.load_state_dict(state)  # fairseq's load_state_dict upgrades first
    assert not bool(fresh.encoder.syntax_modules["sgnet"].keep_specials)
    for k, v in model.state_dict().items():
        if not k.endswith("keep_specials"):
            assert torch.equal(fresh.state_dict()[k], v), k


def test_sgnet_checkpoint_activations_gives_identical_gradients(stream_bin):
    """Recomputing the SG-Net layer in the backward pass (dropout on) changes no gradient."""
    grads = []
    for extra in ([], ["--sgnet-checkpoint-activations"]):
        torch.manual_seed(3)
        task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--sgnet-learn-alpha",
                                              "--dropout", 0.3, *extra)
        assert model.encoder.syntax_modules["sgnet"].checkpoint == bool(extra)
        model.train()
        batch = _batch(task)
        torch.manual_seed(4)
        model(**batch["net_input"])[0].sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], atol=1e-6, rtol=1e-5, msg=n)
    layer_grads = [n for n in grads[0] if ".syntax_modules.sgnet.layer." in n]
    assert layer_grads and all(grads[1][n].abs().sum() > 0 for n in layer_grads)


def test_attention_analysis_shows_what_each_method_records(stream_bin):
    """``syntax-nmt-analyze attention``'s encoder maps are what each module records for the sentence (attention as
    a mean over heads), under the names, titles and figure order its ``analysis_maps`` gives."""
    from syntax_nmt.analyze import attention, models

    task, model, cfg = build_task_and_model(stream_bin, "--syntax-attention", "sgnet,sla,syntax_bert,lisa",
                                            "--encoder-layers", 3, "--sla-layers", "0", "--syntax-bert-layers", "1", "--lisa-layer", "2",
                                            "--syntax-bert-max-distance", 1)
    model.eval()
    task.load_dataset("valid")
    ds = task.dataset("valid")
    smp = ds.collater([ds[3]])
    shown, skipped = attention.encoder_maps(models.Loaded("all", "-", model, task, cfg), smp)
    assert skipped == []
    assert [(e["kind"], e["layer"], e["title"], e["module"]) for e in shown] == [
        ("sla", 0, "SLA", "encoder.layers.0.self_attn"),
        ("syntax_bert", 1, "Syntax-BERT", "encoder.layers.1.self_attn"),
        ("lisa", 2, "LISA", "encoder.layers.2.self_attn"),
        ("sgnet", None, "SG-Net", "encoder.syntax_modules.sgnet")]
    sla, sb, lisa, sg = shown
    recorded = {m.record_kind: m.recorded for m in model.encoder.modules() if getattr(m, "recorded", None)}

    def same(got, want):
        torch.testing.assert_close(torch.as_tensor(got), want.float() if want.is_floating_point() else want)

    assert sla["maps"] == {"local": {"title": "local attention S_loc (eq. 4)"},
                           "global": {"title": "global attention S_glb"}}
    assert sla["vectors"] == {"gate": {"title": "gate g (local weight)"}} and sla["masks"] == {}
    for key in ("local", "global"):
        same(sla[key], recorded["sla"][key][0].mean(0))
    same(sla["gate"], recorded["sla"]["gate"][0])
    assert sg["masks"] == {"mask": {"title": "SDOI mask (row: token, black: keys it may attend)"}}
    assert sg["maps"] == {"attn": {"title": "syntax-guided self-attention", "within": "mask"}} and sg["vectors"] == {}
    same(sg["mask"], recorded["sgnet"]["mask"][0])
    same(sg["attn"], recorded["sgnet"]["attn"][0].mean(0))
    names = ["parent d=1", "child d=1", "sibling d=1", "global"]
    assert sb["maps"] == {"attn": {"title": "attention (sub-networks mixed by topical attention)"},
                          "topical": {"title": "topical weight of each sub-network (eq. 2)", "columns": names,
                                      "within": "valid"}}
    assert sb["masks"] == {"valid": {"title": "sub-networks in which the token has a key", "columns": names}}
    same(sb["attn"], recorded["syntax_bert"]["attn"][0].mean(0))
    same(sb["topical"], recorded["syntax_bert"]["topical"][0].t())
    same(sb["valid"], recorded["syntax_bert"]["valid"][0].t())
    # LISA: its parse head's distribution (one head, not a mean) against the parents of the word tree
    assert lisa["masks"] == {"parents": {"title": "parse: each token's parent (the head's training target)"}}
    assert lisa["maps"] == {"parse_head": {"title": "parse head 0", "within": "parents"}} and lisa["vectors"] == {}
    same(lisa["parse_head"], recorded["lisa"]["parse_head"][0])
    same(lisa["parents"], recorded["lisa"]["parents"][0])
    # the recorded attention is the one the layer applies: what it returns as its weights (mean over heads)
    layer = model.encoder.layers[1].self_attn
    seen = {}
    hook = layer.register_forward_hook(lambda m, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    with torch.no_grad():
        out = model.encoder(**_enc_in(smp))
    hook.remove()
    q, pad = seen["query"], seen["key_padding_mask"]
    with model.encoder.bound_context.bound(out["syntax"]), torch.no_grad():
        _, weights = layer(q, q, q, key_padding_mask=pad, need_weights=True)
    same(sb["attn"], weights[0])
    # LISA's parents are the loss's target: the parent subword of each token in the batch's word tree
    from syntax_nmt.models.modules.methods.lisa_masks import lisa_parents

    parents = lisa_parents(out["syntax"].tree)[0]
    same(lisa["parents"], torch.nn.functional.one_hot(parents, parents.numel()).bool())
