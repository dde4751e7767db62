"""Shared helpers of ``syntax-nmt-analyze``: named inputs, outputs (JSON + markdown + PNG),
fairseq command lines, scoring."""

import contextlib
import json
import math
import os
import pickle
import re
import subprocess
import zipfile
from typing import Dict, List, Optional, Sequence, Tuple

from syntax_nmt.utils import exe, markdown_table, mean_sd, pyplot, user_dir  # noqa: F401  (the analyses' helpers)


class AnalyzeError(ValueError):
    """A user error: printed as one ``syntax-nmt-analyze: error: ...`` line (exit status 2)."""


def parse_named(spec: str, kind: str = "file") -> Tuple[str, str]:
    """``NAME=PATH`` -> ``(NAME, PATH)``; a bare ``PATH`` is named after it: a checkpoint
    ``.../sgnet/checkpoint_last.pt`` after its directory (``sgnet``), other files after their stem."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        base = os.path.basename(path)
        if base.startswith("checkpoint") and base.endswith(".pt"):
            name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        else:
            name = os.path.splitext(base)[0]
    if not os.path.exists(path):
        raise AnalyzeError(f"{kind} {path} not found")
    return name, path


def unique_names(named: Sequence[Tuple[str, str]]) -> None:
    names = [n for n, _ in named]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise AnalyzeError(f"several inputs are named {dup}: name them NAME=PATH")


def parse_floats(value: str, option: str) -> List[float]:
    try:
        return [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise AnalyzeError(f"{option} takes comma-separated numbers, got {value!r}") from None


def _jsonable(obj):
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):
        return _jsonable(obj.tolist())
    return obj


def write_outputs(out_dir: str, stem: str, data: Dict, markdown: str, figures: Dict[str, object] = None) -> List[str]:
    """Write ``stem.json`` (NaN as null), ``stem.md`` and each figure (``name -> matplotlib figure``,
    saved as ``name.png``); returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, stem + ".json"), os.path.join(out_dir, stem + ".md")]
    with open(paths[0], "w", encoding="utf-8") as f:
        json.dump(_jsonable(data), f, indent=1)
    with open(paths[1], "w", encoding="utf-8") as f:
        f.write(markdown.rstrip("\n") + "\n")
    plt = pyplot() if figures else None
    for name, fig in (figures or {}).items():
        path = os.path.join(out_dir, name + ".png")
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


#: What reading a file that is not a whole checkpoint raises (torch.load, fairseq's upgrade of its keys).
UNREADABLE = (EOFError, pickle.UnpicklingError, RuntimeError, OSError, KeyError, zipfile.BadZipFile)


@contextlib.contextmanager
def readable_checkpoint(path: str):
    """Around a load of checkpoint ``path``: an empty, truncated or foreign file is an :class:`AnalyzeError` naming
    it (instead of torch's unpickling traceback)."""
    size = os.path.getsize(path)
    if size == 0:
        raise AnalyzeError(f"checkpoint {path} is empty (0 bytes): an interrupted save? use another checkpoint")
    try:
        yield
    except UNREADABLE as e:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        # torch's weights-only unpickler explains itself at length; its reason is the "Unsupported ..." line
        why = next((line for line in lines if line.startswith("Unsupported")), lines[0] if lines else "")
        raise AnalyzeError(f"cannot read checkpoint {path} ({size} bytes): truncated or not a fairseq checkpoint "
                           f"({type(e).__name__}{': ' + why if why else ''})") from None


def checkpoint_info(path: str) -> Dict:
    """``{"task": name, "streams": [...]}`` of a fairseq checkpoint (weights-only load)."""
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401  (allow-lists what fairseq checkpoints pickle)

    with readable_checkpoint(path):
        state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise AnalyzeError(f"{path} is not a fairseq checkpoint (it holds no model weights and configuration)")
    cfg = state.get("cfg") or {}
    task = cfg.get("task") or {}
    model = cfg.get("model")
    task_name = task.get("_name") if isinstance(task, dict) else getattr(task, "_name", None)
    if task_name is None and state.get("args") is not None:
        task_name = getattr(state["args"], "task", None)
    streams = getattr(model, "source_streams", None) if not isinstance(model, dict) else model.get("source_streams")
    return {"task": task_name or "translation", "streams": [s for s in (streams or "").split(",") if s]}


def generate(data: str, checkpoint: str, log: str, split: str = "test", gen_args: Sequence[str] = (),
             task: Optional[str] = None) -> str:
    """Translate ``split`` of ``data`` with ``fairseq-generate --remove-bpe`` into ``log``."""
    task = task or checkpoint_info(checkpoint)["task"]
    cmd = [exe("fairseq-generate"), data, "--user-dir", user_dir(), "--task", task, "--path", checkpoint,
           "--gen-subset", split, "--remove-bpe", "--required-batch-size-multiple", "1", *gen_args]
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.run([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        with open(log, encoding="utf-8") as f:
            tail = [line.rstrip() for line in f][-3:]
        raise AnalyzeError(f"fairseq-generate failed on {checkpoint} (see {log}): {' / '.join(tail)}")
    return log


def hypotheses(gen_log: str, lang: str = "de") -> List[str]:
    """Detokenized best hypotheses of a ``fairseq-generate --remove-bpe`` log, in corpus order."""
    from syntax_nmt.evaluation.generate_log import read_hypotheses
    from syntax_nmt.evaluation.metrics import detokenize

    try:
        return detokenize(read_hypotheses(gen_log), lang)
    except ValueError as e:
        raise AnalyzeError(str(e)) from None


def read_references(path: str, n: Optional[int] = None) -> List[str]:
    from syntax_nmt.utils import read_lines

    refs = list(read_lines(path))
    if n is not None and len(refs) != n:
        raise AnalyzeError(f"{path} has {len(refs)} lines, expected {n}")
    return refs


_SEED = re.compile(r"^(.*)\.seed(\d+)$")


def split_seed(name: str) -> Tuple[str, Optional[int]]:
    """``"sgnet.seed2"`` -> ``("sgnet", 2)``; ``"sgnet"`` -> ``("sgnet", None)``."""
    m = _SEED.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)
