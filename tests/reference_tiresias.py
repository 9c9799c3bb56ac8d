"""Tiresias's event loop as the reference runs it, every running job visited at every event.

This is mltraces' Tiresias before its loop was made incremental (commit e672374),
kept in the tests as the oracle the incremental loop is checked against, job
by job, on random traces (it matches the artifact on every trace the artifact
runs here). It is not part of the package.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.results import Recorder

PENDING, RUNNING = 1, 2


@dataclass(frozen=True)
class ReferenceTiresias:
    """The event-by-event loop, as a policy."""

    thresholds: tuple[float, ...] = (3250, 7200)
    name: str = "tiresias"

    def simulate(self, setup: Setup) -> Recorder:
        return _TiresiasRun(setup, self.thresholds).run()


class _TiresiasRun:
    """The event loop. Per event only the running jobs are visited, in the
    reference's order (GPUs descending, then arrival; ``runnable`` is kept in that
    order, as its stable re-sort each event leaves it).

    A running job was checked at the previous event (every runnable job is, and
    a job starts only after that event's check), so the seconds it gained are
    the time since the previous event, less its overhead: no per-job "last
    check" is kept. The reference's total and executed seconds never differ,
    so one list serves both.
    """

    def __init__(self, setup: Setup, thresholds: tuple[float, ...]) -> None:
        self.setup = setup
        self.jobs = setup.jobs
        self.limits = thresholds
        self.rec = Recorder(self.jobs)
        n = len(self.jobs)
        self.cluster_gpus = setup.gpus
        self.status = [0] * n
        self.queue = [0] * n
        self.executed = [0] * n
        self.overhead = [0.0] * n
        self.end = [0] * n
        self.gpus = [j.num_gpu for j in self.jobs]
        self.duration = [j.duration for j in self.jobs]
        self.start_cost, self.restart_cost = self._costs(setup)
        self.is_restart = lambda rounds: setup.overhead.is_restart(rounds, setup.slot)
        self.order = [0] * n  # position in the runnable order: GPUs descending, then arrival
        self.runnable: list[int] = []
        self.running: list[int] = []  # the running jobs, in runnable order
        self.queues: list[list[int]] = [[] for _ in range(len(thresholds) + 1)]
        self.arrivals = EventQueue()
        for job in self.jobs:
            if job.num_gpu > setup.gpus:
                self.rec.reject(job.index)  # could never run; the reference would stall
            else:
                self.arrivals.add_start(job.index, job.submit_time)
        self.rounds = 0
        self.admitted = 0
        self.demand = 0  # GPUs the runnable jobs ask for
        # jobs whose overhead was priced since the last check (None: all running ones,
        # after a restart round); every other running job's overhead is 0
        self.charged: list[int] | None = []
        self.all_running = True
        self.last_now = 0.0

    def _costs(self, setup: Setup) -> tuple[list[float], list[float]]:
        """Each job's overhead on a plain and on a restart round (priced once per size)."""
        cost, total = setup.overhead.cost, setup.gpus
        plain = {g: cost(g, total, restart=False) for g in set(self.gpus)}
        restart = {g: cost(g, total, restart=True) for g in set(self.gpus)}
        return [plain[g] for g in self.gpus], [restart[g] for g in self.gpus]

    def run(self) -> Recorder:
        arrivals, slot, inf = self.arrivals, self.setup.slot, math.inf
        end_time, end_jobs = inf, []
        jump = inf
        while arrivals or self.runnable:
            if not arrivals and not end_jobs:
                break  # the reference stops here too: nothing left can start
            start_time = arrivals.first_time() if arrivals else inf
            starts, ends = [], []
            now = min(start_time, end_time)
            if end_time <= start_time:
                ends = end_jobs
            if start_time <= end_time:
                starts = arrivals.first().starts
            if now > jump:
                now, starts, ends = jump, [], []
            elif starts:
                arrivals.pop_first()
            if ends:
                self.finish(ends, now)
            if starts:
                self.admit(starts)
            self.account(now)
            self.schedule(now)
            end_time, end_jobs, demotion = self.next_end(now, slot)
            jump = max(demotion, now + slot)
            if arrivals:
                arrivals.merge_slot(now, slot)
        return self.rec

    def finish(self, ends: list[int], now: float) -> None:
        for j in ends:
            self.status[j] = 0
            self.demand -= self.gpus[j]
            self.rec.finished(j, self.end[j], now)
            self.runnable.remove(j)
            self.running.remove(j)
            self.queues[self.queue[j]].remove(j)

    def admit(self, starts: list[int]) -> None:
        order, gpus, queue = self.order, self.gpus, self.queues[0]
        self.all_running = False
        for j in starts:
            self.demand += gpus[j]
            self.status[j] = PENDING
            self.queue[j] = 0
            queue.append(j)
            self.admitted += 1
            order[j] = (-gpus[j], self.admitted)
            bisect.insort_right(self.runnable, j, key=order.__getitem__)

    def account(self, now: float) -> None:
        """Credit running jobs with the seconds since the last check; demote."""
        elapsed = int(now - self.last_now)
        self.last_now = now
        whole = elapsed if elapsed > 0 else 0
        last_queue = len(self.queues) - 1
        overhead, executed, queue, gpus, limits = (
            self.overhead,
            self.executed,
            self.queue,
            self.gpus,
            self.limits,
        )
        status, charged = self.status, self.charged
        for j in self.running if charged is None else charged:
            if status[j] == RUNNING:  # (a job priced at its start may have ended since)
                gained = elapsed - overhead[j]
                if gained < 0:
                    gained = 0
                # whole seconds on whole seconds: the loop below adds ``whole`` back
                executed[j] = int(executed[j] + gained) - whole
                overhead[j] = 0
        self.charged = []
        for j in self.running:
            executed[j] += whole
            q = queue[j]
            if q < last_queue and executed[j] * gpus[j] >= limits[q]:
                queue[j] = q + 1
                self.queues[q + 1].append(j)
                self.queues[q].remove(j)

    def schedule(self, now: float) -> None:
        """Serve the queues in order, first fit; preempt running jobs that no longer fit.

        Jobs left waiting move behind the running ones of their queue. When the
        runnable jobs' GPUs add up to no more than the cluster, all of them fit
        whatever the order: only the waiting ones need a visit.
        """
        restart = self.is_restart(self.rounds)
        self.rounds += 1
        if self.demand > self.cluster_gpus:
            self.first_fit(now, restart)
        elif not self.all_running:
            self.start_waiting(now, restart)
        self.restart = restart

    def start(self, j: int, now: float, restart: bool) -> None:
        self.status[j] = RUNNING
        self.overhead[j] = (self.restart_cost if restart else self.start_cost)[j]
        if self.charged is not None:
            self.charged.append(j)
        self.rec.set_gpus(j, now, self.gpus[j])

    def start_waiting(self, now: float, restart: bool) -> None:
        status = self.status
        for queue in self.queues:
            for j in queue:
                if status[j] == PENDING:
                    self.start(j, now, restart)
        self.running = list(self.runnable)
        self.all_running = True

    def first_fit(self, now: float, restart: bool) -> None:
        status, gpus, rec = self.status, self.gpus, self.rec
        free = self.cluster_gpus
        changed = False
        self.all_running = True
        for queue in self.queues:
            waiting = []
            for j in queue:
                need = gpus[j]
                if free >= need:
                    if status[j] == PENDING:
                        self.start(j, now, restart)
                        changed = True
                    free -= need
                else:
                    if status[j] == RUNNING:
                        status[j] = PENDING
                        rec.set_gpus(j, now, 0)
                        changed = True
                    waiting.append(j)
            if waiting:
                queue[:] = [j for j in queue if status[j] == RUNNING] + waiting
                self.all_running = False
        if changed:
            self.running = [j for j in self.runnable if status[j] == RUNNING]

    def next_end(self, now: float, slot: float) -> tuple[float, list[int], float]:
        """The earliest planned end (at least a slot away), the jobs ending then, and when
        the next running job is due for demotion (the reference's estimate)."""
        first, ending, demotion = math.inf, [], math.inf
        executed, end, gpus, duration = self.executed, self.end, self.gpus, self.duration
        queue, limits, last_queue = self.queue, self.limits, len(self.queues) - 1
        restart, soon = self.restart, now + slot
        for j in self.running:
            remaining = duration[j] - executed[j]
            if restart:
                self.overhead[j] = self.restart_cost[j]
                remaining += self.overhead[j]
            at = int(now + remaining)
            when = soon if soon > at else at
            if when < first:
                first, ending = when, [j]
                end[j] = at
            elif when == first:
                end[j] = at
                ending.append(j)
            q = queue[j]
            if q < last_queue:
                due = int(math.ceil((limits[q] - executed[j]) / gpus[j]) + now)
                if due < demotion:
                    demotion = due
        if restart:
            self.charged = None
        return first, ending, demotion
