"""A syntax system against its baseline at several training budgets: does the gain survive a better-trained
baseline? One table per split (sacreBLEU and chrF of both systems, the difference, the two-sided paired tests with
the test sentence as the unit, the seeds better) and one chart (sacreBLEU against the budget, both systems, one
panel per split), from the translations the recipes keep (``DIR/SPLIT/SYSTEM.seedN.{tok,detok}.gz``, with the
trainings' records in ``DIR/training/``).

A budget point names the two systems as they are kept (e.g. ``transformer`` and ``lisa`` for the cpu preset,
``transformer-6400`` and ``lisa-6400`` for 6,400 updates), their seeds, and the tokens one update sees:

    python -m syntax_nmt.recipes.budget_curve --translations KEPT --refs PREP --eval E --out RESULTS/budget \\
        --point "1x:1600:2048:transformer:lisa:1 2 3" --point "4x:6400:2048:transformer-6400:lisa-6400:1 2" \\
        --point "converged:8000:8192:transformer-gpu:lisa-gpu:1"

writes ``RESULTS/budget.md``, ``.json`` and ``RESULTS/budget.png``. Points may pair other systems with their baselines
(``--point "converged-sgnet:8000:8192:transformer-gpu:sgnet-gpu:1"``); with ``--chart delta`` the chart draws, for
each series of points (:func:`series_of`: the system without the suffix it shares with its baseline, and what that
suffix says besides the budget), Δ sacreBLEU against the training done: where syntax helps, where it does not. ``UPDATES`` is the budget a point was given
(``MAX_UPDATE``). The x-axis is what the trainings ran: the updates run (the update each training ended at, its
record's ``updates``: fewer than the budget where patience stopped it) times the tokens of an update, the mean over
the point's trainings (both systems, every seed); a training whose record holds no updates (one older than the
records, or none kept) counts with the budget, and the table says how many were recorded (:func:`updates_run`).
"""

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from syntax_nmt.cli_errors import fail
from syntax_nmt.evaluation import compare, significance
from syntax_nmt.io_guard import parse_args, reads, updates, writes
from syntax_nmt.recipes import report as recipe_report
from syntax_nmt.recipes import training_record
from syntax_nmt.utils import markdown_table

PROG = "python -m syntax_nmt.recipes.budget_curve"


@dataclass(frozen=True)
class Point:
    """One training budget: ``updates`` updates of ``tokens`` tokens, ``baseline`` and ``system`` over ``seeds``."""
    label: str
    updates: int
    tokens: int
    baseline: str
    system: str
    seeds: tuple

    @classmethod
    def parse(cls, text: str) -> "Point":
        parts = text.split(":")
        if len(parts) != 6:
            raise ValueError(f"--point takes LABEL:UPDATES:TOKENS:BASELINE:SYSTEM:SEEDS, got {text!r}")
        label, updates, tokens, base, system, seeds = parts
        try:
            seed_list = tuple(int(s) for s in seeds.replace(",", " ").split())
            point = cls(label, int(updates), int(tokens), base, system, seed_list)
        except ValueError:
            raise ValueError(f"--point {text!r}: UPDATES, TOKENS and SEEDS must be integers") from None
        if not seed_list or len(set(seed_list)) != len(seed_list):
            raise ValueError(f"--point {text!r}: SEEDS must be distinct integers")
        if point.updates < 1 or point.tokens < 1:
            raise ValueError(f"--point {text!r}: UPDATES and TOKENS must be 1 or more")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", label):
            raise ValueError(f"--point {text!r}: LABEL names the point's folder under --eval: letters, digits and "
                             f"'._-', not starting with '.' or '-', got {label!r}")
        return point

    @property
    def million_tokens(self) -> float:
        """The budget in million tokens (``updates`` × ``tokens``); the x-axis is :func:`updates_run`'s."""
        return self.updates * self.tokens / 1e6

    @property
    def trainings(self) -> List[str]:
        """The names of the point's trainings, as :func:`records_of` keys them: the baseline's seeds, the system's."""
        return [f"{name} seed {s}" for name in (self.baseline, self.system) for s in self.seeds]


BUDGET_PART = re.compile(r"cpu|gpu|\d+")  # the parts of a kept name's suffix that say the budget, not the data


def series_of(point: Point) -> str:
    """The series a point belongs to on the Δ chart: its system without the suffix the system and the baseline share
    (``lisa-6400`` against ``transformer-6400``: ``lisa``), followed by what that suffix says besides the budget
    (``-gpu``, ``-cpu`` and numbers are the budget; ``lisa-gpu-p10``: ``lisa p10``; ``lisa-6400-drop03``:
    ``lisa drop03``), so that a series joins one system's points of one data and recipe across budgets."""
    base, system = point.baseline.split("-"), point.system.split("-")
    shared = 0
    while shared < min(len(base), len(system)) - 1 and base[-1 - shared] == system[-1 - shared]:
        shared += 1
    name, suffix = system[:len(system) - shared], system[len(system) - shared:]
    return " ".join(["-".join(name)] + [part for part in suffix if not BUDGET_PART.fullmatch(part)])


def updates_run(point: Point, records: Dict[str, dict]) -> dict:
    """Where a point lies on the x-axis: the mean over its trainings of the updates each ran (its record's
    ``updates``, the update it ended at; the budget ``point.updates`` for a training without one), how many records
    held them, and the tokens that makes in millions (× ``point.tokens``)."""
    ran = [records.get(t, {}).get("updates") for t in point.trainings]
    recorded = [u for u in ran if u is not None]
    mean = sum(point.updates if u is None else u for u in ran) / len(ran)
    return {"updates_run": mean, "recorded": len(recorded), "trainings": len(ran),
            "million_tokens": mean * point.tokens / 1e6}


def x_cell(point: Point, x: dict) -> str:
    """The table's cell of :func:`updates_run`: ``UPDATES × TOKENS``, with the budget where the trainings ran
    another number of updates, and how many records held the updates where not all did."""
    u = x["updates_run"]
    cell = (f"{u:,.0f}" if u == int(u) else f"{u:,.1f}") + f" × {point.tokens:,}"
    if x["recorded"] == 0:
        return cell + " (the budget: no record holds the updates run)"
    notes = [f"budget {point.updates:,}"] if u != point.updates else []
    if x["recorded"] < x["trainings"]:
        notes.append(f"updates of {x['recorded']} of {x['trainings']} trainings recorded, the budget for the rest")
    return cell + (f" ({'; '.join(notes)})" if notes else "")


def point_rows(eval_dir: str, point: Point, splits: Sequence[str], refs: str, tests: Sequence[str],
               checkpoints: Optional[str]) -> Dict[str, List[dict]]:
    """split -> the two rows of :func:`syntax_nmt.recipes.report.split_rows` (baseline, system) at ``point``."""
    return {sp: recipe_report.split_rows(eval_dir, sp, [point.baseline, point.system], list(point.seeds), refs,
                                         tests, checkpoints) for sp in splits}


def records_of(checkpoints: Optional[str], point: Point) -> Dict[str, dict]:
    out = {}
    for name in (point.baseline, point.system):
        for s in point.seeds:
            rec = recipe_report._record(checkpoints, name, s)
            if rec is not None:
                out[f"{name} seed {s}"] = rec
    return out


def _p(row: dict, test: str, metric: str) -> str:
    p = (row.get("p") or {}).get(test, {}).get(metric)
    return "" if p is None else f"{p:.4f}" + ("*" if significance.significant(p) else "")


def markdown(points: Sequence[Point], rows: Dict[str, Dict[str, List[dict]]], splits: Sequence[str],
             tests: Sequence[str], records: Dict[str, Dict[str, dict]], title: str) -> str:
    lines = [f"# {title}", "",
             "Each budget: the baseline and the syntax system trained with the same settings, seeds paired. "
             "sacreBLEU and chrF (cased, detokenized), lc tok. BLEU (lowercased tokenized, the Multi30k literature's "
             "metric); mean ± sd over seeds; updates run × tokens: the mean over the budget's trainings of the updates "
             "each ran (its record's), times the tokens of an update (the x-axis of the chart); Δ: system − baseline; "
             + recipe_report.significance_caption(tests, [0, 1], "the baseline").split(" Seeds better")[0].replace(
                 "the lines of all 2 seeds", "the lines of all the budget's seeds")
             + " Seeds better: in how many seeds the system's sacreBLEU beats the baseline's same seed.", ""]
    head = ["budget", "updates run × tokens", "seeds", "baseline sacreBLEU", "system sacreBLEU", "Δ BLEU"]
    head += [f"p {compare.TEST_LABELS.get(t, t)} BLEU" for t in tests]
    head += ["baseline chrF", "system chrF", "Δ chrF"] + [f"p {compare.TEST_LABELS.get(t, t)} chrF" for t in tests]
    head += ["seeds better", "baseline lc tok. BLEU", "system lc tok. BLEU"]
    for sp in splits:
        table = []
        for pt in points:
            base, syst = rows[pt.label][sp]
            cells = [f"{pt.label} ({pt.baseline} / {pt.system})", x_cell(pt, updates_run(pt, records[pt.label])),
                     " ".join(map(str, pt.seeds))]
            for metric in ("sacrebleu", "chrf"):
                cells += [f"{base[metric + '_mean']:.2f} ± {base[metric + '_sd']:.2f}",
                          f"{syst[metric + '_mean']:.2f} ± {syst[metric + '_sd']:.2f}",
                          f"{syst[metric + '_mean'] - base[metric + '_mean']:+.2f}"]
                cells += [_p(syst, t, metric) for t in tests]
            cells += [f"{syst.get('wins', 0)}/{len(pt.seeds)}",
                      f"{base['lc_tokenized_bleu_mean']:.2f} ± {base['lc_tokenized_bleu_sd']:.2f}",
                      f"{syst['lc_tokenized_bleu_mean']:.2f} ± {syst['lc_tokenized_bleu_sd']:.2f}"]
            table.append(cells)
        lines += [f"## {sp}", "", markdown_table(head, table), ""]
    trainings = []
    for pt in points:
        recs = records[pt.label]
        if not recs:
            trainings.append([pt.label, "no records kept", "", "", "", "", ""])
            continue
        desc = [training_record.describe(r) for r in recs.values()]
        updates = sorted({r.get("updates") for r in recs.values() if r.get("updates") is not None})
        walls = [r.get("wall_seconds") for r in recs.values() if r.get("wall_seconds") is not None]
        trainings.append([pt.label, len(recs), ", ".join(map(str, updates)) or "not recorded",
                          "; ".join(sorted({d["device"] for d in desc})), "; ".join(sorted({d["threads"] for d in desc})),
                          f"{sum(walls) / len(walls) / 60:.1f}", "; ".join(sorted({d["resumed"] for d in desc}))]
                         if walls else [pt.label, len(recs), "", "", "", "", ""])
    lines += ["## The trainings", "", markdown_table(["budget", "trainings", "updates done", "device", "threads",
                                                      "wall min per training (mean)", "resumed"], trainings)]
    everything = {f"{pt.label}: {k}": v for pt in points for k, v in records[pt.label].items()}
    diffs = training_record.differences(everything)
    if diffs:
        lines += ["", "The trainings differ in what they ran with (besides the budget):", ""]
        lines += [f"- {d}" for d in diffs]
    lines.append("")
    return "\n".join(lines)


def plot(points: Sequence[Point], rows: Dict[str, Dict[str, List[dict]]], splits: Sequence[str], path: str,
         title: str, x: Sequence[float], key: str = "sacrebleu") -> None:
    """sacreBLEU against the tokens seen in training (``x``, million tokens: :func:`updates_run`; log scale), both
    systems, one panel per split; each point the mean with its sd, the seeds as dots, the value written beside it."""
    from syntax_nmt.utils import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, len(splits), figsize=(3.6 * len(splits), 3.8), squeeze=False)
    for ax, sp in zip(axes[0], splits):
        for which, color in ((0, "tab:gray"), (1, "tab:blue")):  # the baseline, the system
            means = [rows[pt.label][sp][which][key + "_mean"] for pt in points]
            sds = [rows[pt.label][sp][which][key + "_sd"] for pt in points]
            label = " / ".join(dict.fromkeys(rows[pt.label][sp][which]["system"].split("-")[0] for pt in points))
            ax.errorbar(x, means, yerr=sds, color=color, marker="o", capsize=3, label=label)
            for xi, pt in zip(x, points):
                seeds = rows[pt.label][sp][which][key]
                ax.scatter([xi] * len(seeds), seeds, color=color, s=8, alpha=0.5)
            for xi, m in zip(x, means):
                ax.annotate(f"{m:.2f}", (xi, m), xytext=(4, -10 if which == 0 else 4), textcoords="offset points",
                            fontsize=7, color=color)
        _x_axis(ax, sp, x, [f"{pt.label}\n{xi:.1f}M" for pt, xi in zip(points, x)])
    _finish(plt, fig, axes, f"{compare.LABELS.get(key, key)} (mean ± sd; dots: seeds)", 8, title, path)


def _x_axis(ax, split: str, ticks: Sequence[float], labels: Sequence[str]) -> None:
    """A panel's x-axis: the training done, log scale, ticked at ``ticks``; the split its title."""
    ax.set_xscale("log")
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, fontsize=7)
    ax.minorticks_off()
    ax.set_title(split, fontsize=9)
    ax.set_xlabel("updates run × tokens (million target-side batch tokens)", fontsize=7)


def _finish(plt, fig, axes, ylabel: str, legend_size: int, title: str, path: str) -> None:
    """The first panel's y label and legend, the title; the figure written to ``path`` and closed."""
    axes[0][0].set_ylabel(ylabel, fontsize=8)
    axes[0][0].legend(fontsize=legend_size)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def spread_ticks(x: Sequence[float], ratio: float = 1.15) -> List[float]:
    """The x-axis ticks of the Δ chart: the distinct values, sorted, less each that lies within ``ratio`` of the
    tick before it (the points of one budget, stopped by patience at a few updates apart, share one tick)."""
    ticks: List[float] = []
    for v in sorted(set(x)):
        if not ticks or v > ticks[-1] * ratio:
            ticks.append(v)
    return ticks


SERIES_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink")


def plot_delta(points: Sequence[Point], rows: Dict[str, Dict[str, List[dict]]], splits: Sequence[str], path: str,
               title: str, x: Sequence[float], key: str = "sacrebleu") -> None:
    """Where syntax helps: Δ (system − baseline, the mean over the point's paired seeds) against the training done
    (``x``, million tokens; log scale), one line per :func:`series_of`, one panel per split; each seed's Δ a dot, the
    mean's value beside it (each series a line lower: points of one budget lie close) with a star where the first
    test's p < 0.05, and the line Δ = 0."""
    from syntax_nmt.utils import pyplot

    plt = pyplot()
    series: Dict[str, List[int]] = {}
    for i, pt in enumerate(points):
        series.setdefault(series_of(pt), []).append(i)
    fig, axes = plt.subplots(1, len(splits), figsize=(3.6 * len(splits), 3.8), squeeze=False)
    for ax, sp in zip(axes[0], splits):
        ax.axhline(0.0, color="tab:gray", linewidth=0.8)
        for n, (name, members) in enumerate(series.items()):
            color = SERIES_COLORS[n % len(SERIES_COLORS)]
            xs = [x[i] for i in members]
            deltas, means = [], []
            for i in members:
                base, syst = rows[points[i].label][sp]
                deltas.append([s - b for s, b in zip(syst[key], base[key])])
                means.append(syst[key + "_mean"] - base[key + "_mean"])
            ax.plot(xs, means, color=color, marker="o", label=name)
            for xi, d in zip(xs, deltas):
                ax.scatter([xi] * len(d), d, color=color, s=8, alpha=0.5)
            for i, xi, m in zip(members, xs, means):
                p = next(iter((rows[points[i].label][sp][1].get("p") or {}).values()), {}).get(key)
                star = "*" if significance.significant(p) else ""
                ax.annotate(f"{m:+.2f}{star}", (xi, m), xytext=(4, 4 - 9 * n), textcoords="offset points",
                            fontsize=7, color=color)
        ticks = spread_ticks(x)
        _x_axis(ax, sp, ticks, [f"{t:.1f}M" for t in ticks])
    _finish(plt, fig, axes, f"Δ {compare.LABELS.get(key, key)} against the baseline (dots: seeds)", 7, title, path)


CHARTS = ("bleu", "delta")  # --chart: plot, plot_delta


def budget_curve(translations: str, eval_root: str, points: Sequence[Point], splits: Sequence[str], refs: str,
                 tests: Sequence[str], out: str, title: str, chart: str = "bleu") -> str:
    """Score every point's kept translations into ``eval_root/LABEL`` and write ``out.md``, ``out.json`` and
    ``out.png``; returns the markdown."""
    rows, records = {}, {}
    for pt in points:  # every point's kept files checked before any is scored (a broken .gz writes nothing)
        recipe_report.read_kept(translations, [pt.baseline, pt.system], list(pt.seeds), splits, refs)
    for pt in points:
        d = os.path.join(eval_root, pt.label)
        recipe_report.unpack(translations, d, [pt.baseline, pt.system], list(pt.seeds), splits, refs)
        rows[pt.label] = point_rows(d, pt, splits, refs, tests, translations)
        records[pt.label] = records_of(translations, pt)
    text = markdown(points, rows, splits, tests, records, title)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".md", "w", encoding="utf-8") as f:
        f.write(text)
    xs = {pt.label: updates_run(pt, records[pt.label]) for pt in points}
    training_record.write_json(out + ".json", {
        "title": title, "splits": list(splits),
        "points": [{"label": pt.label, "updates": pt.updates, "tokens": pt.tokens, "baseline": pt.baseline,
                    "system": pt.system, "seeds": list(pt.seeds), "x": xs[pt.label], "rows": rows[pt.label]}
                   for pt in points]})
    draw = {"bleu": plot, "delta": plot_delta}[chart]
    draw(points, rows, splits, out + ".png", title, [xs[pt.label]["million_tokens"] for pt in points])
    return text


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    reads(p.add_argument("--translations", required=True, help="kept translations (DIR/SPLIT/SYSTEM.seedN.*.gz)"),
          "dir", gz=True)
    reads(p.add_argument("--refs", required=True, help="the recipe's prepared data (SPLIT.raw.LANG, SPLIT.LANG)"),
          "dir")
    updates(p.add_argument("--eval", required=True, help="where the translations are scored again (one folder per "
                           "point)"))
    writes(p.add_argument("--out", required=True, help="output prefix: OUT.md, OUT.json, OUT.png"), "prefix",
           paths=lambda out, _: [out + ext for ext in (".md", ".json", ".png")])
    p.add_argument("--point", action="append", required=True, metavar="LABEL:UPDATES:TOKENS:BASELINE:SYSTEM:SEEDS",
                   help="a budget: its label, its MAX_UPDATE, the tokens of an update, the two systems as kept and "
                        "their seeds (the x-axis: the updates the trainings' records say they ran × TOKENS)")
    p.add_argument("--splits", default="valid test2016 test2017 mscoco")
    p.add_argument("--tests", default="bs ar")
    p.add_argument("--tgt-lang", default="de")
    p.add_argument("--title", default="Syntax against the baseline by training budget")
    p.add_argument("--chart", choices=CHARTS, default="bleu",
                   help="bleu: both systems' sacreBLEU by budget (one pair of systems); delta: Δ sacreBLEU by "
                        "training done, one line per system and data (points pairing several systems)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> None:
    import logging

    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)
    a = parse_args(get_parser(), argv)
    recipe_report.REF_LANG["lang"] = a.tgt_lang
    try:
        points = [Point.parse(t) for t in a.point]
        if len({pt.label for pt in points}) != len(points):
            raise ValueError("--point labels must be distinct")
        print(budget_curve(a.translations, a.eval, points, a.splits.replace(",", " ").split(), a.refs,
                           a.tests.replace(",", " ").split(), a.out, a.title, a.chart))
    except (OSError, ValueError, KeyError) as e:
        fail(PROG, e)


if __name__ == "__main__":
    main(sys.argv[1:])
