"""The interpreted replay's share of the artifact's overhead-paying rounds.

:mod:`.edfadmit` (``edf-accessctrl``) keeps the artifact's job lists
(``running`` and ``pending`` in insertion order, ``runnable`` as the round
leaves it), its event list, and its per-round placement with the cache of GPU
sets seen since the last periodic restart, which decides each running job's
overhead. Subclasses hold ``gpus``, ``end``, ``run_until`` (the end a job's
run is counted to), ``left`` and ``speed`` (per job, GPUs → iterations/s),
indexed by job, and run the round. :mod:`.efnoadmit` (``ef``) keeps the same
lists, placement and cache compiled (:class:`.efrounds.NoAdmit`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.placement import NodeSets


class PaidRounds:
    """Job lists, events, placement, GPU-set cache and overheads of one replay."""

    gpus: Any
    end: Any
    run_until: Any
    left: Any
    speed: list[dict[int, float]]

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.jobs = setup.jobs
        self.total, self.slot = setup.gpus, setup.slot
        self.rec = setup.recorder()
        n = len(self.jobs)
        self.overhead = [0.0] * n
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

    def progress(self, now: float, step: float) -> None:
        """Advance every job holding GPUs by ``step`` seconds (up to its ``run_until`` if
        that came first) less its overhead; a job ahead of its plan ends at this event
        (the artifact's ``run_all_jobs``)."""
        for j in self.runnable:
            g = int(self.gpus[j])
            if not g:
                continue
            until = self.run_until[j]
            run = step - (now - until) if now > until else step
            run = 0.0 if run < self.overhead[j] else run - self.overhead[j]
            rate = self.speed[j][g]
            done = run * rate
            if self.left[j] <= done and self.end[j] > now:
                finish = now - step + math.ceil(self.left[j] / rate)
                done = (self.end[j] - now + step) * rate
                self.events.move_end(j, float(self.end[j]), now)
                self.end[j] = finish
            self.left[j] -= done
            self.overhead[j] = 0.0

    def start(self, j: int, now: float) -> None:
        """A waiting job starts (the artifact's ``remove_from_pending``)."""
        self.pending.remove(j)
        self.running.append(j)
        self.is_running[j] = True
        self.rec.started(j, now)

    def lay_out(self, order: Iterable[int], now: float) -> None:
        """Lay the jobs holding GPUs on nodes in ``order`` (fresh every round), note which
        GPU sets are cached since the last periodic restart, record the allocations and
        log the round."""
        gpus = self.gpus.tolist() if hasattr(self.gpus, "tolist") else list(self.gpus)
        order = list(order)
        nodes = NodeSets(self.setup.cluster.nodes, self.setup.cluster.gpus_per_node)
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

    def close_round(self, now: float) -> tuple[float, float]:
        """Charge the overheads, fold the events due within a slot; (step, next round)."""
        self.charge_overhead()
        self.events.merge_slot(now, self.slot)
        nxt = self.events.first_time()
        return float(int(nxt - now)), nxt

    def charge_overhead(self) -> None:
        """This round's (re)start overhead for every running job with GPUs; their planned
        ends move back by it. A periodic restart empties the cache first."""
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
