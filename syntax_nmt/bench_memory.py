"""The old path of :mod:`syntax_nmt.bench.memory` (where it lives now), kept for scripts and user code that import it
and for ``python -m syntax_nmt.bench_memory``: run, it is ``python -m syntax_nmt.bench.memory``; imported, this module *is*
that one."""

import sys

from syntax_nmt.bench import memory as _module

if __name__ == "__main__":
    sys.exit(_module.cli_main())
sys.modules[__name__] = _module
