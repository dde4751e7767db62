"""The demo's steps in order: data, the comparison of the systems over seeds (within the time budget), the
report, the analyses, the data fractions and raw-text translation (:class:`Demo`)."""

import os
import shutil
import subprocess
import time
from typing import Dict, List

from syntax_nmt.evaluation import compare
from syntax_nmt.utils import atomic_write_json, atomic_write_text, exe, user_dir
from syntax_nmt.demo import budget
from syntax_nmt.demo.jobs import JobRunner
from syntax_nmt.demo.report import count_params, format_table, plot_bleu, quality_check, summarize
from syntax_nmt.demo.settings import GEN_ARGS
from syntax_nmt.systems import get as get_system


class Demo(JobRunner):
    """``make demo`` (:mod:`syntax_nmt.demo`)."""

    def __init__(self, args):
        super().__init__(args)
        #: ``--seeds auto``: the printed decision (:mod:`syntax_nmt.demo.budget`)
        self.decision = ""

    def systems_given(self) -> bool:
        """Whether the user named the systems (``--systems``); only the default comparison may be cut."""
        return bool(getattr(self.args, "systems_given", False))

    def compare(self) -> List[dict]:
        a = self.args
        auto = a.seeds == "auto"
        what = (f"the seeds{'' if self.systems_given() else ' and systems'} that fit in {a.time_budget:g} min" if auto
                else f"{len(a.seeds)} seeds")
        self.header(f"train {len(a.systems)} systems x {what} ({a.max_update} updates of {a.max_tokens} tokens each, "
                    f"{a.jobs} at a time with {a.threads} thread(s) each), translate, score")
        if auto:
            self.may_cut = True
            runs = self.schedule(self.budget_plan)
            a.systems, a.seeds = list(self.plan.systems), list(range(1, self.plan.seeds + 1))
            self.decision = budget.describe(self.plan, budget.train_seconds(runs, a.max_update), a.time_budget)
            print(f"\n=== budget: {self.decision}", flush=True)
            runs = self.score_at_plan(runs)
            self.may_cut = False
            a.updates = self.job_updates()
        else:
            runs = self.train_and_generate([(name, seed) for seed in self.seeds() for name in a.systems])
        return summarize(runs, a.systems, self.seeds(),
                         {n: count_params(self.checkpoint(n, self.seeds()[0])) for n in a.systems})

    def score_at_plan(self, runs: Dict[tuple, dict]) -> Dict[tuple, dict]:
        """``--seeds auto``, once the plan is final: every job of the plan scored at the plan's updates (a training
        that ran further before a cut is translated again with its model at the cut; one that ran fewer trains
        on), and the checkpoints saved along the way deleted, but those at the cut."""
        updates = self.job_updates()
        for job in self.plan.jobs():
            if runs[job].get("scored_at", updates) != updates:
                print(f"  {job[0]} seed {job[1]}: trained to {runs[job]['updates']} updates, scored at {updates}",
                      flush=True)
                runs[job] = self.job(*job, updates=updates)
        for job in runs:
            self.keep_checkpoints(*job, keep=[updates] if updates != self.args.max_update else [])
        return runs

    def budget_plan(self, runs: Dict[tuple, dict], running: Dict[tuple, float]) -> List[tuple]:
        """``--seeds auto``: the jobs of the plan that fits the budget (:func:`syntax_nmt.demo.budget.plan_budget`)
        with what has been measured so far; before any measurement, the first wave (seed 1 of the first
        ``--jobs`` systems). Prints the decision when it is first made and whenever it changes."""
        a = self.args
        measured = budget.job_seconds(runs, a.max_update)
        if not measured:
            return budget.job_order(a.systems, 1)[:a.jobs]
        train = budget.train_seconds(runs, a.max_update)
        trained = {**{job: r.get("updates", a.max_update) for job, r in runs.items()}, **self.targets}
        plan = budget.plan_budget(measured, a.systems, a.jobs, self.elapsed(), a.time_budget * 60,
                                  budget.reserve_seconds(budget.slowdown(list(train.values()))), done=runs,
                                  running=running, adapt_systems=not self.systems_given(), max_update=a.max_update,
                                  generate_seconds=budget.generate_seconds(runs), trained=trained, current=self.plan)
        if self.plan is None or (plan.systems, plan.seeds, plan.updates) != \
                (self.plan.systems, self.plan.seeds, self.plan.updates):
            self.decision = budget.describe(plan, train, a.time_budget)
            self.notes.append(f"\n=== {'plan' if self.plan is None else 're-planned'}: {self.decision}\n")
        self.plan = plan
        return plan.jobs()

    def significance(self, rows: List[dict]) -> None:
        """Paired bootstrap of every system against the baseline, the test sentence as the unit (all seeds'
        lines of a sentence resampled together), and per seed (:func:`syntax_nmt.evaluation.compare.significance`)."""
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
        atomic_write_json(self.path("results.json"), rows, indent=1)
        atomic_write_text(self.path("results.md"),
                          (f"{self.decision}\n\n" if self.decision else "") + "```\n" + text + "\n```\n")
        plot_bleu(rows, self.path("bleu.png"), f"synthetic EN->DE test set, {len(self.seeds())} seeds, "
                                                 f"{self.job_updates()} updates")
        print(f"\n(results.json, results.md, bleu.png, hypotheses and logs in {self.out})")
        return text

    def analyze(self, rows: List[dict]) -> None:
        """``syntax-nmt-analyze`` on the first seed's models (``--analyses``)."""
        a = self.args
        if not a.analyses:
            return
        self.header(f"analyses of the seed-{self.seeds()[0]} models: {', '.join(a.analyses)}")
        seed = self.seeds()[0]
        out = self.path("analysis")
        data = self.path("data-bin")
        tool = [exe("syntax-nmt-analyze")]
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
                self.run([*tool, *commands[name]], env=self.env())
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
                from syntax_nmt.annotation_settings import settings_path

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
                atomic_write_json(os.path.join(results, f"{name}.seed{seed}.json"),
                                  {**r, "train_sentences": int(np.sum(mask))}, indent=1)
        self.run([exe("syntax-nmt-analyze"), "fractions", "--results", self.path("fractions", "eval"),
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
        self.run([exe("fairseq-interactive"), self.path("data-bin"), "--user-dir", user_dir(), "--task",
                  "syntax_translation", "--path", ckpt, "--annotation-settings-file", settings, "--beam", "4",
                  "--lenpen", "0.6", "--remove-bpe", "--input", self.path("raw.en")], log=self.path("raw.gen"))
        with open(self.path("raw.gen"), encoding="utf-8") as f:
            for line in f:
                if line[:2] in ("S-", "D-"):
                    print("  " + line.rstrip("\n"))
        kwargs = {"checkpoint_file": os.path.basename(ckpt), "data_name_or_path": self.path("data-bin"),
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
        self.check_recorded_settings()  # a folder made with other settings stops the run here, before any step
        a.seeds_auto = a.seeds == "auto"
        if a.seeds_auto:
            print(budget.policy(a.systems, a.jobs, a.time_budget, not self.systems_given(), max_update=a.max_update),
                  flush=True)
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
