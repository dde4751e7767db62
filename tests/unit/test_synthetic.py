"""Tests of the synthetic English->German corpus (syntax_nmt.synthetic)."""

import filecmp
import os
import random

import pytest

from syntax_nmt.syntax.conllu import read_conllu
from syntax_nmt.synthetic import cli
from syntax_nmt.synthetic.generate import FILE_KINDS, generate_corpus
from syntax_nmt.synthetic.grammar import GAP, clause, coord, detokenize_de, np, pp, realize
from syntax_nmt.synthetic.lexicon import load_lexicon
from syntax_nmt.synthetic.sampler import Sampler

SMALL = {"train": 300, "valid": 60, "test": 60}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    paths = generate_corpus(str(out), {"train": 1500, "valid": 200, "test": 200}, seed=3)
    return out, paths


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


# ---------------------------------------------------------------------------
# corpus-level properties
# ---------------------------------------------------------------------------


def test_files_and_sizes(corpus):
    out, paths = corpus
    sizes = {"train": 1500, "valid": 200, "test": 200}
    assert set(paths) == set(sizes)
    for split, n in sizes.items():
        assert set(paths[split]) == set(FILE_KINDS)
        for kind in ("en", "tok.en", "de", "tok.de"):
            assert len(_lines(paths[split][kind])) == n, (split, kind)
        with open(paths[split]["en.conllu"], encoding="utf-8") as f:
            sents = list(read_conllu(f))
        assert len(sents) == n
        en, tok_en = _lines(paths[split]["en"]), _lines(paths[split]["tok.en"])
        de, tok_de = _lines(paths[split]["de"]), _lines(paths[split]["tok.de"])
        for i, s in enumerate(sents):
            assert s.comments["sent_id"] == f"{split}-{i + 1}"
            assert s.comments["text"] == en[i]
            assert " ".join(s.words) == tok_en[i]
            assert detokenize_de(tok_de[i].split()) == de[i]


def test_gold_trees_valid(corpus):
    out, paths = corpus
    labels = set()
    for split in paths:
        with open(paths[split]["en.conllu"], encoding="utf-8") as f:
            for s in read_conllu(f):
                n = len(s.words)
                assert s.heads.count(0) == 1, s.comments
                assert s.deprels[s.heads.index(0)] == "root"
                assert all(0 <= h <= n for h in s.heads)
                for i in range(1, n + 1):  # follow heads to the root: no cycles
                    seen, j = set(), i
                    while j != 0:
                        assert j not in seen, s.comments
                        seen.add(j)
                        j = s.heads[j - 1]
                arcs = [(min(i, h), max(i, h)) for i, h in enumerate(s.heads, 1) if h]
                for a, b in arcs:  # projective
                    assert not any(a < c < b < d for c, d in arcs), s.comments
                assert s.words[-1] in (".", "?") and s.upos[-1] == "PUNCT"
                for w, sp, nxt in zip(s.words, s.space_after, s.words[1:] + [""]):
                    assert sp == (nxt not in (".", ",", "?"))
                labels.update(s.deprels)
    expected = {"det", "amod", "nsubj", "obj", "iobj", "obl", "case", "mark", "advcl", "acl:relcl", "aux",
                "cc", "conj", "punct", "advmod", "compound", "nmod", "root", "cop", "ccomp", "nmod:poss",
                "nummod", "obl:tmod"}
    assert expected <= labels, expected - labels


def test_no_overlap_between_splits(corpus):
    out, paths = corpus
    for lang in ("en", "de"):
        seen = {}
        for split in paths:
            for line in _lines(paths[split][lang]):
                assert line not in seen, (lang, line, split, seen.get(line))
                seen[line] = split


def test_deterministic(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_corpus(str(a), SMALL, seed=5)
    generate_corpus(str(b), SMALL, seed=5)
    generate_corpus(str(c), SMALL, seed=6)
    names = sorted(os.listdir(a))
    assert len(names) == 3 * len(FILE_KINDS)
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    assert mismatch == [] and errors == []
    _, mismatch, _ = filecmp.cmpfiles(a, c, names, shallow=False)
    assert sorted(mismatch) == names


def test_eval_splits_independent_of_train_size(tmp_path):
    generate_corpus(str(tmp_path / "a"), {"train": 50, "valid": 40, "test": 40}, seed=2)
    generate_corpus(str(tmp_path / "b"), {"train": 300, "valid": 40, "test": 40}, seed=2)
    for split in ("valid", "test"):
        for kind in FILE_KINDS:
            assert filecmp.cmp(tmp_path / "a" / f"{split}.{kind}", tmp_path / "b" / f"{split}.{kind}", shallow=False)


def test_spacy_tokenizer_round_trip(corpus):
    import spacy  # a hard dependency: a broken install must fail, not skip

    nlp = spacy.blank("en")
    out, paths = corpus
    with open(paths["test"]["en.conllu"], encoding="utf-8") as f:
        sents = list(read_conllu(f))
    raw = _lines(paths["test"]["en"])
    assert len(sents) >= 200
    for s, line in zip(sents, raw):
        assert [t.text for t in nlp(line)] == s.words, line


def test_moses_tokenizer_round_trip_german(corpus):
    import sacremoses

    mt = sacremoses.MosesTokenizer(lang="de")
    out, paths = corpus
    for raw, tok in zip(_lines(paths["test"]["de"]), _lines(paths["test"]["tok.de"])):
        assert mt.tokenize(raw, escape=False) == tok.split(), raw


def test_cli(tmp_path):
    out = tmp_path / "cli"
    cli.cli_main(["--out", str(out), "--train", "20", "--valid", "5", "--test", "5", "--seed", "4", "--quiet"])
    assert len(_lines(out / "train.tok.de")) == 20
    assert len(_lines(out / "valid.en")) == 5
    assert "syntax-nmt-synth --out" in cli.build_parser().epilog


def test_sampler_uses_only_its_rng():
    state = random.getstate()
    a = [realize(Sampler(random.Random(9)).sentence())[1] for _ in range(3)]
    random.seed(12345)
    b = [realize(Sampler(random.Random(9)).sentence())[1] for _ in range(3)]
    assert a == b
    random.setstate(state)


def test_lexicon_sizes():
    st = load_lexicon().stats()
    assert st["nouns"] >= 300
    assert st["verbs"] >= 100
    assert st["adjectives"] >= 100
    assert st["possible_compounds"] >= 1000


def test_bpe_worthy_words(corpus):
    out, paths = corpus
    words = {w for line in _lines(paths["train"]["tok.de"]) for w in line.split()}
    assert max(len(w) for w in words) >= 25  # long compounds
    assert len(words) > 1500


# ---------------------------------------------------------------------------
# hand-checked translations, one or more per rule
# ---------------------------------------------------------------------------


def _old_man():
    return np("man", adjs=("old",))


CASES = [
    # case by grammatical role + gender agreement, weak adjective after "der"
    ("role-case-ditr",
     lambda: clause("give", _old_man(), obj=np("book"), iobj=np("child")),
     "The old man gives the child the book .", "Der alte Mann gibt dem Kind das Buch ."),
    # the English to-dative is the same German dative
    ("to-dative",
     lambda: clause("give", _old_man(), obj=np("book"), iobj=np("child"), iobj_to=True),
     "The old man gives the book to the child .", "Der alte Mann gibt dem Kind das Buch ."),
    # mixed inflection after the indefinite article, accusative masculine
    ("mixed-indefinite",
     lambda: clause("see", np("dog", "a", ("young",)), obj=np("man", "an", ("old",))),
     "A young dog sees an old man .", "Ein junger Hund sieht einen alten Mann ."),
    ("mixed-neuter-possessive",
     lambda: clause("find", np("teacher", "my", ("old",)), obj=np("child", "a", ("small",))),
     "My old teacher finds a small child .", "Mein alter Lehrer findet ein kleines Kind ."),
    # dative object verb + weak masculine noun
    ("dative-verb-weak-noun",
     lambda: clause("help", np("teacher"), obj=np("boy")),
     "The teacher helps the boy .", "Der Lehrer hilft dem Jungen ."),
    ("dative-verb-adjective",
     lambda: clause("thank", np("woman"), obj=_old_man()),
     "The woman thanks the old man .", "Die Frau dankt dem alten Mann ."),
    # plural: verb agreement, dative plural -n
    ("plural",
     lambda: clause("give", np("child", number="pl"), obj=np("apple", number="pl"), iobj=np("dog", number="pl")),
     "The children give the dogs the apples .", "Die Kinder geben den Hunden die Äpfel ."),
    # strong inflection without article / after a numeral
    ("strong-numeral",
     lambda: clause("see", np("man", "two", ("old",), number="pl"), obj=np("cat", None, ("black",), number="pl"),
                    pps=(pp("with", np("dog", None, ("old",), number="pl")),)),
     "Two old men see black cats with old dogs .", "Zwei alte Männer sehen schwarze Katzen mit alten Hunden ."),
    # kein / dieser / jeder
    ("kein-dieser",
     lambda: clause("see", np("dog", "this", ("old",)), obj=np("cat", "no")),
     "This old dog sees no cat .", "Dieser alte Hund sieht keine Katze ."),
    ("jeder-dative",
     lambda: clause("show", np("teacher"), obj=np("map"), iobj=np("student", "every", ("new",))),
     None, "Der Lehrer zeigt jedem neuen Studenten die Karte ."),
    # verb second after a fronted adverb
    ("v2-time",
     lambda: clause("see", np("man"), obj=np("dog"), tense="past", time="yesterday", front="time"),
     "Yesterday the man saw the dog .", "Gestern sah der Mann den Hund ."),
    ("time-in-mittelfeld",
     lambda: clause("see", np("man"), obj=np("dog"), tense="past", time="yesterday"),
     "The man saw the dog yesterday .", "Der Mann sah gestern den Hund ."),
    # verb second after a fronted PP + contraction in dem -> im
    ("v2-pp-contraction",
     lambda: clause("read", np("child"), obj=np("book", "a"), pps=(pp("in", np("garden")),), front="pp"),
     "In the garden the child reads a book .", "Im Garten liest das Kind ein Buch ."),
    # two-way prepositions: location (dative) vs direction (accusative)
    ("two-way-dative",
     lambda: clause("sleep", np("dog"), pps=(pp("in", np("house")),)),
     "The dog sleeps in the house .", "Der Hund schläft im Haus ."),
    ("two-way-accusative",
     lambda: clause("run", np("dog"), pps=(pp("into", np("house")),)),
     "The dog runs into the house .", "Der Hund läuft ins Haus ."),
    ("two-way-auf",
     lambda: clause("jump", np("cat"), pps=(pp("onto", np("table")),), tense="past"),
     "The cat jumped onto the table .", "Die Katze sprang auf den Tisch ."),
    ("two-way-auf-dative",
     lambda: clause("lie", np("book"), pps=(pp("on", np("table", "a")),)),
     "The book lies on a table .", "Das Buch liegt auf einem Tisch ."),
    ("prep-accusative",
     lambda: clause("buy", np("woman"), obj=np("cake"), pps=(pp("for", _old_man()),)),
     "The woman buys the cake for the old man .", "Die Frau kauft den Kuchen für den alten Mann ."),
    ("zur-contraction",
     lambda: clause("go", np("child", number="pl"), pps=(pp("to", np("school")),), tense="perf"),
     "The children have gone to the school .", "Die Kinder sind zur Schule gegangen ."),
    # perfect: haben / sein + participle at the end
    ("perfect-haben",
     lambda: clause("see", np("man"), obj=np("dog"), tense="perf"),
     "The man has seen the dog .", "Der Mann hat den Hund gesehen ."),
    ("perfect-sein",
     lambda: clause("follow", np("dog"), obj=np("woman"), tense="perf"),
     "The dog has followed the woman .", "Der Hund ist der Frau gefolgt ."),
    # future / modal + infinitive at the end
    ("future",
     lambda: clause("buy", np("woman"), obj=np("car", "a"), tense="fut"),
     "The woman will buy a car .", "Die Frau wird ein Auto kaufen ."),
    ("modal",
     lambda: clause("swim", np("child"), tense="can"),
     "The child can swim .", "Das Kind kann schwimmen ."),
    # separable prefix: end of a main clause, attached in a subordinate clause
    ("separable-main",
     lambda: clause("call", np("woman"), obj=np("doctor")),
     "The woman calls the doctor .", "Die Frau ruft den Arzt an ."),
    ("separable-sub",
     lambda: clause("laugh", np("man"), advcl=("because", clause("call", np("woman"), obj=np("doctor")))),
     "The man laughs because the woman calls the doctor .", "Der Mann lacht , weil die Frau den Arzt anruft ."),
    ("separable-perfect",
     lambda: clause("call", np("woman"), obj=np("doctor"), tense="perf", question=True),
     "Has the woman called the doctor ?", "Hat die Frau den Arzt angerufen ?"),
    # verb-final subordinate clauses
    ("sub-perfect",
     lambda: clause("sleep", np("dog"), advcl=("because", clause("read", np("man"), obj=np("book"), tense="perf"))),
     "The dog sleeps because the man has read the book .", "Der Hund schläft , weil der Mann das Buch gelesen hat ."),
    ("sub-fronted-v2",
     lambda: clause("sleep", np("dog"), tense="past", front="advcl",
                    advcl=("because", clause("be", np("man"), adj="tired", tense="past"))),
     "Because the man was tired , the dog slept .", "Weil der Mann müde war , schlief der Hund ."),
    ("sub-obwohl-modal",
     lambda: clause("laugh", np("woman"), advcl=("although", clause("see", np("child"), obj=np("cat"), tense="can"))),
     "The woman laughs although the child can see the cat .", "Die Frau lacht , obwohl das Kind die Katze sehen kann ."),
    ("when-past-als",
     lambda: clause("bark", np("dog"), tense="past", advcl=("when", clause("come", np("man"), tense="past"))),
     "The dog barked when the man came .", "Der Hund bellte , als der Mann kam ."),
    ("when-present-wenn",
     lambda: clause("bark", np("dog"), advcl=("when", clause("come", np("man")))),
     "The dog barks when the man comes .", "Der Hund bellt , wenn der Mann kommt ."),
    ("ccomp-dass",
     lambda: clause("say", np("woman"), ccomp=clause("buy", np("man"), obj=np("car", "a"), tense="fut")),
     "The woman says that the man will buy a car .", "Die Frau sagt , dass der Mann ein Auto kaufen wird ."),
    ("ccomp-no-that-separable",
     lambda: clause("admit", np("minister"), tense="past", that=False,
                    ccomp=clause("steal", np("thief"), obj=np("car"), tense="perf")),
     "The minister admitted the thief has stolen the car .",
     "Der Minister gab zu , dass der Dieb das Auto gestohlen hat ."),
    # relative clauses: gender/number from the antecedent, case from the role
    ("relcl-subject",
     lambda: clause("sleep", np("man", relcl=clause("see", GAP, obj=np("dog")))),
     "The man who sees the dog sleeps .", "Der Mann , der den Hund sieht , schläft ."),
    ("relcl-object-feminine",
     lambda: clause("laugh", np("woman", relcl=clause("see", np("man"), obj=GAP, tense="past", rel_word="that")),
                    tense="past"),
     "The woman that the man saw laughed .", "Die Frau , die der Mann sah , lachte ."),
    ("relcl-object-masculine",
     lambda: clause("see", np("woman"), obj=np("dog", relcl=clause("bite", np("cat"), obj=GAP, tense="past"))),
     "The woman sees the dog which the cat bit .", "Die Frau sieht den Hund , den die Katze biss ."),
    ("relcl-dative-verb",
     lambda: clause("laugh", np("man", relcl=clause("help", np("woman"), obj=GAP, tense="past")), tense="past"),
     "The man who the woman helped laughed .", "Der Mann , dem die Frau half , lachte ."),
    ("relcl-iobj",
     lambda: clause("sleep", np("child", relcl=clause("give", np("man"), obj=np("book"), iobj=GAP, tense="past"))),
     "The child to whom the man gave the book sleeps .", "Das Kind , dem der Mann das Buch gab , schläft ."),
    ("relcl-iobj-plural-denen",
     lambda: clause("sleep", np("child", number="pl",
                                relcl=clause("give", np("man"), obj=np("book"), iobj=GAP, tense="past"))),
     "The children to whom the man gave the book sleep .", "Die Kinder , denen der Mann das Buch gab , schlafen ."),
    ("relcl-preposition",
     lambda: clause("be", np("house", relcl=clause("live", np("man"), pps=(pp("in", GAP),))), adj="old"),
     "The house in which the man lives is old .", "Das Haus , in dem der Mann wohnt , ist alt ."),
    ("relcl-in-mittelfeld-perfect",
     lambda: clause("see", np("woman"), obj=np("man", relcl=clause("sleep", GAP)), tense="perf"),
     "The woman has seen the man who sleeps .", "Die Frau hat den Mann , der schläft , gesehen ."),
    # genitive for "of"
    ("genitive",
     lambda: clause("read", np("director", nmod=pp("of", np("museum"))), obj=np("letter")),
     "The director of the museum reads the letter .", "Der Direktor des Museums liest den Brief ."),
    ("genitive-feminine-during",
     lambda: clause("sleep", np("man"), pps=(pp("during", np("concert")),), tense="past"),
     "The man slept during the concert .", "Der Mann schlief während des Konzerts ."),
    # compounds
    ("compound-prefix-adjective",
     lambda: clause("publish", np("federal transport ministry"), obj=np("report")),
     "The federal transport ministry publishes the report .",
     "Das Bundesverkehrsministerium veröffentlicht den Bericht ."),
    ("compound-long-dative",
     lambda: clause("trust", np("man"), obj=np("liability insurance company")),
     "The man trusts the liability insurance company .",
     "Der Mann vertraut der Haftpflichtversicherungsgesellschaft ."),
    # coordination: noun phrases (plural agreement) and clauses
    ("np-coordination",
     lambda: clause("see", coord(np("man"), np("woman")), obj=coord(np("dog"), np("cat", "a"))),
     "The man and the woman see the dog and a cat .", "Der Mann und die Frau sehen den Hund und eine Katze ."),
    ("clause-coordination-but",
     lambda: clause("sleep", np("man"), tense="past", cc="but",
                    conj=clause("read", np("woman"), obj=np("book"), tense="past")),
     "The man slept , but the woman read the book .", "Der Mann schlief , aber die Frau las das Buch ."),
    ("clause-coordination-v2",
     lambda: clause("sleep", np("man"), tense="past",
                    conj=clause("read", np("woman"), obj=np("book"), tense="past", time="later", front="time")),
     "The man slept and later the woman read the book .", "Der Mann schlief und später las die Frau das Buch ."),
    # questions: verb first, do-support
    ("question-do",
     lambda: clause("see", np("man"), obj=np("dog"), tense="past", question=True),
     "Did the man see the dog ?", "Sah der Mann den Hund ?"),
    # time noun phrases in the accusative
    ("time-np-accusative",
     lambda: clause("visit", np("woman"), obj=np("museum"), tense="past", time="last week", front="time"),
     "Last week the woman visited the museum .", "Letzte Woche besuchte die Frau das Museum ."),
    ("time-np-every",
     lambda: clause("visit", np("man"), obj=np("friend", "a"), time="every day"),
     "The man visits a friend every day .", "Der Mann besucht jeden Tag einen Freund ."),
    ("names",
     lambda: clause("give", np("Anna"), obj=np("flower", "a"), iobj=np("Peter")),
     "Anna gives Peter a flower .", "Anna gibt Peter eine Blume ."),
]


@pytest.mark.parametrize("name,build,english,german", CASES, ids=[c[0] for c in CASES])
def test_rules_exact(name, build, english, german):
    sent, de = realize(build())
    if english is not None:
        assert " ".join(sent.words) == english
    assert " ".join(de) == german


def test_gold_tree_of_ditransitive():
    sent, _ = realize(clause("give", _old_man(), obj=np("book"), iobj=np("child")))
    assert sent.words == ["The", "old", "man", "gives", "the", "child", "the", "book", "."]
    assert sent.heads == [3, 3, 4, 0, 6, 4, 8, 4, 4]
    assert sent.deprels == ["det", "amod", "nsubj", "root", "det", "iobj", "det", "obj", "punct"]
    assert sent.upos == ["DET", "ADJ", "NOUN", "VERB", "DET", "NOUN", "DET", "NOUN", "PUNCT"]
    assert sent.xpos == ["DT", "JJ", "NN", "VBZ", "DT", "NN", "DT", "NN", "."]
    assert sent.comments["text"] == "The old man gives the child the book."


def test_gold_tree_of_relative_clause_and_compound():
    sent, _ = realize(clause("trust", np("man", relcl=clause("help", np("woman"), obj=GAP, tense="past")),
                             obj=np("federal liability insurance company")))
    # The man who the woman helped trusts the federal liability insurance company .
    assert sent.words[:5] == ["The", "man", "who", "the", "woman"]
    got = dict(zip(sent.words, zip(sent.heads, sent.deprels)))
    assert got["who"] == (6, "obj")
    assert got["helped"] == (2, "acl:relcl")
    assert got["trusts"] == (0, "root")
    assert got["federal"] == (12, "amod")
    assert got["liability"] == (11, "compound")
    assert got["insurance"] == (12, "compound")
    assert got["company"] == (7, "obj")
