"""Synthetic English->German corpus with gold English dependency trees.

Modules: :mod:`.lexicon` (bilingual word lists and German inflection tables),
:mod:`.grammar` (sentence structures, English/German realisation),
:mod:`.sampler` (seeded random structures), :mod:`.generate`
(:func:`~syntax_nmt.synthetic.generate.generate_corpus`), :mod:`.cli`
(``syntax-nmt-synth``). See ``README.md`` in this directory.
"""
