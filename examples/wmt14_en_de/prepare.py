#!/usr/bin/env python
"""Prepare WMT14 English-German for the syntax-nmt recipe.

Steps (the standard fairseq/Moses WMT14 recipe, with sacremoses instead of the
Perl scripts):

1. extract the needed members of the downloaded archives into ``WORK/orig``;
2. normalize punctuation (``MosesPunctNormalizer``, control characters removed
   like ``remove-non-printing-char.perl``) and tokenize (``MosesTokenizer``
   with aggressive dash splitting, ``tokenizer.perl -a``) in parallel;
3. clean the training data like ``clean-corpus-n.perl -ratio 1.5 ... 1 250``
   (token counts of the tokenized text); dev and test are never filtered;
4. take a deterministic subsample of the cleaned training data (a seeded
   permutation of line numbers; the first k lines of it, in corpus order, on
   both sides, so smaller percentages are subsets of larger ones);
5. learn a joint subword model on the (subsampled) training data: subword-nmt
   BPE codes (default) or a sentencepiece model.

Stages 1-3 are cached in ``WORK`` and shared by every subsample; a stage is
skipped when its ``done.json`` records the same settings.
``syntax-nmt-annotate`` applies the subword model later, so the outputs in
``OUT`` are tokenized words: ``{train,valid,test}.{en,de}``, the untokenized
test reference ``test.raw.de`` (for sacrebleu) and ``bpe.codes`` or
``spm.model``.
"""

import argparse
import itertools
import json
import os
import re
import shutil
import tarfile
from typing import Dict, List, Sequence

from syntax_nmt.data.subsample import subsample_mask  # noqa: F401  (shared with the demo's --fractions)
from syntax_nmt.recipes import text
from syntax_nmt.recipes.text import (  # noqa: F401  (the recipe's tests reach them through this module)
    _init_worker, open_text, stage_done, tokenize, tokenize_pairs, write_stage,
)
from syntax_nmt.utils import read_lines, write_lines  # noqa: F401  (the recipe's tests reach them here too)

SRC, TGT = "en", "de"
TRAIN_CORPORA = [  # (archive, member prefix); members are PREFIX.en / PREFIX.de
    ("training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en"),
    ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en"),
    ("training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en"),
]
DEV = ("dev.tgz", "dev/newstest2013")
TEST = {  # newstest2014 (sacrebleu: -t wmt14/full and -t wmt14)
    "full": ("test-full.tgz", "test-full/newstest2014-deen-src.en.sgm", "test-full/newstest2014-deen-ref.de.sgm"),
    "filtered": ("test-filtered.tgz", "test/newstest2014-deen-src.en.sgm", "test/newstest2014-deen-ref.de.sgm"),
}
SEG_RE = re.compile(r"<seg.*?>(.*)</seg>.*?")


def read_sgm(path: str) -> List[str]:
    """Segments of a WMT ``.sgm`` file exactly as sacrebleu extracts them
    (``FakeSGMLDataset``: lines starting with ``<seg ``, no entity unescaping,
    whitespace stripped and collapsed), so ``test.raw.de`` is the reference of
    ``sacrebleu -t wmt14/full -l en-de``."""
    return [" ".join(SEG_RE.sub(r"\1", line).split()) for line in read_lines(path, errors="replace") if line.startswith("<seg ")]


def extract_members(archive: str, members: Sequence[str], out_dir: str) -> List[str]:
    """Extract ``members`` of a tar archive to ``out_dir`` (same relative paths).

    Members already extracted with the right size are not read again; reading
    stops once all members are found.

    Returns:
        The extracted file paths, in the order of ``members``.
    """
    paths = {m: os.path.join(out_dir, m) for m in members}
    for m in members:
        if os.path.isabs(m) or ".." in m.split("/"):
            raise ValueError(f"unsafe member name {m!r}")
    done_sizes = os.path.join(out_dir, ".sizes.json")
    sizes = {}
    if os.path.exists(done_sizes):
        with open(done_sizes) as f:
            sizes = json.load(f)
    todo = {m for m in members if not (os.path.exists(paths[m]) and sizes.get(m) == os.path.getsize(paths[m]))}
    if todo:
        with tarfile.open(archive, "r:*") as tar:
            for info in tar:
                name = info.name[2:] if info.name.startswith("./") else info.name
                if name not in todo or not info.isfile():
                    continue
                os.makedirs(os.path.dirname(paths[name]), exist_ok=True)
                with tar.extractfile(info) as src, open(paths[name] + ".tmp", "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(paths[name] + ".tmp", paths[name])
                sizes[name] = info.size
                todo.discard(name)
                if not todo:
                    break
        if todo:
            raise FileNotFoundError(f"{archive} has no member(s) {sorted(todo)}")
        with open(done_sizes, "w") as f:
            json.dump(sizes, f, indent=1, sort_keys=True)
    return [paths[m] for m in members]


# ----------------------------------------------------------------------- cleaning
def keep_pair(src: str, tgt: str, min_len: int = 1, max_len: int = 250, ratio: float = 1.5) -> bool:
    """``clean-corpus-n.perl -ratio RATIO CORPUS en de OUT MIN MAX`` on token counts."""
    ns, nt = len(src.split()), len(tgt.split())
    if not (min_len <= ns <= max_len and min_len <= nt <= max_len):
        return False
    return ns <= ratio * nt and nt <= ratio * ns


def tokenize_stage(args: argparse.Namespace) -> Dict:
    """Extract, tokenize and clean everything into ``WORK/tok`` (cached)."""
    tok_dir, orig = os.path.join(args.work_dir, "tok"), os.path.join(args.work_dir, "orig")
    os.makedirs(tok_dir, exist_ok=True)
    archives = [a for a, _ in TRAIN_CORPORA] + [DEV[0], TEST[args.test_set][0]]
    config = {
        "escape": args.escape, "min_len": args.min_len, "max_len": args.max_len, "ratio": args.ratio,
        "test_set": args.test_set,
        "archives": {a: os.path.getsize(os.path.join(args.download_dir, a)) for a in archives},
    }
    done = os.path.join(tok_dir, "done.json")
    if stage_done(done, config):
        print(f"tokenized data in {tok_dir} is up to date")
        with open(done) as f:
            return json.load(f)["stats"]
    stats: Dict = {"train": {}}

    def archive(name):
        return os.path.join(args.download_dir, name)

    # training corpora: concatenated, tokenized, cleaned
    counts = {}

    def train_pairs():
        for name, prefix in TRAIN_CORPORA:
            src_path, tgt_path = extract_members(archive(name), [f"{prefix}.{SRC}", f"{prefix}.{TGT}"], orig)
            n = 0
            pairs = itertools.zip_longest(read_lines(src_path, errors="replace"), read_lines(tgt_path, errors="replace"))
            for n, pair in enumerate(pairs, 1):
                if None in pair:
                    raise ValueError(f"{prefix}: {SRC} and {TGT} sides differ in length")
                yield pair
            counts[prefix] = n

    kept = 0
    with open_text(os.path.join(tok_dir, f"train.{SRC}.tmp"), "w") as fs, \
            open_text(os.path.join(tok_dir, f"train.{TGT}.tmp"), "w") as ft:
        for s, t in tokenize_pairs(train_pairs(), workers=args.workers, escape=args.escape, desc="train"):
            if keep_pair(s, t, args.min_len, args.max_len, args.ratio):
                fs.write(s + "\n")
                ft.write(t + "\n")
                kept += 1
    for lang in (SRC, TGT):
        os.replace(os.path.join(tok_dir, f"train.{lang}.tmp"), os.path.join(tok_dir, f"train.{lang}"))
    stats["train"] = {"raw": counts, "raw_total": sum(counts.values()), "cleaned": kept}

    # dev: newstest2013 plain text; test: newstest2014 sgm. Never filtered.
    dev_src, dev_tgt = extract_members(archive(DEV[0]), [f"{DEV[1]}.{SRC}", f"{DEV[1]}.{TGT}"], orig)
    valid = list(zip(read_lines(dev_src, errors="replace"), read_lines(dev_tgt, errors="replace")))
    test_src, test_ref = map(read_sgm, extract_members(archive(TEST[args.test_set][0]), TEST[args.test_set][1:], orig))
    if not test_src or len(test_src) != len(test_ref):
        raise ValueError(f"newstest2014: {len(test_src)} source vs {len(test_ref)} reference segments")
    test = list(zip(test_src, test_ref))
    for split, pairs in (("valid", valid), ("test", test)):
        toks = list(tokenize_pairs(pairs, workers=args.workers, escape=args.escape, desc=split))
        for i, lang in enumerate((SRC, TGT)):
            write_lines(os.path.join(tok_dir, f"{split}.{lang}"), (p[i] for p in toks))
        stats[split] = len(toks)
    for i, lang in enumerate((SRC, TGT)):
        write_lines(os.path.join(tok_dir, f"test.raw.{lang}"), (p[i] for p in test))
    write_stage(done, config, stats)
    return stats


def main(args: argparse.Namespace) -> Dict:
    tok_stats = tokenize_stage(args)
    tok_dir = os.path.join(args.work_dir, "tok")
    os.makedirs(args.out_dir, exist_ok=True)
    config = {
        "tok": tok_stats, "percent": args.subsample_percent, "seed": args.seed, "subword": args.subword,
        "bpe_merges": args.bpe_merges if args.subword == "bpe" else None,
        "spm": [args.spm_vocab_size, args.spm_model_type] if args.subword == "sentencepiece" else None,
    }
    done = os.path.join(args.out_dir, "prepare.json")
    if stage_done(done, config):
        print(f"{args.out_dir} is up to date")
        with open(done) as f:
            return json.load(f)["stats"]

    n = tok_stats["train"]["cleaned"]
    mask = subsample_mask(n, args.subsample_percent, args.seed)
    for lang in (SRC, TGT):
        lines = read_lines(os.path.join(tok_dir, f"train.{lang}"))
        write_lines(os.path.join(args.out_dir, f"train.{lang}"), itertools.compress(lines, mask))
    for name in [f"{s}.{lang}" for s in ("valid", "test", "test.raw") for lang in (SRC, TGT)]:
        shutil.copyfile(os.path.join(tok_dir, name), os.path.join(args.out_dir, name))
    model = text.learn_subword(args.out_dir, args.subword, args.bpe_merges, args.spm_vocab_size, args.spm_model_type,
                               args.spm_input_sentence_size, args.workers, langs=(SRC, TGT))
    stats = dict(tok_stats, train_subsample=int(mask.sum()), subword_model=os.path.basename(model))
    write_stage(done, config, stats)
    print(json.dumps(stats, indent=2, sort_keys=True))
    return stats


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  python examples/wmt14_en_de/prepare.py --download-dir wmt14/download "
        "--work-dir wmt14/work --out-dir wmt14/prep/p100 --subsample-percent 100 --bpe-merges 32000 --workers 16",
    )
    parser.add_argument("--download-dir", required=True, help="directory with the archives of download.py")
    parser.add_argument("--work-dir", required=True, help="cache for extracted and tokenized data")
    parser.add_argument("--out-dir", required=True, help="output directory for this subsample")
    parser.add_argument("--test-set", choices=sorted(TEST), default="full",
                        help="newstest2014: full (3003 lines) or filtered (2737 lines, official WMT14)")
    parser.add_argument("--subsample-percent", type=float, default=100.0,
                        help="percentage of the cleaned training data to keep (paper Table 1: 1 5 10 25 50 100)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the subsample")
    parser.add_argument("--subword", choices=["bpe", "sentencepiece"], default="bpe")
    parser.add_argument("--bpe-merges", type=text.positive_int, default=32000, help="subword-nmt merge operations")
    parser.add_argument("--spm-vocab-size", type=text.positive_int, default=32000)
    parser.add_argument("--spm-model-type", choices=["bpe", "unigram"], default="bpe")
    parser.add_argument("--spm-input-sentence-size", type=int, default=5_000_000,
                        help="sentences sampled to train sentencepiece")
    parser.add_argument("--min-len", type=int, default=1, help="cleaning: minimum tokens per side")
    parser.add_argument("--max-len", type=int, default=250, help="cleaning: maximum tokens per side")
    parser.add_argument("--ratio", type=float, default=1.5, help="cleaning: maximum length ratio")
    parser.add_argument("--escape", action="store_true",
                        help="escape &'\"<>|[] as XML entities like tokenizer.perl does by default (off: the "
                        "parser should see the real characters)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="tokenizer processes")
    return parser


def cli_main() -> None:
    main(get_parser().parse_args())


if __name__ == "__main__":
    cli_main()
