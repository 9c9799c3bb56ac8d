"""EDF + elastic scaling: ElasticFlow without admission control (the artifact's ``ef``, Fig. 9).

Every arrival is accepted. Each round, every runnable job is planned with
ElasticFlow's planner (deadline order, backwards from each deadline, see
:mod:`.efcore`) and the free GPUs are handed out by marginal return, as in
:mod:`.elasticflow`; jobs pay the same per-round overheads.

Mirrors the artifact's round (``ef_sim_jobs``), which differs from its
ElasticFlow round in more than the admission test:

* a job meets its deadline when its planned end (slot-aligned, plus the
  overheads charged since) is no later than the deadline, not its unaligned
  end; that end is the finish time recorded here;
* a waiting job planned to start later wakes a round at that time, and
  every running job wakes one at its next planned change of GPUs (ElasticFlow
  wakes only the earliest, and only before the next event); a wake-up left
  without jobs vanishes when a job's planned end moves away from it;
* jobs are laid on nodes in the order they started (jobs of a node or more
  first, then smaller ones by size), not largest first.

The planner and the scale-up are ElasticFlow's compiled ones; the round
around them is interpreted. Where the artifact would stop on an error (a job
its end event finds without GPUs: ``release_job_res`` of a job never placed),
the job just ends there.
"""

from __future__ import annotations

import math

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.elasticflow import model_tables
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.placement import NodeSets
from mltraces.scheduling.results import Recorder


class EDFElastic:
    """ElasticFlow's elastic scaling without its admission control (the artifact's ``ef``)."""

    name = "edf-elastic"

    def simulate(self, setup: Setup) -> Recorder:
        return _Run(setup).run()


class _Run:
    """The artifact's ``ef`` round, with its lists: ``running`` in start order,
    ``pending`` in arrival order, ``runnable`` in the order the last planning and
    scale-up left it."""

    def __init__(self, setup: Setup) -> None:
        from mltraces.scheduling import efcore  # numba loads only when this policy runs

        self.efcore = efcore
        self.setup = setup
        self.jobs = setup.jobs
        self.total, self.slot = setup.gpus, float(setup.slot)
        self.rec = setup.recorder()
        tables, self.speeds = model_tables(setup)
        self.model = tables.model
        self.tables = tables.arrays()
        n = len(self.jobs)
        self.deadline = np.array([j.deadline for j in self.jobs], np.float64)
        self.left = np.array([float(j.iterations) for j in self.jobs])
        self.gpus = np.zeros(n, np.int64)
        self.end = np.zeros(n)
        self.real_end = np.zeros(n)
        self.overhead = np.zeros(n)
        self.cached = [False] * n
        self.is_running = [False] * n
        self.running: list[int] = []
        self.pending: list[int] = []
        self.runnable: list[int] = []
        self.events = EventQueue()
        for job in self.jobs:
            self.events.add_start(job.index, job.submit_time)
        self.seen: set[tuple[int, int]] = set()
        self.rounds = 0
        self.restart_every = setup.overhead.period(setup.slot)

    def run(self) -> Recorder:
        events = self.events
        if not events:
            return self.rec
        now, step = events.first_time(), 0.0
        while events:
            self.progress(now, step)
            event = events.at(now)
            if event is None:
                break  # nothing due now: only waiting jobs without a wake-up (the artifact fails)
            self.finish(list(event.ends), now)
            for j in event.starts:
                self.pending.append(j)
                self.runnable.append(j)
            planned = self.plan(now)
            if events.at(now) is not None:
                events.remove(now)
            self.start_planned(planned, now)
            next_change = self.scale_up(planned, now)
            for j in self.running:
                if next_change[j] < math.inf:
                    events.add_empty(next_change[j])
            self.place(now)
            if not events:
                break
            self.charge_overhead()
            events.merge_slot(now, self.slot)
            nxt = events.first_time()
            step, now = float(int(nxt - now)), nxt
        return self.rec

    # -- the steps of a round ------------------------------------------------------------
    def progress(self, now: float, step: float) -> None:
        """Advance every job holding GPUs by ``step`` seconds (after its planned end only
        until then) less its overhead; a job ahead of its plan ends at this event."""
        for j in self.runnable:
            g = int(self.gpus[j])
            if not g:
                continue
            run = step - (now - self.real_end[j] if now > self.real_end[j] else 0.0)
            run = 0.0 if run < self.overhead[j] else run - self.overhead[j]
            rate = self.speeds[j][g]
            done = run * rate
            if self.left[j] <= done and self.end[j] > now:
                finish = now - step + math.ceil(self.left[j] / rate)
                done = (self.end[j] - now + step) * rate
                self.events.move_end(j, self.end[j], now)
                self.end[j] = finish
            self.left[j] -= done
            self.overhead[j] = 0.0

    def finish(self, ends: list[int], now: float) -> None:
        """Every job in the event ends, at its planned end; on time if that meets its deadline."""
        for j in ends:
            for queue in (self.running, self.runnable, self.pending):
                if j in queue:
                    queue.remove(j)
            self.is_running[j] = False
            self.gpus[j] = 0
            self.rec.finished(j, float(self.end[j]), now, bool(self.end[j] <= self.deadline[j]))

    def plan(self, now: float) -> tuple:
        """Plan every runnable job in deadline order; the plans' GPUs now and ends apply."""
        order = sorted(self.runnable, key=self.deadline.__getitem__)
        self.runnable = order
        index = np.array(order, np.int64)
        planned = self.efcore.estimate(now, self.total, self.slot, self.left[index],
                                       self.deadline[index], self.model[index], False,
                                       *self.tables)
        ptr, ag, ends, real_ends = planned[2], planned[4], planned[5], planned[6]
        for p, j in enumerate(order):
            self.gpus[j] = ag[ptr[p]]
            self.events.move_end(j, float(self.end[j]), float(ends[p]))
            self.end[j] = ends[p]
            self.real_end[j] = real_ends[p]
        return index, planned

    def start_planned(self, planned: tuple, now: float) -> None:
        """Waiting jobs with GPUs now start; those planned to start later wake a round then."""
        index, (_, _, ptr, at, ag, *_) = planned
        position = {int(j): p for p, j in enumerate(index)}
        starting = []
        for j in self.pending:
            p = position[j]
            first = next((at[k] for k in range(ptr[p], ptr[p + 1]) if ag[k] > 0), None)
            if first is not None and first > now:
                self.events.add_empty(float(first))
            elif self.gpus[j] > 0:
                starting.append(j)
        for j in starting:
            self.start(j, now)
            self.events.add_end(j, float(self.end[j]))

    def scale_up(self, planned: tuple, now: float) -> dict[int, float]:
        """Hand out the free GPUs (:func:`.efcore.scale_up`); each job's next planned change."""
        index, (_, _, ptr, at, ag, _, _, times, free) = planned
        order, gpus, _, real_ends, started, _, taken = self.efcore.scale_up(
            now, self.total, self.slot, True, times, free, self.gpus[index], self.left[index],
            self.deadline[index], self.model[index], self.end[index], self.real_end[index],
            ptr, at, ag, *self.tables)
        next_change, step_job, step_end = taken
        for p, end in zip(step_job.tolist(), step_end.tolist(), strict=True):
            j = int(index[p])  # each step moves the job's end: a wake-up it passes can vanish
            self.events.move_end(j, float(self.end[j]), end)
            self.end[j] = end
        for p, j in enumerate(index.tolist()):
            self.gpus[j] = gpus[p]
            if started[p] and not self.is_running[j]:
                self.start(j, now)
            self.real_end[j] = real_ends[p]
        self.runnable = index[order].tolist()
        return {int(j): float(next_change[p]) for p, j in enumerate(index)}

    def start(self, j: int, now: float) -> None:
        self.pending.remove(j)
        self.running.append(j)
        self.is_running[j] = True
        self.rec.started(j, now)

    # -- where jobs sit, and what that costs ----------------------------------------------
    def place(self, now: float) -> None:
        """Lay the running jobs on nodes in start order, those of a node or more first, the
        smaller ones by size; note the GPU sets cached since the last restart; log."""
        per_node = self.setup.cluster.gpus_per_node
        nodes = NodeSets(self.setup.cluster.nodes, per_node)
        held = [j for j in self.running if self.gpus[j] > 0]
        order = sorted(held, key=lambda j: -math.inf if self.gpus[j] >= per_node
                       else -int(self.gpus[j]))
        gpus = self.gpus.tolist()
        for j in order:
            if not nodes.place(j, gpus[j]):
                raise SchedulingError(f"no room on the nodes for job {self.jobs[j].job_id!r} "
                                      f"on {gpus[j]} GPUs (the artifact asserts here)")
        for j in order:
            key = (nodes.first_rank(j, gpus), gpus[j])
            self.cached[j] = key in self.seen
            self.seen.add(key)
        for j in self.runnable:
            self.rec.set_gpus(j, now, gpus[j] if self.is_running[j] else 0)
        self.rec.round(now)

    def charge_overhead(self) -> None:
        every = self.restart_every
        restart = every > 0 and self.rounds > 0 and self.rounds % every == 0
        self.rounds += 1
        if restart:
            self.seen.clear()
        cost = self.setup.overhead.cost
        for j in self.running:
            g = int(self.gpus[j])
            if g > 0:
                self.overhead[j] = cost(g, self.total, restart=restart, cached=self.cached[j])
                old = float(self.end[j])
                self.end[j] = old + self.overhead[j]
                self.events.move_end(j, old, float(self.end[j]))
            else:
                self.overhead[j] = 0.0
