"""``python -m syntax_nmt.demo``: the options of the demo, checked, then :class:`~syntax_nmt.demo.pipeline.Demo`."""

import argparse
import os
from typing import List

import syntax_nmt.demo
from syntax_nmt.demo import budget
from syntax_nmt.demo.pipeline import Demo
from syntax_nmt.io_guard import parse_args, updates
from syntax_nmt.systems import default_systems, parse_systems

PROG = "python -m syntax_nmt.demo"
#: ``--seeds auto``: 2 to 5 seeds, what fits in ``--time-budget`` (:mod:`syntax_nmt.demo.budget`)
MIN_AUTO_SEEDS, MAX_AUTO_SEEDS = budget.MIN_SEEDS, budget.MAX_SEEDS
EPILOG = """examples:
  python -m syntax_nmt.demo --out demo-out                       # what `make demo` runs
  python -m syntax_nmt.demo --out demo-out --systems transformer,sgnet --seeds 5 --max-update 600
  python -m syntax_nmt.demo --out demo-out --analyses length,attention,gates,noise
  python -m syntax_nmt.demo --out demo-out --fractions 1,5,10,25,50,100 --fraction-systems transformer,syntax-infused
On a GPU fairseq-train/-generate use it automatically; raise --train, --max-update and the model size there.
"""


def parse_seeds(value: str) -> List[int]:
    """``--seeds``: ``N`` -> seeds 1..N; a list separated by commas or spaces (``1,2``, ``"1 2"`` as the recipes'
    SEEDS) -> those seeds (distinct non-negative integers: a repeated seed would train once and count twice, as the
    recipe's SEEDS refuses too).

    Raises:
        ValueError: a repeated or negative seed, or one that is not an integer.
    """
    words = value.replace(",", " ").split()
    try:
        items = [int(v) for v in words]
    except ValueError:
        raise ValueError(f"--seeds {value}: give a count N (seeds 1..N) or a list of seeds, integers separated by "
                         f"commas or spaces") from None
    if len(items) == 1 and "," not in value:
        return list(range(1, items[0] + 1))
    if any(s < 0 for s in items):
        raise ValueError(f"--seeds {value}: seeds are non-negative integers")
    repeated = next((s for k, s in enumerate(items) if s in items[:k]), None)
    if repeated is not None:
        raise ValueError(f"--seeds {value}: seed {repeated} is given twice (one training would count as two seeds)")
    return items


#: options that must be at least 1 (fairseq-train reads --max-update 0 as no limit)
POSITIVE = {"train": "--train", "valid": "--valid", "test": "--test", "bpe": "--bpe", "max_update": "--max-update",
            "max_tokens": "--max-tokens", "jobs": "--jobs", "threads": "--threads"}


def default_jobs() -> int:
    """``--jobs`` by default: 1 on a GPU, else the CPU cores, at most 4."""
    try:
        import torch

        if torch.cuda.is_available():
            return 1
    except ImportError:
        pass
    return max(1, min(4, os.cpu_count() or 1))


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=syntax_nmt.demo.__doc__.splitlines()[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    updates(p.add_argument("--out", default="demo-out", help="working directory (reruns resume from it)"))
    p.add_argument("--train", type=int, default=20000, help="training sentences")
    p.add_argument("--valid", type=int, default=500)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1, help="seed of the corpus and of the data fractions")
    p.add_argument("--seeds", default="auto",
                   help="training seeds: a count N (seeds 1..N), a list separated by commas or spaces, or 'auto' "
                   "(default): "
                   f"the seeds ({MIN_AUTO_SEEDS} to {MAX_AUTO_SEEDS}; one if two do not fit; then 3/4 or 1/2 of "
                   "--max-update, said so) and, with the default --systems, the systems that fit in --time-budget, "
                   "measured on the first trainings")
    p.add_argument("--time-budget", type=float, default=20.0,
                   help="minutes of the whole demo that --seeds auto plans for (default 20)")
    p.add_argument("--bpe", type=int, default=4000, help="joint BPE merges")
    p.add_argument("--max-update", type=int, default=400, help="training updates per system (same for all)")
    p.add_argument("--max-tokens", type=int, default=1536, help="tokens per batch")
    p.add_argument("--systems", default="default",
                   help="comma-separated names from the table of systems (python -m syntax_nmt.systems list --all), "
                   f"the first is the baseline (default: {', '.join(default_systems())})")
    p.add_argument("--jobs", type=int, default=None,
                   help="trainings at a time (default: 1 on a GPU, else the CPU cores, at most 4)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per training (default: cores / jobs)")
    p.add_argument("--gold-parses", action="store_true",
                   help="annotate from the corpus's gold trees instead of training and running a spaCy parser")
    p.add_argument("--analyses", default="length,attention,gates",
                   help="syntax-nmt-analyze subcommands run on the first seed's models: length, attention, gates, "
                   "noise (slow: 2 streams x 6 rates x systems); empty for none")
    p.add_argument("--fractions", default="",
                   help="also train --fraction-systems on these percentages of the training data, "
                   "e.g. 1,5,10,25,50,100")
    p.add_argument("--fraction-systems", default="transformer,syntax-infused")
    p.add_argument("--verbose", action="store_true", help="stream every log line of fairseq")
    return p


def main(args) -> None:
    from syntax_nmt.cli_errors import fail, run

    for attr, option in POSITIVE.items():
        value = getattr(args, attr)
        if value is not None and value < 1:
            why = " (fairseq-train reads 0 as no limit)" if attr == "max_update" else ""
            fail(PROG, f"{option} must be at least 1{why}, got {value}")
    if args.time_budget <= 0:
        fail(PROG, f"--time-budget must be more than 0 minutes, got {args.time_budget:g}")

    def systems(value, option):
        try:
            return parse_systems(value, option)
        except ValueError as e:
            fail(PROG, e)

    args.systems_given = args.systems != "default"
    args.systems = systems(args.systems, "--systems")
    args.fraction_systems = systems(args.fraction_systems, "--fraction-systems")
    try:
        args.seeds = "auto" if args.seeds == "auto" else parse_seeds(args.seeds)
        args.fractions = [float(p) for p in args.fractions.split(",") if p.strip()]
    except ValueError as e:
        fail(PROG, e)
    if not args.seeds or any(not 0 < p <= 100 for p in args.fractions):
        fail(PROG, "--seeds needs at least one seed and --fractions percentages in (0, 100]")
    known = {"length", "attention", "gates", "noise"}
    args.analyses = [x for x in args.analyses.split(",") if x]
    if set(args.analyses) - known:
        fail(PROG, f"--analyses: unknown {sorted(set(args.analyses) - known)}; choose from {sorted(known)}")
    args.jobs = args.jobs or default_jobs()
    args.threads = args.threads or max(1, (os.cpu_count() or 1) // args.jobs)
    run(PROG, Demo(args).main)  # a user error met on the way (other settings in --out...): one line, exit 2


def cli_main(argv=None) -> None:
    import logging

    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)  # its own lines are printed; fairseq's go to the jobs' logs
    main(parse_args(get_parser(), argv))
