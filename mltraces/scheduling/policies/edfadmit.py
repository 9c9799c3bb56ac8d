"""EDF with admission control: the artifact's ``edf-accessctrl`` (ElasticFlow Fig. 9).

EDF's planner (jobs in deadline order on the timeline of future free GPUs, each
taking its cap where free, else the largest count that fits) decides, one
arrival at a time, whether the runnable jobs plus that arrival all end by
their deadlines; if not, the arrival is declined. Unlike plain EDF
(:mod:`.edf`), running jobs pay the restart overhead every round, priced by
where they sit (:mod:`.placement`).

Mirrors the artifact's round (``one_queue_edf_sim_jobs_access_control``),
including what its bookkeeping does beyond the idea:

* an admitted arrival applies that arrival's plans to every runnable job at
  once; the jobs are then laid on nodes in the runnable list's own order
  (arrivals appended), not in deadline order;
* in a round without admitted arrivals every job is planned again in
  deadline order, and that order becomes the runnable list's; a running job
  planned to get no GPUs keeps its old planned end, and ends there (with the
  work it did), as the artifact's end event for it stays in place;
* a job's end is the unaligned planned end plus the overheads charged since;
  it meets its deadline when that end is no later than the deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.policies.paidrounds import PaidRounds
from mltraces.scheduling.profiles import plain_cap
from mltraces.scheduling.results import Recorder
from mltraces.scheduling.timeline import align


@dataclass(frozen=True)
class Plan:
    """A job's EDF plan: GPUs from now, its (unaligned) end, whether that meets the deadline."""

    gpus_now: int
    end: float
    meets: bool


def plan_edf(times: list[float], free: list[int], start: float, left: float, deadline: float,
             speed: dict[int, float], columns: tuple[int, ...], cap: int, slot: float,
             total: int) -> tuple[Plan, list[float], list[int]]:
    """One job on the timeline (``times``/``free`` from ``start`` on): its plan and the
    timeline after it (compacted), step for step as the artifact's ``edf_sim_allocation``.

    Each period takes ``cap`` GPUs if that many are free, else the largest
    profiled count that fits (``columns`` in file order), else none; the GPUs
    come back at the slot boundary after the end, which overwrites the step
    there if one exists.
    """
    old = dict(zip(times, free, strict=True))
    new = dict(old)
    now_gpus = None
    event = start
    meets = True
    available = new[start]
    for at in times:
        if at < event:
            available = old[at]
            del new[at]
            continue
        if at == event:
            available = old[at]
            continue
        duration = at - event
        if available >= 1 and cap > 0:
            gpus = cap if available >= cap else _fit(columns, available)
            if now_gpus is None:
                now_gpus = gpus
            rate = _rate(speed, gpus)
            end = math.ceil(event + left / rate)
            if at >= end:  # it ends in this period, whose step is the only one it spans
                new[event] = available - gpus
                if end not in old:
                    new[align(start, end, slot)] = available
                return _done(now_gpus, end, meets and end <= deadline, new)
            left -= duration * rate
            new[event] -= gpus
        elif now_gpus is None:
            now_gpus = 0
        available = new[at]
        event = at
        if event > deadline:
            meets = False
    end = math.ceil(event + left / _rate(speed, cap))
    if now_gpus is None:
        now_gpus = cap
    new[event] = total - cap
    new[align(start, end, slot)] = total
    return _done(now_gpus, end, meets and end <= deadline, new)


def _fit(columns: tuple[int, ...], available: int) -> int:
    """The last profiled GPU count (file order) that is at most ``available``."""
    best = 0
    for gpus in columns:
        if gpus > available:
            break
        best = gpus
    return best


def _rate(speed: dict[int, float], gpus: int) -> float:
    try:
        return speed[gpus]
    except KeyError:
        raise SchedulingError(f"no throughput for {gpus} GPUs where the plan needs one") from None


def _done(gpus_now: int, end: float, meets: bool, new: dict[float, int]
          ) -> tuple[Plan, list[float], list[int]]:
    times, free = [], []
    last = -1
    for t in sorted(new):
        if new[t] != last:
            times.append(t)
            free.append(new[t])
            last = new[t]
    return Plan(gpus_now, end, meets), times, free


class EDFAdmission:
    """EDF with per-arrival admission control (the artifact's ``edf-accessctrl``)."""

    name = "edf-admission"

    def simulate(self, setup: Setup) -> Recorder:
        return _Run(setup).run()


class _Run(PaidRounds):
    """The artifact's round (lists and placement: :class:`.paidrounds.PaidRounds`)."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        curves = [setup.curve(j) for j in self.jobs]
        self.speed = [dict(c.speed) for c in curves]
        self.columns = [c.columns for c in curves]
        self.cap = [min(plain_cap(c), self.total) for c in curves]
        self.deadline = [j.deadline for j in self.jobs]
        n = len(self.jobs)
        self.left = [float(j.iterations) for j in self.jobs]
        self.gpus = [0] * n
        self.end = [0.0] * n
        self.run_until = self.end  # EDF counts a job's run up to its planned end
        self.plans: list[Plan | None] = [None] * n

    # -- the loop ----------------------------------------------------------------------
    def run(self) -> Recorder:
        events = self.events
        if not events:
            return self.rec
        now = event_time = events.first_time()
        step, idle = 0.0, 0
        admitted_any = False
        while events or self.pending:
            if not events:
                if idle > 1:
                    break  # the artifact gives up: the cluster cannot run what waits
                idle += 1
            self.progress(now, step)
            if events:
                event = events.first()
                event_time = events.first_time()
                self.finish(list(event.ends), event_time)
                admitted_any = self.admit(list(event.starts), event_time)
            if admitted_any:
                placed = [j for j in self.runnable if self.gpus[j] > 0]
            else:
                placed = self.replan(event_time)
            self.lay_out(placed, event_time)
            if events:
                events.pop_first()
            if not events:
                step = 10.0
                continue
            step, now = self.close_round(now)
        return self.rec

    def finish(self, ends: list[int], now: float) -> None:
        for j in ends:
            if self.is_running[j]:
                self.running.remove(j)
                self.is_running[j] = False
            if j in self.runnable:
                self.runnable.remove(j)
            self.rec.finished(j, self.end[j], now, self.end[j] <= self.deadline[j])
            self.gpus[j] = 0

    def admit(self, starts: list[int], now: float) -> bool:
        """Each arrival in turn: admitted if every plan with it meets its deadline."""
        admitted_any = False
        for s in starts:
            order = sorted([*self.runnable, s], key=self.deadline.__getitem__)
            if not self.estimate(order, now):
                self.rec.reject(s)
                continue
            self.pending.append(s)
            self.runnable.append(s)
            admitted_any = True
            for j in self.running:
                self.apply(j, now)
            starting = []
            for j in self.pending:
                self.gpus[j] = self.plans[j].gpus_now
                self.end[j] = self.plans[j].end
                if self.gpus[j] > 0:
                    starting.append(j)
            for j in starting:
                self.start(j, now)
                self.events.add_end(j, self.end[j])
        return admitted_any

    def replan(self, now: float) -> list[int]:
        """No arrival admitted: every runnable job planned again, in deadline order."""
        self.runnable.sort(key=self.deadline.__getitem__)
        self.estimate(self.runnable, now)
        placed = []
        for j in self.runnable:
            self.gpus[j] = self.plans[j].gpus_now
            if not self.gpus[j]:
                continue  # its end (and end event) stay where they were
            placed.append(j)
            if not self.is_running[j]:
                self.start(j, now)
                self.events.add_end(j, self.end[j])
            self.apply_end(j)
        return placed

    def estimate(self, order: list[int], now: float) -> bool:
        """Plan ``order`` (deadline order) on an empty timeline; whether all meet."""
        times, free = [now], [self.total]
        meets = True
        for j in order:
            plan, times, free = plan_edf(times, free, now, self.left[j], self.deadline[j],
                                         self.speed[j], self.columns[j], self.cap[j],
                                         self.slot, self.total)
            self.plans[j] = plan
            meets = meets and plan.meets
        return meets

    def apply(self, j: int, now: float) -> None:
        self.gpus[j] = self.plans[j].gpus_now
        self.apply_end(j)

    def apply_end(self, j: int) -> None:
        old, self.end[j] = self.end[j], self.plans[j].end
        self.events.move_end(j, old, self.end[j])
