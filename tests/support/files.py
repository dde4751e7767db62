"""Test helpers about files: a folder's snapshot (to assert that a command wrote and deleted nothing), and the
WMT14 recipe's Python files imported as modules."""

import importlib.util
import os
import sys
from pathlib import Path

WMT14_RECIPE = Path(__file__).resolve().parents[2] / "examples" / "wmt14_en_de"


def snapshot(folder):
    """Every file under ``folder`` and its bytes (links as their targets)."""
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(d, f)
            out[p] = os.readlink(p) if os.path.islink(p) else open(p, "rb").read()
    return out


def load_recipe_module(name: str):
    """Import examples/wmt14_en_de/NAME.py as module ``wmt14_NAME`` (registered in sys.modules so that
    multiprocessing workers can unpickle its functions)."""
    mod_name = f"wmt14_{name}"
    if mod_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(mod_name, WMT14_RECIPE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        spec.loader.exec_module(module)
    return sys.modules[mod_name]
