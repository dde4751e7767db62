"""The demo's multi-seed comparison: the report's arithmetic and verdicts (no training), and one tiny
end-to-end run (gold parses, two systems, two seeds, a data fraction)."""

import json
import math
import statistics
import subprocess
import sys

import pytest

from syntax_nmt.demo import cli, pipeline, report


def row(system, scores, **extra):
    m = statistics.mean(scores)
    sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
    return {"system": system, "sacrebleu": scores, "mean": m, "sd": sd, "sacrebleu_mean": m, "sacrebleu_sd": sd,
            **extra}


def test_seeds_option():
    assert cli.parse_seeds("3") == [1, 2, 3]
    assert cli.parse_seeds("4,7") == [4, 7]
    assert cli.parse_seeds("5,") == [5]


def test_summarize_means_and_sample_sd_per_system():
    runs = {(n, s): {"sacrebleu": b, "compound_split_bleu": b + 1, "train_seconds": 10.0 * s, "sentences": 7,
                     "signature": "sig"}
            for n, scores in {"transformer": [10.0, 12.0, 14.0], "sgnet": [11.0, 11.0, 11.0]}.items()
            for s, b in zip((1, 2, 3), scores)}
    rows = report.summarize(runs, ["transformer", "sgnet"], [1, 2, 3], {"transformer": 5, "sgnet": 6})
    assert [r["system"] for r in rows] == ["transformer", "sgnet"]
    assert rows[0]["sacrebleu"] == [10.0, 12.0, 14.0] and rows[0]["mean"] == 12.0 and rows[0]["sd"] == 2.0
    assert rows[0]["compound_split_bleu_mean"] == 13.0 and rows[1]["sd"] == 0.0 and rows[1]["params"] == 6
    assert rows[0]["train_seconds"] == [10.0, 20.0, 30.0]


@pytest.mark.parametrize("best, ok", [(21.0, True), (20.99, False)])
def test_best_variant_must_gain_a_full_bleu_point(best, ok):
    rows = [row("transformer", [19.0, 20.0, 21.0]), row("sgnet", [19.0, 20.0, 21.0]),
            row("syntax-infused", [best - 1, best, best + 1])]
    claims = report.quality_check(rows)
    assert claims[0][1] is ok
    assert "syntax-infused" in claims[0][2]


def test_sgnet_may_trail_the_baseline_by_two_standard_errors_only():
    base = row("transformer", [20.0, 21.0, 22.0])  # sd 1
    noise = 2 * math.sqrt(1 / 3 + 1 / 3)  # sgnet also has sd 1
    within = row("sgnet", [21 - noise + 0.01 - 1, 21 - noise + 0.01, 21 - noise + 0.01 + 1])
    beyond = row("sgnet", [21 - noise - 0.01 - 1, 21 - noise - 0.01, 21 - noise - 0.01 + 1])
    assert report.quality_check([base, within])[1][1] is True
    assert report.quality_check([base, beyond])[1][1] is False
    assert report.quality_check([base]) == []


def test_table_and_chart(tmp_path):
    rows = [row("transformer", [20.0, 21.0], params=100, train_seconds=[5.0, 7.0], sentences=9, signature="sig"),
            row("sgnet", [22.0, 23.5], params=120, train_seconds=[6.0, 6.0], sentences=9, signature="sig",
                p_pooled=0.001, p_per_seed=[0.01, 0.2])]
    args = type("A", (), {"max_update": 300, "max_tokens": 4096})()
    text = report.format_table(rows, args, [1, 2])
    line = next(x for x in text.splitlines() if x.startswith("sgnet"))
    assert "22.75 ± 1.06" in line and "+2.25" in line and "0.0010*" in line and "1/2" in line and "120" in line
    report.plot_bleu(rows, str(tmp_path / "bleu.png"), "title")
    assert (tmp_path / "bleu.png").stat().st_size > 1000


@pytest.mark.e2e
def test_tiny_demo_end_to_end(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.demo", "--out", str(out), "--train", "300",
                           "--valid", "30", "--test", "40", "--bpe", "300", "--max-update", "3",
                           "--systems", "transformer,sgnet", "--seeds", "2", "--gold-parses", "--analyses", "length",
                           "--fractions", "50", "--fraction-systems", "transformer", "--jobs", "2", "--threads", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())
    assert [r["system"] for r in rows] == ["transformer", "sgnet"]
    for r in rows:
        scores = [json.loads((out / "eval" / f"{r['system']}.seed{s}.json").read_text())["sacrebleu"] for s in (1, 2)]
        assert r["sacrebleu"] == scores and r["seeds"] == [1, 2]
        assert r["mean"] == pytest.approx(statistics.mean(scores))
        assert r["sd"] == pytest.approx(statistics.stdev(scores))
        assert (out / "checkpoints" / r["system"] / "seed2" / "checkpoint_last.pt").exists()
    sg = rows[1]
    assert 0.0 <= sg["p_pooled"] <= 1.0 and len(sg["p_per_seed"]) == 2
    pooled = (out / "eval" / "pooled" / "sgnet.detok").read_text().splitlines()
    seeds = [(out / "eval" / f"sgnet.seed{s}.detok").read_text().splitlines() for s in (1, 2)]
    assert pooled == seeds[0] + seeds[1] and len(pooled) == 80
    assert (out / "eval" / "pooled" / "ref.de").read_text().splitlines() == \
        (out / "corpus" / "test.de").read_text().splitlines() * 2
    assert "± " in (out / "results.md").read_text() and (out / "bleu.png").stat().st_size > 0
    assert json.loads((out / "analysis" / "length.json").read_text())["units"]["words"]["systems"].keys() == \
        {"transformer", "sgnet"}
    # data fraction: a nested subsample, scored per seed, tabulated
    full = (out / "text" / "train.en").read_text().splitlines()
    half = (out / "fractions" / "text" / "p50" / "train.en").read_text().splitlines()
    assert len(half) == 150 and all(line in full for line in half)
    assert (out / "fractions" / "text" / "p50" / "train.head").read_text().count("\n") == 150
    frac = json.loads((out / "fractions" / "fractions.json").read_text())
    (p50,) = frac["rows"]
    scored = [json.loads((out / "fractions" / "eval" / "p50" / f"transformer.seed{s}.json").read_text())["sacrebleu"]
              for s in (1, 2)]
    assert p50["percent"] == 50 and p50["systems"]["transformer"]["runs"] == scored
    # what a cut of the updates rests on (--seeds auto, syntax_nmt.demo.budget): a training's model saved at update 2
    # on its way to 4 is the model a training to 2 ends with, weights and optimizer state
    import torch
    from fairseq import checkpoint_utils

    d = pipeline.Demo(cli.get_parser().parse_args(["--out", str(out), "--max-update", "4", "--threads", "1"]))
    d.may_cut = True
    d.train("transformer", 1, group="to4", quiet=True)
    d.may_cut = False
    d.train("transformer", 1, group="to2", quiet=True, updates=2)
    on_the_way = d.checkpoint("transformer", 1, "to4", updates=2)
    assert on_the_way.endswith("_2.pt") and d.checkpoint("transformer", 1, "to2", updates=2).endswith("_last.pt")
    a, b = (checkpoint_utils.load_checkpoint_to_cpu(d.checkpoint("transformer", 1, g, updates=2)) for g in ("to4", "to2"))
    assert a["model"].keys() == b["model"].keys() and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    adam_a, adam_b = (x["last_optimizer_state"]["state"] for x in (a, b))
    same = lambda x, y: torch.equal(x, y) if torch.is_tensor(x) else x == y  # noqa: E731
    assert adam_a.keys() == adam_b.keys() and all(same(adam_a[i][k], adam_b[i][k]) for i in adam_a for k in adam_a[i])
    assert a["extra_state"]["train_iterator"] == b["extra_state"]["train_iterator"]
    assert a["optimizer_history"][-1]["num_updates"] == b["optimizer_history"][-1]["num_updates"] == 2


@pytest.mark.parametrize("job_seconds, expected", [(300.0, 3), (2000.0, 1), (20.0, 5)])
def test_auto_seeds_resumed_jobs_count_with_their_recorded_time(job_seconds, expected, tmp_path):
    """Jobs resumed from an earlier run (here every job: they end at once) count with their recorded seconds, so a
    resumed demo chooses the seeds the interrupted one would have. 2000 s a job: the first wave alone is over the
    20 min budget, so one seed, said plainly (the budget rule once still trained a second round)."""
    args = cli.get_parser().parse_args(["--out", str(tmp_path), "--systems", "transformer,sgnet"])
    args.systems, args.jobs, args.threads, args.systems_given = ["transformer", "sgnet"], 2, 1, True
    d = pipeline.Demo(args)
    calls = []

    def fake(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        calls.append((name, seed))
        return {"system": name, "seed": seed, "train_seconds": job_seconds - 10.0, "generate_seconds": 10.0,
                "sacrebleu": 1.0}

    d.job = fake
    runs = d.schedule(d.budget_plan)
    # 300 s: after 2 seeds 600 s used, a third wave ends at 900 s + the reserve 90 x 2.9 = 1161 <= 1200; a fourth not
    assert (d.plan.systems, d.plan.seeds) == (("transformer", "sgnet"), expected)
    assert sorted(calls) == sorted((n, s) for s in range(1, expected + 1) for n in ("transformer", "sgnet"))
    assert set(runs) == set(calls)
    assert d.plan.fits == (job_seconds != 2000.0)
    assert ("ONE SEED" in d.decision) == (expected == 1)


def test_results_md_opens_with_the_budget_decision(tmp_path, monkeypatch):
    """--seeds auto: results.md says first what the demo chose and why (the measured speed, the plan), as it
    printed it; the table follows."""
    args = cli.get_parser().parse_args(["--out", str(tmp_path)])
    args.systems, args.jobs, args.threads = ["transformer", "sgnet", "lisa"], 1, 2
    d = pipeline.Demo(args)

    def fake(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        return {"system": name, "seed": seed, "train_seconds": 190.0, "generate_seconds": 10.0,
                "sacrebleu": 20.0 + seed, "compound_split_bleu": 21.0 + seed, "sentences": 9, "signature": "sig"}

    d.job = fake
    monkeypatch.setattr(pipeline, "count_params", lambda path: 100)
    monkeypatch.setattr(d, "significance", lambda rows: None)
    monkeypatch.setattr(pipeline, "plot_bleu", lambda *a, **k: None)
    rows = d.compare()
    # 200 s a job, one at a time, reserve 90 x 1.9 = 171 s: after the first job (200 s) 2 seeds of 3 systems end at
    # 200 + 5 x 200 + 171 > 1200 s; one seed of all 3 at 200 + 2 x 200 + 171 = 771 s (before fewer systems)
    assert (d.plan.systems, d.plan.seeds) == (("transformer", "sgnet", "lisa"), 1)
    text = d.report(rows)
    md = (tmp_path / "results.md").read_text()
    assert md.startswith(f"{d.decision}\n\n```\n{text}\n```")
    # the last plan, after the third job (600 s): seed 2 of all 3 would end at 600 + 3 x 200 + 171 = 1371 s
    assert md.startswith("budget 20 min: measured trainings transformer 190 s, sgnet 190 s, lisa 190 s (the reference "
                         "2-core machine: about 100 s: this one takes 1.9x as long). Chosen: 3 systems x 1 seed "
                         "(transformer, sgnet, lisa): every system with 1 seed; ONE SEED: 2 seeds of all 3 systems "
                         "would end at 22.9 min")
