"""Alignment of a word-level parse to its subwords: one field per subword for every stream.

Pure alignment, no I/O and no parser: given one :class:`~syntax_nmt.syntax.conllu.Sentence`
and the subword pieces of each of its words, :func:`align_streams` returns one list of
fields per stream, each exactly as long as the flattened piece list (every subword gets
its word's value). The stream formats are fixed by the project contract:

* ``pos``: UPOS (``pos_tagset="upos"``) or the language-specific tag (``"xpos"``).
* ``case``: ``binary`` -> ``C`` (first character uppercase) / ``L``;
  ``rich`` -> ``lower`` / ``Cap`` / ``UPPER`` / ``other`` (see :func:`case_tag`).
* ``subword``: ``B`` first piece of a multi-piece word, ``M`` middle, ``E`` last,
  ``O`` single-piece word.
* ``head``: ``first_piece(head word) - position(this piece)``, i.e. the signed offset
  from this subword to the first subword of its word's head word (positive = head to the
  right); ``0`` for every subword of a root word.
* ``dep``: the word's dependency label.

Tags are written as single whitespace-free fields: an empty tag becomes ``_`` and
internal whitespace becomes ``_``.
"""

from typing import Dict, List, Sequence

from syntax_nmt.data.streams import STREAMS
from syntax_nmt.syntax.conllu import Sentence

POS_TAGSETS = ("upos", "xpos")
CASE_SCHEMES = ("binary", "rich")


def case_tag(word: str, scheme: str = "binary") -> str:
    """Case class of a word.

    Args:
        word: the surface word (non-empty).
        scheme: ``"binary"``: ``C`` if the first character is uppercase, else ``L``
            (Sundararaman et al.). ``"rich"``: ``UPPER`` if all cased characters are
            uppercase and there are at least two of them (``NATO``, ``U.S.``), else
            ``Cap`` if the first character is uppercase (``Paris``, ``I``, ``McDonald``),
            else ``lower`` if all cased characters are lowercase (``paris``), else
            ``other`` (no cased character: ``42``, ``,``; or mixed case starting
            lowercase: ``iPhone``).

    Returns:
        The tag string.
    """
    if scheme == "binary":
        return "C" if word[:1].isupper() else "L"
    if scheme != "rich":
        raise ValueError(f"unknown case scheme {scheme!r}, expected one of {CASE_SCHEMES}")
    if word.isupper() and sum(1 for c in word if c.isupper()) >= 2:
        return "UPPER"
    if word[:1].isupper():
        return "Cap"
    if word.islower():
        return "lower"
    return "other"


def subword_tags(n: int) -> List[str]:
    """BMEO tags of a word split into ``n >= 1`` pieces: ``O`` or ``B M... E``."""
    if n == 1:
        return ["O"]
    if n < 1:
        raise ValueError(f"a word must have at least one subword piece, got {n}")
    return ["B"] + ["M"] * (n - 2) + ["E"]


def _field(tag: str) -> str:
    return "_".join(tag.split()) or "_"


def align_streams(
    sentence: Sentence,
    pieces: Sequence[Sequence[str]],
    pos_tagset: str = "upos",
    case: str = "binary",
) -> Dict[str, List[str]]:
    """Project word-level annotations onto subword pieces.

    Args:
        sentence: the parsed sentence with ``n`` words (heads 1-based, 0 = root).
        pieces: ``n`` non-empty piece lists, ``pieces[i]`` being the subwords of word ``i``.
        pos_tagset: ``"upos"`` or ``"xpos"``.
        case: ``"binary"`` or ``"rich"`` (see :func:`case_tag`).

    Returns:
        ``{stream: fields}`` for every name in :data:`STREAMS`; each list has
        ``m = sum(len(p) for p in pieces)`` string fields.

    Raises:
        ValueError: if ``pieces`` does not have one non-empty entry per word, or a
            head points outside the sentence.
    """
    n = len(sentence.words)
    if len(pieces) != n:
        raise ValueError(f"{len(pieces)} piece lists for {n} words")
    if pos_tagset not in POS_TAGSETS:
        raise ValueError(f"unknown POS tagset {pos_tagset!r}, expected one of {POS_TAGSETS}")
    tags = sentence.upos if pos_tagset == "upos" else sentence.xpos

    sizes = [len(p) for p in pieces]
    if not all(sizes):
        raise ValueError("a word has no subword pieces")
    first = []  # position of the first piece of each word
    m = 0
    for k in sizes:
        first.append(m)
        m += k
    heads = sentence.heads
    if heads and not 0 <= min(heads) <= max(heads) <= n:
        raise ValueError(f"a head in {heads} is outside the sentence of {n} words")
    out: Dict[str, List[str]] = {
        "pos": [f for t, k in zip(tags, sizes) for f in [_field(t)] * k],
        "case": [f for w, k in zip(sentence.words, sizes) for f in [case_tag(w, case)] * k],
        "subword": [f for k in sizes for f in (["O"] if k == 1 else subword_tags(k))],
        "head": [str(first[h - 1] - j) if h else "0"
                 for h, s, k in zip(heads, first, sizes) for j in range(s, s + k)],
        "dep": [f for t, k in zip(sentence.deprels, sizes) for f in [_field(t)] * k],
    }
    for name in STREAMS:
        assert len(out[name]) == m, (name, len(out[name]), m)
    return out
