"""``--syntax-attention`` is parsed once per ``fairseq-train`` run and each method object built once (issue 47.2).

It was parsed 5 times and 4 LISA objects were built, 1 kept: fairseq applies the architecture while parsing the
command line and again in its ``build_model``, the model checked the options again, its encoder built the methods
anew, and the task parsed the option once more for the criterion's warning. The run here is the real
``fairseq-train`` (its ``cli_main``, as the console script calls it) on the tiny stream corpus, one update of the tiny
model with LISA and its loss; a profiler counts every call of the one parser
(:func:`~syntax_nmt.models.modules.methods.base.parse_methods`), however it is reached, and of
``SyntaxMethod.__init__``, by method.

The parse rides from the architecture hook to the model on the arguments (``OPTIONS_ARG``, issue 57.1: no memo, no
context variable), and never into the checkpoint: the run saves one, read back with torch's weights-only loader.
"""

import json
import subprocess
import sys
from argparse import Namespace

import pytest
import torch

from conftest import USER_DIR
from syntax_nmt.models.syntax_transformer import OPTIONS_ARG

pytestmark = pytest.mark.e2e

DRIVER = r'''
import atexit, collections, json, sys, threading
import fairseq  # noqa: F401
from syntax_nmt.models.modules.methods import base

PARSE, BUILD = base.parse_methods.__code__, base.SyntaxMethod.__init__.__code__
counts = collections.Counter()


def profile(frame, event, arg):
    if event == "call":
        if frame.f_code is PARSE:
            counts["parse " + str(frame.f_locals.get("value"))] += 1
        elif frame.f_code is BUILD:
            counts["build " + type(frame.f_locals["self"]).name] += 1


atexit.register(lambda: print("COUNTS " + json.dumps(counts), flush=True))
sys.setprofile(profile)
threading.setprofile(profile)
from fairseq_cli.train import cli_main

sys.argv = ["fairseq-train", *sys.argv[1:]]
cli_main()
'''


def test_one_parse_and_one_object_per_method_in_a_fairseq_train_run(stream_bin, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
         "--arch", "syntax_transformer_tiny", "--source-features", "", "--syntax-attention", "lisa",
         "--criterion", "label_smoothed_cross_entropy_with_syntax", "--lisa-loss-weight", "0.1",
         "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1500", "--max-update", "1", "--num-workers", "0",
         "--no-epoch-checkpoints", "--no-save-optimizer-state", "--disable-validation", "--seed", "1",
         "--log-format", "simple", "--no-progress-bar",
         "--save-dir", str(tmp_path / "ck")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "num_updates 1" in proc.stdout + proc.stderr or "done training" in proc.stdout + proc.stderr
    counts = json.loads(proc.stdout.split("COUNTS ", 1)[1].splitlines()[0])
    assert counts == {"parse lisa": 1, "build lisa": 1}
    state = torch.load(tmp_path / "ck" / "checkpoint_last.pt", map_location="cpu", weights_only=True)
    keys = _keys(state["cfg"])
    assert {"syntax_attention", "source_stream_dicts", "word_dict_signature"} <= keys  # the model's arguments
    assert OPTIONS_ARG not in keys and state["cfg"]["model"].syntax_attention == "lisa"


def _keys(obj, seen=None):
    """Every key and attribute name in a loaded checkpoint (dicts, lists, Namespaces), recursively."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return set()
    seen.add(id(obj))
    items = vars(obj) if isinstance(obj, Namespace) else obj if isinstance(obj, dict) else None
    if items is not None:
        return {str(k) for k in items} | {k for v in items.values() for k in _keys(v, seen)}
    if isinstance(obj, (list, tuple)):
        return {k for v in obj for k in _keys(v, seen)}
    return set()
