"""What the tests of ``syntax-nmt-annotate`` share: a deterministic rule-based spaCy pipeline, the small
inputs they annotate, and readers and checkers of the files it writes.

The pipeline is ``spacy.blank("en")`` plus a rule-based "parser" component, saved to disk and loaded by path
like any pipeline (fixture ``spacy_model`` of tests/conftest.py).
"""

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from syntax_nmt.syntax.conllu import Sentence

STREAMS = ("pos", "case", "subword", "head", "dep")
#: BPE codes under which "cat", "sat" and "The" stay whole and other words fall apart into (mostly) characters
CODES = "#version: 0.2\nc a\nca t</w>\ns a\nsa t</w>\nT h\nTh e</w>\n"
LEXICON = {"the": "DET", "a": "DET", "cat": "NOUN", "cats": "NOUN", "dog": "NOUN", "dogs": "NOUN", "mat": "NOUN",
           "sat": "VERB", "run": "VERB", "ran": "VERB", "rains": "VERB", "stay": "VERB", "it": "PRON",
           "we": "PRON", ".": "PUNCT", "on": "ADP", "quickly": "ADV"}


@Language.component("syntax_nmt_test_rule_parser")
def rule_parser(doc):
    """Deterministic toy parser: '.' ends a sentence; the first VERB of a sentence (else its
    first word) is its root; every other word depends on that root (label from its POS)."""
    words = [t.text for t in doc]
    pos = [LEXICON.get(w.lower(), "X") for w in words]
    heads, deps, start = [0] * len(words), [""] * len(words), 0
    for end in range(len(words)):
        if words[end] == "." or end == len(words) - 1:
            span = range(start, end + 1)
            root = next((i for i in span if pos[i] == "VERB"), start)
            for i in span:
                heads[i] = root
                deps[i] = "ROOT" if i == root else {"PUNCT": "punct", "DET": "det"}.get(pos[i], "dep")
            start = end + 1
    return Doc(doc.vocab, words=words, spaces=[bool(t.whitespace_) for t in doc], pos=pos,
               tags=[p.lower() for p in pos], heads=heads, deps=deps)


def save_rule_pipeline(path):
    """Save the rule-based pipeline to ``path``; returns the path as a string."""
    nlp = spacy.blank("en")
    nlp.add_pipe("syntax_nmt_test_rule_parser", name="parser")
    nlp.to_disk(path)
    return str(path)


def write(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


def read(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def outputs(prefix, names):
    return {n: read(f"{prefix}.{n}") for n in names}


def check_aligned(prefix, src="en", scheme="bpe"):
    """The contract invariants, checked on every line of the written files."""
    s_lines = read(f"{prefix}.{src}")
    streams = {n: read(f"{prefix}.{n}") for n in STREAMS}
    for n, lines in streams.items():
        assert len(lines) == len(s_lines), n
    for i, line in enumerate(s_lines):
        toks = line.split()
        for n in STREAMS:
            assert len(streams[n][i].split()) == len(toks), (n, i, line, streams[n][i])
        heads = [int(h) for h in streams["head"][i].split()]
        assert all(0 <= j + h < len(toks) for j, h in enumerate(heads)), (i, heads)
        tags = streams["subword"][i].split()
        for tok, tag in zip(toks, tags):  # the subword markers agree with the B/M/E/O tags
            if scheme == "bpe":
                assert tok.endswith("@@") == (tag in "BM"), (tok, tag)
            elif scheme == "spm":
                assert tok.startswith("▁") == (tag in "BO"), (tok, tag)
    return s_lines


# -- a CoNLL-U parse (the CoNLL-U backend's input) ------------------------------------------------------
SENTS = [
    Sentence(["The", "cat", "sat", "."], ["DET", "NOUN", "VERB", "PUNCT"], ["DT", "NN", "VBD", "."],
             [2, 3, 0, 3], ["det", "nsubj", "root", "punct"]),
    Sentence(["Dogs", "run", "quickly"], ["NOUN", "VERB", "ADV"], ["NNS", "VBP", "RB"], [2, 0, 2],
             ["nsubj", "root", "advmod"]),
]


# -- a corpus of 23 pairs (every fifth source line empty) for resuming, sharding and reruns -------------
CORPUS = [f"The cat sat on {'the' if i % 2 else 'a'} mat {i} . It rains ." if i % 5 else "" for i in range(23)]
TARGET = [f"Die Katze saß {i} ." for i in range(23)]
#: the files written for CORPUS and TARGET with --write-conllu
NAMES = ["en", "de", "en.conllu"] + list(STREAMS)


class Killed(Exception):
    """Raised from a hook of the annotation run (e.g. ``on_chunk_done``): the run killed at that point."""


def corpus_args(tmp_path, prefix, spacy_model, *extra):
    src = write(tmp_path / "c.en", CORPUS)
    tgt = write(tmp_path / "c.de", TARGET)
    return ["--source", src, "--target", tgt, "--src-lang", "en", "--tgt-lang", "de", "-o", str(tmp_path / prefix),
            "--spacy-model", spacy_model, "--chunk-size", "5", "--write-conllu", "--quiet"] + list(extra)
