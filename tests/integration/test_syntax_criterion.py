"""The criterion label_smoothed_cross_entropy_with_syntax: exact equality with fairseq's
label_smoothed_cross_entropy at weight 0, the LISA/DP/HP terms, their normalisation under
padding, BOS and truncation, refusals, logging, and that each loss can be learned."""

import math

import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.logging import metrics

from conftest import build_task_and_model
from support.naive import NaiveRow
from syntax_nmt.criterions.label_smoothed_cross_entropy_with_syntax import (
    LabelSmoothedCrossEntropyWithSyntaxCriterion,
)

CRIT = ["--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1", "--report-accuracy"]


def _setup(data, *extra):
    task, model, cfg = build_task_and_model(data, *CRIT, *map(str, extra))
    return task, model, task.build_criterion(cfg.criterion)


def _batch(task, n=10, split="valid"):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in range(n)])


def _run(crit, model, batch, seed=0):
    model.zero_grad()
    for p in crit.parameters():
        p.grad = None
    torch.manual_seed(seed)
    loss, sample_size, log = crit(model, batch)
    loss.backward()
    return loss.detach(), sample_size, log, {n: p.grad.clone() for n, p in model.named_parameters()
                                             if p.grad is not None}


@pytest.mark.parametrize("extra", [
    ["--syntax-attention", "seprem,lisa", "--lisa-loss-weight", 0],  # every weight explicitly 0
    ["--syntax-attention", "seprem"],  # default LISA weight, no LISA head: nothing to add
    [],  # the plain syntax_transformer (features only)
])
def test_all_weights_zero_equals_fairseq_exactly(stream_bin, extra):
    task, model, crit = _setup(stream_bin, *extra)
    assert not list(crit.parameters())  # no DP/HP classifiers: a parameter-free criterion, like fairseq's
    stock = LabelSmoothedCrossEntropyCriterion(task, False, 0.1, report_accuracy=True)
    model.train()  # dropout on: same seed, same masks
    batch = _batch(task)
    loss, ss, log, grads = _run(crit, model, batch)
    loss0, ss0, log0, grads0 = _run(stock, model, batch)
    assert torch.equal(loss, loss0) and ss == ss0
    assert log.keys() == log0.keys() and all(torch.equal(torch.as_tensor(log[k]), torch.as_tensor(log0[k])) for k in log)
    assert grads.keys() == grads0.keys() and len(grads) == len(list(model.parameters()))
    assert all(torch.equal(grads[n], grads0[n]) for n in grads)


def _naive_rows(model, net):
    ctx = model.encoder.syntax_context(net["src_tokens"], net["src_streams"])
    return [NaiveRow(ctx.heads[b].tolist(), ctx.word_start[b].tolist(), ctx.special[b].tolist())
            for b in range(net["src_tokens"].shape[0])]


WEIGHTS = ["--lisa-loss-weight", 0.5, "--dp-loss-weight", 0.3, "--hp-loss-weight", 0.2]
PADDING = {
    "left": [],
    "right": ["--left-pad-source"],  # fairseq: the flag turns left padding off
    "bos": ["--source-prepend-bos"],
    "truncated": ["--truncate-source", "--max-source-positions", 6],
}


def _terms_on(data, layout):
    torch.manual_seed(0)
    task, model, crit = _setup(data, "--syntax-attention", "lisa", *WEIGHTS, *PADDING[layout])
    model.eval(), crit.eval()
    batch = _batch(task)
    with torch.no_grad():
        loss, ss, log = crit(model, batch)
        base, _, _ = LabelSmoothedCrossEntropyCriterion(task, False, 0.1)(model, batch)
    return task, model, crit, batch, loss, ss, log, base


@pytest.mark.parametrize("layout", list(PADDING))
def test_terms_are_weighted_means_over_real_tokens_words_and_pairs(stream_bin, layout):
    task, model, crit, batch, loss, ss, log, base = _terms_on(stream_bin, layout)
    rows = _naive_rows(model, batch["net_input"])
    real_tokens = sum(sum(not s for s in r.special) for r in rows)
    words = sum(len(r.words) for r in rows)
    pairs = sum(1 for r in rows for a in r.words for b in r.words if a != b and r.d(a, b) is not None)
    assert (log["lisa_count"].item(), log["hp_count"].item(), log["dp_count"].item()) == (real_tokens, words, pairs)
    if layout == "bos":
        assert real_tokens == int(batch["net_input"]["src_lengths"].sum()) - 2 * len(rows)
    if layout == "truncated":
        assert batch["net_input"]["src_tokens"].shape[1] <= 6
    expected = base + ss * (0.5 * log["lisa_loss"] / real_tokens + 0.3 * log["dp_loss"] / pairs
                            + 0.2 * log["hp_loss"] / words)
    torch.testing.assert_close(loss, expected)
    assert all(log[f"{n}_loss"] > 0 for n in ("lisa", "dp", "hp"))


def test_dp_samples_fifteen_percent_of_the_pairs_in_training(stream_bin):
    task, model, crit = _setup(stream_bin, "--syntax-attention", "seprem", "--dp-loss-weight", 1)
    batch = _batch(task)
    crit.train()
    _, _, log = crit(model, batch)
    rows = _naive_rows(model, batch["net_input"])
    per_sentence = [sum(1 for a in r.words for b in r.words if a != b and r.d(a, b) is not None) for r in rows]
    assert log["dp_count"].item() == sum(max(1, math.floor(0.15 * n + 0.5)) for n in per_sentence if n)
    crit.eval()
    _, _, log = crit(model, batch)
    assert log["dp_count"].item() == sum(per_sentence)
    assert "lisa_count" not in log and "hp_count" not in log


@pytest.mark.parametrize("extra,message", [
    (["--syntax-attention", "seprem", "--lisa-loss-weight", 1], r"--lisa-loss-weight 1.0 needs LISA's parse attention"),
    (["--dp-loss-weight", 1], r"--dp-loss-weight need the source syntax of the model"),
    (["--hp-loss-weight", 1, "--lisa-loss-weight", 2], r"--hp-loss-weight, --lisa-loss-weight need the source syntax"),
])
def test_refuses_when_the_model_lacks_what_a_loss_needs(stream_bin, extra, message):
    task, model, crit = _setup(stream_bin, *extra)
    with pytest.raises(ValueError, match=message):
        crit(model, _batch(task))


@pytest.mark.parametrize("extra,message", [
    (["--dp-loss-weight", -1], "--dp-loss-weight must be a finite value >= 0"),
    (["--dp-max-distance", 0], "--dp-max-distance must be >= 1"),
    (["--dp-pair-rate", 0], r"--dp-pair-rate must lie in \(0, 1\]"),
])
def test_bad_criterion_options(stream_bin, extra, message):
    with pytest.raises(ValueError, match=message):
        _setup(stream_bin, *extra)


@pytest.mark.parametrize("methods,criterion,warned", [
    ("lisa", "label_smoothed_cross_entropy", "lisa has auxiliary losses (--lisa-loss-weight)"),
    ("seprem", "cross_entropy", "seprem has auxiliary losses (--dp-loss-weight, --hp-loss-weight)"),
    ("sgnet,lisa,seprem", "label_smoothed_cross_entropy",
     "lisa,seprem has auxiliary losses (--lisa-loss-weight, --dp-loss-weight, --hp-loss-weight)"),
    ("sgnet,sla", "label_smoothed_cross_entropy", None),
    ("lisa,seprem", "label_smoothed_cross_entropy_with_syntax", None),
])
def test_auxiliary_losses_a_criterion_ignores_are_warned_about(stream_bin, caplog, methods, criterion, warned):
    """``--syntax-attention lisa`` with the README's ``label_smoothed_cross_entropy`` trained the
    LISA head without its parse loss, silently (as fairseq-train does: build_model, then build_criterion)."""
    extra = ["--label-smoothing", "0.1"] if criterion.startswith("label_smoothed") else []
    task, _, cfg = build_task_and_model(stream_bin, "--syntax-attention", methods, "--sla-layers", "0",
                                        "--criterion", criterion, *extra)
    caplog.clear()
    with caplog.at_level("WARNING", logger="syntax_nmt.tasks.syntax_translation"):
        task.build_criterion(cfg.criterion)
    got = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert got == ([f"--syntax-attention {warned} that the criterion {criterion} does not compute: the model trains "
                    f"without them; use --criterion label_smoothed_cross_entropy_with_syntax"] if warned else [])


def test_classifier_dimension_comes_from_the_model(stream_bin):
    _, _, crit = _setup(stream_bin, "--syntax-attention", "seprem", "--encoder-embed-dim", 32,
                        "--decoder-embed-dim", 32, "--feature-embed-dim", 4, "--dp-loss-weight", 1,
                        "--hp-loss-weight", 1, "--dp-max-distance", 5)
    assert crit.dp_classifier.weight.shape == (6, 64)
    assert crit.hp_query.weight.shape == (32, 32)


def test_reduce_metrics_logs_each_loss_per_item_in_bits():
    logs = [{"loss": 4.0, "nll_loss": 3.0, "ntokens": 2, "sample_size": 2, "nsentences": 1,
             "dp_loss": torch.tensor(3.0), "dp_count": torch.tensor(2), "dp_correct": torch.tensor(1)},
            {"loss": 2.0, "nll_loss": 1.0, "ntokens": 2, "sample_size": 2, "nsentences": 1,
             "dp_loss": torch.tensor(1.0), "dp_count": torch.tensor(2), "dp_correct": torch.tensor(2)}]
    with metrics.aggregate() as agg:
        LabelSmoothedCrossEntropyWithSyntaxCriterion.reduce_metrics(logs)
        values = agg.get_smoothed_values()
    assert values["dp_loss"] == pytest.approx(round(4.0 / 4 / math.log(2), 3))
    assert values["dp_acc"] == pytest.approx(75.0)
    assert values["loss"] == pytest.approx(round(6.0 / 4 / math.log(2), 3))
    assert "lisa_loss" not in values and "hp_loss" not in values


@pytest.mark.parametrize("name,arch", [("lisa", "lisa"), ("dp", "seprem"), ("hp", "seprem")])
def test_each_syntax_loss_decreases_when_trained_alone(stream_bin, name, arch):
    torch.manual_seed(1)
    weights = {"lisa": 0, "dp": 0, "hp": 0, name: 1}
    task, model, crit = _setup(stream_bin, "--syntax-attention", arch, "--dropout", 0,
                               *[x for n, w in weights.items() for x in (f"--{n}-loss-weight", w)])
    net = _batch(task, n=16, split="train")["net_input"]
    crit.eval()  # DP on every pair: a fixed objective
    params = list(model.encoder.parameters()) + list(crit.parameters())
    opt = torch.optim.Adam(params, lr=3e-3)
    history = []
    for _ in range(25):
        opt.zero_grad()
        encoder_out = model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])
        terms = crit.syntax_terms((None, {"encoder_out": encoder_out}))  # what the model's forward hands over
        assert list(terms) == [name]
        _, nll_sum, count, _ = terms[name]
        mean = nll_sum / count
        mean.backward()
        opt.step()
        history.append(mean.item())
    assert history[-1] < 0.6 * history[0], history


def test_classifiers_load_leniently_when_the_losses_change(stream_bin):
    _, _, crit = _setup(stream_bin, "--syntax-attention", "seprem", "--dp-loss-weight", 1, "--hp-loss-weight", 1)
    before = {k: v.clone() for k, v in crit.state_dict().items()}
    crit.load_state_dict(None)  # a checkpoint trained without classifiers stores None
    assert all(torch.equal(before[k], v) for k, v in crit.state_dict().items())
    _, _, dp_only = _setup(stream_bin, "--syntax-attention", "seprem", "--dp-loss-weight", 1, "--dp-max-distance", 3)
    saved = dict(dp_only.state_dict(), extra_weight=torch.zeros(2))
    crit.load_state_dict(saved)  # DP 4 classes vs 9 here: fresh; HP absent: fresh; extra: ignored
    assert all(torch.equal(before[k], v) for k, v in crit.state_dict().items())
    _, _, dp_hp = _setup(stream_bin, "--syntax-attention", "seprem", "--dp-loss-weight", 1)
    crit.load_state_dict(dp_hp.state_dict())
    assert torch.equal(crit.dp_classifier.weight, dp_hp.dp_classifier.weight)
    assert torch.equal(crit.hp_query.weight, before["hp_query.weight"])


def test_dp_and_hp_by_hand_on_three_words():
    """'dogs chase cats' + EOS (chase the root), encoder outputs dogs (1, 0), chase (0, 1),
    cats (1, 1), EOS (0, 0)."""
    from types import SimpleNamespace

    from syntax_nmt.models.modules.syntax_context import SyntaxContext

    task = SimpleNamespace(target_dictionary=SimpleNamespace(pad=lambda: 1))
    crit = LabelSmoothedCrossEntropyWithSyntaxCriterion(task, False, 0.0, dp_loss_weight=1, hp_loss_weight=1,
                                                        dp_max_distance=1, encoder_embed_dim=2)
    with torch.no_grad():
        for lin in (crit.hp_query, crit.hp_key):
            lin.weight.copy_(torch.eye(2))
            lin.bias.zero_()
        crit.dp_classifier.weight.zero_()
        crit.dp_classifier.weight[1, 0] = 1.0  # "farther" logit = first coordinate of the FIRST word
        crit.dp_classifier.bias.zero_()
    ctx = SyntaxContext(torch.tensor([[1, 0, -1, 0]]), torch.ones(1, 4, dtype=torch.bool),
                        torch.tensor([[False, False, False, True]]), torch.zeros(1, 4, dtype=torch.bool))
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])
    e, a = math.e, math.exp(1 / math.sqrt(2))
    # HP: scores x_i . x_j / sqrt(2) over the three words (not EOS); every target is chase
    hp_sum, hp_n, hp_ok = crit.losses["hp"].terms(ctx, x, crit.training)
    expected_hp = math.log(2 * a + 1) + (math.log(1 + 2 * a) - math.log(a)) + (math.log(2 * a + a * a) - math.log(a))
    assert hp_n.item() == 3 and hp_ok.item() == 1  # arg-max: dogs -> dogs (tie, first), chase -> chase, cats -> cats
    assert hp_sum.item() == pytest.approx(expected_hp, rel=1e-6)
    # DP on all 6 ordered pairs (eval): classes [d = 1, farther]; logits [0, x_first[0]]
    crit.eval()
    dp_sum, dp_n, dp_ok = crit.losses["dp"].terms(ctx, x, crit.training)
    log2, l1e = math.log(2), math.log(1 + e)
    # (dogs,chase) d1: l1e; (chase,dogs) d1: log2; (dogs,cats) d2: l1e - 1; (cats,dogs) d2: l1e - 1;
    # (chase,cats) d1: log2; (cats,chase) d1: l1e
    assert dp_n.item() == 6 and dp_ok.item() == 4
    assert dp_sum.item() == pytest.approx(4 * l1e - 2 + 2 * log2, rel=1e-6)


# -- DP on the sampled pairs only -------------------------------------------------
def _reference_sample_pairs(candidates, rate, generator=None):
    """The sample of ``sample_pair_indices`` before the sampled-pairs path (a double argsort over every pair), kept as
    the reference."""
    B = candidates.shape[0]
    flat = candidates.reshape(B, -1)
    n = flat.sum(dim=1)
    k = torch.floor(n.float() * rate + 0.5).long().clamp(min=1)
    r = torch.rand(flat.shape, generator=generator, device=flat.device).masked_fill(~flat, 2.0)
    rank = r.argsort(dim=1).argsort(dim=1)
    return ((rank < k.unsqueeze(1)) & flat).view_as(candidates)


def _reference_dp_terms(crit, ctx, x):
    """the DP terms before the sampled-pairs path: a ``(B, T, T, classes)`` tensor over every pair, masked by the sample."""
    from syntax_nmt.models.modules.methods.seprem_masks import connected_word_pairs, distance_classes
    from syntax_nmt.syntax.aux_losses import classification_terms

    tree = ctx.tree
    pairs = connected_word_pairs(tree)
    if crit.training:
        pairs = _reference_sample_pairs(pairs, crit.losses["dp"].pair_rate)
    C = crit.embed_dim
    w, b = crit.dp_classifier.weight, crit.dp_classifier.bias
    first = torch.nn.functional.linear(x, w[:, :C], b).float()
    second = torch.nn.functional.linear(x, w[:, C:]).float()
    logp = torch.log_softmax(first.unsqueeze(2) + second.unsqueeze(1), dim=-1)
    return classification_terms(logp, distance_classes(tree.dist, crit.losses["dp"].max_distance), pairs)


def _long_forest_batch(gen, B=5, T=48):
    """Random multi-root forests with multi-piece words, left/right padding, EOS: ``SyntaxContext`` inputs."""
    heads = torch.zeros(B, T, dtype=torch.long)
    word_start = torch.ones(B, T, dtype=torch.bool)
    special = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        n = int(torch.randint(2, T, (1,), generator=gen)) if b else T - 1  # one full row
        off = 0 if b % 2 else T - 1 - n  # right / left padding
        for i in range(n):
            if i and torch.rand(1, generator=gen) < 0.8:  # some roots stay roots
                heads[b, off + i] = int(torch.randint(0, i, (1,), generator=gen)) - i
        word_start[b, off:off + n] = torch.rand(n, generator=gen) < 0.75
        special[b, :off] = special[b, off + n:] = True  # pads and EOS
    return heads, word_start, special, special.clone()


@pytest.mark.parametrize("rate", [0.15, 0.5, 1.0])
def test_sample_pairs_draws_what_it_drew_before(rate):
    """The index form of the sample draws exactly the pairs of the double-argsort form, on the same generator."""
    from syntax_nmt.models.modules.methods.seprem_masks import (connected_word_pairs, pair_sample_capacity,
                                                                sample_pair_indices)
    from syntax_nmt.syntax.tree import word_tree

    gen = torch.Generator().manual_seed(3)
    for trial in range(8):
        if trial < 5:
            h, w, s, _ = _long_forest_batch(gen, T=20 + 15 * trial)
            cand = connected_word_pairs(word_tree(h, w, s))
            cand[0] = False  # a sentence with no candidate pair
        else:  # the most candidates a sentence can have: every pair but the diagonal
            T = (7, 33, 101)[trial - 5]
            cand = ~torch.eye(T, dtype=torch.bool).expand(2, T, T).clone()
            cand[1, :, 0] = False
        state = torch.Generator().manual_seed(trial).get_state()
        index, keep = sample_pair_indices(cand, rate, torch.Generator().set_state(state))
        got = torch.zeros(cand.shape[0], cand[0].numel(), dtype=torch.bool).scatter_(1, index, keep).view_as(cand)
        exp = _reference_sample_pairs(cand, rate, torch.Generator().set_state(state))
        assert torch.equal(got, exp) and got.sum() > 0
        assert index.shape[1] == pair_sample_capacity(cand.shape[1], rate) < cand[0].numel() or rate == 1
        assert torch.equal(keep.sum(1), exp.flatten(1).sum(1))


@pytest.mark.parametrize("rate", [0.15, 0.5, 1.0])
def test_dp_on_sampled_pairs_equals_the_dense_loss_and_gradients(rate):
    """Training DP scores only the sampled pairs: its loss, counts and gradients (encoder output and
    classifier) equal the dense ``(B, T, T, classes)`` computation of before under the same draw."""
    from types import SimpleNamespace

    from syntax_nmt.models.modules.syntax_context import SyntaxContext

    task = SimpleNamespace(target_dictionary=SimpleNamespace(pad=lambda: 1))
    crit = LabelSmoothedCrossEntropyWithSyntaxCriterion(task, False, 0.0, dp_loss_weight=1, dp_max_distance=3,
                                                        dp_pair_rate=rate, encoder_embed_dim=6)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        crit.dp_classifier.weight.normal_(0, 1, generator=gen)
        crit.dp_classifier.bias.normal_(0, 1, generator=gen)
    for trial in range(4):
        ctx = SyntaxContext(*_long_forest_batch(gen, T=30 + 10 * trial))
        x0 = torch.randn(ctx.heads.shape[0], ctx.heads.shape[1], 6, generator=gen)
        results = []
        for fn in (lambda c, x: crit.losses["dp"].terms(c, x, crit.training),
                   lambda c, x: _reference_dp_terms(crit, c, x)):
            crit.train()
            crit.zero_grad()
            x = x0.clone().requires_grad_()
            torch.manual_seed(10 + trial)
            nll, count, correct = fn(ctx, x)
            nll.backward()
            results.append((nll.detach(), count, correct, x.grad, crit.dp_classifier.weight.grad.clone(),
                            crit.dp_classifier.bias.grad.clone()))
        (a, *ga), (b, *gb) = results
        assert a > 1 and ga[0] > 1
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        assert ga[0] == gb[0] and ga[1] == gb[1]
        for u, v in zip(ga[2:], gb[2:]):
            assert u.abs().max() > 0
            torch.testing.assert_close(u, v, atol=1e-5, rtol=1e-5)
