"""Mappings as data: how a source's tables map onto one of the common views.

Two views unite tables of many sources in one schema: ``mltraces.jobs`` (job tables,
mapped in each source folder's ``jobs.json``, :mod:`mltraces.jobmap`) and
``mltraces.requests`` (LLM-serving request logs, ``requests.json``,
:mod:`mltraces.requestmap`). Both mappings are JSON files of the same shape::

    {"$comment": "...", "tables": [{"table": "SOURCE.TABLE", "trace": "SOURCE/NAME",
                                    "time": {"kind": ..., "zone": ..., "origin": ...},
                                    "columns": {common column: SQL over the table}, ...}]}

and share what this module holds: reading the file, the time kinds and the SQL of
times (an instant and seconds from the trace's origin), how a column expression is
written (a column name is that column, anything else SQL), which columns an
expression reads, and the scan of every source folder with unique trace names.

Time kinds:

- ``clock``: instants (``TIMESTAMPTZ``), or a ``TIMESTAMP`` read in ``time.zone``;
- ``unix``: numbers of Unix seconds;
- ``relative``: numbers of seconds from the trace's own start (no clock: the instants
  are NULL unless ``time.origin`` names second 0);
- ``shifted`` (requests only, so far): a clock moved by an undisclosed offset to hide
  the dates (GenTD26): seconds count from the first event, and no instant is given,
  since the dates written are not the real ones.

>>> expression("user", ["user", "vc"])
'"user"'
>>> expression("gpu_num * 2", ["gpu_num"])
'(gpu_num * 2)'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from mltraces.errors import RegistryError
from mltraces.schema import quote_ident, sql_literal

__all__ = ["TIME_KINDS", "Constants", "Times", "expression", "parse_time", "read_tables",
           "referenced_columns", "scan"]

TIME_KINDS = ("clock", "unix", "relative", "shifted")
_TIME_KEYS = {"kind", "zone", "origin"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Timed(Protocol):
    """What the SQL of times needs of a mapped table."""

    kind: str
    zone: str | None
    origin: str | None


def read_tables(path: Path) -> list[Any] | None:
    """The ``tables`` list of a mapping file (None when there is no such file)."""
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise RegistryError(f"cannot read {path}: {error}") from error
    if not isinstance(raw, dict) or set(raw) - {"$comment", "tables"} or not isinstance(
            raw.get("tables"), list):
        raise RegistryError(f"{path}: expected {{\"tables\": [...]}} (see mltraces.mapping)")
    return raw["tables"]


def parse_time(raw: Any, where: str, problems: list[str], kinds: tuple[str, ...] = TIME_KINDS
               ) -> tuple[str, str | None, str | None]:
    """(kind, zone, origin) of a mapping's ``time``; every problem appended to ``problems``."""
    if not isinstance(raw, dict) or set(raw) - _TIME_KEYS or raw.get("kind") not in kinds:
        problems.append(f"{where}: time must be {{\"kind\": one of {', '.join(kinds)}, "
                        "optional \"zone\" and \"origin\"}")
        return "relative", None, None
    zone, origin = raw.get("zone"), raw.get("origin")
    if zone is not None and raw["kind"] != "clock":
        problems.append(f"{where}: time.zone applies to clock times only (unix and relative "
                        "seconds carry no zone)")
    if origin is not None and raw["kind"] == "shifted":
        problems.append(f"{where}: time.origin names a real instant, which a shifted clock "
                        "does not have (its seconds count from the first event)")
    if origin is not None and not re.search(r"([+-]\d\d:?\d\d|Z)$", str(origin)):
        problems.append(f"{where}: time.origin {origin!r} must be an instant with its UTC offset "
                        "(2017-10-01 00:00:00-07:00)")
    return raw["kind"], zone, origin


def expression(value: str, names: Iterable[str]) -> str:
    """A column name of the table is that column (quoted); anything else is SQL as written."""
    return quote_ident(value) if value in set(names) else f"({value})"


def referenced_columns(values: Iterable[str], names: Iterable[str]) -> set[str]:
    """The columns of the table (``names``) that the mapping's expressions read."""
    names = set(names)
    used: set[str] = set()
    for value in values:
        if value in names:
            used.add(value)
        else:
            used.update(w for w in _WORD.findall(re.sub(r"'(?:[^']|'')*'", "", value))
                        if w in names)
    return used


#: Unix seconds of 0001-01-01 and 9999-12-31 23:59:59 UTC: the instants a view holds
_EARLIEST, _LATEST = -62_135_596_800, 253_402_300_799


#: the widest span of clock times (local, in days) whose zone offset is probed for being one:
#: 20 years at 15-minute samples, 0.7 M conversions (a tenth of a second)
_PROBED_DAYS = 7305
#: the probe's spacing: every zone's offsets last far longer between two changes
_PROBE_STEP = "INTERVAL 15 MINUTE"


class Constants(NamedTuple):
    """What a materialised part computes once before it maps every row.

    ``origin`` is second 0 as a constant (SQL). ``offset_us`` is the UTC offset of the
    zone a clock was written in, in microseconds, when one offset holds for every time
    of ``offset_keys`` the table holds: its instants are then the local times shifted by
    it, exactly what the zone's rules give, at a tenth of their cost (ICU's rules cost
    0.13 µs a value: 1.3 s of CPU for the three times of Helios's 3.4 M jobs).
    """

    origin: str
    offset_us: int | None = None
    offset_keys: tuple[str, ...] = ()


class Times:
    """SQL for one table's times: instants and seconds from its origin, by time kind.

    ``first`` is the key whose earliest value is second 0 when the trace's times are a
    clock (or shifted, or unix) and no origin is declared (``submit`` for jobs,
    ``arrival`` for requests). ``fixed``: what :meth:`prepare` found, for a part.
    """

    def __init__(self, entry: Timed, expr: Mapping[str, str], relation: str,
                 first: str, fixed: Constants | None = None) -> None:
        self.entry, self.expr, self.relation, self.first = entry, expr, relation, first
        self.fixed = fixed

    def _local(self, key: str) -> str:
        return f"CAST({self.expr[key]} AS TIMESTAMP)"

    def instant(self, key: str) -> str:
        value = self.expr.get(key)
        if value is None:
            return "NULL"
        kind, entry, fixed = self.entry.kind, self.entry, self.fixed
        if kind == "clock" and entry.zone and fixed and fixed.offset_us is not None \
                and key in fixed.offset_keys:
            return f"make_timestamptz(epoch_us({self._local(key)}) - {fixed.offset_us})"
        if kind == "clock":
            return (f"timezone({sql_literal(entry.zone)}, {self._local(key)})"
                    if entry.zone else f"CAST({value} AS TIMESTAMPTZ)")
        seconds = f"CAST({value} AS DOUBLE)"
        # a number no instant has (1e17 s) is NULL here, not an error that fails every query
        # over the view; a source's reader refuses such values, naming the row
        if kind == "unix":
            return (f"CASE WHEN {seconds} BETWEEN {_EARLIEST} AND {_LATEST} "
                    f"THEN to_timestamp({seconds}) END")
        if kind == "shifted" or entry.origin is None:
            return "NULL"
        return (f"CASE WHEN abs({seconds}) <= {_LATEST - _EARLIEST} THEN "
                f"(TIMESTAMPTZ {sql_literal(entry.origin)} + to_microseconds(CAST("
                f"round({seconds} * 1e6) AS BIGINT))) END")

    def _number(self, key: str) -> str:
        """The time as a number of seconds on the trace's own scale (before the origin)."""
        value = self.expr[key]
        if self.entry.kind == "clock":
            return f"epoch({self.instant(key)})"
        if self.entry.kind == "shifted":  # the written wall clock: only differences are true
            return f"epoch(CAST({value} AS TIMESTAMP))"
        return f"CAST({value} AS DOUBLE)"

    def origin(self) -> str:
        """Second 0 on the scale of :meth:`_number`."""
        entry = self.entry
        if entry.origin is not None and entry.kind != "relative":
            return f"epoch(TIMESTAMPTZ {sql_literal(entry.origin)})"
        if entry.kind == "relative":
            return "0"
        return f"(SELECT min({self._number(self.first)}) FROM {self.relation})"

    def seconds(self, key: str, origin: str) -> str:
        if key not in self.expr:
            return "NULL"
        return self._number(key) if origin == "0" else f"({self._number(key)} - {origin})"

    def offset_sql(self, keys: tuple[str, ...]) -> str | None:
        """SQL of the one UTC offset (µs) of every local time of ``keys`` the table holds,
        NULL when they span more than one (or too long a time to tell); None when there
        is nothing to probe (no clock written without its offset).

        The offset is probed at the earliest and latest local time and every 15 minutes
        between: a zone changes its offset for months, so one change in the span shows.
        """
        if self.entry.kind != "clock" or not self.entry.zone or not keys:
            return None
        zone = sql_literal(self.entry.zone)
        lows = ", ".join(f"min({self._local(k)})" for k in keys)
        highs = ", ".join(f"max({self._local(k)})" for k in keys)
        return (f"(WITH bounds AS (SELECT least({lows}) AS lo, greatest({highs}) AS hi FROM "
                f"{self.relation}), span AS (SELECT lo, hi, CASE WHEN isfinite(lo) AND "
                f"isfinite(hi) THEN hi - lo <= INTERVAL {_PROBED_DAYS} DAY END AS probed FROM "
                f"bounds), samples AS (SELECT unnest([lo, hi]) AS t FROM span WHERE probed "
                f"UNION ALL SELECT unnest(range(lo, hi, {_PROBE_STEP})) FROM span WHERE probed) "
                f"SELECT CASE WHEN count(DISTINCT offset_us) = 1 THEN any_value(offset_us) END "
                f"FROM (SELECT epoch_us(t) - epoch_us(timezone({zone}, t)) AS offset_us "
                f"FROM samples))")

    def prepare(self, scalar: Callable[[str], Any], keys: Iterable[str]) -> Constants:
        """Second 0 and the clock's one offset, each computed once (``scalar`` evaluates
        SQL to its value): a part's rows are then mapped with constants."""
        keys = tuple(k for k in keys if k in self.expr)
        probe = self.offset_sql(keys)
        offset = None if probe is None else scalar(probe)
        fixed = Constants("0", None if offset is None else int(offset), keys)
        second = scalar(Times(self.entry, self.expr, self.relation, self.first, fixed).origin())
        # the double as text (a repr round-trips; a bare decimal literal would be a
        # DECIMAL, rounded on its way to a double)
        origin = "CAST(NULL AS DOUBLE)" if second is None else (
            f"CAST({sql_literal(repr(float(second)))} AS DOUBLE)")
        return fixed._replace(origin=origin)


class Mapped(Protocol):
    """What the scan needs of a mapped table."""

    table: str
    trace: str
    path: Path | None


def scan(load: Callable[[Path], tuple[Any, ...]]) -> dict[str, Any]:
    """Every mapped table of every source folder, by table name; ``load(folder)`` reads one
    folder's mapping. A trace name used twice is an error naming both tables."""
    from mltraces.registry import source_folders

    found: dict[str, Any] = {}
    traces: dict[str, str] = {}
    for folder in source_folders():
        for entry in load(folder):
            if entry.trace in traces:
                raise RegistryError(f"{entry.path}: trace {entry.trace} is also the name of "
                                    f"{traces[entry.trace]}; trace names must be unique")
            traces[entry.trace] = entry.table
            found[entry.table] = entry
    return found


# --------------------------------------------------------------------------- safety


def shipped(entry: Mapped) -> bool:
    """True for a mapping of the package's own sources (``mltraces/sources``): code of the
    installed package, held to :func:`checked_columns`'s rule by the test suite, so a query
    does not pay DuckDB's parser for it (about 1.5 ms an expression)."""
    from mltraces.registry import SOURCES_DIR

    return entry.path is not None and entry.path.parent.parent == SOURCES_DIR


def checked_columns(entry: Any, names: Iterable[str], *, always: bool = False) -> None:
    """Every ``columns`` expression of ``entry`` is a scalar expression over ``names`` (its
    table's columns), checked by DuckDB's parser before any of it is used
    (:mod:`mltraces.exprcheck`); the error names the file, the table and the key. A shipped
    mapping is checked by the tests (or with ``always``), a user's before each use."""
    from mltraces.exprcheck import UnsafeExpression, check_expression, check_expressions

    if shipped(entry) and not always:
        return
    names = list(names)
    written = {key: value for key, value in entry.columns.items() if value not in names}
    try:
        check_expressions(written.values(), names)  # one parse for the table's mapping
        return
    except UnsafeExpression:
        pass
    for key, value in written.items():  # which one, named
        try:
            check_expression(value, names)
        except UnsafeExpression as error:
            raise RegistryError(f"{entry.path or entry.source}: {entry.table}, columns.{key}: "
                                f"the expression {shown_expression(value)} {error}") from None


def shown_expression(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:57] + "...")
