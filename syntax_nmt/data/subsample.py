"""Nested, seeded subsamples of a corpus (no fairseq import).

Used by the WMT14 recipe's ``prepare.py`` (``--subsample-percent``), by the demo's data-fraction runs
(``python -m syntax_nmt.demo --fractions ...``) and by the Multi30k recipe's data-size runs (``TRAIN_PERCENT``):

    python -m syntax_nmt.data.subsample --prefix ANN/train --out-prefix ANN-p10/train --percent 10 --seed 1

writes ``ANN-p10/train.EXT`` for every line file ``ANN/train.EXT`` (the text of both sides and every stream, which
share their line count), the same lines of each, and ``ANN-p10/train.subsample.json``: the percentage, the seed,
the sentence counts and the source prefix. The annotation's settings (``train.annotation.json``) are copied: a
subsample is annotated exactly as the whole.
"""

import argparse
import glob
import json
import os
import shutil
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

PROG = "python -m syntax_nmt.data.subsample"
#: the record a subsample writes beside its files
RECORD_SUFFIX = ".subsample.json"


def subsample_mask(n: int, percent: float, seed: int) -> np.ndarray:
    """Boolean mask over ``n`` lines selecting ``round(n * percent / 100)`` of them
    (at least one), deterministically by ``seed``.

    The selection is the first k entries of ``default_rng(seed).permutation(n)``,
    so for a fixed seed a smaller percentage selects a subset of a larger one.
    """
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], got {percent}")
    k = n if percent == 100 else max(1, int(round(n * percent / 100.0)))
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n)[:k]] = True
    return mask


def line_files(prefix: str) -> List[str]:
    """The line files of ``prefix``: every ``prefix.EXT`` but JSON records, sorted; ``.EXT`` may hold dots
    (``train.tgt.pos``)."""
    return sorted(p for p in glob.glob(glob.escape(prefix) + ".*")
                  if os.path.isfile(p) and not p.endswith(".json"))


def _count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def subsample_files(prefix: str, out_prefix: str, percent: float, seed: int) -> Dict[str, object]:
    """Write the subsample (:func:`subsample_mask`) of every line file of ``prefix`` to ``out_prefix``, and its
    record; returns the record. Lines are copied byte for byte.

    Raises:
        ValueError: no line files, files of different line counts (each named with its count), ``out_prefix`` in
            the folder of ``prefix`` with the same name, or a percentage outside (0, 100].
    """
    files = line_files(prefix)
    if not files:
        raise ValueError(f"--prefix {prefix}: no files {prefix}.*")
    if os.path.realpath(os.path.dirname(os.path.abspath(out_prefix))) == \
            os.path.realpath(os.path.dirname(os.path.abspath(prefix))) and \
            os.path.basename(out_prefix) == os.path.basename(prefix):
        raise ValueError(f"--out-prefix {out_prefix} is the input --prefix {prefix}")
    counts = {p: _count_lines(p) for p in files}
    if len(set(counts.values())) != 1:
        raise ValueError("--prefix {}: the files have different line counts: {}".format(
            prefix, ", ".join(f"{os.path.basename(p)} {n}" for p, n in counts.items())))
    n = counts[files[0]]
    mask = subsample_mask(n, percent, seed)
    os.makedirs(os.path.dirname(os.path.abspath(out_prefix)), exist_ok=True)
    for path in files:
        out = out_prefix + path[len(prefix):]
        tmp = f"{out}.tmp-{os.getpid()}"
        try:
            with open(path, "rb") as src, open(tmp, "wb") as dst:
                dst.writelines(line for line, keep in zip(src, mask) if keep)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    settings = prefix + ".annotation.json"
    if os.path.exists(settings):
        shutil.copyfile(settings, out_prefix + ".annotation.json")
    record = {"prefix": os.path.abspath(prefix), "percent": percent, "seed": seed, "sentences": n,
              "kept": int(mask.sum()), "files": [os.path.basename(p)[len(os.path.basename(prefix)):] for p in files]}
    from syntax_nmt.utils import atomic_write_json

    atomic_write_json(out_prefix + RECORD_SUFFIX, record, indent=1)
    return record


def is_done(prefix: str, out_prefix: str, percent: float, seed: int) -> bool:
    """Whether ``out_prefix`` holds this subsample of ``prefix``: its record names the same percentage, seed and
    sentence count, every file is there, and none of ``prefix``'s files is newer than the record."""
    record_path = out_prefix + RECORD_SUFFIX
    try:
        with open(record_path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return False
    files = line_files(prefix)
    if not isinstance(record, dict) or record.get("percent") != percent or record.get("seed") != seed \
            or record.get("files") != [os.path.basename(p)[len(os.path.basename(prefix)):] for p in files]:
        return False
    made = os.path.getmtime(record_path)
    return all(os.path.exists(out_prefix + p[len(prefix):]) and os.path.getmtime(p) <= made for p in files)


def get_parser() -> argparse.ArgumentParser:
    from syntax_nmt.io_guard import reads, writes

    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__.split("\n\n")[0],
        epilog="example:\n  python -m syntax_nmt.data.subsample --prefix ann/train --out-prefix ann-p10/train "
        "--percent 10 --seed 1", formatter_class=argparse.RawDescriptionHelpFormatter)
    reads(parser.add_argument("--prefix", required=True, help="the files PREFIX.* to subsample (one sentence a "
                              "line)"), "prefix", paths=lambda value, args: line_files(value))
    writes(parser.add_argument("--out-prefix", required=True, help="where the subsample goes: OUT_PREFIX.* and its "
                               "record OUT_PREFIX" + RECORD_SUFFIX), "prefix",
           paths=lambda value, args: [value + p[len(args.prefix):] for p in line_files(args.prefix)]
           + [value + ".annotation.json", value + RECORD_SUFFIX])
    parser.add_argument("--percent", type=float, required=True, help="percentage of the sentences kept, in (0, 100]")
    parser.add_argument("--seed", type=int, default=1, help="seed of the selection (default: 1)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from syntax_nmt.cli_errors import run
    from syntax_nmt.io_guard import parse_args

    a = parse_args(get_parser(), argv)
    if is_done(a.prefix, a.out_prefix, a.percent, a.seed):
        print(f"{a.out_prefix}: the {a.percent:g}% subsample (seed {a.seed}) is there")
        return 0
    record = run(PROG, subsample_files, a.prefix, a.out_prefix, a.percent, a.seed)
    print(f"{a.out_prefix}: {record['kept']} of {record['sentences']} sentences ({a.percent:g}%, seed {a.seed}), "
          f"{len(record['files'])} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
