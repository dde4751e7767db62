"""Syntax methods of the encoder: one module each, discovered from this package.

A method is a module here that registers a :class:`~syntax_nmt.models.modules.methods.base.SyntaxMethod`
with :func:`~syntax_nmt.models.modules.methods.base.register_syntax_method`; its tensor math (masks, weights,
targets) lives in a sibling ``NAME_masks`` module of pure torch functions, which imports without fairseq.
:func:`~syntax_nmt.models.modules.methods.base.registered_methods` imports every module of the package on
first use, so a new method is new files here and nothing else.
"""

from syntax_nmt.models.modules.methods.base import (  # noqa: F401
    BUILTIN,
    AuxLoss,
    SyntaxMethod,
    build_methods,
    parse_layers,
    parse_methods,
    register_syntax_method,
    registered_methods,
)


def __getattr__(name):
    """``SYNTAX_METHODS``: the registry, every module of the package imported (:func:`registered_methods`)."""
    if name == "SYNTAX_METHODS":
        return registered_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
