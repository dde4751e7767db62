"""Read binarized streams of a data directory as flat arrays, and write noisy copies of it.

A binarized stream (``{split}.{src}-{tgt}.{stream}.{bin,idx}``, fairseq's mmap format) is
one flat array of every sentence's values (each sentence ends with its EOS value) plus an
index of sizes. Noise never changes a length, so a noisy copy keeps the index file and
rewrites only the ``.bin`` of the corrupted stream; every other file of the directory is a
symbolic link to the original.
"""

import os
import re
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from syntax_nmt.data.streams import HEAD_STREAM, stream_data_prefix, stream_dict_path
from syntax_nmt.syntax import noise

#: subword tags that start a word (``syntax-nmt-annotate``'s ``subword`` stream)
WORD_START_TAGS = ("B", "O")


class DataError(ValueError):
    """The data directory lacks what an analysis needs."""


class Flat(NamedTuple):
    """A binarized split read whole: ``values`` ``(sum(sizes),)`` and ``sizes`` ``(N,)`` (EOS included)."""

    values: np.ndarray
    sizes: np.ndarray
    dtype: type


def language_pair(data: str, split: str = "test") -> Tuple[str, str]:
    """``(src, tgt)`` of the binarized ``split`` in ``data`` (from ``{split}.{src}-{tgt}.{src}.idx``)."""
    if not os.path.isdir(data):
        raise DataError(f"{data} is not a directory")
    pat = re.compile(rf"^{re.escape(split)}\.([^.\-]+)-([^.\-]+)\.\1\.idx$")
    pairs = sorted({m.groups() for m in map(pat.match, os.listdir(data)) if m})
    if len(pairs) != 1:
        raise DataError(f"{data}: expected one binarized language pair for split {split!r}, found "
                        f"{['-'.join(p) for p in pairs] or 'none'}")
    return pairs[0]


def read_flat(prefix: str) -> Flat:
    """Read ``prefix.{bin,idx}`` (fairseq mmap format) as one flat array."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    if not (os.path.exists(prefix + ".idx") and os.path.exists(prefix + ".bin")):
        raise DataError(f"{prefix}.{{bin,idx}} not found")
    index = MMapIndexedDataset.Index(prefix + ".idx")
    sizes = np.array(index.sizes, dtype=np.int64)
    dtype = index.dtype
    values = np.fromfile(prefix + ".bin", dtype=dtype)
    if len(values) != sizes.sum():  # fairseq's builder writes the sentences one after the other
        raise DataError(f"{prefix}.bin holds {len(values)} values, its index {sizes.sum()}")
    del index
    return Flat(values, sizes, dtype)


def strip_eos(flat: Flat) -> Tuple[np.ndarray, np.ndarray]:
    """Values without the last (EOS) entry of every sentence, and the remaining lengths."""
    keep = np.ones(len(flat.values), dtype=bool)
    keep[np.cumsum(flat.sizes)[flat.sizes > 0] - 1] = False
    return flat.values[keep].astype(np.int64), flat.sizes - 1


def word_starts(data: str, split: str, src: str, tgt: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(word_start, lengths)`` of the source sentences (EOS excluded) from the ``subword`` stream."""
    from fairseq.data import Dictionary

    dict_path = stream_dict_path(data, "subword")
    if not os.path.exists(dict_path):
        raise DataError(f"{data} has no subword stream (dict.subword.txt): word boundaries are unknown")
    d = Dictionary.load(dict_path)
    ids = [d.index(t) for t in WORD_START_TAGS if t in d.indices]
    tags, lengths = strip_eos(read_flat(stream_data_prefix(data, split, src, tgt, "subword")))
    return np.isin(tags, ids), lengths


def source_lengths(data: str, split: str = "test") -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """Per sentence of ``split``: ``(subwords, words)``; ``words`` is None without a subword stream."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    src, tgt = language_pair(data, split)
    index = MMapIndexedDataset.Index(os.path.join(data, f"{split}.{src}-{tgt}.{src}.idx"))
    subwords = np.array(index.sizes, dtype=np.int64) - 1  # copied while the index (an mmap) is open
    del index
    if not os.path.exists(stream_dict_path(data, "subword")):
        return subwords, None
    ws, lengths = word_starts(data, split, src, tgt)
    words = noise.word_index(ws, lengths)
    return subwords, words.words_per_sentence


def tag_choices(data: str, stream: str) -> List[int]:
    """The ids of the real tags of a stream dictionary (no special or padding symbols)."""
    from fairseq.data import Dictionary

    d = Dictionary.load(stream_dict_path(data, stream))
    return [i for i in range(d.nspecial, len(d)) if not d[i].startswith("madeupword")]


def corrupt_split(data: str, out: str, split: str, stream: str, rate: float, seed: int) -> dict:
    """Write the noisy ``.bin`` of one stream of one split into ``out`` (see :mod:`syntax_nmt.syntax.noise`).

    Returns:
        ``{"split", "stream", "rate", "words", "changed_words"}``: the words of the split and how
        many of them now have another head / tag than in ``data``.
    """
    src, tgt = language_pair(data, split)
    prefix = stream_data_prefix(data, split, src, tgt, stream)
    flat = read_flat(prefix)
    ws, lengths = word_starts(data, split, src, tgt)
    values, stream_lengths = strip_eos(flat)
    if not np.array_equal(stream_lengths, lengths):
        raise DataError(f"stream {stream!r} of split {split!r} does not line up with the subword stream")
    words = noise.word_index(ws, lengths)
    selected, u = noise.noise_draws(len(words.first_token), rate, seed)
    if stream == HEAD_STREAM:
        new = noise.corrupt_heads(values, ws, lengths, selected, u)
        before, after = noise.head_words(values, words, lengths), noise.head_words(new, words, lengths)
    else:
        new = noise.corrupt_tags(values, ws, lengths, tag_choices(data, stream), selected, u)
        before, after = values[words.first_token], new[words.first_token]
    info = np.iinfo(flat.dtype)
    if new.size and (new.min() < info.min or new.max() > info.max):
        raise DataError(f"noisy {stream!r} values do not fit {np.dtype(flat.dtype).name}")
    out_values = flat.values.copy()
    keep = np.ones(len(out_values), dtype=bool)
    keep[np.cumsum(flat.sizes)[flat.sizes > 0] - 1] = False
    out_values[keep] = new.astype(flat.dtype)
    target = stream_data_prefix(out, split, src, tgt, stream) + ".bin"
    if os.path.lexists(target):
        os.remove(target)
    out_values.tofile(target)
    return {"split": split, "stream": stream, "rate": rate, "seed": seed, "words": int(len(before)),
            "changed_words": int((before != after).sum())}


def noisy_copy(data: str, out: str, stream: str, rate: float, seed: int,
               splits: Sequence[str] = ("test",)) -> List[dict]:
    """A copy of data directory ``data`` in ``out`` whose ``stream`` is noisy in ``splits``.

    Every file is a symbolic link to ``data`` except the ``.bin`` files of the noisy stream,
    which are rewritten. Train on it with plain ``fairseq-train out ...`` (noise at training),
    or translate its test split (noise at test time).

    Returns:
        One :func:`corrupt_split` record per split.
    """
    if stream != HEAD_STREAM and not os.path.exists(stream_dict_path(data, stream)):
        raise DataError(f"{data} has no {stream!r} stream to corrupt")
    data = os.path.abspath(data)
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(data):
        link = os.path.join(out, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join(data, name), link)
    return [corrupt_split(data, out, split, stream, rate, seed) for split in splits]
