"""Cut a wide CSV into chunks of whole lines and parse each one to a typed Arrow table.

Chunks are independent, so several threads can parse them at once: this is
how a conversion keeps both cores busy. A chunk is parsed by pyarrow's CSV
reader (``Time`` as text, every other column ``float64``, empty cells null),
which costs about 60 % of the CPU time of DuckDB's reader plus its export to
Arrow for these 2,304-column files (``benchmarks/bench_acme_util.py``). Both
parse decimal text to the correctly rounded double, so the values are the same.

DuckDB stays the authority on what a file means: a chunk pyarrow refuses is
read again by DuckDB's typed ``read_csv``, which either reads it (DuckDB
accepts a few things pyarrow does not) or raises the error the user sees,
with the file's line numbers.

Cutting at newlines is safe because a valid file has no newline inside a
quoted cell (the cells are numbers and timestamps).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mltraces.errors import SchemaError
from mltraces.schema import sql_path

__all__ = ["Chunk", "ChunkParser", "chunks", "duckdb_error", "read_csv_sql", "sql_text"]


@dataclass(frozen=True)
class Chunk:
    """Whole lines of a CSV: ``data`` starts at line ``first_line`` (1-based) of the file
    and ends at byte ``end``."""

    index: int
    first_line: int
    data: bytes
    end: int

    @property
    def last_line(self) -> int:
        return self.first_line + max(self.data.count(b"\n") - 1, 0)


def chunks(path: Path, chunk_bytes: int) -> Iterator[Chunk]:
    """The data lines of ``path`` (header skipped) in chunks of about ``chunk_bytes``."""
    with path.open("rb") as handle:
        handle.readline()
        line, index = 2, 0
        while data := handle.read(chunk_bytes):
            if not data.endswith(b"\n"):
                data += handle.readline()
            yield Chunk(index, line, data, handle.tell())
            line += data.count(b"\n")
            index += 1


def sql_text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def read_csv_sql(path: Path, types: list[str], skip: int = 1) -> str:
    """DuckDB ``read_csv`` with every column typed explicitly (columns c0, c1, ...)."""
    spec = ", ".join(f"'c{i}': '{t}'" for i, t in enumerate(types))
    return (
        f"read_csv({sql_path(path)}, header = false, skip = {skip}, "
        f"auto_detect = false, delim = ',', quote = '\"', escape = '\"', columns = {{{spec}}})"
    )


#: DuckDB's sentence naming the cell it could not convert (on a later line of its message)
_BAD_CELL = re.compile(r'converting column "c(?P<column>\d+)"\. (?P<what>Could not convert string '
                       r'"[^"\n]{0,80}" to \'\w+\')')


def duckdb_error(error: Exception, where: str, chunk: Chunk | None = None) -> SchemaError:
    """A DuckDB read error as a :class:`SchemaError` naming the file (and the chunk's lines).

    DuckDB numbers the lines of a chunk from 1: they become the file's line numbers.
    """
    full = str(error)
    text = full.split("\n", 1)[0]
    cell = _BAD_CELL.search(full)
    if cell is not None:  # the value and its column: what a user needs to find the cell
        text += f": {cell['what']} in column {int(cell['column']) + 1}"
    at = ""
    if chunk is not None:
        text = re.sub(r"Line: (\d+)", lambda m: f"Line: {int(m[1]) + chunk.first_line - 1}", text)
        at = f" (lines {chunk.first_line}-{chunk.last_line})"
    return SchemaError(f"{where}: DuckDB could not read the file as typed{at}: {text}")


def is_duckdb_error(error: BaseException) -> bool:
    return type(error).__module__.startswith(("duckdb", "_duckdb"))


class ChunkParser:
    """Parses chunks of one wide file: column ``c0`` text, ``c1``... ``float64``.

    ``scratch`` is a folder for the rare chunk DuckDB has to read (it reads files).
    Thread-safe: every call uses its own reader state.
    """

    def __init__(self, path: Path, n_columns: int, scratch: Path, con) -> None:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        self.path, self.scratch, self.con = path, scratch, con
        self.names = [f"c{i}" for i in range(n_columns)]
        self.parse_options = pcsv.ParseOptions(
            delimiter=",", quote_char='"', double_quote=True, escape_char=False
        )
        self.convert_options = pcsv.ConvertOptions(
            column_types={"c0": pa.string(), **{n: pa.float64() for n in self.names[1:]}},
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        )

    def __call__(self, chunk: Chunk):  # -> pyarrow.Table
        import pyarrow as pa
        import pyarrow.csv as pcsv

        options = pcsv.ReadOptions(
            column_names=self.names, use_threads=False, block_size=len(chunk.data) + 1
        )
        try:
            return pcsv.read_csv(
                pa.BufferReader(chunk.data),
                read_options=options,
                parse_options=self.parse_options,
                convert_options=self.convert_options,
            )
        except pa.ArrowInvalid:
            return self.with_duckdb(chunk)

    def with_duckdb(self, chunk: Chunk):  # -> pyarrow.Table
        """Read ``chunk`` with DuckDB's typed reader (same columns and types)."""
        part = self.scratch / f".chunk-{chunk.index}.csv"
        part.write_bytes(chunk.data)
        types = ["VARCHAR"] + ["DOUBLE"] * (len(self.names) - 1)
        try:
            query = f"SELECT * FROM {read_csv_sql(part, types, skip=0)}"
            with self.con.cursor() as cursor:
                return cursor.sql(query).to_arrow_table()
        except Exception as error:
            if not is_duckdb_error(error):
                raise
            raise duckdb_error(error, self.path.name, chunk) from error
        finally:
            part.unlink(missing_ok=True)
