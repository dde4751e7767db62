#!/usr/bin/env python
"""Prepare Multi30k task 1 English-German (or, ``--tgt-lang fr``, English-French) for the syntax-nmt recipe.

Steps (shared code: :mod:`syntax_nmt.recipes.text`, as the WMT14 recipe's):

1. read the downloaded ``.gz`` files (cased, raw);
2. normalize punctuation (``MosesPunctNormalizer``, control characters removed) and tokenize
   (``MosesTokenizer``) in parallel, without aggressive dash splitting and without XML escaping: the
   tokenization of the official ``data/task1/tok`` files (``tokenizer.perl`` without ``-a``), except that they
   are also lowercased and escaped (``&apos;``), which the recipe leaves to scoring (lowercased tokenized BLEU)
   and to nothing (escaping), so the parser sees the real characters. Nothing is filtered: Multi30k has no
   empty or over-long pairs, and test sets are never filtered anyway;
3. learn joint BPE (subword-nmt, ``--bpe-merges``) on the tokenized training data of both languages.

Step 2 is cached in ``WORK/tok`` and shared by every BPE size; a stage is skipped when its ``done.json`` /
``prepare.json`` records the same settings. ``syntax-nmt-annotate`` applies the BPE codes later, so the
outputs in ``OUT`` are tokenized words, ``{train,valid,test2016,test2017,mscoco}.{en,TGT}``, the untokenized
references ``{split}.raw.TGT`` (for sacreBLEU) and ``bpe.codes``. The tokenization cache of a target language is
``WORK/tok`` for German (as before the option) and ``WORK/tok-TGT`` for the others.
"""

import argparse
import gzip
import json
import os
import shutil
from typing import Dict

from syntax_nmt.recipes.text import learn_subword, positive_int, stage_done, tokenize_pairs, write_stage
from syntax_nmt.utils import write_lines

SRC = "en"
#: target languages of Multi30k task 1 in the recipe (the repository's raw files)
TARGETS = ("de", "fr")
#: recipe split -> file name stem in multi30k/dataset data/task1/raw
SPLITS = {"train": "train", "valid": "val", "test2016": "test_2016_flickr", "test2017": "test_2017_flickr",
          "mscoco": "test_2017_mscoco"}
#: the test sets, in the order of the binarized test, test1, test2 subsets
TEST_SPLITS = ("test2016", "test2017", "mscoco")


def read_gz(path: str):
    """Lines of a gzipped UTF-8 file without their line ends (only ``\\n`` ends a line)."""
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def tok_dir_of(args: argparse.Namespace) -> str:
    return os.path.join(args.work_dir, "tok" if args.tgt_lang == "de" else f"tok-{args.tgt_lang}")


def tokenize_stage(args: argparse.Namespace) -> Dict:
    """Read, normalize and tokenize every split into the tokenization cache (cached); raw references beside."""
    TGT = args.tgt_lang
    tok_dir = tok_dir_of(args)
    os.makedirs(tok_dir, exist_ok=True)
    names = {split: {lang: os.path.join(args.download_dir, f"{stem}.{lang}.gz") for lang in (SRC, TGT)}
             for split, stem in SPLITS.items()}
    config = {"aggressive_dash_splits": False, "escape": False,
              "files": {os.path.basename(p): os.path.getsize(p) for d in names.values() for p in d.values()}}
    done = os.path.join(tok_dir, "done.json")
    if stage_done(done, config):
        print(f"tokenized data in {tok_dir} is up to date")
        with open(done) as f:
            return json.load(f)["stats"]
    stats = {}
    for split, paths in names.items():
        src, tgt = read_gz(paths[SRC]), read_gz(paths[TGT])
        if len(src) != len(tgt):
            raise ValueError(f"{paths[SRC]} has {len(src)} lines, {paths[TGT]} {len(tgt)}")
        toks = list(tokenize_pairs(zip(src, tgt), (SRC, TGT), workers=args.workers, desc=split,
                                   aggressive_dash_splits=False))
        for i, lang in enumerate((SRC, TGT)):
            write_lines(os.path.join(tok_dir, f"{split}.{lang}"), (p[i] for p in toks))
        write_lines(os.path.join(tok_dir, f"{split}.raw.{TGT}"), tgt)
        stats[split] = {"sentences": len(toks), **{f"{lang}_tokens": sum(len(p[i].split()) for p in toks)
                                                    for i, lang in enumerate((SRC, TGT))}}
    write_stage(done, config, stats)
    return stats


def main(args: argparse.Namespace) -> Dict:
    TGT = args.tgt_lang
    tok_stats = tokenize_stage(args)
    tok_dir = tok_dir_of(args)
    os.makedirs(args.out_dir, exist_ok=True)
    config = {"tok": tok_stats, "bpe_merges": args.bpe_merges}
    done = os.path.join(args.out_dir, "prepare.json")
    if stage_done(done, config):
        print(f"{args.out_dir} is up to date")
        with open(done) as f:
            return json.load(f)["stats"]
    for split in SPLITS:
        for ext in (SRC, TGT, f"raw.{TGT}"):
            shutil.copyfile(os.path.join(tok_dir, f"{split}.{ext}"), os.path.join(args.out_dir, f"{split}.{ext}"))
    model = learn_subword(args.out_dir, "bpe", bpe_merges=args.bpe_merges, workers=args.workers, langs=(SRC, TGT))
    stats = dict(tok_stats, subword_model=os.path.basename(model))
    write_stage(done, config, stats)
    print(json.dumps(stats, indent=2, sort_keys=True))
    return stats


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  python examples/multi30k_en_de/prepare.py --download-dir m30k/download "
        "--work-dir m30k/work --out-dir m30k/prep/bpe8000 --bpe-merges 8000",
    )
    parser.add_argument("--download-dir", required=True, help="directory with the files of download.py")
    parser.add_argument("--work-dir", required=True, help="cache for the tokenized data")
    parser.add_argument("--out-dir", required=True, help="output directory (one per BPE size)")
    parser.add_argument("--bpe-merges", type=positive_int, default=8000, help="joint subword-nmt merge operations")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="tokenizer processes")
    parser.add_argument("--tgt-lang", choices=TARGETS, default="de", help="target language")
    return parser


if __name__ == "__main__":
    main(get_parser().parse_args())
