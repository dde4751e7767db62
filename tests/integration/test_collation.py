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
    samples = [ds[i] for i in range(5)]
    for pad_to in (None, {"source": 41, "target": 43}):  # fairseq's fixed lengths: the streams follow the source
        batch = ds.collater(samples, pad_to_length=pad_to)
        if pad_to:
            assert batch["net_input"]["src_tokens"].size(1) == 41 and batch["target"].size(1) == 43
        for name, t in batch["net_input"]["src_streams"].items():
            assert t.dtype == torch.long and t.shape == batch["net_input"]["src_tokens"].shape, name
        # without target factors the batch holds no factor keys: fairseq's batch plus the source streams
        stock = ds.dataset.collater(samples, pad_to_length=pad_to)
        assert set(batch) == set(stock) and set(batch["net_input"]) == set(stock["net_input"]) | {"src_streams"}


# -- literal fairseq symbols, --truncate-source and --source-prepend-bos -----------
def _stream_text(tokens, k):
    """Distinct, position-revealing values for every stream of a line of ``tokens`` (line ``k``)."""
    n = len(tokens)
    return {
        "pos": " ".join(f"P{k}_{i}" for i in range(n)),
        "case": " ".join("C" if t[:1].isupper() else "L" for t in tokens),
        "subword": " ".join("O" for _ in tokens),
        "head": " ".join(str(-i) for i in range(n)),  # every token points to the first
        "dep": " ".join(f"D{i}" for i in range(n)),
    }


def _write_text(prefix, src_lines):
    files = {"en": src_lines, "de": ["x y"] * len(src_lines)}
    for name in ("pos", "case", "subword", "head", "dep"):
        files[name] = [_stream_text(line.split(), k)[name] for k, line in enumerate(src_lines)]
    for name, lines in files.items():
        with open(f"{prefix}.{name}", "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))


def _binarized(tmp_path, src_lines):
    from syntax_nmt.data import binarize

    os = __import__("os")
    text = tmp_path / "text"
    os.makedirs(text, exist_ok=True)
    for split in ("train", "valid"):
        _write_text(str(text / split), src_lines)
    dest = str(tmp_path / "bin")
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--trainpref", str(text / "train"),
                       "--validpref", str(text / "valid"), "--destdir", dest, "--joined-dictionary", "--workers", "1"])
    return dest


def _batch_rows(task, split="valid"):
    """{sentence id: (source tokens as strings, {stream: values as strings})} of one collated batch."""
    task.load_dataset(split)
    ds = task.dataset(split)
    batch = ds.collater([ds[i] for i in range(len(ds))])
    d = task.source_dictionary
    rows = {}
    for r, sid in enumerate(batch["id"].tolist()):
        real = batch["net_input"]["src_tokens"][r].ne(d.pad())
        toks = [d[int(t)] for t in batch["net_input"]["src_tokens"][r][real]]
        streams = {}
        for name, t in batch["net_input"]["src_streams"].items():
            vals = t[r][real].tolist()
            streams[name] = [str(v) for v in vals] if name == "head" else [task.stream_dicts[name][v] for v in vals]
        rows[sid] = (toks, streams)
    return rows, batch


LINES = ["We stop </s>", "The long line here is much longer than the other one"]


@pytest.mark.parametrize("pad", [[], ["--left-pad-source"]])  # fairseq 0.12: the bare flag means right padding
def test_literal_eos_with_truncate_source_keeps_streams_aligned(tmp_path, pad):
    """Data holding a literal ``</s>`` (made before annotation escaped it): fairseq's --truncate-source
    strips it with the real EOS; the streams lose the same position."""
    data = _binarized(tmp_path, LINES)
    task, _, _ = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-features", "pos,dep",
                                      "--truncate-source", *pad)
    rows, batch = _batch_rows(task)
    toks, streams = rows[0]
    assert toks == ["We", "stop", "</s>"]  # "</s>" here is the EOS fairseq appended; the literal one is gone
    assert streams["pos"] == ["P0_0", "P0_1", "</s>"]
    assert streams["dep"] == ["D0", "D1", "</s>"]
    assert streams["head"] == ["0", "-1", "0"]
    toks, streams = rows[1]
    assert len(toks) == 12 and streams["pos"] == [f"P1_{i}" for i in range(11)] + ["</s>"]


def test_annotation_escapes_fairseq_symbols(tmp_path):
    """``syntax-nmt-annotate`` escapes fairseq's symbols in the text, so they never become fairseq's ids."""
    from syntax_nmt.annotate.cli import main

    src = tmp_path / "in.en"
    src.write_text("We stop </s>\n<s> <pad> a<unk>b <S>\n", encoding="utf-8")
    main(["--backend", "conllu", "--conllu", str(_conllu(tmp_path, src)), "--source", str(src), "--pretokenized",
          "--src-lang", "en", "-o", str(tmp_path / "out/train"), "--subword", "none", "--quiet"])
    assert (tmp_path / "out/train.en").read_text(encoding="utf-8").split("\n") == [
        "We stop \u2039/s\u203a", "\u2039s\u203a \u2039pad\u203a a\u2039unk\u203ab <S>", ""]


def _conllu(tmp_path, src):
    from syntax_nmt.syntax.conllu import Sentence, write_conllu

    sents = []
    for line in src.read_text(encoding="utf-8").splitlines():
        w = line.split()
        sents.append(Sentence(w, ["X"] * len(w), ["X"] * len(w), [0] + [1] * (len(w) - 1),
                              ["root"] + ["dep"] * (len(w) - 1)))
    path = tmp_path / "in.conllu"
    with open(path, "w", encoding="utf-8") as f:
        write_conllu(sents, f)
    return path


def test_truncate_source_leaves_room_for_bos(tmp_path):
    """--truncate-source with --source-prepend-bos gives at most --max-source-positions tokens."""
    data = _binarized(tmp_path, ["a b c d e f g h", "a b"])
    task, _, _ = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-features", "pos",
                                      "--truncate-source", "--source-prepend-bos", "--max-source-positions", "5")
    rows, batch = _batch_rows(task)
    assert batch["net_input"]["src_tokens"].size(1) == 5
    toks, streams = rows[0]
    assert toks == ["<s>", "a", "b", "c", "</s>"]
    assert streams["pos"] == ["<s>", "P0_0", "P0_1", "P0_2", "</s>"]
    assert streams["head"] == ["0", "0", "-1", "-2", "0"]
    assert rows[1][0] == ["<s>", "a", "b", "</s>"] and rows[1][1]["pos"] == ["<s>", "P1_0", "P1_1", "</s>"]


def test_source_prepend_bos_is_recorded_and_applied(tmp_path):
    """The checkpoint's model configuration records --source-prepend-bos; loading it
    (fairseq calls task.build_model(cfg.model, from_checkpoint=True)) applies it, or refuses the
    option for a model trained without it."""
    from fairseq import tasks

    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    data = _binarized(tmp_path, ["a b c", "a b"])
    _, _, cfg_bos = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-prepend-bos")
    assert cfg_bos.model.source_prepend_bos is True
    _, _, cfg_plain = build_task_and_model(data, "--syntax-attention", "sgnet")
    assert cfg_plain.model.source_prepend_bos is False
    # generation without the flag, checkpoint trained with it: BOS is prepended
    gen = tasks.setup_task(cfg_plain.task)
    assert not gen.cfg.source_prepend_bos
    gen.build_model(cfg_bos.model, from_checkpoint=True)
    assert gen.cfg.source_prepend_bos
    rows, _ = _batch_rows(gen)
    assert rows[0][0] == ["<s>", "a", "b", "c", "</s>"] and rows[0][1]["pos"][0] == "<s>"
    # the flag with a checkpoint trained without it: refused
    task_bos, _, _ = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-prepend-bos")
    with pytest.raises(StreamConfigError, match="trained without it"):
        task_bos.build_model(cfg_plain.model, from_checkpoint=True)


def test_truncate_source_is_applied_from_the_checkpoint(tmp_path):
    """Loading a checkpoint trained with ``--truncate-source --max-source-positions N`` cuts
    the sources (and streams) as training did, with the command line's defaults (no truncation, 1024
    positions); ``--truncate-source`` alone cuts to the model's positions, not to 1024."""
    from fairseq import tasks

    data = _binarized(tmp_path, ["a b c d e f g h", "a b"])
    _, _, cfg_cut = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-features", "pos",
                                         "--truncate-source", "--source-prepend-bos", "--max-source-positions", "5")
    assert cfg_cut.model.truncate_source is True
    _, _, cfg_plain = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-features", "pos")
    assert cfg_plain.model.truncate_source is False
    gen = tasks.setup_task(cfg_plain.task)
    gen.build_model(cfg_cut.model, from_checkpoint=True)
    assert gen.cfg.truncate_source and gen.cfg.max_source_positions == 5
    assert gen.max_positions()[0] == 5
    rows, _ = _batch_rows(gen)
    assert rows[0][0] == ["<s>", "a", "b", "c", "</s>"]
    assert rows[0][1]["pos"] == ["<s>", "P0_0", "P0_1", "P0_2", "</s>"] and rows[0][1]["head"] == ["0", "0", "-1",
                                                                                                  "-2", "0"]
    # a model trained on 4 positions without truncation: --truncate-source at inference cuts to 4
    _, _, cfg_short = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-features", "pos",
                                           "--max-source-positions", "4")
    _, _, cfg_ask = build_task_and_model(data, "--syntax-attention", "sgnet", "--source-features", "pos",
                                         "--truncate-source")
    gen = tasks.setup_task(cfg_ask.task)
    gen.build_model(cfg_short.model, from_checkpoint=True)
    assert _batch_rows(gen)[0][0][0] == ["a", "b", "c", "</s>"]
    # neither: nothing is cut
    gen = tasks.setup_task(cfg_plain.task)
    gen.build_model(cfg_plain.model, from_checkpoint=True)
    assert not gen.cfg.truncate_source and gen.cfg.max_source_positions == 1024
    assert _batch_rows(gen)[0][0][0] == ["a", "b", "c", "d", "e", "f", "g", "h", "</s>"]
