"""Raw-text inference for ``syntax_translation``: annotation settings, on-the-fly streams, batches.

The task's fairseq hooks (``get_interactive_tokens_and_lengths``, ``build_dataset_for_inference``,
``inference_step``) stay thin: the raw-text side is one object, :class:`RawTextAnnotation` (settings, annotator,
annotated tensors, the datasets and batches made of them), built on the helpers below.

* **Settings.** ``syntax-nmt-binarize`` leaves ``DATA/annotation.json``; when training, the
  task stores it, as a JSON string, in the model arguments (``annotation_settings``), so
  ``fairseq-train`` saves it in every checkpoint. At inference the checkpoint's settings
  are used (``--annotation-settings-file`` replaces them, e.g. for checkpoints trained
  before they were recorded). Settings that disagree between checkpoint, ensemble members
  and the data directory are an error naming the first differing setting.
* **Streams travel with the tokens.** The task annotates raw lines and returns one source
  tensor per line; the tensors carry their streams as an attribute (:data:`STREAMS_ATTR`),
  so every fairseq caller that hands the same tensors to ``build_dataset_for_inference``
  (fairseq-interactive, the hub's ``generate``) gets them without a side table.
* **fairseq-interactive drops ``src_streams``.** Its ``make_batches`` keeps only
  ``src_tokens``/``src_lengths`` of each batch. The task's batch iterator remembers the
  last batch built from an inference dataset; ``inference_step``, called for that very
  batch before the next one is built, puts its streams back (after checking that the
  tokens are the same).
"""

import fileinput
import io
import json
import logging
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from fairseq.data import (
    AppendTokenDataset,
    LanguagePairDataset,
    ListDataset,
    PrependTokenDataset,
    StripTokenDataset,
    TruncateDataset,
    iterators,
)

from syntax_nmt.annotate.backends import PARSER_BACKENDS
from syntax_nmt.annotation_settings import AnnotationSettings
from syntax_nmt.constants import DATA_SETTINGS_FILE, DICT_FILE
from syntax_nmt.data.stream_pair_dataset import StreamLanguagePairDataset, TruncateSourceDataset
from syntax_nmt.data.streams import HEAD_STREAM, STREAMS, StreamConfigError

logger = logging.getLogger(__name__)

#: Attribute of an annotated source tensor: ``{stream: LongTensor}`` aligned with it.
STREAMS_ATTR = "syntax_streams"
#: Attribute of an annotated source tensor: its target tensor (scoring), or absent.
TARGET_ATTR = "syntax_target"
def path_settings() -> Tuple[str, ...]:
    """Settings that are paths: they may differ between machines (the subword model's hash is compared instead):
    ``subword_model`` and each backend's model setting (spaCy: ``spacy_model``)."""
    return ("subword_model", *dict.fromkeys(b.model_setting for b in PARSER_BACKENDS.values() if b.model_setting))


def lenient_stdin() -> None:
    """Read standard input with ``surrogateescape`` instead of ``strict``.

    Python decodes stdin strictly under most UTF-8 locales (``en_US.UTF-8``; only the C, POSIX and
    C.UTF-8 locales and UTF-8 mode escape), so one invalid byte piped into fairseq-interactive ended
    the session inside fairseq's reader before any line was translated. Escaped, the byte reaches the
    annotator as a lone surrogate, which it replaces by U+FFFD with a warning naming the line
    (:meth:`~syntax_nmt.annotate.online.OnlineAnnotator.annotate`). Nothing has been read from stdin
    when the task is set up, and nothing else in a fairseq command reads it.
    """
    stdin = sys.stdin
    if isinstance(stdin, io.TextIOWrapper) and stdin.errors == "strict":
        stdin.reconfigure(errors="surrogateescape")


class _LenientFileinput:
    """:mod:`fileinput` as ``fairseq_cli.interactive`` sees it once :func:`lenient_stdin` ran: ``--input FILE``
    is decoded with ``surrogateescape``, as standard input is (its reader asks for ``hook_encoded("utf-8")``,
    strict). Every other name is the standard module's."""

    def __getattr__(self, name):
        return getattr(fileinput, name)

    @staticmethod
    def hook_encoded(encoding, errors=None):
        return fileinput.hook_encoded(encoding, errors=errors or "surrogateescape")


def lenient_input_file() -> None:
    """Make fairseq-interactive read ``--input FILE`` as :func:`lenient_stdin` makes it read standard input.

    fairseq's ``buffered_read`` opens the file through :mod:`fileinput` with a strict UTF-8 hook: one invalid
    byte ended the run before any line was translated, where the same bytes piped in were translated with a
    warning. Only the name ``fileinput`` inside ``fairseq_cli.interactive`` (if it is loaded) is replaced.
    """
    module = sys.modules.get("fairseq_cli.interactive")
    if module is not None and getattr(module, "fileinput", None) is fileinput:
        module.fileinput = _LenientFileinput()


def data_settings(data_path: str) -> Optional[AnnotationSettings]:
    """``DATA/annotation.json`` (validated), or None if the data directory has none."""
    path = os.path.join(data_path, DATA_SETTINGS_FILE)
    return AnnotationSettings.read(path) if os.path.exists(path) else None


def recorded_settings(text: Optional[str]) -> Optional[AnnotationSettings]:
    """The settings a checkpoint's model arguments record (``text``: the JSON string under ``annotation_settings``,
    :class:`~syntax_nmt.tasks.checkpoint_records.ModelRecords`), or None (older checkpoints)."""
    return AnnotationSettings.from_dict(json.loads(text), "the checkpoint") if text else None


def settings_record(settings: AnnotationSettings) -> str:
    """``settings`` as the model arguments record them: a JSON string."""
    return json.dumps(settings.to_dict(), sort_keys=True)


def check_agree(a: AnnotationSettings, b: AnnotationSettings, what_a: str, what_b: str) -> None:
    """Raise ``ValueError`` naming the first setting on which ``a`` and ``b`` differ.

    Paths (``spacy_model``, ``subword_model``) may differ (another machine); a different
    spaCy path is only logged, and a subword model is compared by its recorded hash.
    """
    da, db = a.to_dict(), b.to_dict()
    for key in a.differences(b):
        if key in path_settings():
            logger.info("annotation setting %s: %r in %s, %r in %s", key, da.get(key), what_a, db.get(key), what_b)
            continue
        raise ValueError(f"annotation setting {key!r} differs: {da.get(key)!r} in {what_a}, {db.get(key)!r} in "
                         f"{what_b}")


def attach(tokens: torch.Tensor, streams: Dict[str, torch.Tensor], target: Optional[torch.Tensor] = None):
    """Attach streams (and a target) to an annotated source tensor; returns it."""
    setattr(tokens, STREAMS_ATTR, streams)
    if target is not None:
        setattr(tokens, TARGET_ATTR, target)
    return tokens


def attached_streams(tokens: torch.Tensor) -> Optional[Dict[str, torch.Tensor]]:
    return getattr(tokens, STREAMS_ATTR, None)


def attached_target(tokens: torch.Tensor) -> Optional[torch.Tensor]:
    return getattr(tokens, TARGET_ATTR, None)


class InferenceBatchIterator:
    """An ``EpochBatchIterator`` whose epoch iterators report each batch to ``on_batch`` as it is handed out."""

    def __init__(self, inner, on_batch):
        self._inner = inner
        self._on_batch = on_batch

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def next_epoch_itr(self, *args, **kwargs):
        itr = self._inner.next_epoch_itr(*args, **kwargs)

        def reported():
            for batch in itr:
                self._on_batch(batch)
                yield batch

        return iterators.CountingIterator(reported(), start=itr.n, total=len(itr))


def restore_streams(net_input: Dict, last_batch: Optional[Dict], needed: List[str]) -> None:
    """Put the streams of ``last_batch`` into ``net_input`` (fairseq-interactive's sample).

    Raises:
        RuntimeError: if the sample is not the batch last handed out (never expected).
    """
    tokens = net_input["src_tokens"]
    last = (last_batch or {}).get("net_input", {})
    ref = last.get("src_tokens")
    if ref is None or ref.shape != tokens.shape or not torch.equal(ref.to(tokens.device), tokens):
        raise RuntimeError(
            f"syntax_translation: a sample without source streams {needed} that is not the batch the task built "
            f"last; translate raw text through the task's hooks (fairseq-interactive, SyntaxHubInterface)"
        )
    net_input["src_streams"] = {name: last["src_streams"][name].to(tokens.device) for name in needed}


class RawTextAnnotation:
    """The raw-text side of the task (fairseq-interactive, the hub, the analyses): the annotation settings (the
    checkpoint's, or ``--annotation-settings-file``), the annotator made from them, the annotation of raw lines into
    source tensors that carry their streams, the datasets made of those tensors, and the batches handed out.

    Args:
        cfg: the task's configuration (its ``--annotate-*``, ``--input-conllu``, truncation and BOS options).
        data_path: the data directory (its ``annotation.json``, if any).
        src_dict, tgt_dict: the task's dictionaries.
        source: the task's :class:`~syntax_nmt.tasks.source_streams.SourceStreams` (what raw text is annotated with).
    """

    def __init__(self, cfg, data_path: str, src_dict, tgt_dict, source):
        self.cfg, self.src_dict, self.tgt_dict, self.source = cfg, src_dict, tgt_dict, source
        #: the settings of the data directory (``annotation.json``), and those the loaded checkpoint(s) record
        self.data_settings: Optional[AnnotationSettings] = data_settings(data_path)
        self.model_settings: Optional[AnnotationSettings] = None
        self.data_file = os.path.join(data_path, DATA_SETTINGS_FILE)
        #: the longest source the model reads (its positions, once loaded); longer raw input translates as empty
        self.max_source_tokens = cfg.max_source_positions
        self.options: Dict[str, Optional[str]] = {}
        self._annotator = None
        self._conllu_blocks = None
        self.last_batch = None  # the batch of an inference dataset handed out last
        self._lines = self.line_base = 0  # raw-text inputs so far, and before the current dataset

    # -- settings -------------------------------------------------------------------------------------
    def record_or_check(self, recorded: Optional[str], from_checkpoint: bool) -> Optional[str]:
        """Training: the data's settings to record in the model's arguments (so in checkpoints), as their JSON string
        (None: the data has none). Loading: the checkpoint's settings (``recorded``, that string) must agree with the
        ensemble's other members and with the data directory's; returns None (nothing to record)."""
        settings = recorded_settings(recorded)
        if settings is None and not from_checkpoint:
            if self.data_settings is not None:
                return settings_record(self.data_settings)
            logger.info("%s does not exist: the model records no annotation settings (raw-text inference "
                        "will need --annotation-settings-file)", self.data_file)
        elif settings is not None:
            if self.model_settings is not None:
                check_agree(self.model_settings, settings, "the first model of the ensemble", "another model")
            if self.data_settings is not None:
                check_agree(settings, self.data_settings, "the checkpoint", self.data_file)
            self.model_settings = settings
        return None

    def set_options(self, parser_model=None, subword_model=None, settings_file=None, spacy_model=None) -> None:
        """Override the annotation options (the hub's keyword arguments; ``spacy_model``: the older name of
        ``parser_model``)."""
        self.options = {"parser_model": parser_model, "spacy_model": spacy_model, "subword_model": subword_model,
                        "settings_file": settings_file}
        self._annotator = None

    def _option(self, name: str, cfg_name: str):
        return self.options.get(name) or getattr(self.cfg, cfg_name, None)

    def settings(self) -> AnnotationSettings:
        """The settings raw input is annotated with: ``--annotation-settings-file``, else the checkpoint's.

        Raises:
            StreamConfigError: neither exists (a checkpoint from before settings were recorded); a ValueError that
                fairseq-interactive reports in one line.
        """
        path = self._option("settings_file", "annotation_settings_file")
        if path:
            settings = AnnotationSettings.read(path)
            if self.model_settings is not None:
                check_agree(settings, self.model_settings, path, "the checkpoint")
            return settings
        if self.model_settings is None:
            raise StreamConfigError(
                "the checkpoint records no annotation settings (it was trained before syntax-nmt recorded them, or "
                f"on data without {DATA_SETTINGS_FILE}), so raw text cannot be annotated as its training "
                f"data was: pass --annotation-settings-file PATH (hub: annotation_settings_file=PATH) naming the "
                f"{DATA_SETTINGS_FILE} of the data the model was trained on"
            )
        return self.model_settings

    @property
    def annotator(self):
        """The :class:`~syntax_nmt.annotate.online.OnlineAnnotator` for raw input (built on first use)."""
        if self._annotator is None:
            from syntax_nmt.annotate.online import OnlineAnnotator

            self._annotator = OnlineAnnotator(
                self.settings(),
                parser_model=self._option("parser_model", "annotate_parser_model"),
                spacy_model=self._option("spacy_model", "annotate_spacy_model"),
                subword_model=self._option("subword_model", "annotate_subword_model"),
            )
            logger.info("annotating raw input with: %s", json.dumps(self._annotator.settings.to_dict(), sort_keys=True))
        return self._annotator

    # -- raw lines -> tensors -> datasets -> batches ------------------------------------------------------
    def annotate_lines(self, lines: Sequence[str], targets: Optional[Sequence[str]] = None,
                       conllu=None) -> List[torch.Tensor]:
        """Annotate raw lines exactly as the training data was, and binarize them.

        Args:
            lines: raw source lines (``None`` with ``conllu``: the lines are its blocks' words).
            targets: target lines (tokenized as the training target was), for scoring.
            conllu: ``(block_no, Sentence)`` pairs to take the parse from instead of spaCy
                (``--input-conllu``), consumed one per non-empty line.

        Returns:
            One source tensor per line (EOS appended, as fairseq-preprocess binarizes it), each carrying its streams
            (the source's :attr:`~.SourceStreams.annotated`; none, and no parser run, for a model that reads none at
            inference) and target (:func:`attach`).
        """
        ann = self.annotator
        needed = self.source.annotated
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
                    streams[name] = self.source.dicts[name].encode_line(a.streams[name], add_if_not_exist=False).long()
                assert len(streams[name]) == len(src), (name, a)
            tgt = (self.tgt_dict.encode_line(a.target, add_if_not_exist=False).long()
                   if a.target is not None else None)
            out.append(attach(src, streams, tgt))
        return out

    def dataset(self, src_tokens, constraints=None, missing_message=None) -> StreamLanguagePairDataset:
        """A dataset of annotated source tensors (:meth:`annotate_lines`), built and padded exactly as the task
        loads a binarized split; each one numbers its sentences on from the one before (fairseq-interactive's
        buffers), as fairseq-interactive numbers its output.

        Raises:
            StreamConfigError: plain token tensors for a model that reads streams (``missing_message(needed)``).
        """
        found = [attached_streams(t) for t in src_tokens]
        needed = self.source.annotated
        if needed and any(s is None for s in found):
            raise StreamConfigError(missing_message(needed))
        cfg = self.cfg
        sizes = np.array([len(t) for t in src_tokens], dtype=np.int64)
        src = ListDataset(list(src_tokens), sizes)
        keep = cfg.max_source_positions - int(bool(cfg.source_prepend_bos))  # room for BOS, as the splits leave it
        if cfg.truncate_source:  # as fairseq's load_langpair_dataset (room for EOS too)
            eos = self.src_dict.eos()
            src = AppendTokenDataset(TruncateDataset(StripTokenDataset(src, eos), keep - 1), eos)
        if cfg.source_prepend_bos:
            src = PrependTokenDataset(src, self.src_dict.bos())
        targets = [attached_target(t) for t in src_tokens]
        tgt = None
        if all(t is not None for t in targets) and targets:
            tgt = ListDataset(targets, np.array([len(t) for t in targets], dtype=np.int64))
        pair = LanguagePairDataset(
            src, src.sizes, self.src_dict, tgt, tgt.sizes if tgt is not None else None, self.tgt_dict,
            left_pad_source=cfg.left_pad_source, left_pad_target=cfg.left_pad_target,
            shuffle=False, pad_to_multiple=cfg.required_seq_len_multiple, constraints=constraints,
        )
        streams = {}
        for name in needed:
            ds = ListDataset([s[name] for s in found], sizes)
            if cfg.truncate_source:
                ds = TruncateSourceDataset(ds, keep)
            streams[name] = PrependTokenDataset(ds, self.source.bos(name)) if cfg.source_prepend_bos else ds
        dataset = StreamLanguagePairDataset(pair, streams, {name: self.source.pad(name) for name in streams})
        dataset.for_inference = True
        self.line_base = self._lines
        self._lines += len(src_tokens)
        return dataset

    def remember(self, batch) -> None:
        """Keep the batch an inference dataset's iterator hands out (:class:`InferenceBatchIterator`)."""
        self.last_batch = batch

    def restore_streams(self, net_input: Dict) -> None:
        """Give fairseq-interactive's sample, which kept only the tokens, the streams of its batch back."""
        if self.source.annotated and "src_streams" not in net_input:
            restore_streams(net_input, self.last_batch, self.source.annotated)

    def sentence_ids(self, sample) -> List[int]:
        """The sentence ids fairseq prints for ``sample``'s rows: its own, or (fairseq-interactive's sample has
        none) those of the batch it was made of, numbered on across the datasets as fairseq-interactive does."""
        if "id" in sample:
            return sample["id"].tolist()
        return [self.line_base + int(i) for i in self.last_batch["id"].tolist()]


def has_binarized_split(data_path: str) -> bool:
    """Whether fairseq can infer a language pair from ``data_path`` (a ``SPLIT.SRC-TGT.*`` file)."""
    from fairseq.data.data_utils import infer_language_pair

    return infer_language_pair(data_path) != (None, None)


def has_binarized_source(data_path: str, src: Optional[str], tgt: Optional[str]) -> bool:
    """Whether ``data_path`` holds any binarized split of the language pair (not only dictionaries)."""
    if not (src and tgt and os.path.isdir(data_path)):
        return True  # cannot tell: keep the strict check
    ends = (f".{src}-{tgt}.{src}.idx", f".{tgt}-{src}.{src}.idx")
    return any(f.endswith(ends) for f in os.listdir(data_path))


def language_pair_of_dictionaries(data_path: str, src: Optional[str] = None, tgt: Optional[str] = None):
    """``(source, target)`` of a data directory that holds dictionaries only (raw-text inference): the two languages
    of its ``dict.{lang}.txt`` files (stream dictionaries aside), ordered by ``src``/``tgt`` where given, else by
    the ``src_lang`` of its ``annotation.json``.

    Raises:
        ValueError: naming the dictionaries found, when they do not tell the pair.
    """
    before, after = DICT_FILE.split("{}")
    names = (f[len(before):-len(after)] for f in os.listdir(data_path) if f.startswith(before) and f.endswith(after))
    langs = sorted(name for name in names if name not in STREAMS)
    if src is None and tgt is None:
        settings = data_settings(data_path)
        src = settings.src_lang if settings else None
    if len(langs) == 2 and (src in langs or tgt in langs):
        if src in langs:
            return src, tgt or next(x for x in langs if x != src)
        return next(x for x in langs if x != tgt), tgt
    found = ", ".join(DICT_FILE.format(x) for x in langs) or "no language dictionary"
    raise ValueError(f"cannot tell the language pair of {data_path}: it holds no binarized split and {found}"
                     f"{'' if src or tgt else f' without an {DATA_SETTINGS_FILE} naming the source language'}; "
                     f"pass --source-lang and --target-lang (-s/-t)")
