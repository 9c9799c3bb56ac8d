"""`mltraces sql "QUERY"`: run SQL against the catalog and print or save the result.

Only the tables the query names (``itp.jobs``, ``zeus.power``, ...) are set up,
so a query does not fetch unrelated files; ``--tables`` overrides the choice.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from mltraces.commands.common import add_table_options, open_catalog

HELP = "run a SQL query against the catalog"
FORMATS = ("table", "csv", "json", "parquet")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query",
                        help='SQL, e.g. "SELECT cluster, count(*) FROM itp.jobs GROUP BY 1"')
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
    """Catalog tables a query mentions as ``source.table``; None when it names none.

    A query that names no table but ``source.word`` of a known source (a typo such
    as ``itp.job``) raises instead of setting up, and fetching, every table.
    """
    from mltraces.catalog import tables

    known = tables()
    code = re.sub(r"'(?:[^']|'')*'", "''", query)  # names inside string literals don't count
    found = [name for name in known
             if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", code, re.IGNORECASE)]
    if found:
        return found
    sources = "|".join(sorted({re.escape(name.split(".")[0]) for name in known}))
    # not followed by "(": acme.floor_time(...) is a macro, not a table
    unknown = re.findall(rf"(?<![\w.])(?:{sources})\.\w+(?![\w(])", code, re.IGNORECASE)
    if unknown:
        raise KeyError(f"unknown table {unknown[0]!r}; tables: {', '.join(known)}")
    return None


def _write(relation, fmt: str, output: Path | None, max_rows: int) -> None:
    from mltraces.errors import MltracesError

    if fmt == "parquet" and output is None:
        raise MltracesError("--format parquet writes a binary file: add --output FILE.parquet")
    if output is not None:
        writers = {"csv": relation.write_csv, "parquet": relation.write_parquet}
        if fmt in writers:
            writers[fmt](str(output))
        elif fmt == "json":
            output.write_text(_json_lines(relation))
        else:  # every row: str(relation) would keep only the first and last few
            output.write_text(relation.df().to_string(index=False) + "\n")
        print(f"wrote {output}", file=sys.stderr)
        return
    if fmt == "table":
        relation.show(max_rows=max_rows)
    elif fmt == "csv":
        relation.df().to_csv(sys.stdout, index=False)
    else:
        sys.stdout.write(_json_lines(relation))


def _json_lines(relation) -> str:
    text = relation.df().to_json(orient="records", lines=True, date_format="iso")
    return text if text.endswith("\n") or not text else text + "\n"


def run(args: argparse.Namespace) -> int:
    import duckdb

    from mltraces.errors import MltracesError

    named = args.tables or tables_in(args.query)
    # tables the query names must exist: say why one does not, once, before running it
    con = open_catalog(args, tables=named, strict=named is not None)
    try:
        try:
            relation = con.sql(args.query)
        except duckdb.Error as error:
            raise MltracesError(f"query failed: {error}") from error
        if relation is None:  # a statement without a result (SET, CREATE ...)
            return 0
        try:
            _write(relation, args.format, args.output, args.max_rows)
        except duckdb.Error as error:
            raise MltracesError(f"query failed: {error}") from error
    finally:
        con.close()
    return 0
