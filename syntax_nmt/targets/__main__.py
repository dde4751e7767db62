"""``python -m syntax_nmt.targets``: the target schemes' data, for the recipes (``examples/multi30k_en_de/run_all.sh``).

    python -m syntax_nmt.targets data-suffixes            # the suffixes of the schemes' own data directories
    python -m syntax_nmt.targets write-data --annotated ann/bpe14000 --splits "train valid" --src-lang en \\
        --tgt-lang de                                     # ann/bpe14000-SUFFIX/SPLIT.{en,de} of each scheme

``write-data`` writes, for every registered scheme with data of its own (:attr:`~.TargetScheme.data_suffix`), each
split's target as the scheme makes it (:meth:`~.TargetScheme.write_target`, from the annotation and the target's
streams) and a copy of its source, into ``ANNOTATED-SUFFIX`` beside the annotated directory; a recipe binarizes that
into ``data-bin/T-SUFFIX``, the data of the scheme's systems.
"""

import argparse
import os
import shutil
import sys
from typing import List, Optional, Sequence

from syntax_nmt.targets.base import registered_schemes
from syntax_nmt.io_guard import parse_args, updates
from syntax_nmt.utils import atomic_write


def own_data_schemes() -> List:
    """The registered schemes with data of their own (instances), in the registry's order."""
    return [cls() for cls in registered_schemes().values() if cls.data_suffix]


def write_data(annotated: str, splits: Sequence[str], src_lang: str, tgt_lang: str) -> List[str]:
    """Each own-data scheme's copy of the annotated splits (module docstring); the directories written.

    Raises:
        ValueError: the same language on both sides (the source's copy ``SPLIT.LANG`` would replace the tagged
            target of the same name), before anything is written.
    """
    if src_lang == tgt_lang:
        raise ValueError(f"--src-lang and --tgt-lang are both {src_lang!r}: the copy of the source would replace the "
                         f"tagged target (SPLIT.{tgt_lang}); give the pair's two languages")
    written = []
    for scheme in own_data_schemes():
        out_dir = f"{annotated.rstrip(os.sep)}-{scheme.data_suffix}"
        made = not os.path.isdir(out_dir)
        os.makedirs(out_dir, exist_ok=True)
        try:
            for split in splits:
                prefix = os.path.join(annotated, split)
                atomic_write(os.path.join(out_dir, f"{split}.{tgt_lang}"),
                             lambda f: scheme.write_target(prefix, tgt_lang, f), sync=False)
                shutil.copyfile(f"{prefix}.{src_lang}", os.path.join(out_dir, f"{split}.{src_lang}"))
        except BaseException:
            if made:  # a directory made for nothing is not left behind
                shutil.rmtree(out_dir, ignore_errors=True)
            raise
        written.append(out_dir)
    return written


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
