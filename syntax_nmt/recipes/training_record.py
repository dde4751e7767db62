"""What a recipe's training leaves beside its checkpoints, so that a table can say what it was built from.

Each attempt at a training (the first, and every resumption after a kill) appends one line to
``SAVE/parts.jsonl``: its wall and CPU seconds, its exit status, the update it started from (0, or the update of
the ``checkpoint_last.pt`` fairseq resumed from), the one it reached and the updates it ran (the difference), the
device, the CPU's model and widest vector instructions (``cpu``, ``isa``; torch's CPU kernels choose their code
path by them, and torch's own choice, ``torch_cpu_capability``), the torch threads, the precision (``fp32``,
``fp16``, ``bf16``, ``amp``: from the arguments fairseq-train logs), the versions of the libraries that shape the
numbers (torch, fairseq, sacremoses, subword-nmt, spaCy and the parser model of the data) and the training's
settings. The threads are ``torch.get_num_threads()`` in the recording process, which the recipe starts in the
training's own environment (the subshell that exported ``OMP_NUM_THREADS`` for it), unless ``--threads`` names
them. When the trainer exits 0, ``SAVE/.done`` is written (atomically) with the parts summed: its
``wall_seconds``, ``cpu_seconds`` and ``updates_run`` are the whole training's, over every resumed part, not the
last part's; ``updates`` is the update the training ended at. Records written before a field existed stay
readable: the field is ``not recorded``.

:func:`differences` says in which of these records a set of trainings differ: :mod:`syntax_nmt.recipes.report`
prints it under its tables.

    python -m syntax_nmt.recipes.training_record part SAVE --wall S --times TIMES --status N --log LOG \\
        --device cpu|cuda [--threads T] [--data DATA] [--setting NAME=VALUE ...]
    python -m syntax_nmt.recipes.training_record done SAVE       # SAVE/.done from SAVE/parts.jsonl
    python -m syntax_nmt.recipes.training_record check SAVE [--setting NAME=VALUE ...]   # exit 2 on a change
"""

import argparse
import json
import os
import re
import sys
from importlib import metadata
from typing import Dict, List, Optional, Sequence, Tuple

from syntax_nmt.cli_errors import fail
from syntax_nmt.io_guard import parse_args, reads, updates
from syntax_nmt.utils import atomic_write_json

PROG = "python -m syntax_nmt.recipes.training_record"
#: the libraries whose versions are recorded (distribution names; fairseq is either of the first two)
PACKAGES = {"torch": ("torch",), "fairseq": ("fairseq", "fairseq-fixed"), "sacremoses": ("sacremoses",),
            "subword-nmt": ("subword-nmt",), "spacy": ("spacy",)}
#: fairseq's line when it resumes (fairseq/checkpoint_utils.py, load_checkpoint)
_RESUMED = re.compile(r"[Ll]oaded checkpoint \S+ \(epoch (\d+) @ (\d+) updates\)")
_UPDATES = re.compile(r"\bnum_updates[ =](\d+)")
#: fairseq-train's arguments as it logs them (a dict since fairseq 0.10, an argparse Namespace before)
_FLAG = r"(?:'{0}': True|\b{0}=True)"
#: the precisions fairseq-train can train in, the first of whose flags is set (else fp32), by their flags
PRECISIONS = (("bf16", ("bf16", "memory_efficient_bf16")), ("fp16", ("fp16", "memory_efficient_fp16")),
              ("amp", ("amp",)))
#: what a record's environment holds, in the order :func:`differences` names them
ENVIRONMENT = ("device", "cpu", "isa", "torch_cpu_capability", "threads", "precision", "torch", "fairseq",
               "sacremoses", "subword-nmt", "spacy", "parser")
#: what :func:`describe` says of a field a record lacks (a record older than the field)
NOT_RECORDED = "not recorded"


def write_json(path: str, obj) -> None:
    """``obj`` as JSON in ``path``, atomically: a reader sees the old file or the whole new one, never a part."""
    atomic_write_json(path, obj, indent=1, sort_keys=True)


def versions() -> Dict[str, Optional[str]]:
    """The installed versions of :data:`PACKAGES` (None: not installed)."""
    out = {}
    for key, dists in PACKAGES.items():
        out[key] = None
        for dist in dists:
            try:
                out[key] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def parser_of(data: Optional[str]) -> Optional[str]:
    """The parser recorded in a data directory's ``annotation.json``: its backend and, for spaCy, the pipeline's
    name, version and files' hash as recorded with the parses (``spacy_pipeline``); for data annotated before that
    was recorded, the name and version of the pipeline at the recorded name or path now (the installed package's,
    or ``meta.json`` of a pipeline given as a path)."""
    path = os.path.join(data, "annotation.json") if data else None
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        rec = json.load(f)
    model, pipeline = rec.get("spacy_model"), rec.get("spacy_pipeline")
    if isinstance(pipeline, dict):  # recorded with the parses (issue 56.3): the pipeline that parsed, not the one now
        return (f"{rec.get('backend')} {pipeline.get('name')} {pipeline.get('version')} (files sha256 "
                f"{str(pipeline.get('sha256'))[:12]})")
    if not model:
        return rec.get("backend")
    return f"{rec.get('backend')} {model_version(model)}"


def model_version(model: str) -> str:
    """``NAME VERSION`` of a spaCy pipeline given by package name or path (``NAME (version unknown)`` if neither
    an installed package nor a directory with a ``meta.json``)."""
    meta = os.path.join(model, "meta.json")
    if os.path.isfile(meta):
        with open(meta) as f:
            m = json.load(f)
        return f"{m.get('lang', '')}_{m.get('name', '')} {m.get('version')}".lstrip("_")
    try:
        return f"{model} {metadata.version(model.replace('_', '-'))}"
    except (metadata.PackageNotFoundError, ValueError):
        return f"{model} (version unknown)"


def cpu_model_and_isa() -> Tuple[str, str]:
    """The processor's model and its widest vector instructions (``amx_tile``, ``avx512f``, ``avx2``, ``asimd``;
    ``""`` if none of them) from ``/proc/cpuinfo``."""
    model, flags = "unknown model", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown model":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        import platform

        model = platform.processor() or model
    return model, next((f for f in ("amx_tile", "avx512f", "avx2", "asimd") if f in flags), "")


def cpu_name() -> str:
    """``cpu (MODEL, ISA)``: the processor's model and its widest vector instructions (:func:`cpu_model_and_isa`),
    on which torch's CPU kernels choose their code paths (and so the order of floating-point sums)."""
    model, isa = cpu_model_and_isa()
    return f"cpu ({model}{', ' + isa if isa else ''})"


def torch_threads_and_capability() -> Tuple[int, str]:
    """``torch.get_num_threads()`` and ``torch.backends.cpu.get_cpu_capability()`` (``AVX2``, ``AVX512``, ...: the
    code path torch's CPU kernels take) in this process, which reads ``OMP_NUM_THREADS`` and
    ``ATEN_CPU_CAPABILITY`` of the environment it was started with."""
    import torch

    return torch.get_num_threads(), torch.backends.cpu.get_cpu_capability()


def precision_of(log_text: str) -> Optional[str]:
    """The precision of a training from the arguments fairseq-train logs at its start: ``bf16``, ``fp16`` or
    ``amp`` (mixed precision, fp16 autocast) when its flag is set, else ``fp32``; None when the log shows no
    arguments (the first line naming ``fp16``)."""
    line = next((ln for ln in log_text.splitlines() if "fp16" in ln and ("'fp16':" in ln or "fp16=" in ln)), None)
    if line is None:
        return None
    for name, flags in PRECISIONS:
        if any(re.search(_FLAG.format(flag), line) for flag in flags):
            return name
    return "fp32"


def device_name(device: str) -> str:
    """The processor (:func:`cpu_name`) for ``cpu``, or the name of the first CUDA device (``cuda``)."""
    if device == "cpu":
        return cpu_name()
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu (no CUDA device seen)"


def updates_of(log_text: str) -> Dict[str, int]:
    """The update this attempt started from (fairseq's "Loaded checkpoint ... @ N updates", else 0) and the last
    update its log reports."""
    start = _RESUMED.findall(log_text)
    seen = [int(u) for u in _UPDATES.findall(log_text)]
    start_update = int(start[-1][1]) if start else 0
    end_update = max(seen + [start_update])
    return {"start_update": start_update, "end_update": end_update, "updates_run": end_update - start_update}


def cpu_seconds(times_file: str) -> float:
    """The CPU seconds of bash's ``times`` output (its second line: the children's user and system time)."""
    with open(times_file, errors="replace") as f:
        lines = f.read().splitlines()
    if len(lines) < 2 or not re.search(r"\d+m[\d.]+s", lines[1]):
        raise ValueError(f"{times_file}: not the output of bash's times (two lines of user and system times)")
    line = lines[1]
    return sum(60 * float(m) + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", line))


def parse_settings(items: Sequence[str]) -> Dict[str, str]:
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--setting takes NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def read_parts(save: str) -> List[dict]:
    path = os.path.join(save, "parts.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def add_part(save: str, wall: float, cpu: float, status: int, log_text: str, threads: Optional[int], device: str,
             data: Optional[str] = None, settings: Optional[Dict[str, str]] = None) -> dict:
    """Append one attempt's record to ``SAVE/parts.jsonl`` and return it. ``threads`` None: this process's torch
    threads (:func:`torch_threads_and_capability`; the recipe starts it in the training's environment)."""
    own_threads, capability = torch_threads_and_capability()
    model, isa = cpu_model_and_isa()
    part = {"wall_seconds": wall, "cpu_seconds": cpu, "status": status, **updates_of(log_text),
            "environment": {"device": device_name(device), "cpu": model, "isa": isa or None,
                            "torch_cpu_capability": capability,
                            "threads": own_threads if threads is None else threads,
                            "precision": precision_of(log_text), **versions(), "parser": parser_of(data)},
            "settings": dict(settings or {})}
    with open(os.path.join(save, "parts.jsonl"), "a") as f:
        f.write(json.dumps(part, sort_keys=True) + "\n")
    return part


def finish(save: str) -> dict:
    """``SAVE/.done`` from the parts: times summed over every attempt, the last attempt's environment and
    settings, the updates each resumption started from; written atomically. Returns the record."""
    parts = read_parts(save)
    if not parts or parts[-1]["status"] != 0:
        raise ValueError(f"{save}: the last training attempt did not succeed (parts.jsonl): not marked done")
    last = parts[-1]
    envs = [p["environment"] for p in parts]
    # updates trained by an attempt that left no record (killed with the recipe itself): its time is missing
    unrecorded = [p["start_update"] for prev, p in zip([None] + parts[:-1], parts)
                  if p["start_update"] > (prev["end_update"] if prev else 0)]
    record = {"wall_seconds": sum(p["wall_seconds"] for p in parts),
              "cpu_seconds": sum(p["cpu_seconds"] for p in parts),
              # a part recorded before updates_run existed: its end less its start
              "updates_run": sum(p.get("updates_run", p["end_update"] - p["start_update"]) for p in parts),
              "parts": len(parts),
              "resumed_from": [p["start_update"] for p in parts if p["start_update"] > 0],
              "updates": last["end_update"],
              "unrecorded_before_updates": unrecorded,
              "environment": last["environment"],
              "environment_changed": sorted({k for e in envs for k in ENVIRONMENT if e.get(k) != envs[-1].get(k)}),
              "settings": last["settings"]}
    write_json(os.path.join(save, ".done"), record)
    return record


def changed_settings(record: dict, settings: Dict[str, str]) -> List[str]:
    """``NAME: old -> new`` for every setting of ``settings`` the record has with another value (a record made
    before settings were recorded has none, and nothing is compared)."""
    old = record.get("settings") or {}
    return [f"{k}: {old[k]} -> {v}" for k, v in sorted(settings.items()) if k in old and old[k] != v]


def describe(record: dict) -> Dict[str, str]:
    """A record's environment as strings, :data:`NOT_RECORDED` where it has none (a record older than this module)
    or lacks the field (older than the field), a field whose value changed between the parts
    (``environment_changed``) said so, plus ``resumed`` (``no``, or the updates the parts started from)."""
    env = record.get("environment")
    changed = set(record.get("environment_changed") or ())  # resumed with another value: the last part's is shown
    out = {k: (NOT_RECORDED if env is None or k not in env else
               str(env[k]) + (" in its last part (changed when it was resumed)" if k in changed else ""))
           for k in ENVIRONMENT}
    if "resumed_from" not in record:
        out["resumed"] = NOT_RECORDED
    else:
        out["resumed"] = ("from update " + ", ".join(map(str, record["resumed_from"]))) if record["resumed_from"] \
            else "no"
        if record.get("unrecorded_before_updates"):
            out["resumed"] += " (time of an attempt before update(s) " + ", ".join(
                map(str, record["unrecorded_before_updates"])) + " not recorded)"
    return out


def differences(records: Dict[str, dict]) -> List[str]:
    """One line per field of :func:`describe` in which the named records differ (``field: value (names); ...``),
    none when they agree (a field that no record holds is left out)."""
    described = {name: describe(r) for name, r in records.items()}
    lines = []
    for field in _held(described.values()):
        groups: Dict[str, List[str]] = {}
        for name, d in described.items():
            groups.setdefault(d[field], []).append(name)
        if len(groups) > 1:
            lines.append(f"{field}: " + "; ".join(f"{v} ({', '.join(names)})" for v, names in groups.items()))
    return lines


def common(records: Dict[str, dict]) -> Dict[str, str]:
    """The fields of :func:`describe` that every record shares, with their value (not a field that none holds)."""
    described = list(describe(r) for r in records.values())
    return {k: described[0][k] for k in _held(described) if all(d[k] == described[0][k] for d in described)}


def _held(described) -> List[str]:
    """The fields of :func:`describe` that at least one of ``described`` holds, in their order."""
    described = list(described)
    return [k for k in ENVIRONMENT + ("resumed",) if any(d[k] != NOT_RECORDED for d in described)]


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    part = sub.add_parser("part", help="record one attempt (appended to SAVE/parts.jsonl)")
    updates(part.add_argument("save"))
    part.add_argument("--wall", type=float, required=True)
    reads(part.add_argument("--times", required=True, help="bash `times` output of the attempt"))
    part.add_argument("--status", type=int, required=True)
    reads(part.add_argument("--log", required=True, help="the attempt's fairseq-train output"))
    part.add_argument("--threads", type=int, default=None,
                      help="the training's torch threads (default: torch.get_num_threads() in this process: run it "
                           "in the training's environment)")
    part.add_argument("--device", choices=("cpu", "cuda"), required=True)
    reads(part.add_argument("--data", default=None, help="the data directory (its annotation.json names the parser)"),
          "dir")
    part.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
    done = sub.add_parser("done", help="write SAVE/.done from the parts")
    updates(done.add_argument("save"))
    check = sub.add_parser("check", help="exit 2, naming the change, if SAVE/.done was made with other settings")
    updates(check.add_argument("save"))
    check.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(get_parser(), argv)
    try:
        if args.command == "part":
            with open(args.log, errors="replace") as f:
                log_text = f.read()
            add_part(args.save, args.wall, cpu_seconds(args.times), args.status, log_text, args.threads, args.device,
                     args.data, parse_settings(args.setting))
        elif args.command == "done":
            finish(args.save)
        else:
            with open(os.path.join(args.save, ".done")) as f:
                record = json.load(f)
            changes = changed_settings(record, parse_settings(args.setting))
            if changes:
                fail(PROG, f"{args.save} was trained with other settings ({'; '.join(changes)}): remove it to "
                     f"train it again, or choose another WORK")
    except (OSError, ValueError) as e:
        fail(PROG, str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
