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

* a table in the common columns (:func:`mltraces.workloads.cluster.load_jobs`
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
import os
import sys
import threading
from collections.abc import Iterator, Sequence
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


class JobRecords(Sequence[Job]):
    """The jobs of one replay: numpy columns, and :class:`Job` objects when asked for.

    The loops that scale to millions of jobs (FIFO, SJF, Tiresias) read the
    columns; the others index or iterate :class:`Job` objects, which are built
    once, on first use (a million of them cost a second and ~0.5 GB, which a
    FIFO replay of a million jobs has no use for). Columns: ``job_id``,
    ``submit_time``, ``model`` (object arrays for the text), ``batch_size``,
    ``num_gpu`` (int64), ``iterations``, ``duration``, ``deadline`` (float64),
    ``best_effort`` (bool; such a job's column deadline is inf, its :class:`Job`'s
    :data:`BEST_EFFORT_DEADLINE`, as the artifact's), and ``listed_deadline``, the
    deadline the trace lists even for a best-effort job (Chronus plans with it).
    """

    __slots__ = (*COLUMNS, "listed_deadline", "_records")

    def __init__(self, listed_deadline: np.ndarray | None = None, **columns: np.ndarray) -> None:
        for name in COLUMNS:
            setattr(self, name, columns[name])
        self.listed_deadline = self.deadline if listed_deadline is None else listed_deadline
        self._records: tuple[Job, ...] | None = None

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, shift: float = 0.0) -> JobRecords:
        """The normalised table's columns, times less ``shift`` seconds."""
        listed = frame["deadline"].to_numpy(float) - shift
        best_effort = (frame["best_effort"].to_numpy(bool) if "best_effort" in frame
                       else np.zeros(len(frame), np.bool_))
        return cls(
            listed_deadline=listed,
            job_id=frame["job_id"].astype(str).to_numpy(object),
            submit_time=frame["submit_time"].to_numpy(float) - shift,
            model=frame["model"].astype(str).to_numpy(object),
            batch_size=frame["batch_size"].to_numpy(np.int64),
            num_gpu=frame["num_gpu"].to_numpy(np.int64),
            iterations=frame["iterations"].to_numpy(float),
            duration=frame["duration"].to_numpy(float),
            deadline=np.where(best_effort, math.inf, listed),
            best_effort=best_effort,
        )

    @classmethod
    def of(cls, jobs: Sequence[Job]) -> JobRecords:
        """Columns of hand-made :class:`Job` objects (``job.index`` must be the position)."""
        if isinstance(jobs, JobRecords):
            return jobs
        out = cls(**{
            name: np.array([getattr(j, field) for j in jobs], dtype)
            for name, field, dtype in (
                ("job_id", "job_id", object), ("submit_time", "submit_time", float),
                ("model", "model", object), ("batch_size", "batch_size", np.int64),
                ("num_gpu", "num_gpu", np.int64), ("iterations", "iterations", float),
                ("duration", "duration", float), ("deadline", "deadline", float),
                ("best_effort", "best_effort", np.bool_),
                ("listed_deadline", "listed_deadline", float))
        })
        out._records = tuple(jobs)
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Ship the columns, not the objects: a worker builds its own when it needs them."""
        return {name: getattr(self, name) for name in (*COLUMNS, "listed_deadline")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def __len__(self) -> int:
        return len(self.submit_time)

    def __getitem__(self, index):  # type: ignore[override]
        return self.records()[index]

    def __iter__(self) -> Iterator[Job]:
        return iter(self.records())

    def by_duration_unless_profiled(self, profiled: set[tuple[str, int]]
                                    ) -> tuple[Jobs, tuple[str, ...]]:
        """These jobs, each one whose (model, batch size) is not in ``profiled`` (a
        :class:`~mltraces.scheduling.profiles.Profiles`' ``curves``, or empty when there are
        none) turned into a duration-only job (no model, no iterations), with the models
        that had no profile. Only jobs with a known run time can: one that has neither a
        profile nor a run time is an error naming it."""
        frame = self.frame
        named = frame["model"] != ""
        keys = zip(frame["model"], frame["batch_size"].astype(int), strict=True)
        unprofiled = named & ~pd.Series([k in profiled for k in keys], index=frame.index)
        if not unprofiled.any():
            return self, ()
        stuck = unprofiled & frame["duration"].isna()
        if stuck.any():
            row = frame[stuck].iloc[0]
            raise SchedulingError(
                f"{int(stuck.sum())} jobs name a model with no throughput profile and have no "
                f"run time to replay by instead (first: job {row['job_id']!r}, model "
                f"{row['model']!r} at batch size {row['batch_size']}); map a duration for "
                "them, or load profiles that hold their models")
        models = tuple(sorted(set(frame.loc[unprofiled, "model"])))
        changed = frame.copy()
        changed.loc[unprofiled, "model"] = ""
        changed.loc[unprofiled, "batch_size"] = 0
        changed.loc[unprofiled, "iterations"] = math.nan
        return Jobs(changed, self.origin), models

    def __repr__(self) -> str:
        return f"<JobRecords: {len(self)} jobs>"

    def records(self) -> tuple[Job, ...]:
        """The jobs as frozen :class:`Job` objects (integral seconds stay ints, as the
        reference's arithmetic is on ints)."""
        if self._records is None:
            self._records = tuple(
                Job(i, *row)
                for i, row in enumerate(
                    zip(
                        self.job_id.tolist(),
                        _numbers(self.submit_time),
                        self.model.tolist(),
                        self.batch_size.tolist(),
                        self.num_gpu.tolist(),
                        self.iterations.tolist(),
                        self.duration.tolist(),
                        _deadlines(self.deadline, self.best_effort),
                        self.best_effort.tolist(),
                        _numbers(self.listed_deadline),
                        strict=True,
                    )
                )
            )
        return self._records


class Jobs:
    """A normalised job table (pandas at the edge; :meth:`replay_jobs` for the replays)."""

    def __init__(self, frame: pd.DataFrame, origin: Any = None) -> None:
        self.frame = frame
        self.origin = origin
        self._records: tuple[Job, ...] | None = None
        self._replay: JobRecords | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Ship the table, not the records: a worker builds its own once."""
        return {**self.__dict__, "_records": None, "_replay": None}

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return f"<Jobs: {len(self)} jobs>"

    @property
    def has_iterations(self) -> bool:
        return bool(len(self.frame)) and bool(self.frame["iterations"].notna().all())

    @property
    def start(self) -> float:
        """The first submission, in the table's seconds (0 for an empty table).

        Replays run on times measured from here (:meth:`replay_jobs`): a trace in
        epoch seconds or milliseconds (1.7e9, 1.7e12) then replays with the
        precision, and the result, of the same trace starting at 0.
        """
        if not len(self.frame):
            return 0.0
        return float(self.frame["submit_time"].min())

    def records(self) -> tuple[Job, ...]:
        """Plain objects in submission order (the simulator's job indices), times as in
        the table. Built once per table."""
        if self._records is None:
            self._records = JobRecords.from_frame(self.frame).records()
        return self._records

    def replay_jobs(self) -> JobRecords:
        """The jobs a replay works on: times in seconds since :attr:`start`.

        Built once per table and shared by every replay of it (a sweep replays
        one table under several policies); the columns are read-only, so no
        replay can change another's.
        """
        if self._replay is None:
            records = JobRecords.from_frame(self.frame, self.start)
            for name in (*COLUMNS, "listed_deadline"):
                getattr(records, name).flags.writeable = False
            self._replay = records
        return self._replay

    def __iter__(self) -> Iterator[Job]:
        return iter(self.records())

    def by_duration_unless_profiled(self, profiled: set[tuple[str, int]]
                                    ) -> tuple[Jobs, tuple[str, ...]]:
        """These jobs, each one whose (model, batch size) is not in ``profiled`` (a
        :class:`~mltraces.scheduling.profiles.Profiles`' ``curves``, or empty when there are
        none) turned into a duration-only job (no model, no iterations), with the models
        that had no profile. Only jobs with a known run time can: one that has neither a
        profile nor a run time is an error naming it."""
        frame = self.frame
        named = frame["model"] != ""
        keys = zip(frame["model"], frame["batch_size"].astype(int), strict=True)
        unprofiled = named & ~pd.Series([k in profiled for k in keys], index=frame.index)
        if not unprofiled.any():
            return self, ()
        stuck = unprofiled & frame["duration"].isna()
        if stuck.any():
            row = frame[stuck].iloc[0]
            raise SchedulingError(
                f"{int(stuck.sum())} jobs name a model with no throughput profile and have no "
                f"run time to replay by instead (first: job {row['job_id']!r}, model "
                f"{row['model']!r} at batch size {row['batch_size']}); map a duration for "
                "them, or load profiles that hold their models")
        models = tuple(sorted(set(frame.loc[unprofiled, "model"])))
        changed = frame.copy()
        changed.loc[unprofiled, "model"] = ""
        changed.loc[unprofiled, "batch_size"] = 0
        changed.loc[unprofiled, "iterations"] = math.nan
        return Jobs(changed, self.origin), models


def _numbers(values: np.ndarray) -> list[float]:
    """Integral seconds stay ints (the reference's arithmetic is on ints), else floats."""
    return [int(v) if math.isfinite(v) and v == int(v) else v for v in values.tolist()]


def _deadlines(deadline: np.ndarray, best_effort: np.ndarray) -> list[float]:
    """The replayed deadlines: best-effort jobs get :data:`BEST_EFFORT_DEADLINE`."""
    return [BEST_EFFORT_DEADLINE if best else value for value, best in
            zip(_numbers(deadline), best_effort.tolist(), strict=True)]


def _finish(frame: pd.DataFrame, origin: Any = None) -> Jobs:
    if "best_effort" not in frame:
        frame = frame.assign(best_effort=False)
    frame = frame[list(COLUMNS)].copy()
    submit = frame["submit_time"].astype(float)
    bad = frame["num_gpu"].isna() | (frame["num_gpu"] < 1) | ~np.isfinite(submit)
    if bad.any():
        rows = frame.index[bad][:5].tolist()
        raise SchedulingError(
            f"{int(bad.sum())} jobs lack a finite submission time or ask for < 1 GPU (first "
            f"rows: {rows}); drop them before scheduling"
        )
    no_work = frame["iterations"].isna() & frame["duration"].isna()
    if no_work.any():
        raise SchedulingError(
            f"{int(no_work.sum())} jobs have neither iterations nor a duration; every job "
            "needs its work (num_iteration/iteration or duration)"
        )
    for column in ("iterations", "duration"):
        values = frame[column].astype(float)
        odd = values.notna() & ~(np.isfinite(values) & (values >= 0))
        if odd.any():
            rows = frame.index[odd][:5].tolist()
            raise SchedulingError(
                f"{int(odd.sum())} jobs have a negative or infinite {column} (first rows: "
                f"{rows}, e.g. {values[odd].iloc[0]}); work is a finite number of "
                f"{'iterations' if column == 'iterations' else 'seconds'}"
            )
    frame["deadline"] = frame["deadline"].astype(float).fillna(math.inf)
    frame["best_effort"] = _flags(frame["best_effort"])  # their deadline stays, as listed
    if not frame["submit_time"].is_monotonic_increasing:  # traces mostly come sorted: a
        frame = frame.sort_values("submit_time", kind="mergesort")  # stable sort is 0.3 s/1M
    return Jobs(frame.reset_index(drop=True), origin)


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
    if not clock and np.isfinite(submit).all() and (submit == submit.round()).all():
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
    con = _mapping_connection()
    try:
        raw = BEST_EFFORT in frame and BEST_EFFORT not in entry.columns
        if raw:  # passed through as it is, beside the mapping (checked by _flags)
            frame = frame.rename(columns={BEST_EFFORT: _RAW_FLAGS})
        con.register("_frame", frame)
        query = select_sql(entry, "_frame", list(frame.columns), absolute=True,
                           extra=[_RAW_FLAGS] if raw else [])
        columns = ", ".join([*COMMON, f"{_RAW_FLAGS} AS {BEST_EFFORT}" if raw else BEST_EFFORT])
        found = con.sql(f"SELECT {columns} FROM ({query})").to_arrow_table().to_pandas()
    except duckdb.Error as error:
        raise SchedulingError(f"cannot read the jobs as {entry.table} (its mapping, "
                              f"{entry.path}): {str(error).splitlines()[0]}") from None
    finally:
        con.unregister("_frame")
    return found, entry.kind != "relative"


_MAPPING = threading.local()
#: a frame's own best_effort column while its mapping is applied (the view has one too)
_RAW_FLAGS = "_best_effort_as_given"


def _mapping_connection() -> Any:
    """This thread's in-memory DuckDB connection for mapping frames (UTC clock).

    Kept, not opened per frame: opening one costs about 14 ms, half of a
    1,000-job frame's conversion, and the figures convert hundreds of generated
    traces. It holds nothing between calls (the frame is unregistered after each);
    a forked child opens its own rather than use its parent's.
    """
    import duckdb

    if getattr(_MAPPING, "pid", None) != os.getpid():
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        _MAPPING.con, _MAPPING.pid = con, os.getpid()
    return _MAPPING.con


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
