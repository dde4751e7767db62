"""The modules that moved keep their old paths (issue 47.4): ``syntax_nmt.evaluate``, ``syntax_nmt.compare`` and
``syntax_nmt.significance`` live in ``syntax_nmt/evaluation/``; user code that imports the old paths gets the same
module (what it patches is what runs), ``python -m syntax_nmt.evaluate`` is still ``syntax-nmt-evaluate``, and the
console script runs either path."""

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("name", ["evaluate", "compare", "significance"])
def test_an_old_path_is_the_module_itself(name):
    old = importlib.import_module(f"syntax_nmt.{name}")
    new = importlib.import_module(f"syntax_nmt.evaluation.{name}")
    assert old is new and new.__name__ == f"syntax_nmt.evaluation.{name}"
    from syntax_nmt import evaluation

    assert getattr(evaluation, name) is new


def test_python_m_the_old_path_is_the_command_line(tmp_path):
    for module in ("syntax_nmt.evaluate", "syntax_nmt.evaluation.evaluate"):
        proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith("usage: syntax-nmt-evaluate"), proc.stderr[-2000:]
        bad = subprocess.run([sys.executable, "-m", module, "score", "--gen", str(tmp_path / "none"), "--ref-raw",
                              "r", "--ref-tok", "t", "--out-prefix", str(tmp_path / "o")], capture_output=True,
                             text=True)
        assert bad.returncode == 2 and bad.stderr.startswith("syntax-nmt-evaluate: error: ") and "none" in bad.stderr


def test_the_console_script_points_at_the_new_path():
    import re
    from pathlib import Path

    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text(encoding="utf-8")
    assert re.search(r'"syntax-nmt-evaluate = syntax_nmt\.evaluation\.evaluate:cli_main"', setup)
