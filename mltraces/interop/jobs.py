"""A job trace as one table of the common columns, with what it came from.

Export reads any trace the jobs mapping serves: a ``trace`` of ``mltraces.jobs``
(``SOURCE/NAME``, the whole mapped table) or a replay id of ``mltraces schedule``
(``SOURCE/NAME`` with ``{cluster}`` expanded: one cluster or VC of it). The jobs
are read through the table's mapping (:mod:`mltraces.jobmap`), in the table's row
order, with the instants in the trace's own zone and the seconds from its origin:
whole (:func:`read_trace`) or as a stream of batches (:func:`open_trace`), whose
memory is a batch's, not the trace's; what an export must know of the whole
trace first (its rows, the columns it records, its origin) is one aggregate
query.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

    from mltraces.jobmap import JobTable

__all__ = ["COLUMNS", "TraceJobs", "TraceStream", "open_trace", "read_trace",
           "resolve_trace"]

#: the common columns an export reads (recipes, the formats' writers, provenance)
COLUMNS = ("trace", "cluster", "job_id", "user", "vc", "submit_time", "start_time", "end_time",
           "submit_s", "start_s", "end_s", "run_s", "gpu_time_s", "num_gpu", "num_nodes",
           "num_attempts", "state", "state_raw", "model", "batch_size", "iterations",
           "deadline_s")


@dataclass(frozen=True)
class _Trace:
    """One trace as asked for and the mapped table (and slice) it reads."""

    trace: str  # as asked for: itp/raw, itp/raw/cluster01, philly/vc/6214e9
    entry: JobTable
    where: dict[str, str]

    @property
    def table(self) -> str:
        return self.entry.table

    @property
    def zone(self) -> str | None:
        """The zone its clock times are written in (None: instants with offsets, or no clock)."""
        return self.entry.zone


@dataclass(frozen=True)
class TraceJobs(_Trace):
    """The jobs of one trace (common columns) and where they come from."""

    frame: pd.DataFrame = field(repr=False)


def resolve_trace(trace: str) -> tuple[JobTable, dict[str, str]]:
    """The mapped table (and the slice of it) a trace name stands for."""
    from mltraces.jobmap import job_tables, resolve_replay
    from mltraces.names import canonical

    trace = canonical(trace)  # alibaba-openb/pods

    for entry in job_tables().values():
        if entry.trace == trace:
            return entry, {}
    try:
        replay = resolve_replay(trace)
    except KeyError as error:
        known = sorted(e.trace for e in job_tables().values())
        raise MltracesError(f"{error.args[0]}; or a trace of mltraces.jobs: "
                            f"{', '.join(known)}") from None
    return replay.entry, dict(replay.where)


def tables_for(trace: str) -> list[str]:
    """The catalog tables reading ``trace`` needs (to fetch them when missing)."""
    entry, _ = resolve_trace(trace)
    return list(entry.tables)


def _query(trace: str) -> tuple[JobTable, dict[str, str], str, list[str]]:
    """The table, slice, SQL and parameters of ``trace``'s jobs in the common columns."""
    from mltraces.jobmap import table_select_sql
    from mltraces.schema import quote_ident

    entry, where = resolve_trace(trace)
    listed = ", ".join(quote_ident(c) for c in COLUMNS)
    query = f"SELECT {listed} FROM ({table_select_sql(entry)})"
    if where:
        query += " WHERE " + " AND ".join(f"{quote_ident(c)} = ?" for c in where)
    return entry, where, query, list(where.values())


def _frame(table: pa.Table | pa.RecordBatch, zone: str | None) -> pd.DataFrame:
    """Arrow rows as pandas, the instants in the trace's zone."""
    frame = table.to_pandas()
    for column in ("submit_time", "start_time", "end_time"):
        if zone and column in frame and len(frame):
            frame[column] = frame[column].dt.tz_convert(zone)
    return frame


def _no_jobs(trace: str, entry: JobTable, where: dict[str, str]) -> MltracesError:
    slice_ = " and ".join(f"{c} = {v!r}" for c, v in where.items())
    return MltracesError(f"trace {trace!r} has no jobs in {entry.table}"
                         + (f" ({slice_})" if slice_ else ""))


def read_trace(con: duckdb.DuckDBPyConnection, trace: str) -> TraceJobs:
    """Every job of ``trace`` in the common columns of ``mltraces.jobs``, in table order."""
    entry, where, query, params = _query(trace)
    frame = _frame(con.sql(query, params=params).to_arrow_table(), entry.zone)
    if frame.empty:
        raise _no_jobs(trace, entry, where)
    return TraceJobs(trace, entry, where, frame)


@dataclass(frozen=True)
class TraceStream(_Trace):
    """The jobs of one trace, to read in batches, and what is known of all of them."""

    query: str = field(repr=False)
    params: list[str] = field(repr=False)
    rows: int
    recorded: frozenset[str]  # the common columns some job records (state: not UNKNOWN)
    origin: pd.Timestamp | None  # the instant of second 0 (None: no clock)

    def batches(self, con: duckdb.DuckDBPyConnection, rows: int) -> Iterator[pd.DataFrame]:
        """The jobs in table order, ``rows`` at a time (DuckDB streams them: the connection
        runs nothing else until the last batch is read)."""
        reader = con.sql(self.query, params=self.params).to_arrow_reader(rows)
        for batch in reader:
            if batch.num_rows:
                yield _frame(batch, self.zone)


def open_trace(con: duckdb.DuckDBPyConnection, trace: str) -> TraceStream:
    """``trace`` as a stream: one aggregate query for its rows, recorded columns and origin."""
    import pandas as pd

    from mltraces.schema import quote_ident

    entry, where, query, params = _query(trace)
    counts = [f"count({quote_ident(c)})" for c in COLUMNS if c != "state"]
    found = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE state <> 'UNKNOWN'), "
        f"arg_min(submit_time, submit_s) FILTER (WHERE submit_time IS NOT NULL), "
        f"min(submit_s) FILTER (WHERE submit_time IS NOT NULL), {', '.join(counts)} "
        f"FROM ({query})", params).fetchall()[0]
    rows, states, first_time, first_s, *known = found
    if not rows:
        raise _no_jobs(trace, entry, where)
    recorded = {c for c, n in zip([c for c in COLUMNS if c != "state"], known, strict=True)
                if n} | ({"state"} if states else set())
    origin = None
    if first_time is not None:
        origin = pd.Timestamp(first_time) - pd.Timedelta(seconds=float(first_s))
    return TraceStream(trace, entry, where, query, params, int(rows), frozenset(recorded),
                       origin)


def pins_of(entry: JobTable) -> dict[str, Any]:
    """The registry's pins of the files a table reads (what exactly was exported)."""
    from mltraces.registry import get_source
    from mltraces.schema import get_schema

    source = get_source(entry.source)
    files = {}
    for file_id in get_schema(entry.table).file_ids:
        found = source.file(file_id)
        files[file_id] = {k: v for k, v in (("url", found.url or None),
                                            ("path", str(found.path) if found.path else None),
                                            ("sha256", found.sha256), ("git_blob", found.git_blob))
                          if v}
    return {"source": source.name, "pins": dict(source.pins), "files": files}
