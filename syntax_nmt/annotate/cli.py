"""``syntax-nmt-annotate``: source text -> subword text + aligned syntax streams.

Writes, for output prefix ``P`` and languages ``S``/``T`` (see the project contract):
``P.S`` (subword source), ``P.T`` (subword target, if ``--target``), ``P.pos``, ``P.case``,
``P.subword``, ``P.head``, ``P.dep`` (one field per ``P.S`` token), and with
``--write-conllu`` the word-level parse ``P.S.conllu``. The work is done by
:class:`syntax_nmt.annotate.pipeline.Job`; see :mod:`~syntax_nmt.annotate.pipeline` for the
empty/long line policy, :mod:`~syntax_nmt.annotate.subwords` for escaping,
:mod:`~syntax_nmt.annotate.parsed` for ``--multi-root`` and
:mod:`~syntax_nmt.annotate.chunks` for resuming and sharding.
"""

import argparse
import logging
import sys
from typing import List, Optional, Sequence, Union

from .align import CASE_SCHEMES, POS_TAGSETS
from .backends import DEFAULT_BACKEND, PARSER_BACKENDS, get_backend
from .parsed import MULTI_ROOT_POLICIES
from .settings import parse_moses_settings
from .subwords import SCHEMES
from syntax_nmt.io_guard import check, parse_args, reads, writes


def written_files(prefix: str, args: argparse.Namespace) -> List[str]:
    """Every file ``-o P`` writes or (``--overwrite``) removes: ``P.{src,tgt,streams,conllu}``, its two records,
    and what ``P.chunks/`` holds."""
    import os

    from syntax_nmt.annotation_settings import settings_path

    from .pipeline import inputs_path, output_names

    names = output_names(args.src_lang, args.tgt_lang if args.target else None, args.write_conllu)
    chunks = [os.path.join(d, f) for d, _, files in os.walk(prefix + ".chunks") for f in files]
    return [f"{prefix}.{n}" for n in names] + [settings_path(prefix), inputs_path(prefix)] + chunks


def _subword_model_files(path: str, args: argparse.Namespace) -> List[str]:
    if args.subword != "spm":
        return [path]
    from .subwords import spm_model_path

    model = spm_model_path(path)
    return [model, model[: -len(".model")] + ".vocab"]

EPILOG = """\
examples:
  # WMT scale: learn BPE beforehand (e.g. subword-nmt learn-joint-bpe-and-vocab on the
  # tokenized training data), then annotate in 4 shards (run them anywhere, in any order;
  # the last one to finish merges) and resume any shard by simply rerunning it:
  for i in 0 1 2 3; do
    syntax-nmt-annotate --source train.tok.en --target train.tok.de --src-lang en --tgt-lang de \\
      --pretokenized --spacy-model en_core_web_sm --subword bpe --subword-model bpe.codes \\
      --output-prefix ann/train --shard-id $i --num-shards 4 --n-process 4 --max-words 250 &
  done; wait

  # small corpus: parse, then learn a joint sentencepiece model on the parse, then segment
  syntax-nmt-annotate --source train.en --target train.de --src-lang en --tgt-lang de \\
      --spacy-model ./spacy-en --subword spm --learn-subword 8000 --subword-model-out spm.model \\
      --output-prefix ann/train

  # reuse another parser's CoNLL-U (Stanza/UDPipe, one block per line, no sentence splitting)
  syntax-nmt-annotate --backend conllu --conllu train.en.conllu --source train.en --pretokenized \\
      --target train.de --src-lang en --tgt-lang de --subword bpe --subword-model bpe.codes \\
      --output-prefix ann/train
"""

DESCRIPTION = """\
Parse source text (raw, or pre-tokenized with --pretokenized), segment it into subwords
word by word, and write the subword text plus syntax streams aligned token for token:
every line of P.pos/P.case/P.subword/P.head/P.dep has exactly as many fields as the line
of P.<src-lang>. Input whitespace (tabs, no-break spaces...) is collapsed to single spaces.
Words containing subword markers are escaped: '@@' -> '＠＠' (bpe), '▁' -> '_' (spm);
fairseq's special symbols inside words too: '</s>' -> '‹/s›' (also <s>, <pad>, <unk>).
With --pretokenized, the parser sees Moses placeholders and escapes in plain form
('@-@' -> '-', '&apos;' -> "'"; --no-parser-unescape turns this off); the outputs keep
the tokens. Over-long lines (--max-words, --max-subwords, 1,000,000 characters) are
blanked or refused (--on-long). A rerun into existing outputs made from other input
files or settings is refused (--overwrite redoes them).
Work is split into chunks written atomically to P.chunks/, so a killed run resumes where
it stopped; outputs are merged once every chunk is done. The settings that shaped the
outputs are written to P.annotation.json (syntax-nmt-binarize copies them to the data
directory, for inference on raw text).
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``syntax-nmt-annotate``."""
    p = argparse.ArgumentParser(
        prog="syntax-nmt-annotate", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    io = p.add_argument_group("input and output")
    reads(io.add_argument("--source", metavar="FILE", help="source text, one sentence per line (optional with "
                          "--backend conllu: the source words are then taken from the CoNLL-U)"))
    reads(io.add_argument("--target", metavar="FILE", help="target text, line-aligned with the source; segmented with "
                          "the same subword model (bpe: tokenize it beforehand, e.g. with sacremoses; spm: raw text is "
                          "fine)"))
    io.add_argument("--src-lang", required=True, metavar="S", help="source language, suffix of P.S (e.g. en)")
    io.add_argument("--tgt-lang", metavar="T", help="target language, suffix of P.T (e.g. de)")
    writes(io.add_argument("--output-prefix", "-o", required=True, metavar="P",
                           help="output prefix P (directories are created)"), "prefix", paths=written_files)
    io.add_argument("--pretokenized", action="store_true",
                    help="the source is tokenized already: keep its space-separated tokens as the words")
    io.add_argument("--moses-settings", metavar="SPEC",
                    help="how the text was Moses-processed before annotation, recorded in P.annotation.json so that "
                    "raw text at inference is processed the same way, e.g. "
                    "lang=en,normalize=1,aggressive_dash_splits=1,escape=0 (all four keys)")
    io.add_argument("--write-conllu", action="store_true",
                    help="also write the word-level parse as P.S.conllu (one block per non-empty line, "
                    "'# sent_id = <line number>'; empty lines have no block)")
    io.add_argument("--on-empty", choices=("keep", "error"), default="keep",
                    help="empty source line: keep = write empty lines to every source-side output (fairseq reads "
                    "them as a lone </s>); error = stop, naming file and line (default: %(default)s)")
    io.add_argument("--max-words", type=int, default=0, metavar="N",
                    help="source lines with more than N whitespace-separated words are handled by --on-long "
                    "(default: 0 = no limit; 250 is sensible for WMT)")
    io.add_argument("--max-subwords", type=int, default=0, metavar="N",
                    help="pairs whose source or target line has more than N subword tokens are handled by --on-long; "
                    "this is what fairseq's --max-source-positions/--max-target-positions bound (fairseq adds </s>: "
                    "1023 for the default 1024) (default: 0 = no limit)")
    io.add_argument("--on-long", choices=("blank", "error"), default="blank",
                    help="line over --max-words, over --max-subwords, or (spaCy) over 1,000,000 characters: blank = "
                    "write an empty line to every output, target included (never dropped, so files stay "
                    "line-aligned); error = stop, naming file and line (default: %(default)s)")

    parse = p.add_argument_group("parsing")
    parse.add_argument("--backend", choices=tuple(PARSER_BACKENDS), default=DEFAULT_BACKEND,
                       help="parser (default: %(default)s)")
    for backend in PARSER_BACKENDS.values():
        backend.add_args(parse)
    parse.add_argument("--parser-unescape", action=argparse.BooleanOptionalAction, default=None,
                       help="with --pretokenized (spaCy backend; on by default there): show the parser the plain form "
                       "of Moses placeholders and escapes (@-@ -> -, @/@ -> /, &apos; -> ', &quot; -> \", &amp; -> &, "
                       "other HTML character references too); the tokens, their subwords and every stream stay as in "
                       "the input. --no-parser-unescape parses the tokens as they are")
    parse.add_argument("--multi-root", choices=MULTI_ROOT_POLICIES, default="forest",
                       help="a line parsed as several sentences (several roots): forest = keep every root with head "
                       "0; attach = attach later roots to the first one with label 'parataxis' (default: %(default)s)")
    parse.add_argument("--batch-size", type=int, default=256, help="spaCy nlp.pipe batch size (default: %(default)s)")
    parse.add_argument("--n-process", type=int, default=1, help="spaCy worker processes (default: %(default)s)")
    parse.add_argument("--gpu-id", type=int, default=-1, help="GPU for spaCy, -1 = CPU (default: %(default)s)")

    feats = p.add_argument_group("streams")
    feats.add_argument("--pos-tagset", choices=POS_TAGSETS, default="upos", help="P.pos tags (default: %(default)s)")
    feats.add_argument("--case", choices=CASE_SCHEMES, default="binary",
                       help="binary: C/L (first character upper or not); rich: lower/Cap/UPPER/other "
                       "(default: %(default)s)")

    sub = p.add_argument_group("subwords")
    sub.add_argument("--subword", choices=SCHEMES, default="bpe", help="subword scheme (default: %(default)s)")
    reads(sub.add_argument("--subword-model", metavar="PATH",
                           help="existing BPE codes file (subword-nmt) or sentencepiece .model; recommended at WMT "
                           "scale"))
    sub.add_argument("--learn-subword", type=int, default=0, metavar="N",
                     help="learn a joint model on the parsed source words + target tokens: N BPE merges, or an spm "
                     "vocabulary of about N; done after parsing the whole corpus, by the run that merges")
    writes(sub.add_argument("--subword-model-out", metavar="PATH",
                            help="where --learn-subword writes the model (spm: PATH or PATH.model, plus .vocab)"),
           paths=_subword_model_files)
    sub.add_argument("--spm-model-type", choices=("unigram", "bpe"), default="unigram",
                     help="sentencepiece model type for --learn-subword (default: %(default)s)")

    run = p.add_argument_group("scale and resuming")
    run.add_argument("--chunk-size", type=int, default=100_000, metavar="L",
                     help="lines per chunk, the unit of resuming and sharding (default: %(default)s)")
    run.add_argument("--shard-id", type=int, default=0, metavar="I", help="this run does chunks k with k %% N == I")
    run.add_argument("--num-shards", type=int, default=1, metavar="N", help="number of shards (default: 1)")
    run.add_argument("--merge-only", action="store_true",
                     help="parse nothing: learn/segment what is missing and merge, if all chunks are parsed")
    run.add_argument("--keep-chunks", action="store_true", help="keep P.chunks/ after merging")
    run.add_argument("--overwrite", action="store_true",
                     help="delete P.chunks/ and existing outputs first (never while other shards run)")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no info messages")
    return p


def check_args(args: argparse.Namespace) -> None:
    """Validate option combinations and fill defaults.

    Raises:
        ValueError: on an inconsistent command line.
    """
    backend = get_backend(args.backend)
    backend.check_args(args)
    for other in PARSER_BACKENDS.values():
        for dest in other.exclusive_options if other is not backend else ():
            if getattr(args, dest, None):
                raise ValueError(f"--{dest.replace('_', '-')} is only used with --backend {other.name}")
    unescape = getattr(args, "parser_unescape", None)
    if unescape is None:
        args.parser_unescape = bool(args.pretokenized and backend.parses_text)
    elif unescape and not args.pretokenized:
        raise ValueError("--parser-unescape needs --pretokenized (raw text is tokenized by spaCy itself)")
    elif unescape and not backend.parses_text:
        raise ValueError(f"--parser-unescape applies to the spaCy backend, or another that parses the text "
                         f"(--backend {backend.name} uses its parse as it is)")
    parse_moses_settings(getattr(args, "moses_settings", None))
    if args.target and not args.tgt_lang:
        raise ValueError("--target needs --tgt-lang")
    if args.subword == "none":
        if args.subword_model or args.learn_subword:
            raise ValueError("--subword none takes no --subword-model / --learn-subword")
    elif args.learn_subword:
        if args.subword_model:
            raise ValueError("give either --subword-model or --learn-subword, not both")
        if not args.subword_model_out:
            raise ValueError("--learn-subword needs --subword-model-out PATH")
    elif not args.subword_model:
        raise ValueError(f"--subword {args.subword} needs --subword-model PATH (recommended) or "
                         f"--learn-subword N --subword-model-out PATH")
    if args.subword_model_out and not args.learn_subword:
        raise ValueError("--subword-model-out is only used with --learn-subword")
    if args.learn_subword < 0 or args.max_words < 0 or getattr(args, "max_subwords", 0) < 0:
        raise ValueError("--learn-subword, --max-words and --max-subwords must be >= 0")
    if not 0 <= args.shard_id < args.num_shards:
        raise ValueError(f"--shard-id must be in [0, --num-shards={args.num_shards}), got {args.shard_id}")
    if args.chunk_size < 1 or args.batch_size < 1 or args.n_process < 1:
        raise ValueError("--chunk-size, --batch-size and --n-process must be positive")


def main(args: Union[argparse.Namespace, Sequence[str]], on_chunk_done=None) -> int:
    """Run the annotator.

    Args:
        args: a parsed namespace, or the command-line arguments as a list of strings.
        on_chunk_done: optional hook called with each chunk index after it is written.

    Returns:
        0 on success; errors are raised (``ValueError`` and subclasses name file and line).
    """
    from .pipeline import Job

    if not isinstance(args, argparse.Namespace):
        parser = build_parser()
        args = parser.parse_args(list(args))
        check(parser, args)
    check_args(args)
    return Job(args, on_chunk_done).run()


def cli_main(argv: Optional[List[str]] = None) -> None:
    """Console entry point ``syntax-nmt-annotate``."""
    parser = build_parser()
    args = parse_args(parser, argv)
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING if args.quiet else logging.INFO)
    from syntax_nmt.cli_errors import run

    sys.exit(run("syntax-nmt-annotate", main, args))


if __name__ == "__main__":
    cli_main()
