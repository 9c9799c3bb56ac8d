"""``mltraces.jobs``: every mapped job table of every source, united in one typed view.

Each source maps its job tables onto the common columns in its folder's
``jobs.json`` (:mod:`mltraces.jobmap`); this module only unites them. The view
holds the tables that can be read now (fetched, or given as local files):
``connect()`` sets every mapped table up first, from the cache unless it was
named, and this view reads their state in ``mltraces.status``.

A trace that is not fetched is never silently absent:

- the status row of ``mltraces.jobs`` is ``partial`` and its reason names each
  missing trace with the ``mltraces fetch`` command that brings it;
- ``mltraces sql`` prints that notice when a query reads the view, and refuses
  a query that names a missing trace (``WHERE trace = 'acme/kalos'``) with the
  same command, instead of printing an empty result;
- with no trace to read at all, the view raises that reason when queried;
- in Python, ``connect()`` warns (:class:`~mltraces.errors.PartialViewWarning`)
  with that sentence whenever the view lacks a trace, and
  ``FROM mltraces.jobs_of('acme/kalos')`` (a trace, or a source: ``'helios'``)
  is the view filtered to it that raises the fetch command instead of returning
  no rows, in any client.

A trace whose mapping says it is a ``copy_of`` another (ElasticFlow's annotated ITP
jobs are ``itp/raw``'s jobs again) is left out of the view, so a plain ``count(*)``
counts each job once; ``mltraces.jobs_of('itp/elasticflow')`` (or its source,
``jobs_of('itp')``) serves it when asked for by name, its ``copy_of`` column naming
the original.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from mltraces.catalog.protocol import ViewReader
from mltraces.catalog.status import (
    PARTIAL,
    READY,
    UNAVAILABLE,
    UNVERIFIED,
    TableStatus,
    read_status,
)
from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import duckdb

    from mltraces.jobmap import JobTable
    from mltraces.schema import TableSchema

__all__ = ["FILTER_MACRO", "PARTIAL", "Coverage", "attach_jobs", "coverage", "jobs_needs",
           "jobs_status"]

#: ``mltraces.jobs_of(name)``: the jobs view filtered to one trace or source, strictly
FILTER_MACRO = "jobs_of"

class Coverage(NamedTuple):
    """Which mapped traces the view holds now, and which it lacks (with why)."""

    present: list[JobTable]
    missing: list[tuple[JobTable, str]]  # (trace, reason)
    unverified: bool

    def notice(self) -> str | None:
        """One sentence naming every missing trace of the view (copies of another trace are
        not in it) and the command that fetches them."""
        lacking = [(t, reason) for t, reason in self.missing if t.copy_of is None]
        return missing_notice(lacking) if lacking else None


def missing_notice(missing: list[tuple[JobTable, str]]) -> str:
    """``mltraces.jobs lacks 2 traces: acme/kalos, acme/seren are not fetched (run ...)``."""
    here = [t for t, reason in missing if "unavailable here" in reason]
    not_fetched = [t for t, reason in missing if "not fetched" in reason and t not in here]
    broken = [(t, reason) for t, reason in missing if "not fetched" not in reason]
    parts = []
    if not_fetched:
        sources = " ".join(dict.fromkeys(t.source for t in not_fetched))
        parts.append(f"{', '.join(t.trace for t in not_fetched)} not fetched (run `mltraces "
                     f"fetch {sources}`)")
    if here:  # the last fetch could not obtain them: fetching again is no advice
        parts.append(f"{', '.join(t.trace for t in here)} unavailable here (give local copies: "
                     "--local TABLE=PATH or MLTRACES_LOCAL, or a mirror that holds them)")
    parts += [f"{t.trace} unavailable: {reason.splitlines()[0]}" for t, reason in broken]
    count = len(missing)
    return f"mltraces.jobs lacks {count} trace{'s' * (count > 1)}: " + "; ".join(parts)


def jobs_needs(schema: TableSchema) -> list[str]:
    """Every mapped job table: the view reads each one that is available."""
    from mltraces.jobmap import job_tables

    return sorted(job_tables())


def coverage(statuses: dict[str, TableStatus]) -> Coverage:
    """What the view can hold, from the member tables' status rows."""
    from mltraces.jobmap import job_tables

    present: list[JobTable] = []
    missing: list[tuple[JobTable, str]] = []
    unverified = False
    for name, entry in sorted(job_tables().items(), key=lambda item: item[1].trace):
        status = statuses.get(name)
        if status is None or not status.usable:
            missing.append((entry, status.reason or "unavailable" if status else "not set up"))
            continue
        present.append(entry)
        unverified = unverified or status.state == UNVERIFIED
    return Coverage(present, missing, unverified)


def view_sql(schema: TableSchema, present: list[JobTable]) -> str:
    """``CREATE VIEW mltraces.jobs`` uniting the present tables (their rows, in trace order),
    copies of another trace left out (:func:`filter_macro_sql` serves them by name)."""
    from mltraces.exprcheck import parse_ahead
    from mltraces.jobmap import empty_sql, shipped, table_select_sql

    # one parse for every user mapping (each table then checks its own: table_select_sql)
    parse_ahead(v for t in present if not shipped(t) for v in t.columns.values())
    body = " UNION ALL ".join(f"({table_select_sql(t)})" for t in present
                              if t.copy_of is None) or empty_sql()
    return f"CREATE OR REPLACE VIEW {schema.qualified} AS {body}"


def filter_macro_sql(schema: TableSchema, found: Coverage) -> str:
    """``CREATE MACRO mltraces.jobs_of(name)``: the view's rows of one trace or source.

    A name whose trace is not fetched raises the ``mltraces fetch`` command, and an
    unknown name lists the known ones, where ``WHERE trace = name`` would return no
    rows and say nothing. The name picks the query text (DuckDB's ``query()``), so
    the check runs before any plan exists: a filter DuckDB proves empty (every
    branch of the view has a constant ``trace``) cannot skip it.
    """
    from mltraces.jobmap import table_select_sql
    from mltraces.schema import sql_literal

    lacking: dict[str, list[tuple[JobTable, str]]] = {}
    for table, reason in found.missing:
        for name in (table.trace, table.source):
            lacking.setdefault(name, []).append((table, reason))
    queries: dict[str, list[str]] = {}
    for t in found.present:  # a copy is read from its table: the view leaves it out
        one = (f"SELECT * FROM {schema.qualified} WHERE trace = {sql_literal(t.trace)}"
               if t.copy_of is None else f"SELECT * FROM ({table_select_sql(t)})")
        queries[t.trace] = [one]
        queries.setdefault(t.source, []).append(one)
    answers = {name: f"error({sql_literal(missing_notice(m))})" for name, m in lacking.items()}
    answers.update({name: sql_literal(" UNION ALL ".join(f"({q})" for q in parts))
                    for name, parts in queries.items() if name not in lacking})
    macro = f"{schema.schema_name}.{FILTER_MACRO}"
    text = "CAST(name AS VARCHAR)"  # jobs_of(42) is an unknown name too, not a cast error
    known = ", ".join(sorted(answers)) or "none"
    unknown = (f"error('{macro}: no trace or source ' || {text} || "
               f"{sql_literal('; known traces and sources: ' + known)})")
    cases = " ".join(f"WHEN {sql_literal(spelling)} THEN {answer}"
                     for name, answer in sorted(answers.items())
                     for spelling in dict.fromkeys([name, _hyphenated(name)]))
    choice = f"CASE {text} {cases} ELSE {unknown} END" if cases else unknown
    return f"CREATE OR REPLACE MACRO {macro}(name) AS TABLE FROM query({choice})"


def _hyphenated(name: str) -> str:
    """``alibaba-pai/jobs`` for ``alibaba_pai/jobs``: the spelling :mod:`mltraces.names` reads
    back as the source (SQL has no hook to call it, so the macro lists both)."""
    source, sep, rest = name.partition("/")
    return source.replace("_", "-") + sep + rest


def attach_jobs(con: duckdb.DuckDBPyConnection, schema: TableSchema, local: Path | None
                ) -> TableStatus:
    """Create ``mltraces.jobs`` (and ``mltraces.jobs_of``) over the member tables on ``con``."""
    from mltraces.catalog.views import unavailable_sql

    if local is not None:
        raise MltracesError(f"{schema.name} unites other tables and reads no file of its own: "
                            "give local files for the job tables it unites instead")
    found = coverage(read_status(con) or {})
    if not found.present:
        reason = found.notice() or "no source maps a job table"
        con.execute(unavailable_sql(schema, reason) + ";" + filter_macro_sql(schema, found))
        return TableStatus(schema.name, UNAVAILABLE, "upstream", None, reason)
    con.execute(view_sql(schema, found.present) + ";" + filter_macro_sql(schema, found))
    return _status(schema, found)


def _status(schema: TableSchema, found: Coverage) -> TableStatus:
    traces = ", ".join(t.trace for t in found.present if t.copy_of is None)
    copies = ", ".join(f"{t.trace} (of {t.copy_of})" for t in found.present if t.copy_of)
    origin = f"mapped job tables: {traces or 'none'}" + (
        f"; copies, by name through mltraces.jobs_of(): {copies}" if copies else "")
    if found.notice():
        return TableStatus(schema.name, PARTIAL, origin, None, found.notice())
    if found.unverified:
        return TableStatus(schema.name, UNVERIFIED, origin, None,
                           "some of its tables are built from local files (see their rows)")
    return TableStatus(schema.name, READY, origin)


def jobs_status(schema: TableSchema) -> TableStatus:
    """The same answer without a connection: which member tables' files are cached."""
    from mltraces.catalog.readers import FileReader, reader_for
    from mltraces.download import cached_path
    from mltraces.jobmap import job_tables
    from mltraces.registry import get_file
    from mltraces.schema import get_schema

    statuses: dict[str, TableStatus] = {}
    for name in job_tables():
        member = get_schema(name)
        reader = reader_for(member)
        if isinstance(reader, FileReader):
            missing = [f for f in member.file_ids if cached_path(get_file(f)) is None]
            statuses[name] = (TableStatus(name, READY, "upstream") if not missing else
                              TableStatus(name, UNAVAILABLE, "upstream", None,
                                          f"{name}: not fetched"))
        else:
            statuses[name] = reader.status(member)
    found = coverage(statuses)
    if not found.present:
        return TableStatus(schema.name, UNAVAILABLE, "upstream", None, found.notice())
    return _status(schema, found)


#: The built-in ``jobs`` reader (``mltraces.catalog.readers.BUILTIN``) that serves mltraces.jobs.
READER = ViewReader("jobs", attach_jobs, jobs_status, needs=jobs_needs)
