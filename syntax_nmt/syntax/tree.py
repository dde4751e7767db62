"""Batched dependency-tree math shared by the syntax methods (pure torch, no fairseq): word index, parents,
ancestors, depths, distances, the word-level tree of a batch. A method's own masks and weights are pure torch
functions next to the method, in ``syntax_nmt/models/modules/methods/NAME_masks.py``.

Every function works on a padded batch of sentences (``B`` rows of ``T``
positions, left- or right-padded), on whatever device the inputs live, without
Python loops over tokens or sentences (only ``ceil(log2(T))`` pointer-doubling
steps), without host-device synchronisation and without data-dependent Python
control flow, so that it can run inside a model's forward pass under fp16/bf16
autocast.

Inputs (the stream contract: README.md, section "Streams"; streams ``head`` and ``subword``):

* ``heads`` ``(B, T)`` integer: relative offset from each subword to the FIRST
  subword of its word's head word; ``0`` for every subword of a root word and
  for special tokens (pad, EOS, BOS).
* ``word_start`` ``(B, T)`` bool: True at the first subword of each word
  (subword tags ``B`` and ``O``) and at special tokens.
* ``special`` ``(B, T)`` bool: True at pad/EOS/BOS. Special tokens are never
  parents of words and attend only to themselves.

Conventions:

* Only the head offset of a word's FIRST subword is read; the offsets of its
  other pieces are ignored (the annotation writes the same target for all
  of them).
* A head that points outside ``[0, T)`` (a truncated sentence), onto a special
  token, or onto the token itself makes the word a root; so do heads of
  special tokens. A sentence may therefore have several roots.
* Words never span special tokens: a position right after a special token (or
  at position 0) starts a new word even if ``word_start`` is False there.
* Subword conventions (SG-Net, Zhang et al. 2020, sec. 3.2-3.4):

  - ``"shared"`` (default): all subwords of a word share their word's node.
    Subword ``i`` may attend to every subword of every word that is an
    ancestor-or-self of ``i``'s word (including the other pieces of its own
    word); depths and distances are those of the words (two pieces of the
    same word are at distance 0).
  - ``"first"``: the first subword heads the rest. A non-first subword's parent
    is its word's first subword; first subwords use the word-level parent
    (the first subword of the head word). Depths and distances are measured
    in this subword tree (a non-first piece is one edge below its first piece;
    two non-first pieces of a word are siblings at distance 2).

Bad input (cycles in ``heads``) never hangs: every loop has a fixed iteration
count; nodes on a cycle simply see the whole cycle as ancestors.
"""

import math
from typing import NamedTuple, Optional, Tuple

import torch

CONVENTIONS = ("shared", "first")


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown subword convention {convention!r}, expected one of {CONVENTIONS}")


def _num_doubling_steps(T: int) -> int:
    """Pointer-doubling steps needed to cover paths of up to ``T - 1`` edges."""
    return max(1, math.ceil(math.log2(max(T, 2))))


def absolute_parents(heads: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Turn relative head offsets into absolute parent positions.

    ``p = i + heads[b, i]``; if ``p`` is outside ``[0, T)``, lands on a special
    position, or token ``i`` is itself special, then ``p = i`` (a root).

    Args:
        heads: ``(B, T)`` integer tensor (any integer dtype) of relative offsets.
        special: ``(B, T)`` bool, True at pad/EOS/BOS.

    Returns:
        ``(B, T)`` long tensor of absolute parent positions; roots point to
        themselves.
    """
    B, T = heads.shape
    special = special.bool()
    pos = torch.arange(T, device=heads.device).unsqueeze(0).expand(B, T)
    p = pos + heads.long()
    inside = (p >= 0) & (p < T)
    p_safe = torch.where(inside, p, pos)
    valid = inside & ~special & ~special.gather(1, p_safe)
    return torch.where(valid, p_safe, pos)


def effective_word_start(word_start: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Word boundaries made safe: every special token is a one-piece word, and
    a word never continues across a special token or from position 0.

    Args:
        word_start: ``(B, T)`` bool, True at first subwords (and special tokens).
        special: ``(B, T)`` bool, True at pad/EOS/BOS.

    Returns:
        ``(B, T)`` bool, ``word_start | special | special[i-1] | (i == 0)``.
    """
    special = special.bool()
    after_special = torch.zeros_like(special)
    after_special[:, 1:] = special[:, :-1]
    ws = word_start.bool() | special | after_special
    ws[:, 0] = True
    return ws


def word_start_index(word_start: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Position of the first subword of each position's word.

    Args:
        word_start: ``(B, T)`` bool, True at first subwords (and special tokens).
        special: ``(B, T)`` bool, True at pad/EOS/BOS.

    Returns:
        ``(B, T)`` long; equals the position itself at first subwords and at
        special tokens.
    """
    B, T = word_start.shape
    ws = effective_word_start(word_start, special)
    pos = torch.arange(T, device=word_start.device).unsqueeze(0).expand(B, T)
    return torch.cummax(torch.where(ws, pos, torch.zeros_like(pos)), dim=1).values


def word_parents(heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor,
                 word_index: torch.Tensor = None) -> torch.Tensor:
    """Word-level dependency tree placed on first-subword positions.

    Each word is represented by its first subword ``f``; its parent is the first
    subword of its head word (``word_start_index`` of ``f + heads[f]``, so a head
    pointing into the middle of a word still selects that word). Roots, special
    tokens and non-first subwords point to themselves (the latter are not nodes
    of the word tree).

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        word_index: :func:`word_start_index` of ``word_start`` and ``special``, if the caller has it.

    Returns:
        ``(B, T)`` long parent positions.
    """
    B, T = heads.shape
    pos = torch.arange(T, device=heads.device).unsqueeze(0).expand(B, T)
    wsi = word_start_index(word_start, special) if word_index is None else word_index
    p = absolute_parents(heads, special)
    wp = wsi.gather(1, p)
    is_first = wsi == pos
    return torch.where(is_first, wp, pos)


def subword_parents(
    heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, convention: str
) -> torch.Tensor:
    """Parent position of every subword under a subword convention.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        convention: ``"first"``: a non-first subword's parent is its word's first
            subword, first subwords use the word-level parent (a proper tree over
            subwords). ``"shared"``: every piece's parent is the first subword of
            its word's head word (what every piece "sees" as its head; pieces of a
            root word point to themselves; LISA's target, computed from the word
            tree by ``methods/lisa_masks.py``); under ``"shared"`` this is not a
            tree over subwords (the pieces of a word share one node), use
            :func:`subword_tree` for ancestors.

    Returns:
        ``(B, T)`` long parent positions; roots and special tokens point to
        themselves.
    """
    _check_convention(convention)
    B, T = heads.shape
    pos = torch.arange(T, device=heads.device).unsqueeze(0).expand(B, T)
    wsi = word_start_index(word_start, special)
    wp = word_parents(heads, word_start, special)
    parent_of_word = wp.gather(1, wsi)  # the word parent seen from every piece
    word_is_root = parent_of_word == wsi
    if convention == "first":
        return torch.where(wsi == pos, wp, wsi)
    return torch.where(word_is_root, pos, parent_of_word)


def ancestor_matrix(parents: torch.Tensor) -> torch.Tensor:
    """Reflexive-transitive closure of a parent-pointer forest.

    Uses pointer doubling: ``R_0 = I``, ``R_{k+1}[i] = R_k[i] | R_k[J_k[i]]``
    and ``J_{k+1} = J_k[J_k]`` where ``J_k[i]`` is the ``2^k``-th ancestor of
    ``i`` (roots point to themselves). After ``ceil(log2(T))`` steps every
    ancestor at distance ``< T`` is covered. Exact boolean/integer ops, no
    matmul, ``O(B T^2 log T)`` work; cycles terminate (fixed step count).

    Args:
        parents: ``(B, T)`` long absolute parent positions (roots point to
            themselves), e.g. from :func:`absolute_parents`.

    Returns:
        ``(B, T, T)`` bool, ``A[b, i, j]`` True iff ``j`` is an ancestor of
        ``i`` or ``j == i``.
    """
    B, T = parents.shape
    eye = torch.eye(T, dtype=torch.bool, device=parents.device)
    R = eye.unsqueeze(0).expand(B, T, T).clone()
    J = parents.long()
    sentence = torch.arange(B, device=parents.device).unsqueeze(1)  # R[b, J[b, i]] as one indexing op
    steps = _num_doubling_steps(T)
    for k in range(steps):
        R = R | R[sentence, J]
        if k + 1 < steps:
            J = J.gather(1, J)
    return R


def depths(ancestor: torch.Tensor) -> torch.Tensor:
    """Depth of every node (roots have depth 0).

    Args:
        ancestor: ``(B, T, T)`` bool from :func:`ancestor_matrix` (rows of
            special tokens are self-only, so their depth is 0).

    Returns:
        ``(B, T)`` long, number of proper ancestors.
    """
    return ancestor.sum(dim=-1) - 1


def _common_ancestor_counts(ancestor: torch.Tensor) -> torch.Tensor:
    """``(A @ A^T)[b, i, j]`` = number of common ancestors-or-self of i and j.

    Computed in float32 with autocast disabled (0/1 inputs are exact in
    fp32/TF32 and the sums, at most ``T``, are exact in the fp32 accumulator).
    """
    device_type = ancestor.device.type
    with torch.autocast(device_type=device_type, enabled=False):
        a = ancestor.float()
        counts = torch.bmm(a, a.transpose(1, 2))
    return counts.round().long()


def tree_distances(ancestor: torch.Tensor, depth: torch.Tensor = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Path lengths between all pairs of nodes of a forest.

    ``dist(i, j) = depth(i) + depth(j) - 2 depth(lca(i, j))``. The common
    ancestors of ``i`` and ``j`` are exactly the ancestors-or-self of their
    LCA, so ``depth(lca) = (A A^T)[i, j] - 1``. Pairs with no common ancestor
    (different trees of a multi-root sentence, special tokens, padding) are
    disconnected.

    The distances are those of the tree the ancestor matrix was built from:
    the word tree's (:func:`word_tree`) for word-level distances, the ancestor
    matrix of :func:`subword_parents` (``"first"``) for subword-tree distances.

    Args:
        ancestor: ``(B, T, T)`` bool from :func:`ancestor_matrix`.
        depth: ``(B, T)`` long from :func:`depths` (computed if None).

    Returns:
        ``(dist, connected)``: ``dist`` ``(B, T, T)`` long with ``-1`` for
        disconnected pairs, ``connected`` ``(B, T, T)`` bool.
    """
    if depth is None:
        depth = depths(ancestor)
    common = _common_ancestor_counts(ancestor)
    connected = common > 0
    dist = depth.unsqueeze(2) + depth.unsqueeze(1) - 2 * (common - 1)
    return dist.masked_fill(~connected, -1), connected


def expand_word_matrix(matrix: torch.Tensor, word_index: torch.Tensor) -> torch.Tensor:
    """Broadcast a matrix defined on first-subword positions to all subwords.

    Args:
        matrix: ``(B, T, T)`` tensor whose rows/columns at first-subword
            positions hold word-level values.
        word_index: ``(B, T)`` long from :func:`word_start_index`.

    Returns:
        ``(B, T, T)``, ``out[b, i, j] = matrix[b, w(i), w(j)]`` with
        ``w = word_index[b]``.
    """
    B, T, _ = matrix.shape
    rows = matrix.gather(1, word_index.unsqueeze(-1).expand(B, T, T))
    return rows.gather(2, word_index.unsqueeze(1).expand(B, T, T))


class SubwordTree(NamedTuple):
    """A batch of dependency trees seen from every subword under a subword convention (``"shared"`` or
    ``"first"``, module docstring), for what is defined per subword (SG-Net's SDOI, depths); built by
    :func:`subword_tree`. What is defined between words is in :class:`WordTree`.

    Attributes:
        ancestor: ``(B, T, T)`` bool, ``ancestor[b, i, j]``: ``j`` is in the
            SDOI of ``i`` (ancestor-or-self under the convention).
        depth: ``(B, T)`` long, depth under the convention (root 0).
        word_index: ``(B, T)`` long, first subword of each position's word.
        tree_ancestor: ``(B, T, T)`` bool, the ancestor matrix of the actual
            tree the distances are computed on (word tree on first-subword
            positions for ``"shared"``; equal to ``ancestor`` for ``"first"``).
    """

    ancestor: torch.Tensor
    depth: torch.Tensor
    word_index: torch.Tensor
    tree_ancestor: torch.Tensor


def subword_tree(
    heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, convention: str = "shared"
) -> SubwordTree:
    """Ancestor matrix and depths at subword level under a subword convention.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        convention: ``"shared"`` or ``"first"`` (see module docstring).

    Returns:
        :class:`SubwordTree`.
    """
    _check_convention(convention)
    wsi = word_start_index(word_start, special)
    if convention == "shared":
        tree_anc = ancestor_matrix(word_parents(heads, word_start, special))
        anc = expand_word_matrix(tree_anc, wsi)
        depth = depths(tree_anc).gather(1, wsi)
    else:
        tree_anc = ancestor_matrix(subword_parents(heads, word_start, special, "first"))
        anc = tree_anc
        depth = depths(tree_anc)
    return SubwordTree(anc, depth, wsi, tree_anc)


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype = torch.float32, fill_value: float = None) -> torch.Tensor:
    """Turn a bool "allowed" mask into an additive mask for attention scores.

    Allowed entries are 0, forbidden ones ``fill_value`` (default: half the
    most negative finite value of ``dtype``, so that adding it to any
    reasonable score, or adding two such masks, stays finite in fp16/bf16).
    Requires at least one allowed entry per row (true for SG-Net's SDOI and SLA's
    local masks), otherwise the row's softmax is uniform instead of NaN.

    Args:
        allowed: ``(..., T_q, T_k)`` bool.
        dtype: dtype of the attention scores (e.g. ``torch.float16``).
        fill_value: value for forbidden entries; may be ``float("-inf")``.

    Returns:
        Tensor of ``allowed``'s shape and ``dtype``.
    """
    if fill_value is None:
        fill_value = torch.finfo(dtype).min / 2
    out = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return out.masked_fill(~allowed, fill_value)


# ---------------------------------------------------------------------------------------------
# The word-level tree every method reads: computed once per batch (SyntaxContext.tree).
# ---------------------------------------------------------------------------------------------


class WordTree:
    """Word-level dependency forest of a batch, laid out on first-subword positions: the tree every
    method reads (once per batch, ``SyntaxContext.tree``); :class:`SubwordTree` is the per-subword view.

    Row/column ``f`` of the ``(B, T, T)`` matrices is the word whose first subword sits at
    position ``f``; rows/columns of non-first subwords describe a dummy one-node tree and
    are never read (use :func:`expand_word_matrix` with ``word_index`` to go to subwords).

    The ``(B, T, T)`` facts are computed when first read, once: a method that needs only the parents
    (LISA) never builds the ancestor matrix, one that needs the ancestors (SG-Net) never the distances.

    Attributes:
        word_index: ``(B, T)`` long, first subword of each position's word.
        special: ``(B, T)`` bool, pad/EOS/BOS.
        parents: ``(B, T)`` long word parents (:func:`word_parents`).
        ancestor: ``(B, T, T)`` bool, ``ancestor[b, x, y]``: word ``y`` is an ancestor-or-self of ``x``.
        dist: ``(B, T, T)`` long undirected tree distance between words, ``-1`` if disconnected.
        connected: ``(B, T, T)`` bool, same tree.
    """

    def __init__(self, word_index: torch.Tensor, special: torch.Tensor, parents: torch.Tensor):
        self.word_index = word_index
        self.special = special
        self.parents = parents
        # computed on first read (plain attributes, not functools.cached_property, whose lock in Python < 3.12
        # stops torch.compile's tracing: --syntax-compile)
        self._ancestor: Optional[torch.Tensor] = None
        self._distances: Optional[Tuple[torch.Tensor, torch.Tensor]] = None

    @property
    def ancestor(self) -> torch.Tensor:
        if self._ancestor is None:
            self._ancestor = ancestor_matrix(self.parents)
        return self._ancestor

    @property
    def dist(self) -> torch.Tensor:
        return self.distances[0]

    @property
    def connected(self) -> torch.Tensor:
        return self.distances[1]

    @property
    def distances(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(dist, connected)`` (:func:`tree_distances`)."""
        if self._distances is None:
            self._distances = tree_distances(self.ancestor)
        return self._distances


def word_tree(heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor) -> WordTree:
    """Build the :class:`WordTree` of a batch (stream conventions: module docstring); its ``(B, T, T)`` facts are
    computed when first read.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
    """
    special = special.bool()
    wsi = word_start_index(word_start, special)
    return WordTree(wsi, special, word_parents(heads, word_start, special, wsi))


def real_pairs(special: torch.Tensor) -> torch.Tensor:
    """``(B, T, T)`` bool: both query and key are real (non-special) tokens.

    Args:
        special: ``(B, T)`` bool, True at pad/EOS/BOS.
    """
    real = ~special
    return real.unsqueeze(2) & real.unsqueeze(1)


def specials_attend_themselves(allowed: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """``allowed`` ``(B, T, T)`` bool with the diagonal entry of every special token's row set, so that a
    mask that gives special tokens no key lets each attend to itself (no empty row)."""
    T = allowed.shape[-1]
    eye = torch.eye(T, dtype=torch.bool, device=allowed.device)
    return allowed | (special.unsqueeze(2) & eye)


def word_pieces(word_index: torch.Tensor) -> torch.Tensor:
    """Number of subwords of each position's word.

    Args:
        word_index: ``(B, T)`` long from :func:`word_start_index`.

    Returns:
        ``(B, T)`` long, ``pieces(w(i))`` at every position ``i`` (1 at special tokens).
    """
    counts = torch.zeros_like(word_index).scatter_add_(1, word_index, torch.ones_like(word_index))
    return counts.gather(1, word_index)


def real_word_starts(tree: WordTree) -> torch.Tensor:
    """``(B, T)`` bool: first subwords of real (non-special) words, the nodes of the word forest."""
    B, T = tree.word_index.shape
    pos = torch.arange(T, device=tree.word_index.device).unsqueeze(0)
    return (tree.word_index == pos) & ~tree.special
