"""``make demo``: every method of the plugin compared on the embedded synthetic EN->DE corpus.

Steps (each skipped when its outputs exist, so an interrupted run resumes):

1. generate the synthetic corpus with gold English trees (``syntax-nmt-synth``);
2. train the tiny spaCy tagger+parser on its gold CoNLL-U and load it by path
   (``syntax-nmt-train-spacy``), exactly as a user loads ``en_core_web_sm``
   (``--gold-parses``: skip it and annotate from the gold trees);
3. parse the raw English with it, learn joint BPE, write subwords and aligned
   streams (``syntax-nmt-annotate``);
4. binarize text and streams (``syntax-nmt-binarize``);
5. train every system of the table of systems (:mod:`syntax_nmt.systems`, ``--systems``) with each training seed
   (``--seeds``; ``auto``: the seeds, and for the default comparison the systems, that fit in ``--time-budget``
   on this machine, :mod:`syntax_nmt.demo.budget`) and identical budgets (``fairseq-train``), ``--jobs`` at a time;
6. translate the test set (``fairseq-generate``), score with sacreBLEU, and report the
   mean and standard deviation over seeds, paired bootstrap significance against the
   stock Transformer (sacreBLEU's, on the seeds' translations pooled and per seed), and
   a bar chart (``bleu.png``);
7. run ``syntax-nmt-analyze`` on the first seed's models (``--analyses``: BLEU by
   length, attention maps, gates; ``noise`` on request); ``--fractions`` adds the
   learning curve over nested subsamples of the training data.

Every step runs the real command line a user would run, in a subprocess.

Modules, by concern: :mod:`~syntax_nmt.demo.cli` (options, ``python -m syntax_nmt.demo``),
:mod:`~syntax_nmt.demo.settings` (what every system is trained and translated with),
:mod:`~syntax_nmt.demo.workdir` (resumable command-line steps), :mod:`~syntax_nmt.demo.data` (steps 1-4),
:mod:`~syntax_nmt.demo.jobs` (training and translation jobs side by side), :mod:`~syntax_nmt.demo.budget` (what
fits in the time budget), :mod:`~syntax_nmt.demo.report` (tables, verdicts, chart) and
:mod:`~syntax_nmt.demo.pipeline` (the steps in order). The bench (:mod:`syntax_nmt.bench`) reuses the data steps
and the settings.
"""
