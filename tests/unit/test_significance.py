"""Paired tests with the test sentence as the unit (syntax_nmt/significance.py), against sacreBLEU's own."""

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


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_one_seed_is_sacrebleus_own_test(test, monkeypatch):
    """For one seed the statistic, the random draws and the p-value are sacreBLEU's (``sacrebleu --paired-*``)."""
    refs, base, system = _corpus()
    expect = _sacrebleu(base[0], system[0], refs, test, 7, monkeypatch)
    for metric in ("BLEU", "chrF"):
        b = sig.sentence_statistics(metric, [base[0]], refs)
        s = sig.sentence_statistics(metric, [system[0]], refs)
        b_score, s_score, p = sig.paired_test(metric, b, s, test, seed=7)[:3]
        assert p == expect[metric]
        metric_obj = BLEU() if metric == "BLEU" else CHRF()
        assert b_score == pytest.approx(metric_obj.corpus_score(base[0], [refs]).score, abs=1e-9)
        assert s_score == pytest.approx(metric_obj.corpus_score(system[0], [refs]).score, abs=1e-9)


@pytest.mark.parametrize("test", ["bs", "ar"])
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
        lines = _sacrebleu(base[0] * 3, system[0] * 3, refs * 3, test, 3, monkeypatch)[metric]
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
    on the same pooled data (and equals a bootstrap over the per-sentence sums done by hand)."""
    refs, base, system = _corpus(n=60, seed=4)
    b = sig.sentence_statistics("BLEU", base, refs)
    s = sig.sentence_statistics("BLEU", system, refs)
    p = sig.paired_test("BLEU", b, s, "bs", n_samples=200, seed=11).p_value
    rng = np.random.default_rng(11)
    idx = rng.choice(len(refs), size=(200, len(refs)), replace=True)
    bleu = BLEU()
    sb = np.array([bleu._compute_score_from_stats(x).score for x in b.astype("float32")[idx].sum(1)])
    ss = np.array([bleu._compute_score_from_stats(x).score for x in s.astype("float32")[idx].sum(1)])
    diff = abs(sig.corpus_score("BLEU", b) - sig.corpus_score("BLEU", s))
    d = np.abs(ss - sb)
    assert p == (np.sum(d - d.mean() > diff) + 1) / 201


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
