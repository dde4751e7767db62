"""Issue 62: every command that cleans up after a failure removes only what its own run created. Each case runs a
command once successfully, then a rerun that fails part-way (after it has begun writing: a later split missing or
invalid, a write that fails); afterwards every file and folder under the test's folder is as it was before the
rerun, byte for byte, and nothing of the rerun is left behind.

Commands with such a cleanup today (grep rmtree/rmdir/unlink/remove in failure paths): ``python -m
syntax_nmt.targets write-data`` (its staging folders), ``syntax-nmt-target-tags interleave`` (its temporary file and
the folders it made), ``syntax-nmt-binarize`` (its staging folder), ``syntax-nmt-annotate`` (its chunk store;
``--overwrite`` removes the earlier outputs by design, but not before its inputs are found), ``syntax-nmt-analyze
corrupt`` (its temporary copy) and the recipes' ``prepare`` stage learning BPE codes
(:func:`syntax_nmt.recipes.text.learn_subword`: its joined input and the codes being written)."""

import os
import re

import pytest

from support.annotate import corpus_args
from support.streamdata import write_corpus


def _tree(root):
    """Every file under ``root`` (relative path -> bytes) and every folder (relative path -> None)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root)] = None
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.relpath(os.path.join(d, name), root)] = f.read()
    return out


def _fails(call, *argv):
    """``call(argv)`` ends with a user error: exit status 2 (SystemExit), or the exception a library call raises."""
    with pytest.raises((SystemExit, ValueError, OSError)) as e:
        call(list(argv))
    if e.type is SystemExit:
        assert e.value.code == 2


def _ok(call, *argv):
    """``call(argv)`` ends well (returns, or exits with status 0)."""
    try:
        call(list(argv))
    except SystemExit as e:
        assert e.code in (0, None)


def _put(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def write_data(tmp_path, monkeypatch):
    from syntax_nmt.targets.__main__ import main

    corpus = write_corpus(str(tmp_path / "ann"), sizes={"train": 6, "valid": 4}, seed=3, target_streams=True)
    argv = ["write-data", "--annotated", str(tmp_path / "ann"), "--src-lang", "en", "--tgt-lang", "de", "--splits"]
    assert main(argv + ["train valid"]) == 0
    _put(corpus["train"] + ".en", ["another source"] * 6)  # the rerun's train would differ
    pos = _lines(corpus["valid"] + ".tgt.pos")
    _put(corpus["valid"] + ".tgt.pos", pos[:-1] + [pos[-1] + " X"])  # its last line one tag too many
    return lambda: _fails(main, *argv, "train valid")


def interleave(tmp_path, monkeypatch):
    from syntax_nmt.annotate.target_tags import cli_main

    corpus = write_corpus(str(tmp_path / "ann"), sizes={"train": 6}, seed=3, target_streams=True)
    out = tmp_path / "tagged" / "deep" / "train.de"
    argv = ["interleave", "--prefix", corpus["train"], "--tgt-lang", "de", "-o", str(out)]
    _ok(cli_main, *argv)
    assert out.exists()
    pos = _lines(corpus["train"] + ".tgt.pos")
    _put(corpus["train"] + ".tgt.pos", ["X " + p for p in pos[:3]] + pos[3:-1] + [pos[-1] + " X"])
    return lambda: _fails(cli_main, *argv)


def binarize(tmp_path, monkeypatch):
    from syntax_nmt.data import binarize as b

    corpus = write_corpus(str(tmp_path / "text"), sizes={"train": 12, "valid": 9, "test": 5}, seed=7)
    argv = ["--source-lang", "en", "--target-lang", "de", "--workers", "1", "--trainpref", corpus["train"],
            "--validpref", corpus["valid"], "--joined-dictionary", "--destdir", str(tmp_path / "bin")]
    _ok(b.cli_main, *argv)
    real = b.binarize_heads

    def heads_then_a_full_disk(prefix, out_prefix, *args, **kwargs):  # the test split fails part-way
        if os.path.basename(out_prefix).startswith("test"):
            raise OSError(28, "No space left on device")
        return real(prefix, out_prefix, *args, **kwargs)

    monkeypatch.setattr(b, "binarize_heads", heads_then_a_full_disk)
    rerun = ["--source-lang", "en", "--target-lang", "de", "--workers", "1", "--testpref", corpus["test"],
             "--srcdict", str(tmp_path / "bin" / "dict.en.txt"), "--tgtdict", str(tmp_path / "bin" / "dict.de.txt"),
             "--destdir", str(tmp_path / "bin")]
    return lambda: _fails(b.cli_main, *rerun)


def annotate_other_input(tmp_path, monkeypatch, spacy_model, codes):
    from syntax_nmt.annotate.cli import cli_main

    (tmp_path / "in").mkdir(exist_ok=True)
    argv = corpus_args(tmp_path / "in", "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    _ok(cli_main, *argv)
    src = tmp_path / "in" / "c.en"
    src.write_text(src.read_text(encoding="utf-8").replace("cat", "dog"), encoding="utf-8")
    return lambda: _fails(cli_main, *argv)


def annotate_overwrite_missing_input(tmp_path, monkeypatch, spacy_model, codes):
    from syntax_nmt.annotate.cli import cli_main

    (tmp_path / "in").mkdir(exist_ok=True)
    argv = corpus_args(tmp_path / "in", "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    _ok(cli_main, *argv)
    os.remove(tmp_path / "in" / "c.de")
    return lambda: _fails(cli_main, *argv, "--overwrite")


def corrupt(tmp_path, monkeypatch):
    from syntax_nmt.analyze.cli import cli_main
    from syntax_nmt.data import binarize as b

    corpus = write_corpus(str(tmp_path / "text"), sizes={"train": 12, "valid": 9}, seed=7)
    _ok(b.cli_main, "--source-lang", "en", "--target-lang", "de", "--workers", "1", "--trainpref", corpus["train"],
        "--validpref", corpus["valid"], "--joined-dictionary", "--destdir", str(tmp_path / "bin"))
    argv = ["corrupt", "--data", str(tmp_path / "bin"), "--out", str(tmp_path / "noisy"), "--stream", "head",
            "--rate", "0.5", "--splits", "train"]
    _ok(cli_main, *argv)
    assert (tmp_path / "noisy" / "noise-head.json").exists()
    # the rerun replaces it (--overwrite), with a split the data lacks after one it has
    return lambda: _fails(cli_main, *argv[:-1], "valid,nosuchsplit", "--overwrite", "--seed", "2")


def learn_bpe_missing_side(tmp_path, monkeypatch):
    from syntax_nmt.recipes.text import learn_subword

    (tmp_path / "prep").mkdir()
    _put(tmp_path / "prep" / "train.en", ["the cat sat on the mat"] * 4)
    _put(tmp_path / "prep" / "train.de", ["die katze sass auf der matte"] * 4)
    learn_subword(str(tmp_path / "prep"), bpe_merges=5)
    assert (tmp_path / "prep" / "bpe.codes").exists()
    os.remove(tmp_path / "prep" / "train.de")  # the rerun reads train.en, then fails on train.de
    return lambda: _fails(lambda argv: learn_subword(str(tmp_path / "prep"), bpe_merges=7))


def learn_bpe_failing_part_way(tmp_path, monkeypatch):
    import subword_nmt.learn_bpe

    rerun = learn_bpe_missing_side(tmp_path, monkeypatch)
    _put(tmp_path / "prep" / "train.de", ["die katze sass auf der matte"] * 4)

    def half_then_a_full_disk(infile, outfile, *args, **kwargs):
        outfile.write("#version: 0.2\nt h\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(subword_nmt.learn_bpe, "learn_bpe", half_then_a_full_disk)
    return rerun


CASES = {"targets write-data": write_data, "target-tags interleave": interleave, "binarize": binarize,
         "annotate: another input": annotate_other_input,
         "annotate --overwrite: an input missing": annotate_overwrite_missing_input, "analyze corrupt": corrupt,
         "recipes' learn_subword (prepare): a side missing": learn_bpe_missing_side,
         "recipes' learn_subword (prepare): learn_bpe fails part-way": learn_bpe_failing_part_way}


@pytest.mark.parametrize("command", list(CASES))
def test_a_failed_rerun_keeps_what_an_earlier_run_wrote(command, tmp_path, monkeypatch, request):
    case = CASES[command]
    extra = {k: request.getfixturevalue(k) for k in ("spacy_model", "codes")} if command.startswith("annotate") else {}
    monkeypatch.chdir(tmp_path)
    rerun = case(tmp_path, monkeypatch, **extra)
    before = _tree(tmp_path)
    assert any(re.search(r"\.(bin|de|en|pos|json)$", k) for k in before)
    rerun()
    assert _tree(tmp_path) == before
