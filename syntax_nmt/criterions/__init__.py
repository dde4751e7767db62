"""Auxiliary syntax losses (imported explicitly so fairseq registers them)."""
