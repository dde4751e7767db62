"""Systems compared over seeds (syntax_nmt/compare.py): the arithmetic, the pooled paired tests, the table."""

import statistics

import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from syntax_nmt import compare

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


def test_pooled_tests_equal_sacrebleus_own_on_the_concatenated_seeds(tmp_path, monkeypatch):
    hyps = _files(tmp_path)
    rows = compare.summarize(_runs(), ["base", "good"], [1, 2], ("sacrebleu", "chrf"))
    compare.significance(rows, hyps, str(tmp_path / "ref.de"), [1, 2], tests=("bs", "ar"),
                         metrics=("sacrebleu", "chrf"), pooled_dir=str(tmp_path / "pooled"), seed=7)
    pooled_base = BASE[1] + BASE[2]
    pooled_good = GOOD[1] + GOOD[2]
    assert (tmp_path / "pooled" / "good.detok").read_text().splitlines() == pooled_good
    assert (tmp_path / "pooled" / "ref").read_text().splitlines() == REFS * 2
    for test in ("bs", "ar"):
        monkeypatch.setenv("SACREBLEU_SEED", "7")
        expect = PairedTest([("base", pooled_base), ("good", pooled_good)], {"BLEU": BLEU(), "chrF": CHRF()},
                            references=[REFS * 2], test_type=test, n_samples=0)()[1]
        monkeypatch.delenv("SACREBLEU_SEED")
        assert rows[1]["p"][test]["sacrebleu"] == expect["BLEU"][1].p_value
        assert rows[1]["p"][test]["chrf"] == expect["chrF2"][1].p_value
    assert rows[1]["p_pooled"] == rows[1]["p"]["bs"]["sacrebleu"]
    assert len(rows[1]["p_per_seed"]) == 2 and "p" not in rows[0]


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
    text = compare.markdown_table(rows, ("sacrebleu", "chrf"), ("bs", "ar"), ("sacrebleu", "chrf"))
    lines = text.splitlines()
    assert lines[0] == ("| system | sacreBLEU mean ± sd | sacreBLEU per seed | Δ base | chrF mean ± sd | "
                        "p bs sacreBLEU | p bs chrF | p ar sacreBLEU | p ar chrF |")
    good = rows[1]
    cells = [c.strip() for c in lines[3].strip("|").split("|")]
    assert cells[0] == "good" and cells[1] == f"{good['mean']:.2f} ± {good['sd']:.2f}"
    assert cells[3] == f"{good['mean'] - rows[0]['mean']:+.2f}"
    assert cells[5:] == ["0.0010*", "0.2000", "0.0400*", "0.3000"]
    assert [c.strip() for c in lines[2].strip("|").split("|")][3:] == ["", f"{rows[0]['chrf_mean']:.2f} ± "
                                                                      f"{rows[0]['chrf_sd']:.2f}", "", "", "", ""]
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
