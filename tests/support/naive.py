"""Naive, one-sentence-at-a-time references written from the papers' definitions: the one place for them.

They share no code with the batched implementation in ``syntax_nmt`` (plain Python lists, loops and
breadth-first searches).

The word tree (SG-Net eq. 6 and the distances): the reference walks parent pointers one row at a time in plain Python (SG-Net eq. 6:
SDOI(i) = i and all its ancestors) and computes distances by breadth-first search over the
undirected tree, so it shares no logic with the batched implementation. It also lays out
padded rows (EOS, optional BOS, left or right padding) the way fairseq's collater does.

The method masks (SLA, WLA, Syntax-BERT, SEPREM): one padded row is described by lists ``heads``,
``word_start``, ``special`` with the stream conventions of the README ("Streams"): a word starts at
``word_start``, at a special token, right after one and at position 0; a word's head is read from its
first subword; a head outside the row, on a special token or on the word itself makes the word a root.
"""

import random
from collections import deque

import torch

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
    """Reference computations for one padded row (``heads``, ``word_start``, ``special`` lists)."""

    def __init__(self, heads, word_start, special):
        self.T = T = len(heads)
        self.heads = list(heads)
        self.special = special
        # word of each position: a new word starts at word_start, at special
        # tokens, right after a special token and at position 0
        self.word_starts = [i == 0 or bool(word_start[i]) or special[i] or special[i - 1] for i in range(T)]
        self.first = []
        cur = 0
        for i in range(T):
            if self.word_starts[i]:
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

    def abs_parent(self, i):
        p = i + self.heads[i]
        if self.special[i] or not (0 <= p < self.T) or self.special[p]:
            return i
        return p

    # parent pointers at subword level ---------------------------------
    def parent(self, i, convention):
        """The parent of subword ``i`` (None for a root) under a subword convention."""
        f = self.first[i]
        if convention == "first" and f != i:
            return f
        return self.word_head[f]  # word-level (first) or the word's head (shared)

    def word_parent(self, i):
        """Word tree on first-subword positions; roots, specials and non-first pieces: themselves."""
        if self.first[i] != i or self.word_head[i] is None:
            return i
        return self.word_head[i]

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

    def grid(self, rule, node_of=None):
        """T x T bool mask from ``rule(query node, key node)``; nodes are the positions' words
        (``node_of``: their first subwords by default); special rows: self only, special keys: never."""
        node_of = self.first if node_of is None else node_of
        T = self.T
        M = [[False] * T for _ in range(T)]
        for i in range(T):
            if self.special[i]:
                M[i][i] = True
                continue
            for j in range(T):
                if not self.special[j]:
                    M[i][j] = bool(rule(node_of[i], node_of[j]))
        return M

    def sdoi(self, convention):
        """SG-Net eq. 6: M[i, j] = 1 iff j in SDOI(i) (i itself or an ancestor)."""
        if convention == "shared":
            return self.grid(lambda wi, wj: wj in self.word_ancestors(wi))
        return self.grid(lambda i, j: j in self.subword_ancestors(i), node_of=list(range(self.T)))

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
# References on plain parent arrays (one row)
# --------------------------------------------------------------------------


def closure(parents):
    """Reflexive-transitive closure of a parent array (roots point to themselves; cycles allowed)."""
    T = len(parents)
    A = [[False] * T for _ in range(T)]
    for i in range(T):
        j, seen = i, set()
        while j not in seen:
            seen.add(j)
            A[i][j] = True
            j = parents[j]
    return A


def parent_matrix(parents, include_roots=True):
    T = len(parents)
    return [[parents[i] == j and (include_roots or i != j) for j in range(T)] for i in range(T)]


def children_matrix(parents):
    T = len(parents)
    return [[parents[j] == i and i != j for j in range(T)] for i in range(T)]


def sibling_matrix(parents):
    T = len(parents)
    return [[i != j and parents[i] == parents[j] and parents[i] != i and parents[j] != j for j in range(T)]
            for i in range(T)]


# --------------------------------------------------------------------------
# The method masks
# --------------------------------------------------------------------------
class NaiveRow(Ref):
    """The word tree of one padded row (segmentation and heads as :class:`Ref` reads
    them), with word-level ancestors and undirected BFS distances for the masks below."""

    def __init__(self, heads, word_start, special):
        super().__init__(heads, word_start, special)
        self.special = list(special)
        self.word_of = self.first  # first subword of each position's word
        self.words = [i for i in range(self.T) if self.first[i] == i and not special[i]]
        self.head = {w: self.word_head[w] for w in self.words}
        self._dist = self.distances("shared")  # -1: different trees

    def ancestors(self, w):
        """Proper ancestors of word w (cycle-safe)."""
        return self.word_ancestors(w)[1:]

    def d(self, a, b):
        """Word distance, None if different trees."""
        return None if self._dist[a][b] < 0 else self._dist[a][b]

    # --- SLA (Li et al. 2021, eq. 2-3) -------------------------------------------------
    def sentence_words(self):
        return [w for w in self.words]

    def neighbours(self, w):
        """The word itself and the previous/next word of the same sentence (no special between)."""
        out = [w]
        i = w - 1
        if i >= 0 and not self.special[i]:
            out.append(self.word_of[i])
        j = w + 1
        while j < self.T and self.word_of[j] == w:
            j += 1
        if j < self.T and not self.special[j]:
            out.append(j)
        return out

    def sla(self, m):
        def rule(wi, wj):
            ds = [self.d(k, wj) for k in self.neighbours(wi)]
            ds = [x for x in ds if x is not None]
            return bool(ds) and min(ds) <= m
        return self.grid(rule)

    def wla(self, k, unit="word"):
        """Li et al. sec. 4.1's window of size 2k + 1, over the row's words or its (non-special) tokens."""
        if unit == "word":
            order = {w: n for n, w in enumerate(self.words)}
            return self.grid(lambda wi, wj: abs(order[wi] - order[wj]) <= k)
        order = {i: n for n, i in enumerate(i for i in range(self.T) if not self.special[i])}
        return self.grid(lambda i, j: abs(order[i] - order[j]) <= k, node_of=list(range(self.T)))

    # --- Syntax-BERT (Bai et al. 2021, sec. 3.2) --------------------------------------
    def lca(self, a, b):
        """Lowest common ancestor(-or-self) of words a and b: the first ancestor of a (walking up
        from a) that is also an ancestor of b; None if they have none (different trees)."""
        up_b = set(self.word_ancestors(b))
        return next((x for x in self.word_ancestors(a) if x in up_b), None)

    def syntax_bert(self, D, sibling="lca"):
        """List of T x T grids: parent d=1..D, child d=1..D, sibling d=1..D (``disjoint``: d=2..D,
        its d=1 being always empty); specials in none.

        Sec. 3.2: parent M^p_{i,j,d} = 1 iff i is the parent or an ancestor of j and dist(i, j) = d;
        child M^c: j is the parent or an ancestor of i; sibling M^s: "we can find their lowest common
        ancestor and dist(i, j) = d" (``lca``); ``disjoint`` also asks that neither is an ancestor of
        the other."""
        T = self.T
        out = []

        def grid(rule):
            return [[(not self.special[i] and not self.special[j] and bool(rule(self.word_of[i], self.word_of[j])))
                     for j in range(T)] for i in range(T)]

        for d in range(1, D + 1):
            out.append(grid(lambda wi, wj, d=d: wi in self.ancestors(wj) and self.d(wi, wj) == d))
        for d in range(1, D + 1):
            out.append(grid(lambda wi, wj, d=d: wj in self.ancestors(wi) and self.d(wi, wj) == d))
        if sibling == "lca":
            for d in range(1, D + 1):
                out.append(grid(lambda wi, wj, d=d: self.lca(wi, wj) is not None and self.d(wi, wj) == d))
        else:
            for d in range(2, D + 1):
                out.append(grid(lambda wi, wj, d=d: self.d(wi, wj) == d and wi not in self.ancestors(wj)
                                and wj not in self.ancestors(wi)))
        return out


def _random_sentence(rng):
    n_words = rng.randint(1, 9)
    order = list(range(n_words))
    rng.shuffle(order)
    head_word = [None] * n_words
    for k, w in enumerate(order):
        if k > 0 and rng.random() > 0.15:  # several roots now and then
            head_word[w] = order[rng.randrange(k)]
    pieces = [rng.choice([1, 1, 1, 2, 3]) for _ in range(n_words)]
    first, pos = [], 0
    for p in pieces:
        first.append(pos)
        pos += p
    heads, ws = [], []
    for w in range(n_words):
        for k in range(pieces[w]):
            heads.append(0 if head_word[w] is None else first[head_word[w]] - (first[w] + k))
            ws.append(k == 0)
    r = rng.random()
    if r < 0.15 and len(heads) > 2:  # truncated at the end: heads may point outside
        cut = rng.randint(1, len(heads) - 1)
        heads, ws = heads[:cut], ws[:cut]
    elif r < 0.25 and len(heads) > 2:  # cut at the start, possibly mid-word
        cut = rng.randint(1, len(heads) - 1)
        heads, ws = heads[cut:], ws[cut:]
    return heads, ws


def random_rows(rng: random.Random):
    """A padded batch (list of (heads, word_start, special) rows): random forests with several
    roots, multi-piece words, truncation, left or right padding per row, optional BOS, EOS."""
    sents = [_random_sentence(rng) for _ in range(rng.randint(1, 5))]
    bos = rng.random() < 0.3
    length = max(len(h) for h, _ in sents) + 1 + int(bos) + rng.randint(0, 3)
    # left or right padding drawn per row (make_row lays the row out as fairseq's collater does)
    return [make_row(h, w, length, left_pad=rng.random() < 0.5, bos=bos)[:3] for h, w in sents]


def batch_tensors(rows):
    """``(heads, word_start, special)`` tensors of padded rows (as :func:`make_batch`)."""
    return make_batch(rows)
