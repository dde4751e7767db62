"""Kept translations that cannot be read, and budget points that cannot be (issue 56.5, 56.6): one line, exit 2,
nothing written. On the committed sample of the published translations (tests/data/multi30k_sample)."""

import gzip
import os
import shutil

import pytest

from syntax_nmt.recipes import budget_curve, report
from syntax_nmt.recipes.budget_curve import Point

SAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, "data", "multi30k_sample")


@pytest.mark.parametrize("text,error", [
    ("1x:0:2048:transformer:lisa:1", "UPDATES and TOKENS must be 1 or more"),
    ("1x:-1600:2048:transformer:lisa:1", "UPDATES and TOKENS must be 1 or more"),
    ("1x:1600:0:transformer:lisa:1", "UPDATES and TOKENS must be 1 or more"),
    ("../x:1600:2048:transformer:lisa:1", "LABEL names the point's folder under --eval"),
    ("a/b:1600:2048:transformer:lisa:1", "LABEL names the point's folder under --eval"),
    ("..:1600:2048:transformer:lisa:1", "LABEL names the point's folder under --eval"),
    (":1600:2048:transformer:lisa:1", "LABEL names the point's folder under --eval"),
    (".hidden:1600:2048:transformer:lisa:1", "LABEL names the point's folder under --eval"),
])
def test_budget_points_refuse_budgets_below_one_and_labels_that_are_paths(text, error):
    with pytest.raises(ValueError, match=error):
        Point.parse(text)


def test_a_budget_label_that_is_a_path_writes_nothing(tmp_path, capsys):
    """``--point "../x:..."`` scored its translations into ``--eval/../x``, outside --eval."""
    evald = tmp_path / "eval"
    with pytest.raises(SystemExit) as e:
        budget_curve.main(["--translations", os.path.join(SAMPLE, "translations"), "--refs",
                           os.path.join(SAMPLE, "refs"), "--eval", str(evald), "--out", str(tmp_path / "out" / "b"),
                           "--splits", "test2016", "--point", "../x:1600:2048:transformer:lisa:1 2 3"])
    assert e.value.code == 2
    assert capsys.readouterr().err == (
        f"{budget_curve.PROG}: error: --point '../x:1600:2048:transformer:lisa:1 2 3': LABEL names the point's "
        "folder under --eval: letters, digits and '._-', not starting with '.' or '-', got '../x'\n")
    assert os.listdir(tmp_path) == []
    assert Point.parse("4x.b_2-c:1:1:a:b:1").label == "4x.b_2-c"


@pytest.fixture
def broken(tmp_path):
    """The sample's translations with lisa seed 2's detokenized file cut short (a copy interrupted)."""
    kept = tmp_path / "kept"
    shutil.copytree(os.path.join(SAMPLE, "translations"), kept)
    path = kept / "test2016" / "lisa.seed2.detok.gz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(EOFError):  # what the report met: a traceback ending in EOFError
        with gzip.open(path, "rt") as f:
            f.read()
    return kept, path


def test_a_kept_translation_cut_short_is_named_and_nothing_is_scored(broken, tmp_path, capsys):
    kept, path = broken
    evald = tmp_path / "eval"
    with pytest.raises(SystemExit) as e:
        report.main(["--translations", str(kept), "--refs", os.path.join(SAMPLE, "refs"), "--eval", str(evald),
                     "--systems", "transformer lisa", "--seeds", "1 2 3", "--splits", "test2016"])
    assert e.value.code == 2
    # the shared guard checks every gzip input whole before anything is read (issue 56.2)
    assert capsys.readouterr().err == (
        f"{report.PROG}: error: --translations {path}: not a whole gzip file (Compressed file ended before "
        "the end-of-stream marker was reached)\n")
    assert not evald.exists()


def test_a_file_that_is_not_gzip_is_named(tmp_path):
    kept = tmp_path / "kept"
    shutil.copytree(os.path.join(SAMPLE, "translations"), kept)
    path = kept / "test2016" / "transformer.seed3.tok.gz"
    path.write_text("plain text\n")
    with pytest.raises(ValueError) as e:
        report.read_kept(str(kept), ["transformer"], [3], ["test2016"], os.path.join(SAMPLE, "refs"))
    assert str(e.value) == (f"{path} is not a whole gzip file of UTF-8 text (Not a gzipped file (b'pl')): keep the "
                            "translation again (report --pack)")


def test_the_budget_curve_names_a_kept_translation_cut_short(broken, tmp_path, capsys):
    kept, path = broken
    evald, out = tmp_path / "eval", tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        budget_curve.main(["--translations", str(kept), "--refs", os.path.join(SAMPLE, "refs"), "--eval", str(evald),
                           "--out", str(out / "b"), "--splits", "test2016",
                           "--point", "1x:1600:2048:transformer:transformer:1 2 3",
                           "--point", "2x:3200:2048:transformer:lisa:1 2 3"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{budget_curve.PROG}: error: --translations {path}: not a whole gzip file") \
        and err.count("\n") == 1
    assert not evald.exists() and not out.exists()  # the first point, whose files are whole, was not scored either
