"""Systems compared over seeds (syntax_nmt/evaluation/compare.py): the arithmetic, the pooled paired tests, the
table."""

import statistics

import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from syntax_nmt.evaluation import compare

REFS = ["the cat sat on the mat .", "a dog runs in the park .", "two men play chess outside .",
        "a woman reads a book .", "children swim in the lake ."]
BASE = {1: ["the cat sat on a mat .", "a dog runs in a park .", "two men play chess .", "a woman reads .",
            "children swim in a lake ."],
        2: ["a cat sat on the mat .", "the dog runs in the park .", "men play chess outside .",
            "a woman reads a book .", "kids swim in the lake ."]}
GOOD = {1: REFS[:4] + ["children swim in a lake ."], 2: REFS[:3] + ["a woman reads .", REFS[4]]}


def _runs():
    def one(hyps):
        return {"sacrebleu": BLEU().corpus_score(hyps, [REFS]).score, "chrf": CHRF().corpus_score(hyps, [REFS]).score,
                "sentences": len(hyps), "signature": "sig", "train_seconds": 3.0}

    return {**{("base", s): one(h) for s, h in BASE.items()}, **{("good", s): one(h) for s, h in GOOD.items()}}


def test_summarize_means_sds_and_metrics():
    runs = _runs()
    rows = compare.summarize(runs, ["base", "good"], [1, 2], ("sacrebleu", "chrf"), {"base": 10})
    for r in rows:
        b = [runs[(r["system"], s)]["sacrebleu"] for s in (1, 2)]
        c = [runs[(r["system"], s)]["chrf"] for s in (1, 2)]
        assert r["sacrebleu"] == b and r["mean"] == r["sacrebleu_mean"] == pytest.approx(statistics.mean(b))
        assert r["sd"] == pytest.approx(statistics.stdev(b)) and r["chrf_sd"] == pytest.approx(statistics.stdev(c))
        assert r["train_seconds"] == [3.0, 3.0]
    assert rows[0]["params"] == 10 and rows[1]["params"] is None
    one = compare.summarize(runs, ["base"], [2], ("chrf",))
    assert one[0]["sd"] == 0.0 and one[0]["mean"] == runs[("base", 2)]["chrf"] and "params" not in one[0]


def _files(tmp_path):
    (tmp_path / "ref.de").write_text("\n".join(REFS) + "\n")
    hyps = {}
    for name, by_seed in (("base", BASE), ("good", GOOD)):
        for s, lines in by_seed.items():
            path = tmp_path / f"{name}.seed{s}.detok"
            path.write_text("\n".join(lines) + "\n")
            hyps[(name, s)] = str(path)
    return hyps


def _generated(tmp_path, n=120):
    """A larger test set and two systems over two seeds, whose seed 2 is an exact copy of seed 1."""
    import random

    rng = random.Random(0)
    words = "a man dog woman runs sits in on the park street water ball red big with two near".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) for _ in range(n)]

    def noisy(rate):
        return [" ".join(w if rng.random() > rate else rng.choice(words) for w in x.split()) for x in refs]

    (tmp_path / "ref.de").write_text("\n".join(refs) + "\n")
    lines = {"base": noisy(0.35), "good": noisy(0.32)}
    hyps = {}
    for name, hyp in lines.items():
        for s in (1, 2):
            path = tmp_path / f"{name}.seed{s}.detok"
            path.write_text("\n".join(hyp) + "\n")
            hyps[(name, s)] = str(path)
    runs = {(name, s): {"sacrebleu": BLEU().corpus_score(hyp, [refs]).score, "sentences": n, "signature": "sig"}
            for name, hyp in lines.items() for s in (1, 2)}
    return refs, lines, hyps, runs


@pytest.mark.parametrize("test", ["bs-sacrebleu", "ar"])
def test_the_unit_is_the_sentence_not_the_line(tmp_path, monkeypatch, test):
    """Issue 33: two identical seeds are one seed's evidence. The p-value over both equals seed 1's alone, which is
    sacreBLEU's own paired test (``bs-sacrebleu``, ``ar``); pooling the lines (the implementation before) gave a far
    smaller one."""
    refs, lines, hyps, runs = _generated(tmp_path)
    rows = compare.summarize(runs, ["base", "good"], [1, 2], ("sacrebleu",))
    compare.significance(rows, hyps, str(tmp_path / "ref.de"), [1, 2], tests=(test,),
                         metrics=("sacrebleu", "chrf"), pooled_dir=str(tmp_path / "pooled"), seed=7)
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    own = PairedTest([("base", lines["base"]), ("good", lines["good"])], {"BLEU": BLEU(), "chrF": CHRF()},
                     references=[refs], test_type=test[:2], n_samples=0)()[1]
    pooled = PairedTest([("base", lines["base"] * 2), ("good", lines["good"] * 2)], {"BLEU": BLEU()},
                        references=[refs * 2], test_type=test[:2], n_samples=0)()[1]
    good = rows[1]
    assert good["p"][test]["sacrebleu"] == own["BLEU"][1].p_value
    assert good["p"][test]["chrf"] == own["chrF2"][1].p_value
    assert pooled["BLEU"][1].p_value < own["BLEU"][1].p_value / 2  # what line pooling said
    assert good["p_pooled"] == good["p"][test]["sacrebleu"]
    assert good["p_per_seed"] == [own["BLEU"][1].p_value] * 2
    assert good["wins"] == (2 if runs[("good", 1)]["sacrebleu"] > runs[("base", 1)]["sacrebleu"] else 0)
    assert good["tests"] == {"unit": "sentence", "two_sided": {test: test == "ar"}, "seeds": 2, "resampling_seed": 7,
                             "statistic": {test: compare.TEST_NAMES[test]}, "stars": test,
                             "samples": {test: 10000 if test == "ar" else 1000}} and "p" not in rows[0]
    assert (tmp_path / "pooled" / "good.detok").read_text().splitlines() == lines["good"] * 2
    assert (tmp_path / "pooled" / "ref").read_text().splitlines() == refs * 2


def test_bad_requests_are_refused(tmp_path):
    rows = [{"system": "a"}, {"system": "b"}]
    with pytest.raises(ValueError, match="paired tests take metrics"):
        compare.significance(rows, {}, "ref", [1], metrics=("tokenized_bleu",))
    with pytest.raises(ValueError, match="paired tests take metrics"):
        compare.significance(rows, {}, "ref", [1], tests=("t-test",))


def test_markdown_table_and_chart(tmp_path):
    rows = compare.summarize(_runs(), ["base", "good"], [1, 2], ("sacrebleu", "chrf"))
    rows[1]["p"] = {"bs": {"sacrebleu": 0.001, "chrf": 0.2}, "ar": {"sacrebleu": 0.04, "chrf": 0.3}}
    rows[1]["p_pooled"] = 0.001
    rows[1]["wins"], rows[1]["p_per_seed"] = 2, [0.01, 0.3]
    text = compare.results_table(rows, ("sacrebleu", "chrf"), ("bs", "ar"), ("sacrebleu", "chrf"))
    lines = text.splitlines()
    assert lines[0] == ("| system | sacreBLEU mean ± sd | sacreBLEU per seed | Δ base | chrF mean ± sd | "
                        "p two-sided bootstrap sacreBLEU | p two-sided bootstrap chrF | p two-sided randomization "
                        "sacreBLEU | p two-sided randomization chrF | seeds better | "
                        "p per seed (two-sided bootstrap sacreBLEU) |")
    good = rows[1]
    cells = [c.strip() for c in lines[3].strip("|").split("|")]
    assert cells[0] == "good" and cells[1] == f"{good['mean']:.2f} ± {good['sd']:.2f}"
    assert cells[3] == f"{good['mean'] - rows[0]['mean']:+.2f}"
    assert cells[5:] == ["0.0010*", "0.2000", "0.0400*", "0.3000", "2/2", "0.010* 0.300"]
    assert [c.strip() for c in lines[2].strip("|").split("|")][3:] == ["", f"{rows[0]['chrf_mean']:.2f} ± "
                                                                      f"{rows[0]['chrf_sd']:.2f}", "", "", "", "",
                                                                      "", ""]
    compare.plot_bars(rows, str(tmp_path / "bars.png"), "title", "chrf")
    assert (tmp_path / "bars.png").stat().st_size > 1000


def test_noise_bound_is_two_standard_errors_of_the_difference():
    a = {"sacrebleu": [1.0, 2.0, 3.0], "sacrebleu_sd": 1.0}
    b = {"sacrebleu": [1.0, 3.0], "sacrebleu_sd": 2 ** 0.5}
    assert compare.noise_bound(a, b) == pytest.approx(2 * (1 / 3 + 2 / 2) ** 0.5)


def test_recipe_report_names_a_missing_score_in_one_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "valid").mkdir()
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.recipes.report", "--eval", str(tmp_path), "--systems",
                           "transformer sgnet", "--seeds", "1", "--splits", "valid", "--refs", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == (
        f"python -m syntax_nmt.recipes.report: error: {tmp_path}/valid/transformer.seed1.json is missing: "
        "translate and score transformer seed 1 on valid first")


def test_each_seed_is_read_from_its_own_file(tmp_path):
    """Seeds whose translations differ: the pooled test is the one on the sum of each seed's own statistics, each
    seed's own p-value is its own file's, and the pooled files hold seed 1's lines then seed 2's (reading seed 1's
    file for every seed would give seed 1's evidence twice)."""
    import random

    from syntax_nmt.evaluation import significance as sig

    rng = random.Random(5)
    words = "a man dog woman runs sits in on the park street water ball red big with two near".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 10))) for _ in range(40)]
    (tmp_path / "ref.de").write_text("\n".join(refs) + "\n")
    lines, hyps = {}, {}
    for name, rate in (("base", 0.4), ("good", 0.3)):
        for s in (1, 2):
            lines[(name, s)] = [" ".join(w if rng.random() > rate else rng.choice(words) for w in x.split())
                                for x in refs]
            path = tmp_path / f"{name}.seed{s}.detok"
            path.write_text("\n".join(lines[(name, s)]) + "\n")
            hyps[(name, s)] = str(path)
    runs = {key: {"sacrebleu": BLEU().corpus_score(hyp, [refs]).score} for key, hyp in lines.items()}
    rows = compare.summarize(runs, ["base", "good"], [1, 2])
    compare.significance(rows, hyps, str(tmp_path / "ref.de"), [1, 2], tests=("bs",), seed=3, n_samples=200,
                         pooled_dir=str(tmp_path / "pooled"))

    def stats(name, seeds):
        return sig.sentence_statistics("BLEU", [lines[(name, s)] for s in seeds], refs)

    def p(seeds):
        return sig.paired_test("BLEU", stats("base", seeds), stats("good", seeds), "bs", 200, 3).p_value

    own = [p([1]), p([2])]
    assert own[0] != own[1] and p([1, 2]) != p([1, 1])  # the seeds' evidence differs
    assert rows[1]["p"]["bs"]["sacrebleu"] == rows[1]["p_pooled"] == p([1, 2])
    assert rows[1]["p_per_seed"] == own
    for name in ("base", "good"):
        assert (tmp_path / "pooled" / f"{name}.detok").read_text().splitlines() == \
            lines[(name, 1)] + lines[(name, 2)]


def test_summarize_rows_are_exactly_the_keys_given():
    """A row holds the seeds, the first run's sentence count and signature, and each time key only when every seed
    has it (a missing time is absent, never a list with holes)."""
    runs = {("a", 1): {"sacrebleu": 10.0, "sentences": 7, "signature": "sig-a", "train_cpu_seconds": 4.0,
                       "generate_cpu_seconds": 2.0},
            ("a", 3): {"sacrebleu": 14.0, "sentences": 7, "signature": "sig-b", "train_cpu_seconds": 6.0,
                       "generate_cpu_seconds": 3.0, "train_seconds": 9.0}}
    (row,) = compare.summarize(runs, ["a"], [1, 3])
    assert row == {"system": "a", "seeds": [1, 3], "sentences": 7, "signature": "sig-a", "sacrebleu": [10.0, 14.0],
                   "sacrebleu_mean": 12.0, "sacrebleu_sd": pytest.approx(8 ** 0.5), "mean": 12.0,
                   "sd": pytest.approx(8 ** 0.5), "train_cpu_seconds": [4.0, 6.0], "generate_cpu_seconds": [2.0, 3.0]}


def test_seeds_better_counts_strict_wins_and_needs_both_rows(tmp_path):
    """``wins``: seeds in which the system *beats* the baseline's same seed (a tie is no win); no count when the
    baseline row has no per-seed scores. Calling it again over the same pooled directory is fine."""
    hyps = _files(tmp_path)
    rows = [{"system": "base", "sacrebleu": [20.0, 30.0]}, {"system": "good", "sacrebleu": [20.0, 31.0]}]
    for _ in range(2):  # the pooled directory exists the second time
        compare.significance(rows, hyps, str(tmp_path / "ref.de"), [1, 2], pooled_dir=str(tmp_path / "pooled"),
                             seed=3, n_samples=50)
    assert rows[1]["wins"] == 1
    rows = [{"system": "base"}, {"system": "good", "sacrebleu": [20.0, 31.0]}]
    compare.significance(rows, hyps, str(tmp_path / "ref.de"), [1, 2], seed=3, n_samples=50, per_seed=False)
    assert "wins" not in rows[1] and "p_per_seed" not in rows[1] and 0 <= rows[1]["p_pooled"] <= 1


def test_a_p_value_of_exactly_005_is_not_significant():
    """The one ``significant`` (issue 57.4: it was defined twice, here and in the evaluation command), as the
    tables' ``*`` and the command's read it."""
    from syntax_nmt.evaluation import significance as sig

    assert [sig.significant(p) for p in (0.0, 0.0499, 0.05, 0.5, None)] == [True, True, False, False, False]
    assert not hasattr(compare, "significant")


def test_table_of_metrics_without_a_label_names_them_by_key():
    """A metric outside :data:`LABELS` is shown by its key in every header; the per-seed cell lists each seed's
    score with two decimals, separated by one space."""
    rows = [{"system": "a", "ter": [50.0, 52.5], "ter_mean": 51.25, "ter_sd": 1.77},
            {"system": "b", "ter": [40.0, 41.0], "ter_mean": 40.5, "ter_sd": 0.71, "p": {"bs": {"ter": 0.5}},
             "p_per_seed": [0.04, 0.2]}]
    text = compare.results_table(rows, ("ter",), ("bs",), ("ter", "sacrebleu"))
    assert text.splitlines()[0] == ("| system | ter mean ± sd | ter per seed | Δ a | p two-sided bootstrap ter | "
                                    "p two-sided bootstrap sacreBLEU | p per seed (two-sided bootstrap ter) |")
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:]]
    assert cells == [["a", "51.25 ± 1.77", "50.00 52.50", "", "", "", ""],
                     ["b", "40.50 ± 0.71", "40.00 41.00", "-10.75", "0.5000", "", "0.040* 0.200"]]


def test_noise_bound_weighs_each_side_by_its_own_sd_and_seeds():
    a = {"sacrebleu": [1.0, 5.0], "sacrebleu_sd": 2.0}
    b = {"sacrebleu": [1.0, 2.0, 3.0, 4.0], "sacrebleu_sd": 3.0}
    assert compare.noise_bound(a, b) == pytest.approx(2 * (4 / 2 + 9 / 4) ** 0.5)


class _Recorder:
    """Stands in for matplotlib's pyplot, figure and axes: records every call (name, args, kwargs)."""

    def __init__(self, calls, name=""):
        self._calls, self._name = calls, name

    def __getattr__(self, attr):
        name = f"{self._name}.{attr}" if self._name else attr

        def call(*args, **kwargs):
            self._calls.append((name, args, kwargs))
            if attr == "subplots":
                self._calls.append(("figwidth", kwargs["figsize"][0], {}))
                return _Recorder(self._calls, "fig"), _Recorder(self._calls, "ax")
            if attr == "get_figwidth":
                return next(c[1] for c in self._calls if c[0] == "figwidth")
            return None

        return call


def test_the_bar_chart_draws_the_rows_numbers(monkeypatch):
    """plot_bars: one bar per row at its mean with its sd as error bar, the seeds as dots, the mean (and ``*`` for
    p < 0.05) above the highest of bar+sd and seeds, the baseline's mean as a dotted line, the axis from a whole
    number that the label names, the title wrapped to the figure's width; the chart's every call is compared."""
    import syntax_nmt.utils

    calls = []
    monkeypatch.setattr(syntax_nmt.utils, "pyplot", lambda: _Recorder(calls))
    rows = [{"system": "base", "chrf": [30.0, 32.0], "chrf_mean": 31.0, "chrf_sd": 1.5},
            {"system": "good", "chrf": [34.0, 36.5], "chrf_mean": 35.25, "chrf_sd": 0.5, "p_pooled": 0.01},
            {"system": "same", "chrf": [31.0, 31.0], "chrf_mean": 31.0, "chrf_sd": 0.0, "p_pooled": 0.05}]
    title = "a title long enough to be wrapped at the width of the figure, which is six inches for three rows\nsecond"
    compare.plot_bars(rows, "out.png", title, "chrf")
    # low 30, high 36.5: bottom floor(30 - 0.3 * 6.5 - 1) = 27; top 36.5 + 0.15 * 6.5 + 1
    width = 6.0
    assert calls[:-1] == [
        ("subplots", (), {"figsize": (width, 4.5)}),
        ("figwidth", width, {}),
        ("ax.bar", ([0, 1, 2], [31.0, 35.25, 31.0]), {"yerr": [1.5, 0.5, 0.0], "capsize": 4,
                                                       "color": ["tab:gray", "tab:blue", "tab:blue"], "alpha": 0.8}),
        ("ax.scatter", ([0, 0], [30.0, 32.0]), {"color": "black", "s": 12, "zorder": 3}),
        ("ax.annotate", ("31.00", (0, 32.5)), {"xytext": (0, 3), "textcoords": "offset points", "ha": "center",
                                              "va": "bottom", "fontsize": 8}),
        ("ax.scatter", ([1, 1], [34.0, 36.5]), {"color": "black", "s": 12, "zorder": 3}),
        ("ax.annotate", ("35.25*", (1, 36.5)), {"xytext": (0, 3), "textcoords": "offset points", "ha": "center",
                                               "va": "bottom", "fontsize": 8}),
        ("ax.scatter", ([2, 2], [31.0, 31.0]), {"color": "black", "s": 12, "zorder": 3}),
        ("ax.annotate", ("31.00", (2, 31.0)), {"xytext": (0, 3), "textcoords": "offset points", "ha": "center",
                                              "va": "bottom", "fontsize": 8}),
        ("ax.axhline", (31.0,), {"color": "black", "linewidth": 0.8, "linestyle": ":"}),
        ("ax.set_ylim", (27, 36.5 + 0.15 * 6.5 + 1.0), {}),
        ("ax.set_xticks", ([0, 1, 2],), {}),
        ("ax.set_xticklabels", (["base", "good", "same"],), {"rotation": 30, "ha": "right"}),
        ("ax.set_ylabel", ("chrF (mean ± sd over seeds; dots: seeds)\n(axis from 27)",), {}),
        ("fig.get_figwidth", (), {}),
        ("ax.set_title", ("a title long enough to be wrapped at the width of the figure,\nwhich is six inches for "
                          "three rows\nsecond\n* paired test p < 0.05 against base",), {"fontsize": 9}),
        ("fig.tight_layout", (), {}),
        ("fig.savefig", ("out.png",), {"dpi": 110}),
    ]
    assert calls[-1][0] == "close" and calls[-1][1][0]._name == "fig"  # the figure is closed
    # more rows widen the figure; scores near 0 start the axis at 0, and the label says nothing of it
    calls.clear()
    many = [{"system": f"s{i}", "sacrebleu": [0.5 * i], "sacrebleu_mean": 0.5 * i, "sacrebleu_sd": 0.0}
            for i in range(6)]
    compare.plot_bars(many, "o.png", "t", ylabel="BLEU")
    assert calls[0] == ("subplots", (), {"figsize": (1.1 * 6 + 2, 4.5)})
    assert ("ax.set_ylim", (0.0, 2.5 + 0.15 * 2.5 + 1.0), {}) in calls and ("ax.set_ylabel", ("BLEU",), {}) in calls


def test_the_bar_chart_of_an_unlabelled_metric_from_one_and_a_blank_title_line(monkeypatch):
    """A metric outside LABELS is named by its key on the axis; an axis from exactly 1 says so; a blank line of the
    title stays blank."""
    import syntax_nmt.utils

    calls = []
    monkeypatch.setattr(syntax_nmt.utils, "pyplot", lambda: _Recorder(calls))
    rows = [{"system": "a", "ter": [3.0], "ter_mean": 3.0, "ter_sd": 0.0},
            {"system": "b", "ter": [5.0], "ter_mean": 5.0, "ter_sd": 0.0}]
    compare.plot_bars(rows, "t.png", "first\n\nthird", "ter")  # bottom: floor(3 - 0.6 - 1) = 1
    assert ("ax.set_ylabel", ("ter (mean ± sd over seeds; dots: seeds)\n(axis from 1)",), {}) in calls
    assert ("ax.set_title", ("first\n\nthird\n* paired test p < 0.05 against a",), {"fontsize": 9}) in calls
