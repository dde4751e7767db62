"""``syntax-nmt-target-tags`` on hand-written files (issue 46): an output that is one of the inputs, under any
spelling or link, is refused; invalid UTF-8 names the file and line; a failed run leaves nothing behind; a
tag-shaped word is refused whole, also when BPE splits it."""

import os

import pytest

from syntax_nmt.annotate.target_tags import cli_main, interleave, separate_tags, strip, strip_generate_line
from support.files import snapshot

TARGET = ["la fem@@ me", "un chat"]
FILES = {"fr": TARGET, "tgt.fr": TARGET, "tgt.pos": ["DET NOUN NOUN", "DET NOUN"],
         "tgt.subword": ["O B E", "O O"]}


@pytest.fixture
def prefix(tmp_path):
    for ext, lines in FILES.items():
        (tmp_path / f"P.{ext}").write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    return tmp_path / "P"


def run(capsys, argv):
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli_main([str(a) for a in argv])
    err = [line for line in capsys.readouterr().err.splitlines() if " | INFO | " not in line]
    return e.value.code, err


def test_interleave_writes_the_tags(prefix, tmp_path, capsys):
    cli_main(["interleave", "--prefix", str(prefix), "--tgt-lang", "fr", "-o", str(tmp_path / "out.fr")])
    assert (tmp_path / "out.fr").read_text(encoding="utf-8").splitlines() == [
        "\u27e8DET\u27e9 la \u27e8NOUN\u27e9 fem@@ me", "\u27e8DET\u27e9 un \u27e8NOUN\u27e9 chat"]
    assert sorted(os.listdir(tmp_path)) == sorted([f"P.{e}" for e in FILES] + ["out.fr"])


@pytest.mark.parametrize("spelling", ["subword", "dotdot", "symlink", "hardlink", "tag", "text", "annotated"])
def test_an_output_that_is_an_input_is_refused(prefix, tmp_path, capsys, spelling):
    """The subword stream (B/M/E/O) was not guarded: ``-o P.tgt.subword`` overwrote it."""
    (tmp_path / "sub").mkdir()
    out = {"subword": f"{prefix}.tgt.subword", "dotdot": tmp_path / "sub" / ".." / "P.tgt.subword",
           "tag": f"{prefix}.tgt.pos", "text": f"{prefix}.fr", "annotated": f"{prefix}.tgt.fr",
           "symlink": tmp_path / "link", "hardlink": tmp_path / "hard"}[spelling]
    if spelling == "symlink":
        os.symlink(f"{prefix}.tgt.subword", out)
    elif spelling == "hardlink":
        os.link(f"{prefix}.tgt.subword", out)
    before = snapshot(tmp_path)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", out])
    assert code == 2 and len(err) == 1, err
    same = {"tag": "tgt.pos", "text": "fr", "annotated": "tgt.fr"}.get(spelling, "tgt.subword")
    assert err[0] == f"syntax-nmt-target-tags: error: --output {out} is the input {prefix}.{same}", err
    assert snapshot(tmp_path) == before


def test_invalid_utf8_names_the_file_and_line(prefix, tmp_path, capsys):
    with open(f"{prefix}.tgt.pos", "wb") as f:
        f.write(b"DET NOUN NOUN\nDET NO\xe9UN\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", tmp_path / "out.fr"])
    assert (code, len(err)) == (2, 1), err
    assert err[0].startswith(f"syntax-nmt-target-tags: error: {prefix}.tgt.pos:2: invalid UTF-8"), err
    assert snapshot(tmp_path) == before  # no out.fr, no out.fr.tmp
    bad = tmp_path / "gen.txt"
    bad.write_bytes(b"H-0\t-1\t\xe2\x9f\xa8DET\xe2\x9f\xa9 la\nH-1\t-1\tun \xff chat\n")
    code, err = run(capsys, ["strip", bad])
    assert (code, len(err)) == (2, 1), err
    assert err[0].startswith(f"syntax-nmt-target-tags: error: {bad}:2: invalid UTF-8"), err


def test_a_failed_interleave_leaves_no_temporary_file(prefix, tmp_path, capsys):
    (tmp_path / "P.tgt.fr").write_text("la fem@@ me\nun chien\n", encoding="utf-8")  # line 2 differs
    before = snapshot(tmp_path)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", tmp_path / "out.fr"])
    assert (code, len(err)) == (2, 1) and f"{prefix}.tgt.fr:2" in err[0], err
    assert snapshot(tmp_path) == before


def test_a_tag_shaped_word_split_by_bpe_is_refused(prefix, tmp_path, capsys):
    """``⟨a@@ b⟩`` passed the check, which ran per piece, and ``strip`` then deleted the word ``⟨ab⟩``."""
    line = "la \u27e8a@@ b\u27e9"
    for ext in ("fr", "tgt.fr"):
        (tmp_path / f"P.{ext}").write_text(f"{TARGET[0]}\n{line}\n", encoding="utf-8")
    (tmp_path / "P.tgt.pos").write_text("DET NOUN NOUN\nDET X X\n", encoding="utf-8")
    (tmp_path / "P.tgt.subword").write_text("O B E\nO B E\n", encoding="utf-8")
    before = snapshot(tmp_path)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", tmp_path / "out.fr"])
    assert (code, len(err)) == (2, 1), err
    assert err[0] == (f"syntax-nmt-target-tags: error: {prefix}.fr:2: the target word '\u27e8ab\u27e9' (pieces "
                      f"'\u27e8a@@ b\u27e9') has the form of a tag (\u27e8...\u27e9)"), err
    assert snapshot(tmp_path) == before
    with pytest.raises(ValueError, match="has the form of a tag"):
        interleave(["\u2581\u27e8a", "b\u27e9"], ["X", "X"], ["B", "E"])  # sentencepiece pieces
    assert strip("\u27e8ab\u27e9") == ""  # what the word would have become


def test_the_subword_scheme_of_a_dictionary():
    """What the F- lines group pieces by when the data has no annotation.json (issue 46)."""
    from syntax_nmt.annotate.subwords import scheme_of_pieces

    assert scheme_of_pieces(["la", "fem@@", "me"]) == "bpe"
    assert scheme_of_pieces(["\u2581la", "\u2581fem", "me"]) == "spm"
    assert scheme_of_pieces(["la", "femme", "@@"]) == "none"  # "@@" alone is a word
    with pytest.raises(ValueError, match="holds BPE pieces \\('fem@@'\\) and sentencepiece pieces"):
        scheme_of_pieces(["fem@@", "\u2581la"])


def test_interleave_tags_every_word_and_strip_removes_tags_glued_to_a_word():
    """One tag before every word's first piece, single-piece words (``O``) included; ``strip`` removes tags that
    subword removal glued to a word (``la⟨NOUN⟩ femme`` after sentencepiece, ``fem⟨NOUN⟩ me`` after BPE), in
    fairseq-generate's H-/D- lines and plain lines, and leaves the other lines alone."""
    o, c = "\u27e8", "\u27e9"
    tokens = ["la", "fem@@", "me", "dort", "pro@@", "fon@@", "dément", "."]
    tags = ["DET", "NOUN", "NOUN", "VERB", "ADV", "ADV", "ADV", "PUNCT"]
    positions = ["O", "B", "E", "O", "B", "M", "E", "O"]
    assert interleave(tokens, tags, positions) == [
        f"{o}DET{c}", "la", f"{o}NOUN{c}", "fem@@", "me", f"{o}VERB{c}", "dort", f"{o}ADV{c}", "pro@@", "fon@@",
        "dément", f"{o}PUNCT{c}", "."]
    assert interleave(["chat"], ["NOUN"], ["O"]) == [f"{o}NOUN{c}", "chat"]
    assert strip(f"{o}DET{c} la {o}NOUN{c} femme") == "la femme"
    assert strip(f"la{o}NOUN{c} femme {o}VERB{c}dort") == "la femme dort"
    assert strip(f"{o}DET{c} la fem{o}NOUN{c} me") == "la fem me"
    assert strip(f"la fem{o}NOUN{c}me") == "la fem me"  # sentencepiece: a tag inside a word splits it, as with BPE
    assert strip(f"a {o} b {c} c") == f"a {o} b {c} c"  # not a tag: brackets around spaces
    assert separate_tags(f"la{o}NOUN{c} femme") == f"la {o}NOUN{c} femme"
    assert strip_generate_line(f"H-3\t-0.25\t{o}DET{c} la{o}NOUN{c} femme") == "H-3\t-0.25\tla femme"
    assert strip_generate_line(f"D-3\t-0.25\tfem{o}NOUN{c} me") == "D-3\t-0.25\tfem me"
    assert strip_generate_line(f"T-3\t{o}DET{c} la") == f"T-3\t{o}DET{c} la"
    assert strip_generate_line(f"{o}DET{c} la{o}NOUN{c} femme") == "la femme"


def test_strip_generate_line_keeps_every_other_line_of_fairseq_generate():
    """Only H- and D- lines (three tab-separated fields: id, score, text) lose their tags; fairseq-generate's other
    lines (S/T/P/F/W/A/I, the closing ``Generate ...`` score line) are kept byte for byte, tag-shaped tokens and tabs
    included; a text field holding a tab keeps it (the split is on the first two tabs)."""
    from syntax_nmt.annotate.target_tags import CLOSE, OPEN

    o, c = OPEN, CLOSE
    tagged = f"{o}DET{c} la\t{o}NOUN{c} femme"
    for kind in ("S", "T", "P", "F", "W", "A", "I"):
        line = f"{kind}-3\t{tagged}"
        assert strip_generate_line(line) == line
    score_line = f"Generate test with beam=5: BLEU4 = 1.00, {o}X{c}\t(BP=1.000)"
    assert strip_generate_line(score_line) == score_line
    assert strip_generate_line(f"H-3\t-0.25\t{o}DET{c} la\t{o}NOUN{c} femme") == "H-3\t-0.25\tla femme"
    assert strip_generate_line(f"H-3 -0.25 {o}DET{c} la") == "H-3 -0.25 la"  # not generate's: a plain line
    assert strip_generate_line(f"x\ty\t{o}DET{c} la") == "x y la"  # a plain line with tabs: stripped whole


# --- the survivors of make mutate on target_tags.py (issue 48): each test below was seen red against its mutants --


def test_is_tag_find_tag_and_joined_pieces():
    from syntax_nmt.annotate.target_tags import _joined, find_tag, is_tag

    o, c = "\u27e8", "\u27e9"
    assert is_tag(f"{o}NOUN{c}") and is_tag(f"{o}{c}")
    assert not is_tag("la") and not is_tag(f"la{o}NOUN{c}") and not is_tag(f"{o}NO UN{c}")
    assert find_tag(f"la fem{o}NOUN{c}me {o}VERB{c}") == f"{o}NOUN{c}" and find_tag("la femme") is None
    assert _joined(["fem@@", "me"]) == "femme" and _joined(["\u2581la"]) == "la"
    assert _joined(["\u2581\u2581a\u2581", " b"]) == "a\u2581 b"  # only the leading markers go, spaces stay
    assert _joined(["ab@@", "cd@@", "e"]) == "abcde"


def test_the_refusals_say_what_they_refuse():
    o, c = "\u27e8", "\u27e9"
    with pytest.raises(ValueError) as e:
        interleave(["la", f"{o}x{c}"], ["DET", "X"], ["O", "O"])
    assert str(e.value) == f"the target token '{o}x{c}' has the form of a tag ({o}...{c})"
    with pytest.raises(ValueError) as e:
        interleave(["la", "femme"], ["DET"], ["O", "O", "O"])
    assert str(e.value) == "2 tokens, 1 tags, 3 subword positions"


@pytest.mark.parametrize("stream, lines, message", [
    ("tgt.pos", ["DET NOUN NOUN"], "{p}.tgt.pos has 1 lines, {p}.fr has more"),
    ("tgt.subword", [], "{p}.tgt.subword has 0 lines, {p}.fr has more"),
    ("tgt.fr", TARGET + ["un chien"], "{p}.tgt.fr has more lines than {p}.fr (2)"),
])
def test_a_stream_of_another_length_is_named_with_its_count(prefix, tmp_path, capsys, stream, lines, message):
    (tmp_path / f"P.{stream}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", tmp_path / "out.fr"])
    assert (code, err) == (2, [f"syntax-nmt-target-tags: error: {message.format(p=prefix)}"])


def test_an_empty_target_with_longer_streams_is_named(prefix, tmp_path):
    from syntax_nmt.annotate.target_tags import interleave_files

    (tmp_path / "P.fr").write_text("", encoding="utf-8")
    with pytest.raises(ValueError) as e:
        interleave_files(str(prefix), "fr", "pos", None)
    assert str(e.value) == f"{prefix}.tgt.fr has more lines than {prefix}.fr (0)"


def test_missing_dirs_topmost_first(tmp_path):
    from syntax_nmt.annotate.target_tags import _missing_dirs

    assert _missing_dirs(str(tmp_path / "out.fr")) == []
    assert _missing_dirs(str(tmp_path / "a" / "b" / "c" / "out.fr")) == [
        str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(tmp_path / "a" / "b" / "c")]
    assert _missing_dirs("/") == []


def test_interleave_into_new_folders_and_a_failure_removes_them(prefix, tmp_path, capsys):
    out = tmp_path / "a" / "b" / "c" / "out.fr"
    cli_main(["interleave", "--prefix", str(prefix), "--tgt-lang", "fr", "-o", str(out)])
    assert out.read_text(encoding="utf-8").count("\n") == 2 and sorted(os.listdir(out.parent)) == ["out.fr"]
    (tmp_path / "P.tgt.pos").write_text("DET NOUN NOUN\n", encoding="utf-8")  # one line short
    before = snapshot(tmp_path)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", tmp_path / "x" / "y" / "z"])
    assert code == 2 and snapshot(tmp_path) == before and not (tmp_path / "x").exists()


def test_interleave_writes_a_temporary_file_beside_the_output_then_renames_it(prefix, tmp_path, monkeypatch):
    """While it writes, the only new file is ``OUTPUT.<random>.tmp`` in the output's own folder (a rename within
    one file system is atomic); then the output alone, with the umask's permissions."""
    from syntax_nmt.annotate import target_tags

    seen, write = [], target_tags.interleave_files

    def watched(*args):
        seen.append(sorted(set(os.listdir(tmp_path / "d")) - {"old"}))
        return write(*args)

    monkeypatch.setattr(target_tags, "interleave_files", watched)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old").write_text("")
    old_mask = os.umask(0o002)
    try:
        cli_main(["interleave", "--prefix", str(prefix), "--tgt-lang", "fr", "-o", str(tmp_path / "d" / "out.fr")])
    finally:
        os.umask(old_mask)
    (name,) = seen[0]
    assert name.startswith("out.fr.") and name.endswith(".tmp") and len(name) > len("out.fr..tmp")
    assert sorted(os.listdir(tmp_path / "d")) == ["old", "out.fr"]
    assert os.stat(tmp_path / "d" / "out.fr").st_mode & 0o777 == 0o664


def test_the_log_line_and_utf8_output_under_a_c_locale(prefix, tmp_path, capsys):
    import subprocess
    import sys

    (tmp_path / "P.fr").write_text("la fem@@ me\nun chat dément\n", encoding="utf-8")
    (tmp_path / "P.tgt.fr").write_text("la fem@@ me\nun chat dément\n", encoding="utf-8")
    (tmp_path / "P.tgt.pos").write_text("DET NOUN NOUN\nDET NOUN ADJ\n", encoding="utf-8")
    (tmp_path / "P.tgt.subword").write_text("O B E\nO O O\n", encoding="utf-8")
    # here (mutation testing runs a test against the mutants of the functions it calls in its own process), with
    # its log line, then under an ASCII locale: the same bytes
    here = tmp_path / "here.fr"
    capsys.readouterr()
    cli_main(["interleave", "--prefix", str(prefix), "--tgt-lang", "fr", "-o", str(here)])
    assert capsys.readouterr().err.rstrip("\n").endswith(
        f" | INFO | syntax_nmt.target_tags | 2 lines with pos tags -> {here}")
    out = tmp_path / "out.fr"
    from support import ascii_locale_env

    env = ascii_locale_env()
    code = ("import locale, sys; from syntax_nmt.annotate.target_tags import cli_main; "
            "print(locale.getpreferredencoding(False)); cli_main(sys.argv[1:])")
    proc = subprocess.run([sys.executable, "-c", code, "interleave", "--prefix", str(prefix), "--tgt-lang", "fr",
                           "-o", str(out)], env=env, capture_output=True, text=True, encoding="utf-8")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "utf" not in proc.stdout.lower()  # the locale was not UTF-8
    assert out.read_text(encoding="utf-8").splitlines()[1] == "\u27e8DET\u27e9 un \u27e8NOUN\u27e9 chat \u27e8ADJ\u27e9 dément"
    assert proc.stderr.rstrip("\n").endswith(f" | INFO | syntax_nmt.target_tags | 2 lines with pos tags -> {out}")
    assert out.read_bytes() == here.read_bytes()


def test_strip_reads_standard_input_or_a_file(tmp_path, capsys, monkeypatch):
    import io
    import sys

    o, c = "\u27e8", "\u27e9"
    text = f"H-0\t-0.5\t{o}DET{c} la\nS-0\t{o}X{c} y\nla{o}NOUN{c} femme\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))
    capsys.readouterr()
    cli_main(["strip"])
    expected = f"H-0\t-0.5\tla\nS-0\t{o}X{c} y\nla femme\n"
    assert capsys.readouterr().out == expected
    (tmp_path / "gen.txt").write_text(text, encoding="utf-8")
    cli_main(["strip", str(tmp_path / "gen.txt")])
    assert capsys.readouterr().out == expected
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok\nH-1\t-1\tun \xff chat\n")))
    code, err = run(capsys, ["strip"])
    assert (code, len(err)) == (2, 1) and err[0].startswith("syntax-nmt-target-tags: error: <stdin>:2: invalid UTF-8")


def test_the_command_line_needs_a_subcommand_and_help_keeps_the_examples(capsys):
    from syntax_nmt.annotate.target_tags import get_parser

    code, err = run(capsys, [])
    assert (code, err[-1]) == (2, "syntax-nmt-target-tags: error: the following arguments are required: command")
    help_text = get_parser().format_help()
    assert help_text.startswith("usage: syntax-nmt-target-tags [-h] {interleave,strip} ...")
    assert ("\nexamples:\n  syntax-nmt-annotate --source prep/train.fr --src-lang fr --pretokenized --spacy-model "
            "fr_core_news_sm \\\n      --subword bpe") in help_text  # the examples as written (docs/cli.md: their text)


def test_a_failure_keeps_a_made_folder_that_something_else_wrote_into(prefix, tmp_path, capsys, monkeypatch):
    """The folders made for a failed output are removed only while empty (os.rmdir, deepest first): a file another
    process wrote into one of them meanwhile is kept, with the folders above it."""
    from syntax_nmt.annotate import target_tags
    from syntax_nmt.annotate.textio import InputError

    def fails(prefix_, lang, tag, out):
        (tmp_path / "x" / "y" / "theirs.txt").write_text("kept")
        raise InputError("broken")

    monkeypatch.setattr(target_tags, "interleave_files", fails)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", tmp_path / "x" / "y" / "z" / "o"])
    assert (code, err) == (2, ["syntax-nmt-target-tags: error: broken"])
    assert sorted(os.listdir(tmp_path / "x")) == ["y"] and sorted(os.listdir(tmp_path / "x" / "y")) == ["theirs.txt"]


@pytest.mark.parametrize("under", [("P.fr", "out.fr"), ("P.fr", "a", "out.fr"), ("link", "out.fr")])
def test_an_output_under_a_regular_file_is_named(prefix, tmp_path, capsys, under):
    """Issue 56.7: ``-o P.fr/out.fr`` said "[Errno 17] File exists: '.../P.fr'", naming neither option nor cause."""
    os.symlink(tmp_path / "P.fr", tmp_path / "link")
    before = snapshot(tmp_path)
    out = tmp_path.joinpath(*under)
    code, err = run(capsys, ["interleave", "--prefix", prefix, "--tgt-lang", "fr", "-o", out])
    assert (code, err) == (2, [f"syntax-nmt-target-tags: error: --output {out}: {tmp_path / under[0]} is a file, "
                               f"not a folder"])
    assert snapshot(tmp_path) == before
