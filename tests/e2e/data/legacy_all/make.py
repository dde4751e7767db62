"""Writes the committed checkpoint of ``tests/e2e/test_legacy_checkpoint.py`` (run once; not part of the tests).

A tiny ``all`` system (features and every syntax method on a 3-layer encoder, the syntax criterion) trained a
few updates with fairseq-train on the tiny stream corpus of ``tests/support/streamdata.py``, then ``fairseq-generate``
on its test split. Kept: the checkpoint without its optimizer state, the binarized test split with its
dictionaries, the generation command line and its output (``expected.txt``). The test checks that the code
of the day loads the checkpoint and gives the same hypotheses and scores.

Usage: ``python tests/e2e/data/legacy_all/make.py`` (writes next to this file; the commit the checkpoint was
made with goes into ``made_with.txt``).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # tests/
from support.streamdata import write_corpus  # noqa: E402

import syntax_nmt  # noqa: E402

USER_DIR = os.path.dirname(os.path.abspath(syntax_nmt.__file__))
BIN = os.path.dirname(sys.executable)
#: the ``all`` system of the table of systems on the day the checkpoint was made, at a tiny size
MODEL = ["--arch", "syntax_transformer_tiny", "--encoder-layers", "3", "--encoder-embed-dim", "32",
         "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
         "--source-features", "pos,case,subword", "--syntax-attention", "sgnet,sla,syntax_bert,seprem,lisa",
         "--sla-layers", "0", "--syntax-bert-layers", "1", "--lisa-layer", "-1", "--syntax-bert-max-distance", "3",
         "--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1",
         "--dp-loss-weight", "0.01", "--hp-loss-weight", "0.01", "--lisa-loss-weight", "0.1"]
TRAIN = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--optimizer", "adam", "--lr", "0.005",
         "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10", "--max-tokens", "1500", "--max-update", "80",
         "--seed", "1", "--no-epoch-checkpoints", "--no-progress-bar", "--num-workers", "0"]
#: the generation the test repeats (paths relative to this folder)
GENERATE = ["data-bin", "--user-dir", "{user_dir}", "--task", "syntax_translation", "--path", "checkpoint.pt",
            "--beam", "3", "--nbest", "2", "--batch-size", "8", "--required-batch-size-multiple", "1",
            "--max-len-a", "1", "--max-len-b", "4"]


def run(name, *args, cwd=None):
    proc = subprocess.run([os.path.join(BIN, name), *map(str, args)], capture_output=True, text=True, cwd=cwd)
    if proc.returncode:
        raise SystemExit(f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def main():
    with tempfile.TemporaryDirectory() as tmp:
        text = write_corpus(os.path.join(tmp, "text"), sizes={"train": 240, "valid": 20, "test": 21}, seed=3)
        data = os.path.join(tmp, "data-bin")
        run("syntax-nmt-binarize", "--source-lang", "en", "--target-lang", "de", "--trainpref", text["train"],
            "--validpref", text["valid"], "--testpref", text["test"], "--destdir", data, "--joined-dictionary",
            "--workers", "1")
        run("fairseq-train", data, *TRAIN, *MODEL, "--save-dir", os.path.join(tmp, "ckpt"))
        state = torch.load(os.path.join(tmp, "ckpt", "checkpoint_last.pt"), map_location="cpu", weights_only=False)
        state["last_optimizer_state"] = None  # not needed to translate; keeps the file small
        torch.save(state, os.path.join(HERE, "checkpoint.pt"))
        out = os.path.join(HERE, "data-bin")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for f in os.listdir(data):
            if f.startswith(("dict.", "test.")) or f == "annotation.json":
                shutil.copy(os.path.join(data, f), out)
    generate = [a.format(user_dir=USER_DIR) for a in GENERATE]
    lines = run("fairseq-generate", *generate, cwd=HERE).splitlines()
    with open(os.path.join(HERE, "expected.txt"), "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines if line[:2] in ("S-", "T-", "H-", "P-"))
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(HERE, "made_with.txt"), "w", encoding="utf-8") as f:
        f.write(f"made by make.py at commit {commit}\n")


if __name__ == "__main__":
    main()
