"""``syntax-nmt-evaluate`` and the modules it runs (:mod:`syntax_nmt.evaluation.metrics`, ``generate_log``, ``scoring``,
``syntax_accuracy``): every function on hypotheses that differ from the
references, with expected values computed here straight from sacrebleu (or written out by hand)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu
from sacrebleu.significance import PairedTest

from syntax_nmt.evaluation import evaluate, generate_log, metrics, scoring, syntax_accuracy
from syntax_nmt.evaluation import significance as sig

# Tokenized (Moses, aggressive dashes) hypotheses and references; the raw references; the
# hypotheses detokenized, written out by hand; and both compound-split, written out by hand.
HYP_TOK = ["Die E @-@ Post kam um 10 Uhr .", "Wir mögen grüne Äpfel sehr .", "Sie gingen nach Hause ."]
REF_TOK = ["Die E @-@ Mail kam um 10 Uhr an .", "Wir mögen grüne Äpfel .", "Sie gingen früh nach Hause ."]
REF_RAW = ["Die E-Mail kam um 10 Uhr an.", "Wir mögen grüne Äpfel.", "Sie gingen früh nach Hause."]
HYP_DETOK = ["Die E-Post kam um 10 Uhr.", "Wir mögen grüne Äpfel sehr.", "Sie gingen nach Hause."]
HYP_SPLIT = ["Die E @ ##AT##-##AT## @ Post kam um 10 Uhr .", "Wir mögen grüne Äpfel sehr .", "Sie gingen nach Hause ."]
REF_SPLIT = ["Die E @ ##AT##-##AT## @ Mail kam um 10 Uhr an .", "Wir mögen grüne Äpfel .",
             "Sie gingen früh nach Hause ."]


def write(path, lines):
    Path(path).write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(path)


def read(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


def gen_log(path, hyps, order=None):
    """A fairseq-generate log: S/T/H/D/P lines, sentences in ``order``, a worse 2nd-best after each best."""
    order = order if order is not None else range(len(hyps))
    out = []
    for i in order:
        out += [f"S-{i}\tsource {i}", f"T-{i}\tref {i}", f"H-{i}\t-0.25\t{hyps[i]}", f"D-{i}\t-0.25\t{hyps[i]}",
                f"P-{i}\t-0.1 -0.4", f"H-{i}\t-0.90\tworse {i}"]
    out.append("Generate test with beam=4: BLEU4 = 12.34")
    return write(path, out)


# ------------------------------------------------------------------------------------ pieces
@pytest.mark.parametrize("line,expected", [
    ("ein langfristiger Plan", "ein langfristiger Plan"),
    ("E-Mail", "E ##AT##-##AT## Mail"),
    ("a-b-c", "a ##AT##-##AT## b-c"),  # perl s///g does not overlap matches either
    ("a-b c-d", "a ##AT##-##AT## b c ##AT##-##AT## d"),  # but replaces every match
    ("long @-@ term", "long @ ##AT##-##AT## @ term"),
    ("- x -", "- x -"),
    ("x- -y", "x- -y"),
])
def test_compound_split(line, expected):
    assert metrics.compound_split(line) == expected


def test_read_hypotheses_orders_by_id_and_keeps_the_best(tmp_path):
    log = gen_log(tmp_path / "gen.out", ["eins", "zwei", "drei"], order=[2, 0, 1])
    assert generate_log.read_hypotheses(log) == ["eins", "zwei", "drei"]
    log = tmp_path / "gen2.out"
    log.write_text("S-1\tb\nH-1\t-0.5\tzwei\tmit tab\nD-1\t-0.5\tzwei\nH-0\t-0.1\teins X \nH-0\t-0.9\tworse\n"
                   "H-2\t-1\n", encoding="utf-8")
    assert generate_log.read_hypotheses(str(log)) == ["eins X ", "zwei", ""]  # no text field: empty hypothesis
    for text, n in (("H-1\t-0.5\tzwei\n", 0), ("H-0\t-1\ta\nH-2\t-1\tb\n", 1)):
        log.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError) as e:
            generate_log.read_hypotheses(str(log))
        assert str(e.value) == f"{log}: hypothesis ids are not 0..{n}"


def test_detokenize_undoes_moses_tokenization():
    assert metrics.detokenize(HYP_TOK) == HYP_DETOK
    assert metrics.detokenize(["l' homme « x »"], lang="fr") == ["l'homme « x »"]


def test_detok_bleu_on_different_hypotheses():
    score, text, signature = metrics.detok_bleu(HYP_DETOK, REF_RAW)
    expected = sacrebleu.corpus_bleu(HYP_DETOK, [REF_RAW])
    assert score == pytest.approx(expected.score, abs=1e-9) and score == pytest.approx(44.59295701277325)
    assert text == str(expected) and text.startswith("BLEU = 44.59 88.9/60.0/41.7/22.2 (BP = 0.946")
    assert signature == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert metrics.detok_bleu(REF_RAW, HYP_DETOK)[0] == pytest.approx(sacrebleu.corpus_bleu(REF_RAW, [HYP_DETOK]).score)


def test_compound_split_bleu_on_different_hypotheses(caplog):
    score, text = metrics.compound_split_bleu(HYP_TOK, REF_TOK)
    expected = sacrebleu.corpus_bleu(HYP_SPLIT, [REF_SPLIT], tokenize="none", force=True)
    assert score == pytest.approx(expected.score, abs=1e-9) and score == pytest.approx(53.14718531127631)
    assert text == str(expected) and "hyp_len = 22 ref_len = 23" in text
    # hypotheses and references do not commute (brevity penalty, precisions)
    swapped = sacrebleu.corpus_bleu(REF_SPLIT, [HYP_SPLIT], tokenize="none", force=True).score
    assert metrics.compound_split_bleu(REF_TOK, HYP_TOK)[0] == pytest.approx(swapped)
    assert swapped == pytest.approx(52.5045734246133)
    # tokenize="none": 13a would split "##AT##-##AT##" and "@" differently; and no "forgot to detokenize" warning
    assert score != pytest.approx(sacrebleu.corpus_bleu(HYP_SPLIT, [REF_SPLIT]).score)
    assert [r for r in caplog.records if r.levelno >= 30] == []


# ------------------------------------------------------------------------------------- score
def test_score_writes_and_reports_exact_values(tmp_path):
    log = gen_log(tmp_path / "sys.gen", HYP_TOK, order=[1, 2, 0])
    res = scoring.score(log, write(tmp_path / "ref.raw", REF_RAW), write(tmp_path / "ref.tok", REF_TOK),
                         str(tmp_path / "sys"))
    detok = sacrebleu.corpus_bleu(HYP_DETOK, [REF_RAW])
    split = sacrebleu.corpus_bleu(HYP_SPLIT, [REF_SPLIT], tokenize="none", force=True)
    tok = sacrebleu.corpus_bleu(HYP_TOK, [REF_TOK], tokenize="none", smooth_method="none", force=True)
    lc = sacrebleu.corpus_bleu(HYP_TOK, [REF_TOK], tokenize="none", smooth_method="none", force=True, lowercase=True)
    chrf = sacrebleu.corpus_chrf(HYP_DETOK, [REF_RAW])
    signature = f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    chrf_signature = f"nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:{sacrebleu.__version__}"
    expected = {"name": "sys", "sentences": 3, "sacrebleu": detok.score, "sacrebleu_str": str(detok),
                "signature": signature, "chrf": chrf.score, "chrf_str": str(chrf), "chrf_signature": chrf_signature,
                "tokenized_bleu": tok.score, "tokenized_bleu_str": str(tok),
                "lc_tokenized_bleu": lc.score, "lc_tokenized_bleu_str": str(lc),
                "compound_split_bleu": split.score, "compound_split_bleu_str": str(split)}
    # lowercasing: an upper-cased system scores the same lowercased BLEU, and nothing cased
    shouted = [h.upper() for h in HYP_TOK]
    assert metrics.lc_tokenized_bleu(shouted, REF_TOK)[0] == lc.score and metrics.tokenized_bleu(shouted, REF_TOK)[0] < 5
    assert res == expected
    assert (tmp_path / "sys.json").read_text() == json.dumps(expected, indent=2)
    assert read(tmp_path / "sys.tok") == HYP_TOK
    assert read(tmp_path / "sys.detok") == HYP_DETOK


def test_score_detokenizes_in_the_given_language(tmp_path):
    log = gen_log(tmp_path / "fr.gen", ["l' homme est là .", "c' est vrai ."])
    refs = ["l'homme est là.", "c'est vrai."]
    res = scoring.score(log, write(tmp_path / "r", refs), write(tmp_path / "t", ["x", "y"]), str(tmp_path / "fr"),
                         lang="fr")
    assert read(tmp_path / "fr.detok") == refs and res["sacrebleu"] == pytest.approx(100.0)


@pytest.mark.parametrize("n_raw,n_tok", [(2, 3), (3, 2), (4, 4)])
def test_score_refuses_mismatched_line_counts(tmp_path, n_raw, n_tok):
    log = gen_log(tmp_path / "sys.gen", HYP_TOK)
    raw = write(tmp_path / "ref.raw", (REF_RAW * 2)[:n_raw])
    tok = write(tmp_path / "ref.tok", (REF_TOK * 2)[:n_tok])
    with pytest.raises(ValueError, match=re.escape(f"3 tokenized and 3 detokenized hypotheses, {n_raw} raw references "
                                                   f"({raw}) and {n_tok} tokenized ones ({tok}): the line counts "
                                                   f"must agree")):
        scoring.score(log, raw, tok, str(tmp_path / "sys"))
    assert not (tmp_path / "sys.json").exists()


# ------------------------------------------------------------------------------ significance
REFS12 = ["Die E-Mail kam um 10 Uhr an.", "Wir mögen grüne Äpfel.", "Sie gingen früh nach Hause.",
          "Der Hund schläft im Garten.", "Es regnet seit Tagen.", "Das Haus ist sehr alt.",
          "Ich lese ein gutes Buch.", "Er trinkt keinen Kaffee.", "Die Sonne scheint hell.",
          "Wir fahren morgen nach Berlin.", "Das Essen war kalt.", "Sie spielt gern Klavier."]
BASE12 = ["Die Post kam an.", "Wir mögen Äpfel.", "Sie gingen.", "Ein Hund schläft.", "Es regnet.",
          "Das Haus ist alt.", "Ich lese ein Buch.", "Er trinkt Kaffee.", "Die Sonne scheint.",
          "Wir fahren nach Berlin.", "Das Essen war kalt.", "Sie spielt."]
SYS12 = ["Die E-Mail kam um 10 Uhr.", "Wir mögen grüne Äpfel.", "Sie gingen nach Hause.",
         "Der Hund schläft im Garten.", "Es regnet seit Tagen.", "Das Haus ist alt.", "Ich lese ein gutes Buch.",
         "Er trinkt keinen Tee.", "Die Sonne scheint hell.", "Wir fahren morgen nach Berlin.",
         "Das Essen war sehr kalt.", "Sie spielt gern."]


@pytest.fixture
def systems(tmp_path):
    return (write(tmp_path / "ref.raw", REFS12), write(tmp_path / "base.detok", BASE12),
            write(tmp_path / "sys.detok", SYS12))


def sacrebleu_paired(test_type, seed, n_samples, base=BASE12, system=SYS12):
    """The same test run directly with sacrebleu, seeded through its own environment variable."""
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        _, scores = PairedTest([("baseline", base), ("syntax", system)], {"BLEU": sacrebleu.BLEU()},
                               references=[REFS12], test_type=test_type, n_samples=n_samples)()
    finally:
        if old is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = old
    return [(r.score, r.mean, r.ci, r.p_value) for r in scores["BLEU"]]


@pytest.mark.parametrize("test_type", ["bs-sacrebleu", "ar"])
def test_significance_equals_sacrebleu_for_the_given_seed(systems, monkeypatch, test_type):
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    ref, base, sys_ = systems
    rows = {}
    for seed in (1, 999):
        rows[seed] = scoring.significance(ref, ("baseline", base), [("syntax", sys_)], test_type, 200, seed=seed)
        assert "SACREBLEU_SEED" not in os.environ  # nothing leaks into the environment
        assert [r["name"] for r in rows[seed]] == ["baseline", "syntax"]
        got = [(r["bleu"], r["mean"], r["ci"], r["p_value"]) for r in rows[seed]]
        assert got == sacrebleu_paired(test_type[:2], seed, 200)
    assert rows[1][0]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(BASE12, [REFS12]).score)
    assert rows[1][1]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(SYS12, [REFS12]).score)
    assert rows[1][0]["p_value"] is None and 0 < rows[1][1]["p_value"] < 0.05
    # the seed is used, every time: two seeds, two different resamplings
    if test_type != "ar":
        assert rows[1][0]["ci"] != rows[999][0]["ci"] and rows[1][1]["ci"] != rows[999][1]["ci"]
    else:
        assert rows[1][0]["mean"] is None  # no confidence estimation for ar
        assert rows[1][1]["p_value"] != rows[999][1]["p_value"]
    again = scoring.significance(ref, ("baseline", base), [("syntax", sys_)], test_type, 200, seed=1)
    assert again == rows[1]


@pytest.mark.parametrize("test_type", ["bs", "ar"])
def test_significance_of_several_seeds_is_the_reports_test(systems, tmp_path, test_type):
    """``--baseline b1,b2 s1,s2``: one file per seed, the test sentence the unit, the very test of the recipes'
    and the demo's tables (compare.significance); two identical seeds give the one seed's p-value."""

    ref, base, sys_ = systems
    base2 = write(tmp_path / "base2.detok", SYS12[:6] + BASE12[6:])
    sys2 = write(tmp_path / "sys2.detok", BASE12[:3] + SYS12[3:])
    rows = evaluate.main(evaluate.get_parser().parse_args(
        ["significance", "--ref-raw", ref, "--baseline", f"{base},{base2}", f"syn={sys_},{sys2}", "--test", test_type,
         "--n-samples", "300", "--seed", "5"]))
    assert [r["name"] for r in rows] == ["base", "syn"]
    stats = [sig.sentence_statistics("BLEU", [BASE12, SYS12[:6] + BASE12[6:]], REFS12),
             sig.sentence_statistics("BLEU", [SYS12, BASE12[:3] + SYS12[3:]], REFS12)]
    expected = sig.paired_test("BLEU", stats[0], stats[1], test_type, 300, 5)
    assert (rows[0]["bleu"], rows[1]["bleu"], rows[1]["p_value"]) == expected[:3]
    assert rows[1]["bleu"] == pytest.approx(sacrebleu.corpus_bleu(SYS12 + BASE12[:3] + SYS12[3:],
                                                                  [REFS12 * 2]).score)
    twice = scoring.significance(ref, ("b", [base, base]), [("s", [sys_, sys_])], test_type, 300, seed=5)
    once = scoring.significance(ref, ("b", base), [("s", sys_)], test_type, 300, seed=5)
    assert twice[1]["p_value"] == once[1]["p_value"] == sacrebleu_paired(test_type, 5, 300)[1][3]
    with pytest.raises(ValueError, match=r"^s has 1 hypothesis files, the baseline b 2: give each system one file "
                                         r"per seed, in the same order$"):
        scoring.significance(ref, ("b", [base, base2]), [("s", sys_)])


def test_significance_seed_none_follows_the_environment_and_restores_it(systems, monkeypatch):
    ref, base, sys_ = systems
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    from_env = scoring.significance(ref, ("baseline", base), [("syntax", sys_)], "bs-sacrebleu", 100)
    assert [(r["bleu"], r["mean"], r["ci"], r["p_value"]) for r in from_env] == sacrebleu_paired("bs", 7, 100)
    explicit = scoring.significance(ref, ("baseline", base), [("syntax", sys_)], "bs-sacrebleu", 100, seed=8)
    assert os.environ["SACREBLEU_SEED"] == "7"
    assert [(r["bleu"], r["mean"], r["ci"], r["p_value"]) for r in explicit] == sacrebleu_paired("bs", 8, 100)
    monkeypatch.delenv("SACREBLEU_SEED")
    default = scoring.significance(ref, ("baseline", base), [("syntax", sys_)], "bs-sacrebleu", 100)
    assert [(r["bleu"], r["mean"], r["ci"], r["p_value"]) for r in default] == sacrebleu_paired("bs", 12345, 100)
    with pytest.raises(ValueError, match=r"^significance seed 0 is not reproducible in sacrebleu \(it means "
                                         r"unseeded\); use another$"):
        scoring.significance(ref, ("baseline", base), [("syntax", sys_)], "bs", 100, seed=0)
    # the defaults: the two-sided paired bootstrap on sacrebleu's 1000 resamples (its scores, means and intervals)

    rows = scoring.significance(ref, ("baseline", base), [("syntax", sys_)], seed=2)
    assert [(r["bleu"], r["mean"], r["ci"]) for r in rows] == [x[:3] for x in sacrebleu_paired("bs", 2, 1000)]
    stats = [sig.sentence_statistics("BLEU", [x], REFS12) for x in (BASE12, SYS12)]
    assert rows[1]["p_value"] == sig.paired_test("BLEU", *stats, "bs", 1000, 2).p_value == 4 / 1001


def test_format_significance_exact_text():
    rows = [{"name": "baseline", "bleu": 20.123, "mean": 20.0, "ci": 1.234, "p_value": None},
            {"name": "syntax", "bleu": 22.5, "mean": 22.456, "ci": 1.0, "p_value": 0.0123},
            {"name": "sgnet", "bleu": 20.2, "mean": 20.25, "ci": 0.5, "p_value": 0.05}]
    assert scoring.format_significance(rows, "bs").splitlines() == [
        "baseline         BLEU = 20.12 (mu = 20.00 +- 1.23)  [baseline]",
        "syntax           BLEU = 22.50 (mu = 22.46 +- 1.00)  p = 0.0123* (two-sided bootstrap vs baseline)",
        "sgnet            BLEU = 20.20 (mu = 20.25 +- 0.50)  p = 0.0500  (two-sided bootstrap vs baseline)",
    ]
    ar = [dict(r, mean=None, ci=None) for r in rows[:2]]
    assert scoring.format_significance(ar, "ar").splitlines() == [
        "baseline         BLEU = 20.12  [baseline]",
        "syntax           BLEU = 22.50  p = 0.0123* (two-sided randomization vs baseline)",
    ]


# ----------------------------------------------------------------------- summary and the CLI
CLOSE12 = BASE12[:3] + ["Der Hund schläft im Garten."] + BASE12[4:]  # the baseline, one sentence better


def _tok(lines):
    return [x.replace(".", " .").replace("E-Mail", "E @-@ Mail") for x in lines]


@pytest.fixture
def scored(tmp_path):
    """Three systems scored with ``score``: the prefixes and the raw reference."""
    ref_raw, ref_tok = write(tmp_path / "ref.raw", REFS12), write(tmp_path / "ref.tok", _tok(REFS12))
    prefixes = {}
    for name, hyps in (("baseline", BASE12), ("syntax", SYS12), ("close", CLOSE12)):
        scoring.score(gen_log(tmp_path / f"{name}.gen", _tok(hyps)), ref_raw, ref_tok, str(tmp_path / name))
        prefixes[name] = str(tmp_path / name)
    return ref_raw, prefixes


def _row(r, p=None):
    text = f"{r['name']:<16} {r['sacrebleu']:>9.2f} {r['compound_split_bleu']:>9.2f}  "
    return text + ("" if p is None else p)


def test_summary_table_exact(scored, monkeypatch):
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    ref_raw, prefixes = scored
    res = {n: json.loads(Path(p + ".json").read_text()) for n, p in prefixes.items()}
    assert res["syntax"]["sacrebleu"] == pytest.approx(sacrebleu.corpus_bleu(SYS12, [REFS12]).score)

    def two_sided(system, seed):
        stats = [sig.sentence_statistics("BLEU", [x], REFS12) for x in (BASE12, system)]
        return sig.paired_test("BLEU", *stats, "bs", 1000, seed).p_value

    p_syntax, p_close = two_sided(SYS12, 5), two_sided(CLOSE12, 5)
    assert p_syntax < 0.05 < p_close and p_close != two_sided(CLOSE12, 12345)
    text = scoring.summary(ref_raw, [prefixes["syntax"], prefixes["close"]], baseline=prefixes["baseline"],
                            title="WMT14", seed=5)
    b = res["baseline"]

    def row(r, p):
        return (f"{r['name']:<16} {r['sacrebleu']:>9.2f} {p:>9} {r['tokenized_bleu']:>9.2f} "
                f"{'baseline' if p == 'baseline' else '-':>9} {r['compound_split_bleu']:>11.2f}")

    assert text.splitlines() == [
        "WMT14",
        f"{'system':<16} {'sacreBLEU':>9} {'p':>9} {'tok.BLEU':>9} {'p':>9} {'split BLEU':>11}",
        row(b, "baseline"),
        row(res["syntax"], f"{p_syntax:.4f}*"),  # significant: starred
        row(res["close"], f"{p_close:.4f}"),  # not significant: no star
        "tok.BLEU: tokenized case-sensitive BLEU (= multi-bleu.perl); split BLEU: tokenized, compound-split BLEU "
        "(as most WMT14 papers)",
        "p: two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) against the baseline (1,000 resamples, "
        "unit: the test sentence; p = 1 where the scores are equal); * p < 0.05",
        f"sacreBLEU signature: {b['signature']}",
    ]
    # a baseline alone: nothing to test
    alone = scoring.summary(ref_raw, [], baseline=prefixes["baseline"])
    assert alone.splitlines()[:2] == [f"{'system':<16} {'sacreBLEU':>9} {'p':>9} {'tok.BLEU':>9} {'p':>9} "
                                       f"{'split BLEU':>11}", row(b, "baseline")]
    assert not any(line.startswith("p: ") for line in alone.splitlines())
    # without a baseline: no test; the baseline given among the prefixes is listed once, first
    plain = scoring.summary(ref_raw, [prefixes["syntax"], prefixes["baseline"]])
    assert [line.split()[0] for line in plain.splitlines()[1:3]] == ["syntax", "baseline"]
    assert not any(line.startswith("p: ") for line in plain.splitlines())
    both = scoring.summary(ref_raw, [prefixes["baseline"], prefixes["syntax"]], baseline=prefixes["baseline"],
                            test_type="ar", n_samples=100, seed=5)
    assert [line.split()[0] for line in both.splitlines()[1:3]] == ["baseline", "syntax"]
    assert "p: two-sided approximate randomization against the baseline (100 trials, unit: the test sentence" in both


def test_main_runs_each_command(scored, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    ref_raw, prefixes = scored
    parse = evaluate.get_parser().parse_args
    res = evaluate.main(parse(["score", "--gen", str(tmp_path / "syntax.gen"), "--ref-raw", ref_raw,
                               "--ref-tok", str(tmp_path / "ref.tok"), "--out-prefix", str(tmp_path / "again")]))
    assert res == dict(json.loads(Path(prefixes["syntax"] + ".json").read_text()), name="again")
    assert capsys.readouterr().out == (f"again: {res['sacrebleu_str']}\n  signature: {res['signature']}\n"
                                       f"  tokenized (multi-bleu.perl) {res['tokenized_bleu_str']}\n"
                                       f"  compound-split tokenized {res['compound_split_bleu_str']}\n")
    evaluate.main(parse(["score", "--gen", gen_log(tmp_path / "fr.gen", ["l' homme ."]), "--ref-raw",
                         write(tmp_path / "fr.raw", ["l'homme."]), "--ref-tok", write(tmp_path / "fr.tok", ["l' homme ."]),
                         "--out-prefix", str(tmp_path / "fr-out"), "--lang", "fr"]))  # not "fr": fr.tok is the input
    assert read(tmp_path / "fr-out.detok") == ["l'homme."]
    capsys.readouterr()
    rows = evaluate.main(parse(["significance", "--ref-raw", ref_raw, "--baseline", f"base={prefixes['baseline']}.detok",
                                prefixes["syntax"] + ".detok", "--n-samples", "100", "--seed", "1",
                                "--output", str(tmp_path / "rows.json")]))
    expected = scoring.significance(ref_raw, ("base", prefixes["baseline"] + ".detok"),
                                     [("syntax", prefixes["syntax"] + ".detok")], "bs", 100, seed=1)
    assert rows == expected and [r["name"] for r in rows] == ["base", "syntax"]  # NAME=path and path -> stem
    assert capsys.readouterr().out == scoring.format_significance(expected, "bs") + "\n"
    assert (tmp_path / "rows.json").read_text() == json.dumps(expected, indent=2)
    text = evaluate.main(parse(["summary", "--ref-raw", ref_raw, "--baseline", prefixes["baseline"],
                                prefixes["syntax"], "--test", "ar", "--n-samples", "100", "--seed", "3",
                                "--title", "T"]))
    assert text == scoring.summary(ref_raw, [prefixes["syntax"]], prefixes["baseline"], "ar", 100, "T", seed=3)
    assert capsys.readouterr().out == text + "\n"
    assert "SACREBLEU_SEED" not in os.environ


def test_named_systems():
    assert evaluate._named("syntax=eval/x.detok") == ("syntax", "eval/x.detok")
    assert evaluate._named("eval/sgnet.detok") == ("sgnet", "eval/sgnet.detok")
    assert evaluate._named("a=b=c") == ("a", "b=c")


@pytest.mark.parametrize("argv,message", [
    (["significance", "--ref-raw", "r", "--baseline", "b", "s", "--seed", "0"],
     "syntax-nmt-evaluate significance: error: argument --seed: 0 means unseeded in sacrebleu; use another seed"),
    (["score", "--gen", "{missing}", "--ref-raw", "r", "--ref-tok", "t", "--out-prefix", "o"],
     "syntax-nmt-evaluate: error: --gen: no such file {missing}"),  # the guard (io_guard) names the option
    (["score", "--gen", "{gen}", "--ref-raw", "{ref}", "--ref-tok", "{ref}", "--out-prefix", "{tmp}/o"],
     "syntax-nmt-evaluate: error: 3 tokenized and 3 detokenized hypotheses, 2 raw references ({ref}) and 2 "
     "tokenized ones ({ref}): the line counts must agree"),
    (["score", "--ref-raw", "r", "--ref-tok", "t", "--out-prefix", "o"],
     "syntax-nmt-evaluate score: error: the following arguments are required: --gen"),
    (["summary", "--ref-raw", "r", "p", "--test", "t"],
     "syntax-nmt-evaluate summary: error: argument --test: invalid choice: 't' (choose from 'bs', 'ar', 'bs-sacrebleu')"),
    # a log made without --remove-bpe: its pieces were scored silently
    (["score", "--gen", "{bpe}", "--ref-raw", "{ref}", "--ref-tok", "{ref}", "--out-prefix", "{tmp}/o"],
     "syntax-nmt-evaluate: error: {bpe}:9: the hypothesis holds subword pieces ('Ver@@'): score the output of "
     "fairseq-generate --remove-bpe (BPE) or --remove-bpe sentencepiece"),
    (["score", "--gen", "{spm}", "--ref-raw", "{ref}", "--ref-tok", "{ref}", "--out-prefix", "{tmp}/o"],
     "syntax-nmt-evaluate: error: {spm}:3: the hypothesis holds subword pieces ('\u2581Der'): score the output of "
     "fairseq-generate --remove-bpe (BPE) or --remove-bpe sentencepiece"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, argv, message):
    gen = gen_log(tmp_path / "g", HYP_TOK)
    ref = write(tmp_path / "r", REF_RAW[:2])
    bpe = gen_log(tmp_path / "bpe", ["Der Hund .", "Der Ver@@ ein ist e-mail@@x ."])
    spm = gen_log(tmp_path / "spm", ["\u2581Der \u2581Hund ."])
    fmt = dict(missing=tmp_path / "missing", gen=gen, ref=ref, tmp=tmp_path, bpe=bpe, spm=spm)
    argv = [a.format(**fmt) for a in argv]
    with pytest.raises(SystemExit) as e:
        evaluate.cli_main(argv)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and lines[-1] == message.format(**fmt)
    if "argument" not in message:  # argparse's own errors come after its usage line; ours are the only line
        assert len(lines) == 1


def test_module_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.evaluation.evaluate", "significance", "--ref-raw", "r",
                           "--baseline", "b", "s"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr == "syntax-nmt-evaluate: error: --ref-raw: no such file r\n"


def test_parser_defaults_and_values():
    parse = evaluate.get_parser().parse_args
    assert vars(parse(["score", "--gen", "g", "--ref-raw", "r", "--ref-tok", "t", "--out-prefix", "o"])) == {
        "command": "score", "gen": "g", "ref_raw": "r", "ref_tok": "t", "out_prefix": "o", "lang": "de",
        "strip_target_tags": False}
    assert vars(parse(["factors", "--gen", "g", "--parser", "p"])) == {
        "command": "factors", "gen": "g", "parser": "p", "pos_tagset": "upos", "strip_target_tags": False,
        "output": None, "target_scheme": "", "case": "binary"}
    assert vars(parse(["significance", "--ref-raw", "r", "--baseline", "b", "s1", "s2"])) == {
        "command": "significance", "ref_raw": "r", "baseline": "b", "systems": ["s1", "s2"], "metric": "sacrebleu",
        "test": "bs",
        "n_samples": 0, "output": None, "seed": None}
    assert vars(parse(["summary", "--ref-raw", "r", "p1"])) == {
        "command": "summary", "ref_raw": "r", "ref_tok": None, "baseline": None, "prefixes": ["p1"], "test": "bs", "n_samples": 0,
        "title": "", "seed": None}
    args = parse(["significance", "--ref-raw", "r", "--baseline", "b", "s", "--test", "ar", "--n-samples", "7",
                  "--seed", "1", "--output", "x"])
    assert (args.test, args.n_samples, args.seed, args.output) == ("ar", 7, 1, "x")
    for argv in (["score", "--gen", "g", "--ref-raw", "r", "--ref-tok", "t"], ["significance", "--ref-raw", "r", "s"],
                 ["significance", "--baseline", "b", "s"], ["significance", "--ref-raw", "r", "--baseline", "b"],
                 ["summary", "p"], ["summary", "--ref-raw", "r"], ["factors", "--gen", "g"], []):
        with pytest.raises(SystemExit):
            parse(argv)


# -- parse: the UAS of a predicted source parse (G- lines of --print-source-parse) ------------------------------
GEN_PARSE = ["S-1\tthe dog sleeps", "H-1\t-0.5\tder Hund schläft", "G-1\t2 3 0",  # the dog sleeps: 2 of 3
             "S-0\tA cat runs .", "G-0\t2 3 0 3",                                  # a cat runs .: 4 of 4
             "S-2\tMilitary <unk> lies", "G-2\t2 0 2",                            # an unknown subword: left out
             "S-3\t", "G-3\t"]                                                     # no words
GOLD = """1\tA\t_\tDET\t_\t_\t2\tdet\t_\t_
2\tcat\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\truns\t_\tVERB\t_\t_\t0\troot\t_\t_
4\t.\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_

1\tthe\t_\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tsleeps\t_\tVERB\t_\t_\t0\troot\t_\t_

1\tMilitary\t_\tADJ\t_\t_\t2\tamod\t_\t_
2\tFamilies\t_\tNOUN\t_\t_\t0\troot\t_\t_

"""


def test_parse_uas_counts_the_words_whose_head_is_the_references(tmp_path):
    gold = GOLD.replace("1\tthe\t_\tDET\t_\t_\t2", "1\tthe\t_\tDET\t_\t_\t3")  # the -> sleeps: 2 of 3 right
    log = write(tmp_path / "gen.out", GEN_PARSE)
    (tmp_path / "gold.conllu").write_text(gold, encoding="utf-8")
    result = syntax_accuracy.parse_accuracy(log, conllu=str(tmp_path / "gold.conllu"))
    assert result == {"uas": pytest.approx(100 * 6 / 7), "words": 7, "correct": 6, "sentences": 2, "skipped": 1,
                      "reference": str(tmp_path / "gold.conllu")}
    (tmp_path / "other.conllu").write_text(gold.replace("\tdog\t", "\tcat\t"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"^sentence 1: the reference .* parses other words \(the cat sleeps "):
        syntax_accuracy.parse_accuracy(log, conllu=str(tmp_path / "other.conllu"))
    with pytest.raises(ValueError, match="one block per sentence"):
        syntax_accuracy.parse_accuracy(log, conllu=write(tmp_path / "short.conllu", GOLD.split("\n\n")[0].split("\n")))
    bad = write(tmp_path / "bad.out", ["S-0\tA cat runs .", "G-0\t2 3 0"])
    with pytest.raises(ValueError) as e:
        syntax_accuracy.parse_accuracy(bad, conllu=str(tmp_path / "gold.conllu"))
    assert str(e.value) == (  # issue 56: it advised --remove-bpe for an S- line of words
        f"{bad}:2: sentence 0: 3 heads for the 4 words of its S- line (the S- line holds words: the G- line is not of "
        f"this S- line, from another run or from a plugin before issue 56, which gave a head to a word that "
        f"sentencepiece normalizes to nothing, such as U+FFFD alone, and --remove-bpe drops: translate again)")
    pieces = write(tmp_path / "pieces.out", ["S-0\tA cat runs .", "G-0\t2 3 0 3", "S-1\t\u2581A \u2581ca t", "G-1\t2 0"])
    with pytest.raises(ValueError) as e:
        syntax_accuracy.parse_accuracy(pieces, conllu=str(tmp_path / "gold.conllu"))
    assert str(e.value) == (f"{pieces}:4: sentence 1: 2 heads for the 3 words of its S- line (the S- line holds "
                            f"subword pieces, e.g. '\u2581A': generate with --remove-bpe, --remove-bpe sentencepiece "
                            f"for a sentencepiece model, so that it holds words)")
    no_g = write(tmp_path / "no-g.out", ["S-0\tA cat runs .", "G-0\t2 3 0 3", "S-1\tA dog ."])
    with pytest.raises(ValueError) as e:
        syntax_accuracy.parse_accuracy(no_g, conllu=str(tmp_path / "gold.conllu"))
    assert str(e.value) == (f"{no_g}: sentence 1: an S- line of 3 words but no G- line (--print-source-parse heads "
                            f"prints one for every sentence: a log cut short, or the lines of two runs?)")
    with pytest.raises(ValueError, match="no G- line"):
        syntax_accuracy.parse_accuracy(write(tmp_path / "none.out", GEN_PARSE[:2]), conllu=str(tmp_path / "gold.conllu"))


def test_the_signature_alone_is_the_scores_one():
    """bleu_signature() without a score first (the analyses' length and noise tables; sacreBLEU refuses a signature
    before it knows the number of references) equals the one detok_bleu returns, and an empty bucket's."""
    signature = f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert metrics.bleu_signature() == signature == metrics.detok_bleu(["a b"], ["a b"])[2]
    assert metrics.detok_bleu([], [])[2] == signature


# --- issue 56.5 / 56.7: evaluate parse ---


@pytest.mark.parametrize("heads,word,head", [("2 5 0 3", 2, 5), ("2 0 -1 2", 3, -1), ("9 0 2 2", 1, 9)])
def test_parse_refuses_a_head_beyond_the_sentence(tmp_path, heads, word, head):
    """A head index beyond the sentence (5 of 4 words) was counted as a wrong head, not refused."""
    log = write(tmp_path / "gen.out", ["S-0\tA cat runs .", f"G-0\t{heads}"])
    gold = write(tmp_path / "gold.conllu", ["1\tA\t_\tDET\t_\t_\t2\tdet\t_\t_", "2\tcat\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_",
                                            "3\truns\t_\tVERB\t_\t_\t0\troot\t_\t_",
                                            "4\t.\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_", ""])
    with pytest.raises(ValueError) as e:
        syntax_accuracy.parse_accuracy(log, conllu=gold)
    assert str(e.value) == (f"{log}: sentence 0: word {word}'s head is {head}, beyond its 4 words (heads are 1-based "
                            f"word numbers, 0 the root): not a parse of --print-source-parse")
    assert syntax_accuracy.parse_accuracy(write(tmp_path / "ok.out", ["S-0\tA cat runs .", "G-0\t2 3 0 3"]),
                                   conllu=gold)["uas"] == 100.0


def test_parse_names_the_file_and_the_line_of_invalid_utf8(tmp_path):
    """``'utf-8' codec can't decode byte 0xff in position 9: invalid start byte``: neither file nor line."""
    log = tmp_path / "gen.out"
    log.write_bytes(b"S-0\tA cat runs .\nG-0\t2 3 0 3\nS-1\tA \xff dog\nG-1\t0 1 1\n")
    for run in (lambda: syntax_accuracy.parse_accuracy(str(log), parser="x"), lambda: generate_log.read_sources(str(log))):
        with pytest.raises(ValueError) as e:
            run()
        assert str(e.value) == f"{log}:3: invalid UTF-8 (invalid start byte at byte 6)"
    bad = write(tmp_path / "bad.out", ["S-0\tA cat", "G-0\tx y"])
    with pytest.raises(ValueError) as e:
        syntax_accuracy.parse_accuracy(bad, parser="x")
    assert str(e.value) == f"{bad}: line 2: not a parse line of --print-source-parse (heads or conllu): 'G-0\\tx y'"
