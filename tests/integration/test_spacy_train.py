"""Train the tiny spaCy pipeline on a small synthetic corpus, load it by path, score it."""

import json
import time
from pathlib import Path

import pytest
import spacy

from syntax_nmt.annotate import spacy_train
from syntax_nmt.annotate.spacy_train import evaluate_pipeline, train_spacy_pipeline
from syntax_nmt.synthetic import generate


SIZES = {"train": 1500, "valid": 200, "test": 300}
MAX_STEPS = 200  # ~25 s CPU on 1500 sentences; POS ~99.5 %, UAS ~97 % on the test split


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    paths = generate.generate_corpus(str(tmp_path_factory.mktemp("spacy_corpus")), SIZES, seed=1)
    return {split: Path(p["en.conllu"]) for split, p in paths.items()}


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("spacy_model") / "en_tiny"
    start = time.time()
    path = train_spacy_pipeline(corpus["train"], corpus["valid"], out, max_steps=MAX_STEPS, seed=0)
    return path, time.time() - start


# ----------------------------------------------------------------- tests


def test_load_by_path_and_parse_raw_text(trained):
    path, _ = trained
    nlp = spacy.load(path)
    assert nlp.lang == "en"
    assert {"tagger", "morphologizer", "parser"} <= set(nlp.pipe_names)
    doc = nlp("The old teacher saw a small dog in the garden.")
    assert [t.text for t in doc][-2:] == ["garden", "."]  # spaCy's own English tokenizer
    for t in doc:
        assert t.pos_ and t.tag_ and t.dep_
        assert 0 <= t.head.i < len(doc)
    assert sum(t.dep_ == "ROOT" for t in doc) >= 1
    assert doc[0].pos_ == "DET"
    assert doc[2].pos_ == "NOUN" and doc[2].tag_ == "NN"
    assert doc[3].pos_ == "VERB" and doc[3].dep_ == "ROOT"
    assert doc[2].head.i == 3 and doc[2].dep_ == "nsubj"


def test_accuracy_on_held_out(trained, corpus):
    path, _ = trained
    scores = evaluate_pipeline(path, corpus["test"])
    assert scores["sentences"] == 300 and scores["tokens"] > 1500
    assert scores["pos_acc"] >= 0.97, scores
    assert scores["tag_acc"] >= 0.96, scores
    assert scores["uas"] >= 0.90, scores
    assert scores["las"] >= 0.88, scores
    assert scores["uas_nopunct"] >= 0.90 and scores["las_nopunct"] >= 0.88, scores


def test_rerun_is_skipped_unless_forced(trained, corpus, monkeypatch):
    path, _ = trained
    stamp = json.loads((path / spacy_train.STAMP_NAME).read_text())
    assert stamp["key"]["seed"] == 0 and stamp["key"]["max_steps"] == MAX_STEPS and stamp["model"] == "model-best"

    def boom(*a, **k):
        raise AssertionError("should not retrain")

    monkeypatch.setattr("spacy.training.loop.train", boom)
    assert train_spacy_pipeline(corpus["train"], corpus["valid"], path, max_steps=MAX_STEPS, seed=0) == path
    # a different setting would retrain: the key no longer matches
    assert not spacy_train.is_trained(
        path, spacy_train._training_key(corpus["train"], corpus["valid"], {**stamp["key"], "seed": 1})
    )


def test_refuses_foreign_non_empty_dir(corpus, tmp_path):
    (tmp_path / "precious.txt").write_text("x")
    with pytest.raises(FileExistsError):
        train_spacy_pipeline(corpus["train"], corpus["valid"], tmp_path, max_steps=1)


def test_cli_reuses_and_prints_scores(trained, corpus, capsys):
    path, _ = trained
    stamp = json.loads((path / spacy_train.STAMP_NAME).read_text())["key"]
    spacy_train.cli_main([
        "--train", str(corpus["train"]), "--dev", str(corpus["valid"]), "--output", str(path),
        "--test", str(corpus["test"]), "--max-steps", str(stamp["max_steps"]), "--seed", "0", "--json",
    ])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1  # --json: the scores and nothing else on stdout
    scores = json.loads(lines[0])
    assert scores["sentences"] == 300 and scores["pos_acc"] > 0.9
