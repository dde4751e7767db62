"""The old path of :mod:`syntax_nmt.bench.parse` (where it lives now), kept for scripts and user code that import it
and for ``python -m syntax_nmt.bench_parse``: run, it is ``python -m syntax_nmt.bench.parse``; imported, this module *is*
that one."""

import sys

from syntax_nmt.bench import parse as _module

if __name__ == "__main__":
    sys.exit(_module.cli_main())
sys.modules[__name__] = _module
