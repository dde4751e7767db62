"""``make mutate`` stays runnable from a clean clone (issue 48): its configuration (setup.cfg, [mutmut]) names
modules and tests that exist, the folders it copies hold no link that leaves them or loops (a recipe's symlink once
made mutmut's copy of examples/ loop), the repository folders its tests read are copied, and its test selection is
collected by pytest without an error."""

import configparser
import glob
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mutmut():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    section = cfg["mutmut"]
    return {key: [v.strip() for v in section.get(key, "").splitlines() if v.strip()]
            for key in ("only_mutate", "also_copy", "pytest_add_cli_args_test_selection")}


def test_every_mutated_pattern_matches_modules():
    for pattern in _mutmut()["only_mutate"]:
        assert glob.glob(str(ROOT / pattern)), f"setup.cfg [mutmut] only_mutate: {pattern} matches no file"


def test_every_selected_test_file_exists():
    selection = _mutmut()["pytest_add_cli_args_test_selection"]
    assert selection
    for path in selection:
        assert (ROOT / path).is_file(), f"setup.cfg [mutmut] test selection: {path} does not exist"


def test_the_copied_folders_hold_no_link_that_leaves_them():
    for entry in _mutmut()["also_copy"]:
        top = (ROOT / entry).resolve()
        assert top.exists(), f"setup.cfg [mutmut] also_copy: {entry} does not exist"
        if top.is_file():
            continue
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                if p.is_symlink():
                    target = p.resolve()
                    assert target.exists(), f"{p.relative_to(ROOT)}: a dangling link"
                    assert top in target.parents or target == top, f"{p.relative_to(ROOT)} links outside {entry}"
                    assert not (target.is_dir() and target in p.parents), f"{p.relative_to(ROOT)} loops"


@pytest.mark.e2e
def test_the_selection_is_collected():
    sel = _mutmut()["pytest_add_cli_args_test_selection"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "not slow and not e2e", *sel], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert " tests collected" in proc.stdout or " selected" in proc.stdout


def test_the_repository_folders_the_selected_tests_read_are_copied():
    """mutmut runs the tests in its own copy of the repository: ``syntax_nmt``, ``tests`` and ``also_copy``. A
    selected test that reads a file at the repository's top (``os.pardir, os.pardir, "docs"``, ``ROOT / "docs"``)
    needs that folder copied (docs/ was not, and the whole run stopped at its first pass)."""
    cfg = _mutmut()
    copied = {"syntax_nmt", "tests", *(entry.split("/")[0] for entry in cfg["also_copy"])}
    pattern = re.compile(r'(?:os\.pardir,\s*os\.pardir,\s*|ROOT\s*/\s*)"([^"/]+)')
    for path in cfg["pytest_add_cli_args_test_selection"]:
        for top in pattern.findall((ROOT / path).read_text(encoding="utf-8")):
            assert top in copied, f"{path} reads {top}/, which setup.cfg [mutmut] also_copy does not copy"
