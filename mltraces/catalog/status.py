"""Provenance as data: ``mltraces.status``, one row per table set up on a connection.

It is a view over the values a ``connect()`` found (no query runs when it is read);
``duckdb_views()`` lists it in the schema ``mltraces``, beside ``mltraces.jobs``.

Columns:

- ``table_name``: ``source.table`` (not ``table``, a reserved word that had to be quoted);
- ``state``: ``ready`` (built from files verified against the pinned hashes, or
  served by its source's own reader), ``unverified`` (built from local files given
  with ``--local`` / ``local=``: checked against the schema, not the hashes) or
  ``partial`` (``mltraces.jobs``: it holds the tables it unites that can be read;
  ``reason`` names the others and the command that fetches them) or
  ``unavailable`` (nothing to read; querying it raises ``reason``, or it is empty
  because nothing was fetched);
- ``origin``: ``upstream``, ``local: PATH`` or where a source reader keeps its data;
- ``rows``: row count when known without scanning (NULL otherwise);
- ``reason``: for ``unverified`` and ``unavailable`` tables, why, and the fix.

Figures and the CLI read this view instead of parsing error texts or comments:

>>> con = mltraces.connect()                                           # doctest: +SKIP
>>> con.sql("SELECT * FROM mltraces.status WHERE state <> 'ready'")   # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from mltraces.schema import quote_ident, sql_literal

if TYPE_CHECKING:
    import duckdb

__all__ = ["PARTIAL", "READY", "STATES", "STATUS_TABLE", "UNAVAILABLE", "UNVERIFIED", "TableStatus",
           "read_status", "status_sql"]

READY, UNVERIFIED, UNAVAILABLE = "ready", "unverified", "unavailable"
PARTIAL = "partial"  # a view uniting other tables, some of which cannot be read now
STATES = (READY, UNVERIFIED, PARTIAL, UNAVAILABLE)
STATUS_SCHEMA = "mltraces"
STATUS_TABLE = f"{STATUS_SCHEMA}.status"
_COLUMNS = (("table_name", "VARCHAR"), ("state", "VARCHAR"), ("origin", "VARCHAR"),
            ("rows", "BIGINT"), ("reason", "VARCHAR"))


class TableStatus(NamedTuple):
    """One row of ``mltraces.status``."""

    table: str  # the column table_name
    state: str
    origin: str
    rows: int | None = None
    reason: str | None = None

    @property
    def usable(self) -> bool:
        """True when queries on the table return its data."""
        return self.state != UNAVAILABLE


def _value(value: object) -> str:
    return "NULL" if value is None else sql_literal(value)


def status_sql(rows: list[TableStatus]) -> str:
    """``CREATE OR REPLACE VIEW mltraces.status`` over ``rows`` (one statement)."""
    select = ", ".join(f"CAST(c{i} AS {kind}) AS {quote_ident(name)}"
                       for i, (name, kind) in enumerate(_COLUMNS))
    if rows:
        values = ", ".join(
            "(" + ", ".join(_value(v) for v in (r.table, r.state, r.origin, r.rows, r.reason)) + ")"
            for r in rows)
        names = ", ".join(f"c{i}" for i in range(len(_COLUMNS)))
        body = f"SELECT {select} FROM (VALUES {values}) AS v({names}) ORDER BY 1"
    else:
        nulls = ", ".join(f"CAST(NULL AS {kind}) AS {quote_ident(name)}" for name, kind in _COLUMNS)
        body = f"SELECT {nulls} WHERE false"
    return (f"CREATE SCHEMA IF NOT EXISTS {quote_ident(STATUS_SCHEMA)}; "
            f"CREATE OR REPLACE VIEW {STATUS_TABLE} AS {body}")


def read_status(con: duckdb.DuckDBPyConnection) -> dict[str, TableStatus] | None:
    """The status rows of a catalog connection by table, or None when it has no status table."""
    import duckdb

    try:
        rows = con.execute(f"SELECT * FROM {STATUS_TABLE}").fetchall()
    except duckdb.Error:
        return None
    return {r[0]: TableStatus(*r) for r in rows}
