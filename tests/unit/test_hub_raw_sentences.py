"""The hub's raw-text argument at the API boundary, :func:`syntax_nmt.hub.raw_sentences`, on its own (no checkpoint):
what is a list of sentences, and the exact message for what is not. ``tests/integration/test_hub_parse_free.py``
checks the same messages through every hub method; this file is what mutation testing runs first against the
function's mutants (issue 60)."""

from collections import OrderedDict

import pytest

from syntax_nmt.hub import _bytes_hint, raw_sentences

HINT = ": decode it first (e.g. data.decode('utf-8'))"


def test_a_str_is_one_sentence_and_an_iterable_of_str_a_list():
    assert raw_sentences("a b", "f") == (["a b"], True)
    assert raw_sentences("", "f") == ([""], True)
    assert raw_sentences(["a", "b c"], "f") == (["a", "b c"], False)
    assert raw_sentences(("a", "b"), "f") == (["a", "b"], False)
    assert raw_sentences((x for x in ["a", "b"]), "f") == (["a", "b"], False)
    assert raw_sentences(iter(["c"]), "f") == (["c"], False)
    assert raw_sentences([], "f") == ([], False)
    assert raw_sentences({"x"}, "f") == (["x"], False)
    given = ["a"]
    items, single = raw_sentences(given, "f")
    assert items == given and items is not given and single is False  # a new list: the caller's is not kept


@pytest.mark.parametrize("bad, got", [
    (None, "got NoneType"),
    (3, "got int"),
    (2.5, "got float"),
    (b"A dog .", "got bytes" + HINT),
    (bytearray(b"A dog ."), "got bytearray" + HINT),
    ({"A dog .": 1}, "got dict"),
    (OrderedDict(a=1), "got OrderedDict"),
], ids=["None", "int", "float", "bytes", "bytearray", "dict", "mapping"])
def test_what_is_not_a_list_of_sentences_is_named(bad, got):
    with pytest.raises(TypeError) as e:
        raw_sentences(bad, "translate")
    assert str(e.value) == f"translate() takes sentences as a str or a list of str, {got}"
    with pytest.raises(TypeError) as e:
        raw_sentences(bad, "translate_conllu", "lines")
    assert str(e.value) == f"translate_conllu() takes lines as a str or a list of str, {got}"


@pytest.mark.parametrize("bad, item", [
    ([None], "item 0 is NoneType"),
    (["a", 1], "item 1 is int"),
    (["a", "b", b"c"], "item 2 is bytes" + HINT),
    (("a", bytearray(b"c")), "item 1 is bytearray" + HINT),
    ([["a"]], "item 0 is list"),
    (["a", None, 3], "item 1 is NoneType"),  # the first bad item
], ids=["[None]", "[str, int]", "[str, str, bytes]", "(str, bytearray)", "[list]", "first"])
def test_a_bad_item_is_named_by_its_index(bad, item):
    with pytest.raises(TypeError) as e:
        raw_sentences(bad, "parse")
    assert str(e.value) == f"parse() takes sentences as a str or a list of str, but {item}"
    with pytest.raises(TypeError) as e:
        raw_sentences(bad, "score", "targets")
    assert str(e.value) == f"score() takes targets as a str or a list of str, but {item}"


def test_the_bytes_hint():
    assert _bytes_hint(b"x") == _bytes_hint(bytearray()) == HINT
    assert _bytes_hint("x") == _bytes_hint(None) == _bytes_hint(memoryview(b"x")) == ""
