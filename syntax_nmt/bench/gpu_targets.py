"""``python -m syntax_nmt.bench.gpu_targets FILES...``: issue 49's GPU targets against what the benches measured.

Reads the JSON files the benches write (``bench-length.json`` of :mod:`syntax_nmt.bench.length`, eager or
``--compile``; ``bench.json`` of :mod:`syntax_nmt.bench.model`; under any name, e.g. those
``scripts/gpu/bench_all.sh`` brings back) and prints one markdown table per measure:

* whole-model training words/s, as a ratio to the transformer of the same run (target: ``fairseq-train --fp16`` on a
  GPU; :data:`TRAIN_TARGETS`), with the training memory beside it;
* ``fairseq-generate`` sentences/s, the same way (no target);
* encoder time (forward + backward) at T = 64 and 256, ratio to the stock encoder (target: bf16 on a GPU;
  :data:`ENCODER_TIME_TARGETS`);
* GPU peak memory of the encoder step at T = 512, ratio to the stock encoder (:data:`PEAK_TARGETS`);
* the compiled path (``--syntax-compile``) against the eager one, where both were measured on the same device in
  the same precision: the encoders' milliseconds and the whole model's words/s.

Each figure is marked ``met`` or ``SHORT`` where it was measured as the target says (on a GPU, in its precision);
elsewhere (a CPU run, fp32 for a bf16 target) it is shown with ``-`` and why. Every row names the device (the GPU's
name where the file records it), the precision and the file it came from. A measure no file holds is shown as
``not measured``: nothing is estimated; so is a figure a bench wrote as NaN (its measure failed). The exit status is 0 whatever the verdicts (it reports); 2, with one line
``python -m syntax_nmt.bench.gpu_targets: error: ...``, for a file it cannot read.
"""

import argparse
import json
import os
import re
import sys
from typing import Dict, List, Optional

from syntax_nmt.io_guard import parse_args, reads, writes

PROG = "python -m syntax_nmt.bench.gpu_targets"

#: issue 49: whole-model training words/s, ratio to the transformer >= value (fairseq-train --fp16 on a GPU)
TRAIN_TARGETS = {"syntax-infused": 0.93, "sgnet": 0.93, "sla": 0.93, "seprem": 0.93, "lisa": 0.93,
                 "syntax_bert": 0.9, "all": 0.85}
#: issue 49: encoder time ratio (stock seconds / system seconds) >= value at each of ENCODER_LENGTHS (bf16, GPU)
ENCODER_TIME_TARGETS = {"sgnet": 0.9, "sla": 0.9, "seprem": 0.9, "lisa": 0.9, "syntax_bert": 0.6}
ENCODER_LENGTHS = (64, 256)
ENCODER_PRECISION = "bf16"
#: issue 49: GPU peak memory of the encoder step at PEAK_LENGTH, ratio to the stock encoder <= value
PEAK_TARGETS = {"sgnet": 1.5, "sla": 1.5, "seprem": 1.5, "lisa": 1.5, "syntax_bert": 2.5}
PEAK_LENGTH = 512
#: the systems of the table whose whole model is measured (the reference, the transformer, is not listed)
MODEL_SYSTEMS = ("syntax-infused", "sgnet", "syntax+sgnet", "sla", "syntax_bert", "seprem", "lisa", "all")
#: the encoders of the length bench (every method's own system)
ENCODER_SYSTEMS = ("sgnet", "sla", "syntax_bert", "seprem", "lisa")
#: the lengths at which the compiled path is compared with the eager one
COMPILED_LENGTHS = (64, 256)

NOT_MEASURED = "not measured"
#: what every row of each kind of file holds, read by the tables (a file of the right shape without them is refused)
ENCODER_KEYS = ("system", "T", "time_ratio", "seconds", "stock_seconds")
MODEL_KEYS = ("system", "train_wps", "train_wps_ratio", "gen_sps", "gen_sps_ratio")


def _measured(value) -> bool:
    """A figure that was measured: not None, not NaN (the benches write NaN where a measure failed)."""
    return value is not None and value == value


def _check_keys(path: str, rows: List[Dict], keys: tuple) -> None:
    for i, r in enumerate(rows):
        need = keys + (("cuda_peak_mib",) if "cuda_peak_ratio" in r else ())
        missing = [k for k in need if k not in r]
        if missing:
            raise ValueError(f"{path}: row {i + 1} ({r.get('system', 'no system')}) lacks {', '.join(missing)}: not a "
                             f"file of this version's bench")


# -- reading ------------------------------------------------------------------------------------------------------
def _device_label(device: Optional[str], name: Optional[str]) -> str:
    if name:
        return name if device in (None, "cpu") or name.startswith("cpu") else f"{name} ({device})"
    return f"{device} (name not recorded)" if device else "device not recorded"


def load(path: str, label: Optional[str] = None) -> Dict:
    """One bench result: ``{"kind": "encoder" | "model", "file", "rows"}``, every row carrying ``device`` (a label
    such as ``NVIDIA H100 80GB HBM3 (cuda)``), ``on_gpu`` (True, False or None: not recorded), ``precision`` and
    ``compiled``.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not JSON, or not a result of the two benches.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    file = label or os.path.basename(path)
    if isinstance(data, dict) and isinstance(data.get("rows"), list) and \
            all(isinstance(r, dict) and "time_ratio" in r and "T" in r for r in data["rows"]):
        _check_keys(path, data["rows"], ENCODER_KEYS)
        args = data.get("args") or {}
        setup = str(data.get("setup", ""))
        device = data.get("device")
        if device is None:  # older files: the setup line says "... bf16 on cuda, ..."
            m = re.search(r" on (cuda|cpu)\b", setup)
            device = m.group(1) if m else None
        precision = args.get("precision") or next(
            (p for p in ("bf16", "fp16", "fp32") if f"{p} on " in setup), None)
        compiled = bool(args.get("compile", False))
        common = {"device": _device_label(device, data.get("device_name")),
                  "on_gpu": None if device is None else device == "cuda", "precision": precision or "not recorded",
                  "compiled": compiled, "file": file, **({"compile_mode": args.get("compile_mode", "default")}
                                                         if compiled else {})}
        rows = [{**r, **common} for r in data["rows"]]
        return {"kind": "encoder", "file": file, "setup": setup, "rows": rows}
    if isinstance(data, list) and data and all(isinstance(r, dict) and "system" in r and "train_wps_ratio" in r
                                               for r in data):
        _check_keys(path, data, MODEL_KEYS)
        rows = []
        for r in data:
            device = r.get("device")
            rows.append({**r, "device": _device_label(device, r.get("device_name")),
                         "on_gpu": None if device is None else device == "cuda",
                         "precision": r.get("precision", "not recorded"), "compiled": bool(r.get("compiled", False)),
                         "reference": data[0]["system"], "file": file})
        return {"kind": "model", "file": file, "setup": str(data[0].get("setup", "")), "rows": rows}
    raise ValueError(f"{path}: neither a bench-length.json (an object with rows holding time_ratio) nor a bench.json "
                     "(a list of systems holding train_wps_ratio)")


# -- verdicts -----------------------------------------------------------------------------------------------------
def _verdict(value: Optional[float], target: Optional[float], higher: bool, row: Dict, precision: str) -> str:
    """``met`` / ``SHORT`` where ``row`` was measured as the target says (a GPU, ``precision``), else ``-`` and
    why."""
    if target is None:
        return "- (no target)"
    if not _measured(value):  # None, or NaN: a measure that failed is not a short one
        return NOT_MEASURED
    if row["on_gpu"] is not True:
        return "- (not a GPU run)" if row["on_gpu"] is False else "- (device not recorded)"
    if row["precision"] != precision:
        return f"- (target set in {precision})"
    ok = value >= target if higher else value <= target
    return "met" if ok else "SHORT"


def _path(row: Dict) -> str:
    return f"compiled ({row.get('compile_mode', 'default')})" if row["compiled"] and row.get("compile_mode") \
        else "compiled" if row["compiled"] else "eager"


def _f(x: Optional[float], digits: int = 2) -> str:
    return f"{x:.{digits}f}" if _measured(x) else NOT_MEASURED


def _missing(columns: List[str], **known) -> Dict:
    row = {c: "" for c in columns}
    row.update(known)
    for c in columns:
        if row[c] == "" and c in ("ratio", "verdict"):
            row[c] = NOT_MEASURED
    return row


def _model_systems(results: List[Dict]):
    """``(system, its rows of the model bench's files, reference_of)`` for the table's systems and any other
    measured one (not the reference); ``reference_of(row)`` is the reference's row of the same file."""
    model_rows = [r for res in results if res["kind"] == "model" for r in res["rows"]]
    systems = list(MODEL_SYSTEMS) + [r["system"] for r in model_rows
                                     if r["system"] not in MODEL_SYSTEMS and r["system"] != r["reference"]]

    def reference_of(row: Dict) -> Dict:
        return next(x for x in model_rows if x["file"] == row["file"] and x["system"] == row["reference"])

    for name in dict.fromkeys(systems):
        yield name, [r for r in model_rows if r["system"] == name], reference_of


def train_table(results: List[Dict]) -> Dict:
    """Whole-model training words/s (and training memory) per system and file."""
    cols = ["system", "path", "ratio", "target", "verdict", "words/s (system / reference)", "training memory ratio",
            "device", "precision", "file"]
    rows = []
    for name, found, reference_of in _model_systems(results):
        target = TRAIN_TARGETS.get(name)
        if not found:
            rows.append(_missing(cols, system=name, target=_target(target, ">="), path="eager"))
        for r in found:
            ref = reference_of(r)
            rows.append({"system": name, "path": _path(r), "ratio": _f(r["train_wps_ratio"]),
                         "target": _target(target, ">="), "verdict": _verdict(r["train_wps_ratio"], target, True, r,
                                                                             "fp16"),
                         "words/s (system / reference)": f"{r['train_wps']:,.0f} / {ref['train_wps']:,.0f} "
                                                         f"({r['reference']})",
                         "training memory ratio": _memory(r), "device": r["device"], "precision": r["precision"],
                         "file": r["file"]})
    return {"title": "Whole-model training words/s, ratio to the transformer of the same run (issue 49: "
                     "fairseq-train --fp16 on a GPU, median over the complete epochs)", "columns": cols, "rows": rows}


def _memory(r: Dict) -> str:
    ratio = r.get("model_mem_mib_ratio")
    if not _measured(ratio):  # NaN: the memory measure failed
        return NOT_MEASURED
    kind = {True: "GPU peak", False: "CPU count", None: "device not recorded"}[r["on_gpu"]]
    return f"{ratio:.2f}x ({kind})"


def _target(target: Optional[float], sign: str) -> str:
    return "-" if target is None else f"{sign} {target}" + ("x" if sign == "<=" else "")


def generate_table(results: List[Dict]) -> Dict:
    cols = ["system", "path", "ratio", "sentences/s (system / reference)", "device", "precision", "file"]
    rows = []
    for name, found, reference_of in _model_systems(results):
        if not found:
            rows.append(_missing(cols, system=name, path="eager"))
        for r in found:
            ref = reference_of(r)
            rows.append({"system": name, "path": _path(r), "ratio": _f(r["gen_sps_ratio"]),
                         "sentences/s (system / reference)": f"{r['gen_sps']:.1f} / {ref['gen_sps']:.1f}",
                         "device": r["device"], "precision": r["precision"], "file": r["file"]})
    return {"title": "fairseq-generate sentences/s (beam 4, every hypothesis the same length), ratio to the "
                     "transformer of the same run (no target)", "columns": cols, "rows": rows}


def _encoder_rows(results: List[Dict]) -> List[Dict]:
    return [r for res in results if res["kind"] == "encoder" for r in res["rows"]]


def encoder_time_table(results: List[Dict]) -> Dict:
    cols = ["system", "T", "precision", "path", "ratio", "target", "verdict", "ms (system / stock)", "device", "file"]
    rows = []
    enc = _encoder_rows(results)
    for name in ENCODER_SYSTEMS:
        target = ENCODER_TIME_TARGETS.get(name)
        for T in ENCODER_LENGTHS:
            found = [r for r in enc if r["system"] == name and r["T"] == T]
            if not any(r["precision"] == ENCODER_PRECISION and not r["compiled"] for r in found):
                rows.append(_missing(cols, system=name, T=T, precision=ENCODER_PRECISION, path="eager",
                                     target=_target(target, ">=")))
            for r in found:
                rows.append({"system": name, "T": T, "precision": r["precision"], "path": _path(r),
                             "ratio": _f(r["time_ratio"]), "target": _target(target, ">="),
                             "verdict": _verdict(r["time_ratio"], target, True, r, ENCODER_PRECISION),
                             "ms (system / stock)": f"{r['seconds'] * 1e3:.1f} / {r['stock_seconds'] * 1e3:.1f}",
                             "device": r["device"], "file": r["file"]})
    return {"title": f"Encoder time (forward + backward), stock seconds / system seconds, T = "
                     f"{' and '.join(map(str, ENCODER_LENGTHS))} (issue 49: {ENCODER_PRECISION} on a GPU)",
            "columns": cols, "rows": rows}


def peak_table(results: List[Dict]) -> Dict:
    cols = ["system", "precision", "path", "ratio", "target", "verdict", "MiB (system / stock)", "device", "file"]
    rows = []
    enc = _encoder_rows(results)
    for name in ENCODER_SYSTEMS:
        target = PEAK_TARGETS.get(name)
        found = [r for r in enc if r["system"] == name and r["T"] == PEAK_LENGTH]
        if not any(r["precision"] == ENCODER_PRECISION and not r["compiled"] for r in found):
            rows.append(_missing(cols, system=name, precision=ENCODER_PRECISION, path="eager",
                                 target=_target(target, "<=")))
        for r in found:
            peak = r.get("cuda_peak_ratio") if _measured(r.get("cuda_peak_ratio")) else None
            rows.append({"system": name, "precision": r["precision"], "path": _path(r),
                         "ratio": NOT_MEASURED if peak is None else f"{peak:.2f}x", "target": _target(target, "<="),
                         "verdict": _verdict(peak, target, False, r, ENCODER_PRECISION) if peak is not None else
                         f"{NOT_MEASURED} (no GPU peak in a {'CPU' if r['on_gpu'] is False else 'this'} run)",
                         "MiB (system / stock)": "" if peak is None else
                         f"{r['cuda_peak_mib']:.0f} / {r['cuda_peak_mib'] / peak:.0f}",
                         "device": r["device"], "file": r["file"]})
    return {"title": f"GPU peak memory of the encoder step at T = {PEAK_LENGTH}, system / stock (issue 49: "
                     f"{ENCODER_PRECISION} on a GPU)", "columns": cols, "rows": rows}


def compiled_table(results: List[Dict]) -> Dict:
    """The compiled path against the eager one, measured on the same device in the same precision: per encoder and
    length, eager and compiled milliseconds (the stock encoder's too) and their quotient; per whole model, words/s."""
    cols = ["system", "T", "precision", "eager ms", "compiled ms", "speed-up (eager / compiled)",
            "ratio to stock, eager", "ratio to stock, compiled", "device", "files"]
    rows = []
    enc = _encoder_rows(results)
    compiled = [r for r in enc if r["compiled"]]
    for name in (*ENCODER_SYSTEMS, "stock"):
        for T in COMPILED_LENGTHS:
            pairs = []
            for c in compiled:
                if c["T"] != T or (name != "stock" and c["system"] != name):
                    continue
                for e in enc:
                    if not e["compiled"] and e["T"] == T and e["device"] == c["device"] and \
                            e["precision"] == c["precision"] and (name == "stock" or e["system"] == name):
                        pairs.append((e, c))
            if name == "stock":  # one per pair of files: the stock encoder is in every row
                pairs = list({(e["file"], c["file"]): (e, c) for e, c in pairs}.values())
            if not pairs:
                rows.append(_missing(cols, system=name, T=T, precision=ENCODER_PRECISION, **{
                    "speed-up (eager / compiled)": NOT_MEASURED}))
            for e, c in pairs:
                key = "stock_seconds" if name == "stock" else "seconds"
                rows.append({"system": name, "T": T, "precision": c["precision"],
                             "eager ms": f"{e[key] * 1e3:.1f}", "compiled ms": f"{c[key] * 1e3:.1f}",
                             "speed-up (eager / compiled)": f"{e[key] / c[key]:.2f}",
                             "ratio to stock, eager": "" if name == "stock" else _f(e["time_ratio"]),
                             "ratio to stock, compiled": "" if name == "stock" else _f(c["time_ratio"]),
                             "device": c["device"], "files": f"{e['file']}, {c['file']}"})
    model_rows = [r for res in results if res["kind"] == "model" for r in res["rows"]]
    model_cols = ["system", "precision", "eager words/s", "compiled words/s", "speed-up (compiled / eager)",
                  "ratio to the transformer, eager", "compiled", "device", "files"]
    model = []
    for c in (r for r in model_rows if r["compiled"]):
        for e in model_rows:
            if not e["compiled"] and e["system"] == c["system"] and e["device"] == c["device"] and \
                    e["precision"] == c["precision"]:
                model.append({"system": c["system"], "precision": c["precision"],
                              "eager words/s": f"{e['train_wps']:,.0f}", "compiled words/s": f"{c['train_wps']:,.0f}",
                              "speed-up (compiled / eager)": f"{c['train_wps'] / e['train_wps']:.2f}",
                              "ratio to the transformer, eager": _f(e["train_wps_ratio"]),
                              "compiled": _f(c["train_wps_ratio"]), "device": c["device"],
                              "files": f"{e['file']}, {c['file']}"})
    if not model:
        model.append(_missing(model_cols, system="any", **{"speed-up (compiled / eager)": NOT_MEASURED}))
    return {"title": "Compiled layers (--syntax-compile) against eager, same device and precision: encoders (the "
                     "stock encoder compiled too)", "columns": cols, "rows": rows,
            "model": {"title": "Whole-model training, compiled against eager (the reference transformer stays "
                               "eager)", "columns": model_cols, "rows": model}}


# -- report -------------------------------------------------------------------------------------------------------
def report(results: List[Dict]) -> Dict:
    tables = {"train": train_table(results), "generate": generate_table(results),
              "encoder_time": encoder_time_table(results), "peak_memory": peak_table(results),
              "compiled": compiled_table(results)}
    # one verdict per target of the issue (measure, system, length; the eager path): SHORT if a file measured it
    # short as the target says, else met if one measured it met, else not measured (a CPU run does not count)
    found: Dict[tuple, List[str]] = {}
    for key in ("train", "encoder_time", "peak_memory"):
        for r in tables[key]["rows"]:
            if r["path"] == "eager" and r["target"] != "-":
                found.setdefault((key, r["system"], r.get("T")), []).append(r["verdict"])
    verdicts = ["SHORT" if "SHORT" in v else "met" if "met" in v else NOT_MEASURED for v in found.values()]
    summary = {"targets": len(verdicts), "met": verdicts.count("met"), "short": verdicts.count("SHORT"),
               "not_measured": verdicts.count(NOT_MEASURED)}
    sources = [{"file": res["file"], "kind": res["kind"], "setup": res["setup"],
                "devices": sorted({r["device"] for r in res["rows"]}),
                "precisions": sorted({r["precision"] for r in res["rows"]}),
                "compiled": any(r["compiled"] for r in res["rows"])} for res in results]
    return {"sources": sources, "tables": tables, "summary": summary}


def _markdown_table(table: Dict) -> List[str]:
    cols = table["columns"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in table["rows"]]
    return lines


def markdown(rep: Dict) -> str:
    lines = ["# Issue 49's GPU targets against the measured files", "", "Files read:"]
    for s in rep["sources"]:
        what = "encoders (bench.length)" if s["kind"] == "encoder" else "whole models (bench)"
        lines.append(f"- `{s['file']}`: {what}{', compiled' if s['compiled'] else ''}; "
                     f"{', '.join(s['devices'])}; {', '.join(s['precisions'])}"
                     + (f"; {s['setup']}" if s["setup"] else ""))
    for key in ("train", "generate", "encoder_time", "peak_memory", "compiled"):
        t = rep["tables"][key]
        lines += ["", f"## {t['title']}", "", *_markdown_table(t)]
        if "model" in t:
            lines += ["", f"### {t['model']['title']}", "", *_markdown_table(t["model"])]
    s = rep["summary"]
    lines += ["", f"Issue 49's {s['targets']} targets (eager path): {s['met']} met, {s['short']} SHORT, "
                  f"{s['not_measured']} not measured on a GPU in the target's precision."]
    return "\n".join(lines) + "\n"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                epilog="example:\n  python -m syntax_nmt.bench.gpu_targets out/*.json --out results/gpu",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    reads(p.add_argument("files", nargs="+", metavar="FILE",
                         help="bench-length.json / bench.json files (the benches' outputs, under any name)"))
    writes(p.add_argument("--out", metavar="DIR", help="also write DIR/gpu-targets.md and DIR/gpu-targets.json"), "dir",
           paths=lambda d, _: [os.path.join(d, "gpu-targets.md"), os.path.join(d, "gpu-targets.json")])
    return p


def main(argv=None) -> int:
    from syntax_nmt.cli_errors import run

    a = parse_args(get_parser(), argv)
    names = [os.path.basename(f) for f in a.files]  # the paths themselves where two files share a name
    results = [run(PROG, load, f, f if names.count(n) > 1 else n) for f, n in zip(a.files, names)]
    rep = report(results)
    text = markdown(rep)
    sys.stdout.write(text)
    if a.out:
        def write():
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, "gpu-targets.md"), "w", encoding="utf-8") as f:
                f.write(text)
            with open(os.path.join(a.out, "gpu-targets.json"), "w", encoding="utf-8") as f:
                json.dump(rep, f, indent=2)
        run(PROG, write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
