"""syntax-nmt-export: a checkpoint of this plugin in, a stock fairseq checkpoint out (CTranslate2 too: --ctranslate2).

With the extra ``deploy`` it also writes a CTranslate2 model.

The export is fairseq's ``transformer`` with task ``translation`` and the same dictionaries: stock
``fairseq-generate`` and ``fairseq-interactive`` load it without ``--user-dir`` (see :mod:`syntax_nmt.export.stock`
for what can be exported and how; docs/deploy.md, "Serve without the plugin"). A model whose inference needs the plugin
is refused in one line (exit status 2), and nothing is written.
"""

import argparse
import logging
import os
from typing import List, Optional

import torch

from syntax_nmt.export.ctranslate2 import QUANTIZATIONS

logger = logging.getLogger("syntax_nmt.export")

PROG = "syntax-nmt-export"
EPILOG = """example:
  syntax-nmt-export checkpoints/lisa/checkpoint_last.pt lisa-stock.pt
  fairseq-generate data-bin --path lisa-stock.pt --beam 5 --remove-bpe     # no --user-dir
  syntax-nmt-export checkpoints/lisa/checkpoint_last.pt lisa-stock.pt --ctranslate2 lisa-ct2 --data data-bin

exportable: the transformer, LISA without --lisa-inject-parse (its parse head folded into an ordinary head), target
factors without --target-factor-input (their output layers dropped); refused: source features, sgnet, sla,
syntax_bert, seprem, an injected parse, factor input, --source-prepend-bos
"""


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    from syntax_nmt.io_guard import no_path, reads, writes

    reads(p.add_argument("checkpoint", help="a checkpoint of this plugin (fairseq-train --user-dir ...; an average "
                         "too)"))
    writes(p.add_argument("output", help="the stock fairseq checkpoint to write (replaced if it exists)"))
    no_path(p.add_argument("--source-lang", "-s", default=None,
                   help="source language recorded in the export's task (default: the checkpoint's, if it has one; "
                   "else fairseq infers it from the binarized data's file names)"), "a language code")
    no_path(p.add_argument("--target-lang", "-t", default=None, help="target language, likewise"), "a language code")
    writes(p.add_argument("--ctranslate2", metavar="DIR", default=None,
                   help="also convert the export with CTranslate2's fairseq converter into DIR (needs --data and "
                   "the extra deploy: pip install -e \".[deploy]\")"), "dir")
    reads(p.add_argument("--data", default=None, help="with --ctranslate2: the data directory holding the "
                         "dictionaries dict.SRC.txt, dict.TGT.txt"), "dir")
    p.add_argument("--quantization", choices=QUANTIZATIONS, default=None,
                   help="with --ctranslate2: the weight type CTranslate2 stores (default: float32; int8 weights can "
                   "also be chosen when translating, compute_type='int8')")
    p.add_argument("--force", action="store_true", help="with --ctranslate2: replace an existing DIR")
    return p


def _check_ctranslate2(args, src: Optional[str], tgt: Optional[str]) -> None:
    """Everything --ctranslate2 needs, checked before anything is written."""
    from syntax_nmt.export.ctranslate2 import converter_class

    if args.data is None:
        raise ValueError("--ctranslate2 needs --data, the directory with the dictionaries")
    converter_class()
    if os.path.exists(args.ctranslate2) and not args.force:
        raise ValueError(f"--ctranslate2 {args.ctranslate2} exists: give --force to replace it")
    if not (src and tgt):
        raise ValueError("--ctranslate2 needs the language pair: the checkpoint records none, give --source-lang "
                         "and --target-lang")
    for lang in (src, tgt):
        path = os.path.join(args.data, f"dict.{lang}.txt")
        if not os.path.isfile(path):
            raise ValueError(f"--data {args.data} has no {os.path.basename(path)}")


def main(args: argparse.Namespace) -> None:
    from syntax_nmt.export.stock import build_stock_model, export_checkpoint, load_checkpoint
    from syntax_nmt.utils import refuse_overwriting

    if not os.path.isfile(args.checkpoint):
        raise ValueError(f"{args.checkpoint} does not exist")
    refuse_overwriting([(args.output, args.output)], [args.checkpoint])
    if args.ctranslate2 is None and (args.data or args.quantization or args.force):
        raise ValueError("--data, --quantization and --force go with --ctranslate2")
    exported = export_checkpoint(load_checkpoint(args.checkpoint), args.source_lang, args.target_lang,
                                 path=args.checkpoint)
    task = exported.state["cfg"]["task"]
    if args.ctranslate2 is not None:
        _check_ctranslate2(args, task.get("source_lang"), task.get("target_lang"))
    build_stock_model(exported.state)  # the stock model takes every tensor, or this is a bug (a traceback)
    directory = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(directory):
        raise ValueError(f"the directory of {args.output} does not exist")
    tmp = f"{args.output}.tmp-{os.getpid()}"
    try:
        torch.save(exported.state, tmp)
        os.replace(tmp, args.output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    logger.info("wrote %s: stock fairseq %s, task translation (%s -> %s)%s", args.output, exported.arch,
                task.get("source_lang") or "?", task.get("target_lang") or "?",
                f"; left out {len(exported.dropped)} tensors" if exported.dropped else "")
    for note in exported.notes:
        logger.info("%s", note)
    if args.ctranslate2 is not None:
        from syntax_nmt.export.ctranslate2 import convert

        convert(args.output, args.data, args.ctranslate2, args.quantization, args.force)
        logger.info("wrote %s: CTranslate2 model (%s)", args.ctranslate2, args.quantization or "float32")


def cli_main(argv: Optional[List[str]] = None) -> None:
    import fairseq  # noqa: F401

    from syntax_nmt import register_with_fairseq
    from syntax_nmt.cli_errors import run
    from syntax_nmt.utils import setup_logging

    from syntax_nmt.io_guard import parse_args

    args = parse_args(get_parser(), argv)
    register_with_fairseq()  # the plugin's architectures, to read its checkpoints
    setup_logging(logging.INFO)
    logging.getLogger("fairseq").setLevel(logging.WARNING)
    run(PROG, main, args)


if __name__ == "__main__":
    cli_main()
