"""The source streams of ``syntax_translation``: which ones the data offers, which ones a model reads, which ones are
read from binarized data and which ones raw text is annotated with (``--source-parse``).

:class:`SourceStreams` is the contract between the data and the model. The task makes it from its options and data
directory (the streams and their dictionaries); the model's ``build_model`` hands it what the model reads, in
training and, by reader, at inference (:meth:`SourceStreams.model_stream_dictionaries`), and gets the records of the
stream dictionaries to record; from then on the task loads and annotates what the contract says.
"""

import logging
import os
from typing import Dict, List, Optional

from fairseq.data import Dictionary

from syntax_nmt.data.signatures import DictionaryRecord, records_by_name
from syntax_nmt.data.streams import (
    HEAD_STREAM,
    SPECIAL_HEAD,
    TAG_STREAMS,
    StreamConfigError,
    parse_stream_list,
    stream_dict_path,
    streams_in_dir,
)
from syntax_nmt.models.modules.inference_needs import describe_needs, inference_streams

logger = logging.getLogger(__name__)

#: ``--source-parse``: how translation gets the source's annotation (see its help)
SOURCE_PARSE = ("auto", "always", "never")


def needs_parse_message(needs: Dict[str, List[str]], problem: str, remedy: Optional[str] = None) -> str:
    """One line: the model cannot translate as asked (``problem``), what reads what at inference, and what supplies
    it (``remedy``; default: the annotation of raw text, or a data directory with the stream files)."""
    remedy = remedy or ("leave --source-parse at auto (hub: source_parse='auto'): raw text is then annotated with "
                        "the recorded parser (or --input-conllu FILE, hub: translate_conllu), and fairseq-generate "
                        "reads the data directory's stream files (syntax-nmt-binarize)")
    return f"{problem}: the model reads at inference what only the annotation gives: {describe_needs(needs)}; {remedy}"


class SourceStreams:
    """The streams of a task, and the model's.

    Args:
        option: ``--source-streams`` (``auto``: every stream binarized in the data directory).
        data_path: the data directory (its stream dictionaries, ``dict.STREAM.txt``).
        dictionaries_only: the directory holds dictionaries but no binarized source (raw-text inference): with
            ``auto``, the heads join the streams (they need no dictionary).
        src, tgt: the language pair.
    """

    def __init__(self, option: str, data_path: str, src: str, tgt: str, dictionaries_only: bool = False):
        self.data_path = data_path
        self.auto = option == "auto"
        #: the streams read from binarized data (all the data offers until a model narrows them to its own)
        try:
            self.streams: List[str] = streams_in_dir(data_path, src, tgt) if self.auto else parse_stream_list(option)
        except StreamConfigError as e:
            raise StreamConfigError(f"--source-streams {option}: {e}") from None
        if self.auto and HEAD_STREAM not in self.streams and dictionaries_only:
            self.streams.append(HEAD_STREAM)
        self.dicts: Dict[str, Dictionary] = {}
        for name in self.streams:
            if name in TAG_STREAMS:
                path = stream_dict_path(data_path, name)
                if not os.path.exists(path):
                    raise StreamConfigError(f"stream {name!r} requested but {path} does not exist")
                self.dicts[name] = Dictionary.load(path)
        logger.info("source streams: %s", ", ".join(
            f"{n} ({len(self.dicts[n])} types)" if n in self.dicts else n for n in self.streams) or "none")
        #: the streams the data directory offers (before a model narrows :attr:`streams` to its own)
        self.available = list(self.streams)
        #: what the loaded model(s) read in training, and at inference by reader; None: no model yet
        self.model_streams: Optional[List[str]] = None
        self.model_needs: Optional[Dict[str, List[str]]] = None
        self._raw: Optional[List[str]] = None  # what raw text is annotated with (None: :attr:`streams`)
        self._translating_model = False  # the model(s) above were loaded to translate

    def _missing_remedy(self, missing: List[str]) -> str:
        """What supplies the streams ``missing`` to a model loaded to translate, for fairseq-generate and for raw text
        alike (the task cannot tell which command loads it). Raw text is annotated with them, but only against their
        dictionaries in the data directory (issue 56.7: this advised a fairseq-interactive user to use
        fairseq-interactive)."""
        dicts = [os.path.basename(stream_dict_path(self.data_path, s)) for s in missing if s in TAG_STREAMS]
        dicts = f" ({', '.join(dicts)})" if dicts else ""
        remedy = ("give the data directory the model was trained on (syntax-nmt-binarize of syntax-nmt-annotate's "
                  "output): fairseq-generate reads the streams from its files, and raw text (fairseq-interactive, "
                  f"the hub) is annotated with them against their dictionaries{dicts}, for which a folder with only "
                  "its dict.*.txt and annotation.json will do")
        return remedy if self.auto else f"name them in --source-streams (or leave it at auto) and {remedy}"

    def dictionary_records(self, names: List[str]) -> List[DictionaryRecord]:
        """The records (names, sizes, hashes) of the dictionaries of the tag streams among ``names``."""
        return [DictionaryRecord.of(n, self.dicts[n]) for n in names if n in self.dicts]

    def pad(self, name: str) -> int:
        """The padding value of stream ``name`` (heads: the special head)."""
        return self.dicts[name].pad() if name in self.dicts else SPECIAL_HEAD

    def bos(self, name: str) -> int:
        """The value of stream ``name`` at a prepended BOS (heads: the special head)."""
        return self.dicts[name].bos() if name in self.dicts else SPECIAL_HEAD

    @property
    def annotated(self) -> List[str]:
        """The streams raw text is annotated with: what the loaded model reads at inference (``--source-parse
        auto``); empty: raw text is only tokenized and segmented, no parser is loaded. Without a model,
        :attr:`streams`."""
        return list(self.streams if self._raw is None else self._raw)

    def model_stream_dictionaries(self, required: List[str], recorded: Optional[List[DictionaryRecord]] = None,
                                  at_inference: Optional[Dict[str, List[str]]] = None, translating: bool = False,
                                  mode: str = "auto") -> List[DictionaryRecord]:
        """Check that the task delivers the streams a model reads, settle what it reads from then on, and return the
        records of their dictionaries (for the checkpoint).

        Training: with ``--source-streams auto`` the task narrows itself to ``required``; an explicit list must
        match it. Translation (``translating``: a checkpoint loaded; ``mode``: ``--source-parse``): the streams the
        model reads at inference must be there, the others it was trained with are read where the data has them
        (``auto``); every one must be there (``always``); none is read and the model must need none (``never``).
        Raw text is annotated with what the model reads at inference (``auto``: nothing, no parser, for LISA
        without ``--lisa-inject-parse``). Stream dictionaries must match the ones a checkpoint was trained with.

        Args:
            required: the streams the model reads in training.
            recorded: the checkpoint's stream dictionaries (names, sizes, hashes), if loading one (read once by the
                model: :func:`~syntax_nmt.data.signatures.read_dictionaries`).
            at_inference: what its parts read at inference, by reader
                (:func:`~syntax_nmt.models.modules.inference_needs.inference_needs`); default: ``required``.

        Returns:
            The records of the stream dictionaries of ``required`` (a checkpoint's own, when translating).

        Raises:
            StreamConfigError: naming what reads a missing stream, and what supplies it.
        """
        required = list(required)
        needs = dict(at_inference) if at_inference is not None else ({"the model": required} if required else {})
        inference = inference_streams(needs)
        if translating and mode == "never" and inference:
            raise StreamConfigError(needs_parse_message(needs, "--source-parse never"))
        if translating and self._translating_model:  # an ensemble: what every member reads
            required = list(dict.fromkeys(self.model_streams + required))
            needs = {**self.model_needs, **needs}
            inference = inference_streams(needs)
        available = self.available if translating else self.streams
        must = inference if translating and mode != "always" else required
        missing = [s for s in must if s not in available]
        extra = [] if self.auto else [s for s in self.streams if s not in required]
        if missing and translating and mode == "auto":
            where = "the data directory " + self.data_path if self.auto else "--source-streams"
            raise StreamConfigError(needs_parse_message(needs, f"{where} lacks the streams {missing}",
                                                        self._missing_remedy(missing)))
        if missing or extra:
            parts = []
            if missing:
                where = "the data directory has" if self.auto else "--source-streams gives"
                parts.append(f"missing streams {missing} (the model needs {required}; {where} {available})")
            if extra:
                parts.append(f"extra streams {extra} the model was not trained with (it uses {required})")
            raise StreamConfigError("; ".join(parts))
        if translating:
            self.streams = [] if mode == "never" else [s for s in required if s in available]
        else:
            self.streams = required
        self.model_streams, self.model_needs = required, needs
        self._translating_model = translating
        self._raw = inference if translating and mode != "always" else required
        if translating:
            logger.info("translating (--source-parse %s): %s; streams read from binarized data: %s; raw text: %s",
                        mode, describe_needs(needs) or "the model reads no source stream at inference",
                        ", ".join(self.streams) or "none",
                        f"annotated ({', '.join(self._raw)})" if self._raw
                        else "tokenized and segmented as recorded, no parser")
        current = self.dictionary_records(required)
        if recorded is not None:
            old, new = records_by_name(recorded), records_by_name(current)
            for name in required:
                if name in old and name in self.dicts and old[name] != new.get(name):
                    raise StreamConfigError(
                        f"dictionary of stream {name!r} differs from the one the checkpoint was trained with "
                        f"({old[name].describe()} vs {new[name].describe()}): binarize with --streamdict-dir "
                        f"pointing at the training data"
                    )
            if translating:  # the streams it was trained with, whether or not this data directory has them
                return list(recorded)
        return current

    def set_source_parse(self, mode: str) -> None:
        """Apply ``--source-parse`` to raw-text translation once the model is loaded (the hub's ``source_parse``).

        Raises:
            StreamConfigError: ``never`` for a model that reads the parse at inference (naming what reads it), or
                ``always`` without the dictionaries of its tag streams.
        """
        if mode not in SOURCE_PARSE:
            raise ValueError(f"source_parse must be one of {', '.join(SOURCE_PARSE)}, got {mode!r}")
        needs = self.model_needs or {}
        if mode == "never" and needs:
            raise StreamConfigError(needs_parse_message(needs, "source_parse='never'"))
        if self.model_streams is not None:
            streams = {"never": [], "auto": inference_streams(needs), "always": self.model_streams}[mode]
            lacking = [s for s in streams if s in TAG_STREAMS and s not in self.dicts]
            if lacking:
                raise StreamConfigError(f"source_parse={mode!r}: the data directory has no dictionary of the streams "
                                        f"{lacking} (dict.STREAM.txt): use the training data's")
            self._raw = streams
