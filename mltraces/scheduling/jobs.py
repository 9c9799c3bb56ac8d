"""Jobs: one normalised table, read from any mapped job trace through its mapping.

Every input becomes a :class:`Jobs` table with the columns of :data:`COLUMNS`,
sorted by submission time (stable, so ties keep file order as in the
reference). Traces are not told apart by their columns here: each source
declares how its job tables map onto the common columns of ``mltraces.jobs``
(``jobs.json`` in its folder, :mod:`mltraces.jobmap`), and a replay reads
``submit_s``, ``run_s``, ``num_gpu`` and, where the trace has them (ElasticFlow's
annotations), ``model``, ``batch_size``, ``iterations`` and ``deadline_s``
(:func:`from_common`). A trace without iterations gives duration-only jobs; one
without deadlines, jobs whose deadline is infinite. Accepted inputs:

* a table in the common columns (:func:`mltraces.scheduling.inputs.load_jobs`
  reads one from the catalog);
* a table in the columns of a mapped job table (the ITP CSVs, the artifact's
  ``philly_103959.csv``, an AcmeTrace trace): :func:`as_jobs` applies that
  table's mapping (``table=`` names it; by default the mapping whose columns the
  frame has, the one that reads the most of them);
* an already-normalised frame (the columns below).

A ``best_effort`` column (the artifact's generated traces, ElasticFlow Fig. 11)
marks jobs without a deadline: as in the artifact, their deadline becomes
``sys.maxsize`` (:data:`BEST_EFFORT_DEADLINE`, so they sort after every real
deadline), and the deadline satisfactory ratio counts only the other jobs.
The deadline the trace lists stays on the job (``listed_deadline``): the
artifact's Chronus gets it, as its trace converter writes every job with one.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mltraces.scheduling.errors import SchedulingError

#: normalised columns: name -> meaning
COLUMNS = {
    "job_id": "the trace's job id (text)",
    "submit_time": "arrival, seconds",
    "model": "model name of the throughput profile ('' for duration-only jobs)",
    "batch_size": "global batch size (0 when unknown)",
    "num_gpu": "GPUs the job asked for",
    "iterations": "work in iterations (NaN for duration-only jobs)",
    "duration": "run time in seconds at num_gpu GPUs (NaN when unknown)",
    "deadline": "absolute deadline, seconds (inf: none)",
    "best_effort": "True for a best-effort job: no deadline, left out of the deadline ratio",
}
#: the common columns of mltraces.jobs a replay reads
COMMON = ("job_id", "submit_s", "run_s", "num_gpu", "model", "batch_size", "iterations",
          "deadline_s")
#: a column a replay reads beside the common ones when a trace has it (generated traces)
BEST_EFFORT = "best_effort"
#: the deadline a best-effort job is replayed with (the artifact's ``sys.maxsize``)
BEST_EFFORT_DEADLINE = sys.maxsize

@dataclass(frozen=True)
class Job:
    """One job, as the simulator's inner loop sees it."""

    index: int
    job_id: str
    submit_time: float
    model: str
    batch_size: int
    num_gpu: int
    iterations: float
    duration: float
    deadline: float
    best_effort: bool = False
    #: the deadline the trace lists, kept for a best-effort job too (whose ``deadline`` is
    #: :data:`BEST_EFFORT_DEADLINE`): the artifact's Chronus converter passes it on
    listed_deadline: float = math.inf


class Jobs:
    """A normalised job table (pandas at the edge; :meth:`records` for the inner loop)."""

    def __init__(self, frame: pd.DataFrame, origin: Any = None) -> None:
        self.frame = frame
        self.origin = origin
        self._records: tuple[Job, ...] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Ship the table, not the records: a worker builds its own once."""
        return {**self.__dict__, "_records": None}

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return f"<Jobs: {len(self)} jobs>"

    @property
    def has_iterations(self) -> bool:
        return bool(len(self.frame)) and bool(self.frame["iterations"].notna().all())

    def records(self) -> tuple[Job, ...]:
        """Plain objects in submission order (the simulator's job indices).

        Built once per table and shared by every replay of it (a sweep replays
        one table under several policies; building them is pandas work that
        costs a small replay as much as a third of its time). The jobs are
        frozen and the sequence a tuple, so no replay can change another's.
        """
        if self._records is None:
            self._records = self._build_records()
        return self._records

    def _build_records(self) -> tuple[Job, ...]:
        f = self.frame
        return tuple(
            Job(i, *row)
            for i, row in enumerate(
                zip(
                    f["job_id"].astype(str).tolist(),
                    _numbers(f["submit_time"]),
                    f["model"].astype(str).tolist(),
                    f["batch_size"].astype(int).tolist(),
                    f["num_gpu"].astype(int).tolist(),
                    f["iterations"].astype(float).tolist(),
                    f["duration"].astype(float).tolist(),
                    _deadlines(f),
                    f["best_effort"].astype(bool).tolist(),
                    _numbers(f["deadline"]),
                    strict=True,
                )
            )
        )

    def __iter__(self) -> Iterator[Job]:
        return iter(self.records())


def _numbers(series: pd.Series) -> list[float]:
    """Integral seconds stay ints (the reference's arithmetic is on ints), else floats."""
    values = series.astype(float).tolist()
    return [int(v) if math.isfinite(v) and v == int(v) else v for v in values]


def _deadlines(frame: pd.DataFrame) -> list[float]:
    """The replayed deadlines: best-effort jobs get :data:`BEST_EFFORT_DEADLINE`."""
    return [BEST_EFFORT_DEADLINE if best else deadline for deadline, best in
            zip(_numbers(frame["deadline"]), frame["best_effort"].tolist(), strict=True)]


def _finish(frame: pd.DataFrame, origin: Any = None) -> Jobs:
    if "best_effort" not in frame:
        frame = frame.assign(best_effort=False)
    frame = frame[list(COLUMNS)].copy()
    bad = frame["num_gpu"].isna() | (frame["num_gpu"] < 1) | frame["submit_time"].isna()
    if bad.any():
        rows = frame.index[bad][:5].tolist()
        raise SchedulingError(
            f"{int(bad.sum())} jobs lack a submission time or ask for < 1 GPU (first rows: "
            f"{rows}); drop them before scheduling"
        )
    no_work = frame["iterations"].isna() & frame["duration"].isna()
    if no_work.any():
        raise SchedulingError(
            f"{int(no_work.sum())} jobs have neither iterations nor a duration; every job "
            "needs its work (num_iteration/iteration or duration)"
        )
    frame["deadline"] = frame["deadline"].astype(float).fillna(math.inf)
    frame["best_effort"] = _flags(frame["best_effort"])  # their deadline stays, as listed
    frame = frame.sort_values("submit_time", kind="mergesort").reset_index(drop=True)
    return Jobs(frame, origin)


def from_common(frame: pd.DataFrame, *, clock: bool = False, include_cpu_jobs: bool = False
                ) -> Jobs:
    """Jobs from rows in the common columns of ``mltraces.jobs`` (:data:`COMMON`).

    CPU jobs (``num_gpu == 0``) are left out unless asked for (then they take one
    GPU), and so are jobs whose work is unknown (no run time and no iterations: still
    running when the trace ends). A fractional GPU request (shared GPUs) takes whole
    GPUs: ``ceil(num_gpu)``. ``clock`` traces count seconds from their first
    submission (kept in ``Jobs.origin``); relative traces keep their own seconds, as
    the reference replays them. A :data:`BEST_EFFORT` column, if present, is kept.
    """
    missing = [c for c in COMMON if c not in frame]
    if missing:
        raise SchedulingError(f"jobs in the common columns need {missing} (mltraces.jobs)")
    gpus = frame["num_gpu"].astype(float)
    work = frame["run_s"].notna() | frame["iterations"].notna()
    keep = (work & ((gpus != 0) | include_cpu_jobs)).to_numpy()
    submit = frame["submit_s"].astype(float)
    deadline = frame["deadline_s"].astype(float)
    origin = None
    if clock and len(frame):
        first = submit.min()
        submit, deadline = submit - first, deadline - first
        origin = pd.Timestamp(first, unit="s", tz="UTC")
    if not clock and submit.notna().all() and (submit == submit.round()).all():
        submit = submit.astype(np.int64)  # whole seconds stay integers, as the trace has them
    gpus = np.ceil(gpus).where(gpus != 0, 1.0)
    out = pd.DataFrame(
        {
            "job_id": frame["job_id"].astype(str),
            "submit_time": submit,
            "model": frame["model"].fillna("").astype(str),
            "batch_size": frame["batch_size"].fillna(0).astype(int),
            "num_gpu": gpus.astype(np.int64) if gpus.notna().all() else gpus,
            "iterations": frame["iterations"].astype(float),
            "duration": frame["run_s"].astype(float),
            "deadline": deadline,
            "best_effort": frame.get(BEST_EFFORT, False),
        }
    )[keep]
    if out.empty:
        raise SchedulingError(f"none of the {len(frame)} jobs can be replayed: each is a CPU job "
                              "or has no known work (no run time, no iterations)")
    return _finish(out, origin)


def _flags(column: pd.Series) -> pd.Series:
    """A 0/1 (or boolean) best-effort column as booleans; anything else is an error."""
    values = column.fillna(0)
    bad = ~values.isin([0, 1, True, False])
    if bad.any():
        row = values.index[bad][0]
        value = values[row].item() if hasattr(values[row], "item") else values[row]
        raise SchedulingError(f"best_effort must be 0 or 1; row {row} has {value!r}")
    return values.astype(bool)


def _common_frame(frame: pd.DataFrame, table: str | None) -> tuple[pd.DataFrame, bool]:
    """``frame`` (a mapped table's columns) in the common columns, and whether it has a clock.

    A :data:`BEST_EFFORT` column that no mapping reads is passed through beside them.
    """
    import duckdb

    from mltraces.jobmap import job_table, select_sql

    entry = job_table(table) if table is not None else _mapping_for(list(frame.columns))
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("_frame", frame)
        extra = [BEST_EFFORT] if BEST_EFFORT in frame else []
        query = select_sql(entry, "_frame", list(frame.columns), extra=extra, absolute=True)
        columns = ", ".join([*COMMON, *extra])
        found = con.sql(f"SELECT {columns} FROM ({query})").to_arrow_table().to_pandas()
    except duckdb.Error as error:
        raise SchedulingError(f"cannot read the jobs as {entry.table} (its mapping, "
                              f"{entry.path}): {str(error).splitlines()[0]}") from None
    finally:
        con.close()
    return found, entry.kind != "relative"


def _mapping_for(columns: list[str]) -> Any:
    """The mapped job table whose mapping reads the most of ``columns`` (and nothing else)."""
    from mltraces.jobmap import job_tables, referenced_columns
    from mltraces.schema import get_schema

    best, best_used = None, -1
    for name, entry in sorted(job_tables().items()):
        schema = get_schema(name)
        used = referenced_columns(entry, [*schema.field_names, *(d.name for d in schema.derived)])
        if used <= set(columns) and len(used) > best_used:
            best, best_used = entry, len(used)
    if best is None:
        known = ", ".join(sorted(job_tables()))
        raise SchedulingError(
            f"cannot tell the trace format from columns {sorted(columns)}: no mapped job table "
            f"reads only these ({known}); pass table='SOURCE.TABLE', or the normalised columns "
            f"({list(COLUMNS)}), or the common ones of mltraces.jobs ({list(COMMON)})")
    return best


def as_jobs(jobs: Jobs | pd.DataFrame | Any, table: str | None = None, **options: Any) -> Jobs:
    """Normalise any accepted input (see the module docstring); ``table`` names its mapping."""
    if isinstance(jobs, Jobs):
        return jobs
    if isinstance(jobs, (str, Path)):
        return read_jobs_csv(jobs, table, **options)
    if hasattr(jobs, "to_pandas") and not isinstance(jobs, pd.DataFrame):
        jobs = jobs.to_pandas()  # a pyarrow table
    if not isinstance(jobs, pd.DataFrame):
        raise SchedulingError(
            f"jobs must be a Jobs table, a pandas DataFrame, a pyarrow Table or a CSV path; "
            f"got {type(jobs).__name__}"
        )
    columns = set(jobs.columns)
    if table is None and columns >= set(COLUMNS) - {BEST_EFFORT}:
        return _finish(jobs)
    if table is None and columns >= set(COMMON):
        return from_common(jobs, **options)
    common, clock = _common_frame(jobs, table)
    return from_common(common, clock=clock, **options)


def read_jobs_csv(path: str | Path, table: str | None = None, **options: Any) -> Jobs:
    """Read an upstream job CSV (ITP cluster*.csv, philly_103959.csv, Acme tables)."""
    path = Path(path)
    if not path.is_file():
        raise SchedulingError(f"job trace {path} does not exist")
    return as_jobs(pd.read_csv(path, dtype={"job_id": str}), table, **options)
