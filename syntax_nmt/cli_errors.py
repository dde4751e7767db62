"""One-line user errors for the plugin's console scripts.

A user error (bad input, a missing or wrong file, an inconsistent command line) is printed
as ONE line ``PROG: error: MESSAGE`` on stderr, like argparse does, with exit status 2 and
no traceback; anything else is a bug and keeps its traceback.
"""

import os
import sys
from typing import Callable, NoReturn, Tuple, Type

#: Exceptions that report user errors (InputError, StreamMismatchError... are ValueErrors).
USER_ERRORS: Tuple[Type[BaseException], ...] = (ValueError, OSError)


def one_line(message: str) -> str:
    """``message`` with its lines joined by ``"; "`` (blank lines and surrounding spaces dropped)."""
    return "; ".join(part.strip() for part in str(message).splitlines() if part.strip())


def fail(prog: str, error) -> NoReturn:
    """Print ``PROG: error: MESSAGE`` (one line) to stderr and exit with status 2."""
    sys.stderr.write(f"{prog}: error: {one_line(str(error))}\n")
    sys.stderr.flush()
    sys.exit(2)


def run(prog: str, fn: Callable, *args, **kwargs):
    """Call ``fn(*args, **kwargs)``, turning a :data:`USER_ERRORS` exception into :func:`fail`."""
    try:
        return fn(*args, **kwargs)
    except USER_ERRORS as e:
        fail(prog, e)


def fairseq_errors_one_line(errors: Tuple[Type[BaseException], ...]) -> None:
    """In a fairseq console script (``fairseq-train``, ``fairseq-generate``...), report the plugin's own user errors
    ``errors`` that reach the top as one line ``fairseq-generate: error: MESSAGE`` with exit status 2, instead of
    a traceback through fairseq's code. fairseq's own errors, and anything else, keep their tracebacks. Done by
    wrapping ``sys.excepthook`` (fairseq's command lines have no other hook), once per process."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not prog.startswith("fairseq-") or getattr(sys.excepthook, "syntax_nmt_errors", None) is not None:
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, errors):
            try:
                sys.stdout.flush()
            finally:
                sys.stderr.write(f"{prog}: error: {one_line(str(exc))}\n")
                sys.stderr.flush()
                os._exit(2)  # an excepthook cannot choose the exit status; nothing is left to clean up
        previous(exc_type, exc, tb)

    hook.syntax_nmt_errors = errors
    sys.excepthook = hook
