"""``simulate()``: sweep GPUs × workloads × policies × seeds × η × β in one call."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sized
from dataclasses import dataclass
from functools import cached_property
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np

from mltraces.config import max_seeds
from mltraces.simulation.engine import HISTORY_FIELDS, RUN_DTYPE, RunModel, simulate_job
from mltraces.simulation.metrics import connection, cumulative, summarize, summary_relation
from mltraces.simulation.policies import POLICIES, Policy, get_policy
from mltraces.simulation.traces import (
    WORKLOADS,
    SimulationError,
    TraceSet,
    Workload,
    get_workload,
)

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: Columns of a history: numpy arrays, one value per run (pandas only on request).
Columns = dict[str, np.ndarray]

LABELS = {
    "gpu": object,
    "workload": object,
    "eta": float,
    "beta": float,
    "policy": object,
    "seed": int,
}
#: Policies every sweep runs, so that the summary can normalise and compute regret.
REFERENCES = ("default", "oracle")


@dataclass(frozen=True)
class Sweep:
    """The grid one :func:`simulate` call covers."""

    traces: TraceSet
    gpus: list[str]
    workloads: list[Workload]
    etas: list[float]
    betas: list[float]
    seeds: list[int]
    recurrences: int | None

    def run(self, policies: list[Policy]) -> Columns:
        """The history of every (gpu, workload, eta, beta, policy, seed) job, as columns."""
        parts: list[tuple[tuple, list[tuple]]] = []
        for gpu, job, eta in itertools.product(self.gpus, self.workloads, self.etas):
            model = RunModel(self.traces.job(gpu, job), eta)
            for beta, policy, seed in itertools.product(self.betas, policies, self.seeds):
                runs = simulate_job(
                    model, policy, seed=seed, beta=beta, recurrences=self.recurrences
                )
                parts.append(((gpu, job.name, eta, beta, policy.name, seed), runs))
        return _history(parts)


class SimulationResult:
    """What :func:`simulate` returns.

    Attributes:
        columns: The history as numpy arrays (what the simulator produced).
        history: The same as a pandas frame, one row per run: gpu, workload,
            eta, beta, policy, seed, recurrence, attempt, batch_size,
            power_limit, time_s, energy_j, cost, reached (attempts that could
            not run one epoch are not runs).
        summary, references: Computed on first use (see below), so a caller
            that only wants the runs never simulates the reference policies.
    """

    def __init__(self, columns: Columns, sweep: Sweep) -> None:
        self.columns = columns
        self._sweep = sweep

    @cached_property
    def history(self) -> pd.DataFrame:
        """The runs as a pandas frame (built on first use)."""
        import pandas as pd

        return pd.DataFrame(self.columns)

    @cached_property
    def references(self) -> Columns:
        """History of Default and Oracle on the same jobs and seeds (simulated on first use)."""
        policies = self.columns["policy"]
        missing = [POLICIES[name] for name in REFERENCES if name not in set(policies)]
        keep = np.isin(policies, REFERENCES)
        references = {name: values[keep] for name, values in self.columns.items()}
        if missing:
            extra = self._sweep.run(missing)
            references = {k: np.concatenate([v, extra[k]]) for k, v in references.items()}
        return references

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per (gpu, workload, eta, beta, policy, seed); see :func:`.metrics.summarize`."""
        return summarize(self.columns, self.references)

    def summary_relation(self) -> duckdb.DuckDBPyRelation:
        """The summary as a DuckDB relation (no pandas), e.g. for the command line."""
        return summary_relation(connection(self.columns, self.references))

    def cumulative(self) -> pd.DataFrame:
        """Per recurrence ETA/TTA/cost, running totals and regret (:func:`.metrics.cumulative`)."""
        return cumulative(self.columns, self.references)

    def __len__(self) -> int:
        return len(self.columns["cost"])

    def __repr__(self) -> str:
        jobs = len(set(zip(*(self.columns[k] for k in LABELS), strict=True)))
        return f"<SimulationResult: {len(self)} runs of {jobs} simulated jobs>"


def simulate(
    traces: TraceSet | Any,
    gpus: str | Iterable[str] = "v100",
    workloads: str | Workload | Iterable[str | Workload] = "all",
    policies: str | Policy | Iterable[str | Policy] = "zeus",
    seeds: int | Iterable[int] = 1,
    *,
    recurrences: int | None = None,
    eta: float | Iterable[float] = 0.5,
    beta: float | Iterable[float] = 2.0,
) -> SimulationResult:
    """Replay recurring training jobs on the Zeus traces.

    Args:
        traces: A :class:`TraceSet` (:func:`mltraces.simulate` also takes a catalog
            connection; a connection here still works, with a DeprecationWarning).
        gpus: Names, comma-separated names, or ``"all"``.
        workloads: Names, comma-separated names, ``"all"``, or :class:`Workload` objects
            (your own).
        policies: Names, comma-separated names, ``"all"``, or :class:`Policy` objects
            (your own).
        seeds: One seed or several; each (job, policy, seed) is deterministic.
        recurrences: Recurrences per job; default 2·|B|·|P| of that job.
        eta: Weight of energy in the cost, η·ETA + (1−η)·MaxPower·TTA; one or several.
        beta: Early-stopping multiple of the best cost so far (``inf``: off); one or several.

    Returns:
        A :class:`SimulationResult`: ``.history`` now, ``.summary`` (normalised
        to Default, regret vs Oracle) on first use.

    >>> result = simulate(traces, "v100", "librispeech", ["zeus", "default"], range(1, 11))
    ... # doctest: +SKIP
    """
    if not isinstance(traces, TraceSet):  # a catalog connection: read by the workloads layer
        from mltraces import _moved

        traces = _moved.call("mltraces.workloads.recurring:load_traces", traces,
                             old="mltraces.simulation.simulate(<connection>)")
    etas, betas = _floats(eta, "eta"), _floats(beta, "beta")
    check_knobs(etas, betas)
    if recurrences is not None and recurrences < 1:
        raise SimulationError(
            f"recurrences must be at least 1, got {recurrences}; omit it for 2·|B|·|P| per job"
        )
    sweep = Sweep(
        traces=traces,
        gpus=resolve_names(gpus, traces.gpus, "GPU"),
        workloads=[get_workload(w) for w in resolve_names(workloads, list(WORKLOADS), "workload")],
        etas=etas,
        betas=betas,
        seeds=_seeds(seeds),
        recurrences=recurrences,
    )
    asked = [get_policy(p) for p in resolve_names(policies, list(POLICIES), "policy")]
    return SimulationResult(sweep.run(asked), sweep)


def _seeds(seeds: int | Iterable[int]) -> list[int]:
    """The seeds as a list, refused past ``MLTRACES_MAX_SEEDS`` before they are all built."""
    if isinstance(seeds, Integral):
        seeds = [seeds]
    limit = max_seeds()
    chosen = [int(s) for s in itertools.islice(seeds, limit + 1)]
    if len(chosen) > limit:
        asked = f"{len(seeds):,}" if isinstance(seeds, Sized) else f"more than {limit:,}"
        raise SimulationError(
            f"{asked} seeds asked for; the limit is {limit:,} (set MLTRACES_MAX_SEEDS to "
            "allow more)"
        )
    negative = [s for s in chosen if s < 0]
    if negative:
        raise SimulationError(f"seeds are 0 or more, got {negative[0]}")
    return chosen


def _history(parts: list[tuple[tuple, list[tuple]]]) -> Columns:
    """Columns from per-job run tuples, labels repeated per run."""
    sizes = [len(runs) for _, runs in parts]
    data = {
        label: np.repeat(np.array([values[k] for values, _ in parts], dtype), sizes)
        for k, (label, dtype) in enumerate(LABELS.items())
    }
    rows = np.array([row for _, runs in parts for row in runs], dtype=RUN_DTYPE)
    # contiguous copies: DuckDB scans them in place, pandas would copy strided views anyway
    data.update((name, np.ascontiguousarray(rows[name])) for name in HISTORY_FIELDS)
    return data


def resolve_names(value: Any, universe: list[str], what: str) -> list:
    """Names from a comma list, ``"all"``, or an iterable (objects pass through)."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
        if items == ["all"]:
            return list(universe)
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        items = [value]
    if not items:
        raise SimulationError(f"no {what} given; choose from {', '.join(universe)} or 'all'")
    unknown = [v for v in items if isinstance(v, str) and v not in universe]
    if unknown:
        raise SimulationError(
            f"unknown {what} {', '.join(map(repr, unknown))}; choose from "
            f"{', '.join(universe)} or 'all'"
        )
    return items


def _floats(value: float | Iterable[float], what: str) -> list[float]:
    values = [float(v) for v in value] if isinstance(value, Iterable) else [float(value)]
    if not values:
        raise SimulationError(f"no {what} value given")
    return values


def check_knobs(etas: list[float], betas: list[float]) -> None:
    """Raise a SimulationError naming every η outside [0, 1] and every β that is not positive."""
    bad_eta = [e for e in etas if not 0.0 <= e <= 1.0]
    if bad_eta:
        raise SimulationError(f"eta must lie in [0, 1], got {bad_eta}")
    bad_beta = [b for b in betas if not b > 0]
    if bad_beta:
        raise SimulationError(
            f"beta must be positive (inf turns early stopping off), got {bad_beta}"
        )
