"""``syntax-nmt-synth``: write the synthetic English->German corpus with gold syntax."""

import argparse
import json
import sys
import time
from typing import List, Optional

from syntax_nmt.synthetic.generate import generate_corpus

EPILOG = """example:
  syntax-nmt-synth --out data/synth --train 20000 --valid 1000 --test 1000 --seed 1

writes data/synth/{train,valid,test}.{en.conllu,en,tok.en,de,tok.de}
(see syntax_nmt/synthetic/README.md for the grammar and the file layout)"""


def build_parser() -> argparse.ArgumentParser:
    from syntax_nmt.io_guard import writes

    p = argparse.ArgumentParser(
        prog="syntax-nmt-synth",
        description="Generate the deterministic synthetic English->German corpus with gold "
        "English dependency trees (CoNLL-U) and German references.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    writes(p.add_argument("--out", required=True, help="output directory (created if missing)"), "dir")
    p.add_argument("--train", type=int, default=20000, help="training sentences (default 20000)")
    p.add_argument("--valid", type=int, default=1000, help="validation sentences (default 1000)")
    p.add_argument("--test", type=int, default=1000, help="test sentences (default 1000)")
    p.add_argument("--seed", type=int, default=1, help="corpus seed (default 1)")
    p.add_argument("--join", type=float, default=0.0, metavar="MEAN",
                   help="join runs of 1 + Poisson(MEAN) consecutive pairs into one line (longer, multi-root lines; "
                   "1.2: a WMT-like length distribution, see syntax_nmt/synthetic/join.py; default 0: no joining)")
    p.add_argument("--quiet", action="store_true", help="no progress bars or summary")
    return p


def main(args: argparse.Namespace) -> dict:
    """Generate the corpus described by parsed ``args``; returns the paths."""
    sizes = {"train": args.train, "valid": args.valid, "test": args.test}
    start = time.time()
    if args.join < 0:
        raise ValueError(f"--join must be >= 0, got {args.join}")
    paths = generate_corpus(args.out, sizes, seed=args.seed, progress=not args.quiet)
    if args.join > 0:
        from syntax_nmt.synthetic.join import join_split

        for split in sizes:
            join_split(args.out, split, args.join, args.seed)
    if not args.quiet:
        print(json.dumps({"out": args.out, "sizes": sizes, "seed": args.seed, "join": args.join,
                          "seconds": round(time.time() - start, 2)}), file=sys.stderr)
    return paths


def cli_main(argv: Optional[List[str]] = None) -> None:
    import logging

    from syntax_nmt.cli_errors import run
    from syntax_nmt.io_guard import parse_args
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.INFO)

    run("syntax-nmt-synth", main, parse_args(build_parser(), argv))


if __name__ == "__main__":
    cli_main()
