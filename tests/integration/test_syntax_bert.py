"""Syntax-BERT's attention layer (Bai et al. 2021, sec. 3.3, eq. 1-2) against the slow naive reference
``naive_syntax_bert`` (tests/support/naive.py), which materialises every sub-network output ``H_j`` with plain
loops from the naive masks, on random forests with several roots, multi-piece words, left/right padding and
BOS; and tokens with no sub-network get a zero output whatever the biases.
"""

import math
import random

import pytest
import torch

from conftest import USER_DIR, analyze_in_memory, build_task_and_model, run_cli
from support.naive import NaiveRow, _random_sentence, make_batch, make_row, naive_syntax_bert
import syntax_nmt.models.modules.methods.syntax_bert as sbmod
from syntax_nmt.models.modules.methods.syntax_bert import SyntaxBertAttention
from syntax_nmt.models.modules.syntax_context import SyntaxContext, SyntaxState

C, H = 8, 2


@pytest.fixture(autouse=True)
def kernels_at_every_length(monkeypatch):
    """The sentences here are short: on a CPU they would take the explicit path (``explicit_cpu_max_length``);
    these tests check the fused and sparse kernels, so those run at every length (but in the test of the choice)."""
    monkeypatch.setattr(SyntaxBertAttention, "explicit_cpu_max_length", 0)


def _rows(rng, n=4):
    """Padded rows (heads, word_start, special) and the key padding mask: left- and right-padded
    rows, BOS in half of the batches, at least one one-word sentence."""
    sents = [_random_sentence(rng) for _ in range(n)]
    sents[0] = ([0, -1], [True, False])  # a one-word line in two pieces: no sub-network without the global one
    bos = rng.random() < 0.5
    length = max(len(h) for h, _ in sents) + 1 + int(bos) + 2
    rows, pads = [], []
    for k, (h, w) in enumerate(sents):
        left = k % 2 == 0
        row = make_row(h, w, length, left_pad=left, bos=bos)[:3]
        npad = length - len(h) - 1 - int(bos)
        rows.append(row)
        pads.append([i < npad for i in range(length)] if left else [i >= length - npad for i in range(length)])
    return rows, torch.tensor(pads)


def _module(max_distance, global_subnet, mask_mode, sibling, seed):
    torch.manual_seed(seed)
    state = SyntaxState()
    mod = SyntaxBertAttention(C, H, 0.0, state, max_distance=max_distance, global_subnet=global_subnet,
                              mask_mode=mask_mode, sibling=sibling)
    with torch.no_grad():  # every parameter non-trivial, biases included
        for p in mod.parameters():
            p.normal_(0, 0.6)
        mod.q_task.normal_(0, 3.0)  # topical weights far from uniform
    mod.eval()
    return mod, state


def _spy_fused(monkeypatch):
    """Record the calls of SyntaxBertAttention.fused_attention that compute (do not fall back)."""
    calls = []
    fused = SyntaxBertAttention.fused_attention

    def spy(self, *a):
        out = fused(self, *a)
        if out is not None:
            calls.append(1)
        return out

    monkeypatch.setattr(SyntaxBertAttention, "fused_attention", spy)
    return calls


@pytest.mark.parametrize("need_weights", [True, False])  # False: the fused path (exclude mode)
@pytest.mark.parametrize("mask_mode,global_subnet,sibling", [
    ("exclude", True, "lca"), ("exclude", False, "lca"), ("exclude", False, "disjoint"),
    ("exclude", True, "disjoint"), ("product", True, "lca"), ("product", False, "disjoint"),
])
def test_attention_is_eq_1_2_computed_the_slow_way(mask_mode, global_subnet, sibling, need_weights, monkeypatch):
    fused = _spy_fused(monkeypatch)
    rng = random.Random(40)
    for trial in range(4):
        rows, pad = _rows(rng)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(3, global_subnet, mask_mode, sibling, seed=trial)
        state.ctx = SyntaxContext(h, w, s, pad)
        x = torch.randn(T, B, C)
        with torch.no_grad():
            got, _ = mod(x, x, x, key_padding_mask=pad, need_weights=need_weights)
        assert len(fused) == (trial + 1) * (not need_weights and mask_mode == "exclude")
        exp = naive_syntax_bert(mod, x, rows, pad, 3, global_subnet, mask_mode, sibling)
        torch.testing.assert_close(got.double(), exp, atol=2e-5, rtol=1e-5)
        assert exp.abs().max() > 0.5  # the reference is not trivially zero


@pytest.mark.parametrize("need_weights", [True, False])
def test_tokens_without_sub_network_get_exactly_zero_whatever_the_biases(need_weights):
    """README: with --no-syntax-bert-global, EOS, BOS, pad and the word of a one-word line get a zero
    attention output, also once the output bias ``b^O`` (and every other bias) is non-zero."""
    rng = random.Random(41)
    for trial in range(4):
        rows, pad = _rows(rng)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(3, False, "exclude", "lca", seed=10 + trial)
        assert mod.out_proj.bias.abs().min() > 0 and mod.v_proj.bias.abs().min() > 0
        state.ctx = SyntaxContext(h, w, s, pad)
        x = torch.randn(T, B, C)
        with torch.no_grad():
            got, _ = mod(x, x, x, key_padding_mask=pad, need_weights=need_weights)
        # tokens with no allowed key in any mask, by the naive reference
        none = torch.tensor([[not any(any(M[i]) for M in NaiveRow(*row).syntax_bert(3)) for i in range(T)]
                             for row in rows])  # B T
        assert none[0].all()  # the one-word line: its two pieces and its specials
        assert (none | ~s).all()  # every special token
        got = got.transpose(0, 1)  # B T C
        assert torch.equal(got[none], torch.zeros(int(none.sum()), C))
        assert (got[~none].abs().sum(-1) > 1e-3).all()


@pytest.mark.e2e
def test_checkpoints_keep_their_sibling_reading(stream_bin, tmp_path, monkeypatch):
    """A new training records --syntax-bert-sibling lca (the paper); a checkpoint saved before the
    option existed (no such key in its args) loads with the disjoint reading it was trained with
    and computes what it computed then: the old layout's always-empty distance-1 sibling
    sub-network took no part in the topical softmax ("exclude" mode)."""
    from fairseq import checkpoint_utils

    import syntax_nmt.checkpoint_compat  # noqa: F401
    import syntax_nmt.models.modules.methods.syntax_bert as sbmod
    from syntax_nmt.models.modules.methods.syntax_bert_masks import syntax_bert_masks

    run_cli("fairseq-train", stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
            "--arch", "syntax_transformer_tiny", "--syntax-attention", "syntax_bert", "--source-features", "",
            "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1500", "--max-update", "1",
            "--no-epoch-checkpoints", "--no-progress-bar", "--disable-validation", "--save-dir", tmp_path / "new")
    path = str(tmp_path / "new" / "checkpoint_last.pt")
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path])
    assert cfg.model.syntax_bert_sibling == "lca"
    layers = [m for m in models[0].encoder.modules() if isinstance(m, SyntaxBertAttention)]
    assert len(layers) == 2 and all(m.sibling == "lca" and m.num_masks == 9 for m in layers)

    old = torch.load(path, map_location="cpu")
    del old["cfg"]["model"].syntax_bert_sibling  # as written before the option existed
    old_path = str(tmp_path / "old.pt")
    torch.save(old, old_path)
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([old_path])
    model = models[0].eval()
    layers = [m for m in model.encoder.modules() if isinstance(m, SyntaxBertAttention)]
    assert all(m.sibling == "disjoint" and m.num_masks == 8 for m in layers)

    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(8)])["net_input"]
    enc_in = {k: v for k, v in net.items() if k != "prev_output_tokens"}
    with torch.no_grad():
        now = model.encoder(**enc_in)["encoder_out"][0]

    def old_layout(tree, D, sibling):  # the code before the option: an all-False sibling mask at d = 1
        m = syntax_bert_masks(tree, D, sibling)
        return torch.cat([m[:, :2 * D], torch.zeros_like(m[:, :1]), m[:, 2 * D:]], dim=1)

    monkeypatch.setattr(sbmod, "syntax_bert_masks", old_layout)
    for m in layers:
        m.num_masks = 9
    with torch.no_grad():
        then = model.encoder(**enc_in)["encoder_out"][0]
    torch.testing.assert_close(now, then, atol=1e-6, rtol=1e-6)
    # and the reading matters: the paper's masks give another output
    monkeypatch.setattr(sbmod, "syntax_bert_masks", syntax_bert_masks)
    for m in layers:
        m.sibling, m.num_masks = "lca", 9
    with torch.no_grad():
        paper = model.encoder(**enc_in)["encoder_out"][0]
    assert (paper - now).abs().max() > 1e-4


def test_analyze_attention_shows_syntax_bert(stream_bin, monkeypatch):
    """``syntax-nmt-analyze attention`` shows what Syntax-BERT records, per layer: the layer's attention (rows
    are distributions over the keys) and the topical weights of the sub-networks, named and ordered as the
    naive reference's masks, non-zero only in the sub-networks in which the token has a key."""
    from syntax_nmt.analyze import attention, common

    D = 2
    task, model, cfg = build_task_and_model(stream_bin, "--syntax-attention", "syntax_bert",
                                            "--syntax-bert-max-distance", D)
    analyze_in_memory(monkeypatch, task, model, cfg)
    sid = 2
    result = attention.analyze([("sb", "sb.pt")], stream_bin, sid, "valid", reference=True)
    system = result["systems"][0]
    entries = system["encoder"]
    assert [(e["kind"], e["layer"], e["title"]) for e in entries] == [
        ("syntax_bert", k, "Syntax-BERT") for k in range(len(model.encoder.layers))]
    assert system["not_shown"] == []
    names = ["parent d=1", "parent d=2", "child d=1", "child d=2", "sibling d=1", "sibling d=2", "global"]
    ds = task.dataset("valid")
    ctx = model.encoder(**{k: v for k, v in ds.collater([ds[sid]])["net_input"].items()
                          if k != "prev_output_tokens"})["syntax"]
    row = NaiveRow(ctx.heads[0].tolist(), ctx.word_start[0].tolist(), ctx.special[0].tolist())
    has_key = [[any(r) for r in grid] for grid in row.syntax_bert(D)] + [[True] * row.T]  # M x T
    expected_valid = torch.tensor(has_key).t()  # T x M
    assert len(result["source"]) == row.T and expected_valid[:, :-1].any()
    for e in entries:
        assert e["maps"]["topical"] == {"title": "topical weight of each sub-network (eq. 2)", "columns": names,
                                        "within": "valid"}
        assert e["masks"]["valid"]["columns"] == names
        valid, topical, attn = (torch.tensor(e[k]) for k in ("valid", "topical", "attn"))
        assert torch.equal(valid, expected_valid)
        torch.testing.assert_close(topical.sum(1), torch.ones(row.T))
        assert topical[~valid].abs().max() == 0 and (topical[valid] > 0).all()
        assert attn.shape == (row.T, row.T)
        torch.testing.assert_close(attn.sum(1), torch.ones(row.T))
    md = attention.markdown(result)
    assert "## sb: Syntax-BERT, layer 0 (encoder.layers.0.self_attn)" in md
    assert "| token | valid | attn argmax | topical argmax | topical weight outside valid |" in md
    assert f"| {result['source'][-1]} | global | " in md  # EOS: no key in any syntax mask
    figs = attention.plots(result, layer=0)
    assert list(figs) == [f"attention-{sid}-cross", f"attention-{sid}-sb-syntax_bert"]
    assert "layer 0" in figs[f"attention-{sid}-sb-syntax_bert"].get_suptitle()
    common.pyplot().close("all")


# -- the fused path against the implementation before it -------------------------------------------
def _reference_probabilities(self, scores, x, ctx, key_padding_mask):
    """``SyntaxBertAttention.probabilities`` + ``topical_weights`` before the fused path, kept verbatim as the
    reference: one batched softmax over ``(B, M, H, T, T)``, the mixed distribution."""
    from syntax_nmt.models.modules.methods.mixed_attention import key_padding_additive

    B, H, T, _ = scores.shape
    pad = key_padding_additive(key_padding_mask, B, T, scores.device).unsqueeze(1)
    s = scores.unsqueeze(1)
    if self.num_masks > 0:
        masks = self.subnet_masks(ctx)
        if self.mask_mode == "exclude":
            add = ctx.additive(self._key(), lambda: self.subnet_masks(ctx))
            logits = s + add.unsqueeze(2)
            valid = masks.any(-1)
        else:
            logits = s * masks.unsqueeze(2).to(s.dtype) + pad
            valid = torch.ones(masks.shape[:3], dtype=torch.bool, device=masks.device)
        if self.global_subnet:
            logits = torch.cat([logits, (s + pad).expand(B, 1, H, T, T)], dim=1)
            valid = torch.cat([valid, torch.ones(B, 1, T, dtype=torch.bool, device=valid.device)], dim=1)
    else:
        logits = s + pad
        valid = torch.ones(B, 1, T, dtype=torch.bool, device=scores.device)
    p = torch.softmax(logits, dim=-1)
    # topical_weights
    Cd, hd = self.embed_dim, self.head_dim
    u = self.topic_key.weight.t().float() @ self.q_task.float()
    r = (self.out_proj.weight.t().float() @ u).view(H, hd)
    v = self.v_proj(x).float().view(T, B, H, hd)
    e = torch.einsum("tbhd,hd->bht", v, r)
    tl = torch.einsum("bmhik,bhk->bmi", p, e) / math.sqrt(Cd)
    tl = tl.masked_fill(~valid, torch.finfo(torch.float32).min / 2)
    weights = torch.softmax(tl, dim=1) * valid.any(dim=1, keepdim=True)
    return torch.einsum("bmhik,bmi->bhik", p, weights)


def _forward_backward(mod, state, h, w, s, pad, x0, probe):
    """Train-mode forward (no dropout) and backward of ``(out * probe).sum()``: output and gradients."""
    mod.train()
    mod.zero_grad(set_to_none=True)
    dev = x0.device
    state.ctx = SyntaxContext(h.to(dev), w.to(dev), s.to(dev), pad.to(dev))
    pad = pad.to(dev)
    x = x0.clone().requires_grad_()
    out, _ = mod(x, x, x, key_padding_mask=pad, need_weights=False)
    (out.float() * probe).sum().backward()
    grads = {n: p.grad.clone() for n, p in mod.named_parameters()}
    grads["x"] = x.grad.clone()
    return out.detach(), grads


@pytest.mark.parametrize("global_subnet", [True, False])
@pytest.mark.parametrize("sibling", ["lca", "disjoint"])
@pytest.mark.parametrize("max_distance", [1, 3])
def test_fused_equals_the_implementation_before_it_outputs_and_gradients(global_subnet, sibling, max_distance,
                                                                          monkeypatch):
    rng = random.Random(50)
    fused = _spy_fused(monkeypatch)
    for trial in range(3):
        rows, pad = _rows(rng, n=5)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(max_distance, global_subnet, "exclude", sibling, seed=20 + trial)
        x0 = torch.randn(T, B, C)
        probe = torch.randn(T, B, C)
        got, g_got = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        assert len(fused) == trial + 1
        with monkeypatch.context() as m:
            m.setattr(SyntaxBertAttention, "fused_attention", lambda self, *a: None)
            m.setattr(SyntaxBertAttention, "probabilities", _reference_probabilities)
            exp, g_exp = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        assert len(fused) == trial + 1
        assert exp.abs().max() > 0.5
        torch.testing.assert_close(got, exp, atol=1e-5, rtol=1e-5)
        assert g_got.keys() == g_exp.keys()
        # the key bias adds q_i . b_k to every score of row i: no softmax sees it, its gradient is 0 up to the
        # rounding of sums of terms as large as k_proj.weight's gradient
        zero_scale = 1e-5 * g_exp["k_proj.weight"].abs().max().item()
        assert g_exp.pop("k_proj.bias").abs().max() <= zero_scale and g_got.pop("k_proj.bias").abs().max() <= zero_scale
        module_scale = max(g.abs().max().item() for g in g_exp.values())
        for n in g_exp:
            assert g_exp[n].abs().max() > 0, n
            # sums over tokens in another order: equal to 1e-5 of the gradient's scale (k_proj.weight, scale 39,
            # differed by 4.4e-5 in one case; elementwise rtol would trip on its small entries), at least a tenth
            # of the module's largest: topic_key's gradient sums terms that large and cancels to 0.1 or less
            # (1.2e-5 off at scale 0.05 once some sub-networks took the sparse path)
            scale = max(1.0, g_exp[n].abs().max().item(), module_scale / 10)
            assert (g_got[n] - g_exp[n]).abs().max().item() <= 1e-5 * scale, n


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("global_subnet", [True, False])
@pytest.mark.parametrize("every_mask", [False, True])  # True: every mask through the sparse path
def test_fused_is_finite_in_low_precision(dtype, global_subnet, device, every_mask, monkeypatch):
    """fp16/bf16: finite outputs and gradients, close to float32, exactly zero where no sub-network exists
    (rows with no allowed key never turn into NaN; on CUDA the fused kernels differ from the CPU one)."""
    if every_mask:
        monkeypatch.setattr(sbmod, "sparse_edges_limit", lambda T: float("inf"))
    rng = random.Random(51)
    fused = _spy_fused(monkeypatch)
    for trial in range(3):
        rows, pad = _rows(rng)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(3, global_subnet, "exclude", "lca", seed=30 + trial)
        x0 = torch.randn(T, B, C)
        probe = torch.randn(T, B, C)
        ref, _ = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        mod.to(device, dtype)
        got, grads = _forward_backward(mod, state, h, w, s, pad, x0.to(device, dtype), probe.to(device, dtype))
        got, ref = got.cpu(), ref.cpu()
        assert len(fused) == 2 * (trial + 1)
        assert got.dtype == dtype and torch.isfinite(got).all()
        assert all(torch.isfinite(g).all() for g in grads.values())
        torch.testing.assert_close(got.float(), ref, atol=0.05 * ref.abs().max().item(), rtol=0.05)
        if not global_subnet:
            none = ~mod.has_subnetwork(state.ctx).t().cpu()  # T B
            assert none.any() and (got[none] == 0).all()


# -- the sparse path: sub-networks whose rows hold few keys, from those keys alone ------------------


def _spy_sparse(monkeypatch):
    """The kinds of plan (empty, gather, edges) of the sub-networks computed by sparse_attention."""
    widths = []
    sparse = sbmod.sparse_attention

    def spy(q, k, v, plan):
        widths.append(plan[0])
        return sparse(q, k, v, plan)

    monkeypatch.setattr(sbmod, "sparse_attention", spy)
    return widths


def _rows_of(rng, kind, n=5):
    """``_rows`` with, by ``kind``: ``mixed``, random multi-piece sentences; ``single``, every word one piece (the
    child masks are gathers); ``short``, lines of at most two words (the masks at d >= 2 are empty)."""
    if kind == "mixed":
        return _rows(rng, n)
    sents = []
    for _ in range(n):
        if kind == "single":
            h, _ = _random_sentence(rng)
            sents.append((h, [True] * len(h)))
        else:
            sents.append(rng.choice([([0, -1], [True, True]), ([1, 0], [True, True]), ([0, 0, -2], [True, False, True]),
                                     ([0], [True])]))
    bos = rng.random() < 0.5
    length = max(len(h) for h, _ in sents) + 1 + int(bos) + 2
    rows, pads = [], []
    for k, (h, w) in enumerate(sents):
        left = k % 2 == 0
        rows.append(make_row(h, w, length, left_pad=left, bos=bos)[:3])
        npad = length - len(h) - 1 - int(bos)
        pads.append([i < npad for i in range(length)] if left else [i >= length - npad for i in range(length)])
    return rows, torch.tensor(pads)


def _dense(monkeypatch):
    """The fused path before the sparse one: every sub-network through the fused attention over every key."""
    monkeypatch.setattr(SyntaxBertAttention, "subnet_keys", lambda self, ctx: [None] * self.num_masks)


def _assert_same(got, g_got, exp, g_exp):
    """Outputs to 1e-5, gradients to 1e-5 of their scale (every parameter has one: none is left out of the graph)."""
    torch.testing.assert_close(got, exp, atol=1e-5, rtol=1e-5)
    assert g_got.keys() == g_exp.keys()
    zero_scale = 1e-5 * max(1.0, g_exp["k_proj.weight"].abs().max().item())  # see the test above
    assert g_exp.pop("k_proj.bias").abs().max() <= zero_scale and g_got.pop("k_proj.bias").abs().max() <= zero_scale
    assert g_exp["v_proj.weight"].abs().max() > 0.1
    # the topical gradients (q_task, topic_key) are sums of terms as large as the projections' gradients that
    # cancel to 0.1 or less: 1e-5 of a gradient's own scale, at least a tenth of the module's largest
    # (the dense fused path differs from the explicit one by 1.3e-5 on a topic_key gradient of scale 0.12)
    module_scale = max(g.abs().max().item() for g in g_exp.values())
    for n in g_exp:
        scale = max(1.0, g_exp[n].abs().max().item(), module_scale / 10)
        assert (g_got[n] - g_exp[n]).abs().max().item() <= 1e-5 * scale, n


@pytest.mark.parametrize("every_mask", [False, True])  # True: every mask sparse, however many keys its rows hold
@pytest.mark.parametrize("global_subnet", [True, False])
@pytest.mark.parametrize("sibling", ["lca", "disjoint"])
@pytest.mark.parametrize("max_distance", [1, 3])
def test_sparse_equals_the_dense_fused_path_and_the_implementation_before_it(global_subnet, sibling, max_distance,
                                                                             every_mask, monkeypatch):
    """fp32 outputs to 1e-5 and gradients to 1e-5 of their scale, against the fused path before the sparse one
    (every mask through scaled_dot_product_attention) and the explicit implementation before the fused path; on random
    forests with several roots, multi-piece words, left and right padding, BOS; empty masks, gathers (at most
    one key per row) and edge lists (rows with several keys, e.g. the pieces of a multi-piece ancestor)."""
    if every_mask:
        monkeypatch.setattr(sbmod, "sparse_edges_limit", lambda T: float("inf"))
    rng = random.Random(60)
    widths = _spy_sparse(monkeypatch)
    fused = _spy_fused(monkeypatch)
    for trial, kind in enumerate(["single", "mixed", "short", "mixed", "single", "mixed"]):
        rows, pad = _rows_of(rng, kind)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(max_distance, global_subnet, "exclude", sibling, seed=40 + trial)
        x0 = torch.randn(T, B, C)
        probe = torch.randn(T, B, C)
        seen = len(widths)
        got, g_got = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        assert len(widths) - seen == (mod.num_masks if every_mask else len(widths) - seen)
        with monkeypatch.context() as m:
            _dense(m)
            dense, g_dense = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        with monkeypatch.context() as m:
            m.setattr(SyntaxBertAttention, "fused_attention", lambda self, *a: None)
            m.setattr(SyntaxBertAttention, "probabilities", _reference_probabilities)
            before, g_before = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        assert len(fused) == 2 * (trial + 1)
        assert before.abs().max() > 0.5
        _assert_same(got, dict(g_got), dense, g_dense)
        _assert_same(got, g_got, before, g_before)
    assert "gather" in widths and (max_distance == 1 or "empty" in widths)
    assert "edges" in widths


@pytest.mark.parametrize("global_subnet", [True, False])
def test_sparse_is_eq_1_2_computed_the_slow_way(global_subnet, monkeypatch):
    monkeypatch.setattr(sbmod, "sparse_edges_limit", lambda T: float("inf"))
    widths = _spy_sparse(monkeypatch)
    rng = random.Random(61)
    for trial, kind in enumerate(["mixed", "single", "mixed"]):
        rows, pad = _rows_of(rng, kind, n=4)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(3, global_subnet, "exclude", "lca", seed=50 + trial)
        state.ctx = SyntaxContext(h, w, s, pad)
        x = torch.randn(T, B, C)
        with torch.no_grad():
            got, _ = mod(x, x, x, key_padding_mask=pad, need_weights=False)
        exp = naive_syntax_bert(mod, x, rows, pad, 3, global_subnet, "exclude", "lca")
        torch.testing.assert_close(got.double(), exp, atol=2e-5, rtol=1e-5)
        assert exp.abs().max() > 0.5
    assert {"gather", "edges"} <= set(widths)


def test_child_masks_are_gathers_when_ancestor_words_are_one_piece():
    """Under the default choice, at the lengths of real batches: every child mask (the key is the query's
    ancestor at distance d) has at most one key per row when words are one piece, so it is a gather, at that
    key."""
    from syntax_nmt.bench.length import random_parse

    nprng = __import__("numpy").random.default_rng(0)
    T, B, D = 128, 4, 3
    rows = []
    for _ in range(B):
        parents = random_parse(T - 1, nprng)
        heads = [0 if p < 0 else int(p) - i for i, p in enumerate(parents)]
        rows.append(make_row(heads, [True] * (T - 1), T, left_pad=False)[:3])
    h, w, s = make_batch(rows)
    mod, state = _module(D, True, "exclude", "lca", seed=0)
    ctx = SyntaxContext(h, w, s, s)
    plan = mod.subnet_keys(ctx)
    masks = mod.subnet_masks(ctx)
    for j in range(D, 2 * D):
        assert plan[j] is not None and plan[j][0] == "gather"
        key = plan[j][1].view(T, B).t()  # B T, flat t * B + b
        has = masks[:, j].any(-1)
        ancestor = masks[:, j].float().argmax(-1)  # the one allowed key
        assert torch.equal((key // B)[has], ancestor[has])
        assert torch.equal(key % B, torch.arange(B).view(B, 1).expand(B, T))
    assert any(p is not None and p[0] == "edges" for p in plan[:D])  # a parent mask: the children of a word


@pytest.mark.parametrize("limit,kernels", [(None, False), (0, True)])
def test_short_batches_take_the_explicit_path_on_a_cpu(limit, kernels, monkeypatch):
    """Up to ``explicit_cpu_max_length`` tokens (the default) a CPU batch takes the explicit path; above it, the
    fused and sparse kernels; the same output either way."""
    if limit is None:
        monkeypatch.undo()  # this module's fixture: the default threshold
    fused = _spy_fused(monkeypatch)
    widths = _spy_sparse(monkeypatch)
    rows, pad = _rows(random.Random(3))
    h, w, s = make_batch(rows)
    assert h.shape[1] <= SyntaxBertAttention.explicit_cpu_max_length or limit == 0
    mod, state = _module(3, True, "exclude", "lca", seed=1)
    state.ctx = SyntaxContext(h, w, s, pad)
    x = torch.randn(h.shape[1], h.shape[0], C)
    got = mod(x, x, x, key_padding_mask=pad, need_weights=False)[0]
    exp = mod(x, x, x, key_padding_mask=pad, need_weights=True)[0]  # weights asked for: always the explicit path
    assert (len(fused) == 1) == kernels and (len(widths) > 0) == kernels
    torch.testing.assert_close(got, exp, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("paths", ["cpu", "accelerator"])
def test_every_mask_empty_gives_zero_gradients_not_none(paths, monkeypatch):
    """Issue 34: without the global sub-network, a batch wider than ``explicit_cpu_max_length`` whose every mask is
    empty (one word of 70 pieces) gave ``v_proj`` no gradient at all (None), which breaks DDP without
    find_unused_parameters; the explicit path gives zeros. Both kernels now give zero gradients to every
    projection."""
    from syntax_nmt.models.modules.device_paths import forced_accelerator_paths

    monkeypatch.setattr(SyntaxBertAttention, "explicit_cpu_max_length", 64)
    heads, starts = [0] * 70, [True] + [False] * 69
    h, w, s = make_batch([make_row(heads, starts, 71, left_pad=False)[:3]])
    T = h.shape[1]
    assert T > SyntaxBertAttention.explicit_cpu_max_length
    mod, state = _module(3, False, "exclude", "lca", seed=5)
    mod.train()
    state.ctx = SyntaxContext(h, w, s, torch.zeros(1, T, dtype=torch.bool))
    assert not mod.subnet_masks(state.ctx).any()
    x = torch.randn(T, 1, C, requires_grad=True)
    with forced_accelerator_paths(paths == "accelerator"):
        out, _ = mod(x, x, x, key_padding_mask=None, need_weights=False)
    out.float().pow(2).sum().backward()
    assert torch.equal(out, torch.zeros_like(out))
    for name in ("q_proj", "k_proj", "v_proj"):
        grad = getattr(mod, name).weight.grad
        assert grad is not None and torch.equal(grad, torch.zeros_like(grad)), name


# -- the accelerator path: one stacked fused-attention call and the topical mixture as one node --------------------


def _mixture_by_autograd(out, r, valid):
    """Eq. 2 from the interleaved sub-network outputs ``(B, T, M, H, hd)``, written out for autograd."""
    logits = torch.einsum("btmhd,hd->btm", out, r.to(out.dtype))
    s = torch.softmax(logits.masked_fill(~valid, torch.finfo(torch.float32).min / 2), dim=-1)
    return torch.einsum("btmhd,btm->bhtd", out, s * valid.any(-1, keepdim=True))


def test_topical_mixture_is_eq_2_with_its_gradients():
    """float64 gradcheck of the hand-written backward pass (outputs and ``r``), on tokens with no sub-network, one,
    or several."""
    torch.manual_seed(0)
    B, Hh, T, M, hd = 2, 2, 3, 4, 3
    out = torch.randn(B, T, M, Hh, hd, dtype=torch.float64, requires_grad=True)
    r = torch.randn(Hh, hd, dtype=torch.float64, requires_grad=True)
    valid = torch.rand(B, T, M) < 0.6
    valid[0, 0] = False  # no sub-network: weight 0, output 0
    valid[1, 1] = False
    valid[1, 1, 2] = True  # one: weight 1
    valid[1, 2] = True
    torch.testing.assert_close(sbmod.topical_mixture(out, r, valid), _mixture_by_autograd(out, r, valid))
    assert torch.equal(sbmod.topical_mixture(out, r, valid)[0, :, 0], torch.zeros(Hh, hd, dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda o, q: sbmod.topical_mixture(o, q, valid), (out, r))


def test_topical_mixture_writes_the_sub_networks_gradient_once():
    """The memory traffic the node exists to save (issue 49): its forward pass writes a fraction of the ``M``
    outputs' size (the mixed output, ``1 / M`` of it, and per-sub-network scalars), its backward pass their gradient
    once; autograd through the same formula writes four or more tensors that large in the backward pass (a product
    for each use of ``A_j``, their sum, a copy)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from syntax_nmt.bench.length import written_bytes

    class Written(TorchDispatchMode):
        total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.total += written_bytes(func, (args, kwargs), out)
            return out

    torch.manual_seed(0)
    B, Hh, T, M, hd = 4, 4, 16, 10, 16
    valid = torch.rand(B, T, M) < 0.5

    def traffic(mixture):
        out = torch.randn(B, T, M, Hh, hd, requires_grad=True)
        r = torch.randn(Hh, hd, requires_grad=True)
        grad = torch.randn(B, Hh, T, hd)
        with Written() as fwd:
            y = mixture(out, r, valid)
        with Written() as bwd:
            y.backward(grad)
        return fwd.total / out.nbytes, bwd.total / out.nbytes

    fwd, bwd = traffic(sbmod.topical_mixture)
    assert fwd < 0.5 and bwd < 2.0, (fwd, bwd)
    assert traffic(_mixture_by_autograd)[1] > 3.0  # what the node saves


@pytest.mark.parametrize("global_subnet,sibling,max_distance", [
    (True, "lca", 3), (False, "lca", 3), (True, "disjoint", 3), (False, "disjoint", 1), (True, "lca", 1),
    (True, "lca", 0)])
def test_accelerator_path_equals_the_implementation_before_it(global_subnet, sibling, max_distance, monkeypatch):
    """The accelerator (GPU) path, forced on the CPU, against the explicit implementation before the fused path, in
    every setting of the layer (the model test, tests/integration/test_accelerator_paths.py, covers the default):
    fp32 outputs to 1e-5, gradients to 1e-5 of their scale; and it is the path taken (one stacked call)."""
    from syntax_nmt.models.modules.device_paths import forced_accelerator_paths

    stacked = []
    real = sbmod.stacked_attention
    monkeypatch.setattr(sbmod, "stacked_attention", lambda *a: stacked.append(a[3].shape[2]) or real(*a))
    rng = random.Random(70)
    for trial, kind in enumerate(["mixed", "single", "short"]):
        rows, pad = _rows_of(rng, kind)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(max_distance, global_subnet, "exclude", sibling, seed=60 + trial)
        x0 = torch.randn(T, B, C)
        probe = torch.randn(T, B, C)
        with forced_accelerator_paths():
            got, g_got = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        M = mod.num_masks + (global_subnet or mod.num_masks == 0)
        assert len(stacked) == trial + 1 and stacked[-1] == M * T
        with monkeypatch.context() as m:
            m.setattr(SyntaxBertAttention, "fused_attention", lambda self, *a: None)
            m.setattr(SyntaxBertAttention, "probabilities", _reference_probabilities)
            before, g_before = _forward_backward(mod, state, h, w, s, pad, x0, probe)
        assert before.abs().max() > 0.5
        _assert_same(got, g_got, before, g_before)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("global_subnet", [True, False])
def test_accelerator_path_is_finite_in_low_precision(dtype, global_subnet):
    """The module cast to fp16/bf16 (fairseq's --fp16/--bf16), accelerator path forced on the CPU: finite outputs
    and gradients, close to float32 on average, exactly zero where a token has no sub-network. (Not every value is
    close: this module's topical softmax is sharp, ``q_task`` drawn 3x wider than trained ones, and in bf16 a token
    whose two sub-networks' logits were 0.16 apart in float32 mixed them 0.37 / 0.62 instead of 0.54 / 0.45, the
    sub-network outputs themselves being bf16: 3 of 608 values off by 2.3. The accelerator path before the topical
    mixture node gave the same values.)"""
    from syntax_nmt.models.modules.device_paths import forced_accelerator_paths

    rng = random.Random(71)
    for trial in range(2):
        rows, pad = _rows(rng)
        h, w, s = make_batch(rows)
        B, T = h.shape
        mod, state = _module(3, global_subnet, "exclude", "lca", seed=70 + trial)
        x0 = torch.randn(T, B, C)
        probe = torch.randn(T, B, C)
        with forced_accelerator_paths():
            ref, _ = _forward_backward(mod, state, h, w, s, pad, x0, probe)
            mod.to(dtype)
            got, grads = _forward_backward(mod, state, h, w, s, pad, x0.to(dtype), probe.to(dtype))
        assert got.dtype == dtype and torch.isfinite(got).all()
        assert all(torch.isfinite(g).all() for g in grads.values())
        assert (got.float() - ref).abs().mean() <= 0.01 * ref.abs().max()
        if not global_subnet:
            none = ~mod.has_subnetwork(state.ctx).t()  # T B
            assert none.any() and (got[none] == 0).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cuda_kernels_write_the_interleaved_layout(dtype, monkeypatch):
    """On a GPU torch's fused attention writes its output sequence-major (``(B, L, H, hd)``), so the interleaved
    stacked attention hands the topical mixture the kernel's own output, not a copy ``M`` times the queries' size
    (``stacked_attention`` copies an output in another layout: correct, but the traffic this path exists to cut)."""
    from syntax_nmt.models.modules.methods.mixed_attention import stacked_additive, stacked_attention

    outputs = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **kw: outputs.append(sdpa(*a, **kw)) or outputs[-1])
    B, Hh, T, hd, M = 4, 8, 40, 64, 10
    x = torch.randn(T, B, 3, Hh, hd, device="cuda", dtype=dtype)  # the projections' (T, B, H, hd) layout
    q, k, v = (x[:, :, i].permute(1, 2, 0, 3) for i in range(3))
    mask = stacked_additive(torch.rand(B, M, T, T, device="cuda") < 0.5, dtype, True)
    out = stacked_attention(q, k, v, mask, True)
    assert out.shape == (B, T, M, Hh, hd) and out.data_ptr() == outputs[-1].data_ptr()
