"""Unit tests of syntax_nmt.annotate.subwords (issue 48): the BPE codes checks and their messages, the memoized
BPE segmentation, sentencepiece's word starts (batched, re-encoded, merged as a last resort), the truncated-model
check and its protobuf walk, the segmentation guard, file hashes, and learning both kinds of model."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sentencepiece

from syntax_nmt.annotate.subwords import (
    BpeSegmenter,
    Segmenter,
    SpmSegmenter,
    _protobuf_fields,
    file_sha256,
    learn_model,
    load_segmenter,
    spm_model_path,
)

CODES = "#version: 0.2\nc a\nca t</w>\ns a\nsa t</w>\nT h\nTh e</w>\n"
CORPUS = ["the cat sat on the mat .", "the dog sat on the log .", "a cat and a dog ran .",
          "the cats ran to the mats .", "dogs and cats sat ."] * 10
CODES_RULE = "a line must hold two symbols separated by a space"


def _write(path, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return str(path)


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return learn_model("spm", iter(CORPUS), 30, str(tmp_path_factory.mktemp("spm") / "tiny.model"),
                       spm_model_type="bpe")


# ---------------------------------------------------------------------------------------------- hashes, paths


def test_file_sha256_is_the_digest_of_the_whole_file(tmp_path):
    data = bytes(range(256)) * 17
    assert file_sha256(_write(tmp_path / "m", data)) == hashlib.sha256(data).hexdigest()
    assert file_sha256(_write(tmp_path / "e", b"")) == hashlib.sha256(b"").hexdigest()


def test_spm_model_path():
    assert spm_model_path("out/sp") == "out/sp.model"
    assert spm_model_path("out/sp.model") == "out/sp.model"


def test_load_segmenter_errors(tmp_path):
    with pytest.raises(ValueError) as e:
        load_segmenter("wordpiece", "x")
    assert str(e.value) == "unknown subword scheme 'wordpiece', expected one of ('bpe', 'spm', 'none')"
    with pytest.raises(ValueError) as e:
        load_segmenter("spm", "")
    assert str(e.value) == "--subword spm needs --subword-model or --learn-subword"
    missing = str(tmp_path / "nope.codes")
    with pytest.raises(FileNotFoundError) as e:
        load_segmenter("bpe", missing)
    assert str(e.value) == f"subword model {missing} does not exist"
    assert type(load_segmenter("none")) is Segmenter


# ------------------------------------------------------------------------------------------ segmentation guard


class _Fixed(Segmenter):
    def __init__(self, pieces):
        self.pieces = pieces

    def _segment(self, words):
        return self.pieces


@pytest.mark.parametrize("pieces,message", [
    ([["a"]], "subword model returned 1 segmentations for 2 words"),
    ([["a"], []], "subword model segmented word 'y' into []"),
    ([["a"], ["b c"]], "subword model segmented word 'y' into ['b c']"),
    ([["a"], ["b", "c\n"]], "subword model segmented word 'y' into ['b', 'c\\n']"),
])
def test_segment_guard_names_the_bad_word(pieces, message):
    with pytest.raises(ValueError) as e:
        _Fixed(pieces).segment(["x", "y"])
    assert str(e.value) == message
    assert _Fixed([["a@@", "b"], ["c"]]).segment(["ab", "c"]) == [["a@@", "b"], ["c"]]


# ------------------------------------------------------------------------------------------------- BPE codes


def test_bpe_codes_layouts(tmp_path):
    """The '#version:' header is optional; blank or space-only lines between or after the merges are skipped
    (subword-nmt itself would exit the process on a blank line between two merges)."""
    words = ["cat", "sat", "ca", "The"]
    expected = [["cat"], ["sat"], ["c@@", "a"], ["The"]]
    assert BpeSegmenter(_write(tmp_path / "a", CODES)).segment(words) == expected
    spaced = "#version: 0.2\n\nc a\n\nca t</w>\ns a\n \nsa t</w>\r\nT h\nTh e</w>\n \n\n"
    assert BpeSegmenter(_write(tmp_path / "b", spaced)).segment(words) == expected
    # without a header (subword-nmt's format 0.1: the end-of-word mark is a symbol of its own), both merges count
    plain = BpeSegmenter(_write(tmp_path / "c", "c a\nca t</w>\n"))
    assert plain.segment(["cat", "cab"]) == [["ca@@", "t"], ["ca@@", "b"]]
    assert plain.bpe.bpe_codes == {("c", "a"): 0, ("ca", "t</w>"): 1}
    # a merge made of the letter X only (no character of the codes is stripped but newlines, spaces and \r)
    assert BpeSegmenter(_write(tmp_path / "d", "#version: 0.2\nX X\n")).segment(["XXX", "XX"]) == [
        ["XX@@", "X"], ["X@@", "X"]]


def test_bpe_codes_errors(tmp_path):
    empty = ("{} is an empty BPE codes file (codes learned without any merge still have their '#version:' line): "
             "learn the codes again")
    no_merge = ("{} holds no merge operation (only its '#version:' line), so every word would be split into "
                "characters: learn the codes again with merges > 0 on more text")
    for name, text, message in (("empty", "", empty), ("blank", " \n\n", empty),
                                ("header", "#version: 0.2\n", no_merge),
                                ("header-blank", "#version: 0.2\n \n\n", no_merge)):
        path = _write(tmp_path / name, text)
        with pytest.raises(ValueError) as e:
            BpeSegmenter(path)
        assert str(e.value) == message.format(path)
    long = "x" * 70 + " y z"
    for name, text, line, got in (
            ("long", f"#version: 0.2\nc a\n{long}\n", 3, "x" * 60),
            ("crlf", "#version: 0.2\r\nc a\r\nabc\r\n", 3, "abc\r"),  # the last line keeps its \r
            ("tab", "#version: 0.2\nc a\n\t\n", 3, "\t"),  # only spaces and \r make a line blank
            ("blanks", "\n\nc a\n\nbad\n", 5, "bad"),  # the number counts the skipped blank lines
            ("no-header", "c a\nc\n", 2, "c")):
        path = _write(tmp_path / name, text)
        with pytest.raises(ValueError) as e:
            BpeSegmenter(path)
        assert str(e.value) == f"{path}:{line}: not a subword-nmt BPE codes file ({CODES_RULE}, got {got!r})"


def test_bpe_codes_not_utf8(tmp_path, spm_model):
    path = _write(tmp_path / "spm-like", b"\n\x05hello\xff")
    with pytest.raises(ValueError) as e:
        BpeSegmenter(path)
    assert str(e.value) == (f"{path} is not a subword-nmt BPE codes file (not UTF-8 text at byte 7; a sentencepiece "
                            f"model? use --subword spm)")
    path = _write(tmp_path / "latin1", "#version: 0.2\nc a\nstra\u00dfe e\n".encode("latin-1"))
    with pytest.raises(ValueError) as e:
        BpeSegmenter(path)
    assert str(e.value) == f"{path} is not a subword-nmt BPE codes file (not UTF-8 text at byte 22)"
    with pytest.raises(ValueError, match=r"not UTF-8 text at byte \d+; a sentencepiece model\? use --subword spm\)$"):
        load_segmenter("bpe", spm_model)


def test_bpe_segmentation_is_memoized_within_cache_size(tmp_path):
    seg = BpeSegmenter(_write(tmp_path / "codes", CODES))
    calls = []
    segment_tokens = seg.bpe.segment_tokens
    seg.bpe.segment_tokens = lambda tokens: calls.append(tokens) or segment_tokens(tokens)
    assert seg.segment(["cat", "cats", "cat"]) == [["cat"], ["ca@@", "t@@", "s"], ["cat"]]
    assert seg.segment(["cats"]) == [["ca@@", "t@@", "s"]]
    assert calls == [["cat"], ["cats"]]
    seg.cache_size = 2
    seg.segment(["sat"])  # the cache is full: cleared before "sat" goes in
    assert seg._cache == {"sat": ["sat"]}
    seg.segment(["The", "Th"])  # "The" fills it, "Th" clears it again
    assert seg._cache == {"Th": ["T@@", "h"]} and calls[-2:] == [["The"], ["Th"]]


# ------------------------------------------------------------------------------------------------ sentencepiece


def test_spm_one_word_start_per_word(spm_model):
    """Words that sentencepiece's normalizer splits (U+200B becomes a space, U+00B4 a space and a combining mark)
    are encoded again from their normalized form without the spaces; a word it deletes is one '▁' piece."""
    seg = SpmSegmenter(spm_model)
    words = ["cat\u200bsat", "zero\u200bwidth", "don\u00b4t", "cat", "\u200b", "cats"]
    assert seg.segment(words) == [["▁cat", "s", "at"], ["▁", "z", "e", "r", "o", "wi", "d", "t", "h"],
                                  ["▁d", "o", "\u0144", "t"], ["▁cat"], ["▁"], ["▁cat", "s"]]
    assert seg.segment([]) == []


class _FakeSp:
    """sentencepiece's interface with given normalizations and encodings (the cases no NFKC model yields)."""

    def __init__(self, normalized, encoded):
        self.normalized, self.encoded = normalized, encoded

    def normalize(self, word):
        return self.normalized[word]

    def encode(self, text, out_type):
        assert out_type is str
        return [self.encoded[t] for t in text] if isinstance(text, list) else self.encoded[text]


def _fake_segmenter(normalized, encoded):
    seg = SpmSegmenter.__new__(SpmSegmenter)
    seg.sp = _FakeSp(normalized, encoded)
    return seg


def test_spm_pieces_merged_into_one_word_start_as_a_last_resort():
    seg = _fake_segmenter(
        # a normalizer that keeps spaces (no whitespace escaping), and one that a model without the dummy prefix uses
        {"a\u200bb": "\u2581a b", "cat": "cat", "c": "c"},
        {"a\u200bb": ["\u2581a", "\u2581b"], "ab": ["\u2581ab"], "cat": ["c", "at"], "c": ["c"]})
    assert seg.segment(["a\u200bb"]) == [["\u2581ab"]]
    # joined "xyz" still encodes to two word starts: one piece starting with ▁ and the rest without
    seg.sp.normalized["xyz"] = "\u2581xyz"
    seg.sp.encoded["xyz"] = ["\u2581\u2581x", "\u2581y", "\u2581", "z\u2581"]
    assert seg._one_word("xyz") == ["\u2581x", "y", "z\u2581"]
    # a model without the dummy prefix: no piece starts a word, the first one gets the ▁
    assert seg.segment(["cat"]) == [["\u2581c", "at"]]
    assert seg.segment(["c"]) == [["\u2581c"]]


def test_spm_model_checks(tmp_path, spm_model):
    codes = _write(tmp_path / "codes", CODES)
    with pytest.raises(RuntimeError) as raw:
        sentencepiece.SentencePieceProcessor(model_file=codes)
    with pytest.raises(ValueError) as e:
        load_segmenter("spm", codes)
    assert str(e.value) == (f"{codes} is not a sentencepiece model ({str(raw.value).strip()}; BPE codes? use "
                            f"--subword bpe)")
    data = Path(spm_model).read_bytes()
    fields = sorted(_protobuf_fields(data))
    assert fields[:3] == [1, 2, 3]
    pieces = SpmSegmenter(spm_model).sp.get_piece_size()
    starts, i = {}, 0  # the offset of each top-level field, in order: 1 (the pieces, repeated), 2, 3...
    while i < len(data):
        number = data[i] >> 3
        starts.setdefault(number, i)
        j, n, shift = i + 1, 0, 0
        while True:
            b = data[j]
            j, n, shift = j + 1, n | (b & 0x7F) << shift, shift + 7
            if not b & 0x80:
                break
        i = j + n
    for cut, missing in ((starts[2], "trainer_spec nor normalizer_spec"), (starts[3], "normalizer_spec")):
        path = _write(tmp_path / f"cut{cut}.model", data[:cut])  # parses: its first pieces, no spec
        with pytest.raises(ValueError) as e:
            SpmSegmenter(path)
        assert str(e.value) == (f"{path} is a truncated sentencepiece model ({pieces} pieces, no {missing}): copy or "
                                f"train it again")


@pytest.mark.parametrize("data,fields", [
    (b"", set()),
    (b"\x08\x96\x01\x10\x01", {1, 2}),  # varints, one of two bytes
    (b"\x88\x01\x00", {17}),  # a key of two bytes
    (b"\x88\x80\x01\x00", {2049}),  # a key of three bytes
    (b"\x12\xac\x02" + b"\x08\x01" * 150 + b"\x18\x01", {2, 3}),  # a length of two bytes: 300
    (b"\x09" + b"\x20\x01" * 3 + b"\x18\x20" + b"\x18\x02", {1, 3}),  # fixed64: 8 bytes skipped
    (b"\x15\x18\x01\x18\x01\x20\x01", {2, 4}),  # fixed32: 4 bytes skipped
    (b"\x15\x00\x00\x00\x00", {2}),
    (b"\x08\x01\x10\x80", {1}),  # a truncated varint value
    (b"\x08\x01\x80", {1}),  # a truncated key
    (b"\x08\x01\x12\x80", {1}),  # a truncated length
    (b"\x08\x01\x12\x05ab", {1}),  # a length past the end
    (b"\x08\x01\x11\x00", {1}),  # a fixed64 past the end
    (b"\x08\x01\x0b\x10\x01", {1}),  # wire type 3 (a group): stop
    (b"\x08\x01\x0c\x10\x01", {1}),  # wire type 4
])
def test_protobuf_fields(data, fields):
    assert _protobuf_fields(data) == fields


# -------------------------------------------------------------------------------------------------- learning


def test_learn_bpe_codes_and_quiet(tmp_path, capsys):
    lines = ["the cat sat on the mat .", "the dog sat on the log ."] * 3
    path = learn_model("bpe", iter(lines), 50, str(tmp_path / "codes"))
    assert path == str(tmp_path / "codes")
    assert Path(path).read_text(encoding="utf-8") == (
        "#version: 0.2\nt h\nth e</w>\na t</w>\ns at</w>\no n</w>\no g</w>\nm at</w>\nl og</w>\nd og</w>\nc at</w>\n")
    assert "no pair has frequency >= 2. Stopping" in capsys.readouterr().err
    assert learn_model("bpe", iter(lines), 50, str(tmp_path / "quiet"), quiet=True) == str(tmp_path / "quiet")
    assert capsys.readouterr().err == ""
    assert Path(tmp_path / "quiet").read_text(encoding="utf-8") == Path(path).read_text(encoding="utf-8")
    assert sorted(os.listdir(tmp_path)) == ["codes", "quiet"]


def test_learn_bpe_writes_utf8_in_an_ascii_locale(tmp_path):
    """The same codes in this process and in one under an ASCII locale (called here too, so that mutation testing,
    which maps each test to the functions it calls in-process, runs this test against learn_model's mutants)."""
    from support import ascii_locale_env

    expected = "#version: 0.2\n\u00df e</w>\nt r\ntr a\n"
    learn_model("bpe", iter(["stra\u00dfe stra\u00dfe \u00fcbel"]), 3, str(tmp_path / "here"), quiet=True)
    assert (tmp_path / "here").read_text(encoding="utf-8") == expected
    out = tmp_path / "codes"
    code = (f"from syntax_nmt.annotate.subwords import learn_model\n"
            f"learn_model('bpe', iter(['stra\\u00dfe stra\\u00dfe \\u00fcbel']), 3, {str(out)!r}, quiet=True)\n")
    subprocess.run([sys.executable, "-c", code], env=ascii_locale_env(), check=True, capture_output=True)
    assert out.read_text(encoding="utf-8") == expected


def test_learn_spm_settings_and_files(tmp_path, monkeypatch, capfd):
    seen = []
    train = sentencepiece.SentencePieceTrainer.train

    def spy(**kwargs):
        seen.append(dict(kwargs))
        return train(**kwargs)

    monkeypatch.setattr(sentencepiece.SentencePieceTrainer, "train", spy)
    monkeypatch.chdir(tmp_path)
    os.mkdir("models")
    # a vocabulary size far above what the corpus holds is a soft limit
    assert learn_model("spm", iter(CORPUS + [""]), 500, "models/sp") == "models/sp.model"
    assert sorted(os.listdir("models")) == ["sp.model", "sp.vocab"]
    assert sorted(os.listdir(".")) == ["models"]
    assert capfd.readouterr().err == ""
    kwargs = seen[0]
    assert kwargs.pop("model_prefix") == f"models/sp.tmp-{os.getpid()}"
    assert list(kwargs.pop("sentence_iterator")) == []  # consumed, without the empty line
    assert kwargs == dict(vocab_size=500, model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
                          input_sentence_size=2_000_000, shuffle_input_sentence=True, minloglevel=2)
    seg = SpmSegmenter("models/sp.model")
    assert seg.sp.get_piece_size() < 500
    assert seg.sp.piece_to_id("\u2581") != seg.sp.unk_id()


def test_learn_model_errors(tmp_path):
    with pytest.raises(ValueError) as e:
        learn_model("spm", iter(CORPUS), 5, str(tmp_path / "small.model"))
    assert str(e.value) == ("learning a sentencepiece model of size 5 failed: Vocabulary size is smaller than "
                            "required_chars. 5 vs 18. Increase vocab_size or decrease character_coverage with "
                            "--character_coverage option.")
    with pytest.raises(ValueError, match=r"^learning a sentencepiece model of size 10 failed: INTERNAL: "
                                         r"src/trainer_interface\.cc\(\d+\) \[!sentences_\.empty\(\)\]$"):
        learn_model("spm", iter(["", ""]), 10, str(tmp_path / "empty.model"))
    with pytest.raises(ValueError) as e:
        learn_model("none", iter(CORPUS), 10, str(tmp_path / "none"))
    assert str(e.value) == "cannot learn a subword model for scheme 'none'"
    assert os.listdir(tmp_path) == []
