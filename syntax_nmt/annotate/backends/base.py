"""The interface of a parser backend, and the registry of ``syntax-nmt-annotate --backend``.

A backend turns normalized source lines into word-level parses
(:class:`syntax_nmt.syntax.conllu.Sentence`: words, UPOS, XPOS, 1-based heads with 0 = root,
labels), for ``syntax-nmt-annotate`` (:mod:`~syntax_nmt.annotate.pipeline`) and for raw text at
inference (:mod:`~syntax_nmt.annotate.online`). Everything after the parse (escaping, subwords,
aligned streams) is the same for every backend.

To add one, write one module in this package::

    @register_backend("stanza")
    class StanzaBackend(ParserBackend):
        @classmethod
        def add_args(cls, group): ...          # its options of syntax-nmt-annotate, if any
        @classmethod
        def from_args(cls, args): ...          # the parser syntax-nmt-annotate runs
        @classmethod
        def for_raw_text(cls, settings, model=None, batch_size=256, gpu_id=-1): ...  # the same, at inference
        def parse(self, items): ...            # (lineno, text, context) -> (lineno, Sentence, context)

Its options are then on the command line, ``--backend stanza`` chooses it, the settings it
records (:meth:`ParserBackend.recorded_settings`) go to ``annotation.json`` and come back at
inference. A backend resolves several roots with :func:`~syntax_nmt.annotate.parsed.resolve_roots`
(``multi_root``) and checks its trees with :func:`~syntax_nmt.annotate.parsed.check_tree`.
"""

import abc
import argparse
from typing import (TYPE_CHECKING, Any, Callable, ClassVar, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple,
                    Type)

from syntax_nmt.registry import Registry
from syntax_nmt.syntax.conllu import Sentence

from ..textio import read_normalized_lines

if TYPE_CHECKING:
    from syntax_nmt.annotation_settings import AnnotationSettings

#: the built-in backends' modules, in this order (``--backend``'s choices; the default first)
BUILTIN = ("spacy_backend", "conllu_backend")
#: name -> backend class (:class:`~syntax_nmt.registry.Registry`): every module of this package registers its
#: backend with :func:`register_backend`, and the first read imports them all.
PARSER_BACKENDS: Registry = Registry("parser backend", __name__.rsplit(".", 1)[0], BUILTIN)


def register_backend(name: str):
    """Class decorator registering a :class:`ParserBackend` as ``--backend NAME``."""
    return PARSER_BACKENDS.register(name)


def get_backend(name: str) -> Type["ParserBackend"]:
    """The backend class registered as ``name``.

    Raises:
        ValueError: naming the registered backends, if there is none of that name.
    """
    return PARSER_BACKENDS.get_class(name)


class ParserBackend(abc.ABC):
    """A dependency parser: ``(lineno, text, context)`` items -> ``(lineno, Sentence, context)``.

    Class attributes a backend may set:

    * ``parses_text``: it parses the text itself (so ``--parser-unescape`` can show it plain forms);
      False for a backend that reads a parse made elsewhere.
    * ``model_setting``: the recorded setting (:meth:`recorded_settings`) that names its model, which raw-text
      inference may replace by another name or path of the same model (``--annotate-parser-model``, hub:
      ``annotate_parser_model``); a path setting, compared by name only (spaCy: ``spacy_model``).
    * ``raw_text_backend``: for a backend that does not parse text, the backend that parses raw text at
      inference when a model is given (CoNLL-U: ``spacy``); None: raw text cannot be translated.
    * ``max_chars`` and ``max_chars_name``: the longest line (characters) it can parse and what that
      limit is called in messages; longer lines are over-long (``--on-long``). ``0``: no limit. An
      instance may set its own ``max_chars`` (spaCy: its pipeline's ``max_length``).
    * ``exclusive_options``: ``dest`` names of its options that are an error with another ``--backend``.
    """

    #: ``--backend`` name, set by :func:`register_backend`.
    name: ClassVar[str] = ""
    parses_text: ClassVar[bool] = True
    model_setting: ClassVar[Optional[str]] = None
    raw_text_backend: ClassVar[Optional[str]] = None
    max_chars: int = 0
    max_chars_name: ClassVar[str] = "the parser's limit"
    exclusive_options: ClassVar[Tuple[str, ...]] = ()

    # -- syntax-nmt-annotate -----------------------------------------------------------------------
    @classmethod
    def add_args(cls, group: argparse._ArgumentGroup) -> None:
        """Add its options to the ``parsing`` group of ``syntax-nmt-annotate`` (every backend's options are
        on the command line; only the chosen backend reads its own)."""

    @classmethod
    def check_args(cls, args: argparse.Namespace) -> None:
        """Check its options, and fill their defaults, when it is the chosen backend.

        Raises:
            ValueError: an inconsistent command line (default: ``--source`` is missing).
        """
        if not args.source:
            raise ValueError(f"--backend {cls.name} needs --source")

    @classmethod
    def recorded_settings(cls, args: argparse.Namespace) -> Dict[str, Any]:
        """The annotation settings it records in ``annotation.json`` (with the shared ones), e.g. the model it
        loads; it gets them back at inference in :meth:`for_raw_text`."""
        return {}

    @classmethod
    def input_files(cls, args: argparse.Namespace) -> Dict[str, Optional[str]]:
        """Input files it reads besides ``--source`` and ``--target`` (``{role: path}``): a rerun or a resumed
        run compares them by content, like the source."""
        return {}

    @classmethod
    def source_name(cls, args: argparse.Namespace) -> str:
        """The name of the source in messages: ``--source``, else its first input file."""
        return args.source or next((p for p in cls.input_files(args).values() if p), "<source>")

    @classmethod
    def source_lines(cls, args: argparse.Namespace) -> Iterator[str]:
        """The normalized source lines to annotate (default: ``--source``)."""
        return read_normalized_lines(args.source)

    @classmethod
    def check_inputs(cls, args: argparse.Namespace) -> None:
        """A cheap check of its inputs, before anything is parsed.

        Raises:
            InputError: naming the files.
        """

    @classmethod
    @abc.abstractmethod
    def from_args(cls, args: argparse.Namespace) -> "ParserBackend":
        """The parser of a checked ``syntax-nmt-annotate`` command line."""

    # -- raw text at inference -----------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def for_raw_text(cls, settings: "AnnotationSettings", model: Optional[str] = None, batch_size: int = 256,
                     gpu_id: int = -1) -> "ParserBackend":
        """The parser that annotates raw text as ``settings`` record (fairseq-interactive, the hub).

        Args:
            settings: the annotation settings of the training data.
            model: another name or path of the recorded model (``--annotate-parser-model``).
            batch_size: lines parsed per batch.
            gpu_id: ``-1`` for the CPU, else the GPU to parse on.

        Raises:
            ValueError: naming the setting, if raw text cannot be parsed as recorded.
        """

    @classmethod
    def tokenizer_for_raw_text(cls, settings: "AnnotationSettings", model: Optional[str] = None,
                               batch_size: int = 256) -> Callable[[Sequence[str]], List[List[str]]]:
        """How this backend split raw (not pre-tokenized) lines into words, without parsing them: for a model that
        reads no parse at inference (:meth:`~syntax_nmt.annotate.online.OnlineAnnotator.segment`). Returns a
        function of prepared lines giving each line's words, as :meth:`parse` gives ``Sentence.words``.

        Raises:
            ValueError: it cannot (this default): the words came with the parse.
        """
        raise ValueError(f"annotation setting backend={cls.name!r} with pretokenized=false: the words of the training "
                         f"data came with its parse, so raw text cannot be split into words without parsing it; give "
                         f"the model pre-tokenized text annotated with --pretokenized, or parse the input")

    # -- parsing -------------------------------------------------------------------------------------
    @abc.abstractmethod
    def parse(self, items: Iterable[Tuple[int, str, object]]) -> Iterator[Tuple[int, Sentence, object]]:
        """Parse ``(lineno, text, context)`` items, in order.

        Args:
            items: normalized lines with their 1-based line number and any context object (passed
                through untouched). Empty text gives an empty sentence.

        Yields:
            ``(lineno, sentence, context)`` for every item, in input order; several roots resolved by the
            ``multi_root`` policy, every tree checked.

        Raises:
            InputError: naming file and line.
        """
