"""The requests mapping: how each source's request logs map onto one ``requests`` schema.

LLM-serving traces log requests, not jobs: an arrival, token counts, sometimes a
session and its turn, the prefix blocks a KV cache could reuse, a latency. Every
source with such a table declares, as data in its folder, how it maps onto the common
columns of ``schemas/mltraces/requests.json`` (the ``mltraces.requests`` view):
``mltraces/sources/<source>/requests.json``, in the format of the jobs mapping
(:mod:`mltraces.mapping`)::

    {"tables": [{
        "table": "mooncake.conversation",         # a table of this source
        "trace": "mooncake/conversation",         # its name in mltraces.requests
        "description": "...",                     # optional
        "time": {"kind": "relative"},             # clock | unix | relative | shifted
        "columns": {                              # common column: SQL over the typed view
            "request_id": "line", "arrival": "timestamp / 1000.0",
            "input_tokens": "input_length", "output_tokens": "output_length",
            "prefix_blocks": "hash_ids", "kind": "'conversation'"},
        "block_size": 512,                        # tokens per prefix block (with prefix_blocks)
        "window": {"start_s": 0, "end_s": 3600, "note": "one hour (the README)"},
        "warnings": {"prefix_blocks_match_input": "why the trace is known to break it"}
    }]}

- ``columns`` keys: :data:`COLUMN_KEYS`; ``request_id`` and ``arrival`` are
  required. ``arrival`` is a time in the table's ``time.kind`` (as the jobs mapping's
  ``submit``); ``latency`` is in seconds; ``failed`` is a boolean expression;
  ``prefix_blocks`` a list of block ids, which needs ``block_size``.
- ``window``: the span the publisher says the trace covers, in seconds on the
  ``arrival_s`` scale (from the trace's origin); ``end_s`` may be left out. Without a
  window every arrival must be at or after second 0. ``mltraces validate`` names the
  requests that arrive outside it.
- ``warnings``: common rules the published trace is known to break, with the reason.

>>> sorted(t.trace for t in request_tables().values())[:1]     # doctest: +SKIP
['alibaba_genai/lora_requests']
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mltraces.errors import RegistryError
from mltraces.mapping import (
    Constants,
    Times,
    checked_columns,
    expression,
    parse_time,
    read_tables,
    scan,
)
from mltraces.mapping import referenced_columns as _referenced
from mltraces.schema import Rule, TableSchema, get_schema, quote_ident, sql_literal

if TYPE_CHECKING:
    import duckdb

MAPPING_FILE = "requests.json"
REQUESTS_TABLE = "mltraces.requests"
#: mapping keys -> the common column each one feeds (``arrival`` feeds an instant and seconds)
COLUMN_KEYS = ("request_id", "session_id", "turn", "arrival", "input_tokens", "output_tokens",
               "model", "kind", "image_count", "prefix_blocks", "latency", "failed")
REQUIRED_KEYS = ("request_id", "arrival")
#: the name of the window rule (a check of every mapped table, bounds from its mapping)
WINDOW_RULE = "arrival_within_window"
_TABLE_KEYS = {"table", "trace", "description", "time", "columns", "block_size", "window",
               "warnings"}
_WINDOW_KEYS = {"start_s", "end_s", "note"}
_TRACE = re.compile(r"^[a-z][a-z0-9_]*/[A-Za-z0-9_.-]+$")


class Window(NamedTuple):
    """The span a trace covers, in seconds from its origin (``end_s`` None: open)."""

    start_s: float = 0.0
    end_s: float | None = None
    note: str = ""

    def fail_sql(self, column: str = "arrival_s") -> str:
        """True on an arrival outside the window."""
        q = quote_ident(column)
        outside = f"{q} < {sql_literal(float(self.start_s))}"
        if self.end_s is not None:
            outside += f" OR {q} >= {sql_literal(float(self.end_s))}"
        return f"({q} IS NOT NULL AND ({outside}))"

    def text(self) -> str:
        end = f"{self.end_s:,.0f} s" if self.end_s is not None else "open"
        return f"[{self.start_s:,.0f} s, {end})" + (f": {self.note}" if self.note else "")


@dataclass(frozen=True)
class RequestTable:
    """One mapped request table: the declaration of ``requests.json``, checked."""

    table: str
    trace: str
    kind: str
    columns: Mapping[str, str]
    zone: str | None = None
    origin: str | None = None
    block_size: int | None = None
    window: Window = field(default_factory=Window)
    warnings: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    path: Path | None = None

    @property
    def source(self) -> str:
        return self.table.split(".", 1)[0]


# --------------------------------------------------------------------------- loading


def _columns(raw: Any, where: str, problems: list[str]) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v.strip()
                                            for v in raw.values()):
        problems.append(f"{where}: columns must map common columns to SQL expressions (text)")
        return {}
    unknown = sorted(set(raw) - set(COLUMN_KEYS))
    if unknown:
        problems.append(f"{where}: unknown columns {unknown}; known: {', '.join(COLUMN_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        problems.append(f"{where}: columns lack {missing} (every request needs an id and an "
                        "arrival time)")
    return dict(raw)


def _window(raw: Any, where: str, problems: list[str]) -> Window:
    if raw is None:
        return Window()
    numbers = ("start_s", "end_s")
    if not isinstance(raw, dict) or set(raw) - _WINDOW_KEYS or not all(
            isinstance(raw.get(k, 0), int | float) and not isinstance(raw.get(k, 0), bool)
            and math.isfinite(raw.get(k, 0)) for k in numbers):
        problems.append(f"{where}: window must be {{\"start_s\": seconds, \"end_s\": seconds, "
                        "\"note\": text}} (numbers on the arrival_s scale)")
        return Window()
    window = Window(raw.get("start_s", 0.0), raw.get("end_s"), str(raw.get("note", "")))
    if window.end_s is not None and window.end_s <= window.start_s:
        problems.append(f"{where}: window end_s must be after start_s")
    return window


def _block_size(raw: dict, columns: Mapping[str, str], where: str, problems: list[str]
                ) -> int | None:
    size = raw.get("block_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        problems.append(f"{where}: block_size must be a positive number of tokens")
        return None
    if ("prefix_blocks" in columns) != (size is not None):
        problems.append(f"{where}: prefix_blocks and block_size come together (the tokens "
                        "each block id stands for)")
    return size


def parse_table(raw: Any, source: str, where: str) -> RequestTable:
    """One entry of ``tables`` in ``requests.json``; every problem is listed in one error."""
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: each entry of tables must be an object")
    table = raw.get("table")
    where = f"{where} [{table}]"
    unknown = sorted(set(raw) - _TABLE_KEYS)
    if unknown:
        problems.append(f"{where}: unknown keys {unknown}; known: {sorted(_TABLE_KEYS)}")
    if not isinstance(table, str) or not table.startswith(source + "."):
        problems.append(f"{where}: table must be a table of this source, '{source}.TABLE'")
    trace = raw.get("trace")
    if not isinstance(trace, str) or not _TRACE.match(trace) or not trace.startswith(source + "/"):
        problems.append(f"{where}: trace must be '{source}/NAME' (letters, digits, '_.-'), "
                        f"got {trace!r}")
    kind, zone, origin = parse_time(raw.get("time"), where, problems)
    columns = _columns(raw.get("columns"), where, problems)
    block_size = _block_size(raw, columns, where, problems)
    window = _window(raw.get("window"), where, problems)
    warnings = raw.get("warnings", {})
    if not isinstance(warnings, dict) or not all(isinstance(v, str) and v for v in
                                                 warnings.values()):
        problems.append(f"{where}: warnings must map a common rule's name to the reason")
        warnings = {}
    unknown_rules = sorted(set(warnings) - set(rule_names()))
    if unknown_rules:
        problems.append(f"{where}: warnings name no common rule: {unknown_rules}; rules: "
                        f"{', '.join(rule_names())}")
    if problems:
        raise RegistryError("invalid requests mapping:\n  " + "\n  ".join(problems))
    return RequestTable(table=table, trace=trace, kind=kind, columns=columns, zone=zone,
                        origin=origin, block_size=block_size, window=window,
                        warnings=dict(warnings), description=str(raw.get("description", "")))


def load_mapping(folder: str | Path) -> tuple[RequestTable, ...]:
    """The request tables a source folder declares in its ``requests.json`` (none without)."""
    folder = Path(folder)
    path = folder / MAPPING_FILE
    raw = read_tables(path)
    if raw is None:
        return ()
    tables = tuple(parse_table(entry, folder.name, str(path)) for entry in raw)
    seen: set[str] = set()
    for entry in tables:
        if entry.table in seen:
            raise RegistryError(f"{path}: table {entry.table} is mapped twice")
        seen.add(entry.table)
    return tuple(RequestTable(**{**entry.__dict__, "path": path}) for entry in tables)


@cache
def request_tables() -> dict[str, RequestTable]:
    """Every mapped request table of every source folder, by table name (scanned, cached)."""
    return scan(load_mapping)


def request_table(table: str) -> RequestTable:
    """The mapping of ``table``; the error names the mapped tables."""
    tables = request_tables()
    if table not in tables:
        raise KeyError(f"{table} is not a mapped request table; mapped: "
                       f"{', '.join(sorted(tables))} (a source maps its request tables in its "
                       f"folder's {MAPPING_FILE})")
    return tables[table]


def common_schema() -> TableSchema:
    """The schema of ``mltraces.requests`` (schemas/mltraces/requests.json)."""
    return get_schema(REQUESTS_TABLE)


@cache
def rule_names() -> list[str]:
    """The common rules a mapping's ``warnings`` may name (compiled once per process)."""
    from mltraces.schema import compile_rules

    return [*(r.name.removeprefix("check ") for r in compile_rules(common_schema())),
            WINDOW_RULE]


def window_rule(entries: Iterable[RequestTable], table: str) -> Rule:
    """The window rule over rows of ``entries`` (one table's, or the view's: by trace)."""
    entries = list(entries)
    if len(entries) == 1:
        fail = entries[0].window.fail_sql()
        where = entries[0].window.text()
    else:
        cases = " ".join(f"WHEN {sql_literal(e.trace)} THEN {e.window.fail_sql()}"
                         for e in entries)
        fail = f"CASE trace {cases} ELSE false END" if entries else "false"
        where = "each trace's window (its requests.json)"
    return Rule(table, f"check {WINDOW_RULE}", fail,
                f"every request arrives within the trace's window {where}", ("arrival_s",))


def rules(entry: RequestTable) -> list[Rule]:
    """The common rules for one mapped table, named ``requests: <rule>``; a rule its
    mapping lists under ``warnings`` is a warning, with the reason."""
    from mltraces.schema import compile_rules

    found = []
    for rule in [*compile_rules(common_schema()), window_rule([entry], entry.table)]:
        name = rule.name.removeprefix("check ")
        reason = entry.warnings.get(name) or entry.warnings.get(rule.name)
        found.append(rule._replace(
            table=entry.table, name=f"requests: {rule.name}",
            severity="warning" if reason else rule.severity,
            description=rule.description + (f" (known: {reason})" if reason else "")))
    return found


# --------------------------------------------------------------------------- SQL


def select_sql(entry: RequestTable, relation: str, names: Iterable[str], *,
               extra: Iterable[str] = (), constants: Constants | None = None) -> str:
    """``SELECT`` of the common columns (schema order) of one mapped table.

    ``relation`` is the table's typed view (or any relation with its columns),
    ``names`` its column names; ``extra`` columns of ``relation`` are passed through
    after the common ones (``_source``, ``_row`` for validation). ``constants`` are second 0
    and the clock's offset already computed (:func:`prepare_constants`): a materialised
    part scans for the first arrival once.
    """
    schema = common_schema()
    types = {f.name: f.duckdb_type for f in schema.fields}
    names = list(names)
    checked_columns(entry, names)
    expr = {k: expression(v, names) for k, v in entry.columns.items()}
    times = Times(entry, expr, relation, "arrival", constants)
    origin = constants.origin if constants else times.origin()
    values = {
        "trace": sql_literal(entry.trace),
        "arrival_s": times.seconds("arrival", origin),
        "arrival_time": times.instant("arrival"),
        "latency_s": expr.get("latency", "NULL"),
        "block_size": str(entry.block_size) if entry.block_size is not None else "NULL",
    }
    parts = []
    for f in schema.fields:
        value = values.get(f.name, expr.get(f.name, "NULL"))
        parts.append(f"CAST({value} AS {types[f.name]}) AS {quote_ident(f.name)}")
    parts += [quote_ident(c) for c in extra]
    return f"SELECT {', '.join(parts)} FROM {relation}"


def prepare_constants(entry: RequestTable, relation: str, names: Iterable[str],
                      scalar: Callable[[str], Any]) -> Constants:
    """Second 0 that :func:`select_sql` counts from and the clock's one UTC offset, computed
    once over ``relation`` (``scalar`` evaluates SQL to its value)."""
    names = list(names)
    expr = {k: expression(v, names) for k, v in entry.columns.items()}
    return Times(entry, expr, relation, "arrival").prepare(scalar, ("arrival",))


def table_select_sql(entry: RequestTable, *, extra: Iterable[str] = ()) -> str:
    """:func:`select_sql` over the table's catalog view (``mooncake.conversation``)."""
    schema = get_schema(entry.table)
    names = [*schema.field_names, *(d.name for d in schema.derived)]
    return select_sql(entry, schema.qualified, names, extra=extra)


def empty_sql() -> str:
    """The common columns, typed, without rows (a requests view with no table to read)."""
    parts = [f"CAST(NULL AS {f.duckdb_type}) AS {quote_ident(f.name)}"
             for f in common_schema().fields]
    return f"SELECT {', '.join(parts)} WHERE false"


def referenced_columns(entry: RequestTable, names: Iterable[str]) -> set[str]:
    """The columns of the table (``names``) that the mapping's expressions read."""
    return _referenced(entry.columns.values(), names)


def check_binds(entry: RequestTable, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Bind the mapping against an empty copy of its table: unknown columns, bad SQL and
    clock times without a zone are named here, before any data is read."""
    import duckdb

    schema = get_schema(entry.table)
    own = con is None
    con = con or duckdb.connect()
    try:
        columns = [f"CAST(NULL AS {f.duckdb_type}) AS {quote_ident(f.name)}"
                   for f in schema.fields]
        columns += ["CAST(NULL AS VARCHAR) AS _source", "CAST(NULL AS BIGINT) AS _row"]
        relation = f"(SELECT {', '.join(columns)} WHERE false)"
        derived = ", ".join(f"CAST(({d.sql}) AS {d.duckdb_type}) AS {quote_ident(d.name)}"
                            for d in schema.derived)
        if derived:
            relation = f"(SELECT *, {derived} FROM {relation})"
        names = [*schema.field_names, *(d.name for d in schema.derived)]
        try:
            con.execute(f"DESCRIBE {select_sql(entry, relation, names)}")
        except duckdb.Error as error:
            raise RegistryError(f"{entry.path}: the mapping of {entry.table} does not bind to "
                                f"its columns: {str(error).splitlines()[0]}") from None
        _check_arrival_type(con, entry, relation, names)
    finally:
        if own:
            con.close()


def _check_arrival_type(con: duckdb.DuckDBPyConnection, entry: RequestTable, relation: str,
                        names: list[str]) -> None:
    """A clock arrival is an instant (a naive one with its zone); numbers are seconds."""
    value = expression(entry.columns["arrival"], names)
    kind = con.execute(f"DESCRIBE SELECT {value} AS t FROM {relation}").fetchall()[0][1]
    times = ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE")
    if entry.kind == "clock" and kind == "TIMESTAMP" and entry.zone is None:
        raise RegistryError(f"{entry.path}: {entry.table}'s arrival has no UTC offset; declare "
                            "the zone it was written in (time.zone, e.g. \"UTC\")")
    if entry.kind in ("clock", "shifted") and kind not in times:
        raise RegistryError(f"{entry.path}: {entry.table}'s arrival is {kind}, not a time; "
                            "use time.kind unix or relative for numbers of seconds")
    if entry.kind in ("unix", "relative") and kind in times:
        raise RegistryError(f"{entry.path}: {entry.table}'s arrival is a time ({kind}); use "
                            "time.kind clock (or shifted, for a clock moved to hide its dates)")
