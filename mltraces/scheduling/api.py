"""The front door: :func:`schedule` one trace, :func:`sweep` many, policies by name."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mltraces.scheduling.base import Policy, Setup
from mltraces.scheduling.cluster import ClusterSpec, as_cluster
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.jobs import Jobs, as_jobs
from mltraces.scheduling.overhead import Overhead
from mltraces.scheduling.policies.baselines import FIFO, SJF
from mltraces.scheduling.policies.chronus import Chronus
from mltraces.scheduling.policies.edf import EDF
from mltraces.scheduling.policies.edfadmit import EDFAdmission
from mltraces.scheduling.policies.efnoadmit import EDFElastic
from mltraces.scheduling.policies.elasticflow import ElasticFlow
from mltraces.scheduling.policies.gandiva import Gandiva
from mltraces.scheduling.policies.themis import Themis
from mltraces.scheduling.policies.tiresias import Tiresias
from mltraces.scheduling.profiles import Profiles, load_profiles
from mltraces.scheduling.results import Outcome, ScheduleResult
from mltraces.workers import Ahead, Deferred, current_ahead, process_pool

#: the shipped policies by name
POLICIES: dict[str, type] = {
    "edf": EDF,
    "gandiva": Gandiva,
    "tiresias": Tiresias,
    "themis": Themis,
    "chronus": Chronus,
    "elasticflow": ElasticFlow,
    "edf-admission": EDFAdmission,
    "edf-elastic": EDFElastic,
    "fifo": FIFO,
    "sjf": SJF,
}
#: the artifact's ``--schedule`` names
ALIASES = {"dlas-gpu": "tiresias", "ef-accessctrl": "elasticflow",
           "edf-accessctrl": "edf-admission", "ef": "edf-elastic",
           "time-aware-with-lease": "chronus"}


def get_policy(policy: str | Policy) -> Policy:
    """A policy object from a name (``"edf"``, the artifact's ``"dlas-gpu"``, …) or as given."""
    if not isinstance(policy, str):
        if not isinstance(policy, Policy):
            raise SchedulingError(
                f"{policy!r} is not a policy: it needs a name and simulate(setup) "
                "(see mltraces.scheduling.Policy) or subclass AllocationPolicy"
            )
        return policy
    key = ALIASES.get(policy.strip().lower(), policy.strip().lower())
    if key not in POLICIES:
        raise SchedulingError(
            f"unknown policy {policy!r}; choose from {', '.join(POLICIES)} "
            f"(or the artifact's names {', '.join(ALIASES)})"
        )
    return POLICIES[key]()


def resolve_policies(policies: str | Policy | Iterable[str | Policy]) -> list[Policy]:
    """Comma-separated names, ``"all"``, one policy, or an iterable of them."""
    if isinstance(policies, str):
        names = [p.strip() for p in policies.split(",") if p.strip()]
        if names == ["all"]:
            names = list(POLICIES)
        items: list = names
    elif isinstance(policies, Policy):
        items = [policies]
    else:
        items = list(policies)
    if not items:
        raise SchedulingError(f"no policy given; choose from {', '.join(POLICIES)}")
    return [get_policy(p) for p in items]


@dataclass(frozen=True)
class Case:
    """One trace on one cluster: what a replay needs besides the policy (picklable)."""

    trace: str
    jobs: Jobs
    cluster: ClusterSpec
    profiles: Profiles | None = None
    slot: float = 60
    overhead: Overhead = field(default_factory=Overhead)

    @classmethod
    def build(
        cls, trace: str, jobs: Any, cluster: Any, throughputs: Any = None, **options: Any
    ) -> Case:
        """Normalise every input (see :func:`schedule` for what is accepted)."""
        if throughputs is not None and not isinstance(throughputs, Profiles):
            throughputs = load_profiles(throughputs)
        return cls(trace, as_jobs(jobs), as_cluster(cluster), throughputs, **options)

    def setup(self) -> Setup:
        """The replay's inputs, times in seconds since the first submission (``origin``)."""
        return Setup(self.jobs.replay_jobs(), self.cluster, self.profiles, self.slot,
                     self.overhead, self.jobs.start)


def run_case(case: Case, policy: str | Policy) -> Outcome:
    """Replay one case under one policy (a module-level function, so executors can ship it)."""
    policy = get_policy(policy)
    setup = case.setup()
    start, cpu = time.perf_counter(), time.process_time()
    recorder = policy.simulate(setup)
    outcome = recorder.outcome(policy.name, setup.gpus, time.perf_counter() - start)
    outcome.cpu_seconds = time.process_time() - cpu
    outcome.trace, outcome.cluster = case.trace, case.cluster.name
    outcome.origin = setup.origin
    return outcome


def schedule(
    jobs: Any,
    cluster: ClusterSpec | str | Path,
    throughputs: Profiles | str | Path | None = None,
    policies: str | Policy | Iterable[str | Policy] = "edf",
    *,
    trace_name: str = "trace",
    slot: float = 60,
    overhead: Overhead | None = None,
) -> ScheduleResult:
    """Replay one trace on one cluster under one or more policies, in this process.

    Args:
        jobs: A DataFrame or pyarrow table in the ITP/ElasticFlow, artifact
            (Philly) or AcmeTrace format, a :class:`Jobs` table, or a CSV path.
        cluster: A :class:`ClusterSpec`, a name such as ``"n32g8"``, or a spec CSV.
        throughputs: :class:`Profiles` or the artifact's ``throughputs_A100``
            folder; not needed for duration-only traces under fifo/sjf/tiresias.
        policies: Names (``"edf,elasticflow"``, ``"all"``) or policy objects.
        trace_name: Label of the trace in the result tables.
        slot: Scheduling slot in seconds (the artifact's default 60).
        overhead: Restart-overhead constants (default: the artifact's).

    Returns:
        A :class:`ScheduleResult` with ``.jobs``, ``.summary`` and ``.utilisation``.
    """
    case = Case.build(
        trace_name, jobs, cluster, throughputs, slot=slot, overhead=overhead or Overhead()
    )
    return ScheduleResult([run_case(case, p) for p in resolve_policies(policies)])


def expected_cost(case: Case, policy: str | Policy) -> float:
    """A rough relative cost of one replay, to start the slow ones first."""
    name = policy if isinstance(policy, str) else policy.name
    weight = {"elasticflow": 20.0, "ef-accessctrl": 20.0, "edf-elastic": 20.0, "ef": 20.0,
              "chronus": 4.0}.get(name, 1.0)
    return len(case.jobs) * weight


def _costliest_first(pairs: Sequence[tuple[Case, Policy]]) -> list[int]:
    """Positions of ``pairs``, costliest replay first: a pool is not left waiting on one
    long replay at its end."""
    return sorted(range(len(pairs)), key=lambda k: -expected_cost(*pairs[k]))


def sweep(
    cases: Sequence[Case],
    policies: str | Policy | Iterable[str | Policy] = "all",
    executor: Executor | None = None,
    *,
    max_workers: int | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> ScheduleResult:
    """Replay every (case, policy) pair in parallel through any ``concurrent.futures`` executor.

    Args:
        cases: :class:`Case` objects (e.g. from :func:`fig8b_cases`).
        policies: As for :func:`schedule`.
        executor: Any Executor — a process pool, a ``dask.distributed``
            ``Client(...).get_executor()``, … Default: :func:`process_pool` with
            ``max_workers`` (default: the CPU count) workers, closed afterwards;
            its workers import policies by name, so a policy class defined in a
            notebook needs an executor of your own (a ``ThreadPoolExecutor``).
            Inside a :func:`mltraces.workers.ahead` block (a figure run), the
            block's one pool for every figure's replays (``max_workers`` is then
            the block's).
        on_done: Called with each outcome as its replay finishes (a progress bar).

    Returns:
        A :class:`ScheduleResult` with the outcomes in (case, policy) order.
    """
    chosen = resolve_policies(policies)
    pairs = [(case, policy) for case in cases for policy in chosen]
    session = current_ahead() if executor is None else None
    if session is not None:  # inside a figure run: one pool for every figure's replays
        return _sweep_ahead(session, pairs, on_done)
    own = executor is None
    if own:
        executor = process_pool(max_workers or os.cpu_count() or 1)
    try:
        futures = {k: executor.submit(run_case, *pairs[k]) for k in _costliest_first(pairs)}
        if on_done is not None:
            for future in as_completed(futures.values()):
                on_done(future.result())
        return ScheduleResult([futures[k].result() for k in range(len(pairs))])
    finally:
        if own:
            executor.shutdown()


def _sweep_ahead(session: Ahead, pairs: list[tuple[Case, Policy]],
                 on_done: Callable[[Outcome], None] | None) -> ScheduleResult:
    """:func:`sweep` through a :func:`mltraces.workers.ahead` pool.

    Collecting, it submits the replays (costliest first) and raises
    :class:`~mltraces.workers.Deferred`; asked again, it takes their results.
    """
    futures = {k: session.submit(run_case, *pairs[k]) for k in _costliest_first(pairs)}
    if session.collecting:
        raise Deferred
    if on_done is not None:
        for future in as_completed(futures.values()):
            on_done(future.result())
    outcomes = [futures[k].result() for k in range(len(pairs))]
    for future in futures.values():
        session.release(future)
    return ScheduleResult(outcomes)
