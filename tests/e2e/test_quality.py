"""Slow "does syntax help" check (``make test-slow``; not part of ``make test``).

Runs the default demo (every system of the demo's table, 3 training seeds, identical budgets) and
judges its table with :func:`syntax_nmt.demo.report.quality_check`: the best syntax variant must beat the
stock Transformer by at least 1.0 BLEU (means over the seeds; on this corpus the German case and word
order depend on the English syntax), and SG-Net alone must not be worse than the Transformer by more
than seed noise (two standard errors of the difference of the means). The table is printed.
"""

import json
import os
import subprocess
import sys

import pytest

from syntax_nmt.demo.report import quality_check

pytestmark = pytest.mark.slow


def test_syntax_helps_over_three_seeds(tmp_path):
    out = str(tmp_path / "demo")
    subprocess.run([sys.executable, "-m", "syntax_nmt.demo", "--out", out, "--seeds", "3", "--analyses", ""],
                   check=True)
    rows = json.loads(open(os.path.join(out, "results.json")).read())
    claims = quality_check(rows)
    report = open(os.path.join(out, "results.md")).read() + "\n" + "\n".join(
        f"[{'ok' if ok else 'FAILED'}] {claim}: {detail}" for claim, ok, detail in claims)
    print(report)
    assert all(r["mean"] > 5 for r in rows), report  # every system learned something
    assert len(claims) == 2, report
    assert all(ok for _, ok, _ in claims), report
