"""What the task records in the model's arguments, as values (issue 57.1): one read and one write of the arguments
(``ModelRecords``), and functions that take the values they decide on and return what the task applies and records."""

import logging
from argparse import Namespace

import pytest
from fairseq.data import Dictionary
from omegaconf import OmegaConf

from syntax_nmt.data.signatures import TARGET_FACTORS_ARG
from syntax_nmt.data.streams import StreamConfigError
from syntax_nmt.tasks.checkpoint_records import (
    ModelRecords,
    source_prepend_bos,
    source_truncation,
    word_dictionaries,
)


def _dictionary(*words):
    d = Dictionary()
    for w in words:
        d.add_symbol(w)
    return d


def test_records_are_read_from_a_namespace_and_a_config_under_their_own_names():
    saved = Namespace(word_dict_signature="source:6:ab", truncate_source=True, target_factor_input=True,
                      target_factor_dicts=[{"name": "pos", "size": 9, "digest": "cd"}], dropout=0.1)
    expected = ModelRecords(word_dict_signature="source:6:ab", source_prepend_bos=None, truncate_source=True,
                            target_factor_dicts=[{"name": "pos", "size": 9, "digest": "cd"}],
                            annotation_settings=None, target_factor_input=True)
    assert ModelRecords.read(saved) == expected
    config = OmegaConf.create(vars(saved))
    OmegaConf.set_struct(config, True)  # as fairseq hands a model's config
    read = ModelRecords.read(config)
    assert [dict(r) for r in read.target_factor_dicts] == expected.target_factor_dicts
    assert (read.word_dict_signature, read.source_prepend_bos, read.truncate_source) == ("source:6:ab", None, True)
    assert ModelRecords.read(Namespace()) == ModelRecords()  # a checkpoint from before any record
    assert TARGET_FACTORS_ARG in ModelRecords.WRITTEN  # the field is the argument the model reads


def test_write_sets_what_is_recorded_and_nothing_else():
    records = ModelRecords(word_dict_signature="s", source_prepend_bos=False, truncate_source=None,
                           target_factor_dicts=[], annotation_settings=None, target_factor_input=True)
    args = Namespace(dropout=0.1)
    records.write(args)
    assert vars(args) == {"dropout": 0.1, "word_dict_signature": "s", "source_prepend_bos": False,
                          "target_factor_dicts": []}
    config = OmegaConf.create({"dropout": 0.1})
    OmegaConf.set_struct(config, True)
    records.write(config)
    assert OmegaConf.to_container(config) == {"dropout": 0.1, "word_dict_signature": "s",
                                              "source_prepend_bos": False, "target_factor_dicts": []}


@pytest.mark.parametrize("asked,recorded,from_checkpoint,applied", [
    (False, None, False, False), (True, None, False, True), (True, False, False, True),  # training: as asked
    (False, None, True, False), (True, None, True, True),  # a checkpoint that recorded nothing: as asked
    (False, False, True, False), (True, True, True, True),  # as recorded
    (False, True, True, True),  # trained with BOS: applied though not asked
])
def test_source_prepend_bos(asked, recorded, from_checkpoint, applied):
    assert source_prepend_bos(asked, recorded, from_checkpoint) is applied


def test_source_prepend_bos_asked_of_a_checkpoint_trained_without_it():
    with pytest.raises(StreamConfigError, match=r"^--source-prepend-bos is given, but the checkpoint was trained "
                                                 r"without it"):
        source_prepend_bos(True, False, True)


@pytest.mark.parametrize("asked,recorded,model,max_source,expected", [
    (False, None, 12, 1024, (False, 1024)),  # no truncation: this command line's positions
    (False, False, 12, 1024, (False, 1024)),
    (False, True, 12, 1024, (True, 12)),  # recorded: applied, cut to the model's positions
    (True, None, 12, 1024, (True, 12)),  # asked for
    (True, True, 1024, 100, (True, 100)),  # this command line's shorter positions stay
    (True, False, 100, 100, (True, 100)),
])
def test_source_truncation(asked, recorded, model, max_source, expected, caplog):
    with caplog.at_level(logging.INFO, logger="syntax_nmt.tasks.checkpoint_records"):
        assert source_truncation(asked, recorded, model, max_source) == expected
    logged = [r.getMessage() for r in caplog.records]
    assert logged == ([f"the checkpoint was trained with --truncate-source: sources longer than its {model} source "
                       "positions are truncated as in training"] if recorded and not asked else [])


def test_word_dictionaries_records_and_the_dictionary_that_differs():
    """The word dictionaries travel as typed records (issue 57.4); a checkpoint's records, as plain dicts, or its
    ``name:size:hash`` string from before they were typed, are checked alike."""
    from syntax_nmt.data.signatures import DictionaryRecord, dictionary_signature

    src, tgt = _dictionary("a", "b"), _dictionary("x")
    records = word_dictionaries({"source": (src, "d/dict.en.txt"), "target": (tgt, "d/dict.de.txt")}, None)
    assert records == [DictionaryRecord("source", len(src), DictionaryRecord.of("s", src).digest),
                       DictionaryRecord("target", len(tgt), DictionaryRecord.of("t", tgt).digest)]
    kept = [r.to_record() for r in records]  # what the checkpoint keeps
    old = f"{dictionary_signature('source', src)},{dictionary_signature('target', tgt)}"  # an older checkpoint's
    assert old == ",".join(f"{r.name}:{r.size}:{r.digest}" for r in records)
    for recorded in (kept, old):
        assert word_dictionaries({"source": (src, "d/dict.en.txt"), "target": (tgt, "d/dict.de.txt")},
                                 recorded) == records
        assert word_dictionaries({"source": (src, "p"), "target": (None, "q")}, recorded) == records[:1]
        swapped = _dictionary("b", "a")
        with pytest.raises(StreamConfigError, match=r"^the source dictionary e/dict.en.txt differs from the one the "
                                                    r"checkpoint was trained with \(6 types, hash \w+ vs 6 types"):
            word_dictionaries({"source": (swapped, "e/dict.en.txt"), "target": (tgt, "e/dict.de.txt")}, recorded)
