"""``--parser-unescape``: the parser sees plain forms of Moses tokens, nothing else changes.

Real Moses output comes from sacremoses itself (punctuation normalization, aggressive dash
splitting, XML escaping, as ``tokenizer.perl -a`` does by default); the parser is the
project's tiny trained spaCy pipeline (fixture ``synth`` of tests/conftest.py). The token
forms alone and the option's defaults and errors: tests/unit/test_annotate_unescape.py.
"""

import pytest
import spacy
from sacremoses import MosesPunctNormalizer, MosesTokenizer
from spacy.language import Language

from support.annotate import STREAMS, check_aligned, read, write
from syntax_nmt.annotate.backends import spacy_backend
from syntax_nmt.annotate.cli import main
from syntax_nmt.syntax.conllu import read_conllu

RAW = [
    "The well-known teacher saw a 3-year-old dog in the garden.",
    'The man said "the dog sleeps" and the woman\'s cat ate the fish.',
    "The child gave 5,300.50 euros and 1.5 kg of bread to the city-council.",
    "AT&T's <b> teacher | saw [the] dog & the cat.",
    "",
    "The old-fashioned teacher's dog-friendly garden costs $1,000,000.",
]


@Language.component("syntax_nmt_test_recorder")
def _recorder(doc):
    RECORDED.append([t.text for t in doc])
    return doc


RECORDED = []


def moses_lines(escape: bool):
    norm, tok = MosesPunctNormalizer("en", post_remove_control_chars=True), MosesTokenizer("en")
    return [tok.tokenize(norm.normalize(s), aggressive_dash_splits=True, return_str=True, escape=escape) for s in RAW]


@pytest.fixture
def recording_pipeline(synth, monkeypatch):
    """The tiny pipeline with a first component that records the words the parser is given."""
    nlp = spacy.load(synth[1])
    nlp.add_pipe("syntax_nmt_test_recorder", first=True)
    monkeypatch.setattr(spacy_backend, "load_pipeline", lambda model, gpu_id=-1: nlp)
    RECORDED.clear()
    return synth[1]


def annotate(tmp_path, name, lines, model, *extra):
    src = write(tmp_path / f"{name}.in.en", lines)
    prefix = tmp_path / name / "train"
    RECORDED.clear()
    main(["--source", src, "--src-lang", "en", "-o", str(prefix), "--spacy-model", model, "--pretokenized",
          "--write-conllu", "--chunk-size", "2", "--quiet", *extra])
    seen = list(RECORDED)
    out = {n: read(f"{prefix}.{n}") for n in ["en"] + list(STREAMS)}
    with open(f"{prefix}.en.conllu", encoding="utf-8") as f:
        out["conllu"] = list(read_conllu(f))
    return prefix, out, seen


@pytest.mark.parametrize("subword", ["none", "bpe"])
def test_parser_sees_plain_forms_and_outputs_keep_the_tokens(tmp_path, recording_pipeline, subword):
    moses, plain = moses_lines(escape=True), [s.replace("@-@", "-") for s in moses_lines(escape=False)]
    # real-looking Moses output: placeholders, escapes and number separators are all there
    joined = " ".join(moses)
    for form in ("@-@", "&apos;s", "&quot;", "&amp;", "&#124;", "&#91;", "&lt;", "5,300.50", "1,000,000"):
        assert form in joined.split(), form
    assert [len(m.split()) for m in moses] == [len(p.split()) for p in plain]
    extra = []
    if subword == "bpe":
        codes = tmp_path / "codes"
        codes.write_text("#version: 0.2\nw e\nt h\nth e</w>\n", encoding="utf-8")
        extra = ["--subword", "bpe", "--subword-model", str(codes)]
    else:
        extra = ["--subword", "none"]

    _, on, seen_on = annotate(tmp_path, "on", moses, recording_pipeline, *extra)  # default: unescape
    _, off, seen_off = annotate(tmp_path, "off", moses, recording_pipeline, *extra, "--no-parser-unescape")
    _, ref, seen_ref = annotate(tmp_path, "ref", plain, recording_pipeline, *extra, "--no-parser-unescape")

    nonempty = [i for i, m in enumerate(moses) if m]
    assert seen_on == [p.split() for p in plain]  # the parser got the plain forms (an empty line: no words)
    assert seen_off == [m.split() for m in moses]  # ... or the tokens as they are
    assert seen_ref == seen_on
    # tokens, subwords, case and subword streams: exactly those of the run without unescaping
    for name in ("en", "subword", "case"):
        assert on[name] == off[name], name
    if subword == "none":
        assert on["en"] == moses
    check_aligned(tmp_path / "on" / "train", scheme=subword)
    # the parse (POS, heads, labels) is the parse of the plain text, word for word
    assert [s.words for s in on["conllu"]] == [moses[i].split() for i in nonempty]
    for a, b in zip(on["conllu"], ref["conllu"]):
        assert (a.upos, a.xpos, a.heads, a.deprels) == (b.upos, b.xpos, b.heads, b.deprels)
    if subword == "none":  # one token per word: the streams themselves equal the plain text's
        for name in ("pos", "head", "dep"):
            assert on[name] == ref[name], name
    # and it is a different parse from the escaped one (the option matters on this text)
    assert [(s.upos, s.heads) for s in on["conllu"]] != [(s.upos, s.heads) for s in off["conllu"]]
