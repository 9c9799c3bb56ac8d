"""ElasticFlow: admission control on deadlines plus elastic scaling by marginal return.

Each job is planned in deadline order on the timeline of future free GPUs,
*backwards from its deadline*: it gets the smallest GPU count that, running
on whatever that count leaves free in each period before the deadline,
finishes its iterations in time; periods before that point run at the
previous count. A job that cannot make its deadline runs at its cap after the
deadline. Arrivals (merged per slot) are admitted only if every plan —
the runnable jobs' and theirs — meets its deadline; otherwise all of that
event's arrivals are declined. GPUs left free now are then handed out one
scaling step at a time: jobs holding none first, then the job whose next step
adds the most GPU-time per GPU. Every running job pays the restart overhead
each round (less when its GPU set is cached, see :mod:`.placement`).

Mirrors the artifact's ``--schedule=ef-accessctrl`` round by round: its
deadline test (the plan's unaligned end), its slot-aligned planned ends, its
event handling, and where jobs land on nodes (for the overhead).

Speed. The artifact prices every runnable job with a full re-plan after every
single scaling step, so a round costs (steps × jobs) plans; that, not Python,
is why it is slow. ``repricing="all"`` (the default) keeps that rule exactly,
reusing only prices a step provably leaves unchanged. ``repricing="chosen"``
is a faster approximation for large traces: after a step only the job that
grew is re-priced and the others keep their last price, and when the spare
GPUs cover every job's top level each job is scaled straight there. On the
traces the artifact could run here (cluster10, the 195-job testbed trace,
Philly; mostly idle clusters) it reproduces the artifact's per-job outcomes
exactly; on congested synthetic traces (40 jobs on 16 GPUs) its ratio was off by up to 0.125.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.placement import NodeSets
from mltraces.scheduling.profiles import elasticflow_cap
from mltraces.scheduling.results import Recorder

INF = math.inf
PENDING, RUNNING, DONE, DECLINED = 1, 2, 3, 4


@dataclass(frozen=True)
class ModelTables:
    """Every job's scaling model as arrays, for the compiled planner (:mod:`.efcore`).

    Jobs with the same levels, speeds and cap share a row: ``model[j]`` is
    job ``j``'s row of ``speed`` (iterations/s by GPU count, NaN where not
    allowed), ``levels``/``nlev`` (its scaling steps up to its cap), ``cap``
    and ``fitrow`` (its row of ``fit``: the largest level within x free GPUs).
    """

    model: np.ndarray
    speed: np.ndarray
    levels: np.ndarray
    nlev: np.ndarray
    fit: np.ndarray
    fitrow: np.ndarray
    cap: np.ndarray

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The tables in the order the compiled functions take them."""
        return self.speed, self.levels, self.nlev, self.fit, self.fitrow, self.cap


def _fit_table(levels: tuple[int, ...], total: int) -> list[int]:
    table, best, k = [], 0, 0
    for x in range(total + 1):
        while k < len(levels) and levels[k] <= x:
            best = levels[k]
            k += 1
        table.append(best)
    return table


def model_tables(setup: Setup) -> tuple[ModelTables, list[dict[int, float]]]:
    """The jobs' scaling models as :class:`ModelTables`, and each job's speed by GPU count."""
    total = setup.gpus
    rows: dict[tuple, int] = {}
    fits: dict[tuple[int, ...], int] = {}
    specs: list[tuple] = []
    model, speeds = [], []
    for job in setup.jobs:
        curve = setup.curve(job)
        cap = elasticflow_cap(job.model, job.batch_size)
        levels = curve.levels(cap) or curve.allowed[:1]
        speed = dict(curve.speed)
        key = (levels, tuple(sorted(speed.items())), cap)
        if key not in rows:
            rows[key] = len(specs)
            specs.append(key)
            fits.setdefault(levels, len(fits))
        model.append(rows[key])
        speeds.append(speed)
    width = max((g for _, speed, _ in specs for g, _ in speed), default=0) + 1
    depth = max((len(levels) for levels, _, _ in specs), default=1)
    speed_t = np.full((len(specs), width), np.nan)
    levels_t = np.zeros((len(specs), depth), np.int64)
    for r, (levels, speed, _) in enumerate(specs):
        for g, v in speed:
            speed_t[r, g] = v
        levels_t[r, : len(levels)] = levels
    fit_t = np.zeros((max(len(fits), 1), total + 1), np.int64)
    for levels, r in fits.items():
        fit_t[r] = _fit_table(levels, total)
    tables = ModelTables(
        model=np.array(model, np.int64),
        speed=speed_t,
        levels=levels_t,
        nlev=np.array([len(levels) for levels, _, _ in specs], np.int64),
        fit=fit_t,
        fitrow=np.array([fits[levels] for levels, _, _ in specs], np.int64),
        cap=np.array([cap for _, _, cap in specs], np.int64),
    )
    return tables, speeds


@dataclass(frozen=True)
class ElasticFlow:
    """Deadline-aware admission control and elastic scaling (the artifact's ``ef-accessctrl``).

    Attributes:
        repricing: ``"all"`` re-prices every job after each scaling step, as the
            artifact does (exact, slow on large clusters); ``"chosen"`` is the
            faster approximation described in the module docstring.
    """

    repricing: str = "all"
    name: str = "elasticflow"

    def __post_init__(self) -> None:
        if self.repricing not in ("all", "chosen"):
            raise ValueError(f"repricing must be 'all' or 'chosen', got {self.repricing!r}")

    def simulate(self, setup: Setup) -> Recorder:
        return _ElasticFlowRun(setup, self.repricing == "all").run()


class _ElasticFlowRun:
    def __init__(self, setup: Setup, reprice_all: bool = True) -> None:
        from mltraces.scheduling import efcore  # numba loads only when ElasticFlow runs

        self.core = efcore
        self.setup = setup
        self.reprice_all = reprice_all
        self.jobs = setup.jobs
        self.total = setup.gpus
        self.tables, self.speed = model_tables(setup)
        self.rec = Recorder(self.jobs)
        n = len(self.jobs)
        self.deadline = [j.deadline for j in self.jobs]
        self.deadlines = np.array(self.deadline, np.float64)
        self.left = [float(j.iterations) for j in self.jobs]
        self.status = [0] * n
        self.gpus = [0] * n
        self.end = [0] * n
        self.real_end = [0] * n
        self.done_at = [math.nan] * n
        self.overhead = [0.0] * n
        self.cached = [False] * n
        self.placed = [False] * n
        self.runnable: list[int] = []
        self.pending: list[int] = []
        self.running = 0
        self.planned: tuple = ()  # this round's plans (efcore.estimate), by runnable position
        self.cache: set[tuple[int, int]] = set()
        self.rounds = 0
        self.events = EventQueue()
        for job in self.jobs:
            self.events.add_start(job.index, job.submit_time)

    # -- the round loop ---------------------------------------------------------------
    def run(self) -> Recorder:
        events, slot = self.events, self.setup.slot
        now, step = events.first_time(), 0
        while events or self.pending or self.running:
            self.progress(now, step)
            event = events.at(now)
            if event is not None:
                events.remove(now)
                if not self.pending and not self.running and event.empty():
                    if not events:
                        break
                    now, step = events.first_time(), 0
                    continue
                self.handle(event, now)
            self.start_pending(now)
            first_change = self.scale_up(now)
            self.runnable.sort(key=self.gpus.__getitem__, reverse=True)
            self.place(now)
            if first_change < INF and (not events or first_change < events.first_time()):
                events.add_empty(first_change)
            if not events:
                break
            self.charge_overhead()
            events.merge_slot(now, slot)
            nxt = events.first_time()
            step, now = nxt - now, nxt
        return self.rec

    def progress(self, now: float, step: float) -> None:
        """Advance running jobs by ``step`` seconds; a job ahead of plan ends at this event."""
        for j in self.runnable:
            gpus = self.gpus[j]
            if not gpus:
                continue
            run = step - (now - self.real_end[j] if now > self.real_end[j] else 0)
            lost = self.overhead[j]
            run = 0 if run < lost else run - lost
            rate = self.speed[j][gpus]
            done = run * rate
            if self.left[j] <= done and self.end[j] > now:
                finish = now - step + math.ceil(self.left[j] / rate)
                done = (self.end[j] - now + step) * rate
                self.events.move_end(j, self.end[j], now)
                self.end[j] = finish
                self.done_at[j] = finish
            self.left[j] -= done
            self.overhead[j] = 0

    def handle(self, event, now: float) -> None:
        """End jobs, admit or decline arrivals, and re-plan every runnable job."""
        for j in event.ends:
            if self.placed[j]:
                self.finish(j, now)
        for j in self.runnable:
            self.placed[j] = False
        old_end = {j: self.end[j] for j in self.runnable}
        deadline = self.deadline.__getitem__
        if event.starts:
            order = sorted(self.runnable + event.starts, key=deadline)
            planned = self.estimate(order, now, stop_on_miss=True)
            if planned[0]:
                for j in event.starts:
                    old_end[j] = 0
                    self.status[j] = PENDING
                    self.pending.append(j)
                    self.runnable.append(j)
            else:
                for j in event.starts:
                    self.status[j] = DECLINED
                    self.rec.reject(j)
                planned = self.estimate(sorted(self.runnable, key=deadline), now)
        else:
            planned = self.estimate(sorted(self.runnable, key=deadline), now)
        self.runnable.sort(key=deadline)
        self.planned = planned
        _, _, ptr, _, ag, ends, real_ends, _, _ = planned
        for p, j in enumerate(self.runnable):
            self.gpus[j] = int(ag[ptr[p]])
            end = float(ends[p])
            self.events.move_end(j, old_end[j], end)
            self.end[j] = end
            self.real_end[j] = float(real_ends[p])

    def estimate(self, order: list[int], now: float, *, stop_on_miss: bool = False) -> tuple:
        """Plan ``order`` (deadline order) on an empty cluster: :func:`.efcore.estimate`.

        ``stop_on_miss`` stops at the first plan that misses its deadline (the
        answer is known then; the artifact plans the rest but discards them).
        """
        t = self.tables
        index = np.array(order, np.int64)
        left = np.array([self.left[j] for j in order], np.float64)
        return self.core.estimate(
            float(now), self.total, float(self.setup.slot), left, self.deadlines[index],
            t.model[index], stop_on_miss, *t.arrays(),
        )  # fmt: skip

    def finish(self, j: int, now: float) -> None:
        self.runnable.remove(j)
        self.running -= 1
        self.status[j] = DONE
        finish = self.done_at[j] if self.done_at[j] == self.done_at[j] else self.real_end[j]
        self.rec.finished(j, finish, now, met=self.real_end[j] <= self.deadline[j])

    def start(self, j: int, now: float) -> None:
        self.pending.remove(j)
        self.status[j] = RUNNING
        self.running += 1
        self.rec.started(j, now)

    def start_pending(self, now: float) -> None:
        for j in [j for j in self.pending if self.gpus[j] > 0]:
            self.start(j, now)
            self.events.add_end(j, self.end[j])

    # -- handing out free GPUs --------------------------------------------------------
    def scale_up(self, now: float) -> float:
        """Hand out the free GPUs (:func:`.efcore.scale_up`); the first planned change after now.

        The runnable list is in deadline order here, the order of this round's
        plans; it leaves in the order the scale-up loop sorted it into.
        """
        runnable, t = self.runnable, self.tables
        _, _, ptr, at, ag, ends, real_ends, times, free = self.planned
        index = np.array(runnable, np.int64)
        gpus = np.array([self.gpus[j] for j in runnable], np.int64)
        left = np.array([self.left[j] for j in runnable], np.float64)
        ends = np.array([self.end[j] for j in runnable], np.float64)
        order, gpus, new_end, new_real, started, first_change = self.core.scale_up(
            float(now), self.total, float(self.setup.slot), self.reprice_all, times, free, gpus,
            left, self.deadlines[index], t.model[index], ends, real_ends, ptr, at, ag,
            *t.arrays(),
        )  # fmt: skip
        for p, j in enumerate(runnable):
            self.gpus[j] = int(gpus[p])
            if started[p] and self.status[j] == PENDING:
                self.start(j, now)
            end = float(new_end[p])
            if end != self.end[j]:
                self.events.move_end(j, self.end[j], end)
                self.end[j] = end
            self.real_end[j] = float(new_real[p])
        self.runnable = [runnable[p] for p in order]
        return float(first_change)

    # -- placement and overhead -------------------------------------------------------
    def place(self, now: float) -> None:
        """Lay jobs on nodes (largest first) and note whose GPU set is cached."""
        nodes = NodeSets(self.setup.cluster.nodes, self.setup.cluster.gpus_per_node)
        placed = []
        for j in self.runnable:
            g = self.gpus[j]
            self.rec.set_gpus(j, now, g)
            if g:
                if not nodes.place(j, g):
                    raise RuntimeError(f"no room for job {j} on {g} GPUs")  # as the reference
                placed.append(j)
                self.placed[j] = True
        for j in placed:
            key = (nodes.first_rank(j, self.gpus), self.gpus[j])
            self.cached[j] = key in self.cache
            self.cache.add(key)

    def charge_overhead(self) -> None:
        """Price this round's restarts and push planned ends back by them."""
        overhead, total = self.setup.overhead, self.total
        restart = overhead.is_restart(self.rounds)
        self.rounds += 1
        if restart:
            self.cache.clear()
        for j in self.runnable:
            g = self.gpus[j]
            if g:
                cost = overhead.cost(g, total, restart=restart, cached=self.cached[j])
                self.overhead[j] = cost
                self.events.move_end(j, self.end[j], self.end[j] + cost)
                self.end[j] += cost
