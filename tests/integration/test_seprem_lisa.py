"""SEPREM's D̃ (eq. 3-4) and layer (eq. 1, 5), LISA's parse head, the DP/HP helpers.

The D̃ reference is written from the definition in the README / issue (word-level BFS distances
from tests/support/naive.py, exact fractions), not from syntax_nmt.syntax.tree.
"""

import math
import random
from fractions import Fraction
from types import SimpleNamespace

import pytest
import torch

from conftest import assert_option_error, build_task_and_model
from support.naive import NaiveRow, batch_tensors, random_rows
from syntax_nmt.models.modules.methods.lisa import LISA_SCORES, LisaAttention, LisaLoss
from syntax_nmt.models.modules.methods.lisa_masks import lisa_parents
from syntax_nmt.models.modules.syntax_context import SyntaxContext, SyntaxState
from syntax_nmt.models.modules.methods.seprem_masks import (connected_word_pairs, distance_classes,
                                                            sample_pair_indices, seprem_strength)
from syntax_nmt.syntax import aux_losses
from syntax_nmt.syntax import tree as T_


# -- D̃: naive reference ---------------------------------------------------------------------
def naive_strength(row: NaiveRow):
    """T x T Fractions: D̃_sub[i][j] = D̃[w(i), w(j)] / pieces(w(j)), D̃ row-normalised 1/d."""
    T = row.T
    pieces = {w: sum(1 for i in range(T) if row.word_of[i] == w) for w in row.words}
    word = {}
    for w in row.words:
        others = {u: row.d(w, u) for u in row.words if u != w and row.d(w, u) is not None}
        total = sum(Fraction(1, d) for d in others.values())
        word[w] = {u: Fraction(1, d) / total for u, d in others.items()}
    out = [[Fraction(0)] * T for _ in range(T)]
    for i in range(T):
        if row.special[i]:
            continue
        for j in range(T):
            if row.special[j]:
                continue
            wi, wj = row.word_of[i], row.word_of[j]
            if wj in word[wi]:
                out[i][j] = word[wi][wj] / pieces[wj]
    return out


def test_seprem_strength_random_forests_against_reference():
    rng = random.Random(8)
    for _ in range(150):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = seprem_strength(T_.word_tree(h, w, s))
        assert got.dtype == torch.float32 and got.shape == (len(rows), h.shape[1], h.shape[1])
        for b, row in enumerate(rows):
            exp = torch.tensor([[float(x) for x in r] for r in naive_strength(NaiveRow(*row))])
            torch.testing.assert_close(got[b], exp, rtol=1e-6, atol=1e-7, msg=str(row))


def test_seprem_strength_rows_sum_to_one_or_zero():
    rng = random.Random(9)
    for _ in range(40):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = seprem_strength(T_.word_tree(h, w, s))
        for b, row in enumerate(rows):
            n = NaiveRow(*row)
            for i in range(n.T):
                alone = n.special[i] or all(n.d(n.word_of[i], u) is None for u in n.words if u != n.word_of[i])
                assert got[b, i].sum().item() == pytest.approx(0.0 if alone else 1.0, abs=1e-6)


# -- Figure 1 of SEPREM, by hand --------------------------------------------------------------
# "My dog is playing frisbee outside the room ." with the UD parse Stanza gives (the figure is an
# image; its arcs): playing = root; My -> dog -> playing; is, frisbee, room, "." -> playing;
# outside, the -> room.  Word distances from "playing": 1 to dog, is, frisbee, room, "."; 2 to
# My, outside, the: sum of 1/d = 5 + 3/2 = 13/2.  From "My": dog 1, playing 2, is/frisbee/room/"." 3,
# outside/the 4: sum = 1 + 1/2 + 4/3 + 1/2 = 10/3.
FIG1 = ["My", "dog", "is", "playing", "frisbee", "outside", "the", "room", "."]
FIG1_HEAD = {0: 1, 1: 3, 2: 3, 3: None, 4: 3, 5: 7, 6: 7, 7: 3, 8: 3}


def _fig1_batch(split_frisbee=False, bos=False, pad=0):
    """Streams of Figure 1's sentence (optionally 'fris@@ bee', BOS, left padding) + EOS."""
    pieces = [2 if (split_frisbee and k == 4) else 1 for k in range(len(FIG1))]
    first, pos = [], 0
    for p in pieces:
        first.append(pos)
        pos += p
    heads, ws = [], []
    for k, p in enumerate(pieces):
        for m in range(p):
            heads.append(0 if FIG1_HEAD[k] is None else first[FIG1_HEAD[k]] - (first[k] + m))
            ws.append(m == 0)
    lead = pad + int(bos)
    heads = [0] * lead + heads + [0]
    ws = [True] * lead + ws + [True]
    sp = [True] * lead + [False] * (len(heads) - lead - 1) + [True]
    return torch.tensor([heads]), torch.tensor([ws]), torch.tensor([sp]), [f + lead for f in first]


def test_seprem_strength_figure_1_by_hand():
    h, w, s, first = _fig1_batch()
    D = seprem_strength(T_.word_tree(h, w, s))[0]
    playing = [0] * 10
    for k, d in {0: 2, 1: 1, 2: 1, 4: 1, 5: 2, 6: 2, 7: 1, 8: 1}.items():
        playing[k] = 2 / 13 if d == 1 else 1 / 13
    my = [0, 3 / 10, 1 / 10, 3 / 20, 1 / 10, 3 / 40, 3 / 40, 1 / 10, 1 / 10, 0]
    torch.testing.assert_close(D[3], torch.tensor(playing))
    torch.testing.assert_close(D[0], torch.tensor(my))
    assert D[9].abs().sum() == 0 and D[:, 9].abs().sum() == 0  # EOS row and column
    assert torch.all(D.diagonal() == 0)
    torch.testing.assert_close(D.sum(-1), torch.tensor([1.0] * 9 + [0.0]))


def test_seprem_strength_figure_1_with_pieces_bos_and_left_padding():
    """'frisbee' as 'fris@@ bee': playing gives 2/13 to the word, 1/13 to each piece; both pieces
    read frisbee's row (0 to each other); BOS and pads have empty rows and columns."""
    h, w, s, first = _fig1_batch(split_frisbee=True, bos=True, pad=2)
    D = seprem_strength(T_.word_tree(h, w, s))[0]
    fris, bee, playing, my = first[4], first[4] + 1, first[3], first[0]
    assert D[playing, fris].item() == pytest.approx(1 / 13) and D[playing, bee].item() == pytest.approx(1 / 13)
    assert torch.equal(D[fris], D[bee]) and D[fris, bee] == 0 and D[bee, fris] == 0
    # frisbee's row: playing 1, dog/is/room/. 2, My/outside/the 3 -> 1 + 4/2 + 3/3 = 4
    assert D[fris, playing].item() == pytest.approx(1 / 4)
    assert D[fris, my].item() == pytest.approx(1 / 12)
    assert D[my, fris].item() == pytest.approx(1 / 20)  # "My" gives frisbee 1/10, halved
    assert D[:3].abs().sum() == 0 and D[:, :3].abs().sum() == 0  # 2 pads + BOS
    torch.testing.assert_close(D.sum(-1), torch.tensor([0.0] * 3 + [1.0] * 10 + [0.0]))


# -- LISA parents -----------------------------------------------------------------------------
def naive_parents(row: NaiveRow):
    out = []
    for i in range(row.T):
        if row.special[i]:
            out.append(i)
            continue
        h = row.head[row.word_of[i]]
        out.append(i if h is None else h)
    return out


def test_lisa_parents_random_against_reference():
    rng = random.Random(11)
    for _ in range(100):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = lisa_parents(T_.word_tree(h, w, s))
        assert torch.equal(got, T_.subword_parents(h, w, s, "shared"))
        for b, row in enumerate(rows):
            assert got[b].tolist() == naive_parents(NaiveRow(*row)), row


# -- DP / HP helpers ---------------------------------------------------------------------------
def sample_pairs(candidates, rate, generator):
    """The sample of :func:`sample_pair_indices` as a ``(B, T, T)`` mask."""
    index, keep = sample_pair_indices(candidates, rate, generator)
    out = torch.zeros(candidates.shape[0], candidates[0].numel(), dtype=torch.bool)
    return out.scatter_(1, index, keep).view_as(candidates)


def test_sample_pairs_takes_the_rounded_rate_of_each_sentence():
    rng = random.Random(12)
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        tree = T_.word_tree(h, w, s)
        cand = connected_word_pairs(tree)
        for rate in (0.15, 0.5, 1.0):
            sel = sample_pairs(cand, rate, gen)
            assert not (sel & ~cand).any()
            for b in range(len(rows)):
                n = int(cand[b].sum())
                expected = 0 if n == 0 else max(1, math.floor(rate * n + 0.5))
                assert int(sel[b].sum()) == expected


def test_connected_word_pairs_against_reference():
    rng = random.Random(13)
    for _ in range(50):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = connected_word_pairs(T_.word_tree(h, w, s))
        for b, row in enumerate(rows):
            n = NaiveRow(*row)
            exp = [[i in n.words and j in n.words and i != j and n.d(i, j) is not None for j in range(n.T)]
                   for i in range(n.T)]
            assert got[b].tolist() == exp


def test_distance_classes():
    d = torch.tensor([1, 2, 3, 4, 9])
    assert distance_classes(d, 3).tolist() == [0, 1, 2, 3, 3]


def test_classification_terms_counts_only_rows_that_count():
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]]))
    s, n, c = aux_losses.classification_terms(logp, torch.tensor([0, 1, 1]), torch.tensor([True, True, False]))
    assert s.item() == pytest.approx(-math.log(0.5) - math.log(0.1))
    assert n.item() == 2 and c.item() == 1  # row 0 ties (first index wins: correct), row 1 wrong


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
    state = SyntaxState()
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
