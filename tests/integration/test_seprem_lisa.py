"""SEPREM's layer (Xu et al. 2021, eq. 1, 5) and LISA's parse head (Strubell et al. 2018) in the model, their
options and their auxiliary losses in low precision. Their masks and weights (SEPREM's D̃, the word pairs of its
distance prediction, LISA's parse-attention targets) against the naive references:
tests/unit/test_method_masks.py.
"""

import math
from types import SimpleNamespace

import pytest
import torch

from conftest import assert_option_error, build_task_and_model
from syntax_nmt.models.modules.methods.lisa import LISA_SCORES, LisaAttention, LisaLoss
from syntax_nmt.models.modules.methods.seprem_masks import seprem_strength
from syntax_nmt.models.modules.syntax_context import BoundContext, SyntaxContext
from syntax_nmt.syntax import tree as T_


# -- the SEPREM layer ------------------------------------------------------------------------
def _batch(task, n=8, split="valid"):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def _encode(model, net):
    return model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])["encoder_out"][0]


def test_seprem_alpha_zero_is_the_stock_encoder_exactly(stream_bin):
    torch.manual_seed(0)
    task, sep, _ = build_task_and_model(stream_bin, "--syntax-attention", "seprem", "--seprem-alpha-init", 0)
    _, plain, _ = build_task_and_model(stream_bin)
    missing = plain.load_state_dict(sep.state_dict(), strict=False)
    assert not missing.missing_keys
    assert missing.unexpected_keys and all(".syntax_inputs.seprem." in k for k in missing.unexpected_keys)
    sep.eval(), plain.eval()
    net = _batch(task, n=12)["net_input"]
    assert torch.equal(_encode(sep, net), _encode(plain, net))
    assert torch.equal(sep(**net)[0], plain(**net)[0])
    with torch.no_grad():  # and it is not the plain encoder once alpha moves
        sep.encoder.layers[1].syntax_inputs["seprem"].alpha.fill_(0.1)
    assert not torch.allclose(_encode(sep, net), _encode(plain, net))


def test_seprem_layer_computes_eq_1_and_5(stream_bin):
    task, sep, _ = build_task_and_model(stream_bin, "--syntax-attention", "seprem", "--seprem-layers", "1",
                                        "--seprem-activation", "sigmoid")
    assert sep.encoder.layers[0].__class__.__name__ == "TransformerEncoderLayerBase"
    module = sep.encoder.layers[1].syntax_inputs["seprem"]
    assert module.alpha.item() == pytest.approx(0.1)
    net = _batch(task)["net_input"]
    ctx = sep.encoder.syntax_context(net["src_tokens"], net["src_streams"])
    x = torch.randn(net["src_tokens"].shape[1], net["src_tokens"].shape[0], 64)
    out = module(x, ctx)
    C = 64
    W1, W2 = module.proj.weight[:C], module.proj.weight[C:]
    D = seprem_strength(T_.word_tree(ctx.heads, ctx.word_start, ctx.special))
    DH = torch.einsum("bij,jbc->ibc", D, x)
    expected = 0.9 * x + 0.1 * torch.sigmoid(x @ W1.T + DH @ W2.T)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)


# -- LISA ---------------------------------------------------------------------------------------
def _three_words(inject=False):
    """'dogs chase cats' + EOS, one head of dimension 2 with identity projections.

    Parse: chase is the root, dogs -> chase, cats -> chase.  x: dogs (1, 0), chase (0, 1),
    cats (1, 1), EOS (0, 0); U = [[1, 0], [0, 2]], u = (0, 1).
    """
    state = BoundContext()
    att = LisaAttention(2, 1, 0.0, state, head=0, inject_parse=inject)
    with torch.no_grad():
        for proj in (att.q_proj, att.k_proj, att.v_proj, att.out_proj):
            proj.weight.copy_(torch.eye(2))
            proj.bias.zero_()
        att.parse_bilinear.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        att.parse_key_bias.copy_(torch.tensor([0.0, 1.0]))
    heads = torch.tensor([[1, 0, -1, 0]])
    ws = torch.ones(1, 4, dtype=torch.bool)
    special = torch.tensor([[False, False, False, True]])
    ctx = SyntaxContext(heads, ws, special, torch.zeros(1, 4, dtype=torch.bool))
    state.ctx = ctx
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]).view(4, 1, 2)
    return att, ctx, x


def test_lisa_loss_on_a_three_word_example_by_hand():
    from syntax_nmt.criterions.label_smoothed_cross_entropy_with_syntax import (
        LabelSmoothedCrossEntropyWithSyntaxCriterion,
    )

    att, ctx, x = _three_words()
    att(x, x, x, need_weights=False)
    # s[i, j] = x_i^T U x_j + u^T x_j, rows dogs, chase, cats, EOS:
    #   dogs  [1, 1, 2, 0]   chase [0, 3, 3, 0]   cats [1, 3, 4, 0]   EOS [0, 1, 1, 0]
    torch.testing.assert_close(ctx.outputs[LISA_SCORES][0], torch.tensor(
        [[1.0, 1, 2, 0], [0, 3, 3, 0], [1, 3, 4, 0], [0, 1, 1, 0]]))
    e = math.e
    nll_dogs = math.log(e + e + e ** 2 + 1) - 1  # target chase (score 1)
    nll_chase = math.log(1 + e ** 3 + e ** 3 + 1) - 3  # root: itself (score 3)
    nll_cats = math.log(e + e ** 3 + e ** 4 + 1) - 3  # target chase (score 3)
    expected = (nll_dogs + nll_chase + nll_cats) / 3  # = 1.2434; EOS does not count
    nll_sum, count, correct = LisaLoss(SimpleNamespace(lisa_loss_weight=1.0), 4).terms(ctx, None, True)
    assert count.item() == 3
    assert (nll_sum / count).item() == pytest.approx(expected, rel=1e-6)
    assert expected == pytest.approx(1.24336, abs=1e-5)


def test_lisa_head_uses_its_biaffine_distribution_and_injection_uses_the_parse():
    att, ctx, x = _three_words()
    _, w = att(x, x, x, need_head_weights=True)
    torch.testing.assert_close(w[0, 0], torch.softmax(ctx.outputs[LISA_SCORES][0], -1))
    att, ctx, x = _three_words(inject=True)
    out, w = att(x, x, x, need_head_weights=True)
    # one-hot parents: dogs -> chase, chase -> itself, cats -> chase, EOS -> itself
    assert w[0, 0].tolist() == [[0, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]]
    # identity projections: every word's output is chase's value
    torch.testing.assert_close(out[:3, 0], torch.tensor([[0.0, 1.0]] * 3))


def test_lisa_layer_starts_as_the_standard_layer(stream_bin):
    """U = I / sqrt(d_head), u = 0: the parse head starts as scaled dot-product attention."""
    torch.manual_seed(0)
    task, lisa, _ = build_task_and_model(stream_bin, "--syntax-attention", "lisa", "--lisa-head", 1)
    _, plain, _ = build_task_and_model(stream_bin)
    missing = plain.load_state_dict(lisa.state_dict(), strict=False)
    assert sorted(missing.unexpected_keys) == ["encoder.layers.1.self_attn.parse_bilinear",
                                               "encoder.layers.1.self_attn.parse_key_bias"]
    lisa.eval(), plain.eval()
    net = _batch(task)["net_input"]
    torch.testing.assert_close(_encode(lisa, net), _encode(plain, net), rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        lisa.encoder.layers[1].self_attn.parse_key_bias.fill_(1.0)
    assert not torch.allclose(_encode(lisa, net), _encode(plain, net), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("extra,message", [
    (["--syntax-attention", "sla,lisa"], r"sla and lisa both replace .* \[1\].*--sla-layers, --lisa-layer"),
    (["--syntax-attention", "lisa", "--lisa-head", "2"], "--lisa-head 2 does not exist"),
    (["--syntax-attention", "lisa", "--lisa-layer", "2"], "--lisa-layer: layer 2 does not exist"),
    (["--syntax-attention", "seprem", "--seprem-layers", "0,5"], "--seprem-layers: layer 5 does not exist"),
])
def test_bad_options_fail_clearly(stream_bin, extra, message, capsys, monkeypatch):
    assert_option_error(stream_bin, extra, message, capsys, monkeypatch)


def test_seprem_and_lisa_combine_with_every_method(stream_bin):
    task, model, _ = build_task_and_model(
        stream_bin, "--syntax-attention", "sgnet,sla,syntax_bert,seprem,lisa", "--encoder-layers", 3,
        "--sla-layers", 0, "--syntax-bert-layers", 1)
    kinds = [type(layer.self_attn).__name__ for layer in model.encoder.layers]
    assert kinds == ["SyntaxLocalAttention", "SyntaxBertAttention", "LisaAttention"]
    assert all("seprem" in layer.syntax_inputs for layer in model.encoder.layers)
    net = _batch(task)["net_input"]
    out, extra = model(**net)
    assert torch.isfinite(out).all()
    ctx = extra["encoder_out"]["syntax"]
    assert ctx.outputs[LISA_SCORES].shape == (8, net["src_tokens"].shape[1], net["src_tokens"].shape[1])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_seprem_lisa_and_the_syntax_losses_are_finite_in_low_precision(stream_bin, dtype):
    task, model, cfg = build_task_and_model(
        stream_bin, "--syntax-attention", "seprem,lisa", "--criterion", "label_smoothed_cross_entropy_with_syntax",
        "--dp-loss-weight", 1, "--hp-loss-weight", 1)
    crit = task.build_criterion(cfg.criterion)
    model.to(dtype), crit.to(dtype)
    net = _batch(task, n=12)["net_input"]
    out = model(**net)
    assert out[0].dtype == dtype and torch.isfinite(out[0].float()).all()
    terms = crit.syntax_terms(out)
    assert list(terms) == ["dp", "hp", "lisa"]  # the methods' registration order
    for _, nll_sum, count, _ in terms.values():
        assert nll_sum.dtype == torch.float32 and torch.isfinite(nll_sum) and count > 0
