"""The contract of a target-side scheme (syntax_nmt/targets/), read from the registry: every registered scheme, the
built-in ones and any added since (tests/integration/test_a_new_target_scheme_file.py runs this file on a copy of
the package with a toy scheme in one more file), is in the table of systems with the options it declares, tells the
recipes what they need through the shell interface, and writes its own data when it has some (issue 47.3)."""

import contextlib
import io
import os
import shlex
import subprocess
import sys

import pytest

from syntax_nmt import systems as S
from syntax_nmt.annotate.target_tags import strip
from syntax_nmt.targets import registered_schemes
from syntax_nmt.targets.__main__ import main, own_data_schemes, write_data

SCHEMES = list(registered_schemes())
CRITERION = "label_smoothed_cross_entropy_with_syntax"
#: a tiny annotated split (syntax-nmt-annotate's outputs, the target annotated too): target subwords, their tags
#: and positions (B/M/E/O), and the source
SPLIT = {"de": ["die Kat@@ ze schläft .", "es reg@@ net"], "tgt.de": ["die Kat@@ ze schläft .", "es reg@@ net"],
         "tgt.pos": ["DET NOUN NOUN VERB PUNCT", "PRON VERB VERB"], "tgt.subword": ["O B E O O", "O B E"],
         "en": ["the cat sleeps .", "it rains"]}


def _shell(name: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert S._cli(["shell", name]) == 0
    values = {}
    for line in out.getvalue().splitlines():
        key, value = line.split("=", 1)
        values[key] = shlex.split(value[1:-1]) if value.startswith("(") else " ".join(shlex.split(value))
    return values


def test_the_built_in_schemes_come_first():
    assert SCHEMES[:2] == ["factors", "tags"]


@pytest.mark.parametrize("name", SCHEMES)
def test_its_systems_are_in_the_table_with_what_it_declares(name):
    cls = registered_schemes()[name]
    scheme = cls()
    assert cls.name == name and cls.systems, f"target scheme {name!r} lists no system"
    assert scheme.data_suffix or scheme.needs_syntax_model, "a scheme with neither data nor a model changes nothing"
    table = S.systems()
    for system_name, methods, note in cls.systems:
        s = table[system_name]
        assert s.target == name and not s.default and s.methods == tuple(methods) and s.note == note
        assert s.stock == (not methods and not scheme.needs_syntax_model)
        assert s.task == ("syntax_translation" if not s.stock else "translation")
        args = s.args()
        k = len(scheme.train_args)
        if s.stock:
            assert args == [] and not k
        else:
            assert any(args[i:i + k] == list(scheme.train_args) for i in range(len(args) - k + 1))
            criterion = args[args.index("--criterion") + 1] if "--criterion" in args else None
            assert (criterion == CRITERION) == bool(scheme.syntax_criterion or s.criterion_args)
        shell = _shell(system_name)
        assert shell["SYSTEM_TARGET"] == name and shell["SYSTEM_DATA"] == scheme.data_suffix
        assert shell["SYSTEM_EVALUATE_ARGS"] == list(scheme.evaluate_args)
        assert shell["SYSTEM_TAGS"] == str(int(scheme.measures_tags))
        assert shell["SYSTEM_STOCK"] == str(int(s.stock))


@pytest.mark.parametrize("name", [n for n in SCHEMES if registered_schemes()[n].data_suffix])
def test_its_own_data_is_written_from_the_annotation(name, tmp_path):
    ann = tmp_path / "annotated" / "bpe10"
    ann.mkdir(parents=True)
    for split in ("train", "valid"):
        for ext, lines in SPLIT.items():
            (ann / f"{split}.{ext}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    scheme = registered_schemes()[name]()
    written = write_data(str(ann), ["train", "valid"], "en", "de")
    out = tmp_path / "annotated" / f"bpe10-{scheme.data_suffix}"
    assert str(out) in written and sorted(os.listdir(out)) == ["train.de", "train.en", "valid.de", "valid.en"]
    assert (out / "valid.en").read_text(encoding="utf-8").splitlines() == SPLIT["en"]
    target = (out / "valid.de").read_text(encoding="utf-8").splitlines()
    assert len(target) == len(SPLIT["de"]) and target != SPLIT["de"]
    if "--strip-target-tags" in scheme.evaluate_args:  # what scoring reads of a hypothesis in the scheme's form
        assert [strip(line) for line in target] == SPLIT["de"]


def test_the_command_line_lists_the_own_data_schemes_and_writes_nothing_for_none(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.targets", "data-suffixes"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stdout.split() == [s.data_suffix for s in own_data_schemes()]
    assert "tagged" in proc.stdout.split()
    bad = subprocess.run([sys.executable, "-m", "syntax_nmt.targets", "write-data", "--annotated",
                          str(tmp_path / "none"), "--splits", "train", "--src-lang", "en", "--tgt-lang", "de"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "none/train.de" in bad.stderr
    assert os.listdir(tmp_path) == []  # no directory made for nothing


def _tree(root):
    """Every file under ``root`` (relative path -> bytes) and every folder (relative path -> None)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root)] = None
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.relpath(os.path.join(d, name), root)] = f.read()
    return out


def _annotated(ann, splits, lines=SPLIT):
    ann.mkdir(parents=True, exist_ok=True)
    for split in splits:
        for ext, values in lines.items():
            (ann / f"{split}.{ext}").write_text("".join(v + "\n" for v in values), encoding="utf-8")


@pytest.mark.parametrize("how", ["a missing split", "an invalid split", "an output that cannot be written"])
def test_a_failed_rerun_of_write_data_keeps_the_earlier_output(how, tmp_path):
    """Issue 62: write-data ran once; a rerun on changed annotations fails part-way (the split after train, valid2,
    is missing, invalid, or its output is a folder): every file of the first run is byte-identical, and nothing else is
    left behind (no staging folder, no file of the rerun)."""
    ann = tmp_path / "annotated" / "bpe10"
    _annotated(ann, ["train", "valid"])
    assert main(["write-data", "--annotated", str(ann), "--splits", "train valid", "--src-lang", "en",
                 "--tgt-lang", "de"]) == 0
    out = tmp_path / "annotated" / "bpe10-tagged"
    assert sorted(os.listdir(out)) == ["train.de", "train.en", "valid.de", "valid.en"]
    # the rerun's train would be another: its first sentence changed
    _annotated(ann, ["train"], {**SPLIT, "en": ["a dog sleeps .", "it rains"],
                                "tgt.pos": ["PRON NOUN NOUN VERB PUNCT", "PRON VERB VERB"]})
    if how == "an invalid split":
        _annotated(ann, ["valid2"], {**SPLIT, "tgt.pos": ["DET NOUN"]})  # fewer tags than words
    elif how == "an output that cannot be written":
        _annotated(ann, ["valid2"])
        (out / "valid2.de").mkdir()  # (after train.* in the order the files are moved)
    before = _tree(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["write-data", "--annotated", str(ann), "--splits", "train valid2", "--src-lang", "en",
              "--tgt-lang", "de"])
    assert e.value.code == 2
    assert _tree(tmp_path) == before
