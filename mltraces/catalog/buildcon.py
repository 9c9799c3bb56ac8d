"""DuckDB for building tables: what every conversion's own connection needs, in one place.

Conversions (the CSV reader, a source's own readers, the parts of a mapped view)
each run on a fresh in-memory DuckDB: instants in UTC (as on every catalog
connection), scratch files in the conversion's own folder, and buffers bounded.
Unbounded, DuckDB takes up to 80 % of the machine's memory for its buffers: a
first build of the published job tables peaked over 1.3 GB (Helios's four CSVs
in one pass, PAI's join), where bounded it spills a sort or a join to the
scratch folder and stays under :data:`BUILD_MEMORY` plus the interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mltraces.schema import sql_literal

if TYPE_CHECKING:
    import duckdb

__all__ = ["BUILD_MEMORY", "build_connection"]

#: DuckDB's buffer memory per conversion (its ``memory_limit``)
BUILD_MEMORY = "600MB"


def build_connection(work: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh DuckDB for one conversion: UTC, bounded memory, spilling into ``work``."""
    import duckdb

    con = duckdb.connect(config={"memory_limit": BUILD_MEMORY})
    try:
        con.execute("SET TimeZone = 'UTC'")
        if work is not None:
            con.execute(f"SET temp_directory = {sql_literal(str(work))}")
    except BaseException:
        con.close()
        raise
    return con
