"""Replay recurring training jobs on the Zeus (NSDI'23) traces, with pluggable policies.

>>> from mltraces.simulation import TraceSet, simulate                 # doctest: +SKIP
>>> traces = TraceSet.from_csv_dir("zeus_nsdi23/trace")                # doctest: +SKIP
>>> result = simulate(traces, "v100", "librispeech", "zeus,default", range(1, 11))  # doctest: +SKIP
>>> result.summary[["policy", "seed", "energy_vs_default", "regret"]]  # doctest: +SKIP

Modules: :mod:`.traces` (the trace model), :mod:`.policies` (protocols, Zeus
and the baselines), :mod:`.engine` (the recurrence loop and early stopping),
:mod:`.sweep` (:func:`simulate`), :mod:`.metrics` (summaries) and
:mod:`.alibaba` (the Alibaba recurring-group replay).
"""

from __future__ import annotations

from typing import Any

from mltraces.simulation.engine import RunModel, simulate_job
from mltraces.simulation.metrics import cumulative, summarize
from mltraces.simulation.policies import (
    MAX_ATTEMPTS,
    POLICIES,
    BatchSizeOptimizer,
    DefaultBatchSize,
    GaussianThompson,
    GridSearch,
    JITPowerLimitOptimizer,
    JobContext,
    MaxPowerLimit,
    Oracle,
    Policy,
    PowerLimitOptimizer,
    PruningExplorer,
    ZeusBatchSizeOptimizer,
    get_policy,
)
from mltraces.simulation.sweep import SimulationResult, simulate
from mltraces.simulation.traces import (
    WORKLOADS,
    JobTrace,
    SimulationError,
    TraceSet,
    Workload,
)

__all__ = [
    "MAX_ATTEMPTS",
    "POLICIES",
    "WORKLOADS",
    "BatchSizeOptimizer",
    "DefaultBatchSize",
    "GaussianThompson",
    "GridSearch",
    "JITPowerLimitOptimizer",
    "JobContext",
    "JobTrace",
    "MaxPowerLimit",
    "Oracle",
    "Policy",
    "PowerLimitOptimizer",
    "PruningExplorer",
    "RunModel",
    "SimulationError",
    "SimulationResult",
    "TraceSet",
    "Workload",
    "ZeusBatchSizeOptimizer",
    "cumulative",
    "get_policy",
    "replay_alibaba",
    "simulate",
    "simulate_job",
    "summarize",
]


def __getattr__(name: str) -> Any:
    """``replay_alibaba`` loads on first use: its module needs pandas, the sweep does not.
    Names that moved to :mod:`mltraces.workloads` warn for one release."""
    if name == "replay_alibaba":
        from mltraces.simulation.alibaba import replay_alibaba

        return replay_alibaba
    from mltraces import _moved

    return _moved.attribute(__name__, name)
