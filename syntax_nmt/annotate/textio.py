"""Streaming, line-exact text input for the annotation pipeline.

Lines are read by :func:`syntax_nmt.utils.read_lines`: split on ``\\n`` only (a stray ``\\r`` or U+2028 inside a
line does not start a new line, unlike Python's universal newlines), decoded as UTF-8 one line at a time so that a
decoding error names the file and line, a leading byte-order mark dropped.
:func:`normalize` collapses every run of Unicode whitespace (tabs, no-break spaces,
``\\r``, ideographic spaces... everything ``str.split()`` splits on, which is also what
fairseq's tokenizer splits on) to one ASCII space and strips the ends, so that a word never
contains whitespace and fairseq sees exactly the tokens we counted.
:func:`replace_lone_surrogates` makes text read leniently (``surrogateescape``) safe to parse.
"""

import re
from typing import Iterator, Tuple

from syntax_nmt.utils import InputError, read_lines  # noqa: F401  (InputError's home is the low floor)

#: A UTF-16 surrogate pair (group 1), or any other surrogate code point (a lone one).
_SURROGATE = re.compile("([\ud800-\udbff][\udc00-\udfff])|[\ud800-\udfff]")


def normalize(line: str) -> str:
    """Collapse Unicode whitespace runs to single spaces and strip both ends."""
    return " ".join(line.split())


def replace_lone_surrogates(line: str) -> Tuple[str, int]:
    """``line`` with every lone surrogate replaced by U+FFFD, and how many were replaced.

    Text decoded with ``surrogateescape`` (Python's stdin under a C or C.UTF-8 locale, hence
    fairseq-interactive's input) holds each byte that is not UTF-8 as a lone surrogate
    U+DC80..U+DCFF; no surrogate can be encoded as UTF-8, so spaCy fails on it. A high
    surrogate followed by a low one (a UTF-16 pair written into a str) is joined into the
    character it encodes; every other surrogate is a replacement character, as
    ``bytes.decode(errors="replace")`` would have given for an invalid byte.
    """
    count = 0

    def fix(m):
        nonlocal count
        if m.group(1):
            return m.group(1).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        count += 1
        return "\ufffd"

    return _SURROGATE.sub(fix, line), count


def read_normalized_lines(path: str) -> Iterator[str]:
    """The lines of a UTF-8 text file (:func:`syntax_nmt.utils.read_lines`), streaming, each normalized
    (:func:`normalize`).

    Raises:
        InputError: on invalid UTF-8, naming file and line.
    """
    for line in read_lines(path):
        yield normalize(line)
