"""The demo's time budget (``python -m syntax_nmt.demo --time-budget``): what fits, from measured seconds.

A *job* is one system trained with one seed and its test set translated. The demo measures the machine on its
first jobs (``--jobs`` of them run at once, so the first wave is the calibration), then :func:`plan_budget`
chooses the systems and the number of seeds whose remaining jobs end, with the report and the analyses
(``reserve``), within the budget. It is planned again after every finished job with what has been measured
by then, so a slower method or a machine that gets busier shortens the plan before its jobs start.

The rule, in order of preference (the corpus and the model never change; the updates only in step 3, said so):

1. every system with as many seeds as fit, from ``min_seeds`` (2: a standard deviation over seeds needs two)
   up to ``max_seeds``;
2. if ``min_seeds`` seeds of every system do not fit: every system with one seed, said plainly (one seed cannot
   show whether a difference is larger than the variation between training seeds; the paired test, whose unit
   is the test sentence, still says whether two models' translations differ);
3. if that does not fit either: every system with one seed and fewer updates, the most of :func:`update_marks`
   (3/4, then 1/2 of ``--max-update``) that fits, said plainly (the scores are then those of less-trained models
   and do not compare with a table of the full budget). Every training saves its model at these updates, so a
   training that ran longer before the cut (the first wave) is scored with its model at the cut, which is the
   model a training to the cut gives (the learning rate follows the update number, never ``--max-update``, and
   fairseq seeds every update by its number: ``tests/e2e/test_demo.py`` checks the two are equal); its test set
   is translated again;
4. if not even that fits (and the systems are the default comparison, not the user's ``--systems``): the most
   systems from the front of the list that fit with ``min_seeds`` seeds, at least ``min_systems`` (the baseline
   and one method), then with one seed, all with the full updates;
5. if nothing fits: the smallest plan with whatever costs nothing more (a finished job is never dropped for
   nothing), marked as over the budget, with its expected end.

Once a plan is in force, a plan the rule prefers less replaces it only if the one in force would end more than half
the reserve past the budget (``current``): the estimates move with every measured job, and a switch to fewer
systems throws trained models away (a real run did: all 9 trained at the cut, then dropped to 2 for the seconds of
translating the first two again).

Everything here is pure (no clock, no training), so the rule is tested on simulated timings
(tests/unit/test_demo_budget.py).
"""

import heapq
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

#: at least 2 seeds (for a standard deviation), at most 5
MIN_SEEDS, MAX_SEEDS = 2, 5
#: what the steps after the trainings (report with its bootstrap tests, analyses, raw-text translation) took
#: on the reference machine, in seconds; scaled by the measured slowdown (:func:`reserve_seconds`)
RESERVE_SECONDS = 90.0
#: seconds of one demo training (400 updates of 1536 tokens, two at a time with one thread each) on the machine
#: the README's figures come from, a 2-core CPU (about 100 s per training)
REFERENCE_TRAIN_SECONDS = 100.0

#: step 3 of the rule: the fractions of ``--max-update`` a plan may cut the trainings to, the largest first
UPDATE_FRACTIONS = (Fraction(3, 4), Fraction(1, 2))

Job = Tuple[str, int]


def update_marks(max_update: int) -> Tuple[int, ...]:
    """The updates a plan may cut ``max_update`` to (:data:`UPDATE_FRACTIONS` that give a whole number), largest
    first; every training saves its model at each of them.

    >>> update_marks(400)
    (300, 200)
    >>> update_marks(6)
    (3,)
    """
    marks = (f * max_update for f in UPDATE_FRACTIONS)
    return tuple(int(m) for m in marks if m.denominator == 1 and m >= 1)


def save_interval(marks: Sequence[int]) -> int:
    """``--save-interval-updates`` that saves a training's model at every one of ``marks`` (0: none)."""
    return math.gcd(*marks) if marks else 0


@dataclass(frozen=True)
class Plan:
    """The systems and seeds to train.

    Attributes:
        systems: the systems, in the order given (the baseline first).
        seeds: seeds 1..``seeds`` of every system.
        updates: the updates step 3 of the rule cut every training to; None: the full ``--max-update``.
        end: expected end of the last job, in seconds since the demo began.
        finish: expected end of the demo (``end`` + the reserve).
        fits: ``finish`` is within the budget.
        why: one paragraph saying what was chosen and why.
    """

    systems: Tuple[str, ...]
    seeds: int
    end: float
    finish: float
    fits: bool
    why: str
    updates: Optional[int] = None

    def jobs(self) -> List[Job]:
        return job_order(self.systems, self.seeds)


def _scaled(r: dict, updates: Optional[int]) -> float:
    """A run's training seconds scaled to ``updates`` updates (a run records the ``updates`` it trained)."""
    if updates and r.get("updates"):
        return r["train_seconds"] * updates / r["updates"]
    return r["train_seconds"]


def job_seconds(runs: Mapping[Job, dict], updates: Optional[int] = None) -> Dict[str, float]:
    """Measured seconds of one job per system: the mean of its finished jobs' ``train_seconds`` (scaled to
    ``updates`` updates, if given, for runs that trained another number) + ``generate_seconds``."""
    return _means(runs, lambda r: _scaled(r, updates) + r.get("generate_seconds", 0.0))


def train_seconds(runs: Mapping[Job, dict], updates: Optional[int] = None) -> Dict[str, float]:
    """Measured seconds of one training per system (mean over its finished jobs; scaled as :func:`job_seconds`)."""
    return _means(runs, lambda r: _scaled(r, updates))


def generate_seconds(runs: Mapping[Job, dict]) -> Dict[str, float]:
    """Measured seconds of translating the test set per system (mean over its finished jobs)."""
    return _means(runs, lambda r: r.get("generate_seconds", 0.0))


def _means(runs: Mapping[Job, dict], value) -> Dict[str, float]:
    per: Dict[str, List[float]] = {}
    for (name, _), r in runs.items():
        per.setdefault(name, []).append(value(r))
    return {name: sum(v) / len(v) for name, v in per.items()}


def job_order(systems: Sequence[str], seeds: int) -> List[Job]:
    """The jobs of ``systems`` x seeds 1..``seeds`` in the order they start: seed 1 of every system, then seed 2..."""
    return [(name, s) for s in range(1, seeds + 1) for name in systems]


def makespan(durations: Iterable[float], workers: int, busy: Sequence[float] = ()) -> float:
    """When the last of ``durations`` ends if each starts, in order, on the first free one of ``workers``
    (as a pool of ``workers`` threads runs them); ``busy``: seconds until each already busy worker is free.

    >>> makespan([100, 100, 100], 2)
    200
    >>> makespan([100], 2, busy=[30, 80])
    130
    """
    if workers < 1 or len(busy) > workers:
        raise ValueError(f"{len(busy)} busy of {workers} workers")
    free = sorted([max(0.0, b) for b in busy] + [0] * (workers - len(busy)))
    end = max(free)
    for d in durations:
        start = heapq.heappop(free)
        heapq.heappush(free, start + d)
        end = max(end, start + d)
    return end


def estimate(job_seconds: Mapping[str, float], name: str) -> float:
    """Seconds of one job of ``name``: its own measurement, else the slowest measured system's."""
    if not job_seconds:
        raise ValueError("no measured job to plan from")
    return job_seconds.get(name, max(job_seconds.values()))


def slowdown(train_seconds: Sequence[float], reference: float = REFERENCE_TRAIN_SECONDS) -> float:
    """How many times slower than the reference machine this one trains (mean of the measured trainings)."""
    return sum(train_seconds) / len(train_seconds) / reference


def reserve_seconds(factor: float, reference: float = RESERVE_SECONDS) -> float:
    """The reserve for the steps after the trainings on a machine ``factor`` times slower (never below the
    reference's: their fixed costs do not shrink on a faster machine)."""
    return reference * max(1.0, factor)


def jobs_end(job_seconds: Mapping[str, float], jobs: Sequence[Job], workers: int, now: float,
             running: Optional[Mapping[Job, float]] = None) -> float:
    """Expected end (seconds since the demo began) of ``jobs`` started in order on ``workers``, of which the
    ``running`` ones (job -> seconds it has run) have started: each of those occupies a worker until its
    estimate is used up, whether or not ``jobs`` still lists it."""
    running = running or {}
    busy = [estimate(job_seconds, name) - ran for (name, _), ran in running.items()]
    return now + makespan([estimate(job_seconds, job[0]) for job in jobs if job not in running], workers, busy)


def plan_budget(job_seconds: Mapping[str, float], systems: Sequence[str], workers: int, now: float, budget: float,
                reserve: float = 0.0, done: Iterable[Job] = (), running: Optional[Mapping[Job, float]] = None,
                adapt_systems: bool = True, min_seeds: int = MIN_SEEDS, max_seeds: int = MAX_SEEDS,
                min_systems: int = 2, max_update: Optional[int] = None,
                generate_seconds: Optional[Mapping[str, float]] = None,
                trained: Optional[Mapping[Job, int]] = None, current: Optional[Plan] = None) -> Plan:
    """The plan that fits the budget (the rule in the module docstring).

    Args:
        job_seconds: measured seconds of one job per system (train ``max_update`` updates + translate); systems
            not measured yet count as the slowest measured one.
        systems: the candidates in order of priority (the baseline first; the last is dropped first).
        workers: jobs run at once (``--jobs``).
        now: seconds since the demo began.
        budget: the demo's budget in seconds (``--time-budget``).
        reserve: seconds kept for the steps after the trainings.
        done: the finished jobs (they cost nothing more, unless a cut of the updates has them translate again).
        running: the running jobs and the seconds each has run (each occupies a worker until its estimate
            is used up, whether or not the plan still needs it).
        adapt_systems: whether the systems may be cut (the default comparison) or are the user's.
        max_update: the updates of a full training; given, step 3 of the rule may cut them to
            :func:`update_marks` (a job's training time scales with its updates, its translation does not).
        generate_seconds: the translating part of ``job_seconds`` per system (default: none; a system not measured
            yet: the longest measured).
        trained: the updates each finished or running job trains to (default: ``max_update``).
        current: the plan in force. A plan the rule prefers less is taken instead only if the current one would
            end more than half the reserve past the budget: the estimates move with every measured job (a system
            not measured yet counts as the slowest), and a switch to fewer systems throws trained models away, e.g.
            all 9 trained at a cut for the few seconds of translating the first ones again.
    """
    done, running = set(done), dict(running or {})
    if not 1 <= min_seeds <= max_seeds:
        raise ValueError(f"seeds {min_seeds}..{max_seeds}")
    full = max_update or 0
    marks = update_marks(full) if full else ()
    gen = generate_seconds or {}
    trained = dict(trained or {})

    def cost(name: str, updates: int, start: int = 0) -> float:
        """Seconds of training ``name`` from update ``start`` to ``updates``, then translating."""
        total = estimate(job_seconds, name)
        g = min(gen.get(name, max(gen.values(), default=0.0)), total)
        return g + (total - g) * ((updates - start) / full if full else 1.0)

    def end(n: int, k: int, u: int = full) -> float:
        todo, busy, listed = [], [], job_order(systems[:n], k)
        for job in listed:
            name, t = job[0], trained.get(job, full)
            if job in running:  # trains on to its own updates; then translated again at a cut below them
                busy.append(estimate(job_seconds, name) - running[job])
                if t > u:
                    todo.append(cost(name, 0, 0))
            elif job in done:
                if t != u:  # scored at the cut, or trained on to the plan's updates
                    todo.append(cost(name, u, t) if t < u else cost(name, 0, 0))
            else:
                todo.append(cost(name, u))
        for job, ran in running.items():  # running jobs the plan no longer lists hold their worker too
            if job not in listed:
                busy.append(estimate(job_seconds, job[0]) - ran)
        return now + makespan(todo, workers, busy)

    def fits(n: int, k: int, u: int = full) -> bool:
        return end(n, k, u) + reserve <= budget

    total = len(systems)
    smallest = min(min_systems, total) if adapt_systems else total
    sizes = range(total, smallest - 1, -1)
    minutes = lambda s: f"{s / 60:.1f} min"  # noqa: E731

    def best(ok):
        """The preferred ``(systems, seeds, updates)`` among those ``ok`` accepts: every system with as many seeds
        as possible (``min_seeds`` or more, else one), then one seed of every system with as many updates as
        possible, then ``min_seeds`` or more seeds of as many systems as possible, then one seed of as many
        systems as possible."""
        several = range(max_seeds, min_seeds - 1, -1)
        order = [(total, several, full), (total, (1,), full)] + [(total, (1,), m) for m in marks] + \
            [(n, several, full) for n in sizes if n < total] + [(n, (1,), full) for n in sizes if n < total]
        for n, seeds, u in order:
            k = next((k for k in seeds if ok(n, k, u)), None)
            if k is not None:
                return n, k, u
        return None

    chosen = best(fits)
    if chosen is None:  # the smallest plan, with whatever costs nothing more (finished jobs are never dropped)
        floor = end(smallest, 1)
        chosen = best(lambda n, k, u: u == full and end(n, k) <= floor)
    kept_over = False
    if current is not None and tuple(systems[:len(current.systems)]) == tuple(current.systems):
        kept = (len(current.systems), current.seeds, current.updates or full)

        def preference(plan):  # larger is preferred: the tiers of the rule, in its order
            n, k, u = plan
            if n == total:
                return (4, k, u) if k >= min_seeds else (3, u, 0)
            return (2, n, k) if k >= min_seeds else (1, n, 0)

        if preference(chosen) < preference(kept) and end(*kept) + reserve <= budget + reserve / 2:
            chosen, kept_over = kept, not fits(*kept)
    n, k, u = chosen
    parts = []
    if kept_over:
        parts.append(f"KEPT: the plan in force ends at {minutes(end(n, k, u) + reserve)}, less than half the reserve "
                     "past the budget; the rule's next choice would throw trained models away")
    elif not fits(n, k, u):
        parts.append(f"OVER THE BUDGET: even one seed of {'the first ' if smallest < total else ''}{smallest} "
                     f"systems ends at {minutes(floor + reserve)}")
    parts.append(f"every system with {k} seed{'s' * (k > 1)}" if n == total else
                 f"the first {n} of the {total} systems with {k} seed{'s' * (k > 1)}, dropping "
                 f"{', '.join(systems[n:])} ({min_seeds} seeds of all {total} would end at "
                 f"{minutes(end(total, min_seeds) + reserve)}"
                 + (f", one seed of all {total} at {marks[-1]} updates at {minutes(end(total, 1, marks[-1]) + reserve)}"
                    if marks else "") + ")")
    if k == 1:
        which = (f"all {total}" if n == total else f"the first {smallest}" if smallest < total else str(smallest))
        parts.append(f"ONE SEED: {min_seeds} seeds of {which} systems would end at "
                     f"{minutes(end(total if n == total else smallest, min_seeds) + reserve)}, and with one seed the "
                     "table cannot show whether a difference is larger than the variation between training seeds "
                     "(the paired test, the test sentence its unit, only says that two models' translations differ)")
    elif n == total and k < max_seeds:
        parts.append(f"{k + 1} seeds would end at {minutes(end(total, k + 1) + reserve)}")
    if u != full:
        cut = [j for j in job_order(systems[:n], k) if (j in done or j in running) and trained.get(j, full) > u]
        parts.append(f"FEWER UPDATES: {u} of the {full} updates (one seed of every system with {full} updates would "
                     f"end at {minutes(end(total, 1) + reserve)}), so the scores are those of less-trained models and "
                     "do not compare with a table of the full budget"
                     + (f"; {', '.join(f'{name} seed {s}' for name, s in cut)}, trained further before the cut, "
                        f"{'are' if len(cut) > 1 else 'is'} scored with {'their' if len(cut) > 1 else 'its'} model "
                        f"at update {u}" if cut else ""))
    why = "; ".join(parts)
    e = end(n, k, u)
    return Plan(tuple(systems[:n]), k, e, e + reserve, e + reserve <= budget,
                f"{why}; expected end {minutes(e + reserve)} of the {minutes(budget)} budget "
                f"(trainings until {minutes(e)}, {minutes(reserve)} kept for the report and the analyses)",
                u if u != full else None)


def policy(systems: Sequence[str], workers: int, budget_minutes: float, adapt_systems: bool,
           min_seeds: int = MIN_SEEDS, max_seeds: int = MAX_SEEDS, max_update: Optional[int] = None) -> str:
    """The demo's first lines with ``--seeds auto``: how it will choose what fits."""
    first = ", ".join(systems[:workers])
    marks = update_marks(max_update) if max_update else ()
    fewer = (f"if that does not fit either, one seed of every system with fewer updates ({' or '.join(map(str, marks))} "
             f"of {max_update}), said plainly; " if marks else "")
    drop = (f"if {'that' if marks else 'one seed of every system'} does not fit either, fewer systems (the last "
            f"first: {', '.join(reversed(systems[2:]))}; at least {', '.join(systems[:2])}), with {min_seeds} seeds "
            "if they fit. " if adapt_systems and len(systems) > 2 else "")
    rule = (f"time budget {budget_minutes:g} min (--time-budget): the first training{'s' * (workers > 1)} "
            f"({first}, seed 1) measure{'s' * (workers == 1)} this machine; then every finished training "
            f"re-plans what fits: {min_seeds} to {max_seeds} seeds of all {len(systems)} systems; if {min_seeds} "
            f"do not fit, one seed of every system, said plainly; {fewer}{drop}")
    if rule.endswith("; "):  # the last step of the rule ends its sentence
        rule = rule[:-2] + ". "
    return (rule + "The corpus and the model stay as they are, and so do the updates unless a plan says it cuts "
            "them, so the scores compare with the README's table.")


def describe(plan: Plan, train_seconds: Dict[str, float], budget_minutes: float) -> str:
    """The decision as printed and written to ``results.md``: the measured speed and the plan."""
    factor = slowdown(list(train_seconds.values()))
    measured = ", ".join(f"{n} {s:.0f} s" for n, s in train_seconds.items())
    return (f"budget {budget_minutes:g} min: measured trainings {measured} (the reference 2-core machine: about "
            f"{REFERENCE_TRAIN_SECONDS:.0f} s: this one takes {factor:.1f}x as long). Chosen: {len(plan.systems)} "
            f"systems x {plan.seeds} seed{'s' * (plan.seeds > 1)}"
            + (f" x {plan.updates} updates" if plan.updates else "") + f" ({', '.join(plan.systems)}): {plan.why}.")
