"""The built-in ``csv`` reader: upstream CSV files to one typed Parquet file, via DuckDB.

Every column is read with the type its schema gives (never sniffed). Values a
plain DuckDB cast would change silently are read as text and converted with a
check, so they fail with their file, line and column instead of loading wrong:

- integers: ``12.5`` would round to 13; a value is accepted only when it is a
  whole number;
- instants whose schema format carries an offset (``%z``): a time without one
  would be read as UTC; it must carry ``+HH:MM`` or ``Z``;
- times of a clock written without a zone (a ``TIMESTAMP`` column): a value that
  carries an offset or a zone name would lose it (DuckDB keeps the wall clock and
  drops ``+08:00``), so a column mixing zones is refused, never read half-shifted.
  The fast read parses the common ``%Y-%m-%d %H:%M:%S`` in DuckDB's CSV scanner
  with that format, which leaves no room for a zone; any other value fails it, and
  the exact read checks it as text.

``_row`` is the physical line of each row, counting the newlines inside quoted
fields, so ``validate`` cites lines an editor shows. Problems are collected in
a second, diagnostic scan that runs only when the fast one fails: one problem
per bad line (DuckDB reports a short line once per missing column), lines from
byte offsets (DuckDB counts rows). NUL characters in text do not stop the
build but are reported. A full disk is a :class:`ConversionError`, not a bad row.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from mltraces.catalog.problems import DriftProblem, SchemaDriftError, disk_problem
from mltraces.catalog.protocol import (
    SCRATCH_PARQUET,
    TABLE_PARQUET,
    Conversion,
    InputFile,
    ReadRequest,
)
from mltraces.catalog.text import (
    FileFacts,
    check_last_line,
    file_facts,
    physical_lines,
    plain_csv,
    read_header,
)
from mltraces.errors import SchemaError
from mltraces.schema import Field, TableSchema, quote_ident, sql_literal, sql_path

if TYPE_CHECKING:
    import duckdb

__all__ = ["FastInput", "convert_csv", "fast_input", "header_drift"]

MAX_REPORTED = 200
# a time of day, then its UTC offset: "...08:00:00+08:00", "...08:00Z" (a date's "-01" is not)
_OFFSET = r"\d:\d\d(?::\d\d(?:\.\d+)?)?\s*(?:Z|[+-]\d\d(?::?\d\d)?)\s*$"
# the common forms, checked with LIKE (a regex per value costs a quarter of the conversion);
# anything else is left to the exact read, which uses _OFFSET
_OFFSET_LIKE = ("%:__:__+__:__", "%:__:__-__:__", "%:__:__Z", "%:__:__+____", "%:__:__-____")
_NEWLINES = "coalesce(length({c}) - length(replace({c}, chr(10), '')), 0)"
# a time of day followed by an offset or a zone name: what a naive clock must not carry
_ZONED = r"\d:\d\d(?::\d\d(?:\.\d+)?)?\s*(?:Z|[+-]\d\d(?::?\d\d)?|[A-Za-z]{2,5})\s*$"
# the common naive form, 19 characters ending in ':SS': no zone fits after the seconds, so
# _ZONED cannot match it and its regex is skipped (it cost a third of Helios's conversion)
_PLAIN_LIKE = "____-__-__ __:__:__"


class CsvInput(NamedTuple):
    """One input ready to scan: its plain path, its header and what a byte scan found."""

    item: InputFile
    path: Path
    header: list[str]
    facts: FileFacts


# --------------------------------------------------------------------------- header


def header_drift(schema: TableSchema, header: list[str], label: str
                 ) -> tuple[list[DriftProblem], list[DriftProblem]]:
    """Compare a file header with the schema: (errors, warnings).

    Missing columns are errors; extra columns are warnings (ignored by the view,
    reported by ``validate``); a missing and an extra column at the same position
    read as a rename.
    """
    expected = [f.name for f in schema.file_fields]
    missing = [c for c in expected if c not in header]
    extra = [c for c in header if c not in expected]
    errors: list[DriftProblem] = []
    renamed: set[str] = set()
    for column in missing:
        position = expected.index(column)
        candidate = header[position] if position < len(header) else None
        if candidate in extra:
            renamed.add(candidate)
            message = f"column {column!r} appears renamed to {candidate!r}"
            errors.append(DriftProblem("renamed column", label, message, column))
        else:
            message = f"column {column!r} is missing (header: {', '.join(header)})"
            errors.append(DriftProblem("missing column", label, message, column))
    if len(set(header)) != len(header):
        errors.append(DriftProblem("malformed row", label, "the header repeats a column name",
                                   None, 1))
    warnings = [DriftProblem("extra column", label, f"unexpected column {c!r} is ignored", c)
                for c in extra if c not in renamed]
    return errors, warnings


def _readable(path: Path, work: Path) -> Path:
    """``path``, or a link to it under a plain name when DuckDB cannot name it literally."""
    try:
        sql_path(path)
        return path
    except SchemaError:
        link = work / f"input-{len(list(work.iterdir()))}.csv"
        try:
            link.symlink_to(path)
        except OSError:  # no symlinks here (Windows without the privilege): copy
            shutil.copyfile(path, link)
        return link


def _materialized(item: InputFile, work: Path) -> Path:
    """An archive member as a scratch file in ``work`` (read once, checked on the way).

    Only this member is written, and only for this conversion: DuckDB reads files,
    not streams, and the archive itself may unpack to far more.
    """
    out = work / f"{len(list(work.iterdir()))}-{Path(item.member or item.label).name}"
    with item.open() as source, out.open("wb") as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
    return out


def _prepare(schema: TableSchema, item: InputFile, work: Path) -> CsvInput:
    source = _materialized(item, work) if item.member else item.path
    path = _readable(plain_csv(item.label, source, work), work)
    dialect = schema.dialect
    if item.header is not None:  # a headerless file whose columns another file names
        header = read_header(item.header, item.header.name, dialect)
    elif dialect.header:
        header = read_header(path, item.label, dialect)
    else:
        header = [f.name for f in schema.file_fields]
    check_last_line(path, item.label)
    return CsvInput(item, path, header, file_facts(path, dialect.quote))


# --------------------------------------------------------------------------- SQL


# How columns are read. "fast": integers as DOUBLE, accepted when whole and below
# 2**53 (exact there); "exact": integers as text, for files the fast read refused
# (a 64-bit id); "text": everything as text, for the diagnostic scan. Instants
# whose format carries an offset are read as text in every mode, to check it, and so
# are the times of a clock written without a zone (none of them may carry one).
FAST, EXACT, TEXT = "fast", "exact", "text"
_EXACT_DOUBLE = 2**53


def _naive(f: Field) -> bool:
    """A time of a clock written without a zone (``TIMESTAMP``): no value may carry one."""
    return f.type == "datetime" and f.duckdb_type == "TIMESTAMP"


#: the clock format the fast read parses in the scanner: where it accepts a value, the value
#: is TRY_CAST's (2026-12-02, DuckDB 2.0: 38 edge cases, from "24:00:00" to "-infinity");
#: anything else (a zone, "T", fractions, a 5-digit year) fails it, so the exact read runs
CLOCK_FORMAT = "%Y-%m-%d %H:%M:%S"


def _scanned_clock(f: Field, mode: str) -> bool:
    """A clock time the fast read leaves to the scanner (which refuses a zone by format)."""
    return mode == FAST and _naive(f) and f.format == CLOCK_FORMAT


def _checked(f: Field) -> bool:
    """Read other than as its type, then converted with a check (a cast would change it)."""
    return f.type == "integer" or f.needs_offset or _naive(f)


def _bad_sql(f: Field, q: str) -> str:
    """True on a text value that the field's type cannot hold faithfully."""
    if f.type == "integer":
        return (f"({q} IS NOT NULL AND (TRY_CAST({q} AS BIGINT) IS NULL OR "
                f"TRY_CAST({q} AS DOUBLE) IS DISTINCT FROM TRY_CAST({q} AS BIGINT)))")
    typed = f"TRY_CAST({q} AS {f.duckdb_type})"
    if _naive(f):
        return (f"({q} IS NOT NULL AND ({typed} IS NULL OR ({q} NOT LIKE "
                f"{sql_literal(_PLAIN_LIKE)} AND regexp_matches({q}, {sql_literal(_ZONED)}))))")
    if f.needs_offset:
        return (f"({q} IS NOT NULL AND ({typed} IS NULL OR "
                f"NOT regexp_matches({q}, {sql_literal(_OFFSET)})))")
    return f"({q} IS NOT NULL AND {typed} IS NULL)"


def _convert_sql(f: Field, q: str, label: str, mode: str) -> str:
    """The typed value of a checked column; raises (so a slower read runs) when not faithful."""
    stop = f"error({sql_literal(f'mltraces: bad value in {label}, column {f.name}')})"
    if f.type == "integer" and mode == FAST:  # q is a DOUBLE here
        return (f"CASE WHEN {q} IS NULL THEN NULL WHEN abs({q}) < {_EXACT_DOUBLE} AND "
                f"{q} = trunc({q}) THEN CAST({q} AS BIGINT) ELSE {stop} END")
    if f.needs_offset and mode == FAST:
        offset = " OR ".join(f"{q} LIKE {sql_literal(p)}" for p in _OFFSET_LIKE)
        return (f"CASE WHEN {q} IS NULL THEN NULL WHEN {offset} THEN "
                f"CAST({q} AS {f.duckdb_type}) ELSE {stop} END")
    return f"CASE WHEN {_bad_sql(f, q)} THEN {stop} ELSE TRY_CAST({q} AS {f.duckdb_type}) END"


def _column_types(schema: TableSchema, part: CsvInput, mode: str) -> dict[str, str]:
    """The type each header column is read as in ``mode`` (unknown columns: text)."""
    fields = {f.name: f for f in schema.file_fields}
    types = {}
    for name in part.header:
        f = fields.get(name)
        if f is not None and _scanned_clock(f, mode):
            types[name] = "TIMESTAMP"
        elif f is None or mode == TEXT or (_checked(f) and (mode == EXACT or f.needs_offset
                                                             or _naive(f))):
            types[name] = "VARCHAR"
        else:
            types[name] = "DOUBLE" if f.type == "integer" else f.duckdb_type
    return types


def _read_csv(schema: TableSchema, part: CsvInput, mode: str, *, rejects: bool = False) -> str:
    """``read_csv(...)`` of one input with explicit column types (nothing sniffed)."""
    types = _column_types(schema, part, mode)
    columns = ", ".join(f"{sql_literal(n)}: {sql_literal(t)}" for n, t in types.items())
    nulls = ", ".join(sql_literal(v) for v in schema.missing_values) or "''"
    d = schema.dialect
    options = (f"header = {sql_literal(d.header)}, auto_detect = false, "
               f"delim = {sql_literal(d.delimiter)}, quote = {sql_literal(d.quote)}, "
               f"escape = {sql_literal(d.escape)}, columns = {{{columns}}}, "
               f"nullstr = [{nulls}], strict_mode = true")
    if "TIMESTAMP" in types.values():  # only scanned clocks are read as TIMESTAMP
        options += f", timestampformat = {sql_literal(CLOCK_FORMAT)}"
    if rejects:
        options += f", store_rejects = true, rejects_limit = {MAX_REPORTED}"
    return f"read_csv({sql_path(part.path)}, {options})"


def _line_sql(schema: TableSchema, part: CsvInput, mode: str) -> str:
    """Physical line of each row: row number + header, plus newlines inside earlier rows."""
    first = "1" if schema.dialect.header else "0"
    base = f"row_number() OVER () + {first}"
    if not part.facts.quoted:
        return base
    types = _column_types(schema, part, mode)
    text = [quote_ident(n) for n, t in types.items() if t == "VARCHAR"]  # only text spans lines
    spans = " + ".join(_NEWLINES.format(c=c) for c in text) or "0"
    return (f"CAST({base} + coalesce(sum({spans}) OVER "
            "(ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT)")


def _select(schema: TableSchema, part: CsvInput, mode: str) -> str:
    """The typed rows of one input, with ``_source`` and ``_row``."""
    parts = []
    for f in schema.fields:
        q = quote_ident(f.name)
        if f.name in part.item.columns:
            value = sql_literal(part.item.columns[f.name])
            parts.append(f"CAST({value} AS {f.duckdb_type}) AS {q}")
        elif _checked(f) and not _scanned_clock(f, mode):
            parts.append(f"{_convert_sql(f, q, part.item.label, mode)} AS {q}")
        else:
            parts.append(q)
    parts.append(f"{sql_literal(part.item.label)} AS _source")
    parts.append(f"{_line_sql(schema, part, mode)} AS _row")
    return f"SELECT {', '.join(parts)} FROM {_read_csv(schema, part, mode)}"


# --------------------------------------------------------------------------- diagnosis


def _reject_problems(con: duckdb.DuckDBPyConnection, part: CsvInput) -> list[DriftProblem]:
    """Structural problems DuckDB rejected (column counts, encoding), one per line."""
    rows = con.execute(
        "SELECT line, line_byte_position, error_type, error_message FROM reject_errors "
        "ORDER BY line").fetchall()
    if part.facts.quoted:  # DuckDB counts rows; a quoted newline shifts every later line
        lines = physical_lines(part.path, [r[1] for r in rows])
        rows = [(lines[r[1]], *r[1:]) for r in rows]
    problems, seen = [], set()
    for line, _, kind, message in rows:
        if line in seen:  # a short line is rejected once per missing column
            continue
        seen.add(line)
        name = "not UTF-8" if kind == "INVALID ENCODING" else "malformed row"
        problems.append(DriftProblem(name, part.item.label, message.strip(), None, int(line)))
    return problems


def _value_problems(con: duckdb.DuckDBPyConnection, schema: TableSchema, part: CsvInput,
                    skipped: list[int]) -> list[DriftProblem]:
    """Every value the schema's types cannot hold, with its line and column."""
    checks = [f for f in schema.file_fields if f.name in part.header]
    found = []
    for f in checks:
        q = quote_ident(f.name)
        rows = con.execute(
            f"SELECT _line, {q} FROM _probe WHERE {_bad_sql(f, q)} ORDER BY _line "
            f"LIMIT {MAX_REPORTED}").fetchall()
        for line, value in rows:
            found.append(DriftProblem("unparsable value", part.item.label,
                                      _value_message(f, value), f.name, _shift(line, skipped)))
    return sorted(found, key=lambda p: (p.line or 0, p.column or ""))


def _value_message(f: Field, value: str) -> str:
    shown = value if len(value) <= 80 else value[:77] + "..."
    if f.type == "integer":
        return f'"{shown}" is not a whole number ({f.name} is an integer column)'
    if _naive(f) and f.duckdb_type == "TIMESTAMP":
        return (f'"{shown}" carries a UTC offset or zone, but {f.name} is a clock written '
                "without one: a column holds one zone (a value with its own would lose it)")
    if f.needs_offset and f.duckdb_type == "TIMESTAMPTZ":
        return (f'"{shown}" is not a time with a UTC offset such as +08:00 '
                f"(format {f.format or 'ISO 8601'})")
    return f'could not convert "{shown}" to {f.duckdb_type}'


def _shift(line: int, skipped: list[int]) -> int:
    """A probe line (rejected rows left out) as the file's line."""
    for bad in skipped:
        if bad <= line:
            line += 1
    return line


def diagnose(con: duckdb.DuckDBPyConnection, schema: TableSchema, part: CsvInput
             ) -> list[DriftProblem]:
    """Every problem of one input: a text scan that keeps going past the first."""
    scan = _read_csv(schema, part, TEXT, rejects=True)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _probe AS SELECT *, {_line_sql(schema, part, TEXT)} "
                f"AS _line FROM {scan}")
    try:
        rejected = _reject_problems(con, part)
        problems = rejected + _value_problems(con, schema, part,
                                              sorted(p.line for p in rejected if p.line))
    finally:
        for table in ("_probe", "reject_errors", "reject_scans"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return sorted(problems, key=lambda p: p.line or 0)[:MAX_REPORTED]


def _nul_findings(con: duckdb.DuckDBPyConnection, schema: TableSchema, parts: list[CsvInput],
                  out: Path) -> list[DriftProblem]:
    """NUL characters in text values (kept, but reported: most tools cut text there)."""
    if not any(p.facts.nul for p in parts):
        return []
    found = []
    for f in schema.fields:
        if f.duckdb_type != "VARCHAR":
            continue
        q = quote_ident(f.name)
        rows = con.execute(f"SELECT _source, _row FROM read_parquet({sql_path(out)}) "
                           f"WHERE contains({q}, chr(0)) ORDER BY ALL LIMIT {MAX_REPORTED}"
                           ).fetchall()
        found += [DriftProblem("NUL character", source, "the value holds a NUL character",
                               f.name, int(row)) for source, row in rows]
    return found


# --------------------------------------------------------------------------- conversion


def convert_csv(request: ReadRequest) -> Conversion:
    """Convert the request's CSV inputs into one Parquet file (the ``csv`` reader)."""
    schema = request.schema
    errors: list[DriftProblem] = []
    warnings: list[DriftProblem] = []
    parts: list[CsvInput] = []
    for item in request.inputs:
        try:
            part = _prepare(schema, item, request.work)
        except SchemaDriftError as error:
            errors.extend(error.problems)
            continue
        bad, odd = header_drift(schema, part.header, item.label)
        errors.extend(bad)
        warnings.extend(odd)
        if not bad:
            parts.append(part)
    if errors:
        raise SchemaDriftError(schema.name, errors)
    con = _connection(request.work)
    try:
        rows = _copy(con, schema, parts, request.out,
                     SCRATCH_PARQUET if request.scratch else TABLE_PARQUET)
        warnings += _nul_findings(con, schema, parts, request.out)
    finally:
        con.close()
    return Conversion(rows, tuple(warnings))


class FastInput(NamedTuple):
    """One input prepared for the fast read inside a reader's own query (a join)."""

    #: its typed rows with ``_source`` and ``_row``: a query over it fails on a value the
    #: fast read cannot hold faithfully; None where the fast read cannot take it at all
    select: str | None
    #: the same input as a plain file (an archive member written out once, checked), for
    #: :func:`convert_csv`, which names every problem the fast read only stopped at
    plain: InputFile
    warnings: list[DriftProblem]


def fast_input(schema: TableSchema, item: InputFile, work: Path) -> FastInput:
    """Prepare ``item`` for a query that reads its rows the fast way, without a scratch file.

    Its header's drift and a bad last line raise here as in :func:`convert_csv`. ``select``
    is None when the header lacks a column or the text holds a NUL (reported only by
    :func:`convert_csv`). Reading PAI's three CSVs inside its join this way saves writing
    and reading back 280 MB of scratch Parquet.
    """
    part = _prepare(schema, item, work)
    errors, warnings = header_drift(schema, part.header, item.label)
    plain = item._replace(path=part.path, member=None)
    if errors or part.facts.nul:
        return FastInput(None, plain, warnings)
    return FastInput(_select(schema, part, FAST), plain, warnings)


def _connection(work: Path) -> duckdb.DuckDBPyConnection:
    from mltraces.catalog.buildcon import build_connection

    return build_connection(work)


def _copy(con: duckdb.DuckDBPyConnection, schema: TableSchema, parts: list[CsvInput],
          out: Path, options: str) -> int:
    """COPY every input to ``out`` (``options``: how, :data:`TABLE_PARQUET` for a table): the
    fast read, else the exact one, else a diagnosis."""
    import duckdb

    columns = ", ".join(quote_ident(n) for n in (*schema.field_names, "_source", "_row"))
    for mode in (FAST, EXACT):
        union = " UNION ALL BY NAME ".join(_select(schema, p, mode) for p in parts)
        try:
            con.execute(f"COPY (SELECT {columns} FROM ({union})) TO {sql_literal(str(out))} "
                        f"({options})")
            break
        except duckdb.OutOfMemoryException:
            raise  # the machine's limit, not a bad row: the caller may try again alone
        except duckdb.Error as error:
            disk = disk_problem(schema.name, out, error)
            if disk is not None:
                raise disk from None
            failure = error
    else:
        problems = [p for part in parts for p in diagnose(con, schema, part)]
        if not problems:
            problems = [DriftProblem("malformed row", ", ".join(p.item.label for p in parts),
                                     str(failure).splitlines()[0])]
        raise SchemaDriftError(schema.name, problems) from None
    rows = con.execute(f"SELECT count(*) FROM read_parquet({sql_path(out)})").fetchall()
    return int(rows[0][0])

