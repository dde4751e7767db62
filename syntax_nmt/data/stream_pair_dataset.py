"""A fairseq language-pair dataset that carries per-token source streams.

Wraps fairseq's :class:`~fairseq.data.LanguagePairDataset` (batching, sorting,
size filtering and collation stay fairseq's) and adds ``net_input["src_streams"]``:
one ``(batch, src_len)`` LongTensor per stream, padded exactly like
``src_tokens`` (same side, same width), so each token's features and head sit at
that token's position under left or right padding. Target streams (target factors)
are collated like the target: ``batch["target_factors"]`` padded like ``target``, and
``net_input["prev_output_factors"]`` shifted like ``prev_output_tokens`` (EOS first).
"""

from typing import Dict, List

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, FairseqDataset, data_utils


class TruncateSourceDataset(BaseWrapperDataset):
    """The stream counterpart of fairseq's ``--truncate-source``.

    fairseq's ``load_langpair_dataset`` strips every trailing and then every leading EOS id
    from the source (``StripTokenDataset``: a literal ``</s>`` in the text has that id too),
    keeps the first ``max_len - 1`` tokens and appends EOS. This dataset strips the same
    positions from the stream, looking at the source tokens, keeps as many values and
    appends the stream's own EOS value (its last item), so the stream stays aligned with
    the tokens. Head offsets work too: their EOS value (0) also occurs inside sentences.

    Args:
        dataset: the stream (item ``i`` as long as source item ``i``).
        max_len: the truncation length (EOS included).
        src_dataset: the binarized source tokens (before fairseq's stripping).
        eos: the source dictionary's EOS id.
    """

    def __init__(self, dataset, max_len: int, src_dataset=None, eos: int = 2):
        super().__init__(dataset)
        self.max_len = max_len
        self.src_dataset = src_dataset
        self.eos = eos
        self._sizes = np.minimum(np.asarray(dataset.sizes), max_len)

    def __getitem__(self, index):
        item = self.dataset[index]
        start, end = 0, len(item) - 1
        if self.src_dataset is not None:
            src = self.src_dataset[index]
            end = len(src)
            while end > 0 and src[end - 1] == self.eos:
                end -= 1
            while start < end and src[start] == self.eos:
                start += 1
        body = item[start:end][: self.max_len - 1]
        return torch.cat([body, item[-1:]])

    @property
    def sizes(self):
        return self._sizes


class StreamLanguagePairDataset(BaseWrapperDataset):
    """Language pairs plus aligned source streams.

    Args:
        dataset (LanguagePairDataset): the pairs, built as fairseq's translation task does.
        streams (Dict[str, FairseqDataset]): per-stream datasets, item ``i`` a 1-D tensor
            with exactly ``len(dataset.src[i])`` values (EOS/BOS included).
        pad_values (Dict[str, int]): the padding value of each stream.
        target_streams (Dict[str, FairseqDataset]): per-factor datasets of the target, item ``i`` with exactly
            ``len(dataset.tgt[i])`` values (ending with the factor dictionary's EOS).
        target_specials (Dict[str, tuple]): ``(pad, eos)`` of each target stream.
    """

    def __init__(self, dataset, streams: Dict[str, FairseqDataset], pad_values: Dict[str, int],
                 target_streams: Dict[str, FairseqDataset] = None, target_specials: Dict[str, tuple] = None):
        super().__init__(dataset)
        self.streams = streams
        self.pad_values = pad_values
        self.target_streams = target_streams or {}
        self.target_specials = target_specials or {}
        for name, ds in streams.items():
            if len(ds) != len(dataset):
                raise ValueError(f"stream {name!r} has {len(ds)} sentences, the source has {len(dataset)}")
        for name, ds in self.target_streams.items():
            if len(ds) != len(dataset):
                raise ValueError(f"target stream {name!r} has {len(ds)} sentences, the target has {len(dataset)}")

    def __getattr__(self, name):  # src, tgt, left_pad_source... of the wrapped pair dataset
        if name in ("dataset", "streams", "pad_values", "target_streams", "target_specials") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitem__(self, index):
        example = self.dataset[index]
        example["streams"] = {name: ds[index] for name, ds in self.streams.items()}
        if self.target_streams:
            example["target_streams"] = {name: ds[index] for name, ds in self.target_streams.items()}
        return example

    def collater(self, samples: List[dict], pad_to_length=None):
        batch = self.dataset.collater(samples, pad_to_length=pad_to_length)
        if not batch or not (self.streams or self.target_streams):
            return batch
        src_tokens = batch["net_input"]["src_tokens"]
        by_id = {int(s["id"]): s for s in samples}
        order = [by_id[i] for i in batch["id"].tolist()]
        if self.target_streams and batch.get("target") is not None:
            self._collate_target(batch, order)
        if not self.streams:
            return batch
        batch["net_input"]["src_streams"] = {
            name: data_utils.collate_tokens(
                [s["streams"][name] for s in order],
                self.pad_values[name],
                left_pad=self.dataset.left_pad_source,
                pad_to_length=src_tokens.size(1),
            ).long()
            for name in self.streams
        }
        return batch

    def _collate_target(self, batch: dict, order: List[dict]) -> None:
        """``target_factors`` like ``target`` and ``net_input["prev_output_factors"]`` like ``prev_output_tokens``."""
        target = batch["target"]
        left = self.dataset.left_pad_target
        batch["target_factors"], prev = {}, {}
        for name in self.target_streams:
            pad, eos = self.target_specials[name]
            values = [s["target_streams"][name] for s in order]
            batch["target_factors"][name] = data_utils.collate_tokens(
                values, pad, eos, left_pad=left, pad_to_length=target.size(1)).long()
            if "prev_output_tokens" in batch["net_input"]:
                prev[name] = data_utils.collate_tokens(
                    values, pad, eos, left_pad=left, move_eos_to_beginning=True,
                    pad_to_length=batch["net_input"]["prev_output_tokens"].size(1)).long()
        if prev:
            batch["net_input"]["prev_output_factors"] = prev

    @property
    def supports_prefetch(self):
        return self.dataset.supports_prefetch and all(
            getattr(ds, "supports_prefetch", False) for ds in [*self.streams.values(), *self.target_streams.values()]
        )

    def prefetch(self, indices):
        self.dataset.prefetch(indices)
        for ds in [*self.streams.values(), *self.target_streams.values()]:
            ds.prefetch(indices)
