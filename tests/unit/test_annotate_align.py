"""Unit tests of the annotation building blocks: streams, multi-root, escaping, subwords."""

import pytest

from syntax_nmt.annotate.parsed import check_tree, resolve_roots
from syntax_nmt.annotate.align import align_streams, case_tag, subword_tags
from syntax_nmt.annotate.subwords import (
    BpeSegmenter,
    Segmenter,
    SpmSegmenter,
    escape_word,
    learn_model,
    load_segmenter,
)
from syntax_nmt.syntax.conllu import Sentence

# "The cat sat ." -- The->cat, cat->sat, sat=root, .->sat
CAT = Sentence(["The", "cat", "sat", "."], ["DET", "NOUN", "VERB", "PUNCT"], ["DT", "NN", "VBD", "."],
               [2, 3, 0, 3], ["det", "nsubj", "root", "punct"])

# A tiny hand-written BPE codes file (subword-nmt format 0.2; "</w>" marks word ends).
CODES = "#version: 0.2\nc a\nca t</w>\ns a\nsa t</w>\nT h\nTh e</w>\n"
CORPUS = ["the cat sat on the mat .", "the dog sat on the log .", "a cat and a dog ran .",
          "the cats ran to the mats .", "dogs and cats sat ."] * 10


@pytest.mark.parametrize("word,binary,rich", [
    ("Paris", "C", "Cap"), ("paris", "L", "lower"), ("NATO", "C", "UPPER"), ("U.S.", "C", "UPPER"),
    ("I", "C", "Cap"), ("McDonald", "C", "Cap"), ("iPhone", "L", "other"), ("42", "L", "other"),
    (",", "L", "other"), ("Über", "C", "Cap"), ("straße", "L", "lower"), ("ÉTÉ", "C", "UPPER"),
    ("東京", "L", "other"), ("＠＠", "L", "other"),
])
def test_case_tag(word, binary, rich):
    assert case_tag(word, "binary") == binary
    assert case_tag(word, "rich") == rich


def test_subword_tags():
    assert subword_tags(1) == ["O"]
    assert subword_tags(2) == ["B", "E"]
    assert subword_tags(4) == ["B", "M", "M", "E"]
    with pytest.raises(ValueError):
        subword_tags(0)


def test_align_streams_literal():
    pieces = [["The"], ["c@@", "at"], ["s@@", "a@@", "t"], ["."]]
    out = align_streams(CAT, pieces)
    assert out["pos"] == ["DET", "NOUN", "NOUN", "VERB", "VERB", "VERB", "PUNCT"]
    assert out["case"] == ["C", "L", "L", "L", "L", "L", "L"]
    assert out["subword"] == ["O", "B", "E", "B", "M", "E", "O"]
    # positions: The=0 c@@=1 at=2 s@@=3 a@@=4 t=5 .=6; heads: cat@1, sat@3
    assert out["head"] == ["1", "2", "1", "0", "0", "0", "-3"]
    assert out["dep"] == ["det", "nsubj", "nsubj", "root", "root", "root", "punct"]
    xpos = align_streams(CAT, pieces, pos_tagset="xpos", case="rich")
    assert xpos["pos"] == ["DT", "NN", "NN", "VBD", "VBD", "VBD", "."]
    assert xpos["case"] == ["Cap", "lower", "lower", "lower", "lower", "lower", "other"]


def test_align_streams_head_left_and_empty_tags():
    # "sat" first, head to the left: heads point to the FIRST piece of the head word
    s = Sentence(["sat", "cats"], ["VERB", ""], ["_", "N N"], [0, 1], ["ROOTX", ""])
    out = align_streams(s, [["s@@", "at"], ["ca@@", "t@@", "s"]])
    assert out["head"] == ["0", "0", "-2", "-3", "-4"]
    assert out["pos"] == ["VERB", "VERB", "_", "_", "_"]  # empty tag -> "_"
    assert align_streams(s, [["sat"], ["cats"]], pos_tagset="xpos")["pos"] == ["_", "N_N"]
    assert align_streams(Sentence([], [], [], [], []), []) == {k: [] for k in ("pos", "case", "subword", "head", "dep")}


def test_align_streams_rejects_bad_pieces():
    with pytest.raises(ValueError):
        align_streams(CAT, [["The"], ["cat"], ["sat"]])
    with pytest.raises(ValueError):
        align_streams(CAT, [["The"], [], ["sat"], ["."]])


def test_multi_root_policies():
    s = Sentence(["It", "rains", ".", "We", "stay", "."], ["PRON", "VERB", "PUNCT"] * 2, ["_"] * 6,
                 [2, 0, 2, 5, 0, 5], ["nsubj", "root", "punct"] * 2)
    assert resolve_roots(Sentence(**vars(s)), "forest").heads == [2, 0, 2, 5, 0, 5]
    attached = resolve_roots(Sentence(**{k: list(v) if isinstance(v, list) else v for k, v in vars(s).items()}),
                             "attach")
    assert attached.heads == [2, 0, 2, 5, 2, 5]
    assert attached.deprels == ["nsubj", "root", "punct", "nsubj", "parataxis", "punct"]
    with pytest.raises(ValueError):
        resolve_roots(s, "merge")


def test_check_tree():
    check_tree(CAT)
    with pytest.raises(ValueError, match="cycle"):
        check_tree(Sentence(["a", "b", "c"], ["X"] * 3, ["_"] * 3, [2, 3, 1], ["dep"] * 3))
    with pytest.raises(ValueError, match="outside"):
        check_tree(Sentence(["a"], ["X"], ["_"], [5], ["dep"]))


@pytest.mark.parametrize("word,scheme,expected", [
    ("a@@b", "bpe", "a＠＠b"), ("@@", "bpe", "＠＠"), ("@@@", "bpe", "＠＠@"), ("e@mail", "bpe", "e@mail"),
    ("a|b", "bpe", "a|b"), ("▁x", "bpe", "▁x"),
    ("▁x", "spm", "_x"), ("a▁▁b", "spm", "a__b"), ("a@@b", "spm", "a@@b"), ("|", "spm", "|"),
    ("a@@b", "none", "a@@b"), ("▁", "none", "▁"),
])
def test_escape_word(word, scheme, expected):
    assert escape_word(word, scheme) == expected


def test_bpe_segmenter_hand_written_codes(tmp_path):
    codes = tmp_path / "codes"
    codes.write_text(CODES, encoding="utf-8")
    seg = load_segmenter("bpe", str(codes))
    assert isinstance(seg, BpeSegmenter)
    words = ["The", "cat", "sat", "cats", "a|b", escape_word("x@@y", "bpe")]
    assert seg.segment(words) == [
        ["The"], ["cat"], ["sat"], ["ca@@", "t@@", "s"], ["a@@", "|@@", "b"], ["x@@", "＠@@", "＠@@", "y"]]
    s = Sentence(["The", "cats", "sat"], ["DET", "NOUN", "VERB"], ["_"] * 3, [2, 3, 0], ["det", "nsubj", "root"])
    out = align_streams(s, seg.segment(s.words))
    assert out["subword"] == ["O", "B", "M", "E", "O"]
    assert out["head"] == ["1", "3", "2", "1", "0"]


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("spm") / "tiny.model"
    learn_model("spm", iter(CORPUS), 30, str(path), spm_model_type="bpe")
    return str(path)


def test_spm_segmenter_tiny_model(spm_model):
    seg = load_segmenter("spm", spm_model)
    assert isinstance(seg, SpmSegmenter)
    s = Sentence(["The", "cats", "sat", "on", "mats", "."], ["DET", "NOUN", "VERB", "ADP", "NOUN", "PUNCT"],
                 ["_"] * 6, [2, 3, 0, 5, 3, 3], ["det", "nsubj", "root", "case", "obl", "punct"])
    pieces = seg.segment(s.words)
    assert pieces == [["▁", "T", "he"], ["▁cat", "s"], ["▁s", "at"], ["▁", "o", "n"], ["▁", "m", "at", "s"], ["▁."]]
    out = align_streams(s, pieces)
    assert out["subword"] == ["B", "M", "E", "B", "E", "B", "E", "B", "M", "E", "B", "M", "M", "E", "O"]
    # first pieces: The@0 cats@3 sat@5 on@7 mats@10 .@14
    assert out["head"] == ["3", "2", "1", "2", "1", "0", "0", "3", "2", "1", "-5", "-6", "-7", "-8", "-9"]


def test_spm_word_deleted_by_normalizer_keeps_a_piece(spm_model):
    # U+200B is removed by sentencepiece's normalizer: the word still gets one piece
    assert load_segmenter("spm", spm_model).segment(["cat", "\u200b"]) == [["▁cat"], ["▁"]]


def test_learn_bpe_joint(tmp_path):
    path = learn_model("bpe", iter(CORPUS), 8, str(tmp_path / "codes"))
    merges = (tmp_path / "codes").read_text(encoding="utf-8").splitlines()
    assert merges[0].startswith("#version") and len(merges) == 9
    seg = load_segmenter("bpe", path)
    assert all(p for ps in seg.segment(["the", "cats", "zebra"]) for p in ps)


def test_segmenter_guard_rejects_empty_pieces():
    class Broken(Segmenter):
        def _segment(self, words):
            return [["a@@", ""] for _ in words]

    with pytest.raises(ValueError, match="segmented word"):
        Broken().segment(["ab"])
    assert Segmenter().segment(["a", "b"]) == [["a"], ["b"]]
    with pytest.raises(ValueError):
        load_segmenter("bpe", None)
