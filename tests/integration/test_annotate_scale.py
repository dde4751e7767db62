"""What breaks only at WMT14's scale, checked on small data: spaCy's string store growing with every new word of
millions of lines (the backend parses in memory zones), and annotation shards left running when run_all.sh stops."""

from syntax_nmt.annotate.backends.spacy_backend import SpacyBackend, load_pipeline


def _lines(n):
    return [(i + 1, f"the cat W{i:05d}q sat on X{i:05d}z .", i) for i in range(n)]


def test_spacy_parse_frees_the_strings_of_new_words(spacy_model, monkeypatch):
    """40 lines with 80 new words, parsed in blocks of 7 lines: the string store is the size it was (it grew by
    every new word, and its shape, before), and the parses are those of one single block."""
    nlp = load_pipeline(spacy_model)
    lines = _lines(40)
    monkeypatch.setattr(SpacyBackend, "ZONE_LINES", 7)
    before = len(nlp.vocab.strings)
    out = list(SpacyBackend(nlp, pretokenized=True).parse(lines))
    assert len(nlp.vocab.strings) == before
    assert [(n, s.words, c) for n, s, c in out] == [(n, t.split(), c) for n, t, c in lines]
    monkeypatch.setattr(SpacyBackend, "ZONE_LINES", 10**6)
    whole = list(SpacyBackend(nlp, pretokenized=True).parse(_lines(40)))
    assert [(s.words, s.upos, s.heads, s.deprels) for _, s, _ in out] == \
        [(s.words, s.upos, s.heads, s.deprels) for _, s, _ in whole]
    assert out[0][1].upos == ["DET", "NOUN", "X", "VERB", "ADP", "X", "PUNCT"]
