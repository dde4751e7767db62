"""In-memory annotation (:mod:`syntax_nmt.annotate.online`) gives exactly what ``syntax-nmt-annotate`` writes.

Each test annotates the same lines twice: with the command line (files), and with
:class:`OnlineAnnotator` built from the annotation settings of that command line, in
small batches as fairseq-interactive sends them. Every output line must be identical.
"""

import dataclasses
import importlib.util
import json
import os
import shutil

import pytest

pytest.importorskip("spacy")

from support.annotate import STREAMS, read, write  # noqa: E402
from syntax_nmt.annotate.cli import build_parser, check_args, main  # noqa: E402
from syntax_nmt.annotate.online import OnlineAnnotator, conllu_blocks  # noqa: E402
from syntax_nmt.annotate.settings import AnnotationSettings, MosesSettings, settings_from_args  # noqa: E402
from syntax_nmt.annotate.textio import InputError  # noqa: E402
from syntax_nmt.syntax.conllu import Sentence, write_conllu  # noqa: E402

#: Lines a user may type: ordinary, empty, whitespace runs, a line spaCy splits in two,
#: control characters, the BPE marker inside a word, a no-break space, a long line.
LINES = [
    "The cat sat on the mat .",
    "",
    "  the   dogs\tran  ",
    "It rains. We stay.",
    "The\x07 cat \x1b[31m sat \x7f.",
    "a cat@@dog sat",
    "The\u00a0cat sat",
    " ".join(["the cat sat"] * 12),
    "\x1c\x1d",
]


def cli_outputs(tmp_path, argv, lines, name="cli"):
    src = write(tmp_path / f"{name}.in.en", lines)
    prefix = tmp_path / name / "out"
    assert main(["--source", src, "--src-lang", "en", "-o", str(prefix), "--quiet", *argv]) == 0
    args = build_parser().parse_args(["--source", src, "--src-lang", "en", "-o", str(prefix), *argv])
    check_args(args)
    return {n: read(f"{prefix}.{n}") for n in ("en",) + STREAMS}, settings_from_args(args)


def online_outputs(annotator, lines, batch=3):
    out = {n: [] for n in ("en",) + STREAMS}
    for k in range(0, len(lines), batch):  # as fairseq-interactive's --buffer-size sends them
        for a in annotator.annotate(lines[k:k + batch]):
            out["en"].append(a.source)
            for n in STREAMS:
                out[n].append(a.streams[n])
    return out


@pytest.mark.parametrize("extra", [
    ["--subword", "bpe", "--max-words", "20"],
    ["--subword", "bpe", "--multi-root", "attach", "--case", "rich", "--pos-tagset", "xpos"],
    ["--subword", "none", "--pretokenized", "--multi-root", "attach"],
], ids=["bpe-raw", "bpe-attach-rich-xpos", "none-pretokenized"])
def test_online_equals_command_line(tmp_path, spacy_model, codes, extra):
    argv = ["--spacy-model", spacy_model, *extra]
    if "bpe" in extra:
        argv += ["--subword-model", codes]
    expected, settings = cli_outputs(tmp_path, argv, LINES)
    got = online_outputs(OnlineAnnotator(settings), LINES)
    assert got == expected
    assert expected["en"][1] == "" and expected["en"][-1] == ""  # empty and whitespace-only lines stay empty
    if "--max-words" in extra:
        assert expected["en"][7] == "" and got["head"][7] == ""  # 36 words > --max-words 20: blanked
    else:
        assert len(got["en"][7].split()) >= 36
    roots = sum(h == "0" and t in "BO" for h, t in zip(got["head"][3].split(), got["subword"][3].split()))
    assert roots == (1 if "attach" in extra else 2)  # "It rains. We stay.": two sentences, one line


def test_online_blanks_what_would_crash_a_session(tmp_path, spacy_model, codes):
    """Past spaCy's max_length and past max_subwords the line becomes empty (with a note), never an error."""
    _, settings = cli_outputs(tmp_path, ["--spacy-model", spacy_model, "--subword", "bpe", "--subword-model", codes],
                              ["x"])
    ann = OnlineAnnotator(dataclasses.replace(settings, max_subwords=5))
    ann.backend.max_chars = 30
    out = ann.annotate(["the cat sat on the mat .", "The cat sat", "The cat " * 10])
    assert out[0].source == "" and "max_subwords=5" in out[0].note  # 12 subwords
    assert out[1].source == "The cat sat" and out[1].note is None
    assert out[2].source == "" and "max_length" in out[2].note
    assert all(s == "" for s in out[0].streams.values())


def test_settings_reader_names_what_is_wrong(tmp_path, spacy_model):
    _, settings = cli_outputs(tmp_path, ["--spacy-model", spacy_model, "--subword", "none"], ["x"])
    path = str(tmp_path / "annotation.json")
    settings.write(path)
    assert AnnotationSettings.read(path) == settings

    def write(values):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(values, f)

    for key in ("case", "moses", "subword_model_sha256"):
        write({k: v for k, v in settings.to_dict().items() if k != key})
        with pytest.raises(ValueError, match=f"{path}: annotation setting '{key}' is missing"):
            AnnotationSettings.read(path)
    write(dict(settings.to_dict(), version=2))
    with pytest.raises(ValueError, match="version 2"):
        AnnotationSettings.read(path)
    write(dict(settings.to_dict(), moses={"lang": "en"}))
    with pytest.raises(ValueError, match="annotation setting 'moses.normalize' is missing"):
        AnnotationSettings.read(path)
    with pytest.raises(ValueError, match="escape='v0'"):
        OnlineAnnotator(dataclasses.replace(settings, escape="v0"))


def test_subword_model_is_checked_by_hash(tmp_path, spacy_model, codes):
    _, settings = cli_outputs(tmp_path, ["--spacy-model", spacy_model, "--subword", "bpe", "--subword-model", codes],
                              ["x"])
    moved = str(tmp_path / "elsewhere.codes")
    shutil.copy(codes, moved)
    os.remove(codes)
    with pytest.raises(ValueError, match="subword_model: .* does not exist; pass .* --annotate-subword-model"):
        OnlineAnnotator(settings)
    assert OnlineAnnotator(settings, subword_model=moved).annotate(["the cat"])[0].source == "t@@ h@@ e cat"
    with open(moved, "a", encoding="utf-8") as f:
        f.write("h e\n")
    with pytest.raises(ValueError, match="subword_model_sha256: .* is not the subword model"):
        OnlineAnnotator(settings, subword_model=moved)


SENTS = [
    Sentence(["The", "cat", "sat", "."], ["DET", "NOUN", "VERB", "PUNCT"], ["DT", "NN", "VBD", "."],
             [2, 3, 0, 3], ["det", "nsubj", "root", "punct"]),
    Sentence(["It", "rains", ".", "We", "stay"], ["PRON", "VERB", "PUNCT", "PRON", "VERB"],
             ["PRP", "VBZ", ".", "PRP", "VBP"], [2, 0, 2, 5, 0], ["nsubj", "root", "punct", "nsubj", "root"]),
]


@pytest.mark.parametrize("policy", ["forest", "attach"])
def test_bring_your_own_parse_equals_conllu_backend(tmp_path, codes, policy):
    conllu = str(tmp_path / "in.conllu")
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(SENTS, f)
    lines = ["The cat sat.", "", "It rains. We stay"]
    argv = ["--backend", "conllu", "--conllu", conllu, "--subword", "bpe", "--subword-model", codes,
            "--multi-root", policy]
    expected, settings = cli_outputs(tmp_path, argv, lines)
    ann = OnlineAnnotator(settings)
    blocks = conllu_blocks(conllu)  # one stream of blocks across calls, as fairseq-interactive's buffers
    out = ann.annotate_conllu(blocks, lines[:2]) + ann.annotate_conllu(blocks, lines[2:])
    assert [a.source for a in out] == expected["en"]
    for n in STREAMS:
        assert [a.streams[n] for a in out] == expected[n], n
    # without the lines, the blocks' words are the lines
    words = OnlineAnnotator(settings).annotate_conllu(conllu_blocks(conllu), None)
    assert [a.streams["head"] for a in words] == [expected["head"][0], expected["head"][2]]
    # a parse recorded as CoNLL-U cannot be redone by spaCy unless asked
    with pytest.raises(ValueError, match="backend='conllu'.*--input-conllu"):
        ann.annotate(["The cat sat."])


def test_bring_your_own_parse_errors(tmp_path, codes):
    conllu = str(tmp_path / "in.conllu")
    no_upos = Sentence(["The", "cat"], ["_", "_"], ["DT", "NN"], [2, 0], ["det", "root"])
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(SENTS[:1] + [no_upos], f)
    _, settings = cli_outputs(tmp_path, ["--backend", "conllu", "--conllu", conllu, "--subword", "none",
                                         "--pretokenized"], ["The cat sat .", "The cat"])
    ann = OnlineAnnotator(settings)
    with pytest.raises(InputError, match=r"does not match <input>:1 \(--pretokenized\).*'sat' vs 'mat'"):
        ann.annotate_conllu(conllu_blocks(conllu), ["The cat mat ."])
    blocks = conllu_blocks(conllu)
    ann.annotate_conllu(blocks, ["The cat sat ."], needed=("pos",))
    with pytest.raises(InputError, match=r"block 2 has no UPOS \(column 4\), which the model's 'pos' stream needs"):
        ann.annotate_conllu(blocks, ["The cat"], needed=("pos",))
    assert ann.annotate_conllu(conllu_blocks(conllu), ["The cat sat .", "The cat"], needed=("case",))[1].source
    with pytest.raises(InputError, match="no sentence block for input line"):
        ann.annotate_conllu(iter([]), ["The cat"])


def _recipe():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "wmt14_en_de", "prepare.py")
    spec = importlib.util.spec_from_file_location("wmt14_prepare", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_moses_settings_apply_the_recipe_tokenization(tmp_path, spacy_model, codes):
    """Settings recording the WMT recipe's Moses step: raw input is normalized and tokenized as
    prepare.py tokenized the training data, then annotated as --pretokenized text."""
    pytest.importorskip("sacremoses")
    prepare = _recipe()
    prepare._init_worker(("en",), False)
    raw = ["The well-known cat sat on 1,000.5 mats.", "\u201cIt rains,\u201d we said \u2013 don't we?", "",
           "A  cat & a dog \u00ab sat \u00bb"]
    tokenized = [prepare.tokenize(line, "en") for line in raw]
    assert "@-@" in tokenized[0] and "&" in tokenized[3]
    argv = ["--spacy-model", spacy_model, "--pretokenized", "--subword", "bpe", "--subword-model", codes]
    expected, settings = cli_outputs(tmp_path, argv, tokenized)
    settings = dataclasses.replace(settings, moses=MosesSettings(lang="en", normalize=True,
                                                                 aggressive_dash_splits=True, escape=False))
    got = online_outputs(OnlineAnnotator(settings), raw, batch=2)
    assert got == expected
    plain = online_outputs(OnlineAnnotator(dataclasses.replace(settings, moses=None)), raw, batch=2)
    assert plain["en"] != expected["en"]  # without the recorded Moses step the input would differ


@pytest.mark.parametrize("extra", [
    ["--subword", "bpe", "--max-words", "20"],
    ["--subword", "none", "--pretokenized", "--multi-root", "attach"],
], ids=["bpe-raw", "none-pretokenized"])
def test_segment_without_a_parser_gives_the_parsed_source(tmp_path, spacy_model, codes, extra):
    """For a model that reads no stream at inference: the source lines of the command line (raw text split by the
    recorded pipeline's tokenizer alone, loaded without a component; pre-tokenized text by its spaces), the line
    policies included, no stream, no parser built."""
    from syntax_nmt.annotate.backends.spacy_backend import load_tokenizer

    argv = ["--spacy-model", spacy_model, *extra]
    if "bpe" in extra:
        argv += ["--subword-model", codes]
    expected, settings = cli_outputs(tmp_path, argv, LINES)
    ann = OnlineAnnotator(settings)
    got = [a for k in range(0, len(LINES), 3) for a in ann.segment(LINES[k:k + 3])]
    assert [a.source for a in got] == expected["en"] and all(a.streams == {} for a in got)
    assert ann._backend is None  # no parser
    if "--pretokenized" in extra:
        assert ann._tokenizer is None
    else:
        assert load_tokenizer(spacy_model).pipe_names == []
        assert got[7].source == "" and "more than max_words=20" in got[7].note
    with pytest.raises(ValueError, match="2 source lines but 1 target lines"):
        ann.segment(LINES[:2], targets=["x"])


def test_segment_applies_the_recorded_moses_step_and_segments_targets(tmp_path, codes):
    """The recorded Moses step, then the words of pre-tokenized text: the source of annotate_conllu (the annotated
    path with a parse brought along), and the target segmented for scoring."""
    pytest.importorskip("sacremoses")
    conllu = str(tmp_path / "in.conllu")
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(SENTS, f)
    _, settings = cli_outputs(tmp_path, ["--backend", "conllu", "--conllu", conllu, "--subword", "bpe",
                                         "--subword-model", codes, "--pretokenized"],
                              ["The cat sat .", "It rains . We stay"])
    settings = dataclasses.replace(settings, moses=MosesSettings(lang="en", normalize=True,
                                                                 aggressive_dash_splits=True, escape=False))
    raw = ["The cat sat.", "", "It rains. We stay"]
    ann = OnlineAnnotator(settings)
    annotated = ann.annotate_conllu(conllu_blocks(conllu), raw)
    free = ann.segment(raw, targets=["Die Katze sass .", "", "Es regnet"])
    assert [a.source for a in free] == [a.source for a in annotated] and annotated[0].source
    assert [(a.target + " ").replace("@@ ", "").strip() for a in free] == ["Die Katze sass .", "", "Es regnet"]
    assert "@@" in free[0].target  # segmented with the recorded subword model
    plain = OnlineAnnotator(dataclasses.replace(settings, moses=None)).segment(raw)
    assert plain[0].source != free[0].source  # "sat." without the recorded Moses step


def test_settings_of_the_command_line_are_json(tmp_path, spacy_model):
    _, settings = cli_outputs(tmp_path, ["--spacy-model", spacy_model, "--subword", "none"], ["x"])
    assert json.loads(json.dumps(settings.to_dict())) == settings.to_dict()
    assert settings.extra["spacy_model"] == os.path.abspath(spacy_model)


def test_another_install_of_the_same_spacy_pipeline(tmp_path, spacy_model, codes):
    argv = ["--spacy-model", spacy_model, "--subword", "bpe", "--subword-model", codes]
    expected, settings = cli_outputs(tmp_path, argv, LINES[:4])
    moved = str(tmp_path / "moved-en")
    shutil.move(spacy_model, moved)
    try:
        with pytest.raises(OSError, match="cannot load spaCy pipeline"):
            OnlineAnnotator(settings).annotate(LINES[:1])
        assert online_outputs(OnlineAnnotator(settings, parser_model=moved), LINES[:4]) == expected
        # the option's older name (--annotate-spacy-model, hub: annotate_spacy_model) still works
        assert online_outputs(OnlineAnnotator(settings, spacy_model=moved), LINES[:4]) == expected
        with pytest.raises(ValueError, match="--annotate-parser-model .* and its older name --annotate-spacy-model"):
            OnlineAnnotator(settings, parser_model=moved, spacy_model=spacy_model)
        # the task's options, as fairseq-interactive and the hub set them, under either name
        from syntax_nmt.tasks.raw_inference import RawTextAnnotation
        from syntax_nmt.tasks.syntax_translation import SyntaxTranslationConfig, SyntaxTranslationTask

        for cfg_name, hub_name in (("annotate_parser_model", "parser_model"), ("annotate_spacy_model", "spacy_model")):
            task = SyntaxTranslationTask.__new__(SyntaxTranslationTask)
            task.cfg = SyntaxTranslationConfig(**{cfg_name: moved})
            task.raw_text = raw = RawTextAnnotation.__new__(RawTextAnnotation)
            raw.cfg, raw.model_settings, raw.options, raw._annotator = task.cfg, settings, {}, None
            assert task.annotator.parser_model == moved
            task.set_annotation_options(**{hub_name: moved})
            assert online_outputs(task.annotator, LINES[:4]) == expected
    finally:
        shutil.move(moved, spacy_model)


# -- invalid bytes: fairseq-interactive reads stdin with surrogateescape -----------------
@pytest.mark.parametrize("line, expected, count", [
    ("A dog .", "A dog .", 0),
    ("Bad \udcff .", "Bad \ufffd .", 1),  # b"Bad \xff ." read with surrogateescape
    ("\udcc3\udca9t\udce9", "\ufffd\ufffdt\ufffd", 3),  # every escaped byte is one replacement
    ("a \ud800 b \udfff", "a \ufffd b \ufffd", 2),  # unpaired high and low surrogates
    ("\udfff\ud83d", "\ufffd\ufffd", 2),  # low then high: not a pair
    ("a \ud83d\ude00 b", "a \U0001f600 b", 0),  # a UTF-16 pair is the character it encodes
    ("Bad \ufffd .", "Bad \ufffd .", 0),  # already replaced
])
def test_lone_surrogates_become_replacement_characters(line, expected, count):
    from syntax_nmt.annotate.textio import replace_lone_surrogates

    assert replace_lone_surrogates(line) == (expected, count)
    expected.encode("utf-8")  # what spaCy needs


def test_an_invalid_byte_is_replaced_with_a_warning_and_every_line_annotated(tmp_path, spacy_model, codes, caplog):
    _, settings = cli_outputs(tmp_path, ["--spacy-model", spacy_model, "--subword", "bpe", "--subword-model", codes],
                              ["x"])
    lines = ["The cat sat .", "The \udcff cat sat .", "the dogs ran"]
    clean = OnlineAnnotator(settings).annotate(["The cat sat .", "The \ufffd cat sat .", "the dogs ran"])
    ann = OnlineAnnotator(settings)
    caplog.clear()
    with caplog.at_level("WARNING", logger="syntax_nmt.annotate.online"):
        first = ann.annotate(lines[:1])
        got = first + ann.annotate(lines[1:])  # two buffers: the line number counts across them
    assert [(a.source, a.streams, a.note) for a in got] == [(a.source, a.streams, a.note) for a in clean]
    assert "\ufffd" in got[1].source and all(a.note is None for a in got)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ["input line 2: 1 undecodable character (invalid bytes, read as lone surrogates) "
                        "replaced by U+FFFD"]


def test_an_invalid_byte_in_a_line_with_its_own_parse(tmp_path, caplog):
    conllu = str(tmp_path / "in.conllu")
    with open(conllu, "w", encoding="utf-8") as f:  # the user's parser saw the byte as U+FFFD
        write_conllu([Sentence(["The", "\ufffd", "cat"], ["DET", "X", "NOUN"], ["DT", "FW", "NN"], [3, 3, 0],
                               ["det", "dep", "root"])], f)
    _, settings = cli_outputs(tmp_path, ["--backend", "conllu", "--conllu", conllu, "--subword", "none",
                                         "--pretokenized"], ["The \ufffd cat"])
    expected = OnlineAnnotator(settings).annotate_conllu(conllu_blocks(conllu), ["The \ufffd cat"])
    caplog.clear()
    got = OnlineAnnotator(settings).annotate_conllu(conllu_blocks(conllu), ["The \udcff cat"])
    assert got == expected and got[0].source == "The \ufffd cat"
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "input line 1: 1 undecodable character (invalid bytes, read as lone surrogates) replaced by U+FFFD"]


def test_the_hub_hands_the_annotation_options_to_the_task_under_either_name(monkeypatch):
    """``from_pretrained(..., annotate_parser_model=...)`` (older name ``annotate_spacy_model``) and the other
    annotation keywords reach the task's ``set_annotation_options``; fairseq gets the rest."""
    from syntax_nmt import hub

    seen = {}

    class Task:
        def set_annotation_options(self, **options):
            seen["options"] = options

    def load(path, checkpoint, data, archive_map=None, **kwargs):
        seen["fairseq"] = kwargs
        return {"args": None, "task": Task(), "models": []}

    monkeypatch.setattr(hub.hub_utils, "from_pretrained", load)
    monkeypatch.setattr(hub, "SyntaxHubInterface", lambda *a: a)
    hub.from_pretrained("m", annotate_parser_model="p", annotate_subword_model="s", annotation_settings_file="f",
                        beam=3)
    assert seen["options"] == {"parser_model": "p", "subword_model": "s", "settings_file": "f"}
    assert seen["fairseq"]["beam"] == 3 and "annotate_parser_model" not in seen["fairseq"]
    hub.from_pretrained("m", annotate_spacy_model="old")
    assert seen["options"] == {"spacy_model": "old"}
