"""Score fairseq-generate output (newstest2014, Multi30k...) and test significance.

``score``: reads the ``H-`` lines of a ``fairseq-generate --remove-bpe ...``
log (tokenized German), writes the hypotheses tokenized (``NAME.tok``) and
detokenized with sacremoses (``NAME.detok``), and reports

* detokenized sacreBLEU against the raw reference, with its signature, and sacreBLEU's chrF;
* tokenized, case-sensitive BLEU exactly as Moses' ``multi-bleu.perl`` computes it on the
  tokenized hypothesis and reference (what SG-Net reports): sacrebleu with
  ``tokenize="none"`` and ``smooth_method="none"`` (see
  :func:`~syntax_nmt.evaluation.metrics.tokenized_bleu`), and the same lowercased (``multi-bleu.perl -lc``, the
  Multi30k literature's convention);
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

The commands are this module; what they compute lives beside it, one concern a module:
:mod:`~syntax_nmt.evaluation.metrics` (BLEU, chrF, compound split), :mod:`~syntax_nmt.evaluation.generate_log`
(fairseq-generate's lines), :mod:`~syntax_nmt.evaluation.scoring` (files scored, paired tests of files, the summary
table), :mod:`~syntax_nmt.evaluation.syntax_accuracy` (factors and parses against a parser: the one part that runs
one) and :mod:`~syntax_nmt.evaluation.significance` (the tests on sacreBLEU's sentence statistics).
"""

import argparse
import json
import os
from typing import List, Optional, Tuple

from syntax_nmt.evaluation import scoring
from syntax_nmt.evaluation.metrics import METRICS
from syntax_nmt.io_guard import parse_args, reads, writes
from syntax_nmt.utils import atomic_write_json


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
    if args.command in ("factors", "parse"):  # the one part that runs a parser, imported for these two only
        from syntax_nmt.evaluation import syntax_accuracy
    if args.command == "factors":
        result = syntax_accuracy.factor_accuracy(args.gen, args.parser, args.pos_tagset, args.strip_target_tags,
                                                 args.target_scheme, args.case)
        for name, r in result.items():
            print(f"{name}: {r['accuracy']:.2f}% of {r['words']} words agree with {args.parser}")
        if args.output:
            atomic_write_json(args.output, result, indent=2)
        return result
    if args.command == "parse":
        result = syntax_accuracy.parse_accuracy(args.gen, args.conllu, args.parser, args.multi_root)
        print(f"UAS {result['uas']:.2f}% of {result['words']} words ({result['sentences']} sentences) against "
              f"{result['reference']}" + (f"; {result['skipped']} sentences with an unknown subword (<unk>) left out"
                                          if result["skipped"] else ""))
        if args.output:
            with open(args.output, "w") as f:
                json.dump(result, f, indent=2)
        return result
    if args.command == "score":
        result = scoring.score(args.gen, args.ref_raw, args.ref_tok, args.out_prefix, args.lang,
                       strip_target_tags=args.strip_target_tags)
        print(f"{result['name']}: {result['sacrebleu_str']}\n  signature: {result['signature']}\n"
              f"  tokenized (multi-bleu.perl) {result['tokenized_bleu_str']}\n"
              f"  compound-split tokenized {result['compound_split_bleu_str']}")
        return result
    if args.command == "summary":
        text = scoring.summary(args.ref_raw, args.prefixes, args.baseline, args.test, args.n_samples, args.title,
                       args.ref_tok, args.seed)
        print(text)
        return text
    rows = scoring.significance(args.ref_raw, _named(args.baseline, "--baseline"), [_named(s) for s in args.systems],
                        args.test, args.n_samples, args.seed, metric=args.metric)
    print(scoring.format_significance(rows, args.test))
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
