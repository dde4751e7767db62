"""The recipes' multi-seed report (syntax_nmt/recipes/report.py), in-process on a tiny hand-written evaluation
directory: two systems (transformer, sgnet), two seeds, two splits of 4 and 3 German sentences, scored by
:func:`syntax_nmt.evaluation.scoring.score_lines` as the recipe's evaluate stage scores them, with hand-made
training records. What is checked, with exact values: the error texts of the files it reads, where a training's
record is found, the trainings' records lines, pack/unpack (file names, the same gzip bytes, the scores again),
results.json and every line of results.md, the target tags' table, the best system on valid, the noise table, and
the command line's modes and one-line user errors."""

import gzip
import json
import os
import re
import shutil
import statistics

import pytest
import sacrebleu

from syntax_nmt.evaluation import compare
from syntax_nmt.evaluation import significance as sig
from syntax_nmt.evaluation.scoring import score_lines
from syntax_nmt.recipes import report as R
from syntax_nmt.utils import markdown_table

SYSTEMS, SEEDS, SPLITS = ["transformer", "sgnet"], [1, 2], ["valid", "test"]
METRICS = ("sacrebleu", "chrf", "lc_tokenized_bleu", "tokenized_bleu")
REFS = {"valid": ["Ein Mann fährt Fahrrad auf der Straße.", "Zwei Kinder spielen im Park.",
                  "Eine Frau liest ein Buch, während sie wartet.", "Der Hund läuft über die grüne Wiese."],
        "test": ["Ein Junge springt ins Wasser.", "Die Leute sitzen am Tisch und essen.",
                 "Ein Mädchen trägt einen roten Hut."]}
#: (system, seed, split) -> detokenized translation; sgnet is the better on valid, transformer on test
HYPS = {
    ("transformer", 1, "valid"): ["ein Mann fährt auf der Straße.", "Zwei Kinder spielen im Garten.",
                                  "Eine Frau liest ein Buch.", "Der Hund läuft über die Wiese."],
    ("transformer", 2, "valid"): ["Ein Mann fährt Fahrrad auf Straße.", "Kinder spielen im Park.",
                                  "Eine Frau liest, während sie wartet.", "Ein Hund läuft über die grüne Wiese."],
    ("sgnet", 1, "valid"): ["Ein Mann fährt Fahrrad auf der Straße.", "Zwei Kinder spielen im Park.",
                            "Eine Frau liest ein Buch.", "Der Hund läuft über die grüne Wiese."],
    ("sgnet", 2, "valid"): ["Ein Mann fährt Fahrrad auf der Straße.", "zwei Kinder spielen im Garten.",
                            "Eine Frau liest ein Buch, während sie wartet.", "Der Hund rennt über die grüne Wiese."],
    ("transformer", 1, "test"): ["Ein Junge springt ins Wasser.", "Die Leute sitzen am Tisch und essen.",
                                 "Ein Mädchen trägt einen Hut."],
    ("transformer", 2, "test"): ["Ein Junge springt in das Wasser.", "Die Leute sitzen am Tisch und essen.",
                                 "Ein Mädchen trägt einen roten Hut."],
    ("sgnet", 1, "test"): ["Ein Kind springt ins Wasser.", "Leute sitzen am Tisch.", "Ein Mädchen trägt einen Hut."],
    ("sgnet", 2, "test"): ["Ein Junge springt.", "Die Leute essen am Tisch.", "ein Mädchen trägt roten Hut."],
}
ENV = {"device": "cpu (Tiny CPU, avx2)", "threads": 2, "torch": "2.1.0", "fairseq": "0.12.2", "sacremoses": "0.1.1",
       "subword-nmt": "0.3.8", "spacy": "3.7.2", "parser": "spacy en_core_web_sm 3.7.1"}
#: (system, seed) -> its .done: sgnet seed 2 ran on another device, was resumed and has no CPU time
DONE = {("transformer", 1): {"wall_seconds": 600, "cpu_seconds": 1200, "resumed_from": [], "environment": ENV},
        ("transformer", 2): {"wall_seconds": 900, "cpu_seconds": 1500, "resumed_from": [], "environment": ENV},
        ("sgnet", 1): {"wall_seconds": 1200, "cpu_seconds": 2400, "resumed_from": [], "environment": ENV},
        ("sgnet", 2): {"wall_seconds": 1320, "resumed_from": [400], "environment": {**ENV, "device": "NVIDIA H100"}}}
#: split -> sgnet's tag accuracy per seed
FACTORS = {"valid": [91.5, 93.5], "test": [80.0, 84.0]}
SEED = 7  # the paired tests' resampling seed
PROG = "python -m syntax_nmt.recipes.report"


def tok(line):
    """The tokenized form of a line (the recipe's Moses tokenization, for these sentences)."""
    return re.sub(r"([.,])", r" \1", line)


def write_refs(refs, lang="de"):
    os.makedirs(refs, exist_ok=True)
    for sp, lines in REFS.items():
        with open(os.path.join(refs, f"{sp}.raw.{lang}"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        with open(os.path.join(refs, f"{sp}.{lang}"), "w", encoding="utf-8") as f:
            f.write("".join(tok(line) + "\n" for line in lines))


def score_all(eval_dir, refs, hyps=HYPS, rename=None):
    """Score ``hyps`` into ``eval_dir/SPLIT/SYSTEM.seedN.*`` (``rename``: system -> the name to score it as)."""
    for (n, s, sp), lines in hyps.items():
        os.makedirs(os.path.join(eval_dir, sp), exist_ok=True)
        score_lines([tok(line) for line in lines], lines, os.path.join(refs, f"{sp}.raw.de"),
                    os.path.join(refs, f"{sp}.de"), os.path.join(eval_dir, sp, f"{(rename or {}).get(n, n)}.seed{s}"))


def write_done(ckpt):
    for (n, s), record in DONE.items():
        os.makedirs(os.path.join(ckpt, n, f"seed{s}"))
        with open(os.path.join(ckpt, n, f"seed{s}", ".done"), "w") as f:
            json.dump(record, f)


def write_factors(eval_dir, system="sgnet", factors=FACTORS, stream="pos"):
    for sp, values in factors.items():
        for s, v in zip(SEEDS, values):
            with open(os.path.join(eval_dir, sp, f"{system}.seed{s}.factors.json"), "w") as f:
                json.dump({stream: {"accuracy": v}} if not isinstance(v, dict) else
                          {k: {"accuracy": x} for k, x in v.items()}, f)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(autouse=True)
def _ref_lang(monkeypatch):
    """main() sets the references' language for the process: every test starts, and leaves, with German."""
    monkeypatch.setitem(R.REF_LANG, "lang", "de")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The evaluation directory, references and checkpoints, and the report on them (title "Tiny", both tests,
    resampling seed 7)."""
    root = tmp_path_factory.mktemp("tiny")
    refs, ev, ckpt = str(root / "refs"), str(root / "eval"), str(root / "ckpt")
    write_refs(refs)
    score_all(ev, refs)
    write_factors(ev)
    write_done(ckpt)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SACREBLEU_SEED", str(SEED))
        md = R.report(ev, SYSTEMS, SEEDS, SPLITS, refs, ["bs", "ar"], ckpt, "Tiny")
    return {"root": root, "refs": refs, "eval": ev, "ckpt": ckpt, "md": md,
            "res": read_json(os.path.join(ev, "results.json"))}


@pytest.fixture
def reported(tiny, monkeypatch):
    """The report on the tiny directory made again inside the test (the same files, the same text): a test of what
    :func:`R.report` writes runs it itself, so that mutation testing, which maps each test to the functions it
    calls, runs that test against report()'s mutants (the module fixture calls it for the first test only)."""
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    md = R.report(tiny["eval"], SYSTEMS, SEEDS, SPLITS, tiny["refs"], ["bs", "ar"], tiny["ckpt"], "Tiny")
    return {**tiny, "md": md, "res": read_json(os.path.join(tiny["eval"], "results.json"))}


def copy_eval(tiny, dest):
    """A copy of the tiny evaluation directory (its translations and scores) to change."""
    shutil.copytree(tiny["eval"], dest, ignore=shutil.ignore_patterns("results.*", "*.png", "pooled"))
    return str(dest)


# --- the files the report reads -----------------------------------------------------------------------------


def test_read_json_names_the_file_and_what_to_do(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"a": [1, 2]}')
    bad.write_text('{"a": ')
    assert R._read_json(str(good), "never said") == {"a": [1, 2]}
    with pytest.raises(ValueError) as e:
        R._read_json(str(bad), "write it again")
    assert str(e.value) == f"{bad} is not valid JSON (Expecting value: line 1 column 7 (char 6)): write it again"
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_load_reads_a_score_and_names_a_missing_or_broken_one(tiny, tmp_path):
    assert R._load(tiny["eval"], "test", "sgnet", 2) == read_json(
        os.path.join(tiny["eval"], "test", "sgnet.seed2.json"))
    assert R._load(tiny["eval"], "test", "sgnet", 2)["name"] == "sgnet.seed2"
    with pytest.raises(FileNotFoundError) as e:
        R._load(tiny["eval"], "valid", "sgnet", 3)
    assert str(e.value) == (f"{tiny['eval']}/valid/sgnet.seed3.json is missing: translate and score sgnet seed 3 on "
                            f"valid first")
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "lisa.seed2.json").write_text("{")
    with pytest.raises(ValueError) as e:
        R._load(str(tmp_path), "test", "lisa", 2)
    assert str(e.value) == (f"{tmp_path}/test/lisa.seed2.json is not valid JSON (Expecting property name enclosed in "
                            f"double quotes: line 1 column 2 (char 1)): run the evaluate stage again (it scores lisa "
                            f"seed 2 on test again)")


def test_done_file_the_checkpoints_record_first_then_the_kept_copy(tmp_path):
    ckpt = tmp_path / "ckpt"
    done = ckpt / "sgnet" / "seed2" / ".done"
    kept = ckpt / "training" / "sgnet.seed2.json"
    assert R._done_file(None, "sgnet", 2) is None and R._done_file("", "sgnet", 2) is None
    assert R._done_file(str(ckpt), "sgnet", 2) is None
    kept.parent.mkdir(parents=True)
    kept.write_text(json.dumps({"wall_seconds": 5}))
    assert R._done_file(str(ckpt), "sgnet", 2) == str(kept)
    done.parent.mkdir(parents=True)
    done.write_text(json.dumps({"wall_seconds": 7, "cpu_seconds": 9}))
    assert R._done_file(str(ckpt), "sgnet", 2) == str(done)
    assert R._done_file(str(ckpt), "sgnet", 1) is None and R._done_file(str(ckpt), "lisa", 2) is None
    assert R._timing(str(ckpt), "sgnet", 2) == {"train_seconds": 7, "train_cpu_seconds": 9}
    assert R._record(str(ckpt), "sgnet", 2) == {"wall_seconds": 7, "cpu_seconds": 9}
    done.unlink()
    assert R._timing(str(ckpt), "sgnet", 2) == {"train_seconds": 5, "train_cpu_seconds": None}
    assert R._record(str(ckpt), "sgnet", 2) == {"wall_seconds": 5}
    assert R._timing(str(ckpt), "sgnet", 1) == {} and R._timing(None, "sgnet", 2) == {}
    assert R._record(str(ckpt), "sgnet", 1) is None and R._record(None, "sgnet", 2) is None


def test_run_records_lines_shared_and_differing_fields(tiny, tmp_path):
    shared = ("threads 2, torch 2.1.0, fairseq 0.12.2, sacremoses 0.1.1, subword-nmt 0.3.8, spacy 3.7.2, parser "
              "spacy en_core_web_sm 3.7.1")
    assert R.run_records_lines(tiny["ckpt"], SYSTEMS, SEEDS) == [
        "## The trainings' records", "", f"Shared by every training: {shared}.", "",
        "**The trainings of this table differ in what they ran with** (a figure may move with these, not only with "
        "the system):", "",
        "- device: cpu (Tiny CPU, avx2) (transformer seed 1, transformer seed 2, sgnet seed 1); NVIDIA H100 "
        "(sgnet seed 2)",
        "- resumed: no (transformer seed 1, transformer seed 2, sgnet seed 1); from update 400 (sgnet seed 2)", ""]
    assert R.run_records_lines(tiny["ckpt"], ["transformer"], SEEDS) == [
        "## The trainings' records", "", f"Shared by every training: device cpu (Tiny CPU, avx2), {shared}, "
        "resumed no.", ""]
    assert R.run_records_lines(tiny["ckpt"], ["sgnet"], [2, 3]) == [  # seed 3 has no record
        "## The trainings' records", "", "Shared by every training: device NVIDIA H100, "
        f"{shared}, resumed from update 400.", ""]
    (tmp_path / "a" / "seed1").mkdir(parents=True)
    (tmp_path / "a" / "seed1" / ".done").write_text(json.dumps({"environment": {k: "x" for k in ENV}}))
    (tmp_path / "a" / "seed2").mkdir(parents=True)
    (tmp_path / "a" / "seed2" / ".done").write_text(json.dumps({"environment": {k: "y" for k in ENV},
                                                                "resumed_from": []}))
    assert R.run_records_lines(str(tmp_path), ["a"], [1, 2])[2] == "Shared by every training: nothing."
    assert R.run_records_lines(str(tmp_path), ["b"], [1, 2]) == []
    assert R.run_records_lines(None, SYSTEMS, SEEDS) == []


# --- pack and unpack ----------------------------------------------------------------------------------------


def test_pack_keeps_each_translation_as_the_same_gzip_bytes(tiny, tmp_path):
    ev = copy_eval(tiny, tmp_path / "eval")
    kept = tmp_path / "kept"
    assert R.pack(ev, str(kept), SYSTEMS, SEEDS, SPLITS, tiny["ckpt"]) == 16
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()) == sorted(
        [f"{sp}/{n}.seed{s}.{form}.gz" for sp in SPLITS for n in SYSTEMS for s in SEEDS for form in ("tok", "detok")]
        + [f"{sp}/sgnet.seed{s}.factors.json" for sp in SPLITS for s in SEEDS]
        + [f"training/{n}.seed{s}.json" for n in SYSTEMS for s in SEEDS])
    for sp in SPLITS:
        for n in SYSTEMS:
            for s in SEEDS:
                for form in ("tok", "detok"):
                    with open(os.path.join(ev, sp, f"{n}.seed{s}.{form}"), "rb") as f:
                        data = f.read()
                    packed = (kept / sp / f"{n}.seed{s}.{form}.gz").read_bytes()
                    # the header: no flags (no file name), time stamp 0, level 9 (XFL 2), then gzip.compress's bytes
                    assert packed[:9] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02", (sp, n, s, form)
                    assert packed[10:] == gzip.compress(data, compresslevel=9, mtime=0)[10:], (sp, n, s, form)
                    assert gzip.decompress(packed).decode("utf-8").splitlines() == [
                        tok(h) if form == "tok" else h for h in HYPS[(n, s, sp)]]
        for s in SEEDS:
            assert (kept / sp / f"sgnet.seed{s}.factors.json").read_bytes() == \
                (tmp_path / "eval" / sp / f"sgnet.seed{s}.factors.json").read_bytes()
    for (n, s), record in DONE.items():
        assert (kept / "training" / f"{n}.seed{s}.json").read_text() == json.dumps(record, indent=1, sort_keys=True)
    again = tmp_path / "again"
    assert R.pack(ev, str(again), SYSTEMS[1:], SEEDS[:1], SPLITS[1:], suffix="-6400") == 2
    assert sorted(p.relative_to(again).as_posix() for p in again.rglob("*") if p.is_file()) == [
        "test/sgnet-6400.seed1.detok.gz", "test/sgnet-6400.seed1.factors.json", "test/sgnet-6400.seed1.tok.gz"]
    assert (again / "test" / "sgnet-6400.seed1.tok.gz").read_bytes() == \
        (kept / "test" / "sgnet.seed1.tok.gz").read_bytes()
    assert R.pack(ev, str(tmp_path / "times"), ["transformer"], [2], ["valid"], tiny["ckpt"], suffix="-b") == 2
    assert read_json(tmp_path / "times" / "training" / "transformer-b.seed2.json") == DONE[("transformer", 2)]


def test_pack_refuses_a_missing_translation(tiny, tmp_path):
    ev = copy_eval(tiny, tmp_path / "eval")
    os.unlink(os.path.join(ev, "test", "sgnet.seed2.detok"))
    with pytest.raises(FileNotFoundError) as e:
        R.pack(ev, str(tmp_path / "kept"), SYSTEMS, SEEDS, SPLITS)
    assert str(e.value) == f"{ev}/test/sgnet.seed2.detok is missing: translate and score sgnet seed 2 on test first"
    os.unlink(os.path.join(ev, "test", "sgnet.seed2.tok"))  # the tokenized form is looked for first
    with pytest.raises(FileNotFoundError) as e:
        R.pack(ev, str(tmp_path / "kept"), SYSTEMS, SEEDS, SPLITS)
    assert str(e.value).startswith(f"{ev}/test/sgnet.seed2.tok is missing")
    os.unlink(os.path.join(ev, "valid", "transformer.seed1.tok"))
    with pytest.raises(FileNotFoundError) as e:
        R.pack(ev, str(tmp_path / "kept"), SYSTEMS, SEEDS, SPLITS)
    assert str(e.value) == (f"{ev}/valid/transformer.seed1.tok is missing: translate and score transformer seed 1 "
                            f"on valid first")


def test_ref_path_takes_the_target_language(monkeypatch):
    assert R.ref_path("P", "test2016") == os.path.join("P", "test2016.de")
    assert R.ref_path("P", "test2016", raw=True) == os.path.join("P", "test2016.raw.de")
    monkeypatch.setitem(R.REF_LANG, "lang", "fr")
    assert R.ref_path("P", "valid", True) == os.path.join("P", "valid.raw.fr")
    assert R.ref_path("P", "valid") == os.path.join("P", "valid.fr")


def test_unpack_scores_the_kept_translations_again(tiny, tmp_path):
    kept = tmp_path / "kept"
    R.pack(tiny["eval"], str(kept), SYSTEMS, SEEDS, SPLITS)
    new = tmp_path / "new"
    assert R.unpack(str(kept), str(new), SYSTEMS, SEEDS, SPLITS, tiny["refs"]) is None
    for sp in SPLITS:
        for n in SYSTEMS:
            for s in SEEDS:
                old = os.path.join(tiny["eval"], sp, f"{n}.seed{s}")
                assert read_json(new / sp / f"{n}.seed{s}.json") == read_json(old + ".json")
                for form in ("tok", "detok"):
                    assert (new / sp / f"{n}.seed{s}.{form}").read_bytes() == open(f"{old}.{form}", "rb").read()
        assert sorted(p.name for p in (new / sp).glob("*.factors.json")) == ["sgnet.seed1.factors.json",
                                                                            "sgnet.seed2.factors.json"]
        for s, v in zip(SEEDS, FACTORS[sp]):
            assert read_json(new / sp / f"sgnet.seed{s}.factors.json") == {"pos": {"accuracy": v}}


def test_unpack_keeps_every_byte_of_odd_lines_and_scores_into_an_existing_directory(tiny, tmp_path):
    """A translation with a trailing space, a stray carriage return and a U+2028 inside its lines, and a line ending
    in X, comes back byte
    for byte (lines end at \\n only, as everywhere in the plugin), and unpacking again over a scored directory
    scores it again."""
    ev = copy_eval(tiny, tmp_path / "eval")
    odd = ["Ein Mann fährt Fahrrad auf der Straße. ", "Zwei Kinder\rspielen im Park.",
           "Eine Frau liest\u2028ein Buch.", "Der Hund von Malcolm X"]
    score_all(ev, tiny["refs"], {("odd", 1, "valid"): odd})
    kept, new = tmp_path / "kept", tmp_path / "new"
    R.pack(ev, str(kept), ["odd"], [1], ["valid"])
    for _ in range(2):
        R.unpack(str(kept), str(new), ["odd"], [1], ["valid"], tiny["refs"])
        for form in ("tok", "detok", "json"):
            assert (new / "valid" / f"odd.seed1.{form}").read_bytes() == open(
                os.path.join(ev, "valid", f"odd.seed1.{form}"), "rb").read()
    assert (new / "valid" / "odd.seed1.detok").read_bytes().count(b"\n") == 4


def test_unpack_reads_utf8_under_a_c_locale(tiny, tmp_path):
    """Kept translations are UTF-8 whatever the locale: unpacking under LC_ALL=C (no UTF-8 mode, no locale
    coercion: an ASCII locale, as in many containers) scores the same German text."""
    import subprocess
    import sys

    kept = tmp_path / "kept"
    R.pack(tiny["eval"], str(kept), ["sgnet"], [1], ["valid"])
    # here too: mutation testing runs a test against the mutants of the functions it calls in its own process
    R.unpack(str(kept), str(tmp_path / "here"), ["sgnet"], [1], ["valid"], tiny["refs"])
    from support import ascii_locale_env

    env = ascii_locale_env()
    code = ("import locale, sys; from syntax_nmt.recipes import report as R; "
            "print(locale.getpreferredencoding(False)); "
            "R.unpack(sys.argv[1], sys.argv[2], ['sgnet'], [1], ['valid'], sys.argv[3])")
    proc = subprocess.run([sys.executable, "-c", code, str(kept), str(tmp_path / "new"), tiny["refs"]], env=env,
                          capture_output=True, text=True, encoding="utf-8")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "utf" not in proc.stdout.lower()  # the locale was not UTF-8
    assert read_json(tmp_path / "new" / "valid" / "sgnet.seed1.json") == read_json(
        tmp_path / "here" / "valid" / "sgnet.seed1.json") == read_json(
        os.path.join(tiny["eval"], "valid", "sgnet.seed1.json"))


def _scrambled_refs(tiny, dest):
    """The references with their tokenized files lowercased and reversed word by word: what reads them instead of
    the raw ones gives other scores and p-values."""
    shutil.copytree(tiny["refs"], dest)
    for sp in SPLITS:
        lines = lines_of(dest / f"{sp}.de")
        (dest / f"{sp}.de").write_text("".join(" ".join(line.lower().split()[::-1]) + "\n" for line in lines),
                                       encoding="utf-8")
    return str(dest)


def test_the_detokenized_scores_and_paired_tests_read_the_raw_references(tiny, noisy, tmp_path, monkeypatch):
    """sacreBLEU, chrF and the paired tests are on detokenized text against ``SPLIT.raw.de``; only tokenized BLEU
    reads ``SPLIT.de``: with the tokenized references scrambled, unpack's sacreBLEU and chrF, split_rows' and the
    noise table's p-values stay what they are with the true ones."""
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    refs = _scrambled_refs(tiny, tmp_path / "refs")
    kept, new = tmp_path / "kept", tmp_path / "new"
    R.pack(tiny["eval"], str(kept), SYSTEMS, SEEDS, ["valid"])
    R.unpack(str(kept), str(new), SYSTEMS, SEEDS, ["valid"], refs)
    for n in SYSTEMS:
        for s in SEEDS:
            again, old = read_json(new / "valid" / f"{n}.seed{s}.json"), read_json(
                os.path.join(tiny["eval"], "valid", f"{n}.seed{s}.json"))
            assert (again["sacrebleu"], again["chrf"]) == (old["sacrebleu"], old["chrf"])
            assert again["tokenized_bleu"] < old["tokenized_bleu"]  # the scrambled references were read there
    ev = copy_eval(tiny, tmp_path / "eval")
    rows = {r: R.split_rows(ev, "valid", SYSTEMS, SEEDS, r, ["bs", "ar"], seed=3) for r in (tiny["refs"], refs)}
    assert rows[refs][1]["p"] == rows[tiny["refs"]][1]["p"]
    noise = {r: R.noise_report(noisy, tiny["eval"], "sgnet", ["0.5"], SEEDS, ["valid"], r, ["bs"])
             for r in (tiny["refs"], refs)}
    assert noise[refs] == noise[tiny["refs"]]


def test_unpack_refuses_missing_references_and_translations(tiny, tmp_path):
    kept, refs = tmp_path / "kept", tmp_path / "refs"
    R.pack(tiny["eval"], str(kept), SYSTEMS, SEEDS, SPLITS)
    shutil.copytree(tiny["refs"], refs)
    (refs / "test.de").unlink()
    with pytest.raises(FileNotFoundError) as e:
        R.unpack(str(kept), str(tmp_path / "new"), SYSTEMS, SEEDS, SPLITS, str(refs))
    assert str(e.value) == (f"{refs}/test.de is missing: --refs must be the recipe's prepared data "
                            f"(STAGES=\"download prepare\" run_all.sh makes it)")
    assert not (tmp_path / "new").exists()  # every file is checked first: nothing is scored (issue 56.6)
    (refs / "valid.raw.de").unlink()
    with pytest.raises(FileNotFoundError) as e:
        R.unpack(str(kept), str(tmp_path / "new2"), SYSTEMS, SEEDS, SPLITS, str(refs))
    assert str(e.value).startswith(f"{refs}/valid.raw.de is missing: --refs must be")
    assert not (tmp_path / "new2").exists()
    (kept / "test" / "sgnet.seed1.detok.gz").unlink()
    with pytest.raises(FileNotFoundError) as e:
        R.unpack(str(kept), str(tmp_path / "new3"), SYSTEMS, SEEDS, SPLITS, tiny["refs"])
    assert str(e.value) == f"{kept}/test/sgnet.seed1.detok.gz is missing: no kept translation of sgnet seed 1 on test"
    assert not (tmp_path / "new3").exists()


# --- the report ---------------------------------------------------------------------------------------------


def test_report_results_json(tiny, reported):
    assert (reported["res"], reported["md"]) == (tiny["res"], tiny["md"])  # made again: the same
    res, ev = reported["res"], tiny["eval"]
    with open(os.path.join(ev, "results.json"), encoding="utf-8") as f:  # indented by one space, as committed
        assert f.read() == json.dumps(res, indent=1)
    assert res["title"] == "Tiny" and res["systems"] == SYSTEMS and res["seeds"] == SEEDS
    assert list(res["splits"]) == SPLITS
    refs = {sp: lines_of(os.path.join(tiny["refs"], f"{sp}.raw.de")) for sp in SPLITS}
    for sp, rows in res["splits"].items():
        assert [r["system"] for r in rows] == SYSTEMS
        for r in rows:
            scores = [read_json(os.path.join(ev, sp, f"{r['system']}.seed{s}.json")) for s in SEEDS]
            assert r["seeds"] == SEEDS and r["sentences"] == len(REFS[sp])
            assert r["signature"] == scores[0]["signature"]
            for m in METRICS:
                assert r[m] == [sc[m] for sc in scores]
                assert r[m + "_mean"] == pytest.approx(statistics.mean(r[m]))
                assert r[m + "_sd"] == pytest.approx(statistics.stdev(r[m]))
            assert r["sacrebleu"] == [pytest.approx(sacrebleu.corpus_bleu(HYPS[(r["system"], s, sp)], [refs[sp]]).score)
                                      for s in SEEDS]
            assert r["mean"] == r["sacrebleu_mean"]
            assert r["train_seconds"] == [DONE[(r["system"], s)]["wall_seconds"] for s in SEEDS]
            assert r["train_cpu_seconds"] == [DONE[(r["system"], s)].get("cpu_seconds") for s in SEEDS]
            assert r["tests"]["resampling_seed"] == SEED and r["tests"]["seeds"] == 2
        # the pooled paired tests on the detokenized translations against the raw references, resampling seed 7
        hyps = {n: [HYPS[(n, s, sp)] for s in SEEDS] for n in SYSTEMS}
        for metric, key in (("BLEU", "sacrebleu"), ("chrF", "chrf")):
            stats = {n: sig.sentence_statistics(metric, hyps[n], refs[sp]) for n in SYSTEMS}
            for t in ("bs", "ar"):
                assert rows[1]["p"][t][key] == sig.paired_test(metric, stats["transformer"], stats["sgnet"], t,
                                                               seed=SEED).p_value
        assert rows[1]["p_pooled"] == rows[1]["p"]["bs"]["sacrebleu"] and "p" not in rows[0]
        assert rows[1]["wins"] == sum(a > b for a, b in zip(rows[1]["sacrebleu"], rows[0]["sacrebleu"]))
        assert lines_of(os.path.join(ev, sp, "pooled", "sgnet.detok")) == [
            h for s in SEEDS for h in HYPS[("sgnet", s, sp)]]
        assert lines_of(os.path.join(ev, sp, "pooled", "ref")) == refs[sp] * 2
    assert [r["wins"] for r in (res["splits"]["valid"][1], res["splits"]["test"][1])] == [2, 0]
    # the data differ where the metrics do: casing (lc tokenized BLEU) and a seed without 4-gram matches
    assert res["splits"]["valid"][0]["lc_tokenized_bleu"][0] > res["splits"]["valid"][0]["tokenized_bleu"][0]
    assert res["splits"]["test"][1]["tokenized_bleu"][1] == 0.0 < res["splits"]["test"][1]["sacrebleu"][1]


def test_report_markdown_every_line(reported):
    tiny = reported
    res, md = tiny["res"], tiny["md"]
    valid, test = res["splits"]["valid"], res["splits"]["test"]
    assert valid[1]["mean"] > valid[0]["mean"] and test[0]["mean"] > test[1]["mean"]  # sgnet first on valid only
    first = read_json(os.path.join(tiny["eval"], "valid", "transformer.seed1.json"))
    shared = ("threads 2, torch 2.1.0, fairseq 0.12.2, sacremoses 0.1.1, subword-nmt 0.3.8, spacy 3.7.2, parser "
              "spacy en_core_web_sm 3.7.1")
    expected = [
        "# Tiny", "",
        "Systems: transformer, sgnet (baseline: transformer); training seeds 1, 2. Metrics: sacreBLEU and chrF "
        "(cased, detokenized; signatures below), tokenized BLEU cased and lowercased (multi-bleu; lowercased: the "
        "Multi30k literature's metric). Mean ± sample sd over seeds. p: paired tests against transformer, "
        "two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 resamples) and two-sided approximate "
        "randomization (10,000 trials), on sacreBLEU's "
        "sentence statistics; unit: the test sentence, each resample carrying (or each trial swapping) the lines of "
        "all 2 seeds of a sentence together; p = 1 where the scores are equal; * p < 0.05. Seeds better: in how many "
        "seeds the system's sacreBLEU beats transformer's same seed; p per seed: each seed's translations alone "
        "(two-sided bootstrap, sacreBLEU).", "",
        "## valid (4 sentences)", "", compare.results_table(valid, METRICS, ["bs", "ar"], ("sacrebleu", "chrf")), "",
        "## test (3 sentences)", "", compare.results_table(test, METRICS, ["bs", "ar"], ("sacrebleu", "chrf")), "",
        f"Ranking on valid (mean sacreBLEU): sgnet {valid[1]['mean']:.2f}, transformer {valid[0]['mean']:.2f}", "",
        "## Target tags", "",
        "Accuracy (%) of the target tags each system predicts for its own translation (target factors: its F lines; "
        "interleaved: the tag before each word) against the target parser's tags of that translation "
        "(`syntax-nmt-evaluate factors`), for each stream its target scheme scores (`pos`: the POS tags), mean ± sd "
        "over seeds.", "",
        markdown_table(["system", "tags", "valid", "test"], [["sgnet", "pos", "92.50 ± 1.41", "82.00 ± 2.83"]]), "",
        "## Training time", "",
        markdown_table(["system", "wall min per training", "CPU min per training"],
                       [["transformer", "12.5", "22.5"], ["sgnet", "21.0", "40.0"]]), "",
        "All 4 trainings: 1.12 h of wall time one after the other.", "",
        "## The trainings' records", "", f"Shared by every training: {shared}.", "",
        "**The trainings of this table differ in what they ran with** (a figure may move with these, not only with "
        "the system):", "",
        "- device: cpu (Tiny CPU, avx2) (transformer seed 1, transformer seed 2, sgnet seed 1); NVIDIA H100 "
        "(sgnet seed 2)",
        "- resumed: no (transformer seed 1, transformer seed 2, sgnet seed 1); from update 400 (sgnet seed 2)", "",
        "", f"sacreBLEU signature: `{first['signature']}`", f"chrF signature: `{first['chrf_signature']}`", ""]
    assert md.split("\n") == "\n".join(expected).split("\n")
    assert md.startswith("# Tiny\n") and "\n## valid (4 sentences)\n" in md and "\n## test (3 sentences)\n" in md
    assert first["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a") and "nc:6" in first["chrf_signature"]
    with open(os.path.join(tiny["eval"], "results.md"), encoding="utf-8") as f:
        assert f.read() == md


def test_report_draws_a_chart_per_split(reported, tmp_path, monkeypatch):
    tiny = reported
    for sp in SPLITS:
        with open(os.path.join(tiny["eval"], f"bleu-{sp}.png"), "rb") as f:
            png = f.read()
        assert png.startswith(b"\x89PNG\r\n") and len(png) > 1000
    drawn = []
    monkeypatch.setattr(compare, "plot_bars", lambda rows, path, title: drawn.append(
        ([r["system"] for r in rows], path, title)))
    ev = copy_eval(tiny, tmp_path / "eval")
    R.report(ev, SYSTEMS, SEEDS, SPLITS, tiny["refs"], ["bs"], None, "A title")
    assert drawn == [(SYSTEMS, os.path.join(ev, "bleu-valid.png"), "A title\nvalid, 2 seeds"),
                     (SYSTEMS, os.path.join(ev, "bleu-test.png"), "A title\ntest, 2 seeds")]
    drawn.clear()
    R.report(ev, SYSTEMS[::-1], [2], ["test"], tiny["refs"], ["bs"])
    assert drawn == [(SYSTEMS[::-1], os.path.join(ev, "bleu-test.png"), "test, 1 seeds")]


def test_report_without_title_times_records_or_tags(tiny, tmp_path, monkeypatch):
    """One seed, one test, the baseline given second, no checkpoints: "# Results", no p per seed, training times
    "-", no line of all trainings, no records, no tags table; the signatures are the first split's baseline's."""
    monkeypatch.setattr(compare, "plot_bars", lambda *a: None)
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    ev = copy_eval(tiny, tmp_path / "eval")
    for sp in SPLITS:
        for s in SEEDS:
            os.unlink(os.path.join(ev, sp, f"sgnet.seed{s}.factors.json"))
    md = R.report(ev, ["sgnet", "transformer"], [2], ["test", "valid"], tiny["refs"], ["bs"])
    res = read_json(os.path.join(ev, "results.json"))
    assert res == {"title": "", "systems": ["sgnet", "transformer"], "seeds": [2],
                   "splits": {sp: res["splits"][sp] for sp in ("test", "valid")}}
    assert list(res["splits"]) == ["test", "valid"]
    test = res["splits"]["test"]
    assert test[1]["sacrebleu"] == [read_json(os.path.join(ev, "test", "transformer.seed2.json"))["sacrebleu"]]
    assert "train_seconds" not in test[0] and "p_per_seed" in test[1]
    sgnet = read_json(os.path.join(ev, "test", "sgnet.seed2.json"))
    assert md.split("\n") == [
        "# Results", "",
        "Systems: sgnet, transformer (baseline: sgnet); training seeds 2. Metrics: sacreBLEU and chrF (cased, "
        "detokenized; signatures below), tokenized BLEU cased and lowercased (multi-bleu; lowercased: the Multi30k "
        "literature's metric). Mean ± sample sd over seeds. p: paired tests against sgnet, two-sided paired "
        "bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 resamples), on sacreBLEU's sentence statistics; unit: the test sentence; p = 1 where the "
        "scores are equal; * p < 0.05.", "",
        "## test (3 sentences)", "", *compare.results_table(test, METRICS, ["bs"], ("sacrebleu", "chrf")).split("\n"),
        "", "## valid (4 sentences)", "",
        *compare.results_table(res["splits"]["valid"], METRICS, ["bs"], ("sacrebleu", "chrf")).split("\n"), "",
        f"Ranking on test (mean sacreBLEU): transformer {test[1]['mean']:.2f}, sgnet {test[0]['mean']:.2f}", "",
        "## Training time", "",
        *markdown_table(["system", "wall min per training", "CPU min per training"],
                        [["sgnet", "-", "-"], ["transformer", "-", "-"]]).split("\n"), "",
        "", f"sacreBLEU signature: `{sgnet['signature']}`", f"chrF signature: `{sgnet['chrf_signature']}`", ""]


def test_report_of_the_baseline_alone(tiny, tmp_path, monkeypatch):
    """One system (the first trainings of a comparison): its scores, no test, its own signatures."""
    monkeypatch.setattr(compare, "plot_bars", lambda *a: None)
    ev, ckpt = copy_eval(tiny, tmp_path / "eval"), tmp_path / "ckpt"
    for s, wall in ((1, 600), (2, 750)):  # 1,350 s: 0.375 h, which rounds to 0.38 (and 1,350 / 3,601 to 0.37)
        (ckpt / "sgnet" / f"seed{s}").mkdir(parents=True)
        (ckpt / "sgnet" / f"seed{s}" / ".done").write_text(json.dumps({"wall_seconds": wall}))
    md = R.report(ev, ["sgnet"], SEEDS, ["valid"], tiny["refs"], ["bs"], str(ckpt))
    first = read_json(os.path.join(ev, "valid", "sgnet.seed1.json"))
    assert "\n| sgnet | 11.2 | - |\n\nAll 2 trainings: 0.38 h of wall time one after the other.\n" in md
    assert md.split("\n")[-4:] == ["", f"sacreBLEU signature: `{first['signature']}`",
                                   f"chrF signature: `{first['chrf_signature']}`", ""]
    rows = read_json(os.path.join(ev, "results.json"))["splits"]["valid"]
    assert [r["system"] for r in rows] == ["sgnet"] and "p" not in rows[0]


def test_split_rows_resampling_seed_and_a_system_against_itself(tiny, tmp_path):
    """A system whose translations are the baseline's: equal scores, p = 1 in every test, no seed better."""
    ev = copy_eval(tiny, tmp_path / "eval")
    score_all(ev, tiny["refs"], {k: v for k, v in HYPS.items() if k[0] == "transformer" and k[2] == "valid"},
              rename={"transformer": "copy"})
    rows = R.split_rows(ev, "valid", ["transformer", "copy", "sgnet"], SEEDS, tiny["refs"], ["bs", "ar"], seed=3)
    assert [r["system"] for r in rows] == ["transformer", "copy", "sgnet"]
    assert rows[1]["sacrebleu"] == rows[0]["sacrebleu"] and rows[1]["chrf"] == rows[0]["chrf"]
    assert rows[1]["p"] == {"bs": {"sacrebleu": 1.0, "chrf": 1.0}, "ar": {"sacrebleu": 1.0, "chrf": 1.0}}
    assert rows[1]["p_per_seed"] == [1.0, 1.0] and rows[1]["wins"] == 0 and rows[2]["wins"] == 2
    assert rows[0]["tests"]["resampling_seed"] == 3 and "train_seconds" not in rows[0]
    assert sorted(os.listdir(os.path.join(ev, "valid", "pooled"))) == ["copy.detok", "ref", "sgnet.detok",
                                                                      "transformer.detok"]
    timed = R.split_rows(ev, "test", SYSTEMS, [2], tiny["refs"], ["bs"], tiny["ckpt"], seed=3)
    assert [r["train_seconds"] for r in timed] == [[900], [1320]]
    assert [r["train_cpu_seconds"] for r in timed] == [[1500], [None]]
    assert timed[1]["p"]["bs"]["sacrebleu"] == sig.paired_test(
        "BLEU", sig.sentence_statistics("BLEU", [HYPS[("transformer", 2, "test")]], REFS["test"]),
        sig.sentence_statistics("BLEU", [HYPS[("sgnet", 2, "test")]], REFS["test"]), "bs", seed=3).p_value


def test_significance_caption_one_seed_and_several():
    assert R.significance_caption(["bs"], [4], "lisa") == (
        "p: paired tests against lisa, two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 "
        "resamples), on sacreBLEU's "
        "sentence statistics; unit: the test sentence; p = 1 where the scores are equal; * p < 0.05.")
    assert R.significance_caption(["ar", "bs"], [1, 2, 3], "clean") == (
        "p: paired tests against clean, two-sided approximate randomization (10,000 trials) and two-sided paired "
        "bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 resamples), on sacreBLEU's sentence statistics; unit: the test sentence, each resample "
        "carrying (or each trial swapping) the lines of all 3 seeds of a sentence together; p = 1 where the scores "
        "are equal; * p < 0.05. Seeds better: in how many seeds the system's sacreBLEU beats clean's same seed; p per "
        "seed: each seed's translations alone (two-sided randomization, sacreBLEU).")


def test_minutes():
    assert R._minutes([60, 120, 180]) == "2.0"
    assert R._minutes([90]) == "1.5"
    assert R._minutes([None, 60, 123]) == "1.5"  # (60 + 123) / 2 s = 1.525 min
    assert R._minutes([59.0, 63.0]) == "1.0"
    assert R._minutes([600]) == "10.0" and R._minutes([3600, None]) == "60.0"
    assert R._minutes([None, None]) == "-" and R._minutes([]) == "-" and R._minutes(None) == "-"


def test_factor_accuracies_per_seed_and_their_table(tmp_path):
    for sp in SPLITS:
        (tmp_path / sp).mkdir()
    write_factors(str(tmp_path), "sgnet", {"valid": [90.0, 95.0], "test": [70.0, 71.0]})
    write_factors(str(tmp_path), "lisa", {"test": [60.0, 61.5]})
    assert R.factor_accuracies(str(tmp_path), ["transformer", "lisa", "sgnet"], SEEDS, SPLITS) == {
        "valid": {"sgnet": {"pos": [90.0, 95.0]}}, "test": {"lisa": {"pos": [60.0, 61.5]},
                                                             "sgnet": {"pos": [70.0, 71.0]}}}
    assert R.factor_accuracies(str(tmp_path), ["sgnet"], [2], ["test"]) == {"test": {"sgnet": {"pos": [71.0]}}}
    assert R.factor_accuracies(str(tmp_path), ["transformer"], SEEDS, SPLITS) == {}
    assert R.factor_accuracy_lines(str(tmp_path), ["transformer"], SEEDS, SPLITS) == []
    lines = R.factor_accuracy_lines(str(tmp_path), ["transformer", "sgnet", "lisa"], SEEDS, SPLITS)
    assert lines[:4] == ["## Target tags", "",
                         "Accuracy (%) of the target tags each system predicts for its own translation (target "
                         "factors: its F lines; interleaved: the tag before each word) against the target parser's "
                         "tags of that translation (`syntax-nmt-evaluate factors`), for each stream its target scheme "
                         "scores (`pos`: the POS tags), mean ± sd over seeds.", ""]
    assert lines[4:] == [markdown_table(["system", "tags", "valid", "test"],
                                        [["sgnet", "pos", "92.50 ± 3.54", "70.50 ± 0.71"],
                                         ["lisa", "pos", "-", "60.75 ± 1.06"]]), ""]
    assert lines[4].split("\n")[2:] == ["| sgnet | pos | 92.50 ± 3.54 | 70.50 ± 0.71 |",
                                        "| lisa | pos | - | 60.75 ± 1.06 |"]
    # a split where no system has tags (no factors file at all): a "-" column
    assert R.factor_accuracy_lines(str(tmp_path), ["sgnet"], SEEDS, ["valid", "mscoco"])[4] == markdown_table(
        ["system", "tags", "valid", "mscoco"], [["sgnet", "pos", "92.50 ± 3.54", "-"]])
    os.unlink(tmp_path / "test" / "lisa.seed1.factors.json")
    with pytest.raises(FileNotFoundError) as e:
        R.factor_accuracies(str(tmp_path), ["lisa"], SEEDS, SPLITS)
    assert str(e.value) == (f"{tmp_path}/test/lisa.seed1.factors.json is missing: run the evaluate stage again (it "
                            f"measures the tags of lisa seed 1 on test again)")
    (tmp_path / "valid" / "sgnet.seed2.factors.json").write_text('{"pos": ')
    with pytest.raises(ValueError) as e:
        R.factor_accuracy_lines(str(tmp_path), ["sgnet"], SEEDS, SPLITS)
    assert str(e.value).startswith(f"{tmp_path}/valid/sgnet.seed2.factors.json is not valid JSON (")
    assert str(e.value).endswith("): run the evaluate stage again (it measures the tags of sgnet seed 2 on valid "
                                 "again)")


def test_factor_accuracies_of_each_stream_a_scheme_scores(tmp_path):
    """A target scheme scores the streams it declares (issue 57.2): a row per system and stream, in the order the
    files hold them; a system's streams on one split only leave "-" on the others."""
    for sp in SPLITS:
        (tmp_path / sp).mkdir()
    write_factors(str(tmp_path), "casefactors", {"valid": [80.0, 90.0], "test": [50.0, 60.0]}, stream="case")
    write_factors(str(tmp_path), "factors", {"valid": [{"pos": 70.0, "dep": 40.0}, {"pos": 72.0, "dep": 42.0}],
                                             "test": [{"pos": 60.0, "dep": 30.0}, {"pos": 62.0, "dep": 30.0}]})
    write_factors(str(tmp_path), "interleaved", {"test": [10.0, 20.0]})
    assert R.factor_accuracies(str(tmp_path), ["factors", "casefactors", "interleaved"], SEEDS, SPLITS) == {
        "valid": {"factors": {"pos": [70.0, 72.0], "dep": [40.0, 42.0]}, "casefactors": {"case": [80.0, 90.0]}},
        "test": {"factors": {"pos": [60.0, 62.0], "dep": [30.0, 30.0]}, "casefactors": {"case": [50.0, 60.0]},
                 "interleaved": {"pos": [10.0, 20.0]}}}
    lines = R.factor_accuracy_lines(str(tmp_path), ["transformer", "casefactors", "interleaved", "factors"], SEEDS,
                                    SPLITS)
    assert lines[4] == markdown_table(["system", "tags", "valid", "test"], [
        ["casefactors", "case", "85.00 ± 7.07", "55.00 ± 7.07"], ["interleaved", "pos", "-", "15.00 ± 7.07"],
        ["factors", "pos", "71.00 ± 1.41", "61.00 ± 1.41"], ["factors", "dep", "41.00 ± 1.41", "30.00 ± 0.00"]])
    # seeds whose files score other streams: a failed or mixed evaluation, named
    (tmp_path / "test" / "factors.seed2.factors.json").write_text('{"pos": {"accuracy": 1.0}}')
    with pytest.raises(ValueError) as e:
        R.factor_accuracies(str(tmp_path), ["factors"], SEEDS, ["test"])
    assert str(e.value) == (f"{tmp_path}/test/factors.seed2.factors.json scores the tags of pos, seed 1's those of "
                            f"pos, dep: run the evaluate stage again (it measures the tags of factors seed 2 on test "
                            f"again)")


def _results(path, splits):
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps({"splits": {sp: [{"system": n, "mean": m} for n, m in rows]
                                                              for sp, rows in splits.items()}}))
    return str(path)


def test_best_on_valid_the_best_syntax_system(tmp_path):
    ev = _results(tmp_path / "a", {"valid": [("transformer", 40.0), ("lisa", 35.0), ("interleaved", 39.0),
                                             ("sgnet", 36.5), ("sla", 36.0)],
                                   "test": [("transformer", 30.0), ("lisa", 33.0), ("sgnet", 31.0)]})
    assert R.best_on_valid(ev) == "sgnet"  # transformer and interleaved are stock
    assert R.best_on_valid(ev, "test") == "lisa"
    stock = _results(tmp_path / "b", {"valid": [("transformer", 40.0), ("interleaved", 41.0)]})
    with pytest.raises(ValueError) as e:
        R.best_on_valid(stock)
    assert str(e.value) == f"{stock}/results.json has no syntax system"


def test_noise_dirs():
    dirs = R.noise_dirs("N", "E", ["0.3", "1.0"])
    assert list(dirs.items()) == [("clean", "E"), ("r0.3", os.path.join("N", "eval", "r0.3")),
                                  ("r1.0", os.path.join("N", "eval", "r1.0"))]
    assert R.noise_dirs("N", "E", []) == {"clean": "E"}


@pytest.fixture
def noisy(tiny, tmp_path):
    """The noise stage's evaluation of sgnet: r0.5 translates like transformer, r1.0 like sgnet itself."""
    noise = tmp_path / "noise"
    score_all(str(noise / "eval" / "r0.5"), tiny["refs"], {k: v for k, v in HYPS.items() if k[0] == "transformer"},
              rename={"transformer": "sgnet"})
    score_all(str(noise / "eval" / "r1.0"), tiny["refs"], {k: v for k, v in HYPS.items() if k[0] == "sgnet"})
    return str(noise)


def test_noise_report_clean_row_first(tiny, noisy, monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    md = R.noise_report(noisy, tiny["eval"], "sgnet", ["0.5", "1.0"], SEEDS, SPLITS, tiny["refs"], ["bs"])
    res = read_json(os.path.join(noisy, "results.json"))
    with open(os.path.join(noisy, "results.json"), encoding="utf-8") as f:  # indented by one space, as committed
        assert f.read() == json.dumps(res, indent=1)
    assert [res[k] for k in ("system", "rates", "seeds")] == ["sgnet", ["0.5", "1.0"], SEEDS]
    assert list(res["splits"]) == SPLITS
    main = tiny["res"]["splits"]
    for sp, rows in res["splits"].items():
        assert [r["system"] for r in rows] == ["clean", "r0.5", "r1.0"]
        for m in METRICS:
            assert rows[0][m] == rows[2][m] == main[sp][1][m] and rows[1][m] == main[sp][0][m]
        assert rows[2]["p"] == {"bs": {"sacrebleu": 1.0, "chrf": 1.0}} and rows[2]["wins"] == 0
        stats = {n: sig.sentence_statistics("chrF", [HYPS[(n, s, sp)] for s in SEEDS], REFS[sp]) for n in SYSTEMS}
        assert rows[1]["p"]["bs"]["chrf"] == sig.paired_test("chrF", stats["sgnet"], stats["transformer"], "bs",
                                                             seed=SEED).p_value
        assert rows[1]["p_per_seed"] == main[sp][1]["p_per_seed"]  # the same pair, the other way round
        assert rows[0]["tests"]["resampling_seed"] == SEED
    assert not os.path.exists(os.path.join(noisy, "eval", "r0.5", "valid", "pooled"))
    assert md.split("\n") == [
        "# sgnet: clean parses against corrupted heads", "",
        "Each corrupted row trains and tests sgnet on data whose heads are corrupted at that rate (a word's head "
        "replaced by a random other word of its sentence, in training, validation and test data; syntax-nmt-analyze "
        "corrupt); clean: the same system on the parser's heads (seeds 1, 2). p: paired tests against clean, "
        "two-sided paired bootstrap resampling (|Δ* − mean Δ*| ≥ |Δ|) (1,000 resamples), on sacreBLEU's sentence statistics; unit: the test "
        "sentence, each resample carrying (or each trial swapping) the lines of all 2 seeds of a sentence together; "
        "p = 1 where the scores are equal; * p < 0.05. Seeds better: in how many seeds the system's sacreBLEU beats "
        "clean's same seed; p per seed: each seed's translations alone (two-sided bootstrap, sacreBLEU).", "",
        "## valid", "", *compare.results_table(res["splits"]["valid"], METRICS, ["bs"], ("sacrebleu", "chrf")).split(
            "\n"), "",
        "## test", "", *compare.results_table(res["splits"]["test"], METRICS, ["bs"], ("sacrebleu", "chrf")).split(
            "\n"), ""]
    with open(os.path.join(noisy, "results.md"), encoding="utf-8") as f:
        assert f.read() == md
    one = R.noise_report(noisy, tiny["eval"], "sgnet", ["1.0"], [2], ["test"], tiny["refs"], ["ar"])
    assert "(seeds 2). p: paired tests against clean, two-sided approximate randomization (10,000 trials)" in one
    assert "unit: the test sentence; p = 1" in one and "## test\n" in one and "## valid" not in one
    assert read_json(os.path.join(noisy, "results.json"))["seeds"] == [2]
    with pytest.raises(FileNotFoundError) as e:
        R.noise_report(noisy, tiny["eval"], "sgnet", ["0.3"], SEEDS, SPLITS, tiny["refs"], ["bs"])
    assert str(e.value) == (f"{noisy}/eval/r0.3/valid/sgnet.seed1.json is missing: translate and score sgnet seed 1 "
                            f"on valid first")


# --- the command line ---------------------------------------------------------------------------------------


def test_main_reports_and_packs(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compare, "plot_bars", lambda *a: None)  # the charts: test_report_draws_a_chart_per_split
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    ev, kept = copy_eval(tiny, tmp_path / "eval"), tmp_path / "kept"
    R.main(["--eval", ev, "--systems", "transformer,sgnet", "--seeds", "1, 2", "--splits", "valid test",
            "--refs", tiny["refs"], "--checkpoints", tiny["ckpt"], "--title", "Tiny", "--pack", str(kept),
            "--pack-suffix=-x"])
    out, err = capsys.readouterr()
    assert out == tiny["md"] + "\n" and err == f"kept 16 translation files in {kept}\n"
    assert read_json(os.path.join(ev, "results.json")) == tiny["res"]
    assert (kept / "valid" / "sgnet-x.seed2.detok.gz").exists() and (kept / "training" / "sgnet-x.seed2.json").exists()
    assert not (kept / "valid" / "sgnet.seed2.detok.gz").exists()
    with pytest.raises(SystemExit) as e:  # the default seeds: 1 2 3
        R.main(["--eval", ev, "--systems", "transformer sgnet", "--splits", "valid", "--refs", tiny["refs"]])
    assert e.value.code == 2 and capsys.readouterr().err == (
        f"{PROG}: error: {ev}/valid/transformer.seed3.json is missing: translate and score transformer seed 3 on "
        f"valid first\n")


def test_main_reports_on_kept_translations(tiny, tmp_path, capsys, monkeypatch):
    """--translations: scored again into --eval, the training times read from the copies kept beside them, the
    references' language from --tgt-lang."""
    monkeypatch.setattr(compare, "plot_bars", lambda *a: None)  # the charts: test_report_draws_a_chart_per_split
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    kept, refs = tmp_path / "kept", tmp_path / "refs"
    R.pack(tiny["eval"], str(kept), SYSTEMS, SEEDS, SPLITS, tiny["ckpt"])
    for sp in SPLITS:
        refs.mkdir(exist_ok=True)
        shutil.copyfile(os.path.join(tiny["refs"], f"{sp}.raw.de"), refs / f"{sp}.raw.xx")
        shutil.copyfile(os.path.join(tiny["refs"], f"{sp}.de"), refs / f"{sp}.xx")
    new = tmp_path / "new"
    R.main(["--translations", str(kept), "--eval", str(new), "--refs", str(refs), "--tgt-lang", "xx",
            "--systems", "transformer sgnet", "--seeds", "1 2", "--splits", "valid test", "--title", "Tiny"])
    assert capsys.readouterr().out == tiny["md"] + "\n"
    assert read_json(new / "results.json") == tiny["res"]
    assert R.REF_LANG["lang"] == "xx"
    with pytest.raises(SystemExit) as e:
        R.main(["--translations", str(kept), "--eval", str(new), "--refs", str(refs), "--systems", "transformer",
                "--seeds", "1", "--splits", "valid"])
    assert e.value.code == 2 and capsys.readouterr().err == (
        f"{PROG}: error: {refs}/valid.raw.de is missing: --refs must be the recipe's prepared data (STAGES=\"download "
        f"prepare\" run_all.sh makes it)\n")


def test_main_best_on_valid_prints_the_name(tmp_path, capsys):
    ev = _results(tmp_path, {"valid": [("transformer", 40.0), ("lisa", 35.0), ("sgnet", 36.5)],
                             "test": [("transformer", 30.0), ("lisa", 33.0), ("sgnet", 31.0)]})
    R.main(["--eval", ev, "--best-on-valid"])
    assert capsys.readouterr() == ("sgnet\n", "")
    R.main(["--eval", ev, "--best-on-valid", "--splits", "test valid"])
    assert capsys.readouterr().out == "lisa\n"


def test_main_noise_with_kept_translations(tiny, noisy, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compare, "plot_bars", lambda *a: None)  # the charts: test_report_draws_a_chart_per_split
    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    args = ["--system", "sgnet", "--rates", "0.5 1.0", "--seeds", "1 2", "--splits", "valid test", "--refs",
            tiny["refs"], "--tests", "bs"]
    kept = tmp_path / "kept"
    R.main(["--noise", noisy, "--eval", tiny["eval"], "--pack", str(kept), *args])
    out, err = capsys.readouterr()
    with open(os.path.join(noisy, "results.md"), encoding="utf-8") as f:
        assert out == f.read() + "\n"
    assert err == f"kept 24 translation files in {kept}\n"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*.gz") if p.parts[-2] == "test") == [
        f"{row}/test/sgnet.seed{s}.{form}.gz" for row in ("clean", "r0.5", "r1.0") for s in SEEDS
        for form in ("detok", "tok")]
    assert (kept / "clean" / "valid" / "sgnet.seed1.factors.json").exists() and not (kept / "training").exists()
    res = read_json(os.path.join(noisy, "results.json"))
    again = tmp_path / "again"
    R.main(["--noise", str(again), "--eval", str(tmp_path / "e"), "--translations", str(kept), *args])
    assert read_json(again / "results.json") == res
    assert read_json(tmp_path / "e" / "valid" / "sgnet.seed2.json") == read_json(
        os.path.join(tiny["eval"], "valid", "sgnet.seed2.json"))
    assert read_json(again / "eval" / "r0.5" / "test" / "sgnet.seed1.json")["sacrebleu"] == \
        tiny["res"]["splits"]["test"][0]["sacrebleu"][0]


@pytest.mark.parametrize("argv, message", [
    (["--systems", ""], "--systems, --seeds and --splits must not be empty"),
    (["--systems", "transformer", "--seeds", " "], "--systems, --seeds and --splits must not be empty"),
    (["--systems", "transformer", "--splits", ","], "--systems, --seeds and --splits must not be empty"),
    (["--systems", "transformer", "--seeds", "1 x"], "invalid literal for int() with base 10: 'x'"),
    (["--noise", "N", "--rates", "0.3"], "--noise needs --system and --rates"),
    (["--noise", "N", "--system", "sgnet"], "--noise needs --system and --rates"),
    (["--noise", "N", "--system", "sgnet", "--rates", " , "], "--noise needs --system and --rates"),
    (["--systems", "transformer sgnet", "--seeds", "1", "--splits", "valid", "--tests", "bs xx"],
     "paired tests take metrics ['sacrebleu', 'chrf'] and tests ['bs', 'ar', 'bs-sacrebleu'], got ['sacrebleu', 'chrf'] ['bs', 'xx']"),
    (["--best-on-valid", "--splits", "valid"], "{eval}/results.json has no syntax system"),
    (["--best-on-valid", "--splits", ""], "--best-on-valid needs --splits (the first is the one compared)"),
    (["--best-on-valid", "--splits", "test"], "'test'"),
    (["--best-on-valid", "--splits", "mscoco"], "\"unknown system 'nonesuch'; choose from transformer, "),
])
def test_main_user_errors_are_one_line(tmp_path, capsys, argv, message):
    ev = _results(tmp_path / "eval", {"valid": [("transformer", 40.0), ("interleaved", 41.0)],
                                      "mscoco": [("nonesuch", 1.0)]})
    (tmp_path / "eval" / "valid").mkdir()
    for n in ("transformer", "sgnet"):
        (tmp_path / "eval" / "valid" / f"{n}.seed1.json").write_text(json.dumps(
            {"sentences": 1, "signature": "s", **{m: 1.0 for m in METRICS}}))
        (tmp_path / "eval" / "valid" / f"{n}.seed1.detok").write_text("Ein Hund.\n")
    (tmp_path / "valid.raw.de").write_text("Ein Hund.\n")
    with pytest.raises(SystemExit) as e:
        R.main(["--eval", ev, "--refs", str(tmp_path), *argv])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"{PROG}: error: {message.format(eval=ev)}")
    assert err.endswith("\n") and err.count("\n") == 1


def test_parser_needs_eval_and_has_the_documented_defaults(capsys):
    with pytest.raises(SystemExit) as e:
        R.main(["--systems", "transformer"])
    assert e.value.code == 2 and "the following arguments are required: --eval" in capsys.readouterr().err
    a = R.get_parser().parse_args(["--eval", "E"])
    assert (a.eval, a.translations, a.pack, a.systems, a.seeds, a.splits, a.refs, a.tgt_lang, a.tests, a.checkpoints,
            a.pack_suffix, a.title, a.best_on_valid, a.noise, a.system, a.rates) == (
        "E", None, None, "", "1 2 3", "valid test2016 test2017 mscoco", "", "de", "bs ar", None, "", "", False, None,
        None, "")
    assert R.get_parser().prog == PROG
    # --help shows the description with its own line breaks (docs/cli.md, tests/unit/test_cli_docs.py: its text)
    assert "(cased and lowercased), paired tests against the baseline\non the seeds'" in R.get_parser().format_help()
    assert R._words(" a, b  c,,d ") == ["a", "b", "c", "d"] and R._words("") == []
