"""Running a console script's entry point (``fairseq_cli.train.cli_main`` and the like) in the test's own process."""

import contextlib
import logging
import sys


@contextlib.contextmanager
def console_argv(*args):
    """``sys.argv`` for a console script's entry point run in this process (``args``: the program's name, then its
    arguments); and a root log handler while it runs, so that fairseq's ``logging.basicConfig`` (fairseq-generate points
    it at its results file) adds none."""
    root = logging.getLogger()
    handler = None if root.handlers else logging.NullHandler()
    if handler:
        root.addHandler(handler)
    saved, sys.argv = sys.argv, [str(a) for a in args]
    try:
        yield
    finally:
        sys.argv = saved
        if handler:
            root.removeHandler(handler)
