"""``python -m syntax_nmt.bench``: ``make bench`` (:mod:`syntax_nmt.bench.model`)."""

import sys

from syntax_nmt.bench.model import cli_main

sys.exit(cli_main())
