"""``attention``: attention maps of one test sentence (``--sentence ID``), or of one raw sentence
(``--text``) annotated on the fly exactly as fairseq-interactive annotates it.

* Cross-attention of the last decoder layer (mean over heads; fairseq's ``alignment_layer``),
  for several checkpoints side by side (Syntax-Infused Transformer, Fig. 3): each row is a
  target subword of the model's own beam translation (``--reference``: of the reference,
  so that the rows of every panel are the same), each column a source subword.
* What each recording module of the encoder shows of the sentence, through its ``analysis_maps``
  hook (the schema of :mod:`.models`): named maps, per-token vectors and masks, one figure and
  one table per method (for a method in several layers, the layer of ``--layer``, else its last).
  E.g. SG-Net's syntax-guided self-attention next to its SDOI mask (SG-Net, Fig. 6); SLA's local
  and global attention and its per-token gate (SLA, Fig. 3); Syntax-BERT's attention and topical
  weights per sub-network. Modules that show nothing are listed as such.

Rows of every attention matrix are distributions over the source (they sum to 1).
Nothing here knows a method by name.
"""

from argparse import Namespace
from typing import Dict, List, Optional, Tuple

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


def encoder_maps(loaded: models.Loaded, smp: Dict) -> Tuple[List[Dict], List[Dict]]:
    """What every recording module of the encoder shows of the one-sentence batch ``smp``: entries
    ``{"module", "layer", "kind", "title", "masks", "maps", "vectors", NAME: values, ...}``
    (:func:`.models.analysis_pieces`), and the modules that show nothing, ``{"module", "layer", "kind", "why"}``."""
    length = int(smp["net_input"]["src_tokens"].shape[1])
    shown, skipped = [], []
    with models.recording(loaded.model) as mods:
        models.encode(loaded, smp["net_input"])
        for name, m in mods:
            head = {"module": name, "layer": models.layer_of(name), "kind": models.kind_of(m)}
            pieces, why = models.analysis_pieces(name, m, length)
            if pieces is None:
                skipped.append({**head, "why": why})
            else:
                shown.append({**head, **pieces})
    return shown, skipped


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
        shown, skipped = encoder_maps(loaded, smp)
        entry = {"name": name, "checkpoint": path, "target": _labels(tgt_dict, target),
                 "cross_attention": cross_attention(loaded, smp, target), "encoder": shown, "not_shown": skipped}
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


def _by_kind(entries: List[Dict]) -> Dict[str, List[Dict]]:
    """Encoder entries grouped by kind, in the order of their first module."""
    out: Dict[str, List[Dict]] = {}
    for e in entries:
        out.setdefault(e["kind"], []).append(e)
    return out


def _chosen(entries: List[Dict], layer: Optional[int]) -> Dict:
    """The entry of one kind to plot: the one in encoder layer ``layer`` if there is one, else the last."""
    return next((e for e in entries if layer is not None and e["layer"] == layer), entries[-1])


def _titled(e: Dict) -> str:
    return e["title"] + ("" if e["layer"] is None else f", layer {e['layer']}")


def _encoder_figure(plt, system: str, e: Dict, src: List[str]):
    """One row of panels: the entry's masks (black: True), maps (one colour scale) and vectors (bars)."""
    side = max(4.0, 0.28 * len(src) + 2)
    panels = [(kind, name) for kind in models.PIECE_KINDS for name in e[kind]]
    widths = [2.5 if kind == "vectors" else max(2.5, 0.28 * len(e[kind][name].get("columns", src)) + 2)
              for kind, name in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(sum(widths), side), layout="constrained", squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    axes = axes[0]
    vmax = max((float(np.max(e[name])) for name in e["maps"]), default=None)
    image, map_axes = None, []
    for ax, (kind, name) in zip(axes, panels):
        meta = e[kind][name]
        columns = meta.get("columns", src)
        if kind == "masks":
            _heatmap(ax, np.asarray(e[name], dtype=float), columns, src, meta["title"], cmap="Greys", vmax=1.0)
        elif kind == "maps":
            image = _heatmap(ax, e[name], columns, src, meta["title"], vmax=vmax)
            map_axes.append(ax)
        else:
            values = np.asarray(e[name], dtype=float)
            ax.barh(range(len(src)), values, color="tab:red")
            ax.set_ylim(len(src) - 0.5, -0.5)
            ax.set_yticks(range(len(src)))
            ax.set_yticklabels(src, fontsize=7)
            ax.set_xlim(min(0.0, float(values.min())), max(1.0, float(values.max())))
            ax.set_title(meta["title"], fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=map_axes, shrink=0.8)
    fig.suptitle(f"{system}: {_titled(e)} ({e['module']})", fontsize=10)
    return fig


def plots(result: Dict, layer: Optional[int] = None) -> Dict[str, object]:
    """The cross-attention panels (``attention-ID-cross``) and, per system and kind of encoder module, the
    entry of encoder layer ``layer`` (else its last) (``attention-ID-SYSTEM-KIND``).

    Raises:
        AnalyzeError: ``layer`` is given but no system has encoder maps in that layer.
    """
    plt = common.pyplot()
    src = result["source"]
    sid = result["sentence"]
    systems = result["systems"]
    layered = sorted({e["layer"] for s in systems for e in s["encoder"] if e["layer"] is not None})
    if layer is not None and layer not in layered:
        raise AnalyzeError(f"no encoder module of these systems shows maps in layer {layer} "
                           f"(layers with maps: {layered or 'none'})")
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
    for s in systems:
        for kind, entries in _by_kind(s["encoder"]).items():
            figs[f"attention-{sid}-{s['name']}-{kind}"] = _encoder_figure(plt, s["name"], _chosen(entries, layer), src)
    return figs


def _entry_table(e: Dict, src: List[str]) -> str:
    """One row per token: the columns where each mask is True, each vector's value, each map's most weighted
    column (and its weight outside the mask it should stay within)."""
    headers = ["token", *e["masks"], *e["vectors"]]
    for name, meta in e["maps"].items():
        headers.append(f"{name} argmax")
        if "within" in meta:
            headers.append(f"{name} weight outside {meta['within']}")
    rows = []
    for i, tok in enumerate(src):
        row = [tok]
        for name, meta in e["masks"].items():
            columns = meta.get("columns", src)
            row.append(" ".join(columns[j] for j in np.flatnonzero(e[name][i])))
        row += [float(e[name][i]) for name in e["vectors"]]
        for name, meta in e["maps"].items():
            values = np.asarray(e[name][i], dtype=float)
            row.append(meta.get("columns", src)[int(values.argmax())])
            if "within" in meta:
                row.append(float(values[~np.asarray(e[meta["within"]][i], dtype=bool)].sum()))
        rows.append(row)
    return common.markdown_table(headers, rows)


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
            legend = [f"* `{name}`: {e[kind][name]['title']}" for kind in models.PIECE_KINDS for name in e[kind]]
            parts += ["", f"## {s['name']}: {_titled(e)} ({e['module']})", "", *legend, "", _entry_table(e, src)]
        if s.get("not_shown"):
            parts += ["", f"## {s['name']}: encoder modules not shown", ""]
            parts += [f"* `{e['module']}` ({e['kind']}" + ("" if e["layer"] is None else f", layer {e['layer']}")
                      + f"): {e['why']}" for e in s["not_shown"]]
    return "\n".join(parts)


def run(args) -> List[str]:
    systems = [common.parse_named(s, "checkpoint") for s in args.system]
    common.unique_names(systems)
    annotation = {"parser_model": args.annotate_parser_model, "subword_model": args.annotate_subword_model,
                  "settings_file": args.annotation_settings_file}
    result = analyze(systems, args.data, args.sentence, args.split, args.reference, args.beam, args.lenpen,
                     text=args.text, text_target=args.text_target, annotation=annotation)
    figs = plots(result, args.layer)
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
    p.add_argument("--annotate-parser-model", "--annotate-spacy-model", dest="annotate_parser_model", default=None,
                   help="with --text: the parser's model (as fairseq-interactive)")
    p.add_argument("--annotate-subword-model", default=None, help="with --text: subword model (as fairseq-interactive)")
    p.add_argument("--annotation-settings-file", default=None,
                   help="with --text: annotation settings, for a checkpoint that records none")
    p.add_argument("--split", default="test")
    p.add_argument("--reference", action="store_true",
                   help="rows are the reference translation (same rows for every system) instead of each "
                   "system's own beam translation")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--lenpen", type=float, default=0.6)
    p.add_argument("--layer", "--sla-layer", dest="layer", type=int, default=None,
                   help="encoder layer whose maps are plotted for a method in several layers (default: the method's "
                   "last; a method not in this layer shows its last)")
    p.add_argument("--out", required=True, help="output directory (attention-ID.json/.md and PNGs)")
