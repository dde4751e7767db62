"""syntax-nmt: a fairseq plugin for syntax-infused neural machine translation.

Load it in fairseq with ``--user-dir /path/to/syntax_nmt`` (or the installed
package directory). Importing the package registers its tasks, models and
criterions with fairseq; the pure syntax code in :mod:`syntax_nmt.syntax` and
the annotation tools also work where fairseq is not importable.
"""

__version__ = "0.1.0"

try:  # pragma: no cover - exercised implicitly by every fairseq test
    import fairseq  # noqa: F401
except ImportError:  # the pure parts (syntax/, annotate/) need no fairseq
    pass
else:
    from syntax_nmt import checkpoint_compat  # noqa: F401  (allow-lists fairseq checkpoints)
    from syntax_nmt import tasks  # noqa: F401
    from syntax_nmt import models  # noqa: F401
    from syntax_nmt import criterions  # noqa: F401
