"""Paired significance tests whose unit is the test sentence, for systems translated by several training seeds.

The translations of seeds 1..k of a system are not k independent samples of the test set: the k lines of one
source sentence share its difficulty. Pooling them as k·N lines and resampling lines (what sacreBLEU's tests do
when given the concatenation) over-states significance: k identical copies of one seed give a far smaller p-value
than that seed alone. Here the unit is the sentence, as in MultEval (Clark et al., 2011):

* **paired bootstrap** (a cluster bootstrap): a resample draws N sentences with replacement and carries every
  seed's line of each drawn sentence, for the system and the baseline alike;
* **approximate randomization** (stratified over the seeds): a trial swaps, sentence by sentence with probability
  1/2, all the seeds' lines of the system with the baseline's.

Both work on sacreBLEU's own per-sentence sufficient statistics (BLEU's n-gram matches and lengths, chrF's
character and word n-gram counts), summed over a sentence's seeds, and compute every score with sacreBLEU's own
functions, so the pooled corpus score (all k·N lines) is sacreBLEU's.

Every p-value is ``(c + 1) / (n + 1)`` over ``n`` resamples or trials (MultEval's), and 1 where the two corpus
scores are equal (a system against itself: no evidence of a difference). The tests (``test``):

* ``bs``: the **two-sided** paired bootstrap: ``c`` counts the resamples whose difference ``Δ* = score_system* -
  score_baseline*``, centred on its bootstrap mean, is at least as far from 0 as the observed one:
  ``|Δ* - mean Δ*| >= |Δ|``; this is the null distribution of ``Δ`` shifted to 0, both tails;
* ``ar``: approximate randomization, sacreBLEU's ``--paired-ar`` exactly for one seed (same statistic
  ``|score_a - score_b|``, same random draws, same p-value); two-sided;
* ``bs-sacrebleu``: sacreBLEU's ``--paired-bs`` statistic exactly for one seed (Koehn's, 2004, as Moses'
  ``bootstrap-hypothesis-difference-significance.pl``): ``|Δ*| - mean |Δ*| > |Δ|``. Where the resampled differences
  rarely change sign (any difference worth testing), ``|Δ*| - mean |Δ*|`` is ``Δ* - mean Δ*`` on one side only, so
  this counts one tail: about half the two-sided p-value (the converged Multi30k LISA on test2016: 0.029 where
  ``bs`` gives 0.06). Kept to reproduce sacreBLEU's numbers, not for the tables.

The one difference from sacreBLEU in ``ar`` and ``bs-sacrebleu``: where the corpus scores are equal the p-value is 1,
where sacreBLEU's ``_compute_p_value`` counts the resamples whose statistic is ``> 0`` and so gives ``1/(n+1)``,
"significant" (0.0010 bootstrap, 0.0001 AR).

Every system must have the translations of as many seeds as the baseline (the statistics of k seeds are sums of k
lines per sentence: a comparison of 3 seeds with 1 is meaningless): refused here, not only by the command line.
"""
import os
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

#: the tests and their default numbers of resamples / trials: sacreBLEU's (PairedTest._DEFAULT_SAMPLES)
DEFAULT_SAMPLES = {"bs": 1000, "ar": 10000, "bs-sacrebleu": 1000}
#: sacreBLEU's default seed (SACREBLEU_SEED)
DEFAULT_SEED = 12345
#: how each test is named in captions, with its statistic
TEST_NAMES = {"bs": "two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|)",
              "ar": "two-sided approximate randomization",
              "bs-sacrebleu": "sacreBLEU's paired bootstrap statistic (|Δ*| − mean |Δ*| > |Δ|: one tail where Δ* "
                              "keeps its sign, about half the two-sided p)"}
#: how each test is named in a table's column header, short
TEST_LABELS = {"bs": "two-sided bootstrap", "ar": "two-sided randomization", "bs-sacrebleu": "sacreBLEU bootstrap"}
#: the tests whose p-value is two-sided
TWO_SIDED = ("bs", "ar")
#: the level below which a p-value is significant: the ``*`` of every table
LEVEL = 0.05


def significant(p_value: Optional[float]) -> bool:
    """The ``*`` of the tables: p < 0.05 (:data:`LEVEL`); None (no test) is not significant."""
    return p_value is not None and p_value < LEVEL


class PairedResult(NamedTuple):
    """One paired test: corpus scores, the p-value, and (paired bootstrap only, else None) the bootstrap mean and
    95 % confidence half-width of each side's resampled scores (sacreBLEU's ``estimate_ci``)."""
    baseline: float
    system: float
    p_value: float
    baseline_mean: Optional[float] = None
    baseline_ci: Optional[float] = None
    mean: Optional[float] = None
    ci: Optional[float] = None


def resampling_seed(seed: Optional[int] = None) -> Optional[int]:
    """The tests' random seed: ``seed``, else ``$SACREBLEU_SEED`` (``none``: fresh entropy), else sacreBLEU's
    default, 12345."""
    if seed is not None:
        return seed
    env = os.environ.get("SACREBLEU_SEED", str(DEFAULT_SEED))
    return None if env.lower() == "none" else int(env)


def _metric(metric):
    """A sacreBLEU metric: ``BLEU`` or ``chrF`` with sacreBLEU's defaults, or a configured metric object."""
    from sacrebleu.metrics import BLEU, CHRF

    if not isinstance(metric, str):
        return metric
    return {"BLEU": BLEU, "chrF": CHRF}[metric]()


# sacreBLEU's statistics are reached through two private methods of its metrics, the ones its own paired tests
# (sacrebleu.significance: _paired_bs_test, _paired_ar_test, _bootstrap_resample) are built on, because its public API
# has none that gives them (checked in sacreBLEU 2.6.0's source, issue 57.4):
# * per-sentence sufficient statistics: corpus_score() and sentence_score() return a Score. BLEU's (BLEUScore) carries
#   its counts, totals and lengths, but chrF's (CHRFScore) only the score: chrF's character and word n-gram
#   statistics of a sentence exist only in Metric._extract_corpus_statistics;
# * the score of summed statistics (each resample's, each trial's): Metric._compute_score_from_stats; BLEU has a public
#   static BLEU.compute_bleu, chrF none;
# * the public PairedTest runs sacreBLEU's tests on the lines it is given: it cannot move a sentence's lines of several
#   seeds together, nor give the two-sided bootstrap.
# Through the same two methods, one seed's ar and bs-sacrebleu are sacreBLEU's --paired-ar / --paired-bs to the last
# digit (tests/unit/test_significance.py, tests/unit/test_evaluate.py). setup.py pins the sacreBLEU versions this was
# checked with (2.0.0, 2.3.3 and 2.6.0: the tests of these two files pass with each); tests/unit/test_significance.py
# checks that the installed one has both methods and lies in that range. These two functions are the only callers.


def sacrebleu_statistics(metric, hypotheses: Sequence[str], references: Sequence[str]) -> List[List[float]]:
    """sacreBLEU's sufficient statistics of each line of ``hypotheses`` against its one reference (a list per line:
    BLEU's lengths, n-gram matches and totals; chrF's character and word n-gram counts), from the sacreBLEU metric
    object ``metric``: its private ``_extract_corpus_statistics`` (see above why)."""
    return metric._extract_corpus_statistics(list(hypotheses), [list(references)])


def score_of_statistics(metric, stats) -> float:
    """The score the sacreBLEU metric object ``metric`` gives statistics summed over sentences (one row of
    :func:`sacrebleu_statistics`' columns): its private ``_compute_score_from_stats`` (see above why)."""
    return metric._compute_score_from_stats(stats).score


def sentence_statistics(metric_name, hypotheses: Sequence[Sequence[str]], references: Sequence[str]) -> np.ndarray:
    """``(N, K)``: sacreBLEU's sufficient statistics of metric ``metric_name`` (``BLEU`` or ``chrF``, or a
    sacreBLEU metric object) of every test sentence, summed over its lines in ``hypotheses`` (one list of N lines
    per seed).

    Raises:
        ValueError: a seed's hypotheses are not as many lines as the references.
    """
    metric = _metric(metric_name)
    total = None
    for k, hyps in enumerate(hypotheses):
        if len(hyps) != len(references):
            raise ValueError(f"seed {k + 1}'s translation has {len(hyps)} lines, the reference {len(references)}")
        stats = np.array(sacrebleu_statistics(metric, hyps, references))
        total = stats if total is None else total + stats
    return total


def _reference_columns(metric) -> Optional[slice]:
    """The columns of a metric's sentence statistics that depend on the reference alone (BLEU: its length;
    chrF: its n-gram counts), hence equal for two systems of as many seeds on the same references."""
    from sacrebleu.metrics import BLEU, CHRF

    if isinstance(metric, BLEU):
        return slice(1, 2)
    if isinstance(metric, CHRF):
        return slice(1, None, 3)
    return None


def check_same_seeds(metric_name, baseline: np.ndarray, system: np.ndarray) -> None:
    """Refuse statistics that are not of as many seeds' translations of the same references.

    Raises:
        ValueError: the reference columns (:func:`_reference_columns`) differ, e.g. 3 seeds' sums against 1's.
    """
    cols = _reference_columns(_metric(metric_name))
    if cols is None:
        return
    b, s = baseline[:, cols].sum(), system[:, cols].sum()
    if not np.array_equal(baseline[:, cols], system[:, cols]):
        ratio = f" (the system's reference counts are {s / b:g} times the baseline's)" if b else ""
        raise ValueError(f"the system's statistics are not of as many seeds' translations of the same references as "
                         f"the baseline's{ratio}: give every system as many seeds as the baseline")


def p_value(sample: np.ndarray, difference: float) -> float:
    """The p-value of an observed ``difference`` given the resampled statistics ``sample``: sacreBLEU's
    (``sacrebleu.significance._compute_p_value``, written out here rather than imported: a private function of two
    lines), ``(c + 1) / (n + 1)`` with ``c`` the resamples whose statistic exceeds the difference, but 1 where the
    observed difference is 0 (equal scores: no evidence of a difference, where sacreBLEU's count of ``> 0`` gives
    ``1/(n+1)``)."""
    if difference == 0:
        return 1.0
    return (int(np.sum(sample > difference)) + 1) / (len(sample) + 1)


def two_sided_bootstrap_p(differences: np.ndarray, difference: float) -> float:
    """The two-sided paired bootstrap's p-value: ``(c + 1) / (n + 1)``, ``c`` the resampled differences
    ``Δ*`` (signed, system minus baseline) with ``|Δ* - mean Δ*| >= |difference|``; 1 where ``difference`` is 0.

    Centring ``Δ*`` on its mean moves the bootstrap distribution of the difference to the null hypothesis (no
    difference); both of its tails count."""
    if difference == 0:
        return 1.0
    c = int(np.sum(np.abs(differences - differences.mean()) >= abs(difference)))
    return (c + 1) / (len(differences) + 1)


def corpus_score(metric_name, stats: np.ndarray) -> float:
    """The corpus score of statistics ``(N, K)`` (sacreBLEU's: the sum over sentences, then the metric)."""
    return score_of_statistics(_metric(metric_name), stats.sum(0))


def paired_test(metric_name, baseline: np.ndarray, system: np.ndarray, test: str = "bs",
                n_samples: int = 0, seed: Optional[int] = DEFAULT_SEED) -> PairedResult:
    """Paired test of ``system`` against ``baseline``, both :func:`sentence_statistics` of the same N sentences:
    ``(baseline score, system score, p-value, ...)`` (:class:`PairedResult`).

    ``bs``: the two-sided paired bootstrap (:func:`two_sided_bootstrap_p`) on sacreBLEU's resamples of the
    sentences (``_paired_bs_test``'s draws); ``bs-sacrebleu``: the same resamples with sacreBLEU's own statistic
    (``|Δ*| - mean |Δ*|``, one tail where ``Δ*`` keeps its sign); ``ar``: sacreBLEU's approximate randomization
    (``_paired_ar_test``), swapping whole sentences. Scores, the random draws (numpy's ``default_rng(seed)``) and,
    for ``bs-sacrebleu`` and ``ar``, the p-value (``(c + 1) / (n + 1)``, MultEval's; 1 where the scores are equal:
    :func:`p_value`) are sacreBLEU's, so one seed gives sacreBLEU's p-value.

    Args:
        n_samples: resamples (``bs``, ``bs-sacrebleu``) or trials (``ar``); 0: sacreBLEU's defaults, 1,000 and
            10,000.
        seed: the resampling seed (None: fresh entropy).

    Raises:
        ValueError: an unknown test, statistics of other shapes, or of another number of seeds
            (:func:`check_same_seeds`).
    """
    from sacrebleu.significance import estimate_ci

    if test not in DEFAULT_SAMPLES:
        raise ValueError(f"unknown paired test {test!r}; choose from {', '.join(DEFAULT_SAMPLES)}")
    if baseline.shape != system.shape:
        raise ValueError(f"the baseline has statistics {baseline.shape}, the system {system.shape}")
    check_same_seeds(metric_name, baseline, system)
    metric = _metric(metric_name)
    n = n_samples or DEFAULT_SAMPLES[test]
    rng = np.random.default_rng(seed)
    N = len(baseline)
    base_score = score_of_statistics(metric, baseline.sum(0))
    sys_score = score_of_statistics(metric, system.sum(0))
    diff = abs(base_score - sys_score)
    if test != "ar":
        idxs = rng.choice(N, size=(n, N), replace=True)
        b, s = baseline.astype("float32"), system.astype("float32")  # as sacreBLEU resamples them
        scores_b = np.array([score_of_statistics(metric, x) for x in b[idxs].sum(1)])
        scores_s = np.array([score_of_statistics(metric, x) for x in s[idxs].sum(1)])
        if test == "bs":
            p = two_sided_bootstrap_p(scores_s - scores_b, diff)
        else:
            sample = np.abs(scores_s - scores_b)
            p = p_value(sample - sample.mean(), diff)
        # sacreBLEU resamples the baseline alone with the same seed, hence the same draws
        return PairedResult(base_score, sys_score, float(p), *estimate_ci(scores_b), *estimate_ci(scores_s))
    else:
        pos = rng.integers(2, size=(n, N), dtype=bool)
        neg = ~pos
        shuf_a, shuf_b = pos @ baseline + neg @ system, neg @ baseline + pos @ system
        scores_a = np.array([score_of_statistics(metric, x) for x in shuf_a])
        scores_b = np.array([score_of_statistics(metric, x) for x in shuf_b])
        p = p_value(np.abs(scores_a - scores_b), diff)
    return PairedResult(base_score, sys_score, float(p))


def compare_systems(hypotheses: Dict[str, Sequence[Sequence[str]]], references: Sequence[str], baseline: str,
                    metrics: Sequence[str] = ("BLEU",), tests: Sequence[str] = ("bs",), n_samples: int = 0,
                    seed: Optional[int] = DEFAULT_SEED) -> Dict[str, Dict[str, Dict[str, float]]]:
    """Every system against ``baseline``, the sentence as the unit: ``{system: {test: {metric: p}}}``.

    Args:
        hypotheses: system -> its translations, one list of lines per seed (seed ``s`` of a system is paired
            with seed ``s`` of the baseline only through the sentence: all seeds of a sentence move together).
        references: the N reference lines.

    Raises:
        ValueError: an unknown ``baseline``, a system given as one list of lines (not one list per seed), or a
            system with another number of seeds than the baseline.
    """
    if baseline not in hypotheses:
        raise ValueError(f"the baseline {baseline!r} is not one of the systems ({', '.join(map(repr, hypotheses))})")
    for name, hyps in hypotheses.items():
        if isinstance(hyps, str) or any(isinstance(lines, str) for lines in hyps):
            raise ValueError(f"{name}: give its translations as one list of lines per seed ([lines] for one seed), "
                             f"not one list of lines")
    for name, hyps in hypotheses.items():
        if len(hyps) != len(hypotheses[baseline]):
            raise ValueError(f"{name} has {len(hyps)} seeds' translations, the baseline {baseline} "
                             f"{len(hypotheses[baseline])}: give every system as many seeds as the baseline")
    stats = {m: {name: sentence_statistics(m, hyps, references) for name, hyps in hypotheses.items()}
             for m in metrics}
    out: Dict[str, Dict[str, Dict[str, float]]] = {}
    for name in hypotheses:
        if name == baseline:
            continue
        out[name] = {t: {m: paired_test(m, stats[m][baseline], stats[m][name], t, n_samples, seed).p_value
                         for m in metrics} for t in tests}
    return out


def samples_text(test: str, n_samples: int = 0) -> str:
    """``1,000 resamples`` / ``10,000 trials``: how many a test draws."""
    return f"{n_samples or DEFAULT_SAMPLES[test]:,} {'trials' if test == 'ar' else 'resamples'}"


def caption(tests: Sequence[str], seeds: int, n_samples: int = 0, baseline: str = "the baseline") -> str:
    """What a table's p-values are: which tests (two-sided or not, and their statistics), the unit, the number of
    resamples."""
    parts = [f"{TEST_NAMES[t]} ({samples_text(t, n_samples)})" for t in tests]
    unit = ("the test sentence, each resample carrying (or each trial swapping) the lines of all "
            f"{seeds} seeds of a sentence together" if seeds > 1 else "the test sentence")
    return (f"p: paired tests against {baseline}, " + " and ".join(parts)
            + f", on sacreBLEU's sentence statistics; unit: {unit}; p = 1 where the scores are equal; * p < 0.05.")
