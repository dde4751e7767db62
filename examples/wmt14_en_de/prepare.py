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
import collections
import itertools
import json
import os
import re
import shutil
import tarfile
from multiprocessing import Pool
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np
from tqdm import tqdm

from syntax_nmt.data.subsample import subsample_mask  # noqa: F401  (shared with the demo's --fractions)

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
BATCH = 2000  # sentence pairs per worker task


# --------------------------------------------------------------------------- I/O
def open_text(path: str, mode: str = "r"):
    """UTF-8 text file in which only ``\\n`` ends a line (corpora contain stray ``\\r``)."""
    return open(path, mode, encoding="utf-8", errors="replace" if "r" in mode else "strict", newline="\n")


def read_lines(path: str) -> Iterator[str]:
    with open_text(path) as f:
        for line in f:
            yield line.rstrip("\n")


def write_lines(path: str, lines: Iterable[str]) -> int:
    n = 0
    with open_text(path + ".tmp", "w") as f:
        for line in lines:
            f.write(line + "\n")
            n += 1
    os.replace(path + ".tmp", path)
    return n


def read_sgm(path: str) -> List[str]:
    """Segments of a WMT ``.sgm`` file exactly as sacrebleu extracts them
    (``FakeSGMLDataset``: lines starting with ``<seg ``, no entity unescaping,
    whitespace stripped and collapsed), so ``test.raw.de`` is the reference of
    ``sacrebleu -t wmt14/full -l en-de``."""
    return [" ".join(SEG_RE.sub(r"\1", line).split()) for line in read_lines(path) if line.startswith("<seg ")]


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


# ------------------------------------------------------------------ tokenization
_PIPES: Dict[str, tuple] = {}
_ESCAPE = False


def _init_worker(langs: Sequence[str], escape: bool) -> None:
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    global _ESCAPE
    _ESCAPE = escape
    for lang in langs:
        _PIPES[lang] = (MosesPunctNormalizer(lang=lang, post_remove_control_chars=True), MosesTokenizer(lang=lang))


def tokenize(line: str, lang: str) -> str:
    """Normalize punctuation and tokenize one sentence (``_init_worker`` first).

    The result has single spaces between tokens and no other whitespace, so it
    stays one line for every tool downstream.
    """
    norm, tok = _PIPES[lang]
    text = tok.tokenize(norm.normalize(line), aggressive_dash_splits=True, return_str=True, escape=_ESCAPE)
    return " ".join(text.split())


def _tokenize_batch(batch: Tuple[Sequence[str], List[Tuple[str, str]]]) -> List[Tuple[str, str]]:
    langs, pairs = batch
    return [tuple(tokenize(x, lang) for x, lang in zip(pair, langs)) for pair in pairs]


def tokenize_pairs(pairs: Iterable[Tuple[str, str]], langs: Sequence[str] = (SRC, TGT), workers: int = 1,
                   escape: bool = False, desc: str = "tokenize") -> Iterator[Tuple[str, str]]:
    """Normalize + tokenize sentence pairs with ``workers`` processes, keeping
    their order; at most ``4 * workers`` batches are in flight (bounded memory)."""
    it = iter(pairs)
    batches = itertools.takewhile(lambda b: b[1], ((tuple(langs), list(itertools.islice(it, BATCH)))
                                                   for _ in itertools.count()))
    with tqdm(desc=desc, unit=" pairs", mininterval=2.0, disable=None) as bar:
        if workers <= 1:
            _init_worker(langs, escape)
            for batch in batches:
                out = _tokenize_batch(batch)
                bar.update(len(out))
                yield from out
            return
        with Pool(workers, initializer=_init_worker, initargs=(tuple(langs), escape)) as pool:
            pending: collections.deque = collections.deque()
            for batch in itertools.chain(batches, [None]):
                if batch is not None:
                    pending.append(pool.apply_async(_tokenize_batch, (batch,)))
                while pending and (batch is None or len(pending) >= 4 * workers):
                    out = pending.popleft().get()
                    bar.update(len(out))
                    yield from out


# ----------------------------------------------------------------------- cleaning
def keep_pair(src: str, tgt: str, min_len: int = 1, max_len: int = 250, ratio: float = 1.5) -> bool:
    """``clean-corpus-n.perl -ratio RATIO CORPUS en de OUT MIN MAX`` on token counts."""
    ns, nt = len(src.split()), len(tgt.split())
    if not (min_len <= ns <= max_len and min_len <= nt <= max_len):
        return False
    return ns <= ratio * nt and nt <= ratio * ns


# ------------------------------------------------------------------------- stages
def _stage_done(path: str, config: Dict) -> bool:
    if not os.path.exists(path):
        return False
    with open(path) as f:
        return json.load(f).get("config") == config


def _write_stage(path: str, config: Dict, stats: Dict) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump({"config": config, "stats": stats}, f, indent=2, sort_keys=True)
    os.replace(path + ".tmp", path)


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
    if _stage_done(done, config):
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
            for n, pair in enumerate(itertools.zip_longest(read_lines(src_path), read_lines(tgt_path)), 1):
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
    valid = list(zip(read_lines(dev_src), read_lines(dev_tgt)))
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
    _write_stage(done, config, stats)
    return stats


def learn_subword(args: argparse.Namespace, out_dir: str) -> str:
    """Learn the joint subword model on ``out_dir/train.{en,de}``; returns its path."""
    train_files = [os.path.join(out_dir, f"train.{lang}") for lang in (SRC, TGT)]
    if args.subword == "sentencepiece":
        import sentencepiece as spm

        prefix = os.path.join(out_dir, "spm")
        spm.SentencePieceTrainer.train(
            input=train_files, model_prefix=prefix, vocab_size=args.spm_vocab_size,
            model_type=args.spm_model_type, character_coverage=1.0,
            input_sentence_size=args.spm_input_sentence_size, shuffle_input_sentence=True,
            num_threads=max(1, args.workers), hard_vocab_limit=False, minloglevel=2,
        )
        return prefix + ".model"
    from subword_nmt.learn_bpe import learn_bpe

    joint = os.path.join(out_dir, "train.bpe-input.tmp")  # fairseq: cat train.en train.de | learn_bpe.py
    with open_text(joint, "w") as out:
        for path in train_files:
            with open_text(path) as f:
                shutil.copyfileobj(f, out)
    codes = os.path.join(out_dir, "bpe.codes")
    try:
        with open_text(joint) as infile, open_text(codes + ".tmp", "w") as outfile:
            learn_bpe(infile, outfile, args.bpe_merges, num_workers=max(1, args.workers))
    finally:
        os.remove(joint)
    os.replace(codes + ".tmp", codes)
    return codes


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
    if _stage_done(done, config):
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
    model = learn_subword(args, args.out_dir)
    stats = dict(tok_stats, train_subsample=int(mask.sum()), subword_model=os.path.basename(model))
    _write_stage(done, config, stats)
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
    parser.add_argument("--bpe-merges", type=int, default=32000, help="subword-nmt merge operations")
    parser.add_argument("--spm-vocab-size", type=int, default=32000)
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
