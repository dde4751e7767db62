"""Evaluation of translations, one concern a module: the metrics (:mod:`.metrics`), the readers of fairseq-generate's
lines (:mod:`.generate_log`), a system's files scored and paired tests of files (:mod:`.scoring`), the syntax of
translations against a parser (:mod:`.syntax_accuracy`), paired significance tests with the test sentence as the unit
(:mod:`.significance`), systems compared over training seeds (:mod:`.compare`: the recipes' and the demo's tables),
and the command line ``syntax-nmt-evaluate`` (:mod:`.evaluate`). No fairseq: these read text files."""
