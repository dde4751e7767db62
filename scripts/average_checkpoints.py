#!/usr/bin/env python
"""Average the parameters of fairseq checkpoints (Vaswani et al., 2017, sec. 6.1).

fairseq's ``scripts/average_checkpoints.py`` is not part of the pip package
(neither ``fairseq`` nor ``fairseq-fixed`` ships ``scripts/``), so this is a
drop-in with the same options. It reuses fairseq's own pieces: checkpoint
discovery (``checkpoint_utils.checkpoint_paths``, the helper fairseq uses to
prune old checkpoints) and atomic saving (``checkpoint_utils.torch_persistent_save``).

One rule differs from fairseq's script: "the last N checkpoints" include the state the training ended with.
fairseq saves ``checkpoint_{E}_{U}.pt`` every ``--save-interval-updates`` and ``checkpoint{E}.pt`` at the end of an
epoch, so a training that stops between two saves (``--max-update`` mid-epoch, or not a multiple of the interval)
ends in ``checkpoint_last.pt`` alone; fairseq's script then averages the N saves before it and leaves the last
updates out. Here ``checkpoint_last.pt`` takes the newest place wherever it holds more updates than the newest
numbered checkpoint (:func:`last_n_checkpoints`).
Importing ``syntax_nmt`` allow-lists the non-tensor objects of fairseq
checkpoints for torch's weights-only loading.
"""

import argparse
import collections
import os
import sys
from typing import List, Optional

import torch
from fairseq import checkpoint_utils

import syntax_nmt.checkpoint_compat  # noqa: F401  (weights-only loading of fairseq checkpoints)
from syntax_nmt.analyze.common import readable_checkpoint
from syntax_nmt.io_guard import no_path, parse_args, reads, writes


def _num_updates(path: str) -> int:
    """The updates a fairseq checkpoint was saved at (its last optimizer record)."""
    with open(path, "rb") as f:
        state = torch.load(f, map_location="cpu")
    return int(state["optimizer_history"][-1]["num_updates"])


def last_n_checkpoints(directory: str, n: int, update_based: bool, upper_bound: Optional[int] = None) -> List[str]:
    """The ``n`` newest checkpoints of a training in ``directory``, the final one included: the newest
    ``checkpoint{E}.pt`` (or ``checkpoint_{E}_{U}.pt``) files, but where ``checkpoint_last.pt`` (the state fairseq-train
    ended with) holds more updates than the newest of them (a training that stopped between two saves:
    ``MAX_UPDATE=100 SAVE_INTERVAL=40`` saves updates 40 and 80, and ends at 100), it is the newest one and the
    ``n - 1`` numbered ones before it follow. With ``upper_bound`` only the numbered checkpoints up to it.

    Raises:
        ValueError: ``n`` below 1, or fewer checkpoints than ``n`` (never a silent average of fewer).
    """
    if n < 1:
        raise ValueError(f"cannot average the last {n} checkpoints: give a number of checkpoints of 1 or more")
    pattern = r"checkpoint_\d+_(\d+)\.pt" if update_based else r"checkpoint(\d+)\.pt"
    found = checkpoint_utils.checkpoint_paths(directory, pattern=pattern, keep_match=True)
    paths = [p for p, num in found if upper_bound is None or num <= upper_bound]
    last = os.path.join(directory, "checkpoint_last.pt")
    if upper_bound is None and os.path.exists(last) and (not paths or _num_updates(last) > _num_updates(paths[0])):
        paths = [last] + paths
    if len(paths) < n:  # never a silent average of fewer
        kind = "update" if update_based else "epoch"
        raise ValueError(f"found {len(paths)} {kind} checkpoints in {directory} ({pattern}, and checkpoint_last.pt "
                         f"where it is newer), need {n}: the training saved fewer {kind} checkpoints than it averages "
                         f"(it ended early, or keeps fewer)")
    return paths[:n]


def average_checkpoints(inputs: List[str]) -> dict:
    """Average the ``model`` parameters of ``inputs``; everything else comes from the first one.

    Floating-point parameters are accumulated in float32 (fp16 checkpoints too)
    and cast back to their dtype; integer buffers use floor division, like fairseq.
    """
    new_state, sums, dtypes = None, collections.OrderedDict(), {}
    for path in inputs:
        with readable_checkpoint(path), open(path, "rb") as f:
            state = torch.load(f, map_location="cpu")
        if not isinstance(state, dict) or not isinstance(state.get("model"), dict):
            raise ValueError(f"{path} is not a fairseq checkpoint (it holds no model weights)")
        if new_state is None:
            new_state = state
        params = state["model"]
        if sums and list(params) != list(sums):
            raise KeyError(f"{path}: parameter names differ from {inputs[0]}")
        for name, p in params.items():
            dtypes.setdefault(name, p.dtype)
            p = p.float() if p.is_floating_point() else p
            sums[name] = p.clone() if name not in sums else sums[name] + p
    averaged = collections.OrderedDict()
    for name, total in sums.items():
        if total.is_floating_point():
            averaged[name] = (total / len(inputs)).to(dtypes[name])
        else:
            averaged[name] = total // len(inputs)
    new_state["model"] = averaged
    return new_state


def _averaged(inputs: List[str], args: argparse.Namespace) -> List[str]:
    """The checkpoints averaged: the files given, or the last N of the one directory given with --num-* (the final
    state included, :func:`last_n_checkpoints`)."""
    update_based = args.num_update_checkpoints is not None
    num = args.num_update_checkpoints if update_based else args.num_epoch_checkpoints
    if num is not None:
        if len(inputs) != 1 or not os.path.isdir(inputs[0]):
            raise ValueError("--num-*-checkpoints needs exactly one --inputs directory")
        return last_n_checkpoints(inputs[0], num, update_based, args.checkpoint_upper_bound)
    if any(os.path.isdir(p) for p in inputs):
        raise ValueError(f"--inputs {next(p for p in inputs if os.path.isdir(p))} is a directory: give "
                         f"--num-epoch-checkpoints or --num-update-checkpoints, or checkpoint files")
    return inputs


def main(args: argparse.Namespace) -> None:
    inputs = _averaged(args.inputs, args)
    print("averaging checkpoints:\n  " + "\n  ".join(inputs), file=sys.stderr)
    checkpoint_utils.torch_persistent_save(average_checkpoints(inputs), args.output)
    print(f"wrote {args.output}", file=sys.stderr)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value}: average 1 checkpoint or more")
    return number


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python scripts/average_checkpoints.py --inputs checkpoints/syntax "
        "--num-update-checkpoints 5 --output checkpoints/syntax/checkpoint_avg.pt",
    )
    reads(parser.add_argument("--inputs", required=True, nargs="+",
                              help="checkpoint files, or one directory with --num-*-checkpoints"), paths=_averaged)
    writes(parser.add_argument("--output", required=True, help="averaged checkpoint to write"))
    group = parser.add_mutually_exclusive_group()
    no_path(group.add_argument("--num-epoch-checkpoints", type=_positive, metavar="N",
                       help="average the last N checkpoint{E}.pt, the final state included: checkpoint_last.pt takes "
                            "the newest place where it holds more updates than the newest checkpoint{E}.pt"), "a count")
    no_path(group.add_argument("--num-update-checkpoints", type=_positive, metavar="N",
                       help="average the last N checkpoint_{E}_{U}.pt, the final state included (checkpoint_last.pt, "
                            "as for --num-epoch-checkpoints)"), "a count")
    parser.add_argument("--checkpoint-upper-bound", type=int,
                        help="ignore checkpoints after this epoch (or update)")
    return parser


def cli_main() -> None:
    try:
        main(parse_args(get_parser()))
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"average_checkpoints.py: error: {e}\n")
        sys.exit(2)


if __name__ == "__main__":
    cli_main()
