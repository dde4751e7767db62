"""Sentencepiece's normalization never starts a second word inside a parser word; the limits bound what
overflows (a line longer than spaCy's max_length, a word of hundreds of subwords)."""

import pytest

from support.annotate import CODES, check_aligned, read, write
from syntax_nmt.annotate.cli import main
from syntax_nmt.annotate.subwords import SpmSegmenter, learn_model
from syntax_nmt.annotate.textio import InputError


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    text = ["zero width don t go the cat sat on the mat ."] * 30
    return learn_model("spm", iter(text), 40, str(tmp_path_factory.mktemp("spm") / "m.model"))


def test_spm_normalization_never_adds_word_starts(tmp_path, spacy_model, spm_model):
    """NFKC maps U+200B to a space and U+00B4 to a space plus a combining mark, so sentencepiece alone
    gives a second word start inside one parser word; the subword stream keeps one word start per word."""
    seg = SpmSegmenter(spm_model)
    raw = seg.sp.encode(["zero\u200bwidth"], out_type=str)[0]
    assert sum(p.startswith("\u2581") for p in raw) == 2  # the problem, as sentencepiece has it
    src = write(tmp_path / "in.en", ["zero\u200bwidth .", "don\u00b4t go .", "\u200b x \u00a8"])
    main(["--source", src, "--src-lang", "en", "-o", str(tmp_path / "out/train"), "--spacy-model", spacy_model,
          "--pretokenized", "--subword", "spm", "--subword-model", spm_model, "--quiet"])
    lines = check_aligned(tmp_path / "out/train", scheme="spm")  # markers and B/M/E/O agree on every token
    subword = read(str(tmp_path / "out/train.subword"))
    for line, tags, words in zip(lines, subword, (2, 3, 3)):
        toks = line.split()
        assert sum(t.startswith("\u2581") for t in toks) == words  # one word start per parser word
        assert sum(t in "BO" for t in tags.split()) == words
    assert lines[0].replace(" ", "").split("\u2581")[1:] == ["zerowidth", "."]
    assert lines[1].replace(" ", "").split("\u2581")[1:] == ["do\u0144t", "go", "."]  # n + U+0301 composes to ń
    assert lines[2].split()[0] == "\u2581"  # a word the normalizer deletes keeps one position


@pytest.mark.parametrize("policy", ["blank", "error"])
def test_line_longer_than_spacy_max_length(tmp_path, spacy_model, policy):
    """A 1,000,001-character word: an over-long line handled by --on-long, with correct advice."""
    src = write(tmp_path / "in.en", ["The cat sat .", "a " + "x" * 1_000_001, "A dog ran ."])
    tgt = write(tmp_path / "in.de", ["x", "y", "z"])
    args = ["--source", src, "--target", tgt, "--src-lang", "en", "--tgt-lang", "de", "-o",
            str(tmp_path / "out/train"), "--spacy-model", spacy_model, "--subword", "none", "--on-long", policy,
            "--quiet"]
    if policy == "error":
        with pytest.raises(InputError, match=r"in\.en:2: line has 1000003 characters, more than spaCy's max_length "
                                             r"1000000 \(1 over-long lines; --on-long blank writes them as empty"):
            main(args)
        return
    main(args)
    assert read(str(tmp_path / "out/train.en")) == ["The cat sat .", "", "A dog ran ."]
    assert read(str(tmp_path / "out/train.de")) == ["x", "", "z"]
    assert read(str(tmp_path / "out/train.pos"))[1] == ""


@pytest.mark.parametrize("policy", ["blank", "error"])
def test_max_subwords_bounds_what_fairseq_sees(tmp_path, spacy_model, policy):
    """A line of 400 dashes: one whitespace word (--max-words cannot catch it), 400 BPE pieces."""
    codes = tmp_path / "bpe.codes"
    codes.write_text(CODES, encoding="utf-8")
    src = write(tmp_path / "in.en", ["The cat sat .", "-" * 400, "A dog ran .", "The cat sat ."])
    tgt = write(tmp_path / "in.de", ["x", "y", "z", "w " * 30 + "w"])
    args = ["--source", src, "--target", tgt, "--src-lang", "en", "--tgt-lang", "de", "-o",
            str(tmp_path / "out/train"), "--spacy-model", spacy_model, "--pretokenized", "--subword", "bpe",
            "--subword-model", str(codes), "--max-words", "10", "--max-subwords", "20", "--on-long", policy, "--quiet"]
    if policy == "error":
        with pytest.raises(InputError, match=r"in\.en:2: source line has 400 subword tokens, more than "
                                             r"--max-subwords 20 \(--on-long blank"):
            main(args)
        return
    main(args)
    assert read(str(tmp_path / "out/train.en")) == ["The cat sat .", "", "A d@@ o@@ g r@@ a@@ n .", ""]
    assert read(str(tmp_path / "out/train.de")) == ["x", "", "z", ""]  # line 4: its target has 31 subwords
    for name in ("pos", "case", "subword", "head", "dep"):
        assert [bool(x) for x in read(str(tmp_path / f"out/train.{name}"))] == [True, False, True, False]
    check_aligned(tmp_path / "out/train")
