"""Philly's own readers: the job log (one JSON array) and the utilization and machine lists.

Every input is one member of ``trace-data.tar.gz`` (1 GB, 6.6 GB unpacked),
read as a stream: nothing but the converted Parquet is written, and memory
holds one batch of rows. Rows are first collected as text (a raw Parquet in
the scratch folder), then typed by DuckDB with a check on every value, so a
time that is not ``YYYY-MM-DD HH:MM:SS``, a count that is not a whole number or
a JSON item of the wrong shape is a drift problem naming the member and line.

- ``philly_jobs``, ``philly_attempts``, ``philly_attempt_gpus``: ``cluster_job_log``,
  parsed item by item (:mod:`mltraces.catalog.jsonarray`); ``null``, ``""`` and
  ``"None"`` are missing times, as in the upstream notebook. A job's GPUs are
  those of its first attempt, its run from its first attempt's start to its last
  attempt's end (the notebook's derivations).
- ``philly_util``: the per-minute ``cluster_{gpu,cpu,mem}_util`` CSVs; their
  times end with ``PDT`` or ``PST`` (the US Pacific offset, -07:00 or -08:00),
  ``NA`` is an offline machine, and a row may end with an empty field after a
  trailing comma (the notebook drops it).
- ``philly_machines``: ``cluster_machine_list`` (``m31,8, 24GB``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from mltraces.catalog.jsonarray import JsonArrayError, items
from mltraces.catalog.problems import DriftProblem, SchemaDriftError
from mltraces.catalog.protocol import (
    TABLE_PARQUET,
    Conversion,
    FileReader,
    InputFile,
    ReadRequest,
)
from mltraces.schema import Field, TableSchema, quote_ident, sql_literal, sql_path

BATCH = 50_000
MAX_REPORTED = 200
MAX_HEADER = 1 << 16
MISSING_TIMES = ("", "None")
_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
_ZONES = {"PDT": "-07:00", "PST": "-08:00"}


# --------------------------------------------------------------------------- raw rows -> typed


class _RawWriter:
    """Text rows, a batch at a time, into a scratch Parquet file (bounded memory)."""

    def __init__(self, path: Path, columns: list[str]) -> None:
        self.path, self.columns = path, columns
        self.buffer: dict[str, list[Any]] = {c: [] for c in columns}
        self.writer: Any = None
        self.rows = 0

    def add(self, row: tuple | Any) -> None:
        """One row of text cells then its line, or a whole batch (pyarrow) of them."""
        if not isinstance(row, tuple):
            self._write(row)
            return
        for column, value in zip(self.columns, row, strict=True):
            self.buffer[column].append(value)
        if len(self.buffer["_row"]) >= BATCH:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        types = {c: (pa.int64() if c == "_row" else pa.string()) for c in self.columns}
        self._write(pa.table({c: pa.array(v, type=types[c]) for c, v in self.buffer.items()}))
        self.buffer = {c: [] for c in self.columns}

    def _write(self, table: Any) -> None:
        import pyarrow.parquet as pq

        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema)
        self.writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        self.flush()
        self.writer.close()


def _bad_sql(field: Field, q: str) -> str:
    """True on a text value the field cannot hold faithfully."""
    if field.type == "integer":
        return (f"({q} IS NOT NULL AND (TRY_CAST({q} AS BIGINT) IS NULL OR "
                f"TRY_CAST({q} AS DOUBLE) IS DISTINCT FROM TRY_CAST({q} AS BIGINT)))")
    if field.type == "number":
        return f"({q} IS NOT NULL AND TRY_CAST({q} AS DOUBLE) IS NULL)"
    # a time of the right shape names a day and an hour that exist (2017-02-30 and 25:61
    # are no time: a cast would make them NULL without a word)
    if field.type == "datetime" and field.duckdb_type == "TIMESTAMP":
        return (f"({q} IS NOT NULL AND (NOT regexp_full_match({q}, '{_TIME}') OR "
                f"TRY_CAST({q} AS TIMESTAMP) IS NULL))")
    if field.type == "datetime":  # a Pacific time with its zone name
        return (f"({q} IS NOT NULL AND (NOT regexp_full_match({q}, '{_TIME} (PDT|PST)') OR "
                f"TRY_CAST(left({q}, 19) AS TIMESTAMP) IS NULL))")
    return "false"


def _typed_sql(field: Field, q: str) -> str:
    if field.type == "datetime" and field.duckdb_type == "TIMESTAMPTZ":
        offset = " ".join(f"WHEN {sql_literal(z)} THEN {sql_literal(o)}" for z, o in _ZONES.items())
        return (f"CAST(left({q}, 19) || CASE right({q}, 3) {offset} END AS TIMESTAMPTZ)")
    return f"TRY_CAST({q} AS {field.duckdb_type})"


def _value_problems(con: Any, schema: TableSchema, raw: str, label: str) -> list[DriftProblem]:
    found = []
    for field in schema.fields:
        q = quote_ident(field.name)
        bad = _bad_sql(field, q)
        if bad == "false":
            continue
        for row, value in con.execute(f"SELECT _row, {q} FROM {raw} WHERE {bad} ORDER BY _row "
                                      f"LIMIT {MAX_REPORTED}").fetchall():
            shown = value if len(value) <= 80 else value[:77] + "..."
            found.append(DriftProblem("unparsable value", label,
                                      f'"{shown}" is not {_what(field)}', field.name, int(row)))
    return found


def _what(field: Field) -> str:
    if field.type == "integer":
        return "a whole number"
    if field.type == "number":
        return "a number"
    if field.duckdb_type == "TIMESTAMP":
        return "a time YYYY-MM-DD HH:MM:SS (a day and hour that exist)"
    return "a time YYYY-MM-DD HH:MM:SS PDT/PST (a day and hour that exist)"


def _typed_copy(schema: TableSchema, raw_path: Path, label: str, out: Path, work: Path) -> int:
    """Type the raw text rows into ``out``: every value checked first, then cast."""

    from mltraces.catalog.buildcon import build_connection

    con = build_connection(work)
    try:
        raw = f"read_parquet({sql_path(raw_path)})"
        problems = _value_problems(con, schema, raw, label)
        if problems:
            raise SchemaDriftError(schema.name, sorted(problems, key=lambda p: p.line or 0)
                                   [:MAX_REPORTED])
        columns = ", ".join(f"{_typed_sql(f, quote_ident(f.name))} AS {quote_ident(f.name)}"
                            for f in schema.fields)
        con.execute(f"COPY (SELECT {columns}, {sql_literal(label)} AS _source, _row FROM {raw}) "
                    f"TO {sql_literal(str(out))} "
                    f"({TABLE_PARQUET})")
        return int(con.execute(f"SELECT count(*) FROM read_parquet({sql_path(out)})")
                   .fetchall()[0][0])
    finally:
        con.close()


def _only_input(request: ReadRequest) -> InputFile:
    if len(request.inputs) != 1:
        labels = ", ".join(i.label for i in request.inputs)
        raise SchemaDriftError(request.schema.name, [DriftProblem(
            "missing file", labels, "expected exactly one input")])
    return request.inputs[0]


def _convert_rows(request: ReadRequest, rows: Callable[[IO[bytes], str], Iterator[tuple]]
                  ) -> Conversion:
    """Stream the one input through ``rows`` (text cells, then the line) and type them."""
    item = _only_input(request)
    columns = [*request.schema.field_names, "_row"]
    raw = _RawWriter(request.work / "raw.parquet", columns)
    try:
        with item.open() as stream:
            for row in rows(stream, item.label):
                raw.add(row)
        raw.close()
        count = _typed_copy(request.schema, raw.path, item.label, request.out, request.work)
    except SchemaDriftError as error:  # raised deep in a stream: name the table here
        raise SchemaDriftError(request.schema.name, error.problems) from None
    return Conversion(count)


# --------------------------------------------------------------------------- the job log


_JOB_KEYS = {"status", "vc", "jobid", "attempts", "submitted_time", "user"}


def _time(value: Any) -> str | None:
    """A job-log time as text; None for the notebook's missing values (null, "", "None")."""
    if value is None:
        return None
    text = str(value)
    return None if text in MISSING_TIMES else text


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class _Shape(Exception):
    """A job-log item that is not shaped like a job."""


def _attempts(job: dict) -> list[tuple[str | None, str | None, list[tuple[str, str]]]]:
    """(start, end, [(machine, gpu), ...]) of each attempt, checked for shape."""
    attempts = job.get("attempts")
    if not isinstance(attempts, list):
        raise _Shape("'attempts' is not a list")
    found = []
    for attempt in attempts:
        if not isinstance(attempt, dict) or not isinstance(attempt.get("detail", []), list):
            raise _Shape("an attempt is not an object with a 'detail' list")
        placed = []
        for detail in attempt.get("detail", []):
            gpus = detail.get("gpus") if isinstance(detail, dict) else None
            if not isinstance(gpus, list) or not isinstance(detail.get("ip"), str):
                raise _Shape("an attempt's detail lacks 'ip' or its 'gpus' list")
            placed += [(detail["ip"], str(g)) for g in gpus]
        found.append((_time(attempt.get("start_time")), _time(attempt.get("end_time")), placed))
    return found


def _jobs(stream: IO[bytes], label: str) -> Iterator[tuple[int, dict, list]]:
    """(position, job, attempts) of each well-shaped item (the first is 1); every misshapen
    one is a problem naming its position (the file may hold the whole array on one line)."""
    problems: list[DriftProblem] = []
    try:
        for line, (_, job) in enumerate(items(stream, label), 1):  # _row: the job's position
            if not isinstance(job, dict) or not set(job) >= _JOB_KEYS:
                missing = sorted(_JOB_KEYS - set(job)) if isinstance(job, dict) else []
                what = f"lacks {', '.join(missing)}" if missing else "is not a JSON object"
                problems.append(DriftProblem("missing column", label, f"the job {what}", None,
                                             line))
            else:
                try:
                    yield line, job, _attempts(job)
                except _Shape as shape:
                    problems.append(DriftProblem("malformed row", label, str(shape), "attempts",
                                                 line))
            if len(problems) >= MAX_REPORTED:  # every kind counts: the report stays bounded
                problems.append(DriftProblem("malformed row", label, f"reading stopped after "
                                             f"{MAX_REPORTED} misshapen jobs", None, line))
                break
    except JsonArrayError as error:
        problems.append(DriftProblem("malformed row", label, str(error), None,
                                     None if error.item is None else error.item + 1))
    if problems:
        raise SchemaDriftError("", problems)


def _job_rows(stream: IO[bytes], label: str) -> Iterator[tuple]:
    for line, job, attempts in _jobs(stream, label):
        first = attempts[0] if attempts else None
        yield (_text(job["jobid"]), _text(job["user"]), _text(job["vc"]), _text(job["status"]),
               _time(job["submitted_time"]), str(len(attempts)),
               first[0] if first else None, attempts[-1][1] if attempts else None,
               str(len(first[2])) if first else None,
               str(len({m for m, _ in first[2]})) if first else None, line)


def _attempt_rows(stream: IO[bytes], label: str) -> Iterator[tuple]:
    for line, job, attempts in _jobs(stream, label):
        for index, (start, end, placed) in enumerate(attempts):
            yield (_text(job["jobid"]), str(index), start, end,
                   str(len({m for m, _ in placed})), str(len(placed)), line)


def _gpu_rows(stream: IO[bytes], label: str) -> Iterator[tuple]:
    for line, job, attempts in _jobs(stream, label):
        for index, (_, _, placed) in enumerate(attempts):
            for machine, gpu in placed:
                yield _text(job["jobid"]), str(index), machine, gpu, line


def convert_jobs(request: ReadRequest) -> Conversion:
    """``philly.jobs``: one row per job of ``cluster_job_log``."""
    return _convert_rows(request, _job_rows)


def convert_attempts(request: ReadRequest) -> Conversion:
    """``philly.attempts``: one row per attempt."""
    return _convert_rows(request, _attempt_rows)


def convert_attempt_gpus(request: ReadRequest) -> Conversion:
    """``philly.attempt_gpus``: one row per GPU of each attempt (machine and GPU name)."""
    return _convert_rows(request, _gpu_rows)


# --------------------------------------------------------------------------- CSV members


def _header(stream: IO[bytes], label: str) -> list[str]:
    line = stream.readline(MAX_HEADER + 1)
    if not line.strip():
        raise SchemaDriftError("", [DriftProblem("empty file", label, "the file is empty")])
    if len(line) > MAX_HEADER:
        raise SchemaDriftError("", [DriftProblem("malformed row", label,
                                                 "the first line is not a header", None, 1)])
    try:
        text = line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SchemaDriftError("", [DriftProblem("not UTF-8", label, "the header is not UTF-8",
                                                 None, 1)]) from None
    cells = [c.strip() for c in text.split(",")]
    return cells[:-1] if cells and cells[-1] == "" else cells


class _Rejoined(io.RawIOBase):
    """``head`` (bytes already read) followed by the rest of ``stream``."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        super().__init__()
        self.head, self.stream = head, stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            size = min(len(buffer), len(self.head))
            buffer[:size], self.head = self.head[:size], self.head[size:]
            return size
        data = self.stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _csv_batches(stream: IO[bytes], label: str, names: list[str]) -> Iterator[Any]:
    """The data rows after the header, as pyarrow batches of text with their line (_row).

    The first row decides whether rows end with a trailing comma (an empty last
    cell, dropped); a row with any other number of cells is a problem naming it.
    """
    import pyarrow as pa
    import pyarrow.csv as pv

    first = stream.readline(MAX_HEADER + 1)
    if not first.strip():
        return
    trailing = first.rstrip(b"\r\n").endswith(b",")
    columns = [*names, "_trailing"] if trailing else names
    bad: list[DriftProblem] = []

    def invalid(row: Any) -> str:
        if len(bad) < MAX_REPORTED:
            text = row.text if len(row.text) <= 80 else row.text[:77] + "..."
            bad.append(DriftProblem("malformed row", label, f"expected {len(columns)} cells "
                                    f"(as on line 2), found {row.actual_columns}: {text!r}"))
        return "skip"

    def reader() -> Any:
        return pv.open_csv(
            io.BufferedReader(_Rejoined(first, stream), 1 << 20),
            read_options=pv.ReadOptions(column_names=columns, block_size=8 << 20),
            parse_options=pv.ParseOptions(invalid_row_handler=invalid, quote_char=False),
            convert_options=pv.ConvertOptions(column_types=dict.fromkeys(columns, pa.string()),
                                              strings_can_be_null=True, null_values=["", "NA"]))

    line = 1
    for batch in _utf8_batches(reader, label):
        if trailing and batch.column(len(names)).null_count != batch.num_rows:
            bad.append(DriftProblem("malformed row", label, "a row holds a value after the "
                                    "trailing comma"))
            break
        lines = pa.array(range(line + 1, line + 1 + batch.num_rows), type=pa.int64())
        line += batch.num_rows
        yield pa.table([*batch.columns[: len(names)], lines], names=[*names, "_row"])
    if bad:
        raise SchemaDriftError("", bad)


def _utf8_batches(opened: Callable[[], Any], label: str) -> Iterator[Any]:
    """The batches of the reader ``opened`` returns (it reads its first block at once); bytes
    that are not UTF-8 text are a problem naming the line the batch holding them starts
    after (pyarrow says no more)."""
    import pyarrow as pa

    reader = None
    line = 1  # the header
    while True:
        try:
            reader = reader or opened()
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as error:
            reason = str(error).splitlines()[0][:160]
            raise SchemaDriftError("", [DriftProblem(
                "not UTF-8" if "UTF8" in reason.upper() else "malformed row", label,
                f"after line {line:,}: {reason}; save the file as UTF-8 text")]) from None
        line += batch.num_rows
        yield batch


def _util_rows(schema: TableSchema) -> Callable[[IO[bytes], str], Iterator[tuple]]:
    expected = list(schema.field_names)

    def rows(stream: IO[bytes], label: str) -> Iterator[tuple]:
        header = _header(stream, label)
        if header != expected:
            missing = [c for c in expected if c not in header]
            extra = [c for c in header if c not in expected]
            raise SchemaDriftError("", [DriftProblem(
                "missing column" if missing else "malformed row", label,
                f"header {', '.join(header)} is not {', '.join(expected)}"
                f"{' (missing: ' + ', '.join(missing) + ')' if missing else ''}"
                f"{' (extra: ' + ', '.join(extra) + ')' if extra else ''}", None, 1)])
        yield from _csv_batches(stream, label, expected)

    return rows


def convert_util(request: ReadRequest) -> Conversion:
    """``philly.gpu_util``, ``cpu_util``, ``mem_util``: the per-minute CSVs, streamed."""
    return _convert_rows(request, _util_rows(request.schema))


_MACHINE = re.compile(r"^\s*(\d+)\s*GB\s*$")


def _lines(stream: IO[bytes], label: str, problems: list[DriftProblem]
           ) -> Iterator[tuple[int, str]]:
    """(line, text) of each line of at most ``MAX_HEADER`` bytes; a longer line or one that
    is not UTF-8 is a problem naming it (the file is a short list, one machine a line)."""
    line = 0
    while raw := stream.readline(MAX_HEADER + 1):
        line += 1
        if len(raw) > MAX_HEADER:
            problems.append(DriftProblem("malformed row", label, f"a line longer than "
                                         f"{MAX_HEADER:,} bytes: not a machine list", None, line))
            return
        try:
            yield line, raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(DriftProblem("not UTF-8", label, f"byte 0x{raw[error.start]:02x} "
                                         "is not UTF-8 text; save the file as UTF-8", None, line))
            if len(problems) >= MAX_REPORTED:
                return


def _machine_rows(stream: IO[bytes], label: str) -> Iterator[tuple]:
    """``m31,8, 24GB``; a first line naming the columns is skipped."""
    problems: list[DriftProblem] = []
    for line, raw in _lines(stream, label, problems):
        cells = [c.strip() for c in raw.rstrip("\r\n").split(",")]
        if line == 1 and cells and cells[0] == "machineId":
            continue
        if cells == [""]:
            continue
        memory = _MACHINE.match(cells[2]) if len(cells) == 3 else None
        if memory is None:
            shown = raw.strip() if len(raw) <= 80 else raw.strip()[:77] + "..."
            problems.append(DriftProblem("malformed row", label, f"{shown!r} is not "
                                         "'machine,GPUs, <n>GB'", None, line))
            if len(problems) >= MAX_REPORTED:
                break
            continue
        yield cells[0], cells[1], memory.group(1), line
    if problems:
        raise SchemaDriftError("", problems[:MAX_REPORTED])


def convert_machines(request: ReadRequest) -> Conversion:
    """``philly.machines``: the machine list, its memory column as whole GB."""
    return _convert_rows(request, _machine_rows)


READERS = {
    **{name: FileReader(name, convert, row_label="item") for name, convert in (
        ("philly_jobs", convert_jobs), ("philly_attempts", convert_attempts),
        ("philly_attempt_gpus", convert_attempt_gpus))},  # _row: the job's position in the log
    **{name: FileReader(name, convert, row_label="line") for name, convert in (
        ("philly_util", convert_util), ("philly_machines", convert_machines))},
}
