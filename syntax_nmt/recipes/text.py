"""Text preparation shared by the recipes in ``examples/``: Moses punctuation normalization and
tokenization with sacremoses (in parallel, order kept), joint subword learning (subword-nmt BPE or
sentencepiece) and resumable stage markers (their text files read and written with :func:`syntax_nmt.utils.read_lines`
and :func:`~syntax_nmt.utils.write_lines`).
"""

import collections
import itertools
import json
import os
import shutil
from multiprocessing import Pool
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

from tqdm import tqdm

BATCH = 2000  # sentence pairs per worker task


# --------------------------------------------------------------------------- I/O
def open_text(path: str, mode: str = "r"):
    """UTF-8 text file in which only ``\\n`` ends a line (corpora contain stray ``\\r``)."""
    return open(path, mode, encoding="utf-8", errors="replace" if "r" in mode else "strict", newline="\n")


# ------------------------------------------------------------------ tokenization
_PIPES: Dict[str, tuple] = {}
_OPTIONS = {"escape": False, "aggressive_dash_splits": True}


def _init_worker(langs: Sequence[str], escape: bool, aggressive_dash_splits: bool = True) -> None:
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    _OPTIONS.update(escape=escape, aggressive_dash_splits=aggressive_dash_splits)
    for lang in langs:
        _PIPES[lang] = (MosesPunctNormalizer(lang=lang, post_remove_control_chars=True), MosesTokenizer(lang=lang))


def tokenize(line: str, lang: str) -> str:
    """Normalize punctuation (``normalize-punctuation.perl``, control characters removed like
    ``remove-non-printing-char.perl``) and tokenize one sentence (``tokenizer.perl``, ``-a`` unless
    ``aggressive_dash_splits=False``; ``_init_worker`` first).

    The result has single spaces between tokens and no other whitespace, so it
    stays one line for every tool downstream.
    """
    norm, tok = _PIPES[lang]
    text = tok.tokenize(norm.normalize(line), aggressive_dash_splits=_OPTIONS["aggressive_dash_splits"],
                        return_str=True, escape=_OPTIONS["escape"])
    return " ".join(text.split())


def _tokenize_batch(batch: Tuple[Sequence[str], List[Tuple[str, str]]]) -> List[Tuple[str, str]]:
    langs, pairs = batch
    return [tuple(tokenize(x, lang) for x, lang in zip(pair, langs)) for pair in pairs]


def tokenize_pairs(pairs: Iterable[Tuple[str, str]], langs: Sequence[str] = ("en", "de"), workers: int = 1,
                   escape: bool = False, desc: str = "tokenize",
                   aggressive_dash_splits: bool = True) -> Iterator[Tuple[str, str]]:
    """Normalize + tokenize sentence pairs with ``workers`` processes, keeping
    their order; at most ``4 * workers`` batches are in flight (bounded memory)."""
    it = iter(pairs)
    batches = itertools.takewhile(lambda b: b[1], ((tuple(langs), list(itertools.islice(it, BATCH)))
                                                   for _ in itertools.count()))
    with tqdm(desc=desc, unit=" pairs", mininterval=2.0, disable=None) as bar:
        if workers <= 1:
            _init_worker(langs, escape, aggressive_dash_splits)
            for batch in batches:
                out = _tokenize_batch(batch)
                bar.update(len(out))
                yield from out
            return
        with Pool(workers, initializer=_init_worker, initargs=(tuple(langs), escape, aggressive_dash_splits)) as pool:
            pending: collections.deque = collections.deque()
            for batch in itertools.chain(batches, [None]):
                if batch is not None:
                    pending.append(pool.apply_async(_tokenize_batch, (batch,)))
                while pending and (batch is None or len(pending) >= 4 * workers):
                    out = pending.popleft().get()
                    bar.update(len(out))
                    yield from out


# ------------------------------------------------------------------------- stages
def stage_done(path: str, config: Dict) -> bool:
    """Whether the stage marker ``path`` exists and records the same ``config``."""
    if not os.path.exists(path):
        return False
    with open(path) as f:
        return json.load(f).get("config") == config


def write_stage(path: str, config: Dict, stats: Dict) -> None:
    """Record a finished stage: its ``config`` (what :func:`stage_done` compares) and ``stats``."""
    with open(path + ".tmp", "w") as f:
        json.dump({"config": config, "stats": stats}, f, indent=2, sort_keys=True)
    os.replace(path + ".tmp", path)


def positive_int(value: str) -> int:
    """An argparse type: an integer > 0 (``--bpe-merges 0`` or ``-5`` learned codes without merges, so every
    word was split into characters, silently)."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return number


def learn_subword(out_dir: str, subword: str = "bpe", bpe_merges: int = 32000, spm_vocab_size: int = 32000,
                  spm_model_type: str = "bpe", spm_input_sentence_size: int = 5_000_000, workers: int = 1,
                  langs: Sequence[str] = ("en", "de")) -> str:
    """Learn the joint subword model on ``out_dir/train.{LANG}`` (both sides together, like fairseq's
    ``cat train.en train.de | learn_bpe.py``): subword-nmt BPE codes ``out_dir/bpe.codes`` or a
    sentencepiece model ``out_dir/spm.model``; returns its path."""
    if subword == "bpe" and bpe_merges < 1:
        raise ValueError(f"BPE needs a positive number of merges, got {bpe_merges}")
    train_files = [os.path.join(out_dir, f"train.{lang}") for lang in langs]
    if subword == "sentencepiece":
        import sentencepiece as spm

        prefix = os.path.join(out_dir, "spm")
        spm.SentencePieceTrainer.train(
            input=train_files, model_prefix=prefix, vocab_size=spm_vocab_size,
            model_type=spm_model_type, character_coverage=1.0,
            input_sentence_size=spm_input_sentence_size, shuffle_input_sentence=True,
            num_threads=max(1, workers), hard_vocab_limit=False, minloglevel=2,
        )
        return prefix + ".model"
    from subword_nmt.learn_bpe import learn_bpe

    joint = os.path.join(out_dir, "train.bpe-input.tmp")  # fairseq: cat train.en train.de | learn_bpe.py
    codes = os.path.join(out_dir, "bpe.codes")
    try:  # bpe.codes is replaced only when the new codes are whole; a failure leaves it as it was
        with open_text(joint, "w") as out:
            for path in train_files:
                with open_text(path) as f:
                    shutil.copyfileobj(f, out)
        with open_text(joint) as infile, open_text(codes + ".tmp", "w") as outfile:
            learn_bpe(infile, outfile, bpe_merges, num_workers=max(1, workers))
        os.replace(codes + ".tmp", codes)
    finally:  # this run's temporary files, written or not, and nothing else
        for tmp in (joint, codes + ".tmp"):
            if os.path.exists(tmp):
                os.remove(tmp)
    return codes
