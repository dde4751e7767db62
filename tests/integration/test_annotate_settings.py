"""The annotation settings file: written by syntax-nmt-annotate, checked and copied by binarize."""

import json
import os
import re

import pytest

from support.annotate import CODES, write
from support.streamdata import write_corpus
from syntax_nmt.annotate.cli import main
from syntax_nmt.annotate.settings import (
    KEYS,
    SETTINGS_VERSION,
    AnnotationSettings,
    MosesSettings,
    check_compatible,
    parse_moses_settings,
    settings_path,
)
from syntax_nmt.annotate.subwords import file_sha256
from syntax_nmt.data import binarize

MOSES = "lang=en,normalize=1,aggressive_dash_splits=1,escape=0"


def test_written_beside_the_outputs_exactly(tmp_path, spacy_model, monkeypatch):
    codes = tmp_path / "bpe.codes"
    codes.write_text(CODES, encoding="utf-8")
    src = write(tmp_path / "in.en", ["The cat sat .", "A dog ran ."])
    prefix = str(tmp_path / "out/train")
    monkeypatch.chdir(tmp_path)  # relative paths are recorded as absolute ones
    main(["--source", src, "--src-lang", "en", "-o", prefix, "--spacy-model", os.path.relpath(spacy_model),
          "--pretokenized", "--subword", "bpe", "--subword-model", "bpe.codes", "--case", "rich",
          "--max-words", "50", "--moses-settings", MOSES, "--quiet"])
    assert settings_path(prefix) == prefix + ".annotation.json"
    with open(settings_path(prefix), encoding="utf-8") as f:
        raw = json.load(f)
    assert raw == {
        "version": 1, "src_lang": "en", "backend": "spacy", "spacy_model": spacy_model, "pretokenized": True,
        "parser_unescape": True, "pos_tagset": "upos", "case": "rich", "multi_root": "forest", "subword": "bpe",
        "subword_model": str(codes), "subword_model_sha256": file_sha256(str(codes)), "escape": "v1",
        "max_words": 50, "max_subwords": 0, "on_long": "blank", "on_empty": "keep",
        "moses": {"lang": "en", "normalize": True, "aggressive_dash_splits": True, "escape": False},
        # the pipeline that parsed: its meta's name and version, a hash of its files (test_pipeline_provenance.py)
        "spacy_pipeline": {"name": "en_pipeline", "version": "0.0.0", "sha256": raw["spacy_pipeline"]["sha256"]},
    }
    assert len(raw["spacy_pipeline"]["sha256"]) == 64
    assert AnnotationSettings.read(settings_path(prefix)).to_dict() == raw
    # a learned model is recorded with its final path and hash; conllu: no spaCy model; no moses
    conllu = tmp_path / "in.conllu"
    conllu.write_text("1\tThe\t_\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\t_\tNOUN\tNN\t_\t0\troot\t_\t_\n\n" * 2
                      + "1\tDogs\t_\tNOUN\tNNS\t_\t0\troot\t_\t_\n\n", encoding="utf-8")  # pairs seen twice: merges
    main(["--backend", "conllu", "--conllu", str(conllu), "--src-lang", "en", "-o", str(tmp_path / "c/train"),
          "--subword", "bpe", "--learn-subword", "5", "--subword-model-out", "learned.codes", "--quiet"])
    got = AnnotationSettings.read(str(tmp_path / "c/train.annotation.json"))
    assert (got.backend, got.pretokenized, got.parser_unescape, got.moses, got.extra) == (
        "conllu", False, False, None, {})  # the spaCy model is the spaCy backend's setting (issue 35.6)
    assert got.subword_model == str(tmp_path / "learned.codes")
    assert got.subword_model_sha256 == file_sha256(str(tmp_path / "learned.codes"))


@pytest.mark.parametrize("spec,expected", [
    (MOSES, {"lang": "en", "normalize": True, "aggressive_dash_splits": True, "escape": False}),
    ("escape=true, lang=de ,normalize=no,aggressive_dash_splits=off",
     {"lang": "de", "normalize": False, "aggressive_dash_splits": False, "escape": True}),
    ("lang=en,normalize=1,aggressive_dash_splits=1", "missing escape"),
    ("lang=en,normalize=1,aggressive_dash_splits=1,escape=0,x=1", "unknown key 'x'"),
    ("lang=en,normalize=2,aggressive_dash_splits=1,escape=0", "normalize must be 1 or 0"),
    ("lang=en,lang=de,normalize=1,aggressive_dash_splits=1,escape=0", "'lang' given twice"),
    ("lang,normalize=1", "KEY=VALUE"),
    ("lang=,normalize=1,aggressive_dash_splits=1,escape=0", "lang is empty"),
])
def test_parse_moses_settings(spec, expected):
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=re.escape(expected)):
            parse_moses_settings(spec)
    else:
        assert parse_moses_settings(spec) == MosesSettings(**expected)
        assert list(parse_moses_settings(spec).to_dict()) == ["lang", "normalize", "aggressive_dash_splits", "escape"]


def _raw(**changes):
    """A settings object as the file holds it."""
    s = {"version": 1, "src_lang": "en", "backend": "spacy", "spacy_model": "en_core_web_sm", "pretokenized": True,
         "parser_unescape": True, "pos_tagset": "upos", "case": "binary", "multi_root": "forest", "subword": "bpe",
         "subword_model": "/x/bpe.codes", "subword_model_sha256": "ab" * 32, "escape": "v1", "max_words": 0,
         "max_subwords": 0, "on_long": "blank", "on_empty": "keep", "moses": None}
    s.update(changes)
    return s


def _settings(**changes):
    return AnnotationSettings.from_dict(_raw(**changes), "test")


def _write_raw(path, raw):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(raw, f)


#: P.annotation.json as syntax-nmt-annotate wrote it before the settings were one typed object
#: (--backend conllu --pretokenized --learn-subword 3 --moses-settings ... --max-words 250 --case rich).
FILE_BEFORE = """{
 "backend": "conllu",
 "case": "rich",
 "escape": "v1",
 "max_subwords": 0,
 "max_words": 250,
 "moses": {
  "aggressive_dash_splits": true,
  "escape": false,
  "lang": "en",
  "normalize": true
 },
 "multi_root": "forest",
 "on_empty": "keep",
 "on_long": "blank",
 "parser_unescape": false,
 "pos_tagset": "upos",
 "pretokenized": true,
 "spacy_model": null,
 "src_lang": "en",
 "subword": "bpe",
 "subword_model": "/work/x/bpe.codes",
 "subword_model_sha256": "be2a1eb6e44fbf4572b13d843e9a7744e1dca1a88600603a47f6aa191fab7d50",
 "version": 1
}
"""


def test_a_file_written_before_reads_typed_and_writes_back_byte_for_byte(tmp_path):
    before = tmp_path / "before.annotation.json"
    before.write_text(FILE_BEFORE, encoding="utf-8")
    settings = AnnotationSettings.read(str(before))
    assert (settings.backend, settings.case, settings.max_words, settings.extra) == (
        "conllu", "rich", 250, {"spacy_model": None})
    assert settings.moses == MosesSettings(lang="en", normalize=True, aggressive_dash_splits=True, escape=False)
    assert settings.to_dict() == json.loads(FILE_BEFORE)
    settings.write(str(tmp_path / "again.json"))
    assert (tmp_path / "again.json").read_bytes() == before.read_bytes()


def test_a_null_spacy_model_written_before_agrees_with_none_and_a_model_is_the_spacy_backends():
    """Version-1 files gave every backend a ``spacy_model`` (null for CoNLL-U); it is now the spaCy backend's own
    setting. A CoNLL-U file from before agrees with a new one (which has no such key); a spaCy model still counts."""
    from syntax_nmt.annotate.backends import get_backend
    from syntax_nmt.tasks import raw_inference

    old = AnnotationSettings.from_dict(json.loads(FILE_BEFORE), "old")
    new_values = {k: v for k, v in json.loads(FILE_BEFORE).items() if k != "spacy_model"}
    new = AnnotationSettings.from_dict(new_values, "new")
    assert old.differences(new) == [] and new.extra == {}
    check_compatible(old, new, "old", "new")
    raw_inference.check_agree(old, new, "old", "new")
    spacy = AnnotationSettings.from_dict({**new_values, "backend": "spacy", "spacy_model": "en_core_web_sm"}, "s")
    other = AnnotationSettings.from_dict({**new_values, "backend": "spacy", "spacy_model": "de_core_news_sm"}, "t")
    assert spacy.differences(other) == ["spacy_model"] and spacy.differences(new) == ["backend", "spacy_model"]
    assert raw_inference.path_settings() == ("subword_model", "spacy_model")
    assert get_backend("spacy").model_setting == "spacy_model" and get_backend("conllu").raw_text_backend == "spacy"


def test_settings_a_checkpoint_recorded_before_read_typed_and_record_the_same_string():
    """The model argument ``annotation_settings``, as fairseq-train stored it in checkpoints before."""
    from syntax_nmt.tasks import raw_inference

    text = json.dumps(json.loads(FILE_BEFORE), sort_keys=True)
    settings = raw_inference.recorded_settings(text)
    assert settings.to_dict() == json.loads(FILE_BEFORE) and settings.moses.aggressive_dash_splits is True
    assert raw_inference.settings_record(settings) == text
    assert raw_inference.recorded_settings(None) is None  # a checkpoint from before settings were recorded
    with pytest.raises(ValueError, match="the checkpoint: annotation setting 'escape' is missing"):
        raw_inference.recorded_settings(json.dumps({k: v for k, v in json.loads(text).items() if k != "escape"}))


def test_read_settings_validates(tmp_path):
    path = str(tmp_path / "a.annotation.json")
    _settings().write(path)
    assert AnnotationSettings.read(path) == _settings()
    assert AnnotationSettings.read(path).to_dict() == _raw()
    for key in KEYS:
        s = _raw()
        del s[key]
        _write_raw(path, s)
        with pytest.raises(ValueError, match=f"{re.escape(path)}: annotation setting '{key}' is missing"):
            AnnotationSettings.read(path)
    _write_raw(path, _raw(version=SETTINGS_VERSION + 1))
    with pytest.raises(ValueError, match="version 2, this syntax-nmt reads version 1"):
        AnnotationSettings.read(path)
    _write_raw(path, _raw(moses={"lang": "en", "normalize": True, "escape": False}))
    with pytest.raises(ValueError, match="'moses.aggressive_dash_splits' is missing"):
        AnnotationSettings.read(path)
    _write_raw(path, _raw(moses={"lang": "en", "normalize": True, "escape": False, "aggressive_dash_splits": True,
                                 "x": 1}))
    with pytest.raises(ValueError, match="'moses.x' is unknown"):
        AnnotationSettings.read(path)
    _write_raw(path, [1])
    with pytest.raises(ValueError, match="expected a JSON object"):
        AnnotationSettings.read(path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not a valid annotation settings file"):
        AnnotationSettings.read(str(tmp_path / "bad.json"))


def test_keys_beyond_the_format_are_kept_and_compared(tmp_path):
    """A backend's own settings (and any other key of a file) round-trip in ``extra``."""
    path = str(tmp_path / "a.annotation.json")
    _write_raw(path, _raw(parser_package="ud-2.12"))
    settings = AnnotationSettings.read(path)
    assert settings.extra == {"spacy_model": "en_core_web_sm", "parser_package": "ud-2.12"}  # spaCy's, a package
    assert settings.to_dict() == _raw(parser_package="ud-2.12")
    assert settings.differences(_settings()) == ["parser_package"]
    assert _settings(case="rich").differences(settings) == ["case", "parser_package"]


def test_check_compatible_names_the_first_differing_key():
    check_compatible(_settings(), _settings(), "a", "b")
    with pytest.raises(ValueError, match=r"setting 'case' differs: 'binary' in train, 'rich' in test"):
        check_compatible(_settings(), _settings(case="rich", subword="spm"), "train", "test")
    moses = {"lang": "en", "normalize": True, "aggressive_dash_splits": True, "escape": False}
    with pytest.raises(ValueError, match=r"setting 'moses' differs: None in a, \{'lang': 'en', 'normalize': True, "
                                         r"'aggressive_dash_splits': True, 'escape': False\} in b"):
        check_compatible(_settings(), _settings(moses=moses), "a", "b")
    with pytest.raises(ValueError, match=r"setting 'zz' differs: missing in a, 1 in b"):
        check_compatible(_settings(), _settings(zz=1), "a", "b")


def _binarize(corpus, dest, *extra):
    binarize.main(binarize.get_parser().parse_args([
        "--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"], "--validpref",
        corpus["valid"], "--destdir", dest, "--joined-dictionary", "--workers", "1", *extra]))


def test_binarize_copies_checks_or_warns(tmp_path, caplog):
    corpus = write_corpus(str(tmp_path / "text"), sizes={"train": 12, "valid": 4}, seed=5)
    # no settings anywhere (older annotation): binarized, with a warning, nothing copied
    _binarize(corpus, str(tmp_path / "none"))
    assert not os.path.exists(tmp_path / "none/annotation.json")
    assert "no annotation settings" in caplog.text
    # every split has the same settings: copied
    for split in ("train", "valid"):
        _settings().write(settings_path(corpus[split]))
    _binarize(corpus, str(tmp_path / "same"))
    assert AnnotationSettings.read(str(tmp_path / "same/annotation.json")) == _settings()
    # they differ: an error naming the setting and both files, before anything is written
    _settings(pos_tagset="xpos").write(settings_path(corpus["valid"]))
    with pytest.raises(ValueError, match=rf"'pos_tagset' differs: 'upos' in {re.escape(corpus['train'])}"
                                         rf"\.annotation\.json, 'xpos' in {re.escape(corpus['valid'])}"):
        _binarize(corpus, str(tmp_path / "diff"))
    assert not os.path.exists(tmp_path / "diff")
    # only some splits have them
    os.remove(settings_path(corpus["valid"]))
    with pytest.raises(ValueError, match=rf"{re.escape(corpus['valid'])}\.annotation\.json does not exist but"):
        _binarize(corpus, str(tmp_path / "some"))
    assert not os.path.exists(tmp_path / "some")


def test_recipe_records_its_moses_settings():
    here = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "wmt14_en_de")
    with open(os.path.join(here, "run_all.sh"), encoding="utf-8") as f:
        script = f.read()
    spec = re.search(r'MOSES_SETTINGS="([^"]+)"', script).group(1)
    assert '--moses-settings "$MOSES_SETTINGS"' in script
    # prepare.py: MosesPunctNormalizer, aggressive dash splits, escaping only with --escape (not passed)
    assert parse_moses_settings(spec) == MosesSettings(lang="en", normalize=True, aggressive_dash_splits=True,
                                                       escape=False)
    prepare_call = re.search(r'"\$HERE/prepare.py"[^\n]*(\n[^\n]*\\\n)*[^\n]*', script).group(0)
    assert "--workers" in prepare_call and "--escape" not in prepare_call


def test_the_same_subword_model_at_another_path_is_compatible(tmp_path):
    """The same BPE codes (same SHA-256) at another path are compatible, in check_compatible and in
    syntax-nmt-binarize; other codes, or another path without a recorded hash, are not."""
    moved = _settings(subword_model="/elsewhere/codes.bpe")
    check_compatible(_settings(), moved, "a", "b")
    with pytest.raises(ValueError, match=r"'subword_model' differs: '/x/bpe.codes' in a, '/y' in b"):
        check_compatible(_settings(), _settings(subword_model="/y", subword_model_sha256="cd" * 32), "a", "b")
    with pytest.raises(ValueError, match=r"'subword_model' differs"):  # no hash recorded: paths decide
        check_compatible(_settings(subword_model_sha256=None), _settings(subword_model="/y", subword_model_sha256=None),
                         "a", "b")
    # train annotated with the codes at one path, valid with a copy at another
    corpus = write_corpus(str(tmp_path / "text"), sizes={"train": 12, "valid": 4}, seed=5)
    _settings().write(settings_path(corpus["train"]))
    moved.write(settings_path(corpus["valid"]))
    _binarize(corpus, str(tmp_path / "bin"))
    assert AnnotationSettings.read(str(tmp_path / "bin/annotation.json")) == _settings()
