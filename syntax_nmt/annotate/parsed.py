"""Helpers on the word-level parse record shared by all backends.

The record itself is :class:`syntax_nmt.syntax.conllu.Sentence` (words, upos, xpos,
1-based heads with 0 = root, deprels); this module only adds what the annotation
pipeline needs on top of it: an empty sentence for empty input lines, a tree check, and
the multi-root policy.

Multi-root policy (``--multi-root``): a source line is one training example, but a parser
may find several sentences in it (spaCy splits ``"It rains. We stay."`` in two) or an
external CoNLL-U block may have several roots. With ``forest`` (the default) every root
keeps head 0, so the line is a forest of trees; with ``attach`` every later root is
attached to the first root with the label ``parataxis`` (the UD relation for side-by-side
clauses), so the line is a single tree. Either way every head stays inside the line.
"""

from syntax_nmt.syntax.conllu import Sentence

MULTI_ROOT_POLICIES = ("forest", "attach")
ATTACH_LABEL = "parataxis"


def empty_sentence() -> Sentence:
    """A sentence with no words (the parse of an empty line)."""
    return Sentence([], [], [], [], [])


def check_tree(sentence: Sentence) -> None:
    """Check that heads are in range and acyclic (every word reaches a root).

    Raises:
        ValueError: naming the first offending word (1-based).
    """
    heads = sentence.heads
    n = len(heads)
    state = [0] * (n + 1)  # 0 unseen, 1 on current path, 2 reaches a root
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        i = start
        while state[i] == 0:
            state[i] = 1
            path.append(i)
            h = heads[i - 1]
            if not 0 <= h <= n:
                raise ValueError(f"word {i} has head {h} outside the sentence of {n} words")
            i = h
        if state[i] == 1:
            raise ValueError(f"dependency cycle through word {i}")
        for j in path:
            state[j] = 2


def resolve_roots(sentence: Sentence, policy: str = "forest") -> Sentence:
    """Apply the multi-root policy (see the module docstring); returns the sentence.

    ``attach`` modifies ``sentence`` in place; ``forest`` leaves it unchanged.
    """
    if policy == "forest":
        return sentence
    if policy != "attach":
        raise ValueError(f"unknown multi-root policy {policy!r}, expected one of {MULTI_ROOT_POLICIES}")
    roots = [i for i, h in enumerate(sentence.heads) if h == 0]
    for i in roots[1:]:
        sentence.heads[i] = roots[0] + 1
        sentence.deprels[i] = ATTACH_LABEL
    return sentence
