"""Syntax-BERT's sub-network masks (Bai et al., 2021, "Syntax-BERT: Improving Pre-trained Transformers with
Syntax Trees", sec. 3.2): pure torch, no fairseq, batched with no Python loop over tokens or sentences.
"""

from typing import List

import torch

from syntax_nmt.syntax.tree import WordTree, expand_word_matrix, real_pairs

#: readings of Syntax-BERT's sibling mask (``--syntax-bert-sibling``): ``lca``, the paper's (sec. 3.2:
#: the pair has a lowest common ancestor, i.e. lies in one tree, at distance ``d``); ``disjoint``, the
#: stricter reading of checkpoints trained before the option (one tree, and neither word is an
#: ancestor of the other), under which ``d = 1`` is always empty and is left out.
SYNTAX_BERT_SIBLINGS = ("lca", "disjoint")


def syntax_bert_mask_names(max_distance: int, sibling: str = "lca") -> List[str]:
    """Names of the masks of :func:`syntax_bert_masks`, in their order: ``parent d=1`` .. ``parent d=D``,
    ``child d=1`` .., ``sibling d=1`` .. (``disjoint``: from ``d=2``); none for ``D = 0``."""
    if sibling not in SYNTAX_BERT_SIBLINGS:
        raise ValueError(f"unknown Syntax-BERT sibling reading {sibling!r}, expected one of {SYNTAX_BERT_SIBLINGS}")
    first_sibling = 2 if sibling == "disjoint" else 1
    return [f"{relation} d={d}" for relation, lo in (("parent", 1), ("child", 1), ("sibling", first_sibling))
            for d in range(lo, max_distance + 1)]


def syntax_bert_num_masks(max_distance: int, sibling: str = "lca") -> int:
    """Number of masks of :func:`syntax_bert_masks`: ``3 D`` (``lca``), ``3 D - 1`` (``disjoint``, no
    sibling mask at ``d = 1``), 0 for ``D = 0``."""
    return len(syntax_bert_mask_names(max_distance, sibling))


def syntax_bert_masks(tree: WordTree, max_distance: int, sibling: str = "lca") -> torch.Tensor:
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
        tree: the batch's :class:`~syntax_nmt.syntax.tree.WordTree` (:func:`~syntax_nmt.syntax.tree.word_tree`).
        max_distance: ``D`` (the paper: 15).
        sibling: ``"lca"`` or ``"disjoint"`` (:data:`SYNTAX_BERT_SIBLINGS`).

    Returns:
        ``(B, M, T, T)`` bool, ``M =`` :func:`syntax_bert_num_masks`, in the order parent
        ``d = 1..D``, child ``d = 1..D``, sibling ``d = 1..D`` (``disjoint``: ``d = 2..D``).
    """
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
    rel = relations.gather(2, idx_r).gather(3, idx_c) & real_pairs(tree.special).unsqueeze(1)
    dist = expand_word_matrix(tree.dist, wi).unsqueeze(1)  # B x 1 x T x T
    first_sibling = 2 if sibling == "disjoint" else 1  # disjoint: pairs at d = 1 are parent/child
    masks = [rel[:, r:r + 1] & (dist == d)
             for r, lo in enumerate((1, 1, first_sibling)) for d in range(lo, max_distance + 1)]
    if not masks:
        return torch.zeros(B, 0, T, T, dtype=torch.bool, device=dist.device)
    return torch.cat(masks, dim=1)
