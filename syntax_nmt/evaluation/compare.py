"""Systems compared over training seeds: mean ± sd of each metric, paired significance against the baseline
with the test sentence as the unit, a table and a bar chart. Shared by ``make demo`` and the recipes.

The paired tests (:mod:`syntax_nmt.evaluation.significance`) resample or swap test *sentences*, each carrying the lines of
every seed: a cluster bootstrap and an approximate randomization stratified over the seeds (MultEval's), on
sacreBLEU's own sentence statistics. They say whether the systems' translations of these sentences differ beyond
the sampling of sentences; whether a method would win with another seed is the seeds' evidence, reported beside
them: each seed's own test, and in how many seeds the system beats the baseline.
"""

import math
import os
import textwrap
from typing import Dict, List, Optional, Sequence

from syntax_nmt.evaluation import significance as significance_tests
from syntax_nmt.evaluation.significance import resampling_seed  # noqa: F401  (its home: significance)
from syntax_nmt.utils import markdown_table, mean_sd, read_lines, write_lines

#: score keys (of :func:`syntax_nmt.evaluation.scoring.score`) -> labels in tables and plots
LABELS = {"sacrebleu": "sacreBLEU", "chrf": "chrF", "tokenized_bleu": "tok. BLEU",
          "lc_tokenized_bleu": "lc tok. BLEU", "compound_split_bleu": "split BLEU"}
#: metrics a paired test can use (on detokenized text): score key -> sacrebleu metric
TESTABLE = {"sacrebleu": ("BLEU",), "chrf": ("chrF",)}
TEST_NAMES = significance_tests.TEST_NAMES
TEST_LABELS = significance_tests.TEST_LABELS


def summarize(runs: Dict[tuple, dict], systems: Sequence[str], seeds: Sequence[int],
              metrics: Sequence[str] = ("sacrebleu",), params: Optional[Dict[str, int]] = None) -> List[dict]:
    """One row per system (in the order given, the baseline first).

    Args:
        runs: ``(system, seed)`` -> the scores of one translation (keys of :func:`syntax_nmt.evaluation.scoring.score`),
            optionally with ``train_seconds``, ``train_cpu_seconds``, ``generate_cpu_seconds``.
        metrics: score keys to aggregate; the first is the main one (``mean``/``sd`` of the row).

    Returns:
        Rows with, per metric ``m``: ``m`` (the per-seed list), ``m_mean``, ``m_sd`` (sample sd; 0 for one seed);
        ``mean``/``sd`` repeat the first metric's.
    """
    rows = []
    for name in systems:
        mine = [runs[(name, s)] for s in seeds]
        row = {"system": name, "seeds": list(seeds), "sentences": mine[0].get("sentences"),
               "signature": mine[0].get("signature")}
        for m in metrics:
            values = [r[m] for r in mine]
            mu, sd = mean_sd(values)
            row.update({m: values, f"{m}_mean": mu, f"{m}_sd": sd})
        row["mean"], row["sd"] = row[f"{metrics[0]}_mean"], row[f"{metrics[0]}_sd"]
        for key in ("train_seconds", "train_cpu_seconds", "generate_cpu_seconds"):
            if all(key in r for r in mine):
                row[key] = [r[key] for r in mine]
        if params is not None:
            row["params"] = params.get(name)
        rows.append(row)
    return rows


def significance(rows: List[dict], hypotheses: Dict[tuple, str], reference: str, seeds: Sequence[int],
                 tests: Sequence[str] = ("bs",), metrics: Sequence[str] = ("sacrebleu",),
                 pooled_dir: Optional[str] = None, per_seed: bool = True, seed: Optional[int] = None,
                 ref_name: str = "ref", n_samples: int = 0) -> None:
    """Paired tests of every row against the first, the test sentence as the unit (all seeds' lines of a sentence
    resampled or swapped together, :mod:`syntax_nmt.evaluation.significance`), and the seeds' own evidence.

    Adds to each row but the first: ``p`` = ``{test: {metric: p-value}}``, ``p_pooled`` (the first test and
    metric; "pooled": over the seeds' translations, the sentence the unit), ``wins`` (in how many seeds the first
    metric beats the baseline's same seed), and with ``per_seed`` ``p_per_seed`` (the first test and metric, each
    seed's translations alone). Every row gets ``tests`` = what the p-values are (for captions:
    :func:`syntax_nmt.evaluation.significance.caption`; ``stars``: the test of ``p_pooled``, the chart's stars).

    Args:
        hypotheses: ``(system, seed)`` -> detokenized hypotheses file (one line per reference line).
        reference: the raw reference file.
        pooled_dir: where the seeds' translations are also written concatenated (``ref_name`` and
            ``SYSTEM.detok``, for sacreBLEU's command line), if given.
        seed: the resampling seed (None: :func:`resampling_seed`).
        n_samples: resamples / trials (0: sacreBLEU's defaults).
    """
    unknown = [m for m in metrics if m not in TESTABLE]
    if unknown or any(t not in TEST_NAMES for t in tests):
        raise ValueError(f"paired tests take metrics {list(TESTABLE)} and tests {list(TEST_NAMES)}, "
                         f"got {list(metrics)} {list(tests)}")
    if len(rows) < 2:
        return
    rng_seed = resampling_seed(seed)
    refs = list(read_lines(reference))
    names = [r["system"] for r in rows]
    hyps = {n: [list(read_lines(hypotheses[(n, s)])) for s in seeds] for n in names}
    if pooled_dir:
        os.makedirs(pooled_dir, exist_ok=True)
        write_lines(os.path.join(pooled_dir, ref_name), refs * len(seeds))
        for n in names:
            write_lines(os.path.join(pooled_dir, n + ".detok"), [h for lines in hyps[n] for h in lines])
    # each seed's sentence statistics, extracted once: a system's are their sum over its seeds
    per_seed_stats = {m: {n: [significance_tests.sentence_statistics(TESTABLE[m][0], [lines], refs)
                              for lines in hyps[n]] for n in names} for m in metrics}
    stats = {m: {n: sum(per_seed_stats[m][n]) for n in names} for m in metrics}
    base, first = names[0], metrics[0]
    info = {"unit": "sentence", "two_sided": {t: t in significance_tests.TWO_SIDED for t in tests},
            "statistic": {t: TEST_NAMES[t] for t in tests}, "seeds": len(seeds), "resampling_seed": rng_seed,
            "samples": {t: n_samples or significance_tests.DEFAULT_SAMPLES[t] for t in tests}, "stars": tests[0]}
    for r in rows:
        r["tests"] = info
    for r in rows[1:]:
        n = r["system"]
        r["p"] = {t: {m: significance_tests.paired_test(TESTABLE[m][0], stats[m][base], stats[m][n], t, n_samples,
                                                        rng_seed).p_value for m in metrics} for t in tests}
        r["p_pooled"] = r["p"][tests[0]][first]
        if first in r and first in rows[0]:
            r["wins"] = sum(x > y for x, y in zip(r[first], rows[0][first]))
        if per_seed:
            r["p_per_seed"] = []
            for one_base, one in zip(per_seed_stats[first][base], per_seed_stats[first][n]):
                r["p_per_seed"].append(significance_tests.paired_test(
                    TESTABLE[first][0], one_base, one, tests[0], n_samples, rng_seed).p_value)


def results_table(rows: List[dict], metrics: Sequence[str], tests: Sequence[str] = ("bs",),
                  tested: Sequence[str] = ("sacrebleu",)) -> str:
    """A markdown table (:func:`~syntax_nmt.utils.markdown_table`): per metric mean ± sd (and the per-seed scores of
    the first), Δ of the first metric's mean to the baseline, the p-values of every test and tested metric over the
    seeds' translations, the sentence the unit (``*``: p < 0.05; each column headed by its test,
    :data:`~syntax_nmt.evaluation.significance.TEST_LABELS`), and where :func:`significance` gave them, the
    seeds' evidence: in how many seeds the system beats the baseline, and each seed's own p-value (the first test
    and metric)."""
    base = rows[0]
    head = ["system"]
    for i, m in enumerate(metrics):
        head.append(f"{LABELS.get(m, m)} mean ± sd")
        if i == 0:
            head += [f"{LABELS.get(m, m)} per seed", f"Δ {base['system']}"]
    head += [f"p {TEST_LABELS.get(t, t)} {LABELS.get(m, m)}" for t in tests for m in tested]
    wins = any("wins" in r for r in rows[1:])
    per_seed = any(r.get("p_per_seed") for r in rows[1:])
    if wins:
        head.append("seeds better")
    if per_seed:
        head.append(f"p per seed ({TEST_LABELS.get(tests[0], tests[0])} {LABELS.get(tested[0], tested[0])})")
    table = []
    for r in rows:
        cells = [r["system"]]
        for i, m in enumerate(metrics):
            cells.append(f"{r[m + '_mean']:.2f} ± {r[m + '_sd']:.2f}")
            if i == 0:
                cells.append(" ".join(f"{v:.2f}" for v in r[m]))
                cells.append("" if r is base else f"{r[m + '_mean'] - base[m + '_mean']:+.2f}")
        for t in tests:
            for m in tested:
                p = (r.get("p") or {}).get(t, {}).get(m)
                cells.append("" if p is None else f"{p:.4f}" + ("*" if significance_tests.significant(p) else ""))
        if wins:
            cells.append("" if "wins" not in r else f"{r['wins']}/{len(r[metrics[0]])}")
        if per_seed:
            cells.append(" ".join(f"{p:.3f}" + ("*" if significance_tests.significant(p) else "")
                                  for p in r.get("p_per_seed") or []))
        table.append(cells)
    return markdown_table(head, table)


def noise_bound(base: dict, other: dict, key: str = "sacrebleu") -> float:
    """Two standard errors of the difference of two means over seeds (seed-to-seed variation)."""
    return 2 * math.sqrt(base[key + "_sd"] ** 2 / len(base[key]) + other[key + "_sd"] ** 2 / len(other[key]))


def plot_bars(rows: List[dict], path: str, title: str, key: str = "sacrebleu", ylabel: Optional[str] = None) -> None:
    """Bar chart of one metric: mean (bar, value above it), sd (error bar), seeds (dots); ``*``: the row's
    ``p_pooled`` < 0.05 (the title names its test); the baseline's mean as a dotted line."""
    from syntax_nmt.utils import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 2), 4.5))
    x = list(range(len(rows)))
    means = [r[key + "_mean"] for r in rows]
    sds = [r[key + "_sd"] for r in rows]
    low = min(min(r[key]) for r in rows)
    high = max(max(r[key]) for r in rows)
    bottom = max(0.0, math.floor(low - 0.3 * (high - low) - 1.0))  # a whole number: the label says where
    colors = ["tab:gray"] + ["tab:blue"] * (len(rows) - 1)
    ax.bar(x, means, yerr=sds, capsize=4, color=colors, alpha=0.8)
    for i, r in enumerate(rows):
        ax.scatter([i] * len(r[key]), r[key], color="black", s=12, zorder=3)
        star = "*" if significance_tests.significant(r.get("p_pooled")) else ""
        top = max([means[i] + sds[i], *r[key]])
        ax.annotate(f"{means[i]:.2f}{star}", (i, top), xytext=(0, 3), textcoords="offset points", ha="center",
                    va="bottom", fontsize=8)
    ax.axhline(means[0], color="black", linewidth=0.8, linestyle=":")
    ax.set_ylim(bottom, high + 0.15 * (high - low) + 1.0)
    ax.set_xticks(x)
    ax.set_xticklabels([r["system"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel((ylabel or f"{LABELS.get(key, key)} (mean ± sd over seeds; dots: seeds)")
                  + (f"\n(axis from {bottom:g})" if bottom > 0 else ""))
    width = int(fig.get_figwidth() * 11)  # characters of a 9-point title line that fit the figure
    lines = [w for line in title.split("\n") for w in textwrap.wrap(line, width) or [""]]
    test = (rows[0].get("tests") or {}).get("stars")
    ax.set_title("\n".join(lines) + f"\n* {TEST_LABELS.get(test, 'paired test')} p < 0.05 against "
                 + rows[0]["system"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
