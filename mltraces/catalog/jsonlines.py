"""JSON-lines request logs to typed Parquet, one bounded line at a time.

LLM-serving traces with prefix-cache hashes (Mooncake's, the Qwen/Bailian ones) are
JSON lines: one request per line, its token counts and the ids of its prefix blocks
(``hash_ids``, one per ``block_size`` tokens). A source's ``readers.py`` describes its
keys (:class:`JsonLinesFormat`) and this module converts them, holding every line to
what its own counts justify before anything is parsed:

- a line is read in at most :data:`HEAD_BYTES` first; a longer one may only be as
  long as its ``input_length`` (and ``output_length``, when they come first) justify:
  :data:`ID_BYTES` per block id they allow, so a line of 10 M ids behind an
  ``input_length`` of 7,000 is refused after reading 64 KiB, naming its line;
- the parsed ids may not outnumber ``ceil((input + output) / block_size) + 1`` (a
  trace that hashes its output blocks too still fits; whether each request has exactly
  ``ceil(input / block_size)`` is the common rule ``mltraces validate`` checks);
- token counts are whole, non-negative numbers: ``NaN``, ``Infinity``, ``-3`` and
  ``12.5`` are refused with their line, key and value (Python's JSON parser would
  accept the first two);
- every other value has the type its schema field says.

Problems are collected line by line (up to :data:`MAX_REPORTED`) and raised together
as one :class:`~mltraces.catalog.problems.SchemaDriftError`; the catalog deletes the
partial Parquet, so nothing half-written is ever served. Memory holds one batch of
rows (:data:`BATCH`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.catalog.protocol import Conversion, InputFile, ReadRequest
from mltraces.schema import Field, TableSchema

__all__ = [
    "COUNT",
    "HEAD_BYTES",
    "IDS",
    "ID_BYTES",
    "INTEGER",
    "NUMBER",
    "TEXT",
    "JsonKey",
    "JsonLinesFormat",
    "convert_json_lines",
    "justified_ids",
]

#: value kinds a key may have
COUNT, INTEGER, NUMBER, TEXT, IDS = "count", "integer", "number", "text", "ids"
#: bytes of a line read before its counts are known; bytes allowed per justified block id
HEAD_BYTES, ID_BYTES = 1 << 16, 24
BATCH = 20_000
MAX_REPORTED = 200
_INT64 = 2**63
_ARROW = {"BIGINT": "int64", "DOUBLE": "float64", "VARCHAR": "string", "BOOLEAN": "bool_"}


class JsonKey(NamedTuple):
    """One key of the objects: its schema field and the kind of value it holds."""

    key: str
    column: str
    kind: str


class JsonLinesFormat(NamedTuple):
    """A JSON-lines format: its keys, the block size of its id list and what justifies it.

    ``derive`` (optional) makes, per conversion, a function from one parsed row (column
    -> value) to the values of schema fields no key holds (Qwen's conversation root).
    """

    keys: tuple[JsonKey, ...]
    block_size: int
    justify: tuple[str, ...] = ("input_length", "output_length")
    derive: Callable[[], Callable[[dict[str, Any]], dict[str, Any]]] | None = None


def justified_ids(counts: list[int], block_size: int) -> int:
    """Most block ids token ``counts`` can justify: every block of them, plus one."""
    return math.ceil(max(0, sum(counts)) / block_size) + 1


class _Line(NamedTuple):
    number: int
    data: bytes | None  # None: refused before parsing (``problem`` says why)
    problem: DriftProblem | None = None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _head_counts(head: bytes, keys: tuple[str, ...]) -> list[int] | None:
    """The token counts a line's first bytes name before its ids (None: not there)."""
    found = []
    for key in keys:
        match = re.search(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*(-?\d{1,15})\b', head)
        if match is None:
            return None if key == keys[0] else found
        found.append(int(match.group(1)))
    return found


def _skip_rest(handle: IO[bytes]) -> None:
    """Read past the rest of a refused line in bounded chunks (never holding it)."""
    while True:
        chunk = handle.readline(1 << 20)
        if not chunk or chunk.endswith(b"\n"):
            return


def _lines(handle: IO[bytes], label: str, fmt: JsonLinesFormat) -> Iterator[_Line]:
    """Each line, bounded: a long line only as long as its own counts justify."""
    number = 0
    while True:
        head = handle.readline(HEAD_BYTES)
        if not head:
            return
        number += 1
        if head.endswith(b"\n") or len(head) < HEAD_BYTES:
            yield _Line(number, head)
            continue
        counts = _head_counts(head, fmt.justify)
        if not counts:
            _skip_rest(handle)
            yield _Line(number, None, DriftProblem(
                "malformed row", label, f"the line is longer than {HEAD_BYTES:,} bytes and "
                f"names no {fmt.justify[0]} before its ids: nothing justifies its length",
                None, number))
            continue
        allowed = justified_ids(counts, fmt.block_size)
        budget = allowed * ID_BYTES
        rest = handle.readline(budget + 1)
        if len(rest) > budget and not rest.endswith(b"\n"):
            _skip_rest(handle)
            named = ", ".join(f"{k} {v:,}" for k, v in zip(fmt.justify, counts, strict=False))
            yield _Line(number, None, DriftProblem(
                "malformed row", label, f"the line is longer than {HEAD_BYTES + budget:,} bytes, "
                f"more than its {named} justify (at most {allowed:,} ids of "
                f"{fmt.block_size}-token blocks)", None, number))
            continue
        yield _Line(number, head + rest)


def _bad(label: str, line: int, key: str, message: str) -> DriftProblem:
    return DriftProblem("unparsable value", label, message, key, line)


def _value(kind: str, value: Any, key: str, where: tuple[str, int]
           ) -> tuple[Any, DriftProblem | None]:
    """``value`` checked for its kind: (the value, None) or (None, the problem)."""
    label, line = where
    whole = isinstance(value, int) and not isinstance(value, bool)
    if kind in (COUNT, INTEGER):
        if not whole or not -_INT64 <= value < _INT64:
            return None, _bad(label, line, key, f"{_shown(value)} is not a whole number")
        if kind == COUNT and value < 0:
            return None, _bad(label, line, key, f"{value} is not a token count (>= 0)")
        return value, None
    if kind == NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            return None, _bad(label, line, key, f"{_shown(value)} is not a finite number")
        return float(value), None
    if kind == TEXT:
        if value is not None and not isinstance(value, str):
            return None, _bad(label, line, key, f"{_shown(value)} is not text")
        return value, None
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _INT64 for v in value):
        return None, _bad(label, line, key, "is not a list of block ids (whole numbers >= 0)")
    return value, None


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse(line: _Line, label: str, fmt: JsonLinesFormat
           ) -> tuple[dict[str, Any] | None, list[DriftProblem]]:
    """One line's values by column, or the problems that refuse it."""
    try:
        text = line.data.decode("utf-8")  # type: ignore[union-attr]
    except UnicodeDecodeError as error:
        return None, [DriftProblem("not UTF-8", label, f"byte offset {error.start} of the line "
                                   "is not UTF-8", None, line.number)]
    if not text.strip():
        return None, [DriftProblem("malformed row", label, "empty line", None, line.number)]
    try:
        item = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        return None, [DriftProblem("malformed row", label, f"not valid JSON ({error})", None,
                                   line.number)]
    if not isinstance(item, dict):
        return None, [DriftProblem("malformed row", label, "not a JSON object", None,
                                   line.number)]
    row: dict[str, Any] = {}
    problems = [DriftProblem("missing column", label, f"key {k.key!r} is missing", k.key,
                             line.number) for k in fmt.keys if k.key not in item]
    for spec in fmt.keys:
        if spec.key in item:
            row[spec.column], problem = _value(spec.kind, item[spec.key], spec.key,
                                               (label, line.number))
            problems += [problem] if problem else []
    return row, problems


def _too_many_ids(row: dict[str, Any], fmt: JsonLinesFormat, label: str, line: int
                  ) -> DriftProblem | None:
    """The ids may not outnumber what the line's own token counts justify."""
    ids_key = next(k for k in fmt.keys if k.kind == IDS)
    columns = {k.key: k.column for k in fmt.keys}
    counts = [row[columns[k]] for k in fmt.justify if row.get(columns.get(k, "")) is not None]
    allowed = justified_ids(counts, fmt.block_size)
    ids = row.get(ids_key.column) or []
    if len(ids) <= allowed:
        return None
    return DriftProblem("unparsable value", label, f"{len(ids):,} block ids where its token "
                        f"counts justify at most {allowed:,} ({fmt.block_size}-token blocks)",
                        ids_key.key, line)


class _Writer:
    """Rows, a batch at a time, into the output Parquet (the schema's types, then _source,
    _row)."""

    def __init__(self, schema: TableSchema, out: Path) -> None:
        import pyarrow as pa

        self.fields = schema.fields
        self.out = out
        self.types = [_arrow_type(pa, f) for f in schema.fields]
        self.columns: list[list[Any]] = [[] for _ in range(len(schema.fields) + 2)]
        self.writer: Any = None
        self.rows = 0

    def add(self, row: dict[str, Any], source: str, line: int) -> None:
        for index, f in enumerate(self.fields):
            self.columns[index].append(row.get(f.name))
        self.columns[-2].append(source)
        self.columns[-1].append(line)
        if len(self.columns[-1]) >= BATCH:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = [*(f.name for f in self.fields), "_source", "_row"]
        types = [*self.types, pa.string(), pa.int64()]
        table = pa.table([pa.array(c, type=t) for c, t in zip(self.columns, types, strict=True)],
                         names=names)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.out, table.schema, compression="zstd")
        self.writer.write_table(table, row_group_size=122_880)
        self.rows += table.num_rows
        self.columns = [[] for _ in names]

    def close(self) -> int:
        self.flush()
        self.writer.close()
        return self.rows


def _arrow_type(pa: Any, f: Field) -> Any:
    """The Arrow type of a field's DuckDB type (``BIGINT[]``: a list of int64)."""
    kind = f.duckdb_type
    if kind.endswith("[]"):
        return pa.list_(getattr(pa, _ARROW[kind[:-2]])())
    return getattr(pa, _ARROW[kind])()


def _convert_one(item: InputFile, fmt: JsonLinesFormat, writer: _Writer,
                 problems: list[DriftProblem]) -> None:
    derive = fmt.derive() if fmt.derive is not None else None
    empty = True
    with item.open() as handle:
        for line in _lines(handle, item.label, fmt):
            empty = False
            if line.problem is not None:
                problems.append(line.problem)
            else:
                row, found = _parse(line, item.label, fmt)
                too_many = _too_many_ids(row, fmt, item.label, line.number) if row and not found \
                    else None
                found += [too_many] if too_many else []
                problems.extend(found)
                if row is not None and not found and not problems:
                    if derive is not None:
                        row.update(derive(row))
                    writer.add(row, item.label, line.number)
            if len(problems) >= MAX_REPORTED:
                return
    if empty:
        problems.append(DriftProblem("empty file", item.label, "the file is empty: expected "
                                     "one JSON object per line"))


def convert_json_lines(request: ReadRequest, fmt: JsonLinesFormat) -> Conversion:
    """Convert the request's JSON-lines inputs into one Parquet file (see the module doc)."""
    if sum(k.kind == IDS for k in fmt.keys) != 1:
        raise ValueError("a JSON-lines format has exactly one key of block ids")
    problems: list[DriftProblem] = []
    writer = _Writer(request.schema, request.out)
    try:
        for item in request.inputs:
            _convert_one(item, fmt, writer, problems)
            if len(problems) >= MAX_REPORTED:
                break
    finally:
        rows = writer.close() if writer.writer is not None or not problems else 0
    if problems:
        raise SchemaDriftError(request.schema.name, problems[:MAX_REPORTED])
    return Conversion(rows)
