"""The demo's JobRunner (syntax_nmt/demo/jobs.py) without fairseq: the command lines it runs for a system and
seed, the checkpoint it takes for an update count and those it keeps, the records of a job, and the scheduler
(``--jobs`` at a time, re-planned after every finished job) with its status lines and expected end, on a fake
clock. fairseq is never started: ``Workdir.run`` is replaced by a stand-in that records each command line."""

import os
import threading
import time as real_time
import types

import pytest

from syntax_nmt.demo import budget as b
from syntax_nmt.demo import cli, jobs
from syntax_nmt.demo.settings import GEN_ARGS, MODEL_ARGS, OPTIM_ARGS, system_command
from syntax_nmt.evaluation import scoring
from syntax_nmt.systems import get as get_system
from syntax_nmt.utils import exe, user_dir


class FakeClock:
    def __init__(self, t=0.0):
        self.t = t

    def __call__(self):
        return self.t


def runner(tmp_path, *extra, workers=1):
    args = cli.get_parser().parse_args(["--out", str(tmp_path), *extra])
    args.jobs, args.threads = workers, 1
    return jobs.JobRunner(args)


class Fairseq:
    """Stands in for ``Workdir.run``: records every command line with the keywords it was run with; a training
    takes 100 s of the fake clock and 7 s of CPU and writes its checkpoints as fairseq names them, a translation
    takes 10 s and 3 s of CPU."""

    def __init__(self, clock):
        self.clock, self.calls = clock, []

    def __call__(self, cmd, log=None, quiet=False, env=None, on_line=None):
        cmd = [str(c) for c in cmd]
        self.calls.append({"cmd": cmd, "log": log, "quiet": quiet, "env": env, "on_line": on_line})
        if cmd[0] == exe("fairseq-train"):
            self.clock.t += 100.0
            folder = cmd[cmd.index("--save-dir") + 1]
            os.makedirs(folder, exist_ok=True)
            updates = int(cmd[cmd.index("--max-update") + 1])
            step = int(cmd[cmd.index("--save-interval-updates") + 1]) if "--save-interval-updates" in cmd else 0
            for u in range(step, updates, step or updates):
                open(os.path.join(folder, f"checkpoint_1_{u}.pt"), "w").close()
            open(os.path.join(folder, "checkpoint_last.pt"), "w").close()
            return 7.0
        self.clock.t += 10.0
        return 3.0


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A runner in ``tmp_path`` whose commands go to :class:`Fairseq` and whose wall time is a fake clock (the
    translations are scored by a stand-in that records its arguments)."""
    clock = FakeClock(1000.0)
    monkeypatch.setattr(jobs, "time", types.SimpleNamespace(time=clock))
    scored = []

    def score(*args):
        scored.append(args)
        return {"sacrebleu": 12.5}

    monkeypatch.setattr(scoring, "score", score)
    d = runner(tmp_path)
    d.run = Fairseq(clock)
    d.scored = scored
    return d


def ckpt(tmp_path, *parts):
    return str(tmp_path.joinpath("checkpoints", *parts))


def train_command(tmp_path, name, seed, data=None, folder=(), updates=400, tail=()):
    task, arch, extra = system_command(name)
    return [exe("fairseq-train"), data or str(tmp_path / "data-bin"), "--user-dir", user_dir(), "--task", task,
            "--arch", arch, *MODEL_ARGS, *OPTIM_ARGS, *extra, "--max-tokens", "1536", "--max-update", str(updates),
            "--seed", str(seed), "--save-dir", ckpt(tmp_path, *folder, name, f"seed{seed}"), "--no-epoch-checkpoints",
            "--log-format", "simple", "--log-interval", "25", "--num-workers", "0", "--validate-interval-updates",
            str(updates), *tail]


def generate_command(tmp_path, name, checkpoint, data=None):
    return [exe("fairseq-generate"), data or str(tmp_path / "data-bin"), "--user-dir", user_dir(), "--task",
            get_system(name).task, "--path", checkpoint, *GEN_ARGS, "--remove-bpe", "--required-batch-size-multiple",
            "1"]


# -- the command lines ------------------------------------------------------------------------------------------
def test_a_training_runs_fairseq_train_with_the_systems_options_and_records_its_time(fake, tmp_path):
    """A fresh runner (no plan that may cut) saves no model on the way; the log goes to logs/, the record has the
    wall seconds, the CPU seconds and the updates."""
    info = fake.train("sgnet", 3)
    (call,) = fake.run.calls
    assert call["cmd"] == train_command(tmp_path, "sgnet", 3)
    assert call["log"] == str(tmp_path / "logs" / "train-sgnet-seed3.log") and (tmp_path / "logs").is_dir()
    assert call["quiet"] is False and call["on_line"] is None and call["env"] == fake.env()
    assert info == {"seconds": 100.0, "cpu_seconds": 7.0, "updates": 400} == fake.info("train-sgnet-seed3")
    assert fake.trained_updates("sgnet", 3) == 400


def test_a_training_of_a_data_fraction_has_its_own_folders_and_saves_at_the_marks(fake, tmp_path):
    """``group`` (a data fraction) names the checkpoint folder, the log and the marker; under a plan that may cut,
    the models at the marks below the updates are saved and the others deleted (in the fraction's folder)."""
    fake.may_cut = True
    folder = tmp_path / "checkpoints" / "half" / "sgnet" / "seed3"
    folder.mkdir(parents=True)
    (folder / "checkpoint_1_50.pt").write_text("from an earlier run")

    def on_line(line):
        pass

    info = fake.train("sgnet", 3, data="/elsewhere/bin", group="half", quiet=True, on_line=on_line, updates=300)
    (call,) = fake.run.calls
    assert call["cmd"] == train_command(tmp_path, "sgnet", 3, "/elsewhere/bin", ("half",), 300,
                                        ("--save-interval-updates", "200"))
    assert call["log"] == str(tmp_path / "logs" / "train-half-sgnet-seed3.log")
    assert call["quiet"] is True and call["on_line"] is on_line
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint_1_200.pt", "checkpoint_last.pt"]
    assert fake.info("train-half-sgnet-seed3") == info and not fake.done("train-sgnet-seed3")
    assert (fake.trained_updates("sgnet", 3, "half"), fake.trained_updates("sgnet", 3)) == (300, 0)


def test_a_training_done_to_the_updates_asked_is_not_run_again(fake, tmp_path):
    fake.mark("train-sgnet-seed1", seconds=80.0, cpu_seconds=70.0, updates=400)
    assert fake.train("sgnet", 1) == {"seconds": 80.0, "cpu_seconds": 70.0, "updates": 400}
    # a marker from before the updates were recorded: the training ran --max-update updates
    fake.mark("train-lisa-seed1", seconds=80.0)
    assert fake.trained_updates("lisa", 1) == 400 and fake.train("lisa", 1) == {"seconds": 80.0}
    assert fake.run.calls == [] and fake.trained_updates("lisa", 2) == 0
    # the same system and seed on a data fraction is a training of its own
    fake.train("sgnet", 1, group="half")
    assert [c["cmd"] for c in fake.run.calls] == [train_command(tmp_path, "sgnet", 1, folder=("half",))]


def test_a_training_trained_on_counts_both_runs(fake, tmp_path):
    """An earlier, shorter training (its marker without CPU seconds) trains on: the wall seconds of both runs, the
    CPU seconds of the one measured."""
    fake.mark("train-lisa-seed1", seconds=100.0, updates=200)
    info = fake.train("lisa", 1, updates=400)
    assert fake.run.calls[0]["cmd"] == train_command(tmp_path, "lisa", 1)
    assert info == {"seconds": 200.0, "cpu_seconds": 7.0, "updates": 400} == fake.info("train-lisa-seed1")


def test_a_training_past_the_cut_of_the_plan_in_force_needs_no_model_at_the_cut(fake, tmp_path):
    """Under a plan cut to 200 updates, a training asked for the full 400 (one that ran to 300 and saved nothing at
    200) trains on into its folder and keeps its last model: the folder does not depend on the cut."""
    fake.plan = b.Plan(("sgnet",), 1, 0.0, 0.0, True, "", updates=200)
    fake.mark("train-sgnet-seed1", seconds=50.0, updates=300)
    info = fake.train("sgnet", 1, updates=400)
    assert fake.run.calls[0]["cmd"] == train_command(tmp_path, "sgnet", 1)
    assert info["updates"] == 400 and os.listdir(ckpt(tmp_path, "sgnet", "seed1")) == ["checkpoint_last.pt"]


# -- checkpoints ------------------------------------------------------------------------------------------------
def test_the_checkpoint_for_an_update_count_is_looked_up_in_the_fractions_folder(fake, tmp_path):
    assert fake._tag("train", "sgnet", 2, "half") == "train-half-sgnet-seed2"
    assert fake._tag("generate", "sgnet", 2, "") == "generate-sgnet-seed2"
    folder = tmp_path / "checkpoints" / "half" / "sgnet" / "seed1"
    folder.mkdir(parents=True)
    for name in ("checkpoint_2_200.pt", "checkpoint_last.pt"):
        (folder / name).write_text(name)
    fake.mark("train-half-sgnet-seed1", seconds=1.0, updates=400)
    assert fake.checkpoint("sgnet", 1, "half", updates=200) == str(folder / "checkpoint_2_200.pt")
    assert fake.checkpoint("sgnet", 1, "half") == str(folder / "checkpoint_last.pt")
    assert fake.checkpoint("sgnet", 1) == ckpt(tmp_path, "sgnet", "seed1", "checkpoint_last.pt")  # not trained
    with pytest.raises(FileNotFoundError, match="no checkpoint saved at update 300"):
        fake.checkpoint("sgnet", 1, "half", updates=300)
    (folder / "checkpoint_1_100.pt").write_text("")
    fake.keep_checkpoints("sgnet", 1, "half", keep=[200])
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint_2_200.pt", "checkpoint_last.pt"]


# -- translating ------------------------------------------------------------------------------------------------
def test_a_translation_runs_fairseq_generate_on_the_checkpoint_and_scores_it(fake, tmp_path):
    fake.mark("train-sgnet-seed1", seconds=1.0, updates=400)
    assert fake.generate("sgnet", 1) == {"sacrebleu": 12.5}
    (call,) = fake.run.calls
    gen = str(tmp_path / "gen" / "sgnet.seed1.gen")
    assert call["cmd"] == generate_command(tmp_path, "sgnet", ckpt(tmp_path, "sgnet", "seed1", "checkpoint_last.pt"))
    assert call["log"] == gen and call["quiet"] is False and call["env"] == fake.env()
    assert fake.scored == [(gen, str(tmp_path / "corpus" / "test.de"), str(tmp_path / "corpus" / "test.tok.de"),
                            str(tmp_path / "eval" / "sgnet.seed1"))]
    assert (tmp_path / "gen").is_dir() and (tmp_path / "eval").is_dir()
    assert fake.info("generate-sgnet-seed1") == {"seconds": 10.0, "cpu_seconds": 3.0, "updates": 400}


def test_a_translation_of_a_data_fraction_at_the_cut(fake, tmp_path):
    folder = tmp_path / "checkpoints" / "half" / "sgnet" / "seed1"
    folder.mkdir(parents=True)
    (folder / "checkpoint_2_200.pt").write_text("")
    fake.mark("train-half-sgnet-seed1", seconds=1.0, updates=400)
    fake.generate("sgnet", 1, data="/elsewhere/bin", group="half", quiet=True, updates=200)
    (call,) = fake.run.calls
    gen = str(tmp_path / "gen" / "half" / "sgnet.seed1.gen")
    assert call["cmd"] == generate_command(tmp_path, "sgnet", str(folder / "checkpoint_2_200.pt"), "/elsewhere/bin")
    assert call["log"] == gen and call["quiet"] is True
    assert fake.scored == [(gen, str(tmp_path / "corpus" / "test.de"), str(tmp_path / "corpus" / "test.tok.de"),
                            str(tmp_path / "eval" / "half" / "sgnet.seed1"))]
    assert fake.info("generate-half-sgnet-seed1") == {"seconds": 10.0, "cpu_seconds": 3.0, "updates": 200}
    assert not fake.done("generate-sgnet-seed1")


def test_a_translation_marked_before_updates_were_recorded_is_of_the_full_training(fake):
    fake.mark("train-sgnet-seed1", seconds=1.0, updates=400)
    fake.mark("generate-sgnet-seed1", seconds=5.0)
    fake.generate("sgnet", 1)
    assert fake.run.calls == [] and len(fake.scored) == 1


# -- a job: train, then translate -------------------------------------------------------------------------------
def test_a_job_trains_translates_and_records_both(fake, tmp_path):
    r = fake.job("sgnet", 2)
    train, generate = fake.run.calls
    assert train["cmd"] == train_command(tmp_path, "sgnet", 2)
    assert generate["cmd"] == generate_command(tmp_path, "sgnet", ckpt(tmp_path, "sgnet", "seed2",
                                                                       "checkpoint_last.pt"))
    assert (train["quiet"], generate["quiet"], train["on_line"]) == (False, False, None)
    assert r == {"sacrebleu": 12.5, "system": "sgnet", "seed": 2, "train_seconds": 100.0, "train_cpu_seconds": 7.0,
                 "generate_seconds": 10.0, "generate_cpu_seconds": 3.0, "updates": 400, "scored_at": 400}


def test_a_job_of_a_fraction_at_given_updates(fake, tmp_path):
    def on_line(line):
        pass

    r = fake.job("lisa", 1, data="/elsewhere/bin", group="half", quiet=True, on_line=on_line, updates=300)
    train, generate = fake.run.calls
    assert train["cmd"] == train_command(tmp_path, "lisa", 1, "/elsewhere/bin", ("half",), 300)
    assert generate["cmd"] == generate_command(tmp_path, "lisa", ckpt(tmp_path, "half", "lisa", "seed1",
                                                                      "checkpoint_last.pt"), "/elsewhere/bin")
    assert (train["quiet"], generate["quiet"], train["on_line"]) == (True, True, on_line)
    assert generate["log"] == str(tmp_path / "gen" / "half" / "lisa.seed1.gen")
    assert fake.info("generate-half-lisa-seed1")["updates"] == 300
    assert r == {"sacrebleu": 12.5, "system": "lisa", "seed": 1, "train_seconds": 100.0, "train_cpu_seconds": 7.0,
                 "generate_seconds": 10.0, "generate_cpu_seconds": 3.0, "updates": 300, "scored_at": 300}


def test_a_job_resumed_from_markers_that_recorded_no_times_or_updates(fake):
    fake.mark("train-sgnet-seed1", seconds=80.0)
    fake.mark("generate-sgnet-seed1", updates=400)
    r = fake.job("sgnet", 1)
    assert fake.run.calls == []
    assert r == {"sacrebleu": 12.5, "system": "sgnet", "seed": 1, "train_seconds": 80.0, "train_cpu_seconds": None,
                 "generate_seconds": 0.0, "generate_cpu_seconds": None, "updates": 400, "scored_at": 400}


# -- the scheduler ----------------------------------------------------------------------------------------------
@pytest.fixture
def printed(monkeypatch):
    """What the scheduler prints, with the keywords of every print (the lines are flushed at once)."""
    lines = []
    monkeypatch.setattr(jobs, "print", lambda *a, **k: lines.append((" ".join(map(str, a)), k)), raising=False)
    return lines


def result(name, seed, train=130.0, generate=20.0, **extra):
    return {"system": name, "seed": seed, "train_seconds": train, "generate_seconds": generate, "sacrebleu": 20.0,
            **extra}


def test_one_job_at_a_time_in_the_wanted_order_with_a_line_per_finished_job(tmp_path, monkeypatch, printed):
    """``--jobs 1``: fairseq's lines are shown (not quiet), no status lines however long a job takes, a line per
    finished job with the expected end, then the notes of a new plan; the default data and no fraction."""
    monkeypatch.setattr(jobs, "STATUS_SECONDS", 0.01)
    d = runner(tmp_path)
    d.clock = clock = FakeClock(100.0)
    d.start = 0.0
    calls = []

    def job(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        calls.append((name, seed, data, group, quiet, updates))
        real_time.sleep(0.05)  # several STATUS_SECONDS
        clock.t += 150.0
        return result(name, seed, train_cpu_seconds=125.0 if name == "transformer" else None)

    d.job = job
    wants = []

    def want(runs, running):
        wants.append((sorted(runs), running))
        if len(runs) == 1:
            d.notes.append("a new plan")
        return [("transformer", 1), ("sgnet", 1)]

    runs = d.train_and_generate([("transformer", 1), ("sgnet", 1)])
    assert calls == [("transformer", 1, None, "", False, 400), ("sgnet", 1, None, "", False, 400)]
    assert set(runs) == {("transformer", 1), ("sgnet", 1)} and d.resumed == 0.0
    # after transformer (t = 250): 150 s a job, sgnet (not measured) as long: ends at 400 s
    assert printed == [
        ("  transformer      seed 1: trained in   130 s (125 s CPU), sacreBLEU  20.00   "
         "[1/2 done, 4.2 min, trainings end at ~6.7 min]", {"flush": True}),
        ("  sgnet            seed 1: trained in   130 s (0 s CPU), sacreBLEU  20.00   "
         "[2/2 done, 6.7 min, trainings end at ~6.7 min]", {"flush": True})]

    printed.clear()
    calls.clear()
    d.schedule(want)
    assert [w[1] for w in wants] == [{}, {}, {}] and [w[0] for w in wants][1] == [("transformer", 1)]
    assert [c[2:4] for c in calls] == [(None, ""), (None, "")]
    assert printed[1] == ("a new plan", {"flush": True}) and len(printed) == 3 and d.notes == []


def test_jobs_side_by_side_up_to_jobs_and_replanned_when_one_ends(tmp_path, monkeypatch, printed):
    """``--jobs 2``: two jobs start at once (quiet: their lines go to the logs), the third when one of them ends;
    the plan is asked again as soon as one ends, with the seconds the other has run, before that one ends; every
    job trains to the updates of the plan in force when it starts, and the running ones' updates are all that
    ``targets`` holds."""
    monkeypatch.setattr(jobs, "STATUS_SECONDS", 5.0)
    d = runner(tmp_path, workers=2)
    d.plan = b.Plan(("transformer", "sgnet"), 2, 0.0, 0.0, True, "", updates=200)
    d.clock = clock = FakeClock(100.0)
    d.start = 0.0
    released, sgnet_started, ended, log = threading.Event(), threading.Event(), set(), []
    wanted = [("transformer", 1), ("sgnet", 1), ("transformer", 2)]

    def job(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        log.append(((name, seed), data, group, quiet, updates, callable(on_line), len(ended)))
        if (name, seed) == ("transformer", 1):
            sgnet_started.wait(2)  # both started at t = 100
            clock.t = 130.0
        elif (name, seed) == ("sgnet", 1):
            sgnet_started.set()
            log.append(("sgnet released", released.wait(2)))
        ended.add((name, seed))
        return result(name, seed, train=20.0, generate=10.0)

    d.job = job
    asked = []

    def want(runs, running):
        asked.append((sorted(runs), dict(running), dict(d.targets)))
        if ("transformer", 1) in runs and ("sgnet", 1) not in runs:
            released.set()
        return wanted

    d.schedule(want, data="/elsewhere/bin", group="half")
    assert asked[0] == ([], {}, {})
    assert asked[1] == ([("transformer", 1)], {("sgnet", 1): 30.0}, {("sgnet", 1): 200})
    assert ("sgnet released", True) in log
    starts = {entry[0]: entry for entry in log if len(entry) == 7}
    assert set(starts) == set(wanted)
    assert all(s[1:6] == ("/elsewhere/bin", "half", True, 200, True) for s in starts.values())
    assert starts[("transformer", 2)][6] >= 1  # started after one of the first two ended
    assert d.targets == {}


def test_resumed_jobs_count_towards_the_budget_with_their_recorded_seconds(tmp_path, printed):
    """Two jobs that end at once (resumed from an earlier run) on 2 workers: their recorded 120 s each count as
    120 s of the demo (two workers), the seconds they took now deducted."""
    d = runner(tmp_path, workers=2)
    d.clock = FakeClock(500.0)
    d.start = 50.0

    given = []

    def job(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        given.append((data, group))
        return result(name, seed, train=100.0, generate=20.0)

    d.job = job
    d.train_and_generate([("transformer", 1), ("sgnet", 1)], data="/elsewhere/bin", group="half")
    assert d.resumed == 120.0 and d.elapsed() == 500.0 - 50.0 + 120.0
    assert given == [("/elsewhere/bin", "half")] * 2


def test_status_lines_show_the_running_trainings_and_the_expected_end(tmp_path, monkeypatch, printed):
    """While trainings run side by side: each one's updates of the updates it trains to, the minutes so far, and
    the expected end with the running jobs' seconds so far; so does the line of a finished job."""
    monkeypatch.setattr(jobs, "STATUS_SECONDS", 0.02)
    d = runner(tmp_path, workers=2)
    d.clock = clock = FakeClock(100.0)
    d.start = 0.0
    release, sgnet_started = threading.Event(), threading.Event()
    wanted = [("transformer", 1), ("sgnet", 1), ("transformer", 2), ("sgnet", 2)]

    def job(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        if (name, seed) == ("transformer", 1):
            sgnet_started.wait(2)  # both started at t = 100
            clock.t = 130.0
            return result(name, seed, train=20.0, generate=10.0)
        if (name, seed) == ("sgnet", 1):
            on_line("| train_inner | epoch 001: 25 / 120 loss=9.1, num_updates=125, lr=0.1")
            sgnet_started.set()
        release.wait(5)
        return result(name, seed, train=20.0, generate=10.0)

    d.job = job
    monkeypatch.setattr(jobs, "print", lambda text, **k: (printed.append((text, k)), "  ... " in text and
                                                          "transformer seed 2" in text and release.set()),
                        raising=False)
    d.schedule(lambda runs, running: wanted)
    # transformer measured 30 s a job (sgnet as long); at t = 130 s sgnet seed 1 has run 30 s (none left) and
    # transformer seed 2 0 s: sgnet seed 2 follows on the free worker -> 160 s (without the running: 190 s)
    assert ("  transformer      seed 1: trained in    20 s (0 s CPU), sacreBLEU  20.00   "
            "[1/4 done, 2.2 min, trainings end at ~2.7 min]", {"flush": True}) in printed
    status = next(line for line, _ in printed if line.startswith("  ... ") and "transformer seed 2" in line)
    assert status == ("  ... 2.2 min: training sgnet seed 1 125/400, transformer seed 2 0/400   "
                      "[1/4 done, 2.2 min, trainings end at ~2.7 min]")
    assert all(k == {"flush": True} for _, k in printed)


def test_status_line_shows_the_updates_of_the_plan_in_force(tmp_path, monkeypatch, printed):
    monkeypatch.setattr(jobs, "STATUS_SECONDS", 0.02)
    d = runner(tmp_path, workers=2)
    d.plan = b.Plan(("transformer", "sgnet"), 1, 0.0, 0.0, True, "", updates=200)
    d.clock = FakeClock(600.0)
    d.start = 0.0
    release = threading.Event()

    def job(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        release.wait(5)
        return result(name, seed)

    d.job = job
    monkeypatch.setattr(jobs, "print", lambda text, **k: (printed.append((text, k)),
                                                          "  ... " in text and release.set()), raising=False)
    d.train_and_generate([("transformer", 1), ("sgnet", 1)])
    assert printed[0] == ("  ... 10.0 min: training transformer seed 1 0/200, sgnet seed 1 0/200   "
                          "[0/2 done, 10.0 min, measuring this machine]", {"flush": True})


# -- the expected end -------------------------------------------------------------------------------------------
def test_the_expected_end_of_the_wanted_jobs(tmp_path):
    d = runner(tmp_path, workers=2)
    d.clock = FakeClock(600.0)
    d.start = 0.0
    A, B, C, D = ("transformer", 1), ("transformer", 2), ("sgnet", 1), ("sgnet", 2)
    assert d.eta([A, B, C, D], {}, {}) == "0/4 done, 10.0 min, measuring this machine"
    # transformer ran 400 updates in 200 s and translated in 20 s; the plan cuts to 200 updates: 120 s a job (sgnet,
    # not measured, as long); B has run 30 s: 90 s left on one worker, C beside it, D after B: 600 + 210 s
    runs = {A: {"train_seconds": 200.0, "generate_seconds": 20.0, "updates": 400}}
    d.plan = b.Plan(("transformer", "sgnet"), 2, 1000.0, 1090.0, True, "", updates=200)
    text = "1/4 done, 10.0 min, trainings end at ~13.5 min"
    assert d.eta([A, B, C, D], runs, {B: 30.0}) == text + ", the demo at ~15.0 of 20 min"
    d.args.seeds = [1, 2]  # seeds given: no plan's end to show
    assert d.eta([A, B, C, D], runs, {B: 30.0}) == text
