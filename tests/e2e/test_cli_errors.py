"""Every console script reports a user error as one line ``PROG: error: ...``, exit status 2."""

import pytest

from syntax_nmt.cli_errors import one_line


def _run(capsys, cli_main, argv):
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if " | INFO | " not in line]
    return e.value.code, err


def test_one_line():
    assert one_line("a\n  b: c\n\nd  ") == "a; b: c; d"
    assert one_line("single") == "single"


@pytest.mark.parametrize("script", ["evaluate", "train-spacy", "synth"])
def test_user_errors_are_one_line(tmp_path, capsys, script):
    if script == "evaluate":
        from syntax_nmt.evaluation.evaluate import cli_main

        argv = ["score", "--gen", str(tmp_path / "missing.out"), "--ref-raw", "r", "--ref-tok", "t",
                "--out-prefix", str(tmp_path / "x")]
        expected = "missing.out"
    elif script == "train-spacy":
        from syntax_nmt.annotate.spacy_train import cli_main

        argv = ["--train", str(tmp_path / "missing.conllu"), "--dev", str(tmp_path / "missing.conllu"),
                "--output", str(tmp_path / "model")]
        expected = "missing.conllu"
    else:
        from syntax_nmt.synthetic.cli import cli_main

        (tmp_path / "file").write_text("x")
        argv = ["--out", str(tmp_path / "file" / "sub"), "--train", "2", "--valid", "1", "--test", "1", "--quiet"]
        expected = "file/sub"
    code, err = _run(capsys, cli_main, argv)
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith(f"syntax-nmt-{script}: error: ") and expected in err[0], err
