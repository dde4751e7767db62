"""The lazy word tree (syntax_nmt.syntax.tree.WordTree, issue 48): each (B, T, T) fact is built when first read, is
the one its name says (``connected`` is "same tree", not "ancestor"), and does not depend on the order of reading.
Checked against the naive per-row reference (tests/support/naive.py: BFS distances) on a hand-made forest and on
random padded batches with several roots, multi-piece words, BOS and left padding."""

import random

import pytest
import torch

from support.naive import Ref, batch_tensors, random_rows
from syntax_nmt.syntax import tree as T_


def _tree(heads, word_start, special):
    return T_.word_tree(torch.tensor(heads), torch.tensor(word_start), torch.tensor(special))


# one row: BOS, then words w1 <- w2 (w2's head is w1), w3 a second root with a child w4 (two pieces), EOS:
# positions 0:BOS 1:w1 2:w2 3:w3 4:w4a 5:w4b 6:EOS
HEADS = [[0, 0, -1, 0, -1, 0, 0]]
STARTS = [[1, 1, 1, 1, 1, 0, 1]]
SPECIAL = [[True, False, False, False, False, False, True]]


def test_connected_is_the_same_tree_not_the_ancestors():
    tree = _tree(HEADS, STARTS, SPECIAL)
    c, a = tree.connected[0], tree.ancestor[0]
    assert bool(c[1, 2]) and bool(c[2, 1])          # parent and child: connected both ways
    assert bool(a[2, 1]) and not bool(a[1, 2])       # but the child's ancestor is the parent, not the reverse
    assert bool(c[3, 4]) and not bool(a[3, 4])       # the second tree
    assert not bool(c[1, 3]) and not bool(c[2, 4])   # two trees of the forest: not connected
    assert tree.dist[0, 2, 1].item() == 1 and tree.dist[0, 1, 3].item() == -1 and tree.dist[0, 4, 4].item() == 0
    assert torch.equal(c, c.transpose(0, 1))


def test_facts_are_built_when_first_read_and_once():
    tree = _tree(HEADS, STARTS, SPECIAL)
    # plain attributes, None until first read (not functools.cached_property: its lock stops torch.compile)
    assert tree._ancestor is None and tree._distances is None
    tree.parents  # LISA reads only the parents
    assert tree._ancestor is None and tree._distances is None
    a = tree.ancestor  # SG-Net reads only the ancestors
    assert tree._distances is None and tree.ancestor is a
    d = tree.dist
    assert tree.dist is d and tree.connected is tree._distances[1]


@pytest.mark.parametrize("first", ["connected", "dist", "ancestor"])
def test_the_order_of_reading_changes_nothing(first):
    rng = random.Random(11)
    heads, starts, special = batch_tensors(random_rows(rng))
    eager = T_.word_tree(heads, starts, special)
    want = {"ancestor": T_.ancestor_matrix(eager.parents)}
    want["dist"], want["connected"] = T_.tree_distances(want["ancestor"])
    lazy = T_.word_tree(heads, starts, special)
    getattr(lazy, first)
    for name in ("connected", "dist", "ancestor"):
        assert torch.equal(getattr(lazy, name), want[name]), name


def test_distances_and_connectivity_against_breadth_first_search():
    rng = random.Random(5)
    for _ in range(30):
        rows = random_rows(rng)
        heads, starts, special = batch_tensors(rows)
        tree = T_.word_tree(heads, starts, special)
        for b in range(heads.shape[0]):
            ref = Ref(heads[b].tolist(), starts[b].tolist(), special[b].tolist())
            bfs = ref.distances("shared")
            firsts = [i for i in range(ref.T) if ref.first[i] == i and not ref.special[i]]
            for i in firsts:
                for j in firsts:
                    assert tree.dist[b, i, j].item() == bfs[i][j], (b, i, j)
                    assert bool(tree.connected[b, i, j]) == (bfs[i][j] >= 0), (b, i, j)
