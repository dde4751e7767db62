"""Readers of fairseq-generate's (and -interactive's) output: the best hypothesis of each sentence (``H-`` lines),
the predicted target factors (``F-``), the source words (``S-``), and the check that a hypothesis can be scored as it
is. The parse lines (``G-``) are read by :func:`syntax_nmt.syntax.parse_lines.read_parse_lines`."""

import re
from typing import Dict, List

from syntax_nmt.utils import numbered_lines, read_lines

#: what a hypothesis still holds when fairseq-generate ran without --remove-bpe: a subword-nmt continuation
#: ("Ver@@ ein") or a sentencepiece word boundary ("▁Ver ein")
BPE_PIECE = re.compile(r"\S+@@(?= |$)|(?:^|(?<= ))\u2581\S*")
#: where the lines of one translation are with fairseq-generate --results-path (issue 56.7)
RESULTS_PATH_ADVICE = ("give the file where fairseq-generate wrote its S- and H- lines: with --results-path RESULTS, "
                       "RESULTS/generate-SPLIT.txt, which holds the G- and F- lines too (a plugin before issue 56 "
                       "printed them on the standard output: give both, one after the other: cat "
                       "RESULTS/generate-SPLIT.txt stdout.log > gen.out)")
#: fairseq's unknown symbol, as the S- line shows an unknown source subword
UNKNOWN_PIECE = "<unk>"


def check_hypothesis(text: str, where: str, target_tags: bool = False) -> None:
    """Refuse a hypothesis that cannot be scored as it is: one that still holds subword pieces (fairseq-generate
    ran without ``--remove-bpe``) or, unless ``target_tags``, interleaved target tags (``⟨DET⟩``: score it with
    ``--strip-target-tags``). Shared by :func:`read_hypotheses` (``score``, ``factors``) and
    :func:`~syntax_nmt.evaluation.scoring.significance`.

    Raises:
        ValueError: naming ``where`` (``FILE:LINE``) and the piece or tag.
    """
    piece = BPE_PIECE.search(text)
    if piece:
        raise ValueError(f"{where}: the hypothesis holds subword pieces ({piece.group().strip()!r}): score the output "
                         f"of fairseq-generate --remove-bpe (BPE) or --remove-bpe sentencepiece")
    if not target_tags:
        from syntax_nmt.annotate.target_tags import find_tag

        tag = find_tag(text)
        if tag:
            raise ValueError(f"{where}: the hypothesis holds target tags ({tag!r}): score it with "
                             f"--strip-target-tags")


def read_hypotheses(generate_log: str, target_tags: bool = False) -> List[str]:
    """Best hypothesis per sentence from a fairseq-generate log, in corpus order.

    Args:
        generate_log: stdout of ``fairseq-generate`` (``H-<id>\\t<score>\\t<text>`` lines).
        target_tags: the hypotheses hold interleaved target tags (else one is refused).

    Raises:
        ValueError: when the sentence ids are not exactly ``0 .. n-1``, or a hypothesis still holds subword
            pieces (the log was made without ``--remove-bpe``) or target tags (:func:`check_hypothesis`), naming
            the line.
    """
    hyps: Dict[int, str] = {}
    for lineno, line in numbered_lines(generate_log):
        if line.startswith("H-"):
            fields = line.split("\t")
            sid = int(fields[0][2:])
            if sid not in hyps:  # first hypothesis is the best one (--nbest > 1)
                hyps[sid] = fields[2] if len(fields) > 2 else ""
                check_hypothesis(hyps[sid], f"{generate_log}:{lineno}", target_tags)
    if not hyps:
        raise ValueError(f"{generate_log}: no hypothesis (no H- line): give the output of fairseq-generate")
    if sorted(hyps) != list(range(len(hyps))):
        raise ValueError(f"{generate_log}: hypothesis ids are not 0..{len(hyps) - 1}")
    return [hyps[i] for i in range(len(hyps))]


def read_factors(generate_log: str) -> Dict[str, Dict[int, List[str]]]:
    """The target factors of a fairseq-generate log (``F-ID<TAB>NAME<TAB>tags`` lines, printed by the task
    ``syntax_translation`` for models with ``--target-factors``): name -> sentence id -> one tag per word."""
    out: Dict[str, Dict[int, List[str]]] = {}
    for _, line in numbered_lines(generate_log):
        if line.startswith("F-"):
            fields = line.split("\t")
            tags = fields[2].split() if len(fields) > 2 else []
            out.setdefault(fields[1], {}).setdefault(int(fields[0][2:]), tags)
    return out



def read_sources(generate_log: str) -> Dict[int, List[str]]:
    """The words of the ``S-`` lines of a fairseq-generate/-interactive log: sentence id -> words."""
    out: Dict[int, List[str]] = {}
    for line in read_lines(generate_log):  # invalid UTF-8: one line naming the file and the line
        if line.startswith("S-"):
            sid, _, text = line.partition("\t")
            out[int(sid[2:])] = text.split()
    return out
