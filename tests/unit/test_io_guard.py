"""The one guard of every command (syntax_nmt/io_guard.py, issue 56.2): an output is never an input, under any
spelling; the three commands that lost data, on their exact command lines."""

import argparse
import gzip
import json
import os
import runpy
import sys

import pytest

from syntax_nmt import io_guard
from support.files import snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path, data="The cat sat .\n"):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def one_error(capsys, code):
    err = [line for line in capsys.readouterr().err.splitlines() if " | INFO | " not in line
           and " | WARNING | " not in line]
    assert code == 2 and len(err) == 1, err
    return err[0]


# -- the guard itself -----------------------------------------------------------------------------------------------
def parser():
    p = argparse.ArgumentParser(prog="cmd")
    io_guard.reads(p.add_argument("--in", dest="inp", nargs="+"))
    io_guard.reads(p.add_argument("--data"), "dir")
    io_guard.reads(p.add_argument("--pref"), "prefix")
    io_guard.writes(p.add_argument("--out"))
    io_guard.writes(p.add_argument("--out-prefix"), "prefix", paths=lambda v, _: [v + ".json", v + ".md"])
    io_guard.writes(p.add_argument("--out-dir"), "dir")
    io_guard.writes(p.add_argument("--all-prefix"), "prefix")
    return p


def check(argv):
    p = parser()
    io_guard.check(p, p.parse_args(argv))


@pytest.mark.parametrize("spelling", ["same", "dotdot", "dot", "absolute", "symlink", "symlinked-folder", "hardlink"])
def test_an_output_file_is_refused_under_every_spelling(tmp_path, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    src = write(tmp_path / "d" / "in.txt")
    write(tmp_path / "x.txt")
    os.makedirs("e")
    out = {"same": "d/in.txt", "dotdot": "e/../d/in.txt", "dot": "./d/./in.txt", "absolute": src,
           "symlink": "e/link", "symlinked-folder": "f/in.txt", "hardlink": "e/hard"}[spelling]
    if spelling == "symlink":
        os.symlink(src, "e/link")
    elif spelling == "symlinked-folder":
        os.symlink(tmp_path / "d", "f")
    elif spelling == "hardlink":
        os.link(src, "e/hard")
    with pytest.raises(io_guard.GuardError) as e:
        check(["--in", "x.txt", "d/in.txt", "--out", out])
    assert str(e.value) == f"--out {out} is the input d/in.txt"
    check(["--in", "d/in.txt", "--out", "e/other.txt"])  # another file: no refusal


def test_prefixes_and_folders_write_what_they_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write("a/run.json")
    write("a/run.jsonl")
    write("a/data/f.bin")
    with pytest.raises(io_guard.GuardError, match=r"^--out-prefix a/run writes a/run.json, which is the input "
                                                  r"a/run.json$"):
        check(["--in", "a/run.json", "--out-prefix", "a/run"])
    check(["--in", "a/run.jsonl", "--out-prefix", "a/run"])  # not among the files it writes
    with pytest.raises(io_guard.GuardError, match=r"^--all-prefix a/ru would write the input a/run.jsonl"):
        check(["--in", "a/run.jsonl", "--all-prefix", "a/ru"])
    with pytest.raises(io_guard.GuardError, match=r"^--out-dir a would write the input a/data/f.bin"):
        check(["--in", "a/data/f.bin", "--out-dir", "a"])
    with pytest.raises(io_guard.GuardError, match=r"^--out-dir a would write the input a/data/f.bin"):
        check(["--data", "a/data", "--out-dir", "a"])  # a folder read: every file under it
    with pytest.raises(io_guard.GuardError, match=r"^--out a/data/f.bin is the input a/data/f.bin"):
        check(["--data", "a/data", "--out", "a/data/f.bin"])
    with pytest.raises(io_guard.GuardError, match=r"^--out a/run.jsonl is the input a/run.jsonl"):
        check(["--pref", "a/run", "--out", "a/run.jsonl"])  # a prefix read: every file starting with it
    os.link("a/data/f.bin", "hard.bin")
    with pytest.raises(io_guard.GuardError, match=r"^--out-dir a would write a/data/f.bin, which is the input "
                                                  r"hard.bin"):
        check(["--in", "hard.bin", "--out-dir", "a"])
    check(["--in", "a/run.json", "--out-dir", "b", "--out", "c.txt", "--all-prefix", "a/x"])


def test_missing_inputs_and_wrong_kinds_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write("a/f.txt")
    for argv, message in [(["--in", "none.txt"], "--in: no such file none.txt"),
                          (["--in", "a"], "--in a is a folder, not a file"),
                          (["--data", "none"], "--data: no such folder none"),
                          (["--data", "a/f.txt"], "--data a/f.txt is a file, not a folder"),
                          (["--pref", "a/g"], "--pref: no file a/g*")]:
        with pytest.raises(io_guard.GuardError) as e:
            check(argv)
        assert str(e.value) == message


def test_gzip_read_is_checked_whole(tmp_path):
    p = argparse.ArgumentParser(prog="cmd")
    io_guard.reads(p.add_argument("--kept"), "dir", gz=True)
    write(tmp_path / "k" / "a.gz", gzip.compress(b"line\n" * 1000))
    io_guard.check(p, p.parse_args(["--kept", str(tmp_path / "k")]))
    write(tmp_path / "k" / "b.gz", gzip.compress(b"line\n" * 1000)[:40])  # cut short
    with pytest.raises(io_guard.GuardError, match=r"--kept .*b.gz: not a whole gzip file"):
        io_guard.check(p, p.parse_args(["--kept", str(tmp_path / "k")]))


def test_the_guard_is_one_line_exit_2(tmp_path, capsys):
    src = write(tmp_path / "in.txt")
    p = parser()
    with pytest.raises(SystemExit) as e:
        io_guard.parse_args(p, ["--in", src, "--out", src])
    assert one_error(capsys, e.value.code) == f"cmd: error: --out {src} is the input {src}"


def test_a_subcommand_needs_a_dest():
    p = argparse.ArgumentParser(prog="cmd")
    sub = p.add_subparsers()
    io_guard.reads(sub.add_parser("a").add_argument("--x"))
    with pytest.raises(ValueError, match="a subcommand parser needs a dest"):
        io_guard.check(p, p.parse_args(["a", "--x", "y"]))


# -- the three data losses of the issue, on their exact command lines -------------------------------------------------
@pytest.mark.parametrize("which", ["--gen", "--conllu"])
def test_evaluate_parse_output_is_its_gen_or_conllu(tmp_path, capsys, which):
    """``syntax-nmt-evaluate parse --output`` named its --gen or --conllu: the JSON replaced it, exit 0."""
    from syntax_nmt.evaluation.evaluate import cli_main

    gen = write(tmp_path / "gen.out", "S-0\tA cat runs .\nG-0\t2 3 0 3\n")
    gold = write(tmp_path / "gold.conllu", "1\tA\t_\tDET\t_\t_\t2\tdet\t_\t_\n2\tcat\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_\n"
                 "3\truns\t_\tVERB\t_\t_\t0\troot\t_\t_\n4\t.\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_\n\n")
    before = snapshot(tmp_path)
    out = {"--gen": gen, "--conllu": gold}[which]
    with pytest.raises(SystemExit) as e:
        cli_main(["parse", "--gen", gen, "--conllu", gold, "--output", out])
    assert one_error(capsys, e.value.code) == f"syntax-nmt-evaluate: error: --output {out} is the input {out}"
    assert snapshot(tmp_path) == before


def test_budget_curve_out_is_a_kept_training_record(tmp_path, capsys):
    """``python -m syntax_nmt.recipes.budget_curve --out`` named a kept training record it reads
    (KEPT/training/SYSTEM.seedN.json): its OUT.json replaced the record."""
    from syntax_nmt.recipes import budget_curve

    kept, refs = tmp_path / "kept", tmp_path / "prep"
    lines = ["Die Katze sitzt .", "Ein Hund läuft ."]
    for name in ("valid.raw.de", "valid.de"):
        write(refs / name, "".join(x + "\n" for x in lines))
    for system in ("transformer", "lisa"):
        for form in ("tok", "detok"):
            write(kept / "valid" / f"{system}.seed1.{form}.gz", gzip.compress("".join(x + "\n" for x in lines)
                                                                               .encode("utf-8"), mtime=0))
        write(kept / "training" / f"{system}.seed1.json", json.dumps({"wall_seconds": 1.0, "updates": 10}))
    before = snapshot(tmp_path)
    record = str(kept / "training" / "transformer.seed1")
    with pytest.raises(SystemExit) as e:
        budget_curve.main(["--translations", str(kept), "--refs", str(refs), "--eval", str(tmp_path / "eval"),
                           "--out", record, "--point", "1x:1600:2048:transformer:lisa:1", "--splits", "valid",
                           "--tests", "bs"])
    assert one_error(capsys, e.value.code) == (f"{budget_curve.PROG}: error: --out {record} writes {record}.json, "
                                               f"which is the input {record}.json")
    assert snapshot(tmp_path) == before


def test_average_checkpoints_output_is_one_of_its_inputs(tmp_path, capsys, monkeypatch):
    """``scripts/average_checkpoints.py --inputs avgt --num-update-checkpoints 2 --output avgt/./checkpoint_9_80.pt``
    overwrote that checkpoint."""
    import torch

    monkeypatch.chdir(tmp_path)
    os.makedirs("avgt")
    for update, value in ((60, 1.0), (80, 3.0)):
        torch.save({"model": {"w": torch.full((2,), value)}, "cfg": None}, f"avgt/checkpoint_9_{update}.pt")
    before = snapshot(tmp_path)
    monkeypatch.setattr(sys, "argv", ["average_checkpoints.py", "--inputs", "avgt", "--num-update-checkpoints", "2",
                                      "--output", "avgt/./checkpoint_9_80.pt"])
    with pytest.raises(SystemExit) as e:
        runpy.run_path(os.path.join(ROOT, "scripts", "average_checkpoints.py"), run_name="__main__")
    assert one_error(capsys, e.value.code) == ("average_checkpoints.py: error: --output avgt/./checkpoint_9_80.pt is "
                                               "the input avgt/checkpoint_9_80.pt")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("replaces", [False, True])
def test_an_output_replaced_by_a_rename_may_hold_hard_links_of_the_inputs(tmp_path, replaces):
    """``syntax-nmt-analyze corrupt --out`` links the unchanged files of --data into its copy and replaces its files by
    a rename: a second run (``--overwrite``) writes no input through those links. ``replaces=True`` skips the hard
    links; the folder itself, or a symbolic link into the input, is still refused."""
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    (data / "dict.txt").write_text("a 1\n")
    os.link(data / "dict.txt", out / "dict.txt")
    p = argparse.ArgumentParser()
    io_guard.reads(p.add_argument("--data"), "dir")
    io_guard.writes(p.add_argument("--out"), "dir", replaces=replaces)
    args = p.parse_args(["--data", str(data), "--out", str(out)])
    if replaces:
        io_guard.check(p, args)
    else:
        with pytest.raises(io_guard.GuardError, match="would write .*out/dict.txt, which is the input .*data/dict.txt"):
            io_guard.check(p, args)
    (tmp_path / "alias").symlink_to(data)
    with pytest.raises(io_guard.GuardError, match=r"would write the input .*data/dict.txt \(a file under it\)"):
        io_guard.check(p, p.parse_args(["--data", str(data), "--out", str(tmp_path / "alias")]))
