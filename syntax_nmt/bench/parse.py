"""What the parser costs at inference: raw-text translation with and without it, in one run on one machine.

``python -m syntax_nmt.bench.parse --path CKPT --data DATA --input RAW`` loads the checkpoint once through the hub and
translates the same raw lines, in batches as fairseq-interactive sends them, two ways:

* **parsed**: annotated as before models declared what they read (``source_parse="always"``): the recorded parser
  (spaCy) parses every line, then the subwords and streams are made;
* **parse-free**: what the model needs at inference (``source_parse="auto"``): for LISA without
  ``--lisa-inject-parse``, the recorded Moses step and subword segmentation alone, no parser loaded.

The two ways alternate over ``--rounds`` rounds (the median of each is reported, so both see the same machine load),
after a warm-up round each that also loads the parser (its loading time is reported apart). Per way: sentences/s
of the whole translation, and the seconds of the annotation alone (parse or segment) and of the decoding alone;
the parser's share of inference time is ``1 - parse-free / parsed`` (whole translation; also from the annotation
times alone, ``(parsed annotation - segmentation) / parsed``, where the decoding's noise cancels). It also checks
that the two ways give the same hypotheses, token for token and score for score (exit status 1 if not): on a real
model and its raw test source this is the one-command check that the model needs no parser. With
``--compare-split SPLIT`` (the raw lines of that binarized split, e.g. the recipe's raw test source and ``test``),
it checks too that the parse-free subwords are the split's source tokens, line for line (the first ``--lines`` of
them; exit status 1 if not).

For a model that reads the parse at inference (SG-Net...), both ways parse: the share is then about 0.
"""

import argparse
import json
import statistics
import sys
import time
from typing import Dict, List

from syntax_nmt.io_guard import parse_args, reads, writes


def _read_lines(path: str, limit: int) -> List[str]:
    import gzip

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:limit] if limit else lines


def _translate(m, lines: List[str], batch: int, gen_args: Dict) -> Dict:
    """Annotate (or segment) and translate ``lines`` in batches of ``batch``: the hypotheses and the seconds of
    each part."""
    annotate_s = decode_s = 0.0
    hyps = []
    for k in range(0, len(lines), batch):
        t0 = time.perf_counter()
        tokens = m._annotate(lines[k:k + batch])
        t1 = time.perf_counter()
        out = m.generate(tokens, **gen_args)
        decode_s += time.perf_counter() - t1
        annotate_s += t1 - t0
        hyps += [(h[0]["tokens"].tolist(), float(h[0]["score"])) for h in out]
    return {"hyps": hyps, "annotate_s": annotate_s, "decode_s": decode_s, "total_s": annotate_s + decode_s}


def measure(args) -> Dict:
    import os

    import torch

    from syntax_nmt import SyntaxTransformerModel
    from syntax_nmt.analyze.common import readable_checkpoint

    torch.set_num_threads(args.threads)
    lines = _read_lines(args.input, args.lines)
    kwargs = {}
    if args.annotate_parser_model:
        kwargs["annotate_parser_model"] = args.annotate_parser_model
    with readable_checkpoint(args.path):
        m = SyntaxTransformerModel.from_pretrained(os.path.dirname(os.path.abspath(args.path)),
                                                   os.path.basename(args.path),
                                                   data_name_or_path=os.path.abspath(args.data), **kwargs)
    needs = m.task.inference_needs
    gen_args = {"beam": args.beam}
    if args.fixed_len:  # every hypothesis this long: the same decoding work whatever an untrained model predicts
        gen_args.update(min_len=args.fixed_len, max_len_a=0, max_len_b=args.fixed_len)
    ways = {"parsed": "always", "parse_free": "auto"}
    runs = {w: [] for w in ways}
    parser_load_s = None
    for r in range(args.rounds + 1):  # round 0: warm-up (loads the parser, fills the caches)
        for way, mode in (ways.items() if r % 2 else reversed(list(ways.items()))):
            m.task.set_source_parse(mode)
            if way == "parsed" and r == 0:
                t0 = time.perf_counter()
                m.task.annotator.backend  # noqa: B018  (loads the parser)
                parser_load_s = time.perf_counter() - t0
            run = _translate(m, lines, args.batch_size, gen_args)
            if r:
                runs[way].append(run)
    same = runs["parsed"][0]["hyps"] == runs["parse_free"][0]["hyps"]
    split = None
    if args.compare_split:
        m.task.set_source_parse("auto")
        m.task.load_dataset(args.compare_split)
        ds = m.task.dataset(args.compare_split)
        tokens = m.encode_batch(lines)
        equal = sum(i < len(ds) and torch.equal(ds[i]["source"], t) for i, t in enumerate(tokens))
        split = {"split": args.compare_split, "lines": len(ds), "equal": equal,
                 "same": equal == len(tokens) and (args.lines or len(ds)) == len(tokens)}
    result = {"sentences": len(lines), "rounds": args.rounds, "beam": args.beam, "batch_size": args.batch_size,
              "fixed_len": args.fixed_len, "threads": args.threads, "checkpoint": os.path.abspath(args.path),
              "input": os.path.abspath(args.input), "reads_at_inference": needs,
              "parser": m.task.annotator.settings.extra.get("spacy_model") if not args.annotate_parser_model
              else args.annotate_parser_model, "parser_load_s": parser_load_s, "same_hypotheses": same,
              "compare_split": split}
    for way in ways:
        for part in ("total_s", "annotate_s", "decode_s"):
            result[f"{way}_{part}"] = statistics.median(run[part] for run in runs[way])
        result[f"{way}_sps"] = len(lines) / result[f"{way}_total_s"]
    result["parser_share"] = 1.0 - result["parse_free_total_s"] / result["parsed_total_s"]
    # the same from the annotation times alone (the decoding, the same work both ways, cancels with its noise)
    result["parser_share_annotation"] = ((result["parsed_annotate_s"] - result["parse_free_annotate_s"])
                                         / result["parsed_total_s"])
    result["speedup"] = result["parse_free_sps"] / result["parsed_sps"]
    return result


def report(r: Dict) -> str:
    needs = "; ".join(f"{k}: {', '.join(v)}" for k, v in r["reads_at_inference"].items()) or "nothing"
    return (f"raw-text translation of {r['sentences']} sentences (beam {r['beam']}, batches of {r['batch_size']}"
            f"{', every hypothesis ' + str(r['fixed_len']) + ' tokens' if r['fixed_len'] else ''}, "
            f"{r['threads']} thread(s), median of {r['rounds']} rounds)\n"
            f"the model reads at inference: {needs}\n"
            f"  parsed      {r['parsed_sps']:8.1f} sentences/s  (annotation {r['parsed_annotate_s']:.2f} s, "
            f"decoding {r['parsed_decode_s']:.2f} s)\n"
            f"  parse-free  {r['parse_free_sps']:8.1f} sentences/s  (segmentation {r['parse_free_annotate_s']:.2f} s, "
            f"decoding {r['parse_free_decode_s']:.2f} s)\n"
            f"  the parser's share of inference time: {100 * r['parser_share']:.1f}% "
            f"(parse-free {r['speedup']:.2f}x as fast; from the annotation times alone "
            f"{100 * r['parser_share_annotation']:.1f}%); loading the parser {r['parser_load_s']:.2f} s once\n"
            f"  same hypotheses (tokens and scores): {'yes' if r['same_hypotheses'] else 'NO'}"
            + ("" if not r["compare_split"] else
               f"\n  parse-free subwords = the binarized {r['compare_split']['split']} split's source: "
               f"{r['compare_split']['equal']} of {r['sentences']} lines "
               f"(the split has {r['compare_split']['lines']})"))


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m syntax_nmt.bench.parse", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example (the Multi30k recipe's LISA model, its raw test source):\n"
        "  python -m syntax_nmt.bench.parse --path checkpoints/lisa/checkpoint_last.pt --data data-bin/bpe14000 \\\n"
        "      --input download/test_2016_flickr.en.gz --compare-split test --out bench-parse.json")
    reads(p.add_argument("--path", required=True, help="the checkpoint"))
    reads(p.add_argument("--data", required=True, help="its data directory (dictionaries, annotation.json)"), "dir")
    reads(p.add_argument("--input", required=True, help="raw source lines, as the training source was before "
                         "annotation (.gz read as gzip)"), gz=True)
    p.add_argument("--lines", type=int, default=0, help="translate the first N lines (0: all)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds of each way, after a warm-up round")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64, help="lines per batch (fairseq-interactive's --buffer-size)")
    p.add_argument("--fixed-len", type=int, default=0,
                   help="force every hypothesis to this many tokens (an untrained model's lengths are arbitrary)")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    reads(p.add_argument("--annotate-parser-model", help="the recorded parser at another name or path"), "dir",
          name_or_path=True)
    p.add_argument("--compare-split", metavar="SPLIT",
                   help="the input is the raw source of this binarized split of --data: check that the parse-free "
                   "subwords are its source tokens")
    writes(p.add_argument("--out", help="write the figures as JSON"))
    return p


def main(args) -> Dict:
    result = measure(args)
    print(report(result), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    return result


def cli_main(argv=None) -> int:
    import logging

    from syntax_nmt.cli_errors import run
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)
    result = run("python -m syntax_nmt.bench.parse", main, parse_args(get_parser(), argv))
    split_ok = result["compare_split"] is None or result["compare_split"]["same"]
    return 0 if result["same_hypotheses"] and split_ok else 1


if __name__ == "__main__":
    sys.exit(cli_main())
