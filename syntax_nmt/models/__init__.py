"""fairseq models of syntax-nmt (imported explicitly so fairseq registers them)."""

from syntax_nmt.models import syntax_transformer  # noqa: F401
