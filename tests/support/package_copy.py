"""A copy of the package with one more file, and the suite run on it: adding a syntax method or a target-side scheme
is one new file (tests/integration/test_a_new_method_file.py, test_a_new_target_scheme_file.py)."""

import os
import shutil
from pathlib import Path
from typing import Dict, Tuple

import syntax_nmt

#: the repository this process imports the package from
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(syntax_nmt.__file__)))


def copy_package(root: Path, new_files: Dict[str, str]) -> Tuple[Path, dict]:
    """``(root, env)``: ``syntax_nmt`` copied into the folder ``root`` with ``new_files`` (path under ``syntax_nmt/``
    -> text) added, the suite itself (``tests/``, ``pytest.ini``) linked beside it, and the environment whose Python
    imports the copy first (run from ``root``: ``python -m`` puts its directory first too)."""
    shutil.copytree(os.path.join(ROOT, "syntax_nmt"), root / "syntax_nmt",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path, text in new_files.items():
        (root / "syntax_nmt" / path).write_text(text, encoding="utf-8")
    for name in ("tests", "pytest.ini"):
        (root / name).symlink_to(os.path.join(ROOT, name))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    return root, env
