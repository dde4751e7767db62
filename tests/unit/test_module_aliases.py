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


@pytest.mark.parametrize("name", ["length", "memory", "parse"])
def test_an_old_bench_path_is_the_module_itself(name):
    """``syntax_nmt.bench_length`` etc. are ``syntax_nmt.bench.length`` etc. (the benches' folder, issue 47.4)."""
    old = importlib.import_module(f"syntax_nmt.bench_{name}")
    new = importlib.import_module(f"syntax_nmt.bench.{name}")
    assert old is new and new.__name__ == f"syntax_nmt.bench.{name}"


def test_the_old_bench_module_names_are_the_model_bench():
    """``from syntax_nmt.bench import train_wps`` (the old module ``syntax_nmt/bench.py``) still works, and importing
    one bench of the folder does not import the model bench (its demo and table imports)."""
    code = ("import sys; from syntax_nmt.bench import length; assert 'syntax_nmt.bench.model' not in sys.modules; "
            "from syntax_nmt.bench import train_wps, targets; from syntax_nmt.bench import model; "
            "assert train_wps is model.train_wps and targets is model.targets; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("old,new", [("syntax_nmt.bench_length", "syntax_nmt.bench.length"),
                                     ("syntax_nmt.bench_parse", "syntax_nmt.bench.parse"),
                                     ("syntax_nmt.bench", "syntax_nmt.bench.model")])
def test_python_m_an_old_bench_path_is_the_command_line(old, new):
    for module in (old, new):
        proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
        prog = "python -m " + (new if old != "syntax_nmt.bench" else old)
        assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {prog}"), proc.stdout[:300] + proc.stderr[-2000:]
