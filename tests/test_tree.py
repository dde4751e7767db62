"""Tests for syntax_nmt.syntax.tree against a naive per-sentence reference.

The reference walks parent pointers one sentence at a time, straight from the
definitions (SG-Net eq. 6: SDOI(i) = i and all its ancestors), and computes
distances by breadth-first search over the undirected tree, so it shares no
logic with the batched implementation. Random cases use seeded loops
(hypothesis is not a dependency of the project venv).
"""

import random
import subprocess
import sys
from collections import deque

import pytest
import torch

from syntax_nmt.syntax import tree as T_

# --------------------------------------------------------------------------
# Building padded batches from per-sentence data
# --------------------------------------------------------------------------


def make_row(heads, word_start, length, left_pad, bos=False):
    """Lay out one sentence (+EOS, optional BOS) padded to ``length``.

    Returns (heads, word_start, special, offset) where ``offset`` is the
    position of the first real token.
    """
    n = len(heads)
    body_h = ([0] if bos else []) + list(heads) + [0]
    body_w = ([True] if bos else []) + list(word_start) + [True]
    body_s = ([True] if bos else []) + [False] * n + [True]
    npad = length - len(body_h)
    assert npad >= 0
    if left_pad:
        h = [0] * npad + body_h
        w = [True] * npad + body_w
        s = [True] * npad + body_s
        off = npad + (1 if bos else 0)
    else:
        h = body_h + [0] * npad
        w = body_w + [True] * npad
        s = body_s + [True] * npad
        off = 1 if bos else 0
    return h, w, s, off


def make_batch(rows):
    h = torch.tensor([r[0] for r in rows], dtype=torch.long)
    w = torch.tensor([r[1] for r in rows], dtype=torch.bool)
    s = torch.tensor([r[2] for r in rows], dtype=torch.bool)
    return h, w, s


# --------------------------------------------------------------------------
# Naive reference (one padded row at a time, plain Python)
# --------------------------------------------------------------------------


class Ref:
    """Reference computations for one padded row."""

    def __init__(self, heads, word_start, special):
        self.T = T = len(heads)
        self.special = special
        # word of each position: a new word starts at word_start, at special
        # tokens, right after a special token and at position 0
        self.first = []
        cur = 0
        for i in range(T):
            if i == 0 or word_start[i] or special[i] or special[i - 1]:
                cur = i
            self.first.append(cur)
        # word-level head (as the first subword of the head word), read from
        # the word's first subword only; None for roots
        self.word_head = {}
        for i in range(T):
            if self.first[i] != i:
                continue
            p = i + heads[i]
            if special[i] or not (0 <= p < T) or special[p] or self.first[p] == i:
                self.word_head[i] = None
            else:
                self.word_head[i] = self.first[p]

    def abs_parent(self, i, heads):
        p = i + heads[i]
        if self.special[i] or not (0 <= p < self.T) or self.special[p]:
            return i
        return p

    # parent pointers at subword level ---------------------------------
    def parent(self, i, convention):
        f = self.first[i]
        if convention == "first" and f != i:
            return f
        return self.word_head[f]  # word-level (first) or the word's head (shared)

    def ancestors_or_self(self, node, parent_fn):
        out, seen = [node], {node}
        p = parent_fn(node)
        while p is not None and p not in seen:
            out.append(p)
            seen.add(p)
            p = parent_fn(p)
        return out

    def word_ancestors(self, f):
        return self.ancestors_or_self(f, lambda w: self.word_head[w])

    def subword_ancestors(self, i):
        return self.ancestors_or_self(i, lambda j: self.parent(j, "first"))

    def sdoi(self, convention):
        """SG-Net eq. 6: M[i, j] = 1 iff j in SDOI(i) (i itself or an ancestor)."""
        T = self.T
        M = [[False] * T for _ in range(T)]
        for i in range(T):
            if self.special[i]:
                M[i][i] = True
                continue
            if convention == "shared":
                anc_words = set(self.word_ancestors(self.first[i]))
                for j in range(T):
                    M[i][j] = (not self.special[j]) and self.first[j] in anc_words
            else:
                for j in self.subword_ancestors(i):
                    M[i][j] = True
        return M

    def depth(self, convention):
        if convention == "shared":
            return [len(self.word_ancestors(self.first[i])) - 1 for i in range(self.T)]
        return [len(self.subword_ancestors(i)) - 1 for i in range(self.T)]

    def distances(self, convention):
        """BFS path lengths over the undirected tree; -1 if unreachable."""
        T = self.T
        if convention == "shared":
            nodes = sorted(set(self.first))
            par = {w: self.word_head[w] for w in nodes}
        else:
            nodes = list(range(T))
            par = {i: self.parent(i, "first") for i in nodes}
        adj = {n: [] for n in nodes}
        for n, p in par.items():
            if p is not None:
                adj[n].append(p)
                adj[p].append(n)
        dist_nodes = {}
        for s in nodes:
            d = {s: 0}
            q = deque([s])
            while q:
                u = q.popleft()
                for v in adj[u]:
                    if v not in d:
                        d[v] = d[u] + 1
                        q.append(v)
            dist_nodes[s] = d
        node_of = self.first if convention == "shared" else list(range(T))
        return [[dist_nodes[node_of[i]].get(node_of[j], -1) for j in range(T)] for i in range(T)]


# --------------------------------------------------------------------------
# Random sentences
# --------------------------------------------------------------------------


def random_sentence(rng):
    """Random forest over words, random subword splits, optional truncation.

    Returns per-subword (heads, word_start) as in the ``head``/``subword``
    streams of the contract.
    """
    n_words = rng.randint(1, 9)
    order = list(range(n_words))
    rng.shuffle(order)
    head_word = [None] * n_words
    for k, w in enumerate(order):
        if k > 0 and rng.random() > 0.15:  # a few extra roots now and then
            head_word[w] = order[rng.randrange(k)]
    pieces = [rng.choice([1, 1, 1, 2, 3]) for _ in range(n_words)]
    first_pos, pos = [], 0
    for p in pieces:
        first_pos.append(pos)
        pos += p
    heads, wstart = [], []
    for w in range(n_words):
        for k in range(pieces[w]):
            i = first_pos[w] + k
            heads.append(0 if head_word[w] is None else first_pos[head_word[w]] - i)
            wstart.append(k == 0)
    # truncation: heads may then point outside the kept span (they become roots)
    r = rng.random()
    if r < 0.15 and len(heads) > 2:
        cut = rng.randint(1, len(heads) - 1)
        heads, wstart = heads[:cut], wstart[:cut]
    elif r < 0.25 and len(heads) > 2:
        cut = rng.randint(1, len(heads) - 1)  # may start mid-word
        heads, wstart = heads[cut:], wstart[cut:]
    return heads, wstart


def random_batch(rng):
    sents = [random_sentence(rng) for _ in range(rng.randint(1, 5))]
    bos = rng.random() < 0.2
    length = max(len(h) for h, _ in sents) + 1 + int(bos) + rng.randint(0, 3)
    rows = [make_row(h, w, length, left_pad=rng.random() < 0.5, bos=bos) for h, w in sents]
    return rows


# --------------------------------------------------------------------------
# Random comparisons with the reference
# --------------------------------------------------------------------------


def test_random_against_reference():
    rng = random.Random(1234)
    for _ in range(100):
        rows = random_batch(rng)
        heads, ws, sp = make_batch(rows)
        parents = T_.absolute_parents(heads, sp)
        results = {c: (T_.syntax_tree(heads, ws, sp, c), T_.syntax_distances(heads, ws, sp, c)) for c in T_.CONVENTIONS}
        for b, (h, w, s, _) in enumerate(rows):
            ref = Ref(h, w, s)
            assert parents[b].tolist() == [ref.abs_parent(i, h) for i in range(len(h))]
            for conv, (tree, (dist, conn)) in results.items():
                exp_mask = ref.sdoi(conv)
                assert tree.ancestor[b].tolist() == exp_mask, (conv, h, w, s)
                assert tree.depth[b].tolist() == ref.depth(conv), (conv, h, w, s)
                exp_dist = ref.distances(conv)
                assert dist[b].tolist() == exp_dist, (conv, h, w, s)
                assert conn[b].tolist() == [[d >= 0 for d in r] for r in exp_dist]


def test_tree_distances_and_depths_on_first_convention_tree():
    """The low-level API (parents -> ancestor -> depths -> distances)."""
    rng = random.Random(7)
    for _ in range(40):
        rows = random_batch(rng)
        heads, ws, sp = make_batch(rows)
        parents = T_.subword_parents(heads, ws, sp, "first")
        A = T_.ancestor_matrix(parents)
        d = T_.depths(A)
        dist, conn = T_.tree_distances(A, d)
        for b, (h, w, s, _) in enumerate(rows):
            ref = Ref(h, w, s)
            assert parents[b].tolist() == [
                i if ref.parent(i, "first") is None else ref.parent(i, "first") for i in range(len(h))
            ]
            assert d[b].tolist() == ref.depth("first")
            assert dist[b].tolist() == ref.distances("first")
            assert (conn[b] == (dist[b] >= 0)).all()
        # symmetric, zero diagonal
        assert torch.equal(dist, dist.transpose(1, 2))
        assert (dist.diagonal(dim1=1, dim2=2) == 0).all()


def test_ancestor_matrix_deep_chains():
    """Chains i -> i-1 need every doubling step (lengths around powers of two)."""
    for T in [1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 64, 65]:
        parents = (torch.arange(T) - 1).clamp(min=0).unsqueeze(0)
        A = T_.ancestor_matrix(parents)
        assert torch.equal(A[0], torch.ones(T, T, dtype=torch.bool).tril()), T
        assert T_.depths(A)[0].tolist() == list(range(T))
        dist, conn = T_.tree_distances(A)
        idx = torch.arange(T)
        assert torch.equal(dist[0], (idx[:, None] - idx[None, :]).abs())
        assert conn.all()


def test_cycles_terminate():
    # 0 -> 1 -> 2 -> 0 is a cycle, 3 -> 0 hangs below it; heads are relative
    heads = torch.tensor([[1, 1, -2, -3]])
    ws = torch.ones(1, 4, dtype=torch.bool)
    sp = torch.zeros(1, 4, dtype=torch.bool)
    for conv in T_.CONVENTIONS:
        m = T_.sdoi_mask(heads, ws, sp, conv)
        assert m[0, :3, :3].all()  # the cycle sees itself
        assert m[0, 3].all()
        assert m.diagonal(dim1=1, dim2=2).all()
        dist, _ = T_.syntax_distances(heads, ws, sp, conv)  # finite, no hang
        assert dist.shape == (1, 4, 4)


# --------------------------------------------------------------------------
# The SG-Net example
# --------------------------------------------------------------------------

# SG-Net (Zhang et al.) illustrates the SDOI with a sentence in which "credit"
# attends only to "reflects", "losses" and itself: "credit" depends on
# "losses", which depends on the root "reflects". The full sentence of the
# figure could not be retrieved here; this hand-built parse keeps exactly
# those three words on credit's path to the root.
SGNET_WORDS = ["The", "increase", "reflects", "higher", "credit", "losses", "."]
SGNET_HEADS = [2, 3, 0, 6, 6, 3, 3]  # 1-based CoNLL-U heads, 0 = root


def conllu_to_relative(heads_1based, pieces=None):
    """Per-subword relative offsets (contract ``head`` stream) and word_start."""
    pieces = pieces or [1] * len(heads_1based)
    first, pos = [], 0
    for p in pieces:
        first.append(pos)
        pos += p
    rel, ws = [], []
    for w, hd in enumerate(heads_1based):
        for k in range(pieces[w]):
            rel.append(0 if hd == 0 else first[hd - 1] - (first[w] + k))
            ws.append(k == 0)
    return rel, ws, first


@pytest.mark.parametrize("left_pad", [False, True])
def test_sgnet_example_credit_row(left_pad):
    rel, ws, _ = conllu_to_relative(SGNET_HEADS)
    row = make_row(rel, ws, len(rel) + 3, left_pad=left_pad)
    heads, wsb, sp = make_batch([row])
    off = row[3]
    m = T_.sdoi_mask(heads, wsb, sp)[0]
    credit = off + SGNET_WORDS.index("credit")
    allowed = {SGNET_WORDS[j - off] for j in range(m.shape[1]) if m[credit, j]}
    assert allowed == {"credit", "losses", "reflects"}
    # the root attends only to itself; "The" sees "increase" and "reflects"
    r = off + SGNET_WORDS.index("reflects")
    assert m[r].nonzero().flatten().tolist() == [r]
    the = off + SGNET_WORDS.index("The")
    assert {SGNET_WORDS[j - off] for j in m[the].nonzero().flatten().tolist()} == {"The", "increase", "reflects"}
    # depths and distances of the word tree
    tree = T_.syntax_tree(heads, wsb, sp)
    assert tree.depth[0, off : off + 7].tolist() == [2, 1, 0, 2, 2, 1, 1]
    dist, conn = T_.syntax_distances(heads, wsb, sp)
    assert dist[0, credit, the].item() == 4  # credit-losses-reflects-increase-The
    assert dist[0, credit, off + SGNET_WORDS.index("higher")].item() == 2


def test_sgnet_example_with_subwords():
    # "cre@@ dit" and "reflec@@ ts": shared convention -> every piece of "credit"
    # sees both pieces of credit, "losses" and both pieces of "reflects".
    pieces = [1, 1, 2, 1, 2, 1, 1]
    rel, ws, _ = conllu_to_relative(SGNET_HEADS, pieces)
    toks = ["The", "increase", "reflec@@", "ts", "higher", "cre@@", "dit", "losses", "."]
    heads, wsb, sp = make_batch([make_row(rel, ws, len(rel) + 1, left_pad=False)])
    m = T_.sdoi_mask(heads, wsb, sp, "shared")[0]
    for piece in ("cre@@", "dit"):
        i = toks.index(piece)
        assert {toks[j] for j in m[i].nonzero().flatten().tolist()} == {"cre@@", "dit", "losses", "reflec@@", "ts"}
    m = T_.sdoi_mask(heads, wsb, sp, "first")[0]
    assert {toks[j] for j in m[toks.index("dit")].nonzero().flatten().tolist()} == {"dit", "cre@@", "losses", "reflec@@"}
    assert {toks[j] for j in m[toks.index("cre@@")].nonzero().flatten().tolist()} == {"cre@@", "losses", "reflec@@"}


# --------------------------------------------------------------------------
# Both subword conventions, mask spelled out
# --------------------------------------------------------------------------


def test_conventions_hand_built():
    # words: A(root)  B=b1 b2 (head A)  C=c1 c2 c3 (head B), then EOS, 1 pad
    # positions:  0   1  2   3  4  5   6    7
    heads = torch.tensor([[0, -1, -2, -2, -3, -4, 0, 0]])
    ws = torch.tensor([[1, 1, 0, 1, 0, 0, 1, 1]], dtype=torch.bool)
    sp = torch.tensor([[0, 0, 0, 0, 0, 0, 1, 1]], dtype=torch.bool)
    shared = [
        # A  b1 b2 c1 c2 c3 EOS PAD
        [1, 0, 0, 0, 0, 0, 0, 0],  # A
        [1, 1, 1, 0, 0, 0, 0, 0],  # b1
        [1, 1, 1, 0, 0, 0, 0, 0],  # b2
        [1, 1, 1, 1, 1, 1, 0, 0],  # c1
        [1, 1, 1, 1, 1, 1, 0, 0],  # c2
        [1, 1, 1, 1, 1, 1, 0, 0],  # c3
        [0, 0, 0, 0, 0, 0, 1, 0],  # EOS
        [0, 0, 0, 0, 0, 0, 0, 1],  # PAD
    ]
    first = [
        [1, 0, 0, 0, 0, 0, 0, 0],  # A
        [1, 1, 0, 0, 0, 0, 0, 0],  # b1 -> A
        [1, 1, 1, 0, 0, 0, 0, 0],  # b2 -> b1 -> A
        [1, 1, 0, 1, 0, 0, 0, 0],  # c1 -> b1 -> A
        [1, 1, 0, 1, 1, 0, 0, 0],  # c2 -> c1
        [1, 1, 0, 1, 0, 1, 0, 0],  # c3 -> c1
        [0, 0, 0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 1],
    ]
    assert T_.sdoi_mask(heads, ws, sp, "shared")[0].int().tolist() == shared
    assert T_.sdoi_mask(heads, ws, sp, "first")[0].int().tolist() == first
    assert T_.subword_parents(heads, ws, sp, "first")[0].tolist() == [0, 0, 1, 1, 3, 3, 6, 7]
    assert T_.subword_parents(heads, ws, sp, "shared")[0].tolist() == [0, 0, 0, 1, 1, 1, 6, 7]
    assert T_.syntax_tree(heads, ws, sp, "shared").depth[0].tolist() == [0, 1, 1, 2, 2, 2, 0, 0]
    assert T_.syntax_tree(heads, ws, sp, "first").depth[0].tolist() == [0, 1, 2, 2, 3, 3, 0, 0]
    d_sh, _ = T_.syntax_distances(heads, ws, sp, "shared")
    d_fi, _ = T_.syntax_distances(heads, ws, sp, "first")
    assert d_sh[0, 4].tolist() == [2, 1, 1, 0, 0, 0, -1, -1]  # from c2
    assert d_fi[0, 4].tolist() == [3, 2, 3, 1, 0, 2, -1, -1]
    # int16 heads (binarized stream dtype) give the same result
    assert torch.equal(T_.sdoi_mask(heads.short(), ws, sp), T_.sdoi_mask(heads, ws, sp))


def test_bad_convention():
    h = torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(ValueError):
        T_.sdoi_mask(h, h.bool() | True, h.bool(), "last")


# --------------------------------------------------------------------------
# Padding, special tokens, softmax safety
# --------------------------------------------------------------------------


def test_left_vs_right_padding_same_masks():
    rng = random.Random(99)
    for _ in range(20):
        sents = [random_sentence(rng) for _ in range(3)]
        L = max(len(h) for h, _ in sents) + 1 + rng.randint(0, 4)
        right = [make_row(h, w, L, left_pad=False) for h, w in sents]
        left = [make_row(h, w, L, left_pad=True) for h, w in sents]
        for conv in T_.CONVENTIONS:
            mr = T_.sdoi_mask(*make_batch(right), conv)
            ml = T_.sdoi_mask(*make_batch(left), conv)
            dr, _ = T_.syntax_distances(*make_batch(right), conv)
            dl, _ = T_.syntax_distances(*make_batch(left), conv)
            for b, (h, _) in enumerate(sents):
                n = len(h) + 1  # real tokens + EOS
                ro, lo = right[b][3], left[b][3]
                assert torch.equal(mr[b, ro : ro + n, ro : ro + n], ml[b, lo : lo + n, lo : lo + n])
                assert torch.equal(dr[b, ro : ro + n, ro : ro + n], dl[b, lo : lo + n, lo : lo + n])


def test_special_tokens_self_only_and_rows_nonempty():
    rng = random.Random(5)
    for _ in range(30):
        heads, ws, sp = make_batch(random_batch(rng))
        for conv in T_.CONVENTIONS:
            m = T_.sdoi_mask(heads, ws, sp, conv)
            assert m.any(-1).all()
            assert m.diagonal(dim1=1, dim2=2).all()
            eye = torch.eye(m.shape[1], dtype=torch.bool)
            # special rows: only themselves; special columns: only themselves
            assert torch.equal(m & sp[:, :, None], eye & sp[:, :, None])
            assert torch.equal(m & sp[:, None, :], eye & sp[:, None, :])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("fill", [None, float("-inf")])
def test_additive_mask_softmax_no_nan(dtype, fill):
    rng = random.Random(11)
    heads, ws, sp = make_batch(random_batch(rng))
    allowed = T_.sdoi_mask(heads, ws, sp)
    mask = T_.additive_mask(allowed, dtype, fill_value=fill)
    assert mask.dtype == dtype
    assert (mask[allowed] == 0).all()
    g = torch.Generator().manual_seed(0)
    scores = (torch.randn(allowed.shape, generator=g) * 30).to(dtype)
    # also a few extreme scores
    scores[..., 0] = torch.finfo(dtype).min / 4
    for probs in (torch.softmax(scores + mask, dim=-1), torch.softmax((scores + mask).float(), dim=-1)):
        assert torch.isfinite(probs).all()
        assert (probs[~allowed] == 0).all()
        assert torch.allclose(probs.float().sum(-1), torch.ones(allowed.shape[:2]), atol=1e-2)


# --------------------------------------------------------------------------
# Extras for other syntax-attention methods
# --------------------------------------------------------------------------


def test_parent_children_sibling_matrices():
    parents = torch.tensor([[0, 0, 0, 1, 1, 5]])  # 0 root, 1,2 <- 0, 3,4 <- 1, 5 root
    P = T_.parent_matrix(parents)
    assert P.sum(-1).tolist() == [[1] * 6]
    assert P[0].nonzero().tolist() == [[0, 0], [1, 0], [2, 0], [3, 1], [4, 1], [5, 5]]
    assert T_.parent_matrix(parents, include_roots=False)[0, 0].sum() == 0
    C = T_.children_matrix(parents)
    assert C[0].nonzero().tolist() == [[0, 1], [0, 2], [1, 3], [1, 4]]
    S = T_.sibling_matrix(parents)
    assert S[0].nonzero().tolist() == [[1, 2], [2, 1], [3, 4], [4, 3]]


# --------------------------------------------------------------------------
# Import hygiene and devices
# --------------------------------------------------------------------------


def test_imports_without_fairseq():
    code = (
        "import sys; sys.modules['fairseq'] = None\n"
        "import syntax_nmt.syntax.tree as t\n"
        "assert sys.modules['fairseq'] is None\n"
        "assert not any(m.startswith('fairseq.') for m in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu_without_sync_under_autocast():
    rng = random.Random(3)
    heads, ws, sp = make_batch(random_batch(rng))
    cpu = {c: (T_.sdoi_mask(heads, ws, sp, c), T_.syntax_distances(heads, ws, sp, c)) for c in T_.CONVENTIONS}
    h, w, s = heads.cuda(), ws.cuda(), sp.cuda()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        with torch.autocast("cuda", dtype=torch.float16):
            out = {c: (T_.sdoi_mask(h, w, s, c), T_.syntax_distances(h, w, s, c)) for c in T_.CONVENTIONS}
            mask = T_.additive_mask(out["shared"][0], torch.float16)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for c in T_.CONVENTIONS:
        assert out[c][0].device.type == "cuda"
        assert torch.equal(out[c][0].cpu(), cpu[c][0])
        assert torch.equal(out[c][1][0].cpu(), cpu[c][1][0])
        assert torch.equal(out[c][1][1].cpu(), cpu[c][1][1])
    assert mask.dtype == torch.float16
