"""The annotation settings file: everything that shapes the text and streams of an annotation.

``syntax-nmt-annotate -o P`` writes ``P.annotation.json`` beside its outputs;
``syntax-nmt-binarize`` checks that every split it binarizes was annotated with the same
settings and copies them to ``DESTDIR/annotation.json``; inference on raw text reads them
to annotate new input exactly as the training data was annotated. The file is one JSON
object (format version :data:`SETTINGS_VERSION`) with the keys of :data:`KEYS`:

==========================  ==================================================================
``version``                 1
``src_lang``                source language (``en``)
``backend``                 ``spacy`` or ``conllu``
``spacy_model``             pipeline name, or the ABSOLUTE path of a pipeline directory (null for conllu)
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

Escaping rules ``v1`` (:func:`syntax_nmt.annotate.subwords.escape_word`): ``@@`` -> ``＠＠``
(bpe), ``▁`` -> ``_`` (spm), and fairseq's special symbols ``<s> </s> <pad> <unk>`` inside
a word with their angle brackets as ``‹ ›``. Bump :data:`ESCAPE_VERSION` when they change.
"""

import json
import os
from typing import Dict, Optional

from syntax_nmt.constants import SETTINGS_SUFFIX

from .backends import get_backend
from .subwords import ESCAPE_VERSION, file_sha256, spm_model_path
from .textio import atomic_write_lines

SETTINGS_VERSION = 1

#: Every key of the settings file, in the order they are compared.
KEYS = ("version", "src_lang", "backend", "spacy_model", "pretokenized", "parser_unescape", "pos_tagset", "case",
        "multi_root", "subword", "subword_model", "subword_model_sha256", "escape", "max_words", "max_subwords",
        "on_long", "on_empty", "moses")
#: Keys of the ``moses`` object, with their types.
MOSES_KEYS = {"lang": str, "normalize": bool, "aggressive_dash_splits": bool, "escape": bool}

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse_moses_settings(value: Optional[str]) -> Optional[Dict]:
    """``"lang=en,normalize=1,aggressive_dash_splits=1,escape=0"`` -> the ``moses`` object.

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
    return {k: out[k] for k in MOSES_KEYS}


def _model_file(args) -> Optional[str]:
    if args.subword == "none":
        return None
    if getattr(args, "learn_subword", 0):
        return spm_model_path(args.subword_model_out) if args.subword == "spm" else args.subword_model_out
    return args.subword_model


def settings_from_args(args) -> Dict:
    """The settings of a parsed (and checked) ``syntax-nmt-annotate`` namespace.

    The subword model's hash is read from the file when it exists (with
    ``--learn-subword``, once it has been learned), else null.
    """
    model = _model_file(args)
    settings = {
        "version": SETTINGS_VERSION,
        "src_lang": args.src_lang,
        "backend": args.backend,
        "spacy_model": None,
        "pretokenized": bool(args.pretokenized),
        "parser_unescape": bool(getattr(args, "parser_unescape", False)),
        "pos_tagset": args.pos_tagset,
        "case": args.case,
        "multi_root": args.multi_root,
        "subword": args.subword,
        "subword_model": os.path.abspath(model) if model else None,
        "subword_model_sha256": file_sha256(model) if model and os.path.isfile(model) else None,
        "escape": ESCAPE_VERSION,
        "max_words": int(args.max_words),
        "max_subwords": int(getattr(args, "max_subwords", 0) or 0),
        "on_long": args.on_long,
        "on_empty": args.on_empty,
        "moses": parse_moses_settings(getattr(args, "moses_settings", None)),
    }
    settings.update(get_backend(args.backend).recorded_settings(args))
    return settings


def settings_path(prefix: str) -> str:
    """Where ``syntax-nmt-annotate -o prefix`` writes its settings: ``prefix + ".annotation.json"``."""
    return prefix + SETTINGS_SUFFIX


def write_settings(path: str, settings: Dict) -> None:
    """Write ``settings`` as JSON (atomically)."""
    atomic_write_lines(path, [json.dumps(settings, indent=1, sort_keys=True, ensure_ascii=False)])


def read_settings(path: str) -> Dict:
    """Read and validate a settings file.

    Raises:
        ValueError: unreadable JSON, a missing key (named, with the file), a newer format
            version, or a malformed ``moses`` object.
        FileNotFoundError: if ``path`` does not exist.
    """
    with open(path, encoding="utf-8") as f:
        try:
            settings = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not a valid annotation settings file ({e})") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path}: not a valid annotation settings file (expected a JSON object)")
    for key in KEYS:
        if key not in settings:
            raise ValueError(f"{path}: annotation setting {key!r} is missing")
    if settings["version"] != SETTINGS_VERSION:
        raise ValueError(f"{path}: annotation settings version {settings['version']!r}, this syntax-nmt reads "
                         f"version {SETTINGS_VERSION}")
    moses = settings["moses"]
    if moses is not None:
        if not isinstance(moses, dict):
            raise ValueError(f"{path}: annotation setting 'moses' must be null or an object")
        for key in MOSES_KEYS:
            if key not in moses:
                raise ValueError(f"{path}: annotation setting 'moses.{key}' is missing")
    return settings


def check_compatible(a: Dict, b: Dict, what_a: str, what_b: str) -> None:
    """Raise unless ``a`` and ``b`` agree on every key (the subword model by its SHA-256: the same
    codes at another path agree).

    Raises:
        ValueError: naming the first differing key (in :data:`KEYS` order, then other keys
            alphabetically) and both values with where they come from.
    """
    extra = sorted((set(a) | set(b)) - set(KEYS))
    missing = object()
    same_model = bool(a.get("subword_model_sha256")) and a.get("subword_model_sha256") == b.get("subword_model_sha256")
    for key in list(KEYS) + extra:
        va, vb = a.get(key, missing), b.get(key, missing)
        if key == "subword_model" and same_model:
            continue  # the same model (by SHA-256) at another path
        if va != vb:
            show_a = "missing" if va is missing else repr(va)
            show_b = "missing" if vb is missing else repr(vb)
            raise ValueError(f"annotation setting {key!r} differs: {show_a} in {what_a}, {show_b} in {what_b}")
