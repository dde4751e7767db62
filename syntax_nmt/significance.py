"""The old path of :mod:`syntax_nmt.evaluation.significance` (where it lives now), kept for user code that imports it: this
module *is* that one once imported."""

import sys

from syntax_nmt.evaluation import significance as _module

sys.modules[__name__] = _module
