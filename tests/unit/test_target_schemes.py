"""The contract of a target-side scheme (syntax_nmt/targets/), read from the registry: every registered scheme, the
built-in ones and any added since (tests/integration/test_a_new_target_scheme_file.py runs this file on a copy of
the package with a toy scheme in one more file), is in the table of systems with the options it declares, tells the
recipes what they need through the shell interface, and writes its own data when it has some (issue 47.3)."""

import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support.annotate import write as write_lines
from syntax_nmt import systems as S
from syntax_nmt.annotate.target_tags import strip, tag_token
from syntax_nmt.data.streams import TAG_STREAMS
from syntax_nmt.evaluation.syntax_accuracy import factor_accuracy
from syntax_nmt.targets import registered_schemes
from syntax_nmt.targets.__main__ import main, own_data_schemes, write_data
from syntax_nmt.targets import base as targets_base
from syntax_nmt.targets.base import WORD_STREAMS, TargetScheme

SCHEMES = list(registered_schemes())
CRITERION = "label_smoothed_cross_entropy_with_syntax"
#: a tiny annotated split (syntax-nmt-annotate's outputs, the target annotated too): target subwords, their tags
#: and positions (B/M/E/O), and the source
SPLIT = {"de": ["die Kat@@ ze schläft .", "es reg@@ net"], "tgt.de": ["die Kat@@ ze schläft .", "es reg@@ net"],
         "tgt.pos": ["DET NOUN NOUN VERB PUNCT", "PRON VERB VERB"], "tgt.subword": ["O B E O O", "O B E"],
         "en": ["the cat sleeps .", "it rains"]}


def _shell(name: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert S._cli(["shell", name]) == 0
    values = {}
    for line in out.getvalue().splitlines():
        key, value = line.split("=", 1)
        values[key] = shlex.split(value[1:-1]) if value.startswith("(") else " ".join(shlex.split(value))
    return values


#: the recipes' shell library (the real checkout's, also when this file runs on a copy of the package)
SYSTEMS_SH = Path(__file__).resolve().parents[2] / "examples" / "common" / "systems.sh"
#: two translations and what syntax-nmt-annotate writes for each of their words with the rule-based parser of
#: tests/support/annotate.py (fixture spacy_model): the truth of every stream with a tag per word
HYPS = ["the cat sat", "We ran quickly ."]
TRUTH = {"pos": ["DET NOUN VERB", "PRON VERB ADV PUNCT"], "case": ["L L L", "C L L L"],
         "dep": ["det dep root", "dep root dep punct"]}


def test_the_built_in_schemes_come_first():
    assert SCHEMES[:2] == ["factors", "tags"]


@pytest.mark.parametrize("name", SCHEMES)
def test_it_names_its_target_streams_and_how_they_are_scored(name):
    """What a scheme declares of the target's streams is what the binarizer, the task and the scoring take."""
    cls = registered_schemes()[name]
    assert set(cls.target_streams) <= set(TAG_STREAMS) and len(set(cls.target_streams)) == len(cls.target_streams)
    assert set(cls.scored_streams) <= set(WORD_STREAMS), "a stream scored against a parse has a tag per word"
    if "--target-factors" in cls.train_args:  # the factors it trains are streams it reads
        factors = cls.train_args[list(cls.train_args).index("--target-factors") + 1].split(",")
        assert set(factors) <= set(cls.target_streams)
    if "--strip-target-tags" in cls.evaluate_args and cls.scored_streams:  # the tag before each word: one stream's
        assert len(cls.scored_streams) == 1 and cls.scored_streams[0] in cls.target_streams


@pytest.mark.parametrize("name", [n for n in SCHEMES if registered_schemes()[n].scored_streams])
def test_evaluate_factors_scores_the_streams_it_declares(name, tmp_path, spacy_model):
    """``syntax-nmt-evaluate factors --target-scheme NAME`` scores each stream the scheme scores (and only those),
    every word's predicted tag against what the annotator writes for the parser's parse of the translation; one
    tag is wrong in each stream ("ran": X)."""
    scheme = registered_schemes()[name]()
    predicted = {s: [t.split() for t in TRUTH[s]] for s in WORD_STREAMS}
    for tags in predicted.values():
        tags[1][1] = "X"
    strip_tags = "--strip-target-tags" in scheme.evaluate_args
    if strip_tags:
        (stream,) = scheme.scored_streams
        lines = [f"H-{i}\t-1.0\t" + " ".join(f"{tag_token(t)} {w}" for t, w in zip(predicted[stream][i], h.split()))
                 for i, h in enumerate(HYPS)]
    else:  # F- lines of every stream with a tag per word, and one without (B/M/E/O)
        lines = [f"F-{i}\t{s}\t{' '.join(tags[i])}" for i in range(2) for s, tags in predicted.items()]
        lines += [f"F-{i}\tsubword\t{' '.join('O' for _ in h.split())}" for i, h in enumerate(HYPS)]
        lines += [f"H-{i}\t-1.0\t{h}" for i, h in enumerate(HYPS)]
    gen = write_lines(tmp_path / "gen.out", lines)
    result = factor_accuracy(gen, spacy_model, strip_target_tags=strip_tags, scheme=name)
    assert result == {s: {"accuracy": 100.0 * 6 / 7, "words": 7, "correct": 6} for s in scheme.scored_streams}


@pytest.mark.parametrize("name", SCHEMES)
def test_the_recipes_binarize_the_target_streams_its_systems_read(name, tmp_path, systems_cache):
    """The recipes' ``target_streams DIR SYSTEM...`` (examples/common/systems.sh, read from SYSTEMS_CACHE): what the
    scheme declares of each of its systems, none for one on its scheme's own data (made from the annotation), and
    the streams the data directory holds already (a binarization again keeps them)."""
    scheme = registered_schemes()[name]()

    def bash(code, *args):
        proc = subprocess.run(["bash", "-c", f'source "{SYSTEMS_SH}"; {code}', "bash", *map(str, args)],
                              env=dict(os.environ, SYSTEMS_PYTHON="false", SYSTEMS_CACHE=str(systems_cache)),
                              capture_output=True, text=True)
        assert proc.returncode in (0, 1) and not proc.stderr, proc.stderr
        return proc.returncode, proc.stdout.strip()

    own = "" if scheme.data_suffix else ",".join(scheme.target_streams)
    for system, _, _ in registered_schemes()[name].systems:
        assert bash('target_streams "$@"', tmp_path, system) == (0, own)
        assert bash('target_streams "$@"', tmp_path, "transformer", system, "lisa", system) == (0, own)
    assert bash('lacks_streams "$@"', tmp_path, own)[0] == (0 if own else 1)
    (tmp_path / "dict.tgt.dep.txt").write_text("")  # binarized before
    assert bash('target_streams "$@"', tmp_path, *(s for s, _, _ in registered_schemes()[name].systems)) == \
        (0, ",".join(dict.fromkeys([*filter(None, own.split(",")), "dep"])))
    assert bash('lacks_streams "$@"', tmp_path, "dep")[0] == 1


def test_the_target_comparison_reads_the_target_streams_of_the_built_in_schemes(tmp_path, systems_cache):
    """The EN->FR recipe's comparison binarizes the target's POS tags beside its data (target factors), and no
    dependency label any more (no system of it reads one; issue 57.2)."""
    proc = subprocess.run(["bash", "-c", f'source "{SYSTEMS_SH}"; target_streams "$@"', "bash", str(tmp_path),
                           "transformer", "factors", "interleaved", "lisa", "lisa+factors"],
                          env=dict(os.environ, SYSTEMS_PYTHON="false", SYSTEMS_CACHE=str(systems_cache)),
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "pos\n", "")


@pytest.mark.parametrize("name", SCHEMES)
def test_its_systems_are_in_the_table_with_what_it_declares(name):
    cls = registered_schemes()[name]
    scheme = cls()
    assert cls.name == name and cls.systems, f"target scheme {name!r} lists no system"
    assert scheme.data_suffix or scheme.needs_syntax_model, "a scheme with neither data nor a model changes nothing"
    table = S.systems()
    for system_name, methods, note in cls.systems:
        s = table[system_name]
        assert s.target == name and not s.default and s.methods == tuple(methods) and s.note == note
        assert s.stock == (not methods and not scheme.needs_syntax_model)
        assert s.task == ("syntax_translation" if not s.stock else "translation")
        args = s.args()
        k = len(scheme.train_args)
        if s.stock:
            assert args == [] and not k
        else:
            assert any(args[i:i + k] == list(scheme.train_args) for i in range(len(args) - k + 1))
            criterion = args[args.index("--criterion") + 1] if "--criterion" in args else None
            assert (criterion == CRITERION) == bool(scheme.syntax_criterion or s.criterion_args)
        shell = _shell(system_name)
        assert shell["SYSTEM_TARGET"] == name and shell["SYSTEM_DATA"] == scheme.data_suffix
        assert shell["SYSTEM_EVALUATE_ARGS"] == list(scheme.evaluate_args)
        assert shell["SYSTEM_TARGET_STREAMS"] == ",".join(scheme.target_streams)
        assert shell["SYSTEM_TAGS"] == str(int(bool(scheme.scored_streams)))
        assert shell["SYSTEM_STOCK"] == str(int(s.stock))


@pytest.mark.parametrize("name", [n for n in SCHEMES if registered_schemes()[n].data_suffix])
def test_its_own_data_is_written_from_the_annotation(name, tmp_path):
    ann = tmp_path / "annotated" / "bpe10"
    ann.mkdir(parents=True)
    for split in ("train", "valid"):
        for ext, lines in SPLIT.items():
            (ann / f"{split}.{ext}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    scheme = registered_schemes()[name]()
    written = write_data(str(ann), ["train", "valid"], "en", "de")
    out = tmp_path / "annotated" / f"bpe10-{scheme.data_suffix}"
    assert str(out) in written and sorted(os.listdir(out)) == ["train.de", "train.en", "valid.de", "valid.en"]
    assert (out / "valid.en").read_text(encoding="utf-8").splitlines() == SPLIT["en"]
    target = (out / "valid.de").read_text(encoding="utf-8").splitlines()
    assert len(target) == len(SPLIT["de"]) and target != SPLIT["de"]
    if "--strip-target-tags" in scheme.evaluate_args:  # what scoring reads of a hypothesis in the scheme's form
        assert [strip(line) for line in target] == SPLIT["de"]


def test_the_command_line_lists_the_own_data_schemes_and_writes_nothing_for_none(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "syntax_nmt.targets", "data-suffixes"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stdout.split() == [s.data_suffix for s in own_data_schemes()]
    assert "tagged" in proc.stdout.split()
    bad = subprocess.run([sys.executable, "-m", "syntax_nmt.targets", "write-data", "--annotated",
                          str(tmp_path / "none"), "--splits", "train", "--src-lang", "en", "--tgt-lang", "de"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "none/train.de" in bad.stderr
    assert os.listdir(tmp_path) == []  # no directory made for nothing


def test_evaluate_factors_takes_the_schemes_streams_and_truth(tmp_path, spacy_model, monkeypatch, capsys):
    """``--target-scheme`` picks the streams scored (the others' F- lines ignored) and the truth of each word, the
    scheme's own where it computes one; interleaved tags are scored as its one stream; ``--case`` is the annotator's
    case scheme (issue 57.2)."""
    from syntax_nmt.evaluation.evaluate import cli_main

    class CaseOnly(TargetScheme):
        name = "case-only"
        scored_streams = ("case",)

    class Shouting(TargetScheme):
        """Its truth: every word in capitals (``C``), whatever the parse."""
        name = "shouting"
        scored_streams = ("case",)

        def truth(self, stream, sentence, pos_tagset="upos", case="binary"):
            return ["C"] * len(sentence.words)

    class Two(TargetScheme):
        name = "two"
        scored_streams = ("pos", "case")

    for cls in (CaseOnly, Shouting, Two):
        monkeypatch.setitem(targets_base.TARGET_SCHEMES, cls.name, cls)
    case = ["L L L", "C L C L"]  # one wrong: "quickly"
    lines = [f"F-{i}\tpos\t{TRUTH['pos'][i]}" for i in range(2)] + [f"F-{i}\tcase\t{case[i]}" for i in range(2)]
    gen = write_lines(tmp_path / "gen.out", lines + [f"H-{i}\t-1.0\t{h}" for i, h in enumerate(HYPS)])
    assert factor_accuracy(gen, spacy_model, scheme="case-only") == {
        "case": {"accuracy": 100.0 * 6 / 7, "words": 7, "correct": 6}}
    assert factor_accuracy(gen, spacy_model, scheme="shouting") == {
        "case": {"accuracy": 100.0 * 2 / 7, "words": 7, "correct": 2}}
    assert factor_accuracy(gen, spacy_model) == {"pos": {"accuracy": 100.0, "words": 7, "correct": 7},
                                                 "case": {"accuracy": 100.0 * 6 / 7, "words": 7, "correct": 6}}
    # the case classes of --case rich ("We": Cap, the others lower, "." other)
    rich = ["lower lower lower", "Cap lower lower other"]
    gen_rich = write_lines(tmp_path / "rich.out", [f"F-{i}\tcase\t{rich[i]}" for i in range(2)]
                           + [f"H-{i}\t-1.0\t{h}" for i, h in enumerate(HYPS)])
    out = tmp_path / "rich.json"
    cli_main(["factors", "--gen", gen_rich, "--parser", spacy_model, "--target-scheme", "case-only", "--case", "rich",
              "--output", str(out)])
    assert json.loads(out.read_text()) == {"case": {"accuracy": 100.0, "words": 7, "correct": 7}}
    assert factor_accuracy(gen_rich, spacy_model, scheme="case-only")["case"]["correct"] == 0  # binary: C / L
    # interleaved tags, scored as the scheme's one stream
    tagged = write_lines(tmp_path / "tagged.out", [
        f"H-{i}\t-1.0\t" + " ".join(f"{tag_token(t)} {w}" for t, w in zip(case[i].split(), h.split()))
        for i, h in enumerate(HYPS)])
    assert factor_accuracy(tagged, spacy_model, strip_target_tags=True, scheme="case-only") == {
        "case": {"accuracy": 100.0 * 6 / 7, "words": 7, "correct": 6}}
    with pytest.raises(ValueError) as e:
        factor_accuracy(tagged, spacy_model, strip_target_tags=True, scheme="two")
    assert str(e.value) == "target scheme 'two' scores 2 streams (pos, case): interleaved tags (--strip-target-tags) " \
                           "are one"
    only_pos = write_lines(tmp_path / "pos.out", lines[:2] + [f"H-{i}\t-1.0\t{h}" for i, h in enumerate(HYPS)])
    with pytest.raises(ValueError, match=r"pos.out: no target factor that target scheme 'case-only' scores \(case\): "
                                         r"no such F- line\."):
        factor_accuracy(only_pos, spacy_model, scheme="case-only")
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli_main(["factors", "--gen", gen, "--parser", spacy_model, "--target-scheme", "nope"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("syntax-nmt-evaluate: error: unknown target scheme 'nope'; this "
                                                "syntax-nmt has: factors, tags") and len(err.splitlines()) == 1


def test_the_same_language_on_both_sides_is_refused_before_anything_is_written(tmp_path, capsys):
    """Issue 56.5: ``--src-lang de --tgt-lang de`` wrote the tagged target SPLIT.de, then copied the untagged source
    SPLIT.de over it: the scheme's data held the plain text, silently."""
    from syntax_nmt.targets.__main__ import main

    ann = tmp_path / "annotated" / "bpe10"
    ann.mkdir(parents=True)
    for ext, lines in SPLIT.items():
        (ann / f"train.{ext}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    before = sorted(os.listdir(tmp_path / "annotated"))
    with pytest.raises(SystemExit) as e:
        main(["write-data", "--annotated", str(ann), "--splits", "train", "--src-lang", "de", "--tgt-lang", "de"])
    assert e.value.code == 2
    assert capsys.readouterr().err == ("python -m syntax_nmt.targets: error: --src-lang and --tgt-lang are both 'de': "
                                       "the copy of the source would replace the tagged target (SPLIT.de); give the "
                                       "pair's two languages\n")
    assert sorted(os.listdir(tmp_path / "annotated")) == before


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


def _annotated(ann, splits, lines=SPLIT):
    ann.mkdir(parents=True, exist_ok=True)
    for split in splits:
        for ext, values in lines.items():
            (ann / f"{split}.{ext}").write_text("".join(v + "\n" for v in values), encoding="utf-8")


@pytest.mark.parametrize("how", ["a missing split", "an invalid split", "an output that cannot be written"])
def test_a_failed_rerun_of_write_data_keeps_the_earlier_output(how, tmp_path):
    """Issue 62: write-data ran once; a rerun on changed annotations fails part-way (the split after train, valid2,
    is missing, invalid, or its output is a folder): every file of the first run is byte-identical, and nothing else is
    left behind (no staging folder, no file of the rerun)."""
    ann = tmp_path / "annotated" / "bpe10"
    _annotated(ann, ["train", "valid"])
    assert main(["write-data", "--annotated", str(ann), "--splits", "train valid", "--src-lang", "en",
                 "--tgt-lang", "de"]) == 0
    out = tmp_path / "annotated" / "bpe10-tagged"
    assert sorted(os.listdir(out)) == ["train.de", "train.en", "valid.de", "valid.en"]
    # the rerun's train would be another: its first sentence changed
    _annotated(ann, ["train"], {**SPLIT, "en": ["a dog sleeps .", "it rains"],
                                "tgt.pos": ["PRON NOUN NOUN VERB PUNCT", "PRON VERB VERB"]})
    if how == "an invalid split":
        _annotated(ann, ["valid2"], {**SPLIT, "tgt.pos": ["DET NOUN"]})  # fewer tags than words
    elif how == "an output that cannot be written":
        _annotated(ann, ["valid2"])
        (out / "valid2.de").mkdir()  # (after train.* in the order the files are moved)
    before = _tree(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["write-data", "--annotated", str(ann), "--splits", "train valid2", "--src-lang", "en",
              "--tgt-lang", "de"])
    assert e.value.code == 2
    assert _tree(tmp_path) == before
