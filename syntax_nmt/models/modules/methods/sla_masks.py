"""SLA's local masks (Li et al., 2021, "Improving BERT with Syntax-aware Local Attention", eq. 2-3) and the
paper's window baseline (WLA, sec. 4.1): pure torch, no fairseq, batched with no Python loop over tokens or
sentences. Stream conventions: :mod:`syntax_nmt.syntax.tree`; every mask is ``(B, T, T)`` bool, row = query
``i``, column = key ``j``.
"""

from typing import Tuple

import torch

from syntax_nmt.syntax.tree import (WordTree, effective_word_start, expand_word_matrix, real_pairs,
                                    specials_attend_themselves)

#: units of the WLA window (``--sla-window-unit``): ``word``, words (the pieces of a word share its
#: position, as SLA's distances do); ``token``, subword tokens (the paper's wording, sec. 4.1)
WINDOW_UNITS = ("word", "token")


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
        ``(B, T, T)`` long, on first-subword positions (see :class:`~syntax_nmt.syntax.tree.WordTree`).
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


def sla_mask(tree: WordTree, threshold: int) -> torch.Tensor:
    """Syntax-aware local attention mask ``M^loc`` (Li et al. 2021, eq. 2-3).

    Query ``i`` may attend to key ``j`` iff ``D(i, j) <= threshold`` where
    ``D(i, j) = min over k in {prev word, word(i), next word} of dis(k, word(j))``
    (:func:`sla_word_distance`), the undirected distance in the dependency tree between WORDS
    (every subword takes its word's values; the paper's appendix A.2). Words of different trees
    (multi-root lines) are infinitely far apart. Rows of special tokens allow only themselves;
    special tokens are never keys of word rows.

    Args:
        tree: the batch's :class:`~syntax_nmt.syntax.tree.WordTree` (:func:`~syntax_nmt.syntax.tree.word_tree`).
        threshold: the paper's ``m`` (3 or 4 in the paper).

    Returns:
        ``(B, T, T)`` bool, True where query ``i`` may attend to key ``j``; the diagonal
        is always True.
    """
    D = expand_word_matrix(sla_word_distance(tree), tree.word_index)
    allowed = (D <= threshold) & real_pairs(tree.special)
    return specials_attend_themselves(allowed, tree.special)


def word_ordinals(word_start: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
    """Number of each position's word within its row, counting real words only (0-based).

    Returns:
        ``(B, T)`` long; values at special positions are meaningless.
    """
    special = special.bool()
    starts = effective_word_start(word_start, special) & ~special
    return torch.cumsum(starts.long(), dim=1) - 1


def wla_mask(word_start: torch.Tensor, special: torch.Tensor, window: int, unit: str = "word") -> torch.Tensor:
    """Window-based local attention (WLA, the baseline of Li et al. 2021, sec. 4.1: "each token [attends]
    to the neighboring tokens within a window size 2k + 1"): query ``i`` may attend to key ``j`` iff
    ``|w(i) - w(j)| <= window``, ``w`` counting words (``unit="word"``: every piece of a word has its
    word's number) or tokens (``unit="token"``: subword tokens), special tokens not counted.

    Specials as in :func:`sla_mask`.

    Args:
        word_start: ``(B, T)`` bool, True at first subwords (and special tokens).
        special: ``(B, T)`` bool, True at pad/EOS/BOS.
        window: the paper's ``k``.
        unit: one of :data:`WINDOW_UNITS`.

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
    allowed = ((o.unsqueeze(2) - o.unsqueeze(1)).abs() <= window) & real_pairs(special)
    return specials_attend_themselves(allowed, special)
