"""Naive references written straight from the papers' definitions: the one place for them.

One sentence (one padded row) at a time, in plain Python lists, loops and breadth-first searches; they share no
code with the batched implementation in ``syntax_nmt``. A padded row is described by lists ``heads``,
``word_start``, ``special`` with the stream conventions of the README ("Streams"): a word starts at
``word_start``, at a special token, right after one and at position 0; a word's head is read from its first
subword; a head outside the row, on a special token or on the word itself makes the word a root. Rows are laid out
(EOS, optional BOS, left or right padding) the way fairseq's collater does.

Sections, each with the paper and equation of what it computes:

* the word tree (:class:`Ref`): SG-Net's SDOI (Zhang et al., 2020, eq. 6), depths, tree distances;
* plain parent arrays: closure, parent, child and sibling matrices;
* the method masks (:class:`NaiveRow`): SLA and WLA (Li et al., 2021, eq. 2-3, sec. 4.1), Syntax-BERT's
  sub-network masks (Bai et al., 2021, sec. 3.2);
* SEPREM's correlation strength D̃ (Xu et al., 2021, sec. 4.3, eq. 3-4): :func:`naive_strength`;
* LISA's parse-attention targets (Strubell et al., 2018, sec. 2.2): :func:`naive_parents`;
* Syntax-BERT's attention layer (Bai et al., 2021, sec. 3.3, eq. 1-2): :func:`naive_syntax_bert`;
* parse noise, per word (SG-Net's robustness test, Zhang et al., 2020, sec. 7.6, as
  :mod:`syntax_nmt.syntax.noise` defines it): :func:`naive_heads`, :func:`naive_tags`;
* random padded batches for all of them: :func:`random_rows`.
"""

import math
import random
from collections import deque
from fractions import Fraction

import numpy as np
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
# The word tree (SG-Net, Zhang et al. 2020, eq. 6: the SDOI; depths, distances)
# --------------------------------------------------------------------------


class Ref:
    """The word tree of one padded row (``heads``, ``word_start``, ``special`` lists): parents under either subword
    convention, SG-Net's SDOI mask (eq. 6: a word and all its ancestors), depths and undirected tree distances."""

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
# The method masks: SLA, WLA (Li et al. 2021, eq. 2-3, sec. 4.1), Syntax-BERT (Bai et al. 2021, sec. 3.2)
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


# --------------------------------------------------------------------------
# SEPREM (Xu et al. 2021, sec. 4.3, eq. 3-4)
# --------------------------------------------------------------------------
def naive_strength(row: NaiveRow):
    """SEPREM's correlation strength: T x T Fractions, ``D̃_sub[i][j] = D̃[w(i), w(j)] / pieces(w(j))`` with
    ``D̃`` row-normalised ``1 / d`` over the other words of the word's tree (eq. 3-4); 0 for special rows and
    columns, between trees and between pieces of one word."""
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


# --------------------------------------------------------------------------
# LISA (Strubell et al. 2018, sec. 2.2)
# --------------------------------------------------------------------------
def naive_parents(row: NaiveRow):
    """The position LISA's parse head is trained to attend to from each token, its syntactic parent: the first
    subword of its word's head word; a root word's pieces and special tokens: themselves."""
    out = []
    for i in range(row.T):
        if row.special[i]:
            out.append(i)
            continue
        h = row.head[row.word_of[i]]
        out.append(i if h is None else h)
    return out


# --------------------------------------------------------------------------
# Syntax-BERT's layer (Bai et al. 2021, sec. 3.3, eq. 1-2)
# --------------------------------------------------------------------------
def naive_syntax_bert(mod, x, rows, pad, max_distance, global_subnet, mask_mode, sibling):
    """Eq. 1-2 one token and one sub-network at a time, in float64, with the weights of ``mod`` (a
    ``SyntaxBertAttention``) on input ``x`` ``(T, B, C)``; ``rows``: the padded rows, ``pad``: ``(B, T)`` key
    padding; the masks are :meth:`NaiveRow.syntax_bert`'s (plus the global sub-network if ``global_subnet``).

    Eq. 1: ``A_{h,j} = softmax(Q_h K_h^T (.) M_j / sqrt(d_h)) V_h``, ``H_j = (A_{1,j} + ... + A_{k,j}) W^O``
    (``+ b^O``, the output projection's bias); ``exclude``: keys outside ``M_j`` take no part;
    ``product``: their score is 0 (the literal ``(.)``); padded keys never take part. Eq. 2:
    ``H^O = softmax_j(q_task . H_j W^K / sqrt(d)) H_j W^V`` over the sub-networks in which the
    token has a key (``exclude``); no such sub-network: ``H^O = 0``.
    """
    dd = torch.float64
    lin = {n: (getattr(mod, n).weight.to(dd), getattr(mod, n).bias.to(dd))
           for n in ("q_proj", "k_proj", "v_proj", "out_proj")}
    WK, WV, q_task = mod.topic_key.weight.to(dd), mod.topic_value.weight.to(dd), mod.q_task.to(dd)
    T, B, C = x.shape
    H = mod.num_heads
    hd = C // H
    out = torch.zeros(T, B, C, dtype=dd)
    for b, row in enumerate(rows):
        masks = NaiveRow(*row).syntax_bert(max_distance, sibling)
        if global_subnet:
            masks = masks + [[[True] * T for _ in range(T)]]
        xb = x[:, b].to(dd)
        q = xb @ lin["q_proj"][0].t() + lin["q_proj"][1]
        k = xb @ lin["k_proj"][0].t() + lin["k_proj"][1]
        v = xb @ lin["v_proj"][0].t() + lin["v_proj"][1]
        for i in range(T):
            Hs = []  # H_j at token i, for the sub-networks j where token i takes part
            for M in masks:
                keys = [j for j in range(T) if not pad[b, j] and (M[i][j] or mask_mode == "product")]
                if not keys:
                    continue
                heads = []
                for h in range(H):
                    sl = slice(h * hd, (h + 1) * hd)
                    score = {j: float(q[i, sl] @ k[j, sl]) / math.sqrt(hd) * (1.0 if M[i][j] or
                                                                                mask_mode == "exclude" else 0.0)
                             for j in keys}
                    top = max(score.values())
                    e = {j: math.exp(score[j] - top) for j in keys}
                    z = sum(e.values())
                    heads.append(sum(e[j] / z * v[j, sl] for j in keys))  # A_{h,j} at token i
                Hs.append(torch.cat(heads) @ lin["out_proj"][0].t() + lin["out_proj"][1])  # H_j, eq. 1
            if not Hs:
                continue  # no sub-network: zero
            logits = [float(q_task @ (Hj @ WK.t())) / math.sqrt(C) for Hj in Hs]  # q_task . H_j W^K / sqrt(d)
            top = max(logits)
            e = [math.exp(t - top) for t in logits]
            out[i, b] = sum(ej / sum(e) * (Hj @ WV.t()) for ej, Hj in zip(e, Hs))  # eq. 2
    return out


# --------------------------------------------------------------------------
# Parse noise, per word (SG-Net, Zhang et al. 2020, sec. 7.6; syntax_nmt/syntax/noise.py)
# --------------------------------------------------------------------------
# Flat corpora as syntax_nmt.syntax.noise takes them: ``heads``, ``word_start``, ``tags`` over the tokens of
# every sentence (no special tokens), ``lengths`` the tokens per sentence; word ``w`` is corrupted iff
# ``selected[w]``, with the uniform number ``u[w]`` choosing its new value among the sorted candidates.
def naive_words(word_start, lengths):
    """[(sentence, first token, [token positions])] per word, in corpus order; a sentence's first token always
    starts a word."""
    out, pos = [], 0
    for s, n in enumerate(lengths):
        for i in range(n):
            if word_start[pos + i] or i == 0:
                out.append((s, pos + i, [pos + i]))
            else:
                out[-1][2].append(pos + i)
        pos += n
    return out


def naive_heads(heads, word_start, lengths, selected, u):
    """A selected word of a sentence of two or more words gets a head other than its current one: the root or
    another word of its sentence; every piece of the word points to the new head word's first token (0: root)."""
    words = naive_words(word_start, lengths)
    new = list(heads)
    for w, (s, first, toks) in enumerate(words):
        sent = [x for x in words if x[0] == s]
        n = len(sent)
        me = [x[1] for x in sent].index(first)
        target = first + heads[first]
        cur = -1
        if heads[first] != 0:
            for j, x in enumerate(sent):
                if target in x[2]:
                    cur = -1 if j == me else j
        if not selected[w] or n == 1:
            continue
        candidates = [c for c in [-1] + list(range(n)) if c not in (me, cur)]
        choice = candidates[int(u[w] * len(candidates))]
        for t in toks:
            new[t] = 0 if choice < 0 else sent[choice][1] - t
    return np.array(new)


def naive_tags(tags, word_start, lengths, choices, selected, u):
    """A selected word gets a tag of ``choices`` other than its first token's, on every piece."""
    new = list(tags)
    for w, (_, first, toks) in enumerate(naive_words(word_start, lengths)):
        candidates = [c for c in sorted(choices) if c != tags[first]]
        if not selected[w] or not candidates:
            continue
        for t in toks:
            new[t] = candidates[int(u[w] * len(candidates))]
    return np.array(new)


# --------------------------------------------------------------------------
# Random padded batches
# --------------------------------------------------------------------------
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
