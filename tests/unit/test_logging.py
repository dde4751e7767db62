"""One logging setup for every console script (``syntax_nmt.utils.setup_logging``), and no DEBUG lines of
matplotlib's in their output."""

import importlib
import subprocess
import sys

import pytest

# every console script of setup.py and every ``python -m`` tool of the README, by its entry function
ENTRY_POINTS = ["syntax_nmt.synthetic.cli:cli_main", "syntax_nmt.annotate.spacy_train:cli_main",
                "syntax_nmt.annotate.cli:cli_main", "syntax_nmt.data.binarize:cli_main",
                "syntax_nmt.annotate.target_tags:cli_main",
                "syntax_nmt.evaluation.evaluate:cli_main", "syntax_nmt.analyze.cli:cli_main", "syntax_nmt.demo.cli:cli_main",
                "syntax_nmt.bench.model:cli_main", "syntax_nmt.recipes.report:main",
                "syntax_nmt.export.cli:cli_main"]


def test_the_list_holds_every_console_script():
    import re
    from pathlib import Path

    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text()
    scripts = re.findall(r'"syntax-nmt-[\w-]+ = ([\w.]+:\w+)"', setup)
    assert scripts and set(scripts) <= set(ENTRY_POINTS)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_console_script_sets_logging_up_the_one_way(entry):
    """Each entry function (or the ``main`` it runs) calls ``setup_logging``, and no module sets the root logger up
    on its own."""
    import inspect

    module = importlib.import_module(entry.split(":")[0])
    source = inspect.getsource(module)
    assert "setup_logging(" in source, f"{entry}: no setup_logging"
    assert "logging.basicConfig(" not in source


def test_plots_log_no_debug_lines_of_matplotlib(tmp_path):
    """fairseq leaves the root logger at DEBUG; matplotlib logs its paths at DEBUG when imported."""
    code = ("import logging, sys; logging.basicConfig(level=logging.DEBUG, stream=sys.stdout); "
            "from syntax_nmt.utils import pyplot; plt = pyplot(); plt.plot([1, 2]); plt.savefig(sys.argv[1]); "
            "print('saved')")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.png")], capture_output=True, text=True)
    assert "saved" in out.stdout, out.stderr
    assert "DEBUG:matplotlib" not in out.stdout + out.stderr
