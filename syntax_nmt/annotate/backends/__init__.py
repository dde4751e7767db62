"""Parser backends of ``syntax-nmt-annotate --backend``, one module each, discovered from this package.

Every module of this package (except ``base``) registers its backend with
:func:`~syntax_nmt.annotate.backends.base.register_backend`, and the registry
(:data:`~syntax_nmt.annotate.backends.base.PARSER_BACKENDS`, a :class:`~syntax_nmt.registry.Registry` as the
syntax methods' is) imports them all the first time it is read: a new parser is one new file here (see
:mod:`~syntax_nmt.annotate.backends.base` for what it provides). The built-in backends come first, the default
one first (the order of ``--backend``'s choices); any other module follows in alphabetical order. No backend
imports its parser library before it parses.
"""

from syntax_nmt.annotate.backends.base import (  # noqa: F401
    BUILTIN,
    PARSER_BACKENDS,
    ParserBackend,
    get_backend,
    register_backend,
)

#: the backend ``syntax-nmt-annotate`` uses without ``--backend``
DEFAULT_BACKEND = "spacy"
