"""syntax-nmt-synth --join: longer lines of consecutive pairs, every file of a split alike."""

import random
import subprocess
import sys

import pytest

from syntax_nmt.syntax.conllu import Sentence, read_conllu
from syntax_nmt.synthetic.join import group_sizes, join_sentences


def test_join_sentences_renumbers_heads_and_keeps_each_root():
    a = Sentence(["A", "dog", "."], ["DET", "NOUN", "PUNCT"], ["_"] * 3, [2, 0, 2], ["det", "root", "punct"],
                 [True, False, True], {"text": "A dog."})
    b = Sentence(["It", "runs"], ["PRON", "VERB"], ["_"] * 2, [2, 0], ["nsubj", "root"], [True, False],
                 {"text": "It runs"})
    j = join_sentences([a, b])
    assert j.words == ["A", "dog", ".", "It", "runs"]
    assert j.heads == [2, 0, 2, 5, 0]
    assert j.space_after == [True, False, True, True, False]
    assert j.text == "A dog. It runs"
    assert a.heads == [2, 0, 2]  # the parts are left alone


def test_group_sizes_cover_the_split_with_the_asked_mean():
    sizes = list(group_sizes(20000, 1.2, random.Random(0)))
    assert sum(sizes) == 20000 and min(sizes) >= 1
    assert 2.15 < sum(sizes) / len(sizes) < 2.25
    assert list(group_sizes(5, 0.0, random.Random(0))) == [1] * 5


def test_joined_corpus_stays_aligned(tmp_path):
    plain, joined = tmp_path / "plain", tmp_path / "joined"
    for out, extra in ((plain, []), (joined, ["--join", "1.5"])):
        subprocess.run([sys.executable, "-m", "syntax_nmt.synthetic.cli", "--out", str(out), "--train", "60",
                        "--valid", "5", "--test", "5", "--quiet", *extra], check=True)
    for split in ("train", "valid", "test"):
        lines = {k: (joined / f"{split}.{k}").read_text().splitlines() for k in ("en", "tok.en", "de", "tok.de")}
        with open(joined / f"{split}.en.conllu") as f:
            blocks = list(read_conllu(f))
        assert len({len(v) for v in lines.values()} | {len(blocks)}) == 1
        for kind in ("en", "tok.en", "de", "tok.de"):  # the same text, only the line breaks moved
            assert " ".join(lines[kind]) == " ".join((plain / f"{split}.{kind}").read_text().splitlines())
        for block, tok, raw in zip(blocks, lines["tok.en"], lines["en"]):
            assert block.words == tok.split() and block.text == raw
            assert block.heads.count(0) == raw.count(". ") + raw.count("? ") + raw.count("! ") + 1
    assert len((joined / "train.en").read_text().splitlines()) < 60


def test_negative_join_is_a_one_line_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.synthetic.cli", "--out", str(tmp_path), "--join", "-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr == "syntax-nmt-synth: error: --join must be >= 0, got -1.0\n"
