"""syntax-nmt-analyze on tiny trained models: every subcommand's files exist and its numbers are
what they claim, recomputed here independently (sacrebleu on hand-picked buckets, the text
streams, fairseq's own generator and the checkpoints' weights)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import USER_DIR, run_cli

from syntax_nmt.analyze import cli
from syntax_nmt.syntax import noise as N
from syntax_nmt.models.modules.methods.sgnet_masks import sdoi_mask
from syntax_nmt.models.modules.methods.sla_masks import sla_mask
from syntax_nmt.syntax.tree import word_tree

pytestmark = pytest.mark.e2e

TRAIN = ["--user-dir", USER_DIR, "--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", "inverse_sqrt",
         "--warmup-updates", "4", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
         "--max-tokens", "1500", "--max-update", "6", "--seed", "1", "--no-epoch-checkpoints",
         "--no-progress-bar", "--disable-validation", "--num-workers", "0"]


@pytest.fixture(scope="module")
def trained(stream_bin, stream_corpus, tmp_path_factory):
    """A stock transformer and an SG-Net + SLA + features model, with fairseq-generate logs of the test set."""
    root = tmp_path_factory.mktemp("analyze")
    specs = {
        "transformer": ["--task", "translation", "--arch", "transformer_tiny"],
        "syntax": ["--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
                   "--syntax-attention", "sgnet,sla", "--sgnet-learn-alpha", "--sgnet-alpha", "0.3"],
    }
    out = {"root": root, "ckpt": {}, "gen": {}}
    for name, spec in specs.items():
        save = root / "checkpoints" / name
        run_cli("fairseq-train", stream_bin, *TRAIN, *spec, "--save-dir", save)
        out["ckpt"][name] = str(save / "checkpoint_last.pt")
        proc = run_cli("fairseq-generate", stream_bin, "--user-dir", USER_DIR, "--task", spec[1],
                       "--path", out["ckpt"][name], "--beam", "2", "--batch-size", "8", "--remove-bpe",
                       "--required-batch-size-multiple", "1")
        gen = root / f"{name}.gen"
        gen.write_text(proc.stdout)
        out["gen"][name] = str(gen)
    out["ref"] = stream_corpus["test"] + ".de"
    return out


def analyze(*argv):
    return cli.main(cli.get_parser().parse_args([str(a) for a in argv]))


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def own_hypotheses(gen):
    """Best hypotheses of a generate log, detokenized with sacremoses (written here, not imported)."""
    from sacremoses import MosesDetokenizer

    hyps = {}
    for line in lines(gen):
        if line.startswith("H-"):
            head, _, text = line.split("\t")
            hyps.setdefault(int(head[2:]), text)
    detok = MosesDetokenizer(lang="de")
    return [detok.detokenize(hyps[i].split()) for i in range(len(hyps))]


def bleu(hyps, refs):
    from sacrebleu.metrics import BLEU

    return BLEU().corpus_score(hyps, [refs]).score


# ---------------------------------------------------------------------------------- length
def test_length_buckets_are_sacrebleu_of_the_sentences_in_them(trained, stream_bin, stream_corpus, tmp_path):
    paths = analyze("length", "--data", stream_bin, "--ref-raw", trained["ref"], "--bucket-width", 3,
                    "--max-length", 9, "--out", tmp_path, *[x for n, g in trained["gen"].items()
                                                           for x in ("--system", f"{n}={g}")])
    assert sorted(os.path.basename(p) for p in paths) == ["length.json", "length.md", "length.png"]
    assert all(os.path.getsize(p) > 0 for p in paths)
    result = json.loads((tmp_path / "length.json").read_text())
    prefix = stream_corpus["test"]
    subwords = [len(line.split()) for line in lines(prefix + ".en")]
    words = [sum(t in ("B", "O") for t in line.split()) for line in lines(prefix + ".subword")]
    refs = lines(trained["ref"])
    labels = ["1-3", "4-6", "7-9", ">9"]
    assert max(subwords) > 9 and min(words) <= 3  # the buckets are not all empty
    for unit, lengths in (("words", words), ("subwords", subwords)):
        block = result["units"][unit]
        assert block["lengths"] == lengths
        for name, gen in trained["gen"].items():
            hyps = own_hypotheses(gen)
            got = block["systems"][name]
            assert got["overall"] == pytest.approx(bleu(hyps, refs), abs=1e-9)
            for b, label in enumerate(labels):
                lo, hi = 3 * b + 1, (3 * b + 3 if b < 3 else 10 ** 9)
                sel = [i for i, n in enumerate(lengths) if lo <= n <= hi]
                row = got["buckets"][b]
                assert row["bucket"] == label and row["sentences"] == len(sel)
                if sel:
                    assert row["bleu"] == pytest.approx(bleu([hyps[i] for i in sel], [refs[i] for i in sel]), abs=1e-9)
                else:
                    assert row["bleu"] is None
    md = (tmp_path / "length.md").read_text()
    assert "| 4-6 |" in md and "## by words" in md and "## by subwords" in md


# ---------------------------------------------------------------------------------- noise
def text_streams(prefix):
    """Flat heads / word starts / lengths of a text split (as syntax-nmt-annotate wrote them)."""
    heads, ws, lengths = [], [], []
    for h, s in zip(lines(prefix + ".head"), lines(prefix + ".subword")):
        heads += [int(x) for x in h.split()]
        ws += [t in ("B", "O") for t in s.split()]
        lengths.append(len(s.split()))
    return np.array(heads), np.array(ws), np.array(lengths)


def binarized_items(data, stream):
    from fairseq.data import data_utils

    ds = data_utils.load_indexed_dataset(os.path.join(data, f"test.en-de.{stream}"), None, "mmap")
    return [ds[i].tolist() for i in range(len(ds))]


def test_noise_at_zero_is_the_clean_score_and_the_noisy_streams_are_the_seeded_ones(
        trained, stream_bin, stream_corpus, tmp_path):
    out = tmp_path / "noise"
    analyze("noise", "--data", stream_bin, "--ref-raw", trained["ref"], "--rates", "0,1", "--seed", 5,
            "--gen-args", "--beam 2 --batch-size 8", "--out", out,
            *[x for n, c in trained["ckpt"].items() for x in ("--system", f"{n}={c}")])
    result = json.loads((out / "noise.json").read_text())
    assert (out / "noise.png").stat().st_size > 0 and (out / "noise.md").exists()
    rows = {(r["system"], r["stream"], r["rate"]): r for r in result["rows"]}
    refs = lines(trained["ref"])
    for name, gen in trained["gen"].items():  # r = 0 is what fairseq-generate gives on the clean data
        for stream in ("head", "pos"):
            assert rows[(name, stream, 0.0)]["bleu"] == pytest.approx(bleu(own_hypotheses(gen), refs), abs=1e-9)
    # the transformer reads no stream: translated once, carried over
    assert not rows[("transformer", "head", 1.0)]["translated"]
    assert rows[("transformer", "head", 1.0)]["bleu"] == rows[("transformer", "head", 0.0)]["bleu"]
    assert rows[("syntax", "head", 1.0)]["translated"] and rows[("syntax", "pos", 1.0)]["translated"]
    # the noisy head stream is exactly the seeded corruption of the text stream (EOS value 0 appended)
    heads, ws, lengths = text_streams(stream_corpus["test"])
    words = N.word_index(ws, lengths)
    selected, u = N.noise_draws(len(words.first_token), 1.0, 5)
    expected = N.corrupt_heads(heads, ws, lengths, selected, u)
    got = binarized_items(str(out / "data" / "head-r1"), "head")
    assert [h for item in got for h in item[:-1]] == expected.tolist() and all(item[-1] == 0 for item in got)
    multi = int((words.words_per_sentence[words.sentence_of_word] > 1).sum())
    assert rows[("syntax", "head", 1.0)]["changed_words"] == multi < len(words.first_token)
    assert rows[("syntax", "pos", 1.0)]["changed_words"] == len(words.first_token)  # every tag changes
    assert binarized_items(str(out / "data" / "head-r0"), "head") == binarized_items(stream_bin, "head")
    assert os.path.islink(out / "data" / "head-r1" / "test.en-de.en.bin")  # only the noisy stream is rewritten
    assert not os.path.islink(out / "data" / "head-r1" / "test.en-de.head.bin")


def test_corrupt_writes_a_noisy_directory_fairseq_trains_on(trained, stream_bin, tmp_path):
    noisy = tmp_path / "noisy"
    analyze("corrupt", "--data", stream_bin, "--out", noisy, "--stream", "pos", "--rate", "0.5", "--seed", 2)
    records = json.loads((noisy / "noise-pos.json").read_text())
    assert [r["split"] for r in records] == ["train", "valid", "test"]
    for r, split in zip(records, ("train", "valid", "test")):
        clean = binarized_items(stream_bin, "pos") if split == "test" else None
        if clean is not None:
            noisy_items = binarized_items(str(noisy), "pos")
            assert [len(x) for x in noisy_items] == [len(x) for x in clean]
            changed = sum(a != b for x, y in zip(noisy_items, clean) for a, b in zip(x, y))
            assert changed >= r["changed_words"] > 0  # a changed word changes all its pieces
        assert r["changed_words"] == round(0.5 * r["words"])
    run_cli("fairseq-train", noisy, *TRAIN, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
            "--max-update", "1", "--save-dir", tmp_path / "ckpt")


# ------------------------------------------------------------------------------ attention
def test_attention_maps_are_distributions_and_match_fairseq_and_the_masks(trained, stream_bin, stream_corpus, tmp_path):
    from syntax_nmt.analyze import models

    sid = 4
    paths = analyze("attention", "--data", stream_bin, "--sentence", sid, "--out", tmp_path, "--beam", 2,
                    "--system", trained["ckpt"]["transformer"], "--system", trained["ckpt"]["syntax"])
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted([f"attention-{sid}.json", f"attention-{sid}.md", f"attention-{sid}-cross.png",
                            f"attention-{sid}-syntax-sgnet.png", f"attention-{sid}-syntax-sla.png"])
    result = json.loads((tmp_path / f"attention-{sid}.json").read_text())
    src_line = lines(stream_corpus["test"] + ".en")[sid].split()
    assert result["source"] == src_line + ["</s>"]
    for s in result["systems"]:
        A = np.array(s["cross_attention"])
        assert A.shape == (len(s["target"]), len(src_line) + 1)
        np.testing.assert_allclose(A.sum(1), 1.0, atol=1e-5)
        assert s["target"][-1] == "</s>"
        # the rows are what fairseq's own beam search attended when it produced the hypothesis
        loaded = models.load(s["name"], s["checkpoint"], stream_bin)
        smp = models.sample(loaded, [sid])
        from argparse import Namespace

        gen = loaded.task.build_generator([loaded.model], Namespace(beam=2, lenpen=0.6))
        hypo = loaded.task.inference_step(gen, [loaded.model], smp)[0][0]
        assert [loaded.task.target_dictionary[t] for t in hypo["tokens"]] == s["target"]
        np.testing.assert_allclose(A, hypo["attention"].T.numpy(), atol=1e-4)
    syntax = next(s for s in result["systems"] if s["name"] == "syntax")
    assert [e["kind"] for e in syntax["encoder"]] == ["sla", "sla", "sgnet"]  # 2 layers of SLA, then SG-Net
    # masks recomputed from the text streams
    heads = torch.tensor([[int(x) for x in lines(stream_corpus["test"] + ".head")[sid].split()] + [0]])
    ws = torch.tensor([[t in ("B", "O") for t in lines(stream_corpus["test"] + ".subword")[sid].split()] + [True]])
    special = torch.zeros_like(ws)
    special[0, -1] = True
    sg = syntax["encoder"][2]
    mask = np.array(sg["mask"])
    np.testing.assert_array_equal(mask, sdoi_mask(heads, ws, special)[0].numpy())
    P = np.array(sg["attn"])
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-5)
    assert np.abs(P[~mask]).max() < 1e-6  # no weight outside the SDOI
    local_mask = sla_mask(word_tree(heads, ws, special), 3)[0].numpy()
    for e in syntax["encoder"][:2]:
        for key in ("local", "global"):
            np.testing.assert_allclose(np.array(e[key]).sum(1), 1.0, atol=1e-5)
        assert np.abs(np.array(e["local"])[~local_mask]).max() < 1e-6
        assert all(0.0 < g < 1.0 for g in e["gate"])
    ref = analyze("attention", "--data", stream_bin, "--sentence", sid, "--out", tmp_path / "ref", "--reference",
                  "--system", trained["ckpt"]["transformer"])
    ref_result = json.loads(open(ref[0]).read())
    assert ref_result["systems"][0]["target"] == lines(stream_corpus["test"] + ".de")[sid].split() + ["</s>"]


def test_sgnet_records_the_attention_it_applies(trained, stream_bin):
    """The recorded per-head SG-Net probabilities, applied to the layer's values, give the layer's attention output."""
    from syntax_nmt.analyze import models

    loaded = models.load("syntax", trained["ckpt"]["syntax"], stream_bin)
    sg = loaded.model.encoder.syntax_modules["sgnet"]
    attn = sg.layer.self_attn
    captured = {}
    hook = attn.register_forward_hook(lambda m, args, kwargs, out: captured.update(x=kwargs["query"], out=out[0]),
                                      with_kwargs=True)
    smp = models.sample(loaded, [0, 1, 2])
    with models.recording(loaded.model):
        models.encode(loaded, smp["net_input"])
        P = sg.recorded["attn"]
    hook.remove()
    x = captured["x"]
    T, B, C = x.shape
    H = attn.num_heads
    v = attn.v_proj(x).view(T, B, H, C // H).permute(1, 2, 0, 3)
    out = attn.out_proj(torch.matmul(P, v).permute(2, 0, 1, 3).reshape(T, B, C))
    torch.testing.assert_close(out, captured["out"], atol=1e-5, rtol=1e-4)
    assert P.shape == (B, H, T, T)


# ---------------------------------------------------------------------------------- gates
def test_gates_are_the_mean_sla_gate_per_layer_and_alpha_is_the_learned_one(trained, stream_bin, tmp_path):
    from syntax_nmt.analyze import models

    analyze("gates", "--data", stream_bin, "--out", tmp_path, "--max-tokens", 60,
            "--system", trained["ckpt"]["syntax"], "--system", trained["ckpt"]["transformer"])
    result = json.loads((tmp_path / "gates.json").read_text())
    assert (tmp_path / "gates.png").stat().st_size > 0 and "| 1 |" in (tmp_path / "gates.md").read_text()
    syntax, transformer = result["systems"]
    assert transformer["gates"] == [] and transformer["alphas"] == []
    assert syntax["sentences"] == 21
    # recompute: sigmoid(W_g h + b_g) of every layer input h, averaged over non-special tokens
    loaded = models.load("syntax", trained["ckpt"]["syntax"], stream_bin)
    sums = {}
    hooks = []
    for k, layer in enumerate(loaded.model.encoder.layers):
        def pre(m, args, kwargs, k=k):
            sums.setdefault(k, []).append(torch.sigmoid(m.gate(kwargs.get("query", args[0] if args else None))))
        hooks.append(layer.self_attn.register_forward_pre_hook(pre, with_kwargs=True))
    smp = models.sample(loaded, list(range(21)))
    models.encode(loaded, smp["net_input"])
    for h in hooks:
        h.remove()
    keep = ~models.special_mask(loaded, smp["net_input"]["src_tokens"])
    for g, (k, values) in zip(syntax["gates"], sorted(sums.items())):
        gate = values[0].squeeze(-1).transpose(0, 1)
        assert g["layer"] == k and g["tokens"] == int(keep.sum())
        assert g["mean_gate"] == pytest.approx(float(gate[keep].mean()), abs=1e-5)
    state = torch.load(trained["ckpt"]["syntax"], map_location="cpu", weights_only=True)
    logit = next(v for k, v in state["model"].items() if k.endswith("aggregate.logit"))
    (alpha,) = syntax["alphas"]
    assert alpha["alpha"] == pytest.approx(float(torch.sigmoid(logit)), abs=1e-6)
    assert alpha["alpha"] != pytest.approx(0.3, abs=1e-7) and alpha["learned"]  # moved away from its initial value
    assert alpha["weighs"] == "ordinary encoder states H (SG-Net eq. 9)"  # alpha H + (1 - alpha) H'


def test_alphas_say_what_they_weigh(stream_bin):
    """SG-Net's alpha weighs the ordinary states (eq. 9), SEPREM's the syntax-aware representation
    (eq. 1): the table must not call both the same."""
    from conftest import build_task_and_model
    from syntax_nmt.analyze import models

    _, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet,seprem", "--sgnet-alpha", "0.25",
                                       "--seprem-alpha-init", "0.125")
    rows = {name: (a, weighs) for name, a, _, weighs in models.alphas(model)}
    assert rows == {
        "encoder.layers.0.syntax_inputs.seprem": (0.125, "syntax-aware representation (SEPREM eq. 1)"),
        "encoder.layers.1.syntax_inputs.seprem": (0.125, "syntax-aware representation (SEPREM eq. 1)"),
        "encoder.syntax_modules.sgnet.aggregate": (0.25, "ordinary encoder states H (SG-Net eq. 9)"),
    }


# ------------------------------------------------------------------------------ fractions
def test_fractions_table_from_scored_runs(tmp_path):
    results = tmp_path / "eval"
    scores = {1: {"transformer": [1.0, 2.0], "syntax": [2.0, 4.0]}, 10: {"transformer": [10.0], "syntax": [12.5]},
              100: {"transformer": [20.0, 22.0, 24.0], "syntax": [21.0, 21.0, 21.0]}}
    for p, systems in scores.items():
        (results / f"p{p}").mkdir(parents=True)
        for name, values in systems.items():
            for seed, v in enumerate(values, 1):
                suffix = f".seed{seed}" if len(values) > 1 else ""
                (results / f"p{p}" / f"{name}{suffix}.json").write_text(json.dumps({"sacrebleu": v}))
    (results / "p10" / "notes.json").write_text("[1, 2]")  # not a score: skipped (with a warning)
    (results / "sit-paper-p5").mkdir()
    (results / "sit-paper-p5" / "baseline.json").write_text(json.dumps({"sacrebleu": 8.5}))
    with pytest.raises(ValueError, match="pick one with --preset"):
        analyze("fractions", "--results", results, "--out", tmp_path)
    analyze("fractions", "--results", results, "--preset", "sit-paper", "--out", tmp_path / "preset")
    preset = json.loads((tmp_path / "preset" / "fractions.json").read_text())
    assert preset["baseline"] == "baseline" and preset["rows"][0]["percent"] == 5
    analyze("fractions", "--results", results, "--preset", "", "--out", tmp_path)
    result = json.loads((tmp_path / "fractions.json").read_text())
    assert result["baseline"] == "transformer" and result["systems"] == ["transformer", "syntax"]
    rows = {r["percent"]: r["systems"] for r in result["rows"]}
    assert rows[1]["transformer"]["mean"] == 1.5 and rows[1]["syntax"]["delta"] == 1.5
    assert rows[1]["syntax"]["sd"] == pytest.approx(np.std([2.0, 4.0], ddof=1))
    assert rows[10]["syntax"]["sd"] == 0.0 and rows[10]["syntax"]["delta"] == 2.5
    assert rows[100]["syntax"]["delta"] == pytest.approx(-1.0)
    assert rows[100]["transformer"]["runs"] == [20.0, 22.0, 24.0]
    md = (tmp_path / "fractions.md").read_text()
    assert "| 1 | 1.50 ± 0.71 (n=2) | 3.00 ± 1.41 (n=2) | +1.50 |" in md
    assert (tmp_path / "fractions.png").stat().st_size > 0


def test_fractions_warns_about_each_malformed_results_file(tmp_path, caplog):
    """Each malformed score file is named in a warning saying what is wrong with it and that its system shows
    '-' for that share of the data."""
    results = tmp_path / "eval"
    for p in (1, 10):
        (results / f"p{p}").mkdir(parents=True)
        (results / f"p{p}" / "transformer.json").write_text(json.dumps({"sacrebleu": 10.0 + p}))
    (results / "p10" / "syntax.json").write_text(json.dumps({"sacrebleu": 21.0}))
    bad = {"p1/syntax.json": ('{"sacrebleu": 1', "is not a JSON file (Expecting ',' delimiter: line 1 column 16"),
           "p1/other.seed1.json": ("", "is not a JSON file (Expecting value: line 1 column 1"),
           "p1/other.seed2.json": ('{"bleu": 3.0}', "has no 'sacrebleu' score"),
           "p10/other.json": ('{"sacrebleu": "n/a"}', "has 'sacrebleu': 'n/a', not a number"),
           "p10/notes.json": ("[1, 2]", "is not a JSON object of scores")}
    for name, (text, _) in bad.items():
        (results / name).write_text(text)
    caplog.clear()
    with caplog.at_level("WARNING", logger="syntax_nmt.analyze.fractions"):
        analyze("fractions", "--results", results, "--out", tmp_path / "out")
    warnings = sorted(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert len(warnings) == len(bad)
    for w, (name, (_, problem)) in zip(warnings, sorted(bad.items())):
        assert w.startswith(f"{results / name} {problem}") and w.endswith(
            ": skipped (its system shows '-' for this share of the data)"), w
    md = (tmp_path / "out" / "fractions.md").read_text()
    assert "| 1 | 11.00 | - | - |" in md
    assert "| 10 | 20.00 | 21.00 | +1.00 |" in md


def test_fractions_refuses_a_seedless_run_beside_seeded_ones(tmp_path):
    """``sla.json`` beside ``sla.seed1.json`` in one share of the data: it was averaged in as another seed."""
    results = tmp_path / "eval"
    (results / "p5").mkdir(parents=True)
    for name, v in (("transformer.json", 10.0), ("sla.json", 30.0), ("sla.seed1.json", 11.0), ("sla.seed2.json", 12.0)):
        (results / "p5" / name).write_text(json.dumps({"sacrebleu": v}))
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.analyze.cli", "fractions", "--results", str(results),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr == (
        f"syntax-nmt-analyze: error: {results / 'p5'} holds sla.json and sla.seed1.json: a run of sla without a "
        f"seed beside runs with seeds; rename it sla.seedN.json (its seed) or move it away\n")
    (results / "p5" / "sla.json").rename(results / "p5" / "sla.seed3.json")
    analyze("fractions", "--results", results, "--out", tmp_path / "out")
    row = json.loads((tmp_path / "out" / "fractions.json").read_text())["rows"][0]["systems"]
    assert row["sla"]["runs"] == [11.0, 12.0, 30.0] and row["transformer"]["runs"] == [10.0]


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("argv, message", [
    (["length", "--data", "/nonexistent", "--ref-raw", __file__, "--system", __file__, "--out", "x"],
     "--data: no such folder /nonexistent"),
    (["gates", "--data", ".", "--system", "missing.pt", "--out", "x"], "--system: no such file missing.pt"),
    (["fractions", "--results", ".", "--out", "x"], "no scored systems"),
])
def test_user_errors_are_one_line_with_status_2(argv, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.analyze.cli", *argv], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("syntax-nmt-analyze: error: ")
    assert message in proc.stderr and "Traceback" not in proc.stderr


def _checkpoint_bytes(tmp_path):
    """The bytes of a small file saved as fairseq saves checkpoints (a torch zip archive)."""
    path = tmp_path / "whole.pt"
    torch.save({"model": {"w": torch.zeros(64, 64)}, "args": None, "cfg": {"model": None}}, path)
    return path.read_bytes()


@pytest.mark.parametrize("content, message", [
    (lambda whole: b"", "checkpoint bad.pt is empty (0 bytes)"),
    (lambda whole: whole[: len(whole) // 2], "cannot read checkpoint bad.pt ("),
    (lambda whole: b"\x80\x02junk" * 100, "cannot read checkpoint bad.pt (600 bytes): truncated or not a fairseq"),
], ids=["empty", "truncated", "not-a-checkpoint"])
def test_unreadable_checkpoint_is_one_line_with_status_2(content, message, tmp_path):
    """An empty, truncated or non-fairseq checkpoint is a one-line error with exit status 2 (no unpickling
    traceback), and nothing is written."""
    (tmp_path / "bad.pt").write_bytes(content(_checkpoint_bytes(tmp_path)))
    for command in ("attention", "gates"):
        proc = subprocess.run([sys.executable, "-m", "syntax_nmt.analyze.cli", command, "--data", ".",
                               "--system", "bad.pt", "--out", "x"], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip().splitlines()[-1]]
        assert proc.stderr.startswith("syntax-nmt-analyze: error: " + message), proc.stderr
        assert not (tmp_path / "x").exists()
