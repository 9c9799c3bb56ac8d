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
each round (less when its exact GPU set is cached, see :mod:`.efrounds`).

Mirrors the artifact's ``--schedule=ef-accessctrl`` round by round: its
deadline test (the plan's unaligned end), its slot-aligned planned ends, its
event handling, and where jobs land on nodes (for the overhead). The rounds
run compiled (:mod:`.efrounds`), the planner too (:mod:`.efcore`); this
module builds their inputs and turns the result into a :class:`Recorder`.

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

from dataclasses import dataclass

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import arrival_groups
from mltraces.scheduling.profiles import elasticflow_cap
from mltraces.scheduling.results import Recorder


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
        """The tables in the order :class:`.efcore.Tables` takes them (one argument for
        the compiled planner and rounds)."""
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
    gpu_type = setup.profiles.gpu_type if setup.profiles is not None else "A100"
    rows: dict[tuple, int] = {}
    fits: dict[tuple[int, ...], int] = {}
    specs: list[tuple] = []
    model, speeds = [], []
    for job in setup.jobs:
        curve = setup.curve(job)
        cap = elasticflow_cap(job.model, job.batch_size, gpu_type)
        levels = curve.scaling_levels(cap)
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


def overhead_tables(setup: Setup) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A round's overhead by GPU count (index), for the compiled rounds: a plain round's,
    a periodic restart's, and a cached GPU set's (which pays only the base, restart or not)."""
    total = setup.gpus
    plain, restart, cached = (np.zeros(total + 1) for _ in range(3))
    for g in range(1, total + 1):
        plain[g] = setup.overhead.cost(g, total, restart=False)
        restart[g] = setup.overhead.cost(g, total, restart=True)
        cached[g] = setup.overhead.cost(g, total, cached=True)
    return plain, restart, cached


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
        return _replay(setup, self.repricing == "all")


def _replay(setup: Setup, reprice_all: bool) -> Recorder:
    """Run :class:`.efrounds.Admit` on the setup's arrays and fill a :class:`Recorder`."""
    jobs, total, nodes = setup.jobs, setup.gpus, setup.cluster.nodes
    n = len(jobs)
    setup.check_memory("elasticflow", 8.0 * (total * (total + 1) + nodes * (n + 263) + 8 * total),
                       "its tables grow as GPUs x GPUs and nodes x jobs")
    from mltraces.scheduling.cores import efcore, efrounds  # loaded only when needed

    tables, _ = model_tables(setup)
    rec = setup.recorder()
    submit = np.array([j.submit_time for j in jobs], float)
    etimes, eptr, ejobs = arrival_groups(submit, np.arange(n))
    replayed = efrounds.Jobs(
        etimes, eptr, ejobs, np.array([float(j.iterations) for j in jobs]),
        np.array([j.deadline for j in jobs], np.float64), tables.model,
        np.array(jobs.best_effort, np.bool_),  # a copy: the column is read-only
    )
    admitted = np.ones(n, np.bool_)
    start, finish = np.full(n, np.nan), np.full(n, np.nan)
    met, gpu_seconds, logged_end = np.zeros(n, np.bool_), np.zeros(n), np.full(n, np.nan)
    run = efrounds.Admit(replayed, cluster_of(setup), efcore.Tables(*tables.arrays()),
                         efrounds.Record(start, finish, gpu_seconds, met, admitted, logged_end),
                         reprice_all)
    run.run()
    times, allocated, rounds = run.results()
    rec.admitted, rec.start, rec.finish = admitted.tolist(), start.tolist(), finish.tolist()
    rec.met, rec.gpu_seconds = met.tolist(), gpu_seconds.tolist()
    rec.logged_finish = logged_end.tolist()
    rec.times, rec.allocated = times.tolist(), allocated.tolist()
    rec.rounds = rounds[0].tolist()
    rec.efficiency = (rounds[1] / total).tolist()
    return rec


def cluster_of(setup: Setup):
    """The setup's cluster and round rules as the compiled rounds take them
    (:class:`.efrounds.Cluster`)."""
    from mltraces.scheduling.cores import efrounds

    cluster = setup.cluster
    return efrounds.Cluster(setup.gpus, cluster.nodes, cluster.gpus_per_node,
                            cluster.nodes_per_switch, float(setup.slot),
                            setup.overhead.period(setup.slot), *overhead_tables(setup))
