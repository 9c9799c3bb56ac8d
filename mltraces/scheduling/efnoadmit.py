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

The planner and the scale-up are ElasticFlow's compiled ones (called from
Python with one :class:`.efcore.Planner` workspace for the replay, read back
through its :meth:`~.efcore.Planner.estimated` and
:meth:`~.efcore.Planner.scaled`); the round around them is interpreted. Where
the artifact would stop on an error (a job its end event finds without GPUs:
``release_job_res`` of a job never placed), the job just ends there.
"""

from __future__ import annotations

import math

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.elasticflow import model_tables
from mltraces.scheduling.paidrounds import PaidRounds
from mltraces.scheduling.results import Recorder


class EDFElastic:
    """ElasticFlow's elastic scaling without its admission control (the artifact's ``ef``)."""

    name = "edf-elastic"

    def simulate(self, setup: Setup) -> Recorder:
        return _Run(setup).run()


class _Run(PaidRounds):
    """The artifact's ``ef`` round (lists and placement: :class:`.paidrounds.PaidRounds`);
    ``runnable`` is in the order the last planning and scale-up left it."""

    def __init__(self, setup: Setup) -> None:
        from mltraces.scheduling import efcore  # the compiled planner loads only when needed

        super().__init__(setup)
        self.efcore = efcore
        self.slot = float(setup.slot)
        tables, self.speed = model_tables(setup)
        self.model = tables.model
        n = len(self.jobs)
        self.planner = efcore.Planner(n, *tables.arrays())
        self.deadline = np.array([j.deadline for j in self.jobs], np.float64)
        self.left = np.array([float(j.iterations) for j in self.jobs])
        self.gpus = np.zeros(n, np.int64)
        self.end = np.zeros(n)
        self.real_end = np.zeros(n)
        self.run_until = self.real_end  # ElasticFlow counts it up to its unaligned end

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
            step, now = self.close_round(now)
        return self.rec

    # -- the steps of a round ------------------------------------------------------------
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
        self.efcore.estimate(now, self.total, self.slot, self.left[index], self.deadline[index],
                             self.model[index], False, self.planner)
        planned = self.planner.estimated(len(order))
        ptr, ag, ends, real_ends = planned[0], planned[2], planned[3], planned[4]
        for p, j in enumerate(order):
            self.gpus[j] = ag[ptr[p]]
            self.events.move_end(j, float(self.end[j]), float(ends[p]))
            self.end[j] = ends[p]
            self.real_end[j] = real_ends[p]
        return index, planned

    def start_planned(self, planned: tuple, now: float) -> None:
        """Waiting jobs with GPUs now start; those planned to start later wake a round then."""
        index, (ptr, at, ag, *_) = planned
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
        index, (ptr, at, ag, _, _, times, free) = planned
        self.efcore.scale_up(now, self.total, self.slot, True, times, free, self.gpus[index],
                             self.left[index], self.deadline[index], self.model[index],
                             self.end[index], self.real_end[index], ptr, at, ag, self.planner)
        order, gpus, _, real_ends, started, next_change, step_job, step_end = (
            self.planner.scaled(len(index)))
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

    def place(self, now: float) -> None:
        """Running jobs in start order, those of a node or more first, smaller ones by size."""
        per_node = self.setup.cluster.gpus_per_node
        held = [j for j in self.running if self.gpus[j] > 0]
        self.lay_out(sorted(held, key=lambda j: -math.inf if self.gpus[j] >= per_node
                            else -int(self.gpus[j])), now)
