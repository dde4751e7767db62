"""A model's own parse as an output (:mod:`syntax_nmt.tasks.source_parse`), against naive loops: word starts from
the tokens, word heads from predicted parent positions, the printed lines and their reading back."""

import random

import pytest
import torch

from fairseq.data.data_utils import post_process

from syntax_nmt.annotate.subwords import word_starts
from syntax_nmt.syntax.conllu import Sentence
from syntax_nmt.syntax.parse_lines import parse_lines, read_parse_lines
from syntax_nmt.tasks.source_parse import guess_scheme, marker_table, sentences, token_word_starts, word_heads

REMOVE_BPE = {"bpe": "subword_nmt", "spm": "sentencepiece"}  # fairseq's --remove-bpe of each scheme
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # fairseq's Dictionary: bos 0, pad 1, eos 2, unk 3
PIECES = {"bpe": ["the", "ca@@", "t", "s@@", "a@@", "t", "a@", "@@", "x"],
          "spm": ["\u2581the", "\u2581ca", "t", "\u2581s", "a", "t", "\u2581", "x", "\u2581a@@"],
          "none": ["the", "cat", "sat", "a@@", "\u2581b"]}


def _batch(scheme, rng, left_pad, bos):
    """Random rows of pieces as a padded batch: ``(tokens, special, symbols, rows)``."""
    symbols = SPECIALS + PIECES[scheme]
    rows = [[rng.randrange(4, len(symbols)) for _ in range(rng.randint(1, 9))] for _ in range(6)]
    full = [([0] if bos else []) + r + [2] for r in rows]
    width = max(len(r) for r in full)
    tokens = torch.tensor([[1] * (width - len(r)) + r if left_pad else r + [1] * (width - len(r)) for r in full])
    special = tokens.eq(0) | tokens.eq(1) | tokens.eq(2)
    return tokens, special, symbols, rows


@pytest.mark.parametrize("scheme", ["bpe", "spm", "none"])
@pytest.mark.parametrize("left_pad,bos", [(False, False), (True, False), (True, True), (False, True)])
def test_word_starts_from_tokens_equal_the_joining_of_remove_bpe(scheme, left_pad, bos):
    rng = random.Random(f"{scheme}{left_pad}{bos}")
    for _ in range(20):
        tokens, special, symbols, rows = _batch(scheme, rng, left_pad, bos)
        starts = token_word_starts(tokens, special, marker_table(symbols, scheme), scheme)
        assert not starts[special].any()
        for i, row in enumerate(rows):
            got = starts[i][~special[i]].tolist()
            assert got == word_starts([symbols[k] for k in row], scheme), (scheme, [symbols[k] for k in row])
            if scheme != "none":  # the words are those fairseq's --remove-bpe leaves, one start each (issue 56)
                pieces = [symbols[k] for k in row]
                (sentence,) = sentences([pieces], [got], [[0] * len(pieces)], scheme)
                assert sentence.words == post_process(" ".join(pieces), REMOVE_BPE[scheme]).split(), pieces


def _naive_heads(parents, starts, special):
    """Word heads, sentence by sentence, straight from the convention: the word of the parent token of each
    word's first subword, 0 when it is the word itself or a special token."""
    out = []
    for p, s, sp in zip(parents.tolist(), starts.tolist(), special.tolist()):
        word_of, n = [], 0
        for start in s:
            n += int(start)
            word_of.append(max(n, 1))  # a token before the first word (of a word without text) is in the first
        heads = []
        for i, start in enumerate(s):
            if start:
                j = p[i]
                heads.append(0 if sp[j] or word_of[j] == word_of[i] else word_of[j])
        out.append(heads)
    return out


@pytest.mark.parametrize("scheme", ["bpe", "spm"])
@pytest.mark.parametrize("left_pad,bos", [(False, False), (True, True)])
def test_word_heads_equal_a_naive_loop(left_pad, bos, scheme):
    rng = random.Random(7)
    gen = torch.Generator().manual_seed(7)
    for _ in range(30):
        tokens, special, symbols, rows = _batch(scheme, rng, left_pad, bos)
        starts = token_word_starts(tokens, special, marker_table(symbols, scheme), scheme)
        parents = torch.randint(0, tokens.shape[1], tokens.shape, generator=gen)
        heads = word_heads(parents, starts, special)
        assert heads[~starts].eq(-1).all()
        assert [h[s].tolist() for h, s in zip(heads, starts)] == _naive_heads(parents, starts, special)


def test_the_streams_convention_reads_back_as_the_tree():
    """Parents as LISA is trained to predict them (the first subword of the head word; a root word's pieces on
    themselves) give the word-level tree they came from."""
    symbols = SPECIALS + ["The", "ca@@", "t", "sa@@", "t", "."]
    tokens = torch.tensor([[4, 5, 6, 7, 8, 9, 2]])  # The ca@@ t sa@@ t . </s>: words The cat sat .
    special = tokens.eq(2)
    starts = token_word_starts(tokens, special, marker_table(symbols, "bpe"), "bpe")
    assert starts.tolist() == [[True, True, False, True, False, True, False]]
    parents = torch.tensor([[1, 3, 3, 3, 4, 3, 6]])  # The->cat, cat->sat (both pieces), sat root, .->sat
    heads = word_heads(parents, starts, special)
    assert heads[starts].tolist() == [2, 3, 0, 3]
    (sentence,) = sentences([[symbols[k] for k in tokens[0, :-1].tolist()]], [starts[0, :-1].tolist()],
                            [heads[0, :-1].tolist()], "bpe")
    assert (sentence.words, sentence.heads) == (["The", "cat", "sat", "."], [2, 3, 0, 3])
    eos = torch.tensor([[6, 6, 6, 6, 6, 6, 6]])  # every token on the EOS: every word a root
    assert word_heads(eos, starts, special)[starts].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("scheme,pieces,words", [
    ("bpe", ["a@@", "b", "c", "＠＠@@", "d"], ["ab", "c", "＠＠d"]),
    ("spm", ["\u2581a", "b", "\u2581c", "\u2581", "d"], ["ab", "c", "d"]),
    ("none", ["a", "b"], ["a", "b"]),
])
def test_words_are_the_pieces_joined(scheme, pieces, words):
    starts = word_starts(pieces, scheme)
    (sentence,) = sentences([pieces], [starts], [[0] * len(pieces)], scheme)
    assert sentence.words == words and sentence.heads == [0] * len(words)


# issue 56: sentencepiece normalizes U+FFFD (the plugin's replacement of invalid bytes) and U+200B to nothing; the
# annotation gives such a word one bare "▁", which --remove-bpe sentencepiece drops ("▁the ▁ ▁sees" -> "the  sees")
SPM_BARE = [
    (["\u2581the", "\u2581", "\u2581sees"], [True, False, True], ["the", "sees"]),
    (["\u2581", "\u2581the"], [False, True], ["the"]),
    (["\u2581the", "\u2581"], [True, False], ["the"]),
    (["\u2581"], [False], []),
    (["\u2581the", "\u2581", "d", "\u2581", "\u2581", "g"], [True, True, False, False, True, False],
     ["the", "d", "g"]),
    (["\u2581", "<unk>", "\u2581x"], [True, False, True], ["<unk>", "x"]),  # an unknown piece is text
]


@pytest.mark.parametrize("pieces,starts,words", SPM_BARE)
def test_a_sentencepiece_word_without_text_is_no_word(pieces, starts, words):
    """The exact pieces of issue 56 (a word of U+FFFD alone, "the d\ufffdg sees" split by Moses): one start per word
    that fairseq's --remove-bpe leaves, from the pieces and from the tokens, and the heads of those words only."""
    assert word_starts(pieces, "spm") == starts
    assert post_process(" ".join(pieces), "sentencepiece").split() == words
    symbols = SPECIALS + sorted(set(pieces) - set(SPECIALS))
    tokens = torch.tensor([[symbols.index(p) for p in pieces] + [2]])
    special = tokens.eq(2)
    got = token_word_starts(tokens, special, marker_table(symbols, "spm"), "spm")
    assert got[0, :-1].tolist() == starts and not got[0, -1]
    parents = torch.zeros_like(tokens)  # every token on the first: its word is the head of the others
    heads = word_heads(parents, got, special)
    (sentence,) = sentences([pieces], [starts], [heads[0, :-1].tolist()], "spm")
    assert sentence.words == words and len(sentence.heads) == len(words)
    assert sentence.heads == ([0] + [1] * (len(words) - 1))[:len(words)]


def test_printed_lines_read_back():
    s = Sentence(["The", "cat", "sat"], ["_"] * 3, ["_"] * 3, [2, 3, 0], ["_"] * 3)
    empty = Sentence([], [], [], [], [])
    heads = parse_lines(4, s, "heads") + parse_lines(5, empty, "heads")
    assert heads == ["G-4\t2 3 0", "G-5\t"]
    conllu = parse_lines(4, s, "conllu") + parse_lines(5, empty, "conllu")
    assert conllu[0] == "G-4\t# sent_id = 4" and conllu[1] == "G-4\t1\tThe\t_\t_\t_\t_\t2\t_\t_\t_"
    assert conllu[-1] == "G-4\t" and len(conllu) == 5  # no block for a sentence without words
    mixed = ["S-4\tThe cat sat", "H-4\t-1.0\tDie Katze", "P-4\t-0.5 -0.5", "F-4\tpos\tDET NOUN"]
    assert read_parse_lines(mixed + heads) == {4: (None, [2, 3, 0]), 5: (None, [])}
    assert read_parse_lines(mixed + conllu) == {4: (["The", "cat", "sat"], [2, 3, 0])}
    with pytest.raises(ValueError, match=r"^line 2: not a parse line of --print-source-parse"):
        read_parse_lines(["G-4\t2 3 0", "G-5\tx y"])


def test_the_documented_command_gives_the_conllu_blocks_in_sentence_order(tmp_path):
    """Issue 56.7: ``--print-source-parse conllu`` prints the blocks in fairseq's batch order (by length), and an empty
    sentence gets none: ``grep ^G- | cut -f2-`` gave a misordered file. The command docs/deploy.md gives now, run
    on lines in batch order (sentence 10 before 2, sentence 3 empty), gives the blocks in sentence-id order."""
    import os
    import re
    import subprocess

    from syntax_nmt.syntax.conllu import read_conllu

    batch = {10: ["a", "dog", "runs", "fast"], 2: ["cats", "sleep"], 3: [], 0: ["hi"]}
    log = tmp_path / "gen.out"
    lines = []
    for sid, words in batch.items():
        lines += [f"S-{sid}\t{' '.join(words)}", "H-x\t-1\tsome words"]
        lines += parse_lines(sid, Sentence(words, ["_"] * len(words), ["_"] * len(words),
                                           [0, 1, 1, 1][:len(words)], ["_"] * len(words)), "conllu")
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs = open(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "docs", "deploy.md")).read()
    command = re.search(r"^(grep \^G- gen\.out .*?) > lisa\.conllu", docs, re.M).group(1)
    out = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    blocks = list(read_conllu(out.splitlines(keepends=True), "lisa.conllu"))
    assert [b.words for b in blocks] == [batch[0], batch[2], batch[10]]
    assert [b.comments.get("sent_id") for b in blocks] == ["0", "2", "10"]


class _Parents:
    """A model whose parse head predicts the given parent positions (``predict_source_parents``)."""

    predicts_source_parse = True

    def __init__(self, parents):
        self.parents = torch.tensor(parents)
        self.seen = []

    def predict_source_parents(self, net_input):
        self.seen.append(net_input)
        return self.parents


def _dictionary(pieces):
    from fairseq.data import Dictionary

    d = Dictionary()  # <s> 0, <pad> 1, </s> 2, <unk> 3
    for p in pieces:
        d.add_symbol(p)
    return d


def test_source_parses_of_a_batch_with_bos_and_padding():
    """SourceParses on a left-padded batch with --source-prepend-bos: BOS, EOS and padding are no word, and a word
    whose parent is BOS (or EOS) is a root; the words are the pieces joined by the scheme given, or by the one
    guessed from the dictionary; the same object gives each scheme its own joining."""
    from syntax_nmt.tasks.source_parse import SourceParses

    d = _dictionary(["The", "ca@@", "t", "sat", "."])  # The 4, ca@@ 5, t 6, sat 7, . 8
    tokens = torch.tensor([[1, 1, 0, 4, 7, 2],     # <pad> <pad> <s> The sat </s>
                           [0, 4, 5, 6, 8, 2]])    # <s> The ca@@ t . </s>
    parents = [[0, 0, 2, 2, 5, 5],                 # The -> BOS: root; sat -> EOS: root
               [0, 2, 3, 3, 2, 5]]                 # The -> ca@@ (cat), ca@@ -> ca@@ (itself: root), . -> cat
    model = _Parents(parents)
    net_input = {"src_tokens": tokens}
    parses = SourceParses(d)(model, net_input, "bpe")
    assert model.seen == [net_input]
    assert [(p.words, p.heads) for p in parses] == [(["The", "sat"], [0, 0]), (["The", "cat", "."], [2, 0, 2])]
    assert all(p.upos == p.xpos == p.deprels == ["_"] * len(p.words) for p in parses)
    parses = SourceParses(d)(model, net_input, None)  # guessed from the dictionary: bpe
    assert [(p.words, p.heads) for p in parses] == [(["The", "sat"], [0, 0]), (["The", "cat", "."], [2, 0, 2])]
    same = SourceParses(d)
    assert [p.words for p in same(model, net_input, "bpe")] == [["The", "sat"], ["The", "cat", "."]]
    # spm: no piece starts with the marker, so a word starts only after a special token
    assert [p.words for p in same(model, net_input, "spm")] == [["Thesat"], ["Theca@@t."]]
    assert [(p.words, p.heads) for p in same(model, net_input, "none")] == [
        (["The", "sat"], [0, 0]), (["The", "ca@@", "t", "."], [2, 3, 0, 2])]


def test_source_parses_needs_a_parse_head():
    from syntax_nmt.data.streams import StreamConfigError
    from syntax_nmt.tasks.source_parse import SourceParses

    class NoHead:
        def predict_source_parents(self, net_input):
            raise AssertionError("not asked")

    with pytest.raises(StreamConfigError, match=r"^the model predicts no parse of the source: only --syntax-attention "
                                                r"lisa has a parse head$"):
        SourceParses(_dictionary([]))(NoHead(), {"src_tokens": torch.tensor([[2]])}, "bpe")


def test_print_parses_numbers_the_lines_by_the_ids(capsys):
    from syntax_nmt.tasks.source_parse import print_parses

    s = Sentence(["The", "cat"], ["_"] * 2, ["_"] * 2, [2, 0], ["_"] * 2)
    t = Sentence(["Hi"], ["_"], ["_"], [0], ["_"])
    print_parses([7, 3], [s, t], "heads")
    assert capsys.readouterr().out == "G-7\t2 0\nG-3\t0\n"
    print_parses([3], [t], "conllu")
    assert capsys.readouterr().out == "G-3\t# sent_id = 3\nG-3\t1\tHi\t_\t_\t_\t_\t0\t_\t_\t_\nG-3\t\n"


@pytest.mark.parametrize("symbols,scheme", [
    (SPECIALS + ["a@@", "b"], "bpe"),
    (SPECIALS + ["\u2581a", "b"], "spm"),
    (SPECIALS + ["\u2581a", "b@@"], "bpe"),  # a BPE marker decides
    (SPECIALS + ["a", "b\u2581", "@"], "none"),
    (SPECIALS, "none"),
])
def test_the_scheme_of_a_dictionary_without_settings(symbols, scheme):
    assert guess_scheme(symbols) == scheme
