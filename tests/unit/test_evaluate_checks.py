"""``syntax-nmt-evaluate`` and the paired tests on the exact inputs of issue 46: what crashed, what was silent,
what the statistics got wrong, and the errors that named nothing."""

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
import spacy
from spacy.language import Language

from syntax_nmt.evaluation import evaluate, scoring, syntax_accuracy
from syntax_nmt.evaluation import significance as sig
from support.annotate import LEXICON, save_rule_pipeline  # noqa: F401  (registers the rule parser)

REFS = ["Die E-Mail kam um 10 Uhr an.", "Wir mögen grüne Äpfel.", "Sie gingen früh nach Hause.",
        "Der Hund schläft im Garten.", "Es regnet seit Tagen.", "Das Haus ist sehr alt."]
BASE = ["Die Post kam an.", "Wir mögen Äpfel.", "Sie gingen.", "Ein Hund schläft.", "Es regnet.", "Das Haus ist alt."]
SYS = ["Die E-Mail kam um 10 Uhr.", "Wir mögen grüne Äpfel.", "Sie gingen nach Hause.",
       "Der Hund schläft im Garten.", "Es regnet seit Tagen.", "Das Haus ist alt."]
OPEN, CLOSE = "\u27e8", "\u27e9"


def write(path, lines):
    Path(path).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(path)


def run_cli(capsys, argv):
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        evaluate.cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return e.value.code, err.splitlines()


# ------------------------------------------------------------------------------------------- crashes
def test_factors_of_an_empty_hypothesis_without_an_f_line(tmp_path, spacy_model):
    """fairseq-generate prints no F- line for an empty hypothesis: a KeyError (evaluate.py:143)."""
    gen = write(tmp_path / "gen.out", ["F-0\tpos\tDET NOUN", "H-0\t-1.0\tthe cat", "H-1\t-1.0\t"])
    assert syntax_accuracy.factor_accuracy(gen, spacy_model) == {"pos": {"accuracy": 100.0, "words": 2, "correct": 2}}


def test_significance_with_an_empty_reference_is_refused(tmp_path, capsys):
    """An empty reference and empty hypotheses: an IndexError in sacreBLEU's statistics."""
    ref, base, system = (write(tmp_path / n, []) for n in ("ref", "base", "sys"))
    code, err = run_cli(capsys, ["significance", "--ref-raw", ref, "--baseline", base, system])
    assert (code, err) == (2, [f"syntax-nmt-evaluate: error: {ref} is empty: no test sentence to resample"])


def test_score_writes_its_json_atomically(tmp_path, monkeypatch):
    """A disk full while the score is written left an empty .json that the recipe took for done."""
    ref_raw, ref_tok = write(tmp_path / "ref.raw", REFS), write(tmp_path / "ref.tok", REFS)
    real_dump = json.dump

    def full(obj, f, **kw):
        f.write("{")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(json, "dump", full)
    with pytest.raises(OSError, match="No space left"):
        scoring.score_lines(SYS, SYS, ref_raw, ref_tok, str(tmp_path / "sys"))
    assert not (tmp_path / "sys.json").exists()
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    monkeypatch.setattr(json, "dump", real_dump)
    scoring.score_lines(SYS, SYS, ref_raw, ref_tok, str(tmp_path / "sys"))
    assert json.loads((tmp_path / "sys.json").read_text())["sentences"] == 6


# ------------------------------------------------------------------------------------------- silent
def test_factor_accuracy_after_sentencepiece(tmp_path, spacy_model):
    """``--remove-bpe sentencepiece`` glues each interleaved tag to the word before it (the tag is a piece without
    ``▁``): the tag was read as part of that word (33 % where every tag is right)."""
    hyp = f"{OPEN}DET{CLOSE} the{OPEN}NOUN{CLOSE} cat{OPEN}VERB{CLOSE} sat"
    gen = write(tmp_path / "gen.out", [f"H-0\t-1.0\t{hyp}"])
    assert syntax_accuracy.factor_accuracy(gen, spacy_model, strip_target_tags=True) == {
        "pos": {"accuracy": 100.0, "words": 3, "correct": 3}}


@Language.component("syntax_nmt_test_merge_first_two")
def merge_first_two(doc):
    """A pipeline step that changes the tokenization: the first two words become one."""
    if len(doc) > 2:
        with doc.retokenize() as r:
            r.merge(doc[0:2])
    return doc


def test_factor_accuracy_refuses_a_parser_that_changes_the_words(tmp_path):
    """The pipeline merged two words and ``zip`` silently paired every later tag with the wrong word."""
    nlp = spacy.blank("en")
    nlp.add_pipe("syntax_nmt_test_merge_first_two")
    nlp.add_pipe("syntax_nmt_test_rule_parser", name="parser")
    nlp.to_disk(tmp_path / "merging")
    hyps = ["the cat sat on the mat .", "we ran quickly ."]
    lines = []
    for i, h in enumerate(hyps):
        lines += [f"F-{i}\tpos\t{' '.join(LEXICON[w] for w in h.split())}", f"H-{i}\t-1.0\t{h}"]
    gen = write(tmp_path / "gen.out", lines)
    with pytest.raises(ValueError) as e:
        syntax_accuracy.factor_accuracy(gen, str(tmp_path / "merging"))
    assert str(e.value) == (f"{gen}: sentence 0: the spaCy pipeline changed the number of pre-tokenized words "
                            f"(7 -> 6)")


def _scored(tmp_path, name, hyps, ref_raw, ref_tok):
    os.makedirs(tmp_path / os.path.dirname(name), exist_ok=True)
    log = write(tmp_path / f"{name}.gen", [f"H-{i}\t-1\t{h}" for i, h in enumerate(hyps)])
    scoring.score(log, ref_raw, ref_tok, str(tmp_path / name), lang="de")
    return str(tmp_path / name)


def test_summary_keys_the_p_values_by_the_full_prefix(tmp_path):
    """``seed1/s`` and ``seed2/s`` both showed the second's p-value."""
    ref_raw, ref_tok = write(tmp_path / "ref.raw", REFS), write(tmp_path / "ref.tok", REFS)
    base = _scored(tmp_path, "base", BASE, ref_raw, ref_tok)
    good = _scored(tmp_path, "seed1/s", SYS, ref_raw, ref_tok)
    close = _scored(tmp_path, "seed2/s", BASE[:-1] + ["Das Haus ist sehr alt."], ref_raw, ref_tok)
    alone = {p: scoring.summary(ref_raw, [p], baseline=base, seed=5).splitlines()[2] for p in (good, close)}
    both = scoring.summary(ref_raw, [good, close], baseline=base, seed=5).splitlines()
    # two systems of one name: each is shown by its prefix
    p_of = {line.split()[0]: line.split()[2] for line in both[2:4]}
    assert p_of == {good: alone[good].split()[2], close: alone[close].split()[2]}
    assert p_of[good] != p_of[close]


def test_significance_refuses_subword_pieces_and_score_refuses_tags(tmp_path, capsys):
    """``significance`` took hypotheses with ``@@`` or ``▁`` pieces, which ``score`` refuses; ``score`` scored
    interleaved tags as words."""
    ref = write(tmp_path / "ref", REFS)
    base = write(tmp_path / "base", BASE)
    bpe = write(tmp_path / "bpe", SYS[:2] + ["Sie gin@@ gen nach Hause."] + SYS[3:])
    spm = write(tmp_path / "spm", ["\u2581Die \u2581E-Mail"] + SYS[1:])
    for path, line, piece in ((bpe, 3, "gin@@"), (spm, 1, "\u2581Die")):
        code, err = run_cli(capsys, ["significance", "--ref-raw", ref, "--baseline", base, path])
        assert (code, err) == (2, [f"syntax-nmt-evaluate: error: {path}:{line}: the hypothesis holds subword pieces "
                                   f"({piece!r}): score the output of fairseq-generate --remove-bpe (BPE) or "
                                   f"--remove-bpe sentencepiece"])
    tagged = write(tmp_path / "tagged.gen", [f"H-0\t-1\t{OPEN}DET{CLOSE} the {OPEN}NOUN{CLOSE} cat"])
    code, err = run_cli(capsys, ["score", "--gen", tagged, "--ref-raw", ref, "--ref-tok", ref, "--out-prefix",
                                 tmp_path / "t"])
    assert (code, err) == (2, [f"syntax-nmt-evaluate: error: {tagged}:1: the hypothesis holds target tags "
                               f"('{OPEN}DET{CLOSE}'): score it with --strip-target-tags"])
    assert not (tmp_path / "t.json").exists()


# ------------------------------------------------------------------------------------------- statistics
@pytest.mark.parametrize("test", ["bs", "ar", "bs-sacrebleu"])
def test_a_system_against_itself_is_not_significant(tmp_path, test):
    """Δ 0.00 gave p = 1/(n+1) (0.0010* bootstrap, 0.0001* AR), inherited from sacreBLEU's _compute_p_value."""
    ref, base = write(tmp_path / "ref", REFS), write(tmp_path / "base", BASE)
    rows = scoring.significance(ref, ("base", base), [("self", base)], test, seed=1)
    assert rows[1]["p_value"] == 1.0 and not sig.significant(rows[1]["p_value"])
    stats = sig.sentence_statistics("BLEU", [BASE], REFS)
    assert sig.paired_test("BLEU", stats, stats.copy(), test).p_value == 1.0
    assert sig.compare_systems({"a": [BASE], "b": [list(BASE)]}, REFS, "a", tests=(test,))["b"][test]["BLEU"] == 1.0


def test_the_library_refuses_three_seeds_against_one():
    """Only the CLI refused; the library returned a meaningless AR p (3-line sums swapped with 1-line sums)."""
    with pytest.raises(ValueError, match="sys has 3 seeds' translations, the baseline base 1"):
        sig.compare_systems({"base": [BASE], "sys": [SYS, SYS, BASE]}, REFS, "base", tests=("ar",))
    one = sig.sentence_statistics("BLEU", [BASE], REFS)
    three = sig.sentence_statistics("BLEU", [SYS, SYS, BASE], REFS)
    for metric in ("BLEU", "chrF"):
        one = sig.sentence_statistics(metric, [BASE], REFS)
        three = sig.sentence_statistics(metric, [SYS, SYS, BASE], REFS)
        with pytest.raises(ValueError, match="not of as many seeds"):
            sig.paired_test(metric, one, three, "ar")


# ------------------------------------------------------------------------------------------- errors
def test_a_trailing_comma_is_named(tmp_path, capsys):
    ref, base = write(tmp_path / "ref", REFS), write(tmp_path / "base", BASE)
    code, err = run_cli(capsys, ["significance", "--ref-raw", ref, "--baseline", f"{base},", base])
    assert (code, err) == (2, [f"syntax-nmt-evaluate: error: --baseline {base},: an empty file name (a comma too "
                               f"many?)"])
    code, err = run_cli(capsys, ["significance", "--ref-raw", ref, "--baseline", base, f"s={base},,{base}"])
    assert (code, err) == (2, [f"syntax-nmt-evaluate: error: s={base},,{base}: an empty file name (a comma too "
                               f"many?)"])


def test_factors_of_a_results_path_file_say_where_the_f_lines_went(tmp_path, capsys):
    gen = write(tmp_path / "generate-test.txt", ["S-0\tx", "H-0\t-1.0\tthe cat", "D-0\t-1.0\tthe cat"])
    code, err = run_cli(capsys, ["factors", "--gen", gen, "--parser", "unused"])
    assert code == 2 and len(err) == 1
    assert err[0] == (f"syntax-nmt-evaluate: error: {gen}: no target factor that target scheme 'factors' scores (pos, "
                      f"case, dep): no such F- line. "
                      f"give the file where fairseq-generate wrote its S- and H- lines: with --results-path RESULTS, "
                      f"RESULTS/generate-SPLIT.txt, which holds the G- and F- lines too (a plugin before issue 56 "
                      f"printed them on the standard output: give both, one after the other: cat "
                      f"RESULTS/generate-SPLIT.txt stdout.log > gen.out); or generate with a model trained with "
                      f"--target-factors")


def test_parse_of_the_standard_output_of_a_results_path_run_says_to_give_both(tmp_path, capsys):
    """Issue 56.7: with --results-path the S- lines were in fairseq's file and the G- lines on the standard output (they
    go to the file now: tests/integration/test_target_factors.py); the error for the standard output alone advised
    --remove-bpe, and scoring "the standard output" could not work. What the advice says for such a log, concatenating
    the two, scores."""
    results = write(tmp_path / "generate-test.txt", ["S-0	A cat runs .", "H-0	-1.0	x"])
    stdout = write(tmp_path / "stdout.log", ["G-0	2 3 0 3"])
    gold = write(tmp_path / "gold.conllu", ["1	A	_	DET	_	_	2	det	_	_", "2	cat	_	NOUN	_	_	3	nsubj	_	_",
                                            "3	runs	_	VERB	_	_	0	root	_	_",
                                            "4	.	_	PUNCT	_	_	3	punct	_	_", ""])
    code, err = run_cli(capsys, ["parse", "--gen", stdout, "--conllu", gold])
    assert (code, err) == (2, [f"syntax-nmt-evaluate: error: {stdout}: sentence 0: no S- line to give the words of its "
                               f"G- line. give the file where fairseq-generate wrote its S- and H- lines: with "
                               f"--results-path RESULTS, RESULTS/generate-SPLIT.txt, which holds the G- and F- lines "
                               f"too (a plugin before issue 56 printed them on the standard output: give both, one "
                               f"after the other: cat RESULTS/generate-SPLIT.txt stdout.log > gen.out)"])
    both = tmp_path / "gen.out"
    both.write_text(open(results).read() + open(stdout).read())
    assert syntax_accuracy.parse_accuracy(str(both), conllu=gold)["uas"] == 100.0


def test_summary_takes_one_prefix_per_seed(tmp_path):
    """The README says that ``summary``, like ``significance``, takes the seeds' files: comma-separated prefixes."""
    ref_raw, ref_tok = write(tmp_path / "ref.raw", REFS), write(tmp_path / "ref.tok", REFS)
    bases = [_scored(tmp_path, f"s{k}/base", BASE, ref_raw, ref_tok) for k in (1, 2)]
    systems = [_scored(tmp_path, f"s{k}/sys", SYS if k == 1 else BASE, ref_raw, ref_tok) for k in (1, 2)]
    text = scoring.summary(ref_raw, [",".join(systems)], baseline=",".join(bases), ref_tok=ref_tok, seed=3)
    rows = scoring.significance(ref_raw, ("b", [p + ".detok" for p in bases]),
                                 [("s", [p + ".detok" for p in systems])], seed=3)
    tok_rows = scoring.significance(ref_tok, ("b", [p + ".tok" for p in bases]),
                                     [("s", [p + ".tok" for p in systems])], seed=3, metric="tokenized")
    scores = [json.loads(Path(p + ".json").read_text()) for p in systems]
    lines = text.splitlines()
    cells = lines[2].split()
    assert cells[0] == "sys" and float(cells[1]) == pytest.approx(np.mean([s["sacrebleu"] for s in scores]), abs=5e-3)
    assert cells[2] == f"{rows[1]['p_value']:.4f}" + ("*" if rows[1]["p_value"] < 0.05 else "")
    assert cells[4] == f"{tok_rows[1]['p_value']:.4f}" + ("*" if tok_rows[1]["p_value"] < 0.05 else "")
    assert "scores: mean over 2 seeds" in text
    with pytest.raises(ValueError, match="has 1 seed"):
        scoring.summary(ref_raw, [systems[0]], baseline=",".join(bases))


def test_the_annotator_refuses_a_pipeline_that_changes_pretokenized_words(tmp_path):
    """The count check ran only when --parser-unescape had changed a form."""
    from syntax_nmt.annotate.backends.spacy_backend import SpacyBackend
    from syntax_nmt.annotate.textio import InputError

    nlp = spacy.blank("en")
    nlp.add_pipe("syntax_nmt_test_merge_first_two")
    nlp.add_pipe("syntax_nmt_test_rule_parser", name="parser")
    for unescape in (False, True):
        backend = SpacyBackend(nlp, pretokenized=True, parser_unescape=unescape, source_name="train.en")
        with pytest.raises(InputError, match=r"^train.en:4: the spaCy pipeline changed the number of pre-tokenized "
                                             r"words \(3 -> 2\)$"):
            list(backend.parse([(4, "the cat sat", None)]))
