"""``noise`` and ``corrupt``: robustness to parse errors (SG-Net, Zhang et al. 2020, sec. 7.6).

``noise`` replaces a fraction r of the heads (and, separately, of the POS tags) of the
binarized test split by random wrong values (:mod:`syntax_nmt.syntax.noise`: per word,
seeded, nested across r), translates the noisy test set with every system through
``fairseq-generate`` and plots sacreBLEU against r. A system that does not read the
corrupted stream (the stock Transformer, or a model without POS features under POS
noise) cannot be affected: it is translated once, at r = 0, and its score is carried
over (marked ``"translated": false``).

``corrupt`` writes one noisy copy of a data directory, for any splits: train on it with
plain ``fairseq-train`` to train under parse noise (the noise is fixed, like the
systematic errors of a weak parser), or translate it.
"""

import os
from typing import Dict, List, Sequence

from syntax_nmt.analyze import common
from syntax_nmt.analyze.common import AnalyzeError
from syntax_nmt.constants import NOISE_RECORD_FILE
from syntax_nmt.evaluation.metrics import bleu_signature, detok_bleu

DEFAULT_RATES = "0,0.2,0.4,0.6,0.8,1.0"


def _noisy_copy(data, out, stream, rate, seed, splits, overwrite=False):
    from syntax_nmt.analyze.data import DataError, noisy_copy

    try:
        return noisy_copy(data, out, stream, rate, seed, splits, overwrite)
    except DataError as e:
        raise AnalyzeError(str(e)) from None


def analyze(systems: Sequence[tuple], data: str, ref_raw: str, out: str, streams: Sequence[str],
            rates: Sequence[float], seed: int = 1, split: str = "test", gen_args: Sequence[str] = (),
            lang: str = "de", log=print) -> Dict:
    """sacreBLEU of every ``(name, checkpoint)`` on ``split`` with each stream noisy at each rate."""
    if not rates or any(not 0.0 <= r <= 1.0 for r in rates):
        raise AnalyzeError(f"noise rates must lie in [0, 1], got {list(rates)}")
    rates = sorted(set(rates))
    info = {name: common.checkpoint_info(path) for name, path in systems}
    refs = None
    rows: List[Dict] = []
    for stream in streams:
        for rate in rates:
            tag = f"{stream}-r{rate:g}"
            noisy = os.path.join(out, "data", tag)
            (record,) = _noisy_copy(data, noisy, stream, rate, seed, [split], overwrite=True)  # our own scratch
            for name, path in systems:
                reads = stream in info[name]["streams"]
                if not reads and rate != rates[0]:
                    first = next(r for r in rows if r["system"] == name and r["stream"] == stream)
                    rows.append({**first, "rate": rate, "changed_words": record["changed_words"],
                                 "translated": False})
                    continue
                gen = common.generate(noisy, path, os.path.join(out, f"{name}.{tag}.gen"), split, gen_args,
                                      info[name]["task"])
                hyps = common.hypotheses(gen, lang)
                refs = refs if refs is not None else common.read_references(ref_raw, len(hyps))
                bleu = detok_bleu(hyps, refs)[0]
                log(f"{name:<16} {stream:<5} r={rate:<4g} BLEU {bleu:6.2f}  "
                    f"({record['changed_words']}/{record['words']} words changed)")
                rows.append({"system": name, "stream": stream, "rate": rate, "bleu": bleu,
                             "words": record["words"], "changed_words": record["changed_words"],
                             "reads_stream": reads, "translated": True})
    return {"split": split, "seed": seed, "streams": list(streams), "rates": rates,
            "signature": bleu_signature(), "systems": [n for n, _ in systems], "rows": rows}


def markdown(result: Dict) -> str:
    parts = [f"# BLEU under parse noise ({result['split']} split, seed {result['seed']})", "",
             "A fraction r of the words gets a random wrong head / POS tag in the test streams "
             "(SG-Net sec. 7.6). `*`: the system does not read the stream, its score is carried over from r = 0.",
             f"sacreBLEU signature: {result['signature']}"]
    for stream in result["streams"]:
        rows = [r for r in result["rows"] if r["stream"] == stream]
        header = ["system", *[f"r={r:g}" for r in result["rates"]]]
        table = []
        for name in result["systems"]:
            mine = {r["rate"]: r for r in rows if r["system"] == name}
            table.append([name, *[f"{mine[r]['bleu']:.2f}" + ("" if mine[r]["reads_stream"] else "*")
                                  for r in result["rates"]]])
        changed = {r["rate"]: r for r in rows}
        table.append(["words changed", *[f"{changed[r]['changed_words']}/{changed[r]['words']}"
                                         for r in result["rates"]]])
        parts += ["", f"## {stream} noise", "", common.markdown_table(header, table)]
    return "\n".join(parts)


def plot(result: Dict):
    plt = common.pyplot()
    streams = result["streams"]
    fig, axes = plt.subplots(1, len(streams), figsize=(5.5 * len(streams), 4), squeeze=False, sharey=True)
    for ax, stream in zip(axes[0], streams):
        for name in result["systems"]:
            rows = sorted((r for r in result["rows"] if r["stream"] == stream and r["system"] == name),
                          key=lambda r: r["rate"])
            style = "-" if rows[0]["reads_stream"] else ":"
            ax.plot([r["rate"] for r in rows], [r["bleu"] for r in rows], style, marker="o", label=name)
        ax.set_xlabel(f"fraction r of words with a random wrong {'head' if stream == 'head' else stream}")
        ax.set_ylabel("sacreBLEU")
        ax.set_title(f"{stream} noise")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _gen_args(value: str) -> List[str]:
    import shlex

    return shlex.split(value or "")


def run(args) -> List[str]:
    systems = [common.parse_named(s, "checkpoint") for s in args.system]
    common.unique_names(systems)
    streams = [s for s in args.streams.split(",") if s]
    result = analyze(systems, args.data, args.ref_raw, args.out, streams, common.parse_floats(args.rates, "--rates"),
                     args.seed, args.split, _gen_args(args.gen_args), args.lang)
    return common.write_outputs(args.out, "noise", result, markdown(result), {"noise": plot(result)})


def run_corrupt(args) -> List[str]:
    rate = common.parse_floats(args.rate, "--rate")
    if len(rate) != 1 or not 0 <= rate[0] <= 1:
        raise AnalyzeError(f"--rate takes one number in [0, 1], got {args.rate!r}")
    splits = [s for s in args.splits.split(",") if s]
    records = _noisy_copy(args.data, args.out, args.stream, rate[0], args.seed, splits, args.overwrite)
    for r in records:
        print(f"{r['split']}: {r['changed_words']} of {r['words']} words got a random wrong {r['stream']}")
    return [os.path.join(args.out, NOISE_RECORD_FILE.format(args.stream))]  # written with the copy, renamed with it


def add_args(p) -> None:
    p.add_argument("--data", required=True, help="binarized data directory (syntax-nmt-binarize)")
    p.add_argument("--system", action="append", required=True, metavar="[NAME=]CHECKPOINT",
                   help="a checkpoint (repeat for several systems)")
    p.add_argument("--ref-raw", required=True, help="untokenized reference of the split")
    p.add_argument("--streams", default="head,pos", help="streams to corrupt, each separately")
    p.add_argument("--rates", default=DEFAULT_RATES, help="fractions of words to corrupt")
    p.add_argument("--seed", type=int, default=1, help="noise seed (rates of one seed are nested)")
    p.add_argument("--split", default="test")
    p.add_argument("--gen-args", default="--beam 4 --lenpen 0.6 --batch-size 128",
                   help="options for fairseq-generate (quoted)")
    p.add_argument("--lang", default="de", help="target language (Moses detokenization)")
    p.add_argument("--out", required=True, help="output directory (noise.json, noise.md, noise.png, logs)")


def add_corrupt_args(p) -> None:
    p.add_argument("--data", required=True, help="binarized data directory (syntax-nmt-binarize)")
    p.add_argument("--out", required=True,
                   help="the noisy copy (links except the noisy stream, and noise-STREAM.json), a new "
                        "directory: built next to it and renamed when complete")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out (never --data itself, nor a directory holding it or that it "
                        "links into)")
    p.add_argument("--stream", required=True, help="stream to corrupt: head or a tag stream (pos, dep, case...)")
    p.add_argument("--rate", required=True, help="fraction of words to corrupt, in [0, 1]")
    p.add_argument("--splits", default="train,valid,test", help="splits to corrupt")
    p.add_argument("--seed", type=int, default=1)
