"""The modules' command lines: ``python -m`` of the evaluation module and of each bench is its command line, the
console script points at the module (the old paths' aliases, ``syntax_nmt.evaluate`` and the like, are gone: issue
57.3; the package was never released under them), and one bench imports without the others."""

import re
import subprocess
import sys
from pathlib import Path

import pytest


def test_python_m_the_evaluation_module_is_the_command_line(tmp_path):
    module = "syntax_nmt.evaluation.evaluate"
    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: syntax-nmt-evaluate"), proc.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-m", module, "score", "--gen", str(tmp_path / "none"), "--ref-raw", "r",
                          "--ref-tok", "t", "--out-prefix", str(tmp_path / "o")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("syntax-nmt-evaluate: error: ") and "none" in bad.stderr


def test_the_evaluation_command_loads_no_parser_until_it_scores_syntax():
    """``syntax-nmt-evaluate`` (issue 57.4: one concern a module) imports the syntax accuracy, the one part that runs a
    parser, only for ``factors`` and ``parse``: its parser and the metrics' modules import neither it nor spaCy."""
    code = ("import sys; from syntax_nmt.evaluation import evaluate, scoring; evaluate.get_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'spacy' or m.startswith("
            "('syntax_nmt.annotate.backends', 'syntax_nmt.evaluation.syntax_accuracy'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr[-2000:]


def test_the_console_script_points_at_the_evaluation_module():
    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text(encoding="utf-8")
    assert re.search(r'"syntax-nmt-evaluate = syntax_nmt\.evaluation\.evaluate:cli_main"', setup)


def test_one_bench_imports_without_the_model_bench():
    """Importing one bench of the folder does not import the model bench (its demo and table imports)."""
    code = ("import sys; from syntax_nmt.bench import length, parse; "
            "assert 'syntax_nmt.bench.model' not in sys.modules; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("module", ["syntax_nmt.bench.length", "syntax_nmt.bench.parse", "syntax_nmt.bench"])
def test_python_m_a_bench_is_its_command_line(module):
    """``python -m syntax_nmt.bench`` is ``make bench`` (:mod:`syntax_nmt.bench.model`)."""
    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: python -m {module}"), (
        proc.stdout[:300] + proc.stderr[-2000:])
