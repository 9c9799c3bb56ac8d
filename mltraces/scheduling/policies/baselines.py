"""The baselines on the shared engine: FIFO and SJF, rigid and non-preemptive.

Both are :class:`~mltraces.scheduling.engine.AllocationPolicy` subclasses, so a
variant that changes ``order``, ``allocate`` or ``admit`` runs on the shared engine;
the plain ones are replayed by a queue and a heap of ends (:func:`_replay_in_order`),
which gives the engine's results at n log n cost.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.engine import AllocationPolicy, View, _Engine
from mltraces.scheduling.jobs import Job
from mltraces.scheduling.results import Recorder


class FIFO(AllocationPolicy):
    """First in, first out, non-preemptive; the head job waits until its GPUs are free.

    Jobs get the GPU count they asked for, in arrival order; a job that does not
    fit blocks the ones behind it (as the artifact's ``fifo``). Replayed by a
    queue and a heap of ends (:func:`_replay_in_order`), which gives the shared
    engine's results at a cost that grows as n log n in the jobs, bursts
    included; a subclass that changes ``order``, ``allocate`` or ``admit`` runs
    on the shared engine.
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

    def simulate(self, setup: Setup) -> Recorder:
        kind = type(self)
        plain = (kind.allocate is FIFO.allocate and kind.admit is AllocationPolicy.admit
                 and kind.order in (FIFO.order, SJF.order) and not self.quantum)
        if not plain:
            return _Engine(setup, self).run()
        return _replay_in_order(setup, shortest_first=kind.order is SJF.order)


class SJF(FIFO):
    """Shortest job first, non-preemptive: waiting jobs by run time at their request.

    The run time is the trace's duration for duration-only jobs, and iterations
    / throughput at the requested GPU count otherwise; the shortest waiting job
    that does not fit blocks the rest, as in FIFO.
    """

    name = "sjf"

    def order(self, view: View) -> list[Job]:
        return sorted(view.waiting(), key=view.seconds_left)


def _replay_in_order(setup: Setup, *, shortest_first: bool) -> Recorder:
    """FIFO (or SJF) on a queue of waiting jobs and a heap of running ones' ends.

    The same events and arithmetic as the shared engine running the policy's
    ``allocate`` (a job's end is its start plus its work over its rate), in
    O(log n) per job instead of a visit to every active job at every event.
    """
    jobs, rec, total = setup.jobs, Recorder(setup.jobs), setup.gpus
    n = len(jobs)
    gpus = jobs.num_gpu.tolist()
    fits = jobs.num_gpu <= total
    work = np.where(jobs.iterations == jobs.iterations, jobs.iterations, jobs.duration).tolist()
    name = "sjf" if shortest_first else "fifo"
    speed = setup.speed_at_request(fits, policy=name).tolist()
    arrivals = np.lexsort((np.arange(n), jobs.submit_time)).tolist()
    times = jobs.submit_time[arrivals].tolist()
    waiting: deque[int] | list[tuple[float, int, int]] = [] if shortest_first else deque()
    running: list[tuple[float, int]] = []  # (end, job)
    free, k, last, inf = total, 0, times[0] if n else 0.0, math.inf
    while k < n or waiting or running:
        now = times[k] if k < n else inf
        if running and running[0][0] < now:
            now = running[0][0]
        now = last = now if now > last else last
        while running and running[0][0] <= now:
            j = heapq.heappop(running)[1]
            free += gpus[j]
            rec.finished(j, now, now)
        while k < n and times[k] <= now:
            j = arrivals[k]
            k += 1
            if not fits[j]:
                rec.reject(j)
            elif shortest_first:  # by run time, then arrival (the engine's stable sort)
                heapq.heappush(waiting, (work[j] / speed[j], k, j))
            else:
                waiting.append(j)  # type: ignore[union-attr]
        while waiting:
            j = waiting[0][-1] if shortest_first else waiting[0]  # type: ignore[index]
            if gpus[j] > free:
                break
            if shortest_first:
                heapq.heappop(waiting)  # type: ignore[arg-type]
            else:
                waiting.popleft()  # type: ignore[union-attr]
            free -= gpus[j]
            rec.set_gpus(j, now, gpus[j])
            heapq.heappush(running, (now + work[j] / speed[j], j))
    return rec
