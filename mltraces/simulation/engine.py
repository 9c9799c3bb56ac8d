"""The recurrence loop: run one job again and again under a policy, with early stopping.

Per recurrence the job is attempted until a run reaches the target (at most
``Policy.max_attempts`` times, 20 by default). Each attempt asks the policy for
a batch size and a power limit (profiling the limits just in time if the power
limit optimizer asks for it), draws one repetition of the train trace with the
simulation's seeded generator, and charges epochs until the target, the epoch
cap, or the early-stopping threshold β × (cheapest successful recurrence so
far, retries included).

The loop works on plain Python floats prepared by :class:`RunModel`, so one
run costs a few microseconds.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from mltraces.simulation.policies import JobContext, Policy, PowerLimitOptimizer
from mltraces.simulation.traces import JobTrace, SimulationError

#: An attempt that cannot fit one epoch under the threshold is observed at
#: this multiple of the threshold, so the optimizer learns to avoid it.
UNRUNNABLE_PENALTY = 100.0

#: One recorded run; :class:`Runs` holds tuples in this order.
RUN_DTYPE = np.dtype(
    [
        ("recurrence", np.int64),
        ("attempt", np.int64),
        ("batch_size", np.int64),
        ("power_limit", np.int64),
        ("time_s", float),
        ("energy_j", float),
        ("cost", float),
        ("reached", bool),
    ]
)
HISTORY_FIELDS: tuple[str, ...] = RUN_DTYPE.names or ()


class Runs(list):
    """Recorded runs as tuples in :attr:`dtype` order: one append per run."""

    dtype = RUN_DTYPE

    def to_array(self) -> np.ndarray:
        """The runs as a structured array."""
        return np.array(self, dtype=self.dtype)


class Run(NamedTuple):
    """The outcome of one attempt that ran at least one epoch."""

    time: float
    energy: float
    cost: float
    reached: bool


class Cell(NamedTuple):
    """What a run at one (batch size, power limit) reads, as plain floats."""

    runs: list[float]  # target epoch per repetition (NaN: never reached)
    time: float  # seconds per epoch
    energy: float  # joules per epoch
    stop_cost: float  # per-epoch cost the early-stopping cap divides by
    first_time: float  # the profiling epoch
    first_energy: float


class RunModel:
    """A :class:`JobTrace` at one η, as one :class:`Cell` per profiled (batch size, limit)."""

    def __init__(self, trace: JobTrace, eta: float) -> None:
        self.trace = trace
        self.eta = eta
        self.max_power = trace.max_power
        self.max_epochs = trace.workload.max_epochs
        # JobTrace.epoch_cost, summed in the artifact's order so that ⌊threshold / cost⌋
        # lands on the same epoch when the threshold is a multiple of it
        top = trace.top_power_limit[:, None]
        stop_cost = eta * trace.epoch_energy + (1 - eta) * top * trace.epoch_time
        first_time, first_energy = trace.profiling_epoch
        self.cells = {
            (b, p): Cell(
                trace.run_epochs[i].tolist(),
                float(trace.epoch_time[i, j]),
                float(trace.epoch_energy[i, j]),
                float(stop_cost[i, j]),
                float(first_time[i]),
                float(first_energy[i]),
            )
            for i, b in enumerate(trace.batch_sizes)
            for j, p in enumerate(trace.power_limits)
            if trace.profiled[i, j]
        }
        self.profile_costs = trace.epoch_cost(eta)

    def cell(self, batch_size: int, power_limit: int) -> Cell:
        """The cell of a (batch size, power limit), checked against the trace."""
        cell = self.cells.get((batch_size, power_limit))
        if cell is None:
            trace = self.trace
            raise SimulationError(
                f"{trace.workload.name} on {trace.gpu} has no power trace for batch size "
                f"{batch_size} at {power_limit} W; batch sizes {list(trace.batch_sizes)}, "
                f"limits {list(trace.power_limits)}"
            )
        return cell

    def profile(self, plo: PowerLimitOptimizer, batch_size: int) -> None:
        """Show ``plo`` one epoch's cost at every profiled limit, highest first."""
        i = self.trace.index(batch_size)
        for j in reversed(range(len(self.trace.power_limits))):
            cost = self.profile_costs[i, j]
            if not math.isnan(cost):
                plo.observe(batch_size, self.trace.power_limits[j], float(cost))

    def run(
        self,
        batch_size: int,
        power_limit: int,
        rng: np.random.Generator,
        threshold: float,
        profiling: bool,
    ) -> Run | None:
        """Run once; None when not even one epoch fits under the cost ``threshold``."""
        cell = self.cells.get((batch_size, power_limit)) or self.cell(batch_size, power_limit)
        runs = cell.runs
        target = runs[int(rng.integers(0, len(runs)))]
        cap = epoch_cap(threshold, cell.stop_cost, self.max_epochs)
        if cap == 0:
            return None
        reached = target <= cap  # False for NaN: this repetition never reaches the target
        epochs = target if reached else cap
        if profiling:
            time = cell.first_time + cell.time * (epochs - 1)
            energy = cell.first_energy + cell.energy * (epochs - 1)
        else:
            time, energy = cell.time * epochs, cell.energy * epochs
        cost = self.eta * energy + (1 - self.eta) * self.max_power * time
        return Run(time, energy, cost, reached)


def epoch_cap(threshold: float, epoch_cost: float, max_epochs: int) -> float:
    """Epochs a run may take: ⌊threshold / per-epoch cost⌋, at most ``max_epochs``."""
    if math.isinf(threshold):
        return max_epochs
    return min(threshold // epoch_cost, max_epochs)


def choose_power_limit(
    model: RunModel, plo: PowerLimitOptimizer, batch_size: int
) -> tuple[int, bool]:
    """The power limit for ``batch_size`` and whether this run profiles the limits first."""
    power_limit = plo.predict(batch_size)
    if power_limit is not None:
        return power_limit, False
    model.profile(plo, batch_size)
    power_limit = plo.predict(batch_size)
    if power_limit is None:
        raise SimulationError(
            f"the power limit optimizer chose nothing for {batch_size} after profiling"
        )
    return power_limit, True


def simulate_job(
    model: RunModel,
    policy: Policy,
    *,
    seed: int,
    beta: float,
    recurrences: int | None = None,
) -> Runs:
    """Run one job ``recurrences`` times (default 2·|B|·|P|) under ``policy``."""
    job = RecurringJob(model, policy, seed, beta)
    best = math.inf
    count = model.trace.default_recurrences if recurrences is None else recurrences
    for recurrence in range(1, count + 1):
        best = min(best, job.recur(recurrence, threshold=job.beta * best))
    return job.runs


class RecurringJob:
    """One job under one policy and seed: its optimizers, generator and recorded runs."""

    def __init__(self, model: RunModel, policy: Policy, seed: int, beta: float) -> None:
        self.model = model
        self.bso, self.plo = policy.build(JobContext(model.trace, model.eta, beta, seed))
        self.rng = np.random.default_rng(seed)
        self.beta = beta if policy.early_stopping else math.inf
        self.max_attempts = policy.max_attempts
        self.runs = Runs()

    def recur(self, recurrence: int, threshold: float) -> float:
        """Attempt one recurrence until a run reaches the target; return its total cost."""
        model, bso, runs = self.model, self.bso, self.runs
        spent = 0.0
        for attempt in itertools.count(1):
            if self.max_attempts is not None and attempt > self.max_attempts:
                raise SimulationError(
                    f"{model.trace.workload.name} on {model.trace.gpu}: recurrence {recurrence} "
                    f"did not reach the target in {self.max_attempts} attempts"
                )
            batch_size = bso.predict()
            power_limit, profiling = choose_power_limit(model, self.plo, batch_size)
            run = model.run(batch_size, power_limit, self.rng, threshold, profiling)
            if run is None:
                bso.observe(batch_size, UNRUNNABLE_PENALTY * threshold, False)
                continue
            spent += run.cost
            bso.observe(batch_size, run.cost, run.reached)
            runs.append((recurrence, attempt, batch_size, power_limit, *run))
            if run.reached:
                break
            if recurrence == 1:
                raise SimulationError(
                    f"{model.trace.workload.name} on {model.trace.gpu}: the first run (batch "
                    f"size {batch_size}) did not reach the target; the first recurrence must "
                    "succeed, so start from a feasible batch size such as b0"
                )
        return spent
