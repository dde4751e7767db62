"""``attention``: attention maps of one test sentence (``--sentence ID``), or of one raw sentence
(``--text``) annotated on the fly exactly as fairseq-interactive annotates it.

* Cross-attention of the last decoder layer (mean over heads; fairseq's ``alignment_layer``),
  for several checkpoints side by side (Syntax-Infused Transformer, Fig. 3): each row is a
  target subword of the model's own beam translation (``--reference``: of the reference,
  so that the rows of every panel are the same), each column a source subword.
* SG-Net's syntax-guided self-attention next to its SDOI mask (SG-Net, Fig. 6).
* SLA's local and global attention and its per-token gate (SLA, Fig. 3), for one layer.

Rows of every attention matrix are distributions over the source (they sum to 1).
The encoder maps come from the modules' ``record`` contract (:mod:`.models`).
"""

from argparse import Namespace
from typing import Dict, List, Optional

import numpy as np
import torch

from syntax_nmt.analyze import common, models
from syntax_nmt.analyze.common import AnalyzeError


def _labels(dictionary, tokens: torch.Tensor) -> List[str]:
    return [dictionary[int(t)] for t in tokens]


def _strip_pad(tokens: torch.Tensor, pad: int) -> torch.Tensor:
    return tokens[tokens.ne(pad)]


def translate(loaded: models.Loaded, smp: Dict, beam: int = 4, lenpen: float = 1.0) -> torch.Tensor:
    """Target tokens (EOS-terminated) of the best beam hypothesis of the one-sentence batch ``smp``."""
    gen = loaded.task.build_generator([loaded.model], Namespace(beam=beam, lenpen=lenpen))
    with torch.no_grad():
        hypos = loaded.task.inference_step(gen, [loaded.model], smp)
    return hypos[0][0]["tokens"].cpu()


def cross_attention(loaded: models.Loaded, smp: Dict, target: torch.Tensor) -> np.ndarray:
    """``(len(target), src_len)`` cross-attention of the last decoder layer (mean over heads),
    teacher-forcing ``target`` (EOS-terminated)."""
    eos = loaded.task.target_dictionary.eos()
    net_input = dict(smp["net_input"])
    net_input["prev_output_tokens"] = torch.cat([torch.tensor([eos]), target[:-1]]).unsqueeze(0)
    with torch.no_grad():
        _, extra = loaded.model(**net_input)
    attn = extra.get("attn")
    if not attn or attn[0] is None:
        raise AnalyzeError(f"{loaded.name}: the decoder returned no attention")
    return attn[0][0].float().cpu().numpy()


def encoder_maps(loaded: models.Loaded, smp: Dict) -> List[Dict]:
    """What every recording module of the encoder recorded for the one-sentence batch ``smp``."""
    out = []
    with models.recording(loaded.model) as mods:
        models.encode(loaded, smp["net_input"])
        for name, m in mods:
            rec = m.recorded
            if not rec:
                continue
            kind = models.kind_of(m)
            entry = {"module": name, "layer": models.layer_of(name), "kind": kind}
            if kind == "sgnet":
                entry.update(attn=rec["attn"][0].float().mean(0).numpy(), heads=rec["attn"][0].float().numpy(),
                             mask=rec["mask"][0].numpy())
            elif kind == "sla":
                entry.update(gate=rec["gate"][0].float().numpy(), local=rec["local"][0].float().mean(0).numpy(),
                             **{"global": rec["global"][0].float().mean(0).numpy()})
            else:
                continue
            out.append(entry)
    return out


def text_id(text: str) -> str:
    """The name of a raw sentence in file names: ``text-`` and 8 hex digits of its SHA-1."""
    import hashlib

    return "text-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def analyze(systems, data: str, sentence: Optional[int] = 0, split: str = "test", reference: bool = False,
            beam: int = 4, lenpen: float = 1.0, text: Optional[str] = None, text_target: Optional[str] = None,
            annotation: Optional[Dict] = None) -> Dict:
    """Attention maps of test sentence ``sentence`` of ``split``, or of the raw sentence ``text``
    (annotated on the fly with the checkpoint's annotation settings; ``text_target``: its
    reference, for ``reference=True``)."""
    if text is not None and reference and text_target is None:
        raise AnalyzeError("--reference with --text needs the reference translation: --text-target")
    ident = sentence if text is None else text_id(text)
    result = {"split": split if text is None else None, "sentence": ident, "text": text,
              "rows": "reference" if reference else "beam translation", "systems": []}
    src_labels = None
    for name, path in systems:
        if text is None:
            loaded = models.load(name, path, data, split)
            smp = models.sample(loaded, [sentence], split)
        else:
            loaded = models.load(name, path, data, None)
            smp = models.sample_text(loaded, text, text_target if reference else None, annotation)
        src = _strip_pad(smp["net_input"]["src_tokens"][0], loaded.task.source_dictionary.pad())
        labels = _labels(loaded.task.source_dictionary, src)
        if src_labels is not None and labels != src_labels:
            raise AnalyzeError(f"{name} reads another source sentence than the first system (other dictionaries?)")
        src_labels = labels
        tgt_dict = loaded.task.target_dictionary
        target = (_strip_pad(smp["target"][0], tgt_dict.pad()) if reference
                  else translate(loaded, smp, beam, lenpen))
        entry = {"name": name, "checkpoint": path, "target": _labels(tgt_dict, target),
                 "cross_attention": cross_attention(loaded, smp, target), "encoder": encoder_maps(loaded, smp)}
        result["systems"].append(entry)
    result["source"] = src_labels
    return result


def _heatmap(ax, matrix, xlabels, ylabels, title, cmap="viridis", vmax=None):
    im = ax.imshow(matrix, cmap=cmap, vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(xlabels)))
    ax.set_xticklabels(xlabels, rotation=90, fontsize=7)
    ax.set_yticks(range(len(ylabels)))
    ax.set_yticklabels(ylabels, fontsize=7)
    ax.set_title(title, fontsize=9)
    return im


def plots(result: Dict, sla_layer: Optional[int] = None) -> Dict[str, object]:
    plt = common.pyplot()
    src = result["source"]
    sid = result["sentence"]
    systems = result["systems"]
    figs = {}
    n = len(systems)
    ncols = min(n, 3)
    nrows = (n + ncols - 1) // ncols
    width = max(4.0, 0.28 * len(src) + 2)
    height = max(3.5, 0.28 * max(len(s["target"]) for s in systems) + 1.5)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             layout="constrained")
    flat = [ax for row in axes for ax in row]
    vmax = max(float(np.max(s["cross_attention"])) for s in systems)  # one colour scale for all panels
    for ax, s in zip(flat, systems):
        im = _heatmap(ax, s["cross_attention"], src, s["target"], f"{s['name']}: cross-attention, last decoder layer",
                      vmax=vmax)
        ax.set_xlabel("source subword")
        ax.set_ylabel("target subword")
    for ax in flat[n:]:
        ax.axis("off")
    fig.colorbar(im, ax=flat[:n], shrink=0.6)
    figs[f"attention-{sid}-cross"] = fig
    side = max(4.0, 0.28 * len(src) + 2)
    for s in systems:
        sg = [e for e in s["encoder"] if e["kind"] == "sgnet"]
        for e in sg:
            fig, axes = plt.subplots(1, 2, figsize=(2 * side, side), layout="constrained")
            _heatmap(axes[0], e["mask"].astype(float), src, src,
                     f"{s['name']}: SDOI mask (row: token, black: keys it may attend)", cmap="Greys", vmax=1.0)
            im = _heatmap(axes[1], e["attn"], src, src, f"{s['name']}: syntax-guided self-attention")
            fig.colorbar(im, ax=axes[1], shrink=0.8)
            figs[f"attention-{sid}-{s['name']}-sgnet"] = fig
        sla = [e for e in s["encoder"] if e["kind"] == "sla"]
        if sla:
            layers = {e["layer"]: e for e in sla}
            want = max(layers) if sla_layer is None else sla_layer
            if want not in layers:
                raise AnalyzeError(f"{s['name']} has SLA in encoder layers {sorted(layers)}, not {want}")
            e = layers[want]
            fig, axes = plt.subplots(1, 3, figsize=(2 * side + 2.5, side), layout="constrained",
                                     gridspec_kw={"width_ratios": [side, side, 2.5]})
            vmax = float(max(np.max(e["local"]), np.max(e["global"])))
            _heatmap(axes[0], e["local"], src, src, f"{s['name']}: SLA local attention, layer {want}", vmax=vmax)
            im = _heatmap(axes[1], e["global"], src, src, f"global attention, layer {want}", vmax=vmax)
            axes[2].barh(range(len(src)), e["gate"], color="tab:red")
            axes[2].set_ylim(len(src) - 0.5, -0.5)
            axes[2].set_yticks(range(len(src)))
            axes[2].set_yticklabels(src, fontsize=7)
            axes[2].set_xlim(0, 1)
            axes[2].set_title("gate g (local weight)", fontsize=9)
            fig.colorbar(im, ax=axes[:2].tolist(), shrink=0.8)
            figs[f"attention-{sid}-{s['name']}-sla"] = fig
    return figs


def markdown(result: Dict) -> str:
    src = result["source"]
    title = (f"# Attention, sentence {result['sentence']} of the {result['split']} split" if result.get("text") is None
             else f"# Attention, raw text ({result['sentence']})\n\nInput: {result['text']}")
    parts = [title, "", "Source: " + " ".join(src), "",
             f"Cross-attention rows: the {result['rows']} of each system; each row is a distribution over the source."]
    for s in result["systems"]:
        A = s["cross_attention"]
        rows = [[t, src[int(A[i].argmax())], float(A[i].max())] for i, t in enumerate(s["target"])]
        parts += ["", f"## {s['name']}: last decoder layer cross-attention", "",
                  common.markdown_table(["target", "most attended source", "weight"], rows)]
        for e in s["encoder"]:
            if e["kind"] == "sgnet":
                rows = [[tok, " ".join(src[j] for j in np.flatnonzero(e["mask"][i])), src[int(e["attn"][i].argmax())],
                         float(e["attn"][i][~e["mask"][i]].sum())] for i, tok in enumerate(src)]
                parts += ["", f"## {s['name']}: SG-Net ({e['module']})", "",
                          common.markdown_table(["token", "SDOI (allowed keys)", "most attended",
                                                 "weight outside SDOI"], rows)]
            elif e["kind"] == "sla":
                rows = [[tok, float(e["gate"][i]), src[int(e["local"][i].argmax())], src[int(e["global"][i].argmax())]]
                        for i, tok in enumerate(src)]
                parts += ["", f"## {s['name']}: SLA layer {e['layer']} ({e['module']})", "",
                          common.markdown_table(["token", "gate", "local argmax", "global argmax"], rows)]
    return "\n".join(parts)


def run(args) -> List[str]:
    systems = [common.parse_named(s, "checkpoint") for s in args.system]
    common.unique_names(systems)
    annotation = {"spacy_model": args.annotate_spacy_model, "subword_model": args.annotate_subword_model,
                  "settings_file": args.annotation_settings_file}
    result = analyze(systems, args.data, args.sentence, args.split, args.reference, args.beam, args.lenpen,
                     text=args.text, text_target=args.text_target, annotation=annotation)
    figs = plots(result, args.sla_layer)
    return common.write_outputs(args.out, f"attention-{result['sentence']}", result, markdown(result), figs)


def add_args(p) -> None:
    p.add_argument("--data", required=True, help="binarized data directory (with --text: its dictionaries suffice)")
    p.add_argument("--system", action="append", required=True, metavar="[NAME=]CHECKPOINT",
                   help="a checkpoint (repeat: panels side by side)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--sentence", type=int, default=0, help="sentence id in the split (fairseq-generate's S-<id>)")
    which.add_argument("--text", default=None,
                       help="a raw source sentence instead, annotated on the fly as fairseq-interactive annotates it "
                       "(the checkpoint's annotation settings; files are named attention-text-<hash>)")
    p.add_argument("--text-target", default=None, help="with --text --reference: its reference translation")
    p.add_argument("--annotate-spacy-model", default=None, help="with --text: spaCy pipeline (as fairseq-interactive)")
    p.add_argument("--annotate-subword-model", default=None, help="with --text: subword model (as fairseq-interactive)")
    p.add_argument("--annotation-settings-file", default=None,
                   help="with --text: annotation settings, for a checkpoint that records none")
    p.add_argument("--split", default="test")
    p.add_argument("--reference", action="store_true",
                   help="rows are the reference translation (same rows for every system) instead of each "
                   "system's own beam translation")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--lenpen", type=float, default=0.6)
    p.add_argument("--sla-layer", type=int, default=None, help="SLA layer to plot (default: the last SLA layer)")
    p.add_argument("--out", required=True, help="output directory (attention-ID.json/.md and PNGs)")
