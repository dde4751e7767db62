"""Adding a target-side scheme is one new file, and it leaves the suite green (issue 47.3), as a new syntax method is
(tests/integration/test_a_new_method_file.py).

A copy of the package gets one more module, ``targets/counted.py`` (a toy scheme: the target after a token of its
length in words, ``⟨5⟩ die Katze schläft .``, data of its own for the stock model), and the tests that read the
target registry and the table of systems run on that copy: the scheme's contract (its systems in the table, the shell
interface, its own data written from the annotation), the table, the registries. The slow test runs the Multi30k
recipe's stages on the copy with the toy's system alone, run_all.sh unedited: annotate (the toy's data beside the
tagged copy), binarize (its data directory), train, translate and score (its token stripped).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.package_copy import ROOT, copy_package

COUNTED = '''"""A toy target scheme: the target after a token of its length in words (``⟨5⟩ die Katze schläft .``)."""

from syntax_nmt.annotate.target_tags import tag_token
from syntax_nmt.targets.base import TargetScheme, register_target_scheme
from syntax_nmt.utils import read_lines


@register_target_scheme("counted")
class Counted(TargetScheme):
    """The target after a token of its length; the stock Transformer learns to write both."""

    systems = (("counted", (), "the target after a token of its length in words (a toy)"),)
    data_suffix = "counted"
    evaluate_args = ("--strip-target-tags",)

    def write_target(self, prefix, tgt_lang, out):
        n = 0
        for n, line in enumerate(read_lines(f"{prefix}.{tgt_lang}"), 1):
            out.write(f"{tag_token(str(len(line.replace('@@ ', ' ').split())))} {line}\\n")
        return n
'''

#: the tests that read the target registry or the table of systems ...
TESTS = ["tests/unit/test_target_schemes.py", "tests/unit/test_systems.py"]
#: ... but those that read no table or build a model (the main run has them)
SKIP = "not shell_interface and not all_builds and not command_line_lists"


@pytest.fixture(scope="module")
def copy_with_counted(tmp_path_factory):
    return copy_package(tmp_path_factory.mktemp("plugin"), {"targets/counted.py": COUNTED})


def test_the_copy_has_the_toys_system_with_what_the_recipes_read(copy_with_counted):
    root, env = copy_with_counted
    code = ("import contextlib, io, json, syntax_nmt, syntax_nmt.systems as S\n"
            "from syntax_nmt.targets.__main__ import own_data_schemes\n"
            "t = S.systems()\n"
            "shell = io.StringIO()\n"
            "with contextlib.redirect_stdout(shell):\n"
            "    S._cli(['shell', 'counted'])\n"
            "print(json.dumps({'file': syntax_nmt.__file__, 'names': list(t), 'target': t['counted'].target,"
            " 'stock': t['counted'].stock, 'default': S.default_systems(), 'shell': shell.getvalue(),"
            " 'suffixes': [s.data_suffix for s in own_data_schemes()]}))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["file"] == str(root / "syntax_nmt" / "__init__.py")
    assert got["target"] == "counted" and got["stock"] and "counted" not in got["default"]
    from syntax_nmt import systems as S

    assert got["default"] == S.default_systems() and set(got["names"]) == {*S.systems(), "counted"}
    assert "SYSTEM_TARGET=counted" in got["shell"] and "SYSTEM_DATA=counted" in got["shell"]
    assert "SYSTEM_EVALUATE_ARGS=(--strip-target-tags)" in got["shell"] and "SYSTEM_TAGS=0" in got["shell"]
    assert got["suffixes"] == ["tagged", "counted"]


def _pytest(root, env, *args):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], env=env,
                          capture_output=True, text=True, cwd=str(root))
    return proc.returncode, proc.stdout + proc.stderr


def test_the_suite_that_reads_the_target_registry_stays_green_and_checks_the_toy(copy_with_counted):
    root, env = copy_with_counted
    rc, out = _pytest(root, env, "-x", "-v", "-m", "not slow", *TESTS, "-k", SKIP)
    assert rc == 0 and " passed" in out, out[-4000:]
    for test in ("test_its_systems_are_in_the_table_with_what_it_declares", "test_its_own_data_is_written_from_the_"
                 "annotation"):
        assert f"{test}[counted] PASSED" in out, out[-4000:]


@pytest.mark.slow
def test_the_recipe_runs_the_toys_system_through_its_stages(copy_with_counted, synthetic_spacy, tmp_path,
                                                            monkeypatch):
    """The Multi30k en-fr recipe (the en-de recipe's run_all.sh with a parsed target), unedited, on the copy, with
    the toy's system alone: its data is made and binarized beside the tagged copy, it trains on it, and its
    translations are scored with its token stripped."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from support.multi30k import read_lines, recipe_env, run_recipe, standin_files

    root, copy_env = copy_with_counted
    corpus, spacy_model = synthetic_spacy
    en = {s: read_lines(corpus[s]["en"]) for s in corpus}
    fr = {s: read_lines(corpus[s]["de"]) for s in corpus}
    env = recipe_env(tmp_path, standin_files(en, fr), spacy_model, tmp_path / "cache", ("en", "fr"),
                     TGT_SPACY_MODEL=str(spacy_model), SEEDS="1", SPLITS="valid test2017", SYSTEMS="counted",
                     PYTHONPATH=copy_env["PYTHONPATH"])
    (tmp_path / "cache").mkdir()
    monkeypatch.chdir(root)  # python -m puts the working directory first: the copy's package, not the checkout's
    run_recipe(Path(ROOT) / "examples" / "multi30k_en_fr" / "run_all.sh", env, tmp_path)
    work = tmp_path / "run"
    counted = work / "annotated" / "bpe200-counted"
    target = read_lines(work / "annotated" / "bpe200" / "valid.fr")
    assert [line.split(" ", 1)[1] for line in read_lines(counted / "valid.fr")] == target
    assert read_lines(counted / "valid.fr")[0].startswith("\u27e8")
    assert (work / "data-bin" / "bpe200-counted" / "train.en-fr.fr.bin").exists()
    log = (work / "checkpoints" / "cpu-bpe200" / "counted" / "seed1" / "stdout.log").read_text(encoding="utf-8")
    assert "data-bin/bpe200-counted" in log  # trained on the toy's data
    for split in ("valid", "test2017"):
        ev = work / "eval" / "cpu-bpe200" / split
        assert json.loads((ev / "counted.seed1.json").read_text())["sentences"] > 0
        assert not any("\u27e8" in line for line in read_lines(ev / "counted.seed1.detok"))
        assert not (ev / "counted.seed1.factors.json").exists()  # its token is no tag to measure
    assert "| counted " in (work / "eval" / "cpu-bpe200" / "results.md").read_text()
