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

import numpy as np

from mltraces.config import max_replay_memory
from mltraces.scheduling.cluster import ClusterSpec
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.jobs import Job, JobRecords
from mltraces.scheduling.overhead import Overhead
from mltraces.scheduling.profiles import Curve, Profiles
from mltraces.scheduling.results import Recorder

#: the shortest scheduling slot a replay accepts, in seconds
MIN_SLOT = 1.0


@dataclass(frozen=True)
class Setup:
    """One replay's inputs: jobs in submission order, the cluster, throughputs, knobs.

    Attributes:
        jobs: Jobs in submission order; ``job.index`` is their position (any
            sequence of :class:`Job`; kept as :class:`JobRecords`, whose columns
            the replays that scale read).
        cluster: The cluster spec.
        profiles: Throughput curves (``None`` for duration-only traces).
        slot: Scheduling slot in seconds (the artifact's ``--scheduling_slot``).
        overhead: Restart-overhead constants (``Overhead.none()`` to switch off).
        origin: Where the jobs' clock starts, in the trace's seconds: the jobs'
            times are seconds since then, and the result tables add it back.
            :meth:`Case.setup <mltraces.scheduling.api.Case.setup>` sets it to
            the first submission, so a trace in epoch seconds replays as
            precisely as one that starts at 0.
    """

    jobs: Sequence[Job]
    cluster: ClusterSpec
    profiles: Profiles | None = None
    slot: float = 60
    overhead: Overhead = field(default_factory=Overhead)
    origin: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", JobRecords.of(self.jobs))
        try:
            slot = float(self.slot)
        except (TypeError, ValueError):
            slot = math.nan
        if not MIN_SLOT <= slot < math.inf:
            raise SchedulingError(
                f"the scheduling slot must be a number of seconds from {MIN_SLOT:g} (the "
                f"artifact uses 60), got {self.slot!r}: a replay runs up to a round per slot, "
                "so a month-long trace would take billions of rounds below a second"
            )  # and a slot that is not a positive number would never advance the clock

    @property
    def gpus(self) -> int:
        return self.cluster.gpus

    def clock_phase(self, period: float) -> float:
        """Seconds past a whole ``period`` of the trace's own clock at the jobs' time 0.

        The replays count from the first submission (:attr:`origin`), but some of the
        artifact's policies act on a grid of the trace's clock (Gandiva rotates on its
        minutes, Chronus leases on its 240 s): they shift the jobs by this much so their
        grid stays where the artifact's is, at any clock magnitude.
        """
        return float(self.origin % period) if math.isfinite(self.origin) else 0.0

    def check_memory(self, policy: str, needed: float, grows_as: str) -> None:
        """Refuse, before allocating, a replay whose cluster-sized arrays would need more
        than ``MLTRACES_MAX_REPLAY_MEMORY`` bytes."""
        limit = max_replay_memory()
        if needed > limit:
            raise SchedulingError(
                f"{policy} on {self.cluster.name} ({self.gpus:,} GPUs) with {len(self.jobs):,} "
                f"jobs needs about {_size(needed)} of working memory ({grows_as}); the limit "
                f"is {_size(limit)} (set MLTRACES_MAX_REPLAY_MEMORY to allow more)"
            )

    def speedups(self) -> list[dict[int, float]] | None:
        """Per job: GPU count → throughput there ÷ throughput on one GPU (None without
        profiles for every job). Jobs of one (model, batch size) share a table."""
        models = JobRecords.of(self.jobs).model  # a column: no million Job objects for this
        if self.profiles is None or not (models != "").all():
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
        return self._curve(job.job_id, job.model, job.batch_size)

    def _curve(self, job_id: str, model: str, batch_size: int) -> Curve:
        if self.profiles is None or not model:
            raise SchedulingError(
                f"job {job_id!r} has no throughput profile (model {model!r}); this "
                "policy needs iterations and throughputs — use fifo, sjf or tiresias for "
                "duration-only traces, or pass throughputs="
            )
        return self.profiles.curve(model, batch_size)

    def speed_at_request(self, which: np.ndarray | None = None, *, policy: str = "") -> np.ndarray:
        """Work per second of each job on the GPUs it asked for: 1 for duration-only
        jobs (seconds of run time), the profiled iterations/s otherwise. Jobs outside
        the mask ``which`` get 0. With ``policy`` named, a job whose profile has no
        usable speed at its GPU count is an error (that policy runs jobs on the GPUs
        they ask for); without, its speed is 0."""
        jobs = self.jobs
        timed = np.isnan(jobs.iterations)
        speed = np.where(timed, 1.0, 0.0)
        chosen = ~timed if which is None else ~timed & which
        seen: dict[tuple[str, int, int], float] = {}
        for j in np.flatnonzero(chosen).tolist():
            key = (jobs.model[j], int(jobs.batch_size[j]), int(jobs.num_gpu[j]))
            rate = seen.get(key)
            if rate is None:
                curve = self._curve(jobs.job_id[j], key[0], key[1])
                rate = seen[key] = curve.speed.get(key[2], 0.0)
            if not rate and policy:
                raise SchedulingError(
                    f"job {jobs.job_id[j]!r} asks for {key[2]} GPU(s), where the throughput "
                    f"profile of {key[0]!r} at batch size {key[1]} has no usable speed (0 or "
                    f"missing; it runs on {list(curve.allowed) or 'none'}); {policy} runs a job "
                    "on the GPUs it asks for, so it could never end"
                )
            speed[j] = rate
        return speed


def _size(count: float) -> str:
    if count >= 2**50:  # an absurd request: its order of magnitude says enough
        return f"{count / 2**40:.2g} TiB"
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:.0f} B"


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: a name and a replay of the whole trace."""

    name: str

    def simulate(self, setup: Setup) -> Recorder:
        """Replay ``setup.jobs`` on ``setup.cluster``; return the filled :class:`Recorder`."""
        ...
