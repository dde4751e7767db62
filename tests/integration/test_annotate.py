"""End-to-end tests of ``syntax-nmt-annotate`` (``syntax_nmt.annotate.cli.main``).

The spaCy backend is driven by a deterministic hand-made pipeline (``spacy.blank("en")``
plus a rule-based "parser" component, saved to disk and loaded by path like any
pipeline: tests/support/annotate.py); the CoNLL-U backend by files written with
:mod:`syntax_nmt.syntax.conllu`.
"""

import os

import pytest

from support.annotate import NAMES, SENTS, STREAMS, Killed, check_aligned, corpus_args, outputs, read, write
from syntax_nmt.annotate.cli import cli_main, main
from syntax_nmt.annotate.textio import InputError
from syntax_nmt.syntax.conllu import Sentence, read_conllu, write_conllu


def base_args(tmp_path, source, prefix="out/train", *extra, codes=None):
    args = ["--source", source, "--src-lang", "en", "--output-prefix", str(tmp_path / prefix), "--quiet"]
    args += ["--subword", "bpe", "--subword-model", codes] if codes else ["--subword", "none"]
    return args + list(extra)


# -- CoNLL-U backend ----------------------------------------------------------------------------------
def test_conllu_round_trip(tmp_path, codes):
    conllu = tmp_path / "in.conllu"
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(SENTS, f)
    src = write(tmp_path / "in.en", ["The cat sat .", "", "Dogs\trun  quickly"])
    tgt = write(tmp_path / "in.de", ["Die Katze saß .", "leer", "Hunde rennen schnell"])
    prefix = tmp_path / "out/train"
    assert main(["--backend", "conllu", "--conllu", str(conllu), "--source", src, "--pretokenized", "--target", tgt,
                 "--src-lang", "en", "--tgt-lang", "de", "-o", str(prefix), "--subword", "bpe", "--subword-model",
                 codes, "--write-conllu", "--pos-tagset", "xpos", "--quiet"]) == 0
    out = outputs(prefix, ["en", "de"] + list(STREAMS))
    assert out["en"] == ["The cat sat .", "", "D@@ o@@ g@@ s r@@ u@@ n q@@ u@@ i@@ c@@ k@@ l@@ y"]
    assert out["de"][1] == "l@@ e@@ e@@ r"
    assert out["pos"] == ["DT NN VBD .", "", "NNS NNS NNS NNS VBP VBP VBP RB RB RB RB RB RB RB"]
    assert out["subword"] == ["O O O O", "", "B M M E B M E B M M M M M E"]
    assert out["head"] == ["1 1 0 -1", "", "4 3 2 1 0 0 0 -3 -4 -5 -6 -7 -8 -9"]
    assert out["case"] == ["C L L L", "", "C C C C L L L L L L L L L L"]
    assert out["dep"][2].split()[-1] == "advmod"
    check_aligned(prefix)
    with open(f"{prefix}.en.conllu", encoding="utf-8") as f:
        back = list(read_conllu(f))
    assert [(s.words, s.heads, s.deprels, s.comments["sent_id"]) for s in back] == [
        (s.words, s.heads, s.deprels, no) for s, no in zip(SENTS, ["1", "3"])]
    assert not os.path.exists(f"{prefix}.chunks")  # removed after the merge


def test_conllu_without_source_and_word_mismatch(tmp_path):
    conllu = tmp_path / "in.conllu"
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(SENTS, f)
    prefix = tmp_path / "a/train"
    main(["--backend", "conllu", "--conllu", str(conllu), "--src-lang", "en", "-o", str(prefix), "--subword", "none",
          "--quiet"])
    assert read(f"{prefix}.en") == ["The cat sat .", "Dogs run quickly"]
    assert read(f"{prefix}.head") == ["1 1 0 -1", "1 0 -1"]
    # the source does not match the parse: error naming both files and the line
    src = write(tmp_path / "other.en", ["The cat sat .", "Dogs ran quickly"])
    with pytest.raises(InputError, match=r"in\.conllu sentence block 2 does not match .*other\.en:2.*token 2"):
        main(["--backend", "conllu", "--conllu", str(conllu), "--source", src, "--pretokenized", "--src-lang", "en",
              "-o", str(tmp_path / "b/train"), "--subword", "none", "--quiet"])
    # raw (non-pretokenized) source: the words must spell the line
    raw = write(tmp_path / "raw.en", ["The cat sat.", "Dogs run quickly"])
    main(["--backend", "conllu", "--conllu", str(conllu), "--source", raw, "--src-lang", "en",
          "-o", str(tmp_path / "c/train"), "--subword", "none", "--quiet"])
    assert read(str(tmp_path / "c/train.en")) == ["The cat sat .", "Dogs run quickly"]
    # one block per non-empty line, checked before any work
    short = write(tmp_path / "short.en", ["The cat sat ."])
    with pytest.raises(InputError, match="2 sentence blocks but .*short.en has 1 non-empty lines"):
        main(["--backend", "conllu", "--conllu", str(conllu), "--source", short, "--src-lang", "en",
              "-o", str(tmp_path / "d/train"), "--subword", "none", "--quiet"])


# -- spaCy backend ----------------------------------------------------------------------------------
def test_spacy_backend_raw_and_pretokenized(tmp_path, spacy_model, codes):
    src = write(tmp_path / "in.en", ["The cat sat.", "Dogs don't run."])
    prefix = tmp_path / "raw/train"
    main(base_args(tmp_path, src, "raw/train", "--spacy-model", spacy_model, codes=codes))
    out = outputs(prefix, ["en"] + list(STREAMS))
    assert out["en"] == ["The cat sat .", "D@@ o@@ g@@ s d@@ o n@@ '@@ t r@@ u@@ n ."]
    assert out["pos"][0] == "DET NOUN VERB PUNCT"
    assert out["head"][0] == "2 1 0 -1"
    assert out["dep"][0] == "det dep root punct"  # spaCy's ROOT is written as root
    assert out["subword"][1] == "B M M E B E B M E B M E O"
    check_aligned(prefix)
    # pre-tokenized: the tokens are kept as they are ("sat." stays one word)
    main(base_args(tmp_path, src, "tok/train", "--spacy-model", spacy_model, "--pretokenized", codes=codes))
    assert read(str(tmp_path / "tok/train.en"))[0] == "The cat sa@@ t@@ ."
    assert read(str(tmp_path / "tok/train.subword"))[0] == "O O B M E"
    check_aligned(tmp_path / "tok/train")


@pytest.mark.parametrize("policy,heads,deps", [
    ("forest", "1 0 -1 1 0 -1", "dep root punct dep root punct"),
    ("attach", "1 0 -1 1 -3 -1", "dep root punct dep parataxis punct"),
])
def test_spacy_multi_root(tmp_path, spacy_model, policy, heads, deps):
    src = write(tmp_path / "in.en", ["It rains. We stay."])
    main(base_args(tmp_path, src, "out/train", "--spacy-model", spacy_model, "--multi-root", policy))
    assert read(str(tmp_path / "out/train.head")) == [heads]
    assert read(str(tmp_path / "out/train.dep")) == [deps]


def test_spacy_n_process_2_equals_1(tmp_path, spacy_model, codes):
    lines = [f"The cat sat on {i} mat." if i % 3 else "" for i in range(30)]
    src = write(tmp_path / "in.en", lines)
    for n in ("1", "2"):
        main(base_args(tmp_path, src, f"n{n}/train", "--spacy-model", spacy_model, "--n-process", n,
                       "--batch-size", "4", "--chunk-size", "7", codes=codes))
    for name in ["en"] + list(STREAMS):
        assert read(str(tmp_path / f"n1/train.{name}")) == read(str(tmp_path / f"n2/train.{name}"))


# -- bad input -------------------------------------------------------------------------------------
BAD_INPUT = {
    # name: (source lines, target lines or None, extra args, expected source output lines or an error regex)
    "empty line kept": (["The cat sat .", "", "  \t ", "A dog ran ."], ["x", "y", "z", "w"], [],
                        ["The cat sat .", "", "", "A dog ran ."]),
    "empty line error": (["The cat sat .", "", "A dog ran ."], None, ["--on-empty", "error"], r"in\.en:2: empty line"),
    "tabs and unicode spaces": (["The\tcat\u00a0 sat\u3000.\r", "\u2003A  dog\u2009ran ."], None, [],
                                ["The cat sat .", "A dog ran ."]),
    "non-ascii": (["Über straße 東京 🐈 café ."], None, [], ["Über straße 東京 🐈 café ."]),
    "long line blanked": (["The cat sat .", "w " * 40 + ".", "A dog ran ."], ["x", "long target", "z"],
                          ["--max-words", "10"], ["The cat sat .", "", "A dog ran ."]),
    "long line error": (["The cat sat .", "w " * 40 + "."], None, ["--max-words", "10", "--on-long", "error"],
                        r"in\.en:2: line has 41 words, more than --max-words 10 \(1 over-long"),
    "marker-like words bpe": (["a@@b @@ x|y ▁z"], ["t@@ @@"], ["--subword", "bpe"],
                              ["a@@ ＠@@ ＠@@ b ＠@@ ＠ x@@ |@@ y ▁@@ z"]),
    "mismatched line counts": (["a", "b", "c"], ["x", "y"], [], r"line counts differ: .*in\.en has 3 lines, "
                                                                r".*in\.de has 2 lines"),
    "invalid utf-8": ([b"ok", b"caf\xe9"], None, [], r"in\.en:2: invalid UTF-8"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input(tmp_path, spacy_model, codes, case):
    src_lines, tgt_lines, extra, expected = BAD_INPUT[case]
    if isinstance(src_lines[0], bytes):
        (tmp_path / "in.en").write_bytes(b"\n".join(src_lines) + b"\n")
        src = str(tmp_path / "in.en")
    else:
        src = write(tmp_path / "in.en", src_lines)
    args = ["--source", src, "--src-lang", "en", "-o", str(tmp_path / "out/train"), "--spacy-model", spacy_model,
            "--pretokenized", "--quiet"] + extra
    if "--subword" in extra:
        args += ["--subword-model", codes]
    else:
        args += ["--subword", "none"]
    if tgt_lines is not None:
        args += ["--target", write(tmp_path / "in.de", tgt_lines), "--tgt-lang", "de"]
    if isinstance(expected, str):
        with pytest.raises(InputError, match=expected):
            main(args)
        assert not os.path.exists(tmp_path / "out/train.en")
        return
    main(args)
    assert read(str(tmp_path / "out/train.en")) == expected
    check_aligned(tmp_path / "out/train")
    if case == "long line blanked":  # the whole pair is blanked, never dropped
        assert read(str(tmp_path / "out/train.de")) == ["x", "", "z"]
    if case == "empty line kept":
        assert read(str(tmp_path / "out/train.de")) == ["x", "y", "z", "w"]
    if case == "marker-like words bpe":
        assert read(str(tmp_path / "out/train.de")) == ["t@@ ＠@@ ＠ ＠@@ ＠"]
        assert read(str(tmp_path / "out/train.subword")) == ["B M M E B E B M E B E"]


def test_marker_like_words_spm(tmp_path, spacy_model):
    from syntax_nmt.annotate.subwords import learn_model

    model = learn_model("spm", iter(["the cat sat on the mat ."] * 20), 30, str(tmp_path / "m.model"))
    src = write(tmp_path / "in.en", ["▁the ca▁t @@ a|b"])
    main(["--source", src, "--src-lang", "en", "-o", str(tmp_path / "out/train"), "--spacy-model", spacy_model,
          "--pretokenized", "--subword", "spm", "--subword-model", model, "--quiet"])
    toks = check_aligned(tmp_path / "out/train", scheme="spm")[0].split()
    assert sum(t.startswith("▁") for t in toks) == 4  # one word start per input word, none from the data
    assert "".join(toks).replace("▁", " ").split() == ["_the", "ca_t", "@@", "a|b"]


# -- resuming, sharding, learning -------------------------------------------------------------------------
def test_resume_after_kill_equals_uninterrupted(tmp_path, spacy_model, codes):
    main(corpus_args(tmp_path, "ref/train", spacy_model, "--subword", "bpe", "--subword-model", codes))
    ref = outputs(tmp_path / "ref/train", NAMES)
    assert len(ref["en"]) == 23

    def kill_after_chunk_1(k):
        if k == 1:
            raise Killed

    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    with pytest.raises(Killed):
        main(args, on_chunk_done=kill_after_chunk_1)
    chunks = tmp_path / "run/train.chunks"
    assert sorted(p.name for p in chunks.glob("*.parse.jsonl")) == ["000000.parse.jsonl", "000001.parse.jsonl"]
    assert not (tmp_path / "run/train.en").exists()
    done = []
    main(args, on_chunk_done=done.append)
    assert done == [2, 3, 4]  # finished chunks are not redone
    assert outputs(tmp_path / "run/train", NAMES) == ref
    assert not chunks.exists()
    # a rerun after completion does nothing; different stream options are refused without --overwrite
    main(args, on_chunk_done=done.append)
    assert done == [2, 3, 4] and outputs(tmp_path / "run/train", NAMES) == ref
    with pytest.raises(ValueError, match=r"run/train\.\* exist but were made with other settings \(annotation setting "
                                         r"'case' differs: 'binary' in the existing outputs, 'rich' in this run\)"):
        main(args + ["--case", "rich"], on_chunk_done=done.append)
    assert done == [2, 3, 4] and outputs(tmp_path / "run/train", NAMES) == ref
    main(args + ["--case", "rich", "--overwrite"])
    assert read(str(tmp_path / "run/train.case"))[1].split()[0] == "Cap"


def test_kill_between_parse_and_segment_and_changed_settings(tmp_path, spacy_model, codes):
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    main(corpus_args(tmp_path, "ref/train", spacy_model, "--subword", "bpe", "--subword-model", codes))
    with pytest.raises(Killed):
        main(args, on_chunk_done=lambda k: (_ for _ in ()).throw(Killed()) if k == 2 else None)
    chunks = tmp_path / "run/train.chunks"
    for name in ("000000.de", "000001.done.json"):  # as if killed while writing these chunks
        (chunks / name).unlink()
    with pytest.raises(ValueError, match="other settings .*multi_root"):
        main(args + ["--multi-root", "attach"])
    main(args)
    assert outputs(tmp_path / "run/train", NAMES) == outputs(tmp_path / "ref/train", NAMES)


def test_two_shards_then_merge_equal_unsharded(tmp_path, spacy_model, codes):
    common = ["--subword", "bpe", "--subword-model", codes, "--multi-root", "attach"]
    main(corpus_args(tmp_path, "ref/train", spacy_model, *common))
    args = corpus_args(tmp_path, "sh/train", spacy_model, *common, "--num-shards", "2")
    done = []
    main(args + ["--shard-id", "0"], on_chunk_done=done.append)
    assert done == [0, 2, 4] and not (tmp_path / "sh/train.en").exists()
    with pytest.raises(ValueError, match=r"2 of 5 chunks are not parsed yet \(chunks 1, 3; shards 1 of 2\)"):
        main(args + ["--merge-only"])
    main(args + ["--shard-id", "1"], on_chunk_done=done.append)  # the last shard merges
    assert done == [0, 2, 4, 1, 3]
    assert outputs(tmp_path / "sh/train", NAMES) == outputs(tmp_path / "ref/train", NAMES)
    # --merge-only from kept chunks, e.g. after both shards finished on other machines
    main(args + ["--shard-id", "1", "--keep-chunks", "--overwrite"])
    main(args + ["--shard-id", "0", "--keep-chunks"])
    os.remove(tmp_path / "sh/train.en")
    main(args + ["--merge-only"])
    assert outputs(tmp_path / "sh/train", NAMES) == outputs(tmp_path / "ref/train", NAMES)


@pytest.mark.parametrize("scheme,size", [("bpe", 20), ("spm", 40)])
def test_learn_subword_after_parsing(tmp_path, spacy_model, scheme, size):
    out = str(tmp_path / f"learned.{scheme}")
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", scheme, "--learn-subword", str(size),
                       "--subword-model-out", out, "--num-shards", "2")
    main(args + ["--shard-id", "1"])
    assert not os.path.exists(out) and not (tmp_path / "run/train.en").exists()  # learning waits for all chunks
    main(args + ["--shard-id", "0"])
    model = out if scheme == "bpe" else out + ".model"
    assert os.path.exists(model)
    lines = check_aligned(tmp_path / "run/train", scheme=scheme)
    assert len(lines) == 23 and lines[0] == ""
    # the learned model, given back, reproduces the same files
    main(["--source", str(tmp_path / "c.en"), "--target", str(tmp_path / "c.de"), "--src-lang", "en", "--tgt-lang",
          "de", "-o", str(tmp_path / "again/train"), "--spacy-model", spacy_model, "--write-conllu", "--quiet",
          "--subword", scheme, "--subword-model", model])
    assert outputs(tmp_path / "again/train", NAMES) == outputs(tmp_path / "run/train", NAMES)


def test_learn_subword_refuses_to_overwrite_an_existing_model(tmp_path, spacy_model, capsys):
    """``--subword-model-out`` naming an existing file: refused before parsing, the file untouched (it was
    overwritten with a warning, after the parse); --overwrite learns it again; a finished job run again reuses it."""
    out = tmp_path / "codes"
    out.write_text("#version: 0.2\nq u\n", encoding="utf-8")
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--learn-subword", "20",
                       "--subword-model-out", str(out))
    code, err = _cli_error(capsys, args)
    assert code == 2 and err == [f"syntax-nmt-annotate: error: --subword-model-out: {out} exists and was not learned "
                                 f"by this job: name another file, or pass --overwrite to learn it again"]
    assert out.read_text(encoding="utf-8") == "#version: 0.2\nq u\n"
    assert not (tmp_path / "run" / "train.chunks").exists() and not (tmp_path / "run" / "train.en").exists()
    main(args + ["--overwrite"])
    learned = out.read_text(encoding="utf-8")
    assert learned != "#version: 0.2\nq u\n" and len(learned.splitlines()) == 21
    main(args)  # up to date: nothing to do, nothing refused
    assert out.read_text(encoding="utf-8") == learned


def _cli_error(capsys, argv):
    """Run syntax-nmt-annotate in-process; returns (exit status, stderr lines)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    return e.value.code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("case", ["no model", "shard", "spacy model", "conllu mismatch", "empty file",
                                  "bad codes", "empty codes", "header-only codes", "truncated spm"])
def test_cli_errors_are_one_line_messages(tmp_path, capsys, case):
    """Each user error is one line ``syntax-nmt-annotate: error: ...`` with exit status 2, no traceback; an empty
    BPE codes file and a sentencepiece model cut between two of its pieces are such errors too (not models
    that segment almost character by character)."""
    src = write(tmp_path / "in.en", ["a b"])
    base = ["--source", src, "--src-lang", "en", "-o", str(tmp_path / "o"), "--quiet"]
    argv, expected = {
        "no model": (base, "--subword bpe needs --subword-model PATH"),
        "shard": (base + ["--subword", "none", "--shard-id", "2", "--num-shards", "2"],
                  "--shard-id must be in [0, --num-shards=2), got 2"),
        "spacy model": (base + ["--subword", "none", "--spacy-model", "xx_nonexistent_model"],
                        "cannot load spaCy pipeline 'xx_nonexistent_model'"),
        "conllu mismatch": (base + ["--subword", "none", "--backend", "conllu", "--conllu",
                                    str(_conllu_file(tmp_path)), "--pretokenized"],
                            "does not match"),  # a message with several lines in the exception
        "empty file": (["--source", write(tmp_path / "empty.en", []), "--src-lang", "en", "-o",
                        str(tmp_path / "o"), "--subword", "none"], "empty.en is empty: nothing to annotate"),
        "bad codes": (base + ["--subword", "bpe", "--subword-model", _spm_model(tmp_path)],
                      "is not a subword-nmt BPE codes file (not UTF-8 text at byte"),
        "empty codes": (base + ["--subword", "bpe", "--subword-model", write(tmp_path / "empty.codes", [])],
                        f"{tmp_path / 'empty.codes'} is an empty BPE codes file"),
        "header-only codes": (base + ["--subword", "bpe", "--subword-model",
                                      write(tmp_path / "header.codes", ["#version: 0.2"])],
                              f"{tmp_path / 'header.codes'} holds no merge operation (only its '#version:' line), so "
                              f"every word would be split into characters: learn the codes again with merges > 0 on "
                              f"more text"),
        "truncated spm": (base + ["--subword", "spm", "--subword-model", _truncated_spm_model(tmp_path)],
                          f"{tmp_path / 'cut.model'} is a truncated sentencepiece model (8 pieces, no trainer_spec "
                          f"nor normalizer_spec)"),
    }[case]
    code, err = _cli_error(capsys, argv)
    assert code == 2
    assert len(err) == 1, err  # one line, no traceback
    assert err[0].startswith("syntax-nmt-annotate: error: ") and expected in err[0], err


def _conllu_file(tmp_path):
    path = tmp_path / "x.conllu"
    with open(path, "w", encoding="utf-8") as f:
        write_conllu([Sentence(["a", "c"], ["X", "X"], ["X", "X"], [0, 1], ["root", "dep"])], f)
    return path


def _spm_model(tmp_path):
    from syntax_nmt.annotate.subwords import learn_model

    return learn_model("spm", iter(["the cat sat on the mat ."] * 20), 30, str(tmp_path / "m.model"))


def _truncated_spm_model(tmp_path, pieces=8):
    """A sentencepiece model cut after its first ``pieces`` pieces (top-level protobuf field 1, each
    ``0x0a``, a varint length, the bytes), which sentencepiece still loads."""
    with open(_spm_model(tmp_path), "rb") as f:
        data = f.read()
    i = 0
    for _ in range(pieces):
        assert data[i] == 0x0A
        i, n, shift = i + 1, 0, 0
        while True:
            n |= (data[i] & 0x7F) << shift
            shift += 7
            i += 1
            if not data[i - 1] & 0x80:
                break
        i += n
    path = tmp_path / "cut.model"
    path.write_bytes(data[:i])
    import sentencepiece

    assert sentencepiece.SentencePieceProcessor(model_file=str(path)).get_piece_size() == pieces
    return str(path)


def test_wrong_kind_of_subword_model(tmp_path, spacy_model, codes):
    """A sentencepiece model as BPE codes and BPE codes as a sentencepiece model are errors naming
    the file and the likely mix-up."""
    src = write(tmp_path / "in.en", ["The cat sat ."])
    spm = _spm_model(tmp_path)
    with pytest.raises(ValueError, match=rf"{spm} is not a subword-nmt BPE codes file \(not UTF-8 text at byte "
                                         rf"\d+; a sentencepiece model\? use --subword spm\)"):
        main(base_args(tmp_path, src, "a/train", "--spacy-model", spacy_model, codes=spm))
    with pytest.raises(ValueError, match=rf"{codes} is not a sentencepiece model \(.*; BPE codes\? use --subword bpe\)"):
        main(["--source", src, "--src-lang", "en", "-o", str(tmp_path / "b/train"), "--spacy-model", spacy_model,
              "--subword", "spm", "--subword-model", codes, "--quiet"])
    bad = tmp_path / "bad.codes"
    bad.write_text("#version: 0.2\na b\nthree symbols here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.codes:3: not a subword-nmt BPE codes file"):
        main(base_args(tmp_path, src, "c/train", "--spacy-model", spacy_model, codes=str(bad)))
    for prefix in ("a", "b", "c"):
        assert not (tmp_path / prefix).exists() or not any((tmp_path / prefix).iterdir())


def test_finalize_lock(tmp_path, spacy_model, codes):
    import socket

    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    chunks = tmp_path / "run/train.chunks"
    chunks.mkdir(parents=True)
    lock = chunks / "finalize.lock"
    lock.write_text(f"{socket.gethostname()} 1")  # a live process holds it: parse, but do not merge
    main(args)
    assert len(list(chunks.glob("*.done.json"))) == 5 and not (tmp_path / "run/train.en").exists()
    lock.write_text(f"{socket.gethostname()} 999999999")  # left by a dead process: taken over
    main(args + ["--merge-only"])
    assert len(read(str(tmp_path / "run/train.en"))) == 23 and not chunks.exists()


@pytest.mark.parametrize("where", ["start", "middle"])
def test_conllu_encoding_bom_and_invalid_byte(tmp_path, capsys, where):
    """A BOM at the start of the file is dropped (not read as part of the first comment line); an invalid
    byte is a one-line error naming the file and the line."""
    conllu = tmp_path / "in.conllu"
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu([Sentence(s.words, s.upos, s.xpos, s.heads, s.deprels, s.space_after, {"sent_id": str(i)})
                      for i, s in enumerate(SENTS, 1)], f)
    data = conllu.read_bytes()
    argv = ["--backend", "conllu", "--conllu", str(conllu), "--src-lang", "en", "--subword", "none", "--quiet"]
    if where == "start":
        conllu.write_bytes(b"\xef\xbb\xbf" + data)
        main(argv + ["-o", str(tmp_path / "a/train")])
        assert read(str(tmp_path / "a/train.en")) == ["The cat sat .", "Dogs run quickly"]
    else:
        conllu.write_bytes(data.replace(b"quickly", b"quick\xffly"))
        lineno = data[:data.index(b"quickly")].count(b"\n") + 1
        with pytest.raises(SystemExit) as e:
            cli_main(argv + ["-o", str(tmp_path / "b/train")])
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and err == [f"syntax-nmt-annotate: error: {conllu}:{lineno}: invalid UTF-8 byte 0xff "
                                             f"at column 8 (invalid start byte); CoNLL-U files are UTF-8"]
        assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())
