"""The demo's report: per-system scores over seeds (the statistics are :mod:`syntax_nmt.evaluation.compare`'s), the table,
the verdicts of the quality check, the bar chart, parameter counts."""

from typing import Dict, List, Sequence

from syntax_nmt.evaluation import compare
from syntax_nmt.systems import BASELINE

def summarize(runs: Dict[tuple, dict], systems: Sequence[str], seeds: Sequence[int],
              params: Dict[str, int]) -> List[dict]:
    """One row per system (baseline first): per-seed sacreBLEU and compound-split BLEU, their means and
    sample sds (:func:`syntax_nmt.evaluation.compare.summarize`)."""
    return compare.summarize(runs, systems, seeds, ("sacrebleu", "compound_split_bleu"), params)


def format_table(rows: List[dict], args, seeds: Sequence[int]) -> str:
    base = rows[0]
    updates = getattr(args, "updates", None) or args.max_update
    cut = f" (CUT from --max-update {args.max_update} to fit the time budget)" if updates != args.max_update else ""
    lines = [f"=== sacreBLEU on the synthetic test set ({base['sentences']} sentences), {len(seeds)} training seeds "
             f"({', '.join(map(str, seeds))}), identical budgets: {updates} updates{cut} of "
             f"{args.max_tokens} tokens",
             f"sacreBLEU signature: {base['signature']}"]
    head = (f"{'system':<16} {'BLEU mean ± sd':>15} {'per seed':>20} {'Δ ' + base['system'][:11]:>14} "
            f"{'p pooled':>9} {'seeds p<.05':>11} {'params':>10} {'train s':>7}")
    lines += [head, "-" * len(head)]
    for r in rows:
        per_seed = " ".join(f"{b:.1f}" for b in r["sacrebleu"])
        if r is base:
            delta, p, sig = "-", "-", "-"
        else:
            delta = f"{r['mean'] - base['mean']:+.2f}"
            p = "-" if r.get("p_pooled") is None else f"{r['p_pooled']:.4f}" + ("*" if r["p_pooled"] < 0.05 else " ")
            ps = r.get("p_per_seed") or []
            sig = f"{sum(x < 0.05 for x in ps)}/{len(ps)}" if ps else "-"
        train_s = sum(r["train_seconds"]) / len(r["train_seconds"])
        lines.append(f"{r['system']:<16} {r['mean']:>8.2f} ± {r['sd']:<4.2f} {per_seed:>20} {delta:>14} {p:>9} "
                     f"{sig:>11} {r['params'] or 0:>10,} {train_s:>7.0f}")
    from syntax_nmt.evaluation.significance import caption

    lines.append(caption(("bs",), len(seeds), baseline=base["system"]) + " seeds p<.05: seeds whose own test "
                 "(that seed's translations alone) is significant")
    if len(seeds) == 1:
        lines.append("ONE training seed: the sd is 0 by construction, and no difference can be judged against the "
                     "variation between seeds (p says only that the two models' translations differ)")
    return "\n".join(lines)


def quality_check(rows: List[dict], baseline: str = BASELINE, margin: float = 1.0,
                  sgnet: str = "sgnet") -> List[tuple]:
    """The claims the slow quality check asserts, as ``(claim, ok, detail)``.

    1. The best syntax variant beats the baseline by at least ``margin`` BLEU (means over seeds).
    2. SG-Net alone is not worse than the baseline by more than noise: its mean is at least the
       baseline's minus two standard errors of the difference of the means
       (``2 * sqrt(sd_b^2 / n_b + sd_s^2 / n_s)``, seed-to-seed variation).
    """
    by = {r["system"]: r for r in rows}
    if baseline not in by or len(rows) < 2:
        return []
    base = by[baseline]
    others = [r for r in rows if r["system"] != baseline]
    best = max(others, key=lambda r: r["mean"])
    gain = best["mean"] - base["mean"]
    out = [(f"best syntax variant beats {baseline} by >= {margin} BLEU", gain >= margin,
            f"{best['system']} {best['mean']:.2f} vs {base['mean']:.2f} ({gain:+.2f})")]
    if sgnet in by:
        s = by[sgnet]
        noise = compare.noise_bound(base, s)
        diff = s["mean"] - base["mean"]
        out.append((f"{sgnet} not worse than {baseline} by more than noise", diff >= -noise,
                    f"{s['mean']:.2f} vs {base['mean']:.2f} ({diff:+.2f}; noise 2 SE = {noise:.2f})"))
    return out


def plot_bleu(rows: List[dict], path: str, title: str) -> None:
    """The demo's bar chart of sacreBLEU over seeds (:func:`syntax_nmt.evaluation.compare.plot_bars`)."""
    compare.plot_bars(rows, path, title, "sacrebleu", "sacreBLEU (mean ± sd over seeds; dots: seeds)")


def count_params(checkpoint: str) -> int:
    """Parameters of the model saved in a fairseq checkpoint (buffers such as ``version`` left out)."""
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401  (weights-only loading of fairseq checkpoints)

    state = torch.load(checkpoint, map_location="cpu")
    return sum(v.numel() for k, v in state["model"].items() if not k.endswith("_float_tensor") and "version" not in k)
