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
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from mltraces.catalog.readers import ViewReader
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

    from mltraces.catalog.parts import Part
    from mltraces.catalog.store import Built
    from mltraces.jobmap import JobTable
    from mltraces.schema import TableSchema

__all__ = ["FILTER_MACRO", "PARTIAL", "Coverage", "attach_jobs", "attach_jobs_over", "coverage",
           "jobs_needs", "jobs_status"]

#: ``mltraces.jobs_of(name)``: the jobs view filtered to one trace or source, strictly
FILTER_MACRO = "jobs_of"

class Coverage(NamedTuple):
    """Which mapped traces the view holds now, and which it lacks (with why)."""

    present: list[JobTable]
    missing: list[tuple[JobTable, str]]  # (trace, reason)
    unverified: bool

    def notice(self) -> str | None:
        """One sentence naming every missing trace and the command that fetches them."""
        if not self.missing:
            return None
        return missing_notice(self.missing)


def missing_notice(missing: list[tuple[JobTable, str]]) -> str:
    """``mltraces.jobs lacks 2 traces: acme/kalos, acme/seren are not fetched (run ...)``."""
    not_fetched = [t for t, reason in missing if "not fetched" in reason]
    broken = [(t, reason) for t, reason in missing if "not fetched" not in reason]
    parts = []
    if not_fetched:
        sources = " ".join(dict.fromkeys(t.source for t in not_fetched))
        parts.append(f"{', '.join(t.trace for t in not_fetched)} not fetched (run `mltraces "
                     f"fetch {sources}`)")
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
    """``CREATE VIEW mltraces.jobs`` uniting the present tables (their rows, in trace order)."""
    from mltraces.jobmap import empty_sql, table_select_sql

    body = " UNION ALL ".join(f"({table_select_sql(t)})" for t in present) or empty_sql()
    return f"CREATE OR REPLACE VIEW {schema.qualified} AS {body}"


def filter_macro_sql(schema: TableSchema, found: Coverage) -> str:
    """``CREATE MACRO mltraces.jobs_of(name)``: the view's rows of one trace or source.

    A name whose trace is not fetched raises the ``mltraces fetch`` command, and an
    unknown name lists the known ones, where ``WHERE trace = name`` would return no
    rows and say nothing. The name picks the query text (DuckDB's ``query()``), so
    the check runs before any plan exists: a filter DuckDB proves empty (every
    branch of the view has a constant ``trace``) cannot skip it.
    """
    from mltraces.schema import sql_literal

    lacking: dict[str, list[tuple[JobTable, str]]] = {}
    for table, reason in found.missing:
        for name in (table.trace, table.source):
            lacking.setdefault(name, []).append((table, reason))
    queries = {t.trace: f"trace = {sql_literal(t.trace)}" for t in found.present}
    queries.update({t.source: f"starts_with(trace, {sql_literal(t.source + '/')})"  # not LIKE: _
                    for t in found.present})
    answers = {name: f"error({sql_literal(missing_notice(m))})" for name, m in lacking.items()}
    answers.update({name: sql_literal(f"SELECT * FROM {schema.qualified} WHERE {where}")
                    for name, where in queries.items() if name not in lacking})
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
    """Create ``mltraces.jobs`` (and ``mltraces.jobs_of``) over the member tables on ``con``,
    each read through its mapping (the member tables' conversions are not known here)."""
    return attach_jobs_over(con, schema, local, {})


def attach_jobs_over(con: duckdb.DuckDBPyConnection, schema: TableSchema, local: Path | None,
                     members: Mapping[str, Built]) -> TableStatus:
    """Create ``mltraces.jobs`` (and ``mltraces.jobs_of``) over the member tables on ``con``.

    ``members`` are the conversions the member tables' views read: each one's part
    of the view is materialised (:mod:`.parts`) and read from there; a member
    without one (or whose part cannot be written) is read through its mapping.
    """
    from mltraces.catalog.views import unavailable_sql

    if local is not None:
        raise MltracesError(f"{schema.name} unites other tables and reads no file of its own: "
                            "give local files for the job tables it unites instead")
    found = coverage(read_status(con) or {})
    if not found.present:
        reason = found.notice() or "no source maps a job table"
        con.execute(unavailable_sql(schema, reason) + ";" + filter_macro_sql(schema, found))
        return TableStatus(schema.name, UNAVAILABLE, "upstream", None, reason)
    files = part_files(schema, found.present, members)
    con.execute(parts_view_sql(schema, found.present, files) + ";" +
                filter_macro_sql(schema, found))
    return _status(schema, found)


# --------------------------------------------------------------------------- parts


def part_sql(entry: JobTable, member: Built) -> str:
    """The common columns of one mapped table, read from its conversion: its part's rows."""
    from mltraces.catalog.parts import member_relation
    from mltraces.jobmap import select_sql

    return select_sql(entry, member_relation(member), _names(member))


def _names(member: Built) -> list[str]:
    schema = member.schema
    return [*schema.field_names, *(d.name for d in schema.derived)]


def _part(schema: TableSchema, entry: JobTable, member: Built) -> Part:
    """The part of ``entry``: its rows as :func:`part_sql` gives them, built with the first
    submission found once (the view's SQL scans for it in every seconds column)."""
    from mltraces.catalog.parts import Part, member_relation
    from mltraces.jobmap import origin_sql, select_sql
    from mltraces.schema import sql_literal

    relation, names = member_relation(member), _names(member)

    def prepare(con: duckdb.DuckDBPyConnection) -> str:
        [(second,)] = con.execute(f"SELECT {origin_sql(entry, relation, names)}").fetchall()
        # the double as text, read back exactly (a repr round-trips; a bare decimal
        # literal would be a DECIMAL, rounded on its way to a double)
        origin = "CAST(NULL AS DOUBLE)" if second is None else (
            f"CAST({sql_literal(repr(float(second)))} AS DOUBLE)")
        return select_sql(entry, relation, names, origin=origin)

    return Part(schema, member, part_sql(entry, member), prepare)


def part_files(schema: TableSchema, present: list[JobTable], members: Mapping[str, Built]
               ) -> dict[str, Path | None]:
    """Each present table's materialised part, leased; None for a table with no conversion
    here or whose part cannot be written (a read-only cache, or a mapping that fails on
    the data, which a query of the view then reports as before)."""
    from mltraces.catalog.parts import leased_parts

    tables = [t for t in present if t.table in members]
    parts = [_part(schema, t, members[t.table]) for t in tables]
    built = leased_parts(parts)
    return {t.table: b.parquet if b else None for t, b in zip(tables, built, strict=True)}


def prepare_part(schema: TableSchema, member: Built) -> None:
    """Write ``member``'s part as soon as its conversion exists (``connect()`` runs this
    beside the other conversions); a part that cannot be written is left to
    :func:`attach_jobs_over`, which reads that table through its mapping."""
    import duckdb

    from mltraces.catalog.parts import materialize_part
    from mltraces.jobmap import job_tables

    entry = job_tables().get(member.schema.name)
    if entry is None:
        return
    try:
        materialize_part(_part(schema, entry, member))
    except (MltracesError, duckdb.OutOfMemoryException):
        return


def parts_view_sql(schema: TableSchema, present: list[JobTable],
                   files: Mapping[str, Path | None]) -> str:
    """``CREATE VIEW mltraces.jobs`` over the present tables' parts in trace order (one scan
    of every file), a table without one read through its mapping."""
    from mltraces.catalog import parts
    from mltraces.jobmap import table_select_sql

    return parts.parts_view_sql(schema, [files.get(t.table) or table_select_sql(t)
                                         for t in present])


def _status(schema: TableSchema, found: Coverage) -> TableStatus:
    traces = ", ".join(t.trace for t in found.present)
    origin = f"mapped job tables: {traces}"
    if found.missing:
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
READER = ViewReader("jobs", attach_jobs, jobs_status, needs=jobs_needs,
                    attach_over=attach_jobs_over, prepare=prepare_part)
