"""Annotation pipeline: source text -> subword text + token-aligned syntax streams.

Modules (one concern each):

* :mod:`~syntax_nmt.annotate.cli`: the ``syntax-nmt-annotate`` command.
* :mod:`~syntax_nmt.annotate.pipeline`: the job (scan, parse, learn, segment, merge).
* :mod:`~syntax_nmt.annotate.chunks`: resumable, shardable chunk store.
* :mod:`~syntax_nmt.annotate.backends`: the parsers (``--backend``), one module each (spaCy,
  CoNLL-U), producing :class:`syntax_nmt.syntax.conllu.Sentence` records; a new parser is one
  new module there (:mod:`~syntax_nmt.annotate.backends.base`).
* :mod:`~syntax_nmt.annotate.settings`: the annotation settings of a command line (the record itself, one typed
  object written as ``annotation.json``, is :mod:`syntax_nmt.annotation_settings`, a floor below).
* :mod:`~syntax_nmt.annotate.online`: the same annotation in memory, for raw text at inference.
* :mod:`~syntax_nmt.annotate.parsed`: multi-root policy and tree check on those records.
* :mod:`~syntax_nmt.annotate.unescape`: the plain form of Moses placeholders and escapes, for the parser.
* :mod:`~syntax_nmt.annotate.subwords`: escaping, BPE/sentencepiece segmentation and learning.
* :mod:`~syntax_nmt.annotate.align`: pure alignment of word annotations to subwords.
* :mod:`~syntax_nmt.annotate.textio`: line-exact UTF-8 input and atomic output.
* :mod:`~syntax_nmt.annotate.spacy_train`: train a small spaCy pipeline from CoNLL-U.
"""
