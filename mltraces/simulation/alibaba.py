"""Replay the Alibaba recurring-job groups (the Zeus release's) with overlapping runs.

Each group is one recurring job (one of the six workloads) whose submissions
come from the Alibaba GPU cluster trace. A submission starts at its trace start
time and finishes at its trace end time; its energy and time are those of one
simulated run scaled by ``runtime_ratio``. While other runs of the group are in
flight, a new submission uses the cheapest batch size known so far (b0 until a
run succeeds); otherwise the policy chooses. Results reach the policy when runs
finish, in end-time order, and a run that fails is retried at once for the same
duration. Runs are early-stopped at β × the cheapest successful run so far
(each retry is its own submission, so costs are not summed across retries).
Every group gets its own seed, ``zlib.adler32`` of its id, and groups run in
parallel on all cores.

Differences from the Zeus artifact, on purpose: a submission that cannot run
one epoch under the early-stopping threshold is observed at
:data:`~mltraces.simulation.engine.UNRUNNABLE_PENALTY` × the threshold as in the
sequential replay (the artifact observes a cost of 0, the best possible, which
can make the bandit retry that batch size forever); and a submission gives up
with an error after ``Policy.max_attempts`` attempts (20 by default).
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mltraces.simulation.engine import (
    HISTORY_FIELDS,
    RUN_DTYPE,
    UNRUNNABLE_PENALTY,
    RecurringJob,
    Run,
    RunModel,
    Runs,
    choose_power_limit,
)
from mltraces.simulation.metrics import TOTALS, VS_DEFAULT
from mltraces.simulation.policies import POLICIES, Policy, get_policy
from mltraces.simulation.sweep import check_knobs, resolve_names
from mltraces.simulation.traces import (
    WORKLOADS,
    SimulationError,
    TraceSet,
    get_workload,
)
from mltraces.workers import process_pool

#: Fewer groups than this per extra process are replayed with fewer processes.
GROUPS_PER_WORKER = 100
GROUP_COLUMNS = ["group", "start_time", "end_time", "dataset", "runtime_ratio"]
#: One recorded run of the replay: the job's place in its group, its time slot, then
#: the run as in the sequential replay, with time, energy and cost scaled by the runtime ratio.
REPLAY_DTYPE = np.dtype(
    [("job", np.int64), ("attempt", np.int64), ("start_time", float), ("end_time", float)]
    + [(name, RUN_DTYPE[name]) for name in HISTORY_FIELDS if name not in ("recurrence", "attempt")]
)
REPLAY_FIELDS: tuple[str, ...] = REPLAY_DTYPE.names or ()


class ReplayRuns(Runs):
    """Recorded runs of one group, as tuples in :data:`REPLAY_DTYPE` order."""

    dtype = REPLAY_DTYPE


@dataclass(frozen=True)
class Group:
    """One recurring job of the Alibaba trace: its submissions in start order."""

    name: str
    dataset: str
    start: tuple[float, ...]
    end: tuple[float, ...]
    ratio: tuple[float, ...]

    @property
    def seed(self) -> int:
        """Deterministic per-group seed, as the Zeus artifact derives it."""
        return zlib.adler32(self.name.encode("utf-8"))


@dataclass(order=True)
class _Flight:
    """A submitted run, ordered by when it finishes (then by submission order)."""

    end: float
    order: int
    start: float = field(compare=False)
    job: int = field(compare=False)
    attempt: int = field(compare=False)
    ratio: float = field(compare=False)
    batch_size: int = field(compare=False)
    power_limit: int = field(compare=False)
    run: Run | None = field(compare=False)
    cost: float = field(compare=False)


class GroupReplay(RecurringJob):
    """The event loop of one group under one policy: a recurring job whose runs overlap."""

    def __init__(self, model: RunModel, policy: Policy, seed: int, beta: float) -> None:
        super().__init__(model, policy, seed, beta)
        self.runs = ReplayRuns()
        self.best_cost = math.inf
        self.best_batch_size = model.trace.default_batch_size
        self.flights: list[_Flight] = []
        self.submitted = 0

    def replay(self, group: Group) -> list[tuple]:
        """Submit every job at its start time; return the recorded runs (:data:`REPLAY_DTYPE`)."""
        for job, (start, end, ratio) in enumerate(
            zip(group.start, group.end, group.ratio, strict=True), 1
        ):
            self._finish_until(start)
            self._submit(job, 1, start, end, ratio)
        self._finish_until(math.inf)
        return self.runs

    def _submit(self, job: int, attempt: int, start: float, end: float, ratio: float) -> None:
        if self.max_attempts is not None and attempt > self.max_attempts:
            raise SimulationError(
                f"Alibaba job {job} did not reach the target in {self.max_attempts} attempts"
            )
        batch_size = self.best_batch_size if self.flights else self.bso.predict()
        power_limit, profiling = choose_power_limit(self.model, self.plo, batch_size)
        threshold = self.beta * self.best_cost
        run = self.model.run(batch_size, power_limit, self.rng, threshold, profiling)
        cost = UNRUNNABLE_PENALTY * threshold if run is None else run.cost
        self.submitted += 1
        flight = _Flight(
            end, self.submitted, start, job, attempt, ratio, batch_size, power_limit, run, cost
        )
        heapq.heappush(self.flights, flight)

    def _finish_until(self, now: float) -> None:
        while self.flights and self.flights[0].end <= now:
            self._finish(heapq.heappop(self.flights))

    def _finish(self, flight: _Flight) -> None:
        run = flight.run
        reached = run is not None and run.reached
        self.bso.observe(flight.batch_size, flight.cost, reached)
        if run is not None:
            scale = flight.ratio
            self.runs.append(
                (
                    flight.job,
                    flight.attempt,
                    flight.start,
                    flight.end,
                    flight.batch_size,
                    flight.power_limit,
                    run.time * scale,
                    run.energy * scale,
                    flight.cost * scale,
                    reached,
                )
            )
        if reached:
            if flight.cost < self.best_cost:
                self.best_cost, self.best_batch_size = flight.cost, flight.batch_size
            return
        duration = flight.end - flight.start
        self._submit(
            flight.job, flight.attempt + 1, flight.end, flight.end + duration, flight.ratio
        )


def replay_alibaba(
    traces: TraceSet | Any,
    groups: pd.DataFrame | None = None,
    gpu: str | Iterable[str] = "v100",
    policies: str | Policy | Iterable[str | Policy] = "zeus",
    *,
    workloads: str | Iterable[str] = "all",
    eta: float = 0.5,
    beta: float = 2.0,
    processes: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay every Alibaba group on ``gpu``; return (history, summary).

    Args:
        traces: A :class:`TraceSet` (:func:`mltraces.workloads.recurring.replay_alibaba` also takes
            a catalog connection, and reads the groups from it).
        groups: Rows with group, start_time, end_time, dataset, runtime_ratio.
        gpu: A GPU name, a comma list, ``"all"`` or an iterable of names.
        policies: Policy names, a comma list, ``"all"`` or :class:`Policy` objects.
        workloads: Replay only the groups of these datasets (names, a comma list or ``"all"``).
        processes: Worker processes (default: all cores, at most one per
            :data:`GROUPS_PER_WORKER` groups; 1 runs inline).

    The history has one row per run (gpu, policy, group, workload, job, attempt,
    start_time, end_time, batch_size, power_limit, time_s, energy_j, cost,
    reached), with time, energy and cost scaled by the job's runtime ratio; the
    summary totals them per (gpu, workload, policy), with ratios to Default
    when it was replayed too.
    """
    check_knobs([eta], [beta])
    if processes is not None and processes < 1:
        raise SimulationError(f"processes must be at least 1, got {processes}")
    if not isinstance(traces, TraceSet):  # a catalog connection: read by the workloads layer
        from mltraces import _moved

        if groups is None:
            groups = _moved.call("mltraces.workloads.recurring:load_groups", traces,
                                 old="mltraces.simulation.replay_alibaba(<connection>)")
        traces = _moved.call("mltraces.workloads.recurring:load_traces", traces,
                             old="mltraces.simulation.replay_alibaba(<connection>)")
    if groups is None:
        raise SimulationError("replay_alibaba needs the groups with a TraceSet (read them "
                              "from a catalog with mltraces.workloads.recurring.load_groups)")
    gpus = resolve_names(gpu, traces.gpus, "GPU")
    chosen = [get_policy(p) for p in resolve_names(policies, list(POLICIES), "policy")]
    datasets = resolve_names(workloads, list(WORKLOADS), "workload")
    group_list = [g for g in split_groups(groups) if g.dataset in datasets]
    workers = processes or min(os.cpu_count() or 1, 1 + len(group_list) // GROUPS_PER_WORKER)
    chunks = _chunks(group_list, workers)
    tasks = [(rank, p, beta, chunk) for rank, p in enumerate(chosen) for chunk in chunks]
    histories = []
    for name in gpus:
        models = {
            dataset: RunModel(traces.job(name, get_workload(dataset)), eta)
            for dataset in sorted({g.dataset for g in group_list})
        }
        histories.append(_replay_history(name, _run_tasks(tasks, models, workers)))
    history = pd.concat(histories, ignore_index=True)
    return history, summarize_replay(history)


def split_groups(groups: pd.DataFrame) -> list[Group]:
    """Groups in id order, each with its submissions sorted by start time."""
    missing = [c for c in GROUP_COLUMNS if c not in groups.columns]
    if missing:
        raise SimulationError(
            f"the Alibaba group table lacks columns {missing}; expected {GROUP_COLUMNS}"
        )
    ordered = groups.sort_values(["group", "start_time"], kind="stable")
    names = ordered["group"].astype(str).to_numpy(object)
    datasets = ordered["dataset"].astype(str).to_numpy(object)
    columns = [
        ordered[c].to_numpy(float).tolist() for c in ("start_time", "end_time", "runtime_ratio")
    ]
    edges = [0, *(np.flatnonzero(names[1:] != names[:-1]) + 1), len(names)] if len(names) else []
    out = []
    for lo, hi in itertools.pairwise(edges):
        kinds = set(datasets[lo:hi])
        if len(kinds) != 1:
            raise SimulationError(f"Alibaba group {names[lo]!r} mixes datasets {sorted(kinds)}")
        start, end, ratio = (tuple(c[lo:hi]) for c in columns)
        out.append(Group(names[lo], datasets[lo], start, end, ratio))
    return out


def summarize_replay(history: pd.DataFrame) -> pd.DataFrame:
    """Totals per (gpu, workload, policy), with ratios to Default when present."""
    keys = ["gpu", "workload", "policy"]
    grouped = history.groupby(keys, sort=False)
    summary = grouped[TOTALS].sum()
    summary["groups"] = grouped["group"].nunique()
    summary["runs"] = grouped.size()
    summary["failed_runs"] = summary["runs"] - grouped["reached"].sum()
    summary = summary.reset_index()
    default = summary.loc[summary["policy"] == "default", ["gpu", "workload", *TOTALS]]
    if not default.empty:
        summary = summary.merge(default, on=["gpu", "workload"], suffixes=("", "_default"))
        for column in TOTALS:
            summary[VS_DEFAULT[column]] = summary[column] / summary.pop(f"{column}_default")
    return summary


# --------------------------------------------------------------------------- parallel plumbing

_MODELS: dict[str, RunModel] = {}


def _init_worker(models: dict[str, RunModel]) -> None:
    _MODELS.update(models)


def _replay_chunk(task: tuple[int, Policy, float, list[tuple[int, Group]]]) -> list[tuple]:
    rank, policy, beta, chunk = task
    out = []
    for position, group in chunk:
        replay = GroupReplay(_MODELS[group.dataset], policy, group.seed, beta)
        out.append(((rank, position), policy.name, group.name, group.dataset, replay.replay(group)))
    return out


def _run_tasks(
    tasks: list[tuple[int, Policy, float, list[tuple[int, Group]]]],
    models: dict[str, RunModel],
    workers: int,
) -> list[tuple[str, str, str, list[tuple]]]:
    """Replay every task; results in (policy, group) order whatever the scheduling."""
    if workers == 1 or len(tasks) == 1:
        _init_worker(models)
        results = [_replay_chunk(task) for task in tasks]
    else:
        with process_pool(workers, initializer=_init_worker, initargs=(models,)) as pool:
            results = list(pool.map(_replay_chunk, tasks))
    parts = sorted((part for result in results for part in result), key=lambda part: part[0])
    return [part[1:] for part in parts]


def _chunks(groups: list[Group], workers: int) -> list[list[tuple[int, Group]]]:
    """About four interleaved chunks per worker, so slow groups do not leave cores idle."""
    count = max(1, min(len(groups), 4 * workers))
    numbered = list(enumerate(groups))
    return [numbered[k::count] for k in range(count)]


def _replay_history(gpu: str, parts: list[tuple[str, str, str, list[tuple]]]) -> pd.DataFrame:
    """One frame from per-group run tuples, labels repeated per run."""
    sizes = [len(rows) for *_, rows in parts]
    labels = {
        label: np.repeat(np.array([part[k] for part in parts], dtype=object), sizes)
        for k, label in enumerate(("policy", "group", "workload"))
    }
    rows = np.array([row for *_, rows in parts for row in rows], dtype=REPLAY_DTYPE)
    return pd.DataFrame(
        {"gpu": np.full(len(rows), gpu, dtype=object), **labels}
        | {name: rows[name] for name in REPLAY_FIELDS}
    )
