"""The demo's reruns into a used ``--out`` (issue 46): each step records the options that shaped its outputs beside
its marker, and a rerun with other values stops before anything runs, in one line naming the option and how to go
on; a marker cut short is done again with a warning; options fairseq or the statistics would misread are refused.
No training runs here: every case stops (or is checked) before the first step."""

import json
import os

import pytest

from syntax_nmt.demo import cli
from syntax_nmt.demo.workdir import Workdir

PROG = "python -m syntax_nmt.demo"
#: what a run with the defaults records (gold parses: the --gold-parses demo of `make test`)
CORPUS = {"--train": 20000, "--valid": 500, "--test": 1000, "--seed": 1}


def snapshot(folder):
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            out[os.path.join(d, f)] = open(os.path.join(d, f), "rb").read()
    return out


def used_out(tmp_path, gold=True):
    """A demo folder whose corpus, annotation and data steps are done (markers only: nothing is run again)."""
    out = tmp_path / "demo"
    out.mkdir()
    steps = {"corpus": CORPUS, "binarize": {"--bpe": 4000, "--gold-parses": gold},
             **{f"annotate-{s}": {"--bpe": 4000, "--gold-parses": gold} for s in ("train", "valid", "test")},
             "train-transformer-seed1": {"--max-tokens": 1536}}
    for name, settings in steps.items():
        (out / f".done-{name}").write_text(json.dumps({"settings": settings}))
    return out


def run(capsys, argv):
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.cli_main([str(a) for a in argv])
    captured = capsys.readouterr()
    return e.value.code, captured.err.splitlines()


@pytest.mark.parametrize("argv, message", [
    (["--train", "5000"], "{out} was made with --train 20000, now 5000 (step corpus): rerun with --train 20000 to go "
                          "on with it, or give another --out (or remove {out}) for the new settings"),
    (["--bpe", "300"], "{out} was made with --bpe 4000, now 300 (step annotate-test): rerun with --bpe 4000 to go "
                       "on with it, or give another --out (or remove {out}) for the new settings"),
    (["--max-tokens", "1000"], "{out} was made with --max-tokens 1536, now 1000 (step train-transformer-seed1): rerun "
                               "with --max-tokens 1536 to go on with it, or give another --out (or remove {out}) for "
                               "the new settings"),
    # the rerun without --gold-parses into a gold-parses folder kept its CoNLL-U annotations (then a traceback)
    ([], "{out} was made with --gold-parses, now without (step annotate-test): rerun with --gold-parses to go on "
         "with it, or give another --out (or remove {out}) for the new settings"),
])
def test_a_rerun_with_other_settings_stops_naming_the_option(tmp_path, capsys, argv, message):
    out = used_out(tmp_path)
    before = snapshot(tmp_path)
    extra = ["--gold-parses"] if argv else []
    code, err = run(capsys, ["--out", out, "--seeds", "1", "--systems", "transformer", "--analyses", "",
                             *extra, *argv])
    assert (code, err) == (2, [f"{PROG}: error: " + message.format(out=out)])
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("argv, message", [
    (["--max-update", "0"], "--max-update must be at least 1 (fairseq-train reads 0 as no limit), got 0"),
    (["--max-tokens", "0"], "--max-tokens must be at least 1, got 0"),
    (["--train", "-5"], "--train must be at least 1, got -5"),
    (["--seeds", "1,1"], "--seeds 1,1: seed 1 is given twice (one training would count as two seeds)"),
    (["--seeds", "1,-2"], "--seeds 1,-2: seeds are non-negative integers"),
    # issue 56.7: "invalid literal for int() with base 10: 'x'", no option named
    (["--seeds", "x"], "--seeds x: give a count N (seeds 1..N) or a list of seeds, integers separated by commas or "
                       "spaces"),
    (["--seeds", "1;2"], "--seeds 1;2: give a count N (seeds 1..N) or a list of seeds"),
])
def test_options_fairseq_or_the_tables_would_misread_are_refused(tmp_path, capsys, argv, message):
    out = used_out(tmp_path)
    before = snapshot(tmp_path)
    code, err = run(capsys, ["--out", out, "--gold-parses", *argv])
    assert code == 2 and len(err) == 1 and err[0].startswith(f"{PROG}: error: {message}")
    assert snapshot(tmp_path) == before


def test_seeds_separated_by_spaces_as_the_recipes_seeds():
    """Issue 56.7: ``--seeds "1 2"`` (the recipes' SEEDS="1 2") was an int() error naming no option."""
    assert cli.parse_seeds("1 2") == cli.parse_seeds("1,2") == [1, 2]
    assert cli.parse_seeds(" 3 ") == [1, 2, 3] and cli.parse_seeds("5,") == [5] and cli.parse_seeds("4, 7") == [4, 7]


def test_a_marker_cut_short_is_done_again_with_a_warning(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / ".done-train-transformer-seed1").write_text('{"seconds": 12.5, "upd')
    (out / ".done-corpus").write_text(json.dumps({"settings": CORPUS}))
    w = Workdir(cli.get_parser().parse_args(["--out", str(out)]))
    capsys.readouterr()
    assert not w.done("train-transformer-seed1") and w.done("corpus")
    assert capsys.readouterr().out.splitlines() == [
        f"warning: {out}/.done-train-transformer-seed1 is not valid JSON (Unterminated string starting at: line 1 "
        f"column 19 (char 18)): a write cut short? doing its step again"]
    w.mark("x", seconds=1.0)
    assert json.loads((out / ".done-x").read_text()) == {"seconds": 1.0}
    assert sorted(os.listdir(out)) == [".done-corpus", ".done-train-transformer-seed1", ".done-x"]  # no temporary file
