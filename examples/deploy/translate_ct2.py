#!/usr/bin/env python
"""Translate raw text with an exported model in CTranslate2, with neither syntax-nmt nor fairseq installed.

A parse-free model (the Transformer, LISA, target factors without factor input) reads only the words, so its raw-text
path is the Moses step and the subword model recorded in the data directory's ``annotation.json`` (plain JSON),
nothing else. This file needs only ``sacremoses``, ``subword-nmt`` (BPE) or ``sentencepiece`` (spm) and
``ctranslate2``: copy it beside the model. It is the plugin's parse-free path (``OnlineAnnotator.segment``) written
with those libraries alone; tests/e2e/test_export.py checks that its subwords are the plugin hub's for the same lines.

    syntax-nmt-export checkpoint_last.pt model.pt --ctranslate2 model-ct2 --data data-bin     # once, with the plugin
    python translate_ct2.py --model model-ct2 --settings data-bin/annotation.json --subword-model bpe.codes \\
        --detokenize de --compute-type int8 < raw.en > raw.de

What it does with a line, as the plugin does: drop a byte-order mark; with the recorded ``moses`` settings, sacremoses'
``MosesPunctNormalizer`` (if ``normalize``) and ``MosesTokenizer`` (``aggressive_dash_splits``, ``escape`` as recorded);
collapse whitespace; the words are the tokens (the settings must record ``pretokenized``: the recipes' do; raw-text
settings tokenized with spaCy's tokenizer, which this file does not load); escape fairseq's special symbols and the
subword marker inside words; segment each word (subword-nmt ``@@``, or sentencepiece with one word start per word);
blank a line over the recorded ``max_words`` / ``max_subwords``. After translation: the subwords joined (``--remove-bpe``
for BPE, sentencepiece's pieces for spm) and, with ``--detokenize LANG``, sacremoses' Moses detokenizer.
"""

import argparse
import io
import json
import math
import sys
import time
from typing import Callable, Iterable, List, Optional

BPE_SEPARATOR, SPM_SPACE = "@@", "\u2581"
FAIRSEQ_SPECIALS = ("<s>", "</s>", "<pad>", "<unk>")


def escape_word(word: str, scheme: str) -> str:
    """A word with fairseq's special symbols and the scheme's subword marker escaped (the plugin's rules ``v1``)."""
    for sym in FAIRSEQ_SPECIALS:
        word = word.replace(sym, "\u2039" + sym[1:-1] + "\u203a")
    if scheme == "bpe":
        return word.replace(BPE_SEPARATOR, "\uff20\uff20")
    if scheme == "spm":
        return word.replace(SPM_SPACE, "_")
    return word


def moses_step(moses: Optional[dict]) -> Callable[[str], str]:
    """The recorded sacremoses normalization and tokenization (identity when the settings record none)."""
    if not moses:
        return lambda line: line
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    norm = MosesPunctNormalizer(lang=moses["lang"], post_remove_control_chars=True) if moses.get("normalize") else None
    tok = MosesTokenizer(lang=moses["lang"])
    dash, escape = bool(moses.get("aggressive_dash_splits")), bool(moses.get("escape"))

    def apply(line: str) -> str:
        if norm is not None:
            line = norm.normalize(line)
        return tok.tokenize(line, aggressive_dash_splits=dash, return_str=True, escape=escape)

    return apply


def word_segmenter(scheme: str, model: Optional[str]) -> Callable[[List[str]], List[List[str]]]:
    """Words -> their pieces: subword-nmt BPE codes, a sentencepiece model (one piece starting each word), or none."""
    if scheme == "none":
        return lambda words: [[w] for w in words]
    if scheme == "bpe":
        from subword_nmt.apply_bpe import BPE

        with open(model, encoding="utf-8") as f:
            text = f.read().rstrip("\n").split("\n")
        header = text[:1] if text and text[0].startswith("#version:") else []
        merges = [line for line in text[len(header):] if line.strip("\r ")]
        bpe = BPE(io.StringIO("\n".join(header + merges)), merges=len(merges), separator=BPE_SEPARATOR)
        cache = {}

        def segment(words):
            return [cache[w] if w in cache else cache.setdefault(w, bpe.segment_tokens([w])) for w in words]

        return segment
    if scheme == "spm":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=model)

        def one_start(pieces):
            return bool(pieces) and pieces[0].startswith(SPM_SPACE) and not any(
                p.startswith(SPM_SPACE) for p in pieces[1:])

        def one_word(word):
            joined = sp.normalize(word).replace(SPM_SPACE, "").replace(" ", "")
            pieces = sp.encode(joined, out_type=str) if joined else []
            if not one_start(pieces):
                rest = [x.lstrip(SPM_SPACE) for x in pieces[1:]]
                pieces = ([SPM_SPACE + pieces[0].lstrip(SPM_SPACE)] if pieces else []) + [x for x in rest if x]
            return pieces or [SPM_SPACE]

        def segment(words):
            if not words:
                return []
            return [p if one_start(p) else one_word(w) for w, p in zip(words, sp.encode(list(words), out_type=str))]

        return segment
    raise ValueError(f"subword scheme {scheme!r}: this file knows bpe, spm and none")


class Preprocessor:
    """Raw lines -> subword lists, as the plugin segments them for a parse-free model.

    Args:
        settings: the annotation settings (``annotation.json`` of the data directory, a dict).
        subword_model: the path of the recorded subword model (default: the recorded path).
    """

    def __init__(self, settings: dict, subword_model: Optional[str] = None):
        if not settings.get("pretokenized"):
            raise ValueError("the annotation settings record raw text tokenized by the parser's tokenizer "
                             "(pretokenized false): this file only applies Moses-tokenized settings")
        self.scheme = settings.get("subword", "none")
        self.moses = moses_step(settings.get("moses"))
        self.segment = word_segmenter(self.scheme, subword_model or settings.get("subword_model"))
        self.max_words = int(settings.get("max_words") or 0)
        self.max_subwords = int(settings.get("max_subwords") or 0)

    def __call__(self, line: str) -> List[str]:
        if line.startswith("\ufeff"):
            line = line[1:]
        text = " ".join(self.moses(line).split())
        words = text.split(" ") if text else []
        if self.max_words and len(words) > self.max_words:
            return []
        pieces = [p for ps in self.segment([escape_word(w, self.scheme) for w in words]) for p in ps]
        return [] if self.max_subwords and len(pieces) > self.max_subwords else pieces


def join_subwords(pieces: List[str], scheme: str) -> str:
    """The hypothesis's words (fairseq's ``--remove-bpe`` for BPE, ``sentencepiece`` for spm)."""
    if scheme == "spm":
        return "".join(pieces).replace(SPM_SPACE, " ").strip()
    if scheme == "bpe":
        return (" ".join(pieces) + " ").replace(BPE_SEPARATOR + " ", "").rstrip()
    return " ".join(pieces)


def translate(translator, batch: List[List[str]], beam: int = 5, max_len: int = 200, batch_size: int = 64):
    """CTranslate2's beam search with fairseq-generate's defaults (length penalty 1, at most ``max_len`` tokens)."""
    return translator.translate_batch(batch, beam_size=beam, max_decoding_length=max_len, max_batch_size=batch_size,
                                      return_scores=True)


def main(argv: Optional[Iterable[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="the CTranslate2 model directory")
    p.add_argument("--settings", required=True, help="annotation.json of the data directory")
    p.add_argument("--subword-model", default=None, help="the subword model (default: the recorded path)")
    p.add_argument("--compute-type", default="default", help="float32, int8, ... (CTranslate2's compute_type)")
    p.add_argument("--threads", type=int, default=1, help="CTranslate2's intra_threads")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--max-len", type=int, default=200, help="the longest hypothesis in tokens (fairseq's max_len_b)")
    p.add_argument("--batch-size", type=int, default=64, help="sentences translated together")
    p.add_argument("--gen-format", action="store_true",
                   help="print fairseq-generate's H- lines (score in base 2, as fairseq prints it), for "
                   "syntax-nmt-evaluate score --gen")
    p.add_argument("--detokenize", metavar="LANG", default=None, help="Moses-detokenize the output (target language)")
    p.add_argument("--subwords", action="store_true", help="print the source subwords instead of translating")
    args = p.parse_args(argv)
    with open(args.settings, encoding="utf-8") as f:
        settings = json.load(f)
    pre = Preprocessor(settings, args.subword_model)
    lines = [line.rstrip("\r\n") for line in sys.stdin]
    batch = [pre(line) for line in lines]
    if args.subwords:
        sys.stdout.writelines(" ".join(x) + "\n" for x in batch)
        return
    import ctranslate2

    translator = ctranslate2.Translator(args.model, device="cpu", compute_type=args.compute_type,
                                        intra_threads=args.threads)
    detok = None
    if args.detokenize:
        from sacremoses import MosesDetokenizer

        detok = MosesDetokenizer(lang=args.detokenize)
    start = time.perf_counter()
    results = translate(translator, batch, args.beam, args.max_len, args.batch_size)
    seconds = time.perf_counter() - start
    for i, result in enumerate(results):
        words = join_subwords(result.hypotheses[0], pre.scheme)
        text = detok.detokenize(words.split()) if detok else words
        sys.stdout.write(f"H-{i}\t{result.scores[0] / math.log(2)}\t{text}\n" if args.gen_format else text + "\n")
    sys.stderr.write(f"translated {len(batch)} sentences in {seconds:.2f} s ({len(batch) / seconds:.2f} sentences/s; "
                     f"CTranslate2 {args.compute_type}, {args.threads} thread(s), beam {args.beam})\n")


if __name__ == "__main__":
    main()
