"""A target scheme declares what it needs (issue 57.2): a toy scheme of target *case* factors, one new file, is
binarized, trained, translated and scored by the recipes with no other file changed.

A copy of the package gets one more module, ``targets/case.py``: its system ``case-factors`` predicts each target
word's case class (``C`` / ``L``, the annotator's ``case`` stream) beside it. The scheme names its target stream
(``case``: the recipes binarize it beside their data) and the stream its translations are scored on (``case``: the
truth of each word is what the annotator writes for it). The fast tests run the contract of every target scheme and
the table of systems on the copy; the slow one runs the Multi30k EN->FR recipe's stages, run_all.sh unedited, with
target POS factors and the toy side by side.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import syntax_nmt

ROOT = os.path.dirname(os.path.dirname(syntax_nmt.__file__))

CASE = '''"""A toy target scheme: target case factors, the decoder predicts each target word's case class beside it."""

from syntax_nmt.targets.base import TargetScheme, register_target_scheme


@register_target_scheme("case")
class CaseFactors(TargetScheme):
    """Target case factors (``C``: the word starts with a capital, else ``L``), trained like the POS factors."""

    systems = (("case-factors", (), "target case factors (a toy)"),)
    needs_syntax_model = True
    train_args = ("--target-factors", "case", "--target-factor-input")
    syntax_criterion = True
    target_streams = ("case",)
    scored_streams = ("case",)
'''

#: the tests that read the target registry or the table of systems ...
TESTS = ["tests/unit/test_target_schemes.py", "tests/unit/test_systems.py"]
#: ... but those that read no table or build a model (the main run has them)
SKIP = "not shell_interface and not all_builds and not command_line_lists"


@pytest.fixture(scope="module")
def copy_with_case(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(os.path.join(ROOT, "syntax_nmt"), root / "syntax_nmt",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "syntax_nmt" / "targets" / "case.py").write_text(CASE, encoding="utf-8")
    for name in ("tests", "pytest.ini"):  # the suite itself, run from the copy (python -m puts its directory first)
        (root / name).symlink_to(os.path.join(ROOT, name))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    return root, env


def test_the_copy_compares_the_toy_and_reads_its_stream(copy_with_case):
    root, env = copy_with_case
    code = ("import contextlib, io, json, syntax_nmt, syntax_nmt.systems as S\n"
            "shell = io.StringIO()\n"
            "with contextlib.redirect_stdout(shell):\n"
            "    S._cli(['shell', 'case-factors'])\n"
            "print(json.dumps({'file': syntax_nmt.__file__, 'target': S.target_systems(), 'shell': shell.getvalue(),"
            " 'args': S.get('case-factors').args()}))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["file"] == str(root / "syntax_nmt" / "__init__.py")
    assert got["target"] == ["transformer", "factors", "interleaved", "case-factors", "lisa", "lisa+factors"]
    assert got["args"] == ["--source-features", "", "--target-factors", "case", "--target-factor-input", "--criterion",
                           "label_smoothed_cross_entropy_with_syntax"]
    shell = got["shell"].splitlines()
    assert "SYSTEM_TARGET=case" in shell and "SYSTEM_TARGET_STREAMS=case" in shell and "SYSTEM_TAGS=1" in shell
    assert "SYSTEM_DATA=''" in shell and "SYSTEM_EVALUATE_ARGS=()" in shell


def test_the_suite_that_reads_the_target_registry_stays_green_and_checks_the_toy(copy_with_case):
    root, env = copy_with_case
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-x", "-v", "-m", "not slow",
                           *TESTS, "-k", SKIP], env=env, capture_output=True, text=True, cwd=str(root))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and " passed" in out, out[-4000:]
    for test in ("test_its_systems_are_in_the_table_with_what_it_declares",
                 "test_it_names_its_target_streams_and_how_they_are_scored",
                 "test_evaluate_factors_scores_the_streams_it_declares",
                 "test_the_recipes_binarize_the_target_streams_its_systems_read"):
        assert f"{test}[case] PASSED" in out, out[-4000:]


@pytest.mark.slow
def test_the_recipe_binarizes_trains_and_scores_the_toy(copy_with_case, synthetic_spacy, tmp_path, monkeypatch):
    """The Multi30k en-fr recipe, unedited, on the copy, with target POS factors and the toy: the data gets both
    target streams, the toy trains on its case factors, and its translations' case tags are scored against the
    target parser's words (a table row of their own)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from support.multi30k import read_lines, recipe_env, run_recipe, standin_files

    root, copy_env = copy_with_case
    corpus, spacy_model = synthetic_spacy
    en = {s: read_lines(corpus[s]["en"]) for s in corpus}
    fr = {s: read_lines(corpus[s]["de"]) for s in corpus}
    env = recipe_env(tmp_path, standin_files(en, fr), spacy_model, tmp_path / "cache", ("en", "fr"),
                     TGT_SPACY_MODEL=str(spacy_model), SEEDS="1", SPLITS="valid test2017",
                     SYSTEMS="factors case-factors", PYTHONPATH=copy_env["PYTHONPATH"])
    (tmp_path / "cache").mkdir()
    monkeypatch.chdir(root)  # python -m puts the working directory first: the copy's package, not the checkout's
    run_recipe(Path(ROOT) / "examples" / "multi30k_en_fr" / "run_all.sh", env, tmp_path)
    work = tmp_path / "run"
    data = work / "data-bin" / "bpe200"
    assert sorted(p.name for p in data.glob("dict.tgt.*.txt")) == ["dict.tgt.case.txt", "dict.tgt.pos.txt"]
    assert {line.split()[0] for line in read_lines(data / "dict.tgt.case.txt")} <= {"C", "L"}
    log = (work / "checkpoints" / "cpu-bpe200" / "case-factors" / "seed1" / "stdout.log").read_text(encoding="utf-8")
    assert "factor_case_loss" in log  # trained on its case factors
    for split, n in (("valid", 24), ("test2017", 20)):
        ev = work / "eval" / "cpu-bpe200" / split
        assert json.loads((ev / "case-factors.seed1.json").read_text())["sentences"] == n
        gen = read_lines(ev / "case-factors.seed1.gen")
        assert sum(line.startswith("F-") and line.split("\t")[1] == "case" for line in gen) == n
        case = json.loads((ev / "case-factors.seed1.factors.json").read_text())
        assert list(case) == ["case"] and case["case"]["words"] > 0 and 0 <= case["case"]["accuracy"] <= 100
        assert list(json.loads((ev / "factors.seed1.factors.json").read_text())) == ["pos"]
    table = (work / "eval" / "cpu-bpe200" / "results.md").read_text()
    tags = table.split("## Target tags")[1].split("\n## ")[0]
    assert [line.split(" | ")[:2] for line in tags.splitlines() if line.startswith("| ") and "---" not in line][1:] \
        == [["| factors", "pos"], ["| case-factors", "case"]]
