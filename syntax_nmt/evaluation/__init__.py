"""Evaluation of translations: scores and checks of one system (:mod:`.evaluate`, ``syntax-nmt-evaluate``),
paired significance tests with the test sentence as the unit (:mod:`.significance`), systems compared over training
seeds (:mod:`.compare`: the recipes' and the demo's tables). No fairseq: these read text files."""
