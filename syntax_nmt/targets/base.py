"""The registry of target-side schemes: how a system puts the target's syntax into translation.

A scheme is one module of :mod:`syntax_nmt.targets` that registers a :class:`TargetScheme` with
:func:`register_target_scheme`, as the syntax methods and the parser backends register
(:class:`~syntax_nmt.registry.Registry`): the table of systems (:mod:`syntax_nmt.systems`) lists its systems, and the
recipes (``examples/multi30k_en_de/run_all.sh``, ``examples/common/generate.sh``) make its data, train it and score it
from what it declares (``python -m syntax_nmt.systems shell NAME``, ``python -m syntax_nmt.targets``), so a new scheme
is one new file here and nothing else. Built in: ``factors`` (the decoder predicts the target's tags beside each
token) and ``tags`` (the target interleaved with its tags, data for the stock model).
"""

from typing import Dict, List, Sequence, TextIO, Tuple

from syntax_nmt.registry import Registry

#: the built-in schemes, in this order (the table of systems lists their systems so)
BUILTIN = ("factors", "tags")
#: name -> scheme class; the first read imports every module of the package
TARGET_SCHEMES: Registry = Registry("target scheme", __name__.rsplit(".", 1)[0], BUILTIN)


def registered_schemes() -> Registry:
    """Every registered target scheme, name -> class (:data:`TARGET_SCHEMES`, discovered)."""
    return TARGET_SCHEMES.discover()


def register_target_scheme(name: str):
    """Class decorator registering a :class:`TargetScheme` as ``name`` (a system's ``target``)."""
    return TARGET_SCHEMES.register(name)


class TargetScheme:
    """Base class of a target-side scheme (module docstring). Its class attributes say what its systems are and
    what the recipes do for them; a scheme with data of its own writes it with :meth:`write_target`."""

    name: str = ""
    #: its systems in the table of systems, outside the default comparison: ``(name, source-side syntax methods
    #: it adds (their own options come with them), note)``
    systems: Sequence[Tuple[str, Tuple[str, ...], str]] = ()
    #: whether its systems need the task ``syntax_translation`` and the model ``syntax_transformer`` (what the
    #: decoder predicts), or keep fairseq's stock translation model (a scheme that changes the data only)
    needs_syntax_model: bool = False
    #: the fairseq-train options it adds (after the system's own)
    train_args: Sequence[str] = ()
    #: whether it trains with ``label_smoothed_cross_entropy_with_syntax`` (the loss of what the decoder predicts)
    syntax_criterion: bool = False
    #: a data directory of its own, made from the annotated data by :meth:`write_target`: the suffix of its name
    #: (a recipe's ``data-bin/T-SUFFIX`` beside ``data-bin/T``); empty: the recipe's data, the target's streams
    #: binarized beside it (``syntax-nmt-binarize --target-streams``)
    data_suffix: str = ""
    #: the target's tag streams (``syntax-nmt-annotate`` of the target: ``P.tgt.STREAM``) its systems read: a recipe
    #: binarizes those of the systems it runs beside its data (``syntax-nmt-binarize --target-streams``), unless the
    #: scheme has data of its own (:attr:`data_suffix`), which :meth:`write_target` makes from them
    target_streams: Sequence[str] = ()
    #: ``syntax-nmt-evaluate score`` (and ``factors``) options for its hypotheses (e.g. tags to strip)
    evaluate_args: Sequence[str] = ()
    #: the streams whose tags its systems' translations carry (F- lines, or with ``--strip-target-tags`` the
    #: interleaved tags, then one stream), each scored against the target parser's parse of the translation
    #: (``syntax-nmt-evaluate factors --target-scheme NAME``, the truth of each word by :meth:`truth`); empty: its
    #: systems' tags are not measured
    scored_streams: Sequence[str] = ()

    def write_target(self, prefix: str, tgt_lang: str, out: TextIO) -> int:
        """Write the target side of the scheme's own data for one annotated split to ``out``; returns its lines.

        Args:
            prefix: the split's annotation prefix P (``syntax-nmt-annotate -o P``): the target ``P.TGT`` and, from the
                target's own annotation (``-o P.tgt``), its streams ``P.tgt.STREAM``.
            tgt_lang: the target language.
        """
        raise NotImplementedError(f"target scheme {self.name!r} has no data of its own")

    def truth(self, stream: str, sentence, pos_tagset: str = "upos", case: str = "binary") -> List[str]:
        """The true tags of ``stream`` for the words of a translation, from the target parser's parse of it
        (``sentence``, a :class:`~syntax_nmt.syntax.conllu.Sentence` whose words are the translation's): what its
        predicted tags are scored against. By default what ``syntax-nmt-annotate`` writes for each word of that
        parse (:func:`word_tags`: the POS tag, the case class, the dependency label), with the annotation's
        ``pos_tagset`` and ``case``; a scheme whose tags are made otherwise overrides it.

        Raises:
            ValueError: a stream with no tag per word (``subword``, ``head``).
        """
        if stream not in WORD_STREAMS:
            raise ValueError(f"target stream {stream!r} has no tag per word to score against a parse (those with one: "
                             f"{', '.join(WORD_STREAMS)})")
        return word_tags(sentence, pos_tagset, case)[stream]


#: the target streams with one tag per word, the truth of :meth:`TargetScheme.truth` (the annotator's words)
WORD_STREAMS = ("pos", "case", "dep")


def word_tags(sentence, pos_tagset: str = "upos", case: str = "binary") -> Dict[str, List[str]]:
    """Stream -> one tag per word of a parsed ``sentence`` for :data:`WORD_STREAMS`, as ``syntax-nmt-annotate``
    writes them for a word of one piece (:func:`~syntax_nmt.annotate.align.align_streams`: an empty tag is ``_``)."""
    from syntax_nmt.annotate.align import align_streams

    aligned = align_streams(sentence, [[w] for w in sentence.words], pos_tagset, case)
    return {s: aligned[s] for s in WORD_STREAMS}
