"""``make bench``: speed and memory of every encoder option against the stock fairseq Transformer.

One run builds one binarized data set (synthetic corpus, annotated from its gold
CoNLL-U through the CoNLL-U backend, so no parser training is needed), trains each
system with the same budget through ``fairseq-train`` and translates the test set
with ``fairseq-generate``. It reports, per system and as ratios to the stock
``transformer`` measured in the same run:

* training speed: target tokens/s, the median of fairseq's ``wps`` over the complete epochs
  (:func:`train_wps`), and wall-clock seconds;
* generation speed: sentences/s of ``fairseq-generate`` (beam 4), every hypothesis
  forced to the same length so that all systems do the same decoding work;
* training memory of the model (:mod:`syntax_nmt.bench.memory`, in-process on the same data
  and arguments): on a GPU the peak CUDA allocation over real training steps; on the CPU
  parameters + gradients + Adam state + the activations saved for the backward pass. The
  peak resident set size of the whole ``fairseq-train`` process is reported beside it, but
  it is not the model's figure: it is set by the process's start-up and data loading and by
  the CPU allocator's caches (see the README);
* parameter counts.

Every row also records the device it was measured on (``device``, ``device_name``: the GPU's name, or the CPU's), the
precision (``fp16`` with ``--fp16``, else ``fp32``) and whether the syntax systems' encoder layers were compiled
(``--compile``: ``--syntax-compile``; the stock transformer has no such option and runs eagerly). ``bench.json`` is
written again after every system, so a run cut short keeps the systems it measured.

Targets: each method's own (``bench_targets``: ratio >= value, ``bench_max_targets``: ratio <= value, on its
class; :func:`targets`) and ``SYSTEM_TARGETS``.
Results are also written to ``BENCH_DIR/bench.json`` and plotted to ``bench.png``.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Dict, List

from syntax_nmt.utils import exe, user_dir
from syntax_nmt.demo.data import DataPipeline
from syntax_nmt.demo.report import count_params
from syntax_nmt.demo.settings import OPTIM_ARGS, system_command
from syntax_nmt.models.modules.compiled import COMPILE_MODES
from syntax_nmt.io_guard import parse_args, updates
from syntax_nmt.systems import default_systems, extra_systems, parse_systems
from syntax_nmt.systems import get as get_system

#: the demo's systems, and the methods' extra systems (measured by the benchmark only, e.g. sgnet-ckpt)
BENCH_SYSTEMS = [*default_systems(), *extra_systems()]

#: targets of systems that are no one method's own (ratio >= value); the methods' are on their classes
SYSTEM_TARGETS = {"all": {"gen_sps": 0.9}}


def targets():
    """``(lowest, highest)``: system -> ``{measure: ratio}`` the bench judges it by: the methods' own
    (``bench_targets``, ``bench_max_targets`` of their classes, so a new method is judged) and
    :data:`SYSTEM_TARGETS`."""
    from syntax_nmt.models.modules.methods import registered_methods

    low = {name: dict(v) for name, v in SYSTEM_TARGETS.items()}
    high: Dict[str, Dict[str, float]] = {}
    for cls in registered_methods().values():
        for name, v in cls.bench_targets.items():
            low.setdefault(name, {}).update(v)
        for name, v in cls.bench_max_targets.items():
            high.setdefault(name, {}).update(v)
    return low, high


def _run_measured(cmd: List[str], log: str) -> Dict[str, float]:
    """Run a command, write its output to ``log``, return wall seconds and peak RSS (MiB)."""
    start = time.time()
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd, output=f"see {log}")
    return {"seconds": time.time() - start, "max_rss_mib": usage.ru_maxrss / 1024}


def train_wps(text: str) -> float:
    """Training words/s of a ``fairseq-train`` log (``--log-format simple``): the median of the ``wps`` of the
    complete epochs, those before the last, whose end ``--max-update`` sets; the last epoch's only when it is the
    only one. The last epoch's line alone can hold a few updates, or one: with ``--fp16``, updates skipped on a
    gradient overflow shift where ``--max-update`` falls, and one update's words/s is mostly start-up.

    Raises:
        ValueError: the log has no epoch summary line.
    """
    import statistics

    epochs = [float(w) for w in re.findall(r"\| train \| epoch \d+ \|.*?\| wps ([\d.]+)", text)]
    if not epochs:
        raise ValueError("no epoch summary line ('| train | epoch ... | wps ...') in the training log")
    return statistics.median(epochs[:-1] if len(epochs) > 1 else epochs)


def _last_float(pattern: str, text: str) -> float:
    found = re.findall(pattern, text)
    if not found:
        raise ValueError(f"pattern {pattern!r} not found in the log")
    return float(found[-1])


class Bench(DataPipeline):
    def __init__(self, args):
        super().__init__(args)
        self.steps = 4

    def corpus(self):
        """The demo's synthetic corpus; with ``--join MEAN``, consecutive pairs joined into longer lines
        (:mod:`syntax_nmt.synthetic.join`: WMT-like lengths)."""
        a = self.args
        if not a.join:
            return super().corpus()
        self.header(f"synthetic corpus: {a.train}/{a.valid}/{a.test} sentences, runs of 1 + Poisson({a.join}) joined")
        if not self.done("corpus"):
            self.run([exe("syntax-nmt-synth"), "--out", self.path("corpus"), "--train", a.train, "--valid", a.valid,
                      "--test", a.test, "--seed", a.seed, "--join", a.join, "--quiet"])
            self.mark("corpus")
        else:
            print("already there")
        with open(self.path("corpus", "train.tok.en"), encoding="utf-8") as f:
            n = sorted(len(line.split()) for line in f)
        print(f"training lines: {len(n)}, words per line: mean {sum(n) / len(n):.1f}, median {n[len(n) // 2]}, "
              f"90th percentile {n[int(len(n) * 0.9)]}, longest {n[-1]}")

    def parser_args(self, split: str) -> List[str]:
        """Streams from the gold trees (CoNLL-U backend): the benchmark measures models, not parsers."""
        return ["--backend", "conllu", "--conllu", self.path("corpus", f"{split}.en.conllu")]

    def model_args(self) -> List[str]:
        """Transformer-base depth (6+6 layers, FFN 4x) at a width a CPU run can afford."""
        a = self.args
        return ["--encoder-layers", a.layers, "--decoder-layers", a.layers,
                "--encoder-embed-dim", a.dim, "--decoder-embed-dim", a.dim,
                "--encoder-ffn-embed-dim", 4 * a.dim, "--decoder-ffn-embed-dim", 4 * a.dim,
                "--encoder-attention-heads", a.heads, "--decoder-attention-heads", a.heads,
                "--share-decoder-input-output-embed", "--dropout", "0.1"]

    def system_command(self, name: str):
        """``(task, arch, options)`` of system ``name`` (:func:`~syntax_nmt.demo.settings.system_command`), with
        ``--compile``: ``--syntax-compile`` added for every system but the stock ones (fairseq's ``transformer``
        knows no such option: the reference stays eager)."""
        task, arch, extra = system_command(name, layers=self.args.layers)
        if getattr(self.args, "compile", False) and not get_system(name).stock:
            extra = [*extra, "--syntax-compile", "--syntax-compile-mode", self.args.compile_mode]
        return task, arch, extra

    def device(self) -> Dict[str, str]:
        """Where ``fairseq-train`` and ``fairseq-generate`` run (a CUDA device when torch sees one: the bench passes
        no ``--cpu``), its name, the precision, whether the syntax layers are compiled, and the run's setup."""
        import torch

        from syntax_nmt.recipes.training_record import device_name

        device = "cuda" if torch.cuda.is_available() else "cpu"
        compiled = bool(getattr(self.args, "compile", False))
        a = self.args
        setup = (f"{a.layers} layers, width {a.dim}, {a.heads} heads, {a.max_update} updates of {a.max_tokens} tokens, "
                 f"{a.train} training sentences{f' joined (--join {a.join})' if a.join else ''}, generation beam 4 "
                 f"at length {a.gen_len}")
        return {"setup": setup, "device": device, "device_name": device_name(device), "torch": torch.__version__,
                "precision": "fp16" if self.args.fp16 else "fp32", "compiled": compiled,
                **({"compile_mode": self.args.compile_mode} if compiled else {})}

    def measure(self, name: str) -> Dict[str, float]:
        a = self.args
        task, arch, extra = self.system_command(name)
        save = self.path("checkpoints", name)
        train_log, gen_log = self.path(f"train-{name}.log"), self.path(f"gen-{name}.log")
        print(f"--- {name}: train {a.max_update} updates", flush=True)
        t = _run_measured([exe("fairseq-train"), self.path("data-bin"), "--user-dir", user_dir(), "--task", task,
                           "--arch", arch, *OPTIM_ARGS, *extra, *self.model_args(), "--max-tokens", a.max_tokens,
                           *(["--fp16"] if a.fp16 else []),
                           "--max-update", a.max_update, "--seed", a.seed, "--save-dir", save,
                           "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "10",
                           "--num-workers", "0", "--disable-validation", "--no-progress-bar"], train_log)
        proc = None if a.no_memory else subprocess.run(
            [sys.executable, "-m", "syntax_nmt.bench.memory", "--steps", "3", self.path("data-bin"),
             "--user-dir", user_dir(), "--task", task, "--arch", arch, *OPTIM_ARGS, *map(str, extra),
             *map(str, self.model_args()), "--max-tokens", str(a.max_tokens), "--seed", str(a.seed),
             *(["--fp16"] if a.fp16 else [])], capture_output=True, text=True)
        if proc is None:  # --no-memory
            mem = {"model_train_mib": float("nan"), "activations_mib": float("nan")}
        elif proc.returncode == 0:
            mem = json.loads(proc.stdout.strip().splitlines()[-1])
        else:  # the speed figures stand without it: say why, and carry on
            print(f"    WARNING: {name}: the memory measure (python -m syntax_nmt.bench.memory) failed "
                  f"({proc.returncode}); its memory is NaN. Its error:\n{proc.stderr[-3000:]}", flush=True)
            mem = {"model_train_mib": float("nan"), "activations_mib": float("nan")}
        text = open(train_log, encoding="utf-8").read()
        wps = train_wps(text)
        gpu = re.findall(r"gb_free ([\d.]+)", text)
        print(f"--- {name}: generate", flush=True)
        _run_measured([exe("fairseq-generate"), self.path("data-bin"), "--user-dir", user_dir(), "--task", task,
                       "--path", os.path.join(save, "checkpoint_last.pt"), "--beam", "4", "--batch-size", "64",
                       "--remove-bpe", "--required-batch-size-multiple", "1", *(["--fp16"] if a.fp16 else []),
                       # every hypothesis exactly --gen-len tokens: the same decoding work for every system,
                       # whatever an under-trained model predicts
                       "--min-len", a.gen_len, "--max-len-a", "0", "--max-len-b", a.gen_len], gen_log)
        sps = _last_float(r"Translated .*?\(([\d.]+) sentences/s", open(gen_log, encoding="utf-8").read())
        row = {"system": name, "train_wps": wps, "train_seconds": t["seconds"], "peak_rss_mib": t["max_rss_mib"],
               "model_mem_mib": mem.get("cuda_peak_mib", mem["model_train_mib"]),
               "activations_mib": mem["activations_mib"],
               "gen_sps": sps, "params": count_params(os.path.join(save, "checkpoint_last.pt"))}
        if gpu:
            row["gpu_gb_free_min"] = min(float(g) for g in gpu)
        row.update(self.device())
        if row["compiled"] and get_system(name).stock:
            row["compiled"] = False
            row.pop("compile_mode", None)
        print(f"    {json.dumps(row)}", flush=True)
        return row

    def main(self):
        start = time.time()
        self.corpus()
        self.annotate()
        self.binarize()
        self.header(f"train and translate: {', '.join(self.args.systems)}")
        rows = []
        for s in self.args.systems:
            rows.append(self.measure(s))
            self.write_json(rows)  # after every system: a run cut short keeps what it measured
        self.print_table(rows)
        self.plot(rows)
        if not self.args.no_raw_text:
            measure_raw_text(self, next((s for s in self.args.systems if not get_system(s).stock), None))
        print(f"bench finished in {time.time() - start:.0f}s; bench.json and bench.png in {self.out}")

    def write_json(self, rows) -> None:
        """``bench.json``: the rows so far, with their ratios to the first (the reference)."""
        base = rows[0]
        for r in rows:
            for k in ("train_wps", "gen_sps", "model_mem_mib", "peak_rss_mib", "params"):
                r[f"{k}_ratio"] = r[k] / base[k]
        from syntax_nmt.utils import atomic_write_json

        atomic_write_json(self.path("bench.json"), rows, indent=2)

    def print_table(self, rows):
        base = rows[0]["system"]
        print(f"\n=== ratios to the stock {base} measured in this run "
              f"({self.args.max_update} updates of {self.args.max_tokens} tokens; generation beam 4)")
        head = (f"{'system':<16} {'train tok/s':>11} {'ratio':>6} {'gen sent/s':>10} {'ratio':>6} "
                f"{'model MiB':>9} {'ratio':>6} {'proc RSS':>8} {'ratio':>6} {'params':>9} {'ratio':>6}  target")
        print(head)
        print("-" * len(head))
        lows, highs = targets()
        for r in rows:
            low, high = lows.get(r["system"], {}), highs.get(r["system"], {})
            verdict = ""
            if low or high:
                ok = all(r[f"{k}_ratio"] >= v for k, v in low.items()) and \
                    all(r[f"{k}_ratio"] <= v for k, v in high.items())
                verdict = ("met" if ok else "MISSED") + " (" + ", ".join(
                    [f"{k} >= {v}x" for k, v in low.items()] + [f"{k} <= {v}x" for k, v in high.items()]) + ")"
            print(f"{r['system']:<16} {r['train_wps']:>11.0f} {r['train_wps_ratio']:>6.2f} {r['gen_sps']:>10.1f} "
                  f"{r['gen_sps_ratio']:>6.2f} {r['model_mem_mib']:>9.1f} {r['model_mem_mib_ratio']:>6.2f} "
                  f"{r['peak_rss_mib']:>8.0f} {r['peak_rss_mib_ratio']:>6.2f} "
                  f"{r['params']:>9,} {r['params_ratio']:>6.2f}  {verdict}")

    def plot(self, rows):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        keys = [("train_wps_ratio", "training tokens/s"), ("gen_sps_ratio", "generation sentences/s"),
                ("model_mem_mib_ratio", "training memory (model)"), ("params_ratio", "parameters")]
        fig, ax = plt.subplots(figsize=(10, 4))
        width = 0.8 / len(rows)
        for i, r in enumerate(rows):
            bars = ax.bar([k + i * width for k in range(len(keys))], [r[k] for k, _ in keys], width, label=r["system"])
            ax.bar_label(bars, fmt="%.2f", fontsize=6, rotation=90, padding=2)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([k + width * (len(rows) - 1) / 2 for k in range(len(keys))])
        ax.set_xticklabels([label for _, label in keys])
        ax.set_ylabel(f"ratio to {rows[0]['system']}")
        ax.set_title("syntax-nmt benchmark (same data, same budget)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        fig.savefig(self.path("bench.png"), dpi=100)


def measure_raw_text(bench: Bench, name) -> Dict[str, float]:
    """Raw-text translation speed, in the same run as the other measurements.

    fairseq-interactive parses the raw test source on the fly (the tiny spaCy pipeline, batches
    of ``--buffer-size`` lines through one ``nlp.pipe`` call each), segments and aligns it, and
    translates with the same decoding options as ``fairseq-generate`` on the binarized split
    (beam 4, fixed length). Its sentences/s exclude start-up: the time of a run on an empty input
    is subtracted; fairseq-generate runs again right before it, for the same conditions. Also
    measured in-process on the same lines: spaCy alone (``nlp.pipe``) and
    the whole on-the-fly annotation, whose ratio is the cost of annotating beyond parsing.
    """
    if name is None:
        return {}
    from syntax_nmt.annotate.online import OnlineAnnotator, ensure_data_settings
    from syntax_nmt.annotation_settings import AnnotationSettings
    from syntax_nmt.annotate.backends.spacy_backend import load_pipeline

    a = bench.args
    bench.steps += 1
    bench.spacy()  # the tiny spaCy pipeline of the demo (the bench's streams come from gold trees)
    spacy_model = bench.path("spacy-en")
    settings = ensure_data_settings(bench.path("data-bin"), [*bench.parser_args("test"), "--src-lang", "en",
                                                             "-o", bench.path("text", "test"), "--subword", "bpe",
                                                             "--subword-model", bench.path("text", "bpe.codes")])
    with open(bench.path("corpus", "test.en"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    empty = bench.path("empty.en")
    open(empty, "w").close()
    common = [bench.path("data-bin"), "--user-dir", user_dir(), "--task", "syntax_translation", "--path",
              bench.path("checkpoints", name, "checkpoint_last.pt"), "--beam", "4", "--batch-size", "64",
              "--min-len", a.gen_len, "--max-len-a", "0", "--max-len-b", a.gen_len]
    cmd = [exe("fairseq-interactive"), *common, "--buffer-size", "64", "--annotation-settings-file", settings,
           "--annotate-parser-model", spacy_model]
    print(f"--- {name}: fairseq-generate on the binarized test split (again, next to fairseq-interactive)", flush=True)
    gen_log = bench.path("generate-binarized.log")
    _run_measured([exe("fairseq-generate"), *common], gen_log)
    gen_sps = _last_float(r"Translated .*?\(([\d.]+) sentences/s", open(gen_log, encoding="utf-8").read())
    totals = []
    for src, log in ((empty, "interactive-empty.log"), (bench.path("corpus", "test.en"), "interactive.log")):
        print(f"--- {name}: fairseq-interactive on {len(lines) if src != empty else 0} raw lines", flush=True)
        _run_measured(cmd + ["--input", src], bench.path(log))
        totals.append(_last_float(r"Total time: ([\d.]+) seconds", open(bench.path(log), encoding="utf-8").read()))
    decode_seconds = _last_float(r"translation time: ([\d.]+)", open(bench.path("interactive.log")).read())
    nlp = load_pipeline(spacy_model)
    list(nlp.pipe(lines[:64]))  # warm-up
    start = time.time()
    for _ in nlp.pipe(lines, batch_size=64):
        pass
    spacy_sps = len(lines) / (time.time() - start)
    annotator = OnlineAnnotator(AnnotationSettings.read(settings), parser_model=spacy_model, batch_size=64)
    annotator.annotate(lines[:64])  # warm-up
    start = time.time()
    for k in range(0, len(lines), 64):
        annotator.annotate(lines[k:k + 64])
    annotate_sps = len(lines) / (time.time() - start)
    row = {"system": name, "sentences": len(lines), "generate_binarized_sps": gen_sps,
           "interactive_raw_sps": len(lines) / max(totals[1] - totals[0], 1e-9),
           "interactive_decode_only_sps": len(lines) / max(decode_seconds, 1e-9), "spacy_pipe_sps": spacy_sps,
           "annotate_online_sps": annotate_sps}
    row["interactive_vs_generate"] = row["interactive_raw_sps"] / gen_sps
    row["annotate_vs_spacy"] = annotate_sps / spacy_sps
    print(f"\n=== raw-text translation ({name}, {len(lines)} test sentences, beam 4, same run)\n"
          f"fairseq-generate on binarized data         {gen_sps:8.1f} sentences/s\n"
          f"fairseq-interactive, parsing raw           {row['interactive_raw_sps']:8.1f} sentences/s "
          f"({row['interactive_vs_generate']:.2f}x; its decoding alone {row['interactive_decode_only_sps']:.1f})\n"
          f"spaCy nlp.pipe alone                       {spacy_sps:8.1f} sentences/s\n"
          f"on-the-fly annotation (parse+BPE+streams)  {annotate_sps:8.1f} sentences/s "
          f"({row['annotate_vs_spacy']:.2f}x spaCy alone)", flush=True)
    with open(bench.path("bench-raw-text.json"), "w") as f:
        json.dump(row, f, indent=2)
    return row


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m syntax_nmt.bench", description=__doc__.splitlines()[0],
                                epilog="example:\n  python -m syntax_nmt.bench --out bench-out --max-update 100",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    updates(p.add_argument("--out", default="bench-out"))
    p.add_argument("--train", type=int, default=6000)
    p.add_argument("--valid", type=int, default=200)
    p.add_argument("--test", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bpe", type=int, default=4000)
    p.add_argument("--max-update", type=int, default=40)
    p.add_argument("--gen-len", type=int, default=30, help="length every generated hypothesis is forced to")
    p.add_argument("--layers", type=int, default=6, help="encoder and decoder layers (Transformer base: 6)")
    p.add_argument("--dim", type=int, default=256, help="model dimension (Transformer base: 512); FFN is 4x")
    p.add_argument("--heads", type=int, default=4, help="attention heads (Transformer base: 8)")
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--systems", default=",".join(BENCH_SYSTEMS),
                   help="comma-separated names from the table of systems (python -m syntax_nmt.systems list --all), "
                   f"the first is the reference (default: {', '.join(BENCH_SYSTEMS)})")
    p.add_argument("--join", type=float, default=0.0, metavar="MEAN",
                   help="join runs of 1 + Poisson(MEAN) consecutive sentence pairs into one line: longer, WMT-like "
                   "lines (1.0: about 27 words on average, the longest near 100; see syntax-nmt-synth --join). "
                   "--train etc. still count sentences; raise --gen-len to match (e.g. 40)")
    p.add_argument("--fp16", action="store_true", help="train and translate in fp16 (on a GPU)")
    p.add_argument("--compile", action="store_true",
                   help="train and translate every syntax system with its encoder layers compiled (--syntax-compile; "
                   "the stock transformer, fairseq's own model, has no such option and stays eager)")
    p.add_argument("--compile-mode", default="default", choices=COMPILE_MODES,
                   help="torch.compile's mode with --compile (--syntax-compile-mode)")
    p.add_argument("--no-memory", action="store_true",
                   help="skip the training memory measure (python -m syntax_nmt.bench.memory, a process per system): "
                   "its figures are NaN")
    p.add_argument("--no-raw-text", action="store_true",
                   help="skip the raw-text translation measure (fairseq-interactive and spaCy; e.g. where spaCy is "
                   "not installed)")
    p.add_argument("--verbose", action="store_true")
    return p


def cli_main(argv=None) -> None:
    import logging

    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)  # its own lines are printed; fairseq's go to the jobs' logs
    args = parse_args(get_parser(), argv)
    try:
        args.systems = parse_systems(args.systems)
    except ValueError as e:
        from syntax_nmt.cli_errors import fail

        fail("python -m syntax_nmt.bench", e)
    Bench(args).main()


if __name__ == "__main__":
    sys.exit(cli_main())
