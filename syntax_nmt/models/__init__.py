"""fairseq models of syntax-nmt (imported explicitly so fairseq registers them)."""
