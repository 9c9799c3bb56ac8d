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

Helios's QSSF evaluation filter (``--recipe helios-qssf``) is not here: no
artifact or document available to this project states it (the Helios artifact
is not among the snapshots), so it cannot be stated as the artifact applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mltraces.errors import MltracesError

__all__ = ["RECIPES", "Recipe", "Rule", "apply", "get_recipe"]


@dataclass(frozen=True)
class Rule:
    """One rule: the jobs it keeps (a predicate on the common columns) and why."""

    name: str
    description: str
    keeps: Callable[[pd.DataFrame], pd.Series]
    #: the columns it needs; a rule whose columns a trace does not record keeps every job
    #: and is reported as not applicable
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recipe:
    """A paper artifact's filter, rule by rule, in the order the artifact applies them."""

    name: str
    title: str
    artifact: str  # repository@commit path
    rules: tuple[Rule, ...]


def _known(frame: pd.DataFrame, column: str) -> bool:
    """True when the trace records ``column`` (a state of UNKNOWN is not recorded)."""
    if column == "state":
        return bool((frame["state"] != "UNKNOWN").any())
    return bool(frame[column].notna().any())


def apply(recipe: Recipe, frame: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """The jobs ``recipe`` keeps and, per rule, how many it removed (or why it could not run)."""
    kept = frame
    report = []
    for rule in recipe.rules:
        missing = [c for c in rule.needs if not _known(frame, c)]
        if missing:
            report.append({"rule": rule.name, "description": rule.description, "removed": 0,
                           "applied": False,
                           "why": f"the trace records no {', '.join(missing)}"})
            continue
        keep = rule.keeps(kept).fillna(False).astype(bool)
        report.append({"rule": rule.name, "description": rule.description,
                       "removed": int((~keep).sum()), "applied": True})
        kept = kept[keep]
    return kept, report


_ELASTICFLOW_GPUS = (1, 2, 4, 8, 16, 32, 64)

POLLUX = Recipe(
    "pollux", "Pollux (OSDI'21): jobs of at least 60 s and under 1,000 GPU-hours",
    "petuum/adaptdl@c793c7089bd307462686339d29707925c461f9a9 simulator/workload.py",
    (Rule("duration_at_least_60s", "run time >= 60 s (trace.duration >= 60)",
          lambda f: f["run_s"] >= 60, ("run_s",)),
     Rule("gpu_time_under_1000h", "GPU time < 1,000 GPU-hours (trace.gpu_time < 1000 * 3600)",
          lambda f: f["run_s"] * f["num_gpu"] < 1000 * 3600, ("run_s",))))

ELASTICFLOW_ITP = Recipe(
    "elasticflow-itp",
    "ElasticFlow (ASPLOS'23): the ITP jobs its evaluation traces keep",
    "gudiandian/ElasticFlow@b3f5ea4c9fa92107b0e0e2ba7c06900f4a0ec03a "
    "ElasticFlow/trace_generator/generate_trace_from_itp.py",
    (Rule("not_failed", "status is not failed", lambda f: f["state"] != "FAILED", ("state",)),
     Rule("submit_not_negative", "submission time >= 0", lambda f: f["submit_s"] >= 0),
     Rule("gpus_not_3_5_6_7", "not 3, 5, 6 or 7 GPUs", lambda f: ~f["num_gpu"].isin([3, 5, 6, 7])),
     Rule("duration_at_least_600s", "run time >= 600 s (int(duration) < 10 * 60 is dropped)",
          lambda f: f["run_s"] >= 600, ("run_s",)),
     Rule("gpus_at_most_64", "at most 64 GPUs", lambda f: f["num_gpu"] <= 64),
     Rule("gpus_profiled", "a GPU count with an A100 throughput profile (1, 2, 4, 8, 16, 32, 64):"
          " generate_job_from_itp returns False for the others and the job is skipped",
          lambda f: f["num_gpu"].isin(_ELASTICFLOW_GPUS))))

def _wall_seconds(frame: pd.DataFrame) -> pd.Series:
    """Submission on the trace's wall clock, in seconds from its first job that ran (Synergy
    subtracts naive datetimes, so a DST change shifts later jobs by an hour)."""
    ran = frame["start_s"].notna()
    if frame["submit_time"].notna().all() and len(frame):
        wall = frame["submit_time"].dt.tz_localize(None)
        return (wall - wall[ran].min()).dt.total_seconds()
    return frame["submit_s"] - frame.loc[ran, "submit_s"].min()


def _wall_run(frame: pd.DataFrame) -> pd.Series:
    """Run time on the trace's wall clock (Synergy subtracts naive times: a job running over
    the end of daylight saving time gains an hour), else ``run_s``."""
    if frame["start_time"].notna().any():
        wall = frame["end_time"].dt.tz_localize(None) - frame["start_time"].dt.tz_localize(None)
        return wall.dt.total_seconds().where(frame["start_time"].notna(), frame["run_s"])
    return frame["run_s"]


def _first(count: int) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda f: pd.Series(np.arange(len(f)) < count, index=f.index)


SYNERGY_PHILLY = Recipe(
    "synergy-philly",
    "Synergy (OSDI'22): the Philly jobs its multi-GPU replay parses",
    "msr-fiddle/synergy@1bb2bed simulator/helpers/parse_philly_trace_full.py "
    "(sum_attempts, multigpu)",
    (Rule("ran", "at least one attempt (a start time)", lambda f: f["start_s"].notna()),
     Rule("hours_2400_to_3000", "submitted after hour 2,400 and before hour 3,000 from the first "
          "submission of a job that ran, on the wall clock ('demand > 512 GPUs')",
          lambda f: _wall_seconds(f).between(3600 * 2400, 3600 * 3000, inclusive="neither")),
     Rule("finished", "its last attempt ended (an end time)", lambda f: f["end_s"].notna()),
     Rule("gpus_1_2_4_8_16", "1, 2, 4, 8 or 16 GPUs (others: the attempt is skipped)",
          lambda f: f["num_gpu"].isin([1, 2, 4, 8, 16])),
     Rule("run_time_positive", "run time > 0 (on the wall clock)", lambda f: _wall_run(f) > 0),
     Rule("gavel_like_duration", "10^1.5 min < run time < 10^4 min on the wall clock (the "
          "'gavel/gandiva like workload' bounds)",
          lambda f: _wall_run(f).between(10 ** 1.5 * 60, 1e4 * 60, inclusive="neither")),
     Rule("first_8000", "the first 8,000 such jobs in the log's order (it returns there)",
          _first(8000))))

RECIPES: dict[str, Recipe] = {r.name: r for r in (POLLUX, ELASTICFLOW_ITP, SYNERGY_PHILLY)}
#: recipes asked for that cannot be stated from a documented source, and why
UNAVAILABLE = {
    "helios-qssf": "Helios's QSSF evaluation filter is documented in the Helios artifact, which "
                   "is not available to this project; it is left out rather than guessed",
}


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; the error lists the known ones (and why one is missing)."""
    if name in RECIPES:
        return RECIPES[name]
    why = UNAVAILABLE.get(name)
    known = ", ".join(RECIPES)
    if why:
        raise MltracesError(f"recipe {name!r} is not available: {why}. Recipes: {known}")
    raise MltracesError(f"unknown recipe {name!r}; recipes: {known}")
