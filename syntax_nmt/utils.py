"""Small helpers shared by the console scripts, the demo, the benches and the analyses (no fairseq, no torch):
the plugin directory and console scripts of this environment, the console scripts' one logging setup,
matplotlib without a display, mean and sd."""

import logging
import math
import os
import sys
from typing import Sequence, Tuple


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


def atomic_write_lines(path: str, lines) -> None:
    """Write ``lines`` (each without newline) to ``path`` via a temp file and rename."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line)
            f.write("\n")
    os.replace(tmp, path)
