"""Names and file layout of the per-token source streams, and of the target's tag streams (no fairseq import).

The one list of stream names (:data:`STREAMS`) for the annotator, the binarizer, the task and
the model. Text streams sit beside the subword source file written by ``syntax-nmt-annotate``
(``{prefix}.{stream}``); binarized ones sit beside fairseq's own data
(``{destdir}/{split}.{src}-{tgt}.{stream}.{bin,idx}``, tag dictionaries in
``{destdir}/dict.{stream}.txt``). Heads are stored as raw integer offsets.

Target streams (the target parsed by a parser of its own, for target factors and interleaved target tags) are
the tag streams of the target subwords: ``{prefix}.tgt.{stream}`` beside the target text, written by
``syntax-nmt-annotate`` run on the target with ``--output-prefix {prefix}.tgt`` (which also writes the target's
subwords, ``{prefix}.tgt.{tgt_lang}``, checked to equal ``{prefix}.{tgt_lang}``); binarized as
``{destdir}/{split}.{src}-{tgt}.tgt.{stream}`` with ``dict.tgt.{stream}.txt``.
"""

import os
from typing import List

from syntax_nmt.constants import DICT_FILE

#: Every source stream, in the order ``syntax-nmt-annotate`` writes them (``P.pos`` ... ``P.dep``).
STREAMS = ("pos", "case", "subword", "head", "dep")
#: Heads: relative offset to the first subword of the head word, 0 at roots/specials.
HEAD_STREAM = "head"
#: Streams whose values are tags from a small vocabulary (fairseq Dictionary ids), in :data:`STREAMS` order.
TAG_STREAMS = tuple(s for s in STREAMS if s != HEAD_STREAM)
#: Value stored for EOS/BOS/pad positions of the head stream (each points to itself).
SPECIAL_HEAD = 0


class StreamConfigError(ValueError):
    """The streams of the data, the task options and the model do not agree."""


#: Prefix of the target's streams in file names (``{prefix}.tgt.pos``, ``dict.tgt.pos.txt``).
TARGET_PREFIX = "tgt"


def target_stream(name: str) -> str:
    """The file-name stream of target tag stream ``name`` (``pos`` -> ``tgt.pos``)."""
    return f"{TARGET_PREFIX}.{name}"


def parse_target_streams(value) -> List[str]:
    """Target tag streams (``"pos,dep"``): validated, ordered, de-duplicated; heads are not a target stream."""
    names = parse_stream_list(value)
    bad = [n for n in names if n not in TAG_STREAMS]
    if bad:
        raise StreamConfigError(f"target streams are tag streams ({', '.join(TAG_STREAMS)}), not {', '.join(bad)}")
    return names


def parse_stream_list(value) -> List[str]:
    """``"pos,case"`` / ``["pos", "case"]`` / ``None`` -> validated, ordered, de-duplicated list."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    names = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        if item not in STREAMS:  # a StreamConfigError: fairseq's command lines print it in one line
            raise StreamConfigError(f"unknown stream {item!r}; known streams: {', '.join(STREAMS)}")
        if item not in names:
            names.append(item)
    return names


def stream_data_prefix(data_path: str, split: str, src: str, tgt: str, stream: str) -> str:
    """Path prefix (without ``.bin``/``.idx``) of a binarized stream."""
    return os.path.join(data_path, f"{split}.{src}-{tgt}.{stream}")


def stream_dict_path(data_path: str, stream: str) -> str:
    """The dictionary of a tag stream in a data directory (``dict.{stream}.txt``)."""
    return os.path.join(data_path, DICT_FILE.format(stream))


def streams_in_dir(data_path: str, src: str, tgt: str) -> List[str]:
    """Streams binarized in ``data_path``, in :data:`STREAMS` order: tag streams with a dictionary, and heads
    if any split has them."""
    suffix = f".{src}-{tgt}.{HEAD_STREAM}.idx"
    heads = os.path.isdir(data_path) and any(f.endswith(suffix) for f in os.listdir(data_path))
    return [s for s in STREAMS if (heads if s == HEAD_STREAM else os.path.exists(stream_dict_path(data_path, s)))]
