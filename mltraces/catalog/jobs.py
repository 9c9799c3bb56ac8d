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

The view reads each mapped table's materialised part (:mod:`.parts`, through
:mod:`.unions`): its rows in the common columns, written once beside its conversion.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.catalog import unions
from mltraces.catalog.status import PARTIAL, TableStatus
from mltraces.catalog.unions import Coverage, UnionView

if TYPE_CHECKING:
    from collections.abc import Callable

    import duckdb

    from mltraces.jobmap import JobTable
    from mltraces.mapping import Constants
    from mltraces.schema import TableSchema

__all__ = ["FILTER_MACRO", "PARTIAL", "Coverage", "attach_jobs", "coverage", "jobs_needs",
           "jobs_status"]

#: ``mltraces.jobs_of(name)``: the jobs view filtered to one trace or source, strictly
FILTER_MACRO = "jobs_of"


def _entries() -> dict:
    from mltraces.jobmap import job_tables

    return job_tables()


def _select(entry: JobTable) -> str:
    from mltraces.jobmap import table_select_sql

    return table_select_sql(entry)


def _empty() -> str:
    from mltraces.jobmap import empty_sql

    return empty_sql()


def _select_over(entry: JobTable, relation: str, names: list[str],
                 constants: Constants | None) -> str:
    from mltraces.jobmap import select_sql

    return select_sql(entry, relation, names, constants=constants)


def _constants(entry: JobTable, relation: str, names: list[str],
               scalar: Callable[[str], Any]) -> Constants:
    from mltraces.jobmap import prepare_constants

    return prepare_constants(entry, relation, names, scalar)


#: the jobs view's parts, for :mod:`.unions` (which unites ``mltraces.requests`` the same way)
VIEW = UnionView("mltraces.jobs", FILTER_MACRO, _entries, _select, _empty, "job",
                 _select_over, _constants)


def missing_notice(missing: list[tuple[JobTable, str]]) -> str:
    """``mltraces.jobs lacks 2 traces: acme/kalos, acme/seren are not fetched (run ...)``."""
    return unions.missing_notice(VIEW, missing)


def jobs_needs(schema: TableSchema) -> list[str]:
    """Every mapped job table: the view reads each one that is available."""
    return sorted(_entries())


def coverage(statuses: dict[str, TableStatus]) -> Coverage:
    """What the view can hold, from the member tables' status rows."""
    return unions.coverage(VIEW, statuses)


def view_sql(schema: TableSchema, present: list[JobTable]) -> str:
    """``CREATE VIEW mltraces.jobs`` uniting the present tables (their rows, in trace order)."""
    return unions.view_sql(VIEW, schema, present)


def filter_macro_sql(schema: TableSchema, found: Coverage) -> str:
    """``CREATE MACRO mltraces.jobs_of(name)``: the view's rows of one trace or source
    (:func:`mltraces.catalog.unions.filter_macro_sql`)."""
    return unions.filter_macro_sql(VIEW, schema, found)


_READER = unions.reader(VIEW)


def attach_jobs(con: duckdb.DuckDBPyConnection, schema: TableSchema, local: Path | None
                ) -> TableStatus:
    """Create ``mltraces.jobs`` (and ``mltraces.jobs_of``) over the member tables on ``con``."""
    return _READER.attach(con, schema, local)


def jobs_status(schema: TableSchema) -> TableStatus:
    """The same answer without a connection: which member tables' files are cached."""
    return _READER.status(schema)


#: The built-in ``jobs`` reader (``mltraces.catalog.readers.BUILTIN``) that serves mltraces.jobs.
READER = _READER._replace(needs=jobs_needs)
