"""``python -m syntax_nmt.data.subsample``: one fixed subset of every line file of a prefix (the Multi30k recipe's
``TRAIN_PERCENT``), its record, and the refusals."""

import json

import numpy as np
import pytest

from syntax_nmt.data import subsample
from syntax_nmt.data.subsample import is_done, line_files, main, subsample_files, subsample_mask


def _corpus(tmp_path, n=20):
    prefix = tmp_path / "ann" / "train"
    prefix.parent.mkdir()
    for ext in ("en", "de", "pos", "head", "tgt.pos"):
        (prefix.parent / f"train.{ext}").write_bytes(b"".join(f"{ext} {i} \xc3\xa9 \r\n".encode() if i == 3 else
                                                              f"{ext} {i}\n".encode() for i in range(n)))
    (prefix.parent / "train.annotation.json").write_text('{"parser": "x"}')
    (prefix.parent / "valid.en").write_text("not mine\n")
    return prefix


def test_every_line_file_keeps_the_same_lines_byte_for_byte(tmp_path):
    prefix = _corpus(tmp_path)
    out = tmp_path / "ann-p30" / "train"
    record = subsample_files(str(prefix), str(out), 30, 5)
    keep = np.flatnonzero(subsample_mask(20, 30, 5))
    assert len(keep) == 6
    for ext in ("en", "de", "pos", "head", "tgt.pos"):
        src = (prefix.parent / f"train.{ext}").read_bytes().splitlines(keepends=True)
        assert (out.parent / f"train.{ext}").read_bytes() == b"".join(src[i] for i in keep), ext
    assert (out.parent / "train.annotation.json").read_text() == '{"parser": "x"}'
    assert not (out.parent / "valid.en").exists()
    assert record == {"prefix": str(prefix.resolve()), "percent": 30, "seed": 5, "sentences": 20, "kept": 6,
                      "files": [".de", ".en", ".head", ".pos", ".tgt.pos"]}
    assert json.loads((out.parent / "train.subsample.json").read_text()) == record
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "train.annotation.json", "train.de", "train.en", "train.head", "train.pos", "train.subsample.json",
        "train.tgt.pos"]


def test_the_library_refuses_its_input_as_output_too(tmp_path):
    prefix = _corpus(tmp_path)
    with pytest.raises(ValueError, match=r"^--out-prefix .*/ann/\./train is the input --prefix .*/ann/train$"):
        subsample_files(str(prefix), f"{prefix.parent}/./train", 50, 1)


def test_line_files_are_the_prefix_s_own_without_records(tmp_path):
    prefix = _corpus(tmp_path)
    (prefix.parent / "training.en").write_text("x\n")
    assert [p.rsplit("/", 1)[1] for p in line_files(str(prefix))] == [
        "train.de", "train.en", "train.head", "train.pos", "train.tgt.pos"]


def test_is_done_only_for_the_same_subsample_of_unchanged_files(tmp_path):
    import os

    prefix = _corpus(tmp_path)
    out = tmp_path / "p" / "train"
    assert not is_done(str(prefix), str(out), 30, 5)
    subsample_files(str(prefix), str(out), 30, 5)
    assert is_done(str(prefix), str(out), 30, 5)
    assert not is_done(str(prefix), str(out), 30, 6)
    assert not is_done(str(prefix), str(out), 25, 5)
    (out.parent / "train.head").unlink()
    assert not is_done(str(prefix), str(out), 30, 5)
    subsample_files(str(prefix), str(out), 30, 5)
    later = os.path.getmtime(out.parent / "train.subsample.json") + 10
    os.utime(prefix.parent / "train.pos", (later, later))
    assert not is_done(str(prefix), str(out), 30, 5)


@pytest.mark.parametrize("break_it,message", [
    ("lengths", "--prefix {p}: the files have different line counts: train.de 20, train.en 20, train.head 20, "
                "train.pos 19, train.tgt.pos 20"),
    ("none", "--prefix {p}x: no files {p}x.*"),
    ("same", "--out-prefix {p} writes {p}.de, which is the input {p}.de"),  # the shared guard (io_guard)
    ("percent", "percent must be in (0, 100], got 0.0"),
])
def test_refusals_are_one_line_and_write_nothing(tmp_path, capsys, break_it, message):
    prefix = _corpus(tmp_path)
    if break_it == "lengths":
        lines = (prefix.parent / "train.pos").read_bytes().splitlines(keepends=True)
        (prefix.parent / "train.pos").write_bytes(b"".join(lines[:-1]))
    before = {p: p.read_bytes() for p in prefix.parent.iterdir()}
    argv = ["--prefix", str(prefix) + ("x" if break_it == "none" else ""),
            "--out-prefix", str(prefix if break_it == "same" else tmp_path / "out" / "train"),
            "--percent", "0" if break_it == "percent" else "50"]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err == f"{subsample.PROG}: error: {message.format(p=prefix)}\n"
    assert {p: p.read_bytes() for p in prefix.parent.iterdir()} == before
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_command_says_what_it_kept_and_skips_a_done_subsample(tmp_path, capsys):
    prefix = _corpus(tmp_path)
    out = tmp_path / "o" / "train"
    assert main(["--prefix", str(prefix), "--out-prefix", str(out), "--percent", "25", "--seed", "2"]) == 0
    assert capsys.readouterr().out == f"{out}: 5 of 20 sentences (25%, seed 2), 5 files\n"
    stamp = (out.parent / "train.en").stat().st_mtime_ns
    assert main(["--prefix", str(prefix), "--out-prefix", str(out), "--percent", "25", "--seed", "2"]) == 0
    assert capsys.readouterr().out == f"{out}: the 25% subsample (seed 2) is there\n"
    assert (out.parent / "train.en").stat().st_mtime_ns == stamp
