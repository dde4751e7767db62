"""Loading the binarized splits of ``syntax_translation``: fairseq's language pair with the source streams and the
target factors beside it, each checked against the sentences it belongs to and cut and prefixed as the source is
(``--truncate-source``, ``--source-prepend-bos``)."""

import itertools
import os

import numpy as np
from fairseq import utils
from fairseq.data import ConcatDataset, PrependTokenDataset, data_utils, indexed_dataset
from fairseq.tasks.translation import load_langpair_dataset

from syntax_nmt.data.stream_pair_dataset import StreamLanguagePairDataset, TruncateSourceDataset
from syntax_nmt.data.streams import StreamConfigError, stream_data_prefix, target_stream


def load_split(cfg, split: str, src_dict, tgt_dict, source, factors, epoch: int = 1,
               combine: bool = False) -> StreamLanguagePairDataset:
    """Split ``split`` of the task's data (fairseq's ``load_dataset``): the language pair, the streams the task reads
    and the target factors whose data it loads.

    Args:
        cfg: the task's configuration (its data, languages, padding, truncation and BOS options).
        src_dict, tgt_dict: the task's dictionaries.
        source: the task's :class:`~syntax_nmt.tasks.source_streams.SourceStreams` (the streams read, their
            dictionaries, padding and BOS values).
        factors: the task's :class:`~syntax_nmt.targets.factors.TargetFactors` (whether their data is loaded, their
            dictionaries).
    """
    paths = utils.split_paths(cfg.data)
    if split != cfg.train_subset:
        paths = paths[:1]
    data_path = paths[(epoch - 1) % len(paths)]
    src, tgt = cfg.source_lang, cfg.target_lang
    pair = load_langpair_dataset(
        data_path, split, src, src_dict, tgt, tgt_dict,
        combine=combine,
        dataset_impl=cfg.dataset_impl,
        upsample_primary=cfg.upsample_primary,
        left_pad_source=cfg.left_pad_source,
        left_pad_target=cfg.left_pad_target,
        # only used for --truncate-source; fairseq truncates before prepending BOS: leave room for it
        max_source_positions=max_source_length(cfg),
        max_target_positions=cfg.max_target_positions,
        load_alignments=cfg.load_alignments,
        truncate_source=cfg.truncate_source,
        num_buckets=cfg.num_batch_buckets,
        shuffle=(split != "test"),
        pad_to_multiple=cfg.required_seq_len_multiple,
        prepend_bos_src=src_dict.bos() if cfg.source_prepend_bos else None,
    )
    streams = {}
    for name in source.streams:  # BOS prepended as to the source tokens (--source-prepend-bos)
        ds = load_stream(cfg, data_path, split, name, combine, source.dicts.get(name), src_dict)
        streams[name] = PrependTokenDataset(ds, source.bos(name)) if cfg.source_prepend_bos else ds
    loaded = {name: load_stream(cfg, data_path, split, name, combine, factors.dicts[name], tgt_dict, side="target")
              for name in (factors.names if factors.loads_data else [])}
    return StreamLanguagePairDataset(
        pair, streams, {name: source.pad(name) for name in streams}, target_streams=loaded,
        target_specials={n: (factors.dicts[n].pad(), factors.dicts[n].eos()) for n in loaded},
    )


def max_source_length(cfg) -> int:
    """The longest source ``--truncate-source`` keeps, BOS excluded (room is left for it)."""
    return cfg.max_source_positions - int(bool(cfg.source_prepend_bos))


def check_complete(ds, prefix: str, name: str) -> None:
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


def load_stream(cfg, data_path: str, split: str, name: str, combine: bool, dictionary, text_dict,
                side: str = "source"):
    """A stream of the source (or, ``side="target"``, the target factor ``name``), checked against the source's
    (target's) sentence lengths, truncated like the source (``--truncate-source``; BOS is not prepended here).

    Args:
        cfg: the task's configuration (languages, dataset format, truncation options, ``--upsample-primary``).
        dictionary: the stream's dictionary.
        text_dict: the dictionary of the side's text (the source's, or the target's).

    Raises:
        StreamConfigError: the stream is missing or does not match the sentences, naming the file.
    """
    src, tgt = cfg.source_lang, cfg.target_lang
    target = side == "target"
    lang = tgt if target else src
    file_name = target_stream(name) if target else name
    impl = cfg.dataset_impl
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
        check_complete(ds, prefix, name)
        text = data_utils.load_indexed_dataset(
            os.path.join(data_path, f"{split_k}.{lang_pair[0]}-{lang_pair[1]}.{lang}"), text_dict, impl
        )
        if len(ds) != len(text) or (ds.sizes != text.sizes).any():
            if len(ds) != len(text):
                detail = f"{len(ds)} sentences, the {side} has {len(text)}"
            else:
                i = int((ds.sizes != text.sizes).nonzero()[0][0])
                detail = f"sentence {i + 1} has {ds.sizes[i]} tokens, the {side} {text.sizes[i]}"
            raise StreamConfigError(f"{what} of split {split_k!r} ({prefix}) does not match the {side}: {detail}")
        if cfg.truncate_source and not target:
            ds = TruncateSourceDataset(ds, max_source_length(cfg), text, text_dict.eos())
        shards.append(ds)
        if not combine:
            break
    if not shards:
        raise FileNotFoundError(f"Dataset not found: {split} ({data_path})")
    if len(shards) == 1:
        return shards[0]
    ratios = [1] * len(shards)
    ratios[0] = cfg.upsample_primary
    return ConcatDataset(shards, ratios)
