"""Training criteria with syntax auxiliary losses (imported explicitly so fairseq registers them)."""

from syntax_nmt.criterions import label_smoothed_cross_entropy_with_syntax  # noqa: F401
