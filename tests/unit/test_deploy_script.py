"""examples/deploy/translate_ct2.py, the plugin-free raw-text path: its preprocessing against the plugin's parse-free
segmentation (``OnlineAnnotator.segment``, what the hub and fairseq-interactive give a model that reads no stream)
on awkward lines, for each subword scheme, with and without the Moses step, with the line limits; its joining of
subwords against fairseq's ``--remove-bpe``. (The same script without the plugin importable, on a trained model's
data: tests/e2e/test_export.py.)"""

import dataclasses
import os
import runpy

import pytest

from syntax_nmt.annotate.online import OnlineAnnotator
from syntax_nmt.annotate.subwords import escape_word, learn_model
from syntax_nmt.annotation_settings import AnnotationSettings

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "deploy", "translate_ct2.py")
LINES = [
    "The cat sat on the mat .",
    "a <unk> and </s> in x@@y with ▁under <s>",
    "\ufeffleading BOM and   many    spaces ",
    "«Quoted» text — with dashes-in-words and 3,5 numbers!",
    "",
    "fünf Größen: naïve café",
    "zero\u200bwidth don\u00b4t \u200b",
    "one two three four five six seven eight nine ten eleven",
]
MOSES = {"lang": "en", "normalize": True, "aggressive_dash_splits": False, "escape": False}


@pytest.fixture(scope="module")
def script():
    return runpy.run_path(SCRIPT)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("subword-models")
    words = [escape_word(w, "bpe") for w in " ".join(LINES).split()] * 3
    lines = [" ".join(words[i:i + 7]) for i in range(0, len(words), 7)]
    bpe = learn_model("bpe", lines, 60, str(root / "bpe.codes"), quiet=True)
    spm = learn_model("spm", lines, 60, str(root / "spm"), quiet=True)
    return {"bpe": bpe, "spm": spm, "none": None}


def _settings(scheme, model, moses, max_words=0, max_subwords=0):
    return AnnotationSettings.from_dict({
        "version": 1, "src_lang": "en", "backend": "spacy", "pretokenized": True, "parser_unescape": True,
        "pos_tagset": "upos", "case": "binary", "multi_root": "forest", "subword": scheme, "subword_model": model,
        "subword_model_sha256": None, "escape": "v1", "max_words": max_words, "max_subwords": max_subwords,
        "on_long": "blank", "on_empty": "keep", "moses": moses}, "<test>")


@pytest.mark.parametrize("scheme", ["bpe", "spm", "none"])
@pytest.mark.parametrize("moses", [MOSES, None, dict(MOSES, aggressive_dash_splits=True, escape=True)])
@pytest.mark.parametrize("limits", [(0, 0), (10, 0), (0, 10)])
def test_its_subwords_are_the_plugins(script, models, scheme, moses, limits):
    settings = _settings(scheme, models[scheme], moses, *limits)
    plugin = OnlineAnnotator(settings).segment(LINES)
    ours = script["Preprocessor"](settings.to_dict())
    got = [" ".join(ours(line)) for line in LINES]
    assert got == [a.source for a in plugin]
    nonempty = [got[i] for i in range(len(LINES)) if LINES[i]]
    assert (limits == (0, 0)) == all(nonempty)  # the limits blank some line
    assert got[4] == ""


def test_its_escapes_are_the_plugins(script):
    for word in ["<unk>", "a</s>b", "x@@y", "@@", "▁x", "<pad><s>", "plain", "<", "@"]:
        for scheme in ("bpe", "spm", "none"):
            assert script["escape_word"](word, scheme) == escape_word(word, scheme), (word, scheme)


@pytest.mark.parametrize("pieces,scheme,words", [
    (["Ein", "Hu@@", "nd", "läuft", "."], "bpe", "Ein Hund läuft ."),
    (["a@@", "b@@"], "bpe", "ab"),
    (["▁Ein", "▁Hu", "nd", "▁."], "spm", "Ein Hund ."),
    (["a", "b"], "none", "a b"),
    ([], "bpe", ""),
])
def test_subwords_are_joined_as_fairseq_removes_them(script, pieces, scheme, words):
    from fairseq.data import data_utils

    assert script["join_subwords"](pieces, scheme) == words
    if scheme != "none":
        post = "subword_nmt" if scheme == "bpe" else "sentencepiece"
        assert data_utils.post_process(" ".join(pieces), post) == words


def test_raw_text_settings_are_refused(script, models):
    settings = dataclasses.replace(_settings("bpe", models["bpe"], MOSES), pretokenized=False)
    with pytest.raises(ValueError, match="pretokenized false"):
        script["Preprocessor"](settings.to_dict())
