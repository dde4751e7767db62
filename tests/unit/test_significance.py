"""Paired tests with the test sentence as the unit (syntax_nmt/evaluation/significance.py), against sacreBLEU's own."""

import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from syntax_nmt.evaluation import significance as sig

WORDS = ("a man dog woman child runs sits plays in on the park street water ball red blue big small with "
         "two three near under").split()


#: the system's edit rate (the baseline's: 0.35): close enough that one seed's difference is not significant
RATE = 0.32


def _corpus(n=120, seed=0):
    """References and two systems' translations of them by 3 seeds: the system edits fewer words than the
    baseline, with a different random slip per seed."""
    rng = random.Random(seed)
    refs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + " ." for _ in range(n)]

    def noisy(line, rate, r):
        out = [w if r.random() > rate else r.choice(WORDS) for w in line.split()]
        return " ".join(w for w in out if r.random() > rate / 3)

    rngs = [random.Random(seed * 100 + k) for k in range(6)]
    base = [[noisy(x, 0.35, rngs[k]) for x in refs] for k in range(3)]
    system = [[noisy(x, RATE, rngs[3 + k]) for x in refs] for k in range(3)]
    return refs, base, system


def _sacrebleu(base, system, refs, test, seed, monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    _, scores = PairedTest([("base", base), ("sys", system)], {"BLEU": BLEU(), "chrF": CHRF()}, references=[refs],
                           test_type=test, n_samples=0)()
    return {"BLEU": scores["BLEU"][1].p_value, "chrF": scores["chrF2"][1].p_value}


@pytest.mark.parametrize("test,sacrebleu_test", [("bs-sacrebleu", "bs"), ("ar", "ar")])
def test_one_seed_is_sacrebleus_own_test(test, sacrebleu_test, monkeypatch):
    """For one seed the statistic, the random draws and the p-value of ``bs-sacrebleu`` and ``ar`` are sacreBLEU's
    (``sacrebleu --paired-bs`` / ``--paired-ar``)."""
    refs, base, system = _corpus()
    expect = _sacrebleu(base[0], system[0], refs, sacrebleu_test, 7, monkeypatch)
    for metric in ("BLEU", "chrF"):
        b = sig.sentence_statistics(metric, [base[0]], refs)
        s = sig.sentence_statistics(metric, [system[0]], refs)
        b_score, s_score, p = sig.paired_test(metric, b, s, test, seed=7)[:3]
        assert p == expect[metric]
        metric_obj = BLEU() if metric == "BLEU" else CHRF()
        assert b_score == pytest.approx(metric_obj.corpus_score(base[0], [refs]).score, abs=1e-9)
        assert s_score == pytest.approx(metric_obj.corpus_score(system[0], [refs]).score, abs=1e-9)


@pytest.mark.parametrize("test", ["bs", "ar", "bs-sacrebleu"])
def test_identical_copies_of_one_seed_carry_no_new_evidence(test, monkeypatch):
    """k identical copies of seed 1 give seed 1's p-value (BLEU and chrF are ratios of summed counts, so the
    sentence sums of k copies score as one). Pooling lines, as before, made them far more significant."""
    refs, base, system = _corpus()
    for metric in ("BLEU", "chrF"):
        alone = sig.paired_test(metric, sig.sentence_statistics(metric, [base[0]], refs),
                                sig.sentence_statistics(metric, [system[0]], refs), test, seed=3)
        copies = sig.paired_test(metric, sig.sentence_statistics(metric, [base[0]] * 3, refs),
                                 sig.sentence_statistics(metric, [system[0]] * 3, refs), test, seed=3)
        assert copies[2] == alone[2] and copies[0] == pytest.approx(alone[0])
        # what the line-pooled test says of the same copies (sacreBLEU on the concatenation): over-stated
        lines = _sacrebleu(base[0] * 3, system[0] * 3, refs * 3, test[:2], 3, monkeypatch)[metric]
        assert lines < alone[2] / 2, (metric, lines, alone[2])


def test_the_pooled_score_is_sacrebleus_on_every_seed_concatenated():
    refs, base, _ = _corpus()
    for metric, obj in (("BLEU", BLEU()), ("chrF", CHRF())):
        stats = sig.sentence_statistics(metric, base, refs)
        assert stats.shape[0] == len(refs)
        assert sig.corpus_score(metric, stats) == pytest.approx(obj.corpus_score(sum(base, []), [refs * 3]).score,
                                                               abs=1e-9)


def test_sentences_move_with_all_their_seeds():
    """A resample that carried lines, not sentences, would see the seeds' lines of one sentence apart: with three
    seeds that disagree sentence by sentence, the clustered bootstrap's p-value differs from the line bootstrap's
    on the same pooled data (and equals a bootstrap over the per-sentence sums done by hand: sacreBLEU's statistic
    for ``bs-sacrebleu``, both tails of the centred difference for ``bs``)."""
    refs, base, system = _corpus(n=60, seed=4)
    b = sig.sentence_statistics("BLEU", base, refs)
    s = sig.sentence_statistics("BLEU", system, refs)
    p = sig.paired_test("BLEU", b, s, "bs-sacrebleu", n_samples=200, seed=11).p_value
    p_two = sig.paired_test("BLEU", b, s, "bs", n_samples=200, seed=11).p_value
    rng = np.random.default_rng(11)
    idx = rng.choice(len(refs), size=(200, len(refs)), replace=True)
    bleu = BLEU()
    sb = np.array([bleu._compute_score_from_stats(x).score for x in b.astype("float32")[idx].sum(1)])
    ss = np.array([bleu._compute_score_from_stats(x).score for x in s.astype("float32")[idx].sum(1)])
    diff = abs(sig.corpus_score("BLEU", b) - sig.corpus_score("BLEU", s))
    d = np.abs(ss - sb)
    assert p == (np.sum(d - d.mean() > diff) + 1) / 201
    signed = ss - sb
    assert p_two == (np.sum(np.abs(signed - signed.mean()) >= diff) + 1) / 201


def test_compare_systems_and_caption():
    refs, base, system = _corpus(n=40)
    out = sig.compare_systems({"base": base, "sys": system}, refs, "base", ("BLEU", "chrF"), ("bs", "ar"),
                              n_samples=100, seed=1)
    assert list(out) == ["sys"] and set(out["sys"]) == {"bs", "ar"}
    assert all(0 < out["sys"][t][m] <= 1 for t in ("bs", "ar") for m in ("BLEU", "chrF"))
    text = sig.caption(("bs", "ar"), 3)
    assert "two-sided" in text and "all 3 seeds of a sentence" in text and "1,000 resamples" in text \
        and "10,000 trials" in text
    with pytest.raises(ValueError, match="seed 2's translation has 39 lines"):
        sig.sentence_statistics("BLEU", [base[0], base[1][:-1]], refs)
    with pytest.raises(ValueError, match="unknown paired test"):
        sig.paired_test("BLEU", np.zeros((2, 10)), np.zeros((2, 10)), "t-test")


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_the_p_value_is_two_sided(test):
    """A system worse than the baseline by a margin gets the p-value of one better by it: swapping the two sides
    swaps the scores and keeps the p-value (a one-sided test would give the worse side a p-value near 1)."""
    refs, base, _ = _corpus(n=60)
    system = [[r if i % 10 == 0 else x for i, (r, x) in enumerate(zip(refs, lines))] for lines in base]
    for metric in ("BLEU", "chrF"):
        b = sig.sentence_statistics(metric, base, refs)
        s = sig.sentence_statistics(metric, system, refs)
        better = sig.paired_test(metric, b, s, test, n_samples=300, seed=5)
        worse = sig.paired_test(metric, s, b, test, n_samples=300, seed=5)
        assert better.system > better.baseline, metric
        assert (worse.baseline, worse.system) == (better.system, better.baseline)
        assert worse.p_value == better.p_value < 0.05, (metric, better.p_value, worse.p_value)


# --- issue 48: what the mutation run of significance.py left alive (84.9 % killed before these) ---


@pytest.mark.parametrize("metric", ["BLEU", "chrF"])
def test_statistics_of_other_seed_counts_are_refused_naming_the_ratio(metric):
    """3 seeds' statistics against 1 seed's of the same references: refused, with the reference counts' ratio."""
    refs, base, system = _corpus(n=12)
    one = sig.sentence_statistics(metric, base[:1], refs)
    three = sig.sentence_statistics(metric, system, refs)
    sig.check_same_seeds(metric, one, sig.sentence_statistics(metric, system[:1], refs))  # same seeds: accepted
    with pytest.raises(ValueError) as e:
        sig.check_same_seeds(metric, one, three)
    assert str(e.value) == ("the system's statistics are not of as many seeds' translations of the same references as "
                            "the baseline's (the system's reference counts are 3 times the baseline's): give every "
                            "system as many seeds as the baseline")
    with pytest.raises(ValueError, match="3 times the baseline's"):
        sig.paired_test(metric, one, three)
    # a baseline whose reference counts are all 0 (empty references) gives no ratio
    empty = np.zeros_like(one)
    with pytest.raises(ValueError) as e:
        sig.check_same_seeds(metric, empty, three)
    assert str(e.value) == ("the system's statistics are not of as many seeds' translations of the same references as "
                            "the baseline's: give every system as many seeds as the baseline")


def test_the_reference_columns_are_the_ones_that_depend_on_the_references_alone():
    assert sig._reference_columns(BLEU()) == slice(1, 2)
    assert sig._reference_columns(CHRF()) == slice(1, None, 3)
    assert sig._reference_columns(object()) is None


def test_p_value_is_one_only_for_equal_scores():
    sample = np.array([0.5, -0.5, 2.0, 0.0])
    from sacrebleu.significance import _compute_p_value

    assert sig.p_value(sample, 0.0) == 1.0
    assert sig.p_value(sample, 1.0) == float(_compute_p_value(sample, 1.0)) == 2 / 5


@pytest.mark.parametrize("value,expected", [("none", None), ("None", None), ("NONE", None), ("7", 7)])
def test_the_resampling_seed_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("SACREBLEU_SEED", value)
    assert sig.resampling_seed() == expected and sig.resampling_seed(3) == 3
    monkeypatch.delenv("SACREBLEU_SEED")
    assert sig.resampling_seed() == sig.DEFAULT_SEED == 12345


def test_the_default_test_is_the_bootstrap_and_bad_calls_say_what_is_wrong():
    refs, base, system = _corpus(n=30)
    b, s = (sig.sentence_statistics("BLEU", x[:1], refs) for x in (base, system))
    assert sig.paired_test("BLEU", b, s) == sig.paired_test("BLEU", b, s, "bs")
    with pytest.raises(ValueError) as e:
        sig.paired_test("BLEU", b, s, "zz")
    assert str(e.value) == f"unknown paired test 'zz'; choose from {', '.join(sig.DEFAULT_SAMPLES)}"
    with pytest.raises(ValueError) as e:
        sig.paired_test("BLEU", b, s[:-1])
    assert str(e.value) == f"the baseline has statistics {b.shape}, the system {s[:-1].shape}"


def test_compare_systems_passes_its_resamples_and_seed_to_each_test(monkeypatch):
    refs, base, system = _corpus(n=40)
    calls = []
    real = sig.paired_test

    def spy(metric, b, s, test, n_samples, seed):
        calls.append((metric, test, n_samples, seed))
        return real(metric, b, s, test, n_samples, seed)

    monkeypatch.setattr(sig, "paired_test", spy)
    sig.compare_systems({"base": base, "sys": system}, refs, "base", metrics=("BLEU",), tests=("bs", "ar"),
                        n_samples=50, seed=3)
    assert calls == [("BLEU", "bs", 50, 3), ("BLEU", "ar", 50, 3)]
    calls.clear()
    sig.compare_systems({"base": base, "sys": system}, refs, "base")
    assert calls == [("BLEU", "bs", 0, sig.DEFAULT_SEED)]
    with pytest.raises(ValueError) as e:
        sig.compare_systems({"base": base, "sys": system[:2]}, refs, "base")
    assert str(e.value) == ("sys has 2 seeds' translations, the baseline base 3: give every system as many seeds as "
                            "the baseline")


def test_the_caption_names_the_unit_the_tests_and_the_baseline():
    one = sig.caption(["bs"], 1)
    assert one == ("p: paired tests against the baseline, two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ "
                   "|Δ|) (1,000 resamples), on sacreBLEU's sentence statistics; unit: the test sentence; p = 1 where "
                   "the scores are equal; * p < 0.05.")
    two = sig.caption(["bs", "ar"], 2, baseline="transformer")
    assert two.startswith("p: paired tests against transformer, two-sided paired bootstrap resampling (|Δ* − mean "
                          "Δ*| ≥ |Δ|) (1,000 resamples) and two-sided approximate randomization (10,000 trials), on "
                          "sacreBLEU's")
    koehn = sig.caption(["bs-sacrebleu"], 1, n_samples=200)
    assert koehn.startswith("p: paired tests against the baseline, sacreBLEU's paired bootstrap statistic (|Δ*| − "
                            "mean |Δ*| > |Δ|: one tail where Δ* keeps its sign, about half the two-sided p) (200 "
                            "resamples), on") and "two-sided" not in koehn.replace("half the two-sided p", "")
    assert "unit: the test sentence, each resample carrying (or each trial swapping) the lines of all 2 seeds of a "\
           "sentence together;" in two


# --- issue 56: the paired bootstrap is two-sided, as the tables say; sacreBLEU's statistic is `bs-sacrebleu` ---


def test_the_two_sided_bootstrap_counts_both_tails_of_the_centred_difference():
    """Resampled differences 1..9 (mean 5): centred, -4..4. ``|Δ* - mean Δ*| >= |Δ|`` counts both tails, and the
    observed difference's sign does not matter; sacreBLEU's ``|Δ*| - mean |Δ*| > |Δ|`` on the same (all positive)
    differences counts the upper tail only."""
    d = np.arange(1.0, 10.0)
    assert sig.two_sided_bootstrap_p(d, 3.0) == sig.two_sided_bootstrap_p(d, -3.0) == (4 + 1) / 10
    assert sig.two_sided_bootstrap_p(d, 4.0) == (2 + 1) / 10  # -4 and 4: ">=" counts the ties
    assert sig.two_sided_bootstrap_p(d, 4.5) == 1 / 10
    assert sig.two_sided_bootstrap_p(d, 0.0) == 1.0  # equal scores: no evidence
    assert sig.two_sided_bootstrap_p(-d, 3.0) == 0.5  # a worse system's differences: the same p
    koehn = np.abs(d) - np.abs(d).mean()
    assert sig.p_value(koehn, 3.0) == (1 + 1) / 10  # 4 only: one tail


def _null_rejections(n_sets=2000, n_resamples=999, seed=0):
    """A symmetric null, simulated: the observed difference ``Δ ~ N(0, 1)`` (no true difference) and its bootstrap
    distribution ``Δ* ~ N(Δ, 1)``. Returns the p-values of the two-sided test and of sacreBLEU's statistic."""
    rng = np.random.default_rng(seed)
    two, koehn = [], []
    for _ in range(n_sets):
        observed = rng.normal()
        star = rng.normal(observed, 1.0, size=n_resamples)
        two.append(sig.two_sided_bootstrap_p(star, abs(observed)))
        folded = np.abs(star)
        koehn.append(sig.p_value(folded - folded.mean(), abs(observed)))
    return np.array(two), np.array(koehn)


def test_against_a_symmetric_null_the_two_sided_p_is_uniform_and_sacrebleus_is_not():
    """Under no true difference the two-sided p-value is uniform: p < α in a fraction α of the test sets (2,000
    sets: within three binomial standard errors). sacreBLEU's statistic rejects about twice as often at 0.05 and
    never reaches 0.5 (measured: 0.0475 and 0.503 against 0.116 and 0.0)."""
    two, koehn = _null_rejections()
    for alpha in (0.05, 0.1, 0.5):
        se = (alpha * (1 - alpha) / len(two)) ** 0.5
        assert abs((two < alpha).mean() - alpha) < 3 * se, (alpha, (two < alpha).mean())
    assert (koehn < 0.05).mean() > 0.09 and (koehn < 0.5).mean() > 0.99


def test_where_the_resamples_keep_their_sign_the_two_sided_p_is_about_twice_sacrebleus():
    """The case of the issue: a system 3 BLEU better on 120 sentences, 3 seeds; its resampled differences rarely
    change sign (44 of 1,000), so sacreBLEU's statistic counts one tail: p 0.043, "significant", where the two-sided
    bootstrap gives 0.093 and the approximate randomization (two-sided, another test) 0.107."""
    refs, base, system = _corpus(n=120, seed=0)
    b = sig.sentence_statistics("BLEU", base, refs)
    s = sig.sentence_statistics("BLEU", system, refs)
    two = sig.paired_test("BLEU", b, s, "bs", seed=1)
    koehn = sig.paired_test("BLEU", b, s, "bs-sacrebleu", seed=1)
    ar = sig.paired_test("BLEU", b, s, "ar", n_samples=2000, seed=1)
    assert two.system - two.baseline == pytest.approx(3.0465, abs=1e-4)
    assert (two.p_value, koehn.p_value) == (93 / 1001, 43 / 1001)
    assert koehn.p_value < 0.05 <= two.p_value and 1.8 < two.p_value / koehn.p_value < 2.5
    assert abs(two.p_value - ar.p_value) < 0.03
    # the same resamples, the same scores, means and intervals: only the statistic differs
    assert two[:2] == koehn[:2] and two[3:] == koehn[3:]
    idx = np.random.default_rng(1).choice(len(refs), size=(1000, len(refs)), replace=True)
    bleu = BLEU()
    delta = (np.array([bleu._compute_score_from_stats(x).score for x in s.astype("float32")[idx].sum(1)])
             - np.array([bleu._compute_score_from_stats(x).score for x in b.astype("float32")[idx].sum(1)]))
    assert int((delta <= 0).sum()) == 44  # 4.4% of the resamples change sign


def test_compare_systems_names_an_unknown_baseline_and_a_flat_list():
    """Issue 56.7: a flat list of lines (one seed given without its list) was read as seeds of one line each and
    said "37 lines" (the characters of the first); an unknown baseline was a bare KeyError."""
    refs, base, system = _corpus(n=20)
    with pytest.raises(ValueError) as e:
        sig.compare_systems({"base": base[0], "sys": system[0]}, refs, "base")
    assert str(e.value) == ("base: give its translations as one list of lines per seed ([lines] for one seed), not "
                            "one list of lines")
    with pytest.raises(ValueError) as e:
        sig.compare_systems({"base": base, "sys": system}, refs, "transformer")
    assert str(e.value) == "the baseline 'transformer' is not one of the systems ('base', 'sys')"
    assert set(sig.compare_systems({"base": [base[0]], "sys": [system[0]]}, refs, "base", n_samples=50)) == {"sys"}


# ----------------------------------------------------------------------------- issue 57.4: sacreBLEU's private API
def _pinned_sacrebleu():
    """The sacreBLEU range of setup.py, ``(lowest, first excluded)`` as tuples of ints."""
    import re
    from pathlib import Path

    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text(encoding="utf-8")
    low, high = re.search(r'"sacrebleu>=([\d.]+),<([\d.]+)"', setup).groups()
    return tuple(map(int, low.split("."))), tuple(map(int, high.split(".")))


def test_the_installed_sacrebleu_has_the_private_methods_the_tests_read_and_is_in_the_pinned_range():
    """significance.py reaches sacreBLEU's sentence statistics through two private methods (its public API gives
    none: the comment above :func:`sacrebleu_statistics`); setup.py pins the versions they were checked with."""
    import sacrebleu

    low, high = _pinned_sacrebleu()
    version = tuple(int(x) for x in sacrebleu.__version__.split(".")[:3])
    assert low <= version < high, (sacrebleu.__version__, low, high)
    for metric in (BLEU(), CHRF()):
        assert callable(metric._extract_corpus_statistics) and callable(metric._compute_score_from_stats)


@pytest.mark.parametrize("metric", [BLEU(), CHRF(), BLEU(tokenize="none", smooth_method="none", force=True)])
def test_the_sentence_statistics_are_sacrebleus_and_sum_to_its_corpus_score(metric):
    """The two private methods read as the comment says: a row per line (BLEU: 2 lengths and 4 + 4 n-gram counts;
    chrF2: 3 counts for each of its 6 character n-gram orders, no word n-gram), and the score of their sum is
    ``corpus_score``'s."""
    refs, base, _ = _corpus(n=30)
    stats = np.array(sig.sacrebleu_statistics(metric, base[0], refs))
    assert stats.shape == (30, 10 if isinstance(metric, BLEU) else 18)
    assert sig.score_of_statistics(metric, stats.sum(0)) == metric.corpus_score(base[0], [refs]).score
    assert [sig.score_of_statistics(metric, row) for row in stats[:3]] == [
        metric.corpus_score([h], [[r]]).score for h, r in zip(base[0][:3], refs[:3])]


def test_the_p_value_counts_the_statistics_above_the_difference_as_sacrebleu_does():
    """:func:`p_value` writes out sacreBLEU's ``_compute_p_value`` (no longer imported): ``(c + 1) / (n + 1)``,
    ``c`` the statistics strictly above the difference; 1 for no difference."""
    from sacrebleu.significance import _compute_p_value

    sample = np.array([0.5, 1.0, 1.0, 2.0, 3.0, -1.0])
    for difference in (0.9, 1.0, 2.5, 4.0):
        assert sig.p_value(sample, difference) == _compute_p_value(sample, difference)
    assert sig.p_value(sample, 1.0) == 3 / 7 and sig.p_value(sample, 0.0) == 1.0
