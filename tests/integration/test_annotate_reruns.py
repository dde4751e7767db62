"""Reruns, resumes and locks of syntax-nmt-annotate.

* a rerun into an existing prefix with other input or settings is refused, never silently kept;
* a run that failed before parsing anything does not block the corrected rerun;
* resuming after a kill with any render option changed re-renders every chunk (no mixed schemes);
* an input edited in place with the same size is noticed (content hash);
* a stale or empty ``finalize.lock`` is detected and reported.
"""

import json
import os
import socket
import time

import pytest

from support.annotate import NAMES, SENTS, Killed, corpus_args, outputs, read, write
from syntax_nmt.annotate.chunks import LOCK_GRACE_S
from syntax_nmt.annotate.cli import main


def _codes2(tmp_path):
    p = tmp_path / "bpe2.codes"
    p.write_text("#version: 0.2\nr a\nra i\nrai n\nrain s</w>\n", encoding="utf-8")
    return str(p)


def test_rerun_with_other_input_or_settings_is_refused(tmp_path, spacy_model, codes):
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    main(args)
    ref = outputs(tmp_path / "run/train", NAMES)
    main(args)  # same input and settings: nothing to do
    assert outputs(tmp_path / "run/train", NAMES) == ref
    # same prefix, another input of the same size (one word changed in place)
    src = tmp_path / "c.en"
    text = src.read_text(encoding="utf-8")
    src.write_text(text.replace("The cat sat on the mat 1 .", "The dog sat on the mat 1 ."), encoding="utf-8")
    assert len(src.read_text(encoding="utf-8")) == len(text)
    with pytest.raises(ValueError, match=r"run/train\.\* exist but were made from another source file \(.*c\.en "
                                         r"\(size \d+, sha256 [0-9a-f]{12}\.\.\.\); this run: .*; pass --overwrite"):
        main(args[:0] + ["--source", str(src)] + args[2:])
    assert outputs(tmp_path / "run/train", NAMES) == ref
    src.write_text(text, encoding="utf-8")
    # another subword model with the same path: its hash differs
    with open(codes, "a", encoding="utf-8") as f:
        f.write("m a\n")
    with pytest.raises(ValueError, match="other settings .*'subword_model_sha256' differs"):
        main(args)
    # outputs of an older run (no record of input and settings) are not trusted either
    os.remove(tmp_path / "run/train.annotation.inputs.json")
    with pytest.raises(ValueError, match=r"without a record of their input and settings"):
        main(args)
    main(args + ["--overwrite"])
    assert read(str(tmp_path / "run/train.en")) != ref["en"]  # redone with the new codes
    redone = outputs(tmp_path / "run/train", NAMES)
    # a missing output with the same input and settings is simply redone
    os.remove(tmp_path / "run/train.pos")
    main(args)
    assert outputs(tmp_path / "run/train", NAMES) == redone


def test_records_written_before_backends_named_their_inputs_still_match(tmp_path, spacy_model, codes):
    """Outputs and chunks of a spaCy run recorded ``"conllu": null`` (the CoNLL-U input is now the CoNLL-U
    backend's own): a rerun finds them up to date, a resumed run resumes."""
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    main(args)
    ref = outputs(tmp_path / "run/train", NAMES)
    record = tmp_path / "run/train.annotation.inputs.json"
    old = json.loads(record.read_text(encoding="utf-8"))
    assert "conllu" not in old["inputs"]
    old["inputs"]["conllu"] = None
    record.write_text(json.dumps(old, indent=1) + "\n", encoding="utf-8")
    stamp = os.stat(tmp_path / "run/train.en").st_mtime_ns
    main(args)  # up to date: nothing redone
    assert os.stat(tmp_path / "run/train.en").st_mtime_ns == stamp
    # a run killed after its first chunk, with the manifest of before
    with pytest.raises(Killed):
        main(args + ["-o", str(tmp_path / "kill/train")], on_chunk_done=lambda k: (_ for _ in ()).throw(Killed()))
    manifest = tmp_path / "kill/train.chunks/manifest.json"
    old = json.loads(manifest.read_text(encoding="utf-8"))
    assert "conllu" not in old
    manifest.write_text(json.dumps(dict(old, conllu=None), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    main(args + ["-o", str(tmp_path / "kill/train")])
    assert outputs(tmp_path / "kill/train", NAMES) == ref


def test_rerun_with_another_conllu_parse_is_refused(tmp_path):
    """The CoNLL-U backend's input is part of the identity of the outputs, by content like the source."""
    from syntax_nmt.syntax.conllu import write_conllu

    conllu = tmp_path / "in.conllu"
    with open(conllu, "w", encoding="utf-8") as f:
        write_conllu(SENTS, f)
    src = write(tmp_path / "in.en", ["The cat sat .", "", "Dogs run quickly"])
    args = ["--backend", "conllu", "--conllu", str(conllu), "--source", src, "--pretokenized", "--src-lang", "en",
            "-o", str(tmp_path / "out/train"), "--subword", "none", "--quiet"]
    main(args)
    moved = tmp_path / "moved.conllu"
    os.replace(conllu, moved)
    main([a if a != str(conllu) else str(moved) for a in args])  # the same parse at another path: up to date
    # another parse of the same lines (one label changed)
    moved.write_text(moved.read_text(encoding="utf-8").replace("\tnsubj\t", "\tobj\t", 1), encoding="utf-8")
    with pytest.raises(ValueError, match=r"exist but were made from another conllu file \(.*in\.conllu"):
        main([a if a != str(conllu) else str(moved) for a in args])


def test_failed_run_before_any_chunk_does_not_block_the_next(tmp_path, spacy_model, codes):
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    bad = [a if a != spacy_model else "xx_misspelled_model" for a in args]
    with pytest.raises(OSError, match="cannot load spaCy pipeline 'xx_misspelled_model'"):
        main(bad)
    assert (tmp_path / "run/train.chunks/manifest.json").exists()  # left behind, holding no parse
    main(args)  # the corrected run: not "holds chunks made with other settings"
    main(corpus_args(tmp_path, "ref/train", spacy_model, "--subword", "bpe", "--subword-model", codes))
    assert outputs(tmp_path / "run/train", NAMES) == outputs(tmp_path / "ref/train", NAMES)


def test_changed_parse_settings_after_a_parsed_chunk_are_refused(tmp_path, spacy_model, codes):
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    with pytest.raises(Killed):
        main(args, on_chunk_done=lambda k: (_ for _ in ()).throw(Killed()))
    with pytest.raises(ValueError, match=r"holds chunks made with other settings \(multi_root: 'forest' -> 'attach'\)"):
        main(args + ["--multi-root", "attach"])
    # an input edited in place (same size) between the kill and the resume: the content hash differs
    src = tmp_path / "c.en"
    text = src.read_text(encoding="utf-8")
    src.write_text(text.replace("mat 3", "rat 3"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"holds chunks made with other settings \(source: "):
        main(args)


#: Every option that changes how parsed chunks are rendered, with a changed value.
RENDER_OPTIONS = {
    "case": ["--case", "rich"],
    "pos-tagset": ["--pos-tagset", "xpos"],
    "subword-model": ["SUBWORD_MODEL2"],
    "subword scheme": ["--subword", "none"],
    "max-subwords": ["--max-subwords", "12"],
    "no conllu": ["NO_CONLLU"],
    "tgt-lang": ["--tgt-lang", "fr"],
}


@pytest.mark.parametrize("option", list(RENDER_OPTIONS))
def test_resume_with_a_changed_render_option_never_mixes(tmp_path, spacy_model, codes, option):
    """Kill after two chunks were parsed and rendered, resume with one render option changed:
    the outputs equal an uninterrupted run with the new option (no chunk keeps the old one)."""
    def args_for(prefix, changed):
        extra = ["--subword", "bpe", "--subword-model", codes]
        if changed:
            change = RENDER_OPTIONS[option]
            if change == ["SUBWORD_MODEL2"]:
                extra = ["--subword", "bpe", "--subword-model", _codes2(tmp_path)]
            elif change[:2] == ["--subword", "none"]:
                extra = ["--subword", "none"]
            elif change != ["NO_CONLLU"]:
                extra += change
        a = corpus_args(tmp_path, prefix, spacy_model, *extra)
        if changed and RENDER_OPTIONS[option] == ["NO_CONLLU"]:
            a.remove("--write-conllu")
        if changed and option == "tgt-lang":
            a[a.index("--tgt-lang") + 1] = "fr"
        return a

    with pytest.raises(Killed):
        main(args_for("run/train", False), on_chunk_done=lambda k: (_ for _ in ()).throw(Killed()) if k == 1 else None)
    done = []
    main(args_for("run/train", True), on_chunk_done=done.append)
    assert done == [2, 3, 4]  # the parses are reused
    main(args_for("ref/train", True))
    names = ["fr" if option == "tgt-lang" and n == "de" else n for n in NAMES]
    if option == "no conllu":
        names.remove("en.conllu")
    new, ref = outputs(tmp_path / "run/train", names), outputs(tmp_path / "ref/train", names)
    assert new == ref
    assert not (tmp_path / "run/train.chunks").exists()


def test_render_options_change_the_outputs(tmp_path, spacy_model, codes):
    """Each option of RENDER_OPTIONS really changes the outputs (else the resume test proves nothing)."""
    main(corpus_args(tmp_path, "base/train", spacy_model, "--subword", "bpe", "--subword-model", codes))
    base = {n: read(str(tmp_path / f"base/train.{n}")) for n in ("en", "de", "pos", "case")}
    main(corpus_args(tmp_path, "a/train", spacy_model, "--subword", "bpe", "--subword-model", codes, "--case", "rich"))
    assert read(str(tmp_path / "a/train.case")) != base["case"]
    main(corpus_args(tmp_path, "b/train", spacy_model, "--subword", "bpe", "--subword-model", codes,
                     "--pos-tagset", "xpos"))
    assert read(str(tmp_path / "b/train.pos")) != base["pos"]
    main(corpus_args(tmp_path, "c/train", spacy_model, "--subword", "bpe", "--subword-model", _codes2(tmp_path)))
    assert read(str(tmp_path / "c/train.en")) != base["en"]
    main(corpus_args(tmp_path, "d/train", spacy_model, "--subword", "bpe", "--subword-model", codes,
                     "--max-subwords", "12"))
    assert read(str(tmp_path / "d/train.en")) != base["en"] and "" in read(str(tmp_path / "d/train.de"))


# -- the finalization lock ------------------------------------------------------------------------------
def _parsed_store(tmp_path, spacy_model, codes, lock_text, age_s=0.0):
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    chunks = tmp_path / "run/train.chunks"
    chunks.mkdir(parents=True)
    lock = chunks / "finalize.lock"
    lock.write_text(lock_text)
    if age_s:
        t = time.time() - age_s
        os.utime(lock, (t, t))
    return args, chunks, lock


@pytest.mark.parametrize("content", ["", "garbage", "host-only"])
def test_empty_or_corrupt_old_lock_is_taken_over(tmp_path, spacy_model, codes, caplog, content):
    """A crash between creating and writing the lock leaves it empty: once older than the grace
    period it is reported and taken over, instead of every later run exiting 0 with no outputs."""
    args, chunks, lock = _parsed_store(tmp_path, spacy_model, codes, content, age_s=LOCK_GRACE_S + 5)
    main(args)
    assert len(read(str(tmp_path / "run/train.en"))) == 23 and not chunks.exists()
    assert "removing the stale lock" in caplog.text and "empty or unreadable" in caplog.text


def test_fresh_empty_lock_or_live_owner_is_reported(tmp_path, spacy_model, codes, caplog):
    args, chunks, lock = _parsed_store(tmp_path, spacy_model, codes, "")  # being written right now
    main(args)
    assert not (tmp_path / "run/train.en").exists()
    assert "a run that is taking the lock right now" in caplog.text
    with pytest.raises(ValueError, match=r"another run \(a run that is taking the lock right now.*\) is finalizing "
                                         r".*; if that run is dead, delete .*finalize\.lock and rerun"):
        main(args + ["--merge-only"])
    # a live process on this host (pid 1) / a process on another host: reported with its age, not taken over
    lock.write_text(f"{socket.gethostname()} 1 {time.time() - 7230:.0f}")
    with pytest.raises(ValueError, match=r"another run \(pid 1 on this host, lock taken 2 h 0 min ago\)"):
        main(args + ["--merge-only"])
    lock.write_text("elsewhere.example 4242 0")
    caplog.clear()
    main(args)
    assert any(r.levelname == "WARNING" and "pid 4242 on host elsewhere.example" in r.getMessage()
               for r in caplog.records)
    assert not (tmp_path / "run/train.en").exists()
    # a dead process on this host: stale, reported and taken over
    lock.write_text(f"{socket.gethostname()} 999999999 {time.time():.0f}")
    main(args + ["--merge-only"])
    assert len(read(str(tmp_path / "run/train.en"))) == 23
    assert "its process 999999999 on this host is dead" in caplog.text


def test_rerun_with_the_same_inputs_at_other_paths_does_nothing(tmp_path, spacy_model, codes):
    """Identity is by content hash (README), but a byte-identical source, or the same BPE codes,
    at another path were refused on rerun; so was resuming a killed run from them."""
    args = corpus_args(tmp_path, "run/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    main(args)
    ref = outputs(tmp_path / "run/train", NAMES)
    stamps = {n: os.stat(f"{tmp_path}/run/train.{n}").st_mtime_ns for n in NAMES}
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("c.en", "c.de", "bpe.codes"):
        (moved / name).write_bytes((tmp_path / name).read_bytes())
    other = [str(moved / os.path.basename(a)) if a in (str(tmp_path / "c.en"), str(tmp_path / "c.de"), codes) else a
             for a in args]
    assert other != args
    main(other)  # nothing to do
    assert outputs(tmp_path / "run/train", NAMES) == ref
    assert {n: os.stat(f"{tmp_path}/run/train.{n}").st_mtime_ns for n in NAMES} == stamps
    # killed after a chunk, resumed from the moved copies: the same outputs
    kill = corpus_args(tmp_path, "kill/train", spacy_model, "--subword", "bpe", "--subword-model", codes)
    with pytest.raises(Killed):
        main(kill, on_chunk_done=lambda k: (_ for _ in ()).throw(Killed()))
    main([a.replace("/run/", "/kill/") for a in other])
    assert outputs(tmp_path / "kill/train", NAMES) == ref


@pytest.mark.parametrize("spelling", ["plain", "dot", "absolute", "symlink", "hardlink"])
def test_an_output_prefix_that_names_an_input_is_refused_and_the_input_kept(tmp_path, monkeypatch, spelling):
    """Issue 34: ``-o d/train --overwrite`` with ``--source d/train.en --target d/train.de`` deleted both inputs.
    Refused, however the prefix is spelled, before anything is written or removed."""
    from syntax_nmt.syntax.conllu import write_conllu

    monkeypatch.chdir(tmp_path)
    os.makedirs("d")
    with open("d/in.conllu", "w", encoding="utf-8") as f:
        write_conllu(SENTS, f)
    src = write(tmp_path / "d" / "train.en", ["The cat sat .", "", "Dogs run quickly"])
    tgt = write(tmp_path / "d" / "train.de", ["Die Katze sass .", "", "Hunde rennen schnell"])
    prefix = {"plain": "d/train", "dot": "./d/../d/train", "absolute": str(tmp_path / "d" / "train"),
              "symlink": "e/train", "hardlink": "h/train"}[spelling]
    if spelling == "symlink":
        os.symlink(tmp_path / "d", tmp_path / "e")
    if spelling == "hardlink":
        os.makedirs("h")
        os.link(tgt, "h/train.de")
    before = {p: open(p, "rb").read() for p in (src, tgt)}
    args = ["--backend", "conllu", "--conllu", "d/in.conllu", "--source", "d/train.en", "--target", "d/train.de",
            "--pretokenized", "--src-lang", "en", "--tgt-lang", "de", "-o", prefix, "--subword", "none", "--quiet",
            "--overwrite"]
    with pytest.raises(ValueError, match=r"^--output-prefix \S+ writes \S+train\.(en|de), which is the input "
                                         r"d/train\.(en|de)$"):  # the one guard of every command (io_guard)
        main(args)
    assert {p: open(p, "rb").read() for p in (src, tgt)} == before
    assert sorted(os.listdir("d")) == ["in.conllu", "train.de", "train.en"]
