"""Replay GPU-cluster traces through deadline-aware schedulers (ElasticFlow's evaluation).

A trace-driven simulator of a GPU cluster (nodes × GPUs from a cluster spec)
running jobs (arrival, work in iterations or seconds, requested GPUs,
optional deadline) under a scheduling policy. The ElasticFlow artifact's
policies are reproduced round by round — same slots, same planning, same
overheads — so their per-job outcomes match the artifact's simulator:

=============  ===================================================  ==========================
name           policy                                               artifact ``--schedule``
=============  ===================================================  ==========================
edf            earliest deadline first, elastic                     ``edf``
gandiva        node sets with time slicing, rigid                   ``gandiva``
tiresias       2D-LAS on GPU-time, preemptive, rigid                ``dlas-gpu``
themis         finish-time fairness in 60 s leases, rigid           ``themis``
chronus        deadline guarantees as 240 s GPU leases, rigid       ``time-aware-with-lease``
elasticflow    admission control + elastic scaling                  ``ef-accessctrl``
edf-admission  EDF + admission control (Fig. 9)                     ``edf-accessctrl``
edf-elastic    EDF + elastic scaling: ElasticFlow, no admission     ``ef``
fifo, sjf      baselines on the event engine (:mod:`.engine`)       —
=============  ===================================================  ==========================

Chronus is the artifact's separate ``chronus-scheduler``; its lease programs
(python-mip on Gurobi there) are solved with HiGHS (:mod:`.leases`), and
``Chronus(plans="packing")`` is what the artifact does without Gurobi (see
:mod:`.chronus`). ``ElasticFlow(repricing="chosen")`` is a faster
approximation of the artifact's ElasticFlow for large traces (see
:mod:`.elasticflow`); Themis solves the artifact's own conic program with ECOS
(a dependency of mltraces); should ``ecos`` be missing it falls back to an
analytic optimum that can rank jobs differently when the optimum is not unique
(:mod:`.themis`).

What the per-job table counts, as the artifact does: a job is finished at the
end its policy records (EDF: its last planned end; ElasticFlow: the plan's
unaligned end, with GPUs held to the next slot boundary; Gandiva, Tiresias,
Themis: when its trace duration or iterations are done), and meets its
deadline when that end is no later than the deadline. The deadline
satisfactory ratio is jobs meeting their deadline over all jobs, declined
ones included.

Public API::

    schedule(jobs, cluster, throughputs=None, policies="edf", *, trace_name="trace",
             slot=60, overhead=None) -> ScheduleResult
    sweep(cases, policies="all", executor=None, *, max_workers=None) -> ScheduleResult
    Case.build(trace, jobs, cluster, throughputs=None, *, slot=60, overhead=Overhead())
    ScheduleResult: .jobs, .summary, .utilisation (DataFrames), .ratios(), .outcomes
    EDF(), EDFAdmission(), EDFElastic(), Gandiva(shift_invariant=False),
    Tiresias(thresholds=(3250, 7200)), Themis(),
    Chronus(plans="auto" | "highs" | "packing", ties=None), ElasticFlow(repricing="all" | "chosen"),
    FIFO(), SJF()
    Policy (protocol: name, simulate(setup) -> Recorder), AllocationPolicy
    (engine base: allocate(now, view), optional admit/quantum), get_policy, POLICIES
    ClusterSpec (.from_name("n32g8"), .from_csv(path)), load_profiles(folder),
    Profiles, read_jobs_csv(path), as_jobs(frame), Jobs, JobRecords, Overhead

The engine names no paper setup, no source and no catalog table: the papers' setups
(traces and clusters per experiment, the artifact's trace generator, the published
ratios) live in :mod:`mltraces.papers`, and reading job traces, cluster specs and
throughput profiles from the catalog in :mod:`mltraces.workloads.cluster`. Names that
moved from here to a paper still work for one release, with a :class:`DeprecationWarning`.

Inputs stay plain: job tables as pandas/pyarrow in the ITP, artifact (Philly)
or AcmeTrace format (:mod:`.jobs`), the artifact's throughput folder and
cluster-spec CSVs. Pandas is used only at these edges; the replays run on
numpy columns (:class:`JobRecords`) and plain Python data, on times since the
trace's first submission (``Setup.origin``; the result tables add it back).

>>> from mltraces.scheduling import schedule                          # doctest: +SKIP
>>> result = schedule("cluster10.csv", "n32g8", "throughputs_A100", "edf,elasticflow")
>>> result.summary[["policy", "ddl_satis_ratio", "mean_jct"]]          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from mltraces.scheduling.api import (
    ALIASES,
    POLICIES,
    Case,
    get_policy,
    process_pool,
    resolve_policies,
    run_case,
    schedule,
    sweep,
)
from mltraces.scheduling.base import Policy, Setup
from mltraces.scheduling.cluster import ClusterSpec
from mltraces.scheduling.cores import native
from mltraces.scheduling.engine import AllocationPolicy, View
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.jobs import COLUMNS, Job, JobRecords, Jobs, as_jobs, read_jobs_csv
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
from mltraces.scheduling.profiles import Curve, Profiles, load_profiles
from mltraces.scheduling.results import Outcome, Recorder, ScheduleResult

native.install()  # the cores are imported on first use; they may have to run as Python


def __getattr__(name: str) -> Any:
    """Public names that moved to a paper (with a DeprecationWarning), for one release."""
    from mltraces import _moved

    return _moved.attribute(__name__, name)

__all__ = [
    "ALIASES",
    "COLUMNS",
    "EDF",
    "FIFO",
    "POLICIES",
    "SJF",
    "AllocationPolicy",
    "Case",
    "Chronus",
    "ClusterSpec",
    "Curve",
    "EDFAdmission",
    "EDFElastic",
    "ElasticFlow",
    "Gandiva",
    "Job",
    "JobRecords",
    "Jobs",
    "Outcome",
    "Overhead",
    "Policy",
    "Profiles",
    "Recorder",
    "ScheduleResult",
    "SchedulingError",
    "Setup",
    "Themis",
    "Tiresias",
    "View",
    "as_jobs",
    "get_policy",
    "load_profiles",
    "process_pool",
    "read_jobs_csv",
    "resolve_policies",
    "run_case",
    "schedule",
    "sweep",
]
