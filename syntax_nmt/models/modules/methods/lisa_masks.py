"""LISA's parse-attention target (Strubell et al., 2018, "Linguistically-Informed Self-Attention for Semantic Role
Labeling", sec. 2.2): pure torch, no fairseq."""

import torch

from syntax_nmt.syntax.tree import WordTree


def lisa_parents(tree: WordTree) -> torch.Tensor:
    """The key LISA's parse head is trained to attend to from every subword (Strubell et al. 2018, sec. 2.2:
    each token's syntactic parent): the FIRST subword of its word's head word; every piece of a root word, and
    every special token, points to itself. Equals :func:`~syntax_nmt.syntax.tree.subword_parents` with
    ``"shared"``.

    Args:
        tree: the batch's :class:`~syntax_nmt.syntax.tree.WordTree` (:func:`~syntax_nmt.syntax.tree.word_tree`).

    Returns:
        ``(B, T)`` long.
    """
    wi = tree.word_index
    B, T = wi.shape
    pos = torch.arange(T, device=wi.device).unsqueeze(0).expand(B, T)
    parent_of_word = tree.parents.gather(1, wi)
    return torch.where(parent_of_word == wi, pos, parent_of_word)
