"""Policies: what batch size and power limit each recurrence of a job uses.

A policy is two small objects, built fresh for every simulated job (one GPU,
one workload, one seed) from a :class:`JobContext`:

- a :class:`BatchSizeOptimizer` (``predict() -> batch size``, and
  ``observe(batch_size, cost, reached)`` after every run), and
- a :class:`PowerLimitOptimizer` (``predict(batch_size) -> watts``, or ``None``
  to ask for a just-in-time profile; ``observe(batch_size, power_limit,
  epoch_cost)`` receives that profile, one call per limit, high to low).

:class:`Policy` names the pair. The shipped ones (:data:`POLICIES`) are Zeus
(pruning + Gaussian Thompson sampling, with JIT power profiling) and the paper's
baselines: Default, Grid Search, power-limit-only, batch-size-only and Oracle.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from mltraces.simulation.traces import JobTrace, SimulationError


@runtime_checkable
class BatchSizeOptimizer(Protocol):
    """Chooses the batch size of the next run and learns from its cost."""

    def predict(self) -> int:
        """The batch size to run next."""
        ...

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        """The cost of a finished (or early-stopped) run and whether it reached the target."""
        ...


@runtime_checkable
class PowerLimitOptimizer(Protocol):
    """Chooses the power limit for a batch size."""

    def predict(self, batch_size: int) -> int | None:
        """The power limit for ``batch_size``, or None to have it profiled first."""
        ...

    def observe(self, batch_size: int, power_limit: int, cost: float) -> None:
        """One epoch's cost at ``power_limit``, measured while profiling ``batch_size``."""
        ...


@dataclass(frozen=True)
class JobContext:
    """What a policy may know when it is built for one simulated job."""

    trace: JobTrace
    eta: float
    beta: float
    seed: int

    @property
    def batch_sizes(self) -> list[int]:
        """Feasible batch sizes, ascending."""
        return list(self.trace.batch_sizes)

    @property
    def default_batch_size(self) -> int:
        """b0, the user's batch size."""
        return self.trace.default_batch_size

    def rng(self) -> np.random.Generator:
        """A generator seeded with the simulation seed, for the policy's own draws."""
        return np.random.default_rng(self.seed)


#: Attempts per recurrence before a simulation gives up (the Zeus artifact's bound).
MAX_ATTEMPTS = 20

BatchSizeFactory = Callable[[JobContext], BatchSizeOptimizer]
PowerLimitFactory = Callable[[JobContext], PowerLimitOptimizer]


@dataclass(frozen=True)
class Policy:
    """A named (batch size, power limit) policy, built fresh for every job and seed.

    ``power_limit=None`` means the batch size optimizer chooses both knobs and
    exposes its power limit optimizer as ``.power_limits`` (Grid Search, Oracle).
    ``early_stopping`` lets the engine stop runs whose cost passes β × the best
    recurrence so far. ``max_attempts`` bounds the attempts of one recurrence
    (None: no bound, for Grid Search, whose exploration fails many times in a row).
    """

    name: str
    batch_size: BatchSizeFactory
    power_limit: PowerLimitFactory | None = None
    early_stopping: bool = True
    max_attempts: int | None = MAX_ATTEMPTS

    def build(self, context: JobContext) -> tuple[BatchSizeOptimizer, PowerLimitOptimizer]:
        """Fresh optimizers for one simulated job."""
        bso = self.batch_size(context)
        if self.power_limit is None:
            return bso, bso.power_limits  # type: ignore[attr-defined]
        return bso, self.power_limit(context)


# --------------------------------------------------------------------------- power limits


class JITPowerLimitOptimizer:
    """Zeus's power limit optimizer: profile a batch size once, keep its cheapest limit."""

    def __init__(self, context: JobContext | None = None) -> None:
        self.best: dict[int, tuple[float, int]] = {}

    def predict(self, batch_size: int) -> int | None:
        best = self.best.get(batch_size)
        return None if best is None else best[1]

    def observe(self, batch_size: int, power_limit: int, cost: float) -> None:
        best = self.best.get(batch_size)
        if best is None or cost < best[0]:  # strict: the first (highest) limit wins ties
            self.best[batch_size] = (cost, power_limit)


class MaxPowerLimit:
    """Always the largest power limit profiled for the batch size (the GPU's default)."""

    def __init__(self, context: JobContext) -> None:
        trace = context.trace
        self.limits = dict(
            zip(trace.batch_sizes, trace.top_power_limit.astype(int).tolist(), strict=True)
        )

    def predict(self, batch_size: int) -> int:
        return self.limits[batch_size]

    def observe(self, batch_size: int, power_limit: int, cost: float) -> None:
        pass


# --------------------------------------------------------------------------- batch sizes


class DefaultBatchSize:
    """Always b0."""

    def __init__(self, context: JobContext) -> None:
        self.batch_size = context.default_batch_size

    def predict(self) -> int:
        return self.batch_size

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        pass


class PruningExplorer:
    """Zeus's pruning exploration over a sorted list of batch sizes.

    Each round tries the current default, then smaller sizes in decreasing order
    until one fails, then larger sizes in increasing order until one fails.
    Sizes that reached the target survive into the next round, whose default is
    the round's cheapest success. After ``rounds`` rounds :attr:`survivors` is set.

    Results for a batch size other than the one being explored (concurrent runs
    in the Alibaba replay) are ignored here.
    """

    def __init__(self, batch_sizes: list[int], default: int, rounds: int = 2) -> None:
        if default not in batch_sizes:
            raise SimulationError(f"default batch size {default} not in {batch_sizes}")
        self.sizes = sorted(batch_sizes)
        self.default = default
        self.rounds_left = rounds
        self.survivors: list[int] | None = None
        self._start_round()

    def _start_round(self) -> None:
        i = self.sizes.index(self.default)
        self.legs = [self.sizes[i::-1], self.sizes[i + 1 :]]  # down (from the default), up
        self.leg, self.step = 0, 0
        self.good: list[int] = []
        self.best_cost = np.inf
        self._skip_empty_legs()

    @property
    def current(self) -> int | None:
        """The batch size to explore next; None once pruning is over."""
        if self.survivors is not None:
            return None
        return self.legs[self.leg][self.step]

    def report(self, batch_size: int, cost: float, reached: bool) -> None:
        """Feed the result of a run; only the batch size being explored counts."""
        if batch_size != self.current:
            return
        if reached:
            self.good.append(batch_size)
            if cost < self.best_cost:
                self.best_cost, self.default = cost, batch_size
            self.step += 1
            if self.step == len(self.legs[self.leg]):
                self._next_leg()
        else:
            self._next_leg()
        self._skip_empty_legs()

    def _next_leg(self) -> None:
        self.leg, self.step = self.leg + 1, 0

    def _skip_empty_legs(self) -> None:
        while self.leg < 2 and self.step >= len(self.legs[self.leg]):
            self._next_leg()
        if self.leg < 2:
            return
        self.rounds_left -= 1
        # A round where nothing reached the target leaves only its default to the next.
        self.sizes = sorted(self.good) or [self.default]
        if self.rounds_left > 0:
            self._start_round()
        else:
            self.survivors = self.sizes


class GaussianThompson:
    """Gaussian Thompson sampling with one arm per batch size and reward −cost.

    Flat prior; each arm's posterior is N(mean, var/n) of its observed rewards
    (the reward precision is learnt from the variance of that arm's history,
    kept with Welford's update). An arm with identical rewards is a point mass.
    Arms with fewer than ``min_observations`` rewards are explored first, in
    random order. Plain floats: arms are few and this runs once per recurrence.
    """

    def __init__(
        self, arms: list[int], rng: np.random.Generator, min_observations: int = 2
    ) -> None:
        self.arms = list(arms)
        self.rng = rng
        self.min_observations = min_observations
        self.count = [0] * len(arms)
        self.mean = [0.0] * len(arms)
        self.sd = [math.inf] * len(arms)
        self._squares = [0.0] * len(arms)  # sum of squared deviations from the mean
        self._slot = {arm: i for i, arm in enumerate(arms)}

    def observe(self, arm: int, reward: float) -> None:
        """Add one reward to an arm's posterior (rewards of other sizes are ignored)."""
        i = self._slot.get(arm)
        if i is None:
            return
        n = self.count[i] + 1
        delta = reward - self.mean[i]
        mean = self.mean[i] + delta / n
        self._squares[i] += delta * (reward - mean)
        self.count[i], self.mean[i] = n, mean
        self.sd[i] = math.sqrt(self._squares[i]) / n

    def predict(self) -> int:
        """Explore an under-observed arm, else the arm with the best sampled mean reward."""
        k = len(self.arms)
        order = self.rng.choice(k, k, replace=False)
        if min(self.count) < self.min_observations:
            return next(self.arms[i] for i in order if self.count[i] < self.min_observations)
        draws = self.rng.standard_normal(k).tolist()
        mean, sd = self.mean, self.sd
        best = max(range(k), key=lambda i: mean[i] + sd[i] * draws[i])
        return self.arms[best]


class ZeusBatchSizeOptimizer:
    """Zeus's batch size optimizer: two rounds of pruning, then Thompson sampling.

    Every observation (failures and early-stopped attempts included) is kept;
    when pruning ends the surviving sizes become bandit arms fitted on their
    whole history, and each later observation updates its arm.
    """

    def __init__(self, context: JobContext, rounds: int = 2) -> None:
        self.explorer = PruningExplorer(context.batch_sizes, context.default_batch_size, rounds)
        self.rng = context.rng()
        self.rewards: dict[int, list[float]] = {}
        self.bandit: GaussianThompson | None = None

    def predict(self) -> int:
        if self.bandit is None:
            batch_size = self.explorer.current
            if batch_size is not None:
                return batch_size
            self.bandit = GaussianThompson(self.explorer.survivors or [], self.rng)
            for arm in self.bandit.arms:
                for reward in self.rewards.get(arm, []):
                    self.bandit.observe(arm, reward)
        return self.bandit.predict()

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        self.rewards.setdefault(batch_size, []).append(-cost)
        if self.bandit is None:
            self.explorer.report(batch_size, cost, reached)
        else:
            self.bandit.observe(batch_size, -cost)


class PairedLimit:
    """Power limit optimizer of a joint policy: the limit paired with its current batch size."""

    def __init__(self) -> None:
        self.power_limit = 0

    def predict(self, batch_size: int) -> int:
        return self.power_limit

    def observe(self, batch_size: int, power_limit: int, cost: float) -> None:
        pass


class GridSearch:
    """Try every (batch size, power limit) once, then keep the cheapest that reached the target.

    Order: b0 first, then the other sizes ascending; each size's limits from
    the highest down. Failed and early-stopped runs just move on to the next cell.
    """

    def __init__(self, context: JobContext) -> None:
        trace = context.trace
        b0 = context.default_batch_size
        sizes = [b0] + [b for b in trace.batch_sizes if b != b0]
        limits = list(enumerate(trace.power_limits))[::-1]
        self.grid = [(b, p) for b in sizes for j, p in limits if trace.profiled[trace.index(b), j]]
        self.tried = 0
        self.best: tuple[float, int, int] | None = None
        self.power_limits = PairedLimit()

    def predict(self) -> int:
        if self.tried < len(self.grid) or self.best is None:
            batch_size, self.power_limits.power_limit = self.grid[self.tried % len(self.grid)]
            self.tried += 1
            return batch_size
        _, batch_size, self.power_limits.power_limit = self.best
        return batch_size

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        if reached and (self.best is None or cost < self.best[0]):
            self.best = (cost, batch_size, self.power_limits.power_limit)


class Oracle:
    """The (batch size, power limit) with the lowest expected cost, known in advance."""

    def __init__(self, context: JobContext) -> None:
        trace = context.trace
        costs = trace.expected_cost(context.eta)[:, ::-1]  # ties go to the higher limit
        i, j = np.unravel_index(np.argmin(costs), costs.shape)
        self.batch_size = trace.batch_sizes[i]
        self.power_limits = PairedLimit()
        self.power_limits.power_limit = trace.power_limits[-1 - j]

    def predict(self) -> int:
        return self.batch_size

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        pass


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("zeus", ZeusBatchSizeOptimizer, JITPowerLimitOptimizer),
        Policy("default", DefaultBatchSize, MaxPowerLimit, early_stopping=False),
        Policy("grid", GridSearch, max_attempts=None),
        Policy("pl-only", DefaultBatchSize, JITPowerLimitOptimizer),
        Policy("bs-only", ZeusBatchSizeOptimizer, MaxPowerLimit),
        Policy("oracle", Oracle, early_stopping=False),
    )
}


def get_policy(policy: str | Policy) -> Policy:
    """A shipped policy by name (or the object itself)."""
    if isinstance(policy, Policy):
        return policy
    try:
        return POLICIES[policy]
    except KeyError:
        raise SimulationError(
            f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)} "
            "or pass a mltraces.simulation.Policy"
        ) from None
