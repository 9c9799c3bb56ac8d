"""SQL text of the catalog's views: typed views over Parquet, views that explain, comments.

Column descriptions are not attached on every ``connect()``: DuckDB takes about
a millisecond per ``COMMENT ON COLUMN`` (150 columns: most of a warm connect).
They are written when asked for (``connect(comments=True)``,
:func:`comment_columns`); ``mltraces info TABLE`` prints them from the schema.
Each view's own comment (title and provenance) is one batched statement.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from mltraces.catalog.status import READY, UNAVAILABLE, UNVERIFIED, TableStatus
from mltraces.schema import TableSchema, quote_ident, sql_literal, sql_path

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

__all__ = ["column_comments_sql", "comment_columns", "parquet_view_sql", "typed_select_sql",
           "unavailable_sql", "view_comments_sql"]


def _typed_columns(schema: TableSchema) -> list[str]:
    parts = [f"CAST({quote_ident(f.name)} AS {f.duckdb_type}) AS {quote_ident(f.name)}"
             for f in schema.fields]
    parts += [f"CAST(({d.sql}) AS {d.duckdb_type}) AS {quote_ident(d.name)}"
              for d in schema.derived]
    return parts


def typed_select_sql(schema: TableSchema, parquet: Path, extra: Iterable[str] = ()) -> str:
    """The table's typed columns read from its converted Parquet file (exactly that file),
    plus ``extra`` stored columns (``_source``, ``_row``: where each row was read)."""
    columns = [*_typed_columns(schema), *(quote_ident(c) for c in extra)]
    return f"SELECT {', '.join(columns)} FROM read_parquet({sql_path(parquet)})"


def parquet_view_sql(schema: TableSchema, parquet: Path) -> str:
    """The table's view over its converted Parquet file (exactly that file, never a pattern)."""
    return f"CREATE OR REPLACE VIEW {schema.qualified} AS {typed_select_sql(schema, parquet)}"


def unavailable_sql(schema: TableSchema, reason: str) -> str:
    """A view with the table's columns that raises ``reason`` when queried."""
    parts = [f"CAST(NULL AS {f.duckdb_type}) AS {quote_ident(f.name)}" for f in schema.fields]
    parts += [f"CAST(NULL AS {d.duckdb_type}) AS {quote_ident(d.name)}" for d in schema.derived]
    message = f"mltraces: table {schema.name} is unavailable: {reason}"
    return (f"CREATE OR REPLACE VIEW {schema.qualified} AS SELECT {', '.join(parts)} "
            f"WHERE error({sql_literal(message)}) IS NULL")


def _provenance(status: TableStatus) -> str:
    if status.state == READY:
        return "verified upstream files" if status.origin == "upstream" else status.origin
    if status.state == UNVERIFIED:
        return f"UNVERIFIED {status.origin}"
    return f"{UNAVAILABLE}: {status.reason}"


def view_comments_sql(pairs: Iterable[tuple[TableSchema, TableStatus]]) -> str:
    """One batch of ``COMMENT ON VIEW``: each view's title and where its rows come from."""
    return "".join(
        f"COMMENT ON VIEW {schema.qualified} IS "
        f"{sql_literal(f'{schema.title} ({_provenance(status)})')};"
        for schema, status in pairs)


def _column_text(description: str, unit: str | None) -> str:
    return f"{description} [{unit}]" if unit else description


def column_comments_sql(schema: TableSchema) -> str:
    """``COMMENT ON COLUMN`` for every column: description and unit."""
    return "".join(
        f"COMMENT ON COLUMN {schema.qualified}.{quote_ident(item.name)} IS "
        f"{sql_literal(_column_text(item.description, item.unit))};"
        for item in (*schema.fields, *schema.derived))


def comment_columns(con: duckdb.DuckDBPyConnection, schemas: Iterable[TableSchema]) -> None:
    """Attach each column's description and unit (visible in ``duckdb_columns().comment``)."""
    text = "".join(column_comments_sql(s) for s in schemas)
    if text:
        con.execute(text)
