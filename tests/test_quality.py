"""Slow "does it learn, does syntax help" check (``make test-slow``; not part of ``make test``).

Runs the demo on a smaller synthetic corpus: both systems must learn, and the syntax-infused
model must beat the stock Transformer under the identical budget (on this corpus the German
case and word order depend on the English syntax, so it should).
"""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_syntax_infused_beats_the_stock_transformer(tmp_path):
    out = tmp_path / "demo"
    subprocess.run([sys.executable, "-m", "syntax_nmt.demo", "--out", str(out), "--train", "12000",
                    "--test", "500", "--max-update", "300"], check=True)
    results = {r["name"]: r for r in json.loads((out / "results.json").read_text())}
    base, syn = results["test-transformer"], results["test-syntax-infused"]
    assert base["sacrebleu"] > 5 and syn["sacrebleu"] > 5
    assert syn["sacrebleu"] > base["sacrebleu"]
    assert syn["p_value"] < 0.05
