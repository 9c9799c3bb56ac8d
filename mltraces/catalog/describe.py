"""``describe_table()``: a table's schema, units, constraints, provenance and row count, as text."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path

from mltraces.catalog.build import Built, materialize
from mltraces.catalog.readers import FileReader, reader_for
from mltraces.catalog.selection import resolve_local
from mltraces.errors import MltracesError
from mltraces.schema import TableSchema, constraint_text, get_schema

__all__ = ["describe_table"]


def _column_rows(schema: TableSchema) -> list[tuple[str, str, str, str, str]]:
    rows = [(f.name, f.duckdb_type, f.unit or "", constraint_text(f.constraints), f.description)
            for f in schema.fields]
    rows += [(d.name, d.duckdb_type, d.unit or "", f"= {d.sql}", d.description)
             for d in schema.derived]
    return rows


def _format_columns(rows: list[tuple[str, ...]]) -> list[str]:
    header = ("column", "type", "unit", "constraints", "description")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = []
    for row in [header, *rows]:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        lines.append("  " + "  ".join(cells) + "  " + row[4])
    return lines


def _built_status(built: Built) -> str:
    origin = " (verified)" if built.verified else f" (UNVERIFIED {built.origin})"
    return f"{built.rows:,} rows from " + ", ".join(built.inputs) + origin


def _view_status(schema: TableSchema, local: Path | None = None) -> str:
    """Rows of a table its source's reader serves (counted on a throwaway connection).

    With ``local`` the rows and status are those of the user's files (converted if need be).
    """
    from mltraces.catalog.connection import connect

    if local is None:
        status = reader_for(schema).status(schema)  # type: ignore[union-attr]
        if not status.usable:
            return f"unavailable: {status.reason}"
    import warnings

    from mltraces.errors import PartialViewWarning

    with warnings.catch_warnings():  # the status line below says what a partial view lacks
        warnings.simplefilter("ignore", PartialViewWarning)
        con = connect(tables=[schema.name], local={schema.name: local} if local else None,
                      strict=True)
    try:
        rows = con.execute(f"SELECT count(*) FROM {schema.qualified}").fetchall()[0][0]
        state, origin, reason = con.execute(
            'SELECT state, origin, reason FROM mltraces.status WHERE table_name = ?', [schema.name]
        ).fetchall()[0]
    finally:
        con.close()
    return f"{rows:,} rows ({origin})" + (f"; {state}: {reason}" if reason else "")


def _fill(text: str, **indents: str) -> str:
    """``text`` wrapped at 100 columns, never inside a word: paths and ids stay whole.

    (textwrap breaks at hyphens by default, so ``/tmp/pytest-of-root`` could come
    out as ``pytest-`` and ``of-root`` on two lines.)
    """
    return textwrap.fill(text, 100, break_on_hyphens=False, break_long_words=False, **indents)


def describe_table(name: str, local: Mapping[str, str | os.PathLike[str]] | None = None) -> str:
    """A readable description of a table: schema, units, constraints, source and row count.

    Builds the table if needed (fetching its files unless offline) to count rows.
    """
    schema = get_schema(name)
    overrides = resolve_local(local)
    try:
        if isinstance(reader_for(schema), FileReader):
            status = _built_status(materialize(schema, overrides.get(schema.name)))
        else:
            status = _view_status(schema, overrides.get(schema.name))
    except MltracesError as error:
        status = f"unavailable: {error}"
    lines = [f"{schema.name}: {schema.title}", "", _fill(schema.description), "",
             _fill(f"Source files: {', '.join(schema.file_ids)}", subsequent_indent="  "),
             _fill(f"Status: {status}", subsequent_indent="  ")]
    if schema.primary_key:
        lines.append(f"Primary key: ({', '.join(schema.primary_key)})")
    lines += ["", "Columns:", *_format_columns(_column_rows(schema))]
    if schema.checks:
        lines += ["", "Checks:"]
        lines += [f"  {c.name} [{c.severity}]: {c.description}" for c in schema.checks]
    if schema.notes:
        lines += ["", "Notes:"]
        lines += [_fill(n, initial_indent="  - ", subsequent_indent="    ")
                  for n in schema.notes]
    lines += ["", f"Schema file: schemas/{schema.schema_name}/{schema.table_name}.json "
              "(Frictionless Table Schema)"]
    return "\n".join(lines)
