"""Naive, one-sentence-at-a-time references for syntax_nmt.syntax.tree, written from the definitions.

The reference walks parent pointers one row at a time in plain Python (SG-Net eq. 6:
SDOI(i) = i and all its ancestors) and computes distances by breadth-first search over the
undirected tree, so it shares no logic with the batched implementation. It also lays out
padded rows (EOS, optional BOS, left or right padding) the way fairseq's collater does.
"""

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
