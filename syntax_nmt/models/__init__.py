"""fairseq models of syntax-nmt: :mod:`syntax_nmt.models.syntax_transformer`, registered with fairseq by
:func:`syntax_nmt.register_with_fairseq`. The package itself imports nothing, so that the pure tensor code
under ``modules`` (the methods' ``*_masks`` modules) imports without fairseq."""
