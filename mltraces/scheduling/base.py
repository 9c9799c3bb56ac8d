"""What every policy receives (:class:`Setup`) and the protocol a policy implements.

Two ways to plug in a policy:

* implement :class:`Policy` — ``name`` and ``simulate(setup) -> Recorder`` — and
  own the whole replay (the shipped ElasticFlow-artifact policies do this, since
  each reproduces its own event loop of the reference);
* or subclass :class:`mltraces.scheduling.engine.AllocationPolicy` and write only
  ``allocate(now, view)`` (which jobs get how many GPUs); the shared
  event-driven engine does arrivals, progress, completions and bookkeeping.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from mltraces.scheduling.cluster import ClusterSpec
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.jobs import Job
from mltraces.scheduling.overhead import Overhead
from mltraces.scheduling.profiles import Curve, Profiles
from mltraces.scheduling.results import Recorder


@dataclass(frozen=True)
class Setup:
    """One replay's inputs: jobs in submission order, the cluster, throughputs, knobs.

    Attributes:
        jobs: Jobs in submission order; ``job.index`` is their position.
        cluster: The cluster spec.
        profiles: Throughput curves (``None`` for duration-only traces).
        slot: Scheduling slot in seconds (the artifact's ``--scheduling_slot``).
        overhead: Restart-overhead constants (``Overhead.none()`` to switch off).
    """

    jobs: Sequence[Job]
    cluster: ClusterSpec
    profiles: Profiles | None = None
    slot: float = 60
    overhead: Overhead = field(default_factory=Overhead)

    def __post_init__(self) -> None:
        try:
            slot = float(self.slot)
        except (TypeError, ValueError):
            slot = math.nan
        if not 0 < slot < math.inf:
            raise SchedulingError(
                f"the scheduling slot must be a positive number of seconds, got {self.slot!r}"
            )  # a replay's clock advances by slots: anything else never ends

    @property
    def gpus(self) -> int:
        return self.cluster.gpus

    def speedups(self) -> list[dict[int, float]] | None:
        """Per job: GPU count → throughput there ÷ throughput on one GPU (None without
        profiles for every job). Jobs of one (model, batch size) share a table."""
        if self.profiles is None or not all(job.model for job in self.jobs):
            return None
        tables: dict[tuple[str, int], dict[int, float]] = {}
        out = []
        for job in self.jobs:
            key = (job.model, job.batch_size)
            if key not in tables:
                speed = self.curve(job).speed
                one = speed.get(1, math.nan)
                tables[key] = {n: s / one for n, s in speed.items()}
            out.append(tables[key])
        return out

    def recorder(self) -> Recorder:
        """A :class:`Recorder` for these jobs that can log the rounds' cluster efficiency."""
        return Recorder(self.jobs, self.speedups(), self.gpus)

    def curve(self, job: Job) -> Curve:
        """The job's throughput curve; a clear error for duration-only jobs."""
        if self.profiles is None or not job.model:
            raise SchedulingError(
                f"job {job.job_id!r} has no throughput profile (model {job.model!r}); this "
                "policy needs iterations and throughputs — use fifo, sjf or tiresias for "
                "duration-only traces, or pass throughputs="
            )
        return self.profiles.curve(job.model, job.batch_size)


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: a name and a replay of the whole trace."""

    name: str

    def simulate(self, setup: Setup) -> Recorder:
        """Replay ``setup.jobs`` on ``setup.cluster``; return the filled :class:`Recorder`."""
        ...
