"""Every token's features and head land on that token's position in a batch."""

import pytest
import torch

from conftest import build_task_and_model


def _expected(corpus, task, split, stream, max_len=None):
    rows = []
    with open(f"{corpus[split]}.{stream}", encoding="utf-8") as f:
        for line in f:
            toks = line.split()
            if stream == "head":
                vals, eos = [int(t) for t in toks], 0
            else:
                d = task.stream_dicts[stream]
                vals, eos = [d.index(t) for t in toks], d.eos()
            if max_len is not None and len(vals) + 1 > max_len:
                vals = vals[: max_len - 1]
            rows.append(vals + [eos])
    return rows


@pytest.mark.parametrize("options", [
    [],
    ["--left-pad-source"],
    ["--truncate-source", "--max-source-positions", "5"],
    ["--truncate-source", "--max-source-positions", "5", "--left-pad-source"],
])
def test_streams_follow_their_tokens(stream_corpus, stream_bin, options):
    task, _, cfg = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--source-features",
                                        "pos,case,subword,dep", *options)
    max_len = 5 if "--truncate-source" in options else None
    left = "--left-pad-source" not in options  # fairseq 0.12: the bare flag turns left padding OFF
    task.load_dataset("valid")
    ds = task.dataset("valid")
    expected = {s: _expected(stream_corpus, task, "valid", s, max_len) for s in ("pos", "case", "subword", "dep", "head")}
    itr = task.get_batch_iterator(dataset=ds, max_sentences=6, max_positions=(1024, 1024),
                                  ignore_invalid_inputs=False).next_epoch_itr(shuffle=False)
    seen = 0
    for batch in itr:
        src = batch["net_input"]["src_tokens"]
        streams = batch["net_input"]["src_streams"]
        assert set(streams) == {"pos", "case", "subword", "dep", "head"}
        for r, sid in enumerate(batch["id"].tolist()):
            real = src[r].ne(task.source_dictionary.pad())
            n = int(real.sum())
            if max_len:
                assert n <= max_len
            # the real tokens are contiguous on the padding side we asked for
            assert real[-n:].all() if left else real[:n].all()
            for name, rows in expected.items():
                values = streams[name][r][real].tolist()
                assert values == rows[sid], (name, sid)
                pad = 0 if name == "head" else task.stream_dicts[name].pad()
                assert (streams[name][r][~real] == pad).all()
            seen += 1
    assert seen == len(ds) == 20


def test_stream_dtypes_and_shapes(stream_bin):
    task, _, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet")
    task.load_dataset("train")
    ds = task.dataset("train")
    batch = ds.collater([ds[i] for i in range(5)])
    for name, t in batch["net_input"]["src_streams"].items():
        assert t.dtype == torch.long and t.shape == batch["net_input"]["src_tokens"].shape, name
