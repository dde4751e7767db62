"""``tags``: the target interleaved with its POS tags, data for the stock model (Nadejde et al., 2017); the tokens
are :mod:`syntax_nmt.annotate.target_tags`'."""

from typing import TextIO

from syntax_nmt.targets.base import TargetScheme, register_target_scheme

#: the target stream whose tags are interleaved
TAG = "pos"


@register_target_scheme("tags")
class InterleavedTags(TargetScheme):
    """The target with each word's tag before it (``⟨DET⟩ la ⟨NOUN⟩ fem@@ me``); the stock Transformer learns to
    write both, and the tags are stripped before scoring."""

    systems = (("interleaved", (), f"the target interleaved with its {TAG.upper()} tags (Nadejde et al., 2017)"),)
    data_suffix = "tagged"
    target_streams = (TAG,)
    evaluate_args = ("--strip-target-tags",)
    scored_streams = (TAG,)

    def write_target(self, prefix: str, tgt_lang: str, out: TextIO) -> int:
        from syntax_nmt.annotate.target_tags import interleave_files

        return interleave_files(prefix, tgt_lang, TAG, out)
