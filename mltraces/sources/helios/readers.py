"""Helios's own reader: the per-VC GPU numbers, one column per VC, served long.

``cluster_gpu_number.csv`` has a ``date`` column, one column per virtual
cluster (the VC sets differ between clusters) and a ``total``. A table cannot
have a column per VC of every cluster, so ``helios_capacity`` unpivots each
file into rows (cluster, date, vc, gpus, total). Every cell is read as text
and converted with a check: a value that is not a whole number, a date that
is not ``YYYY-MM-DD`` or a file without ``date`` and ``total`` is a drift
problem naming the file, line and column.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.catalog.protocol import Conversion, FileReader, InputFile, ReadRequest
from mltraces.catalog.text import check_last_line, read_header
from mltraces.schema import quote_ident, sql_literal, sql_path

MAX_REPORTED = 200


def _plain(item: InputFile, work: Path) -> Path:
    """The input as a file DuckDB can read (an archive member is copied out once)."""
    if item.member is None:
        return item.path
    out = work / f"{len(list(work.iterdir()))}-{Path(item.member).name}"
    with item.open() as source, out.open("wb") as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
    return out


def _long_sql(item: InputFile, path: Path, header: list[str]) -> str:
    """The file's rows as (cluster, date, vc, gpus, total) text, with _source and _row."""
    columns = ", ".join(f"{sql_literal(c)}: 'VARCHAR'" for c in header)
    read = (f"read_csv({sql_path(path)}, header = true, auto_detect = false, "
            f"columns = {{{columns}}}, nullstr = [''], strict_mode = true)")
    vcs = ", ".join(quote_ident(c) for c in header if c not in ("date", "total"))
    cluster = sql_literal(item.columns.get("cluster", ""))
    return (f"SELECT {cluster} AS cluster, date, vc, gpus, total, "
            f"{sql_literal(item.label)} AS _source, _row FROM ("
            f"(SELECT *, row_number() OVER () + 1 AS _row FROM {read}) "
            f"UNPIVOT INCLUDE NULLS (gpus FOR vc IN ({vcs})))")


def _header(item: InputFile, path: Path) -> tuple[list[str], list[DriftProblem]]:
    header = read_header(path, item.label)
    problems = [DriftProblem("missing column", item.label,
                             f"column {c!r} is missing (header: {', '.join(header[:6])}, ...)", c)
                for c in ("date", "total") if c not in header]
    if len(header) < 3:
        problems.append(DriftProblem("missing column", item.label, "no VC column", None, 1))
    if len(set(header)) != len(header):
        problems.append(DriftProblem("malformed row", item.label,
                                     "the header repeats a column name", None, 1))
    return header, problems


_BAD = {
    "date": "date IS NULL OR TRY_CAST(date AS DATE) IS NULL OR NOT regexp_full_match(date, "
            "'\\d{4}-\\d\\d-\\d\\d')",
    "gpus": "gpus IS NOT NULL AND (TRY_CAST(gpus AS BIGINT) IS NULL OR "
            "TRY_CAST(gpus AS DOUBLE) IS DISTINCT FROM TRY_CAST(gpus AS BIGINT))",
    "total": "total IS NOT NULL AND (TRY_CAST(total AS BIGINT) IS NULL OR "
             "TRY_CAST(total AS DOUBLE) IS DISTINCT FROM TRY_CAST(total AS BIGINT))",
}


def _value_problems(con, table: str) -> list[DriftProblem]:
    """Every cell that is not what its column holds, with its file, line and column."""
    problems = []
    for column, bad in _BAD.items():
        found = con.execute(
            f"SELECT DISTINCT _source, _row, {column}, vc FROM {table} WHERE {bad} "
            f"ORDER BY _row LIMIT {MAX_REPORTED}").fetchall()
        for source, row, value, vc in found:
            kind = "date" if column == "date" else "whole number"
            where = vc if column == "gpus" else column
            problems.append(DriftProblem("unparsable value", source,
                                         f'"{value}" is not a {kind}', where, int(row)))
    return problems


def convert_capacity(request: ReadRequest) -> Conversion:
    """Unpivot every input into (cluster, date, vc, gpus, total) rows, checked, into one Parquet."""
    import duckdb

    errors: list[DriftProblem] = []
    parts = []
    for item in request.inputs:
        try:
            path = _plain(item, request.work)
            check_last_line(path, item.label)
            header, problems = _header(item, path)
        except SchemaDriftError as error:
            errors.extend(p._replace(file=p.file or item.label) for p in error.problems)
            continue
        errors.extend(problems)
        if not problems:
            parts.append(_long_sql(item, path, header))
    if errors:
        raise SchemaDriftError(request.schema.name, errors)
    con = duckdb.connect()
    try:
        con.execute(f"SET temp_directory = {sql_literal(str(request.work))}")
        try:
            con.execute(f"CREATE TEMP TABLE long AS {' UNION ALL '.join(parts)}")
        except duckdb.Error as error:  # a row with too many or too few cells
            raise SchemaDriftError(request.schema.name, [DriftProblem(
                "malformed row", ", ".join(i.label for i in request.inputs),
                str(error).splitlines()[0])]) from None
        problems = _value_problems(con, "long")
        if problems:
            raise SchemaDriftError(request.schema.name, problems)
        con.execute(
            "COPY (SELECT cluster, CAST(date AS DATE) AS date, vc, CAST(gpus AS BIGINT) AS gpus, "
            "CAST(total AS BIGINT) AS total, _source, CAST(_row AS BIGINT) AS _row FROM long "
            f"ORDER BY _source, _row, vc) TO {sql_literal(str(request.out))} (FORMAT parquet)")
        rows = con.execute(f"SELECT count(*) FROM read_parquet({sql_path(request.out)})")
        return Conversion(int(rows.fetchall()[0][0]))
    finally:
        con.close()


READERS = {"helios_capacity": FileReader("helios_capacity", convert_capacity, row_label="line")}
