"""Task ``syntax_translation``: fairseq translation whose source carries syntax streams."""

import hashlib
import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary, PrependTokenDataset, data_utils, indexed_dataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask, load_langpair_dataset

from syntax_nmt.data.stream_pair_dataset import StreamLanguagePairDataset, TruncateSourceDataset
from syntax_nmt.data.streams import (
    HEAD_STREAM,
    SPECIAL_HEAD,
    TAG_STREAMS,
    parse_stream_list,
    stream_data_prefix,
    stream_dict_path,
    streams_in_dir,
)

logger = logging.getLogger(__name__)


class StreamConfigError(ValueError):
    """The streams of the data, the task options and the model do not agree."""


@dataclass
class SyntaxTranslationConfig(TranslationConfig):
    source_streams: str = field(
        default="auto",
        metadata={
            "help": "comma-separated source streams to load (pos,case,subword,dep,head). 'auto': when "
            "training, every stream binarized in the data directory (the model records the ones it uses); "
            "when generating, the streams the checkpoint was trained with"
        },
    )
    source_prepend_bos: bool = field(
        default=False,
        metadata={"help": "prepend BOS to each source sentence; its streams get the BOS value (heads: itself). "
                  "Recorded in the checkpoint: generation applies it from there (asking for it with a checkpoint "
                  "trained without it is an error). With --truncate-source, sources are cut to leave room for it"},
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


def dictionary_signature(name: str, d: Dictionary) -> str:
    """``name:size:hash`` of a stream dictionary, recorded in checkpoints."""
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


@register_task("syntax_translation", dataclass=SyntaxTranslationConfig)
class SyntaxTranslationTask(TranslationTask):
    """Translation with per-token source streams (POS, case, subword position, dependency label, head).

    Datasets are fairseq's language pairs; the streams written by ``syntax-nmt-binarize``
    ride along in ``net_input["src_streams"]``, padded like ``src_tokens``.
    """

    cfg: SyntaxTranslationConfig

    def __init__(self, cfg: SyntaxTranslationConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        data_path = utils.split_paths(cfg.data)[0]
        self.auto_streams = cfg.source_streams == "auto"
        if self.auto_streams:
            self.streams = streams_in_dir(data_path, cfg.source_lang, cfg.target_lang)
        else:
            self.streams = parse_stream_list(cfg.source_streams)
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

    # -- the contract between data and model -------------------------------------------------
    def stream_signature(self, names: List[str]) -> str:
        return ",".join(dictionary_signature(n, self.stream_dicts[n]) for n in names if n in self.stream_dicts)

    def provide_streams(self, required: List[str], recorded_signature: Optional[str] = None) -> str:
        """Check that the task delivers exactly the streams a model needs.

        Called by the model's ``build_model``. With ``--source-streams auto`` the task
        narrows itself to ``required``; an explicit list must match it. Stream
        dictionaries must match the ones a checkpoint was trained with.

        Returns:
            The signature (names, sizes, hashes) of the stream dictionaries, for the checkpoint.
        """
        required = list(required)
        missing = [s for s in required if s not in self.streams]
        extra = [] if self.auto_streams else [s for s in self.streams if s not in required]
        if missing or extra:
            parts = []
            if missing:
                where = "the data directory has" if self.auto_streams else "--source-streams gives"
                parts.append(f"missing streams {missing} (the model needs {required}; {where} {self.streams})")
            if extra:
                parts.append(f"extra streams {extra} the model was not trained with (it uses {required})")
            raise StreamConfigError("; ".join(parts))
        self.streams = required
        signature = self.stream_signature(required)
        if recorded_signature is not None:
            recorded, current = parse_signatures(recorded_signature), parse_signatures(signature)
            for name in required:
                if name in recorded and recorded[name] != current.get(name):
                    raise StreamConfigError(
                        f"dictionary of stream {name!r} differs from the one the checkpoint was trained with "
                        f"({recorded[name][0]} types, hash {recorded[name][1]} vs {current[name][0]} types, "
                        f"hash {current[name][1]}): binarize with --streamdict-dir pointing at the training data"
                    )
        return signature

    def build_model(self, cfg, from_checkpoint=False):
        """fairseq's, recording ``--source-prepend-bos`` in the model's configuration (so in the
        checkpoint) and, when a checkpoint is loaded, applying the recorded value to this task.

        Raises:
            StreamConfigError: if BOS is asked for but the checkpoint was trained without it.
        """
        recorded = cfg.get("source_prepend_bos", None) if hasattr(cfg, "get") else getattr(cfg, "source_prepend_bos",
                                                                                            None)
        if from_checkpoint and recorded is not None and bool(recorded) != bool(self.cfg.source_prepend_bos):
            if not recorded:
                raise StreamConfigError("--source-prepend-bos is given, but the checkpoint was trained without it "
                                        "(its sources had no BOS): generate without --source-prepend-bos")
            logger.info("the checkpoint was trained with --source-prepend-bos: prepending BOS to the sources")
            self.cfg.source_prepend_bos = True
        else:
            _set(cfg, "source_prepend_bos", bool(self.cfg.source_prepend_bos))
        return super().build_model(cfg, from_checkpoint)

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
        self.datasets[split] = StreamLanguagePairDataset(
            pair, streams, {name: self._pad_value(name) for name in streams}
        )

    def _load_stream(self, data_path: str, split: str, name: str, combine: bool):
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
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
            prefix = stream_data_prefix(data_path, split_k, lang_pair[0], lang_pair[1], name)
            ds = data_utils.load_indexed_dataset(prefix, self.stream_dicts.get(name), impl)
            if ds is None:
                raise StreamConfigError(f"stream {name!r} of split {split_k!r} not found: {prefix}.{{bin,idx}}")
            src_ds = data_utils.load_indexed_dataset(
                os.path.join(data_path, f"{split_k}.{lang_pair[0]}-{lang_pair[1]}.{src}"), self.src_dict, impl
            )
            if len(ds) != len(src_ds) or (ds.sizes != src_ds.sizes).any():
                if len(ds) != len(src_ds):
                    detail = f"{len(ds)} sentences, the source has {len(src_ds)}"
                else:
                    i = int((ds.sizes != src_ds.sizes).nonzero()[0][0])
                    detail = f"sentence {i + 1} has {ds.sizes[i]} tokens, the source {src_ds.sizes[i]}"
                raise StreamConfigError(f"stream {name!r} of split {split_k!r} ({prefix}) does not match the source: {detail}")
            if self.cfg.truncate_source:
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
        if self.cfg.source_prepend_bos:
            ds = PrependTokenDataset(ds, self._bos_value(name))
        return ds

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
        return super().get_batch_iterator(dataset, *args, **kwargs)
