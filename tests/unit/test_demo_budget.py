"""The demo's time budget: the rule that chooses seeds and systems, on simulated timings (no training)."""

import itertools
import os
import random

import pytest

from syntax_nmt.demo import budget as b
from syntax_nmt.demo import cli, jobs, pipeline

SYSTEMS = ["transformer", "syntax-infused", "sgnet", "syntax+sgnet", "sla", "syntax_bert", "seprem", "lisa", "all"]


def test_default_systems_are_the_ones_planned_here():
    """The published default comparison, in order; a method added since joins it before ``all`` (the plans below
    take SYSTEMS as their input, so they hold with it too)."""
    from syntax_nmt.models.modules.methods.base import BUILTIN, registered_methods
    from syntax_nmt.systems import default_systems

    later = [n for n in registered_methods() if n not in BUILTIN]
    assert default_systems() == [*SYSTEMS[:-1], *later, "all"]


def naive_makespan(durations, workers, busy=()):
    """A clock that ticks one second at a time: each free worker takes the next job."""
    left = list(busy) + [0] * (workers - len(busy))
    queue, t = list(durations), 0
    while True:
        for i in range(workers):
            if left[i] <= 0 and queue:
                left[i] = queue.pop(0)
        if not queue and all(x <= 0 for x in left):
            return t
        t += 1
        left = [x - 1 for x in left]


@pytest.mark.parametrize("durations, workers, busy, expected", [
    ([], 2, (), 0), ([100, 100, 100], 2, (), 200), ([100] * 18, 2, (), 900), ([100] * 9, 2, (), 500),
    ([300, 100, 100], 2, (), 300), ([100], 2, (30, 80), 130), ([100, 100], 1, (50,), 250), ([10], 3, (), 10)])
def test_makespan(durations, workers, busy, expected):
    assert b.makespan(durations, workers, busy) == expected == naive_makespan(durations, workers, busy)


def test_makespan_against_a_ticking_clock():
    rng = random.Random(0)
    for _ in range(200):
        workers = rng.randint(1, 4)
        durations = [rng.randint(1, 30) for _ in range(rng.randint(0, 12))]
        busy = [rng.randint(0, 20) for _ in range(rng.randint(0, workers))]
        assert b.makespan(durations, workers, busy) == naive_makespan(durations, workers, busy)


def calibrated(factor, systems=SYSTEMS, adapt=True, workers=2):
    """The plan after the first wave (seed 1 of transformer and syntax-infused) on a machine ``factor`` times as slow
    as the reference: preprocessing 120 s, every job 100 s, reserve 90 s (both scaled, the reserve never below 90)."""
    job = 100.0 * factor
    first = [(n, 1) for n in systems[:workers]]
    return b.plan_budget({n: job for n, _ in first}, systems, workers, now=120 * factor + job, budget=1200,
                         reserve=b.reserve_seconds(factor), done=first, adapt_systems=adapt)


@pytest.mark.parametrize("factor, systems, seeds", [
    # now = 220 f after the first wave; (n, k) needs ceil((n k - 2) / 2) more waves of 100 f; reserve 90 max(1, f)
    (0.5, 9, 4),   # 110 + 17 x 50 + 90 = 1050; 5 seeds: 110 + 22 x 50 + 90 = 1300
    (1.0, 9, 2),   # 220 + 8 x 100 + 90 = 1110; 3 seeds: 220 + 13 x 100 + 90 = 1610
    # one seed of all 9 before fewer systems: 330 + 4 x 150 + 135 = 1065 at 1.5 (2 seeds of 5 systems fitted too)
    (1.5, 9, 1),
    (2.0, 3, 2),   # 9 x 1: 440 + 4 x 200 + 180 = 1420; 3 x 2: 440 + 2 x 200 + 180 = 1020; 4 x 2: 1220
    (2.5, 2, 2),   # 550 + 1 x 250 + 225 = 1025; 3 systems: 550 + 2 x 250 + 225 = 1275
    (3.0, 2, 1),   # 660 + 0 + 270 = 930; 2 seeds of 2 systems: 660 + 300 + 270 = 1230
])
def test_slower_machines_get_one_seed_then_fewer_systems(factor, systems, seeds):
    plan = calibrated(factor)
    assert (plan.systems, plan.seeds) == (tuple(SYSTEMS[:systems]), seeds)
    assert plan.fits and plan.finish <= 1200
    assert ("ONE SEED" in plan.why) == (seeds == 1)
    assert (f"dropping {', '.join(SYSTEMS[systems:])}" in plan.why) == (systems < 9)


def cut(factor, systems=SYSTEMS, workers=2, generate=0.1):
    """As :func:`calibrated`, with ``--max-update 400`` (a plan may cut to 300 or 200 updates) and a tenth of every
    job translating."""
    job = 100.0 * factor
    first = [(n, 1) for n in systems[:workers]]
    return b.plan_budget({n: job for n, _ in first}, systems, workers, now=120 * factor + job, budget=1200,
                         reserve=b.reserve_seconds(factor), done=first, max_update=400,
                         generate_seconds={n: generate * job for n, _ in first})


@pytest.mark.parametrize("factor, systems, seeds, updates", [
    (0.5, 9, 4, None), (1.0, 9, 2, None), (1.5, 9, 1, None),
    # 9 x 1 x 400: 1420 (above); x 300: 440 + [20, 20 + 4 x 155] + 180 = 1340; x 200: 440 + 20 + 4 x 110 + 180 = 1080
    (2.0, 9, 1, 200),
    # 9 x 1 x 200: 550 + 25 + 4 x 137.5 + 225 = 1350: fewer systems, with the full updates
    (2.5, 2, 2, None), (3.0, 2, 1, None),
])
def test_every_system_with_fewer_updates_before_fewer_systems(factor, systems, seeds, updates):
    plan = cut(factor)
    assert (plan.systems, plan.seeds, plan.updates) == (tuple(SYSTEMS[:systems]), seeds, updates)
    assert plan.fits and plan.finish <= 1200
    assert ("FEWER UPDATES" in plan.why) == (updates is not None)


def test_fewer_updates_are_said_plainly():
    plan = cut(2.0)
    assert plan.finish == pytest.approx(1080)
    assert "FEWER UPDATES: 200 of the 400 updates (one seed of every system with 400 updates would end at 23.7 " \
           "min), so the scores are those of less-trained models" in plan.why
    assert "transformer seed 1, syntax-infused seed 1, trained further before the cut, are scored with their model " \
           "at update 200" in plan.why
    text = b.describe(plan, {"transformer": 200.0, "syntax-infused": 200.0}, 20)
    assert "Chosen: 9 systems x 1 seed x 200 updates (transformer, " in text
    assert "one seed of all 9 at 200 updates at" in cut(2.5).why  # why fewer systems: even the cut does not fit
    assert "fewer updates (300 or 200 of 400)" in b.policy(SYSTEMS, 2, 20, True, max_update=400)
    assert "fewer updates" not in b.policy(SYSTEMS, 2, 20, True, max_update=5)


@pytest.mark.parametrize("max_update, marks, interval", [(400, (300, 200), 100), (6, (3,), 3), (5, (), 0),
                                                         (1, (), 0), (8, (6, 4), 2)])
def test_update_marks_are_whole_fractions_of_the_updates(max_update, marks, interval):
    assert b.update_marks(max_update) == marks and b.save_interval(marks) == interval


def test_jobs_trained_to_other_updates_cost_what_is_left():
    """A finished job trained past the plan's updates costs its translation only; one trained short of them trains
    on from where it stopped; a running one holds its worker and is translated again."""
    seconds, gen = {"transformer": 100.0, "sgnet": 100.0}, {"transformer": 10.0, "sgnet": 10.0}
    plan = b.plan_budget(seconds, ["transformer", "sgnet"], 1, now=0, budget=10_000, max_update=400,
                         generate_seconds=gen, done=[("transformer", 1), ("sgnet", 1)], min_seeds=1, max_seeds=1,
                         trained={("transformer", 1): 200, ("sgnet", 1): 400})
    assert plan.updates is None and plan.end == 10 + 90 * 200 / 400  # transformer trains on from 200 to 400
    plan = b.plan_budget(seconds, ["transformer", "sgnet"], 1, now=0, budget=60 + 20, max_update=400,
                         generate_seconds=gen, running={("transformer", 1): 40.0}, min_seeds=1, max_seeds=1,
                         trained={("transformer", 1): 400})
    # 400: 60 left + 100 (sgnet) > 80; 300: 60 + 10 (translated again) + 10 + 67.5; 200: 60 + 10 + 10 + 45 > 80 too
    assert plan.fits is False and plan.updates is None



def test_a_cut_costs_the_retranslation_of_a_running_job_trained_further():
    """A job still training to 400 updates when the plan cuts to 300 holds its worker, then is translated again
    with its model at 300: that translation is in the plan's end (and decides which cut fits)."""
    seconds, gen = {"transformer": 100.0, "sgnet": 100.0}, {"transformer": 10.0, "sgnet": 10.0}

    def plan(budget):
        return b.plan_budget(seconds, ["transformer", "sgnet"], 1, now=0, budget=budget, max_update=400,
                             generate_seconds=gen, running={("transformer", 1): 40.0}, min_seeds=1, max_seeds=1,
                             trained={("transformer", 1): 400})

    # 400: 60 left + 100 (sgnet) = 160; 300: 60 + 10 (transformer translated again) + 10 + 67.5 = 147.5; 200: 125
    p = plan(150)
    assert (p.updates, p.end, p.fits) == (300, 147.5, True)
    p = plan(140)
    assert (p.updates, p.end, p.fits) == (200, 125.0, True)
    p = plan(160)
    assert (p.updates, p.end, p.fits) == (None, 160.0, True)  # no cut: nothing translated again

def test_the_cut_never_plans_past_the_budget_and_is_the_last_resort_before_fewer_systems():
    """On random timings: fewer updates only when one seed of every system does not fit with the full updates, the
    most updates that fit; fewer systems only when not even the fewest updates fit."""
    rng = random.Random(2)
    cuts = 0
    for _ in range(300):
        workers = rng.randint(1, 3)
        seconds = {n: rng.uniform(20, 400) for n in SYSTEMS[:rng.randint(1, 4)]}
        gen = {n: rng.uniform(0, 0.3) * v for n, v in seconds.items()}
        done = [j for j in b.job_order(SYSTEMS, 1)[:workers] if j[0] in seconds]
        now, budget, reserve = rng.uniform(0, 900), rng.uniform(600, 2400), rng.uniform(0, 300)
        plan = b.plan_budget(seconds, SYSTEMS, workers, now, budget, reserve, done=done, max_update=400,
                             generate_seconds=gen)

        def finish(n, k, u):
            """Straight from the rule: a finished job is translated again at a cut; the others train u updates."""
            todo = []
            for job in b.job_order(SYSTEMS[:n], k):
                total, g = seconds.get(job[0], max(seconds.values())), gen.get(job[0], max(gen.values()))
                if job not in done:
                    todo.append(g + (total - g) * u / 400)
                elif u != 400:
                    todo.append(g)
            return now + b.makespan(todo, workers) + reserve

        n, k, u = len(plan.systems), plan.seeds, plan.updates or 400
        assert plan.finish == pytest.approx(finish(n, k, u)) and plan.fits == (plan.finish <= budget)
        if u < 400:
            cuts += 1
            assert (n, k) == (9, 1) and plan.fits
            assert finish(9, 1, 400) > budget and (u == 300 or finish(9, 1, 300) > budget)
        elif n < 9 and plan.fits:
            assert finish(9, 1, 400) > budget and finish(9, 1, 300) > budget and finish(9, 1, 200) > budget
    assert cuts > 10


@pytest.mark.parametrize("over, kept", [(30, True), (44, True), (46, False), (120, False)])
def test_the_plan_in_force_is_kept_when_the_rules_next_choice_throws_trained_models_away(over, kept):
    """A real run's end (2026-11-26): all 9 systems trained at the cut (200 updates), the first two at 400 and
    left to translate again (60 s each here): that overran the budget by seconds, and the rule's next choice, the two
    systems with nothing left to do, dropped 7 trained models. The plan in force is kept while it overruns by less
    than half the reserve (45 s of 90)."""
    seconds, gen = {n: 100.0 for n in SYSTEMS}, {n: 60.0 for n in SYSTEMS}
    done = [(n, 1) for n in SYSTEMS]
    trained = {job: 400 if job[0] in SYSTEMS[:2] else 200 for job in done}
    current = b.Plan(tuple(SYSTEMS), 1, 0.0, 0.0, True, "", updates=200)
    now = 1200 - 90 - 60 + over  # the plan in force ends `over` seconds past the budget
    kw = dict(done=done, max_update=400, generate_seconds=gen, trained=trained)
    plan = b.plan_budget(seconds, SYSTEMS, 2, now, 1200, 90, current=current, **kw)
    if kept:
        assert (len(plan.systems), plan.seeds, plan.updates) == (9, 1, 200) and not plan.fits
        assert plan.finish == pytest.approx(1200 + over)
        assert "KEPT: the plan in force ends at" in plan.why and "OVER THE BUDGET" not in plan.why
    else:  # the two systems with nothing left to do
        assert (plan.systems, plan.updates) == (tuple(SYSTEMS[:2]), None) and "KEPT" not in plan.why
    # without a plan in force (the first plan), the rule alone decides: fewer systems
    assert len(b.plan_budget(seconds, SYSTEMS, 2, now, 1200, 90, **kw).systems) < 9


def test_one_seed_is_said_plainly():
    plan = calibrated(3.0)
    assert "2 seeds of the first 2 systems would end at 20.5 min" in plan.why
    assert "cannot show whether a difference is larger than the variation between training seeds" in plan.why
    text = b.describe(plan, {"transformer": 300.0, "syntax-infused": 300.0}, 20)
    assert "this one takes 3.0x as long" in text and "Chosen: 2 systems x 1 seed (transformer, syntax-infused)" in text


def test_the_users_systems_are_kept_and_seeds_go_down_to_one():
    plan = calibrated(1.5, adapt=False)  # 2 seeds: 330 + 8 x 150 + 135 > 1200; 1 seed: 330 + 4 x 150 + 135 = 1065
    assert (plan.systems, plan.seeds, plan.fits) == (tuple(SYSTEMS), 1, True)
    plan = calibrated(2.0, adapt=False)  # 1 seed: 440 + 4 x 200 + 180 = 1420: nothing fits
    assert (plan.systems, plan.seeds, plan.fits) == (tuple(SYSTEMS), 1, False)
    assert plan.finish == 1420 and "OVER THE BUDGET" in plan.why


def test_over_the_budget_before_planning_keeps_the_smallest_plan():
    plan = b.plan_budget({"transformer": 900.0, "syntax-infused": 900.0}, SYSTEMS, 2, now=1500, budget=1200,
                         reserve=90, done=[("transformer", 1), ("syntax-infused", 1)])
    assert (plan.systems, plan.seeds, plan.fits, plan.finish) == (("transformer", "syntax-infused"), 1, False, 1590)


def test_running_jobs_hold_their_worker_and_unmeasured_systems_count_as_the_slowest():
    # transformer measured (100 s), syntax-infused running for 30 s (estimated 100 s like the slowest measured)
    plan = b.plan_budget({"transformer": 100.0}, SYSTEMS[:3], 2, now=200, budget=200 + 100 + 170 + 10,
                         reserve=10, done=[("transformer", 1)], running={("syntax-infused", 1): 30.0})
    # 3 systems x 2 seeds: 4 jobs left beside the running one (70 s left): [0, 70] -> 100, 170, 200, 270 -> 270
    assert (plan.seeds, len(plan.systems), plan.end) == (2, 3, 470)
    fast = b.plan_budget({"transformer": 100.0, "sgnet": 40.0}, SYSTEMS[:3], 1, now=0, budget=10_000,
                         done=[("transformer", 1), ("sgnet", 1)])
    # syntax-infused is not measured: 100 s (the slowest measured), not 40 or the mean 70
    assert fast.end == 100 + 4 * (100 + 100 + 40)


def test_the_rule_never_plans_past_the_budget_and_takes_the_most_that_fits():
    """On random timings: a plan said to fit ends within the budget; every system with as many seeds as fit (one
    only when 2 do not); fewer systems only when one seed of every system does not fit, then as many as fit with
    2 seeds, then with one."""
    rng = random.Random(1)
    for _ in range(300):
        workers = rng.randint(1, 3)
        seconds = {n: rng.uniform(20, 400) for n in SYSTEMS[:rng.randint(1, 4)]}
        done = [j for j in b.job_order(SYSTEMS, 1)[:workers] if j[0] in seconds]
        now, budget, reserve = rng.uniform(0, 900), rng.uniform(600, 2400), rng.uniform(0, 300)
        plan = b.plan_budget(seconds, SYSTEMS, workers, now, budget, reserve, done=done)

        def finish(n, k):
            todo = [j for j in b.job_order(SYSTEMS[:n], k) if j not in done]
            return b.jobs_end(seconds, todo, workers, now) + reserve

        n, k = len(plan.systems), plan.seeds
        assert plan.finish == pytest.approx(finish(n, k))
        assert plan.fits == (plan.finish <= budget)
        limit = budget
        if not plan.fits:  # the smallest plan and whatever costs nothing more (the first wave is done or running)
            assert all(finish(m, q) > budget for m, q in itertools.product(range(2, 10), (1, 2)))
            limit = finish(2, 1)
            assert finish(n, k) == limit
        if n == 9:  # every system: as many seeds as fit, one only when 2 do not
            assert k == 5 or finish(9, k + 1) > limit
        elif k >= 2:  # fewer systems only when one seed of all does not fit; as many as fit with 2 seeds
            assert finish(9, 1) > limit and finish(n + 1, 2) > limit and finish(n, k + 1) > limit
        else:  # one seed of fewer systems only when 2 seeds of 2 systems do not fit either
            assert finish(9, 1) > limit and finish(2, 2) > limit and finish(n + 1, 1) > limit


class FakeClock:
    def __init__(self, t=0.0):
        self.t = t

    def __call__(self):
        return self.t


def test_demo_schedule_replans_when_a_slower_system_is_measured(tmp_path, capsys):
    """The whole loop on a simulated clock, one job at a time: each fake job advances the clock by its system's
    seconds. The first job measures 150 s; sgnet, the second, takes 300 s, so the demo re-plans before starting
    jobs it can no longer afford, and ends within the budget."""
    systems = ["transformer", "sgnet", "syntax-infused", "lisa"]
    # --max-update 5: no fraction of it that a plan may cut to is a whole number (the cut: the test after this one)
    args = cli.get_parser().parse_args(["--out", str(tmp_path), "--max-update", "5"])
    args.systems, args.jobs, args.threads = systems, 1, 2
    d = pipeline.Demo(args)
    d.clock = clock = FakeClock(100.0)  # 100 s of preprocessing
    d.start = 0.0
    seconds = {"transformer": 150.0, "sgnet": 300.0, "syntax-infused": 150.0, "lisa": 150.0}
    ran = []

    def fake(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        ran.append((name, seed))
        clock.t += seconds[name]
        return {"system": name, "seed": seed, "train_seconds": seconds[name] - 20, "generate_seconds": 20.0,
                "sacrebleu": 1.0}

    d.job = fake
    d.schedule(d.budget_plan)
    out = capsys.readouterr().out
    # after transformer (t = 250; training 130 s: reserve 90 x 1.3 = 117): 2 seeds of 4 systems: 250 + 7 x 150 + 117
    # = 1417 > 1200; one seed of all 4: 250 + 3 x 150 + 117 = 817 (fewer systems come after one seed of all)
    assert "=== plan: budget 20 min: measured trainings transformer 130 s" in out
    assert "Chosen: 4 systems x 1 seed (transformer, sgnet, syntax-infused, lisa): every system with 1 seed" in out
    assert "ONE SEED: 2 seeds of all 4 systems would end at 23.6 min" in out
    assert "1/4 done, 4.2 min, trainings end at ~11.7 min, the demo at ~13.6 of 20 min" in out
    # after sgnet (t = 550; reserve 90 x 2.05 = 184.5; unmeasured syntax-infused counts as 300 s): one seed of all:
    # 550 + 300 + 300 + 184.5 > 1200; 2 seeds of 3 systems: 550 + 300 + 150 + 300 + 300 + 184.5 > 1200; of 2 systems:
    # 550 + 150 + 300 + 184.5 = 1184.5
    assert "=== re-planned: budget 20 min: measured trainings transformer 130 s, sgnet 280 s" in out
    assert "Chosen: 2 systems x 2 seeds (transformer, sgnet): the first 2 of the 4 systems with 2 seeds, " \
           "dropping syntax-infused, lisa" in out
    assert ran == [("transformer", 1), ("sgnet", 1), ("transformer", 2), ("sgnet", 2)]
    assert (d.plan.systems, d.plan.seeds, d.plan.fits) == (("transformer", "sgnet"), 2, True)
    assert clock.t == 1000 and d.plan.finish == pytest.approx(1184.5)


def test_demo_cuts_the_updates_and_scores_the_first_training_at_the_cut(tmp_path, capsys, monkeypatch):
    """The whole comparison on a simulated clock, one job at a time: 250 s a job at 400 updates (230 training, 20
    translating) is too slow for one seed of 4 systems (350 + 3 x 250 + 207 = 1307 s), so the demo cuts to 300
    updates (350 + 20 + 3 x 192.5 + 207 = 1154.5), trains the others to 300 and translates the first one, which
    trained to 400, again with its model at 300; the table says so."""
    args = cli.get_parser().parse_args(["--out", str(tmp_path)])
    args.systems, args.jobs, args.threads = ["transformer", "sgnet", "lisa", "sla"], 1, 2
    d = pipeline.Demo(args)
    d.clock = clock = FakeClock(100.0)
    d.start = 0.0
    trained, ran = {}, []

    def fake(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        assert d.may_cut  # the trainings save their models at the updates a plan may cut to
        before = trained.get((name, seed), 0)
        if before < updates:
            clock.t += 230.0 * (updates - before) / 400
            trained[(name, seed)] = updates
        clock.t += 20.0
        ran.append((name, seed, updates))
        return {"system": name, "seed": seed, "train_seconds": 230.0 * trained[(name, seed)] / 400,
                "generate_seconds": 20.0, "updates": trained[(name, seed)], "scored_at": updates,
                "sacrebleu": 20.0, "compound_split_bleu": 21.0, "sentences": 9, "signature": "sig"}

    d.job = fake
    monkeypatch.setattr(pipeline, "count_params", lambda path: 100)
    rows = d.compare()
    out = capsys.readouterr().out
    assert ran == [("transformer", 1, 400), ("sgnet", 1, 300), ("lisa", 1, 300), ("sla", 1, 300),
                   ("transformer", 1, 300)]
    assert "Chosen: 4 systems x 1 seed x 300 updates (transformer, sgnet, lisa, sla)" in out
    assert "FEWER UPDATES: 300 of the 400 updates (one seed of every system with 400 updates would end at 21.8 min)" \
        in out and "transformer seed 1, trained further before the cut, is scored with its model at update 300" in out
    assert "  transformer seed 1: trained to 400 updates, scored at 300" in out
    assert (d.plan.updates, args.updates, d.may_cut, clock.t) == (300, 300, False, 947.5)
    assert d.plan.finish == pytest.approx(1154.5)
    monkeypatch.setattr(d, "significance", lambda rows: None)
    monkeypatch.setattr(pipeline, "plot_bleu", lambda *a, **k: None)
    assert "identical budgets: 300 updates (CUT from --max-update 400 to fit the time budget) of 1536 tokens" in \
        d.report(rows)


def test_a_training_that_ran_further_is_scored_with_its_model_at_the_cut(tmp_path, monkeypatch):
    args = cli.get_parser().parse_args(["--out", str(tmp_path)])
    d = pipeline.Demo(args)
    folder = tmp_path / "checkpoints" / "sgnet" / "seed1"
    commands = []

    def run(cmd, log=None, quiet=False, env=None, on_line=None):
        commands.append([str(c) for c in cmd])
        updates = int(cmd[cmd.index("--max-update") + 1])
        folder.mkdir(parents=True, exist_ok=True)
        step = int(cmd[cmd.index("--save-interval-updates") + 1]) if "--save-interval-updates" in cmd else 0
        for u in range(step, updates + 1, step or updates + 1):
            (folder / f"checkpoint_{u // 150 + 1}_{u}.pt").write_text(str(u))  # as fairseq names them
        (folder / "checkpoint_last.pt").write_text(str(updates))
        return 1.0

    d.run = run
    assert d.checkpoint("sgnet", 1) == str(folder / "checkpoint_last.pt")  # not trained yet
    d.may_cut = True  # the comparison of --seeds auto: models saved at 300 and 200
    info = d.train("sgnet", 1)
    cmd = commands[-1]
    assert cmd[cmd.index("--max-update") + 1] == "400" and cmd[cmd.index("--save-interval-updates") + 1] == "100"
    assert info["updates"] == 400 and d.trained_updates("sgnet", 1) == 400
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint_2_200.pt", "checkpoint_3_300.pt",
                                                        "checkpoint_last.pt"]  # the one at 100 is deleted
    assert d.checkpoint("sgnet", 1) == str(folder / "checkpoint_last.pt")
    assert d.checkpoint("sgnet", 1, updates=300) == str(folder / "checkpoint_3_300.pt")
    with pytest.raises(FileNotFoundError, match="trained to 400 updates, no checkpoint saved at update 250"):
        d.checkpoint("sgnet", 1, updates=250)
    d.plan = b.Plan(("sgnet",), 1, 0.0, 0.0, True, "", updates=200)
    assert d.job_updates() == 200 and d.checkpoint("sgnet", 1) == str(folder / "checkpoint_2_200.pt")
    assert d.train("sgnet", 1) == info and len(commands) == 1  # trained further already: nothing to do
    d.keep_checkpoints("sgnet", 1, keep=[200])
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint_2_200.pt", "checkpoint_last.pt"]
    # a training to 300 under a plan: saved at 200 only; one that is not planned saves nothing on the way
    d.plan, d.may_cut = None, True
    d.train("lisa", 1, updates=300)
    assert commands[-1][commands[-1].index("--save-interval-updates") + 1] == "200"
    d.may_cut = False
    d.train("lisa", 2)
    assert "--save-interval-updates" not in commands[-1]
    # short of the updates asked: trains on (fairseq resumes from checkpoint_last), both runs' seconds counted
    info = d.train("lisa", 1, updates=400)
    assert commands[-1][commands[-1].index("--max-update") + 1] == "400" and len(commands) == 4
    assert info["updates"] == 400 and info["cpu_seconds"] == 2.0


def test_status_line_shows_each_running_training_and_its_updates(tmp_path, capsys, monkeypatch):
    import threading

    monkeypatch.setattr(jobs, "STATUS_SECONDS", 0.05)
    args = cli.get_parser().parse_args(["--out", str(tmp_path), "--seeds", "1"])
    args.systems, args.jobs, args.threads, args.seeds = ["transformer", "sgnet"], 2, 1, [1]
    d = pipeline.Demo(args)
    both = threading.Barrier(2)
    release = threading.Event()

    def fake(name, seed, data=None, group="", quiet=False, on_line=None, updates=None):
        assert quiet  # side by side: fairseq's lines go to the log only
        on_line(f"| train_inner | epoch 001: 25 / 120 loss=9.1, num_updates={125 if name == 'sgnet' else 150}, lr=0.1")
        both.wait()
        release.wait(5)
        return {"system": name, "seed": seed, "train_seconds": 1.0, "generate_seconds": 0.0, "sacrebleu": 1.0}

    d.job = fake
    timer = threading.Timer(0.5, release.set)
    timer.start()
    runs = d.train_and_generate([("transformer", 1), ("sgnet", 1)])
    timer.join()
    out = capsys.readouterr().out
    assert set(runs) == {("transformer", 1), ("sgnet", 1)}
    assert "min: training transformer seed 1 150/400, sgnet seed 1 125/400   [0/2 done" in out


def test_run_hands_every_logged_line_to_on_line(tmp_path):
    import sys

    args = cli.get_parser().parse_args(["--out", str(tmp_path)])
    lines = []
    pipeline.Demo(args).run([sys.executable, "-c", "print('a num_updates=3'); print('b')"], log=str(tmp_path / "log"),
                        quiet=True, on_line=lines.append)
    assert lines == ["a num_updates=3\n", "b\n"] and (tmp_path / "log").read_text() == "a num_updates=3\nb\n"



def test_a_translation_is_never_reused_for_another_checkpoint(tmp_path, monkeypatch):
    """The test set is translated again whenever the model to score is another checkpoint of the training (a cut
    to 300 or 200 updates of a training that ran to 400, or back to its last model), and only then."""
    from syntax_nmt.evaluation import evaluate

    args = cli.get_parser().parse_args(["--out", str(tmp_path)])
    d = pipeline.Demo(args)
    folder = tmp_path / "checkpoints" / "sgnet" / "seed1"
    folder.mkdir(parents=True)
    for name in ("checkpoint_2_200.pt", "checkpoint_3_300.pt", "checkpoint_last.pt"):
        (folder / name).write_text(name)
    d.mark("train-sgnet-seed1", seconds=100.0, cpu_seconds=100.0, updates=400)
    translated = []

    def run(cmd, log=None, quiet=False, env=None, on_line=None):
        cmd = [str(c) for c in cmd]
        translated.append(os.path.basename(cmd[cmd.index("--path") + 1]))
        return 1.0

    d.run = run
    monkeypatch.setattr(evaluate, "score", lambda gen, *a: {"gen": gen})
    for updates in (None, None, 300, 300, 200, 400, None):
        d.generate("sgnet", 1, updates=updates)
    assert translated == ["checkpoint_last.pt", "checkpoint_3_300.pt", "checkpoint_2_200.pt", "checkpoint_last.pt"]
    assert d.info("generate-sgnet-seed1")["updates"] == 400
