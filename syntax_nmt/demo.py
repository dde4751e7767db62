"""``make demo``: every method of the plugin compared on the embedded synthetic EN->DE corpus.

Steps (each skipped when its outputs exist, so an interrupted run resumes):

1. generate the synthetic corpus with gold English trees (``syntax-nmt-synth``);
2. train the tiny spaCy tagger+parser on its gold CoNLL-U and load it by path
   (``syntax-nmt-train-spacy``), exactly as a user loads ``en_core_web_sm``
   (``--gold-parses``: skip it and annotate from the gold trees);
3. parse the raw English with it, learn joint BPE, write subwords and aligned
   streams (``syntax-nmt-annotate``);
4. binarize text and streams (``syntax-nmt-binarize``);
5. train every system of the table of systems (:mod:`syntax_nmt.systems`, ``--systems``) with each training seed
   (``--seeds``; ``auto``: the seeds, and for the default comparison the systems, that fit in ``--time-budget``
   on this machine, :mod:`syntax_nmt.demo_budget`) and identical budgets (``fairseq-train``), ``--jobs`` at a time;
6. translate the test set (``fairseq-generate``), score with sacreBLEU, and report the
   mean and standard deviation over seeds, paired bootstrap significance against the
   stock Transformer (sacreBLEU's, on the seeds' translations pooled and per seed), and
   a bar chart (``bleu.png``);
7. run ``syntax-nmt-analyze`` on the first seed's models (``--analyses``: BLEU by
   length, attention maps, gates; ``noise`` on request); ``--fractions`` adds the
   learning curve over nested subsamples of the training data.

Every step runs the real command line a user would run, in a subprocess.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Dict, List, Optional, Sequence

from syntax_nmt import compare
from syntax_nmt import demo_budget as budget
from syntax_nmt.analyze.common import exe as _exe
from syntax_nmt.analyze.common import user_dir as _user_dir
from syntax_nmt.systems import BASELINE, default_systems, fit_encoder_layers, parse_systems
from syntax_nmt.systems import get as get_system

#: the demo's encoder depth (a system that needs more layers, such as ``all``, gets them:
#: :func:`syntax_nmt.systems.fit_encoder_layers`)
ENCODER_LAYERS = 2
PROG = "python -m syntax_nmt.demo"

#: Model size and optimisation shared by every system (identical budgets). The demo's budget is a few
#: hundred updates, far from overfitting 20k sentences: without dropout the models learn about twice as
#: fast (measured with the transformer, 1536 tokens x 400 updates: sacreBLEU 21.9 without dropout;
#: 2048 x 300: 15.5 without, 11.0 with 0.1), and small batches with more updates beat large batches
#: with fewer under the same compute (4096 x 300 with dropout 0.1 reached 21.5 in 2.3x the time).
#: Pre-norm layers: with post-norm, the 3-layer encoder of "all" barely starts translating in 400 updates
#: (sacreBLEU 2.9 without its auxiliary losses; a features-only model with 3 encoder layers 15.7 against
#: 23.8 with 2), with pre-norm "all" reaches 21.4 (the transformer 19.5 instead of 21.9).
MODEL_ARGS = [
    "--encoder-embed-dim", "128", "--decoder-embed-dim", "128",
    "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-decoder-input-output-embed", "--dropout", "0.0",
    "--encoder-normalize-before", "--decoder-normalize-before",
]
OPTIM_ARGS = [
    "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--lr", "0.003", "--lr-scheduler", "inverse_sqrt",
    "--warmup-updates", "100", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
    "--clip-norm", "1.0",
]
GEN_ARGS = ["--beam", "4", "--lenpen", "0.6", "--batch-size", "128"]
#: glibc keeps freed buffers instead of returning them to the system after every training step and faulting them
#: in again (on the CPU a quarter of a training's time went to the kernel; measured with the Multi30k
#: recipe's model: 2500 -> 3364 tokens/s on one core, identical losses); harmless on a GPU
CPU_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "1073741824", "MALLOC_TRIM_THRESHOLD_": "1073741824",
                  "MALLOC_TOP_PAD_": "268435456"}
#: ``--seeds auto``: 2 to 5 seeds, what fits in ``--time-budget`` (:mod:`syntax_nmt.demo_budget`)
MIN_AUTO_SEEDS, MAX_AUTO_SEEDS = budget.MIN_SEEDS, budget.MAX_SEEDS
#: seconds between the status lines of the trainings running side by side
STATUS_SECONDS = 30.0

EPILOG = """examples:
  python -m syntax_nmt.demo --out demo-out                       # what `make demo` runs
  python -m syntax_nmt.demo --out demo-out --systems transformer,sgnet --seeds 5 --max-update 600
  python -m syntax_nmt.demo --out demo-out --analyses length,attention,gates,noise
  python -m syntax_nmt.demo --out demo-out --fractions 1,5,10,25,50,100 --fraction-systems transformer,syntax-infused
On a GPU fairseq-train/-generate use it automatically; raise --train, --max-update and the model size there.
"""


class Demo:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.steps = 7
        self.step_no = 0
        self.timings: Dict[str, float] = {}
        self.clock: Callable[[], float] = time.time
        self.start = self.clock()
        #: ``--seeds auto``: the plan in force and the printed decision (:mod:`syntax_nmt.demo_budget`)
        self.plan: Optional[budget.Plan] = None
        self.decision = ""
        #: seconds of jobs resumed from an earlier run (they count towards the budget with their recorded time)
        self.resumed = 0.0
        #: lines to print after the next finished jobs (a new plan)
        self.notes: List[str] = []

    def systems_given(self) -> bool:
        """Whether the user named the systems (``--systems``); only the default comparison may be cut."""
        return bool(getattr(self.args, "systems_given", False))

    def path(self, *parts) -> str:
        return os.path.join(self.out, *parts)

    def header(self, title: str) -> None:
        self.step_no += 1
        print(f"\n=== [{self.step_no}/{self.steps}] {title}", flush=True)

    def run(self, cmd: List[str], log: str = None, quiet: bool = False, env: Optional[dict] = None,
            on_line: Optional[Callable[[str], None]] = None) -> float:
        """Run a command, streaming its output (or teeing it into ``log``; ``quiet``: log only; ``on_line``:
        called with every logged line).

        Returns the CPU seconds (user + system) the command used.
        """
        if not quiet:
            print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
        out = open(log, "w", encoding="utf-8") if log else None
        try:
            proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE if log else None,
                                    stderr=subprocess.STDOUT if log else None, text=True, bufsize=1, env=env)
            for line in proc.stdout if log else ():
                out.write(line)
                if on_line:
                    on_line(line)
                if not quiet and (self.args.verbose or any(k in line for k in (
                        "| train_inner |", "| valid |", "done training", "Translated", "Error", "error"))):
                    print("  " + line.rstrip().split(" | INFO | ")[-1][:200], flush=True)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        finally:
            if out:
                out.close()
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, cmd, output=f"see {log}" if log else None)
        return usage.ru_utime + usage.ru_stime

    def done(self, name: str) -> bool:
        return os.path.exists(self.path(f".done-{name}"))

    def mark(self, name: str, **info) -> None:
        with open(self.path(f".done-{name}"), "w") as f:
            json.dump(info, f)

    def info(self, name: str) -> dict:
        with open(self.path(f".done-{name}")) as f:
            return json.load(f)

    # -- data ---------------------------------------------------------------------------------
    def corpus(self):
        a = self.args
        self.header(f"synthetic corpus: {a.train}/{a.valid}/{a.test} sentences")
        if not self.done("corpus"):
            self.run([_exe("syntax-nmt-synth"), "--out", self.path("corpus"), "--train", a.train,
                      "--valid", a.valid, "--test", a.test, "--seed", a.seed, "--quiet"])
            self.mark("corpus")
        else:
            print("already there")

    def spacy(self):
        if getattr(self.args, "gold_parses", False):
            self.header("gold trees of the corpus instead of a parser (--gold-parses)")
            return
        self.header("tiny spaCy tagger+parser trained on the gold trees, loaded by path")
        if not self.done("spacy"):
            c = self.path("corpus")
            self.run([_exe("syntax-nmt-train-spacy"), "--train", f"{c}/train.en.conllu", "--dev",
                      f"{c}/valid.en.conllu", "--test", f"{c}/test.en.conllu", "--output", self.path("spacy-en")])
            self.mark("spacy")
        else:
            print("already there")

    def parser_args(self, split: str) -> List[str]:
        """How ``syntax-nmt-annotate`` reads and parses one split: spaCy on the raw English
        (``--gold-parses``: the gold CoNLL-U of the corpus)."""
        if getattr(self.args, "gold_parses", False):
            return ["--backend", "conllu", "--conllu", self.path("corpus", f"{split}.en.conllu")]
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

    def binarize(self, trainpref: str = None, dest: str = None, tag: str = "binarize"):
        if tag == "binarize":
            self.header("binarize subword text and streams")
        t = self.path("text")
        trainpref, dest = trainpref or f"{t}/train", dest or self.path("data-bin")
        if not self.done(tag):
            if os.path.exists(dest):
                import shutil

                shutil.rmtree(dest)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            self.run([_exe("syntax-nmt-binarize"), "--source-lang", "en", "--target-lang", "de",
                      "--trainpref", trainpref, "--validpref", f"{t}/valid", "--testpref", f"{t}/test",
                      "--destdir", dest, "--joined-dictionary", "--workers", "2"],
                     log=dest + ".log", quiet=tag != "binarize")
            self.mark(tag)
        elif tag == "binarize":
            print("already there")

    # -- systems ------------------------------------------------------------------------------
    def model_args(self) -> List[str]:
        return MODEL_ARGS

    def seeds(self) -> List[int]:
        """The training seeds: ``--seeds``, or with ``--seeds auto`` the ones :meth:`compare` chose."""
        return self.args.seeds

    def checkpoint(self, name: str, seed: int, group: str = "") -> str:
        """The checkpoint of system ``name`` trained with ``seed`` (``group``: a data fraction)."""
        return self.path("checkpoints", *([group] if group else []), name, f"seed{seed}", "checkpoint_last.pt")

    def _env(self) -> dict:
        env = dict(os.environ)
        threads = str(self.args.threads)
        env.setdefault("OMP_NUM_THREADS", threads)
        env.setdefault("MKL_NUM_THREADS", threads)
        env.update({k: v for k, v in CPU_MALLOC_ENV.items() if k not in env})
        return env

    def train(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False,
              on_line: Optional[Callable[[str], None]] = None) -> dict:
        """Train one system with one seed (skipped when done); returns its wall and CPU seconds."""
        a = self.args
        task, arch, extra = system_command(name)
        tag = f"train-{group + '-' if group else ''}{name}-seed{seed}"
        if self.done(tag):
            return self.info(tag)
        save = os.path.dirname(self.checkpoint(name, seed, group))
        cmd = [_exe("fairseq-train"), data or self.path("data-bin"), "--user-dir", _user_dir(), "--task", task,
               "--arch", arch, *self.model_args(), *OPTIM_ARGS, *extra, "--max-tokens", a.max_tokens,
               "--max-update", a.max_update, "--seed", seed, "--save-dir", save, "--no-epoch-checkpoints",
               "--log-format", "simple", "--log-interval", "25", "--num-workers", "0",
               "--validate-interval-updates", a.max_update]
        os.makedirs(self.path("logs"), exist_ok=True)
        start = time.time()
        cpu = self.run(cmd, log=self.path("logs", tag + ".log"), quiet=quiet, env=self._env(), on_line=on_line)
        info = {"seconds": time.time() - start, "cpu_seconds": cpu}
        self.mark(tag, **info)
        return info

    def generate(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False) -> dict:
        """Translate the test set with one trained system and score it (``evaluate.score``)."""
        from syntax_nmt.evaluate import score

        task = get_system(name).task
        folder = self.path("gen", group) if group else self.path("gen")
        os.makedirs(folder, exist_ok=True)
        gen = os.path.join(folder, f"{name}.seed{seed}.gen")
        tag = f"generate-{group + '-' if group else ''}{name}-seed{seed}"
        if not self.done(tag):
            start = time.time()
            cpu = self.run([_exe("fairseq-generate"), data or self.path("data-bin"), "--user-dir", _user_dir(),
                            "--task", task, "--path", self.checkpoint(name, seed, group), *GEN_ARGS, "--remove-bpe",
                            "--required-batch-size-multiple", "1"], log=gen, quiet=quiet, env=self._env())
            self.mark(tag, seconds=time.time() - start, cpu_seconds=cpu)
        scores = os.path.join(self.path("eval", group) if group else self.path("eval"))
        os.makedirs(scores, exist_ok=True)
        return score(gen, self.path("corpus", "test.de"), self.path("corpus", "test.tok.de"),
                     os.path.join(scores, f"{name}.seed{seed}"))

    def job(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False,
            on_line: Optional[Callable[[str], None]] = None) -> dict:
        """Train and translate one ``(system, seed)``; returns its scores with ``train_seconds`` and
        ``generate_seconds`` (wall) and their CPU seconds."""
        t = self.train(name, seed, data, group, quiet=quiet, on_line=on_line)
        r = self.generate(name, seed, data, group, quiet=quiet)
        g = self.info(f"generate-{group + '-' if group else ''}{name}-seed{seed}")
        r.update(system=name, seed=seed, train_seconds=t["seconds"], train_cpu_seconds=t.get("cpu_seconds"),
                 generate_seconds=g.get("seconds", 0.0), generate_cpu_seconds=g.get("cpu_seconds"))
        return r

    def train_and_generate(self, jobs: Sequence[tuple], data: str = None, group: str = "") -> Dict[tuple, dict]:
        """Train and translate every ``(system, seed)``, ``--jobs`` at a time; returns their scores."""
        return self.schedule(lambda runs, running: list(jobs), data, group)

    def schedule(self, want: Callable[[Dict[tuple, dict], Dict[tuple, float]], List[tuple]], data: str = None,
                 group: str = "") -> Dict[tuple, dict]:
        """Run jobs ``(system, seed)``, ``--jobs`` at a time, in the order ``want(runs, running)`` lists them.

        ``want`` is asked again whenever a job ends (``runs``: the finished jobs and their results; ``running``:
        job -> seconds since it started), so it may plan with what has been measured; a job it no longer lists
        is not started. Returns every finished job (also those no longer wanted). Prints a line per finished
        job with the expected end, and while trainings run side by side a status line every
        :data:`STATUS_SECONDS` (their updates, parsed from fairseq's log).
        """
        workers = self.args.jobs
        parallel = workers > 1
        runs: Dict[tuple, dict] = {}
        started: Dict[tuple, float] = {}
        updates: Dict[tuple, int] = {}
        lock = threading.Lock()

        def counter(job):
            def on_line(line):
                m = re.search(r"num_updates=(\d+)", line)
                if m:
                    with lock:
                        updates[job] = int(m.group(1))
            return on_line

        def running() -> Dict[tuple, float]:
            now = self.clock()
            return {j: now - t for j, t in started.items()}

        with ThreadPoolExecutor(workers) as pool:
            futures = {}
            wanted = want(runs, running())
            while True:
                for job in wanted:
                    if len(futures) >= workers:
                        break
                    if job not in runs and job not in started:
                        started[job] = self.clock()
                        futures[pool.submit(self.job, *job, data, group, parallel, counter(job))] = job
                if not futures:
                    return runs
                finished, _ = wait(futures, timeout=STATUS_SECONDS if parallel else None,
                                   return_when=FIRST_COMPLETED)
                for f in finished:
                    job = futures.pop(f)
                    ran = self.clock() - started.pop(job)
                    r = runs[job] = f.result()
                    # a job resumed from an earlier run ends at once: its recorded time counts towards the budget
                    self.resumed += max(0.0, r["train_seconds"] + r["generate_seconds"] - ran) / workers
                if finished:
                    wanted = want(runs, running())
                    eta = self.eta(wanted, runs, running())
                    for f in finished:
                        r = f.result()
                        print(f"  {r['system']:<16} seed {r['seed']}: trained in {r['train_seconds']:5.0f} s "
                              f"({r.get('train_cpu_seconds') or 0:.0f} s CPU), sacreBLEU {r['sacrebleu']:6.2f}   "
                              f"[{eta}]", flush=True)
                    for note in self.notes:
                        print(note, flush=True)
                    self.notes.clear()
                else:
                    with lock:
                        status = ", ".join(f"{n} seed {s} {updates.get((n, s), 0)}/{self.args.max_update}"
                                           for n, s in started)
                    print(f"  ... {self.elapsed() / 60:.1f} min: training {status}   "
                          f"[{self.eta(wanted, runs, running())}]", flush=True)

    def elapsed(self) -> float:
        """Seconds of the demo so far, jobs resumed from an earlier run counted with their recorded time."""
        return self.clock() - self.start + self.resumed

    def eta(self, wanted: List[tuple], runs: Dict[tuple, dict], running: Dict[tuple, float]) -> str:
        """``done/total, expected end`` of the wanted jobs, from the seconds measured so far."""
        done = sum(j in runs for j in wanted)
        measured = budget.job_seconds(runs)
        if not measured:
            return f"{done}/{len(wanted)} done, {self.elapsed() / 60:.1f} min, measuring this machine"
        todo = [j for j in wanted if j not in runs]
        end = budget.jobs_end(measured, todo, self.args.jobs, self.elapsed(), running)
        text = f"{done}/{len(wanted)} done, {self.elapsed() / 60:.1f} min, trainings end at ~{end / 60:.1f} min"
        if self.plan is not None and self.args.seeds == "auto":
            text += f", the demo at ~{(end + self.plan.finish - self.plan.end) / 60:.1f} of {self.args.time_budget:g} min"
        return text

    def compare(self) -> List[dict]:
        a = self.args
        auto = a.seeds == "auto"
        what = (f"the seeds{'' if self.systems_given() else ' and systems'} that fit in {a.time_budget:g} min" if auto
                else f"{len(a.seeds)} seeds")
        self.header(f"train {len(a.systems)} systems x {what} ({a.max_update} updates of {a.max_tokens} tokens each, "
                    f"{a.jobs} at a time with {a.threads} thread(s) each), translate, score")
        if auto:
            runs = self.schedule(self.budget_plan)
            a.systems, a.seeds = list(self.plan.systems), list(range(1, self.plan.seeds + 1))
            self.decision = budget.describe(self.plan, budget.train_seconds(runs), a.time_budget)
            print(f"\n=== budget: {self.decision}", flush=True)
        else:
            runs = self.train_and_generate([(name, seed) for seed in self.seeds() for name in a.systems])
        return summarize(runs, a.systems, self.seeds(),
                         {n: _count_params(self.checkpoint(n, self.seeds()[0])) for n in a.systems})

    def budget_plan(self, runs: Dict[tuple, dict], running: Dict[tuple, float]) -> List[tuple]:
        """``--seeds auto``: the jobs of the plan that fits the budget (:func:`syntax_nmt.demo_budget.plan_budget`)
        with what has been measured so far; before any measurement, the first wave (seed 1 of the first
        ``--jobs`` systems). Prints the decision when it is first made and whenever it changes."""
        a = self.args
        measured = budget.job_seconds(runs)
        if not measured:
            return budget.job_order(a.systems, 1)[:a.jobs]
        train = budget.train_seconds(runs)
        plan = budget.plan_budget(measured, a.systems, a.jobs, self.elapsed(), a.time_budget * 60,
                                  budget.reserve_seconds(budget.slowdown(list(train.values()))), done=runs,
                                  running=running, adapt_systems=not self.systems_given())
        if self.plan is None or (plan.systems, plan.seeds) != (self.plan.systems, self.plan.seeds):
            self.decision = budget.describe(plan, train, a.time_budget)
            self.notes.append(f"\n=== {'plan' if self.plan is None else 're-planned'}: {self.decision}\n")
        self.plan = plan
        return plan.jobs()

    # -- report -------------------------------------------------------------------------------
    def significance(self, rows: List[dict]) -> None:
        """Paired bootstrap (sacreBLEU) of every system against the baseline: on the translations
        of all seeds pooled (seed s of a system paired with seed s of the baseline), and per seed
        (:func:`syntax_nmt.compare.significance`)."""
        seeds = self.seeds()
        hyps = {(r["system"], s): self.path("eval", f"{r['system']}.seed{s}.detok") for r in rows for s in seeds}
        compare.significance(rows, hyps, self.path("corpus", "test.de"), seeds, pooled_dir=self.path("eval", "pooled"),
                             ref_name="ref.de")

    def report(self, rows: List[dict]) -> str:
        a = self.args
        self.significance(rows)
        text = format_table(rows, a, self.seeds())
        print("\n" + text)
        verdict = quality_check(rows)
        if verdict:
            print("\n" + "\n".join(f"[{'ok' if ok else 'no'}] {claim}: {detail}" for claim, ok, detail in verdict))
        with open(self.path("results.json"), "w") as f:
            json.dump(rows, f, indent=1)
        with open(self.path("results.md"), "w") as f:
            f.write((f"{self.decision}\n\n" if self.decision else "") + "```\n" + text + "\n```\n")
        plot_bleu(rows, self.path("bleu.png"), f"synthetic EN->DE test set, {len(self.seeds())} seeds, "
                                                 f"{a.max_update} updates")
        print(f"\n(results.json, results.md, bleu.png, hypotheses and logs in {self.out})")
        return text

    # -- analyses -----------------------------------------------------------------------------
    def analyze(self, rows: List[dict]) -> None:
        """``syntax-nmt-analyze`` on the first seed's models (``--analyses``)."""
        a = self.args
        if not a.analyses:
            return
        self.header(f"analyses of the seed-{self.seeds()[0]} models: {', '.join(a.analyses)}")
        seed = self.seeds()[0]
        out = self.path("analysis")
        data = self.path("data-bin")
        tool = [_exe("syntax-nmt-analyze")]
        ckpts = [x for n in a.systems for x in ("--system", f"{n}={self.checkpoint(n, seed)}")]
        gens = [x for n in a.systems for x in ("--system", f"{n}={self.path('gen', f'{n}.seed{seed}.gen')}")]
        refs = ["--ref-raw", self.path("corpus", "test.de")]
        commands = {
            "length": ["length", "--data", data, *refs, "--out", out, *gens],
            "attention": ["attention", "--data", data, "--sentence", self.attention_sentence(), "--out", out, *ckpts],
            "gates": ["gates", "--data", data, "--out", out, *ckpts],
            "noise": ["noise", "--data", data, *refs, "--out", os.path.join(out, "noise"),
                      "--gen-args", " ".join(GEN_ARGS), *ckpts],
        }
        for name in a.analyses:
            try:
                self.run([*tool, *commands[name]], env=self._env())
            except subprocess.CalledProcessError as e:  # an analysis that does not apply is no reason to stop
                print(f"  (analysis {name} did not run: exit status {e.returncode})", flush=True)
        print(f"analyses in {out}")

    def attention_sentence(self) -> int:
        """The first test sentence of 10 to 20 subwords (readable heatmaps), else sentence 0."""
        with open(self.path("text", "test.en"), encoding="utf-8") as f:
            for i, line in enumerate(f):
                if 10 <= len(line.split()) <= 20:
                    return i
        return 0

    # -- data fractions -----------------------------------------------------------------------
    def fractions(self) -> None:
        """Train ``--fraction-systems`` on nested subsamples of the training data (same BPE and
        budget), then ``syntax-nmt-analyze fractions`` (Syntax-Infused Transformer, Table 1)."""
        import numpy as np

        from syntax_nmt.data.subsample import subsample_mask

        a = self.args
        if not a.fractions:
            return
        self.header(f"data fractions {', '.join(f'{p:g}%' for p in a.fractions)}: "
                    f"{', '.join(a.fraction_systems)} x {len(self.seeds())} seeds")
        t = self.path("text")
        streams = [e for e in ("en", "de", "pos", "case", "subword", "head", "dep") if os.path.exists(f"{t}/train.{e}")]
        with open(f"{t}/train.en", encoding="utf-8") as f:
            n = sum(1 for _ in f)
        for p in a.fractions:
            group = f"p{p:g}"
            mask = subsample_mask(n, p, a.seed)
            prefix = self.path("fractions", "text", group, "train")
            if not self.done(f"subsample-{group}"):
                os.makedirs(os.path.dirname(prefix), exist_ok=True)
                for e in streams:
                    with open(f"{t}/train.{e}", encoding="utf-8") as src, \
                            open(f"{prefix}.{e}", "w", encoding="utf-8") as dst:
                        dst.writelines(line for line, keep in zip(src, mask) if keep)
                # a subsample is annotated exactly as the whole: the same settings file
                from syntax_nmt.annotate.settings import settings_path

                if os.path.exists(settings_path(f"{t}/train")):
                    shutil.copyfile(settings_path(f"{t}/train"), settings_path(prefix))
                self.mark(f"subsample-{group}")
            data = self.path("fractions", "data-bin", group)
            self.binarize(prefix, data, tag=f"binarize-{group}")
            print(f"{group}: {int(np.sum(mask))} training sentences")
            jobs = [(name, seed) for seed in self.seeds() for name in a.fraction_systems]
            runs = self.train_and_generate(jobs, data, group)
            results = self.path("fractions", "eval", group)
            os.makedirs(results, exist_ok=True)
            for (name, seed), r in runs.items():
                with open(os.path.join(results, f"{name}.seed{seed}.json"), "w") as f:
                    json.dump({**r, "train_sentences": int(np.sum(mask))}, f, indent=1)
        self.run([_exe("syntax-nmt-analyze"), "fractions", "--results", self.path("fractions", "eval"),
                  "--out", self.path("fractions")])
        with open(self.path("fractions", "fractions.md"), encoding="utf-8") as f:
            print(f.read())

    def translate_raw(self, sentences=("The old teacher saw a small dog in the garden.", "A train is expensive.",
                                       "Has our queen answered the mysterious party?")):
        """Translate raw English, annotated on the fly, with fairseq-interactive and with the Python hub."""
        name = next((s for s in self.args.systems if not get_system(s).stock), None)
        if name is None:
            return
        if getattr(self.args, "gold_parses", False):
            print("\n(--gold-parses: no parser was trained, so raw text cannot be annotated on the fly; skipping "
                  "the raw-text translation)")
            return
        from syntax_nmt.annotate.online import ensure_data_settings

        t = self.path("text")
        settings = ensure_data_settings(self.path("data-bin"), [
            *self.parser_args("test"), "--src-lang", "en", "-o", f"{t}/test", "--subword", "bpe",
            "--subword-model", f"{t}/bpe.codes"])
        ckpt = self.checkpoint(name, self.seeds()[0])
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
        self.start = start = self.clock()
        a = self.args
        a.seeds_auto = a.seeds == "auto"
        if a.seeds_auto:
            print(budget.policy(a.systems, a.jobs, a.time_budget, not self.systems_given()), flush=True)
        self.corpus()
        self.spacy()
        self.annotate()
        self.binarize()
        rows = self.compare()
        self.report(rows)
        self.analyze(rows)
        self.fractions()
        self.translate_raw()
        import resource

        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        limit = f" of the {a.time_budget:g} min budget" if a.seeds_auto else ""
        line = (f"demo finished in {self.elapsed() / 60:.1f} min{limit} ({time.time() - start:.0f} s in this run, "
                f"{cpu.ru_utime + cpu.ru_stime:.0f} s CPU in its commands)")
        print(line)
        if os.path.exists(self.path("results.md")):
            with open(self.path("results.md"), "a") as f:
                f.write(f"\n{line}\n")


# -- pure helpers (tested without training) ------------------------------------------------------
def system_command(name: str, layers: int = ENCODER_LAYERS) -> tuple:
    """``(task, arch, options)`` of a system of the table at the demo's size (the options come after the
    shared ones, so a system may change the criterion)."""
    system = get_system(name)
    if system.stock:
        return system.task, "transformer_tiny", []
    return system.task, "syntax_transformer_tiny", [*system.args(), *fit_encoder_layers(system, layers)]


def summarize(runs: Dict[tuple, dict], systems: Sequence[str], seeds: Sequence[int],
              params: Dict[str, int]) -> List[dict]:
    """One row per system (baseline first): per-seed sacreBLEU and compound-split BLEU, their means and
    sample sds (:func:`syntax_nmt.compare.summarize`)."""
    return compare.summarize(runs, systems, seeds, ("sacrebleu", "compound_split_bleu"), params)


def format_table(rows: List[dict], args, seeds: Sequence[int]) -> str:
    base = rows[0]
    lines = [f"=== sacreBLEU on the synthetic test set ({base['sentences']} sentences), {len(seeds)} training seeds "
             f"({', '.join(map(str, seeds))}), identical budgets: {args.max_update} updates of "
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
    lines.append("p: sacreBLEU paired bootstrap against the first system (1000 resamples), on the seeds' translations "
                 "pooled (* p < 0.05); seeds p<.05: seeds whose own test is significant")
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
    """The demo's bar chart of sacreBLEU over seeds (:func:`syntax_nmt.compare.plot_bars`)."""
    compare.plot_bars(rows, path, title, "sacrebleu", "sacreBLEU (mean ± sd over seeds; dots: seeds)")


def _count_params(checkpoint: str) -> int:
    import torch

    import syntax_nmt.checkpoint_compat  # noqa: F401  (weights-only loading of fairseq checkpoints)

    state = torch.load(checkpoint, map_location="cpu")
    return sum(v.numel() for k, v in state["model"].items() if not k.endswith("_float_tensor") and "version" not in k)


def _seeds(value: str) -> List[int]:
    items = [int(v) for v in value.split(",") if v.strip()]
    if len(items) == 1 and "," not in value:
        return list(range(1, items[0] + 1))
    return items


def _default_jobs() -> int:
    try:
        import torch

        if torch.cuda.is_available():
            return 1
    except ImportError:
        pass
    return max(1, min(4, os.cpu_count() or 1))


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="demo-out", help="working directory (reruns resume from it)")
    p.add_argument("--train", type=int, default=20000, help="training sentences")
    p.add_argument("--valid", type=int, default=500)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1, help="seed of the corpus and of the data fractions")
    p.add_argument("--seeds", default="auto",
                   help="training seeds: a count N (seeds 1..N), a comma-separated list, or 'auto' (default): "
                   f"the seeds ({MIN_AUTO_SEEDS} to {MAX_AUTO_SEEDS}; one if two do not fit) and, with the default "
                   "--systems, the systems that fit in --time-budget, measured on the first trainings")
    p.add_argument("--time-budget", type=float, default=20.0,
                   help="minutes of the whole demo that --seeds auto plans for (default 20)")
    p.add_argument("--bpe", type=int, default=4000, help="joint BPE merges")
    p.add_argument("--max-update", type=int, default=400, help="training updates per system (same for all)")
    p.add_argument("--max-tokens", type=int, default=1536, help="tokens per batch")
    p.add_argument("--systems", default="default",
                   help="comma-separated names from the table of systems (python -m syntax_nmt.systems list --all), "
                   f"the first is the baseline (default: {', '.join(default_systems())})")
    p.add_argument("--jobs", type=int, default=None,
                   help="trainings at a time (default: 1 on a GPU, else the CPU cores, at most 4)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per training (default: cores / jobs)")
    p.add_argument("--gold-parses", action="store_true",
                   help="annotate from the corpus's gold trees instead of training and running a spaCy parser")
    p.add_argument("--analyses", default="length,attention,gates",
                   help="syntax-nmt-analyze subcommands run on the first seed's models: length, attention, gates, "
                   "noise (slow: 2 streams x 6 rates x systems); empty for none")
    p.add_argument("--fractions", default="",
                   help="also train --fraction-systems on these percentages of the training data, "
                   "e.g. 1,5,10,25,50,100")
    p.add_argument("--fraction-systems", default="transformer,syntax-infused")
    p.add_argument("--verbose", action="store_true", help="stream every log line of fairseq")
    return p


def main(args) -> None:
    from syntax_nmt.cli_errors import fail

    def systems(value, option):
        try:
            return parse_systems(value, option)
        except ValueError as e:
            fail(PROG, e)

    args.systems_given = args.systems != "default"
    args.systems = systems(args.systems, "--systems")
    args.fraction_systems = systems(args.fraction_systems, "--fraction-systems")
    try:
        args.seeds = "auto" if args.seeds == "auto" else _seeds(args.seeds)
        args.fractions = [float(p) for p in args.fractions.split(",") if p.strip()]
    except ValueError as e:
        fail(PROG, e)
    if not args.seeds or any(not 0 < p <= 100 for p in args.fractions):
        fail(PROG, "--seeds needs at least one seed and --fractions percentages in (0, 100]")
    known = {"length", "attention", "gates", "noise"}
    args.analyses = [x for x in args.analyses.split(",") if x]
    if set(args.analyses) - known:
        fail(PROG, f"--analyses: unknown {sorted(set(args.analyses) - known)}; choose from {sorted(known)}")
    args.jobs = args.jobs or _default_jobs()
    args.threads = args.threads or max(1, (os.cpu_count() or 1) // args.jobs)
    Demo(args).main()


def cli_main(argv=None) -> None:
    main(get_parser().parse_args(argv))


if __name__ == "__main__":
    cli_main()
