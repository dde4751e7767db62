"""A checkpoint made by an older version of the plugin loads and translates as it did then.

``tests/e2e/data/legacy_all/``: a tiny ``all`` system (the features and every syntax method; see ``make.py`` there,
``made_with.txt`` names the commit) with the binarized test split it was generated on, and what
``fairseq-generate`` printed then (``expected.txt``). Modules, classes and functions may move and change names
(a checkpoint pickles only an argparse Namespace and tensors), but the translations must not change.
"""

import importlib.util
import os

import pytest

from conftest import USER_DIR, run_cli

pytestmark = pytest.mark.e2e

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "legacy_all")
_spec = importlib.util.spec_from_file_location("legacy_all_make", os.path.join(HERE, "make.py"))
_make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_make)
GENERATE = _make.GENERATE


def _lines(text):
    """``(kind, id) -> [text, scores]`` of the S/T/H/P lines, hypotheses in their n-best order."""
    out = []
    for line in text.splitlines():
        if line[:2] in ("S-", "T-", "H-", "P-"):
            out.append(line.split("\t"))
    return sorted(out, key=lambda f: int(f[0][2:]))


def test_old_checkpoint_translates_as_it_did():
    args = [a.format(user_dir=USER_DIR) for a in GENERATE]
    args[args.index("data-bin")] = os.path.join(HERE, "data-bin")
    args[args.index("checkpoint.pt")] = os.path.join(HERE, "checkpoint.pt")
    got = _lines(run_cli("fairseq-generate", *args).stdout)
    with open(os.path.join(HERE, "expected.txt"), encoding="utf-8") as f:
        expected = _lines(f.read())
    assert len(got) == len(expected) > 0
    for g, e in zip(got, expected):
        assert g[0] == e[0]
        kind = g[0][0]
        if kind in "ST":
            assert g[1:] == e[1:]
        elif kind == "H":
            assert g[2] == e[2]  # the hypothesis
            assert float(g[1]) == pytest.approx(float(e[1]), abs=1e-4)
        else:  # P: positional scores, printed with 4 decimals
            assert [float(x) for x in g[1].split()] == pytest.approx([float(x) for x in e[1].split()], abs=2e-4)


#: fairseq-generate run with a profiler that counts the reads of the dictionaries' records and of the old strings
COUNTING_DRIVER = r'''
import atexit, collections, json, sys, threading
import fairseq  # noqa: F401
from syntax_nmt.data import signatures

READ, PARSE = signatures.read_dictionaries.__code__, signatures.parse_signatures.__code__
counts = collections.Counter()


def profile(frame, event, arg):
    if event == "call":
        if frame.f_code is READ and frame.f_locals.get("value"):
            counts["read " + frame.f_locals["arg"]] += 1
        elif frame.f_code is PARSE and frame.f_locals.get("value"):
            counts["parse " + frame.f_locals["value"]] += 1


atexit.register(lambda: print("COUNTS " + json.dumps(counts), flush=True))
sys.setprofile(profile)
threading.setprofile(profile)
from fairseq_cli.generate import cli_main

sys.argv = ["fairseq-generate", *sys.argv[1:]]
cli_main()
'''


def test_the_old_checkpoints_dictionary_string_is_parsed_once_in_a_generate():
    """The checkpoint keeps its source streams' dictionaries as the ``name:size:hash`` string of its time; the model
    reads it once into typed records (issue 57.4: it was parsed 4 times in one generate, twice by the stream check,
    once by the encoder, and the word dictionaries' strings twice more), and translates as it did."""
    import json
    import subprocess
    import sys

    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401

    recorded = torch.load(os.path.join(HERE, "checkpoint.pt"), map_location="cpu",
                          weights_only=True)["cfg"]["model"].source_stream_dicts
    assert isinstance(recorded, str) and recorded.count(":") == 6  # pos, case, subword: name:size:hash each
    args = [a.format(user_dir=USER_DIR) for a in GENERATE]
    args[args.index("data-bin")] = os.path.join(HERE, "data-bin")
    args[args.index("checkpoint.pt")] = os.path.join(HERE, "checkpoint.pt")
    proc = subprocess.run([sys.executable, "-c", COUNTING_DRIVER, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    counts = json.loads(proc.stdout.split("COUNTS ", 1)[1].splitlines()[0])
    assert counts == {"read source_stream_dicts": 1, f"parse {recorded}": 1}
    with open(os.path.join(HERE, "expected.txt"), encoding="utf-8") as f:
        assert [g[:1] + g[2:] for g in _lines(proc.stdout) if g[0][0] == "H"] == [
            e[:1] + e[2:] for e in _lines(f.read()) if e[0][0] == "H"]
