"""One-line user errors for the plugin's console scripts.

A user error (bad input, a missing or wrong file, an inconsistent command line) is printed
as ONE line ``PROG: error: MESSAGE`` on stderr, like argparse does, with exit status 2 and
no traceback; anything else is a bug and keeps its traceback.
"""

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
