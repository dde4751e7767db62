"""syntax-nmt-annotate with a real trained spaCy pipeline on a generated corpus.

The tiny pipeline (``syntax-nmt-train-spacy``, fixture ``synth`` of tests/conftest.py) is trained on the
synthetic corpus and kept in pytest's cache directory: ``train_spacy_pipeline`` skips retraining when the
(seeded, byte-identical) corpus and settings are unchanged, so only the first run trains it (seconds).
"""

import pytest
import spacy

from support.annotate import STREAMS, check_aligned, read
from syntax_nmt.annotate.cli import main
from syntax_nmt.syntax.conllu import read_conllu


@pytest.mark.parametrize("scheme,size", [("bpe", 300), ("spm", 200)])
def test_generated_corpus_streams_are_exact(tmp_path, synth, scheme, size):
    paths, model = synth
    train = paths["train"]
    prefix = tmp_path / "ann/train"
    main(["--source", train["en"], "--target", train["tok.de"], "--src-lang", "en", "--tgt-lang", "de",
          "-o", str(prefix), "--spacy-model", model, "--subword", scheme, "--learn-subword", str(size),
          "--subword-model-out", str(tmp_path / f"joint.{scheme}"), "--chunk-size", "128", "--n-process", "1",
          "--multi-root", "forest", "--write-conllu", "--quiet"])
    lines = check_aligned(prefix, scheme=scheme)  # field counts, heads inside the sentence, B/M/E/O vs markers
    assert len(lines) == 300 and all(lines)
    assert len(read(f"{prefix}.de")) == 300
    with open(f"{prefix}.en.conllu", encoding="utf-8") as f:
        parses = list(read_conllu(f))
    assert [p.comments["sent_id"] for p in parses] == [str(i) for i in range(1, 301)]
    # 1. the word-level parse is exactly what the pipeline itself gives on each raw line
    nlp = spacy.load(model)
    raw = read(train["en"])
    for doc, parse in zip(nlp.pipe(raw), parses):
        assert parse.words == [t.text for t in doc]
        assert parse.upos == [t.pos_ for t in doc] and parse.xpos == [t.tag_ for t in doc]
        assert parse.heads == [0 if t.head.i == t.i else t.head.i + 1 for t in doc]
        assert parse.deprels == ["root" if t.dep_ == "ROOT" else t.dep_ for t in doc]
    # 2. every stream field is exactly its word's value, recomputed here from the stream
    #    definitions with the words recovered from the subword markers
    streams = {n: read(f"{prefix}.{n}") for n in STREAMS}
    for k, (line, parse) in enumerate(zip(lines, parses)):
        toks = line.split()
        word_of, first, w = [], [], -1
        for i, tok in enumerate(toks):
            if tok.startswith("\u2581") if scheme == "spm" else (i == 0 or not toks[i - 1].endswith("@@")):
                w += 1
                first.append(i)
            word_of.append(w)
        if scheme == "bpe":
            joined = [t[:-2] if t.endswith("@@") else t for t in toks]
        else:
            joined = [t.replace("\u2581", "") for t in toks]
        words = ["".join(p for p, j in zip(joined, word_of) if j == x) for x in range(w + 1)]
        assert words == parse.words, k
        size = [word_of.count(x) for x in range(w + 1)]
        expect = {
            "pos": [parse.upos[j] for j in word_of],
            "case": ["C" if parse.words[j][0].isupper() else "L" for j in word_of],
            "subword": ["O" if size[j] == 1 else "B" if i == first[j] else "E" if i == first[j] + size[j] - 1
                        else "M" for i, j in enumerate(word_of)],
            "head": [str(0 if parse.heads[j] == 0 else first[parse.heads[j] - 1] - i) for i, j in enumerate(word_of)],
            "dep": [parse.deprels[j] for j in word_of],
        }
        for name in STREAMS:
            assert streams[name][k].split() == expect[name], (name, k)
    assert sum(len(line.split()) for line in lines) > sum(len(p.words) for p in parses)  # some words are split


def test_pretokenized_keeps_the_gold_tokens(tmp_path, synth):
    paths, model = synth
    train = paths["train"]
    prefix = tmp_path / "tok/train"
    main(["--source", train["tok.en"], "--src-lang", "en", "-o", str(prefix), "--spacy-model", model,
          "--pretokenized", "--subword", "none", "--multi-root", "attach", "--quiet"])
    assert read(f"{prefix}.en") == read(train["tok.en"])
    check_aligned(prefix, scheme="none")
    roots = [hl.split().count("0") for hl in read(f"{prefix}.head")]
    assert roots == [1] * 300  # --multi-root attach: one tree per line


@pytest.mark.parametrize("tagset", ["upos", "xpos"])
def test_a_pipeline_that_tags_nothing_is_warned_about(tmp_path, synth, caplog, tagset):
    """A pipeline without a tagger gives an all-``_`` pos stream: a warning says so, at annotation and at
    inference (the online annotator of fairseq-interactive and the hub). Without the morphologizer the
    tagger still gives XPOS, but nothing gives UPOS."""
    from syntax_nmt.annotate.online import OnlineAnnotator
    from syntax_nmt.annotate.settings import AnnotationSettings

    paths, model = synth
    pipelines = {"full": (model, [])}
    for name, exclude in (("no-tagger", ["tagger", "morphologizer"]), ("no-morphologizer", ["morphologizer"])):
        pipelines[name] = (str(tmp_path / name), exclude)
        spacy.load(model, exclude=exclude).to_disk(pipelines[name][0])
    lines = read(paths["valid"]["en"])[:5]
    for name, (path, exclude) in pipelines.items():
        untagged = "tagger" in exclude or (tagset == "upos" and exclude)
        names = [n for n in ("tok2vec", "tagger", "morphologizer", "parser") if n not in exclude]
        expected = [f"spaCy pipeline {names} assigns no {tagset} tags"] if untagged else []
        prefix = tmp_path / name / "valid"
        caplog.clear()
        with caplog.at_level("WARNING", logger="syntax_nmt.annotate.backends.spacy_backend"):
            main(["--source", paths["valid"]["en"], "--src-lang", "en", "-o", str(prefix), "--spacy-model", path,
                  "--subword", "none", "--pos-tagset", tagset, "--quiet"])
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == len(expected) and all(w.startswith(e) for w, e in zip(warnings, expected)), name
        assert all(w.endswith(": every POS tag will be '_'") for w in warnings)
        pos = read(f"{prefix}.pos")
        assert all(set(line.split()) == {"_"} for line in pos) == bool(untagged), name
        caplog.clear()
        with caplog.at_level("WARNING", logger="syntax_nmt.annotate.backends.spacy_backend"):
            annotated = OnlineAnnotator(AnnotationSettings.read(f"{prefix}.annotation.json")).annotate(lines)
        assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == warnings, name
        assert [a.streams["pos"] for a in annotated] == pos[:5]
