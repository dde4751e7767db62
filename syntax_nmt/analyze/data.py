"""Read binarized streams of a data directory as flat arrays, and write noisy copies of it.

A binarized stream (``{split}.{src}-{tgt}.{stream}.{bin,idx}``, fairseq's mmap format) is
one flat array of every sentence's values (each sentence ends with its EOS value) plus an
index of sizes. Noise never changes a length, so a noisy copy keeps the index file and
rewrites only the ``.bin`` of the corrupted stream; every other file of the directory is a
symbolic link to the original.

A noisy copy never destroys data: it is built in a temporary directory next to
its destination and renamed into place at the end, with its record (``noise-STREAM.json``),
so a destination exists whole or not at all; an existing destination is only replaced when
asked (``overwrite``), and never when it is (or holds, or backs) the source directory.
"""

import fnmatch
import json
import os
import re
import secrets
import shutil
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from syntax_nmt.constants import NOISE_RECORD_FILE
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
        raise DataError(f"{data} has no subword stream ({os.path.basename(dict_path)}): word boundaries are unknown")
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


def _within(path: str, root: str) -> bool:
    """Whether real path ``path`` is ``root`` or lies under it (both real paths)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_destination(data: str, out: str, overwrite: bool = False) -> None:
    """Refuse a destination ``out`` for a copy of ``data`` that would destroy data.

    Symbolic links and ``..`` are resolved. ``out`` may never be ``data``, lie inside it, or hold
    it; an existing ``out`` is refused unless ``overwrite``, and even then when a file of
    ``data`` resolves into it (``data`` is itself a noisy copy of ``out``).

    Raises:
        DataError: naming what is wrong.
    """
    if not os.path.isdir(data):
        raise DataError(f"--data {data} is not a directory")
    real_data, real_out = os.path.realpath(data), os.path.realpath(out)
    if real_out == real_data:
        raise DataError(f"--out {out} is the data directory {data} itself (a copy would destroy it): "
                        f"name another directory")
    if _within(real_out, real_data):
        raise DataError(f"--out {out} lies inside the data directory {data}: name a directory outside it")
    if _within(real_data, real_out):
        raise DataError(f"--out {out} holds the data directory {data} (replacing it would destroy it): "
                        f"name another directory")
    if not os.path.lexists(out):
        return
    if not overwrite:
        raise DataError(f"--out {out} exists: name a new directory, or pass --overwrite to replace it")
    for name in sorted(os.listdir(data)):
        if _within(os.path.realpath(os.path.join(data, name)), real_out):
            raise DataError(f"{os.path.join(data, name)} is a link into --out {out} (replacing it would destroy "
                            f"--data): name another directory")


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def _move_into_place(tmp: str, out: str) -> None:
    """Rename the finished directory ``tmp`` to ``out``, replacing what ``out`` was (a link is
    replaced itself, never what it points to)."""
    if not os.path.lexists(out):
        os.rename(tmp, out)
        return
    aside = tmp + ".old"
    os.rename(out, aside)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(aside, out)
        raise
    _remove(aside)


def _link(src: str, dst: str, noisy_data: Optional[str]) -> None:
    """``dst`` the file ``src`` is: a symbolic link to its real path (through every link, so a copy of a copy
    does not go through the first copy's directory entries), or, for a file a noisy copy ``noisy_data`` holds
    itself (its noisy streams, its records), a hard link (a copy across file systems): when that noisy copy is
    replaced (``--overwrite``), this one keeps its data and records, instead of dangling links or links to
    another noise."""
    real = os.path.realpath(src)
    if noisy_data is not None and _within(real, os.path.realpath(noisy_data)):
        try:
            os.link(real, dst)
        except OSError:
            shutil.copy2(real, dst)
    else:
        os.symlink(real, dst)


def noisy_copy(data: str, out: str, stream: str, rate: float, seed: int,
               splits: Sequence[str] = ("test",), overwrite: bool = False) -> List[dict]:
    """A copy of data directory ``data`` in ``out`` whose ``stream`` is noisy in ``splits``.

    Every file is a symbolic link to ``data``'s (to its real path) except the ``.bin`` files of
    the noisy stream, which are rewritten, and ``noise-{stream}.json`` (the records returned, each
    naming ``data``); when ``data`` is itself a noisy copy, the files it holds itself are hard
    links, so that replacing ``data`` later leaves this copy whole (:func:`_link`). Train on it with
    plain ``fairseq-train out ...`` (noise at training), or translate its test split (noise at test
    time). The copy is built in a temporary
    directory next to ``out`` and renamed to ``out`` when complete: an interrupted run leaves
    ``out`` as it was. See :func:`check_destination` for what ``out`` may be.

    Returns:
        One :func:`corrupt_split` record per split.

    Raises:
        DataError: a destination that would destroy data, an existing one without
            ``overwrite``, a stream or split ``data`` lacks.
    """
    check_destination(data, out, overwrite)
    if stream != HEAD_STREAM and not os.path.exists(stream_dict_path(data, stream)):
        raise DataError(f"{data} has no {stream!r} stream to corrupt")
    data = os.path.abspath(data)
    out = os.path.abspath(out)
    names = os.listdir(data)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    os.mkdir(tmp)
    try:
        noisy_data = any(fnmatch.fnmatch(name, NOISE_RECORD_FILE.format("*")) for name in names)
        for name in names:
            _link(os.path.join(data, name), os.path.join(tmp, name), data if noisy_data else None)
        records = [dict(corrupt_split(data, tmp, split, stream, rate, seed), data=data) for split in splits]
        record = os.path.join(tmp, NOISE_RECORD_FILE.format(stream))
        if os.path.lexists(record):  # the link to the record of data's own noise on this stream
            os.remove(record)
        with open(record, "w", encoding="utf-8") as f:
            json.dump(records, f, indent=1)
        _move_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return records
