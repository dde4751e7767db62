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


def load_split(task, split: str, epoch: int = 1, combine: bool = False) -> StreamLanguagePairDataset:
    """Split ``split`` of the task's data (fairseq's ``load_dataset``): the language pair, the streams the task reads
    (``task.source``) and the target factors whose data it loads (``task.factors``)."""
    cfg = task.cfg
    paths = utils.split_paths(cfg.data)
    if split != cfg.train_subset:
        paths = paths[:1]
    data_path = paths[(epoch - 1) % len(paths)]
    src, tgt = cfg.source_lang, cfg.target_lang
    pair = load_langpair_dataset(
        data_path, split, src, task.src_dict, tgt, task.tgt_dict,
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
        prepend_bos_src=task.src_dict.bos() if cfg.source_prepend_bos else None,
    )
    streams = {name: prepend_bos(task, load_stream(task, data_path, split, name, combine), name)
               for name in task.source.streams}
    factors = task.factors
    loaded = {name: load_stream(task, data_path, split, name, combine, side="target")
              for name in (factors.names if factors.loads_data else [])}
    return StreamLanguagePairDataset(
        pair, streams, {name: task.source.pad(name) for name in streams}, target_streams=loaded,
        target_specials={n: (factors.dicts[n].pad(), factors.dicts[n].eos()) for n in loaded},
    )


def max_source_length(cfg) -> int:
    """The longest source ``--truncate-source`` keeps, BOS excluded (room is left for it)."""
    return cfg.max_source_positions - int(bool(cfg.source_prepend_bos))


def prepend_bos(task, ds, name: str):
    """Stream ``ds`` of source stream ``name`` with the BOS value prepended (``--source-prepend-bos``), as the
    source tokens are."""
    return PrependTokenDataset(ds, task.source.bos(name)) if task.cfg.source_prepend_bos else ds


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


def load_stream(task, data_path: str, split: str, name: str, combine: bool, side: str = "source"):
    """A stream of the source (or, ``side="target"``, the target factor ``name``), checked against the source's
    (target's) sentence lengths, truncated like the source (``--truncate-source``; BOS is not prepended here).

    Raises:
        StreamConfigError: the stream is missing or does not match the sentences, naming the file.
    """
    cfg = task.cfg
    src, tgt = cfg.source_lang, cfg.target_lang
    target = side == "target"
    dictionary = task.factors.dicts[name] if target else task.source.dicts.get(name)
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
            os.path.join(data_path, f"{split_k}.{lang_pair[0]}-{lang_pair[1]}.{lang}"),
            task.tgt_dict if target else task.src_dict, impl
        )
        if len(ds) != len(text) or (ds.sizes != text.sizes).any():
            if len(ds) != len(text):
                detail = f"{len(ds)} sentences, the {side} has {len(text)}"
            else:
                i = int((ds.sizes != text.sizes).nonzero()[0][0])
                detail = f"sentence {i + 1} has {ds.sizes[i]} tokens, the {side} {text.sizes[i]}"
            raise StreamConfigError(f"{what} of split {split_k!r} ({prefix}) does not match the {side}: {detail}")
        if cfg.truncate_source and not target:
            ds = TruncateSourceDataset(ds, max_source_length(cfg), text, task.src_dict.eos())
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
