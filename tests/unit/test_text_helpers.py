"""The plugin's one reader and writer of text lines and its one markdown table (syntax_nmt/utils.py), which the
annotator, the evaluation, the recipes and the analyses share (issue 47.4)."""

import math
import os

import pytest

from syntax_nmt.utils import InputError, markdown_table, numbered_lines, read_lines, write_lines


def test_read_and_write_lines_keep_empty_lines_and_carriage_returns(tmp_path):
    lines = ["a b", "", "c\rd", "  e  ", "Nr. X", "f\u2028g"]
    assert write_lines(str(tmp_path / "x"), iter(lines)) == len(lines)
    assert (tmp_path / "x").read_bytes() == "a b\n\nc\rd\n  e  \nNr. X\nf\u2028g\n".encode("utf-8")
    assert list(read_lines(str(tmp_path / "x"))) == lines
    assert os.listdir(tmp_path) == ["x"]  # written through a temporary file, renamed
    (tmp_path / "u").write_bytes("\ufeffÄpfel\nno newline".encode("utf-8"))
    assert list(read_lines(str(tmp_path / "u"))) == ["Äpfel", "no newline"]  # the byte-order mark dropped


def test_invalid_utf8_names_the_file_and_line_or_is_replaced(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"ok\nbad \xff byte\n")
    with pytest.raises(InputError, match=r"bad:2: invalid UTF-8"):
        list(read_lines(str(bad)))
    assert isinstance(InputError("x"), ValueError)
    assert list(numbered_lines(str(bad), errors="replace")) == [(1, "ok"), (2, "bad \ufffd byte")]


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "x"
    write_lines(str(path), ["old"])

    def lines():
        yield "new"
        raise RuntimeError("cut short")

    with pytest.raises(RuntimeError):
        write_lines(str(path), lines())
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["x"]


def test_markdown_table_writes_cells_for_a_reader():
    text = markdown_table(["system", "BLEU", "a|b"], [["base", 35.214, None], ["long system name", math.nan, "x|y"],
                                                      ["n", 3, ""]])
    lines = text.splitlines()
    assert lines[0] == "| system | BLEU | a\\|b |"
    assert set(lines[1]) == {"|", "-"} and lines[1].count("|") == 4
    assert lines[2:] == ["| base | 35.21 | - |", "| long system name | - | x\\|y |", "| n | 3 |  |"]
    assert markdown_table(["a"], [], floatfmt=".1f").splitlines()[0] == "| a |"
    assert markdown_table(["x"], [[0.25]], floatfmt=".1f").splitlines()[2] == "| 0.2 |"


def test_markdown_table_aligns_columns_as_the_benchmarks_write_them():
    """``align`` (issue 57.4: the length bench's tables through the one writer): the line under the header says
    each column's alignment, ``---`` or ``---:``, whatever the widths; the rows are as without it."""
    rows = [["a long name", 1.5, 2], ["b", None, 10]]
    text = markdown_table(["system", "T=8", "ops"], rows, align="lrr")
    lines, plain = text.splitlines(), markdown_table(["system", "T=8", "ops"], rows).splitlines()
    assert lines[1] == "|---|---:|---:|" and plain[1] != lines[1]
    assert lines[:1] + lines[2:] == plain[:1] + plain[2:] == ["| system | T=8 | ops |", "| a long name | 1.50 | 2 |",
                                                              "| b | - | 10 |"]
    assert markdown_table(["words"], [], align="l") == "| words |\n|---|"
    for bad in ("lr", "lrx", "lrrr"):
        with pytest.raises(ValueError, match="one letter, l or r, per column"):
            markdown_table(["system", "T=8", "ops"], rows, align=bad)
