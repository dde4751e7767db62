"""SLA, WLA and Syntax-BERT masks against the naive reference (tests/naive_syntax.py)."""

import random

import pytest
import torch

from naive_syntax import NaiveRow, batch_tensors, random_rows
from syntax_nmt.syntax import tree as T_


@pytest.mark.parametrize("threshold", [0, 1, 3, 4])
def test_sla_mask_random_against_reference(threshold):
    rng = random.Random(100 + threshold)
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = T_.sla_mask(h, w, s, threshold)
        for b, row in enumerate(rows):
            assert got[b].tolist() == NaiveRow(*row).sla(threshold), row


@pytest.mark.parametrize("window", [0, 1, 3])
def test_wla_mask_random_against_reference(window):
    rng = random.Random(200 + window)
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = T_.wla_mask(w, s, window)
        for b, row in enumerate(rows):
            assert got[b].tolist() == NaiveRow(*row).wla(window), row


@pytest.mark.parametrize("max_distance", [1, 3, 5])
def test_syntax_bert_masks_random_against_reference(max_distance):
    rng = random.Random(300 + max_distance)
    for _ in range(60):
        rows = random_rows(rng)
        h, w, s = batch_tensors(rows)
        got = T_.syntax_bert_masks(h, w, s, max_distance)
        assert got.shape == (len(rows), 3 * max_distance, h.shape[1], h.shape[1])
        for b, row in enumerate(rows):
            exp = NaiveRow(*row).syntax_bert(max_distance)
            for k in range(3 * max_distance):
                assert got[b, k].tolist() == exp[k], (k, row)


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
    m = T_.sla_mask(h, w, s, 1)[0]
    # 'the'(0): neighbours {the, cat}; within 1 of the: the, cat; of cat: the, cat, sat
    assert m[0].tolist() == [True, True, True, False, False, False, False, False, False]
    # 'on'(3): neighbours sat(2), on, the(4): sat -> cat, sat, mat; on -> on, mat; the -> the, mat
    assert m[3].tolist() == [False, True, True, True, True, True, True, False, False]
    # pieces of 'mat' share their word's row; EOS and pad attend only to themselves
    assert torch.equal(m[5], m[6])
    assert m[7].tolist() == [False] * 7 + [True, False]
    assert m[8].tolist() == [False] * 8 + [True]


def test_syntax_bert_masks_by_hand():
    h, w, s = _hand_batch()
    M = T_.syntax_bert_masks(h, w, s, 2)[0]  # parent1, parent2, child1, child2, sibling1, sibling2
    parent1, parent2, child1, child2, sib1, sib2 = M
    # sat(2) is the parent of cat(1) and mat(5,6): row 2 allows them at d=1
    assert parent1[2].nonzero().flatten().tolist() == [1, 5, 6]
    assert parent2[2].nonzero().flatten().tolist() == [0, 3, 4]
    # both pieces of mat see sat as parent at d=1; the pieces never see each other
    assert child1[5].nonzero().flatten().tolist() == [2]
    assert child1[6].nonzero().flatten().tolist() == [2]
    assert not M[:, 5, 6].any() and not M[:, 6, 5].any()
    # siblings at distance 2: cat and mat (both children of sat); on and the(4) (children of mat)
    assert sib2[1].nonzero().flatten().tolist() == [5, 6]
    assert sib2[3].nonzero().flatten().tolist() == [4]
    assert not sib1.any()  # distance-1 pairs are always parent/child
    # specials are in no mask
    assert not M[:, 7:, :].any() and not M[:, :, 7:].any()


def test_masks_on_device_dtype_and_no_loops_over_batch():
    """Batched == one row at a time (the batch does not leak between rows)."""
    rng = random.Random(5)
    rows = random_rows(rng)
    while len(rows) < 3:
        rows = random_rows(rng)
    h, w, s = batch_tensors(rows)
    full = T_.syntax_bert_masks(h, w, s, 3)
    sla = T_.sla_mask(h, w, s, 3)
    for b in range(len(rows)):
        assert torch.equal(full[b:b + 1], T_.syntax_bert_masks(h[b:b + 1], w[b:b + 1], s[b:b + 1], 3))
        assert torch.equal(sla[b:b + 1], T_.sla_mask(h[b:b + 1], w[b:b + 1], s[b:b + 1], 3))
