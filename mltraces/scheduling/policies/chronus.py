"""Chronus (SoCC'21): deadline guarantees sold as GPU leases, as the ElasticFlow artifact runs it.

The artifact's ``chronus-scheduler`` (MIT) replays a trace in steps of
``check`` seconds (its ``--check_time_interval``: 60 for Figs. 8(a)/8(b), 240
for Fig. 10) with leases of 240 s (``--lease_term_interval=240``). Jobs run on
the GPU count they asked for, their work is the trace's duration in seconds:

- **Admission** (every 240 s, for the jobs that arrived meanwhile): a job's
  estimate is ``int(duration · (1 + (1 + log2 n) · 0.5 / 240) · 1.1)``, i.e.
  ``ceil(estimate / 240)`` leases before the last whole lease ending by its
  deadline. It is accepted when the quick packing of :func:`.leases.pack` fits
  it beside the jobs already planned; otherwise the earliest lease count that
  packs is searched (binary search), and the job is still accepted if that
  lands by its deadline, else it runs only on spare GPUs. An accepted job's
  deadline becomes the end of its last planned lease (never later than its own).
- **Leases** (every 240 s): every accepted job is re-planned by the integer
  program of :func:`.leases.solve`; those planned for the coming lease run on
  it. The program keeps the coming lease as empty as possible while any job is
  turned down, else as full as possible (``--mip_objective=adaptive``).
- **Spare GPUs** (every 240 s): jobs without a guarantee (turned down, past
  their deadline, or past their estimate) run in order: past their estimate
  first, then the turned-down before the late, then least remaining GPU-time,
  then earliest submission.
- A job finishes when its run time reaches its duration plus 0.5 s × (1 +
  log2 n) per (re)start; it meets its deadline when it ends by its (possibly
  lease-aligned) deadline. Ratio: met / all jobs.

Facts of the artifact's code kept as they are: arrivals are handled only every
240 s and after that step's lease decisions, so a newly accepted job starts at
the next lease at the earliest; a job that waited and then starts at a lease
is credited with the 240 s since it was last looked at (its clock is read at
the previous 240-s step, not when it starts); a job turned down stays in the
packing of the other arrivals of the same 240 s, with the later deadline its
search found. Placement does not change speeds there, so only GPU counts are
kept. Best-effort flags: the artifact's trace converter
(``convert_ef_trace_to_chronus.py``) writes every job as a deadline job, so a
best-effort job is treated as one with its trace deadline, as there.

The artifact solves the program with python-mip on Gurobi, with a 5 s limit;
here an optimal plan comes from HiGHS (:func:`scipy.optimize.milp`, with the same
limit: :attr:`Chronus.time_limit`) or from a packing that provably reaches the
optimum (see :mod:`.leases`). At the limit the artifact takes its solver's best
plan, or, with none, its model raises and it packs the lease: so does this replay,
and its outcome's ``notes`` say so. Two counts of met deadlines come out
(:attr:`~.results.Outcome.ratio`, best-effort jobs on neither side, and
:attr:`~.results.Outcome.listed_ratio`, every job against its listed deadline, the
artifact's converter's count). Optimal plans
are not unique, and which one a solver returns can change later decisions
(``layout``, ``ties`` and ``plans="highs"`` pick others; the README gives how
far that moved the ratios). When python-mip finds no Gurobi, its model raises,
the artifact catches that and falls back to packing every lease
(:func:`.leases.pack_each`): that is ``plans="packing"``, and it reproduces the
artifact's shipped Fig. 10 Chronus log step for step, so the authors' own runs
took that path. Jobs wider than the cluster are turned away (the artifact
would wait forever).

The jobs' state and the loops over all of them at each 240-s step (credit,
release, ranking, (re)starts) are compiled (:mod:`.chronuscore`); the packing
and programs are in :mod:`.leases` and :mod:`.leasecore`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.policies.leases import (
    LAYOUTS,
    Demand,
    Flat,
    ProgramTimedOut,
    Spans,
    TimeLimit,
    earliest_horizon,
    fits,
    pack_each,
    solve_spans,
)
from mltraces.scheduling.results import Recorder

if TYPE_CHECKING:
    from mltraces.scheduling.cores.chronuscore import Job

#: the artifact's lease term and the period of its admission and spare-GPU rounds (BEST_SLOT)
LEASE = 240
#: queue priorities (larger runs first on spare GPUs)
LATE, ACCEPTED, DECLINED = -1, 0, 1
#: per (re)start: checkpoint 0.1 s + resume 0.4 s, times 1 + log2 n
RESTART = 0.5
#: at most this many planned jobs per lease program (the artifact's MAX_SEARCH_JOB at 240 s)
MAX_PLANNED = 1200 * LEASE // 60


#: the lease programs' profile: every lease's GPUs free (the planned jobs are in the program)
NO_PROFILE = np.zeros(0, np.int64)

#: how lease programs are answered (see :class:`Chronus`)
PLANS = ("auto", "highs", "packing")
#: seconds a lease program may take: the artifact's ``job_selection(..., max_seconds=5)``
TIME_LIMIT = 5.0


@dataclass(frozen=True)
class Chronus:
    """Lease-based deadline guarantees (the artifact's ``--schedule=time-aware-with-lease``).

    Attributes:
        plans: How each lease program is answered. ``"auto"``: an optimal plan,
            from a packing when it provably is one, else from HiGHS; ``"highs"``:
            HiGHS solves every program; ``"packing"``: no program is solved, the
            artifact's fallback packing decides, as the artifact does when
            python-mip finds no Gurobi (its shipped Fig. 10 log is this, step for
            step); arrivals that need the program then stop the replay, as they
            stop the artifact.
        layout: Where a plan certified without HiGHS puts the leases after the
            coming one: ``"latest"`` (as late as each job can, like the
            artifact's own packing) or ``"earliest"``. Both are optimal; the
            choice is one among ties (to measure how far ties move the ratio).
        ties: ``None`` hands the programs their jobs in the artifact's order; a
            seed shuffles that order, which picks other optima among ties.
        check: Seconds between steps (the artifact's ``--check_time_interval``);
            ``None`` takes the setup's slot (60 for Fig. 8, 240 for Fig. 10).
        time_limit: Seconds HiGHS may spend on one lease program (the artifact gives
            its solver 5; ``None``: no limit). Stopped there, as the artifact is, the
            best plan found is used; with none, the coming lease is packed instead (the
            artifact's fallback), or, at admission, the replay stops (where the artifact
            stops). The outcome's ``notes`` say how often either happened: only then can
            a replay's result depend on the machine's speed.
    """

    plans: str = "auto"
    layout: str = "latest"
    ties: int | None = None
    check: int | None = None
    time_limit: float | None = TIME_LIMIT
    name: str = "chronus"

    def __post_init__(self) -> None:
        if self.plans not in PLANS:
            raise SchedulingError(f"Chronus plans must be one of {', '.join(PLANS)}, "
                                  f"got {self.plans!r}")
        if self.layout not in LAYOUTS:
            raise SchedulingError(f"Chronus layout must be one of {', '.join(LAYOUTS)}, "
                                  f"got {self.layout!r}")
        if self.time_limit is not None and not (isinstance(self.time_limit, int | float)
                                                and 0 < self.time_limit < math.inf):
            raise SchedulingError(f"Chronus time_limit must be a positive number of seconds "
                                  f"or None, got {self.time_limit!r}")

    def simulate(self, setup: Setup) -> Recorder:
        check = int(self.check if self.check is not None else setup.slot)
        if check <= 0 or LEASE % check:
            raise SchedulingError(
                f"Chronus steps must divide its {LEASE} s lease; got a step of {check} s "
                "(the artifact runs 60 on recorded traces and 240 on generated ones)"
            )
        return _ChronusRun(setup, check, self).run()


def size_class(gpus: int) -> int:
    """The GPU count a job is planned with (3-4 → 4, 5-7 → 8, as the artifact bins them)."""
    if gpus in (3, 4):
        return 4
    if 5 <= gpus <= 7:
        return 8
    return gpus


def _new_job(core: ModuleType, index: int, gpus: int, submit: int, duration: float,
             relative: int) -> Any:
    """One job's state in the replay (a :class:`.chronuscore.Job`): ``relative`` is its
    deadline in seconds after submission; its estimate and lease count as the artifact's."""
    estimate = int(duration * (1 + (1 + math.log2(gpus)) * RESTART / LEASE) * 1.1)
    return core.Job(index, gpus, size_class(gpus), submit, duration, relative, estimate,
                    math.ceil(estimate / LEASE), 1 + math.log2(gpus))


def _demand(job: Any, lease_index: int) -> Demand:
    return Demand(job.width, job.leases, job.horizon(lease_index))


@cache
def _core() -> ModuleType:
    """The compiled per-job loops (imported on first use, after :mod:`.native` is set up)."""
    from mltraces.scheduling.cores import chronuscore

    return chronuscore


class _ChronusRun:
    """The replay: per step completions, then (every 240 s) leases, arrivals, spare GPUs."""

    def __init__(self, setup: Setup, check: int, policy: Chronus) -> None:
        self.rec = setup.recorder()
        # the artifact's steps and leases fall on multiples of 60 and 240 s of the trace's
        # own clock: the replay starts that far (under one lease) before the first job
        self.phase = int(setup.clock_phase(LEASE))
        self.size = setup.gpus
        self.check = check
        self.plans = policy.plans
        self.layout = policy.layout
        self.shuffle = None if policy.ties is None else np.random.default_rng(policy.ties)
        self.limit = None if policy.time_limit is None else TimeLimit(policy.time_limit)
        self.packed_leases = 0  # leases packed because their program found no plan in time
        self.core = _core()
        self.jobs: list[Job] = []
        _check_lease_terms(setup)
        for job in setup.jobs:
            if job.num_gpu > self.size:
                self.rec.reject(job.index)  # would wait forever for GPUs
                continue
            # a best-effort job keeps its listed deadline, as the artifact's converter writes it
            deadline = job.listed_deadline if job.best_effort else job.deadline
            if not (math.isfinite(job.duration) and math.isfinite(deadline)):
                raise SchedulingError(
                    f"job {job.job_id!r}: Chronus needs a duration and a deadline, got "
                    f"duration={job.duration!r}, deadline={deadline!r}"
                )
            submit = int(job.submit_time) + self.phase
            self.jobs.append(_new_job(self.core, job.index, job.num_gpu, submit, job.duration,
                                      int(deadline) - int(job.submit_time)))
        self.arrivals = _arrival_groups(self.jobs)
        self.next_arrival = 0
        self.pending: list[Job] = []
        self.running: list[Job] = []
        self.used = 0
        self.declined = 0  # jobs turned down and still in the system
        self.objective = "maximize"
        self.round = 0  # counts the 240-s steps (see Job.seen)

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> Recorder:
        """Step from 0 until every job is done, logging each step's cluster efficiency as the
        artifact's resource log does (the steps passed over changed nothing: they repeat it)."""
        now = 0
        while self.pending or self.running or self.next_arrival < len(self.arrivals):
            if not self.pending and not self.running:  # idle until the next arrivals are taken
                first = self.arrivals[self.next_arrival][0]
                idle, now = now, max(now, -(-first // LEASE) * LEASE)
                self.rec.unchanged_rounds(range(idle, now, self.check))
            self.step(now)
            self.rec.round(float(now))
            after = self._next_step(now)
            if after > now + self.check:  # steps passed over
                self.rec.unchanged_rounds(range(now + self.check, after, self.check))
            now = after
        for job in self.jobs:
            self.rec.met[job.index] = job.end - job.submit <= job.deadline
        # every job is judged against the deadline it lists, best-effort ones too (the
        # artifact's converter writes them as deadline jobs): its count of met deadlines
        self.rec.listed_met = list(self.rec.met)
        self._note_time_limit()
        return self._from_phase(self.rec)

    def _note_time_limit(self) -> None:
        """Say in the outcome when the time limit decided a lease (then the result can
        depend on the machine's speed, as the artifact's can)."""
        limit = self.limit
        if limit is None or not (limit.stopped or limit.unsolved):
            return
        self.rec.notes.append(
            f"{limit.stopped + limit.unsolved} lease program(s) reached the {limit.seconds:g} s "
            f"solver time limit (the artifact gives its solver {TIME_LIMIT:g} s): "
            f"{limit.stopped} used the best plan found by then, {limit.unsolved} found none "
            f"and {self.packed_leases} lease(s) were packed instead, as the artifact does; "
            "such a result can depend on the machine's speed")

    def _from_phase(self, rec: Recorder) -> Recorder:
        """The recorded times back on the jobs' clock (less the lease phase)."""
        if self.phase:
            rec.start = [t - self.phase for t in rec.start]
            rec.finish = [t - self.phase for t in rec.finish]
            rec.times = [t - self.phase for t in rec.times]
            rec.rounds = [t - self.phase for t in rec.rounds]
        return rec

    def _next_step(self, now: int) -> int:
        """The next step at which anything can be seen: a 240-s step or a completion.

        Between 240-s steps a step only credits run time (linear in whole seconds,
        so crediting it later gives the same numbers) and ends jobs; a job past its
        estimate off-lease is marked then, but nothing reads that mark before the
        next 240-s step, which marks it anyway. So the steps skipped are exactly
        the artifact's steps where nothing ends, and between 240-s steps only the
        jobs that end are looked at.
        """
        upcoming = self.core.first_due(self.running, now)
        return max(min(upcoming, (now // LEASE + 1) * LEASE), now + self.check)

    def step(self, now: int) -> None:
        if now % LEASE:
            self.complete(now)
        else:  # completions too: see lease
            before = self.lease(now)
            self.admit(now)
            self.spare(now, before)

    # -- completions (every step) -------------------------------------------------------------
    def complete(self, now: int) -> None:
        """End the jobs whose run time reaches their duration plus restart overhead."""
        # int(now - last_check) + progress >= duration + penalty
        finished = [job for job in self.running if job.due <= now]
        if finished:
            self.used -= self.core.finish_all(finished, now, self.rec)
            self.running = [job for job in self.running if not job.done]

    # -- leases ---------------------------------------------------------------------------------
    def lease(self, now: int) -> list[Job]:
        """Completions, then every running job credited, released and re-planned; the jobs a
        plan runs in the coming lease start. The jobs that held GPUs are returned: their
        release is recorded after the spare GPUs are handed out (see :meth:`spare`)."""
        self.objective = "minimize" if self.declined else "maximize"
        self.round += 1
        before: list[Job] = []
        self.used -= self.core.release(self.running, now, self.round, self.pending, before,
                                       self.rec)
        self.running = []
        index = now // LEASE
        planned = self.core.planned(self.pending)
        if len(planned) > MAX_PLANNED:
            raise SchedulingError(
                f"{len(planned)} jobs hold lease guarantees at t={now}; the artifact trims "
                f"programs above {MAX_PLANNED} jobs, which is not reproduced here"
            )
        chosen: list[Job] = []
        if planned:
            width, need, horizon, short = self.core.lease_columns(planned, index)
            if short >= 0:
                raise SchedulingError(
                    f"job {planned[short].index} needs {need[short]} leases in "
                    f"{horizon[short]} at t={now}: the artifact stops here (its assertion)")
            try:
                plan = self._solve(width, need, horizon, NO_PROFILE)
            except ProgramTimedOut:  # the artifact's solver raises then: it packs instead
                self.packed_leases += 1
                plan = None
            chosen = (self._fallback(now, index) if plan is None
                      else self.core.take_next_lease(planned, *plan))
        # on their lease; those that did not hold GPUs (re)start, the others keep running
        self.pending, taken, self.declined = self.core.take_leases(
            chosen, self.pending, self.running, now, self.check, self.round, self.rec)
        self.used += taken
        return before

    def _fallback(self, now: int, index: int) -> list[Job]:
        """The artifact's path when its program fails: pack the unplanned jobs one by one."""
        jobs, profile = self._planned_room(index)
        every, plans = pack_each([_demand(job, index) for job in jobs], profile, self.size)
        if not every:
            raise SchedulingError(
                f"t={now}: the lease program and the packing both fail; the artifact stops here")
        self.core.install(jobs, *Spans.of(Flat.of(plans)))
        chosen = []
        for job in self.pending + self.running:
            if job.priority != ACCEPTED:
                continue
            if job.spans is None:
                job.priority = DECLINED
                continue
            if self.core.advance(job):  # it runs in the coming lease
                chosen.append(job)
        return chosen

    def _planned_room(self, index: int) -> tuple[list[Job], np.ndarray]:
        """Accepted jobs without a plan, and the GPUs the planned ones leave per lease."""
        return self.core.planned_room(self.pending + self.running, index, self.size)

    # -- arrivals ------------------------------------------------------------------------------
    def admit(self, now: int) -> None:
        due = []
        while (self.next_arrival < len(self.arrivals)
               and self.arrivals[self.next_arrival][0] <= now):
            due.extend(self.arrivals[self.next_arrival][1])
            self.next_arrival += 1
        if not due:
            return
        index = now // LEASE + 1
        jobs, profile = self._planned_room(index)
        if not fits(*self.core.columns(jobs, index, 0), profile, self.size):
            self._replan(jobs, profile, now, index)
            jobs, profile = self._planned_room(index)
            if not fits(*self.core.columns(jobs, index, 0), profile, self.size):
                raise SchedulingError(f"t={now}: the new lease plan does not pack; the artifact "
                                      "stops here (its assertion)")
        width, need, horizon = self.core.columns(jobs, index, len(due))
        for count, job in enumerate(due, len(jobs) + 1):
            # the arrivals so far, each with the horizon its admission left it
            width[count - 1], need[count - 1] = job.width, job.leases
            horizon[count - 1] = job.horizon(index)
            columns = width[:count], need[:count], horizon[:count]
            if job.leases <= horizon[count - 1]:
                packs = fits(*columns, profile, self.size)
            else:
                packs = False
            if packs or self._search_deadline(job, *columns, profile, index):
                job.deadline = LEASE * (int(horizon[count - 1]) + index) - job.submit
            job.last_check = now
            self.pending.append(job)
            if job.priority == DECLINED:
                self.declined += 1

    def _replan(self, jobs: list[Job], profile: np.ndarray, now: int, index: int) -> None:
        """New plans for the jobs without one, beside the planned ones (the program)."""
        try:
            plan = self._solve(*self.core.columns(jobs, index, 0), profile)
        except ProgramTimedOut:
            assert self.limit is not None
            raise SchedulingError(
                f"t={now}: the lease program of the arrivals found no plan within the "
                f"{self.limit.seconds:g} s solver time limit (the artifact's); the artifact "
                "stops here (Chronus(time_limit=...) allows more)") from None
        if plan is None:
            raise SchedulingError(
                f"t={now}: the planned jobs fit no lease plan (or, with plans='packing', "
                "need the program the artifact cannot solve without Gurobi); the artifact "
                "stops here")
        self.core.install(jobs, *plan)

    def _search_deadline(self, job: Job, width: np.ndarray, need: np.ndarray,
                         horizon: np.ndarray, profile: np.ndarray, index: int) -> bool:
        """The earliest lease count that packs (binary search, as the artifact); True if it
        ends by the job's deadline. The job's horizon (the last) keeps that count either way."""
        low = max(int(horizon[-1]), int(need[-1]))
        others = int(horizon[:-1].max()) if len(horizon) > 1 else low
        high = max(low, others, len(profile)) + job.leases + 1
        high = earliest_horizon(width, need, horizon, profile, self.size, low, high)
        if LEASE * (high + index) - job.submit <= job.listed:
            return True
        job.priority = DECLINED
        return False

    # -- spare GPUs ------------------------------------------------------------------------------
    def spare(self, now: int, before: list[Job]) -> None:
        """Hand the free GPUs to the jobs without a guarantee, then record the releases of
        :meth:`lease`: a job released there that starts again here kept its GPUs
        throughout, but is restarted all the same (as in the artifact)."""
        self.pending, taken = self.core.spare_round(
            self.pending, self.running, self.size - self.used, now, self.check, self.round,
            before, self.rec)
        self.used += taken

    # -- helpers -------------------------------------------------------------------------------
    def _solve(self, width: np.ndarray, need: np.ndarray, horizon: np.ndarray,
               profile: np.ndarray) -> Spans | None:
        """One lease program, answered as the policy says (rows in the jobs' order)."""
        if self.plans == "packing":
            return None  # python-mip without Gurobi: every program raises
        if self.shuffle is None:
            return solve_spans(width, need, horizon, profile, self.size, self.objective,
                               shortcut=self.plans == "auto", layout=self.layout,
                               limit=self.limit)
        order = self.shuffle.permutation(len(width))
        plan = solve_spans(width[order], need[order], horizon[order], profile, self.size,
                           self.objective, shortcut=self.plans == "auto", layout=self.layout,
                           limit=self.limit)
        return None if plan is None else plan.reordered(np.argsort(order))


#: int64 arrays of one entry per lease term up to the furthest deadline, held at once
_TERM_ARRAYS = 4


def _check_lease_terms(setup: Setup) -> None:
    """Refuse, before anything is built, deadlines so far off that the lease terms up to them
    would not fit in ``MLTRACES_MAX_REPLAY_MEMORY`` (a plan holds a row per term: a deadline
    a million years away is billions of terms, or an integer C cannot hold)."""
    jobs = setup.jobs
    deadline = np.where(jobs.best_effort, jobs.listed_deadline, jobs.deadline)
    usable = (jobs.num_gpu <= setup.gpus) & np.isfinite(deadline) & np.isfinite(jobs.duration)
    if not usable.any():
        return
    # the furthest deadline, and the longest job's leases past it (its admission search)
    terms = (float(np.max(deadline[usable])) + 2 * float(np.max(jobs.duration[usable]))) / LEASE
    setup.check_memory("Chronus", (terms + 2) * 8 * _TERM_ARRAYS,
                       f"its lease plans hold a term per {LEASE} s up to the furthest deadline "
                       f"and the longest job's leases, {terms:,.0f} terms")


def _arrival_groups(jobs: list[Job]) -> list[tuple[int, list[Job]]]:
    """Jobs grouped by submission second, in time order (trace order within a second)."""
    groups: dict[int, list[Job]] = {}
    for job in sorted(jobs, key=lambda j: j.submit):
        groups.setdefault(job.submit, []).append(job)
    return sorted(groups.items())
