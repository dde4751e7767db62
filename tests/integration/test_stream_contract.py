"""The stream contract of the README (section "Streams"): stored values, special positions, word starts.

Alignment of text streams is tested in test_annotate_align.py, positions under padding and
truncation in test_collation.py, the tree conventions in test_tree.py; this file checks the
values the README promises for dictionaries, heads, specials and word starts.
"""

import collections
import os
import shutil

import numpy as np
import pytest
import torch

from conftest import build_task_and_model
from syntax_nmt.data import binarize
from syntax_nmt.data.streams import TAG_STREAMS

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def _dataset(prefix):
    from fairseq.data import indexed_dataset

    return indexed_dataset.make_dataset(prefix, impl="mmap")


@pytest.mark.parametrize("stream", TAG_STREAMS)
def test_tag_dictionaries_specials_then_tags_by_frequency(stream_bin, stream_corpus, stream):
    from fairseq.data import Dictionary

    d = Dictionary.load(os.path.join(stream_bin, f"dict.{stream}.txt"))
    assert d.symbols[:4] == SPECIALS
    assert (d.bos(), d.pad(), d.eos(), d.unk()) == (0, 1, 2, 3)
    with open(f"{stream_corpus['train']}.{stream}", encoding="utf-8") as f:
        counts = collections.Counter(tok for line in f for tok in line.split())
    assert set(d.symbols[4:]) == set(counts)  # every training tag, no threshold
    assert [counts[t] for t in d.symbols[4:]] == sorted(counts.values(), reverse=True)


def test_every_line_ends_with_eos_and_unseen_tags_become_unk(stream_bin, stream_corpus, tmp_path):
    """New data binarized with the training dictionaries: a tag unknown to them is <unk> (3)."""
    prefix = str(tmp_path / "new")
    for ext in ("en", "de", "pos", "case", "subword", "head", "dep"):
        shutil.copy(f"{stream_corpus['test']}.{ext}", f"{prefix}.{ext}")
    with open(f"{prefix}.pos", encoding="utf-8") as f:
        lines = f.read().splitlines()
    lines[0] = " ".join(["INTJ"] + lines[0].split()[1:])  # not a tag of the training data
    with open(f"{prefix}.pos", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    dest = str(tmp_path / "bin")
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--testpref", prefix, "--destdir", dest,
                       "--joined-dictionary", "--srcdict", os.path.join(stream_bin, "dict.en.txt"), "--workers", "1"])
    from fairseq.data import Dictionary

    d = Dictionary.load(os.path.join(dest, "dict.pos.txt"))
    assert d.symbols == Dictionary.load(os.path.join(stream_bin, "dict.pos.txt")).symbols  # --streamdict-dir default
    pos = _dataset(os.path.join(dest, "test.en-de.pos"))
    first = pos[0].tolist()
    assert first[0] == d.unk() == 3
    assert first[1:] == [d.index(t) for t in lines[0].split()[1:]] + [d.eos()]
    for stream in ("case", "subword", "dep", "head"):
        ds = _dataset(os.path.join(dest, f"test.en-de.{stream}"))
        assert all(int(ds[i][-1]) == (0 if stream == "head" else 2) for i in range(len(ds)))

    # trained on these lines, the once-seen tag gets its own id: no frequency threshold
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--trainpref", prefix,
                       "--destdir", str(tmp_path / "own"), "--joined-dictionary", "--workers", "1"])
    own = Dictionary.load(str(tmp_path / "own" / "dict.pos.txt"))
    assert own.index("INTJ") > own.unk() and own.count[own.index("INTJ")] == 1


def test_heads_are_raw_offsets_int16_then_int32(tmp_path):
    small = tmp_path / "small.head"
    small.write_text("1 0 -1\n0\n\n")
    n = binarize.binarize_heads(str(small), str(tmp_path / "small"))
    ds = _dataset(str(tmp_path / "small"))
    assert n == 3 and ds[0].tolist() == [1, 0, -1, 0] and ds[1].tolist() == [0, 0] and ds[2].tolist() == [0]
    assert ds._index.dtype == np.int16  # stored; fairseq reads every item as int64

    length = 2 ** 15 + 2
    big = tmp_path / "big.head"
    big.write_text(" ".join([str(length - 1)] + ["0"] * (length - 1)) + "\n")  # first token -> last: 32769
    binarize.binarize_heads(str(big), str(tmp_path / "big"))
    row = _dataset(str(tmp_path / "big"))[0]
    assert _dataset(str(tmp_path / "big"))._index.dtype == np.int32
    assert int(row[0]) == length - 1 and len(row) == length + 1

    bad = tmp_path / "bad.head"
    bad.write_text("1 0\n1 -2\n")
    with pytest.raises(binarize.StreamMismatchError, match=f"{bad}:2: head offset -2 of token 2 points outside"):
        binarize.binarize_heads(str(bad), str(tmp_path / "bad"))


@pytest.mark.parametrize("pad_option", [[], ["--left-pad-source"]])
def test_special_positions_in_a_batch(stream_bin, pad_option):
    """EOS, BOS (--source-prepend-bos) and padding: the stream's own </s>, <s>, <pad>; heads 0."""
    args = ["--syntax-attention", "sgnet", "--source-features", "pos,case,subword,dep", *pad_option]
    task, _, _ = build_task_and_model(stream_bin, "--source-prepend-bos", *args)
    plain, _, _ = build_task_and_model(stream_bin, *args)
    for t in (task, plain):
        t.load_dataset("valid")
    ids = list(range(12))
    batch = task.dataset("valid").collater([task.dataset("valid")[i] for i in ids])
    ref = plain.dataset("valid").collater([plain.dataset("valid")[i] for i in ids])
    src, streams = batch["net_input"]["src_tokens"], batch["net_input"]["src_streams"]
    d = task.source_dictionary
    assert batch["id"].tolist() == ref["id"].tolist()
    is_bos, is_eos, is_pad = src.eq(d.bos()), src.eq(d.eos()), src.eq(d.pad())
    assert is_bos.sum(1).tolist() == [1] * len(ids) and is_eos.sum(1).tolist() == [1] * len(ids)
    assert is_pad.any()
    for name, values in streams.items():
        bos, eos, pad = (0, 0, 0) if name == "head" else (0, 2, 1)
        assert (values[is_bos] == bos).all() and (values[is_eos] == eos).all() and (values[is_pad] == pad).all()
        # the BOS shifts the sentence, it does not change its values
        for r in range(len(ids)):
            real = ~is_pad[r] & ~is_bos[r]
            ref_real = ~ref["net_input"]["src_tokens"][r].eq(d.pad())
            assert values[r][real].tolist() == ref["net_input"]["src_streams"][name][r][ref_real].tolist(), name


def test_word_starts_are_the_B_and_O_tags(stream_bin):
    task, model, cfg = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    d = task.stream_dicts["subword"]
    assert sorted(int(i) for i in cfg.model.word_start_ids.split(",")) == sorted([d.index("B"), d.index("O")])
    assert not {d.index("M"), d.index("E")} & {int(i) for i in cfg.model.word_start_ids.split(",")}
    assert np.all(np.array([d.index(t) for t in "BMEO"]) > d.unk())  # real tags, not specials
