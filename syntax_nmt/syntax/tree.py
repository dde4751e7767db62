"""Batched dependency-tree math for syntax-guided attention (pure torch, no fairseq).

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
from typing import NamedTuple, Tuple

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


def word_parents(heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
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

    Returns:
        ``(B, T)`` long parent positions.
    """
    B, T = heads.shape
    pos = torch.arange(T, device=heads.device).unsqueeze(0).expand(B, T)
    wsi = word_start_index(word_start, special)
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
            root word point to themselves). Useful as a LISA-style parent target;
            under ``"shared"`` this is not a tree over subwords (the pieces of a
            word share one node), use :func:`syntax_tree` for ancestors.

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
    for _ in range(_num_doubling_steps(T)):
        R = R | R.gather(1, J.unsqueeze(-1).expand(B, T, T))
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
    pass the ancestor matrix of :func:`subword_parents` (``"first"``) for
    subword-tree distances; use :func:`syntax_distances` for either
    convention from raw heads (``"shared"`` = word-level distances).

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


class SyntaxTree(NamedTuple):
    """Subword-level view of a batch of dependency trees (see :func:`syntax_tree`).

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


def syntax_tree(
    heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, convention: str = "shared"
) -> SyntaxTree:
    """Ancestor matrix and depths at subword level under a subword convention.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        convention: ``"shared"`` or ``"first"`` (see module docstring).

    Returns:
        :class:`SyntaxTree`.
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
    return SyntaxTree(anc, depth, wsi, tree_anc)


def sdoi_mask(
    heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, convention: str = "shared"
) -> torch.Tensor:
    """SG-Net "syntactic dependency of interest" attention mask (eq. 6).

    Row ``i`` allows column ``j`` iff ``j`` is ``i`` itself or one of its
    ancestors (under the subword ``convention``). Rows of special tokens allow
    only themselves; the diagonal is always True, so every row has at least one
    allowed entry (no NaN after softmax).

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        convention: ``"shared"`` (default) or ``"first"``.

    Returns:
        ``(B, T, T)`` bool "allowed" mask (query ``i`` x key ``j``).
    """
    return syntax_tree(heads, word_start, special, convention).ancestor


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype = torch.float32, fill_value: float = None) -> torch.Tensor:
    """Turn a bool "allowed" mask into an additive mask for attention scores.

    Allowed entries are 0, forbidden ones ``fill_value`` (default: half the
    most negative finite value of ``dtype``, so that adding it to any
    reasonable score, or adding two such masks, stays finite in fp16/bf16).
    Requires at least one allowed entry per row (true for :func:`sdoi_mask`),
    otherwise the row's softmax is uniform instead of NaN.

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


def syntax_distances(
    heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, convention: str = "shared"
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Tree distances between all subword pairs under a subword convention.

    ``"shared"``: distance between the two subwords' WORDS in the word tree
    (pieces of one word are at distance 0). ``"first"``: distance in the
    subword tree where non-first pieces hang below their first piece.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        convention: ``"shared"`` (default) or ``"first"``.

    Returns:
        ``(dist, connected)`` as in :func:`tree_distances`: ``(B, T, T)`` long
        with ``-1`` where disconnected, and ``(B, T, T)`` bool.
    """
    tree = syntax_tree(heads, word_start, special, convention)
    dist, connected = tree_distances(tree.tree_ancestor)
    if convention == "shared":
        dist = expand_word_matrix(dist, tree.word_index)
        connected = expand_word_matrix(connected, tree.word_index)
    return dist, connected


def parent_matrix(parents: torch.Tensor, include_roots: bool = True) -> torch.Tensor:
    """One-hot parent matrix (e.g. a LISA attention target).

    Args:
        parents: ``(B, T)`` long absolute parent positions (roots: self).
        include_roots: if True, roots (and special tokens) put their 1 on the
            diagonal (every row sums to 1); if False their rows are all False.

    Returns:
        ``(B, T, T)`` bool, ``P[b, i, j]`` True iff ``parents[b, i] == j``.
    """
    B, T = parents.shape
    cols = torch.arange(T, device=parents.device)
    P = parents.unsqueeze(-1) == cols
    if not include_roots:
        P = P & ~torch.eye(T, dtype=torch.bool, device=parents.device)
    return P


def children_matrix(parents: torch.Tensor) -> torch.Tensor:
    """Child relation: ``C[b, i, j]`` True iff ``j`` is a child of ``i`` (j != i).

    Args:
        parents: ``(B, T)`` long absolute parent positions (roots: self).

    Returns:
        ``(B, T, T)`` bool.
    """
    return parent_matrix(parents, include_roots=False).transpose(1, 2)


def sibling_matrix(parents: torch.Tensor) -> torch.Tensor:
    """Sibling relation: distinct non-root nodes with the same parent.

    Args:
        parents: ``(B, T)`` long absolute parent positions (roots: self).

    Returns:
        ``(B, T, T)`` bool, symmetric, False on the diagonal and for roots.
    """
    B, T = parents.shape
    pos = torch.arange(T, device=parents.device)
    non_root = parents != pos
    same = parents.unsqueeze(2) == parents.unsqueeze(1)
    eye = torch.eye(T, dtype=torch.bool, device=parents.device)
    return same & non_root.unsqueeze(2) & non_root.unsqueeze(1) & ~eye


# ---------------------------------------------------------------------------------------------
# Word-level trees shared by SLA, Syntax-BERT (and SEPREM): computed once per batch.
# ---------------------------------------------------------------------------------------------


class WordTree(NamedTuple):
    """Word-level dependency forest of a batch, laid out on first-subword positions.

    Row/column ``f`` of the ``(B, T, T)`` matrices is the word whose first subword sits at
    position ``f``; rows/columns of non-first subwords describe a dummy one-node tree and
    are never read (use :func:`expand_word_matrix` with ``word_index`` to go to subwords).

    Attributes:
        word_index: ``(B, T)`` long, first subword of each position's word.
        special: ``(B, T)`` bool, pad/EOS/BOS.
        parents: ``(B, T)`` long word parents (:func:`word_parents`).
        ancestor: ``(B, T, T)`` bool, ``ancestor[b, x, y]``: word ``y`` is an ancestor-or-self of ``x``.
        dist: ``(B, T, T)`` long undirected tree distance between words, ``-1`` if disconnected.
        connected: ``(B, T, T)`` bool, same tree.
    """

    word_index: torch.Tensor
    special: torch.Tensor
    parents: torch.Tensor
    ancestor: torch.Tensor
    dist: torch.Tensor
    connected: torch.Tensor


def word_tree(heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor) -> WordTree:
    """Build the :class:`WordTree` of a batch (stream conventions of :func:`sdoi_mask`).

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
    """
    special = special.bool()
    wsi = word_start_index(word_start, special)
    parents = word_parents(heads, word_start, special)
    anc = ancestor_matrix(parents)
    dist, connected = tree_distances(anc)
    return WordTree(wsi, special, parents, anc, dist, connected)


def _pair_mask(special: torch.Tensor) -> torch.Tensor:
    """``(B, T, T)`` bool: both query and key are real (non-special) tokens."""
    real = ~special
    return real.unsqueeze(2) & real.unsqueeze(1)


def _self_for_special(allowed: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Rows of special tokens allow exactly themselves."""
    T = allowed.shape[-1]
    eye = torch.eye(T, dtype=torch.bool, device=allowed.device)
    return allowed | (special.unsqueeze(2) & eye)


def neighbour_words(tree: WordTree) -> Tuple[torch.Tensor, torch.Tensor]:
    """First subword of the previous and of the next word of each position's word.

    Neighbours are words of the same sentence: a special token (BOS, EOS, pad) or the
    edge of the row is no neighbour. Invalid neighbours are returned as ``-1``.

    Returns:
        ``(prev, next)``, each ``(B, T)`` long, indexed by position (read at first subwords).
    """
    wsi, special = tree.word_index, tree.special
    B, T = wsi.shape
    pos = torch.arange(T, device=wsi.device).unsqueeze(0).expand(B, T)
    starts = wsi == pos  # effective word starts (specials included)
    # previous word: the word of position f - 1, unless special / outside
    before = (pos - 1).clamp(min=0)
    prev = wsi.gather(1, before)
    prev_ok = (pos > 0) & ~special.gather(1, before)
    prev = torch.where(prev_ok, prev, torch.full_like(prev, -1))
    # next word: the first word start strictly after the position
    cand = torch.where(starts, pos, torch.full_like(pos, T))
    first_at_or_after = cand.flip(1).cummin(1).values.flip(1)
    nxt = torch.cat([first_at_or_after[:, 1:], torch.full_like(pos[:, :1], T)], dim=1)
    nxt_ok = nxt < T
    nxt_safe = nxt.clamp(max=T - 1)
    nxt_ok = nxt_ok & ~special.gather(1, nxt_safe)
    nxt = torch.where(nxt_ok, nxt_safe, torch.full_like(nxt, -1))
    return prev, nxt


def sla_word_distance(tree: WordTree) -> torch.Tensor:
    """SLA's ``D(i, j) = min_{k in {i-1, i, i+1}} dis(v_k, v_j)`` between words (Li et al. 2021, eq. 2).

    ``k`` ranges over the word itself and its previous and next words in the sentence;
    distances between different trees are infinite (returned as ``T + 1``, larger than
    any real distance).

    Returns:
        ``(B, T, T)`` long, on first-subword positions (see :class:`WordTree`).
    """
    B, T = tree.word_index.shape
    inf = T + 1
    d = torch.where(tree.connected, tree.dist, torch.full_like(tree.dist, inf))
    prev, nxt = neighbour_words(tree)
    out = d
    for nb in (prev, nxt):
        rows = d.gather(1, nb.clamp(min=0).unsqueeze(-1).expand(B, T, T))
        rows = rows.masked_fill((nb < 0).unsqueeze(-1), inf)
        out = torch.minimum(out, rows)
    return out


def sla_mask_from_tree(tree: WordTree, threshold: int) -> torch.Tensor:
    """:func:`sla_mask` from a precomputed :class:`WordTree`."""
    D = expand_word_matrix(sla_word_distance(tree), tree.word_index)
    allowed = (D <= threshold) & _pair_mask(tree.special)
    return _self_for_special(allowed, tree.special)


def sla_mask(heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, threshold: int) -> torch.Tensor:
    """Syntax-aware local attention mask ``M^loc`` (Li et al. 2021, eq. 2-3).

    Query ``i`` may attend to key ``j`` iff ``D(i, j) <= threshold`` where
    ``D(i, j) = min over k in {prev word, word(i), next word} of dis(k, word(j))``, the
    undirected distance in the dependency tree between WORDS (every subword takes its
    word's values; the paper's appendix A.2). Words of different trees (multi-root lines)
    are infinitely far apart. Rows of special tokens allow only themselves; special
    tokens are never keys of word rows.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        threshold: the paper's ``m`` (3 or 4 in the paper).

    Returns:
        ``(B, T, T)`` bool, True where query ``i`` may attend to key ``j``; the diagonal
        is always True.
    """
    return sla_mask_from_tree(word_tree(heads, word_start, special), threshold)


def word_ordinals(word_start: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Number of each position's word within its row, counting real words only (0-based).

    Returns:
        ``(B, T)`` long; values at special positions are meaningless.
    """
    special = special.bool()
    starts = effective_word_start(word_start, special) & ~special
    return torch.cumsum(starts.long(), dim=1) - 1


#: units of the WLA window (``--sla-window-unit``): ``word``, words (the pieces of a word share its
#: position, as SLA's distances do); ``token``, subword tokens (the paper's wording, sec. 4.1)
WINDOW_UNITS = ("word", "token")


def wla_mask(word_start: torch.Tensor, special: torch.Tensor, window: int, unit: str = "word") -> torch.Tensor:
    """Window-based local attention (WLA, the baseline of Li et al. 2021, sec. 4.1: "each token [attends]
    to the neighboring tokens within a window size 2k + 1"): query ``i`` may attend to key ``j`` iff
    ``|w(i) - w(j)| <= window``, ``w`` counting words (``unit="word"``: every piece of a word has its
    word's number) or tokens (``unit="token"``: subword tokens), special tokens not counted.

    Specials as in :func:`sla_mask`.

    Returns:
        ``(B, T, T)`` bool.

    Raises:
        ValueError: ``unit`` not in :data:`WINDOW_UNITS`.
    """
    if unit not in WINDOW_UNITS:
        raise ValueError(f"unknown WLA window unit {unit!r}, expected one of {WINDOW_UNITS}")
    special = special.bool()
    if unit == "word":
        o = word_ordinals(word_start, special)
    else:
        o = torch.cumsum((~special).long(), dim=1) - 1
    allowed = ((o.unsqueeze(2) - o.unsqueeze(1)).abs() <= window) & _pair_mask(special)
    return _self_for_special(allowed, special)


SYNTAX_BERT_RELATIONS = ("parent", "child", "sibling")
#: readings of Syntax-BERT's sibling mask (``--syntax-bert-sibling``): ``lca``, the paper's (sec. 3.2:
#: the pair has a lowest common ancestor, i.e. lies in one tree, at distance ``d``); ``disjoint``, the
#: stricter reading of checkpoints trained before the option (one tree, and neither word is an
#: ancestor of the other), under which ``d = 1`` is always empty and is left out.
SYNTAX_BERT_SIBLINGS = ("lca", "disjoint")


def syntax_bert_num_masks(max_distance: int, sibling: str = "lca") -> int:
    """Number of masks of :func:`syntax_bert_masks`: ``3 D`` (``lca``), ``3 D - 1`` (``disjoint``, no
    sibling mask at ``d = 1``), 0 for ``D = 0``."""
    if sibling not in SYNTAX_BERT_SIBLINGS:
        raise ValueError(f"unknown Syntax-BERT sibling reading {sibling!r}, expected one of {SYNTAX_BERT_SIBLINGS}")
    if max_distance <= 0:
        return 0
    return 3 * max_distance - (sibling == "disjoint")


def syntax_bert_masks_from_tree(tree: WordTree, max_distance: int, sibling: str = "lca") -> torch.Tensor:
    """:func:`syntax_bert_masks` from a precomputed :class:`WordTree`."""
    syntax_bert_num_masks(max_distance, sibling)  # checks ``sibling``
    B, T = tree.word_index.shape
    eye = torch.eye(T, dtype=torch.bool, device=tree.ancestor.device)
    proper = tree.ancestor & ~eye  # [x, y]: y is a proper ancestor of x
    if sibling == "lca":
        sib = tree.connected  # a lowest common ancestor exists: same tree
    else:
        sib = tree.connected & ~tree.ancestor & ~tree.ancestor.transpose(1, 2)  # same tree, no ancestry
    relations = torch.stack([
        proper.transpose(1, 2),  # parent: query i is an ancestor of key j
        proper,  # child: key j is an ancestor of query i
        sib,
    ], dim=1)  # B x 3 x T x T (word level)
    wi = tree.word_index
    idx_r = wi.view(B, 1, T, 1).expand(B, 3, T, T)
    idx_c = wi.view(B, 1, 1, T).expand(B, 3, T, T)
    rel = relations.gather(2, idx_r).gather(3, idx_c) & _pair_mask(tree.special).unsqueeze(1)
    dist = expand_word_matrix(tree.dist, wi).unsqueeze(1)  # B x 1 x T x T
    first_sibling = 2 if sibling == "disjoint" else 1  # disjoint: pairs at d = 1 are parent/child
    masks = [rel[:, r:r + 1] & (dist == d)
             for r, lo in enumerate((1, 1, first_sibling)) for d in range(lo, max_distance + 1)]
    if not masks:
        return torch.zeros(B, 0, T, T, dtype=torch.bool, device=dist.device)
    return torch.cat(masks, dim=1)


def syntax_bert_masks(
    heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor, max_distance: int, sibling: str = "lca"
) -> torch.Tensor:
    """Syntax-BERT sub-network masks (Bai et al. 2021, sec. 3.2), row = query ``i``, column = key ``j``.

    * parent mask at distance ``d``: ``i`` is an ancestor of ``j`` and ``dist(i, j) = d``;
    * child mask: ``j`` is an ancestor of ``i`` and ``dist(i, j) = d``;
    * sibling mask, ``sibling="lca"`` (the paper): ``i`` and ``j`` have a lowest common
      ancestor (they are in the same tree of a multi-root line) and ``dist(i, j) = d``, which
      includes the parent/child pairs at ``d``; ``sibling="disjoint"``: moreover neither is an
      ancestor of the other, so ``d = 1`` would be empty and is left out.

    Relations are between WORDS (pieces of a word share them; two pieces of the same
    word are in no mask); special tokens are in no mask (their rows and columns are all
    False), so rows may be empty.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.
        max_distance: ``D`` (the paper: 15).
        sibling: ``"lca"`` or ``"disjoint"`` (:data:`SYNTAX_BERT_SIBLINGS`).

    Returns:
        ``(B, M, T, T)`` bool, ``M =`` :func:`syntax_bert_num_masks`, in the order parent
        ``d = 1..D``, child ``d = 1..D``, sibling ``d = 1..D`` (``disjoint``: ``d = 2..D``).
    """
    return syntax_bert_masks_from_tree(word_tree(heads, word_start, special), max_distance, sibling)


# ---------------------------------------------------------------------------------------------
# SEPREM (Xu et al. 2021) and the syntax auxiliary losses (LISA, SEPREM's DP and HP).
# ---------------------------------------------------------------------------------------------


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


def connected_word_pairs(tree: WordTree) -> torch.Tensor:
    """``(B, T, T)`` bool on first-subword positions: ``[b, w, u]`` iff ``w != u`` are real words of
    the same tree (the pairs SEPREM's D̃ and distance prediction cover)."""
    T = tree.word_index.shape[1]
    starts = real_word_starts(tree)
    eye = torch.eye(T, dtype=torch.bool, device=starts.device)
    return tree.connected & ~eye & starts.unsqueeze(2) & starts.unsqueeze(1)


def seprem_strength_from_tree(tree: WordTree) -> torch.Tensor:
    """:func:`seprem_strength` from a precomputed :class:`WordTree`."""
    pairs = connected_word_pairs(tree)
    inv = torch.where(pairs, 1.0 / tree.dist.clamp(min=1).float(), torch.zeros((), device=pairs.device))
    total = inv.sum(dim=-1, keepdim=True)
    word = inv / torch.where(total > 0, total, torch.ones_like(total))  # rows without pairs stay 0
    pieces = word_pieces(tree.word_index).float()
    return expand_word_matrix(word, tree.word_index) / pieces.unsqueeze(1)


def seprem_strength(heads: torch.Tensor, word_start: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """SEPREM's normalised correlation strength ``D̃`` (Xu et al. 2021, sec. 4.3, eq. 3-4).

    Between words: ``D̃[w, u] = (1 / d(w, u)) / sum_z (1 / d(w, z))`` over the words ``z != w``
    of ``w``'s tree, with ``d`` the undirected tree distance (sec. 4.1); 0 on the diagonal,
    between different trees of a multi-root line, and in the rows and columns of special
    tokens. At subword level every subword ``i`` of word ``w(i)`` gives word ``u``'s weight
    to ``u``'s pieces in equal shares: ``D̃_sub[i, j] = D̃[w(i), w(j)] / pieces(w(j))``, so
    a row sums to 1, or to 0 where its word is alone in its tree (or the row is special);
    two pieces of the same word get 0. Stream conventions of :func:`sdoi_mask`.

    Args:
        heads: ``(B, T)`` integer relative head offsets.
        word_start: ``(B, T)`` bool.
        special: ``(B, T)`` bool.

    Returns:
        ``(B, T, T)`` float32, row = the attending subword ``i``, column = ``j``.
    """
    return seprem_strength_from_tree(word_tree(heads, word_start, special))


def subword_parents_from_tree(tree: WordTree) -> torch.Tensor:
    """Parent position of every subword for LISA's parse attention: the FIRST subword of its
    word's head word; every piece of a root word, and every special token, points to itself.
    Equals :func:`subword_parents` with ``"shared"``.

    Returns:
        ``(B, T)`` long.
    """
    wi = tree.word_index
    B, T = wi.shape
    pos = torch.arange(T, device=wi.device).unsqueeze(0).expand(B, T)
    parent_of_word = tree.parents.gather(1, wi)
    return torch.where(parent_of_word == wi, pos, parent_of_word)
