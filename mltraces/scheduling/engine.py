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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.jobs import Job
from mltraces.scheduling.results import Recorder


class _DoneFractions(Mapping[int, float]):
    """Share of each active job's work done, computed when asked for (a view is built at
    every event; most policies never read this)."""

    def __init__(self, engine: _Engine, active: Sequence[int], now: float) -> None:
        self._engine, self._active, self._now = engine, active, now

    def __getitem__(self, j: int) -> float:
        if j not in self._active:
            raise KeyError(j)
        work = self._engine.work[j]
        return 1.0 - self._engine.left_at(j, self._now) / work if work else 1.0

    def __iter__(self) -> Iterator[int]:
        return iter(self._active)

    def __len__(self) -> int:
        return len(self._active)


@dataclass
class View:
    """What a policy sees at a scheduling point (read-only by convention).

    Attributes:
        now: The current time (seconds on the replay's clock, see ``Setup.origin``).
        total_gpus: GPUs in the cluster.
        active: Arrived, admitted, unfinished jobs, in arrival order.
        gpus: GPUs each active job holds now (job index → count; absent = 0).
        done_fraction: Share of each active job's work already done.
    """

    now: float
    total_gpus: int
    active: list[Job]
    gpus: dict[int, int]
    done_fraction: Mapping[int, float]
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
        left = self._engine.left_at(job.index, self.now)
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
    """The event loop: arrivals, completions and quantum ticks, in time order.

    A job's progress is kept as the work left when its GPU count last changed
    and the rate since then, so its completion time is exact (a heap holds
    them) and no event can leave the clock where it was: a job completes at
    the first event at or after its completion time, whatever the clock's
    magnitude. (Subtracting ``rate × step`` at every event, as before, left
    work below what one float step can represent at epoch-second clocks, and
    the clock stopped.)
    """

    def __init__(self, setup: Setup, policy: AllocationPolicy) -> None:
        self.setup = setup
        self.policy = policy
        self.jobs = setup.jobs
        self.rec = Recorder(self.jobs)
        columns = setup.jobs
        self.timed = np.isnan(columns.iterations).tolist()  # duration-only jobs
        self.work = np.where(columns.iterations == columns.iterations, columns.iterations,
                             columns.duration).tolist()
        n = len(self.work)
        self.left = list(self.work)  # work left at ``since``
        self.since = [0.0] * n
        self.speed = [0.0] * n  # work per second on the GPUs held
        self.version = [0] * n
        self.completions: list[tuple[float, int, int]] = []

    def allowed(self, job: Job) -> tuple[int, ...]:
        if not self.timed[job.index]:
            return self.setup.curve(job).allowed
        return (job.num_gpu,)

    def rate(self, job: Job, gpus: int) -> float:
        """Work per second on ``gpus`` GPUs (iterations/s, or 1 s/s at the asked count)."""
        if gpus <= 0:
            return 0.0
        if not self.timed[job.index]:
            return self.setup.curve(job).speed.get(gpus, 0.0)
        return 1.0 if gpus == job.num_gpu else 0.0

    def left_at(self, j: int, now: float) -> float:
        if not self.speed[j]:
            return self.left[j]
        return max(self.left[j] - self.speed[j] * (now - self.since[j]), 0.0)

    def run(self) -> Recorder:
        jobs, total = self.jobs, self.setup.gpus
        submit = self.jobs.submit_time
        arrivals = np.lexsort((np.arange(len(submit)), submit)).tolist()
        times = submit[arrivals].tolist()
        k = 0
        active: dict[int, None] = {}  # admission order
        gpus: dict[int, int] = {}
        last = times[0] if times else 0.0
        while k < len(times) or active:
            now = self.next_time(times[k] if k < len(times) else math.inf, len(active), last)
            for j in self.completed(now):
                del active[j]
                gpus.pop(j, None)
                self.rec.finished(j, now, now)
            last = now
            came = []
            while k < len(times) and times[k] <= now:
                came.append(jobs[arrivals[k]])
                k += 1
            if came:
                view = self.view(now, active, gpus)
                for job, ok in zip(came, self.policy.admit(now, came, view), strict=True):
                    if ok and job.num_gpu <= total:
                        active[job.index] = None
                    else:
                        self.rec.reject(job.index)
            if active:
                gpus = self.decide(now, active, gpus)
        return self.rec

    def next_time(self, arrival: float, active: int, last: float) -> float:
        """The next arrival, completion or quantum tick (never before ``last``)."""
        t = arrival
        ends = self.completions
        while ends and ends[0][1] != self.version[ends[0][2]]:
            heapq.heappop(ends)
        if ends and ends[0][0] < t:
            t = ends[0][0]
        quantum = self.policy.quantum
        if quantum and active:
            tick = last + quantum
            if not tick > last:
                raise SchedulingError(
                    f"policy {self.policy.name!r} asks to be called every {quantum} s, which "
                    f"the clock cannot resolve at t={last}"
                )
            t = min(t, tick)
        if t == math.inf and active:
            raise SchedulingError(
                f"policy {self.policy.name!r} left {active} jobs without GPUs and nothing "
                "else will happen; allocate() must give GPUs to some waiting job"
            )
        return max(t, last)

    def completed(self, now: float) -> list[int]:
        """The jobs whose work is done by ``now``, in admission order."""
        ends, version, done = self.completions, self.version, []
        while ends and ends[0][0] <= now:
            _, stamp, j = heapq.heappop(ends)
            if stamp == version[j]:
                done.append(j)
                version[j] += 1
        return sorted(done)

    def set_gpus(self, j: int, now: float, gpus: int) -> None:
        """Job ``j`` runs on ``gpus`` GPUs from ``now`` on: settle its work, plan its end."""
        if self.speed[j]:
            self.left[j] = self.left_at(j, now)
        self.since[j] = now
        speed = self.speed[j] = self.rate(self.jobs[j], gpus)
        self.version[j] += 1
        if speed > 0:
            heapq.heappush(self.completions, (now + self.left[j] / speed, self.version[j], j))
        self.rec.set_gpus(j, now, gpus)

    def view(self, now, active, gpus) -> View:
        return View(now, self.setup.gpus, [self.jobs[j] for j in active], dict(gpus),
                    _DoneFractions(self, active, now), self)

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
            if grant.get(j, 0) != gpus.get(j, 0):
                self.set_gpus(j, now, grant.get(j, 0))
        return grant
