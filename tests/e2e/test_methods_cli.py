"""fairseq-train / fairseq-generate command lines with each syntax method and with all combined."""

import os
import re

import pytest

from conftest import TRAIN, USER_DIR, run_cli

pytestmark = pytest.mark.e2e

# each run costs ~20 s of fairseq start-up on 2 cores: two runs cover every method and option path
# (each method alone and all of them, with the options of the table of systems: test_method_contract.py)
SETUPS = {
    "combined": ["--syntax-attention", "sgnet,sla,syntax_bert", "--sla-layers", "0", "--sla-threshold", "4",
                 "--syntax-bert-layers", "1", "--syntax-bert-max-distance", "2", "--sgnet-learn-alpha",
                 "--source-features", "pos,case,subword,dep", "--encoder-normalize-before"],
    "wla+syntax_bert_product": ["--syntax-attention", "sla,syntax_bert", "--sla-window", "2", "--sla-window-unit",
                                "token", "--sla-layers", "-1",
                                "--syntax-bert-layers", "0", "--syntax-bert-mask-mode", "product",
                                "--no-syntax-bert-global", "--syntax-bert-sibling", "disjoint", "--source-features", ""],
}


@pytest.mark.parametrize("name", list(SETUPS))
def test_train_and_generate(stream_bin, stream_corpus, tmp_path, name):
    save = tmp_path / "ckpt"
    proc = run_cli("fairseq-train", stream_bin, *TRAIN, "--arch", "syntax_transformer_tiny", *SETUPS[name],
                   "--save-dir", save)
    log = proc.stdout + proc.stderr
    assert "done training" in log  # (training logs torch's mask-type warning from fairseq's own decoder)
    losses = [float(x) for x in re.findall(r"\| train \|.*? loss ([\d.]+)", log)]
    assert losses and all(0 < x < 20 for x in losses)
    gen = run_cli("fairseq-generate", stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
                  "--path", os.path.join(save, "checkpoint_last.pt"), "--beam", "3", "--batch-size", "8")
    hyps = [line for line in gen.stdout.splitlines() if line.startswith("H-")]
    n_test = sum(1 for _ in open(stream_corpus["test"] + ".en"))
    assert sorted(int(re.match(r"H-(\d+)", h).group(1)) for h in hyps) == list(range(n_test))
    assert "mismatched key_padding_mask" not in gen.stderr


@pytest.mark.parametrize("extra, message", [
    (["--syntax-attention", "sgnet,nope"], "unknown --syntax-attention method 'nope'; choose from none, sgnet, sla, "
                                           "syntax_bert, seprem, lisa (comma-separated to combine)"),
    (["--syntax-attention", "sla,syntax_bert"], "--syntax-attention sla and syntax_bert both replace the "
                                                "self-attention of encoder layers [0, 1]; give them different layers "
                                                "(--sla-layers, --syntax-bert-layers)"),
    # issue 56.6: a traceback ending in the right message
    (["--source-streams", "pos,xyz"], "--source-streams pos,xyz: unknown stream 'xyz'; known streams: pos, case, "
                                      "subword, head, dep"),
    (["--target-factors", "pos,head"], "--target-factors pos,head: target streams are tag streams (pos, case, "
                                       "subword, dep), not head"),
], ids=["unknown-name", "clashing-layers", "unknown-source-stream", "head-as-target-factor"])
def test_train_option_errors_are_one_line_with_status_2(stream_bin, tmp_path, extra, message):
    """fairseq-train prints the message alone, on one line, with exit status 2: no traceback."""
    proc = run_cli("fairseq-train", stream_bin, *TRAIN, "--arch", "syntax_transformer_tiny", *extra,
                   "--save-dir", tmp_path / "ckpt", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == f"fairseq-train: error: {message}"
    if "--syntax-attention" in extra:
        assert not (tmp_path / "ckpt").exists()
    else:  # the task's options: fairseq-train makes its --save-dir (empty) before it sets the task up
        assert os.listdir(tmp_path / "ckpt") == []
