"""Named, published filters: which jobs of a trace a paper's artifact keeps.

The same "Philly" is a different workload in every paper because each artifact
filters the trace its own way. A recipe states one artifact's filter as rules
over the common columns of ``mltraces.jobs`` (``run_s``, ``num_gpu``, ``state``,
...), applied in the artifact's order; :func:`apply` returns the kept jobs and
how many each rule removed, which an export records in its provenance. Each
rule says where the artifact applies it (repository, commit, file); the code is
ours, written from reading theirs.

- ``pollux``: Pollux (OSDI'21), ``petuum/adaptdl@c793c70`` ``simulator/workload.py``:
  keeps jobs of at least 60 s and under 1,000 GPU-hours of ``traces/philly.csv``
  before it samples its workloads.
- ``elasticflow-itp``: ElasticFlow (ASPLOS'23), ``gudiandian/ElasticFlow@b3f5ea4``
  ``trace_generator/generate_trace_from_itp.py``: drops failed jobs, negative
  submission times, 3/5/6/7-GPU jobs, jobs under 600 s and over 64 GPUs, then the
  jobs whose GPU count has no throughput profile (1, 2, 4, ..., 64 have one).
- ``synergy-philly``: Synergy (OSDI'22), ``msr-fiddle/synergy@1bb2bed``
  ``simulator/helpers/parse_philly_trace_full.py`` as its Philly replay calls it
  (attempts summed, multi-GPU, not exponential): jobs that ran, submitted between
  hours 2,400 and 3,000 of the trace (counted on the wall clock from the first
  submission of a job that ran), that finished, with 1, 2, 4, 8 or 16 GPUs,
  between 10^1.5 and 10^4 minutes; the first 8,000 such jobs in the log's order.
  It sums the attempts' run times; the jobs view spans the first start to the
  last end, which also counts the gaps between attempts (the same for
  single-attempt jobs).

- ``helios-qssf`` and ``helios-qssf-july``: Helios (SC'21),
  ``S-Lab-System-Group/HeliosArtifact@bdaae10`` ``framework/QSSF Service/``: the
  jobs its QSSF simulator replays per VC (VC drops and merges, GPU jobs, configured
  VCs, jobs from the trace's origin, the Sept or July window counted from the
  first job; Philly's window for Philly), and each VC's capacity
  (:mod:`mltraces.interop.qssf`).

The mechanism (rules, passes over the trace, batches) is :mod:`mltraces.interop.filters`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from mltraces.errors import MltracesError
from mltraces.interop.filters import Facts, Gather, Recipe, Rule, apply
from mltraces.interop.qssf import HELIOS_QSSF, HELIOS_QSSF_JULY

__all__ = ["RECIPES", "Recipe", "Rule", "apply", "get_recipe"]

_ELASTICFLOW_GPUS = (1, 2, 4, 8, 16, 32, 64)

POLLUX = Recipe(
    "pollux", "Pollux (OSDI'21): jobs of at least 60 s and under 1,000 GPU-hours",
    "petuum/adaptdl@c793c7089bd307462686339d29707925c461f9a9 simulator/workload.py",
    (Rule("duration_at_least_60s", "run time >= 60 s (trace.duration >= 60)",
          lambda f, _: f["run_s"] >= 60, ("run_s",)),
     Rule("gpu_time_under_1000h", "GPU time < 1,000 GPU-hours (trace.gpu_time < 1000 * 3600)",
          lambda f, _: f["run_s"] * f["num_gpu"] < 1000 * 3600, ("run_s",))))

ELASTICFLOW_ITP = Recipe(
    "elasticflow-itp",
    "ElasticFlow (ASPLOS'23): the ITP jobs its evaluation traces keep",
    "gudiandian/ElasticFlow@b3f5ea4c9fa92107b0e0e2ba7c06900f4a0ec03a "
    "ElasticFlow/trace_generator/generate_trace_from_itp.py",
    (Rule("not_failed", "status is not failed", lambda f, _: f["state"] != "FAILED",
          ("state",)),
     Rule("submit_not_negative", "submission time >= 0", lambda f, _: f["submit_s"] >= 0),
     Rule("gpus_not_3_5_6_7", "not 3, 5, 6 or 7 GPUs",
          lambda f, _: ~f["num_gpu"].isin([3, 5, 6, 7])),
     Rule("duration_at_least_600s", "run time >= 600 s (int(duration) < 10 * 60 is dropped)",
          lambda f, _: f["run_s"] >= 600, ("run_s",)),
     Rule("gpus_at_most_64", "at most 64 GPUs", lambda f, _: f["num_gpu"] <= 64),
     Rule("gpus_profiled", "a GPU count with an A100 throughput profile (1, 2, 4, 8, 16, 32, 64):"
          " generate_job_from_itp returns False for the others and the job is skipped",
          lambda f, _: f["num_gpu"].isin(_ELASTICFLOW_GPUS))))


def _ran_origin(frame: pd.DataFrame) -> tuple[bool, Any, Any]:
    """Of the jobs reaching the window (they ran): whether every one has a clock time, and
    the first submission on the wall clock and in ``submit_s`` (Synergy's hour 0)."""
    wall = frame["submit_time"].dt.tz_localize(None)
    return (bool(frame["submit_time"].notna().all()), wall.min() if len(frame) else None,
            frame["submit_s"].min() if len(frame) else None)


def _first_origin(parts: list[tuple[bool, Any, Any]]) -> tuple[bool, Any, Any]:
    def first(values: list[Any]) -> Any:
        known = [v for v in values if v is not None and not pd.isna(v)]
        return min(known) if known else None
    return (all(p[0] for p in parts), first([p[1] for p in parts]),
            first([p[2] for p in parts]))


def _wall_seconds(frame: pd.DataFrame, facts: Facts) -> pd.Series:
    """Submission on the trace's wall clock, in seconds from its first job that ran (Synergy
    subtracts naive datetimes, so a DST change shifts later jobs by an hour); without clock
    times, from ``submit_s``."""
    clock, first_wall, first_s = facts.gathered
    if clock and first_wall is not None:
        return (frame["submit_time"].dt.tz_localize(None) - first_wall).dt.total_seconds()
    return frame["submit_s"] - (first_s if first_s is not None else np.nan)


def _wall_run(frame: pd.DataFrame) -> pd.Series:
    """Run time on the trace's wall clock (Synergy subtracts naive times: a job running over
    the end of daylight saving time gains an hour), else ``run_s``."""
    wall = frame["end_time"].dt.tz_localize(None) - frame["start_time"].dt.tz_localize(None)
    return wall.dt.total_seconds().where(frame["start_time"].notna(), frame["run_s"])


SYNERGY_PHILLY = Recipe(
    "synergy-philly",
    "Synergy (OSDI'22): the Philly jobs its multi-GPU replay parses",
    "msr-fiddle/synergy@1bb2bed simulator/helpers/parse_philly_trace_full.py "
    "(sum_attempts, multigpu)",
    (Rule("ran", "at least one attempt (a start time)", lambda f, _: f["start_s"].notna()),
     Rule("hours_2400_to_3000", "submitted after hour 2,400 and before hour 3,000 from the first "
          "submission of a job that ran, on the wall clock ('demand > 512 GPUs')",
          lambda f, facts: _wall_seconds(f, facts).between(3600 * 2400, 3600 * 3000,
                                                           inclusive="neither"),
          gather=Gather(_ran_origin, _first_origin)),
     Rule("finished", "its last attempt ended (an end time)", lambda f, _: f["end_s"].notna()),
     Rule("gpus_1_2_4_8_16", "1, 2, 4, 8 or 16 GPUs (others: the attempt is skipped)",
          lambda f, _: f["num_gpu"].isin([1, 2, 4, 8, 16])),
     Rule("run_time_positive", "run time > 0 (on the wall clock)",
          lambda f, _: _wall_run(f) > 0),
     Rule("gavel_like_duration", "10^1.5 min < run time < 10^4 min on the wall clock (the "
          "'gavel/gandiva like workload' bounds)",
          lambda f, _: _wall_run(f).between(10 ** 1.5 * 60, 1e4 * 60, inclusive="neither")),
     Rule("first_8000", "the first 8,000 such jobs in the log's order (it returns there)",
          limit=8000)))

RECIPES: dict[str, Recipe] = {r.name: r for r in (POLLUX, ELASTICFLOW_ITP, SYNERGY_PHILLY,
                                                 HELIOS_QSSF, HELIOS_QSSF_JULY)}


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; the error lists the known ones."""
    if name in RECIPES:
        return RECIPES[name]
    raise MltracesError(f"unknown recipe {name!r}; recipes: {', '.join(RECIPES)}")
