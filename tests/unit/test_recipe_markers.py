"""What the recipe asks before it skips a step (syntax_nmt/recipes/markers.py, issue 46): a score cut short, a
split whose target tags failed, translations made with other settings, parses made with another parser, and the
parser's name in the results."""

import json
import os
import time

import pytest

from syntax_nmt.recipes import markers

PROG = "python -m syntax_nmt.recipes.markers"


@pytest.fixture
def evaluated(tmp_path):
    """A training's .done, then valid and test2017 scored (and their tags measured) after it."""
    save = tmp_path / "ckpt"
    save.mkdir()
    (save / ".done").write_text("{}")
    time.sleep(0.02)
    for split in ("valid", "test2017"):
        (tmp_path / "eval" / split).mkdir(parents=True)
        (tmp_path / "eval" / split / "factors.seed1.json").write_text(json.dumps({"sacrebleu": 30.0}))
        (tmp_path / "eval" / split / "factors.seed1.factors.json").write_text(json.dumps({"pos": {"accuracy": 90}}))
    return tmp_path


def todo(capsys, root, *extra):
    capsys.readouterr()
    code = markers.main(["todo", "--after", str(root / "ckpt" / ".done"), "--eval", str(root / "eval"), "--name",
                         "factors.seed1", "--splits", "valid test2017", *extra])
    out, err = capsys.readouterr()
    return code, out.split(), err.splitlines()


def test_done_splits_are_skipped(evaluated, capsys):
    assert todo(capsys, evaluated, "--factors") == (0, [], [])


def test_a_score_cut_short_is_done_again_with_a_warning(evaluated, capsys):
    """A disk full while scoring left an empty .json, which every later run skipped, then failed on
    ("Expecting value: line 1 column 1", naming no file)."""
    bad = evaluated / "eval" / "valid" / "factors.seed1.json"
    bad.write_text("")
    code, splits, err = todo(capsys, evaluated, "--factors")
    assert (code, splits) == (0, ["valid"])
    assert err == [f"warning: {bad} is not valid JSON (Expecting value: line 1 column 1 (char 0)): a write cut "
                   f"short? doing its step again"]


def test_a_split_whose_tags_failed_is_done_again(evaluated, capsys):
    """The factors step failed at evaluate after the score was written: the split was skipped as done (one seed: the
    target-tag table disappeared; two: the report always failed)."""
    os.remove(evaluated / "eval" / "test2017" / "factors.seed1.factors.json")
    assert todo(capsys, evaluated, "--factors") == (0, ["test2017"], [])
    assert todo(capsys, evaluated) == (0, [], [])  # a system without target tags: the score alone


def test_a_translation_made_with_other_settings_is_made_again(evaluated, capsys):
    for split in ("valid", "test2017"):
        markers.main(["record", "--eval", str(evaluated / "eval"), "--split", split, "--name", "factors.seed1",
                      "--setting", "BEAM=4" if split == "valid" else "BEAM=5", "--setting", "LENPEN=0.6"])
    code, splits, err = todo(capsys, evaluated, "--setting", "BEAM=4", "--setting", "LENPEN=0.6")
    assert (code, splits) == (0, ["test2017"])
    code, splits, err = todo(capsys, evaluated, "--setting", "BEAM=5", "--setting", "LENPEN=0.6")
    assert (code, splits) == (0, ["valid"])
    assert err == ["factors.seed1 on valid was translated with other settings (BEAM: '4' -> '5'): translating it "
                   "again"]


def _annotation(prefix, model):
    with open(f"{prefix}.annotation.json", "w") as f:
        json.dump({"version": 1, "backend": "spacy", "spacy_model": model, "src_lang": "en"}, f)


def test_parses_of_another_parser_stop_the_run(tmp_path, capsys, spacy_model):
    """Another SPACY_MODEL with STAGES without annotate reused the old parses, and the title named the new parser."""
    ann = tmp_path / "annotated"
    ann.mkdir()
    _annotation(ann / "train", "en_core_web_sm")
    before = (ann / "train.annotation.json").read_bytes()
    markers.main(["annotated", str(ann / "train"), "--setting", "SPACY_MODEL", "--model", "en_core_web_sm"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        markers.main(["annotated", str(ann / "train"), "--setting", "SPACY_MODEL", "--model", spacy_model])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{PROG}: error: {ann} was annotated with SPACY_MODEL=en_core_web_sm, now SPACY_MODEL={spacy_model}: set "
        f"SPACY_MODEL=en_core_web_sm to go on with these parses, or choose another WORK (or remove {ann} and what was "
        f"made from it) and run the annotate stage for the new parser"]
    assert (ann / "train.annotation.json").read_bytes() == before
    markers.main(["annotated", str(tmp_path / "none" / "train"), "--setting", "SPACY_MODEL", "--model", "x"])


def test_the_results_name_the_parser_by_name_and_version_not_its_path(tmp_path, capsys, spacy_model):
    _annotation(tmp_path / "train", os.path.abspath(spacy_model))
    meta = json.load(open(os.path.join(spacy_model, "meta.json")))
    capsys.readouterr()
    markers.main(["parser", str(tmp_path / "train")])
    assert capsys.readouterr().out == f"{meta['lang']}_{meta['name']} {meta['version']}\n"
    markers.main(["parser", str(tmp_path / "missing"), "--default", "en_core_web_sm"])
    assert capsys.readouterr().out == "en_core_web_sm\n"


# --- issue 56.5: a settings record cut short warned "doing its step again" and the split was skipped ---


def _record(root, split="valid"):
    markers.main(["record", "--eval", str(root / "eval"), "--split", split, "--name", "factors.seed1",
                  "--setting", "BEAM=4"])
    return root / "eval" / split / "factors.seed1.settings.json"


@pytest.mark.parametrize("content,warning", [
    ("", "is not valid JSON (Expecting value: line 1 column 1 (char 0)): a write cut short? doing its step again"),
    ('{"BEAM": "4"', "is not valid JSON (Expecting ',' delimiter: line 1 column 13 (char 12)): a write cut short? "
                     "doing its step again"),
    ("[]", "is not a record of settings: doing its step again"),
])
def test_a_settings_record_cut_short_makes_its_split_be_done_again(evaluated, capsys, content, warning):
    _record(evaluated, "test2017")
    path = _record(evaluated)
    path.write_text(content)
    code, splits, err = todo(capsys, evaluated, "--setting", "BEAM=4")
    assert (code, splits) == (0, ["valid"])
    assert err == [f"warning: {path} {warning}"]


def test_a_split_without_a_settings_record_is_done_again(evaluated, capsys):
    """A run killed between the score and its record left a score whose settings nobody knows: it counted as done
    with whatever settings the run had now."""
    path = _record(evaluated, "test2017")
    code, splits, err = todo(capsys, evaluated, "--setting", "BEAM=4")
    valid = evaluated / "eval" / "valid" / "factors.seed1.settings.json"
    assert (code, splits) == (0, ["valid"])
    assert err == [f"factors.seed1 on valid has no record of the settings it was translated with ({valid}): "
                   f"translating it again"]
    assert path.exists() and todo(capsys, evaluated) == (0, [], [])  # no settings given: nothing to compare
