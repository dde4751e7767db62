"""Syntax methods of the encoder, one module each, discovered from this package.

Every module of this package (except ``base``) is imported, and registers its method with
:func:`~syntax_nmt.models.modules.methods.base.register_syntax_method`: a new method is one new file here.
The published methods come first, in this order (the order of the table of systems and of the layers the
``all`` system gives them); any other module follows in alphabetical order.
"""

import importlib
import pkgutil

from syntax_nmt.models.modules.methods.base import (  # noqa: F401
    SYNTAX_METHODS,
    AuxLoss,
    SyntaxMethod,
    build_methods,
    parse_layers,
    parse_methods,
    register_syntax_method,
)

#: the published methods, in the order they are registered
BUILTIN = ("sgnet", "sla", "syntax_bert", "seprem", "lisa")


def _discover():
    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base" and not m.name.startswith("_"))
    for name in [*BUILTIN, *(n for n in found if n not in BUILTIN)]:
        importlib.import_module(f"{__name__}.{name}")


_discover()
