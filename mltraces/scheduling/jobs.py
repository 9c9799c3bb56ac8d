"""Jobs: one normalised table from the trace formats the simulator accepts.

Every input becomes a :class:`Jobs` table with the columns of :data:`COLUMNS`,
sorted by submission time (stable, so ties keep file order as in the
reference). Accepted inputs:

* **ITP / ElasticFlow** (``itp.elasticflow_jobs``, ``elasticflow-traces.tar.gz``):
  ``job_id, submission_time, num_iteration, model_name, deadline, batch_size,
  num_gpu, duration``; ``deadline`` is absolute seconds, ``duration`` the run
  time in seconds at ``num_gpu`` GPUs.
* **The artifact's Philly trace** (``philly_103959.csv``): ``job_id, submit_time,
  real_iteration, model_name, ddl, batch_size, num_gpu, real_duration, duration,
  iteration``. The reference reads ``iteration`` as the work, ``duration`` as
  the seconds-based work of Gandiva/Tiresias/Themis and ``ddl`` as the
  deadline; ``real_iteration``/``real_duration`` are never read (they equal
  the former two in this file).
* **AcmeTrace job tables** (``acme.seren_jobs`` / ``acme.kalos_jobs``): ``job_id,
  gpu_num, submit_time`` (timestamp), ``duration`` (s), … ; no model, no
  iterations, no deadline: duration-only jobs, times in seconds since the
  first submission (the origin is kept in ``Jobs.origin``). CPU-only jobs
  (``gpu_num == 0``) are dropped unless asked for.
* An already-normalised frame (the columns below).

A ``best_effort`` column (the artifact's generated traces, ElasticFlow Fig. 11)
marks jobs without a deadline: as in the artifact, their deadline becomes
``sys.maxsize`` (:data:`BEST_EFFORT_DEADLINE`, so they sort after every real
deadline), and the deadline satisfactory ratio counts only the other jobs.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
#: the deadline a best-effort job is replayed with (the artifact's ``sys.maxsize``)
BEST_EFFORT_DEADLINE = sys.maxsize

_ITP = {"submission_time", "num_iteration", "deadline", "num_gpu"}
_ARTIFACT = {"submit_time", "iteration", "ddl", "num_gpu"}
_ACME = {"gpu_num", "submit_time", "duration"}


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
    frame["best_effort"] = _flags(frame["best_effort"])
    frame.loc[frame["best_effort"], "deadline"] = math.inf
    frame = frame.sort_values("submit_time", kind="mergesort").reset_index(drop=True)
    return Jobs(frame, origin)


def from_itp(frame: pd.DataFrame) -> Jobs:
    """ITP / ElasticFlow columns (``submission_time, num_iteration, deadline, …``)."""
    return _finish(
        pd.DataFrame(
            {
                "job_id": frame["job_id"].astype(str),
                "submit_time": frame["submission_time"],
                "model": frame["model_name"].astype(str),
                "batch_size": frame["batch_size"].astype(int),
                "num_gpu": frame["num_gpu"].astype(int),
                "iterations": frame["num_iteration"].astype(float),
                "duration": _column(frame, "duration"),
                "deadline": frame["deadline"].astype(float),
            }
        )
    )


def from_artifact(frame: pd.DataFrame) -> Jobs:
    """The artifact's own trace columns (Philly: ``submit_time, iteration, ddl, …``; its
    generated traces add ``best_effort``)."""
    return _finish(
        pd.DataFrame(
            {
                "job_id": frame["job_id"].astype(str),
                "submit_time": frame["submit_time"],
                "model": frame["model_name"].astype(str),
                "batch_size": frame["batch_size"].astype(int),
                "num_gpu": frame["num_gpu"].astype(int),
                "iterations": frame["iteration"].astype(float),
                "duration": _column(frame, "duration"),
                "deadline": frame["ddl"].astype(float),
                "best_effort": frame.get("best_effort", False),
            }
        )
    )


def from_acme(frame: pd.DataFrame, *, include_cpu_jobs: bool = False) -> Jobs:
    """AcmeTrace job tables: duration-only jobs, seconds since the first submission.

    CPU jobs are left out unless asked for, and so are jobs without a duration
    (still RUNNING when the trace ends: their work is unknown).
    """
    submit = pd.to_datetime(frame["submit_time"], utc=True)
    origin = submit.min()
    gpus = frame["gpu_num"].fillna(0).astype(int)
    keep = frame["duration"].notna().to_numpy() & (include_cpu_jobs or (gpus > 0).to_numpy())
    out = pd.DataFrame(
        {
            "job_id": frame["job_id"].astype(str),
            "submit_time": (submit - origin).dt.total_seconds(),
            "model": "",
            "batch_size": 0,
            "num_gpu": gpus.clip(lower=1),
            "iterations": math.nan,
            "duration": frame["duration"].astype(float),
            "deadline": math.inf,
        }
    )[keep]
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


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name in frame:
        return frame[name].astype(float)
    return pd.Series(math.nan, index=frame.index)


def as_jobs(jobs: Jobs | pd.DataFrame | Any, **options: Any) -> Jobs:
    """Normalise any accepted input (see the module docstring); the format is detected."""
    if isinstance(jobs, Jobs):
        return jobs
    if isinstance(jobs, (str, Path)):
        return read_jobs_csv(jobs, **options)
    if hasattr(jobs, "to_pandas") and not isinstance(jobs, pd.DataFrame):
        jobs = jobs.to_pandas()  # a pyarrow table
    if not isinstance(jobs, pd.DataFrame):
        raise SchedulingError(
            f"jobs must be a Jobs table, a pandas DataFrame, a pyarrow Table or a CSV path; "
            f"got {type(jobs).__name__}"
        )
    columns = set(jobs.columns)
    if columns >= set(COLUMNS) - {"best_effort"}:
        return _finish(jobs)
    if columns >= _ITP:
        return from_itp(jobs)
    if columns >= _ARTIFACT:
        return from_artifact(jobs)
    if columns >= _ACME:
        return from_acme(jobs, **options)
    raise SchedulingError(
        f"cannot tell the trace format from columns {sorted(columns)}; expected ITP "
        f"({sorted(_ITP)}), the artifact's ({sorted(_ARTIFACT)}), AcmeTrace ({sorted(_ACME)}) "
        f"or the normalised columns ({list(COLUMNS)})"
    )


def read_jobs_csv(path: str | Path, **options: Any) -> Jobs:
    """Read an upstream job CSV (ITP cluster*.csv, philly_103959.csv, Acme tables)."""
    path = Path(path)
    if not path.is_file():
        raise SchedulingError(f"job trace {path} does not exist")
    return as_jobs(pd.read_csv(path, dtype={"job_id": str}), **options)
