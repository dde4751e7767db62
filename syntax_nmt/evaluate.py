"""The old path of :mod:`syntax_nmt.evaluation.evaluate` (where it lives now), kept for scripts and user code that
import it and for ``python -m syntax_nmt.evaluate``: run, it is ``syntax-nmt-evaluate``; imported, this module *is*
that one."""

import sys

from syntax_nmt.evaluation import evaluate as _module

if __name__ == "__main__":
    sys.exit(_module.cli_main())
sys.modules[__name__] = _module
