"""Minimal CoNLL-U reading and writing (https://universaldependencies.org/format.html).

Only what syntax-nmt needs: one :class:`Sentence` per sentence block, word lines
only (multi-word token ranges ``1-2`` and empty nodes ``1.1`` are skipped, since
dependency heads refer to syntactic words). No fairseq import.
"""

from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, TextIO


@dataclass
class Sentence:
    """One dependency-parsed sentence.

    Attributes:
        words: surface forms, one per syntactic word.
        upos: universal POS tags, same length as ``words``.
        xpos: language-specific tags (``"_"`` when unknown).
        heads: 1-based index of each word's head, 0 for a root (CoNLL-U HEAD).
        deprels: dependency labels (CoNLL-U DEPREL).
        space_after: whether a space follows each word in the raw text.
        comments: sentence-level comments as ``key -> value`` (``text``, ``sent_id``...).
    """

    words: List[str]
    upos: List[str]
    xpos: List[str]
    heads: List[int]
    deprels: List[str]
    space_after: List[bool] = field(default_factory=list)
    comments: Dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.space_after:
            self.space_after = [True] * len(self.words)
        n = len(self.words)
        for name in ("upos", "xpos", "heads", "deprels", "space_after"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"Sentence.{name} has {len(getattr(self, name))} items, words has {n}")

    @property
    def text(self) -> str:
        """The raw sentence, rebuilt from ``SpaceAfter`` (or the ``# text`` comment)."""
        if "text" in self.comments:
            return self.comments["text"]
        return "".join(w + (" " if sp else "") for w, sp in zip(self.words, self.space_after)).rstrip()


class CoNLLUError(ValueError):
    """A malformed CoNLL-U file; the message names the file and line."""


def _parse_misc(misc: str) -> bool:
    return "SpaceAfter=No" not in misc.split("|")


BOM = "\ufeff"


def decode_line(raw: bytes, name: str, lineno: int) -> str:
    """One line of a CoNLL-U file read in binary mode, decoded as UTF-8.

    Raises:
        CoNLLUError: naming file, line and column of the first byte that is not UTF-8.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        column = len(raw[:e.start].decode("utf-8", "replace")) + 1
        raise CoNLLUError(f"{name}:{lineno}: invalid UTF-8 byte 0x{raw[e.start]:02x} at column {column} ({e.reason}); "
                          f"CoNLL-U files are UTF-8") from None


def open_conllu(path: str):
    """Open a CoNLL-U file for :func:`read_conllu` (binary: each line is decoded there, so that an
    invalid byte is reported with its line)."""
    return open(path, "rb")


def read_conllu_text(path: str) -> str:
    """The whole text of a CoNLL-U file (for converters that take a string), its byte-order
    mark dropped.

    Raises:
        CoNLLUError: naming file and line of a byte that is not UTF-8.
    """
    with open_conllu(path) as f:
        text = "".join(decode_line(raw, path, lineno) for lineno, raw in enumerate(f, 1))
    return text[len(BOM):] if text.startswith(BOM) else text


def read_conllu(f: Iterable, name: Optional[str] = None) -> Iterator[Sentence]:
    """Yield the sentences of an open CoNLL-U file.

    ``f`` yields lines as ``str`` (a text file) or ``bytes`` (a file opened by
    :func:`open_conllu`, decoded here as UTF-8 line by line). A byte-order mark at the start of
    the file is dropped (UTF-8 with BOM, as some Windows tools write it).

    Raises:
        CoNLLUError: on a word line without 10 tab-separated columns, a non-integer or
            out-of-range head, or (binary input) a byte that is not UTF-8; the message names
            file and line.
    """
    name = name or getattr(f, "name", "<conllu>")
    words, upos, xpos, heads, deps, spaces, comments = [], [], [], [], [], [], {}
    start = None
    for lineno, line in enumerate(f, 1):
        if isinstance(line, bytes):
            line = decode_line(line, name, lineno)
        if lineno == 1 and line.startswith(BOM):
            line = line[len(BOM):]
        line = line.rstrip("\r\n")
        if not line.strip():
            if words:
                yield _finish(name, start, words, upos, xpos, heads, deps, spaces, comments)
            words, upos, xpos, heads, deps, spaces, comments = [], [], [], [], [], [], {}
            start = None
            continue
        if start is None:
            start = lineno
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                comments[key.strip()] = value.strip()
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise CoNLLUError(f"{name}:{lineno}: expected 10 tab-separated columns, got {len(cols)}")
        if "-" in cols[0] or "." in cols[0]:
            continue  # multi-word token range or empty node
        try:
            idx, head = int(cols[0]), int(cols[6])
        except ValueError:
            raise CoNLLUError(f"{name}:{lineno}: ID and HEAD must be integers, got {cols[0]!r}, {cols[6]!r}")
        if idx != len(words) + 1:
            raise CoNLLUError(f"{name}:{lineno}: word ID {idx} out of order (expected {len(words) + 1})")
        words.append(cols[1])
        upos.append(cols[3])
        xpos.append(cols[4])
        heads.append(head)
        deps.append(cols[7])
        spaces.append(_parse_misc(cols[9]))
    if words:
        yield _finish(name, start, words, upos, xpos, heads, deps, spaces, comments)


def _finish(name, start, words, upos, xpos, heads, deps, spaces, comments) -> Sentence:
    for i, h in enumerate(heads):
        if not 0 <= h <= len(words) or h == i + 1:
            raise CoNLLUError(f"{name}:{start}: sentence has head {h} for word {i + 1} of {len(words)}")
    return Sentence(words, upos, xpos, heads, deps, spaces, comments)


def format_conllu(sentence: Sentence) -> str:
    """One sentence as a CoNLL-U block, ending with the blank separator line."""
    lines = [f"# {k} = {v}" for k, v in sentence.comments.items()]
    for i, w in enumerate(sentence.words):
        misc = "_" if sentence.space_after[i] else "SpaceAfter=No"
        lines.append(
            "\t".join(
                [str(i + 1), w, "_", sentence.upos[i], sentence.xpos[i] or "_", "_",
                 str(sentence.heads[i]), sentence.deprels[i], "_", misc]
            )
        )
    return "\n".join(lines) + "\n\n"


def write_conllu(sentences: Iterable[Sentence], f: TextIO) -> int:
    """Write sentences to an open file; returns how many were written."""
    n = 0
    for s in sentences:
        f.write(format_conllu(s))
        n += 1
    return n
