"""Outcomes: what a replay records as it runs, and the tables built from it afterwards.

:class:`Recorder` is the only thing the inner loops write to (plain lists, no
pandas). :class:`Outcome` is one (trace, cluster, policy) run;
:class:`ScheduleResult` stacks outcomes into the per-job table, the summary
and the allocated-GPU step series.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import add

import numpy as np
import pandas as pd

from mltraces.scheduling.jobs import Job, JobRecords

NAN = math.nan


class Recorder:
    """Per-job outcome lists, the step series of allocated GPUs, and the rounds' efficiency.

    ``speedups`` (per job: GPU count → throughput there / throughput on one GPU)
    and the cluster's ``gpus`` let a policy log its *cluster efficiency* after
    each scheduling round with :meth:`round`, as the artifact writes it to
    ``scheduling_events.csv`` (ElasticFlow Fig. 10).
    """

    def __init__(self, jobs: Sequence[Job], speedups: Sequence[Mapping[int, float]] | None = None,
                 gpus: int = 0) -> None:
        jobs = JobRecords.of(jobs)
        n = len(jobs)
        self.jobs = jobs
        self._deadline = jobs.deadline.tolist()
        self.admitted = [True] * n
        self.start = [NAN] * n
        self.finish = [NAN] * n
        self.met = [False] * n
        self.gpu_seconds = [0.0] * n
        self._gpus = [0] * n
        self._since = [0.0] * n
        self._total = 0
        self.times: list[float] = []
        self.allocated: list[int] = []
        self.rounds: list[float] = []
        self.efficiency: list[float] = []
        #: the finish the artifact's job log records, where it is not ``finish``
        self.logged_finish: list[float] | None = None
        #: per job, met by the deadline the trace lists, best-effort jobs too, where the
        #: policy judges that itself (Chronus); None: derived (see :attr:`Outcome.listed_met`)
        self.listed_met: list[bool] | None = None
        #: what the replay wants said beside its result (a solver's time limit reached, ...)
        self.notes: list[str] = []
        self._speedups = speedups
        self._cluster_gpus = gpus
        #: per job holding GPUs: its throughput there / on one GPU (its term of the efficiency)
        self._holding: dict[int, float] = {}
        #: the efficiency sum of ``_holding`` as :meth:`round` last found it (None: changed since)
        self._held_sum: float | None = None

    def round(self, now: float, holding: Iterable[tuple[int, int]] | None = None) -> None:
        """Log a scheduling round at ``now``: the cluster efficiency of the jobs holding GPUs.

        Efficiency = Σ throughput(n)/throughput(1) over those jobs, ÷ the
        cluster's GPUs (the artifact's ``get_efficiency``), summed in job
        order. ``holding`` gives (job, GPUs) explicitly; by default, the
        GPUs of :meth:`set_gpus`. Nothing is logged without ``speedups``.
        """
        if self._speedups is None:
            return
        if holding is not None:
            total = self._efficiency_sum(holding)
        elif self._held_sum is not None:  # nobody took or gave GPUs since
            total = self._held_sum
        else:  # the same additions as _efficiency_sum's, in job order, looped in C
            terms = self._holding
            total = self._held_sum = reduce(add, map(terms.__getitem__, sorted(terms)), 0.0)
        self.rounds.append(now)
        self.efficiency.append(total / self._cluster_gpus)

    def _efficiency_sum(self, holding: Iterable[tuple[int, int]]) -> float:
        """Σ throughput(n)/throughput(1) over (job, n) pairs, in job order."""
        speedups = self._speedups
        total = 0.0
        for job, gpus in sorted(holding):
            total += speedups[job].get(gpus, NAN)
        return total

    def unchanged_rounds(self, times: Iterable[float]) -> None:
        """Log rounds at ``times`` in which nothing changed: each has the efficiency of the
        jobs holding GPUs now (summed once; for a replay that passes over quiet steps)."""
        stamps = [float(t) for t in times]
        if self._speedups is None or not stamps:
            return
        self.round(stamps[0])
        self.repeat_rounds(stamps[1:])

    def repeat_rounds(self, times: Sequence[float]) -> None:
        """Log rounds at ``times`` with the last logged round's efficiency, not summed again:
        for a replay that knows the same jobs hold the same GPUs (nothing when no round is
        logged yet, or rounds are not logged)."""
        if self.rounds and len(times):
            self.rounds.extend(times)
            self.efficiency.extend([self.efficiency[-1]] * len(times))

    def reject(self, job: int) -> None:
        self.admitted[job] = False

    def set_gpus(self, job: int, now: float, gpus: int) -> None:
        """The job holds ``gpus`` GPUs from ``now`` on (0 releases them)."""
        old = self._gpus[job]
        if gpus == old:
            return
        if old:
            self.gpu_seconds[job] += old * (now - self._since[job])
        elif gpus and self.start[job] != self.start[job]:  # first GPUs: the start
            self.start[job] = now
        self._gpus[job] = gpus
        self._since[job] = now
        self._total += gpus - old
        if self._speedups is not None:  # only a replay that logs its rounds reads it
            self._held_sum = None
            if gpus:
                self._holding[job] = self._speedups[job].get(gpus, NAN)
            else:
                del self._holding[job]
        if self.times and self.times[-1] == now:
            self.allocated[-1] = self._total
        else:
            self.times.append(now)
            self.allocated.append(self._total)

    def hold(self, job: int, now: float) -> None:
        """The job keeps its GPUs through ``now``: records what releasing and taking them
        again at ``now`` would (its GPU-seconds credited up to ``now``, a point of the series
        at ``now``), for a policy that restarts jobs on the GPUs they hold, in one call."""
        self.gpu_seconds[job] += self._gpus[job] * (now - self._since[job])
        self._since[job] = now
        if not (self.times and self.times[-1] == now):
            self.times.append(now)
            self.allocated.append(self._total)

    def started(self, job: int, now: float) -> None:
        """Record a start explicitly (policies whose jobs may hold no GPUs at first)."""
        if self.start[job] != self.start[job]:
            self.start[job] = now

    def charge(self, job: int, gpu_seconds: float) -> None:
        """Add GPU-seconds directly (policies that account per period)."""
        self.gpu_seconds[job] += gpu_seconds

    def mark(self, now: float, allocated: int) -> None:
        """Record the cluster-wide allocated GPUs from ``now`` on (per-period accounting)."""
        if self.times and self.times[-1] == now:
            self.allocated[-1] = allocated
        elif not self.allocated or self.allocated[-1] != allocated:
            self.times.append(now)
            self.allocated.append(allocated)

    def finished(self, job: int, finish: float, now: float, met: bool | None = None) -> None:
        """The job completed at ``finish``; its GPUs are released at ``now``."""
        self.set_gpus(job, now, 0)
        self.finish[job] = finish
        self.met[job] = finish <= self._deadline[job] if met is None else met

    def outcome(self, policy: str, cluster_gpus: int, seconds: float = NAN) -> Outcome:
        return Outcome(
            policy=policy,
            jobs=self.jobs,
            admitted=self.admitted,
            start=self.start,
            finish=self.finish,
            met=self.met,
            gpu_seconds=self.gpu_seconds,
            times=self.times,
            allocated=self.allocated,
            cluster_gpus=cluster_gpus,
            seconds=seconds,
            rounds=self.rounds,
            efficiency=self.efficiency,
            logged_finish=self.finish if self.logged_finish is None else self.logged_finish,
            listed_met=self.listed_met,
            notes=list(self.notes),
        )


@dataclass
class Outcome:
    """One replay: per-job lists in job-index order, and the allocated-GPU steps.

    Times in the lists are seconds since ``origin`` (the replay's clock, see
    :class:`~mltraces.scheduling.base.Setup`); the tables add ``origin`` back.
    """

    policy: str
    jobs: JobRecords
    admitted: list[bool]
    start: list[float]
    finish: list[float]
    met: list[bool]
    gpu_seconds: list[float]
    times: list[float]
    allocated: list[int]
    cluster_gpus: int
    seconds: float = NAN
    cpu_seconds: float = NAN
    trace: str = ""
    cluster: str = ""
    origin: float = 0.0
    rounds: list[float] = field(default_factory=list)
    efficiency: list[float] = field(default_factory=list)
    logged_finish: list[float] | None = None
    #: per job, met by its listed deadline, best-effort jobs too (see :attr:`listed_ratio`)
    listed_met: list[bool] | None = None
    #: what the replay said beside its result (e.g. Chronus's solver time limit reached)
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Deadline satisfactory ratio: jobs done by their deadline / all jobs (rejected too).

        Best-effort jobs have no deadline and count on neither side (the artifact
        counts only the others as accepted or declined). This is the ratio the CLI
        prints (``ddl_satis_ratio``).
        """
        timed = ~JobRecords.of(self.jobs).best_effort
        count = int(timed.sum())
        return int((np.array(self.met, bool) & timed).sum()) / count if count else NAN

    def listed_hits(self) -> np.ndarray:
        """Per job: done by the deadline the trace lists, best-effort jobs included (their
        listed deadline, not none); the policy's own verdict where it gives one."""
        jobs = JobRecords.of(self.jobs)
        if self.listed_met is not None:
            return np.array(self.listed_met, bool)
        finish = np.array(self.finish, float)
        judged = np.isfinite(finish) & (finish <= jobs.listed_deadline)
        return np.where(jobs.best_effort, judged, np.array(self.met, bool))

    @property
    def listed_ratio(self) -> float:
        """Met / all jobs with a listed deadline, best-effort jobs counted against theirs:
        the count the artifact's Chronus converter makes (it writes every job as a deadline
        job). Equal to :attr:`ratio` on a trace without best-effort jobs
        (``ddl_satis_ratio_listed``)."""
        listed = np.isfinite(JobRecords.of(self.jobs).listed_deadline)
        count = int(listed.sum())
        return int((self.listed_hits() & listed).sum()) / count if count else NAN

    def job_frame(self) -> pd.DataFrame:
        jobs, origin = JobRecords.of(self.jobs), self.origin
        submit = jobs.submit_time
        deadline = jobs.deadline
        best_effort = jobs.best_effort
        start = np.array(self.start, float)
        finish = np.array(self.finish, float)
        return pd.DataFrame(
            {
                "trace": self.trace,
                "cluster": self.cluster,
                "policy": self.policy,
                "job_id": jobs.job_id,
                "num_gpu": jobs.num_gpu.astype(int),
                "submit_time": submit + origin,
                "admitted": np.array(self.admitted, bool),
                "start_time": start + origin,
                "finish_time": finish + origin,
                "best_effort": best_effort,
                "deadline": np.where(np.isfinite(deadline) & ~best_effort, deadline + origin,
                                     np.nan),
                "deadline_met": np.array(self.met, bool) & ~best_effort,
                "jct": finish - submit,
                "logged_jct": np.array(self.finish if self.logged_finish is None
                                       else self.logged_finish, float) - submit,
                "queueing_delay": start - submit,
                "gpu_seconds": np.array(self.gpu_seconds, float),
            }
        )

    def summary_row(self) -> dict:
        jobs = JobRecords.of(self.jobs)
        submit, best_effort = jobs.submit_time, jobs.best_effort
        jct = np.array(self.finish, float) - submit
        queue = np.array(self.start, float) - submit
        done = np.isfinite(jct)
        started = np.isfinite(queue)
        first = float(submit.min()) if len(submit) else NAN
        end = float(np.nanmax(self.finish)) if done.any() else NAN
        makespan = end - first
        busy = utilisation_integral(self.times, self.allocated, end)
        return {
            "trace": self.trace,
            "cluster": self.cluster,
            "policy": self.policy,
            "jobs": len(self.jobs),
            "best_effort": int(best_effort.sum()),
            "admitted": int(sum(self.admitted)),
            "finished": int(done.sum()),
            "deadline_met": int((np.array(self.met, bool) & ~best_effort).sum()),
            "ddl_satis_ratio": self.ratio,
            "ddl_satis_ratio_listed": self.listed_ratio,
            "mean_jct": float(jct[done].mean()) if done.any() else NAN,
            "median_jct": float(np.median(jct[done])) if done.any() else NAN,
            "mean_queueing_delay": float(queue[started].mean()) if started.any() else NAN,
            "makespan": makespan,
            "gpu_seconds": float(sum(self.gpu_seconds)),
            "mean_utilisation": busy / (self.cluster_gpus * makespan) if makespan > 0 else NAN,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "notes": "; ".join(self.notes),
        }

    def utilisation_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "trace": self.trace,
                "cluster": self.cluster,
                "policy": self.policy,
                "time": np.array(self.times, float) + self.origin,
                "allocated_gpus": np.array(self.allocated, int),
                "cluster_gpus": self.cluster_gpus,
            }
        )

    def efficiency_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "trace": self.trace,
                "cluster": self.cluster,
                "policy": self.policy,
                "time": np.array(self.rounds, float) + self.origin,
                "efficiency": np.array(self.efficiency, float),
            }
        )


def utilisation_integral(times: Sequence[float], allocated: Sequence[int], end: float) -> float:
    """GPU-seconds under the allocated-GPU step series up to ``end``."""
    if not len(times) or not math.isfinite(end):
        return 0.0
    t = np.append(np.asarray(times, float), end)
    return float(np.sum(np.asarray(allocated, float) * np.clip(np.diff(t), 0, None)))


@dataclass
class ScheduleResult:
    """Outcomes of one or more (trace, cluster, policy) replays.

    Attributes:
        outcomes: One :class:`Outcome` per replay, in the order asked.
        jobs: Per-job table: trace, cluster, policy, job_id, num_gpu, submit_time,
            admitted, start_time, finish_time, best_effort, deadline, deadline_met,
            jct, logged_jct (the JCT the artifact's job log records: for ElasticFlow
            up to its planned, slot-aligned end; jct elsewhere), queueing_delay,
            gpu_seconds (times in the trace's seconds).
        summary: One row per replay: jobs, best_effort (jobs without a deadline),
            admitted, finished, deadline_met, ddl_satis_ratio (met / all jobs with
            a deadline, rejected ones included; best-effort jobs on neither side: what
            the CLI prints), ddl_satis_ratio_listed (met / all jobs with a listed
            deadline, best-effort ones counted against theirs: how the artifact's Chronus
            converter counts), mean/median JCT, mean queueing delay, makespan,
            GPU-seconds, mean utilisation, the replay's wall and CPU time in seconds,
            and its notes (e.g. a solver time limit reached).
        utilisation: The allocated-GPU step series (time, allocated_gpus) per replay:
            GPUs held from that time until the next row.
        efficiency: The cluster efficiency after each scheduling round (time,
            efficiency) per replay, for the policies that log their rounds (the
            artifact's ``scheduling_events.csv``, ElasticFlow Fig. 10).
    """

    outcomes: list[Outcome] = field(default_factory=list)

    @classmethod
    def concat(cls, results: Iterable[ScheduleResult]) -> ScheduleResult:
        return cls([o for r in results for o in r.outcomes])

    @property
    def jobs(self) -> pd.DataFrame:
        return pd.concat([o.job_frame() for o in self.outcomes], ignore_index=True)

    @property
    def summary(self) -> pd.DataFrame:
        return pd.DataFrame([o.summary_row() for o in self.outcomes])

    @property
    def utilisation(self) -> pd.DataFrame:
        return pd.concat([o.utilisation_frame() for o in self.outcomes], ignore_index=True)

    @property
    def efficiency(self) -> pd.DataFrame:
        return pd.concat([o.efficiency_frame() for o in self.outcomes], ignore_index=True)

    @property
    def notes(self) -> list[str]:
        """Every replay's notes, each as ``trace / policy: note``."""
        return [f"{o.trace} / {o.policy}: {note}" for o in self.outcomes for note in o.notes]

    def ratios(self) -> pd.DataFrame:
        """Deadline satisfactory ratio as a trace × policy table."""
        s = self.summary
        return s.pivot_table(index="trace", columns="policy", values="ddl_satis_ratio", sort=False)

    def __repr__(self) -> str:
        return f"<ScheduleResult: {len(self.outcomes)} replays>"
