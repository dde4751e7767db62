"""``syntax-nmt-analyze corrupt`` never destroys data.

A destination that is the data directory (also through a link or ``..``), lies inside it,
holds it, or backs it is refused, with or without ``--overwrite``; an existing one is refused
without ``--overwrite``; the copy is built next to ``--out`` and renamed when complete, so a
failed or interrupted run leaves ``--out`` as it was; ``noise-STREAM.json`` describes what is
on disk. Every refusal is one ``syntax-nmt-analyze: error: ...`` line with exit status 2.
"""

import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from syntax_nmt.analyze import cli
from syntax_nmt.analyze import data as D

PROG = "syntax-nmt-analyze: error: "


def snapshot(path):
    """``{name: ("link", target) | ("file", sha256)}`` of a directory (or None if it does not exist)."""
    if not os.path.lexists(path):
        return None
    out = {}
    for name in sorted(os.listdir(path)):
        p = os.path.join(path, name)
        if os.path.islink(p):
            out[name] = ("link", os.readlink(p))
        else:
            with open(p, "rb") as f:
                out[name] = ("file", hashlib.sha256(f.read()).hexdigest())
    return out


def corrupt(capsys, data, out, *extra, stream="head", rate="0.5"):
    """Run the console script in-process: ``(exit status, stdout, stderr)``."""
    argv = ["corrupt", "--data", str(data), "--out", str(out), "--stream", stream, "--rate", rate, *map(str, extra)]
    try:
        cli.cli_main(argv)
        status = 0
    except SystemExit as e:
        status = e.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_refused(status, err, *fragments):
    assert status == 2
    assert err.startswith(PROG) and err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


def head_bin(path, split="test"):
    return np.fromfile(os.path.join(str(path), f"{split}.en-de.head.bin"), dtype=np.uint8).tobytes()


@pytest.fixture
def data(stream_bin, tmp_path):
    """A real (not linked) copy of the binarized corpus, which the tests may try to destroy."""
    dest = tmp_path / "data-bin"
    shutil.copytree(stream_bin, dest)
    return dest


def leftovers(parent):
    return sorted(n for n in os.listdir(parent) if ".tmp-" in n)


@pytest.mark.parametrize("how", ["same", "trailing-slash", "dotdot", "link", "overwrite", "link-overwrite"])
def test_out_that_is_the_data_directory_is_refused_and_data_untouched(capsys, data, tmp_path, how):
    before = snapshot(data)
    link = tmp_path / "alias"
    os.symlink(data, link)
    out = {"same": data, "trailing-slash": f"{data}/", "dotdot": tmp_path / "x" / ".." / "data-bin",
           "link": link, "overwrite": data, "link-overwrite": link}[how]
    status, stdout, err = corrupt(capsys, data, out, *(["--overwrite"] if "overwrite" in how else []))
    # the shared guard (issue 56.2) refuses it first: every file of the data directory is under --out
    assert_refused(status, err, "would write the input")
    assert stdout == "" and snapshot(data) == before and leftovers(tmp_path) == []
    assert all(kind == "file" for kind, _ in before.values())


@pytest.mark.parametrize("where", ["inside", "holds"])
def test_out_inside_or_holding_the_data_directory_is_refused(capsys, data, tmp_path, where):
    before = snapshot(data)
    out = data / "noisy" if where == "inside" else tmp_path
    status, _, err = corrupt(capsys, data, out, "--overwrite")
    assert_refused(status, err, "lies inside the data directory" if where == "inside" else "would write the input")
    assert snapshot(data) == before and not (data / "noisy").exists()


def test_an_existing_directory_is_refused_then_replaced_whole_with_overwrite(capsys, data, stream_bin, tmp_path):
    other = tmp_path / "other-data"  # another real data directory
    shutil.copytree(stream_bin, other)
    before = snapshot(other)
    status, stdout, err = corrupt(capsys, data, other)
    assert_refused(status, err, f"--out {other} exists", "--overwrite")
    assert snapshot(other) == before and stdout == ""
    status, stdout, err = corrupt(capsys, data, other, "--overwrite")
    assert status == 0, err
    assert os.path.islink(other / "test.en-de.en.bin") and not os.path.islink(other / "test.en-de.head.bin")
    assert head_bin(other) != head_bin(data)
    assert sorted(os.listdir(other)) == sorted(os.listdir(data) + ["noise-head.json"])
    assert leftovers(tmp_path) == [] and snapshot(data) == snapshot(stream_bin)  # data untouched


def test_a_second_run_into_one_out_is_refused_and_the_record_stays_true(capsys, data, tmp_path):
    out = tmp_path / "noisy"
    assert corrupt(capsys, data, out, stream="head")[0] == 0
    after_head = snapshot(out)
    record = json.loads((out / "noise-head.json").read_text())
    assert [r["split"] for r in record] == ["train", "valid", "test"]
    assert all(r["data"] == str(data) and r["stream"] == "head" and r["rate"] == 0.5 for r in record)
    status, _, err = corrupt(capsys, data, out, stream="pos")
    assert_refused(status, err, "exists")
    assert snapshot(out) == after_head  # the head noise is still there, as its record says
    # with --overwrite the directory is made anew: pos noise, and no record of head noise that is gone
    assert corrupt(capsys, data, out, "--overwrite", stream="pos")[0] == 0
    assert sorted(n for n in os.listdir(out) if n.startswith("noise-")) == ["noise-pos.json"]
    assert os.path.islink(out / "test.en-de.head.bin") and head_bin(out) == head_bin(data)
    assert not os.path.islink(out / "test.en-de.pos.bin")


def test_noise_stacks_on_a_noisy_copy_with_both_records(capsys, data, tmp_path):
    head, both = tmp_path / "head", tmp_path / "both"
    assert corrupt(capsys, data, head, stream="head")[0] == 0
    assert corrupt(capsys, head, both, stream="pos")[0] == 0
    assert head_bin(both) == head_bin(head) != head_bin(data)
    assert json.loads((both / "noise-head.json").read_text()) == json.loads((head / "noise-head.json").read_text())
    assert json.loads((both / "noise-pos.json").read_text())[0]["data"] == str(head)


def test_replacing_a_noisy_copy_leaves_a_copy_of_it_whole(capsys, data, tmp_path):
    """``data`` -> ``head`` -> ``both``, then ``data`` -> ``head --overwrite`` with another seed: ``both`` keeps
    its head noise and its record of it (its links went through ``head``'s entries, which then dangled or named
    the new noise), and shares no inode with what replaced ``head``."""
    head, both = tmp_path / "head", tmp_path / "both"
    assert corrupt(capsys, data, head, stream="head")[0] == 0
    assert corrupt(capsys, head, both, stream="pos")[0] == 0
    before = {name: (both / name).read_bytes() for name in os.listdir(both)}
    records = json.loads((both / "noise-head.json").read_text())
    assert corrupt(capsys, data, head, "--overwrite", "--seed", "2", stream="head")[0] == 0
    assert head_bin(head) != before["test.en-de.head.bin"]  # the new noise differs
    for name in os.listdir(both):  # nothing dangles, nothing changed
        assert os.path.exists(both / name) and (both / name).read_bytes() == before[name], name
    assert json.loads((both / "noise-head.json").read_text()) == records
    for name in os.listdir(both):  # a link never passes through another copy's directory entries
        if os.path.islink(both / name):
            assert os.readlink(both / name) == os.path.realpath(data / name), name


def test_a_copy_may_not_replace_the_directory_it_links_into(capsys, data, tmp_path):
    """``data`` -> ``noisy`` (links into data); ``noisy`` -> ``data --overwrite`` would delete what noisy links to."""
    noisy = tmp_path / "noisy"
    assert corrupt(capsys, data, noisy)[0] == 0
    before = snapshot(data)
    status, _, err = corrupt(capsys, noisy, data, "--overwrite")
    assert_refused(status, err, "would write the input")  # the shared guard: --data's files lie under --out
    assert snapshot(data) == before


def test_a_failed_run_leaves_out_as_it_was(capsys, data, tmp_path):
    out = tmp_path / "noisy"
    status, _, err = corrupt(capsys, data, out, "--splits", "train,nosuch")
    assert_refused(status, err, "nosuch")
    assert not os.path.lexists(out) and leftovers(tmp_path) == []
    assert corrupt(capsys, data, out)[0] == 0
    before = snapshot(out)
    status, _, err = corrupt(capsys, data, out, "--overwrite", "--splits", "train,nosuch", stream="pos")
    assert_refused(status, err, "nosuch")
    assert snapshot(out) == before and leftovers(tmp_path) == []


def test_an_interrupted_run_leaves_nothing_half_made(data, tmp_path, monkeypatch):
    real = D.corrupt_split
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 2:  # the first split is written, the second is not
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(D, "corrupt_split", interrupted)
    out = tmp_path / "sub" / "noisy"
    with pytest.raises(KeyboardInterrupt):
        D.noisy_copy(str(data), str(out), "head", 0.5, 1, ["train", "valid", "test"])
    assert calls == ["train", "valid"]
    assert not os.path.lexists(out) and leftovers(tmp_path / "sub") == []
