"""The shared event-driven engine for policies that only decide allocations.

Subclass :class:`AllocationPolicy` and write ``allocate(now, view)``: given
the cluster and the jobs that have arrived and not finished, return how many
GPUs each job should hold from now on. The engine does the rest — arrivals
(optionally turned away by ``admit``), progress (iterations at the profiled
throughput of the granted GPU count, or seconds of a duration-only job while
it holds the GPUs it asked for), exact completion times, and bookkeeping.
Policies are called at every arrival and completion, and every ``quantum``
seconds if they set one. There is no restart overhead here.

>>> class LargestFirst(AllocationPolicy):
...     name = "largest-first"
...     def allocate(self, now, view):
...         grant, free = {}, view.total_gpus
...         for job in sorted(view.active, key=lambda j: -j.num_gpu):
...             if job.num_gpu <= free:
...                 grant[job.index] = job.num_gpu
...                 free -= job.num_gpu
...         return grant
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.jobs import Job
from mltraces.scheduling.results import Recorder


@dataclass
class View:
    """What a policy sees at a scheduling point (read-only by convention).

    Attributes:
        now: The current time.
        total_gpus: GPUs in the cluster.
        active: Arrived, admitted, unfinished jobs, in arrival order.
        gpus: GPUs each active job holds now (job index → count; absent = 0).
        done_fraction: Share of each active job's work already done.
    """

    now: float
    total_gpus: int
    active: list[Job]
    gpus: dict[int, int]
    done_fraction: dict[int, float]
    _engine: _Engine

    def running(self) -> list[Job]:
        return [j for j in self.active if self.gpus.get(j.index, 0)]

    def waiting(self) -> list[Job]:
        return [j for j in self.active if not self.gpus.get(j.index, 0)]

    def free_gpus(self) -> int:
        return self.total_gpus - sum(self.gpus.values())

    def seconds_left(self, job: Job, gpus: int | None = None) -> float:
        """Run time still needed on ``gpus`` GPUs (default: the count it asked for)."""
        rate = self._engine.rate(job, job.num_gpu if gpus is None else gpus)
        left = self._engine.left[job.index]
        return left / rate if rate > 0 else math.inf

    def allowed_gpus(self, job: Job) -> tuple[int, ...]:
        """GPU counts the job can run on (its request only, for duration-only jobs)."""
        return self._engine.allowed(job)


class AllocationPolicy:
    """Base class: decide allocations, let the shared engine run the trace."""

    name = "allocation-policy"
    #: call ``allocate`` at least every this many seconds (None: only on events)
    quantum: float | None = None

    def admit(self, now: float, arrivals: Sequence[Job], view: View) -> Sequence[bool]:
        """Whether each arriving job is accepted (default: all)."""
        return [True] * len(arrivals)

    def allocate(self, now: float, view: View) -> Mapping[int, int]:
        """GPUs per active job (job index → count) from ``now`` on; omitted jobs get 0."""
        raise NotImplementedError

    def simulate(self, setup: Setup) -> Recorder:
        return _Engine(setup, self).run()


class _Engine:
    def __init__(self, setup: Setup, policy: AllocationPolicy) -> None:
        self.setup = setup
        self.policy = policy
        self.jobs = setup.jobs
        self.rec = Recorder(self.jobs)
        self.work = [
            j.iterations if j.iterations == j.iterations else j.duration for j in self.jobs
        ]
        self.left = list(self.work)

    def allowed(self, job: Job) -> tuple[int, ...]:
        if job.iterations == job.iterations:
            return self.setup.curve(job).allowed
        return (job.num_gpu,)

    def rate(self, job: Job, gpus: int) -> float:
        """Work per second on ``gpus`` GPUs (iterations/s, or 1 s/s at the asked count)."""
        if gpus <= 0:
            return 0.0
        if job.iterations == job.iterations:
            return self.setup.curve(job).speed.get(gpus, 0.0)
        return 1.0 if gpus == job.num_gpu else 0.0

    def run(self) -> Recorder:
        jobs, total = self.jobs, self.setup.gpus
        arrivals = [(j.submit_time, j.index) for j in jobs]
        heapq.heapify(arrivals)
        active: list[int] = []
        gpus: dict[int, int] = {}
        last = arrivals[0][0] if arrivals else 0.0
        quantum = self.policy.quantum
        while arrivals or active:
            now = self.next_time(arrivals, active, gpus, last, quantum)
            self.advance(active, gpus, now - last)
            last = now
            for j in [j for j in active if self.left[j] <= 1e-9 * self.work[j]]:
                active.remove(j)
                gpus.pop(j, None)
                self.rec.finished(j, now, now)
            came = []
            while arrivals and arrivals[0][0] <= now:
                came.append(jobs[heapq.heappop(arrivals)[1]])
            if came:
                view = self.view(now, active, gpus)
                for job, ok in zip(came, self.policy.admit(now, came, view), strict=True):
                    if ok and job.num_gpu <= total:
                        active.append(job.index)
                    else:
                        self.rec.reject(job.index)
            if active:
                gpus = self.decide(now, active, gpus)
        return self.rec

    def next_time(self, arrivals, active, gpus, last, quantum) -> float:
        """The next arrival, completion or quantum tick."""
        t = arrivals[0][0] if arrivals else math.inf
        for j in active:
            rate = self.rate(self.jobs[j], gpus.get(j, 0))
            if rate > 0:
                t = min(t, last + self.left[j] / rate)
        if quantum and active:
            t = min(t, last + quantum)
        if t == math.inf:
            raise SchedulingError(
                f"policy {self.policy.name!r} left {len(active)} jobs without GPUs and nothing "
                "else will happen; allocate() must give GPUs to some waiting job"
            )
        return max(t, last)

    def advance(self, active, gpus, seconds: float) -> None:
        if seconds <= 0:
            return
        for j in active:
            rate = self.rate(self.jobs[j], gpus.get(j, 0))
            if rate:
                self.left[j] = max(self.left[j] - rate * seconds, 0.0)

    def view(self, now, active, gpus) -> View:
        done = {j: 1.0 - self.left[j] / self.work[j] if self.work[j] else 1.0 for j in active}
        return View(now, self.setup.gpus, [self.jobs[j] for j in active], dict(gpus), done, self)

    def decide(self, now, active, gpus) -> dict[int, int]:
        wanted = self.policy.allocate(now, self.view(now, active, gpus))
        grant = {j: int(g) for j, g in wanted.items() if g}
        unknown = set(grant) - set(active)
        if unknown:
            raise SchedulingError(
                f"policy {self.policy.name!r} allocated GPUs to jobs that are not active: "
                f"{sorted(unknown)[:5]}"
            )
        used = sum(grant.values())
        if used > self.setup.gpus:
            raise SchedulingError(
                f"policy {self.policy.name!r} allocated {used} GPUs at t={now}; the cluster "
                f"has {self.setup.gpus}"
            )
        for j in active:
            self.rec.set_gpus(j, now, grant.get(j, 0))
        return grant


class FIFO(AllocationPolicy):
    """First in, first out, non-preemptive; the head job waits until its GPUs are free.

    Jobs get the GPU count they asked for, in arrival order; a job that does not
    fit blocks the ones behind it (as the artifact's ``fifo``).
    """

    name = "fifo"

    def order(self, view: View) -> list[Job]:
        return view.waiting()

    def allocate(self, now: float, view: View) -> dict[int, int]:
        grant = {j.index: g for j, g in ((j, view.gpus.get(j.index, 0)) for j in view.active) if g}
        free = view.total_gpus - sum(grant.values())
        for job in self.order(view):
            if job.num_gpu > free:
                break
            grant[job.index] = job.num_gpu
            free -= job.num_gpu
        return grant


class SJF(FIFO):
    """Shortest job first, non-preemptive: waiting jobs by run time at their request.

    The run time is the trace's duration for duration-only jobs, and iterations
    / throughput at the requested GPU count otherwise; the shortest waiting job
    that does not fit blocks the rest, as in FIFO.
    """

    name = "sjf"

    def order(self, view: View) -> list[Job]:
        return sorted(view.waiting(), key=view.seconds_left)
