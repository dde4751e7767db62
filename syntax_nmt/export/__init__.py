"""Serve without the plugin: a checkpoint of this plugin as a stock fairseq checkpoint (``syntax-nmt-export``,
:mod:`~syntax_nmt.export.cli`), what can be exported and how (:mod:`~syntax_nmt.export.stock`), LISA's parse head
folded into an ordinary head (:mod:`~syntax_nmt.export.fold`), the CTranslate2 conversion
(:mod:`~syntax_nmt.export.ctranslate2`). See docs/deploy.md, "Serve without the plugin"."""
