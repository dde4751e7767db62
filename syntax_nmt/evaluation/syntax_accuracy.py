"""The syntax of translations against a parser's: the accuracy of predicted target factors (or interleaved target
tags) against a parser's tags of the hypotheses (``syntax-nmt-evaluate factors``), and the UAS of the source parse a
model predicts (LISA's parse head, the ``G-`` lines of ``--print-source-parse``) against a parser's heads of the same
words (``syntax-nmt-evaluate parse``). The one part of the evaluation that runs a parser (the annotator's spaCy
backend, :mod:`syntax_nmt.annotate.backends`); imported only by the commands that score syntax."""

from typing import Dict, List, Optional

from syntax_nmt.evaluation.generate_log import (BPE_PIECE, RESULTS_PATH_ADVICE, UNKNOWN_PIECE, read_factors,
                                                read_hypotheses, read_sources)
from syntax_nmt.utils import read_lines


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



def _same_word(predicted: str, reference: str) -> bool:
    """Whether two forms are the same word, up to the annotator's escaping (``@@``, ``▁``, special symbols)."""
    from syntax_nmt.annotate.subwords import escape_word

    return predicted == reference or predicted in (escape_word(reference, "bpe"), escape_word(reference, "spm"))


def _g_line(generate_log: str, sid: int) -> int:
    """The number of the first ``G-`` line of sentence ``sid`` in a log."""
    tag = f"G-{sid}\t"
    return next(n for n, line in enumerate(read_lines(generate_log), 1) if line.startswith(tag))


def _count_advice(words: List[str]) -> str:
    """Why a ``G-`` line of heads has another count than its S- line's words, and what to do."""
    piece = BPE_PIECE.search(" ".join(words))
    if piece:
        return (f"(the S- line holds subword pieces, e.g. {piece.group(0)!r}: generate with --remove-bpe, "
                f"--remove-bpe sentencepiece for a sentencepiece model, so that it holds words)")
    return ("(the S- line holds words: the G- line is not of this S- line, from another run or from a plugin before "
            "issue 56, which gave a head to a word that sentencepiece normalizes to nothing, such as U+FFFD alone, "
            "and --remove-bpe drops: translate again)")


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
