"""``length``: BLEU by source length (SG-Net, Zhang et al. 2020, Fig. 5).

The test sentences are grouped by source length in equal ranges (1-10, 11-20, ...,
71-80, >80 by default), once counting words and once counting subwords, and each
group is scored with corpus sacreBLEU for every system. Lengths come from the
binarized test split the systems translated: subwords are its source tokens (EOS
excluded), words are counted from its ``subword`` stream (pieces tagged ``B``/``O``).
"""

from typing import Dict, List, Sequence

import numpy as np

from syntax_nmt.analyze import common
from syntax_nmt.analyze.common import AnalyzeError
from syntax_nmt.evaluation.metrics import bleu_signature, detok_bleu


def bucket_labels(width: int, max_length: int) -> List[str]:
    """``["1-10", "11-20", ..., "71-80", ">80"]`` for width 10 and max length 80."""
    if width < 1 or max_length < width or max_length % width:
        raise AnalyzeError(f"the bucket width ({width}) must divide the maximum length ({max_length})")
    return [f"{lo + 1}-{lo + width}" for lo in range(0, max_length, width)] + [f">{max_length}"]


def bucket_index(lengths: np.ndarray, width: int, max_length: int) -> np.ndarray:
    """Bucket of each length (``0`` for 1..width, ..., the last bucket for > max_length);
    length 0 goes to the first bucket."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.minimum(np.maximum(lengths - 1, 0) // width, max_length // width)


def bleu_by_bucket(hyps: Sequence[str], refs: Sequence[str], lengths: np.ndarray, width: int = 10,
                   max_length: int = 80) -> List[Dict]:
    """One row per bucket: ``{"bucket", "sentences", "bleu"}`` (BLEU NaN for an empty bucket)."""
    if not len(hyps) == len(refs) == len(lengths):
        raise AnalyzeError(f"{len(hyps)} hypotheses, {len(refs)} references and {len(lengths)} lengths")
    labels = bucket_labels(width, max_length)
    idx = bucket_index(lengths, width, max_length)
    rows = []
    for b, label in enumerate(labels):
        sel = np.flatnonzero(idx == b)
        rows.append({"bucket": label, "sentences": int(len(sel)),
                     "bleu": detok_bleu([hyps[i] for i in sel], [refs[i] for i in sel])[0]})
    return rows


def analyze(systems: Sequence[tuple], ref_raw: str, data: str, split: str = "test", width: int = 10,
            max_length: int = 80, lang: str = "de") -> Dict:
    """BLEU per length bucket of every ``(name, fairseq-generate log)``."""
    from syntax_nmt.analyze.data import DataError, source_lengths

    try:
        subwords, words = source_lengths(data, split)
    except DataError as e:
        raise AnalyzeError(str(e)) from None
    refs = common.read_references(ref_raw, len(subwords))
    units = {"subwords": subwords}
    if words is not None:
        units = {"words": words, "subwords": subwords}
    result = {"split": split, "bucket_width": width, "max_length": max_length, "signature": bleu_signature(),
              "units": {}}
    for unit, lengths in units.items():
        per_system = {}
        for name, gen in systems:
            hyps = common.hypotheses(gen, lang)
            if len(hyps) != len(refs):
                raise AnalyzeError(f"{gen} has {len(hyps)} hypotheses, the {split} split {len(refs)} sentences")
            per_system[name] = {"overall": detok_bleu(hyps, refs)[0],
                                "buckets": bleu_by_bucket(hyps, refs, lengths, width, max_length)}
        result["units"][unit] = {"lengths": lengths.tolist(), "systems": per_system}
    return result


def markdown(result: Dict) -> str:
    parts = [f"# BLEU by source length ({result['split']} split)", "",
             f"sacreBLEU per bucket of equal length ranges; signature: {result['signature']}"]
    for unit, block in result["units"].items():
        systems = block["systems"]
        names = list(systems)
        first = systems[names[0]]["buckets"]
        rows = [[b["bucket"], b["sentences"], *[systems[n]["buckets"][i]["bleu"] for n in names]]
                for i, b in enumerate(first)]
        rows.append(["all", len(block["lengths"]), *[systems[n]["overall"] for n in names]])
        parts += ["", f"## by {unit}", "", common.markdown_table([f"{unit}", "sentences", *names], rows)]
    return "\n".join(parts)


def plot(result: Dict):
    plt = common.pyplot()
    units = list(result["units"])
    fig, axes = plt.subplots(1, len(units), figsize=(6 * len(units), 4), squeeze=False)
    for ax, unit in zip(axes[0], units):
        systems = result["units"][unit]["systems"]
        for name, r in systems.items():
            labels = [b["bucket"] for b in r["buckets"]]
            values = [np.nan if b["bleu"] is None else b["bleu"] for b in r["buckets"]]
            ax.plot(range(len(labels)), values, marker="o", label=name)
        counts = [b["sentences"] for b in next(iter(systems.values()))["buckets"]]
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([f"{lab}\n({c})" for lab, c in zip(labels, counts)], fontsize=8)
        ax.set_xlabel(f"source length in {unit} (sentences)")
        ax.set_ylabel("sacreBLEU")
        ax.set_title(f"BLEU by source length ({unit})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def run(args) -> List[str]:
    systems = [common.parse_named(s, "fairseq-generate log") for s in args.system]
    common.unique_names(systems)
    result = analyze(systems, args.ref_raw, args.data, args.split, args.bucket_width, args.max_length, args.lang)
    return common.write_outputs(args.out, "length", result, markdown(result), {"length": plot(result)})


def add_args(p) -> None:
    p.add_argument("--data", required=True, help="binarized data directory the systems translated")
    p.add_argument("--split", default="test")
    p.add_argument("--system", action="append", required=True, metavar="[NAME=]GEN",
                   help="a fairseq-generate --remove-bpe log (repeat for several systems)")
    p.add_argument("--ref-raw", required=True, help="untokenized reference of the split")
    p.add_argument("--lang", default="de", help="target language (Moses detokenization)")
    p.add_argument("--bucket-width", type=int, default=10)
    p.add_argument("--max-length", type=int, default=80, help="the last bucket holds longer sentences")
    p.add_argument("--out", required=True, help="output directory (length.json, length.md, length.png)")

