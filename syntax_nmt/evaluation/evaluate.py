"""Score fairseq-generate output (newstest2014, Multi30k...) and test significance.

``score``: reads the ``H-`` lines of a ``fairseq-generate --remove-bpe ...``
log (tokenized German), writes the hypotheses tokenized (``NAME.tok``) and
detokenized with sacremoses (``NAME.detok``), and reports

* detokenized sacreBLEU against the raw reference, with its signature, and sacreBLEU's chrF;
* tokenized, case-sensitive BLEU exactly as Moses' ``multi-bleu.perl`` computes it on the
  tokenized hypothesis and reference (what SG-Net reports): sacrebleu with
  ``tokenize="none"`` and ``smooth_method="none"`` (see :func:`tokenized_bleu`), and the same
  lowercased (``multi-bleu.perl -lc``, the Multi30k literature's convention);
* the tokenized, compound-split BLEU that published WMT14 numbers use
  (fairseq's ``compound_split_bleu.sh`` / tensor2tensor's ``##AT##`` trick:
  ``a-b`` becomes ``a ##AT##-##AT## b`` on both sides, then BLEU on the
  tokens, here sacrebleu with ``tokenize="none"``, i.e. multi-bleu).

``summary``: a table of several scored systems with the p-values of
``significance`` against the baseline, for sacreBLEU and (with the tokenized
reference) for tokenized BLEU.

``factors``: the accuracy of predicted target factors against a parser's tags of the hypotheses.

``parse``: the UAS of the source parse a model predicts (LISA's parse head, the ``G-`` lines of
``--print-source-parse``) against a parser's heads of the same words: a CoNLL-U file (the annotator's
``--write-conllu``, an external parser's, a treebank), or a spaCy pipeline parsing the words as given.

``significance``: the two-sided paired bootstrap (``bs``), approximate randomization (``ar``) or sacreBLEU's
own bootstrap statistic (``bs-sacrebleu``, about one-sided) of systems against a baseline, the test sentence as
the unit (:mod:`syntax_nmt.evaluation.significance`, shared with the recipes' and the demo's tables): for one
file per system, ``bs-sacrebleu`` and ``ar`` are exactly ``sacrebleu REF -i BASE SYS... --paired-bs`` /
``--paired-ar``, and ``bs`` draws sacreBLEU's resamples; for several files (one per training seed), all seeds'
lines of a sentence are resampled or swapped together.
"""

import argparse
import json
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from sacrebleu.metrics import BLEU, CHRF

from syntax_nmt.io_guard import parse_args, reads, writes
from syntax_nmt.utils import atomic_write_json, numbered_lines, read_lines, write_lines

_COMPOUND = re.compile(r"(\S)-(\S)")
#: what a hypothesis still holds when fairseq-generate ran without --remove-bpe: a subword-nmt continuation
#: ("Ver@@ ein") or a sentencepiece word boundary ("▁Ver ein")
_BPE_PIECE = re.compile(r"\S+@@(?= |$)|(?:^|(?<= ))\u2581\S*")
#: Metrics of :func:`significance`.
METRICS = ("sacrebleu", "tokenized")
#: where the lines of one translation are with fairseq-generate --results-path (issue 56.7)
RESULTS_PATH_ADVICE = ("give the file where fairseq-generate wrote its S- and H- lines: with --results-path RESULTS, "
                       "RESULTS/generate-SPLIT.txt, which holds the G- and F- lines too (a plugin before issue 56 "
                       "printed them on the standard output: give both, one after the other: cat "
                       "RESULTS/generate-SPLIT.txt stdout.log > gen.out)")


def check_hypothesis(text: str, where: str, target_tags: bool = False) -> None:
    """Refuse a hypothesis that cannot be scored as it is: one that still holds subword pieces (fairseq-generate
    ran without ``--remove-bpe``) or, unless ``target_tags``, interleaved target tags (``⟨DET⟩``: score it with
    ``--strip-target-tags``). Shared by :func:`read_hypotheses` (``score``, ``factors``) and :func:`significance`.

    Raises:
        ValueError: naming ``where`` (``FILE:LINE``) and the piece or tag.
    """
    piece = _BPE_PIECE.search(text)
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


def scoring_scheme(name: str = "", strip_target_tags: bool = False):
    """The target scheme whose tags ``syntax-nmt-evaluate factors`` scores (an instance of the registered class):
    ``name``, else ``tags`` for interleaved tags (``strip_target_tags``), else ``factors`` (F- lines).

    Raises:
        ValueError: an unknown scheme, naming the registered ones.
    """
    from syntax_nmt.targets import registered_schemes

    return registered_schemes().get_class(name or ("tags" if strip_target_tags else "factors"))()


def factor_accuracy(generate_log: str, parser: str, pos_tagset: str = "upos",
                    strip_target_tags: bool = False, scheme: str = "", case: str = "binary") -> Dict[str, Dict]:
    """Accuracy of the predicted target factors against a parser's tags of the hypotheses: each hypothesis's words
    (fairseq-generate's ``--remove-bpe`` H line) parsed as given (spaCy, pre-tokenized, through the annotator's own
    backend), each word's predicted tag (its F line) against the truth the target scheme (``scheme``,
    :func:`scoring_scheme`) computes from that parse for each of its scored streams
    (:meth:`~syntax_nmt.targets.base.TargetScheme.truth`; by default as ``syntax-nmt-annotate`` writes them:
    ``pos``: UPOS or, with ``pos_tagset="xpos"``, the language's tags; ``case``: the ``case`` class of the word;
    ``dep``: the dependency label). The F- lines of other factors are not scored. With ``strip_target_tags`` the
    hypotheses hold interleaved tags (``syntax-nmt-target-tags``): the tag before each word is scored as the
    scheme's one stream.

    Returns:
        factor name -> ``{"accuracy": percent, "words": n, "correct": k}``.

    Raises:
        ValueError: no factor to score, a scheme that scores no stream (or, with ``strip_target_tags``, more than
            one), or a sentence whose tags are not one per word.
    """
    from syntax_nmt.annotate.backends.spacy_backend import SpacyBackend
    from syntax_nmt.annotate.target_tags import is_tag, separate_tags, strip
    from syntax_nmt.utils import InputError

    target = scoring_scheme(scheme, strip_target_tags)
    streams = list(target.scored_streams)
    hyps = read_hypotheses(generate_log, target_tags=strip_target_tags)
    if strip_target_tags:
        if len(streams) != 1:
            raise ValueError(f"target scheme {target.name!r} scores {len(streams)} streams "
                             f"({', '.join(streams) or 'none'}): interleaved tags (--strip-target-tags) are one")
        predicted = {streams[0]: {}}
        for i, h in enumerate(hyps):
            # a tag glued to the word before it (--remove-bpe sentencepiece: the tag is a piece without "▁") is
            # split from it, as strip() removes it
            tokens, tags = separate_tags(h).split(), []
            for k, t in enumerate(tokens):
                if not is_tag(t):
                    tags.append(tokens[k - 1][1:-1] if k > 0 and is_tag(tokens[k - 1]) else "_")
            predicted[streams[0]][i] = tags
        hyps = [strip(h) for h in hyps]
    else:
        predicted = {k: v for k, v in read_factors(generate_log).items() if k in streams}
    if not predicted:
        raise ValueError(f"{generate_log}: no target factor that target scheme {target.name!r} scores "
                         f"({', '.join(streams) or 'none'}): no such F- line. {RESULTS_PATH_ADVICE}; or generate with "
                         f"a model trained with --target-factors")
    for name, rows in predicted.items():
        for i, h in enumerate(hyps):
            if len(rows.get(i, [])) != len(h.split()):
                raise ValueError(f"{generate_log}: sentence {i}: {len(rows.get(i, []))} {name} tags for "
                                 f"{len(h.split())} words")
    source = f"{generate_log}, sentence"
    backend = SpacyBackend(parser, pretokenized=True, parser_unescape=True, pos_tagset=pos_tagset,
                           source_name=source)
    counts = {name: [0, 0] for name in predicted}
    try:
        # every sentence's words are the hypothesis's (the backend refuses a pipeline that merges or splits them)
        for i, sentence, _ in backend.parse((i, h, None) for i, h in enumerate(hyps)):
            for name in predicted:
                tags = predicted[name].get(i, [])  # an empty hypothesis has no F- line
                counts[name][0] += sum(a == b for a, b in zip(tags, target.truth(name, sentence, pos_tagset, case)))
                counts[name][1] += len(tags)
    except InputError as e:  # "SOURCE:ID: message" -> "FILE: sentence ID: message"
        text = str(e)
        if text.startswith(source + ":"):
            sid, _, message = text[len(source) + 1:].partition(": ")
            raise InputError(f"{generate_log}: sentence {sid}: {message}") from None
        raise
    return {name: {"accuracy": 100.0 * c / max(n, 1), "words": n, "correct": c} for name, (c, n) in counts.items()}


#: fairseq's unknown symbol, as the S- line shows an unknown source subword
UNKNOWN_PIECE = "<unk>"


def read_sources(generate_log: str) -> Dict[int, List[str]]:
    """The words of the ``S-`` lines of a fairseq-generate/-interactive log: sentence id -> words."""
    out: Dict[int, List[str]] = {}
    for line in read_lines(generate_log):  # invalid UTF-8: one line naming the file and the line
        if line.startswith("S-"):
            sid, _, text = line.partition("\t")
            out[int(sid[2:])] = text.split()
    return out


def _g_line(generate_log: str, sid: int) -> int:
    """The number of the first ``G-`` line of sentence ``sid`` in a log."""
    tag = f"G-{sid}\t"
    return next(n for n, line in enumerate(read_lines(generate_log), 1) if line.startswith(tag))


def _count_advice(words: List[str]) -> str:
    """Why a ``G-`` line of heads has another count than its S- line's words, and what to do."""
    piece = _BPE_PIECE.search(" ".join(words))
    if piece:
        return (f"(the S- line holds subword pieces, e.g. {piece.group(0)!r}: generate with --remove-bpe, "
                f"--remove-bpe sentencepiece for a sentencepiece model, so that it holds words)")
    return ("(the S- line holds words: the G- line is not of this S- line, from another run or from a plugin before "
            "issue 56, which gave a head to a word that sentencepiece normalizes to nothing, such as U+FFFD alone, "
            "and --remove-bpe drops: translate again)")


def _same_word(predicted: str, reference: str) -> bool:
    """Whether two forms are the same word, up to the annotator's escaping (``@@``, ``▁``, special symbols)."""
    from syntax_nmt.annotate.subwords import escape_word

    return predicted == reference or predicted in (escape_word(reference, "bpe"), escape_word(reference, "spm"))


def parse_accuracy(generate_log: str, conllu: Optional[str] = None, parser: Optional[str] = None,
                   multi_root: str = "forest") -> Dict:
    """UAS of the predicted source parses (``G-`` lines of ``--print-source-parse``) against a parser's heads of the
    same words: a word is right when its predicted head (1-based, 0: root) is the reference's.

    Args:
        generate_log: fairseq-generate/-interactive output with ``G-`` lines (either format) and, for the ``heads``
            format, ``S-`` lines made with ``--remove-bpe`` (the words).
        conllu: the reference as CoNLL-U, one sentence block per sentence with words, in sentence-id order (e.g.
            ``syntax-nmt-annotate --write-conllu`` of the split); or
        parser: a spaCy pipeline (name or path) parsing each sentence's words as given (``--pretokenized``, the
            parser shown plain forms as the recipes annotate), several roots resolved by ``multi_root``.

    A sentence with an unknown subword (``<unk>`` in its S- line) is left out (``skipped``): the model's words are
    the subwords joined as ``--remove-bpe`` joins them, and ``<unk>`` ends a word wherever the unknown piece did.

    Returns:
        ``{"uas": percent, "words": n, "correct": k, "sentences": m, "skipped": s, "reference": name}``.

    Raises:
        ValueError: no ``G-`` line, a reference that is not of the same words (naming the sentence), or neither
            or both of ``conllu`` and ``parser``.
    """
    from syntax_nmt.syntax.parse_lines import read_parse_lines

    if (conllu is None) == (parser is None):
        raise ValueError("give the reference parse as --conllu FILE or --parser SPACY_MODEL (one of them)")
    try:
        predicted = read_parse_lines(read_lines(generate_log))  # invalid UTF-8: named with its file and line
    except ValueError as e:
        if str(e).startswith(generate_log):
            raise
        raise ValueError(f"{generate_log}: {e}") from None
    if not predicted:
        raise ValueError(f"{generate_log}: no G- line: generate with --print-source-parse heads (or conllu) and a "
                         f"model that predicts the parse (--syntax-attention lisa)")
    sources = read_sources(generate_log)
    rows = []  # (sid, words, heads) in sentence-id order, sentences with words only
    for sid in sorted(set(predicted) | {i for i, w in sources.items() if w}):
        words, heads = predicted.get(sid, (None, []))
        words = words if words is not None else sources.get(sid)
        if words is None:
            raise ValueError(f"{generate_log}: sentence {sid}: no S- line to give the words of its G- line. "
                             f"{RESULTS_PATH_ADVICE}")
        if sid not in predicted:
            raise ValueError(f"{generate_log}: sentence {sid}: an S- line of {len(words)} words but no G- line "
                             f"(--print-source-parse heads prints one for every sentence: a log cut short, or the "
                             f"lines of two runs?)")
        if len(words) != len(heads):
            raise ValueError(f"{generate_log}:{_g_line(generate_log, sid)}: sentence {sid}: {len(heads)} heads for the "
                             f"{len(words)} words of its S- line {_count_advice(words)}")
        beyond = [(k, h) for k, h in enumerate(heads, 1) if not 0 <= h <= len(words)]
        if beyond:
            k, h = beyond[0]
            raise ValueError(f"{generate_log}: sentence {sid}: word {k}'s head is {h}, beyond its {len(words)} words "
                             f"(heads are 1-based word numbers, 0 the root): not a parse of --print-source-parse")
        if words:
            rows.append((sid, words, heads))
    if conllu is not None:
        from syntax_nmt.syntax.conllu import open_conllu, read_conllu

        with open_conllu(conllu) as f:
            reference = list(read_conllu(f, conllu))
        if len(reference) != len(rows):
            raise ValueError(f"{conllu} has {len(reference)} sentence blocks, {generate_log} {len(rows)} sentences "
                             f"with words: one block per sentence, in order")
        gold = [(r.words, r.heads) for r in reference]
        name = conllu
    else:
        from syntax_nmt.annotate.backends.spacy_backend import SpacyBackend

        backend = SpacyBackend(parser, pretokenized=True, parser_unescape=True, multi_root=multi_root,
                               source_name=generate_log)
        gold = [(s.words, s.heads) for _, s, _ in backend.parse((k + 1, " ".join(w), None)
                                                                 for k, (_, w, _) in enumerate(rows))]
        name = parser
    correct = total = skipped = 0
    for (sid, words, heads), (ref_words, ref_heads) in zip(rows, gold):
        if UNKNOWN_PIECE in words:  # its words are not the reference's: an unknown subword ends its word
            skipped += 1
            continue
        if len(ref_words) != len(words) or not all(_same_word(a, b) for a, b in zip(words, ref_words)):
            raise ValueError(f"sentence {sid}: the reference {name} parses other words ({' '.join(ref_words[:8])} ...) "
                             f"than the model's ({' '.join(words[:8])} ...): the UAS needs the same words")
        correct += sum(a == b for a, b in zip(heads, ref_heads))
        total += len(words)
    return {"uas": 100.0 * correct / max(total, 1), "words": total, "correct": correct,
            "sentences": len(rows) - skipped, "skipped": skipped, "reference": name}


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


def score(generate_log: str, ref_raw: str, ref_tok: str, out_prefix: str, lang: str = "de",
          strip_target_tags: bool = False) -> Dict:
    """Extract, detokenize and score one system; writes ``out_prefix.{tok,detok,json}``. ``strip_target_tags``: the
    hypotheses hold interleaved target tags (``syntax-nmt-target-tags``), removed before anything is scored."""
    hyps_tok = read_hypotheses(generate_log, target_tags=strip_target_tags)
    if strip_target_tags:
        from syntax_nmt.annotate.target_tags import strip

        hyps_tok = [strip(h) for h in hyps_tok]
    return score_lines(hyps_tok, detokenize(hyps_tok, lang), ref_raw, ref_tok, out_prefix)


def score_lines(hyps_tok: Sequence[str], hyps: Sequence[str], ref_raw: str, ref_tok: str, out_prefix: str) -> Dict:
    """Score tokenized hypotheses and their detokenized form (:func:`score`'s scores, from translations kept
    as text); writes ``out_prefix.{tok,detok,json}``."""
    refs_raw, refs_tok = list(read_lines(ref_raw)), list(read_lines(ref_tok))
    if not len(hyps_tok) == len(hyps) == len(refs_raw) == len(refs_tok):
        raise ValueError(f"{len(hyps_tok)} tokenized and {len(hyps)} detokenized hypotheses, {len(refs_raw)} raw "
                         f"references ({ref_raw}) and {len(refs_tok)} tokenized ones ({ref_tok}): the line counts "
                         f"must agree")
    write_lines(out_prefix + ".tok", hyps_tok)
    write_lines(out_prefix + ".detok", hyps)
    bleu, bleu_str, signature = detok_bleu(hyps, refs_raw)
    split_bleu, split_str = compound_split_bleu(hyps_tok, refs_tok)
    tok_bleu, tok_str = tokenized_bleu(hyps_tok, refs_tok)
    lc_bleu, lc_str = lc_tokenized_bleu(hyps_tok, refs_tok)
    chrf_score, chrf_str, chrf_signature = chrf(hyps, refs_raw)
    result = {
        "name": os.path.basename(out_prefix), "sentences": len(hyps),
        "sacrebleu": bleu, "sacrebleu_str": bleu_str, "signature": signature,
        "chrf": chrf_score, "chrf_str": chrf_str, "chrf_signature": chrf_signature,
        "tokenized_bleu": tok_bleu, "tokenized_bleu_str": tok_str,
        "lc_tokenized_bleu": lc_bleu, "lc_tokenized_bleu_str": lc_str,
        "compound_split_bleu": split_bleu, "compound_split_bleu_str": split_str,
    }
    # written last and atomically: the recipes take PREFIX.json for the mark of a scored translation
    atomic_write_json(out_prefix + ".json", result, indent=2)
    return result


def _checked_lines(path: str) -> List[str]:
    """The lines of a hypothesis file for a paired test, refused as :func:`score` refuses them (subword pieces,
    target tags: :func:`check_hypothesis`)."""
    lines = list(read_lines(path))
    for lineno, line in enumerate(lines, 1):
        check_hypothesis(line, f"{path}:{lineno}")
    return lines


def _files(spec) -> List[str]:
    """A system's hypothesis files: one path, or a list of them (one per training seed)."""
    return [spec] if isinstance(spec, str) else list(spec)


def significance(ref_raw: str, baseline: Tuple[str, object], systems: Sequence[Tuple[str, object]],
                 test_type: str = "bs", n_samples: int = 0, seed: Optional[int] = None,
                 metric: str = "sacrebleu") -> List[Dict]:
    """Paired significance of each system against the baseline, the test sentence as the unit
    (:mod:`syntax_nmt.evaluation.significance`, which the recipes' and the demo's tables use too).

    With one hypothesis file per system, ``bs-sacrebleu`` and ``ar`` are sacreBLEU's ``--paired-bs`` /
    ``--paired-ar`` exactly (scores, bootstrap means and confidence intervals, p-values); ``bs`` has sacreBLEU's
    scores, means and intervals and the two-sided p-value of the same resamples. With several (the translations of
    several training seeds, seed s of a system paired with seed s of the baseline) every resample carries, and every
    trial swaps, the lines of all seeds of a sentence together.

    Args:
        ref_raw: the reference file: untokenized for ``sacrebleu``, tokenized for ``tokenized``.
        baseline, systems: ``(name, hypothesis file or list of files)``, detokenized or tokenized like the
            reference; every system has as many files as the baseline.
        test_type: ``"bs"`` (two-sided paired bootstrap, 1000 samples), ``"bs-sacrebleu"`` (sacreBLEU's bootstrap
            statistic, 1000 samples) or ``"ar"`` (approximate randomization, 10000 trials) when ``n_samples`` is 0.
        metric: ``sacrebleu`` (13a-tokenized BLEU of detokenized text) or ``tokenized``
            (:func:`multi_bleu` on tokenized text).
        seed: seed of the resampling; ``None``: ``$SACREBLEU_SEED`` if set (``none``: unseeded), else
            sacrebleu's 12345. Must not be 0 (sacreBLEU reads 0 as unseeded; refused, so both agree).

    Returns:
        One dict per system: name, BLEU (over all its files), bootstrap mean and 95% CI (the bootstraps; None for
        ``ar``) and p-value (None for the baseline).
    """
    from syntax_nmt.evaluation import significance as tests

    if seed == 0:
        raise ValueError("significance seed 0 is not reproducible in sacrebleu (it means unseeded); use another")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    named = [(name, _files(spec)) for name, spec in [baseline, *systems]]
    for name, files in named[1:]:
        if len(files) != len(named[0][1]):
            raise ValueError(f"{name} has {len(files)} hypothesis files, the baseline {named[0][0]} "
                             f"{len(named[0][1])}: give each system one file per seed, in the same order")
    refs = list(read_lines(ref_raw))
    if not refs:
        raise ValueError(f"{ref_raw} is empty: no test sentence to resample")
    bleu = BLEU() if metric == "sacrebleu" else multi_bleu()
    stats = [tests.sentence_statistics(bleu, [_checked_lines(f) for f in files], refs) for _, files in named]
    rng_seed = tests.resampling_seed(seed)
    results = [tests.paired_test(bleu, stats[0], s, test_type, n_samples, rng_seed) for s in stats[1:]]
    first = results[0]  # the baseline's resamples are the same draws in every comparison
    rows = [{"name": named[0][0], "bleu": first.baseline, "mean": first.baseline_mean, "ci": first.baseline_ci,
             "p_value": None}]
    for (name, _), res in zip(named[1:], results):
        rows.append({"name": name, "bleu": res.system, "mean": res.mean, "ci": res.ci, "p_value": res.p_value})
    return rows


def significant(p_value: float) -> bool:
    """The ``*`` of the tables: p < 0.05."""
    return p_value < 0.05


def format_significance(rows: List[Dict], test_type: str) -> str:
    """One line per system: ``name BLEU (mu +- ci) p = ...``; ``*`` marks p < 0.05."""
    from syntax_nmt.evaluation.significance import TEST_LABELS

    label = TEST_LABELS[test_type]
    lines = []
    for i, r in enumerate(rows):
        spread = f" (mu = {r['mean']:.2f} +- {r['ci']:.2f})" if r.get("mean") is not None else ""
        if i == 0:
            lines.append(f"{r['name']:<16} BLEU = {r['bleu']:.2f}{spread}  [baseline]")
        else:
            star = "*" if significant(r["p_value"]) else " "
            lines.append(f"{r['name']:<16} BLEU = {r['bleu']:.2f}{spread}  p = {r['p_value']:.4f}{star} "
                         f"({label} vs {rows[0]['name']})")
    return "\n".join(lines)


def _prefix_list(spec) -> List[str]:
    """A system of :func:`summary`: ``PREFIX[,PREFIX...]`` (one per training seed) or a list of prefixes."""
    if isinstance(spec, str):
        items = spec.split(",")
        if not all(items):
            raise ValueError(f"{spec}: an empty prefix (a comma too many?)")
        return items
    return list(spec)


def summary(ref_raw: str, prefixes: Sequence, baseline=None, test_type: str = "bs",
            n_samples: int = 0, title: str = "", ref_tok: Optional[str] = None, seed: Optional[int] = None) -> str:
    """A table of the scores of ``score`` (``PREFIX.json``) for several systems, with the
    p-value of a paired test against ``baseline`` (a prefix, also listed first): on sacreBLEU
    (``PREFIX.detok`` against ``ref_raw``) and, when ``ref_tok`` is given, on tokenized BLEU
    (``PREFIX.tok`` against ``ref_tok``).

    A system may be the translations of several training seeds: ``PREFIX,PREFIX,...`` (or a list), one per seed, as
    many as the baseline's, seed s paired with the baseline's seed s. Its scores are then the means over its seeds,
    and its p-values :func:`significance`'s with the seeds' files (the test sentence the unit, all seeds' lines of a
    sentence together). The p-values are kept by system, not by name: two systems of one name (``seed1/s``,
    ``seed2/s``) are shown by their prefixes."""
    systems = [_prefix_list(p) for p in prefixes]
    base = _prefix_list(baseline) if baseline else None
    systems = ([base] if base else []) + [p for p in systems if p != base]
    seeds = len(systems[0]) if systems else 1
    if base:
        for p in systems[1:]:
            if len(p) != len(base):
                raise ValueError(f"{','.join(p)} has {len(p)} seed(s), the baseline {','.join(base)} {len(base)}: "
                                 f"give every system one prefix per seed, in the same order")
    results = []
    for spec in systems:
        runs = []
        for prefix in spec:
            with open(prefix + ".json") as f:
                try:
                    runs.append(json.load(f))
                except ValueError as e:
                    raise ValueError(f"{prefix}.json is not valid JSON ({e}): score {prefix} again") from None
        row = dict(runs[0])
        for key in ("sacrebleu", "tokenized_bleu", "compound_split_bleu"):
            values = [r.get(key) for r in runs]
            row[key] = None if any(v is None for v in values) else sum(values) / len(values)
        results.append(row)
    names = [r["name"] for r in results]
    shown = [r["name"] if names.count(r["name"]) == 1 else ",".join(spec) for r, spec in zip(results, systems)]
    p_values: Dict[str, Dict[int, float]] = {"sacrebleu": {}, "tokenized": {}}
    if base and len(systems) > 1:
        for metric, ref, ext in (("sacrebleu", ref_raw, ".detok"), ("tokenized", ref_tok, ".tok")):
            if ref is None:
                continue
            files = [[p + ext for p in spec] for spec in systems]
            rows = significance(ref, (shown[0], files[0] if seeds > 1 else files[0][0]),
                                [(n, f if seeds > 1 else f[0]) for n, f in zip(shown[1:], files[1:])],
                                test_type, n_samples, seed, metric=metric)
            p_values[metric] = {i: r["p_value"] for i, r in enumerate(rows[1:], 1)}

    def p_str(metric, i):
        if base and i == 0:
            return "baseline"
        p = p_values[metric].get(i)
        return "-" if p is None else f"{p:.4f}{'*' if significant(p) else ''}"

    def num(value):
        return "-" if value is None else f"{value:.2f}"

    from syntax_nmt.evaluation.significance import TEST_NAMES, samples_text

    lines = [title] if title else []
    lines.append(f"{'system':<16} {'sacreBLEU':>9} {'p':>9} {'tok.BLEU':>9} {'p':>9} {'split BLEU':>11}")
    for i, (r, name) in enumerate(zip(results, shown)):
        lines.append(f"{name:<16} {r['sacrebleu']:>9.2f} {p_str('sacrebleu', i):>9} "
                     f"{num(r.get('tokenized_bleu')):>9} {p_str('tokenized', i):>9} "
                     f"{r['compound_split_bleu']:>11.2f}")
    lines.append("tok.BLEU: tokenized case-sensitive BLEU (= multi-bleu.perl); split BLEU: tokenized, "
                 "compound-split BLEU (as most WMT14 papers)")
    if seeds > 1:
        lines.append(f"scores: mean over {seeds} seeds (one prefix per training seed)")
    if base and len(systems) > 1:
        unit = "the test sentence" if seeds == 1 else f"the test sentence, with the lines of all {seeds} seeds"
        lines.append(f"p: {TEST_NAMES[test_type]} against the baseline ({samples_text(test_type, n_samples)}, unit: "
                     f"{unit}; p = 1 where the scores are equal); * p < 0.05")
    lines.append(f"sacreBLEU signature: {results[0]['signature']}")
    return "\n".join(lines)


def _named(spec: str, option: str = "") -> Tuple[str, object]:
    """``[NAME=]FILE[,FILE...]``: a name (default: the first file's stem) and one file, or one per seed.

    Raises:
        ValueError: an empty file name (a trailing or doubled comma), naming ``option`` and ``spec``.
    """
    name, sep, path = spec.partition("=")
    if not sep:
        name, path = os.path.splitext(os.path.basename(spec.split(",")[0]))[0], spec
    files = path.split(",")
    if not all(files):
        raise ValueError(f"{option + ' ' if option else ''}{spec}: an empty file name (a comma too many?)")
    return name, files[0] if len(files) == 1 else files


def main(args: argparse.Namespace):
    if args.command == "factors":
        result = factor_accuracy(args.gen, args.parser, args.pos_tagset, args.strip_target_tags, args.target_scheme,
                                 args.case)
        for name, r in result.items():
            print(f"{name}: {r['accuracy']:.2f}% of {r['words']} words agree with {args.parser}")
        if args.output:
            atomic_write_json(args.output, result, indent=2)
        return result
    if args.command == "parse":
        result = parse_accuracy(args.gen, args.conllu, args.parser, args.multi_root)
        print(f"UAS {result['uas']:.2f}% of {result['words']} words ({result['sentences']} sentences) against "
              f"{result['reference']}" + (f"; {result['skipped']} sentences with an unknown subword (<unk>) left out"
                                          if result["skipped"] else ""))
        if args.output:
            with open(args.output, "w") as f:
                json.dump(result, f, indent=2)
        return result
    if args.command == "score":
        result = score(args.gen, args.ref_raw, args.ref_tok, args.out_prefix, args.lang,
                       strip_target_tags=args.strip_target_tags)
        print(f"{result['name']}: {result['sacrebleu_str']}\n  signature: {result['signature']}\n"
              f"  tokenized (multi-bleu.perl) {result['tokenized_bleu_str']}\n"
              f"  compound-split tokenized {result['compound_split_bleu_str']}")
        return result
    if args.command == "summary":
        text = summary(args.ref_raw, args.prefixes, args.baseline, args.test, args.n_samples, args.title,
                       args.ref_tok, args.seed)
        print(text)
        return text
    rows = significance(args.ref_raw, _named(args.baseline, "--baseline"), [_named(s) for s in args.systems],
                        args.test, args.n_samples, args.seed, metric=args.metric)
    print(format_significance(rows, args.test))
    if args.output:
        atomic_write_json(args.output, rows, indent=2)
    return rows


#: the paired tests (syntax_nmt.evaluation.significance.DEFAULT_SAMPLES; listed here: the parser imports nothing heavy)
TESTS = ["bs", "ar", "bs-sacrebleu"]
TEST_HELP = ("bs: two-sided paired bootstrap (|Δ* − mean Δ*| ≥ |Δ|); ar: approximate randomization (two-sided); "
             "bs-sacrebleu: sacreBLEU's own paired bootstrap statistic (|Δ*| − mean |Δ*| > |Δ|, one tail where the "
             "difference keeps its sign: about half the two-sided p; sacrebleu --paired-bs's p-value)")

SEED_HELP = "seed of the resampling, not 0 (default: $SACREBLEU_SEED, else 12345)"


def _seed(value: str) -> int:
    seed = int(value)
    if seed == 0:
        raise argparse.ArgumentTypeError("0 means unseeded in sacrebleu; use another seed")
    return seed


def _named_files(value, _) -> List[str]:
    """The files of ``[NAME=]FILE[,FILE...]`` values (significance's --baseline and systems)."""
    specs = value if isinstance(value, list) else [value]
    return [f for spec in specs for f in spec.partition("=")[2 if "=" in spec else 0].split(",") if f]


def _scores(value, _) -> List[str]:
    """The score files (``PREFIX.json``) of ``PREFIX[,PREFIX...]`` values (summary's --baseline and prefixes)."""
    specs = value if isinstance(value, list) else [value]
    return [p + ".json" for spec in specs for p in spec.split(",") if p]


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="syntax-nmt-evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  syntax-nmt-evaluate score --gen gen.out --ref-raw prep/test.raw.de "
        "--ref-tok prep/test.de --out-prefix eval/syntax\n"
        "  syntax-nmt-evaluate parse --gen gen.out --parser en_core_web_sm\n"
        "  syntax-nmt-evaluate significance --ref-raw prep/test.raw.de "
        "--baseline baseline=eval/baseline.detok syntax=eval/syntax.detok",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("score", help="extract, detokenize and score one fairseq-generate log")
    reads(p.add_argument("--gen", required=True, help="fairseq-generate output (run with --remove-bpe)"))
    reads(p.add_argument("--ref-raw", required=True, help="untokenized reference (test.raw.de)"))
    reads(p.add_argument("--ref-tok", required=True, help="tokenized reference (test.de of prepare.py)"))
    writes(p.add_argument("--out-prefix", required=True, help="writes PREFIX.tok, PREFIX.detok, PREFIX.json"),
           "prefix", paths=lambda prefix, _: [prefix + ext for ext in (".tok", ".detok", ".json")])
    p.add_argument("--lang", default="de", help="target language for detokenization")
    p.add_argument("--strip-target-tags", action="store_true",
                   help="remove interleaved target tags (syntax-nmt-target-tags) from the hypotheses before scoring")
    p = sub.add_parser("factors", help="accuracy of the predicted target factors (F lines, or interleaved tags) "
                       "against a parser's tags of the hypotheses")
    reads(p.add_argument("--gen", required=True, help="fairseq-generate output (run with --remove-bpe)"))
    reads(p.add_argument("--parser", required=True, help="spaCy pipeline (name or path) of the target language, the "
                         "one the training target was annotated with"), "dir", name_or_path=True)
    p.add_argument("--target-scheme", default="", help="the target scheme the system was trained with (python -m "
                   "syntax_nmt.systems shell SYSTEM: SYSTEM_TARGET): the streams it scores, each against the truth it "
                   "computes from the parse (default: tags with --strip-target-tags, else factors: the F lines of "
                   "pos, case and dep)")
    p.add_argument("--pos-tagset", choices=["upos", "xpos"], default="upos", help="as syntax-nmt-annotate's")
    p.add_argument("--case", choices=["binary", "rich"], default="binary", help="as syntax-nmt-annotate's")
    p.add_argument("--strip-target-tags", action="store_true",
                   help="the hypotheses hold interleaved tags (syntax-nmt-target-tags): score the tag before each word "
                   "as the scheme's one stream")
    writes(p.add_argument("--output", help="write the accuracies as JSON"))
    p = sub.add_parser("parse", help="UAS of the source parse a model predicts (G- lines of --print-source-parse) "
                       "against a parser's heads of the same words")
    reads(p.add_argument("--gen", required=True, help="fairseq-generate/-interactive output with G- lines (--print-"
                         "source-parse heads: run with --remove-bpe, the words are the S- lines)"))
    ref = p.add_mutually_exclusive_group(required=True)
    reads(ref.add_argument("--conllu", help="the reference parse: CoNLL-U, one block per sentence with words, in "
                           "order (syntax-nmt-annotate --write-conllu, an external parser's output, a treebank)"))
    reads(ref.add_argument("--parser", help="the reference parser: a spaCy pipeline (name or path) parsing the words "
                           "as given, e.g. the one the training source was annotated with"), "dir", name_or_path=True)
    p.add_argument("--multi-root", choices=["forest", "attach"], default="forest",
                   help="with --parser: several roots in a line, as syntax-nmt-annotate's")
    writes(p.add_argument("--output", help="write the result as JSON"))
    p = sub.add_parser("significance", help="paired significance test against a baseline")
    reads(p.add_argument("--ref-raw", required=True,
                         help="reference: untokenized (sacrebleu) or tokenized (tokenized)"))
    reads(p.add_argument("--baseline", required=True, help="[NAME=]baseline hypotheses (detokenized or tokenized); "
                         "FILE,FILE,...: one per training seed, the test sentence the unit"), paths=_named_files)
    reads(p.add_argument("systems", nargs="+", help="[NAME=]system hypotheses (detokenized or tokenized), one file "
                         "per seed as for --baseline"), paths=_named_files)
    p.add_argument("--metric", choices=METRICS, default="sacrebleu",
                   help="sacrebleu (detokenized files) or tokenized (multi-bleu.perl BLEU of tokenized files)")
    p.add_argument("--test", choices=TESTS, default="bs", help=TEST_HELP)
    p.add_argument("--n-samples", type=int, default=0, help="0: sacrebleu's default (1000 bs / 10000 ar)")
    writes(p.add_argument("--output", help="write the rows as JSON"))
    p.add_argument("--seed", type=_seed, help=SEED_HELP)
    p = sub.add_parser("summary", help="table of several scored systems, with significance against a baseline")
    reads(p.add_argument("--ref-raw", required=True, help="untokenized reference"))
    reads(p.add_argument("--ref-tok", help="tokenized reference: also test tokenized BLEU (PREFIX.tok)"))
    reads(p.add_argument("--baseline", help="out-prefix of the baseline (of the score command); PREFIX,PREFIX,...: "
                         "one per training seed"), "prefix", paths=_scores)
    reads(p.add_argument("prefixes", nargs="+", help="out-prefixes of the score command, one system each; "
                         "PREFIX,PREFIX,...: one per training seed, as many as the baseline's"), "prefix",
          paths=_scores)
    p.add_argument("--test", choices=TESTS, default="bs", help=TEST_HELP)
    p.add_argument("--n-samples", type=int, default=0)
    p.add_argument("--title", default="")
    p.add_argument("--seed", type=_seed, help=SEED_HELP)
    return parser


def cli_main(argv: Optional[List[str]] = None) -> None:
    import logging

    from syntax_nmt.cli_errors import run
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)

    run("syntax-nmt-evaluate", main, parse_args(get_parser(), argv))


if __name__ == "__main__":
    cli_main()
