"""``syntax-nmt-analyze``: the papers' analyses of trained models, one subcommand each.

Every subcommand writes a PNG plot and the same numbers as JSON and markdown into ``--out``.
"""

import argparse
import logging
import os
from typing import List

from syntax_nmt import io_guard

PROG = "syntax-nmt-analyze"
#: what ``fractions`` writes into its --out (common.write_outputs's stem.json, stem.md, figure.png)
FRACTIONS_FILES = (".json", ".md", ".png")

EPILOG = """examples (paths of `make demo`):
  syntax-nmt-analyze attention --data demo-out/data-bin --sentence 3 \\
      --system demo-out/checkpoints/transformer/seed1/checkpoint_last.pt \\
      --system demo-out/checkpoints/syntax-infused/seed1/checkpoint_last.pt --out analysis
  syntax-nmt-analyze attention --data demo-out/data-bin --text "The old teacher saw a small dog ." \\
      --system demo-out/checkpoints/sgnet/seed1/checkpoint_last.pt --out analysis   # raw text, parsed on the fly
  syntax-nmt-analyze gates --data demo-out/data-bin --out analysis \\
      --system sla=demo-out/checkpoints/sla/seed1/checkpoint_last.pt
  syntax-nmt-analyze length --data demo-out/data-bin --ref-raw demo-out/corpus/test.de \\
      --system transformer=demo-out/gen/transformer.seed1.gen --system sgnet=demo-out/gen/sgnet.seed1.gen --out analysis
  syntax-nmt-analyze noise --data demo-out/data-bin --ref-raw demo-out/corpus/test.de \\
      --system sgnet=demo-out/checkpoints/sgnet/seed1/checkpoint_last.pt --out analysis/noise
  syntax-nmt-analyze corrupt --data data-bin --out data-bin-head40 --stream head --rate 0.4   # train on it
  syntax-nmt-analyze fractions --results wmt14_en_de/eval --out analysis   # the WMT14 recipe, PERCENT=1..100
"""

SUBCOMMANDS = {
    "attention": ("attention maps of one test sentence (or raw text): cross-attention of several checkpoints side by side, "
                  "and what each syntax method's encoder modules show (e.g. SG-Net's syntax-guided attention with its "
                  "SDOI mask, SLA's local/global attention and gate, Syntax-BERT's topical weights)"),
    "gates": "mean SLA gate per encoder layer over a test set; learned alphas of SG-Net / SEPREM",
    "length": "sacreBLEU by source length bucket (words and subwords) for several systems",
    "noise": "sacreBLEU against a fraction r of random wrong heads / POS tags in the test streams",
    "corrupt": "write a copy of a data directory with a noisy stream (to train or translate under parse noise)",
    "fractions": "BLEU against the share of training data (nested subsamples) for several systems",
}


def get_parser() -> argparse.ArgumentParser:
    from syntax_nmt.analyze import attention, fractions, gates, length, noise

    parser = argparse.ArgumentParser(
        prog=PROG, description="the papers' analyses of trained models, one subcommand each (PNG + JSON + markdown)",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    adders = {"attention": attention.add_args, "gates": gates.add_args, "length": length.add_args,
              "noise": noise.add_args, "corrupt": noise.add_corrupt_args, "fractions": fractions.add_args}
    for name, help_text in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        adders[name](p)
        mark_paths(name, p)
    return parser


def _checkpoints(values, _) -> List[str]:
    """The files of ``--system [NAME=]PATH`` (repeated)."""
    return [v.partition("=")[2] if "=" in v else v for v in values]


def mark_paths(name: str, p: argparse.ArgumentParser) -> None:
    """What each subcommand's options read and write, for the one guard (:mod:`syntax_nmt.io_guard`)."""
    dests = {a.dest for a in p._actions}
    for dest, mark in (("data", lambda a: io_guard.reads(a, "dir")),
                       ("system", lambda a: io_guard.reads(a, paths=_checkpoints)),
                       ("ref_raw", io_guard.reads), ("results", lambda a: io_guard.reads(a, "dir")),
                       ("annotate_parser_model", lambda a: io_guard.reads(a, "dir", name_or_path=True)),
                       ("annotate_subword_model", io_guard.reads), ("annotation_settings_file", io_guard.reads),
                       ("text", lambda a: io_guard.no_path(a, "a sentence")),
                       ("text_target", lambda a: io_guard.no_path(a, "a sentence"))):
        if dest in dests:
            mark(io_guard.action_of(p, dest))
    out = io_guard.action_of(p, "out")
    if name == "fractions":  # beside its --results (the demo's fractions/ holds eval/)
        io_guard.writes(out, "dir", paths=lambda d, _: [os.path.join(d, "fractions" + e) for e in FRACTIONS_FILES])
    elif name == "corrupt":  # the copy's files are written beside and moved into place: its links into --data stay
        io_guard.writes(out, "dir", replaces=True)
    else:
        io_guard.writes(out, "dir")


def main(args) -> list:
    from syntax_nmt.analyze import attention, fractions, gates, length, noise

    runners = {"attention": attention.run, "gates": gates.run, "length": length.run, "noise": noise.run,
               "corrupt": noise.run_corrupt, "fractions": fractions.run}
    paths = runners[args.command](args)
    for path in paths:
        print(path)
    return paths


def cli_main(argv=None) -> None:
    # before fairseq is imported: it would otherwise leave the root logger at DEBUG
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)
    args = io_guard.parse_args(get_parser(), argv)
    from syntax_nmt.cli_errors import run

    run(PROG, main, args)


if __name__ == "__main__":
    cli_main()
