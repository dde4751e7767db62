"""Target-side syntax through the real command lines (issue 36): the target annotated by syntax-nmt-annotate with
a parser of its own (the rule-based spaCy pipeline of the tests), its streams binarized beside the target, the
target interleaved with its tags and stripped again, and the factor accuracy against the parser."""

import json

import pytest

from conftest import run_cli
from support.annotate import LEXICON, read, write
from syntax_nmt.annotate.cli import main as annotate_main
from syntax_nmt.annotate.cli import build_parser
from syntax_nmt.annotate.subwords import word_starts
from syntax_nmt.annotate.target_tags import interleave, is_tag, strip, strip_generate_line
from syntax_nmt.evaluation.evaluate import cli_main as evaluate_cli
from syntax_nmt.evaluation.syntax_accuracy import factor_accuracy

SOURCE = ["The cat sat on the mat .", "We ran quickly .", "dogs run", "it rains ."]
TARGET = ["the dogs sat on a mat .", "a cat ran .", "we stay", "The dog rains quickly ."]


def annotate_cli(argv):
    assert annotate_main(build_parser().parse_args(argv)) == 0


@pytest.fixture
def annotated(tmp_path, spacy_model, codes):
    src, tgt = write(tmp_path / "train.en", SOURCE), write(tmp_path / "train.de", TARGET)
    common = ["--pretokenized", "--spacy-model", spacy_model, "--subword", "bpe", "--subword-model", codes]
    # in this process: the rule pipeline's component is registered here (support.annotate)
    annotate_cli(["--source", src, "--target", tgt, "--src-lang", "en", "--tgt-lang", "de", *common,
                  "-o", str(tmp_path / "ann" / "train")])
    # the target's own parse: the same annotator, the target as its input, the output prefix PREFIX.tgt
    annotate_cli(["--source", tgt, "--src-lang", "de", *common, "-o", str(tmp_path / "ann" / "train.tgt")])
    return tmp_path / "ann" / "train"


def test_the_target_annotation_is_aligned_with_the_target_subwords(annotated):
    prefix = str(annotated)
    target = read(prefix + ".de")
    assert read(prefix + ".tgt.de") == target  # the same subwords, line for line
    for name in ("pos", "dep", "subword"):
        rows = read(f"{prefix}.tgt.{name}")
        assert [len(r.split()) for r in rows] == [len(t.split()) for t in target]
    # the pieces of a word carry its tag, and the tags are the parser's (the rule pipeline's lexicon)
    for line, tags, positions in zip(target, read(prefix + ".tgt.pos"), read(prefix + ".tgt.subword")):
        words, word = [], ""
        for piece, tag, pos in zip(line.split(), tags.split(), positions.split()):
            word += piece[:-2] if piece.endswith("@@") else piece
            if not piece.endswith("@@"):
                words.append((word, tag))
                word = ""
        assert all(tag == LEXICON.get(w.lower(), "X") for w, tag in words), words
    assert any("@@" in t for t in target)  # words of several pieces


def test_interleaved_tags_precede_every_word_and_strip_back(annotated, tmp_path):
    prefix = str(annotated)
    out = tmp_path / "tagged" / "train.de"
    run_cli("syntax-nmt-target-tags", "interleave", "--prefix", prefix, "--tgt-lang", "de", "--tag", "pos",
            "-o", out)
    tagged = read(out)
    target = read(prefix + ".de")
    assert [strip(t) for t in tagged] == target
    for line, pos, positions in zip(tagged, read(prefix + ".tgt.pos"), read(prefix + ".tgt.subword")):
        tokens = line.split()
        words = [i for i, p in enumerate(positions.split()) if p in ("B", "O")]
        assert sum(is_tag(t) for t in tokens) == len(words)
        # each tag is followed by the first piece of the word it tags
        plain = [t for t in tokens if not is_tag(t)]
        for k, i in enumerate(words):
            at = [j for j, t in enumerate(tokens) if is_tag(t)][k]
            assert tokens[at] == f"\u27e8{pos.split()[i]}\u27e9" and tokens[at + 1] == plain[i]
    # through fairseq-generate's output: H and D lines lose their tags, the rest is untouched
    gen = write(tmp_path / "gen.txt", [f"S-0\tx", f"H-0\t-0.5\t{tagged[0]}", f"D-0\t-0.5\t{tagged[0]}",
                                       "P-0\t-0.1 -0.2", f"{tagged[1]}"])
    proc = run_cli("syntax-nmt-target-tags", "strip", gen)
    assert proc.stdout.splitlines() == ["S-0\tx", f"H-0\t-0.5\t{target[0]}", f"D-0\t-0.5\t{target[0]}",
                                        "P-0\t-0.1 -0.2", target[1]]


def test_a_target_word_shaped_like_a_tag_is_refused(annotated, tmp_path):
    prefix = str(annotated)
    lines = read(prefix + ".de")
    lines[2] = "\u27e8x\u27e9 " + lines[2]
    write(prefix + ".de", lines)
    write(prefix + ".tgt.de", lines)
    for name in ("pos", "subword"):
        rows = read(f"{prefix}.tgt.{name}")
        rows[2] = ("X " if name == "pos" else "O ") + rows[2]
        write(f"{prefix}.tgt.{name}", rows)
    proc = run_cli("syntax-nmt-target-tags", "interleave", "--prefix", prefix, "--tgt-lang", "de",
                   "-o", tmp_path / "t.de", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"syntax-nmt-target-tags: error: {prefix}.de:3: the target token '\u27e8x\u27e9' has the form of a tag "
        f"(\u27e8...\u27e9)"]
    assert not (tmp_path / "t.de").exists()


def test_strip_and_interleave_units():
    assert interleave(["fem@@", "me", "la"], ["NOUN", "NOUN", "DET"], ["B", "E", "O"]) == [
        "\u27e8NOUN\u27e9", "fem@@", "me", "\u27e8DET\u27e9", "la"]
    assert strip("fem\u27e8NOUN\u27e9 me \u27e8DET\u27e9  la") == "fem me la"  # a tag glued by BPE removal too
    assert strip_generate_line("F-3\tpos\tDET NOUN") == "F-3\tpos\tDET NOUN"
    # the words of a hypothesis, as F- lines count them (one tag per word)
    assert word_starts(["fem@@", "me", "la", "x@@", "y@@", "z"], "bpe") == [True, False, True, True, False, False]
    assert word_starts(["\u2581la", "\u2581fem", "me"], "spm") == [True, True, False]
    assert word_starts(["a@@", "b"], "none") == [True, True]
    with pytest.raises(ValueError, match="3 tokens, 2 tags"):
        interleave(["a", "b", "c"], ["X", "Y"], ["O", "O", "O"])


def test_factor_accuracy_against_the_parser(tmp_path, spacy_model, capsys):
    hyps = ["the cat sat", "we ran quickly .", "dogs stay"]
    gold = [[LEXICON[w] for w in h.split()] for h in hyps]
    predicted = [["DET", "NOUN", "NOUN"], ["PRON", "VERB", "ADV", "PUNCT"], ["VERB", "VERB"]]  # 7 of 9 right
    lines = []
    for i, (h, p) in enumerate(zip(hyps, predicted)):
        lines += [f"F-{i}\tpos\t{' '.join(p)}", f"S-{i}\tx", f"H-{i}\t-1.0\t{h}"]
    gen = write(tmp_path / "gen.txt", lines)
    result = factor_accuracy(gen, spacy_model)
    assert result == {"pos": {"accuracy": 100.0 * 7 / 9, "words": 9, "correct": 7}}
    assert sum(a == b for p, g in zip(predicted, gold) for a, b in zip(p, g)) == 7
    # the same predictions as interleaved tags
    tagged = [" ".join(f"\u27e8{t}\u27e9 {w}" for t, w in zip(p, h.split())) for h, p in zip(hyps, predicted)]
    gen2 = write(tmp_path / "gen2.txt", [f"H-{i}\t-1.0\t{t}" for i, t in enumerate(tagged)])
    assert factor_accuracy(gen2, spacy_model, strip_target_tags=True) == result
    out = tmp_path / "acc.json"
    evaluate_cli(["factors", "--gen", gen, "--parser", spacy_model, "--output", str(out)])  # in this process, as above
    assert json.loads(out.read_text())["pos"]["correct"] == 7
    # a sentence whose tags are not one per word
    bad = write(tmp_path / "bad.txt", [f"F-0\tpos\tDET", "H-0\t-1.0\tthe cat"])
    with pytest.raises(SystemExit) as e:
        evaluate_cli(["factors", "--gen", bad, "--parser", spacy_model])
    assert e.value.code == 2 and "sentence 0: 1 pos tags for 2 words" in capsys.readouterr().err
