"""Every console script's documented misuse (issue 46.7): a file missing, empty, not UTF-8, or an output that is one
of the inputs. Each ends in ONE line ``PROG: error: ...`` naming the file, line or option, exit status 2, no
traceback, and leaves the inputs as they were (and writes no output). A new console script gets its rows here.

In-process ``cli_main([...])`` calls (seconds for the whole walk); the recipe scripts' Python modules likewise.
"""

import os
from types import SimpleNamespace

import pytest
from support.files import snapshot

BAD_UTF8 = b"The cat sat .\nA dog \xff runs .\n"


@pytest.fixture
def files(tmp_path):
    """Inputs of every kind: text, an empty file, invalid UTF-8, target-tag streams, scored systems."""
    def write(name, text):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return str(path)

    f = SimpleNamespace(root=tmp_path, missing=str(tmp_path / "missing.txt"))
    f.text = write("text.en", "The cat sat .\nA dog runs .\n")
    f.empty = write("empty.en", "")
    f.bad = write("bad.en", BAD_UTF8)
    f.ref = write("ref.de", "Die Katze saß .\nEin Hund läuft .\n")
    f.ref_tok = write("ref.tok", "Die Katze saß .\nEin Hund läuft .\n")
    f.gen = write("gen.out", "H-0\t-1\tDie Katze saß .\nH-1\t-1\tEin Hund läuft .\n")
    f.bad_gen = write("bad.gen", b"H-0\t-1\tDie Katze\nH-1\t-1\tEin \xff Hund\n")
    for ext, text in {"fr": "la fem@@ me\n", "tgt.fr": "la fem@@ me\n", "tgt.pos": "DET NOUN NOUN\n",
                      "tgt.subword": "O B E\n"}.items():
        write(f"ann/P.{ext}", text)
    f.prefix = str(tmp_path / "ann" / "P")
    f.codes = write("bpe.codes", "#version: 0.2\nc a\n")
    return f


def _evaluate(argv):
    from syntax_nmt.evaluation.evaluate import cli_main

    return cli_main(argv)


def _target_tags(argv):
    from syntax_nmt.annotate.target_tags import cli_main

    return cli_main(argv)


def _annotate(argv):
    from syntax_nmt.annotate.cli import cli_main

    return cli_main(argv)


def _binarize(argv):
    from syntax_nmt.data.binarize import cli_main

    return cli_main(argv)


def _train_spacy(argv):
    from syntax_nmt.annotate.spacy_train import cli_main

    return cli_main(argv)


def _synth(argv):
    from syntax_nmt.synthetic.cli import cli_main

    return cli_main(argv)


def _analyze(argv):
    from syntax_nmt.analyze.cli import cli_main

    return cli_main(argv)


def _demo(argv):
    from syntax_nmt.demo.cli import cli_main

    return cli_main(argv)


def _report(argv):
    from syntax_nmt.recipes.report import main

    return main(argv)


def _markers(argv):
    from syntax_nmt.recipes.markers import main

    return main(argv)


#: (id, prog, entry point, argv with {placeholders} of the ``files`` fixture, what the one line names)
ROWS = [
    # syntax-nmt-evaluate
    ("evaluate-score-missing", "syntax-nmt-evaluate", _evaluate,
     ["score", "--gen", "{missing}", "--ref-raw", "{ref}", "--ref-tok", "{ref}", "--out-prefix", "{root}/o"],
     "{missing}"),
    ("evaluate-score-empty", "syntax-nmt-evaluate", _evaluate,
     ["score", "--gen", "{empty}", "--ref-raw", "{ref}", "--ref-tok", "{ref}", "--out-prefix", "{root}/o"],
     "{empty}"),
    ("evaluate-score-not-utf8", "syntax-nmt-evaluate", _evaluate,
     ["score", "--gen", "{bad_gen}", "--ref-raw", "{ref}", "--ref-tok", "{ref}", "--out-prefix", "{root}/o"],
     "{bad_gen}:2"),
    ("evaluate-score-output-is-input", "syntax-nmt-evaluate", _evaluate,
     ["score", "--gen", "{gen}", "--ref-raw", "{ref}", "--ref-tok", "{ref_tok}", "--out-prefix", "{root}/ref"],
     "--out-prefix {root}/ref writes {ref_tok}, which is the input {ref_tok}"),
    ("evaluate-significance-missing", "syntax-nmt-evaluate", _evaluate,
     ["significance", "--ref-raw", "{ref}", "--baseline", "{missing}", "{ref}"], "{missing}"),
    ("evaluate-significance-empty-ref", "syntax-nmt-evaluate", _evaluate,
     ["significance", "--ref-raw", "{empty}", "--baseline", "{empty}", "{empty}"], "{empty}"),
    ("evaluate-significance-not-utf8", "syntax-nmt-evaluate", _evaluate,
     ["significance", "--ref-raw", "{ref}", "--baseline", "{ref}", "{bad}"], "{bad}:2"),
    ("evaluate-significance-output-is-input", "syntax-nmt-evaluate", _evaluate,
     ["significance", "--ref-raw", "{ref}", "--baseline", "{ref}", "{text}", "--output", "{text}"],
     "--output {text}"),
    ("evaluate-factors-missing", "syntax-nmt-evaluate", _evaluate,
     ["factors", "--gen", "{missing}", "--parser", "x"], "{missing}"),
    ("evaluate-factors-empty", "syntax-nmt-evaluate", _evaluate,
     ["factors", "--gen", "{empty}", "--parser", "x"], "{empty}"),
    ("evaluate-factors-output-is-input", "syntax-nmt-evaluate", _evaluate,
     ["factors", "--gen", "{gen}", "--parser", "x", "--output", "{gen}"], "--output {gen}"),
    ("evaluate-summary-missing", "syntax-nmt-evaluate", _evaluate,
     ["summary", "--ref-raw", "{ref}", "{missing}"], "{missing}.json"),
    # syntax-nmt-target-tags
    ("target-tags-interleave-missing", "syntax-nmt-target-tags", _target_tags,
     ["interleave", "--prefix", "{root}/none", "--tgt-lang", "fr", "-o", "{root}/out.fr"], "{root}/none."),
    ("target-tags-interleave-output-is-input", "syntax-nmt-target-tags", _target_tags,
     ["interleave", "--prefix", "{prefix}", "--tgt-lang", "fr", "-o", "{prefix}.tgt.subword"],
     "--output {prefix}.tgt.subword"),
    ("target-tags-strip-missing", "syntax-nmt-target-tags", _target_tags, ["strip", "{missing}"], "{missing}"),
    ("target-tags-strip-not-utf8", "syntax-nmt-target-tags", _target_tags, ["strip", "{bad}"], "{bad}:2"),
    # syntax-nmt-annotate
    ("annotate-missing", "syntax-nmt-annotate", _annotate,
     ["--source", "{missing}", "--src-lang", "en", "--backend", "conllu", "--conllu", "{missing}", "-o", "{root}/a",
      "--subword", "none", "--quiet"], "{missing}"),
    ("annotate-not-utf8", "syntax-nmt-annotate", _annotate,
     ["--source", "{bad}", "--src-lang", "en", "--pretokenized", "--spacy-model", "{spacy}", "-o", "{root}/a",
      "--subword", "none", "--quiet"], "{bad}:2"),
    ("annotate-output-is-input", "syntax-nmt-annotate", _annotate,
     ["--source", "{text}", "--src-lang", "en", "--pretokenized", "--spacy-model", "{spacy}", "-o", "{root}/text",
      "--subword", "none", "--quiet"], "{text}"),
    # syntax-nmt-binarize
    ("binarize-missing", "syntax-nmt-binarize", _binarize,
     ["--source-lang", "en", "--target-lang", "de", "--trainpref", "{root}/none", "--destdir", "{root}/bin"],
     "{root}/none"),
    # syntax-nmt-train-spacy
    ("train-spacy-missing", "syntax-nmt-train-spacy", _train_spacy,
     ["--train", "{missing}", "--dev", "{missing}", "--output", "{root}/model"], "{missing}"),
    ("train-spacy-empty", "syntax-nmt-train-spacy", _train_spacy,
     ["--train", "{empty}", "--dev", "{empty}", "--output", "{root}/model"], "{empty}"),
    ("train-spacy-not-utf8", "syntax-nmt-train-spacy", _train_spacy,
     ["--train", "{bad}", "--dev", "{bad}", "--output", "{root}/model"], "{bad}"),
    # syntax-nmt-synth
    ("synth-output-is-a-file", "syntax-nmt-synth", _synth,
     ["--out", "{text}/sub", "--train", "2", "--valid", "1", "--test", "1", "--quiet"], "{text}"),
    # syntax-nmt-analyze
    ("analyze-missing-data", "syntax-nmt-analyze", _analyze,
     ["length", "--data", "{root}/none", "--ref-raw", "{ref}", "--out", "{root}/an", "--system", "a={gen}"],
     "{root}/none"),
    # python -m syntax_nmt.demo
    ("demo-max-update-0", "python -m syntax_nmt.demo", _demo, ["--out", "{root}/demo", "--max-update", "0"],
     "--max-update"),
    ("demo-repeated-seeds", "python -m syntax_nmt.demo", _demo, ["--out", "{root}/demo", "--seeds", "1,1"],
     "--seeds 1,1"),
    # the recipes' Python steps
    ("report-missing", "python -m syntax_nmt.recipes.report", _report,
     ["--eval", "{root}/none", "--systems", "a b", "--seeds", "1", "--splits", "valid", "--refs", "{root}"],
     "{root}/none/valid/a.seed1.json"),
    ("report-best-on-valid-without-splits", "python -m syntax_nmt.recipes.report", _report,
     ["--eval", "{root}/none", "--best-on-valid", "--splits", ""], "--best-on-valid needs --splits"),
    ("markers-annotated-not-json", "python -m syntax_nmt.recipes.markers", _markers,
     ["todo", "--after", "{missing}", "--eval", "{root}", "--name", "x", "--splits", "valid", "--setting", "BEAM"],
     "--setting"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_misuse_is_one_line_exit_2_and_changes_nothing(row, files, capsys, spacy_model):
    _, prog, entry, argv, named = row
    fmt = dict(vars(files), spacy=spacy_model)
    argv = [a.format(**fmt) for a in argv]
    before = snapshot(files.root)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        entry(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if " | INFO | " not in line
           and " | WARNING | " not in line]
    assert e.value.code == 2, err
    assert len(err) == 1 and err[0].startswith(f"{prog}: error: "), err
    assert named.format(**fmt) in err[0], err
    assert snapshot(files.root) == before
