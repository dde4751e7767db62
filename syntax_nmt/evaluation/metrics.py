"""The metrics of one system's translation, each sacreBLEU's (one metric a function, as sacreBLEU keeps one a
module): detokenized sacreBLEU (:func:`detok_bleu`, the plugin's one sacreBLEU wrapper) and chrF, tokenized BLEU
exactly as Moses' ``multi-bleu.perl`` computes it (:func:`multi_bleu`; also lowercased, the Multi30k literature's
convention), and the tokenized, compound-split BLEU that published WMT14 numbers use (fairseq's
``compound_split_bleu.sh`` / tensor2tensor's ``##AT##`` trick: ``a-b`` becomes ``a ##AT##-##AT## b`` on both sides,
then BLEU on the tokens). Lines in, scores out: no file is read here."""

import re
from typing import List, Sequence, Tuple

from sacrebleu.metrics import BLEU, CHRF

_COMPOUND = re.compile(r"(\S)-(\S)")
#: the metrics of the paired tests (:func:`syntax_nmt.evaluation.scoring.significance`): sacreBLEU of detokenized
#: text, or :func:`multi_bleu` of tokenized text
METRICS = ("sacrebleu", "tokenized")


def paired_metric(metric: str) -> BLEU:
    """The sacreBLEU metric object of a paired test's ``metric`` (one of :data:`METRICS`).

    Raises:
        ValueError: another metric.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    return BLEU() if metric == "sacrebleu" else multi_bleu()


def compound_split(line: str) -> str:
    """``perl -ple 's{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g'`` of compound_split_bleu.sh."""
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", line)


def detokenize(lines: Sequence[str], lang: str = "de") -> List[str]:
    """Moses detokenization (sacremoses), undoing ``@-@`` aggressive dash splits."""
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    return [detok.detokenize(line.split()) for line in lines]


def detok_bleu(hyps: Sequence[str], refs: Sequence[str]) -> Tuple[float, str, str]:
    """sacreBLEU (13a tokenization, one reference) of detokenized hypotheses: the plugin's one sacreBLEU wrapper
    (scores, the analyses' buckets); ``(score, formatted, signature)``, the score NaN for no hypothesis (an empty
    bucket)."""
    if not hyps:
        return float("nan"), "", bleu_signature()
    bleu = BLEU()
    res = bleu.corpus_score(list(hyps), [list(refs)])
    return res.score, str(res), str(bleu.get_signature())


def bleu_signature() -> str:
    """The sacreBLEU signature of :func:`detok_bleu` (one reference: sacreBLEU names the number of references only
    once it has scored, so a one-line corpus is scored first)."""
    bleu = BLEU()
    bleu.corpus_score(["a"], [["a"]])
    return str(bleu.get_signature())


def multi_bleu() -> BLEU:
    """sacrebleu configured as ``multi-bleu.perl`` (case-sensitive, 4-gram, single reference).

    On tokenized text whose tokens are separated by ASCII whitespace (Moses-tokenized text and
    fairseq output are), this is ``multi-bleu.perl`` to the last digit: both split on whitespace,
    clip n-gram counts by the reference, take the corpus brevity penalty ``exp(1 - r/c)`` when
    ``c < r``, and give a zero n-gram precision the log ``-9999999999`` (BLEU 0, no smoothing).
    ``multi-bleu.perl`` prints 2 decimals; ``tests/unit/test_wmt_recipe_units.py`` checks the equality
    against a transcription of the Perl script.
    """
    return BLEU(tokenize="none", smooth_method="none", force=True)


def tokenized_bleu(hyps_tok: Sequence[str], refs_tok: Sequence[str]) -> Tuple[float, str]:
    """Case-sensitive tokenized BLEU (``multi-bleu.perl REF < HYP``); (score, formatted)."""
    res = multi_bleu().corpus_score(list(hyps_tok), [list(refs_tok)])
    return res.score, str(res)


def lc_tokenized_bleu(hyps_tok: Sequence[str], refs_tok: Sequence[str]) -> Tuple[float, str]:
    """Lowercased tokenized BLEU (``multi-bleu.perl -lc REF < HYP``; the Multi30k literature's metric, on
    its lowercased tokenized references); (score, formatted)."""
    res = multi_bleu().corpus_score([h.lower() for h in hyps_tok], [[r.lower() for r in refs_tok]])
    return res.score, str(res)


def chrf(hyps: Sequence[str], refs: Sequence[str]) -> Tuple[float, str, str]:
    """sacreBLEU's chrF (chrF2, character 6-grams) of detokenized hypotheses; (score, formatted, signature)."""
    metric = CHRF()
    res = metric.corpus_score(list(hyps), [list(refs)])
    return res.score, str(res), str(metric.get_signature())


def compound_split_bleu(hyps_tok: Sequence[str], refs_tok: Sequence[str]) -> Tuple[float, str]:
    """Tokenized BLEU after compound splitting (multi-bleu on tokens); (score, formatted)."""
    bleu = BLEU(tokenize="none", force=True)
    res = bleu.corpus_score([compound_split(h) for h in hyps_tok], [[compound_split(r) for r in refs_tok]])
    return res.score, str(res)

