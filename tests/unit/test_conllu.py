"""syntax_nmt.syntax.conllu: reading, writing and validating CoNLL-U, with exact expected values."""

import io

import pytest

from syntax_nmt.syntax.conllu import (CoNLLUError, Sentence, format_conllu, open_conllu, read_conllu,
                                       read_conllu_text, write_conllu)

DOC = (
    "# newdoc id = d1\n"
    "# sent_id = 1\n"
    "# text = Don't go.\n"
    "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No\n"
    "3.1\tgone\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\tSpaceAfter=No|Other=x\n"
    "\n"
    "\n"
    "# sent_id = 2\n"
    "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
    "2\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\t_\n"
)


def test_read_exact_fields():
    first, second = list(read_conllu(io.StringIO(DOC), name="x.conllu"))
    assert first == Sentence(words=["Do", "n't", "go", "."], upos=["AUX", "PART", "VERB", "PUNCT"],
                             xpos=["VBP", "RB", "VB", "."], heads=[3, 3, 0, 3], deprels=["aux", "advmod", "root", "punct"],
                             space_after=[True, True, False, False],
                             comments={"newdoc id": "d1", "sent_id": "1", "text": "Don't go."})
    assert second.words == ["Hi", "!"] and second.heads == [0, 1] and second.space_after == [False, True]
    assert second.comments == {"sent_id": "2"}
    assert second.text == "Hi!"  # rebuilt from SpaceAfter (no # text)
    assert first.text == "Don't go."  # the comment wins


def test_text_from_space_after_strips_only_the_end():
    s = Sentence(["a", "b", "c"], ["X"] * 3, ["_"] * 3, [0, 1, 1], ["root", "dep", "dep"], [False, True, True])
    assert s.text == "ab c"


def test_default_space_after_and_length_checks():
    s = Sentence(["a", "b"], ["X", "Y"], ["_", "_"], [0, 1], ["root", "dep"])
    assert s.space_after == [True, True] and s.comments == {}
    assert s.text == "a b"
    for field, value in (("upos", ["X"]), ("xpos", ["_"]), ("heads", [0]), ("deprels", ["root"]),
                         ("space_after", [True, False, True])):
        kwargs = dict(words=["a", "b"], upos=["X", "Y"], xpos=["_", "_"], heads=[0, 1], deprels=["root", "dep"])
        kwargs[field] = value
        with pytest.raises(ValueError, match=f"^Sentence.{field} has {len(value)} items, words has 2$"):
            Sentence(**kwargs)


def test_write_then_read_round_trip_exact_text():
    sents = list(read_conllu(io.StringIO(DOC)))
    out = io.StringIO()
    assert write_conllu(sents, out) == 2
    assert out.getvalue() == (
        "# newdoc id = d1\n# sent_id = 1\n# text = Don't go.\n"
        "1\tDo\t_\tAUX\tVBP\t_\t3\taux\t_\t_\n"
        "2\tn't\t_\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
        "3\tgo\t_\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No\n"
        "4\t.\t_\tPUNCT\t.\t_\t3\tpunct\t_\tSpaceAfter=No\n"
        "\n"
        "# sent_id = 2\n"
        "1\tHi\t_\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
        "2\t!\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n"
        "\n"
    )
    assert list(read_conllu(io.StringIO(out.getvalue()))) == sents
    assert write_conllu(iter([]), io.StringIO()) == 0


def test_format_empty_xpos_as_underscore():
    s = Sentence(["a"], ["X"], [""], [0], ["root"])
    assert format_conllu(s) == "1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n\n"


def test_crlf_and_trailing_block_without_blank_line():
    text = "1\ta\t_\tX\t_\t_\t0\troot\t_\t_\r\n\r\n1\tb\t_\tY\t_\t_\t0\troot\t_\t_"
    sents = list(read_conllu(io.StringIO(text)))
    assert [s.words for s in sents] == [["a"], ["b"]] and [s.deprels for s in sents] == [["root"], ["root"]]
    assert list(read_conllu(io.StringIO("\n\n# only = comments\n\n"))) == []


def test_comments_keys_values_and_words_with_spaces():
    text = ("#sent_id=3\n# text = a=b c\n1\tNew York\t_\tPROPN\t_\t_\t2\tnsubj\t_\t_\n"
            "2\tsleeps\t_\tVERB\t_\t_\t0\troot\t_\t_\n")
    (s,) = read_conllu(io.StringIO(text))
    assert s.comments == {"sent_id": "3", "text": "a=b c"}
    assert s.words == ["New York", "sleeps"] and s.heads == [2, 0]  # a head may be the last word


def test_trailing_tab_is_an_eleventh_column():
    with pytest.raises(CoNLLUError, match="^f:1: expected 10 tab-separated columns, got 11$"):
        list(read_conllu(io.StringIO("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\t\n"), name="f"))


def test_comment_without_equals_is_ignored_and_whitespace_lines_separate():
    text = "# a comment\n# k =  v \n1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n   \n1\tb\t_\tY\t_\t_\t0\troot\t_\t_\n"
    a, b = read_conllu(io.StringIO(text))
    assert a.comments == {"k": "v"} and b.words == ["b"]


@pytest.mark.parametrize("body,message", [
    ("1\ta\t_\tX\t_\t_\t0\troot\t_\n", r"^f\.conllu:4: expected 10 tab-separated columns, got 9$"),
    ("1\ta\t_\tX\t_\t_\troot\t0\troot\t_\n", r"^f\.conllu:4: ID and HEAD must be integers, got '1', 'root'$"),
    ("2\ta\t_\tX\t_\t_\t0\troot\t_\t_\n", r"^f\.conllu:4: word ID 2 out of order \(expected 1\)$"),
    # errors of a whole sentence name the line where its block starts
    ("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t3\tdep\t_\t_\n",
     r"^f\.conllu:3: sentence has head 3 for word 2 of 2$"),
    ("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t2\tdep\t_\t_\n",
     r"^f\.conllu:3: sentence has head 2 for word 2 of 2$"),  # a word heading itself
    ("1\ta\t_\tX\t_\t_\t-1\troot\t_\t_\n", r"^f\.conllu:3: sentence has head -1 for word 1 of 1$"),
])
@pytest.mark.parametrize("after", ["", "\n1\tnext\t_\tX\t_\t_\t0\troot\t_\t_\n"])
def test_errors_name_file_and_line(body, message, after):
    text = "1\tok\t_\tX\t_\t_\t0\troot\t_\t_\n\n# sent_id = 2\n" + body + after  # the error is in the 2nd sentence
    with pytest.raises(CoNLLUError, match=message):
        list(read_conllu(io.StringIO(text), name="f.conllu"))


def test_name_defaults_to_the_file_name(tmp_path):
    path = tmp_path / "g.conllu"
    path.write_text("1\ta\t_\tX\t_\t_\t5\troot\t_\t_\n", encoding="utf-8")
    with open(path, encoding="utf-8") as f, pytest.raises(CoNLLUError, match=f"^{path}:1: "):
        list(read_conllu(f))
    with pytest.raises(CoNLLUError, match="^<conllu>:1: "):
        list(read_conllu(iter(["1\ta\t_\tX\t_\t_\t5\troot\t_\t_\n"])))


# -- encoding errors ------------------------------------------------------------------------------
BLOCKS = "# sent_id = 1\n1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n1\tYo\tyo\tINTJ\t_\t_\t0\troot\t_\t_\n"


@pytest.mark.parametrize("opener", ["text", "binary"])
def test_a_byte_order_mark_at_the_start_is_dropped(tmp_path, opener):
    """Decided: UTF-8 with a BOM (Windows tools) is read as UTF-8; only at the very start of the file."""
    path = tmp_path / "bom.conllu"
    path.write_bytes(b"\xef\xbb\xbf" + BLOCKS.encode())
    f = open(path, encoding="utf-8") if opener == "text" else open_conllu(str(path))
    with f:
        first, second = read_conllu(f, "bom.conllu")
    assert (first.words, first.comments, second.words) == (["Hi"], {"sent_id": "1"}, ["Yo"])
    # a BOM starting a word line is dropped too (it used to make the ID 'not an integer')
    (first,) = read_conllu(io.StringIO("\ufeff" + BLOCKS.split("\n\n")[1]), "w.conllu")
    assert first.words == ["Yo"]
    assert read_conllu_text(str(path)) == BLOCKS
    # elsewhere it is an ordinary character (of a word here)
    (s,) = read_conllu(io.StringIO("1\t\ufeffHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n"), "x")
    assert s.words == ["\ufeffHi"]


def test_an_invalid_byte_names_file_line_and_column(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_bytes(BLOCKS.encode().replace(b"Yo\tyo", b"Y\xffo\tyo"))
    message = rf"^{path}:4: invalid UTF-8 byte 0xff at column 4 \(invalid start byte\); CoNLL-U files are UTF-8$"
    with open_conllu(str(path)) as f, pytest.raises(CoNLLUError, match=message):
        list(read_conllu(f, str(path)))
    with pytest.raises(CoNLLUError, match=message):
        read_conllu_text(str(path))
