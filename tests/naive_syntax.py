"""A naive, per-sentence reference for the syntax masks, written straight from the papers'
definitions with plain Python lists (no code shared with syntax_nmt.syntax.tree); the word
tree of a row is :class:`naive_tree.Ref`'s.

One padded row is described by lists ``heads``, ``word_start``, ``special`` with the stream
conventions of the README ("Streams"): a word starts at ``word_start``, at a special token,
right after one and at position 0; a word's head is read from its first subword; a head
outside the row, on a special token or on the word itself makes the word a root.
"""

import random

from naive_tree import Ref, make_batch, make_row

__all__ = ["NaiveRow", "random_rows", "batch_tensors"]


class NaiveRow(Ref):
    """The word tree of one padded row (segmentation and heads as :class:`naive_tree.Ref` reads
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
    """``(heads, word_start, special)`` tensors of padded rows (as :func:`naive_tree.make_batch`)."""
    return make_batch(rows)
