"""Small helpers shared by the plugin, the console scripts, the demo, the benches and the analyses (no fairseq, no
torch): the plugin directory and console scripts of this environment, the console scripts' one logging setup,
matplotlib without a display, mean and sd, markdown tables, text files read line-exactly, atomic writes of lines,
results and markers."""

import logging
import math
import os
import sys
from typing import Callable, Iterable, Iterator, Optional, Sequence, TextIO, Tuple


def user_dir() -> str:
    """The plugin directory for fairseq's ``--user-dir``."""
    return os.path.dirname(os.path.abspath(__file__))


#: the console scripts' log lines: fairseq's format, so a recipe's log reads as one
LOG_FORMAT = "%(asctime)s | %(levelname)s | %(name)s | %(message)s"


def setup_logging(level: int = logging.INFO) -> None:
    """The one logging setup of every console script: fairseq's format on stderr at ``level``, replacing any
    handler a library configured at import (fairseq leaves the root logger at DEBUG), and matplotlib and PIL,
    whose font and image searches log at DEBUG, at WARNING or above."""
    logging.basicConfig(format=LOG_FORMAT, datefmt="%Y-%m-%d %H:%M:%S", level=level, stream=sys.stderr, force=True)
    for noisy in ("matplotlib", "PIL"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def exe(name: str) -> str:
    """A console script of this environment (the one next to the running python)."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else name


def pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend."""
    import logging

    # before the import, which logs its paths at DEBUG (and the font search after it)
    logging.getLogger("matplotlib").setLevel(max(logging.getLogger("matplotlib").getEffectiveLevel(), logging.WARNING))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mean_sd(values: Sequence[float]) -> Tuple[float, float]:
    """Mean and sample standard deviation (0 for one value; NaN for none)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return float("nan"), float("nan")
    m = sum(values) / len(values)
    if len(values) == 1:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


class InputError(ValueError):
    """Bad input data; the message names the file and (1-based) line."""


def decoded_lines(lines: Iterable[bytes], name: str, errors: str = "strict") -> Iterator[Tuple[int, str]]:
    """``(1-based line number, line)`` of binary ``lines`` (a file opened ``"rb"``, ``sys.stdin.buffer``) decoded as
    UTF-8, streaming: lines end at ``\\n`` only (a stray ``\\r`` or U+2028 stays inside its line, unlike Python's
    universal newlines), without their newline; a byte-order mark before the first line is dropped.

    Args:
        name: what the lines are, in messages (a path).
        errors: ``"strict"``: invalid UTF-8 raises; ``"replace"``: it reads as U+FFFD.

    Raises:
        InputError: (a ``ValueError``) on invalid UTF-8 with ``errors="strict"``, naming ``name`` and the line.
    """
    for lineno, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8", errors)
        except UnicodeDecodeError as e:
            raise InputError(f"{name}:{lineno}: invalid UTF-8 ({e.reason} at byte {e.start})") from None
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        yield lineno, line[:-1] if line.endswith("\n") else line


def numbered_lines(path: str, errors: str = "strict") -> Iterator[Tuple[int, str]]:
    """``(1-based line number, line)`` of a UTF-8 text file, streaming (:func:`decoded_lines`)."""
    with open(path, "rb") as f:
        yield from decoded_lines(f, path, errors)


def read_lines(path: str, errors: str = "strict") -> Iterator[str]:
    """The lines of a UTF-8 text file, streaming (:func:`numbered_lines` without the numbers)."""
    for _, line in numbered_lines(path, errors):
        yield line


def write_lines(path: str, lines: Iterable[str]) -> int:
    """Write ``lines`` (each without its newline) to ``path`` as UTF-8, atomically (a temporary file renamed: a
    reader sees the old file or the whole new one); returns how many were written."""
    n = 0

    def write(f: TextIO) -> None:
        nonlocal n
        for line in lines:
            f.write(line)
            f.write("\n")
            n += 1

    atomic_write(path, write, sync=False)
    return n


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence], floatfmt: str = ".2f", align: str = "") -> str:
    """The plugin's one markdown table (GitHub's pipe table, made by ``tabulate``): a line per row, each cell as
    given (a str) or written for a reader (None and NaN as ``-``, a float with ``floatfmt``), ``|`` escaped; cells
    are not padded to their column's width, so that a row reads ``| a | b |`` whatever the other rows hold.

    ``align``: a letter per column, ``l`` (left) or ``r`` (right), written in the line under the header as GitHub
    reads it, ``|---|---:|`` (the benchmarks' tables); empty: tabulate's line, no alignment.

    Raises:
        ValueError: an ``align`` of another length than ``headers`` or with another letter.
    """
    from tabulate import tabulate

    def cell(value) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        return (format(value, floatfmt) if isinstance(value, float) else str(value)).replace("|", "\\|")

    text = tabulate([[cell(v) for v in row] for row in rows], headers=[cell(h) for h in headers], tablefmt="github",
                    disable_numparse=True, stralign=None)
    if not align:
        return text
    if len(align) != len(headers) or set(align) - set("lr"):
        raise ValueError(f"align {align!r}: one letter, l or r, per column ({len(headers)})")
    lines = text.split("\n")
    lines[1] = "|" + "".join("---:|" if a == "r" else "---|" for a in align)
    return "\n".join(lines)


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file: the same path once links and ``..`` are resolved, or (hard
    links) the same inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def refuse_overwriting(outputs: Sequence[Tuple[str, str]], inputs: Sequence[str]) -> None:
    """Refuse, before anything is written, an output that is one of the inputs (under any spelling or link).

    Args:
        outputs: ``(option as the user gave it, path written)`` pairs.
        inputs: the paths read.

    Raises:
        ValueError: ``OPTION is the input PATH``.
    """
    for option, out in outputs:
        for path in inputs:
            if same_file(out, path):
                raise ValueError(f"{option} writes {out}, which is the input {path}" if option.split()[-1] != out
                                 else f"{option} is the input {path}")


def atomic_write(path: str, write: Callable[[TextIO], None], sync: bool = True) -> None:
    """Write ``path`` through ``write(file)``, atomically: a reader (a rerun looking for a step's marker) sees the
    old file or the whole new one, never a part of it (a full disk, a kill); a failed write leaves no temporary
    file. ``sync``: the data reaches the disk before the rename (a marker survives a crash of the machine)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            write(f)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str, text: str) -> None:
    """``text`` into ``path``, atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda f: f.write(text))


def atomic_write_json(path: str, obj, **kwargs) -> None:
    """``obj`` as JSON (``json.dump(obj, f, **kwargs)``) into ``path``, atomically (:func:`atomic_write`)."""
    import json

    atomic_write(path, lambda f: json.dump(obj, f, **kwargs))


def read_json_marker(path: str, warn: Optional[Callable[[str], None]] = None) -> Optional[object]:
    """The JSON a finished step left in ``path`` (its marker), or None when there is none or it is not valid JSON
    (a write cut short by an older version, a full disk or a kill): then ``warn`` is called with a line saying that
    the step is done again."""
    import json

    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        if warn is not None:
            warn(f"{path} is not valid JSON ({e}): a write cut short? doing its step again")
        return None


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user counts), for a resume that must not take
    over the work of a job still running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
