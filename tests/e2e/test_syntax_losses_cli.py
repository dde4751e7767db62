"""The real command lines with SEPREM, LISA, the syntax criterion, and every method at once."""

import os
import re

import pytest
import torch

from conftest import USER_DIR, run_cli

pytestmark = pytest.mark.e2e

TRAIN = [
    "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
    "--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10",
    "--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1",
    "--max-tokens", "1500", "--max-update", "6", "--seed", "1", "--no-epoch-checkpoints",
    "--log-format", "simple", "--log-interval", "3", "--no-progress-bar",
]

RUNS = {
    "seprem": ["--syntax-attention", "seprem", "--dp-loss-weight", "0.5", "--hp-loss-weight", "0.5"],
    "lisa": ["--syntax-attention", "lisa"],  # --lisa-loss-weight defaults to 1 with a LISA head
    "all": ["--syntax-attention", "sgnet,sla,syntax_bert,seprem,lisa", "--encoder-layers", "3",
            "--sla-layers", "0", "--syntax-bert-layers", "1", "--lisa-inject-parse",
            "--source-features", "pos,case,subword,dep", "--feature-merge", "concat",
            "--lisa-loss-weight", "0.5", "--dp-loss-weight", "0.2", "--hp-loss-weight", "0.2"],
}
LOGGED = {"seprem": ["dp_loss", "dp_acc", "hp_loss", "hp_acc"], "lisa": ["lisa_loss", "lisa_acc"],
          "all": ["lisa_loss", "dp_loss", "hp_loss"]}


@pytest.fixture(scope="module", params=list(RUNS))
def trained(request, stream_bin, tmp_path_factory):
    name = request.param
    save = tmp_path_factory.mktemp(f"ckpt-{name}")
    proc = run_cli("fairseq-train", stream_bin, *TRAIN, *RUNS[name], "--save-dir", save)
    return name, save, proc.stdout + proc.stderr


def _fields(line):
    """``key value`` (valid/train) or ``key=value`` (train_inner) fields of a fairseq log line."""
    out = {}
    for seg in re.split(r"[|,]", line.replace("=", " ")):
        parts = seg.split()
        if len(parts) == 2 and re.fullmatch(r"-?[\d.]+", parts[1]):
            out[parts[0]] = parts[1]
    return out


def test_each_syntax_loss_is_logged_in_training_and_validation(trained):
    name, _, log = trained
    assert "done training" in log
    train = [_fields(l) for l in log.splitlines() if "| INFO | train_inner |" in l or "| INFO | train |" in l]
    valid = [_fields(l) for l in log.splitlines() if "| INFO | valid |" in l]
    assert train and valid
    for fields in train + valid:
        for key in LOGGED[name]:
            assert key in fields and float(fields[key]) >= 0, (key, fields)
    for absent in {"lisa_loss", "dp_loss", "hp_loss"} - set(LOGGED[name]):
        assert not any(absent in fields for fields in train + valid)


def test_generate_translates_every_test_line(trained, stream_bin, stream_corpus):
    name, save, _ = trained
    proc = run_cli("fairseq-generate", stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", os.path.join(save, "checkpoint_last.pt"), "--beam", "2", "--batch-size", "8")
    ids = sorted(int(m) for m in re.findall(r"^H-(\d+)\t", proc.stdout, re.M))
    assert ids == list(range(sum(1 for _ in open(stream_corpus["test"] + ".en"))))


def test_checkpoint_is_weights_only_with_the_classifiers_under_criterion(trained):
    import syntax_nmt.checkpoint_compat  # noqa: F401

    name, save, _ = trained
    state = torch.load(os.path.join(save, "checkpoint_last.pt"), map_location="cpu", weights_only=True)
    model_keys = list(state["model"])
    if name in ("seprem", "all"):
        assert sorted(state["criterion"]) == ["dp_classifier.bias", "dp_classifier.weight", "hp_key.bias",
                                              "hp_key.weight", "hp_query.bias", "hp_query.weight"]
        assert sum(".syntax_inputs.seprem.alpha" in k for k in model_keys) == state["cfg"]["model"].encoder_layers
    else:
        assert state["criterion"] is None  # LISA's head lives in the model: a parameter-free criterion
    if name in ("lisa", "all"):
        assert any(k.endswith("self_attn.parse_bilinear") for k in model_keys)
    assert not any(k.startswith(("dp_", "hp_")) for k in model_keys)


def test_training_resumes_with_the_criterion_state(trained, stream_bin):
    """'all' resumes its DP/HP classifiers; 'lisa' (no classifiers saved) continues with DP added."""
    name, save, _ = trained
    if name == "seprem":
        pytest.skip("two resumes are enough")
    # new DP parameters change the optimizer's parameter set: fairseq needs --reset-optimizer for that
    more = ["--dp-loss-weight", "0.3", "--reset-optimizer"] if name == "lisa" else []
    proc = run_cli("fairseq-train", stream_bin, *TRAIN, *RUNS[name], *more, "--save-dir", save, "--max-update", "8")
    out = proc.stdout + proc.stderr
    assert "Loaded checkpoint" in out and "done training" in out
    assert re.search(r"num_updates 8\b", out)
    fresh = "syntax criterion: checkpoint lacks ['dp_classifier.bias', 'dp_classifier.weight']"
    assert (fresh in out) == (name == "lisa")
    if name == "lisa":
        assert re.search(r"\| valid \|.*\| dp_loss [\d.]+", out)


def test_lisa_with_the_readme_criterion_is_warned_about(stream_bin, tmp_path):
    """The README's training step (``--criterion label_smoothed_cross_entropy``) with
    ``--syntax-attention lisa`` trains the LISA head without its parse loss: fairseq-train says so, once."""
    train = [a if a != "label_smoothed_cross_entropy_with_syntax" else "label_smoothed_cross_entropy" for a in TRAIN]
    proc = run_cli("fairseq-train", stream_bin, *train, "--syntax-attention", "lisa", "--max-update", "1",
                   "--disable-validation", "--save-dir", tmp_path)
    out = proc.stdout + proc.stderr
    assert out.count("WARNING | syntax_nmt.tasks.syntax_translation | --syntax-attention lisa has auxiliary losses "
                     "(--lisa-loss-weight) that the criterion label_smoothed_cross_entropy does not compute") == 1, out
    assert "lisa_loss" not in out
