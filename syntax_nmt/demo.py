"""``make demo``: the whole pipeline on the embedded synthetic EN->DE corpus, end to end.

Steps (each skipped when its outputs exist, so an interrupted run resumes):

1. generate the synthetic corpus with gold English trees (``syntax-nmt-synth``);
2. train the tiny spaCy tagger+parser on its gold CoNLL-U and load it by path
   (``syntax-nmt-train-spacy``), exactly as a user loads ``en_core_web_sm``;
3. parse the raw English with it, learn joint BPE, write subwords and aligned
   streams (``syntax-nmt-annotate``);
4. binarize text and streams (``syntax-nmt-binarize``);
5. train the stock fairseq ``transformer`` and the syntax-infused model (and any
   other ``--systems``) with identical budgets (``fairseq-train``);
6. translate the test set (``fairseq-generate``), detokenize, score with
   sacrebleu and print a table with training times.

Every step runs the real command line a user would run, in a subprocess.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from typing import Dict, List

#: name -> (fairseq task, arch, extra model options)
SYSTEMS: Dict[str, tuple] = {
    "transformer": ("translation", "transformer_tiny", []),
    "syntax-infused": ("syntax_translation", "syntax_transformer_tiny", []),
    "sgnet": ("syntax_translation", "syntax_transformer_tiny", ["--source-features", "", "--syntax-attention", "sgnet"]),
    "syntax+sgnet": ("syntax_translation", "syntax_transformer_tiny", ["--syntax-attention", "sgnet"]),
}

#: Model size and optimisation shared by every system (identical budgets).
MODEL_ARGS = [
    "--encoder-embed-dim", "128", "--decoder-embed-dim", "128",
    "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-decoder-input-output-embed", "--dropout", "0.1",
]
OPTIM_ARGS = [
    "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--lr", "0.003", "--lr-scheduler", "inverse_sqrt",
    "--warmup-updates", "100", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
    "--clip-norm", "1.0",
]

EPILOG = """example:
  python -m syntax_nmt.demo --out demo-out                       # what `make demo` runs
  python -m syntax_nmt.demo --out demo-out --systems transformer,syntax-infused,sgnet --max-update 600
On a GPU fairseq-train/-generate use it automatically; raise --train, --max-update and the model size there.
"""


def _user_dir() -> str:
    return os.path.dirname(os.path.abspath(__file__))


def _exe(name: str) -> str:
    """A console script of this environment (the one next to the running python)."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else name


class Demo:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.steps = 6
        self.step_no = 0
        self.timings: Dict[str, float] = {}

    def path(self, *parts) -> str:
        return os.path.join(self.out, *parts)

    def header(self, title: str) -> None:
        self.step_no += 1
        print(f"\n=== [{self.step_no}/{self.steps}] {title}", flush=True)

    def run(self, cmd: List[str], log: str = None) -> None:
        """Run a command, streaming its output (or teeing it into ``log``)."""
        print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
        if log is None:
            subprocess.run([str(c) for c in cmd], check=True)
            return
        with open(log, "w", encoding="utf-8") as f:
            proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, bufsize=1)
            for line in proc.stdout:
                f.write(line)
                if self.args.verbose or any(k in line for k in ("| train_inner |", "| valid |", "done training",
                                                                 "Translated", "Error", "error")):
                    print("  " + line.rstrip().split(" | INFO | ")[-1][:200], flush=True)
            if proc.wait() != 0:
                raise subprocess.CalledProcessError(proc.returncode, cmd, output=f"see {log}")

    def done(self, name: str) -> bool:
        return os.path.exists(self.path(f".done-{name}"))

    def mark(self, name: str, **info) -> None:
        with open(self.path(f".done-{name}"), "w") as f:
            json.dump(info, f)

    def info(self, name: str) -> dict:
        with open(self.path(f".done-{name}")) as f:
            return json.load(f)

    # -- steps ------------------------------------------------------------------------------
    def corpus(self):
        a = self.args
        self.header(f"synthetic corpus: {a.train}/{a.valid}/{a.test} sentences")
        if not self.done("corpus"):
            self.run([_exe("syntax-nmt-synth"), "--out", self.path("corpus"), "--train", a.train,
                      "--valid", a.valid, "--test", a.test, "--seed", a.seed])
            self.mark("corpus")
        else:
            print("already there")

    def spacy(self):
        self.header("tiny spaCy tagger+parser trained on the gold trees, loaded by path")
        if not self.done("spacy"):
            c = self.path("corpus")
            self.run([_exe("syntax-nmt-train-spacy"), "--train", f"{c}/train.en.conllu", "--dev",
                      f"{c}/valid.en.conllu", "--test", f"{c}/test.en.conllu", "--output", self.path("spacy-en")])
            self.mark("spacy")
        else:
            print("already there")

    def parser_args(self, split: str) -> List[str]:
        """How ``syntax-nmt-annotate`` reads and parses one split: spaCy on the raw English."""
        return ["--source", self.path("corpus", f"{split}.en"), "--backend", "spacy",
                "--spacy-model", self.path("spacy-en")]

    def annotate(self):
        a = self.args
        self.header(f"annotate: parse the English, joint BPE ({a.bpe} merges), aligned streams")
        t = self.path("text")
        for split in ("train", "valid", "test"):
            if self.done(f"annotate-{split}"):
                continue
            sub = (["--learn-subword", a.bpe, "--subword-model-out", f"{t}/bpe.codes"] if split == "train"
                   else ["--subword-model", f"{t}/bpe.codes"])
            self.run([_exe("syntax-nmt-annotate"), *self.parser_args(split),
                      "--target", self.path("corpus", f"{split}.tok.de"), "--src-lang", "en", "--tgt-lang", "de",
                      "-o", f"{t}/{split}", "--subword", "bpe", *sub, "--overwrite", "--quiet"])
            self.mark(f"annotate-{split}")

    def binarize(self):
        self.header("binarize subword text and streams")
        if not self.done("binarize"):
            t = self.path("text")
            if os.path.exists(self.path("data-bin")):
                import shutil

                shutil.rmtree(self.path("data-bin"))
            self.run([_exe("syntax-nmt-binarize"), "--source-lang", "en", "--target-lang", "de",
                      "--trainpref", f"{t}/train", "--validpref", f"{t}/valid", "--testpref", f"{t}/test",
                      "--destdir", self.path("data-bin"), "--joined-dictionary", "--workers", "2"],
                     log=self.path("binarize.log"))
            self.mark("binarize")
        else:
            print("already there")

    def model_args(self) -> List[str]:
        return MODEL_ARGS

    def train(self, name: str):
        a = self.args
        task, arch, extra = SYSTEMS[name]
        save = self.path("checkpoints", name)
        if self.done(f"train-{name}"):
            print(f"{name}: already trained")
            return
        cmd = [_exe("fairseq-train"), self.path("data-bin"), "--user-dir", _user_dir(), "--task", task,
               "--arch", arch, *self.model_args(), *extra, *OPTIM_ARGS, "--max-tokens", a.max_tokens,
               "--max-update", a.max_update, "--seed", a.seed, "--save-dir", save, "--no-epoch-checkpoints",
               "--log-format", "simple", "--log-interval", "25", "--num-workers", "0",
               "--validate-interval-updates", a.max_update]
        start = time.time()
        self.run(cmd, log=self.path(f"train-{name}.log"))
        self.mark(f"train-{name}", seconds=time.time() - start)

    def generate(self, name: str):
        task = SYSTEMS[name][0]
        gen = self.path(f"test-{name}.gen")
        if not self.done(f"generate-{name}"):
            self.run([_exe("fairseq-generate"), self.path("data-bin"), "--user-dir", _user_dir(), "--task", task,
                      "--path", self.path("checkpoints", name, "checkpoint_last.pt"), "--beam", "4", "--lenpen", "0.6",
                      "--batch-size", "128", "--remove-bpe", "--required-batch-size-multiple", "1"], log=gen)
            self.mark(f"generate-{name}")
        from syntax_nmt.evaluate import score

        return score(gen, self.path("corpus", "test.de"), self.path("corpus", "test.tok.de"),
                     self.path(f"test-{name}"))

    def report(self, results: Dict[str, dict]):
        from syntax_nmt.evaluate import significance

        systems = list(results)
        base = systems[0]
        p_values = {}
        if len(systems) > 1:
            rows = significance(self.path("corpus", "test.de"), (base, self.path(f"test-{base}.detok")),
                                [(s, self.path(f"test-{s}.detok")) for s in systems[1:]])
            p_values = {r["name"]: r.get("p_value") for r in rows}
        print("\n=== results on the synthetic test set "
              f"({results[base]['sentences']} sentences, identical budgets: {self.args.max_update} updates "
              f"of {self.args.max_tokens} tokens)")
        print(f"sacreBLEU signature: {results[base]['signature']}")
        header = f"{'system':<16} {'BLEU':>6} {'split-BLEU':>10} {'params':>9} {'train s':>8} {'p vs ' + base:>16}"
        print(header)
        print("-" * len(header))
        table = []
        for s in systems:
            r = results[s]
            p = p_values.get(s)
            line = (f"{s:<16} {r['sacrebleu']:>6.2f} {r['compound_split_bleu']:>10.2f} {r['params']:>9,} "
                    f"{r['train_seconds']:>8.0f} {'-' if p is None else f'{p:.4f}':>16}")
            print(line)
            table.append({**r, "p_value": p})
        with open(self.path("results.json"), "w") as f:
            json.dump(table, f, indent=2)
        print(f"\n(results.json, hypotheses and logs in {self.out})")

    def translate_raw(self, sentences=("The old teacher saw a small dog in the garden.", "A train is expensive.",
                                       "Has our queen answered the mysterious party?")):
        """Translate raw English, annotated on the fly, with fairseq-interactive and with the Python hub."""
        name = next((s for s in self.args.systems if SYSTEMS[s][0] == "syntax_translation"), None)
        if name is None:
            return
        from syntax_nmt.annotate.online import ensure_data_settings

        t = self.path("text")
        settings = ensure_data_settings(self.path("data-bin"), [
            *self.parser_args("test"), "--src-lang", "en", "-o", f"{t}/test", "--subword", "bpe",
            "--subword-model", f"{t}/bpe.codes"])
        ckpt = self.path("checkpoints", name, "checkpoint_last.pt")
        print(f"\n=== translate raw English with the {name} model, parsed and segmented on the fly")
        with open(self.path("raw.en"), "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in sentences))
        self.run([_exe("fairseq-interactive"), self.path("data-bin"), "--user-dir", _user_dir(), "--task",
                  "syntax_translation", "--path", ckpt, "--annotation-settings-file", settings, "--beam", "4",
                  "--lenpen", "0.6", "--remove-bpe", "--input", self.path("raw.en")], log=self.path("raw.gen"))
        with open(self.path("raw.gen"), encoding="utf-8") as f:
            for line in f:
                if line[:2] in ("S-", "D-"):
                    print("  " + line.rstrip("\n"))
        kwargs = {"checkpoint_file": "checkpoint_last.pt", "data_name_or_path": self.path("data-bin"),
                  "annotation_settings_file": settings, "lenpen": 0.6}
        print(">>> from syntax_nmt import SyntaxTransformerModel\n>>> m = SyntaxTransformerModel.from_pretrained("
              + ", ".join([repr(os.path.dirname(ckpt))] + [f"{k}={v!r}" for k, v in kwargs.items()])
              + f")\n>>> m.translate({list(sentences)!r}, beam=4)", flush=True)
        from syntax_nmt import SyntaxTransformerModel

        m = SyntaxTransformerModel.from_pretrained(os.path.dirname(ckpt), **kwargs)
        print(m.translate(list(sentences), beam=4))

    def main(self):
        start = time.time()
        self.corpus()
        self.spacy()
        self.annotate()
        self.binarize()
        self.header(f"train {', '.join(self.args.systems)} ({self.args.max_update} updates each)")
        for name in self.args.systems:
            self.train(name)
        self.header("translate the test set with fairseq-generate and score with sacrebleu")
        results = {}
        for name in self.args.systems:
            r = self.generate(name)
            r["train_seconds"] = self.info(f"train-{name}")["seconds"]
            r["params"] = _count_params(self.path("checkpoints", name, "checkpoint_last.pt"))
            results[name] = r
        self.report(results)
        self.translate_raw()
        print(f"demo finished in {time.time() - start:.0f}s")


def _count_params(checkpoint: str) -> int:
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401  (weights-only loading of fairseq checkpoints)

    state = torch.load(checkpoint, map_location="cpu")
    return sum(v.numel() for k, v in state["model"].items() if not k.endswith("_float_tensor") and "version" not in k)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="demo-out", help="working directory (reruns resume from it)")
    p.add_argument("--train", type=int, default=20000, help="training sentences")
    p.add_argument("--valid", type=int, default=500)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bpe", type=int, default=4000, help="joint BPE merges")
    p.add_argument("--max-update", type=int, default=300, help="training updates per system (same for all)")
    p.add_argument("--max-tokens", type=int, default=4096, help="tokens per batch")
    p.add_argument("--systems", default="transformer,syntax-infused",
                   help=f"comma-separated, first is the baseline; from {', '.join(SYSTEMS)}")
    p.add_argument("--verbose", action="store_true", help="stream every log line of fairseq")
    return p


def main(args) -> None:
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; choose from {list(SYSTEMS)}")
    Demo(args).main()


def cli_main(argv=None) -> None:
    main(get_parser().parse_args(argv))


if __name__ == "__main__":
    cli_main()
