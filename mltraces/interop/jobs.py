"""A job trace as one table of the common columns, with what it came from.

Export reads any trace the jobs mapping serves: a ``trace`` of ``mltraces.jobs``
(``SOURCE/NAME``, the whole mapped table) or a replay id of ``mltraces schedule``
(``SOURCE/NAME`` with ``{cluster}`` expanded: one cluster or VC of it). The jobs
are read through the table's mapping (:mod:`mltraces.jobmap`), in the table's row
order, with the instants in the trace's own zone and the seconds from its origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from mltraces.jobmap import JobTable

__all__ = ["COLUMNS", "TraceJobs", "read_trace", "resolve_trace"]

#: the common columns an export reads (recipes, the formats' writers, provenance)
COLUMNS = ("trace", "cluster", "job_id", "user", "vc", "submit_time", "start_time", "end_time",
           "submit_s", "start_s", "end_s", "run_s", "gpu_time_s", "num_gpu", "num_nodes",
           "num_attempts", "state", "state_raw", "model", "batch_size", "iterations",
           "deadline_s")


@dataclass(frozen=True)
class TraceJobs:
    """The jobs of one trace (common columns) and where they come from."""

    trace: str  # as asked for: itp/raw, itp/raw/cluster01, philly/vc/6214e9
    entry: JobTable
    where: dict[str, str]
    frame: pd.DataFrame = field(repr=False)

    @property
    def table(self) -> str:
        return self.entry.table

    @property
    def zone(self) -> str | None:
        """The zone its clock times are written in (None: instants with offsets, or no clock)."""
        return self.entry.zone


def resolve_trace(trace: str) -> tuple[JobTable, dict[str, str]]:
    """The mapped table (and the slice of it) a trace name stands for."""
    from mltraces.jobmap import job_tables, resolve_replay

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


def read_trace(con: duckdb.DuckDBPyConnection, trace: str) -> TraceJobs:
    """Every job of ``trace`` in the common columns of ``mltraces.jobs``, in table order."""
    from mltraces.jobmap import table_select_sql
    from mltraces.schema import quote_ident

    entry, where = resolve_trace(trace)
    listed = ", ".join(quote_ident(c) for c in COLUMNS)
    query = f"SELECT {listed} FROM ({table_select_sql(entry)})"
    if where:
        query += " WHERE " + " AND ".join(f"{quote_ident(c)} = ?" for c in where)
    relation = con.sql(query, params=list(where.values()))
    frame = relation.to_arrow_table().to_pandas()
    for column in ("submit_time", "start_time", "end_time"):
        if entry.zone and column in frame and len(frame):
            frame[column] = frame[column].dt.tz_convert(entry.zone)
    if frame.empty:
        slice_ = " and ".join(f"{c} = {v!r}" for c, v in where.items())
        raise MltracesError(f"trace {trace!r} has no jobs in {entry.table}"
                            + (f" ({slice_})" if slice_ else ""))
    return TraceJobs(trace, entry, where, frame)


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
