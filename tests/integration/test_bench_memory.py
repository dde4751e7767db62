"""``make bench``'s in-process memory measure (syntax_nmt/bench/memory.py)."""

import pytest

from conftest import USER_DIR
from syntax_nmt.bench.memory import measure


@pytest.mark.parametrize("precision", [[], ["--fp16"]])
def test_seprem_losses_train_in_the_model_precision(stream_bin, precision):
    """The criterion is cast with the model, as fairseq's Trainer casts both: with --fp16 SEPREM's DP classifier
    met half-precision encoder states in float32 and the measure stopped (seen on an H200 for the ``all`` system)."""
    out = measure([stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation", "--arch",
                   "syntax_transformer_tiny", "--syntax-attention", "seprem", "--criterion",
                   "label_smoothed_cross_entropy_with_syntax", "--dp-loss-weight", "0.01", "--hp-loss-weight", "0.01",
                   "--max-tokens", "512", "--optimizer", "adam", *precision], steps=2)
    assert out["device"] == "cpu" and out["activations_mib"] > 0
    assert out["model_train_mib"] == pytest.approx(4 * out["params_mib"] + out["activations_mib"])
