"""The annotation settings: everything that shapes the text and streams of an annotation.

One typed object, :class:`AnnotationSettings`, built from the ``syntax-nmt-annotate`` command
line (:func:`syntax_nmt.annotate.settings.settings_from_args`) and used as it is everywhere after that. This
module is the record alone (no parser, no subword code): ``data/`` (binarization), ``annotate/`` and the task
read it from this low floor. The
annotator writes it as ``P.annotation.json`` beside its outputs; ``syntax-nmt-binarize``
checks that every split it binarizes was annotated with the same settings and copies them to
``DESTDIR/annotation.json``; ``fairseq-train`` stores them in the checkpoint; inference on raw
text (:mod:`~syntax_nmt.annotate.online`) annotates new input with them exactly as the training
data was annotated. The file is one JSON object (format version :data:`SETTINGS_VERSION`) with
the keys of :data:`KEYS`, the fields of the object:

==========================  ==================================================================
``version``                 1
``src_lang``                source language (``en``)
``backend``                 the parser backend (``spacy``, ``conllu``: :mod:`~syntax_nmt.annotate.backends`)
``pretokenized``            the source was tokenized before annotation (``--pretokenized``)
``parser_unescape``         the parser saw Moses placeholders/escapes in plain form
``pos_tagset``              ``upos`` or ``xpos``
``case``                    ``binary`` or ``rich``
``multi_root``              ``forest`` or ``attach``
``subword``                 ``bpe``, ``spm`` or ``none``
``subword_model``           ABSOLUTE path of the codes/model (the learned one with --learn-subword), or null
``subword_model_sha256``    its SHA-256, or null
``escape``                  version tag of the escaping rules (:data:`ESCAPE_VERSION`)
``max_words``               ``--max-words`` (0 = no limit)
``max_subwords``            ``--max-subwords`` (0 = no limit)
``on_long``                 ``blank`` or ``error``
``on_empty``                ``keep`` or ``error``
``moses``                   null, or how the text was Moses-processed before annotation:
                            ``{"lang", "normalize", "aggressive_dash_splits", "escape"}``
                            (``--moses-settings``)
==========================  ==================================================================

A backend records settings of its own beside these
(:meth:`~syntax_nmt.annotate.backends.base.ParserBackend.recorded_settings`): the spaCy backend its
``spacy_model`` (the pipeline's name, or the ABSOLUTE path of a pipeline directory) and ``spacy_pipeline`` (what
that pipeline was: ``{"name", "version", "sha256"}``, the hash over its directory's files, so that a pipeline
retrained or upgraded at the same name or path is another parser; files written before it are not compared on
it), a toy backend its label. They, and any other key of a file, are kept in :attr:`AnnotationSettings.extra`,
written back and compared like the others. Files written before the spaCy setting moved to its backend hold
``"spacy_model": null`` for every other backend: it is kept (such a file is written back byte for byte),
and a null there compares equal to no such key.

Escaping rules ``v1`` (:func:`syntax_nmt.annotate.subwords.escape_word`): ``@@`` -> ``＠＠``
(bpe), ``▁`` -> ``_`` (spm), and fairseq's special symbols ``<s> </s> <pad> <unk>`` inside
a word with their angle brackets as ``‹ ›``. Bump :data:`ESCAPE_VERSION` when they change.
"""

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional

from syntax_nmt.constants import SETTINGS_SUFFIX
from syntax_nmt.utils import write_lines

SETTINGS_VERSION = 1
#: a backend's setting that files of version 1 hold for every backend, null where the backend has no model
LEGACY_NULL_KEY = "spacy_model"
#: settings recorded since a later change: a file without one cannot say, and is not compared on it
#: (``spacy_pipeline``: the pipeline's name, version and files' hash, issue 56.3)
RECORDED_LATER = ("spacy_pipeline",)

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class MosesSettings:
    """How the text was Moses-processed before annotation (``--moses-settings``), so that raw text at
    inference is processed the same way (``sacremoses``)."""

    lang: str
    normalize: bool
    aggressive_dash_splits: bool
    escape: bool

    def to_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in MOSES_KEYS}


#: Keys of the ``moses`` object, with their types.
MOSES_KEYS = {f.name: f.type for f in fields(MosesSettings)}


def parse_moses_settings(value: Optional[str]) -> Optional[MosesSettings]:
    """``"lang=en,normalize=1,aggressive_dash_splits=1,escape=0"`` -> :class:`MosesSettings`.

    Every key of :data:`MOSES_KEYS` must be given once; booleans are ``1/0``, ``true/false``,
    ``yes/no`` or ``on/off``.

    Raises:
        ValueError: naming the bad, missing or unknown key.
    """
    if value is None:
        return None
    out: Dict = {}
    for item in value.split(","):
        key, eq, val = item.strip().partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not key:
            raise ValueError(f"--moses-settings: expected KEY=VALUE items separated by commas, got {item!r}")
        if key not in MOSES_KEYS:
            raise ValueError(f"--moses-settings: unknown key {key!r} (keys: {', '.join(MOSES_KEYS)})")
        if key in out:
            raise ValueError(f"--moses-settings: {key!r} given twice")
        if MOSES_KEYS[key] is bool:
            if val.lower() not in _TRUE + _FALSE:
                raise ValueError(f"--moses-settings: {key} must be 1 or 0, got {val!r}")
            out[key] = val.lower() in _TRUE
        elif not val:
            raise ValueError(f"--moses-settings: {key} is empty")
        else:
            out[key] = val
    missing = [k for k in MOSES_KEYS if k not in out]
    if missing:
        raise ValueError(f"--moses-settings: missing {', '.join(missing)} (give all of {', '.join(MOSES_KEYS)})")
    return MosesSettings(**out)


@dataclass(frozen=True)
class AnnotationSettings:
    """The annotation settings (see the module docstring for each field). Values are kept as the file
    holds them, so that a file read and written again is the same file."""

    version: int
    src_lang: str
    backend: str
    pretokenized: bool
    parser_unescape: bool
    pos_tagset: str
    case: str
    multi_root: str
    subword: str
    subword_model: Optional[str]
    subword_model_sha256: Optional[str]
    escape: str
    max_words: int
    max_subwords: int
    on_long: str
    on_empty: str
    moses: Optional[MosesSettings]
    #: Settings beyond :data:`KEYS`: those the backend records, and any other key of a file.
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, values: Dict[str, Any], where: str) -> "AnnotationSettings":
        """Validate a settings object (as JSON holds it) and type it.

        Raises:
            ValueError: naming ``where`` and the missing key, a newer format version, or a malformed
                ``moses`` object.
        """
        if not isinstance(values, dict):
            raise ValueError(f"{where}: not a valid annotation settings file (expected a JSON object)")
        for key in KEYS:
            if key not in values:
                raise ValueError(f"{where}: annotation setting {key!r} is missing")
        if values["version"] != SETTINGS_VERSION:
            raise ValueError(f"{where}: annotation settings version {values['version']!r}, this syntax-nmt reads "
                             f"version {SETTINGS_VERSION}")
        moses = values["moses"]
        if moses is not None:
            if not isinstance(moses, dict):
                raise ValueError(f"{where}: annotation setting 'moses' must be null or an object")
            for key in MOSES_KEYS:
                if key not in moses:
                    raise ValueError(f"{where}: annotation setting 'moses.{key}' is missing")
            for key in moses:
                if key not in MOSES_KEYS:
                    raise ValueError(f"{where}: annotation setting 'moses.{key}' is unknown (keys: "
                                     f"{', '.join(MOSES_KEYS)})")
            moses = MosesSettings(**moses)
        return cls(**{k: values[k] for k in KEYS if k != "moses"}, moses=moses,
                   extra={k: v for k, v in values.items() if k not in KEYS})

    @classmethod
    def read(cls, path: str) -> "AnnotationSettings":
        """Read and validate a settings file.

        Raises:
            ValueError: unreadable JSON, or what :meth:`from_dict` refuses (naming the file).
            FileNotFoundError: if ``path`` does not exist.
        """
        with open(path, encoding="utf-8") as f:
            try:
                values = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not a valid annotation settings file ({e})") from None
        return cls.from_dict(values, path)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object: :data:`KEYS` in order, then :attr:`extra`."""
        values = {k: getattr(self, k) for k in KEYS}
        values["moses"] = self.moses.to_dict() if self.moses is not None else None
        return {**values, **self.extra}

    def write(self, path: str) -> None:
        """Write the settings as JSON (atomically)."""
        write_lines(path, [json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False)])

    def differences(self, other: "AnnotationSettings") -> List[str]:
        """Keys whose values differ (in :data:`KEYS` order, then the other keys alphabetically)."""
        a, b = _compared(self), _compared(other)
        missing = object()
        return [k for k in _key_order(a, b) if a.get(k, missing) != b.get(k, missing)
                and not (k in RECORDED_LATER and (k not in a or k not in b))]


#: Every key of the settings file, in the order they are compared.
KEYS = tuple(f.name for f in fields(AnnotationSettings) if f.name != "extra")


def _compared(settings: AnnotationSettings) -> Dict[str, Any]:
    """:meth:`AnnotationSettings.to_dict` without a null :data:`LEGACY_NULL_KEY` (a version-1 file's)."""
    values = settings.to_dict()
    if values.get(LEGACY_NULL_KEY, "") is None:
        del values[LEGACY_NULL_KEY]
    return values


def _key_order(a: Dict, b: Dict) -> List[str]:
    return list(KEYS) + sorted((set(a) | set(b)) - set(KEYS))


def settings_path(prefix: str) -> str:
    """Where ``syntax-nmt-annotate -o prefix`` writes its settings: ``prefix + ".annotation.json"``."""
    return prefix + SETTINGS_SUFFIX


def check_compatible(a: AnnotationSettings, b: AnnotationSettings, what_a: str, what_b: str) -> None:
    """Raise unless ``a`` and ``b`` agree on every key (the subword model by its SHA-256: the same
    codes at another path agree).

    Raises:
        ValueError: naming the first differing key (in :data:`KEYS` order, then other keys
            alphabetically) and both values with where they come from.
    """
    da, db = a.to_dict(), b.to_dict()
    missing = object()
    same_model = bool(a.subword_model_sha256) and a.subword_model_sha256 == b.subword_model_sha256
    for key in a.differences(b):
        if key == "subword_model" and same_model:
            continue  # the same model (by SHA-256) at another path
        va, vb = da.get(key, missing), db.get(key, missing)
        show_a = "missing" if va is missing else describe(key, va)
        show_b = "missing" if vb is missing else describe(key, vb)
        raise ValueError(f"annotation setting {key!r} differs: {show_a} in {what_a}, {show_b} in {what_b}")


def describe(key: str, value) -> str:
    """A setting's value in a message: a recorded pipeline as ``NAME VERSION (files sha256 PREFIX...)``."""
    if key == "spacy_pipeline" and isinstance(value, dict):
        return f"{value.get('name')} {value.get('version')} (files sha256 {str(value.get('sha256'))[:12]}...)"
    return repr(value)
