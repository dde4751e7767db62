"""``--checkpoint-activations`` on the real command line. In-process, every method alone and all together
give the gradients of the same step without recomputation: tests/integration/test_method_contract.py."""

import re

import pytest

from conftest import TRAIN, run_cli

CKPT = "--checkpoint-activations"


@pytest.mark.e2e
def test_fairseq_train_with_checkpoint_activations(stream_bin, tmp_path):
    """The real command line: with SLA (its layers read the context) training with recomputed layers logs
    exactly the losses of the same training without."""
    logs = {}
    for flags in ([], [CKPT]):
        proc = run_cli("fairseq-train", stream_bin, *TRAIN, "--arch", "syntax_transformer_tiny",
                       "--syntax-attention", "sla", "--source-features", "", "--max-update", "4",
                       "--save-dir", tmp_path / f"ckpt{len(flags)}", "--no-save", *flags)
        log = proc.stdout + proc.stderr
        assert "done training" in log and "Traceback" not in log
        logs[bool(flags)] = re.findall(r"\| train_inner \|.*? loss ([\d.]+)", log) + \
            re.findall(r"\| train \|.*? loss ([\d.]+)", log)
    assert logs[False] and logs[True] == logs[False]
