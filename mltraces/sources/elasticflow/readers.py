"""Readers of the ElasticFlow artifact's own formats (found by the catalog by name).

``wide_throughputs``: the artifact's throughput profiles are one CSV per model
and GPU type, *wide*: ``global_batch_size`` then one column per GPU count
(``1,2,4,...,64``), each cell the measured iterations per second. The catalog
serves them long (gpu_type, model, batch_size, num_gpus, iterations_per_second),
one row per measured point; an empty or ``nan`` cell means the model was not run
at that scale and becomes no row. Everything else must be a number: a stray
value is a finding naming the file, line and column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.catalog.protocol import Conversion, FileReader, InputFile, ReadRequest
from mltraces.catalog.text import read_header
from mltraces.schema import quote_ident, sql_literal, sql_path

if TYPE_CHECKING:
    import duckdb

BATCH_COLUMN = "global_batch_size"
#: Findings reported per table at most (a wrong file would otherwise list every cell).
MAX_PROBLEMS = 200


def _gpu_columns(item: InputFile) -> list[str]:
    """The GPU-count columns of one file's header; a header of another shape is a finding."""
    header = read_header(item.path, item.label)
    counts = header[1:]
    if header[:1] != [BATCH_COLUMN] or not counts or not all(c.isdigit() and int(c) > 0
                                                               for c in counts):
        shown = ",".join(header[:8])
        raise SchemaDriftError("", [DriftProblem(
            "renamed column", item.label, f"expected the header {BATCH_COLUMN},1,2,4,... "
            f"(GPU counts), found {shown!r}", None, 1)])
    return counts


def _long_sql(item: InputFile, counts: list[str]) -> str:
    """One file's cells as (gpu_type, model, line, batch text, GPU count, value text)."""
    columns = ", ".join(f"{sql_literal(c)}: 'VARCHAR'" for c in [BATCH_COLUMN, *counts])
    scan = (f"read_csv({sql_path(item.path)}, header = true, auto_detect = false, delim = ',', "
            f"columns = {{{columns}}}, nullstr = ['', 'nan'], strict_mode = true)")
    numbered = f"SELECT *, row_number() OVER () + 1 AS line FROM {scan}"
    cells = ", ".join(quote_ident(c) for c in counts)
    return (f"SELECT {sql_literal(item.columns.get('gpu_type', ''))} AS gpu_type, "
            f"{sql_literal(item.columns.get('model', ''))} AS model, "
            f"{sql_literal(item.label)} AS _source, line, {quote_ident(BATCH_COLUMN)} AS batch, "
            f"gpus, value FROM ({numbered}) UNPIVOT (value FOR gpus IN ({cells}))")


def _bad_cells(con: duckdb.DuckDBPyConnection) -> list[DriftProblem]:
    """Cells that are neither empty, ``nan`` nor a positive number, and bad batch sizes."""
    found = con.execute(f"""
        SELECT _source, line, gpus, batch, value FROM cells
        WHERE TRY_CAST(batch AS BIGINT) IS NULL OR TRY_CAST(batch AS BIGINT) < 1
           OR TRY_CAST(value AS DOUBLE) IS NULL OR NOT isfinite(TRY_CAST(value AS DOUBLE))
           OR TRY_CAST(value AS DOUBLE) < 0
        ORDER BY _source, line LIMIT {MAX_PROBLEMS}""").fetchall()
    return [DriftProblem("unparsable value", source, f"global batch size {batch!r}, "
                         f"{gpus} GPUs: {value!r} is not a non-negative number of iterations/s",
                         gpus, line)
            for source, line, gpus, batch, value in found]


def convert_wide_throughputs(request: ReadRequest) -> Conversion:
    """Unpivot every throughput file into the long table, one row per measured point."""
    import duckdb

    parts, problems = [], []
    for item in request.inputs:
        try:
            parts.append(_long_sql(item, _gpu_columns(item)))
        except SchemaDriftError as error:
            problems.extend(error.problems)
    if problems:
        raise SchemaDriftError(request.schema.name, problems)
    con = duckdb.connect()
    try:
        con.execute("SET threads = 1")  # row_number() follows the file's lines
        con.execute(f"CREATE TEMP TABLE cells AS {' UNION ALL '.join(parts)}")
        problems = _bad_cells(con)
        if problems:
            raise SchemaDriftError(request.schema.name, problems)
        con.execute(f"""COPY (
            SELECT gpu_type, model, CAST(batch AS BIGINT) AS batch_size,
                   CAST(gpus AS BIGINT) AS num_gpus, CAST(value AS DOUBLE) AS iterations_per_second,
                   _source, line AS _row
            FROM cells ORDER BY _source, line, num_gpus
        ) TO {sql_literal(str(request.out))} (FORMAT parquet)""")
        rows = con.execute("SELECT count(*) FROM cells").fetchall()[0][0]
    finally:
        con.close()
    return Conversion(int(rows))


READERS = {
    "wide_throughputs": FileReader("wide_throughputs", convert_wide_throughputs,
                                   row_label="line"),
}
