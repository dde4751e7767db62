"""Systems compared over training seeds: mean ± sd of each metric, paired significance against the baseline
on the seeds' translations pooled, a table and a bar chart. Shared by ``make demo`` and the recipes.

Pooling: seed s of a system is paired with seed s of the baseline; the hypotheses of all seeds are concatenated
(and the reference repeated), so the paired test (sacreBLEU's bootstrap resampling or approximate
randomization, :mod:`sacrebleu.significance`) resamples sentences of every seed at once. It says whether the
translations differ beyond sentence sampling, not whether the method would win with another seed: read the
differences of the means against the standard deviation over seeds.
"""

import math
import os
import textwrap
from typing import Dict, List, Optional, Sequence

from syntax_nmt.analyze.common import mean_sd

#: score keys (of :func:`syntax_nmt.evaluate.score`) -> labels in tables and plots
LABELS = {"sacrebleu": "sacreBLEU", "chrf": "chrF", "tokenized_bleu": "tok. BLEU",
          "lc_tokenized_bleu": "lc tok. BLEU", "compound_split_bleu": "split BLEU"}
#: metrics a paired test can use (on detokenized text): score key -> sacrebleu metric
TESTABLE = {"sacrebleu": ("BLEU",), "chrf": ("chrF",)}
TEST_NAMES = {"bs": "paired bootstrap resampling", "ar": "approximate randomization"}


def summarize(runs: Dict[tuple, dict], systems: Sequence[str], seeds: Sequence[int],
              metrics: Sequence[str] = ("sacrebleu",), params: Optional[Dict[str, int]] = None) -> List[dict]:
    """One row per system (in the order given, the baseline first).

    Args:
        runs: ``(system, seed)`` -> the scores of one translation (keys of :func:`syntax_nmt.evaluate.score`),
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


def _paired(named: List[tuple], refs: List[str], metrics: Sequence[str], test_type: str,
            seed: Optional[int]) -> Dict[str, List[float]]:
    """p-values of ``named[1:]`` against ``named[0]`` for each metric (sacrebleu.significance)."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    from syntax_nmt.evaluate import _sacrebleu_seed

    objects = {"BLEU": BLEU, "chrF": CHRF}
    with _sacrebleu_seed(seed):
        test = PairedTest(named, {m: objects[TESTABLE[m][0]]() for m in metrics}, references=[refs],
                          test_type=test_type, n_samples=0)
        _, scores = test()
    # sacrebleu keys the results by each metric's own name (BLEU, chrF2), in the order of the metrics given
    results = [v for k, v in scores.items() if k != "System"]
    return {m: [res.p_value for res in results[i][1:]] for i, m in enumerate(metrics)}


def significance(rows: List[dict], hypotheses: Dict[tuple, str], reference: str, seeds: Sequence[int],
                 tests: Sequence[str] = ("bs",), metrics: Sequence[str] = ("sacrebleu",),
                 pooled_dir: Optional[str] = None, per_seed: bool = True, seed: Optional[int] = None,
                 ref_name: str = "ref") -> None:
    """Paired tests of every row against the first, on the seeds' translations pooled (and per seed).

    Adds to each row but the first: ``p`` = ``{test: {metric: p-value}}`` (pooled), ``p_pooled`` (the first
    test and metric), and with ``per_seed`` ``p_per_seed`` (the first test and metric, one p-value per seed).

    Args:
        hypotheses: ``(system, seed)`` -> detokenized hypotheses file (one line per reference line).
        reference: the raw reference file.
        pooled_dir: where the pooled files are written (``ref_name`` and ``SYSTEM.detok``), if given.
        seed: the resampling seed (None: ``$SACREBLEU_SEED`` or sacrebleu's default).
    """
    from syntax_nmt.evaluate import read_lines, write_lines

    unknown = [m for m in metrics if m not in TESTABLE]
    if unknown or any(t not in TEST_NAMES for t in tests):
        raise ValueError(f"paired tests take metrics {list(TESTABLE)} and tests {list(TEST_NAMES)}, "
                         f"got {list(metrics)} {list(tests)}")
    if len(rows) < 2:
        return
    refs = read_lines(reference)
    names = [r["system"] for r in rows]
    pooled = {n: [h for s in seeds for h in read_lines(hypotheses[(n, s)])] for n in names}
    if pooled_dir:
        os.makedirs(pooled_dir, exist_ok=True)
        write_lines(os.path.join(pooled_dir, ref_name), refs * len(seeds))
        for n in names:
            write_lines(os.path.join(pooled_dir, n + ".detok"), pooled[n])
    for r in rows[1:]:
        r["p"] = {}
    for t in tests:
        res = _paired([(n, pooled[n]) for n in names], refs * len(seeds), metrics, t, seed)
        for i, r in enumerate(rows[1:]):
            r["p"][t] = {m: res[m][i] for m in metrics}
    for r in rows[1:]:
        r["p_pooled"] = r["p"][tests[0]][metrics[0]]
    if per_seed:
        for r in rows[1:]:
            r["p_per_seed"] = []
        for s in seeds:
            res = _paired([(n, read_lines(hypotheses[(n, s)])) for n in names], refs, metrics[:1], tests[0], seed)
            for i, r in enumerate(rows[1:]):
                r["p_per_seed"].append(res[metrics[0]][i])


def significant(p_value: Optional[float]) -> bool:
    """The ``*`` of the tables: p < 0.05."""
    return p_value is not None and p_value < 0.05


def markdown_table(rows: List[dict], metrics: Sequence[str], tests: Sequence[str] = ("bs",),
                   tested: Sequence[str] = ("sacrebleu",)) -> str:
    """A markdown table: per metric mean ± sd (and the per-seed scores of the first), Δ of the first metric's
    mean to the baseline, and the pooled p-values of every test and tested metric (``*``: p < 0.05)."""
    base = rows[0]
    head = ["system"]
    for i, m in enumerate(metrics):
        head.append(f"{LABELS.get(m, m)} mean ± sd")
        if i == 0:
            head += [f"{LABELS.get(m, m)} per seed", f"Δ {base['system']}"]
    head += [f"p {t} {LABELS.get(m, m)}" for t in tests for m in tested]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
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
                cells.append("" if p is None else f"{p:.4f}" + ("*" if significant(p) else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def noise_bound(base: dict, other: dict, key: str = "sacrebleu") -> float:
    """Two standard errors of the difference of two means over seeds (seed-to-seed variation)."""
    return 2 * math.sqrt(base[key + "_sd"] ** 2 / len(base[key]) + other[key + "_sd"] ** 2 / len(other[key]))


def plot_bars(rows: List[dict], path: str, title: str, key: str = "sacrebleu", ylabel: Optional[str] = None) -> None:
    """Bar chart of one metric: mean (bar, value above it), sd (error bar), seeds (dots); ``*``: the row's
    ``p_pooled`` < 0.05; the baseline's mean as a dotted line."""
    from syntax_nmt.analyze.common import pyplot

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
        star = "*" if significant(r.get("p_pooled")) else ""
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
    ax.set_title("\n".join(lines) + "\n* paired test p < 0.05 against " + rows[0]["system"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
