"""The contract between the data and the model, :class:`~syntax_nmt.tasks.source_streams.SourceStreams`, on its own:
a data directory of stream dictionaries made here (no corpus, no model), exact streams, messages and log lines.

The integration tests (``tests/integration/test_inference_needs.py``) build the task and models on the binarized
corpus; these reach the same decisions in milliseconds, so that mutation testing runs them against every mutant of
``tasks/source_streams.py`` (issue 60)."""

import hashlib
import logging
import os

import pytest

from syntax_nmt.data.signatures import read_dictionaries

from syntax_nmt.data.streams import StreamConfigError
from syntax_nmt.tasks.source_streams import SOURCE_PARSE, SourceStreams, needs_parse_message

PARSE_NEEDS = {"--syntax-attention sgnet": ["subword", "head"]}
FEATURE_NEEDS = {"--source-features pos,case": ["pos", "case"]}
DEFAULT_REMEDY = ("leave --source-parse at auto (hub: source_parse='auto'): raw text is then annotated with the "
                  "recorded parser (or --input-conllu FILE, hub: translate_conllu), and fairseq-generate reads the "
                  "data directory's stream files (syntax-nmt-binarize)")


def binarize_remedy(dicts, auto=True):
    """What supplies missing streams (issue 56.7: one advice for fairseq-generate and raw text)."""
    remedy = ("give the data directory the model was trained on (syntax-nmt-binarize of syntax-nmt-annotate's output): "
              "fairseq-generate reads the streams from its files, and raw text (fairseq-interactive, the hub) is "
              f"annotated with them against their dictionaries ({dicts}), for which a folder with only its dict.*.txt "
              "and annotation.json will do")
    return remedy if auto else f"name them in --source-streams (or leave it at auto) and {remedy}"
SGNET_READS = "--syntax-attention sgnet reads the source parse (streams subword, head)"
ANNOTATION_ONLY = "the model reads at inference what only the annotation gives: "


def _signature(streams, names):
    """The records of ``names``' dictionaries as the checkpoint string of before issue 57.4 (name:size:digest,...):
    the form these tests compare."""
    return ",".join(f"{r.name}:{r.size}:{r.digest}" for r in streams.dictionary_records(names))


def _mss(streams, required, recorded=None, **kwargs):
    """``model_stream_dictionaries`` with a recorded string read as a checkpoint's (read_dictionaries), its records
    given back as that string."""
    records = read_dictionaries(recorded, "source_stream_dicts") if isinstance(recorded, str) else recorded
    return ",".join(f"{r.name}:{r.size}:{r.digest}"
                    for r in streams.model_stream_dictionaries(required, records, **kwargs))


def data_dir(root, streams=("pos", "case", "subword", "dep"), heads=True, symbols=None):
    """A data directory with the dictionaries of ``streams`` (``symbols[name]``: its types, default 3 of each) and,
    with ``heads``, a binarized head stream of the en-de pair (an empty index file)."""
    root.mkdir(exist_ok=True)
    for name in streams:
        types = (symbols or {}).get(name, [f"{name.upper()}{i}" for i in range(3)])
        (root / f"dict.{name}.txt").write_text("".join(f"{t} 1\n" for t in types))
    if heads:
        (root / "train.en-de.head.idx").write_bytes(b"")
    return str(root)


def streams_of(path, option="auto", dictionaries_only=False):
    return SourceStreams(option, path, "en", "de", dictionaries_only=dictionaries_only)


def state(s):
    """What the contract settled: the streams read from binarized data, annotated, the model's and its needs."""
    return s.streams, s.annotated, s.model_streams, s.model_needs


def test_needs_parse_message_names_the_problem_the_readers_and_the_remedy():
    assert needs_parse_message(PARSE_NEEDS, "--source-parse never") == (
        f"--source-parse never: {ANNOTATION_ONLY}{SGNET_READS}; {DEFAULT_REMEDY}")
    assert needs_parse_message({**FEATURE_NEEDS, **PARSE_NEEDS}, "P", "do R") == (
        f"P: {ANNOTATION_ONLY}--source-features pos,case reads the parser's annotation (streams pos, case); "
        f"{SGNET_READS}; do R")
    assert SOURCE_PARSE == ("auto", "always", "never")


def test_auto_takes_what_the_directory_offers_with_their_dictionaries(tmp_path, caplog):
    path = data_dir(tmp_path / "d", symbols={"pos": ["NOUN", "VERB"]})
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        s = streams_of(path)
    assert s.auto and s.data_path == path
    assert s.streams == ["pos", "case", "subword", "head", "dep"] and s.available == s.streams
    assert s.available is not s.streams
    assert sorted(s.dicts) == ["case", "dep", "pos", "subword"]
    assert s.dicts["pos"].symbols[-2:] == ["NOUN", "VERB"] and len(s.dicts["pos"]) == 6  # 4 special symbols
    assert state(s) == (["pos", "case", "subword", "head", "dep"], ["pos", "case", "subword", "head", "dep"], None,
                        None)
    assert (s._raw, s._translating_model) == (None, False)
    assert [r.getMessage() for r in caplog.records] == [
        "source streams: pos (6 types), case (7 types), subword (7 types), head, dep (7 types)"]
    assert {r.levelname for r in caplog.records} == {"INFO"}


def test_pad_bos_and_signature(tmp_path):
    s = streams_of(data_dir(tmp_path / "d", symbols={"pos": ["NOUN", "VERB"]}))
    assert (s.pad("pos"), s.bos("pos"), s.pad("head"), s.bos("head")) == (1, 0, 0, 0)
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    pos = hashlib.md5("\n".join(specials + ["NOUN", "VERB"]).encode()).hexdigest()[:10]
    case = hashlib.md5("\n".join(specials + ["CASE0", "CASE1", "CASE2"]).encode()).hexdigest()[:10]
    assert _signature(s, ["pos", "head", "case"]) == f"pos:6:{pos},case:7:{case}"
    assert _signature(s, ["head"]) == "" and _signature(s, []) == ""


def test_heads_join_a_directory_of_dictionaries_only_with_auto(tmp_path, caplog):
    path = data_dir(tmp_path / "d", streams=("pos",), heads=False)
    assert streams_of(path).streams == ["pos"]
    assert SourceStreams("auto", path, "en", "de").streams == ["pos"]  # by default the directory has binarized data
    assert streams_of(path, dictionaries_only=True).streams == ["pos", "head"]
    assert streams_of(path, "pos", dictionaries_only=True).streams == ["pos"]  # an explicit list is kept
    assert streams_of(data_dir(tmp_path / "h", streams=()), dictionaries_only=True).streams == ["head"]
    empty = data_dir(tmp_path / "e", streams=(), heads=False)
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        caplog.clear()
        s = streams_of(empty)
    assert (s.streams, s.dicts) == ([], {})
    assert [r.getMessage() for r in caplog.records] == ["source streams: none"]


def test_an_explicit_list_and_its_errors(tmp_path):
    path = data_dir(tmp_path / "d", streams=("pos",), heads=False)
    s = streams_of(path, "head,pos,head")
    assert (s.auto, s.streams, sorted(s.dicts), s.available) == (False, ["head", "pos"], ["pos"], ["head", "pos"])
    assert streams_of(path, "").streams == []
    with pytest.raises(StreamConfigError) as e:
        streams_of(path, "pos,tag")
    assert str(e.value) == ("--source-streams pos,tag: unknown stream 'tag'; known streams: pos, case, subword, head, "
                            "dep")
    with pytest.raises(StreamConfigError) as e:
        streams_of(path, "pos,case")
    assert str(e.value) == f"stream 'case' requested but {os.path.join(path, 'dict.case.txt')} does not exist"


# -- training: the task narrows itself to what the model reads -------------------------------------------------------

def test_training_narrows_auto_to_the_model_and_returns_its_signature(tmp_path, caplog):
    s = streams_of(data_dir(tmp_path / "d"))
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        caplog.clear()
        sig = _mss(s, ("case", "head"))
    assert sig == _signature(s, ["case"]) and sig.startswith("case:7:")
    assert state(s) == (["case", "head"], ["case", "head"], ["case", "head"], {"the model": ["case", "head"]})
    assert s._translating_model is False
    assert caplog.records == []  # training logs nothing here
    assert s.available == ["pos", "case", "subword", "head", "dep"]
    s = streams_of(data_dir(tmp_path / "d"))
    assert _mss(s, []) == ""
    assert state(s) == ([], [], [], {})
    s = streams_of(data_dir(tmp_path / "d"))
    _mss(s, ["subword", "head"], at_inference={})
    assert state(s) == (["subword", "head"], ["subword", "head"], ["subword", "head"], {})


def test_training_needs_every_stream_and_an_explicit_list_must_match(tmp_path):
    path = data_dir(tmp_path / "d", streams=("pos",), heads=False)
    with pytest.raises(StreamConfigError) as e:
        _mss(streams_of(path), ["pos", "subword", "head"], at_inference={})
    assert str(e.value) == ("missing streams ['subword', 'head'] (the model needs ['pos', 'subword', 'head']; the "
                            "data directory has ['pos'])")
    with pytest.raises(StreamConfigError) as e:
        _mss(streams_of(path, "pos,head"), ["pos", "subword"])
    assert str(e.value) == ("missing streams ['subword'] (the model needs ['pos', 'subword']; --source-streams gives "
                            "['pos', 'head']); extra streams ['head'] the model was not trained with (it uses ['pos', "
                            "'subword'])")
    with pytest.raises(StreamConfigError) as e:
        _mss(streams_of(path, "pos,head"), ["head"])
    assert str(e.value) == "extra streams ['pos'] the model was not trained with (it uses ['head'])"
    s = streams_of(path, "head,pos")
    assert _mss(s, ["pos", "head"]) == _signature(s, ["pos"])
    assert state(s) == (["pos", "head"], ["pos", "head"], ["pos", "head"], {"the model": ["pos", "head"]})


def test_once_narrowed_training_reads_only_the_models_streams(tmp_path):
    """The task loads what the contract settled: a second model built for training may not need a stream the first
    one narrowed the task away from (the directory still has it)."""
    s = streams_of(data_dir(tmp_path / "d"))
    _mss(s, ["pos"])
    with pytest.raises(StreamConfigError) as e:
        _mss(s, ["pos", "case"])
    assert str(e.value) == "missing streams ['case'] (the model needs ['pos', 'case']; the data directory has ['pos'])"
    assert _mss(s, ["pos"]) == _signature(s, ["pos"])
    assert s.available == ["pos", "case", "subword", "head", "dep"]


def test_a_recorded_dictionary_that_differs_is_refused(tmp_path):
    path = data_dir(tmp_path / "d")
    s = streams_of(path)
    recorded = "pos:7:0123456789,head:0:x,dep:9:abcdefabcd"
    with pytest.raises(StreamConfigError) as e:
        _mss(s, ["pos", "case"], recorded)
    current = _signature(s, ["pos"]).split(":")[2]
    assert str(e.value) == (f"dictionary of stream 'pos' differs from the one the checkpoint was trained with (7 types, "
                            f"hash 0123456789 vs 7 types, hash {current}): binarize with --streamdict-dir pointing at "
                            f"the training data")
    same = _signature(s, ["pos", "case"])
    assert _mss(streams_of(path), ["pos", "case"], same) == same
    # a stream the checkpoint did not record, or one without a dictionary, is not compared; training returns the
    # data's signature, translation the checkpoint's
    assert _mss(streams_of(path), ["pos", "head"], "dep:1:a") == _signature(s, ["pos"])
    assert _mss(streams_of(path), ["pos", "head"], "dep:1:a", translating=True) == "dep:1:a"
    size_only = f"pos:8:{current}"
    with pytest.raises(StreamConfigError, match=r"\(8 types, hash [0-9a-f]{10} vs 7 types"):
        _mss(streams_of(path), ["pos"], size_only, translating=True)


# -- translation: what the model reads at inference -----------------------------------------------------------------

def test_translating_reads_what_the_data_has_and_annotates_what_inference_reads(tmp_path, caplog):
    path = data_dir(tmp_path / "d")
    s = streams_of(path)
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        caplog.clear()
        recorded = _signature(s, ["subword"]) + ",dep:9:0123456789"
        sig = _mss(s, ["subword", "head"], recorded, at_inference={}, translating=True)
    assert sig == recorded
    assert state(s) == (["subword", "head"], [], ["subword", "head"], {})
    assert s._translating_model is True
    assert [r.getMessage() for r in caplog.records] == [
        "translating (--source-parse auto): the model reads no source stream at inference; streams read from "
        "binarized data: subword, head; raw text: tokenized and segmented as recorded, no parser"]
    s = streams_of(path)
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        caplog.clear()
        assert _mss(s, ["subword", "head"], at_inference=PARSE_NEEDS, translating=True) == \
            _signature(s, ["subword"])
    assert state(s) == (["subword", "head"], ["subword", "head"], ["subword", "head"], PARSE_NEEDS)
    assert [r.getMessage() for r in caplog.records] == [
        f"translating (--source-parse auto): {SGNET_READS}; streams read from binarized data: subword, head; raw "
        f"text: annotated (subword, head)"]


def test_translating_without_the_stream_files(tmp_path, caplog):
    """LISA: a directory of the word dictionaries only; the parse it was trained with is not needed."""
    path = data_dir(tmp_path / "d", streams=(), heads=False)
    s = streams_of(path)
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        caplog.clear()
        assert _mss(s, ["subword", "head"], at_inference={}, translating=True) == ""
    assert state(s) == ([], [], ["subword", "head"], {})
    assert caplog.records[-1].getMessage().endswith("streams read from binarized data: none; raw text: tokenized "
                                                    "and segmented as recorded, no parser")
    with pytest.raises(StreamConfigError) as e:
        _mss(streams_of(path), ["subword", "head"], at_inference=PARSE_NEEDS, translating=True)
    assert str(e.value) == (f"the data directory {path} lacks the streams ['subword', 'head']: {ANNOTATION_ONLY}"
                            f"{SGNET_READS}; {binarize_remedy('dict.subword.txt')}")
    with pytest.raises(StreamConfigError) as e:
        _mss(streams_of(path, ""), ["pos"], translating=True)
    assert str(e.value) == (f"--source-streams lacks the streams ['pos']: {ANNOTATION_ONLY}the model reads the streams "
                            f"(streams pos); {binarize_remedy('dict.pos.txt', auto=False)}")
    with pytest.raises(StreamConfigError) as e:  # always: every stream it was trained with
        _mss(streams_of(path), ["subword", "head"], at_inference={}, translating=True, mode="always")
    assert str(e.value) == "missing streams ['subword', 'head'] (the model needs ['subword', 'head']; the data " \
                           "directory has [])"


def test_source_parse_always_and_never(tmp_path, caplog):
    path = data_dir(tmp_path / "d")
    s = streams_of(path)
    _mss(s, ["subword", "head"], at_inference={}, translating=True, mode="always")
    assert state(s) == (["subword", "head"], ["subword", "head"], ["subword", "head"], {})
    s = streams_of(path)
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.source_streams"):
        caplog.clear()
        _mss(s, ["subword", "head"], at_inference={}, translating=True, mode="never")
    assert state(s) == ([], [], ["subword", "head"], {})
    assert [r.getMessage() for r in caplog.records] == [
        "translating (--source-parse never): the model reads no source stream at inference; streams read from "
        "binarized data: none; raw text: tokenized and segmented as recorded, no parser"]
    with pytest.raises(StreamConfigError) as e:
        _mss(streams_of(path), ["subword", "head"], at_inference=PARSE_NEEDS, translating=True,
                                                mode="never")
    assert str(e.value) == f"--source-parse never: {ANNOTATION_ONLY}{SGNET_READS}; {DEFAULT_REMEDY}"
    with pytest.raises(StreamConfigError, match=r"^--source-parse never: .*the model reads the streams \(streams "
                                                r"pos\)"):
        _mss(streams_of(path), ["pos"], translating=True, mode="never")
    # never is about translation: training reads what the model needs
    s = streams_of(path)
    _mss(s, ["pos"], at_inference=FEATURE_NEEDS, mode="never")
    assert state(s) == (["pos"], ["pos"], ["pos"], FEATURE_NEEDS)


def test_an_ensemble_reads_what_any_member_reads(tmp_path):
    path = data_dir(tmp_path / "d")
    features, parse = (["pos"], FEATURE_NEEDS), (["subword", "head"], PARSE_NEEDS)
    for first, second, annotated in ((features, parse, ["pos", "case", "subword", "head"]),
                                     (parse, features, ["subword", "head", "pos", "case"])):
        s = streams_of(path)
        _mss(s, first[0], at_inference=first[1], translating=True)
        sig = _mss(s, second[0], at_inference=second[1], translating=True)
        union = first[0] + second[0]
        assert state(s) == (union, annotated, union, {**first[1], **second[1]})
        assert sig == _signature(s, union) and sig.count(":") == 4
    s = streams_of(path)  # a parse-free member after one that reads the parse, and the other way round
    _mss(s, ["subword", "head"], at_inference=PARSE_NEEDS, translating=True)
    _mss(s, ["subword", "head"], at_inference={}, translating=True)
    assert state(s) == (["subword", "head"], ["subword", "head"], ["subword", "head"], PARSE_NEEDS)
    s = streams_of(path)
    _mss(s, ["subword", "head"], at_inference={}, translating=True)
    _mss(s, ["subword", "head"], at_inference=PARSE_NEEDS, translating=True)
    assert state(s) == (["subword", "head"], ["subword", "head"], ["subword", "head"], PARSE_NEEDS)
    s = streams_of(path)  # a model trained first is not a member of the ensemble
    _mss(s, ["pos"], at_inference=FEATURE_NEEDS)
    _mss(s, ["subword", "head"], at_inference={}, translating=True)
    assert state(s) == (["subword", "head"], [], ["subword", "head"], {})


def test_an_ensemble_member_that_reads_the_parse_without_the_stream_files(tmp_path):
    path = data_dir(tmp_path / "d", streams=(), heads=False)
    s = streams_of(path)
    _mss(s, ["subword", "head"], at_inference={}, translating=True)
    with pytest.raises(StreamConfigError) as e:
        _mss(s, ["subword", "head"], at_inference=PARSE_NEEDS, translating=True)
    assert str(e.value).startswith(f"the data directory {path} lacks the streams ['subword', 'head']: "
                                   f"{ANNOTATION_ONLY}{SGNET_READS};")
    s = streams_of(path)  # never: refused whichever member reads the parse
    _mss(s, ["subword", "head"], at_inference={}, translating=True, mode="never")
    with pytest.raises(StreamConfigError, match=r"^--source-parse never: "):
        _mss(s, ["subword", "head"], at_inference=PARSE_NEEDS, translating=True, mode="never")
    s = streams_of(path)
    _mss(s, [], at_inference={}, translating=True, mode="never")
    _mss(s, ["subword", "head"], at_inference={}, translating=True, mode="never")
    assert s.model_needs == {} and s.model_streams == ["subword", "head"]


# -- the hub's source_parse, once the model is loaded ----------------------------------------------------------------

def test_set_source_parse(tmp_path):
    path = data_dir(tmp_path / "d")
    s = streams_of(path)
    s.set_source_parse("always")  # no model yet: nothing to apply
    assert s.annotated == ["pos", "case", "subword", "head", "dep"]
    _mss(s, ["pos", "subword", "head"], at_inference={**FEATURE_NEEDS, **PARSE_NEEDS},
                             translating=True)
    s.set_source_parse("always")
    assert s.annotated == ["pos", "subword", "head"]
    s.set_source_parse("auto")
    assert s.annotated == ["pos", "case", "subword", "head"]
    with pytest.raises(StreamConfigError) as e:
        s.set_source_parse("never")
    assert str(e.value) == (f"source_parse='never': {ANNOTATION_ONLY}--source-features pos,case reads the parser's "
                            f"annotation (streams pos, case); {SGNET_READS}; {DEFAULT_REMEDY}")
    assert s.annotated == ["pos", "case", "subword", "head"]
    with pytest.raises(ValueError) as e:
        s.set_source_parse("sometimes")
    assert str(e.value) == "source_parse must be one of auto, always, never, got 'sometimes'"
    s = streams_of(path)
    _mss(s, ["subword", "head"], at_inference={}, translating=True)
    s.set_source_parse("always")
    assert s.annotated == ["subword", "head"]
    s.set_source_parse("never")
    assert s.annotated == []
    s.set_source_parse("auto")
    assert s.annotated == []


def test_set_source_parse_always_needs_the_tag_dictionaries(tmp_path):
    s = streams_of(data_dir(tmp_path / "d", streams=(), heads=False))
    _mss(s, ["pos", "subword", "head"], at_inference={}, translating=True)
    with pytest.raises(StreamConfigError) as e:
        s.set_source_parse("always")
    assert str(e.value) == ("source_parse='always': the data directory has no dictionary of the streams ['pos', "
                            "'subword'] (dict.STREAM.txt): use the training data's")
    assert s.annotated == []
    s.set_source_parse("auto")
    assert s.annotated == []
    s = streams_of(data_dir(tmp_path / "h", streams=("subword",), heads=False))
    _mss(s, ["subword", "head"], at_inference={}, translating=True)
    s.set_source_parse("always")  # heads need no dictionary
    assert s.annotated == ["subword", "head"]
