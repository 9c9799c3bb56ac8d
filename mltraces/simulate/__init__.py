"""Replay recurring training jobs on the Zeus (NSDI'23) traces, with pluggable policies.

>>> from mltraces.simulate import TraceSet, simulate                 # doctest: +SKIP
>>> traces = TraceSet.from_csv_dir("zeus_nsdi23/trace")                # doctest: +SKIP
>>> result = simulate(traces, "v100", "librispeech", "zeus,default", range(1, 11))  # doctest: +SKIP
>>> result.summary[["policy", "seed", "energy_vs_default", "regret"]]  # doctest: +SKIP

Modules: :mod:`.traces` (the trace model), :mod:`.policies` (protocols, Zeus
and the baselines), :mod:`.engine` (the recurrence loop and early stopping),
:mod:`.sweep` (:func:`simulate`), :mod:`.metrics` (summaries) and
:mod:`.alibaba` (the Alibaba recurring-group replay).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from mltraces.simulate.alibaba import replay_alibaba
from mltraces.simulate.engine import RunModel, simulate_job
from mltraces.simulate.metrics import cumulative, summarize
from mltraces.simulate.policies import (
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
from mltraces.simulate.sweep import SimulationResult, simulate
from mltraces.simulate.traces import (
    WORKLOADS,
    JobTrace,
    SimulationError,
    TraceSet,
    Workload,
    load_traces,
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
    "load_traces",
    "replay_alibaba",
    "simulate",
    "simulate_job",
    "summarize",
]


class _CallableModule(types.ModuleType):
    """Lets ``mltraces.simulate(...)`` work even after ``import mltraces.simulate``.

    The package exports the function under the module's own name; once the
    submodule is imported, ``mltraces.simulate`` is this module, so calling it
    forwards to the function.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> SimulationResult:
        return simulate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
