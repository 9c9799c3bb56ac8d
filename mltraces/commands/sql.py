"""`mltraces sql "QUERY"`: run SQL against the catalog and print or save the result.

Only the tables the query names (``itp.jobs``, ``zeus.power``, ...) are set up,
and fetched when missing, so a query does not fetch unrelated files; ``--tables``
overrides the choice. A query naming no table sets up every table from the cache
(nothing is downloaded). Results are written by DuckDB in every format, so the
command does not load pandas (except to save ``--format table`` to a file).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mltraces.commands.common import add_table_options, open_catalog

if TYPE_CHECKING:
    from mltraces.outputs import Output

FORMATS = ("table", "csv", "json", "parquet")
def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query",
                        help='SQL, e.g. "SELECT trace, count(*) FROM mltraces.jobs GROUP BY 1"')
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default, for reading; every row with --output), csv, "
                        "json (one object per line) or parquet (needs --output)")
    parser.add_argument("--output", "-o", type=Path, help="write the result to this file")
    parser.add_argument("--max-rows", type=int, default=40,
                        help="rows shown by --format table (default 40)")
    parser.add_argument("--tables", nargs="+", metavar="TABLE",
                        help="tables to set up (default: those the query names, else all)")
    add_table_options(parser)


def tables_in(query: str) -> list[str] | None:
    """Catalog tables a query reads (as DuckDB parses it); None when it reads none of them.

    The catalog's own views (``mltraces.status``) need no table set up. A query that
    reads no catalog table but ``source.word`` of a known source (a typo such as
    ``itp.job``) raises instead of setting up, and fetching, every table.
    """
    from mltraces.catalog import tables
    from mltraces.catalog.sqlnames import read_tables
    from mltraces.catalog.status import STATUS_TABLE

    known = tables()
    named = [name for name in read_tables(query) if name != STATUS_TABLE]
    found = [name for name in known if name in named]
    if found:
        return found
    from mltraces.catalog.selection import raise_if_broken

    for name in named:
        raise_if_broken(name)
    sources = {name.split(".", 1)[0] for name in known}
    unknown = [name for name in named if name.split(".", 1)[0] in sources]
    if unknown:
        raise KeyError(f"unknown table {unknown[0]!r}; tables: {', '.join(known)}")
    return None


def _write(con, relation, fmt: str, output: Output | None, max_rows: int) -> None:
    """Print or save the result; CSV, JSON and Parquet are written by DuckDB (no pandas)."""
    import duckdb

    from mltraces.errors import OutputError

    if fmt == "table" and output is None:
        relation.show(max_rows=max_rows)
        return
    if output is None:
        _print_copy(con, relation, fmt)
        return
    try:
        if fmt == "table":  # every row: DuckDB's text form keeps only the first and last few
            output.write_text(relation.df().to_string(index=False) + "\n")
        else:
            output.write_with(lambda path: _copy(con, relation, fmt, path))
    except duckdb.IOException as error:  # DuckDB's own write failed (say, the disk is full)
        text = str(error).splitlines()[0]
        raise OutputError(f"cannot write {output.given}: {text}; it was not changed") from None
    output.done()


def _copy(con, relation, fmt: str, target: Path) -> None:
    """``COPY`` the result to ``target``: csv with a header, json one object per line, parquet.

    The relation's own SQL is copied (no view in between: one statement less, and
    results a view cannot hold, such as PIVOT or EXPLAIN, are written too); the line
    breaks end a trailing ``--`` comment before the closing parenthesis.
    """
    from mltraces.schema import sql_literal

    options = "FORMAT csv, HEADER" if fmt == "csv" else f"FORMAT {fmt}"
    con.execute(f"COPY (\n{relation.sql_query()}\n) TO {sql_literal(str(target))} ({options})")


def _print_copy(con, relation, fmt: str) -> None:
    """Write the result to stdout through a temporary file DuckDB fills."""
    import os
    import tempfile

    handle, name = tempfile.mkstemp(suffix=f".{fmt}")
    os.close(handle)
    try:
        _copy(con, relation, fmt, Path(name))
        with open(name, encoding="utf-8", newline="") as text:
            while chunk := text.read(1 << 20):
                sys.stdout.write(chunk)
    finally:
        os.unlink(name)


def _missing_data(con, named: list[str] | None) -> str | None:
    """Why a table the query names has nothing to return (say, nothing fetched yet).

    Only tables their source serves itself can be empty for that reason: a table the
    catalog converts and cannot build already failed (named tables are strict).
    """
    from mltraces.catalog import is_view_table, read_status
    from mltraces.schema import get_schema

    served = [t for t in named or [] if is_view_table(get_schema(t))]
    status = (read_status(con) or {}) if served else {}
    for table in served:
        row = status.get(table)
        if row is not None and not row.usable:
            return f"{table} has no data: {row.reason}"
    return None


def _missing_traces(con, query: str, named: list[str] | None, quiet: bool) -> None:
    """Say which traces ``mltraces.jobs`` or ``mltraces.requests`` lacks; refuse a query
    that names one of them.

    A query filtered to a trace that is not fetched would print an empty result.
    """
    from mltraces.jobmap import JOBS_TABLE, job_tables
    from mltraces.requestmap import REQUESTS_TABLE

    views = [t for t in (JOBS_TABLE, REQUESTS_TABLE) if t in (named or [])]
    if not views:
        return
    from mltraces.catalog import read_status
    from mltraces.catalog.sqlnames import string_literals
    from mltraces.errors import MltracesError

    statuses = read_status(con) or {}
    literals = string_literals(query)
    copies = [t for t in job_tables().values()
              if t.copy_of and t.trace in literals and JOBS_TABLE in views]
    if copies:
        names = ", ".join(f"{t.trace} (a copy of {t.copy_of})" for t in copies)
        raise MltracesError(f"the query names {names}: a copy is left out of mltraces.jobs so "
                            f"that counts are not doubled; read it by name with FROM "
                            f"mltraces.jobs_of('{copies[0].trace}')")
    for table in views:
        missing, notice = _coverage(table, statuses)
        asked = [(t, reason) for t, reason in missing if t.trace in literals]
        if asked:
            raise MltracesError(f"the query names {', '.join(t.trace for t, _ in asked)}: "
                                + notice(asked))
        if missing and not quiet:
            print(f"note: {notice(missing)}", file=sys.stderr)


def _coverage(table: str, statuses: dict) -> tuple[list, object]:
    """(missing traces the view would hold, with reasons; the notice naming them) of one
    union view."""
    from mltraces.catalog import unions
    from mltraces.catalog.jobs import VIEW as JOBS
    from mltraces.catalog.requests import VIEW as REQUESTS

    view = JOBS if table == JOBS.table else REQUESTS
    return (unions.coverage(view, statuses).lacking,
            lambda missing: unions.missing_notice(view, missing))


def _query_error(error: Exception) -> str:
    """DuckDB's error, with the catalog name of a table written ``itp_jobs`` suggested."""
    import difflib

    from mltraces.catalog import tables

    text = str(error)
    missing = re.search(r"Table with name (\S+) does not exist", text)
    if missing is None:
        return f"query failed: {text}"
    name = missing.group(1)
    known = {t.replace(".", "_"): t for t in tables()}
    close = difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.75)
    if not close:
        return f"query failed: {text.splitlines()[0]}"
    hint = " or ".join(known[c] for c in close)
    return (f"query failed: there is no table {name}; did you mean {hint}? "
            "(catalog tables are SOURCE.TABLE; `mltraces tables` lists them)")


def run(args: argparse.Namespace) -> int:
    import duckdb

    from mltraces.errors import MltracesError

    if args.format == "parquet" and args.output is None:
        raise MltracesError("--format parquet writes a binary file: add --output FILE.parquet")
    output = None
    if args.output is not None:  # checked before any work
        from mltraces.outputs import prepare

        output = prepare(args.output)
    named = args.tables or tables_in(args.query)
    # tables the query names must exist: say why one does not, once, before running it
    from mltraces.catalog.sqlnames import names_word

    # the column descriptions cost ~1 ms a column: attached when the query reads comments
    con = open_catalog(args, tables=named, strict=named is not None,
                       comments=names_word(args.query, "comment"))
    try:
        problem = _missing_data(con, named)
        if problem:
            raise MltracesError(problem)
        _missing_traces(con, args.query, named, getattr(args, "quiet", False))
        try:
            relation = con.sql(args.query)
        except duckdb.Error as error:
            raise MltracesError(_query_error(error)) from error
        if relation is None:  # a statement without a result (SET, CREATE ...)
            return 0
        try:
            _write(con, relation, args.format, output, args.max_rows)
        except duckdb.Error as error:
            raise MltracesError(f"query failed: {error}") from error
    finally:
        con.close()
    return 0
