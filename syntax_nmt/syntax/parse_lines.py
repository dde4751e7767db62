"""The lines in which fairseq-generate and fairseq-interactive print a model's own parse of each source sentence
(``--print-source-parse`` of the task ``syntax_translation``; LISA's parse head, :mod:`syntax_nmt.tasks.source_parse`),
and their reading back (``syntax-nmt-evaluate parse``). Plain text: no torch, no fairseq.
"""

from typing import Dict, List, Optional, Tuple

from syntax_nmt.syntax.conllu import Sentence, format_conllu

#: ``--print-source-parse``: ``heads`` prints ``G-ID<TAB>h1 h2 ...`` (one 1-based head per word, 0 at roots);
#: ``conllu`` the sentence as a CoNLL-U block, each of its lines after ``G-ID<TAB>`` (the block's empty last line
#: too, so ``grep ^G- | sort -s -t- -k2,2n | cut -f2-`` is a CoNLL-U file in sentence order: fairseq prints in its
#: batch order; a sentence without words has no block)
FORMATS = ("none", "heads", "conllu")
#: the line type of the printed parse (fairseq prints S, T, H, D, P, A, I, E, W, C; target factors F)
LINE = "G"


def parse_lines(sid, sentence: Sentence, fmt: str) -> List[str]:
    """The ``G-`` lines of sentence ``sid`` (:data:`FORMATS`)."""
    if fmt == "heads":
        return [f"{LINE}-{sid}\t{' '.join(map(str, sentence.heads))}"]
    if not sentence.words:
        return []  # CoNLL-U has no empty sentence
    block = Sentence(sentence.words, sentence.upos, sentence.xpos, sentence.heads, sentence.deprels,
                     comments={"sent_id": str(sid)})
    return [f"{LINE}-{sid}\t{line}" for line in format_conllu(block).split("\n")[:-1]]


def read_parse_lines(lines) -> Dict[int, Tuple[Optional[List[str]], List[int]]]:
    """The parses in the ``G-`` lines (either format) of a fairseq-generate/-interactive log: sentence id ->
    ``(words, heads)``, one head per word; ``words`` None for the ``heads`` format (they are the S- line's). A
    sentence without words printed as CoNLL-U has no entry.

    Raises:
        ValueError: a line of neither format, naming it.
    """
    out: Dict[int, Tuple[Optional[List[str]], List[int]]] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.startswith(f"{LINE}-"):
            continue
        tag, _, rest = line.rstrip("\n").partition("\t")
        fields = rest.split("\t")
        try:
            sid = int(tag[len(LINE) + 1:])
            if len(fields) == 10:  # a CoNLL-U word line
                words, heads = out.setdefault(sid, ([], []))
                words.append(fields[1])
                heads.append(int(fields[6]))
            elif not (rest.startswith("#") or (rest == "" and sid in out)):  # not a comment or a block's end
                out[sid] = (None, [int(h) for h in rest.split()])
        except ValueError:
            raise ValueError(f"line {lineno}: not a parse line of --print-source-parse (heads or conllu): "
                             f"{line.rstrip()[:80]!r}") from None
    return out
