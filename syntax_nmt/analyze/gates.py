"""``gates``: how much each encoder layer relies on syntax (SLA, Li et al. 2021, Fig. 2).

For every SLA layer, the mean gate value ``g`` (the weight of the syntax-aware local
attention against the global one, eq. 5-6) over all source tokens of a test set (words'
subwords; EOS/BOS/padding excluded), one line per checkpoint (e.g. SLA against its window
baseline WLA, as in the paper's figure). Also the learned mixing weights ``alpha`` of
SG-Net's dual context aggregation (``alpha`` weighs the ordinary encoder states, eq. 9) and
SEPREM's layers (``alpha`` weighs the syntax-aware representation, eq. 1), each with what it weighs.
"""

from typing import Dict, List

from syntax_nmt.analyze import common, models
from syntax_nmt.analyze.common import AnalyzeError


def collect(loaded: models.Loaded, split: str = "test", max_tokens: int = 4000) -> Dict:
    """Mean gate per SLA layer over ``split`` and the alphas of ``loaded``."""
    sums: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    layers: Dict[str, int] = {}
    sentences = 0
    with models.recording(loaded.model) as mods:
        for batch in models.batches(loaded, split, max_tokens):
            net_input = batch["net_input"]
            models.encode(loaded, net_input)
            keep = ~models.special_mask(loaded, net_input["src_tokens"])
            sentences += int(net_input["src_tokens"].size(0))
            for name, m in mods:
                if not m.recorded or models.kind_of(m) != "sla":
                    continue
                g = m.recorded["gate"].float()
                sums[name] = sums.get(name, 0.0) + float(g[keep].sum())
                counts[name] = counts.get(name, 0) + int(keep.sum())
                layers[name] = models.layer_of(name)
                m.recorded = None
    gates = [{"module": n, "layer": layers[n], "mean_gate": sums[n] / counts[n], "tokens": counts[n]}
             for n in sorted(sums, key=lambda n: (layers[n] is None, layers[n]))]
    return {"name": loaded.name, "checkpoint": loaded.path, "sentences": sentences, "gates": gates,
            "alphas": [{"module": n, "alpha": a, "learned": learned, "weighs": weighs}
                       for n, a, learned, weighs in models.alphas(loaded.model)]}


def markdown(result: Dict) -> str:
    parts = [f"# Syntax gates and mixing weights ({result['split']} split)", ""]
    layers = sorted({g["layer"] for s in result["systems"] for g in s["gates"]})
    if layers:
        header = ["encoder layer", *[s["name"] for s in result["systems"]]]
        rows = []
        for k in layers:
            row = [k]
            for s in result["systems"]:
                g = [x["mean_gate"] for x in s["gates"] if x["layer"] == k]
                row.append(f"{g[0]:.4f}" if g else "-")
            rows.append(row)
        parts += ["Mean SLA gate g per layer over all source tokens (g = 1: only the local attention).", "",
                  common.markdown_table(header, rows), ""]
    else:
        parts += ["No SLA layer in these checkpoints.", ""]
    alpha_rows = [[s["name"], a["module"], f"{a['alpha']:.4f}", a["weighs"], "yes" if a["learned"] else "no (fixed)"]
                  for s in result["systems"] for a in s["alphas"]]
    if alpha_rows:
        parts += ["Mixing weights alpha:", "",
                  common.markdown_table(["system", "module", "alpha", "alpha weighs", "learned"], alpha_rows)]
    else:
        parts += ["No module with a mixing weight alpha."]
    return "\n".join(parts)


def plot(result: Dict):
    plt = common.pyplot()
    with_alpha = [s for s in result["systems"] if s["alphas"]]
    ncols = 1 + bool(with_alpha)
    fig, axes = plt.subplots(1, ncols, figsize=(5.5 * ncols, 4), squeeze=False)
    ax = axes[0][0]
    for s in result["systems"]:
        if s["gates"]:
            ax.plot([g["layer"] for g in s["gates"]], [g["mean_gate"] for g in s["gates"]], marker="o",
                    label=s["name"])
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_xlabel("encoder layer (0 = first, as --sla-layers counts)")
    ax.set_ylabel("mean gate g (local attention weight)")
    ax.set_ylim(0, 1)
    ax.set_title("SLA gate per layer")
    ax.grid(alpha=0.3)
    if any(s["gates"] for s in result["systems"]):
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no SLA layer", ha="center", va="center", transform=ax.transAxes)
    if with_alpha:
        ax = axes[0][1]
        labels, values = [], []
        for s in with_alpha:
            for a in s["alphas"]:
                labels.append(f"{s['name']}\n{a['module'].replace('encoder.', '')}"
                              + ("" if a["learned"] else " (fixed)") + f"\nweighs: {a['weighs'].split(' (')[0]}")
                values.append(a["alpha"])
        ax.barh(range(len(values)), values)
        ax.set_yticks(range(len(values)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xlim(min(0.0, *values), max(1.0, *values))  # SEPREM's alpha is a free scalar
        for i, v in enumerate(values):
            ax.text(max(v, 0.0), i, f" {v:.3f}", va="center", fontsize=7)
        ax.set_xlabel("alpha (what it weighs: under each label)")
        ax.set_title("mixing weights alpha")
    fig.tight_layout()
    return fig


def run(args) -> List[str]:
    systems = [common.parse_named(s, "checkpoint") for s in args.system]
    common.unique_names(systems)
    result = {"split": args.split, "systems": []}
    for name, path in systems:
        result["systems"].append(collect(models.load(name, path, args.data, args.split), args.split, args.max_tokens))
    if not any(s["gates"] or s["alphas"] for s in result["systems"]):
        raise AnalyzeError("none of the checkpoints has SLA gates or a mixing weight alpha")
    return common.write_outputs(args.out, "gates", result, markdown(result), {"gates": plot(result)})


def add_args(p) -> None:
    p.add_argument("--data", required=True, help="binarized data directory")
    p.add_argument("--system", action="append", required=True, metavar="[NAME=]CHECKPOINT",
                   help="a checkpoint (repeat: one line each)")
    p.add_argument("--split", default="test")
    p.add_argument("--max-tokens", type=int, default=4000, help="tokens per batch")
    p.add_argument("--out", required=True, help="output directory (gates.json, gates.md, gates.png)")

