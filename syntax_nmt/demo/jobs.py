"""Training and translating ``(system, seed)`` jobs, several side by side, with status lines and the expected end."""

import glob
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
        #: the updates each running job trains to
        self.targets: Dict[tuple, int] = {}
        #: whether a plan may cut the updates of the jobs being run (then they save their models on the way)
        self.may_cut = False

    # -- systems ------------------------------------------------------------------------------
    def model_args(self) -> List[str]:
        return MODEL_ARGS

    def seeds(self) -> List[int]:
        """The training seeds: ``--seeds``, or with ``--seeds auto`` the ones the demo chose (``Demo.compare``)."""
        return self.args.seeds

    def job_updates(self) -> int:
        """The updates of the trainings from now on: ``--max-update``, or the cut of the plan in force
        (``--seeds auto``, :mod:`syntax_nmt.demo.budget`, step 3)."""
        cut = self.plan.updates if self.plan is not None else None
        return cut or self.args.max_update

    @staticmethod
    def _tag(step: str, name: str, seed: int, group: str) -> str:
        return f"{step}-{group + '-' if group else ''}{name}-seed{seed}"

    def trained_updates(self, name: str, seed: int, group: str = "") -> int:
        """The updates a finished training ran (0: not finished; a marker from before they were recorded:
        ``--max-update``)."""
        tag = self._tag("train", name, seed, group)
        return self.info(tag).get("updates", self.args.max_update) if self.done(tag) else 0

    def checkpoint(self, name: str, seed: int, group: str = "", updates: Optional[int] = None) -> str:
        """The checkpoint of system ``name`` trained with ``seed`` (``group``: a data fraction) at ``updates``
        (default: :meth:`job_updates`): its last one, or, for a training that ran further, the one it saved at
        ``updates`` (:func:`~syntax_nmt.demo.budget.update_marks`).

        Raises:
            FileNotFoundError: the training ran further and saved no model at ``updates``.
        """
        folder = self.path("checkpoints", *([group] if group else []), name, f"seed{seed}")
        updates = updates or self.job_updates()
        trained = self.trained_updates(name, seed, group)
        if not trained or updates >= trained:
            return os.path.join(folder, "checkpoint_last.pt")
        found = glob.glob(os.path.join(folder, f"checkpoint_*_{updates}.pt"))
        if not found:
            raise FileNotFoundError(f"{folder}: trained to {trained} updates, no checkpoint saved at update {updates}")
        return found[0]

    def keep_checkpoints(self, name: str, seed: int, group: str = "", keep=()) -> None:
        """Delete the checkpoints a training saved along the way (``checkpoint_EPOCH_UPDATES.pt``) except those at
        the updates in ``keep``."""
        folder = os.path.dirname(self.checkpoint(name, seed, group, self.args.max_update))
        for path in glob.glob(os.path.join(folder, "checkpoint_*_*.pt")):
            m = re.fullmatch(r"checkpoint_\d+_(\d+)\.pt", os.path.basename(path))
            if m and int(m.group(1)) not in keep:
                os.remove(path)

    def train(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False,
              on_line: Optional[Callable[[str], None]] = None, updates: Optional[int] = None) -> dict:
        """Train one system with one seed to ``updates`` (default :meth:`job_updates`; skipped when done with as
        many or more), saving its model on the way at the updates a plan may cut to; returns its wall and CPU
        seconds and its updates."""
        a = self.args
        updates = updates or self.job_updates()
        task, arch, extra = system_command(name)
        tag = self._tag("train", name, seed, group)
        if self.trained_updates(name, seed, group) >= updates:
            return self.info(tag)
        save = os.path.dirname(self.checkpoint(name, seed, group, a.max_update))
        marks = [m for m in budget.update_marks(a.max_update) if m < updates] if self.may_cut else []
        cmd = [exe("fairseq-train"), data or self.path("data-bin"), "--user-dir", user_dir(), "--task", task,
               "--arch", arch, *self.model_args(), *OPTIM_ARGS, *extra, "--max-tokens", a.max_tokens,
               "--max-update", updates, "--seed", seed, "--save-dir", save, "--no-epoch-checkpoints",
               "--log-format", "simple", "--log-interval", "25", "--num-workers", "0",
               "--validate-interval-updates", updates,
               *(["--save-interval-updates", budget.save_interval(marks)] if marks else [])]
        os.makedirs(self.path("logs"), exist_ok=True)
        start = time.time()
        cpu = self.run(cmd, log=self.path("logs", tag + ".log"), quiet=quiet, env=self.env(), on_line=on_line)
        info = {"seconds": time.time() - start, "cpu_seconds": cpu, "updates": updates}
        if self.done(tag):  # trained further from an earlier, shorter training: both count
            before = self.info(tag)
            info.update(seconds=info["seconds"] + before["seconds"],
                        cpu_seconds=info["cpu_seconds"] + (before.get("cpu_seconds") or 0))
        self.mark(tag, **info)
        self.keep_checkpoints(name, seed, group, keep=marks)
        return info

    def generate(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False,
                 updates: Optional[int] = None) -> dict:
        """Translate the test set with one trained system at ``updates`` (default :meth:`job_updates`) and score it
        (:func:`~syntax_nmt.evaluation.scoring.score`)."""
        from syntax_nmt.evaluation.scoring import score

        updates = updates or self.job_updates()
        task = get_system(name).task
        folder = self.path("gen", group) if group else self.path("gen")
        os.makedirs(folder, exist_ok=True)
        gen = os.path.join(folder, f"{name}.seed{seed}.gen")
        tag = self._tag("generate", name, seed, group)
        if not self.done(tag) or self.info(tag).get("updates", self.args.max_update) != updates:
            start = time.time()
            cpu = self.run([exe("fairseq-generate"), data or self.path("data-bin"), "--user-dir", user_dir(),
                            "--task", task, "--path", self.checkpoint(name, seed, group, updates), *GEN_ARGS,
                            "--remove-bpe", "--required-batch-size-multiple", "1"], log=gen, quiet=quiet,
                           env=self.env())
            self.mark(tag, seconds=time.time() - start, cpu_seconds=cpu, updates=updates)
        scores = os.path.join(self.path("eval", group) if group else self.path("eval"))
        os.makedirs(scores, exist_ok=True)
        return score(gen, self.path("corpus", "test.de"), self.path("corpus", "test.tok.de"),
                     os.path.join(scores, f"{name}.seed{seed}"))

    def job(self, name: str, seed: int, data: str = None, group: str = "", quiet: bool = False,
            on_line: Optional[Callable[[str], None]] = None, updates: Optional[int] = None) -> dict:
        """Train and translate one ``(system, seed)`` at ``updates`` (default :meth:`job_updates`); returns its
        scores with ``train_seconds`` and ``generate_seconds`` (wall), their CPU seconds, the ``updates`` it was
        trained to and those it was ``scored_at``."""
        updates = updates or self.job_updates()
        t = self.train(name, seed, data, group, quiet=quiet, on_line=on_line, updates=updates)
        r = self.generate(name, seed, data, group, quiet=quiet, updates=updates)
        g = self.info(self._tag("generate", name, seed, group))
        r.update(system=name, seed=seed, train_seconds=t["seconds"], train_cpu_seconds=t.get("cpu_seconds"),
                 generate_seconds=g.get("seconds", 0.0), generate_cpu_seconds=g.get("cpu_seconds"),
                 updates=t.get("updates", self.args.max_update), scored_at=updates)
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
        self.targets = {}  # job -> the updates it trains to (:meth:`job_updates` when it started)
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
                        self.targets[job] = self.job_updates()
                        futures[pool.submit(self.job, *job, data, group, parallel, counter(job),
                                            updates=self.targets[job])] = job
                if not futures:
                    return runs
                finished, _ = wait(futures, timeout=STATUS_SECONDS if parallel else None,
                                   return_when=FIRST_COMPLETED)
                for f in finished:
                    job = futures.pop(f)
                    ran = self.clock() - started.pop(job)
                    self.targets.pop(job, None)
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
                        status = ", ".join(f"{n} seed {s} {updates.get((n, s), 0)}/"
                                           f"{self.targets.get((n, s), self.args.max_update)}" for n, s in started)
                    print(f"  ... {self.elapsed() / 60:.1f} min: training {status}   "
                          f"[{self.eta(wanted, runs, running())}]", flush=True)

    def elapsed(self) -> float:
        """Seconds of the demo so far, jobs resumed from an earlier run counted with their recorded time."""
        return self.clock() - self.start + self.resumed

    def eta(self, wanted: List[tuple], runs: Dict[tuple, dict], running: Dict[tuple, float]) -> str:
        """``done/total, expected end`` of the wanted jobs, from the seconds measured so far."""
        done = sum(j in runs for j in wanted)
        measured = budget.job_seconds(runs, self.job_updates())  # the updates of the jobs to come
        if not measured:
            return f"{done}/{len(wanted)} done, {self.elapsed() / 60:.1f} min, measuring this machine"
        todo = [j for j in wanted if j not in runs]
        end = budget.jobs_end(measured, todo, self.args.jobs, self.elapsed(), running)
        text = f"{done}/{len(wanted)} done, {self.elapsed() / 60:.1f} min, trainings end at ~{end / 60:.1f} min"
        if self.plan is not None and self.args.seeds == "auto":
            text += f", the demo at ~{(end + self.plan.finish - self.plan.end) / 60:.1f} of {self.args.time_budget:g} min"
        return text
