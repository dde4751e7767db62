"""fairseq tasks of syntax-nmt (imported explicitly so fairseq registers them)."""

from syntax_nmt.tasks import syntax_translation  # noqa: F401
