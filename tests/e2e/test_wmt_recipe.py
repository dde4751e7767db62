"""End to end: the WMT14 en-de recipe (examples/wmt14_en_de/run_all.sh), offline.

The test builds tar.gz stand-ins for the statmt.org archives (same names and
inner layout) from the synthetic corpus, serves them as a ``file://`` mirror
with a manifest holding their checksums, trains a tiny spaCy parser, and then
runs exactly what a user runs, ``run_all.sh``, with tiny sizes: download,
prepare (sacremoses, cleaning, subsample, BPE), syntax-nmt-annotate,
syntax-nmt-binarize, fairseq-train of the baseline and the syntax-infused +
SG-Net model for a few CPU updates, checkpoint averaging, fairseq-generate,
sacreBLEU with signature, compound-split BLEU and a paired bootstrap test.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import sacrebleu

from syntax_nmt.evaluation import generate_log, metrics
from syntax_nmt import systems as S

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "wmt14_en_de"
SIZES = {"train": 400, "valid": 24, "test": 30}
CONFIGS = "baseline syntax_sgnet"  # stock fairseq vs. features + SG-Net (covers every model flag of the recipe)

pytestmark = pytest.mark.e2e


def _fake_mirror():
    spec = importlib.util.spec_from_file_location("wmt14_fake_mirror", RECIPE / "fake_mirror.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def recipe_run(tmp_path_factory, synthetic_spacy, systems_cache):
    corpus, spacy_model = synthetic_spacy
    root = tmp_path_factory.mktemp("wmt14")
    t0 = time.time()
    pairs = {split: list(zip(_read(p["en"]), _read(p["de"])))[:SIZES[split]] for split, p in corpus.items()}
    mirror = root / "mirror"
    _fake_mirror().build_mirror(str(mirror), pairs["train"], pairs["valid"], pairs["test"])
    setup_s = time.time() - t0

    bindir = os.path.dirname(sys.executable)
    env = dict(
        os.environ,
        PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
        PYTHON=sys.executable,
        WORK=str(root / "run"),
        WMT14_MIRROR=mirror.as_uri(),
        MANIFEST=str(mirror / "manifest.json"),
        BPE_MERGES="300",
        WORKERS="2",
        SPACY_MODEL=str(spacy_model),
        ANNOTATE_PROCS="1",
        CHUNK_SIZE="150",
        CONFIGS=CONFIGS,
        TINY="1",
        CPU="1",
        MAX_TOKENS="2048",
        UPDATE_FREQ="1",
        MAX_UPDATE="4",
        SAVE_INTERVAL="2",
        AVERAGE="2",
        WARMUP="2",
        LR="1e-3",
        GEN_ARGS="--max-len-a 1.2 --max-len-b 5",
        SACREBLEU_SEED="7",
        SYSTEMS_CACHE=str(systems_cache),  # the table read once, not by a python per script (seconds each)
    )
    t0 = time.time()
    proc = subprocess.run(["bash", str(RECIPE / "run_all.sh")], env=env, capture_output=True, text=True)
    run_s = time.time() - t0
    log = proc.stdout + proc.stderr
    (root / "run_all.log").write_text(log)
    assert proc.returncode == 0, log[-6000:]
    print(f"\nsetup {setup_s:.0f}s, run_all.sh {run_s:.0f}s")
    return root / "run", proc.stdout, env, log


def test_download_verified_and_recorded(recipe_run):
    work, stdout, _, _ = recipe_run
    for name in ("training-parallel-europarl-v7.tgz", "training-parallel-commoncrawl.tgz",
                 "training-parallel-nc-v9.tgz"):
        assert f"downloaded {name}: verified (sha256)" in stdout
    assert "downloaded test-full.tgz: verified (md5)" in stdout
    assert "downloaded dev.tgz: NOT VERIFIED (no checksum in manifest)" in stdout
    assert len(_read(work / "download" / "SHA256SUMS")) == 5


def test_prepared_and_annotated_data_line_up(recipe_run):
    work, _, _, _ = recipe_run
    prep, ann = work / "prep" / "p100", work / "annotated" / "p100"
    stats = json.loads((prep / "prepare.json").read_text())["stats"]
    assert stats["train"]["raw_total"] == SIZES["train"] and stats["test"] == SIZES["test"]
    assert len(_read(prep / "test.raw.de")) == SIZES["test"]
    for split in ("train", "valid", "test"):
        src = _read(ann / f"{split}.en")
        assert len(src) == len(_read(ann / f"{split}.de")) == len(_read(prep / f"{split}.en"))
        for stream in ("pos", "case", "subword", "head", "dep"):
            fields = [len(line.split()) for line in _read(ann / f"{split}.{stream}")]
            assert fields == [len(line.split()) for line in src], (split, stream)
    assert any("@@" in line for line in _read(ann / "train.en"))  # BPE applied
    data_bin = work / "data-bin" / "p100"
    for stream in ("pos", "case", "subword", "dep", "head"):
        assert (data_bin / f"test.en-de.{stream}.bin").exists()


def test_training_averaged_checkpoints(recipe_run):
    work, _, _, log = recipe_run
    for config in CONFIGS.split():
        ckpt = work / "checkpoints" / "p100" / config
        assert (ckpt / "checkpoint_avg.pt").exists()
        assert f"{ckpt}/checkpoint_1_4.pt\n  {ckpt}/checkpoint_1_2.pt\nwrote {ckpt}/checkpoint_avg.pt" in log
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401

    ckpt = work / "checkpoints" / "p100" / "syntax_sgnet"
    two = [torch.load(ckpt / f"checkpoint_1_{u}.pt", map_location="cpu")["model"] for u in (2, 4)]
    avg = torch.load(ckpt / "checkpoint_avg.pt", map_location="cpu")
    assert list(avg["model"]) == list(two[0]) and "cfg" in avg
    floats = [name for name, value in avg["model"].items() if value.is_floating_point()]
    assert floats
    for name in floats:
        expected = (two[0][name] + two[1][name]) / 2
        assert torch.allclose(avg["model"][name], expected, atol=1e-6), name


def test_scores_and_significance(recipe_run):
    """The scores and the p-value of summary.txt, recomputed here with sacrebleu from the files on disk."""
    work, stdout, _, _ = recipe_run
    eval_dir, prep = work / "eval" / "p100", work / "prep" / "p100"
    refs_raw, refs_tok = _read(prep / "test.raw.de"), _read(prep / "test.de")
    detok = {}
    summary = (eval_dir / "summary.txt").read_text()
    lines = {line.split()[0]: line.split() for line in summary.splitlines() if line.split()}
    for config in CONFIGS.split():
        res = json.loads((eval_dir / f"{config}.json").read_text())
        hyps_tok = generate_log.read_hypotheses(str(eval_dir / f"{config}.gen"))
        assert _read(eval_dir / f"{config}.tok") == hyps_tok and len(hyps_tok) == SIZES["test"] == res["sentences"]
        detok[config] = _read(eval_dir / f"{config}.detok")
        assert detok[config] == metrics.detokenize(hyps_tok)
        bleu = sacrebleu.corpus_bleu(detok[config], [refs_raw])
        split = sacrebleu.corpus_bleu([metrics.compound_split(h) for h in hyps_tok],
                                      [[metrics.compound_split(r) for r in refs_tok]], tokenize="none", force=True)
        assert (res["sacrebleu"], res["compound_split_bleu"]) == (bleu.score, split.score)
        assert res["signature"] == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
        tok = sacrebleu.corpus_bleu(hyps_tok, [refs_tok], tokenize="none", smooth_method="none", force=True)
        assert res["tokenized_bleu"] == pytest.approx(tok.score, abs=1e-9)
        # name, sacreBLEU, p, tok.BLEU, p, split BLEU
        row = lines[config]
        assert [row[1], row[3], row[5]] == [f"{bleu.score:.2f}", f"{tok.score:.2f}", f"{split.score:.2f}"]
    assert f"sacreBLEU signature: {res['signature']}" in summary
    assert lines["baseline"][2] == lines["baseline"][4] == "baseline"
    # the recipe's two-sided paired bootstrap on sacreBLEU's resamples with the seed it was given (SACREBLEU_SEED=7):
    # sacreBLEU's draws, the centred signed difference, both tails
    bleu = sacrebleu.BLEU()
    base, system = (np.array(bleu._extract_corpus_statistics(detok[c], [refs_raw]), dtype="float32")
                    for c in CONFIGS.split())
    idx = np.random.default_rng(7).choice(len(refs_raw), size=(1000, len(refs_raw)), replace=True)
    delta = (np.array([bleu._compute_score_from_stats(x).score for x in system[idx].sum(1)])
             - np.array([bleu._compute_score_from_stats(x).score for x in base[idx].sum(1)]))
    observed = abs(sacrebleu.corpus_bleu(detok["syntax_sgnet"], [refs_raw]).score
                   - sacrebleu.corpus_bleu(detok["baseline"], [refs_raw]).score)
    p_value = 1.0 if observed == 0 else (np.sum(np.abs(delta - delta.mean()) >= observed) + 1) / 1001
    assert lines["syntax_sgnet"][2] == f"{p_value:.4f}" + ("*" if p_value < 0.05 else "")
    assert "paired bootstrap" in summary


def test_rerun_skips_finished_stages(recipe_run):
    """A second run redoes nothing: every output keeps its bytes and modification time."""
    work, _, env, _ = recipe_run

    def snapshot():
        return {p: (p.stat().st_mtime_ns, p.read_bytes()) for d in ("prep", "data-bin", "checkpoints")
                for p in sorted((work / d).rglob("*")) if p.is_file()}

    before = snapshot()
    t0 = time.time()
    proc = subprocess.run(["bash", str(RECIPE / "run_all.sh")], env=dict(env, STAGES="download prepare binarize train"),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"\nrerun of finished stages: {time.time() - t0:.1f}s")
    assert "skipped" in proc.stdout and "is up to date" in proc.stdout
    assert f"{work}/data-bin/p100 is complete" in proc.stdout
    assert proc.stdout.count("is complete") == 1 + len(CONFIGS.split())
    assert "fairseq_cli.train" not in proc.stdout + proc.stderr
    after = snapshot()
    assert sorted(after) == sorted(before) and [p for p in after if after[p] != before[p]] == []


#: every system of the table (python -m syntax_nmt.systems list --all), in its order, but the target-side ones: they
#: need a parsed target, which the WMT14 recipe does not make (the Multi30k en-fr recipe's test builds them)
SYSTEMS = [n for n, s in S.systems().items() if not s.target]
#: the self-attention of each encoder layer where the system replaces some (the methods' default layers; ``all``
#: gives each method its own); every other system: fairseq's MultiheadAttention in all six layers
ATTENTION = {"sla": ["SyntaxLocalAttention"] * 6, "syntax_bert": ["SyntaxBertAttention"] * 6,
             "lisa": ["MultiheadAttention"] * 5 + ["LisaAttention"],
             "all": ["SyntaxLocalAttention", "SyntaxBertAttention"] + ["MultiheadAttention"] * 3 + ["LisaAttention"]}


@pytest.mark.parametrize("name", SYSTEMS)
def test_full_size_configs_build(recipe_run, tmp_path, systems_cache, name):
    """train.sh's full-size flags for every system of the table parse in fairseq and build the
    intended Transformer-base models and criteria on the recipe's binarized data (no training)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from syntax_nmt.models.modules.methods.sgnet_layer import SGNetLayer

    system = S.get(name)
    work = recipe_run[0]
    fake = tmp_path / "fake-train"
    fake.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$ARGS_OUT"\n')
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=sys.executable, DATA=str(work / "data-bin" / "p100"), SAVE=str(tmp_path / "ckpt"),
               FAIRSEQ_TRAIN=str(fake), ARGS_OUT=str(tmp_path / "args"), AVERAGE="0", NGPU="8",
               SYSTEMS_CACHE=str(systems_cache))
    proc = subprocess.run(["bash", str(RECIPE / "train.sh"), name], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    argv = (tmp_path / "args").read_text().splitlines()
    argv[argv.index("--distributed-world-size") + 1] = "1"  # building needs no GPUs

    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    enc, dec = model.encoder, model.decoder
    assert len(enc.layers) == 6 and len(dec.layers) == 6 and dec.embed_tokens.embedding_dim == 512
    assert enc.embed_tokens.embedding_dim == 512  # word (+ features) width seen by the encoder
    assert type(model).__name__ == ("TransformerModel" if name == "transformer" else "SyntaxTransformerModel")
    if system.features:
        assert enc.embed_tokens.word.embedding_dim == 492  # 512 - 20 for the pos/case/subword features
        widths = {"pos": 8, "case": 4, "subword": 8} if name == "syntax-concat" else {"pos": 20, "case": 20,
                                                                                       "subword": 20}
        assert {n: e.embedding_dim for n, e in enc.embed_tokens.features.items()} == widths
        assert dec.output_projection.weight is dec.embed_tokens.weight
    else:
        assert enc.embed_tokens is dec.embed_tokens  # --share-all-embeddings
    assert getattr(enc, "syntax_methods", []) == list(system.methods)
    assert [type(layer.self_attn).__name__ for layer in enc.layers] == ATTENTION.get(name, ["MultiheadAttention"] * 6)
    sgnet = [m for m in enc.modules() if isinstance(m, SGNetLayer)]
    assert [m.checkpoint for m in sgnet] == ([name == "sgnet-ckpt"] if system.uses("sgnet") else [])
    inputs = [sorted(getattr(layer, "syntax_inputs", None) or {}) for layer in enc.layers]
    assert inputs == [["seprem"] if system.uses("seprem") else []] * 6  # SEPREM: the input of every layer
    # the criterion: the auxiliary losses the table gives the system, with their weights
    crit = task.build_criterion(cfg.criterion)
    weights = dict(zip(system.criterion_args[::2], system.criterion_args[1::2]))
    expected = {k[2:-len("-loss-weight")]: float(v) for k, v in weights.items() if k.endswith("-loss-weight")}
    assert {n: loss.loss_weight for n, loss in getattr(crit, "losses", {}).items() if loss.requested} == expected
    assert type(crit).__name__ == ("LabelSmoothedCrossEntropyWithSyntaxCriterion" if expected
                                   else "LabelSmoothedCrossEntropyCriterion")


def test_evaluate_refuses_an_unfinished_training(recipe_run, tmp_path):
    """Issue 34: evaluate scored whatever checkpoint a killed training had left. A configuration without its
    training's ``.done`` is refused, naming it, before anything is translated."""
    work, _, env, _ = recipe_run
    import shutil

    copy = tmp_path / "work"
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns("download", "work"))
    (copy / "checkpoints" / "p100" / "syntax_sgnet" / ".done").unlink()
    proc = subprocess.run(["bash", str(RECIPE / "run_all.sh")], env=dict(env, WORK=str(copy), STAGES="evaluate"),
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "run_all.sh: error: syntax_sgnet has not finished training" in proc.stderr, proc.stderr[-3000:]
