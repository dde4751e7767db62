"""Run Python in a process where ``syntax_nmt`` cannot be imported: the way a server with stock fairseq (or only
CTranslate2) runs an exported model.

The child is ``python -I`` (no ``PYTHONPATH``, no user site, not the test's working directory on ``sys.path``),
started from an empty directory, and its first statement puts an import hook in front of every other one
(``sys.meta_path[0]``) that refuses ``syntax_nmt`` and its submodules: the shared environment's editable install of
the plugin (a ``.pth`` finder) is never asked. The hook also records each refused import, and the child checks at
exit that ``syntax_nmt`` is not in ``sys.modules``; a process that tried to import it fails (exit status 97) even if
the code caught the error.
"""

import os
import subprocess
import sys
import tempfile
from typing import Sequence

PRELUDE = r'''
import atexit, importlib.abc, os, sys
class _NoPlugin(importlib.abc.MetaPathFinder):
    refused = []
    def find_spec(self, name, path=None, target=None):
        if name == "syntax_nmt" or name.startswith("syntax_nmt."):
            self.refused.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: this process runs without the plugin)",
                                      name=name)
        return None
sys.meta_path.insert(0, _NoPlugin())
def _check():
    if _NoPlugin.refused or any(m == "syntax_nmt" or m.startswith("syntax_nmt.") for m in sys.modules):
        sys.stderr.write(f"NO-PLUGIN CHECK: syntax_nmt was imported or asked for: {_NoPlugin.refused}\n")
        sys.stderr.flush()
        os._exit(97)
atexit.register(_check)
'''


def run_without_plugin(code: str, argv: Sequence[str] = (), timeout: int = 600, env=None) -> subprocess.CompletedProcess:
    """Run ``code`` (Python source) with ``sys.argv = ["prog", *argv]`` in a plugin-free interpreter (module
    docstring); text output captured. ``env``: extra environment variables (``PYTHONPATH`` is never passed)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    full_env.update(env or {})
    full_env.setdefault("OMP_NUM_THREADS", "1")
    source = PRELUDE + f"sys.argv = {['prog', *map(str, argv)]!r}\n" + code
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable, "-I", "-c", source], cwd=cwd, env=full_env, capture_output=True,
                              text=True, timeout=timeout)


def fairseq_cli(name: str, argv: Sequence[str], timeout: int = 600) -> subprocess.CompletedProcess:
    """One of fairseq's command lines (``generate``, ``interactive``...) without the plugin."""
    return run_without_plugin(f"from fairseq_cli.{name} import cli_main\ncli_main()\n", argv, timeout)
