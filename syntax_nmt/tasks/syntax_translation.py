"""Task ``syntax_translation``: fairseq translation whose source carries syntax streams.

The task coordinates; each concern has a module of its own: the source streams and ``--source-parse``
(:mod:`~syntax_nmt.tasks.source_streams`), loading the binarized splits (:mod:`~syntax_nmt.tasks.stream_loading`),
what checkpoints record (:mod:`~syntax_nmt.tasks.checkpoint_records`), raw-text annotation
(:class:`~syntax_nmt.tasks.raw_inference.RawTextAnnotation`), the target factors
(:mod:`~syntax_nmt.tasks.target_factors`) and the source parses a model predicts
(:mod:`~syntax_nmt.tasks.source_parse`).
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import torch
from fairseq import utils
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from syntax_nmt.annotate.textio import InputError
from syntax_nmt.cli_errors import fairseq_errors_one_line
from syntax_nmt.data.signatures import DictionaryRecord
from syntax_nmt.data.streams import STREAMS, StreamConfigError
from syntax_nmt.models.syntax_transformer import ModelOptionError
from syntax_nmt.syntax.conllu import CoNLLUError, Sentence
from syntax_nmt.syntax.parse_lines import FORMATS as PARSE_FORMATS
from syntax_nmt.tasks.target_factors import TargetFactors
from syntax_nmt.tasks import checkpoint_records, raw_inference, stream_loading
from syntax_nmt.tasks.checkpoint_records import ModelRecords, cfg_value, set_cfg_value
from syntax_nmt.tasks.source_parse import SourceParses, fairseq_output, print_parses
from syntax_nmt.tasks.source_streams import SOURCE_PARSE, SourceStreams, needs_parse_message

logger = logging.getLogger(__name__)

__all__ = ["SyntaxTranslationConfig", "SyntaxTranslationTask", "StreamConfigError", "SOURCE_PARSE"]

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
                  "(in batch order: grep ^G- | sort -s -t- -k2,2n | cut -f2- is a CoNLL-U file in sentence order, one "
                  "block per sentence with words). syntax-nmt-evaluate parse scores them (UAS)"},
    )




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
        source language of its ``annotation.json`` (:func:`~.raw_inference.language_pair_of_dictionaries`). Standard
        input and fairseq-interactive's ``--input FILE`` are read leniently from then on
        (:func:`~syntax_nmt.tasks.raw_inference.lenient_stdin`, :func:`~.raw_inference.lenient_input_file`)."""
        if cfg.source_lang is None or cfg.target_lang is None:
            paths = utils.split_paths(cfg.data)
            if paths and os.path.isdir(paths[0]) and not raw_inference.has_binarized_split(paths[0]):
                cfg.source_lang, cfg.target_lang = raw_inference.language_pair_of_dictionaries(
                    paths[0], cfg.source_lang, cfg.target_lang)
        raw_inference.lenient_stdin()  # fairseq-interactive: an invalid input byte ends no session,
        raw_inference.lenient_input_file()  # whether piped in or read from --input FILE
        return super().setup_task(cfg, **kwargs)

    def __init__(self, cfg: SyntaxTranslationConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        data_path = utils.split_paths(cfg.data)[0]
        #: the source streams: offered by the data, read by the model, annotated in raw text
        self.source = SourceStreams(cfg.source_streams, data_path, cfg.source_lang, cfg.target_lang,
                                    not raw_inference.has_binarized_source(data_path, cfg.source_lang,
                                                                           cfg.target_lang))
        #: the target factors (``--target-factors``, or the loaded checkpoint's)
        self.factors = TargetFactors(cfg.target_factors, data_path, tgt_dict)
        #: raw-text inference: annotation settings, annotator, annotated tensors and their datasets
        self.raw_text = raw_inference.RawTextAnnotation(cfg, data_path, src_dict, tgt_dict, self.source)
        self._parses = SourceParses(src_dict)  # model, net_input, scheme -> the parses the model predicts
        self._loading = False  # a checkpoint is being loaded (build_model, from_checkpoint): to translate
        self._trained_methods: list = []  # the syntax methods of the model being trained

    # -- the source streams (:class:`SourceStreams`) ------------------------------------------------------
    streams = property(lambda self: self.source.streams, doc="The streams read from binarized data.")
    stream_dicts = property(lambda self: self.source.dicts, doc="The tag streams' dictionaries.")
    annotated_streams = property(lambda self: self.source.annotated, doc="The streams raw text is annotated with.")
    inference_needs = property(lambda self: dict(self.source.model_needs or {}),
                               doc="What the loaded model reads at inference, by reader (empty: nothing, or no model).")

    def model_stream_dictionaries(self, required: List[str], recorded: Optional[List[DictionaryRecord]] = None,
                                  at_inference: Optional[Dict[str, List[str]]] = None) -> List[DictionaryRecord]:
        """The records of the dictionaries of the streams a model reads (for its checkpoint), once the task has
        checked that it delivers them and settled what it reads (:meth:`SourceStreams.model_stream_dictionaries`).
        Called by the model's ``build_model``."""
        return self.source.model_stream_dictionaries(required, recorded, at_inference,
                                                     translating=self._loading, mode=self.source_parse)

    @property
    def source_parse(self) -> str:
        """``--source-parse`` (``auto`` for a task configured before the option existed)."""
        return str(cfg_value(self.cfg, "source_parse") or "auto")

    @property
    def print_source_parse(self) -> str:
        """``--print-source-parse`` (``none`` for a task configured before the option existed)."""
        return str(cfg_value(self.cfg, "print_source_parse") or "none")

    def set_source_parse(self, mode: str) -> None:
        """Apply ``--source-parse`` to raw-text translation once the model is loaded (the hub's ``source_parse``;
        :meth:`SourceStreams.set_source_parse`)."""
        self.source.set_source_parse(mode)
        set_cfg_value(self.cfg, "source_parse", mode)

    # -- models and criteria -------------------------------------------------------------------------
    def build_model(self, cfg, from_checkpoint=False):
        """fairseq's, plus what the data was made with: ``--source-prepend-bos``, ``--truncate-source``, the word
        dictionaries, the target factors and the annotation settings are recorded in the model arguments ``cfg``
        when training (so checkpoints carry them), and applied or checked against the data and the ensemble when
        loading (:mod:`~syntax_nmt.tasks.checkpoint_records`). ``cfg`` is read once and written once
        (:class:`~syntax_nmt.tasks.checkpoint_records.ModelRecords`), then handed to fairseq to build the model.

        Raises:
            StreamConfigError: the data, the options and the model (or the checkpoint) do not agree.
        """
        recorded = ModelRecords.read(cfg)
        bos = checkpoint_records.source_prepend_bos(self.cfg.source_prepend_bos, recorded.source_prepend_bos,
                                                    from_checkpoint)
        data = utils.split_paths(self.cfg.data)[0]
        word_dicts = checkpoint_records.word_dictionaries(
            {"source": (self.src_dict, os.path.join(data, f"dict.{self.cfg.source_lang}.txt")),
             "target": (self.tgt_dict, os.path.join(data, f"dict.{self.cfg.target_lang}.txt"))},
            recorded.word_dict_signature if from_checkpoint else None)
        if from_checkpoint:
            self.factors.adopt(recorded.target_factor_dicts)
        elif recorded.target_factor_input and not self.factors.names:
            raise StreamConfigError("--target-factor-input embeds the previous token's target factors: give the "
                                    "task's --target-factors too (or leave it out)")
        settings = self.raw_text.record_or_check(recorded.annotation_settings, from_checkpoint)
        self.cfg.source_prepend_bos = bos
        if from_checkpoint:
            ModelRecords(source_prepend_bos=bos).write(cfg)
        else:
            ModelRecords(word_dict_signature=[d.to_record() for d in word_dicts], source_prepend_bos=bos,
                         truncate_source=bool(self.cfg.truncate_source), target_factor_dicts=self.factors.to_record(),
                         annotation_settings=settings).write(cfg)
        self._loading = bool(from_checkpoint)
        try:
            model = super().build_model(cfg, from_checkpoint)
        finally:
            self._loading = False
        methods = list(getattr(model, "syntax_methods", []))
        if from_checkpoint and self.print_source_parse != "none" and not getattr(model, "predicts_source_parse",
                                                                                  False):
            raise StreamConfigError(f"--print-source-parse {self.print_source_parse}: the model predicts no parse "
                                    f"of the source (only --syntax-attention lisa has a parse head; "
                                    f"its --syntax-attention: {','.join(m.name for m in methods) or 'none'})")
        if self.factors.names and getattr(model, "target_factors", None) != self.factors.names:
            raise StreamConfigError(f"--target-factors {','.join(self.factors.names)} needs a model that predicts "
                                    f"them: --arch syntax_transformer* (got {type(model).__name__})")
        if from_checkpoint:  # sources truncated as in training (the model's positions), raw input too
            positions = utils.resolve_max_positions(
                model.max_positions(), (self.cfg.max_source_positions, self.cfg.max_target_positions))[0]
            self.cfg.truncate_source, self.cfg.max_source_positions = checkpoint_records.source_truncation(
                self.cfg.truncate_source, recorded.truncate_source, positions, self.cfg.max_source_positions)
            self.raw_text.max_source_tokens = min(self.raw_text.max_source_tokens, positions)
        else:
            self._trained_methods = methods
        return model

    def build_criterion(self, cfg, from_checkpoint=False):
        """fairseq's; warns when the model being trained has target factors or syntax methods whose auxiliary
        losses (LISA's parse loss, SEPREM's DP and HP) the criterion does not compute, so that they would silently
        not be trained (``label_smoothed_cross_entropy_with_syntax`` computes them). The methods are the model's
        own, as its ``build_model`` parsed them."""
        from syntax_nmt.criterions.label_smoothed_cross_entropy_with_syntax import (
            LabelSmoothedCrossEntropyWithSyntaxCriterion,
        )

        criterion = super().build_criterion(cfg, from_checkpoint=from_checkpoint)
        if isinstance(criterion, LabelSmoothedCrossEntropyWithSyntaxCriterion):
            return criterion
        name = cfg_value(cfg, "_name") or cfg_value(cfg, "criterion") or type(criterion).__name__
        if self.factors.loads_data:
            logger.warning("--target-factors %s: the criterion %s does not train them (their output layers get no "
                           "gradient); use --criterion label_smoothed_cross_entropy_with_syntax",
                           ",".join(self.factors.names), name)
        methods = [m for m in self._trained_methods if m.losses]
        if methods:
            options = [o for m in methods for o in m.system_losses if o.startswith("--")]
            logger.warning("--syntax-attention %s has auxiliary losses (%s) that the criterion %s does not compute: "
                           "the model trains without them; use --criterion label_smoothed_cross_entropy_with_syntax",
                           ",".join(m.name for m in methods), ", ".join(options), name)
        return criterion

    # -- data ------------------------------------------------------------------------------------------
    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        self.datasets[split] = stream_loading.load_split(self.cfg, split, self.src_dict, self.tgt_dict, self.source,
                                                         self.factors, epoch, combine)

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
            itr = raw_inference.InferenceBatchIterator(itr, self.raw_text.remember)
        return itr

    # -- raw-text inference (:class:`RawTextAnnotation`) --------------------------------------------------------
    @property
    def annotator(self):
        """The :class:`~syntax_nmt.annotate.online.OnlineAnnotator` for raw input (built on first use)."""
        return self.raw_text.annotator

    def set_annotation_options(self, parser_model=None, subword_model=None, settings_file=None,
                               spacy_model=None) -> None:
        """Override the annotation options of raw-text inference (the hub's keyword arguments)."""
        self.raw_text.set_options(parser_model, subword_model, settings_file, spacy_model)

    def annotate_lines(self, lines: Sequence[str], targets: Optional[Sequence[str]] = None,
                       conllu=None) -> List[torch.Tensor]:
        """Annotate raw lines exactly as the training data was, and binarize them
        (:meth:`RawTextAnnotation.annotate_lines`)."""
        return self.raw_text.annotate_lines(lines, targets, conllu)

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        """fairseq-interactive: annotate the buffered raw lines (``encode_fn``, fairseq's
        ``--tokenizer``/``--bpe``, is not applied to the source: the annotation settings
        tokenize and segment it; those options still detokenize the output)."""
        tokens = self.annotate_lines(lines)
        return tokens, [t.numel() for t in tokens]

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """A dataset of annotated source tensors (see :meth:`annotate_lines`), built and padded
        exactly as :meth:`load_dataset` builds a binarized split."""
        return self.raw_text.dataset(src_tokens, constraints, lambda needed: needs_parse_message(
            self.source.model_needs or {"the model": needed},
            f"plain token tensors lack the source streams {needed}",
            "translate raw text through the task (fairseq-interactive, or SyntaxTransformerModel.from_pretrained"
            "(...).translate), which annotates it, or binarized data with fairseq-generate"))

    @property
    def recorded_settings(self):
        """The annotation settings of the loaded checkpoint, else of the data directory (None: neither records
        them)."""
        return self.raw_text.model_settings or self.raw_text.data_settings

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's; a sample without streams (fairseq-interactive keeps only the tokens of the batch the task
        built) gets the streams of that batch back. With ``--print-source-parse`` the ``G-`` lines of the parses
        the model predicts, with target factors the ``F-`` lines, are printed beside fairseq's, where fairseq prints
        its own (fairseq-generate's ``--results-path`` file: :func:`~syntax_nmt.tasks.source_parse.fairseq_output`)."""
        net_input = sample["net_input"]
        self.raw_text.restore_streams(net_input)
        hypos = super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                       constraints=constraints)
        if self.print_source_parse != "none":
            print_parses(self.raw_text.sentence_ids(sample), self.source_parses(models[0], net_input),
                         self.print_source_parse, fairseq_output())
        if self.factors.names and hypos and getattr(models[0], "target_factors", None):
            self.factors.attach(models[0], sample, hypos, self.raw_text.sentence_ids(sample), self.recorded_settings,
                                fairseq_output())
        return hypos

    def source_parses(self, model, net_input) -> List[Sentence]:
        """The parse of each source sentence of a batch that ``model`` predicts (LISA's parse head;
        :class:`~syntax_nmt.tasks.source_parse.SourceParses`), words joined by the recorded subword scheme.

        Raises:
            StreamConfigError: the model predicts no parse.
        """
        settings = self.recorded_settings
        return self._parses(model, net_input, settings.subword if settings is not None else None)
