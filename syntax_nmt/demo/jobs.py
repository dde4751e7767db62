"""Training and translating ``(system, seed)`` jobs, several side by side, with status lines and the expected end."""

import os
import re
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Dict, List, Optional, Sequence

from syntax_nmt.utils import exe, user_dir
from syntax_nmt.demo import budget
from syntax_nmt.demo.data import DataPipeline
from syntax_nmt.demo.settings import GEN_ARGS, MODEL_ARGS, OPTIM_ARGS, system_command
from syntax_nmt.systems import get as get_system

#: seconds between the status lines of the trainings running side by side
STATUS_SECONDS = 30.0


class JobRunner(DataPipeline):
    """Trains and translates jobs ``(system, seed)`` on the binarized data, ``--jobs`` at a time."""

    def __init__(self, args):
        super().__init__(args)
        self.clock: Callable[[], float] = time.time
        self.start = self.clock()
        #: ``--seeds auto``: the plan in force (:mod:`syntax_nmt.demo.budget`), shown in the expected end
        self.plan: Optional[budget.Plan] = None
        #: seconds of jobs resumed from an earlier run (they count towards the budget with their recorded time)
        self.resumed = 0.0
        #: lines to print after the next finished jobs (a new plan)
        self.notes: List[str] = []

    # -- systems ------------------------------------------------------------------------------
    def model_args(self) -> List[str]:
        return MODEL_ARGS

    def seeds(self) -> List[int]:
        """The training seeds: ``--seeds``, or with ``--seeds auto`` the ones the demo chose (``Demo.compare``)."""
        return self.args.seeds

    def checkpoint(self, name: str, seed: int, group: str = "") -> str:
        """The checkpoint of system ``name`` trained with ``seed`` (``group``: a data fraction)."""
        return self.path("checkpoints", *([group] if group else []), name, f"seed{seed}", "checkpoint_last.pt")

    def train(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False,
              on_line: Optional[Callable[[str], None]] = None) -> dict:
        """Train one system with one seed (skipped when done); returns its wall and CPU seconds."""
        a = self.args
        task, arch, extra = system_command(name)
        tag = f"train-{group + '-' if group else ''}{name}-seed{seed}"
        if self.done(tag):
            return self.info(tag)
        save = os.path.dirname(self.checkpoint(name, seed, group))
        cmd = [exe("fairseq-train"), data or self.path("data-bin"), "--user-dir", user_dir(), "--task", task,
               "--arch", arch, *self.model_args(), *OPTIM_ARGS, *extra, "--max-tokens", a.max_tokens,
               "--max-update", a.max_update, "--seed", seed, "--save-dir", save, "--no-epoch-checkpoints",
               "--log-format", "simple", "--log-interval", "25", "--num-workers", "0",
               "--validate-interval-updates", a.max_update]
        os.makedirs(self.path("logs"), exist_ok=True)
        start = time.time()
        cpu = self.run(cmd, log=self.path("logs", tag + ".log"), quiet=quiet, env=self.env(), on_line=on_line)
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
            cpu = self.run([exe("fairseq-generate"), data or self.path("data-bin"), "--user-dir", user_dir(),
                            "--task", task, "--path", self.checkpoint(name, seed, group), *GEN_ARGS, "--remove-bpe",
                            "--required-batch-size-multiple", "1"], log=gen, quiet=quiet, env=self.env())
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
