"""What a model's arguments (so its checkpoints) record of the dictionaries it was trained with (no fairseq import).

* A dictionary's *signature*, ``name:size:hash`` (the hash of its symbols in order): the source and target word
  dictionaries (``word_dict_signature``) and the source streams' (``source_stream_dicts``) are recorded as
  comma-separated signatures; a checkpoint loaded on data whose dictionary differs (another order: no shape error,
  garbage translations) is refused by name.
* The target factors (``target_factor_dicts``) travel as typed records, :class:`TargetFactor`: the task makes them
  from its factor dictionaries, the model builds its decoder from them, the checkpoint keeps them as plain dicts
  (:meth:`TargetFactor.to_record`). Checkpoints trained before kept them as a signature string, which
  :func:`read_target_factors` still reads.
"""

import hashlib
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

#: the model argument holding the target factors (records; a signature string in older checkpoints)
TARGET_FACTORS_ARG = "target_factor_dicts"


def dictionary_digest(symbols: Sequence[str]) -> str:
    """The hash of a dictionary's symbols, in order (10 hex digits of their MD5)."""
    return hashlib.md5("\n".join(symbols).encode("utf-8")).hexdigest()[:10]


def dictionary_signature(name: str, d) -> str:
    """``name:size:hash`` of a fairseq ``Dictionary`` ``d`` (a stream's, a language's)."""
    return f"{name}:{len(d)}:{dictionary_digest(d.symbols)}"


def parse_signatures(value: Optional[str]) -> Dict[str, Tuple[int, str]]:
    """``"pos:20:ab12,case:8:cd34"`` -> ``{"pos": (20, "ab12"), ...}``, in order (``None`` or empty: none)."""
    out = {}
    for item in (value or "").split(","):
        if item:
            name, size, digest = item.split(":")
            out[name] = (int(size), digest)
    return out


@dataclass(frozen=True)
class TargetFactor:
    """One target factor the decoder predicts: its name (a target tag stream, ``pos``) and its dictionary's size and
    hash (Sockeye passes its factors as such a typed config)."""

    name: str
    size: int
    digest: str

    @classmethod
    def of(cls, name: str, d) -> "TargetFactor":
        """The record of factor ``name`` whose fairseq ``Dictionary`` is ``d``."""
        return cls(name, len(d), dictionary_digest(d.symbols))

    def to_record(self) -> Dict[str, object]:
        """What the model's arguments keep (plain data: a checkpoint unpickles it without this class)."""
        return asdict(self)


def read_target_factors(value) -> List[TargetFactor]:
    """The target factors recorded in a model's arguments, in the order the decoder predicts them: records (what
    :meth:`TargetFactor.to_record` gives; dict-like, e.g. an omegaconf node) or, from a checkpoint trained before
    they were typed, the signature string ``"pos:19:ab12,dep:40:cd34"``. None or empty: no factor.

    Raises:
        ValueError: a value of neither form.
    """
    if not value:
        return []
    if isinstance(value, str):
        return [TargetFactor(name, size, digest) for name, (size, digest) in parse_signatures(value).items()]
    try:
        return [TargetFactor(str(r["name"]), int(r["size"]), str(r["digest"])) for r in value]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{TARGET_FACTORS_ARG}: target factor records or a signature string, got {value!r} "
                         f"({e})") from None
