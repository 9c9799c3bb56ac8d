"""Tiresias (2D-LAS): preemptive multi-level queues on attained GPU-time, rigid GPU counts.

Jobs run on the GPU count they asked for and their work is the trace's
duration in seconds (so duration-only traces work too). A job starts in queue
0 and is demoted once its executed seconds × GPUs pass 3,250 and then 7,200
GPU-seconds; queues are served in order, first-fit in FIFO order within a
queue (a job that does not fit is skipped, not waited for), and running jobs
that no longer fit are preempted. (Re)starting costs the restart overhead.

Scheduling points are arrivals (merged into slots), the earliest planned end
(at least a slot away) and the earliest queue demotion. Mirrors the
artifact's ``--schedule=dlas-gpu``, including how it estimates the next
demotion: (threshold − executed seconds) / GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.results import Recorder

PENDING, RUNNING = 1, 2


@dataclass(frozen=True)
class Tiresias:
    """Discretised 2D-LAS with GPU-time thresholds (the artifact's ``dlas-gpu``)."""

    thresholds: tuple[float, ...] = (3250, 7200)
    name: str = "tiresias"

    def simulate(self, setup: Setup) -> Recorder:
        return _TiresiasRun(setup, self.thresholds).run()


class _TiresiasRun:
    def __init__(self, setup: Setup, thresholds: tuple[float, ...]) -> None:
        self.setup = setup
        self.jobs = setup.jobs
        self.limits = thresholds
        self.rec = Recorder(self.jobs)
        n = len(self.jobs)
        self.status = [0] * n
        self.queue = [0] * n
        self.executed = [0] * n
        self.total = [0] * n
        self.last_check = [0] * n
        self.overhead = [0.0] * n
        self.end = [0] * n
        self.gpus = [j.num_gpu for j in self.jobs]
        self.runnable: list[int] = []
        self.queues: list[list[int]] = [[] for _ in range(len(thresholds) + 1)]
        self.arrivals = EventQueue()
        for job in self.jobs:
            if job.num_gpu > setup.gpus:
                self.rec.reject(job.index)  # could never run; the reference would stall
            else:
                self.arrivals.add_start(job.index, job.submit_time)
        self.rounds = 0

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
            self.finish(ends, now)
            self.admit(starts)
            self.account(now)
            self.schedule(now)
            end_time, end_jobs = self.next_end(now, slot)
            jump = max(self.next_demotion(now), now + slot)
            if arrivals:
                arrivals.merge_slot(now, slot)
        return self.rec

    def finish(self, ends: list[int], now: float) -> None:
        for j in ends:
            self.status[j] = 0
            self.rec.finished(j, self.end[j], now)
            self.runnable.remove(j)
            self.queues[self.queue[j]].remove(j)

    def admit(self, starts: list[int]) -> None:
        for j in starts:
            self.status[j] = PENDING
            self.last_check[j] = self.jobs[j].submit_time
            self.queue[j] = 0
            self.queues[0].append(j)
            self.runnable.append(j)

    def account(self, now: float) -> None:
        """Credit running jobs with the seconds since the last check; demote."""
        last_queue = len(self.queues) - 1
        status, last_check, overhead = self.status, self.last_check, self.overhead
        total, executed, queue, gpus = self.total, self.executed, self.queue, self.gpus
        for j in self.runnable:
            if status[j] == RUNNING:
                gained = int(now - last_check[j]) - overhead[j]
                if gained < 0:
                    gained = 0
                total[j] = int(total[j] + gained)
                executed[j] = int(executed[j] + gained)
                overhead[j] = 0
                q = queue[j]
                if q < last_queue and int(executed[j] * gpus[j]) >= self.limits[q]:
                    queue[j] = q + 1
                    self.queues[q + 1].append(j)
                    self.queues[q].remove(j)
            last_check[j] = now

    def schedule(self, now: float) -> None:
        setup, status = self.setup, self.status
        restart = setup.overhead.is_restart(self.rounds)
        self.rounds += 1
        free = setup.gpus
        for queue in self.queues:
            for j in queue:
                gpus = self.gpus[j]
                if free >= gpus:
                    if status[j] == PENDING:
                        status[j] = RUNNING
                        self.overhead[j] = setup.overhead.cost(gpus, setup.gpus, restart=restart)
                        self.rec.set_gpus(j, now, gpus)
                    free -= gpus
                elif status[j] == RUNNING:
                    status[j] = PENDING
                    self.rec.set_gpus(j, now, 0)
        self.runnable.sort(key=self.gpus.__getitem__, reverse=True)
        for queue in self.queues:
            waiting = [j for j in queue if status[j] == PENDING]
            if waiting:
                queue[:] = [j for j in queue if status[j] != PENDING] + waiting
        self.restart = restart

    def next_end(self, now: float, slot: float) -> tuple[float, list[int]]:
        """The earliest planned end (at least a slot away) and the jobs ending then."""
        setup, first, ending = self.setup, math.inf, []
        status, total, end, gpus = self.status, self.total, self.end, self.gpus
        restart, soon = self.restart, now + slot
        for j in self.runnable:
            if status[j] != RUNNING:
                continue
            remaining = self.jobs[j].duration - total[j]
            if restart:
                self.overhead[j] = setup.overhead.cost(gpus[j], setup.gpus, restart=True)
                remaining += self.overhead[j]
            at = int(now + remaining)
            when = soon if soon > at else at
            if when < first:
                first, ending = when, [j]
                end[j] = at
            elif when == first:
                end[j] = at
                ending.append(j)
        return first, ending

    def next_demotion(self, now: float) -> float:
        """When the next running job is due for demotion (the reference's estimate)."""
        jump, last_queue = math.inf, len(self.queues) - 1
        status, queue, executed, gpus, limits = (
            self.status,
            self.queue,
            self.executed,
            self.gpus,
            self.limits,
        )
        for j in self.runnable:
            q = queue[j]
            if status[j] == RUNNING and q < last_queue:
                at = int(math.ceil((limits[q] - executed[j]) / gpus[j]) + now)
                if at < jump:
                    jump = at
        return jump
