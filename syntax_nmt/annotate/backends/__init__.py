"""Parser backends of ``syntax-nmt-annotate --backend``, one module each, discovered from this package.

Every module of this package (except ``base``) is imported, and registers its backend with
:func:`~syntax_nmt.annotate.backends.base.register_backend`: a new parser is one new file here
(see :mod:`~syntax_nmt.annotate.backends.base` for what it provides). The built-in backends come
first, the default one first (the order of ``--backend``'s choices); any other module follows in
alphabetical order. No backend imports its parser library before it parses.
"""

import importlib
import pkgutil

from syntax_nmt.annotate.backends.base import (  # noqa: F401
    PARSER_BACKENDS,
    ParserBackend,
    get_backend,
    register_backend,
)

#: the built-in backends, in the order they are registered
BUILTIN = ("spacy_backend", "conllu_backend")
#: the backend ``syntax-nmt-annotate`` uses without ``--backend``
DEFAULT_BACKEND = "spacy"


def _discover():
    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base" and not m.name.startswith("_"))
    for name in [*BUILTIN, *(n for n in found if n not in BUILTIN)]:
        importlib.import_module(f"{__name__}.{name}")


_discover()
