"""syntax-nmt: a fairseq plugin for syntax-infused neural machine translation.

Load it in fairseq with ``--user-dir`` pointing at this package directory. When
fairseq is already imported (as it is inside every fairseq command line), importing
the package registers its tasks, models and criterions, in a fixed order. Without
fairseq in the process (the annotation and corpus tools, the pure syntax code),
nothing fairseq-related is imported, so those tools start quickly; call
:func:`register_with_fairseq` to register explicitly in your own scripts.
"""

import sys

__version__ = "0.1.0"


def register_with_fairseq() -> None:
    """Import (and so register) the task, models and criterions with fairseq."""
    from syntax_nmt import checkpoint_compat  # noqa: F401  (allow-lists fairseq checkpoints)
    from syntax_nmt import tasks  # noqa: F401
    from syntax_nmt.models import syntax_transformer  # noqa: F401
    from syntax_nmt import criterions  # noqa: F401


if sys.modules.get("fairseq") is not None:
    register_with_fairseq()


_LAZY = {"SyntaxTransformerModel": "syntax_nmt.models.syntax_transformer", "SyntaxHubInterface": "syntax_nmt.hub"}


def __getattr__(name):
    """Lazy exports that need fairseq (imported, and the plugin registered, on first access)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    import fairseq  # noqa: F401

    register_with_fairseq()
    return getattr(importlib.import_module(_LAZY[name]), name)
