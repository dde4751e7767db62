"""The budget curve (syntax_nmt/recipes/budget_curve.py) on a small committed sample (issue 61): the first 30
test2016 sentences of the kept translations of the Multi30k budget curve, transformer and LISA at 1x (seeds 1-3), 4x
(seeds 1, 2) and Wu et al.'s recipe (seed 1), with the trainings' records (``tests/data/multi30k_sample/budget/``,
the references in ``tests/data/multi30k_sample/refs``). Every cell is recomputed here from the files with sacreBLEU
and the sentence-unit tests, independently of the recipe's report."""

import gzip
import json
import os

import pytest
import sacrebleu

from syntax_nmt.evaluation import significance as sig
from syntax_nmt.recipes import budget_curve as bc

SAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, "data", "multi30k_sample")
POOL, REFS = os.path.join(SAMPLE, "budget"), os.path.join(SAMPLE, "refs")
SPECS = ["1x:1600:2048:transformer:lisa:1 2 3", "4x:6400:2048:transformer-6400:lisa-6400:1 2",
         "converged:8000:8192:transformer-gpu:lisa-gpu:1"]
TESTS = ("bs", "ar")


def _lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _hyps(name, seeds):
    return [_lines(os.path.join(POOL, "test2016", f"{name}.seed{s}.detok.gz")) for s in seeds]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The points, their rows scored by the recipe (budget_curve.point_rows) and their records."""
    os.environ.pop("SACREBLEU_SEED", None)
    eval_root = tmp_path_factory.mktemp("eval")
    points = [bc.Point.parse(s) for s in SPECS]
    rows, records = {}, {}
    for pt in points:
        d = str(eval_root / pt.label)
        bc.recipe_report.unpack(POOL, d, [pt.baseline, pt.system], list(pt.seeds), ["test2016"], REFS)
        rows[pt.label] = bc.point_rows(d, pt, ["test2016"], REFS, TESTS, POOL)
        records[pt.label] = bc.records_of(POOL, pt)
    return points, rows, records


def _table(md):
    """The test2016 table's rows: budget label -> {column: cell}."""
    lines = md.split("## test2016")[1].split("## ")[0].strip().splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return {cells[0].split(" (")[0]: dict(zip(head, cells))
            for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])}


def _expected(pt):
    """Every score cell of a point, from the kept files: sacreBLEU and chrF per seed, their means, Δ (system less
    baseline), the two tests with the test sentence as the unit, the seeds better."""
    refs = [line.rstrip("\n") for line in open(os.path.join(REFS, "test2016.raw.de"), encoding="utf-8")]
    base, syst = _hyps(pt.baseline, pt.seeds), _hyps(pt.system, pt.seeds)
    out = {}
    for metric, name, score in (("sacrebleu", "BLEU", sacrebleu.corpus_bleu), ("chrf", "chrF", sacrebleu.corpus_chrf)):
        b = [score(h, [refs]).score for h in base]
        s = [score(h, [refs]).score for h in syst]
        out[f"Δ {name}"] = f"{sum(s) / len(s) - sum(b) / len(b):+.2f}"
        stats_b, stats_s = (sig.sentence_statistics(name, hs, refs) for hs in (base, syst))
        for t in TESTS:
            p = sig.paired_test(name, stats_b, stats_s, t).p_value
            out[f"p {sig.TEST_LABELS[t]} {name}"] = f"{p:.4f}" + ("*" if p < 0.05 else "")
        if metric == "sacrebleu":
            out["seeds better"] = f"{sum(x > y for x, y in zip(s, b))}/{len(pt.seeds)}"
    return out


def test_delta_p_cells_and_seeds_better_are_the_files_own(scored):
    """Δ is system − baseline (its sign: LISA ahead at 1x and 4x, behind at Wu et al.'s recipe on these 30
    sentences), each p cell the system's test against the baseline, with its star; the seeds better."""
    points, rows, records = scored
    md = bc.markdown(points, rows, ["test2016"], TESTS, records, "t")
    table = _table(md)
    for pt in points:
        expected = _expected(pt)
        assert {k: table[pt.label][k] for k in expected} == expected, pt.label
    assert table["1x"]["Δ BLEU"] == "+0.51" and table["converged"]["Δ BLEU"] == "-7.04"
    assert table["4x"]["Δ chrF"] == "+0.96" and table["converged"]["Δ chrF"] == "-2.84"
    # two-sided since issue 56 (sacreBLEU's own statistic gave 0.0400*, about one tail)
    assert table["converged"]["p two-sided bootstrap BLEU"] == "0.0589" and table["converged"]["p two-sided randomization BLEU"] == "0.0690"
    assert [table[p.label]["seeds better"] for p in points] == ["1/3", "1/2", "0/1"]
    assert "Δ: system − baseline" in md and "the lines of all the budget's seeds of a sentence" in md


def test_the_x_axis_is_the_updates_the_trainings_ran(scored):
    """Issue 54: the x value of a point is the mean of the updates its trainings' records say they ran times the
    tokens of an update (patience stopped Wu et al.'s recipe at 4,286 and 4,284 of 8,000), the budget where no
    record holds them (1x: records older than the updates)."""
    points, rows, records = scored
    xs = [bc.updates_run(pt, records[pt.label]) for pt in points]
    assert xs == [{"updates_run": 1600, "recorded": 0, "trainings": 6, "million_tokens": 1600 * 2048 / 1e6},
                  {"updates_run": 6400, "recorded": 4, "trainings": 4, "million_tokens": 6400 * 2048 / 1e6},
                  {"updates_run": 4285, "recorded": 2, "trainings": 2, "million_tokens": 4285 * 8192 / 1e6}]
    table = _table(bc.markdown(points, rows, ["test2016"], TESTS, records, "t"))
    assert [table[p.label]["updates run × tokens"] for p in points] == [
        "1,600 × 2,048 (the budget: no record holds the updates run)", "6,400 × 2,048",
        "4,285 × 8,192 (budget 8,000)"]


def test_a_point_with_some_updates_recorded():
    pt = bc.Point.parse("b:1000:10:a:b:1 2")
    x = bc.updates_run(pt, {"a seed 1": {"updates": 900}, "b seed 2": {"updates": 701}, "b seed 1": {}})
    assert x == {"updates_run": 900.25, "recorded": 2, "trainings": 4, "million_tokens": 900.25 * 10 / 1e6}
    assert bc.x_cell(pt, x) == ("900.2 × 10 (budget 1,000; updates of 2 of 4 trainings recorded, the budget for "
                                "the rest)")
    same = bc.updates_run(pt, {f"{n} seed {s}": {"updates": 1000} for n in "ab" for s in (1, 2)})
    assert bc.x_cell(pt, same) == "1,000 × 10" and same["recorded"] == 4
    part = bc.updates_run(pt, {"a seed 1": {"updates": 1000}})
    assert bc.x_cell(pt, part) == "1,000 × 10 (updates of 1 of 4 trainings recorded, the budget for the rest)"
    assert pt.trainings == ["a seed 1", "a seed 2", "b seed 1", "b seed 2"]


def test_the_command_writes_the_table_json_and_chart(scored, tmp_path, monkeypatch):
    """The documented command: its markdown is the table above, its JSON each point's x and rows (Δ recomputable:
    the system's row second, with the p-values), its chart's x the same values."""
    import syntax_nmt.utils

    points, rows, records = scored
    calls = []
    real = syntax_nmt.utils.pyplot
    monkeypatch.setattr(bc, "plot", lambda *a, **k: calls.append((a, k)))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    bc.main(["--translations", POOL, "--refs", REFS, "--eval", str(tmp_path / "eval"), "--out",
             str(tmp_path / "out" / "budget"), "--splits", "test2016", *[f"--point={s}" for s in SPECS]])
    # each point scored in a folder of its own under --eval, named by its label; nothing in the working directory
    assert sorted(os.listdir(tmp_path / "eval")) == ["1x", "4x", "converged"] and os.listdir(tmp_path / "cwd") == []
    md = (tmp_path / "out" / "budget.md").read_text(encoding="utf-8")
    assert md == bc.markdown(points, rows, ["test2016"], TESTS, records,
                             "Syntax against the baseline by training budget")
    res = json.loads((tmp_path / "out" / "budget.json").read_text())
    assert [(p["label"], p["updates"], p["tokens"], p["x"]["updates_run"], p["x"]["million_tokens"])
            for p in res["points"]] == [("1x", 1600, 2048, 1600, 3.2768), ("4x", 6400, 2048, 6400, 13.1072),
                                        ("converged", 8000, 8192, 4285, 35.10272)]
    conv = res["points"][2]["rows"]["test2016"]
    assert [r["system"] for r in conv] == ["transformer-gpu", "lisa-gpu"] and "p" not in conv[0]
    assert conv[1]["p"]["bs"]["sacrebleu"] == pytest.approx(0.0589, abs=5e-5)
    (args, kwargs), = calls
    assert args[3:] == (str(tmp_path / "out" / "budget") + ".png", "Syntax against the baseline by training budget",
                        [3.2768, 13.1072, 35.10272])
    assert real is syntax_nmt.utils.pyplot


class _Recorder:
    """Stands in for matplotlib's pyplot, figure and axes: records every call (name, args, kwargs); ``subplots``
    gives one axes per panel, named ``ax0``, ``ax1``, ..."""

    def __init__(self, calls, name=""):
        self._calls, self._name = calls, name

    def __getattr__(self, attr):
        name = f"{self._name}.{attr}" if self._name else attr

        def call(*args, **kwargs):
            self._calls.append((name, args, kwargs))
            if attr == "subplots":
                return _Recorder(self._calls, "fig"), [[_Recorder(self._calls, f"ax{i}") for i in range(args[1])]]
            return None

        return call


def _row(system, scores):
    mean = sum(scores) / len(scores)
    return {"system": system, "sacrebleu": scores, "sacrebleu_mean": mean, "sacrebleu_sd": 0.5}


def test_the_chart_puts_each_point_at_its_x(monkeypatch):
    """Each panel: the baseline's and the system's means with their sd at the points' x (the updates run × tokens,
    not the budgets), each seed a dot, the value beside it, the axis labelled with the points and their x."""
    import syntax_nmt.utils

    calls = []
    monkeypatch.setattr(syntax_nmt.utils, "pyplot", lambda: _Recorder(calls))
    points = [bc.Point.parse("1x:1600:2048:transformer:lisa:1 2"), bc.Point.parse("gpu:8000:8192:t-gpu:l-gpu:1 2")]
    rows = {"1x": {"v": [_row("transformer", [30.0, 31.0]), _row("lisa", [32.0, 33.0])],
                   "t": [_row("transformer", [20.0, 22.0]), _row("lisa", [21.0, 21.0])]},
            "gpu": {"v": [_row("t-gpu", [40.0, 41.0]), _row("l-gpu", [39.0, 40.0])],
                    "t": [_row("t-gpu", [35.0, 35.0]), _row("l-gpu", [34.0, 36.0])]}}
    bc.plot(points, rows, ["v", "t"], "out.png", "title", [3.2768, 35.1])
    x = [3.2768, 35.1]
    expected = [("subplots", (1, 2), {"figsize": (7.2, 3.8), "squeeze": False})]
    for i, sp in enumerate(("v", "t")):
        ax = f"ax{i}"
        for which, color, label in ((0, "tab:gray", "transformer / t"), (1, "tab:blue", "lisa / l")):
            rs = [rows[p][sp][which] for p in ("1x", "gpu")]
            means = [r["sacrebleu_mean"] for r in rs]
            expected.append((f"{ax}.errorbar", (x, means), {"yerr": [0.5, 0.5], "color": color, "marker": "o",
                                                             "capsize": 3, "label": label}))
            expected += [(f"{ax}.scatter", ([xi] * 2, r["sacrebleu"]), {"color": color, "s": 8, "alpha": 0.5})
                         for xi, r in zip(x, rs)]
            expected += [(f"{ax}.annotate", (f"{m:.2f}", (xi, m)), {"xytext": (4, -10 if which == 0 else 4),
                                                                  "textcoords": "offset points", "fontsize": 7,
                                                                  "color": color}) for xi, m in zip(x, means)]
        expected += [(f"{ax}.set_xscale", ("log",), {}), (f"{ax}.set_xticks", (x,), {}),
                     (f"{ax}.set_xticklabels", (["1x\n3.3M", "gpu\n35.1M"],), {"fontsize": 7}),
                     (f"{ax}.minorticks_off", (), {}), (f"{ax}.set_title", (sp,), {"fontsize": 9}),
                     (f"{ax}.set_xlabel", ("updates run × tokens (million target-side batch tokens)",),
                      {"fontsize": 7})]
    expected += [("ax0.set_ylabel", ("sacreBLEU (mean ± sd; dots: seeds)",), {"fontsize": 8}),
                 ("ax0.legend", (), {"fontsize": 8}), ("fig.suptitle", ("title",), {"fontsize": 9}),
                 ("fig.tight_layout", (), {}), ("fig.savefig", ("out.png",), {"dpi": 110}),
                 ("close", (_Recorder(calls, "fig"),), {})]
    assert calls[:-1] == expected[:-1] and calls[-1][0] == "close" and calls[-1][1][0]._name == "fig"
    calls.clear()  # a metric the table of labels lacks is named by its key
    unlabelled = {p: {"v": [{**r, "other": r["sacrebleu"], "other_mean": r["sacrebleu_mean"],
                             "other_sd": r["sacrebleu_sd"]} for r in rows[p]["v"]]} for p in rows}
    bc.plot(points, unlabelled, ["v"], "out.png", "title", x, key="other")
    assert ("ax0.set_ylabel", ("other (mean ± sd; dots: seeds)",), {"fontsize": 8}) in calls


def _synthetic_row(system, bleu, chrf, lc, p=None, wins=None):
    row = {"system": system, "sacrebleu_mean": bleu[0], "sacrebleu_sd": bleu[1], "chrf_mean": chrf[0],
           "chrf_sd": chrf[1], "lc_tokenized_bleu_mean": lc[0], "lc_tokenized_bleu_sd": lc[1]}
    if p is not None:
        row["p"] = p
    if wins is not None:
        row["wins"] = wins
    return row


SYNTH_ENV = {"device": "cpu (x, avx2)", "threads": 1, "torch": "2.13.0"}


def test_the_table_of_given_rows_cell_by_cell():
    """markdown() on rows made here (fast: what mutation testing runs first): Δ system − baseline rounded, a p cell
    per test and metric from the system's row with a star below 0.05 only (0.05 itself: none), empty where the row
    has no test; seeds better from the system's wins; the x cell; the trainings' table and their differences."""
    points = [bc.Point.parse("1x:1600:2048:t:l:1 2"), bc.Point.parse("gpu:8000:8192:tg:lg:1"),
              bc.Point.parse("old:100:10:a:b:3")]
    p = {"bs": {"sacrebleu": 0.01, "chrf": 0.2}, "ar": {"sacrebleu": 0.049999, "chrf": 0.05}}
    rows = {"1x": {"v": [_synthetic_row("t", (30.004, 0.5), (55.0, 0.25), (31.0, 0.4), {"bs": {"sacrebleu": 0.9}}, 0),
                         _synthetic_row("l", (31.2, 0.25), (54.5, 0.125), (32.0, 0.3), p, 2)]},
            "gpu": {"v": [_synthetic_row("tg", (40.0, 0.0), (60.0, 0.0), (41.0, 0.0)),
                          _synthetic_row("lg", (39.0, 0.0), (61.5, 0.0), (40.0, 0.0), {"bs": {"sacrebleu": 0.5}})]},
            "old": {"v": [_synthetic_row("a", (1.0, 0.0), (2.0, 0.0), (3.0, 0.0)),
                          _synthetic_row("b", (1.5, 0.0), (2.5, 0.0), (3.5, 0.0), None, 1)]}}
    records = {"1x": {"t seed 1": {"updates": 1600, "wall_seconds": 600, "environment": SYNTH_ENV,
                                   "resumed_from": []},
                      "l seed 1": {"updates": 1500, "wall_seconds": 1200, "environment": {**SYNTH_ENV, "threads": 2},
                                   "resumed_from": [400]}},
               "gpu": {}, "old": {"a seed 3": {"cpu_seconds": 5.0}}}
    md = bc.markdown(points, rows, ["v"], ["bs", "ar"], records, "T")
    assert md.startswith("# T\n\nEach budget: the baseline and the syntax system trained with the same settings, "
                         "seeds paired. sacreBLEU and chrF (cased, detokenized), lc tok. BLEU (lowercased tokenized, "
                         "the Multi30k literature's metric); mean ± sd over seeds; updates run × tokens: the mean over "
                         "the budget's trainings of the updates each ran (its record's), times the tokens of an update "
                         "(the x-axis of the chart); Δ: system − baseline; p: paired tests against the baseline, "
                         "two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 resamples) and two-sided "
                         "approximate randomization (10,000 trials), on sacreBLEU's sentence statistics; unit: the test "
                         "sentence, each resample carrying (or each trial swapping) the lines of all the budget's seeds "
                         "of a sentence together; p = 1 where the scores are equal; * p < 0.05. Seeds better: in how "
                         "many seeds the system's sacreBLEU beats the baseline's same seed.\n\n## v\n\n")
    table = _table(md.replace("## v", "## test2016"))
    assert list(table) == ["1x", "gpu", "old"]
    assert list(table["1x"]) == [
        "budget", "updates run × tokens", "seeds", "baseline sacreBLEU", "system sacreBLEU", "Δ BLEU", "p two-sided bootstrap BLEU",
        "p two-sided randomization BLEU", "baseline chrF", "system chrF", "Δ chrF", "p two-sided bootstrap chrF", "p two-sided randomization chrF", "seeds better",
        "baseline lc tok. BLEU", "system lc tok. BLEU"]
    assert list(table["1x"].values()) == [
        "1x (t / l)", "1,575 × 2,048 (budget 1,600; updates of 2 of 4 trainings recorded, the budget for the rest)",
        "1 2", "30.00 ± 0.50", "31.20 ± 0.25", "+1.20", "0.0100*", "0.0500*", "55.00 ± 0.25", "54.50 ± 0.12", "-0.50",
        "0.2000", "0.0500", "2/2", "31.00 ± 0.40", "32.00 ± 0.30"]
    assert list(table["gpu"].values()) == [
        "gpu (tg / lg)", "8,000 × 8,192 (the budget: no record holds the updates run)", "1", "40.00 ± 0.00",
        "39.00 ± 0.00", "-1.00", "0.5000", "", "60.00 ± 0.00", "61.50 ± 0.00", "+1.50", "", "", "0/1",
        "41.00 ± 0.00", "40.00 ± 0.00"]
    assert table["old"]["seeds better"] == "1/1" and table["old"]["Δ BLEU"] == "+0.50"
    trainings = md.split("## The trainings\n\n")[1]
    lines = trainings.splitlines()
    assert [[c.strip() for c in line.strip("|").split("|")] for line in lines[:1] + lines[2:5]] == [
        ["budget", "trainings", "updates done", "device", "threads", "wall min per training (mean)", "resumed"],
        ["1x", "2", "1500, 1600", "cpu (x, avx2)", "1; 2", "15.0", "from update 400; no"],
        ["gpu", "no records kept", "", "", "", "", ""],
        ["old", "1", "", "", "", "", ""]]
    assert lines[5:] == ["", "The trainings differ in what they ran with (besides the budget):", "",
                         "- device: cpu (x, avx2) (1x: t seed 1, 1x: l seed 1); not recorded (old: a seed 3)",
                         "- threads: 1 (1x: t seed 1); 2 (1x: l seed 1); not recorded (old: a seed 3)",
                         "- torch: 2.13.0 (1x: t seed 1, 1x: l seed 1); not recorded (old: a seed 3)",
                         "- resumed: no (1x: t seed 1); from update 400 (1x: l seed 1); not recorded (old: a seed 3)"]
    assert md.endswith("not recorded (old: a seed 3)\n")
    same = {"1x": {"t seed 1": records["1x"]["t seed 1"]}, "gpu": {}, "old": {}}
    agree = bc.markdown(points, rows, ["v"], ["bs", "ar"], same, "T")
    assert agree.endswith("| 1x | 1 | 1600 | cpu (x, avx2) | 1 | 10.0 | no |\n| gpu | no records kept |  |  |  |  |  |\n"
                          "| old | no records kept |  |  |  |  |  |\n") and "differ" not in agree


@pytest.mark.parametrize("baseline, system, series", [
    ("transformer", "lisa", "lisa"), ("transformer-6400", "lisa-6400", "lisa"),
    ("transformer-gpu", "syntax-infused-gpu", "syntax-infused"), ("transformer-gpu-p10", "lisa-gpu-p10", "lisa p10"),
    ("transformer-6400-drop03", "lisa-6400-drop03", "lisa drop03"), ("transformer-cpu-p25", "sgnet-cpu-p25", "sgnet p25"),
    ("transformer-gpu", "transformer-gpu", "transformer"), ("base", "sys-x", "sys-x"), ("t-a-gpu", "l-b-gpu", "l-b")])
def test_a_series_is_the_system_and_its_data_not_its_budget(baseline, system, series):
    assert bc.series_of(bc.Point.parse(f"p:1:1:{baseline}:{system}:1")) == series


def _delta_rows(base, syst, p=None):
    b = {"system": "b", "sacrebleu": base, "sacrebleu_mean": sum(base) / len(base)}
    s = {"system": "s", "sacrebleu": syst, "sacrebleu_mean": sum(syst) / len(syst)}
    if p is not None:
        s["p"] = {"bs": {"sacrebleu": p, "chrf": 0.5}, "ar": {"sacrebleu": 0.9}}
    return [b, s]


def test_the_delta_chart_draws_one_line_per_series_at_the_training_done(monkeypatch):
    """Where syntax helps: per panel the line Δ = 0, then per series (in the order of the points) Δ of the means at
    the points' x, each seed's Δ a dot, the mean's value with a star from the first test's p; the ticks are the
    distinct x, sorted."""
    import syntax_nmt.utils

    calls = []
    monkeypatch.setattr(syntax_nmt.utils, "pyplot", lambda: _Recorder(calls))
    points = [bc.Point.parse(s) for s in ("1x-lisa:1600:2048:transformer:lisa:1 2",
                                          "1x-sgnet:1600:2048:transformer:sgnet:1 2",
                                          "conv-lisa:8000:8192:t-gpu:lisa-gpu:1 2",
                                          "conv-sgnet:8000:8192:t-gpu:sgnet-gpu:1")]
    rows = {"1x-lisa": {"v": _delta_rows([30.0, 31.0], [32.0, 32.5], p=0.01)},
            "1x-sgnet": {"v": _delta_rows([30.0, 31.0], [29.0, 29.5], p=0.2)},
            "conv-lisa": {"v": _delta_rows([40.0, 41.0], [39.5, 41.0])},
            "conv-sgnet": {"v": _delta_rows([40.0], [38.0], p=0.04)}}
    x = [3.3, 3.3, 35.1, 31.3]  # 35.1 within 1.15 of 31.3: one tick
    bc.plot_delta(points, rows, ["v"], "d.png", "title", x)
    expected = [("subplots", (1, 1), {"figsize": (3.6, 3.8), "squeeze": False}),
                ("ax0.axhline", (0.0,), {"color": "tab:gray", "linewidth": 0.8}),
                ("ax0.plot", ([3.3, 35.1], [1.75, -0.25]), {"color": "tab:blue", "marker": "o", "label": "lisa"}),
                ("ax0.scatter", ([3.3, 3.3], [2.0, 1.5]), {"color": "tab:blue", "s": 8, "alpha": 0.5}),
                ("ax0.scatter", ([35.1, 35.1], [-0.5, 0.0]), {"color": "tab:blue", "s": 8, "alpha": 0.5}),
                ("ax0.annotate", ("+1.75*", (3.3, 1.75)), {"xytext": (4, 4), "textcoords": "offset points",
                                                          "fontsize": 7, "color": "tab:blue"}),
                ("ax0.annotate", ("-0.25", (35.1, -0.25)), {"xytext": (4, 4), "textcoords": "offset points",
                                                           "fontsize": 7, "color": "tab:blue"}),
                ("ax0.plot", ([3.3, 31.3], [-1.25, -2.0]), {"color": "tab:orange", "marker": "o", "label": "sgnet"}),
                ("ax0.scatter", ([3.3, 3.3], [-1.0, -1.5]), {"color": "tab:orange", "s": 8, "alpha": 0.5}),
                ("ax0.scatter", ([31.3], [-2.0]), {"color": "tab:orange", "s": 8, "alpha": 0.5}),
                ("ax0.annotate", ("-1.25", (3.3, -1.25)), {"xytext": (4, -5), "textcoords": "offset points",
                                                          "fontsize": 7, "color": "tab:orange"}),
                ("ax0.annotate", ("-2.00*", (31.3, -2.0)), {"xytext": (4, -5), "textcoords": "offset points",
                                                           "fontsize": 7, "color": "tab:orange"}),
                ("ax0.set_xscale", ("log",), {}), ("ax0.set_xticks", ([3.3, 31.3],), {}),
                ("ax0.set_xticklabels", (["3.3M", "31.3M"],), {"fontsize": 7}),
                ("ax0.minorticks_off", (), {}), ("ax0.set_title", ("v",), {"fontsize": 9}),
                ("ax0.set_xlabel", ("updates run × tokens (million target-side batch tokens)",), {"fontsize": 7}),
                ("ax0.set_ylabel", ("Δ sacreBLEU against the baseline (dots: seeds)",), {"fontsize": 8}),
                ("ax0.legend", (), {"fontsize": 7}), ("fig.suptitle", ("title",), {"fontsize": 9}),
                ("fig.tight_layout", (), {}), ("fig.savefig", ("d.png",), {"dpi": 110})]
    assert calls[:-1] == expected
    assert calls[-1][0] == "close" and calls[-1][1][0]._name == "fig"


def test_the_command_draws_the_chart_it_is_asked_for(monkeypatch, tmp_path):
    drawn = []
    monkeypatch.setattr(bc, "plot", lambda *a: drawn.append("bleu"))
    monkeypatch.setattr(bc, "plot_delta", lambda *a: drawn.append("delta"))
    bc.main(["--translations", POOL, "--refs", REFS, "--eval", str(tmp_path / "e"), "--out", str(tmp_path / "o"),
             "--splits", "test2016", "--tests", "bs", "--point", SPECS[2], "--chart", "delta"])
    bc.main(["--translations", POOL, "--refs", REFS, "--eval", str(tmp_path / "e2"), "--out", str(tmp_path / "o2"),
             "--splits", "test2016", "--tests", "bs", "--point", SPECS[2]])
    assert drawn == ["delta", "bleu"]


def test_ticks_within_a_ratio_of_the_one_before_are_dropped():
    assert bc.spread_ticks([35.4, 3.3, 34.4, 13.1, 33.6, 3.3]) == [3.3, 13.1, 33.6]
    assert bc.spread_ticks([1.0, 1.15, 1.16, 1.5]) == [1.0, 1.16, 1.5]  # 1.15 is within, 1.16 beyond
    assert bc.spread_ticks([2.0, 2.0]) == [2.0] and bc.spread_ticks([]) == []
    assert bc.spread_ticks([1.0, 1.5, 2.0], ratio=1.6) == [1.0, 2.0]
