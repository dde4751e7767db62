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


def cut(factor, systems=SYSTEMS, workers=2, generate=0.1, max_update=400):
    """As :func:`calibrated`, with ``--max-update 400`` (a plan may cut to 300 or 200 updates) and a tenth of every
    job translating."""
    job = 100.0 * factor
    first = [(n, 1) for n in systems[:workers]]
    return b.plan_budget({n: job for n, _ in first}, systems, workers, now=120 * factor + job, budget=1200,
                         reserve=b.reserve_seconds(factor), done=first, max_update=max_update,
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


@pytest.mark.parametrize("over, kept", [(30, True), (44, True), (45, True), (46, False), (120, False)])
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
        assert plan.why.startswith(f"KEPT: the plan in force ends at {(1200 + over) / 60:.1f} min, less than half "
                                   "the reserve past the budget; ") and "OVER THE BUDGET" not in plan.why
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
    from syntax_nmt.evaluation import scoring

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
    monkeypatch.setattr(scoring, "score", lambda gen, *a: {"gen": gen})
    for updates in (None, None, 300, 300, 200, 400, None):
        d.generate("sgnet", 1, updates=updates)
    assert translated == ["checkpoint_last.pt", "checkpoint_3_300.pt", "checkpoint_2_200.pt", "checkpoint_last.pt"]
    assert d.info("generate-sgnet-seed1")["updates"] == 400


# --- issue 48: the rule's plans and their texts, exactly (each number derived by hand in the comments) ---

ONE_SEED_WHY = ("and with one seed the table cannot show whether a difference is larger than the variation between "
                "training seeds (the paired test, the test sentence its unit, only says that two models' translations "
                "differ)")


def kept_for(end, budget, trainings, reserve):
    return (f"expected end {end} min of the {budget} min budget (trainings until {trainings} min, {reserve} min kept "
            "for the report and the analyses)")


@pytest.mark.parametrize("plan, expected", [
    # step 1, 2 of 5 seeds: 220 + 8 x 100 = 1020 (+ 90 = 1110); 3 seeds: 220 + 13 x 100 + 90 = 1610 = 26.8 min
    (lambda: calibrated(1.0), ((SYSTEMS, 2, None, 1020, 1110, True),
                               "every system with 2 seeds; 3 seeds would end at 26.8 min; "
                               + kept_for("18.5", "20.0", "17.0", "1.5"))),
    # step 1 at max_seeds (nothing more to say): 55 + 22 x 25 = 605 (+ 90 = 695 = 11.6 min)
    (lambda: calibrated(0.25), ((SYSTEMS, 5, None, 605, 695, True),
                                "every system with 5 seeds; " + kept_for("11.6", "20.0", "10.1", "1.5"))),
    # step 2: 330 + 4 x 150 = 930 (+ 135 = 1065 = 17.75 min); 2 seeds: 330 + 8 x 150 + 135 = 1665 = 27.75 min
    (lambda: calibrated(1.5), ((SYSTEMS, 1, None, 930, 1065, True),
                               "every system with 1 seed; ONE SEED: 2 seeds of all 9 systems would end at 27.8 min, "
                               + ONE_SEED_WHY + "; " + kept_for("17.8", "20.0", "15.5", "2.2"))),
    # step 4 with 2 seeds: 550 + 250 = 800 (+ 225 = 1025); 2 seeds of all 9: 550 + 8 x 250 + 225 = 2775 = 46.25 min
    (lambda: calibrated(2.5), ((SYSTEMS[:2], 2, None, 800, 1025, True),
                               "the first 2 of the 9 systems with 2 seeds, dropping sgnet, syntax+sgnet, sla, "
                               "syntax_bert, seprem, lisa, all (2 seeds of all 9 would end at 46.2 min); "
                               + kept_for("17.1", "20.0", "13.3", "3.8"))),
    # the same with --max-update 400: one seed of all 9 at 200 updates: 550 + 575 + 225 = 1350 = 22.5 min
    (lambda: cut(2.5), ((SYSTEMS[:2], 2, None, 800, 1025, True),
                        "the first 2 of the 9 systems with 2 seeds, dropping sgnet, syntax+sgnet, sla, syntax_bert, "
                        "seprem, lisa, all (2 seeds of all 9 would end at 46.2 min, one seed of all 9 at 200 updates "
                        "at 22.5 min); " + kept_for("17.1", "20.0", "13.3", "3.8"))),
    # step 4 with one seed; --max-update 6 has one mark (3): 660 + 0 (+ 270 = 930); one seed of all 9 at 3 updates:
    # 660 + [30, 30] + 4 x 165 + 270 = 1620 = 27 min; 2 seeds of the first 2: 660 + 300 + 270 = 1230 = 20.5 min
    (lambda: cut(3.0, max_update=6), ((SYSTEMS[:2], 1, None, 660, 930, True),
                                      "the first 2 of the 9 systems with 1 seed, dropping sgnet, syntax+sgnet, sla, "
                                      "syntax_bert, seprem, lisa, all (2 seeds of all 9 would end at 55.5 min, one seed "
                                      "of all 9 at 3 updates at 27.0 min); ONE SEED: 2 seeds of the first 2 systems "
                                      "would end at 20.5 min, " + ONE_SEED_WHY + "; "
                                      + kept_for("15.5", "20.0", "11.0", "4.5"))),
    # step 5, the user's systems: one seed of all 9: 440 + 4 x 200 = 1240 (+ 180 = 1420 = 23.7 min), over the budget
    (lambda: calibrated(2.0, adapt=False), ((SYSTEMS, 1, None, 1240, 1420, False),
                                            "OVER THE BUDGET: even one seed of 9 systems ends at 23.7 min; every system "
                                            "with 1 seed; ONE SEED: 2 seeds of all 9 systems would end at 37.0 min, "
                                            + ONE_SEED_WHY + "; " + kept_for("23.7", "20.0", "20.7", "3.0"))),
    # step 5, the default systems: the first two done, 70 s left of the budget: 1130 + 0 + 90 = 1220 = 20.3 min
    (lambda: b.plan_budget({"transformer": 900.0, "syntax-infused": 900.0}, SYSTEMS, 2, now=1130, budget=1200,
                           reserve=90, done=[("transformer", 1), ("syntax-infused", 1)]),
     ((SYSTEMS[:2], 1, None, 1130, 1220, False),
      "OVER THE BUDGET: even one seed of the first 2 systems ends at 20.3 min; the first 2 of the 9 systems with 1 seed, "
      "dropping sgnet, syntax+sgnet, sla, syntax_bert, seprem, lisa, all (2 seeds of all 9 would end at 140.3 min); "
      "ONE SEED: 2 seeds of the first 2 systems would end at 35.3 min, " + ONE_SEED_WHY + "; "
      + kept_for("20.3", "20.0", "18.8", "1.5"))),
])
def test_each_step_of_the_rule_gives_exactly_this_plan_and_says_why(plan, expected):
    plan = plan()
    (systems, seeds, updates, end, finish, fits), why = expected
    assert (plan.systems, plan.seeds, plan.updates, plan.fits) == (tuple(systems), seeds, updates, fits)
    assert (plan.end, plan.finish) == (pytest.approx(end), pytest.approx(finish))
    assert plan.why == why


def test_the_cut_without_measured_translations_scales_whole_jobs_and_lists_no_job_trained_further():
    """Step 3 with nothing trained yet and no translating measured: a job at 300 of 400 updates costs 3/4 of it."""
    plan = b.plan_budget({"a": 100.0, "b": 100.0}, ["a", "b"], 1, now=0, budget=160, max_update=400)
    # 400 updates: 200 > 160; 300: 75 + 75 = 150
    assert (plan.systems, plan.seeds, plan.updates, plan.end, plan.fits) == (("a", "b"), 1, 300, 150, True)
    assert plan.why == (
        "every system with 1 seed; ONE SEED: 2 seeds of all 2 systems would end at 6.7 min, " + ONE_SEED_WHY
        + "; FEWER UPDATES: 300 of the 400 updates (one seed of every system with 400 updates would end at 3.3 min), "
        "so the scores are those of less-trained models and do not compare with a table of the full budget; "
        + kept_for("2.5", "2.7", "2.5", "0.0"))


def test_finished_jobs_trained_to_other_updates_cost_their_own_system_and_what_is_left():
    """a seed 1 trained to 400, b seed 1 (80 s a job, 10 of them translating) to 300: at 400 updates b trains on from
    300 (10 + 70 / 4 = 27.5) and c trains (100): 127.5 > 100; at 300 a is translated again (10), b is done, c trains
    to 300 (10 + 90 x 3/4 = 77.5): 87.5. Only a, trained further than the cut, is scored with its model at 300."""
    plan = b.plan_budget({"a": 100.0, "b": 80.0, "c": 100.0}, ["a", "b", "c"], 1, now=0, budget=100, max_update=400,
                         generate_seconds={"a": 10.0, "b": 10.0, "c": 10.0}, done=[("a", 1), ("b", 1)],
                         trained={("a", 1): 400, ("b", 1): 300})
    assert (plan.systems, plan.seeds, plan.updates, plan.end, plan.fits) == (("a", "b", "c"), 1, 300, 87.5, True)
    assert "(one seed of every system with 400 updates would end at 2.1 min)" in plan.why  # 127.5 s
    assert "; a seed 1, trained further before the cut, is scored with its model at update 300; expected end 1.5 " \
        "min" in plan.why


def test_a_running_job_of_a_fast_system_holds_its_worker_for_its_own_estimate_and_is_translated_again_at_a_cut():
    """One worker, at 100 s: a (100 s, 30 translating) seed 1 done, b (50 s, 5 translating) seed 1 running for 10 s,
    both to 400 updates; c, d, e not measured (as a). 400 updates: 40 + 3 x 100 = 340 (> 280); 300: 40 + 30 + 5 +
    3 x 82.5 = 322.5 (> 280); 200: 40 + 30 + 5 + 3 x 65 = 270."""
    plan = b.plan_budget({"a": 100.0, "b": 50.0}, ["a", "b", "c", "d", "e"], 1, now=100, budget=380, max_update=400,
                         generate_seconds={"a": 30.0, "b": 5.0}, done=[("a", 1)], running={("b", 1): 10.0},
                         trained={("a", 1): 400, ("b", 1): 400})
    assert (len(plan.systems), plan.seeds, plan.updates, plan.end, plan.fits) == (5, 1, 200, 370, True)
    assert "(one seed of every system with 400 updates would end at 7.3 min)" in plan.why  # 440 s
    assert "; a seed 1, b seed 1, trained further before the cut, are scored with their model at update 200" in plan.why


def test_a_running_job_the_plan_no_longer_lists_holds_its_worker_for_what_is_left_of_its_own_estimate():
    """b seed 2 (40 s a job) has run 10 s: one seed of both systems, all done, ends when it does, at 30 s; two seeds
    would train a seed 2 (100 s) beside it."""
    plan = b.plan_budget({"a": 100.0, "b": 40.0}, ["a", "b"], 2, now=0, budget=50, done=[("a", 1), ("b", 1)],
                         running={("b", 2): 10.0})
    assert (plan.systems, plan.seeds, plan.end, plan.fits) == (("a", "b"), 1, 30, True)


def test_the_plan_in_force_with_more_seeds_is_kept_over_one_seed():
    """Step 1 with 2 seeds in force, 3 x 2 x 100 s on one worker: 600 + 40 = 640 is 10 s past the budget (630), less
    than half the reserve (20): kept, although the rule alone takes one seed (340)."""
    seconds, systems = {n: 100.0 for n in "abc"}, ["a", "b", "c"]
    current = b.Plan(tuple(systems), 2, 0.0, 0.0, True, "")
    plan = b.plan_budget(seconds, systems, 1, now=0, budget=630, reserve=40, max_update=400, current=current)
    assert (plan.systems, plan.seeds, plan.updates, plan.end, plan.finish, plan.fits) == \
        (tuple(systems), 2, None, 600, 640, False)
    assert plan.why == ("KEPT: the plan in force ends at 10.7 min, less than half the reserve past the budget; the "
                        "rule's next choice would throw trained models away; every system with 2 seeds; 3 seeds would "
                        "end at 15.7 min; " + kept_for("10.7", "10.5", "10.0", "0.7"))
    plan = b.plan_budget(seconds, systems, 1, now=0, budget=630, reserve=40, max_update=400)
    assert (plan.seeds, plan.updates, plan.end, plan.fits) == (1, None, 300, True)


def test_the_plan_in_force_with_fewer_systems_and_two_seeds_is_kept_over_more_systems_with_one():
    """Seed 1 of a..d done, 100 s a job, one worker, reserve 500, budget 560: the rule alone takes 4 systems x 1 seed
    (0 s more); 3 x 2 in force needs 300 s: 800 is 240 past the budget, less than 250: kept."""
    systems = ["a", "b", "c", "d", "e"]
    kw = dict(done=[(n, 1) for n in systems[:4]])
    alone = b.plan_budget({n: 100.0 for n in systems}, systems, 1, now=0, budget=560, reserve=500, **kw)
    assert (alone.systems, alone.seeds, alone.end, alone.fits) == (tuple(systems[:4]), 1, 0, True)
    current = b.Plan(tuple(systems[:3]), 2, 0.0, 0.0, True, "")
    plan = b.plan_budget({n: 100.0 for n in systems}, systems, 1, now=0, budget=560, reserve=500, current=current, **kw)
    assert (plan.systems, plan.seeds, plan.end, plan.finish, plan.fits) == (tuple(systems[:3]), 2, 300, 800, False)
    # 2 seeds of all 5: 6 jobs left: 600 + 500 = 1100 = 18.3 min
    assert plan.why == ("KEPT: the plan in force ends at 13.3 min, less than half the reserve past the budget; the "
                        "rule's next choice would throw trained models away; the first 3 of the 5 systems with 2 "
                        "seeds, dropping d, e (2 seeds of all 5 would end at 18.3 min); "
                        + kept_for("13.3", "9.3", "5.0", "8.3"))


def test_the_plan_in_force_with_one_seed_of_every_system_is_kept_over_fewer_systems_with_two():
    """No --max-update; seed 1 of a, b done: one seed of all 5 in force needs 300 s (+ 100 = 400, 40 past the budget,
    less than 50); the rule alone takes 2 x 2 (200 s)."""
    systems = ["a", "b", "c", "d", "e"]
    kw = dict(done=[("a", 1), ("b", 1)])
    assert b.plan_budget({n: 100.0 for n in systems}, systems, 1, now=0, budget=360, reserve=100, **kw).systems == \
        ("a", "b")
    current = b.Plan(tuple(systems), 1, 0.0, 0.0, True, "")
    plan = b.plan_budget({n: 100.0 for n in systems}, systems, 1, now=0, budget=360, reserve=100, current=current, **kw)
    assert (plan.systems, plan.seeds, plan.end, plan.finish, plan.fits) == (tuple(systems), 1, 300, 400, False)
    assert plan.why.startswith("KEPT: the plan in force ends at 6.7 min")


def test_the_smallest_plan_in_force_over_the_budget_is_over_the_budget_not_kept():
    """Nothing fits; the plan in force is the rule's own smallest plan (20 s past the budget, less than 45): said to be
    over the budget, as the rule says, not kept against the rule."""
    current = b.Plan(tuple(SYSTEMS[:2]), 1, 0.0, 0.0, False, "")
    plan = b.plan_budget({"transformer": 900.0, "syntax-infused": 900.0}, SYSTEMS, 2, now=1130, budget=1200,
                         reserve=90, done=[("transformer", 1), ("syntax-infused", 1)], current=current)
    assert (plan.systems, plan.seeds, plan.finish, plan.fits) == (tuple(SYSTEMS[:2]), 1, 1220, False)
    assert plan.why.startswith("OVER THE BUDGET: even one seed of the first 2 systems ends at 20.3 min; ")


def test_seeds_out_of_order_are_refused():
    with pytest.raises(ValueError, match=r"^seeds 3\.\.2$"):
        b.plan_budget({"a": 1.0}, ["a"], 1, 0, 100, min_seeds=3, max_seeds=2)


def test_small_functions_edges():
    with pytest.raises(ValueError, match="^no measured job to plan from$"):
        b.estimate({}, "a")
    with pytest.raises(ValueError, match="^0 busy of 0 workers$"):
        b.makespan([1], 0)
    with pytest.raises(ValueError, match="^2 busy of 1 workers$"):
        b.makespan([1], 1, busy=[1, 2])
    assert b.update_marks(2) == (1,) and b.save_interval((1,)) == 1  # 3/4 of 2 is no whole number, 1/2 is 1
    runs = {("a", 1): {"train_seconds": 100.0, "updates": 400, "generate_seconds": 10.0},
            ("a", 2): {"train_seconds": 60.0}, ("b", 1): {"train_seconds": 50.0, "updates": 200}}
    # a: (100 x 200/400 + 10 + 60) / 2; b ran 200 updates already; a seed 2 and b measured no translating (0)
    assert b.job_seconds(runs, 200) == {"a": 60.0, "b": 50.0}
    assert b.job_seconds(runs) == {"a": 85.0, "b": 50.0}
    assert b.generate_seconds(runs) == {"a": 5.0, "b": 0.0}
    # b seed 1 has run 20 of its 50 s: a seed 1 starts at 0 (100), a seed 2 when b is free at 30 (130), from now 10
    assert b.jobs_end({"a": 100.0, "b": 50.0}, [("a", 1), ("b", 1), ("a", 2)], 2, 10, {("b", 1): 20.0}) == 140


def test_policy_says_exactly_how_it_will_choose():
    tail = ("The corpus and the model stay as they are, and so do the updates unless a plan says it cuts them, so the "
            "scores compare with the README's table.")
    head = "re-plans what fits: 2 to 5 seeds of all {} systems; if 2 do not fit, one seed of every system, said plainly; "
    assert b.policy(SYSTEMS, 2, 20, True, max_update=400) == (
        "time budget 20 min (--time-budget): the first trainings (transformer, syntax-infused, seed 1) measure this "
        "machine; then every finished training " + head.format(9) + "if that does not fit either, one seed of every "
        "system with fewer updates (300 or 200 of 400), said plainly; if that does not fit either, fewer systems (the "
        "last first: all, lisa, seprem, syntax_bert, sla, syntax+sgnet, sgnet; at least transformer, syntax-infused), "
        "with 2 seeds if they fit. " + tail)
    assert b.policy(["a", "b", "c"], 1, 7.5, True) == (
        "time budget 7.5 min (--time-budget): the first training (a, seed 1) measures this machine; then every "
        "finished training " + head.format(3) + "if one seed of every system does not fit either, fewer systems (the "
        "last first: c; at least a, b), with 2 seeds if they fit. " + tail)
    # the user's systems are never cut; two systems cannot be cut either
    assert b.policy(SYSTEMS[:3], 3, 20, False, max_update=6) == (
        "time budget 20 min (--time-budget): the first trainings (transformer, syntax-infused, sgnet, seed 1) measure "
        "this machine; then every finished training " + head.format(3) + "if that does not fit either, one seed of "
        "every system with fewer updates (3 of 6), said plainly. " + tail)  # the rule's last step ends its sentence
    assert b.policy(["a", "b"], 1, 10, True) == (
        "time budget 10 min (--time-budget): the first training (a, seed 1) measures this machine; then every "
        "finished training " + head.format(2)[:-2] + ". " + tail)
