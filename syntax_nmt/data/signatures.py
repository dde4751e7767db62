"""What a model's arguments (so its checkpoints) record of the dictionaries it was trained with (no fairseq import).

Every dictionary travels as a typed record, :class:`DictionaryRecord` (its name, size and the hash of its symbols in
order), made from the dictionary once and kept in the arguments as plain dicts (:meth:`DictionaryRecord.to_record`):

* the source and target word dictionaries (``word_dict_signature``) and the source streams' (``source_stream_dicts``):
  a checkpoint loaded on data whose dictionary differs (another order: no shape error, garbage translations) is
  refused by name; the encoder takes the streams' sizes from them;
* the target factors (``target_factor_dicts``), :class:`TargetFactor`: the task makes them from its factor
  dictionaries, the model builds its decoder from them.

Checkpoints trained before the records were typed kept each as a signature string, ``name:size:hash`` items joined
by commas; :func:`read_dictionaries` reads both forms, once per value (issue 57.4: the strings were parsed four times
in one ``fairseq-generate``).
"""

import hashlib
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Type, TypeVar

#: the model argument holding the target factors (records; a signature string in older checkpoints)
TARGET_FACTORS_ARG = "target_factor_dicts"
#: the model argument holding the source streams' dictionaries (records; a signature string in older checkpoints)
SOURCE_STREAMS_ARG = "source_stream_dicts"
#: the model argument holding the source and target word dictionaries (records; a signature string in older ones)
WORD_DICTS_ARG = "word_dict_signature"
R = TypeVar("R", bound="DictionaryRecord")


def dictionary_digest(symbols: Sequence[str]) -> str:
    """The hash of a dictionary's symbols, in order (10 hex digits of their MD5)."""
    return hashlib.md5("\n".join(symbols).encode("utf-8")).hexdigest()[:10]


def dictionary_signature(name: str, d) -> str:
    """``name:size:hash`` of a fairseq ``Dictionary`` ``d`` (a stream's, a language's): how checkpoints trained before
    the records were typed kept it (the tests write such checkpoints with it)."""
    return f"{name}:{len(d)}:{dictionary_digest(d.symbols)}"


def parse_signatures(value: Optional[str]) -> Dict[str, Tuple[int, str]]:
    """``"pos:20:ab12,case:8:cd34"`` -> ``{"pos": (20, "ab12"), ...}``, in order (``None`` or empty: none): the
    format of checkpoints trained before the records were typed."""
    out = {}
    for item in (value or "").split(","):
        if item:
            name, size, digest = item.split(":")
            out[name] = (int(size), digest)
    return out


@dataclass(frozen=True)
class DictionaryRecord:
    """A dictionary as a model records it: its name (a stream's, ``source``/``target`` for the word dictionaries),
    its size and the hash of its symbols in order (Sockeye passes its factors as such a typed config)."""

    name: str
    size: int
    digest: str

    @classmethod
    def of(cls, name: str, d):
        """The record of dictionary ``name``, the fairseq ``Dictionary`` ``d``."""
        return cls(name, len(d), dictionary_digest(d.symbols))

    def to_record(self) -> Dict[str, object]:
        """What the model's arguments keep (plain data: a checkpoint unpickles it without this class)."""
        return asdict(self)

    def describe(self) -> str:
        """``20 types, hash ab12``: how a message names it."""
        return f"{self.size} types, hash {self.digest}"


class TargetFactor(DictionaryRecord):
    """One target factor the decoder predicts: its name (a target tag stream, ``pos``) and its dictionary's size and
    hash."""


def read_dictionaries(value, arg: str, record: Type[R] = DictionaryRecord) -> List[R]:
    """The dictionaries recorded in a model's argument ``arg``, in order, as ``record`` instances: records (what
    :meth:`DictionaryRecord.to_record` gives; dict-like, e.g. an omegaconf node) or, from a checkpoint trained before
    they were typed, the signature string ``"pos:19:ab12,dep:40:cd34"``. None or empty: none.

    Raises:
        ValueError: a value of neither form, naming ``arg``.
    """
    if not value:
        return []
    if isinstance(value, str):
        try:
            return [record(name, size, digest) for name, (size, digest) in parse_signatures(value).items()]
        except ValueError as e:
            raise ValueError(f"{arg}: not a signature string name:size:hash,... ({value!r}: {e})") from None
    try:
        return [record(str(r["name"]), int(r["size"]), str(r["digest"])) for r in value]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{arg}: dictionary records or a signature string, got {value!r} ({e})") from None


def read_target_factors(value) -> List[TargetFactor]:
    """The target factors recorded in a model's arguments (:data:`TARGET_FACTORS_ARG`), in the order the decoder
    predicts them (:func:`read_dictionaries`)."""
    return read_dictionaries(value, TARGET_FACTORS_ARG, TargetFactor)


def records_by_name(records: Sequence[DictionaryRecord]) -> Dict[str, DictionaryRecord]:
    """``name -> record``."""
    return {r.name: r for r in records}
