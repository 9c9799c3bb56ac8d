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
"""

from __future__ import annotations

import math
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
}

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


class JobRecords(Sequence[Job]):
    """The jobs of one replay: numpy columns, and :class:`Job` objects when asked for.

    The loops that scale to millions of jobs (FIFO, SJF, Tiresias) read the
    columns; the others index or iterate :class:`Job` objects, which are built
    once, on first use (a million of them cost a second and ~0.5 GB, which a
    FIFO replay of a million jobs has no use for). Columns: ``job_id``,
    ``submit_time``, ``model`` (object arrays for the text), ``batch_size``,
    ``num_gpu`` (int64), ``iterations``, ``duration``, ``deadline`` (float64).
    """

    __slots__ = (*COLUMNS, "_records")

    def __init__(self, **columns: np.ndarray) -> None:
        for name in COLUMNS:
            setattr(self, name, columns[name])
        self._records: tuple[Job, ...] | None = None

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, shift: float = 0.0) -> JobRecords:
        """The normalised table's columns, times less ``shift`` seconds."""
        return cls(
            job_id=frame["job_id"].astype(str).to_numpy(object),
            submit_time=frame["submit_time"].to_numpy(float) - shift,
            model=frame["model"].astype(str).to_numpy(object),
            batch_size=frame["batch_size"].to_numpy(np.int64),
            num_gpu=frame["num_gpu"].to_numpy(np.int64),
            iterations=frame["iterations"].to_numpy(float),
            duration=frame["duration"].to_numpy(float),
            deadline=frame["deadline"].to_numpy(float) - shift,
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
                ("duration", "duration", float), ("deadline", "deadline", float))
        })
        out._records = tuple(jobs)
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Ship the columns, not the objects: a worker builds its own when it needs them."""
        return {name: getattr(self, name) for name in COLUMNS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def __len__(self) -> int:
        return len(self.submit_time)

    def __getitem__(self, index):  # type: ignore[override]
        return self.records()[index]

    def __iter__(self) -> Iterator[Job]:
        return iter(self.records())

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
                        _numbers(self.deadline),
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
            for name in COLUMNS:
                getattr(records, name).flags.writeable = False
            self._replay = records
        return self._replay

    def __iter__(self) -> Iterator[Job]:
        return iter(self.records())


def _numbers(values: np.ndarray) -> list[float]:
    """Integral seconds stay ints (the reference's arithmetic is on ints), else floats."""
    return [int(v) if math.isfinite(v) and v == int(v) else v for v in values.tolist()]


def _finish(frame: pd.DataFrame, origin: Any = None) -> Jobs:
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
    """The artifact's own trace columns (Philly: ``submit_time, iteration, ddl, …``)."""
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
            }
        )
    )


def from_acme(frame: pd.DataFrame, *, include_cpu_jobs: bool = False) -> Jobs:
    """AcmeTrace job tables: duration-only jobs, seconds since the first submission.

    CPU jobs are left out unless asked for, and so are jobs without a duration
    (still RUNNING when the trace ends: their work is unknown).
    """
    # no cache: over a million mostly distinct stamps it made parsing 7x slower
    submit = pd.to_datetime(frame["submit_time"], utc=True, cache=False)
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
    if columns >= set(COLUMNS):
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
