"""``fractions``: BLEU against the share of training data (Syntax-Infused Transformer, Table 1).

Reads scored systems laid out as ``RESULTS/[PRESET-]p{PERCENT}/{SYSTEM}.json`` (the JSON that
``syntax-nmt-evaluate score`` writes): the WMT14 recipe's ``WORK/eval`` after
``PERCENT="1 5 10 25 50 100" run_all.sh`` (``sit-paper-p5`` with ``PRESET=sit-paper``; pick one
preset with ``--preset``), or ``demo-out/fractions/eval`` of ``python -m syntax_nmt.demo --fractions ...``. Files named ``{SYSTEM}.seed{N}.json`` are
runs of one system with several seeds: the table shows their mean and standard deviation.
The training subsets of one seed are nested (1 % within 5 % within ...), as the recipe's
``prepare.py`` and the demo draw them (:func:`syntax_nmt.data.subsample.subsample_mask`).
"""

import json
import logging
import math
import os
import re
from typing import Dict, List, Optional

from syntax_nmt.analyze import common
from syntax_nmt.analyze.common import AnalyzeError

_PERCENT = re.compile(r"^(?:(.+)-)?p(\d+(?:\.\d+)?)$")

logger = logging.getLogger(__name__)


def read_score(path: str, metric: str) -> Optional[float]:
    """``metric`` of a score JSON (``syntax-nmt-evaluate score``), or None, with a warning naming
    the file, if the file is malformed (not JSON, not an object, without a finite number for
    ``metric``): its system is shown as ``-`` for that share of the data."""
    try:
        with open(path, encoding="utf-8") as f:
            scored = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        problem = f"is not a JSON file ({e})"
    else:
        value = scored.get(metric) if isinstance(scored, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        problem = ("is not a JSON object of scores" if not isinstance(scored, dict) else
                   f"has no {metric!r} score" if metric not in scored else f"has {metric!r}: {value!r}, not a number")
    logger.warning("%s %s: skipped (its system shows '-' for this share of the data)", path, problem)
    return None


def collect(results: str, metric: str = "sacrebleu", preset: Optional[str] = None) -> Dict:
    """``{"percents": [...], "systems": {name: {percent: [scores of each seed]}}}``."""
    if not os.path.isdir(results):
        raise AnalyzeError(f"{results} is not a directory")
    found = {}
    for entry in sorted(os.listdir(results)):
        m = _PERCENT.match(entry)
        if m and os.path.isdir(os.path.join(results, entry)):
            found.setdefault(m.group(1) or "", []).append((entry, float(m.group(2))))
    if preset is not None:
        found = {k: v for k, v in found.items() if k == preset}
    elif len(found) > 1:
        raise AnalyzeError(f"{results} holds the presets {sorted(k or '(none)' for k in found)}: "
                           "pick one with --preset")
    systems: Dict[str, Dict[float, List[float]]] = {}
    percents = []
    for entry, percent in next(iter(found.values()), []):
        scored_any = False
        fnames = sorted(f for f in os.listdir(os.path.join(results, entry)) if f.endswith(".json"))
        seedless = {f[: -len(".json")]: f for f in fnames if common.split_seed(f[: -len(".json")])[1] is None}
        for fname in fnames:
            name, seed = common.split_seed(fname[: -len(".json")])
            if seed is not None and name in seedless:  # one run would be averaged as if it were another seed
                raise AnalyzeError(f"{os.path.join(results, entry)} holds {seedless[name]} and {fname}: a run of "
                                   f"{name} without a seed beside runs with seeds; rename it {name}.seedN.json "
                                   f"(its seed) or move it away")
        for fname in fnames:
            score = read_score(os.path.join(results, entry, fname), metric)
            if score is None:
                continue
            name, _ = common.split_seed(fname[: -len(".json")])
            systems.setdefault(name, {}).setdefault(percent, []).append(score)
            scored_any = True
        if scored_any:
            percents.append(percent)
    if not systems:
        raise AnalyzeError(f"no scored systems ([PRESET-]p<PERCENT>/<SYSTEM>.json with {metric!r}) under {results}")
    return {"percents": sorted(percents), "systems": systems}


def table(collected: Dict, baseline: Optional[str]) -> Dict:
    names = list(collected["systems"])
    if baseline is None:
        baseline = next((n for n in ("transformer", "baseline") if n in names), names[0])
    if baseline not in names:
        raise AnalyzeError(f"baseline {baseline!r} is not among the systems {names}")
    names = [baseline] + [n for n in names if n != baseline]
    rows = []
    for p in collected["percents"]:
        row = {"percent": p, "systems": {}}
        for n in names:
            scores = collected["systems"][n].get(p, [])
            m, sd = common.mean_sd(scores)
            row["systems"][n] = {"mean": m, "sd": sd, "runs": scores}
        base = row["systems"][baseline]["mean"]
        for n in names[1:]:
            row["systems"][n]["delta"] = row["systems"][n]["mean"] - base
        rows.append(row)
    return {"baseline": baseline, "systems": names, "rows": rows}


def markdown(result: Dict, metric: str) -> str:
    names, base = result["systems"], result["baseline"]
    header = ["data %", *names, *[f"{n} - {base}" for n in names[1:]]]
    rows = []
    for row in result["rows"]:
        cells = []
        for n in names:
            s = row["systems"][n]
            cells.append("-" if not s["runs"] else
                         f"{s['mean']:.2f}" + (f" ± {s['sd']:.2f} (n={len(s['runs'])})" if len(s["runs"]) > 1 else ""))
        deltas = [row["systems"][n]["delta"] for n in names[1:]]
        rows.append([f"{row['percent']:g}", *cells, *[f"{d:+.2f}" if d == d else "-" for d in deltas]])
    return "\n".join([f"# {metric} by share of the training data", "",
                      "Nested subsamples of the training data (Syntax-Infused Transformer, Table 1).", "",
                      common.markdown_table(header, rows)])


def plot(result: Dict, metric: str):
    plt = common.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    percents = [r["percent"] for r in result["rows"]]
    for n in result["systems"]:
        means = [r["systems"][n]["mean"] for r in result["rows"]]
        sds = [r["systems"][n]["sd"] for r in result["rows"]]
        ax.errorbar(percents, means, yerr=sds, marker="o", capsize=3, label=n)
    ax.set_xscale("log")
    ax.set_xticks(percents)
    ax.set_xticklabels([f"{p:g}" for p in percents])
    ax.set_xlabel("% of the training data (nested subsamples)")
    ax.set_ylabel(metric)
    ax.set_title("learning curve by data fraction")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def run(args) -> List[str]:
    result = table(collect(args.results, args.metric, args.preset), args.baseline)
    result["metric"] = args.metric
    return common.write_outputs(args.out, "fractions", result, markdown(result, args.metric),
                                {"fractions": plot(result, args.metric)})


def add_args(p) -> None:
    p.add_argument("--results", required=True,
                   help="directory with p<PERCENT>/<SYSTEM>[.seed<N>].json (syntax-nmt-evaluate score outputs)")
    p.add_argument("--preset", help="the recipe's PRESET whose runs (PRESET-pP) to read; '' for plain pP")
    p.add_argument("--baseline", help="system the others are compared with (default: transformer or baseline)")
    p.add_argument("--metric", default="sacrebleu", help="key of the score JSON (sacrebleu, compound_split_bleu)")
    p.add_argument("--out", required=True, help="output directory (fractions.json, fractions.md, fractions.png)")
