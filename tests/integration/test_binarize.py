"""syntax-nmt-binarize: error paths (checked before anything is written), --streamdict-dir, int16/int32 heads."""

import re
import shutil

import numpy as np
import pytest

from syntax_nmt.data import binarize
from syntax_nmt.data.binarize import StreamMismatchError, binarize_heads, check_stream_sizes

from support.streamdata import write_corpus


def _cli(capsys, *argv):
    """Run syntax-nmt-binarize in-process; returns (exit status, stderr lines other than log records)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--workers", "1", *map(str, argv)])
    err = capsys.readouterr().err.splitlines()
    return e.value.code, [line for line in err if not re.match(r"\d{4}-\d\d-\d\d \S+ \| (INFO|WARNING) \| ", line)]


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def _put(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(str(tmp_path / "text"), sizes={"train": 12, "valid": 9}, seed=7)


@pytest.mark.parametrize("case", ["field short", "line missing", "line extra", "head outside", "head cycle",
                                  "empty source"])
def test_text_errors_are_one_line_and_write_nothing(tmp_path, capsys, corpus, case):
    valid = corpus["valid"]
    if case == "field short":  # valid.pos:7 one field short
        pos = _lines(f"{valid}.pos")
        pos[6] = " ".join(pos[6].split()[:-1])
        _put(f"{valid}.pos", pos)
        expected = rf"valid\.pos:7: {len(pos[6].split())} fields, but the source line .*valid\.en:7 has " \
                   rf"{len(pos[6].split()) + 1} tokens$"
    elif case == "line missing":
        _put(f"{valid}.dep", _lines(f"{valid}.dep")[:-1])
        expected = r"valid\.dep has 8 lines, .*valid\.en has more$"
    elif case == "line extra":
        _put(f"{valid}.case", _lines(f"{valid}.case") + ["C"])
        expected = r"valid\.case has more lines than .*valid\.en \(9\)$"
    elif case == "head outside":
        heads = _lines(f"{valid}.head")
        heads[2] = " ".join(heads[2].split()[:-1] + ["5"])
        _put(f"{valid}.head", heads)
        expected = r"valid\.head:3: head offset 5 of token \d+ points outside the sentence$"
    elif case == "head cycle":  # tokens 2 and 3 each other's head, the others roots: a CoNLL-U file is refused too
        heads = _lines(f"{valid}.head")
        n = len(heads[2].split())
        assert n >= 3
        heads[2] = " ".join(["0", "1", "-1"] + ["0"] * (n - 3))
        _put(f"{valid}.head", heads)
        expected = r"valid\.head:3: the heads form a cycle through token [23] \(every token must lead to a root, " \
                   r"offset 0\)$"
    else:
        _put(f"{valid}.en", [])
        expected = r"valid\.en \(split 'valid'\) is empty: fairseq cannot binarize an empty file$"
    dest = tmp_path / "bin"
    code, err = _cli(capsys, "--trainpref", corpus["train"], "--validpref", valid, "--destdir", dest)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("syntax-nmt-binarize: error: "), err
    assert re.search(expected, err[0]), err[0]
    assert not dest.exists()  # checked first: nothing written


def test_binary_size_check_raises_stream_mismatch(tmp_path, corpus):
    """check_stream_sizes compares the binarized stream with the binarized source, sentence by sentence."""
    dest, other = str(tmp_path / "bin"), str(tmp_path / "other")
    binarize.main(binarize.get_parser().parse_args([
        "--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"], "--validpref", corpus["valid"],
        "--destdir", dest, "--joined-dictionary", "--workers", "1"]))
    check_stream_sizes(dest, "valid", "en", "de", ["pos", "head"], "mmap")  # consistent: no error
    corpus2 = write_corpus(str(tmp_path / "text2"), sizes={"train": 12, "valid": 9}, seed=8)
    binarize.main(binarize.get_parser().parse_args([
        "--source-lang", "en", "--target-lang", "de", "--trainpref", corpus2["train"], "--validpref",
        corpus2["valid"], "--destdir", other, "--joined-dictionary", "--workers", "1"]))
    for ext in ("bin", "idx"):  # another corpus' pos stream: same line count, other lengths
        shutil.copy(f"{other}/valid.en-de.pos.{ext}", f"{dest}/valid.en-de.pos.{ext}")
    lens = [len(line.split()) for line in _lines(corpus["valid"] + ".en")]
    lens2 = [len(line.split()) for line in _lines(corpus2["valid"] + ".en")]
    first = next(i for i, (a, b) in enumerate(zip(lens, lens2)) if a != b)
    with pytest.raises(StreamMismatchError, match=rf"valid\.pos:{first + 1}: stream 'pos' of split 'valid' has "
                                                  rf"{lens2[first]} tokens, the source line has {lens[first]}"):
        check_stream_sizes(dest, "valid", "en", "de", ["pos"], "mmap", text_prefix="valid")


def test_streamdict_dir_reuses_the_training_dictionaries(tmp_path, capsys, corpus):
    train_bin, test_bin = tmp_path / "train-bin", tmp_path / "test-bin"
    binarize.main(binarize.get_parser().parse_args([
        "--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"], "--destdir", str(train_bin),
        "--joined-dictionary", "--workers", "1"]))
    # a test split binarized later, without training data: the training dictionaries are reused
    test = write_corpus(str(tmp_path / "test-text"), sizes={"test": 5}, seed=9)["test"]
    binarize.main(binarize.get_parser().parse_args([
        "--source-lang", "en", "--target-lang", "de", "--testpref", test, "--destdir", str(test_bin),
        "--srcdict", str(train_bin / "dict.en.txt"), "--tgtdict", str(train_bin / "dict.de.txt"),
        "--streamdict-dir", str(train_bin), "--workers", "1"]))
    for s in ("pos", "case", "subword", "dep"):
        assert (test_bin / f"dict.{s}.txt").read_text() == (train_bin / f"dict.{s}.txt").read_text()
    from fairseq.data import Dictionary, data_utils

    d = Dictionary.load(str(test_bin / "dict.pos.txt"))
    ds = data_utils.load_indexed_dataset(str(test_bin / "test.en-de.pos"), d, "mmap")
    assert [d.string(ds[i][:-1]).split() for i in range(len(ds))] == [line.split() for line in _lines(test + ".pos")]
    # a directory without the dictionaries: one-line error, nothing written
    code, err = _cli(capsys, "--testpref", test, "--destdir", tmp_path / "x", "--srcdict", train_bin / "dict.en.txt",
                     "--tgtdict", train_bin / "dict.de.txt", "--streamdict-dir", tmp_path)
    assert code == 2 and len(err) == 1
    assert f"--streamdict-dir {tmp_path} has no dictionary for stream 'pos'" in err[0]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("reach,dtype", [(32767, np.int16), (32768, np.int32)])
def test_heads_int16_or_int32(tmp_path, reach, dtype):
    from fairseq.data import indexed_dataset

    n = reach + 1  # the last token's head is the first: offset -reach
    lines = ["1 0 -1", " ".join(["0"] + ["-%d" % i for i in range(1, n)])]
    _put(tmp_path / "t.head", lines)
    assert binarize_heads(str(tmp_path / "t.head"), str(tmp_path / "out")) == 2
    ds = indexed_dataset.MMapIndexedDataset(str(tmp_path / "out"))
    assert ds._index.dtype == dtype
    assert ds[0].tolist() == [1, 0, -1, 0]  # EOS value appended
    assert ds[1][-2].item() == -reach and ds[1].tolist()[:3] == [0, -1, -2] and len(ds[1]) == n + 1


def _snapshot(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_existing_destination_is_refused_first_and_left_as_it_was(tmp_path, capsys, corpus):
    """A destination already holding dictionaries or the split is a one-line error saying what it holds, and is
    left as it was; a new split binarized with the directory's own dictionaries joins it."""
    dest = tmp_path / "bin"
    argv = ["--trainpref", corpus["train"], "--validpref", corpus["valid"], "--destdir", dest, "--joined-dictionary"]
    binarize.main(binarize.get_parser().parse_args(
        ["--source-lang", "en", "--target-lang", "de", "--workers", "1", *map(str, argv)]))
    before = _snapshot(dest)
    code, err = _cli(capsys, *argv)
    assert code == 2 and err == [f"syntax-nmt-binarize: error: --destdir {dest} already holds dict.en.txt (binarized "
                                 f"before?): remove it or choose another --destdir (nothing was written)"]
    # with the directory's own dictionaries, a split already there is still refused ...
    own = ["--srcdict", dest / "dict.en.txt", "--tgtdict", dest / "dict.de.txt", "--streamdict-dir", dest]
    code, err = _cli(capsys, "--validpref", corpus["valid"], "--destdir", dest, *own)
    assert code == 2 and err[0].endswith(f"--destdir {dest} already holds valid.en-de.en.bin (binarized before?): "
                                         f"remove it or choose another --destdir (nothing was written)")
    assert _snapshot(dest) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "text"]  # no staging directory left
    # ... and a new split joins it (same dictionaries: nothing else changes)
    test = write_corpus(str(tmp_path / "text3"), sizes={"test": 4}, seed=5)["test"]
    binarize.main(binarize.get_parser().parse_args(
        ["--source-lang", "en", "--target-lang", "de", "--workers", "1", "--testpref", test, "--destdir", str(dest),
         *map(str, own)]))
    after = _snapshot(dest)
    assert {k: v for k, v in after.items() if k in before and k != "preprocess.log"} == {
        k: v for k, v in before.items() if k != "preprocess.log"}
    assert sorted(set(after) - set(before)) == sorted(f"test.en-de.{s}.{e}" for s in
                                                      ("en", "de", "pos", "case", "subword", "dep", "head")
                                                      for e in ("bin", "idx"))


def test_dataset_impl_other_than_mmap_is_refused_before_writing(tmp_path, capsys, corpus):
    """--dataset-impl lazy is a one-line error naming mmap, before anything is written."""
    dest = tmp_path / "bin"
    code, err = _cli(capsys, "--trainpref", corpus["train"], "--destdir", dest, "--dataset-impl", "lazy")
    assert code == 2 and err == ["syntax-nmt-binarize: error: --dataset-impl lazy: syntax-nmt-binarize stores the "
                                 "source streams (pos,case,subword,head,dep) only as mmap datasets; use "
                                 "--dataset-impl mmap (the default)"]
    assert not dest.exists()


def test_a_late_failure_leaves_nothing_written(tmp_path, capsys, corpus, monkeypatch):
    """Everything is built beside --destdir and moved into place at the end."""
    def fail(*args, **kwargs):
        raise StreamMismatchError("the final check failed")

    monkeypatch.setattr(binarize, "check_stream_sizes", fail)
    dest = tmp_path / "bin"
    code, err = _cli(capsys, "--trainpref", corpus["train"], "--destdir", dest)
    assert code == 2 and err == ["syntax-nmt-binarize: error: the final check failed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text"]
