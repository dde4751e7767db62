"""The methods' masks and weights against the naive references (tests/support/naive.py): SLA, WLA and
Syntax-BERT masks; SEPREM's D̃ (eq. 3-4, also by hand on the paper's Figure 1) and the word pairs of its
distance and head prediction; LISA's parse-attention targets."""

import math
import random

import pytest
import torch

from support.naive import NaiveRow, batch_tensors, naive_parents, naive_strength, random_rows
from syntax_nmt.models.modules.methods.lisa_masks import lisa_parents
from syntax_nmt.models.modules.methods.seprem_masks import (connected_word_pairs, distance_classes,
                                                            sample_pair_indices, seprem_strength)
from syntax_nmt.models.modules.methods.sla_masks import sla_mask, wla_mask
from syntax_nmt.models.modules.methods.syntax_bert_masks import syntax_bert_masks, syntax_bert_num_masks
from syntax_nmt.syntax import aux_losses
from syntax_nmt.syntax import tree as T_


@pytest.mark.parametrize("threshold", [0, 1, 3, 4])
def test_sla_mask_random_against_reference(threshold):
    rng = random.Random(100 + threshold)
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = sla_mask(T_.word_tree(h, w, s), threshold)
        for b, row in enumerate(rows):
            assert got[b].tolist() == NaiveRow(*row).sla(threshold), row


@pytest.mark.parametrize("unit", ["word", "token"])
@pytest.mark.parametrize("window", [0, 1, 3])
def test_wla_mask_random_against_reference(window, unit):
    rng = random.Random(200 + window)
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = wla_mask(w, s, window, unit) if unit == "token" else wla_mask(w, s, window)
        for b, row in enumerate(rows):
            assert got[b].tolist() == NaiveRow(*row).wla(window, unit), row


def test_wla_window_units_by_hand():
    """'un@@ believ@@ able story .' + EOS, k = 1: a word window lets 'able' reach 'story' (the next
    word) but not '.'; a token window lets 'believ@@' reach only 'un@@' and 'able'."""
    ws = torch.tensor([[True, False, False, True, True, False]])
    special = torch.tensor([[False, False, False, False, False, True]])
    word = wla_mask(ws, special, 1, "word")[0]
    token = wla_mask(ws, special, 1, "token")[0]
    assert word[2].tolist() == [True, True, True, True, False, False]
    assert word[4].tolist() == [False, False, False, True, True, False]
    assert token[1].tolist() == [True, True, True, False, False, False]
    assert token[4].tolist() == [False, False, False, True, True, False]
    assert word[5].tolist() == token[5].tolist() == [False] * 5 + [True]  # EOS: itself only
    with pytest.raises(ValueError, match="window unit"):
        wla_mask(ws, special, 1, "subword")


@pytest.mark.parametrize("sibling", ["lca", "disjoint"])
@pytest.mark.parametrize("max_distance", [1, 3, 5])
def test_syntax_bert_masks_random_against_reference(max_distance, sibling):
    rng = random.Random(300 + max_distance)
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = syntax_bert_masks(T_.word_tree(h, w, s), max_distance, sibling)
        M = syntax_bert_num_masks(max_distance, sibling)
        assert M == 3 * max_distance - (sibling == "disjoint")
        assert got.shape == (len(rows), M, h.shape[1], h.shape[1])
        for b, row in enumerate(rows):
            exp = NaiveRow(*row).syntax_bert(max_distance, sibling)
            assert len(exp) == M
            for k in range(M):
                assert got[b, k].tolist() == exp[k], (k, row)


def test_syntax_bert_readings_of_the_sibling_mask():
    """The paper's sibling mask (a lowest common ancestor exists) holds every pair of one tree at
    distance d, the parent/child pairs included; under the disjoint reading no pair at d = 1 is a
    sibling pair (d = 1 is an edge), which is why that reading has no d = 1 sub-network."""
    rng = random.Random(310)
    differ = 0
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        lca = syntax_bert_masks(T_.word_tree(h, w, s), 3, "lca")
        disjoint = syntax_bert_masks(T_.word_tree(h, w, s), 3, "disjoint")
        assert torch.equal(lca[:, :6], disjoint[:, :6])  # parent and child masks do not change
        assert torch.equal(lca[:, 6], lca[:, 0] | lca[:, 3])  # sibling d=1 = parent d=1 | child d=1
        for d in (2, 3):  # lca sibling d = disjoint sibling d + the parent/child pairs at d
            assert torch.equal(lca[:, 5 + d], disjoint[:, 4 + d] | lca[:, d - 1] | lca[:, 2 + d])
        differ += int((lca[:, 7:] != disjoint[:, 6:]).any())
        for row in rows:
            n = NaiveRow(*row)
            assert not any(n.d(a, b) == 1 and a not in n.ancestors(b) and b not in n.ancestors(a)
                           for a in n.words for b in n.words)
    assert differ > 30


def test_syntax_bert_masks_reject_an_unknown_reading():
    h, w, s = _hand_batch()
    with pytest.raises(ValueError, match="sibling reading 'cousin'"):
        syntax_bert_masks(T_.word_tree(h, w, s), 2, "cousin")


def _hand_batch():
    """'the cat sat on the mat' (+EOS), 'sat' root; 'mat' in two pieces; right padded by 1.

    words:     the(0) cat(1) sat(2) on(3) the(4) ma(5) @@t(6) EOS(7) pad(8)
    heads:     the->cat, cat->sat, sat root, on->mat, the->mat, mat->sat
    """
    heads = [1, 1, 0, 2, 1, -3, -4, 0, 0]
    ws = [True, True, True, True, True, True, False, True, True]
    sp = [False] * 7 + [True, True]
    return (torch.tensor([heads]), torch.tensor([ws]), torch.tensor([sp]))


def test_sla_mask_by_hand():
    h, w, s = _hand_batch()
    # word distances: the-cat 1, cat-sat 1, sat-mat 1, mat-on 1, mat-the2 1, the-sat 2, on-sat 2 ...
    m = sla_mask(T_.word_tree(h, w, s), 1)[0]
    # 'the'(0): neighbours {the, cat}; within 1 of the: the, cat; of cat: the, cat, sat
    assert m[0].tolist() == [True, True, True, False, False, False, False, False, False]
    # 'on'(3): neighbours sat(2), on, the(4): sat -> cat, sat, mat; on -> on, mat; the -> the, mat
    assert m[3].tolist() == [False, True, True, True, True, True, True, False, False]
    # pieces of 'mat' share their word's row; EOS and pad attend only to themselves
    assert torch.equal(m[5], m[6])
    assert m[7].tolist() == [False] * 7 + [True, False]
    assert m[8].tolist() == [False] * 8 + [True]


@pytest.mark.parametrize("sibling", ["lca", "disjoint"])
def test_syntax_bert_masks_by_hand(sibling):
    h, w, s = _hand_batch()
    M = syntax_bert_masks(T_.word_tree(h, w, s), 2, sibling)[0]
    parent1, parent2, child1, child2 = M[:4]
    # sat(2) is the parent of cat(1) and mat(5,6): row 2 allows them at d=1
    assert parent1[2].nonzero().flatten().tolist() == [1, 5, 6]
    assert parent2[2].nonzero().flatten().tolist() == [0, 3, 4]
    # both pieces of mat see sat as parent at d=1; the pieces never see each other
    assert child1[5].nonzero().flatten().tolist() == [2]
    assert child1[6].nonzero().flatten().tolist() == [2]
    assert not M[:, 5, 6].any() and not M[:, 6, 5].any()
    if sibling == "lca":  # parent1, parent2, child1, child2, sibling1, sibling2
        assert M.shape[0] == 6
        sib1, sib2 = M[4:]
        # the paper: every pair of the tree at distance d; at d=1 the edges, both ways
        assert sib1[2].nonzero().flatten().tolist() == [1, 5, 6]
        assert sib1[5].nonzero().flatten().tolist() == [2, 3, 4]
        # at d=2: cat-mat (children of sat); on-the(4) (children of mat), and on-sat (grandparent)
        assert sib2[1].nonzero().flatten().tolist() == [5, 6]
        assert sib2[3].nonzero().flatten().tolist() == [2, 4]
        assert sib2[2].nonzero().flatten().tolist() == [0, 3, 4]
    else:  # parent1, parent2, child1, child2, sibling2: no sibling1 (distance-1 pairs are parent/child)
        assert M.shape[0] == 5
        sib2 = M[4]
        assert sib2[1].nonzero().flatten().tolist() == [5, 6]
        assert sib2[3].nonzero().flatten().tolist() == [4]
        assert not sib2[2].any()
    # specials are in no mask
    assert not M[:, 7:, :].any() and not M[:, :, 7:].any()


def test_masks_on_device_dtype_and_no_loops_over_batch():
    """Batched == one row at a time (the batch does not leak between rows)."""
    rng = random.Random(5)
    rows = random_rows(rng)
    while len(rows) < 3:
        rows = random_rows(rng)
    h, w, s = batch_tensors(rows)
    full = syntax_bert_masks(T_.word_tree(h, w, s), 3)
    sla = sla_mask(T_.word_tree(h, w, s), 3)
    for b in range(len(rows)):
        assert torch.equal(full[b:b + 1], syntax_bert_masks(T_.word_tree(h[b:b + 1], w[b:b + 1], s[b:b + 1]), 3))
        assert torch.equal(sla[b:b + 1], sla_mask(T_.word_tree(h[b:b + 1], w[b:b + 1], s[b:b + 1]), 3))


# -- SEPREM's D̃ (Xu et al. 2021, eq. 3-4) ------------------------------------------------------
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
