"""Parsers recorded by version and content (issue 56.3): a spaCy pipeline replaced at the same ``--spacy-model``
path is another parser. The annotation records its name, version and a hash of its files; a rerun refuses the old
parses instead of calling them up to date, the recipe's ``markers annotated`` refuses them, and the provenance
(``markers parser``, ``training_record.parser_of``) names the pipeline that parsed, not the one at the path now."""

import hashlib
import json
import os
import shutil

import pytest

from support.annotate import write  # noqa: F401  (registers the rule-based parser component)


def save(path, name, version):
    """The rule-based pipeline of tests/support/annotate.py under ``name`` and ``version``, at ``path``."""
    import spacy

    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    nlp = spacy.blank("en")
    nlp.add_pipe("syntax_nmt_test_rule_parser", name="parser")
    nlp.meta.update(name=name, version=version)
    nlp.to_disk(path)
    return str(path)


def files_sha256(folder):
    """The hash of the issue's recipe, written again here: sha256 over the sorted relative paths and contents
    (``__pycache__``, which importing an installed pipeline's package makes, left out)."""
    digest = hashlib.sha256()
    paths = sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
                   if "__pycache__" not in d.split(os.sep))
    for rel in paths:
        digest.update(rel.encode() + b"\0")
        with open(os.path.join(folder, rel), "rb") as f:
            digest.update(f.read())
        digest.update(b"\0")
    return digest.hexdigest()


def snapshot(folder):
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(d, f)
            out[p] = open(p, "rb").read()
    return out


def exit_of(fn, argv):
    with pytest.raises(SystemExit) as e:
        fn(argv)
    return e.value.code


def errors(capsys):
    return [line for line in capsys.readouterr().err.splitlines() if " | INFO | " not in line
            and " | WARNING | " not in line]


def test_the_record_is_the_pipelines_name_version_and_files(tmp_path):
    from syntax_nmt.annotate.backends.spacy_backend import pipeline_record

    a1 = save(tmp_path / "one" / "rule", "rule", "1.0.0")
    a2 = save(tmp_path / "two" / "rule", "rule", "1.0.0")
    assert pipeline_record(a1) == {"name": "en_rule", "version": "1.0.0", "sha256": files_sha256(a1)}
    assert pipeline_record(a2) == pipeline_record(a1)  # the same files at another path: the same parser
    save(a1, "rule", "1.0.1")  # re-saved at the same path
    assert pipeline_record(a1) == {"name": "en_rule", "version": "1.0.1", "sha256": files_sha256(a1)}
    assert pipeline_record(a1)["sha256"] != pipeline_record(a2)["sha256"]
    assert pipeline_record(str(tmp_path / "none")) is None


def test_an_installed_pipeline_is_recorded_by_its_package():
    import spacy.util

    from syntax_nmt.annotate.backends.spacy_backend import pipeline_dir, pipeline_record

    installed = spacy.util.get_installed_models()
    if not installed:
        pytest.skip("no spaCy pipeline installed")
    name = installed[0]
    meta = spacy.util.get_model_meta(pipeline_dir(name))
    assert pipeline_record(name) == {"name": f"{meta['lang']}_{meta['name']}", "version": meta["version"],
                                     "sha256": files_sha256(pipeline_dir(name))}


def test_a_pipeline_replaced_at_the_same_path_is_noticed(tmp_path, capsys):
    """Today's code kept the old parses "up to date" and named the new pipeline for them."""
    from syntax_nmt.annotate.cli import cli_main as annotate
    from syntax_nmt.recipes import markers
    from syntax_nmt.recipes.training_record import parser_of

    model = save(tmp_path / "models" / "rule-en", "rule", "1.0.0")
    first = files_sha256(model)
    src = write(tmp_path / "train.en", ["The cat sat .", "A dog runs ."])
    prefix = str(tmp_path / "ann" / "train")
    argv = ["--source", src, "--src-lang", "en", "--pretokenized", "--spacy-model", model, "-o", prefix,
            "--subword", "none", "--quiet"]
    assert exit_of(annotate, argv) == 0
    with open(prefix + ".annotation.json", encoding="utf-8") as f:
        recorded = json.load(f)
    assert recorded["spacy_pipeline"] == {"name": "en_rule", "version": "1.0.0", "sha256": first}
    os.makedirs(tmp_path / "data")
    shutil.copyfile(prefix + ".annotation.json", tmp_path / "data" / "annotation.json")  # as binarize copies it
    capsys.readouterr()

    save(model, "rule", "2.0.0")  # retrained (--force) or upgraded (pip install -U) at the same path
    second = files_sha256(model)
    before = snapshot(tmp_path / "ann")
    assert exit_of(annotate, argv) == 2
    err = errors(capsys)
    assert len(err) == 1, err
    assert err[0] == (f"syntax-nmt-annotate: error: {prefix}.* exist but were made with other settings (annotation "
                      f"setting 'spacy_pipeline' differs: en_rule 1.0.0 (files sha256 {first[:12]}...) in the "
                      f"existing outputs, en_rule 2.0.0 (files sha256 {second[:12]}...) in this run); pass "
                      f"--overwrite to redo them (or choose another --output-prefix)")
    assert snapshot(tmp_path / "ann") == before

    # the recipe's check before it skips the annotate stage
    assert exit_of(markers.main, ["annotated", prefix, "--setting", "SPACY_MODEL", "--model", model]) == 2
    where = os.path.dirname(prefix)
    assert errors(capsys) == [
        f"{markers.PROG}: error: {where} was annotated by SPACY_MODEL={model} as en_rule 1.0.0 (files sha256 "
        f"{first[:12]}...), and {model} is now en_rule 2.0.0 (files sha256 {second[:12]}...): remove {where} and "
        f"what was made from it and run the annotate stage again, or put the pipeline that made these parses back"]
    # the provenance names the pipeline that parsed the data
    assert markers.main(["parser", prefix]) == 0
    assert capsys.readouterr().out == "en_rule 1.0.0\n"
    assert parser_of(str(tmp_path / "data")) == f"spacy en_rule 1.0.0 (files sha256 {first[:12]})"

    # --overwrite redoes the parses with the pipeline there now, and records it
    assert exit_of(annotate, argv + ["--overwrite"]) == 0
    with open(prefix + ".annotation.json", encoding="utf-8") as f:
        assert json.load(f)["spacy_pipeline"] == {"name": "en_rule", "version": "2.0.0", "sha256": second}
    assert markers.main(["annotated", prefix, "--setting", "SPACY_MODEL", "--model", model]) == 0


def test_records_made_before_are_not_compared_on_it(tmp_path):
    """An annotation.json written before the pipeline was recorded cannot say which it was: not refused for that,
    and named as before (the pipeline at its recorded path now)."""
    from syntax_nmt.annotation_settings import AnnotationSettings, check_compatible
    from syntax_nmt.recipes.markers import parser_name

    model = save(tmp_path / "rule-en", "rule", "1.0.0")
    shared = dict(version=1, src_lang="en", backend="spacy", pretokenized=True, parser_unescape=False,
                  pos_tagset="upos", case="binary", multi_root="forest", subword="none", subword_model=None,
                  subword_model_sha256=None, escape="v1", max_words=0, max_subwords=0, on_long="blank",
                  on_empty="keep", moses=None)
    new = AnnotationSettings(**shared, extra={"spacy_model": model, "spacy_pipeline": {
        "name": "en_rule", "version": "1.0.0", "sha256": files_sha256(model)}})
    old = AnnotationSettings(**shared, extra={"spacy_model": model})
    check_compatible(old, new, "old", "new")
    assert new.differences(old) == [] and old.differences(new) == []
    other = AnnotationSettings(**shared, extra={"spacy_model": model, "spacy_pipeline": {
        "name": "en_rule", "version": "1", "sha256": "0" * 64}})
    assert new.differences(other) == ["spacy_pipeline"]
    os.makedirs(tmp_path / "data")
    old.write(str(tmp_path / "data" / "annotation.json"))
    assert parser_name(str(tmp_path / "data")) == "en_rule 1.0.0"
