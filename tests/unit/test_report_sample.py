"""The documented command that recomputes a Multi30k table from the translations kept in the repository, run on a
small committed sample: the first 30 test2016 sentences of the main comparison's transformer and LISA, seeds 1-3
(``tests/data/multi30k_sample/``: their translations as ``examples/multi30k_en_de/results/translations/`` keeps
them, and the 30 references, raw and as the recipe tokenizes them, from github.com/multi30k/dataset at a3d2e0d,
whose README restricts the data to non-commercial research and educational use)."""

import gzip
import json
import os
import subprocess
import sys

import pytest
import sacrebleu

from syntax_nmt.evaluation import significance as sig

SAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, "data", "multi30k_sample")
SYSTEMS, SEEDS = ("transformer", "lisa"), (1, 2, 3)


def _lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("again")
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.recipes.report", "--translations",
                           os.path.join(SAMPLE, "translations"), "--refs", os.path.join(SAMPLE, "refs"),
                           "--eval", str(out), "--systems", " ".join(SYSTEMS), "--seeds", "1 2 3",
                           "--splits", "test2016"], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "SACREBLEU_SEED"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, json.loads((out / "results.json").read_text()), (out / "results.md").read_text()


def test_scores_are_sacrebleus_of_the_kept_translations(report):
    _, res, _ = report
    refs = _lines(os.path.join(SAMPLE, "refs", "test2016.raw.de"))
    refs_tok = _lines(os.path.join(SAMPLE, "refs", "test2016.de"))
    rows = {r["system"]: r for r in res["splits"]["test2016"]}
    assert list(rows) == list(SYSTEMS) and len(refs) == 30
    for name in SYSTEMS:
        for k, seed in enumerate(SEEDS):
            detok = _lines(os.path.join(SAMPLE, "translations", "test2016", f"{name}.seed{seed}.detok.gz"))
            tok = _lines(os.path.join(SAMPLE, "translations", "test2016", f"{name}.seed{seed}.tok.gz"))
            assert rows[name]["sacrebleu"][k] == pytest.approx(sacrebleu.corpus_bleu(detok, [refs]).score, abs=1e-9)
            assert rows[name]["chrf"][k] == pytest.approx(sacrebleu.corpus_chrf(detok, [refs]).score, abs=1e-9)
            multi_bleu_lc = sacrebleu.BLEU(tokenize="none", smooth_method="none", force=True, lowercase=True)
            assert rows[name]["lc_tokenized_bleu"][k] == pytest.approx(
                multi_bleu_lc.corpus_score(tok, [refs_tok]).score, abs=1e-9)


def test_p_values_take_the_sentence_as_the_unit(report):
    """The pooled p-value is the cluster bootstrap over the 30 sentences (all three seeds' lines of a sentence drawn
    together), not a bootstrap over 90 lines; the caption and the headers name the tests, two-sided both."""
    _, res, md = report
    refs = _lines(os.path.join(SAMPLE, "refs", "test2016.raw.de"))
    hyps = {n: [_lines(os.path.join(SAMPLE, "translations", "test2016", f"{n}.seed{s}.detok.gz")) for s in SEEDS]
            for n in SYSTEMS}
    stats = {n: sig.sentence_statistics("BLEU", hyps[n], refs) for n in SYSTEMS}
    lisa = res["splits"]["test2016"][1]
    assert lisa["p"]["bs"]["sacrebleu"] == sig.paired_test("BLEU", stats["transformer"], stats["lisa"], "bs").p_value
    assert lisa["p"]["ar"]["sacrebleu"] == sig.paired_test("BLEU", stats["transformer"], stats["lisa"], "ar").p_value
    assert stats["lisa"].shape[0] == 30
    lines = sig.sentence_statistics("BLEU", [[h for seed in hyps["lisa"] for h in seed]], refs * 3)
    assert lines.shape[0] == 90  # what the line-pooled test resampled
    assert lisa["wins"] == sum(a > b for a, b in zip(lisa["sacrebleu"], res["splits"]["test2016"][0]["sacrebleu"]))
    assert len(lisa["p_per_seed"]) == 3
    assert "paired tests against transformer, two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 " \
           "resamples) and two-sided approximate randomization (10,000 trials)" in md and "unit: the test sentence" in md
    assert "| p two-sided bootstrap sacreBLEU | p two-sided bootstrap chrF | p two-sided randomization sacreBLEU |" in md


def test_pack_and_the_per_seed_files_are_each_seeds_own(report, tmp_path):
    """Every seed's own file is kept (pack), and each seed's own training record and tag accuracy are read: the
    kept translations are the sample's bytes seed by seed (the sample was kept by pack), and per-seed values that
    differ come back in the seeds' order (reading seed 1's file for every seed would repeat its value)."""
    import shutil

    from syntax_nmt.recipes import report as recipe

    out, _, _ = report
    evald, ckpt, kept = tmp_path / "eval", tmp_path / "ckpt", tmp_path / "kept"
    shutil.copytree(out / "test2016", evald / "test2016")
    for i, name in enumerate(SYSTEMS):
        for s in SEEDS:
            (ckpt / name / f"seed{s}").mkdir(parents=True)
            (ckpt / name / f"seed{s}" / ".done").write_text(json.dumps({"wall_seconds": 100 * i + s,
                                                                        "cpu_seconds": 2 * s}))
            (evald / "test2016" / f"{name}.seed{s}.factors.json").write_text(
                json.dumps({"pos": {"accuracy": 90.0 + 10 * i + s}}))
    assert recipe.pack(str(evald), str(kept), SYSTEMS, SEEDS, ["test2016"], str(ckpt)) == 12
    for i, name in enumerate(SYSTEMS):
        for s in SEEDS:
            for form in recipe.KEPT:
                mine = kept / "test2016" / f"{name}.seed{s}.{form}.gz"
                sample = os.path.join(SAMPLE, "translations", "test2016", f"{name}.seed{s}.{form}.gz")
                with open(sample, "rb") as f:
                    assert mine.read_bytes() == f.read(), (name, s, form)
            assert json.loads((kept / "training" / f"{name}.seed{s}.json").read_text())["wall_seconds"] == 100 * i + s
            assert json.loads((kept / "test2016" / f"{name}.seed{s}.factors.json").read_text()) == \
                {"pos": {"accuracy": 90.0 + 10 * i + s}}
        assert [recipe._timing(str(ckpt), name, s) for s in SEEDS] == \
            [{"train_seconds": 100 * i + s, "train_cpu_seconds": 2 * s} for s in SEEDS]
        assert [recipe._timing(str(kept), name, s)["train_seconds"] for s in SEEDS] == [100 * i + s for s in SEEDS]
    assert recipe.factor_accuracies(str(evald), SYSTEMS, SEEDS, ["test2016"]) == \
        {"test2016": {name: {"pos": [90.0 + 10 * i + s for s in SEEDS]} for i, name in enumerate(SYSTEMS)}}
