"""The jobs mapping: how each source's job tables map onto one common ``jobs`` schema.

(The file format, the time kinds and their SQL are shared with the requests mapping:
:mod:`mltraces.mapping`.)

Every source with job tables declares, as data in its own folder, how each of
them maps onto the common columns of ``schemas/mltraces/jobs.json`` (the
``mltraces.jobs`` view): ``mltraces/sources/<source>/jobs.json``. A new source
joins the view, the common validation rules and the scheduler by adding that
file; no Python changes. The format::

    {"tables": [{
        "table": "acme.kalos_jobs",               # a table of this source
        "trace": "acme/kalos",                    # its name in mltraces.jobs: SOURCE/NAME
        "description": "...",                     # optional
        "time": {"kind": "clock"},                # clock | unix | relative (+ zone, origin)
        "columns": {                              # common column: SQL over the typed view
            "cluster": "'kalos'", "job_id": "job_id", "user": "user",
            "submit": "submit_time", "start": "start_time", "end": "end_time",
            "num_gpu": "gpu_num", "num_cpu": "cpu_num", "num_nodes": "node_num",
            "mem_gb": "mem_per_pod_GB * node_num",
            "state": "state", "workload_type": "type"},
        "states": {"COMPLETED": "COMPLETED", "CANCELLED": "CANCELLED",
                   "FAILED": "FAILED", "RUNNING": "RUNNING"},
        "replay": ["kalos"],                      # trace ids for `mltraces schedule`
        "capacity": {"gpus": 2416, "gpus_per_node": 8, "note": "..."},
        "warnings": {"end_not_before_start": "why the trace is known to break it"},
        "utilization": ["acme.gpu_metrics", "acme.util_cdf"],  # optional
        "copy_of": "itp/raw"                      # optional: these are another trace's jobs
    }]}

- ``columns`` values are SQL expressions over the table's typed view (its
  fields and derived columns); a value that is exactly a column name is that
  column (quoted for you: ``user`` and ``group`` are SQL keywords). A constant is
  a SQL literal: ``"'seren'"``. Keys: :data:`COLUMN_KEYS`; ``job_id``, ``submit``
  and ``num_gpu`` are required.
- ``time.kind``: ``clock`` — ``submit``/``start``/``end`` are instants
  (``TIMESTAMPTZ``; a ``TIMESTAMP`` without offset needs ``time.zone``, an IANA
  name such as ``America/Los_Angeles``); ``unix`` — numbers of Unix seconds;
  ``relative`` — numbers of seconds from the trace's own start (no clock: the
  view's instants are NULL unless ``time.origin`` names the instant of second 0).
  ``time.origin`` (an ISO instant with offset) is second 0 of ``submit_s``; by
  default the trace's first submission (clock, unix) or its own zero (relative).
  ``deadline`` is in the same kind as ``submit``; ``best_effort`` (true, 1) marks a job
  that asks for no guarantee (its ``deadline`` is the one it lists); ``duration`` (seconds) serves
  traces that publish a run time but no start and end (the run time is never
  copied when start and end exist: it is recomputed).
- ``states`` maps every raw state to one of :data:`STATES`; a raw value missing
  from it fails the ``state_known`` rule of ``mltraces validate``. Without a
  ``state`` column every job is ``UNKNOWN``.
- ``synthetic``: true when model, batch size, iterations and deadline were
  assigned by a simulator's authors (ElasticFlow), not recorded by the cluster.
- ``replay``: the trace ids ``mltraces schedule --trace SOURCE/NAME`` offers for
  this table: a literal name replays the whole table, ``{cluster}`` (or
  ``{vc}``) in a name makes one trace per value (``"{cluster}"`` →
  ``itp/cluster01`` …, ``"raw/{cluster}"`` → ``itp/raw/cluster01`` …).
- ``capacity``: the cluster a replay defaults to when ``--cluster`` is not given:
  ``{"gpus": N, "gpus_per_node": G}``, or from a table of the source,
  ``{"table": "helios.gpu_capacity", "gpus": "max(total)", "cluster": "cluster",
  "gpus_per_node": 8}`` (an aggregate, per cluster when ``cluster`` names the
  column that matches the jobs' cluster, summed over the replayed clusters).
  The replay runs on ``ceil(gpus / gpus_per_node)`` nodes of ``gpus_per_node``.
- ``warnings``: common rules the published trace is known to break, each with
  the reason; ``validate`` reports them as warnings instead of errors.
- ``utilization``: tables of the same source that hold this trace's resource use
  (GPU utilization, power, sensors), joined by machine or job; the documentation's
  "what it can answer" matrix reads it.
- ``copy_of``: the trace whose jobs these rows are, again (ElasticFlow's annotated
  ITP jobs are ``itp/raw``'s jobs): a copy is kept out of ``mltraces.jobs``, so a
  plain ``count(*)`` counts every job once, and served by name through
  ``mltraces.jobs_of('itp/elasticflow')`` (and its source, ``jobs_of('itp')``), whose
  ``copy_of`` column names the original.

>>> sorted(t.trace for t in job_tables().values())[:2]
['acme/kalos', 'acme/seren']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.errors import RegistryError
from mltraces.mapping import (
    Constants,
    Times,
    checked_columns,
    expression,
    parse_time,
    read_tables,
    scan,
    shipped,
    shown_expression,
)
from mltraces.mapping import referenced_columns as _referenced
from mltraces.names import canonical
from mltraces.schema import TableSchema, get_schema, quote_ident, sql_literal

if TYPE_CHECKING:
    import duckdb

MAPPING_FILE = "jobs.json"
JOBS_TABLE = "mltraces.jobs"
TIME_KINDS = ("clock", "unix", "relative")
#: the common states (the ``state`` enum of schemas/mltraces/jobs.json)
STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "RUNNING", "UNKNOWN")
#: mapping keys -> the common column each one feeds (times feed an instant and seconds)
COLUMN_KEYS = ("cluster", "job_id", "user", "vc", "submit", "start", "end", "duration",
               "num_gpu", "num_cpu", "num_nodes", "mem_gb", "gpu_type", "num_attempts",
               "state", "workload_type", "model", "batch_size", "iterations", "deadline",
               "best_effort")
REQUIRED_KEYS = ("job_id", "submit", "num_gpu")
PLACEHOLDERS = ("cluster", "vc")
_TABLE_KEYS = {"table", "trace", "description", "time", "columns", "states", "synthetic",
               "replay", "capacity", "warnings", "utilization", "copy_of"}
_CAPACITY_KEYS = {"gpus", "gpus_per_node", "table", "cluster", "note"}
_TRACE = re.compile(r"^[a-z][a-z0-9_]*/[A-Za-z0-9_.-]+$")
_REPLAY = re.compile(r"^(?:[A-Za-z0-9_.-]|\{(?:cluster|vc)\})+(?:/(?:[A-Za-z0-9_.-]|"
                     r"\{(?:cluster|vc)\})+)*$")


@dataclass(frozen=True)
class Capacity:
    """How many GPUs a replay of the trace gets by default (see the module docstring)."""

    gpus_per_node: int
    gpus: int | str  # a number, or an aggregate over ``table``
    table: str | None = None
    cluster: str | None = None  # column of ``table`` naming the jobs' cluster
    note: str = ""


@dataclass(frozen=True)
class JobTable:
    """One mapped job table: the declaration of ``jobs.json``, checked."""

    table: str
    trace: str
    kind: str
    columns: Mapping[str, str]
    zone: str | None = None
    origin: str | None = None
    states: Mapping[str, str] = field(default_factory=dict)
    synthetic: bool = False
    replay: tuple[str, ...] = ()
    capacity: Capacity | None = None
    warnings: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    path: Path | None = None
    utilization: tuple[str, ...] = ()
    copy_of: str | None = None

    @property
    def source(self) -> str:
        return self.table.split(".", 1)[0]

    @property
    def tables(self) -> tuple[str, ...]:
        """Every catalog table a replay of this trace reads (the jobs, their capacity)."""
        extra = (self.capacity.table,) if self.capacity and self.capacity.table else ()
        return (self.table, *extra)


# --------------------------------------------------------------------------- loading


def _capacity(raw: Any, where: str, source: str, problems: list[str]) -> Capacity | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - _CAPACITY_KEYS:
        problems.append(f"{where}: capacity must be an object with keys from "
                        f"{sorted(_CAPACITY_KEYS)}")
        return None
    per_node, gpus, table = raw.get("gpus_per_node"), raw.get("gpus"), raw.get("table")
    if not isinstance(per_node, int) or per_node < 1:
        problems.append(f"{where}: capacity.gpus_per_node must be a positive integer")
        return None
    if table is None and not (isinstance(gpus, int) and gpus >= 1):
        problems.append(f"{where}: capacity.gpus must be a positive integer, or an aggregate "
                        "(SQL) over capacity.table")
        return None
    if table is not None and not (isinstance(table, str) and table.startswith(source + ".")
                                  and isinstance(gpus, str)):
        problems.append(f"{where}: capacity.table must be a table of {source!r} and "
                        "capacity.gpus an aggregate over it, e.g. \"sum(num_gpus)\"")
        return None
    cluster = raw.get("cluster")
    if cluster is not None and not (isinstance(cluster, str) and table is not None):
        problems.append(f"{where}: capacity.cluster must name a column of capacity.table")
        return None
    return Capacity(per_node, gpus, table, cluster, str(raw.get("note", "")))


def _time(raw: Any, where: str, problems: list[str]) -> tuple[str, str | None, str | None]:
    return parse_time(raw, where, problems, TIME_KINDS)


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
        problems.append(f"{where}: columns lack {missing} (every job needs an id, a "
                        "submission time and a GPU count)")
    if "duration" in raw and "start" in raw and "end" in raw:
        problems.append(f"{where}: columns give start, end and duration: the run time is "
                        "recomputed from start and end, so drop duration")
    return dict(raw)


def _states(raw: Any, columns: Mapping[str, str], where: str, problems: list[str]
            ) -> dict[str, str]:
    if raw is None:
        if "state" in columns:
            problems.append(f"{where}: columns.state needs a states map (raw -> one of "
                            f"{', '.join(STATES)})")
        return {}
    if "state" not in columns:
        problems.append(f"{where}: states is given but columns.state is not")
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        problems.append(f"{where}: states must map each raw state (text) to a common state")
        return {}
    bad = {k: v for k, v in raw.items() if v not in STATES}
    if bad:
        problems.append(f"{where}: states {bad} map to unknown states; use {', '.join(STATES)}")
    return dict(raw)


def _replay(raw: Any, where: str, problems: list[str]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(n, str) and _REPLAY.match(n) for n in raw):
        problems.append(f"{where}: replay must list trace names (letters, digits, '_.-', '/'; "
                        "{cluster} or {vc} for one trace per value), e.g. [\"all\", \"{cluster}\"]")
        return ()
    return tuple(raw)


def parse_table(raw: Any, source: str, where: str) -> JobTable:
    """One entry of ``tables`` in ``jobs.json``; every problem is listed in one error."""
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
    kind, zone, origin = _time(raw.get("time"), where, problems)
    columns = _columns(raw.get("columns"), where, problems)
    states = _states(raw.get("states"), columns, where, problems)
    if not isinstance(raw.get("synthetic", False), bool):
        problems.append(f"{where}: synthetic must be true or false")
    warnings = raw.get("warnings", {})
    if not isinstance(warnings, dict) or not all(isinstance(v, str) and v for v in
                                                 warnings.values()):
        problems.append(f"{where}: warnings must map a common rule's name to the reason")
        warnings = {}
    unknown_rules = sorted(set(warnings) - set(rule_names()))
    if unknown_rules:
        problems.append(f"{where}: warnings name no common rule: {unknown_rules}; rules: "
                        f"{', '.join(rule_names())}")
    replay = _replay(raw.get("replay"), where, problems)
    capacity = _capacity(raw.get("capacity"), where, source, problems)
    utilization = raw.get("utilization", [])
    if not isinstance(utilization, list) or not all(
            isinstance(t, str) and t.startswith(source + ".") for t in utilization):
        problems.append(f"{where}: utilization must list tables of this source, "
                        f"['{source}.TABLE', ...]")
        utilization = []
    copy_of = raw.get("copy_of")
    if copy_of is not None and (not isinstance(copy_of, str) or not _TRACE.match(copy_of)
                                or copy_of == trace):
        problems.append(f"{where}: copy_of must name another trace, 'SOURCE/NAME'")
    if problems:
        raise RegistryError("invalid jobs mapping:\n  " + "\n  ".join(problems))
    return JobTable(table=table, trace=trace, kind=kind, columns=columns, zone=zone,
                    origin=origin, states=states, synthetic=raw.get("synthetic", False),
                    replay=replay, capacity=capacity, warnings=dict(warnings),
                    description=str(raw.get("description", "")),
                    utilization=tuple(utilization), copy_of=copy_of)


def load_mapping(folder: str | Path) -> tuple[JobTable, ...]:
    """The job tables a source folder declares in its ``jobs.json`` (none without one)."""
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
    return tuple(JobTable(**{**entry.__dict__, "path": path}) for entry in tables)


@cache
def job_tables() -> dict[str, JobTable]:
    """Every mapped job table of every source folder, by table name (scanned, cached)."""
    return scan(load_mapping)


def job_table(table: str) -> JobTable:
    """The mapping of ``table``; the error names the mapped tables."""
    tables = job_tables()
    if table not in tables:
        raise KeyError(f"{table} is not a mapped job table; mapped: {', '.join(sorted(tables))} "
                       f"(a source maps its job tables in its folder's {MAPPING_FILE})")
    return tables[table]


def common_schema() -> TableSchema:
    """The schema of ``mltraces.jobs`` (schemas/mltraces/jobs.json)."""
    return get_schema(JOBS_TABLE)


@cache
def rule_names() -> list[str]:
    """The common rules a mapping's ``warnings`` may name (``end_not_before_start``,
    ``num_gpu: minimum 0``, ``primary key (trace, cluster, job_id)``, ...)."""
    from mltraces.schema import compile_rules

    return [r.name.removeprefix("check ") for r in compile_rules(common_schema())]


# --------------------------------------------------------------------------- SQL


#: a column name of the table is that column (quoted); anything else is SQL as written
#: (checked first by :func:`mltraces.mapping.checked_columns`)
_expression = expression


def capacity_sql(entry: JobTable) -> tuple[str, str, str | None]:
    """``capacity.table``, ``capacity.gpus`` (an aggregate over it) and ``capacity.cluster`` (a
    column of it) as SQL, each checked against that table's columns first."""
    from mltraces.exprcheck import UnsafeExpression, check_expression

    capacity = entry.capacity
    assert capacity is not None and capacity.table is not None and isinstance(capacity.gpus, str)
    where = f"{entry.path or entry.source}: {entry.table}"
    try:
        schema = get_schema(capacity.table)
    except KeyError:
        raise RegistryError(f"{where}, capacity.table: {capacity.table} is not a table of "
                            f"{entry.source}") from None
    names = [*schema.field_names, *(d.name for d in schema.derived)]
    try:
        if not shipped(entry):
            check_expression(capacity.gpus, names, aggregate=True)
    except UnsafeExpression as error:
        raise RegistryError(f"{where}, capacity.gpus: the expression "
                            f"{shown_expression(capacity.gpus)} {error}") from None
    if capacity.cluster is not None and capacity.cluster not in names:
        raise RegistryError(f"{where}, capacity.cluster: "
                            f"{shown_expression(str(capacity.cluster))} is not a column of "
                            f"{capacity.table}")
    cluster = None if capacity.cluster is None else quote_ident(capacity.cluster)
    return schema.qualified, f"({capacity.gpus})", cluster


def referenced_columns(entry: JobTable, names: Iterable[str]) -> set[str]:
    """The columns of the table (``names``) that the mapping's expressions read."""
    return _referenced(entry.columns.values(), names)


#: the keys of a job's times (instants, and seconds from the origin)
TIME_KEYS = ("submit", "start", "end", "deadline")


def _Times(entry: JobTable, expr: Mapping[str, str], relation: str,
           fixed: Constants | None = None) -> Times:
    """SQL for one table's times (:class:`mltraces.mapping.Times`), second 0 its first
    submission unless an origin is declared."""
    return Times(entry, expr, relation, "submit", fixed)


def _state(entry: JobTable, expr: Mapping[str, str]) -> tuple[str, str]:
    """(state, state_raw) SQL: the raw text and its normalised value (NULL when unmapped)."""
    if "state" not in expr:
        return sql_literal("UNKNOWN"), "NULL"
    raw = f"CAST({expr['state']} AS VARCHAR)"
    cases = " ".join(f"WHEN {sql_literal(k)} THEN {sql_literal(v)}"
                     for k, v in entry.states.items())
    return f"CASE WHEN {raw} IS NULL THEN 'UNKNOWN' ELSE CASE {raw} {cases} END END", raw


def select_sql(entry: JobTable, relation: str, names: Iterable[str], *,
               extra: Iterable[str] = (), absolute: bool = False,
               constants: Constants | None = None) -> str:
    """``SELECT`` of the common columns (schema order) of one mapped table.

    ``relation`` is the table's typed view (or any relation with its columns),
    ``names`` its column names; ``extra`` columns of ``relation`` are passed
    through after the common ones (``_source``, ``_row`` for validation).
    ``absolute`` counts the seconds of clock and unix times from the Unix epoch
    instead of the trace's origin (no scan for the first submission: a replay
    counts from its own first job). ``constants`` are second 0 and the clock's offset
    already computed (:func:`prepare_constants`): a materialised part scans once.
    """
    schema = common_schema()
    types = {f.name: f.duckdb_type for f in schema.fields}
    names = list(names)
    checked_columns(entry, names)
    expr = {k: _expression(v, names) for k, v in entry.columns.items()}
    times = _Times(entry, expr, relation, constants)
    origin = "0" if absolute else constants.origin if constants else times.origin()
    state, state_raw = _state(entry, expr)

    def typed(name: str, sql: str) -> str:
        return f"CAST({sql} AS {types[name]}) AS {quote_ident(name)}"

    inner = [
        typed("trace", sql_literal(entry.trace)),
        typed("cluster", expr.get("cluster", "NULL")),
        *(typed(k, expr.get(k, "NULL")) for k in ("job_id", "user", "vc")),
        *(typed(f"{k}_time", times.instant(k)) for k in ("submit", "start", "end")),
        *(typed(f"{k}_s", times.seconds(k, origin)) for k in ("submit", "start", "end")),
        f"CAST({expr.get('duration', 'NULL')} AS DOUBLE) AS _duration",
        *(typed(k, expr.get(k, "NULL")) for k in ("num_gpu", "num_cpu", "num_nodes", "mem_gb",
                                                   "gpu_type", "num_attempts")),
        typed("state", state), typed("state_raw", state_raw),
        *(typed(k, expr.get(k, "NULL")) for k in ("workload_type", "model", "batch_size",
                                                   "iterations")),
        typed("deadline_s", times.seconds("deadline", origin)),
        typed("best_effort", f"coalesce(CAST({expr['best_effort']} AS BOOLEAN), false)"
              if "best_effort" in expr else "false"),
        typed("synthetic", "true" if entry.synthetic else "false"),
        typed("copy_of", sql_literal(entry.copy_of) if entry.copy_of else "NULL"),
        *(quote_ident(c) for c in extra),
    ]
    run = ("end_s - start_s" if "start" in entry.columns and "end" in entry.columns
           else "_duration")
    outer = []
    for f in schema.fields:
        if f.name == "queue_s":
            outer.append(typed("queue_s", "start_s - submit_s"))
        elif f.name == "run_s":
            outer.append(typed("run_s", run))
        elif f.name == "gpu_time_s":
            outer.append(typed("gpu_time_s", f"({run}) * num_gpu"))
        else:
            outer.append(quote_ident(f.name))
    outer += [quote_ident(c) for c in extra]
    return (f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)} FROM {relation})")


def prepare_constants(entry: JobTable, relation: str, names: Iterable[str],
                      scalar: Callable[[str], Any]) -> Constants:
    """Second 0 that :func:`select_sql` counts from and the clock's one UTC offset, computed
    once over ``relation`` (``scalar`` evaluates SQL to its value)."""
    names = list(names)
    expr = {k: _expression(v, names) for k, v in entry.columns.items()}
    return _Times(entry, expr, relation).prepare(scalar, TIME_KEYS)


def table_select_sql(entry: JobTable, *, extra: Iterable[str] = (), absolute: bool = False
                     ) -> str:
    """:func:`select_sql` over the table's catalog view (``acme.seren_jobs``)."""
    schema = get_schema(entry.table)
    names = [*schema.field_names, *(d.name for d in schema.derived)]
    return select_sql(entry, schema.qualified, names, extra=extra, absolute=absolute)


def empty_sql() -> str:
    """The common columns, typed, without rows (a jobs view with no table to read)."""
    parts = [f"CAST(NULL AS {f.duckdb_type}) AS {quote_ident(f.name)}"
             for f in common_schema().fields]
    return f"SELECT {', '.join(parts)} WHERE false"


def check_binds(entry: JobTable, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Bind the mapping against an empty copy of its table: unknown columns, bad SQL and
    clock times without a zone are named here, before any data is read."""
    import duckdb

    schema = get_schema(entry.table)
    own = con is None
    con = con or duckdb.connect()
    try:
        columns = [f"CAST(NULL AS {f.duckdb_type}) AS {quote_ident(f.name)}"
                   for f in schema.fields]
        # a derived column may read where its row came from, as the converted Parquet holds it
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
        if entry.kind == "clock":
            _check_clock_types(con, entry, relation, names)
    finally:
        if own:
            con.close()


def _check_clock_types(con: duckdb.DuckDBPyConnection, entry: JobTable, relation: str,
                       names: list[str]) -> None:
    """Clock times are instants; a time without its offset needs the zone it was written in."""
    for key in ("submit", "start", "end", "deadline"):
        if key not in entry.columns:
            continue
        expression = _expression(entry.columns[key], names)
        kind = con.execute(f"DESCRIBE SELECT {expression} AS t FROM {relation}").fetchall()[0][1]
        if kind == "TIMESTAMP" and entry.zone is None:
            raise RegistryError(f"{entry.path}: {entry.table}'s {key} time has no UTC offset; "
                                "declare the zone it was written in (time.zone, e.g. "
                                "\"America/Los_Angeles\")")
        if kind not in ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE"):
            raise RegistryError(f"{entry.path}: {entry.table}'s {key} is {kind}, not a time; "
                                "use time.kind unix or relative for numbers of seconds")


# --------------------------------------------------------------------------- replays


@dataclass(frozen=True)
class Replay:
    """A trace id ``mltraces schedule --trace`` accepts: a mapped table, maybe one slice."""

    trace_id: str
    entry: JobTable
    where: Mapping[str, str] = field(default_factory=dict)  # common column -> value


def _template(name: str) -> re.Pattern[str]:
    """``raw/{cluster}`` -> a pattern capturing the cluster (one path segment)."""
    parts = re.split(r"(\{(?:cluster|vc)\})", name)
    return re.compile("^" + "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else
                                    re.escape(p) for p in parts) + "$")


def canonical_names(entry: JobTable) -> tuple[str, ...]:
    """The entry's replay names in the one naming scheme every command shares: its trace as
    ``mltraces.jobs`` names it (``philly/jobs``), one cluster of it (``itp/elasticflow/
    cluster10``) or one VC (``philly/jobs/vc/6214e9``), templates unexpanded. The names its
    ``jobs.json`` declares (``itp/cluster10``, ``philly/all``) still resolve, as aliases."""
    names = [f"{entry.trace}/{{cluster}}" if "{cluster}" in declared else
             f"{entry.trace}/vc/{{vc}}" if "{vc}" in declared else entry.trace
             for declared in entry.replay]
    return tuple(dict.fromkeys(names))


def replay_names(*, aliases: bool = True) -> dict[str, JobTable]:
    """Every replay name (templates unexpanded) -> its table: the canonical ones
    (:func:`canonical_names`), then, with ``aliases``, the names ``jobs.json`` declares."""
    names = {name: e for e in job_tables().values() for name in canonical_names(e)}
    if aliases:
        for e in job_tables().values():
            for name in e.replay:
                names.setdefault(f"{e.source}/{name}", e)
    return names


def canonical_id(trace_id: str) -> str:
    """``trace_id`` in the one naming scheme (``itp/cluster10``: ``itp/elasticflow/cluster10``)."""
    replay = resolve_replay(trace_id)
    entry, where = replay.entry, replay.where
    if "cluster" in where:
        return f"{entry.trace}/{where['cluster']}"
    if "vc" in where:
        return f"{entry.trace}/vc/{where['vc']}"
    return entry.trace if entry.trace in canonical_names(entry) else replay.trace_id


def resolve_replay(trace_id: str) -> Replay:
    """The table (and slice) behind a trace id: canonical names first (:func:`canonical_names`),
    then the declared ones, literal names before ``{cluster}`` ones."""
    trace_id = canonical(trace_id)
    source, _, name = trace_id.partition("/")
    entries = [e for e in job_tables().values() if e.source == source]
    for entry in entries:
        for template in canonical_names(entry):
            found = _template(template).match(trace_id) if "{" in template else None
            if template == trace_id or found:
                return Replay(trace_id, entry, found.groupdict() if found else {})
    for entry in entries:
        if name in entry.replay:
            return Replay(trace_id, entry)
    for entry in entries:
        for template in entry.replay:
            found = _template(template).match(name) if "{" in template else None
            if found:
                return Replay(trace_id, entry, found.groupdict())
    known = ", ".join(sorted(replay_names(aliases=False)))
    raise KeyError(f"unknown trace {trace_id!r}; traces are SOURCE/NAME: {known} ({{cluster}}: "
                   "one per cluster; `mltraces schedule --list-traces` expands them)")


def expand_replays(con: duckdb.DuckDBPyConnection) -> list[tuple[str, JobTable]]:
    """Every replayable trace id, templates expanded from the data on ``con`` (a table that
    cannot be read there stays ``source/{cluster}``)."""
    import duckdb

    ids: list[tuple[str, JobTable]] = []
    for key, entry in replay_names(aliases=False).items():
        if "{" not in key:
            ids.append((key, entry))
            continue
        columns = re.findall(r"\{(cluster|vc)\}", key)
        listed = ", ".join(quote_ident(c) for c in columns)
        try:
            values = con.execute(f"SELECT DISTINCT {listed} FROM ({table_select_sql(entry)}) "
                                 f"WHERE {' AND '.join(f'{c} IS NOT NULL' for c in columns)} "
                                 "ORDER BY ALL").fetchall()
        except duckdb.Error:
            ids.append((key, entry))
            continue
        for row in values:
            name = key
            for column, value in zip(columns, row, strict=True):
                name = name.replace("{" + column + "}", str(value))
            ids.append((name, entry))
    return ids
