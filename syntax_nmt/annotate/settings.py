"""The annotation settings of a ``syntax-nmt-annotate`` command line.

The record itself (:class:`~syntax_nmt.annotation_settings.AnnotationSettings`, its file and its checks) lives on a
floor below ``data/`` and ``annotate/`` (:mod:`syntax_nmt.annotation_settings`) and is re-exported here; what
needs the parser backends and the subword code stays here: :func:`settings_from_args`, :func:`subword_model_file`.
"""

import os
from typing import Optional

from syntax_nmt.annotation_settings import (  # noqa: F401  (re-exported: the annotate floor's names)
    KEYS,
    MOSES_KEYS,
    SETTINGS_VERSION,
    AnnotationSettings,
    MosesSettings,
    check_compatible,
    parse_moses_settings,
    settings_path,
)

from .backends import get_backend
from .subwords import ESCAPE_VERSION, file_sha256, spm_model_path


def subword_model_file(args) -> Optional[str]:
    """The subword model file of a ``syntax-nmt-annotate`` command line: given, or to be learned (the
    file ``--learn-subword`` writes), or None (``--subword none``)."""
    if args.subword == "none":
        return None
    if getattr(args, "learn_subword", 0):
        return spm_model_path(args.subword_model_out) if args.subword == "spm" else args.subword_model_out
    return args.subword_model


def settings_from_args(args) -> AnnotationSettings:
    """The settings of a parsed (and checked) ``syntax-nmt-annotate`` namespace.

    The subword model's hash is read from the file when it exists (with ``--learn-subword``,
    once it has been learned), else null.
    """
    model = subword_model_file(args)
    values = {
        "version": SETTINGS_VERSION,
        "src_lang": args.src_lang,
        "backend": args.backend,
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
        **get_backend(args.backend).recorded_settings(args),
    }
    known = {k: values.pop(k) for k in KEYS}
    return AnnotationSettings(**known, extra=values)
