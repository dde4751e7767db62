"""``python -m syntax_nmt.targets``: the target schemes' data, for the recipes (``examples/multi30k_en_de/run_all.sh``).

    python -m syntax_nmt.targets data-suffixes            # the suffixes of the schemes' own data directories
    python -m syntax_nmt.targets write-data --annotated ann/bpe14000 --splits "train valid" --src-lang en \\
        --tgt-lang de                                     # ann/bpe14000-SUFFIX/SPLIT.{en,de} of each scheme

``write-data`` writes, for every registered scheme with data of its own (:attr:`~.TargetScheme.data_suffix`), each
split's target as the scheme makes it (:meth:`~.TargetScheme.write_target`, from the annotation and the target's
streams) and a copy of its source, into ``ANNOTATED-SUFFIX`` beside the annotated directory; a recipe binarizes that
into ``data-bin/T-SUFFIX``, the data of the scheme's systems. A failed run leaves what an earlier one wrote as it
was (:func:`write_data`).
"""

import argparse
import os
import shutil
import sys
import tempfile
from typing import List, Optional, Sequence

from syntax_nmt.targets.base import registered_schemes
from syntax_nmt.io_guard import parse_args, updates


def own_data_schemes() -> List:
    """The registered schemes with data of their own (instances), in the registry's order."""
    return [cls() for cls in registered_schemes().values() if cls.data_suffix]


def write_data(annotated: str, splits: Sequence[str], src_lang: str, tgt_lang: str) -> List[str]:
    """Each own-data scheme's copy of the annotated splits (module docstring); the directories written.

    Every file is written first into a staging folder of this run beside its destination (``.NAME.write-data-*``);
    only when every scheme's every split is written are the files moved into place, one rename each, after checking
    that each destination can take a file. A run that fails (a missing or unreadable split, a destination that is
    a folder, a full disk) leaves what an earlier run wrote as it was, byte for byte, and removes only what it
    created itself: its staging folders and their files, never a folder or file it did not make.

    Raises:
        ValueError: the same language on both sides (the source's copy ``SPLIT.LANG`` would replace the tagged
            target of the same name), before anything is written.
    """
    if src_lang == tgt_lang:
        raise ValueError(f"--src-lang and --tgt-lang are both {src_lang!r}: the copy of the source would replace the "
                         f"tagged target (SPLIT.{tgt_lang}); give the pair's two languages")
    staged = []  # (the destination, this run's staging folder)
    try:
        for scheme in own_data_schemes():
            out_dir = f"{annotated.rstrip(os.sep)}-{scheme.data_suffix}"
            stage = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.write-data-",
                                     dir=os.path.dirname(os.path.abspath(out_dir)))
            staged.append((out_dir, stage))
            for split in splits:
                prefix = os.path.join(annotated, split)
                with open(os.path.join(stage, f"{split}.{tgt_lang}"), "w", encoding="utf-8", newline="\n") as f:
                    scheme.write_target(prefix, tgt_lang, f)
                shutil.copyfile(f"{prefix}.{src_lang}", os.path.join(stage, f"{split}.{src_lang}"))
        for out_dir, stage in staged:  # nothing is moved before every destination is known to take its file
            for name in os.listdir(stage):
                if os.path.isdir(os.path.join(out_dir, name)):
                    raise IsADirectoryError(f"{os.path.join(out_dir, name)} is a directory: cannot write it")
        for out_dir, stage in staged:
            os.makedirs(out_dir, exist_ok=True)
            for name in sorted(os.listdir(stage)):
                os.replace(os.path.join(stage, name), os.path.join(out_dir, name))
    finally:  # this run's staging folders and what is left in them (all of it, on a failure), nothing else
        for _, stage in staged:
            for name in os.listdir(stage):
                os.unlink(os.path.join(stage, name))
            os.rmdir(stage)
    return [out_dir for out_dir, _ in staged]


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m syntax_nmt.targets", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("data-suffixes", help="the suffixes of the schemes' own data directories, one a line")
    w = sub.add_parser("write-data", help="write each own-data scheme's copy of the annotated splits")
    updates(w.add_argument("--annotated", required=True,
                           help="the annotated directory (syntax-nmt-annotate's outputs)"))
    w.add_argument("--splits", required=True, help="space- or comma-separated split names (prefixes in it)")
    w.add_argument("--src-lang", required=True)
    w.add_argument("--tgt-lang", required=True)
    a = parse_args(p, argv)
    if a.cmd == "data-suffixes":
        for scheme in own_data_schemes():
            print(scheme.data_suffix)
        return 0
    from syntax_nmt.cli_errors import run

    for out_dir in run("python -m syntax_nmt.targets", write_data, a.annotated,
                       a.splits.replace(",", " ").split(), a.src_lang, a.tgt_lang):
        print(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
