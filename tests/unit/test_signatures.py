"""The dictionaries' records of a model's arguments (syntax_nmt/data/signatures.py, issue 57.4): typed records made
once, kept as plain dicts, and the ``name:size:hash`` strings of older checkpoints read into the same records."""

import pytest
from omegaconf import OmegaConf

from syntax_nmt.data.signatures import (DictionaryRecord, TargetFactor, dictionary_signature, parse_signatures,
                                        read_dictionaries, read_target_factors, records_by_name)


class _Dictionary:
    """What the records read of a fairseq ``Dictionary``: its symbols and its length."""

    def __init__(self, *symbols):
        self.symbols = ["<s>", "<pad>", "</s>", "<unk>", *symbols]

    def __len__(self):
        return len(self.symbols)


POS, CASE = _Dictionary("DET", "NOUN"), _Dictionary("l", "u", "o")


def test_a_record_is_made_once_from_the_dictionary_and_kept_as_plain_data():
    pos = DictionaryRecord.of("pos", POS)
    assert (pos.name, pos.size, len(pos.digest)) == ("pos", 6, 10)
    assert pos.to_record() == {"name": "pos", "size": 6, "digest": pos.digest}
    assert pos.describe() == f"6 types, hash {pos.digest}"
    assert DictionaryRecord.of("pos", _Dictionary("NOUN", "DET")).digest != pos.digest  # the order counts
    assert dictionary_signature("pos", POS) == f"pos:6:{pos.digest}"  # what older checkpoints kept


@pytest.mark.parametrize("kept", ["records", "omegaconf", "old string"])
def test_records_plain_dicts_and_the_old_strings_read_alike(kept):
    records = [DictionaryRecord.of("pos", POS), DictionaryRecord.of("case", CASE)]
    value = {"records": [r.to_record() for r in records],
             "omegaconf": OmegaConf.create([r.to_record() for r in records]),
             "old string": f"{dictionary_signature('pos', POS)},{dictionary_signature('case', CASE)}"}[kept]
    assert read_dictionaries(value, "source_stream_dicts") == records
    assert list(records_by_name(records)) == ["pos", "case"]
    factors = read_target_factors(value)
    assert [type(f) for f in factors] == [TargetFactor, TargetFactor] and factors != records  # typed by their use
    assert [(f.name, f.size, f.digest) for f in factors] == [(r.name, r.size, r.digest) for r in records]


@pytest.mark.parametrize("value", [None, "", []])
def test_nothing_recorded_is_no_dictionary(value):
    assert read_dictionaries(value, "word_dict_signature") == []


@pytest.mark.parametrize("value,message", [
    ("pos:6", r"^source_stream_dicts: not a signature string name:size:hash"),
    ("pos:six:ab", r"^source_stream_dicts: not a signature string name:size:hash"),
    ([{"name": "pos", "size": 6}], r"^source_stream_dicts: dictionary records or a signature string"),
    (7, r"^source_stream_dicts: dictionary records or a signature string"),
])
def test_a_value_of_neither_form_is_refused_by_its_argument(value, message):
    with pytest.raises(ValueError, match=message):
        read_dictionaries(value, "source_stream_dicts")


def test_the_records_of_an_older_checkpoints_dictionaries_are_the_ones_it_recorded():
    """The hash is the one older checkpoints recorded (issue 57.4's mutation run: a changed separator of the symbols
    survived the tests above, which only compared records made alike): the kept checkpoint of an earlier version
    (``tests/e2e/data/legacy_all/``) recorded its streams' dictionaries as a string; the records made now from the
    same dictionary files are what that string reads into."""
    import os

    import torch
    from fairseq.data import Dictionary

    import syntax_nmt.checkpoint_compat  # noqa: F401
    from syntax_nmt.data.streams import stream_dict_path

    legacy = os.path.join(os.path.dirname(__file__), os.pardir, "e2e", "data", "legacy_all")
    recorded = torch.load(os.path.join(legacy, "checkpoint.pt"), map_location="cpu",
                          weights_only=True)["cfg"]["model"].source_stream_dicts
    records = read_dictionaries(recorded, "source_stream_dicts")
    assert [r.name for r in records] == ["pos", "case", "subword"]
    assert records == [DictionaryRecord.of(r.name, Dictionary.load(stream_dict_path(os.path.join(legacy, "data-bin"),
                                                                                   r.name))) for r in records]


def test_the_old_strings_parse_in_order_and_nothing_is_no_dictionary():
    assert parse_signatures("pos:20:ab12,case:8:cd34") == {"pos": (20, "ab12"), "case": (8, "cd34")}
    assert list(parse_signatures("case:8:cd34,pos:20:ab12")) == ["case", "pos"]
    assert parse_signatures(None) == parse_signatures("") == {}


def test_a_bad_target_factor_value_is_named_by_its_argument():
    with pytest.raises(ValueError, match=r"^target_factor_dicts: dictionary records or a signature string"):
        read_target_factors(7)
