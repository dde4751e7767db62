"""What breaks only at WMT14's scale, checked on small data: spaCy's string store growing with every new word of
millions of lines (the backend parses in memory zones), annotation shards left running when run_all.sh stops, the
head stream held in memory by the binarizer."""

import pytest

from syntax_nmt.annotate.backends.spacy_backend import SpacyBackend, load_pipeline


def _lines(n):
    return [(i + 1, f"the cat W{i:05d}q sat on X{i:05d}z .", i) for i in range(n)]


def test_spacy_parse_frees_the_strings_of_new_words(spacy_model, monkeypatch):
    """40 lines with 80 new words, parsed in blocks of 7 lines: the string store is the size it was (it grew by
    every new word, and its shape, before), and the parses are those of one single block."""
    nlp = load_pipeline(spacy_model)
    lines = _lines(40)
    monkeypatch.setattr(SpacyBackend, "ZONE_LINES", 7)
    before = len(nlp.vocab.strings)
    out = list(SpacyBackend(nlp, pretokenized=True).parse(lines))
    assert len(nlp.vocab.strings) == before
    assert [(n, s.words, c) for n, s, c in out] == [(n, t.split(), c) for n, t, c in lines]
    monkeypatch.setattr(SpacyBackend, "ZONE_LINES", 10**6)
    whole = list(SpacyBackend(nlp, pretokenized=True).parse(_lines(40)))
    assert [(s.words, s.upos, s.heads, s.deprels) for _, s, _ in out] == \
        [(s.words, s.upos, s.heads, s.deprels) for _, s, _ in whole]
    assert out[0][1].upos == ["DET", "NOUN", "X", "VERB", "ADP", "X", "PUNCT"]


def test_run_all_waits_for_every_shard_when_one_fails(tmp_path):
    """A killed (here: failing) shard made run_all.sh exit at once (set -e on its wait) while the other shards went
    on parsing: a rerun then parsed their chunks a second time beside them. Now it waits for all, then fails."""
    import os
    import subprocess
    from pathlib import Path

    recipe = Path(__file__).resolve().parents[2] / "examples" / "wmt14_en_de"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "syntax-nmt-annotate"  # shard 0 fails at once, every other process ends 2 s later
    fake.write_text('#!/usr/bin/env bash\nfor a in "$@"; do if [[ $prev == --shard-id ]]; then shard=$a; fi; '
                    'if [[ $prev == --output-prefix ]]; then out=$a; fi; prev=$a; done\n'
                    'if [[ $shard == 0 ]]; then exit 3; fi\nsleep 2\nmkdir -p "$(dirname "$out")"\necho done >> "$out.${shard:-x}.ended"\n')
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", WORK=str(tmp_path / "w"),
               STAGES="annotate", ANNOTATE_SHARDS="3", SYSTEMS_PYTHON=os.environ.get("PYTHON", "python"))
    proc = subprocess.run(["bash", str(recipe / "run_all.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "run_all.sh: error: an annotation process failed (see above); rerun the same command to resume" in \
        proc.stderr
    ann = tmp_path / "w" / "annotated" / "p100"
    assert sorted(p.name for p in ann.iterdir()) == ["test.x.ended", "train.1.ended", "train.2.ended",
                                                      "valid.x.ended"]


def test_binarize_heads_streams_and_widens_late(tmp_path):
    """The head stream is written one line at a time: 20,000 sentences peak under 1.5 MB of Python memory (every
    line's array was held in a list before: about 6 MB here). An offset past int16 after many int16 lines writes
    the whole file again as int32."""
    import tracemalloc

    import numpy as np

    from syntax_nmt.data.binarize import binarize_heads
    from fairseq.data import indexed_dataset

    path = tmp_path / "train.head"
    path.write_text("".join(" ".join(["1"] * 19 + ["0"]) + "\n" for _ in range(20000)))
    tracemalloc.start()
    try:
        assert binarize_heads(str(path), str(tmp_path / "out")) == 20000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5e6, peak
    ds = indexed_dataset.MMapIndexedDataset(str(tmp_path / "out"))
    assert len(ds) == 20000 and ds._index.dtype == np.int16 and ds[19999].tolist() == [1] * 19 + [0, 0]

    length = 2 ** 15 + 2
    mixed = tmp_path / "mixed.head"
    mixed.write_text("1 0 -1\n" * 3 + " ".join([str(length - 1)] + ["0"] * (length - 1)) + "\n0\n")
    assert binarize_heads(str(mixed), str(tmp_path / "mixed")) == 5
    ds = indexed_dataset.MMapIndexedDataset(str(tmp_path / "mixed"))
    assert ds._index.dtype == np.int32 and len(ds) == 5
    assert [ds[i].tolist() for i in (0, 2, 4)] == [[1, 0, -1, 0]] * 2 + [[0, 0]]
    assert int(ds[3][0]) == length - 1 and len(ds[3]) == length + 1


def _binarize_args(corpus, dest):
    from syntax_nmt.data import binarize

    return binarize.get_parser().parse_args([
        "--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"], "--validpref", corpus["valid"],
        "--destdir", str(dest), "--joined-dictionary", "--workers", "1"])


def _files(directory):
    import hashlib
    import os

    return {n: hashlib.sha256(open(os.path.join(directory, n), "rb").read()).hexdigest() for n in os.listdir(directory)
            if n != "preprocess.log"}


def test_a_killed_binarization_resumes_after_its_finished_parts(tmp_path, monkeypatch):
    """Killed (here: interrupted) while binarizing the head stream, syntax-nmt-binarize started over from the text
    on the rerun, in a new temporary directory, and left the old one behind. Now the rerun binarizes only the
    parts not finished (head, dep), into the same staging directory, and writes what an uninterrupted run writes."""
    import os

    from fairseq_cli import preprocess

    from support.streamdata import write_corpus
    from syntax_nmt.data import binarize

    corpus = write_corpus(str(tmp_path / "text"), sizes={"train": 30, "valid": 9}, seed=3)
    binarize.main(_binarize_args(corpus, tmp_path / "whole"))
    calls = []
    real_main, real_make_all, real_heads = preprocess.main, preprocess._make_all, binarize.binarize_heads
    monkeypatch.setattr(preprocess, "main", lambda a: (calls.append("text"), real_main(a)))
    monkeypatch.setattr(preprocess, "_make_all", lambda s, *a: (calls.append(s), real_make_all(s, *a)))

    def killed(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(binarize, "binarize_heads", killed)
    with pytest.raises(KeyboardInterrupt):
        binarize.main(_binarize_args(corpus, tmp_path / "bin"))
    assert calls == ["text", "en", "de", "pos", "case", "subword"]  # fairseq-preprocess, then the streams
    assert sorted(p.name for p in tmp_path.iterdir()) == [".bin.binarize", "text", "whole"]
    monkeypatch.setattr(binarize, "binarize_heads", lambda *a: (calls.append("head"), real_heads(*a))[1])
    calls.clear()
    binarize.main(_binarize_args(corpus, tmp_path / "bin"))
    assert calls == ["head", "head", "dep"]  # heads of train and valid, then dep
    assert _files(tmp_path / "bin") == _files(tmp_path / "whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "text", "whole"]  # the staging directory is gone

    os.utime(corpus["valid"] + ".pos", ns=(1, 1))  # another input: the parts of the interrupted run are not reused
    monkeypatch.setattr(binarize, "binarize_heads", killed)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        binarize.main(_binarize_args(corpus, tmp_path / "again"))
    os.utime(corpus["valid"] + ".pos")
    monkeypatch.setattr(binarize, "binarize_heads", real_heads)
    calls.clear()
    binarize.main(_binarize_args(corpus, tmp_path / "again"))
    assert calls == ["text", "en", "de", "pos", "case", "subword", "dep"]


def test_a_live_binarization_is_not_taken_over(tmp_path):
    import os
    import socket

    from syntax_nmt.data import binarize

    stage = binarize.stage_path(str(tmp_path / "bin"))
    os.makedirs(stage)
    with open(os.path.join(stage, ".lock"), "w") as f:
        f.write(f"{socket.gethostname()} {os.getppid()}")
    with pytest.raises(FileExistsError, match=rf"^another syntax-nmt-binarize \(pid {os.getppid()} on "):
        binarize.open_stage(str(tmp_path / "bin"), "k")
    with open(os.path.join(stage, ".lock"), "w") as f:  # a dead one is
        f.write(f"{socket.gethostname()} 999999999")
    assert binarize.open_stage(str(tmp_path / "bin"), "k") == stage


def _annotate_peak(tmp_path, spacy_model, codes, chunk_size, on_chunk_done=None, n=2000):
    import tracemalloc

    from support.annotate import write
    from syntax_nmt.annotate.cli import main

    src = write(tmp_path / "c.en", [f"The cat sat on the mat {i} . It rains ." for i in range(n)])
    tgt = write(tmp_path / "c.de", [f"Die Katze saß {i} ." for i in range(n)])
    prefix = tmp_path / f"out{chunk_size}"
    args = ["--source", src, "--target", tgt, "--src-lang", "en", "--tgt-lang", "de", "-o", str(prefix),
            "--spacy-model", spacy_model, "--pretokenized", "--subword", "bpe", "--subword-model", codes,
            "--chunk-size", str(chunk_size), "--quiet"]
    tracemalloc.start()
    try:
        main(args, on_chunk_done=on_chunk_done)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, prefix


def test_annotation_memory_does_not_grow_with_the_chunk_size(tmp_path, spacy_model, codes):
    """A chunk's parse records were all held until the chunk ended (about 4 KB a line with en_core_web_sm: 400 MB
    per process at run_all.sh's 100,000 lines), and its rendered lines too. They are written as they come now: one
    chunk of 2,000 lines peaks within 0.8 MB of chunks of 200 lines (3.7 MB higher for 3,000 lines before), and the
    outputs are the same."""
    from support.annotate import read

    small, prefix_small = _annotate_peak(tmp_path, spacy_model, codes, 200)
    large, prefix_large = _annotate_peak(tmp_path, spacy_model, codes, 2000)
    assert large - small < 0.8e6, (small, large)
    for name in ("en", "de", "pos", "case", "subword", "head", "dep"):
        assert read(f"{prefix_small}.{name}") == read(f"{prefix_large}.{name}")


def test_a_killed_runs_temporary_files_are_removed(tmp_path, spacy_model, codes):
    """A run killed while writing a chunk left its temporary file (hundreds of MB at 100,000 lines) for good."""
    import os

    from support.annotate import Killed
    from syntax_nmt.annotate.chunks import ChunkStore

    def kill(k):
        raise Killed

    with pytest.raises(Killed):
        _annotate_peak(tmp_path, spacy_model, codes, 100, on_chunk_done=kill, n=300)
    chunks = tmp_path / "out100.chunks"
    dead = chunks / "000001.parse.jsonl.tmp-999999999"
    live = chunks / f"000002.parse.jsonl.tmp-{os.getpid()}"
    dead.write_text("{}\n")
    live.write_text("{}\n")
    store = ChunkStore(str(tmp_path / "out100"), 300, 100, ["en"])
    assert store.remove_stale_temps() == 1
    assert not dead.exists() and live.exists()
    live.unlink()
    _annotate_peak(tmp_path, spacy_model, codes, 100, n=300)
    assert not chunks.exists() and len((tmp_path / "out100.pos").read_text().splitlines()) == 300
