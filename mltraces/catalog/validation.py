"""Check every schema constraint of every table in SQL and report what fails.

``validate()`` returns one row per (table, rule) with the number of failing
rows and a few examples naming the input file and line (or the row's key).
Rules come from the schema files (:func:`mltraces.schema.compile_rules`):
``required``, ``enum``, ``minimum``/``maximum``, ``pattern``, ``unique``, the
primary key and the schema's own ``checks``. Schema drift found while reading
the inputs (a missing, extra or renamed column, a value that does not parse, a
malformed row, an empty file) is reported as ``schema drift: ...`` rules, one
per kind, with every problem's file, column and line.

Values a type cannot hold faithfully (``12.5`` in an integer column, a time
without the offset its format requires, text that does not parse) are
``unparsable value`` drift with file, line and column; NaN and infinities fail
a number's ``minimum``/``maximum``; NUL characters in text are reported.

Every mapped job table (:mod:`mltraces.jobmap`) is also held to the common rules
of ``mltraces.jobs`` (``schemas/mltraces/jobs.json``: end >= start >= submit,
num_gpu >= 0, known states, one row per job, ...), computed on its mapped rows
and reported under the table as ``jobs: <rule>`` with the same examples (file,
line, key); a rule its ``jobs.json`` lists under ``warnings`` is a warning. Every
mapped request table is held the same way to the rules of ``mltraces.requests``
(``requests: ...``: tokens >= 0, prefix block counts, arrivals inside the trace's
window, one row per request). A
table built from its verified upstream files is held to the row count its
source promises (``expected_rows`` in ``source.json``).

Severity ``error`` rows with failures make ``mltraces validate`` exit 1. Every
kind of drift is an error, including the ones that do not stop a table from
loading (an extra column, which the view ignores; a NUL character): the file
is not in the published format. ``warning`` rows (known upstream anomalies,
consistency checks inferred from sample rows) are reported but do not fail;
``skipped`` rows are tables whose files are not fetched, when every table is
validated (nothing is downloaded then).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mltraces.catalog import (
    ConversionError,
    DriftProblem,
    FileReader,
    NotFetchedError,
    SchemaDriftError,
    is_view_table,
    materialize,
    read_status,
    reader_for,
    resolve_local,
    select_schemas,
)
from mltraces.catalog.views import typed_select_sql
from mltraces.errors import FetchError, MltracesError
from mltraces.jobmap import JOBS_TABLE
from mltraces.requestmap import REQUESTS_TABLE
from mltraces.schema import Rule, TableSchema, compile_rules, quote_ident, sql_path

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

REPORT_COLUMNS = ["table", "rule", "severity", "failing_rows", "checked_rows", "examples",
                  "description"]
MAX_EXAMPLES = 5


def _row(table: str, rule: str, severity: str, failing: int | None, checked: int | None,
         examples: list[str], description: str) -> dict[str, Any]:
    return dict(zip(REPORT_COLUMNS,
                    (table, rule, severity, failing, checked, examples, description), strict=True))


def _drift_rows(table: str, problems: Iterable[DriftProblem], severity: str) -> list[dict]:
    """Group drift problems by kind: one report row each, every problem as an example."""
    by_kind: dict[str, list[DriftProblem]] = {}
    for problem in problems:
        by_kind.setdefault(problem.kind, []).append(problem)
    return [
        _row(table, f"schema drift: {kind}", severity, len(found), None,
             [str(p) for p in found[:MAX_EXAMPLES]],
             f"input files do not match the schema ({kind})")
        for kind, found in by_kind.items()
    ]


def _location(schema: TableSchema, source: str, row: int) -> str:
    """``trace.csv line 7`` or ``curves.pkl item 7``, as the table's reader numbers rows."""
    reader = reader_for(schema)
    label = reader.row_label if isinstance(reader, FileReader) else "item"
    return f"{source} {label} {row}"


def _example(schema: TableSchema, record: dict[str, Any]) -> str:
    shown = [c for c in record if c not in ("_source", "_row")]
    values = ", ".join(f"{c}={'NULL' if record[c] is None else record[c]}" for c in shown)
    if "_source" not in record:
        return values
    where = _location(schema, record["_source"], int(record["_row"]))
    return f"{where}: {values}" if values else where


def _check_rules(con: duckdb.DuckDBPyConnection, schema: TableSchema, source: str,
                 located: bool, rules: list[Rule] | None = None,
                 key: tuple[str, ...] | None = None) -> list[dict]:
    """Count every rule's failures in one scan, then fetch a few examples per failing rule.

    ``source`` is a relation (a Parquet scan or a view); ``located`` says it has
    the ``_source``/``_row`` columns that name each row's file and line. ``rules``
    default to the schema's own, ``key`` (the columns an example shows) to its
    primary key.
    """
    rules = compile_rules(schema) if rules is None else rules
    key = schema.primary_key if key is None else key
    flags = ", ".join(f"({r.fail_sql}) AS r{i}" for i, r in enumerate(rules))
    counts = ", ".join(f"count(*) FILTER (WHERE r{i})" for i in range(len(rules)))
    query = f"SELECT count(*), {counts} FROM (SELECT {flags} FROM {source})"
    total, *failing = con.execute(query).fetchall()[0]
    where = ["_source", "_row"] if located else []
    report = []
    for rule, bad in zip(rules, failing, strict=True):
        examples: list[str] = []
        if bad:
            columns = list(dict.fromkeys([*where, *key, *rule.columns]))
            # as text: rendering TIMESTAMPTZ in Python would need pytz
            select = ", ".join(f"CAST({quote_ident(c)} AS VARCHAR)" for c in columns)
            order = "ORDER BY _source, _row " if located else ""
            rows = con.execute(
                f"SELECT {select} FROM (SELECT *, ({rule.fail_sql}) AS _bad FROM {source}) "
                f"WHERE _bad {order}LIMIT {MAX_EXAMPLES}").fetchall()
            examples = [_example(schema, dict(zip(columns, r, strict=True))) for r in rows]
        report.append(_row(schema.name, rule.name, rule.severity, int(bad), int(total), examples,
                           rule.description))
    return report


def _job_rules(schema: TableSchema) -> list[Rule] | None:
    """The common rules of ``mltraces.jobs`` for a mapped job table (None if not mapped)."""
    from mltraces.jobmap import common_schema, job_tables

    entry = job_tables().get(schema.name)
    if entry is None:
        return None
    rules = []
    for rule in compile_rules(common_schema()):
        name = rule.name.removeprefix("check ")
        reason = entry.warnings.get(name) or entry.warnings.get(rule.name)
        rules.append(rule._replace(
            table=schema.name, name=f"jobs: {rule.name}",
            severity="warning" if reason else rule.severity,
            description=rule.description + (f" (known: {reason})" if reason else "")))
    return rules


def _check_job_rules(con: duckdb.DuckDBPyConnection, schema: TableSchema, relation: str,
                     located: bool) -> list[dict]:
    """The common rules of every view that maps the table (``mltraces.jobs``,
    ``mltraces.requests``) on its mapped rows of ``relation`` (the table's typed rows)."""
    from mltraces.jobmap import common_schema, job_table, select_sql

    names = [*schema.field_names, *(d.name for d in schema.derived)]
    extra = ["_source", "_row"] if located else []
    report = _check_request_rules(con, schema, relation, (names, extra))
    rules = _job_rules(schema)
    if rules is None:
        return report
    mapped = f"({select_sql(job_table(schema.name), relation, names, extra=extra)})"
    return report + _check_rules(con, schema, mapped, bool(extra), rules,
                                 common_schema().primary_key)


def _check_request_rules(con: duckdb.DuckDBPyConnection, schema: TableSchema, relation: str,
                         columns: tuple[list[str], list[str]]) -> list[dict]:
    """The common request rules (tokens >= 0, prefix blocks, the trace's window, ...) on the
    mapped rows of a request table, reported as ``requests: <rule>``."""
    from mltraces.requestmap import common_schema, request_tables, rules, select_sql

    entry = request_tables().get(schema.name)
    if entry is None:
        return []
    names, extra = columns
    mapped = f"({select_sql(entry, relation, names, extra=extra)})"
    return _check_rules(con, schema, mapped, bool(extra), rules(entry),
                        common_schema().primary_key)


def _expected_rows(schema: TableSchema, rows: int) -> list[dict]:
    """The row count the table's source promises for its published files, as a rule."""
    from mltraces.registry import all_sources

    source = all_sources().get(schema.schema_name)
    expected = source.expected_rows.get(schema.name) if source else None
    if expected is None:
        return []
    found = [] if rows == expected else [f"expected {expected:,} rows, found {rows:,}"]
    return [_row(schema.name, "expected rows", "error", abs(rows - expected), rows, found,
                 f"the published files hold {expected:,} rows (expected_rows in "
                 f"{schema.schema_name}'s source.json)")]


def _validate_external(schema: TableSchema, local: str | os.PathLike[str] | None) -> list[dict]:
    """Rules of a table its source's reader serves: checked on its view."""
    from mltraces.catalog import connect

    try:
        con = connect(tables=[schema.name], local={schema.name: local} if local else None,
                      strict=True)
    except MltracesError as error:
        return [_row(schema.name, "view", "error", None, None, [str(error)],
                     "its view could not be created")]
    try:
        status = (read_status(con) or {}).get(schema.name)
        if status is not None and not status.usable:  # nothing to read: say why, check nothing
            return [_row(schema.name, "view", "skipped", None, None, [str(status.reason)],
                         "it has nothing to read yet")]
        return (_check_rules(con, schema, schema.qualified, located=False,
                             rules=_view_rules(schema))
                + _check_job_rules(con, schema, schema.qualified, located=False))
    finally:
        con.close()


def _view_rules(schema: TableSchema) -> list[Rule]:
    """A table's own rules; ``mltraces.requests`` adds each trace's window rule."""
    from mltraces.requestmap import REQUESTS_TABLE, request_tables, window_rule

    own = compile_rules(schema)
    if schema.name != REQUESTS_TABLE:
        return own
    return [*own, window_rule(request_tables().values(), schema.name)]


def validate_table(schema: TableSchema | str, local: str | os.PathLike[str] | None = None,
                   *, explicit: bool = True, con: duckdb.DuckDBPyConnection | None = None
                   ) -> list[dict]:
    """Report rows for one table (see :func:`validate`); ``con``: a DuckDB to check its
    Parquet on (from :func:`_checking_connection`; one of its own when None)."""
    from mltraces.schema import get_schema

    if isinstance(schema, str):
        schema = get_schema(schema)
    if is_view_table(schema):
        return _validate_external(schema, local)
    try:
        built = materialize(schema, local, fetch=explicit)
    except SchemaDriftError as error:
        return _drift_rows(schema.name, error.problems, "error")
    except MltracesError as error:
        return [_unchecked(schema, error)]
    report = _drift_rows(schema.name, built.warnings, "error")
    if built.verified:
        report += _expected_rows(schema, built.rows)
    checker = con if con is not None else _checking_connection()
    try:
        source = f"read_parquet({sql_path(built.parquet)})"
        report += _check_rules(checker, schema, source, located=True)
        typed = f"({typed_select_sql(schema, built.parquet, ['_source', '_row'])})"
        report += _check_job_rules(checker, schema, typed, located=True)
    finally:
        if con is None:
            checker.close()
    return report


def _checking_connection() -> duckdb.DuckDBPyConnection:
    """The DuckDB the rules run on (UTC): one per :func:`validate`, shared by its tables (a
    new DuckDB costs ~11 ms; the checks only read Parquet, and leave nothing on it)."""
    import duckdb

    from mltraces.catalog.buildcon import in_utc

    return in_utc(duckdb.connect())


def _unchecked(schema: TableSchema, error: MltracesError) -> dict:
    """The one report row of a table that could not be checked, saying why in plain words."""
    if isinstance(error, NotFetchedError):
        return _row(schema.name, "input files", "skipped", None, None, [str(error)],
                    "its files are not fetched yet")
    if isinstance(error, FetchError):
        return _row(schema.name, "input files", "error", None, None, [str(error)],
                    "its files could not be fetched")
    if isinstance(error, ConversionError):
        return _row(schema.name, "conversion", "error", None, None, [str(error)],
                    "converting its files failed")
    return _row(schema.name, "input files", "error", None, None, [str(error)],
                "its files could not be read safely")


def validate(
    tables: str | Iterable[str] | None = None,
    local: Mapping[str, str | os.PathLike[str]] | None = None,
) -> pd.DataFrame:
    """Check every constraint of the given tables (all by default); one row per rule.

    Columns: ``table``, ``rule``, ``severity`` (``error``, ``warning`` or
    ``skipped``), ``failing_rows`` (None when the table could not be read),
    ``checked_rows``, ``examples`` (list of "file line N: key=value" strings)
    and ``description``. ``failed(report)`` tells whether errors were found.

    Examples
    --------
    >>> report = mltraces.validate(["itp.jobs"])           # doctest: +SKIP
    >>> report[report.failing_rows > 0]                   # doctest: +SKIP
    """
    import pandas as pd

    overrides = resolve_local(local)
    explicit = tables is not None
    rows: list[dict] = []
    # (a view over the others: its rules were checked on each table it unites)
    schemas = [schema for schema in select_schemas(tables)
               if explicit or schema.name not in (JOBS_TABLE, REQUESTS_TABLE)]
    con = _checking_connection() if not all(map(is_view_table, schemas)) else None
    try:
        for schema in schemas:
            rows += validate_table(schema, overrides.get(schema.name), explicit=explicit,
                                   con=con)
    finally:
        if con is not None:
            con.close()
    frame = pd.DataFrame(rows, columns=REPORT_COLUMNS)
    frame["failing_rows"] = frame["failing_rows"].astype("Int64")
    frame["checked_rows"] = frame["checked_rows"].astype("Int64")
    return frame


def failed(report: pd.DataFrame) -> bool:
    """True when an error-severity rule failed or a table could not be checked."""
    errors = report[report.severity == "error"]
    return bool(errors.failing_rows.isna().any() or (errors.failing_rows.fillna(0) > 0).any())
