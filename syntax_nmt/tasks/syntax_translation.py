"""Task ``syntax_translation``: fairseq translation whose source carries syntax streams."""

import hashlib
import itertools
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch
from fairseq import utils
from fairseq.data import (
    AppendTokenDataset,
    ConcatDataset,
    Dictionary,
    LanguagePairDataset,
    ListDataset,
    PrependTokenDataset,
    StripTokenDataset,
    TruncateDataset,
    data_utils,
    indexed_dataset,
)
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask, load_langpair_dataset

from syntax_nmt.data.stream_pair_dataset import StreamLanguagePairDataset, TruncateSourceDataset
from syntax_nmt.annotation_settings import AnnotationSettings
from syntax_nmt.annotate.subwords import word_starts
from syntax_nmt.annotate.textio import InputError
from syntax_nmt.cli_errors import fairseq_errors_one_line
from syntax_nmt.constants import DATA_SETTINGS_FILE, DICT_FILE
from syntax_nmt.syntax.conllu import CoNLLUError, Sentence
from syntax_nmt.syntax.parse_lines import FORMATS as PARSE_FORMATS
from syntax_nmt.syntax.parse_lines import parse_lines
from syntax_nmt.data.streams import (
    HEAD_STREAM,
    SPECIAL_HEAD,
    STREAMS,
    TAG_STREAMS,
    parse_stream_list,
    parse_target_streams,
    stream_data_prefix,
    stream_dict_path,
    streams_in_dir,
    target_stream,
)
from syntax_nmt.models.modules.inference_needs import describe_needs, inference_streams
from syntax_nmt.models.syntax_transformer import ModelOptionError
from syntax_nmt.tasks import raw_inference
from syntax_nmt.tasks import source_parse as parse_output

logger = logging.getLogger(__name__)


class StreamConfigError(ValueError):
    """The streams of the data, the task options and the model do not agree."""


#: ``--source-parse``: how translation gets the source's annotation (see its help)
SOURCE_PARSE = ("auto", "always", "never")


# fairseq-train/-generate/-interactive: these user errors are one line with exit status 2, not a traceback (model
# options: while fairseq's parser applies the architecture, before any data is loaded)
fairseq_errors_one_line((StreamConfigError, InputError, CoNLLUError, ModelOptionError))


@dataclass
class SyntaxTranslationConfig(TranslationConfig):
    source_streams: str = field(
        default="auto",
        metadata={
            "help": f"comma-separated source streams to load ({','.join(STREAMS)}). 'auto': when "
            "training, every stream binarized in the data directory (the model records the ones it uses); "
            "when generating, the streams the checkpoint was trained with"
        },
    )
    target_factors: str = field(
        default="",
        metadata={"help": "target factors: comma-separated tag streams of the target (pos,case,subword,dep; "
                  "binarized with syntax-nmt-binarize --target-streams) that the decoder predicts beside each "
                  "target token (--arch syntax_transformer*; loss weight: --target-factor-loss-weight of the "
                  "criterion label_smoothed_cross_entropy_with_syntax). Recorded in the checkpoint: generation "
                  "prints each sentence's predicted factors as F-ID lines (after the factor's name)"},
    )
    source_prepend_bos: bool = field(
        default=False,
        metadata={"help": "prepend BOS to each source sentence; its streams get the BOS value (heads: itself). "
                  "Recorded in the checkpoint: generation applies it from there (asking for it with a checkpoint "
                  "trained without it is an error). With --truncate-source, sources are cut to leave room for it"},
    )
    # raw-text inference (fairseq-interactive, the hub): see syntax_nmt/tasks/raw_inference.py
    annotate_parser_model: Optional[str] = field(
        default=None,
        metadata={"help": "raw-text inference: parse with this model (name or path) of the recorded parser instead "
                  "of the one recorded in the checkpoint, e.g. another install of the same spaCy pipeline; for data "
                  "parsed outside (CoNLL-U), a model of the parser that reads raw text (spaCy) instead of "
                  "--input-conllu"},
    )
    annotate_spacy_model: Optional[str] = field(
        default=None, metadata={"help": "the same as --annotate-parser-model (its older name)"},
    )
    annotate_subword_model: Optional[str] = field(
        default=None,
        metadata={"help": "raw-text inference: the recorded BPE codes / sentencepiece model at another path "
                  "(its SHA-256 must match the recorded one)"},
    )
    annotation_settings_file: Optional[str] = field(
        default=None,
        metadata={"help": "raw-text inference: annotation settings (an annotation.json) to use instead of the "
                  "checkpoint's; needed for checkpoints trained before settings were recorded"},
    )
    input_conllu: Optional[str] = field(
        default=None,
        metadata={"help": "fairseq-interactive: take the parse of the input from this CoNLL-U file (one sentence "
                  "block per non-empty input line, checked against the line) instead of parsing with spaCy"},
    )
    source_parse: ChoiceEnum(SOURCE_PARSE) = field(
        default="auto",
        metadata={"help": "translation (fairseq-generate, fairseq-interactive, the hub; training ignores it): "
                  "'auto': what the model reads at inference decides: raw text is parsed only for a model that "
                  "reads annotated streams (LISA without --lisa-inject-parse reads none: its raw text is only "
                  "Moses-processed and segmented as recorded, no parser is loaded), and fairseq-generate needs the "
                  "stream files of those streams alone (it reads the others the model was trained with when the "
                  "data directory has them); 'never': no parser and no stream file (a model that reads the parse "
                  "at inference is an error naming what it reads); 'always': raw text is parsed and every stream "
                  "the model was trained with is read (as before models declared their needs; to compare)"},
    )
    print_source_parse: ChoiceEnum(PARSE_FORMATS) = field(
        default="none",
        metadata={"help": "fairseq-generate/-interactive: print the parse of each source sentence that the model "
                  "predicts (LISA's parse head: the argmax from each word's first subword, read as word heads), "
                  "beside the other lines: 'heads': G-ID<TAB>one 1-based head per word of the S- line (0: root); "
                  "'conllu': the sentence as a CoNLL-U block, each line after G-ID<TAB> "
                  "(grep ^G- | cut -f2- is a CoNLL-U file). syntax-nmt-evaluate parse scores them (UAS)"},
    )


def _set(cfg, key, value) -> None:
    """Set ``cfg.key`` on an ``argparse.Namespace`` or an omegaconf ``DictConfig`` (struct or not)."""
    try:
        from omegaconf import DictConfig, open_dict

        if isinstance(cfg, DictConfig):
            with open_dict(cfg):
                cfg[key] = value
            return
    except ImportError:  # pragma: no cover - omegaconf comes with fairseq
        pass
    setattr(cfg, key, value)


def _get(cfg, key):
    """``cfg.key`` of an ``argparse.Namespace`` or an omegaconf ``DictConfig``; ``None`` if absent."""
    return cfg.get(key, None) if hasattr(cfg, "get") else getattr(cfg, key, None)


def dictionary_signature(name: str, d: Dictionary) -> str:
    """``name:size:hash`` of a stream (or word) dictionary, recorded in checkpoints."""
    digest = hashlib.md5("\n".join(d.symbols).encode("utf-8")).hexdigest()[:10]
    return f"{name}:{len(d)}:{digest}"


def parse_signatures(value: Optional[str]) -> Dict[str, tuple]:
    """``"pos:20:ab12,case:8:cd34"`` -> ``{"pos": (20, "ab12"), ...}``."""
    out = {}
    for item in (value or "").split(","):
        if item:
            name, size, digest = item.split(":")
            out[name] = (int(size), digest)
    return out


def _check_complete(ds, prefix: str, name: str) -> None:
    """Refuse a binarized stream whose ``.bin`` is shorter than its ``.idx`` says (a copy cut short): it loaded,
    and failed deep inside a batch with numpy's "offset must be non-negative and no greater than buffer length"."""
    index = getattr(ds, "_index", None)
    pointers, sizes = getattr(index, "_pointers", None), getattr(index, "_sizes", None)
    if pointers is None or sizes is None or not len(sizes):
        return
    needed = int(pointers[-1]) + int(sizes[-1]) * np.dtype(index.dtype).itemsize
    have = os.path.getsize(prefix + ".bin")
    if have < needed:
        raise StreamConfigError(f"stream {name!r}: {prefix}.bin holds {have} bytes, its index {prefix}.idx needs "
                                f"{needed}: the file is cut short; binarize again or copy it whole")


@register_task("syntax_translation", dataclass=SyntaxTranslationConfig)
class SyntaxTranslationTask(TranslationTask):
    """Translation with per-token source streams (POS, case, subword position, dependency label, head).

    Datasets are fairseq's language pairs; the streams written by ``syntax-nmt-binarize``
    ride along in ``net_input["src_streams"]``, padded like ``src_tokens``.
    """

    cfg: SyntaxTranslationConfig

    @classmethod
    def setup_task(cls, cfg: SyntaxTranslationConfig, **kwargs):
        """fairseq's, which infers the language pair from binarized file names; a directory of
        dictionaries only (raw-text inference) names it by its ``dict.{lang}.txt`` files and the
        source language of its ``annotation.json`` (see :func:`language_pair_of_dictionaries`). Standard
        input and fairseq-interactive's ``--input FILE`` are read leniently from then on
        (:func:`~syntax_nmt.tasks.raw_inference.lenient_stdin`, :func:`~.raw_inference.lenient_input_file`)."""
        if cfg.source_lang is None or cfg.target_lang is None:
            paths = utils.split_paths(cfg.data)
            if paths and os.path.isdir(paths[0]) and not _has_binarized_split(paths[0]):
                cfg.source_lang, cfg.target_lang = language_pair_of_dictionaries(paths[0], cfg.source_lang,
                                                                                 cfg.target_lang)
        raw_inference.lenient_stdin()  # fairseq-interactive: an invalid input byte ends no session,
        raw_inference.lenient_input_file()  # whether piped in or read from --input FILE
        return super().setup_task(cfg, **kwargs)

    def __init__(self, cfg: SyntaxTranslationConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        data_path = utils.split_paths(cfg.data)[0]
        self.auto_streams = cfg.source_streams == "auto"
        if self.auto_streams:
            self.streams = streams_in_dir(data_path, cfg.source_lang, cfg.target_lang)
        else:
            self.streams = parse_stream_list(cfg.source_streams)
        if self.auto_streams and HEAD_STREAM not in self.streams and not _has_binarized_source(
                data_path, cfg.source_lang, cfg.target_lang):
            self.streams.append(HEAD_STREAM)  # dictionaries only (raw-text inference): heads need none
        self.stream_dicts: Dict[str, Dictionary] = {}
        for name in self.streams:
            if name in TAG_STREAMS:
                path = stream_dict_path(data_path, name)
                if not os.path.exists(path):
                    raise StreamConfigError(f"stream {name!r} requested but {path} does not exist")
                self.stream_dicts[name] = Dictionary.load(path)
        logger.info("source streams: %s", ", ".join(
            f"{n} ({len(self.stream_dicts[n])} types)" if n in self.stream_dicts else n for n in self.streams
        ) or "none")
        #: target factors (names) and their dictionaries; their data is loaded when --target-factors is given
        self.target_factors = parse_target_streams(cfg.target_factors) if cfg.target_factors else []
        self.load_target_factors = bool(self.target_factors)
        #: fairseq-generate / -interactive print F- lines; the hub reads the factors from the hypotheses instead
        self.print_factor_lines = True
        self._inference_lines = self._inference_base = 0  # raw-text inputs so far, and before the current buffer
        self.target_factor_dicts: Dict[str, Dictionary] = {}
        self._load_factor_dicts(data_path, self.target_factors)
        self.data_annotation = raw_inference.data_settings(data_path)
        self.model_annotation: Optional[AnnotationSettings] = None  # what the loaded checkpoint(s) record
        self.max_source_tokens = cfg.max_source_positions
        self.annotation_options: Dict[str, Optional[str]] = {}
        self._annotator = None
        self._conllu_blocks = None
        self._last_inference_batch = None
        self._trained_methods: Optional[str] = None  # --syntax-attention of the model being trained
        #: the streams the data directory offers (before a model narrows :attr:`streams` to its own)
        self._available_streams = list(self.streams)
        self._loading = False  # a checkpoint is being loaded (build_model, from_checkpoint): to translate
        #: what the loaded model(s) read: in training (all streams) and at inference (by reader); None: no model yet
        self._model_streams: Optional[List[str]] = None
        self._model_needs: Optional[Dict[str, List[str]]] = None
        self._raw_streams: Optional[List[str]] = None  # what raw text is annotated with (None: :attr:`streams`)
        self._translating_model = False  # the model(s) above were loaded to translate
        self._marker_table = None

    def _load_factor_dicts(self, data_path: str, names: List[str]) -> None:
        for name in names:
            path = stream_dict_path(data_path, target_stream(name))
            if not os.path.exists(path):
                raise StreamConfigError(f"target factor {name!r}: {path} does not exist (binarize with "
                                        f"syntax-nmt-binarize --target-streams {name})")
            self.target_factor_dicts[name] = Dictionary.load(path)

    def factor_signature(self) -> str:
        """``name:size:hash`` of each target factor's dictionary (recorded in checkpoints)."""
        return ",".join(dictionary_signature(n, self.target_factor_dicts[n]) for n in self.target_factors)

    def _adopt_target_factors(self, cfg, from_checkpoint: bool) -> None:
        """Record ``--target-factors`` (the dictionaries' signatures) in the model's arguments when training; when
        a checkpoint is loaded, take its factors (their dictionaries from the data directory, checked against the
        recorded ones), so that generation prints them.

        Raises:
            StreamConfigError: another factor list than the checkpoint's, a dictionary that differs or is missing.
        """
        recorded = _get(cfg, "target_factor_dicts")
        if not from_checkpoint:
            _set(cfg, "target_factor_dicts", self.factor_signature())
            return
        names = list(parse_signatures(recorded))
        # the same factors in another order are the checkpoint's (its order is kept: the F- lines follow it)
        if self.cfg.target_factors and sorted(names) != sorted(self.target_factors):
            raise StreamConfigError(f"--target-factors {','.join(self.target_factors)}: the checkpoint was trained "
                                    f"with {','.join(names) or 'none'} (leave the option out when generating)")
        self._load_factor_dicts(utils.split_paths(self.cfg.data)[0], [n for n in names if n not in
                                                                      self.target_factor_dicts])
        self.target_factors = names
        current = parse_signatures(self.factor_signature())
        for name, value in parse_signatures(recorded).items():
            if current[name] != value:
                raise StreamConfigError(f"the dictionary of target factor {name!r} differs from the one the checkpoint "
                                        f"was trained with ({value[0]} types vs {current[name][0]}): use the training "
                                        f"data's dict.{target_stream(name)}.txt")

    # -- the contract between data and model -------------------------------------------------
    def stream_signature(self, names: List[str]) -> str:
        return ",".join(dictionary_signature(n, self.stream_dicts[n]) for n in names if n in self.stream_dicts)

    def provide_streams(self, required: List[str], recorded_signature: Optional[str] = None,
                        at_inference: Optional[Dict[str, List[str]]] = None) -> str:
        """Check that the task delivers the streams a model needs.

        Called by the model's ``build_model``. Training: with ``--source-streams auto`` the task narrows itself to
        ``required``; an explicit list must match it. Translation (a checkpoint loaded, ``--source-parse``): the
        streams the model reads at inference must be there, the others it was trained with are read where the data
        has them (``auto``); every one must be there (``always``); none is read and the model must need none
        (``never``). Raw text is annotated with what the model reads at inference (``auto``: nothing, no parser,
        for LISA without ``--lisa-inject-parse``). Stream dictionaries must match the ones a checkpoint was
        trained with.

        Args:
            required: the streams the model reads in training.
            recorded_signature: the checkpoint's stream dictionaries (names, sizes, hashes), if loading one.
            at_inference: what its parts read at inference, by reader
                (:func:`~syntax_nmt.models.modules.inference_needs.inference_needs`); default: ``required``.

        Returns:
            The signature (names, sizes, hashes) of the stream dictionaries, for the checkpoint.

        Raises:
            StreamConfigError: naming what reads a missing stream, and what supplies it.
        """
        required = list(required)
        needs = dict(at_inference) if at_inference is not None else ({"the model": required} if required else {})
        inference = inference_streams(needs)
        mode = self.source_parse
        translating = self._loading
        if translating and mode == "never" and inference:
            raise StreamConfigError(needs_parse_message(needs, "--source-parse never"))
        if translating and self._translating_model:  # an ensemble: what every member reads
            required = list(dict.fromkeys(self._model_streams + required))
            needs = {**self._model_needs, **needs}
            inference = inference_streams(needs)
        available = self._available_streams if translating else self.streams
        must = inference if translating and mode != "always" else required
        missing = [s for s in must if s not in available]
        extra = [] if self.auto_streams else [s for s in self.streams if s not in required]
        if missing and translating and mode == "auto":
            where = ("the data directory " + utils.split_paths(self.cfg.data)[0] if self.auto_streams
                     else "--source-streams")
            raise StreamConfigError(needs_parse_message(
                needs, f"{where} lacks the streams {missing}",
                "binarize the data with syntax-nmt-binarize from syntax-nmt-annotate's output, or translate raw "
                "text with fairseq-interactive, which annotates it"))
        if missing or extra:
            parts = []
            if missing:
                where = "the data directory has" if self.auto_streams else "--source-streams gives"
                parts.append(f"missing streams {missing} (the model needs {required}; {where} {available})")
            if extra:
                parts.append(f"extra streams {extra} the model was not trained with (it uses {required})")
            raise StreamConfigError("; ".join(parts))
        if translating:
            self.streams = [] if mode == "never" else [s for s in required if s in available]
        else:
            self.streams = required
        self._model_streams, self._model_needs = required, needs
        self._translating_model = translating
        self._raw_streams = inference if translating and mode != "always" else required
        if translating:
            logger.info("translating (--source-parse %s): %s; streams read from binarized data: %s; raw text: %s",
                        mode, describe_needs(needs) or "the model reads no source stream at inference",
                        ", ".join(self.streams) or "none",
                        f"annotated ({', '.join(self._raw_streams)})" if self._raw_streams
                        else "tokenized and segmented as recorded, no parser")
        signature = self.stream_signature(required)
        if recorded_signature is not None:
            recorded, current = parse_signatures(recorded_signature), parse_signatures(signature)
            for name in required:
                if name in recorded and name in self.stream_dicts and recorded[name] != current.get(name):
                    raise StreamConfigError(
                        f"dictionary of stream {name!r} differs from the one the checkpoint was trained with "
                        f"({recorded[name][0]} types, hash {recorded[name][1]} vs {current[name][0]} types, "
                        f"hash {current[name][1]}): binarize with --streamdict-dir pointing at the training data"
                    )
            if translating:  # the streams it was trained with, whether or not this data directory has them
                return recorded_signature
        return signature

    @property
    def source_parse(self) -> str:
        """``--source-parse`` (``auto`` for a task configured before the option existed)."""
        return str(_get(self.cfg, "source_parse") or "auto")

    @property
    def cfg_print_source_parse(self) -> str:
        """``--print-source-parse`` (``none`` for a task configured before the option existed)."""
        return str(_get(self.cfg, "print_source_parse") or "none")

    @property
    def annotated_streams(self) -> List[str]:
        """The streams raw text is annotated with (fairseq-interactive, the hub): what the loaded model reads at
        inference (``--source-parse auto``); empty: raw text is only tokenized and segmented, no parser is loaded.
        Without a loaded model, :attr:`streams`."""
        return list(self.streams if self._raw_streams is None else self._raw_streams)

    @property
    def inference_needs(self) -> Dict[str, List[str]]:
        """What the loaded model reads at inference, by reader (empty: nothing, or no model yet)."""
        return dict(self._model_needs or {})

    def set_source_parse(self, mode: str) -> None:
        """Apply ``--source-parse`` to raw-text translation once the model is loaded (the hub's ``source_parse``).

        Raises:
            StreamConfigError: ``never`` for a model that reads the parse at inference (naming what reads it), or
                ``always`` without the dictionaries of its tag streams.
        """
        if mode not in SOURCE_PARSE:
            raise ValueError(f"source_parse must be one of {', '.join(SOURCE_PARSE)}, got {mode!r}")
        needs = self._model_needs or {}
        if mode == "never" and needs:
            raise StreamConfigError(needs_parse_message(needs, "source_parse='never'"))
        if self._model_streams is not None:
            streams = {"never": [], "auto": inference_streams(needs), "always": self._model_streams}[mode]
            lacking = [s for s in streams if s in TAG_STREAMS and s not in self.stream_dicts]
            if lacking:
                raise StreamConfigError(f"source_parse={mode!r}: the data directory has no dictionary of the streams "
                                        f"{lacking} (dict.STREAM.txt): use the training data's")
            self._raw_streams = streams
        _set(self.cfg, "source_parse", mode)

    def _record_word_dictionaries(self, cfg, from_checkpoint: bool) -> None:
        """Record the signatures (size, hash) of the source and target dictionaries in the model's configuration
        when training, and check them when a checkpoint is loaded: a dictionary of the same size in another
        order (another data directory) loads without a shape error and translates garbage. Checkpoints that
        recorded none are not checked.

        Raises:
            StreamConfigError: naming the dictionary that differs.
        """
        current = {"source": self.src_dict, "target": self.tgt_dict}
        signature = ",".join(dictionary_signature(name, d) for name, d in current.items() if d is not None)
        recorded = _get(cfg, "word_dict_signature")
        if not from_checkpoint or not recorded:
            if not from_checkpoint:
                _set(cfg, "word_dict_signature", signature)
            return
        old, new = parse_signatures(recorded), parse_signatures(signature)
        langs = {"source": self.cfg.source_lang, "target": self.cfg.target_lang}
        for name in current:
            if name in old and name in new and old[name] != new[name]:
                path = os.path.join(utils.split_paths(self.cfg.data)[0], f"dict.{langs[name]}.txt")
                raise StreamConfigError(
                    f"the {name} dictionary {path} differs from the one the checkpoint was trained with "
                    f"({old[name][0]} types, hash {old[name][1]} vs {new[name][0]} types, hash {new[name][1]}): "
                    f"use the training data's dictionaries (binarize with --srcdict/--tgtdict of them)")

    def _record_source_prepend_bos(self, cfg, from_checkpoint: bool) -> None:
        """Record ``--source-prepend-bos`` in the model's configuration (so in the checkpoint)
        and, when a checkpoint is loaded, apply the recorded value to this task.

        Raises:
            StreamConfigError: if BOS is asked for but the checkpoint was trained without it.
        """
        recorded = _get(cfg, "source_prepend_bos")
        if from_checkpoint and recorded is not None and bool(recorded) != bool(self.cfg.source_prepend_bos):
            if not recorded:
                raise StreamConfigError("--source-prepend-bos is given, but the checkpoint was trained without it "
                                        "(its sources had no BOS): generate without --source-prepend-bos")
            logger.info("the checkpoint was trained with --source-prepend-bos: prepending BOS to the sources")
            self.cfg.source_prepend_bos = True
        else:
            _set(cfg, "source_prepend_bos", bool(self.cfg.source_prepend_bos))

    def _apply_source_truncation(self, cfg, model, from_checkpoint: bool) -> None:
        """Record ``--truncate-source`` in the model's configuration (fairseq's arguments already
        carry it) and, when a checkpoint is loaded, truncate sources exactly as in training: a
        recorded ``--truncate-source`` is applied to this task, and with truncation (recorded or
        asked for) sources are cut to the model's source positions (the ``--max-source-positions``
        it was trained with) rather than this command line's default of 1024."""
        if not from_checkpoint:
            _set(cfg, "truncate_source", bool(self.cfg.truncate_source))
            return
        if _get(cfg, "truncate_source") and not self.cfg.truncate_source:
            logger.info("the checkpoint was trained with --truncate-source: sources longer than its %s source "
                        "positions are truncated as in training", _get(cfg, "max_source_positions"))
            self.cfg.truncate_source = True
        model_positions = utils.resolve_max_positions(
            model.max_positions(), (self.cfg.max_source_positions, self.cfg.max_target_positions))[0]
        self.max_source_tokens = min(self.max_source_tokens, model_positions)  # without truncation: blanked
        if self.cfg.truncate_source and model_positions < self.cfg.max_source_positions:
            self.cfg.max_source_positions = model_positions

    # -- data ------------------------------------------------------------------------------
    def _pad_value(self, name: str) -> int:
        return self.stream_dicts[name].pad() if name in self.stream_dicts else SPECIAL_HEAD

    def _bos_value(self, name: str) -> int:
        return self.stream_dicts[name].bos() if name in self.stream_dicts else SPECIAL_HEAD

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        # fairseq truncates (--truncate-source) before prepending BOS: leave room for it
        max_src = self.cfg.max_source_positions - int(bool(self.cfg.source_prepend_bos))
        pair = load_langpair_dataset(
            data_path, split, src, self.src_dict, tgt, self.tgt_dict,
            combine=combine,
            dataset_impl=self.cfg.dataset_impl,
            upsample_primary=self.cfg.upsample_primary,
            left_pad_source=self.cfg.left_pad_source,
            left_pad_target=self.cfg.left_pad_target,
            max_source_positions=max_src,  # only used for --truncate-source
            max_target_positions=self.cfg.max_target_positions,
            load_alignments=self.cfg.load_alignments,
            truncate_source=self.cfg.truncate_source,
            num_buckets=self.cfg.num_batch_buckets,
            shuffle=(split != "test"),
            pad_to_multiple=self.cfg.required_seq_len_multiple,
            prepend_bos_src=self.src_dict.bos() if self.cfg.source_prepend_bos else None,
        )
        streams = {name: self._load_stream(data_path, split, name, combine) for name in self.streams}
        factors = {name: self._load_stream(data_path, split, name, combine, side="target")
                   for name in (self.target_factors if self.load_target_factors else [])}
        self.datasets[split] = StreamLanguagePairDataset(
            pair, streams, {name: self._pad_value(name) for name in streams}, target_streams=factors,
            target_specials={n: (self.target_factor_dicts[n].pad(), self.target_factor_dicts[n].eos())
                             for n in factors},
        )

    def _load_stream(self, data_path: str, split: str, name: str, combine: bool, side: str = "source"):
        """A stream of the source (or, ``side="target"``, the target factor ``name``), checked against the
        source's (target's) sentence lengths, truncated like the source."""
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        target = side == "target"
        dictionary = self.target_factor_dicts[name] if target else self.stream_dicts.get(name)
        lang = tgt if target else src
        file_name = target_stream(name) if target else name
        impl = self.cfg.dataset_impl
        shards = []
        for k in itertools.count():
            split_k = split + (str(k) if k > 0 else "")
            lang_pair = None
            for a, b in ((src, tgt), (tgt, src)):
                if indexed_dataset.dataset_exists(os.path.join(data_path, f"{split_k}.{a}-{b}.{src}"), impl=impl):
                    lang_pair = (a, b)
                    break
            if lang_pair is None:
                break
            prefix = stream_data_prefix(data_path, split_k, lang_pair[0], lang_pair[1], file_name)
            ds = data_utils.load_indexed_dataset(prefix, dictionary, impl)
            what = f"target stream {name!r}" if target else f"stream {name!r}"
            if ds is None:
                raise StreamConfigError(f"{what} of split {split_k!r} not found: {prefix}.{{bin,idx}}"
                                        + (f" (binarize with --target-streams {name})" if target else ""))
            _check_complete(ds, prefix, name)
            src_ds = data_utils.load_indexed_dataset(
                os.path.join(data_path, f"{split_k}.{lang_pair[0]}-{lang_pair[1]}.{lang}"),
                self.tgt_dict if target else self.src_dict, impl
            )
            if len(ds) != len(src_ds) or (ds.sizes != src_ds.sizes).any():
                if len(ds) != len(src_ds):
                    detail = f"{len(ds)} sentences, the {side} has {len(src_ds)}"
                else:
                    i = int((ds.sizes != src_ds.sizes).nonzero()[0][0])
                    detail = f"sentence {i + 1} has {ds.sizes[i]} tokens, the {side} {src_ds.sizes[i]}"
                raise StreamConfigError(f"{what} of split {split_k!r} ({prefix}) does not match the {side}: {detail}")
            if self.cfg.truncate_source and not target:
                max_src = self.cfg.max_source_positions - int(bool(self.cfg.source_prepend_bos))
                ds = TruncateSourceDataset(ds, max_src, src_ds, self.src_dict.eos())
            shards.append(ds)
            if not combine:
                break
        if not shards:
            raise FileNotFoundError(f"Dataset not found: {split} ({data_path})")
        if len(shards) == 1:
            ds = shards[0]
        else:
            ratios = [1] * len(shards)
            ratios[0] = self.cfg.upsample_primary
            ds = ConcatDataset(shards, ratios)
        return ds if target else self._wrap_stream(ds, name, truncate=False)

    def _wrap_stream(self, ds, name: str, truncate: bool = True):
        """Truncate (``--truncate-source``) and prepend BOS (``--source-prepend-bos``) to a stream,
        as the source tokens are."""
        if truncate and self.cfg.truncate_source:
            ds = TruncateSourceDataset(ds, self.cfg.max_source_positions - int(bool(self.cfg.source_prepend_bos)))
        if self.cfg.source_prepend_bos:
            ds = PrependTokenDataset(ds, self._bos_value(name))
        return ds

    # -- annotation settings and raw-text inference ---------------------------------------------
    def build_model(self, cfg, from_checkpoint=False):
        """fairseq's, plus what the data was made with: ``--source-prepend-bos``, ``--truncate-source``
        and the annotation settings are recorded in the model arguments when training (so checkpoints
        carry them), and applied or checked against the data and the ensemble when loading.

        Raises:
            StreamConfigError: if BOS is asked for but the checkpoint was trained without it.
        """
        self._record_source_prepend_bos(cfg, from_checkpoint)
        self._record_word_dictionaries(cfg, from_checkpoint)
        self._adopt_target_factors(cfg, from_checkpoint)
        if not from_checkpoint and _get(cfg, "target_factor_input") and not self.target_factors:
            raise StreamConfigError("--target-factor-input embeds the previous token's target factors: give the "
                                    "task's --target-factors too (or leave it out)")
        data_file = os.path.join(utils.split_paths(self.cfg.data)[0], DATA_SETTINGS_FILE)
        recorded = raw_inference.recorded_settings(cfg)
        if recorded is None and not from_checkpoint:
            if self.data_annotation is not None:
                raw_inference.record_settings(cfg, self.data_annotation)
            else:
                logger.info("%s does not exist: the model records no annotation settings (raw-text inference "
                            "will need --annotation-settings-file)", data_file)
        elif recorded is not None:
            if self.model_annotation is not None:
                raw_inference.check_agree(self.model_annotation, recorded, "the first model of the ensemble",
                                          "another model")
            if self.data_annotation is not None:
                raw_inference.check_agree(recorded, self.data_annotation, "the checkpoint", data_file)
            self.model_annotation = recorded
        self._loading = bool(from_checkpoint)
        try:
            model = super().build_model(cfg, from_checkpoint)
        finally:
            self._loading = False
        if from_checkpoint and self.cfg_print_source_parse != "none" and not getattr(model, "predicts_source_parse",
                                                                                      False):
            raise StreamConfigError(f"--print-source-parse {self.cfg_print_source_parse}: the model predicts no parse "
                                    f"of the source (only --syntax-attention lisa has a parse head; "
                                    f"its --syntax-attention: {_get(cfg, 'syntax_attention') or 'none'})")
        if self.target_factors and getattr(model, "target_factors", None) != self.target_factors:
            raise StreamConfigError(f"--target-factors {','.join(self.target_factors)} needs a model that predicts "
                                    f"them: --arch syntax_transformer* (got {type(model).__name__})")
        self._apply_source_truncation(cfg, model, from_checkpoint)
        if not from_checkpoint:
            self._trained_methods = _get(cfg, "syntax_attention")
        return model

    def build_criterion(self, cfg, from_checkpoint=False):
        """fairseq's; warns when the model being trained has syntax methods whose auxiliary losses
        (LISA's parse loss, SEPREM's DP and HP) the criterion does not compute, so that they
        would silently not be trained (``label_smoothed_cross_entropy_with_syntax`` computes them)."""
        from syntax_nmt.criterions.label_smoothed_cross_entropy_with_syntax import (
            LabelSmoothedCrossEntropyWithSyntaxCriterion,
        )
        from syntax_nmt.models.modules.methods import parse_methods, registered_methods

        criterion = super().build_criterion(cfg, from_checkpoint=from_checkpoint)
        if self.load_target_factors and not isinstance(criterion, LabelSmoothedCrossEntropyWithSyntaxCriterion):
            logger.warning("--target-factors %s: the criterion %s does not train them (their output layers get no "
                           "gradient); use --criterion label_smoothed_cross_entropy_with_syntax",
                           ",".join(self.target_factors),
                           _get(cfg, "_name") or _get(cfg, "criterion") or type(criterion).__name__)
        methods = [m for m in parse_methods(self._trained_methods)
                   if registered_methods()[m].losses]
        if methods and not isinstance(criterion, LabelSmoothedCrossEntropyWithSyntaxCriterion):
            options = [o for m in methods for o in registered_methods()[m].system_losses if o.startswith("--")]
            logger.warning("--syntax-attention %s has auxiliary losses (%s) that the criterion %s does not compute: "
                           "the model trains without them; use --criterion label_smoothed_cross_entropy_with_syntax",
                           ",".join(methods), ", ".join(options),
                           _get(cfg, "_name") or _get(cfg, "criterion") or type(criterion).__name__)
        return criterion

    def set_annotation_options(self, parser_model=None, subword_model=None, settings_file=None,
                               spacy_model=None) -> None:
        """Override the annotation options of raw-text inference (the hub's keyword arguments; ``spacy_model``:
        the older name of ``parser_model``)."""
        self.annotation_options = {"parser_model": parser_model, "spacy_model": spacy_model,
                                   "subword_model": subword_model, "settings_file": settings_file}
        self._annotator = None

    def _option(self, name: str, cfg_name: str):
        return self.annotation_options.get(name) or getattr(self.cfg, cfg_name, None)

    def annotation_settings(self) -> AnnotationSettings:
        """The settings raw input is annotated with: ``--annotation-settings-file``, else the checkpoint's.

        Raises:
            StreamConfigError: neither exists (a checkpoint from before settings were recorded); a ValueError that
                fairseq-interactive reports in one line.
        """
        path = self._option("settings_file", "annotation_settings_file")
        if path:
            settings = AnnotationSettings.read(path)
            if self.model_annotation is not None:
                raw_inference.check_agree(settings, self.model_annotation, path, "the checkpoint")
            return settings
        if self.model_annotation is None:
            raise StreamConfigError(
                "the checkpoint records no annotation settings (it was trained before syntax-nmt recorded them, or "
                f"on data without {DATA_SETTINGS_FILE}), so raw text cannot be annotated as its training "
                f"data was: pass --annotation-settings-file PATH (hub: annotation_settings_file=PATH) naming the "
                f"{DATA_SETTINGS_FILE} of the data the model was trained on"
            )
        return self.model_annotation

    @property
    def annotator(self):
        """The :class:`~syntax_nmt.annotate.online.OnlineAnnotator` for raw input (built on first use)."""
        if self._annotator is None:
            from syntax_nmt.annotate.online import OnlineAnnotator

            self._annotator = OnlineAnnotator(
                self.annotation_settings(),
                parser_model=self._option("parser_model", "annotate_parser_model"),
                spacy_model=self._option("spacy_model", "annotate_spacy_model"),
                subword_model=self._option("subword_model", "annotate_subword_model"),
            )
            logger.info("annotating raw input with: %s", json.dumps(self._annotator.settings.to_dict(), sort_keys=True))
        return self._annotator

    def annotate_lines(self, lines: Sequence[str], targets: Optional[Sequence[str]] = None,
                       conllu=None) -> List[torch.Tensor]:
        """Annotate raw lines exactly as the training data was, and binarize them.

        Args:
            lines: raw source lines (``None`` with ``conllu``: the lines are its blocks' words).
            targets: target lines (tokenized as the training target was), for scoring.
            conllu: ``(block_no, Sentence)`` pairs to take the parse from instead of spaCy
                (``--input-conllu``), consumed one per non-empty line.

        Returns:
            One source tensor per line (EOS appended, as fairseq-preprocess binarizes it), each
            carrying its streams (:attr:`annotated_streams`; none, and no parser run, for a model that reads
            none at inference) and target; see :mod:`syntax_nmt.tasks.raw_inference`.
        """
        ann = self.annotator
        needed = self.annotated_streams
        if conllu is None and self.cfg.input_conllu:
            if self._conllu_blocks is None:
                from syntax_nmt.annotate.online import conllu_blocks

                self._conllu_blocks = conllu_blocks(self.cfg.input_conllu)
            conllu = self._conllu_blocks
        if conllu is not None:
            lines = list(lines) if lines is not None else None
            annotated = ann.annotate_conllu(conllu, lines, needed=needed,
                                            source_name=self.cfg.input_conllu or "<conllu>")
        elif not needed:  # the model reads no stream at inference: tokenized and segmented, no parser
            annotated = ann.segment(list(lines), targets=targets)
        else:
            annotated = ann.annotate(list(lines), targets=targets)
        first = ann.lines_seen - len(annotated) + 1
        limit = self.max_source_tokens - int(self.cfg.source_prepend_bos)
        out = []
        for i, a in enumerate(annotated):
            src = self.src_dict.encode_line(a.source, add_if_not_exist=False).long()
            if len(src) > limit and not self.cfg.truncate_source:
                logger.warning("input line %d: %d tokens, more than the model's %d source positions: translated "
                               "as an empty line (--truncate-source keeps its beginning)", first + i, len(src), limit)
                a = type(a)("", dict.fromkeys(a.streams, ""), a.target and "", "too long")
                src = self.src_dict.encode_line("", add_if_not_exist=False).long()
            streams = {}
            for name in needed:
                if name == HEAD_STREAM:
                    from syntax_nmt.data.heads import parse_heads

                    streams[name] = torch.from_numpy(parse_heads(a.streams[name], "<input>", first + i))
                else:
                    streams[name] = self.stream_dicts[name].encode_line(a.streams[name], add_if_not_exist=False).long()
                assert len(streams[name]) == len(src), (name, a)
            tgt = (self.tgt_dict.encode_line(a.target, add_if_not_exist=False).long()
                   if a.target is not None else None)
            out.append(raw_inference.attach(src, streams, tgt))
        return out

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        """fairseq-interactive: annotate the buffered raw lines (``encode_fn``, fairseq's
        ``--tokenizer``/``--bpe``, is not applied to the source: the annotation settings
        tokenize and segment it; those options still detokenize the output)."""
        tokens = self.annotate_lines(lines)
        return tokens, [t.numel() for t in tokens]

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """A dataset of annotated source tensors (see :meth:`annotate_lines`), built and padded
        exactly as :meth:`load_dataset` builds a binarized split."""
        found = [raw_inference.attached_streams(t) for t in src_tokens]
        needed = self.annotated_streams
        if needed and any(s is None for s in found):
            raise StreamConfigError(needs_parse_message(
                self._model_needs or {"the model": needed},
                f"plain token tensors lack the source streams {needed}",
                "translate raw text through the task (fairseq-interactive, or SyntaxTransformerModel.from_pretrained"
                "(...).translate), which annotates it, or binarized data with fairseq-generate"))
        sizes = np.array([len(t) for t in src_tokens], dtype=np.int64)
        src = ListDataset(list(src_tokens), sizes)
        if self.cfg.truncate_source:  # as fairseq's load_langpair_dataset
            eos = self.src_dict.eos()
            # room for EOS and, with --source-prepend-bos, for BOS (as load_dataset leaves it)
            keep = self.cfg.max_source_positions - 1 - int(bool(self.cfg.source_prepend_bos))
            src = AppendTokenDataset(TruncateDataset(StripTokenDataset(src, eos), keep), eos)
        if self.cfg.source_prepend_bos:
            src = PrependTokenDataset(src, self.src_dict.bos())
        targets = [raw_inference.attached_target(t) for t in src_tokens]
        tgt = None
        if all(t is not None for t in targets) and targets:
            tgt = ListDataset(targets, np.array([len(t) for t in targets], dtype=np.int64))
        pair = LanguagePairDataset(
            src, src.sizes, self.src_dict, tgt, tgt.sizes if tgt is not None else None, self.tgt_dict,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            shuffle=False, pad_to_multiple=self.cfg.required_seq_len_multiple, constraints=constraints,
        )
        streams = {name: self._wrap_stream(ListDataset([s[name] for s in found], sizes), name)
                   for name in needed}
        dataset = StreamLanguagePairDataset(pair, streams, {name: self._pad_value(name) for name in streams})
        dataset.for_inference = True
        # fairseq-interactive numbers its output lines on across its buffers (one dataset each): so do F- lines
        self._inference_base = self._inference_lines
        self._inference_lines += len(src_tokens)
        return dataset

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's; a sample without streams (fairseq-interactive keeps only the tokens of the
        batch the task built) gets the streams of that batch back."""
        net_input = sample["net_input"]
        if self.annotated_streams and "src_streams" not in net_input:
            raw_inference.restore_streams(net_input, self._last_inference_batch, self.annotated_streams)
        hypos = super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                       constraints=constraints)
        if self.cfg_print_source_parse != "none":
            self.print_source_parses(sample, self.source_parses(models[0], net_input))
        if self.target_factors and hypos and getattr(models[0], "target_factors", None):
            for h, factors in zip(hypos, self.predict_factors(models[0], sample, hypos)):
                h[0]["factors"] = factors
            if self.print_factor_lines:
                self.print_factors(sample, hypos)
        return hypos

    def predict_factors(self, model, sample, hypos) -> List[Dict[str, List[str]]]:
        """The target factors ``model`` predicts for each sentence's best hypothesis (also left in that hypothesis
        as ``"factors"`` by :meth:`inference_step`) (name -> one tag per word: the
        tag predicted at its first subword, words as ``--remove-bpe`` joins them), as its decoding computed them
        (:meth:`~syntax_nmt.models.modules.target_factors.FactoredTransformerDecoder.predict_factors`)."""
        best = [h[0]["tokens"] for h in hypos]
        tokens = data_utils.collate_tokens(best, self.tgt_dict.pad(), self.tgt_dict.eos())
        encoder_out = model.encoder.forward_torchscript(sample["net_input"])
        predicted = model.decoder.predict_factors(encoder_out, tokens.to(sample["net_input"]["src_tokens"].device))
        scheme = self.factor_word_scheme()
        out = []
        for i, toks in enumerate(best):
            pieces = [self.tgt_dict[int(k)] for k in toks[:-1]]  # the final EOS has no tag
            starts = word_starts(pieces, scheme)
            out.append({name: [self.target_factor_dicts[name][int(k)] for k, s in
                               zip(predicted[name][i, :len(pieces)].tolist(), starts) if s]
                        for name in self.target_factors})
        return out

    def source_parses(self, model, net_input) -> List[Sentence]:
        """The parse of each source sentence of a batch that ``model`` predicts (LISA's parse head; see
        :mod:`~syntax_nmt.tasks.source_parse`): its words (the source subwords joined, as ``--remove-bpe`` joins
        them) and their 1-based heads (0: root), no tags or labels. The encoder runs once more on the batch.

        Raises:
            StreamConfigError: the model predicts no parse.
        """
        if not getattr(model, "predicts_source_parse", False):
            raise StreamConfigError("the model predicts no parse of the source: only --syntax-attention lisa has a "
                                    "parse head")
        tokens = net_input["src_tokens"]
        parents = model.predict_source_parents(net_input)
        d = self.src_dict
        special = tokens.eq(d.pad()) | tokens.eq(d.eos()) | tokens.eq(d.bos())
        settings = self.model_annotation or self.data_annotation
        scheme = settings.subword if settings is not None else parse_output.guess_scheme(d.symbols)
        if self._marker_table is None or self._marker_table[0] != scheme:
            self._marker_table = (scheme, parse_output.marker_table(d.symbols, scheme))
        table = self._marker_table[1].to(tokens.device)
        starts = parse_output.token_word_starts(tokens, special, table, scheme)
        heads = parse_output.word_heads(parents.to(tokens.device), starts, special)
        real = (~special).cpu()
        rows = [r[m] for r, m in zip(tokens.cpu(), real)]
        return parse_output.sentences([[d[int(k)] for k in r] for r in rows],
                                      [r[m].tolist() for r, m in zip(starts.cpu(), real)],
                                      [r[m].tolist() for r, m in zip(heads.cpu(), real)], scheme)

    def print_source_parses(self, sample, parses: List[Sentence]) -> None:
        """The ``G-`` lines of ``--print-source-parse`` on standard output
        (:func:`~syntax_nmt.syntax.parse_lines.parse_lines`), numbered as fairseq numbers the S- and H- lines."""
        for sid, sentence in zip(self._sample_ids(sample), parses):
            for line in parse_lines(sid, sentence, self.cfg_print_source_parse):
                print(line, flush=False)

    def _sample_ids(self, sample) -> List[int]:
        """The sentence ids fairseq prints for ``sample``'s rows."""
        if "id" in sample:
            return sample["id"].tolist()
        # fairseq-interactive's sample has no ids: those of the batch it was made of, numbered on as it does
        return [self._inference_base + int(i) for i in self._last_inference_batch["id"].tolist()]

    def factor_word_scheme(self) -> str:
        """How the target's subwords join into the words of the F- lines: the annotation settings' scheme (the
        checkpoint's, else the data's ``annotation.json``), else the target dictionary's pieces (``@@`` ends:
        ``bpe``; ``▁`` starts: ``spm``; neither: ``none``, one word per piece).

        Raises:
            StreamConfigError: no settings, and a dictionary with pieces of both kinds.
        """
        settings = self.model_annotation or self.data_annotation
        if settings is not None:
            return settings.subword
        if getattr(self, "_factor_word_scheme", None) is None:
            from syntax_nmt.annotate.subwords import scheme_of_pieces

            try:
                self._factor_word_scheme = scheme_of_pieces(self.tgt_dict.symbols[self.tgt_dict.nspecial:])
            except ValueError as e:
                raise StreamConfigError(f"target factors: {e}; the F- lines need the words of each hypothesis: "
                                        f"binarize with syntax-nmt-binarize (its annotation.json records the "
                                        f"subword scheme)") from None
        return self._factor_word_scheme

    def print_factors(self, sample, hypos) -> None:
        """``F-ID<TAB>NAME<TAB>tags`` on standard output for each sentence's best hypothesis and factor, one tag per
        word of the hypothesis (the words of fairseq-generate's ``--remove-bpe`` H line): a line type of its own,
        beside fairseq-generate's H-/D- lines (``grep ^H`` and sacreBLEU scoring ignore it;
        ``syntax-nmt-evaluate factors`` scores it against a parser)."""
        for sid, h in zip(self._sample_ids(sample), hypos):
            for name, tags in h[0]["factors"].items():
                print(f"F-{sid}\t{name}\t{' '.join(tags)}", flush=False)

    def _remember_batch(self, batch) -> None:
        self._last_inference_batch = batch

    def get_batch_iterator(self, dataset, *args, **kwargs):
        """fairseq's, except that no sentence of a valid/test split is dropped.

        fairseq 0.12's ``batch_by_size`` drops the last batch when its size is not a
        multiple of ``--required-batch-size-multiple`` (default 8; fairseq issues
        #5036, #5351), so fairseq-generate silently skips up to 7 test sentences.
        Outside the training split we batch with multiple 1.
        """
        if dataset is not self.datasets.get(self.cfg.train_subset):
            if "required_batch_size_multiple" in kwargs:
                kwargs["required_batch_size_multiple"] = 1
            elif len(args) >= 5:  # max_tokens, max_sentences, max_positions, ignore_invalid_inputs, multiple
                args = args[:4] + (1,) + args[5:]
        for_inference = getattr(dataset, "for_inference", False)
        if for_inference and len(args) < 12:  # one dataset per buffer of raw lines: do not cache its iterator
            kwargs["disable_iterator_cache"] = True
        itr = super().get_batch_iterator(dataset, *args, **kwargs)
        if for_inference:
            itr = raw_inference.InferenceBatchIterator(itr, self._remember_batch)
        return itr


def needs_parse_message(needs: Dict[str, List[str]], problem: str, remedy: Optional[str] = None) -> str:
    """One line: the model cannot translate as asked (``problem``), what reads what at inference, and what supplies
    it (``remedy``; default: the annotation of raw text, or a data directory with the stream files)."""
    remedy = remedy or ("leave --source-parse at auto (hub: source_parse='auto'): raw text is then annotated with "
                        "the recorded parser (or --input-conllu FILE, hub: translate_conllu), and fairseq-generate "
                        "reads the data directory's stream files (syntax-nmt-binarize)")
    return f"{problem}: the model reads at inference what only the annotation gives: {describe_needs(needs)}; {remedy}"


def _has_binarized_split(data_path: str) -> bool:
    """Whether fairseq can infer a language pair from ``data_path`` (a ``SPLIT.SRC-TGT.*`` file)."""
    from fairseq.data.data_utils import infer_language_pair

    return infer_language_pair(data_path) != (None, None)


def language_pair_of_dictionaries(data_path: str, src: Optional[str] = None, tgt: Optional[str] = None):
    """``(source, target)`` of a data directory that holds dictionaries only: the two languages
    of its ``dict.{lang}.txt`` files (stream dictionaries aside), ordered by ``src``/``tgt`` where
    given, else by the ``src_lang`` of its ``annotation.json``.

    Raises:
        ValueError: naming the dictionaries found, when they do not tell the pair.
    """
    before, after = DICT_FILE.split("{}")
    names = (f[len(before):-len(after)] for f in os.listdir(data_path) if f.startswith(before) and f.endswith(after))
    langs = sorted(name for name in names if name not in STREAMS)
    if src is None and tgt is None:
        settings = raw_inference.data_settings(data_path)
        src = settings.src_lang if settings else None
    if len(langs) == 2 and (src in langs or tgt in langs):
        if src in langs:
            return src, tgt or next(x for x in langs if x != src)
        return next(x for x in langs if x != tgt), tgt
    found = ", ".join(DICT_FILE.format(x) for x in langs) or "no language dictionary"
    raise ValueError(f"cannot tell the language pair of {data_path}: it holds no binarized split and {found}"
                     f"{'' if src or tgt else f' without an {DATA_SETTINGS_FILE} naming the source language'}; "
                     f"pass --source-lang and --target-lang (-s/-t)")


def _has_binarized_source(data_path: str, src: Optional[str], tgt: Optional[str]) -> bool:
    """Whether ``data_path`` holds any binarized split of the language pair (not only dictionaries)."""
    if not (src and tgt and os.path.isdir(data_path)):
        return True  # cannot tell: keep the strict check
    ends = (f".{src}-{tgt}.{src}.idx", f".{tgt}-{src}.{src}.idx")
    return any(f.endswith(ends) for f in os.listdir(data_path))
