"""Train the tiny spaCy pipeline on a small synthetic corpus, load it by path, score it."""

import json
import random
import time
from pathlib import Path

import pytest

spacy = pytest.importorskip("spacy")

from syntax_nmt.annotate import spacy_train  # noqa: E402
from syntax_nmt.annotate.spacy_train import evaluate_pipeline, train_spacy_pipeline  # noqa: E402


# ----------------------------------------------------------------- tiny gold corpus

_DET = [("the", "DT"), ("a", "DT"), ("this", "DT"), ("every", "DT")]
_ADJ = ["big", "small", "old", "young", "red", "happy", "quiet", "clever"]
_NOUN = ["dog", "cat", "man", "woman", "child", "bird", "teacher", "farmer", "house", "garden", "car", "book"]
_PROPN = ["John", "Mary", "Anna", "Peter", "Berlin"]
_PRON = [("he", "nsubj"), ("she", "nsubj"), ("it", "nsubj"), ("they", "nsubj")]
_VERB_PAST = ["saw", "liked", "chased", "found", "helped", "watched"]
_VERB_PRES = ["sees", "likes", "chases", "finds", "helps", "watches"]
_VERB_BASE = ["see", "like", "chase", "find", "help", "watch"]
_PREP = ["in", "on", "with", "near"]
_ADV = ["quickly", "often", "slowly", "never"]


class _Builder:
    """Collects (word, upos, xpos, head_ref, deprel) with symbolic heads."""

    def __init__(self):
        self.rows = []

    def add(self, word, upos, xpos, head, dep):
        self.rows.append([word, upos, xpos, head, dep])
        return len(self.rows) - 1


def _noun_phrase(b, rng, head_slot, dep):
    """Add an NP whose head attaches to ``head_slot`` (an index or None for later)."""
    if rng.random() < 0.2:
        return b.add(rng.choice(_PROPN), "PROPN", "NNP", head_slot, dep), []
    det = rng.choice(_DET)
    plural = det[0] == "the" and rng.random() < 0.3
    deps = [b.add(det[0], "DET", det[1], None, "det")]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        deps.append(b.add(rng.choice(_ADJ), "ADJ", "JJ", None, "amod"))
    noun = rng.choice(_NOUN)
    if plural:
        noun = noun + ("es" if noun.endswith("h") else "s")
    n = b.add(noun, "NOUN", "NNS" if plural else "NN", head_slot, dep)
    for d in deps:
        b.rows[d][3] = n
    return n, []


def _sentence(rng):
    b = _Builder()
    if rng.random() < 0.2:
        subj = b.add(rng.choice(_PRON)[0].capitalize(), "PRON", "PRP", None, "nsubj")
    else:
        subj, _ = _noun_phrase(b, rng, None, "nsubj")
    aux = b.add("will", "AUX", "MD", None, "aux") if rng.random() < 0.3 else None
    adv = b.add(rng.choice(_ADV), "ADV", "RB", None, "advmod") if rng.random() < 0.25 else None
    if aux is not None:
        verb = b.add(rng.choice(_VERB_BASE), "VERB", "VB", "ROOT", "root")
    elif rng.random() < 0.5:
        verb = b.add(rng.choice(_VERB_PAST), "VERB", "VBD", "ROOT", "root")
    else:
        verb = b.add(rng.choice(_VERB_PRES), "VERB", "VBZ", "ROOT", "root")
    for i in (subj, adv, aux):
        if i is not None:
            b.rows[i][3] = verb
    _noun_phrase(b, rng, verb, "obj")
    if rng.random() < 0.5:
        case = b.add(rng.choice(_PREP), "ADP", "IN", None, "case")
        obl, _ = _noun_phrase(b, rng, verb, "obl")
        b.rows[case][3] = obl
    b.add(".", "PUNCT", ".", verb, "punct")
    # capitalize the first word
    first = b.rows[0]
    first[0] = first[0][0].upper() + first[0][1:]
    return b.rows


def _write_conllu(path, n, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for k in range(n):
            rows = _sentence(rng)
            words = [r[0] for r in rows]
            text = " ".join(words[:-1]) + words[-1]
            f.write(f"# sent_id = {k + 1}\n# text = {text}\n")
            for i, (w, u, x, h, d) in enumerate(rows):
                head = 0 if h == "ROOT" else h + 1
                misc = "SpaceAfter=No" if i == len(rows) - 2 else "_"
                f.write("\t".join([str(i + 1), w, "_", u, x, "_", str(head), d, "_", misc]) + "\n")
            f.write("\n")


def _make_corpus(root: Path, sizes):
    """Synthetic corpus: the project generator if it exists, else the tiny grammar above."""
    try:
        from syntax_nmt.synthetic.generate import generate_corpus
    except ImportError:
        generate_corpus = None
    if generate_corpus is not None:
        generate_corpus(root, sizes=sizes, seed=1)
    else:
        for i, (split, n) in enumerate(sizes.items()):
            _write_conllu(root / f"{split}.en.conllu", n, seed=100 + i)
    return {split: root / f"{split}.en.conllu" for split in sizes}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _make_corpus(tmp_path_factory.mktemp("spacy_corpus"), {"train": 1500, "valid": 200, "test": 300})


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("spacy_model") / "en_tiny"
    start = time.time()
    path = train_spacy_pipeline(corpus["train"], corpus["valid"], out, seed=0)
    return path, time.time() - start


# ----------------------------------------------------------------- tests


def test_fixture_conllu_is_well_formed(corpus):
    from syntax_nmt.syntax.conllu import read_conllu

    with open(corpus["test"], encoding="utf-8") as f:
        sents = list(read_conllu(f))
    assert len(sents) == 300
    assert all(sum(h == 0 for h in s.heads) == 1 for s in sents)


def test_load_by_path_and_parse_raw_text(trained):
    path, seconds = trained
    assert seconds < 120, f"training took {seconds:.0f}s"
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
    assert scores["pos_acc"] >= 0.95, scores
    assert scores["tag_acc"] >= 0.95, scores
    assert scores["uas"] >= 0.85, scores
    assert scores["las"] >= 0.80, scores
    assert 0 <= scores["uas_nopunct"] <= 1


def test_rerun_is_skipped_unless_forced(trained, corpus, monkeypatch):
    path, _ = trained
    stamp = json.loads((path / spacy_train.STAMP_NAME).read_text())
    assert stamp["key"]["seed"] == 0 and stamp["model"] == "model-best"

    def boom(*a, **k):
        raise AssertionError("should not retrain")

    monkeypatch.setattr("spacy.training.loop.train", boom)
    assert train_spacy_pipeline(corpus["train"], corpus["valid"], path, seed=0) == path
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
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["sentences"] == 300 and scores["pos_acc"] > 0.9
