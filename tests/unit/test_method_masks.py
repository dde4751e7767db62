"""SLA, WLA and Syntax-BERT masks against the naive reference (tests/support/naive.py)."""

import random

import pytest
import torch

from support.naive import NaiveRow, batch_tensors, random_rows
from syntax_nmt.models.modules.methods.sla_masks import sla_mask, wla_mask
from syntax_nmt.models.modules.methods.syntax_bert_masks import syntax_bert_masks, syntax_bert_num_masks
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
