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
