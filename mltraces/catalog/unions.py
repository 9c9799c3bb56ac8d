"""Views that unite the mapped tables of every source (``mltraces.requests``), generically.

A *union view* is one common schema over tables of many sources, each mapped by its
source's own file (:mod:`mltraces.mapping`). :class:`UnionView` names what differs
between two such views (the mapping, the SQL of one mapped table, the filter macro)
and this module does the rest, as ``mltraces.jobs`` does for job tables
(:mod:`.jobs`):

- the view holds the mapped tables that can be read now; ``connect()`` sets them up
  first (``needs``), from the cache unless they were named;
- a trace that is not fetched is never silently absent: the status row is
  ``partial`` and its reason names each missing trace with the ``mltraces fetch``
  command; with nothing to read the view raises that reason;
- ``FROM mltraces.<macro>('SOURCE/NAME')`` (a trace, or a whole source) is the view
  filtered to it, raising the fetch command for a trace that is not fetched and
  listing the known names for one that does not exist;
- a mapped table that is a ``copy_of`` another trace (ElasticFlow's annotated ITP jobs
  are ``itp/raw``'s jobs again) is left out of the view, so a plain ``count(*)``
  counts each row once, and served by name through the macro;
- with ``select_over`` (and ``constants``) named, each mapped table's rows, mapped, are
  written once as typed Parquet (its *part*, :mod:`.parts`) as soon as the table is
  converted, and the view reads those files instead of re-deriving every row through
  every mapping on every query; a changed file or mapping rebuilds that table's part
  only, and a table whose part cannot be written is read through its mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mltraces.catalog.protocol import ViewReader
from mltraces.catalog.status import (
    PARTIAL,
    READY,
    UNAVAILABLE,
    UNVERIFIED,
    TableStatus,
    read_status,
)
from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import duckdb

    from mltraces.catalog.parts import Part
    from mltraces.catalog.store import Built
    from mltraces.mapping import Constants
    from mltraces.schema import TableSchema

__all__ = ["Coverage", "UnionView", "coverage", "missing_notice", "prepare_union_part",
           "reader", "union_part", "union_part_files"]


class UnionView(NamedTuple):
    """What a union view is made of."""

    table: str  # mltraces.requests
    macro: str  # requests_of: the view filtered to one trace or source, strictly
    entries: Callable[[], Mapping[str, Any]]  # mapped tables by name (each: .trace, .source)
    select: Callable[[Any], str]  # SELECT of the common columns of one mapped table
    empty: Callable[[], str]  # the common columns without rows
    what: str  # "request": what the mapped tables hold, for messages
    #: SELECT of one mapped table's common columns over ``relation`` (its typed rows, with
    #: columns ``names``), second 0 and the clock's offset given as ``constants`` (None:
    #: scan for second 0 in the SQL): what a materialised part holds (:mod:`.parts`); a
    #: view without it reads every table through its mapping on every query
    select_over: Callable[[Any, str, list[str], Constants | None], str] | None = None
    #: one mapped table's constants over ``relation``, computed once by the evaluator of SQL
    #: it is handed (:meth:`mltraces.mapping.Times.prepare`)
    constants: Callable[[Any, str, list[str], Callable[[str], Any]], Constants] | None = None


class Coverage(NamedTuple):
    """Which mapped traces the view holds now, and which it lacks (with why)."""

    present: list[Any]
    missing: list[tuple[Any, str]]  # (mapped table, reason)
    unverified: bool

    @property
    def lacking(self) -> list[tuple[Any, str]]:
        """The missing traces the view itself would hold (copies of another are not in it)."""
        return [(t, reason) for t, reason in self.missing if copy_of(t) is None]

    @property
    def united(self) -> list[Any]:
        """The present traces the view unites (copies are served by name only)."""
        return [t for t in self.present if copy_of(t) is None]


def copy_of(entry: Any) -> str | None:
    """The trace ``entry`` copies (its mapping's ``copy_of``), or None."""
    return getattr(entry, "copy_of", None)


def missing_notice(view: UnionView, missing: list[tuple[Any, str]]) -> str:
    """``mltraces.requests lacks 2 traces: a/b, a/c not fetched (run `mltraces fetch a`)``;
    traces the last fetch could not obtain are said to be unavailable here, with what works
    instead (local copies, a mirror), since fetching again is no advice."""
    here = [t for t, reason in missing if "unavailable here" in reason]
    not_fetched = [t for t, reason in missing if "not fetched" in reason and t not in here]
    broken = [(t, reason) for t, reason in missing if "not fetched" not in reason]
    parts = []
    if not_fetched:
        sources = " ".join(dict.fromkeys(t.source for t in not_fetched))
        parts.append(f"{', '.join(t.trace for t in not_fetched)} not fetched (run `mltraces "
                     f"fetch {sources}`)")
    if here:
        parts.append(f"{', '.join(t.trace for t in here)} unavailable here (give local copies: "
                     "--local TABLE=PATH or MLTRACES_LOCAL, or a mirror that holds them)")
    parts += [f"{t.trace} unavailable: {reason.splitlines()[0]}" for t, reason in broken]
    count = len(missing)
    return f"{view.table} lacks {count} trace{'s' * (count > 1)}: " + "; ".join(parts)


def coverage(view: UnionView, statuses: dict[str, TableStatus]) -> Coverage:
    """What the view can hold, from the member tables' status rows."""
    present: list[Any] = []
    missing: list[tuple[Any, str]] = []
    unverified = False
    for name, entry in sorted(view.entries().items(), key=lambda item: item[1].trace):
        status = statuses.get(name)
        if status is None or not status.usable:
            missing.append((entry, status.reason or "unavailable" if status else "not set up"))
            continue
        present.append(entry)
        unverified = unverified or status.state == UNVERIFIED
    return Coverage(present, missing, unverified)


def view_sql(view: UnionView, schema: TableSchema, present: list[Any],
             files: Mapping[str, Path | None] | None = None) -> str:
    """``CREATE VIEW`` uniting the present tables (their rows, in trace order), copies of
    another trace left out (:func:`filter_macro_sql` serves them by name).

    ``files``: each table's materialised part, read instead of its mapping (one scan of
    every file when all have one); a table without one is read through its mapping.
    """
    from mltraces.exprcheck import parse_ahead
    from mltraces.mapping import shipped

    files = files or {}
    united = [t for t in present if copy_of(t) is None]
    mapped = [t for t in united if files.get(t.table) is None]
    # one parse for every user mapping (each table then checks its own in its select)
    parse_ahead(v for t in mapped if not shipped(t) for v in t.columns.values())
    if united and len(mapped) < len(united):
        from mltraces.catalog.parts import parts_view_sql

        return parts_view_sql(schema, [files.get(t.table) or view.select(t) for t in united])
    body = " UNION ALL ".join(f"({view.select(t)})" for t in united) or view.empty()
    return f"CREATE OR REPLACE VIEW {schema.qualified} AS {body}"


def _hyphenated(name: str) -> str:
    """``alibaba-genai/x`` for ``alibaba_genai/x``: the spelling :mod:`mltraces.names` reads
    back as the source (SQL has no hook to call it, so the macro lists both)."""
    source, sep, rest = name.partition("/")
    return source.replace("_", "-") + sep + rest


def filter_macro_sql(view: UnionView, schema: TableSchema, found: Coverage) -> str:
    """``CREATE MACRO mltraces.<macro>(name)``: the view's rows of one trace or source.

    The name picks the query text (DuckDB's ``query()``), so the check runs before any
    plan exists: a filter DuckDB proves empty cannot skip it.
    """
    from mltraces.schema import sql_literal

    lacking: dict[str, list[tuple[Any, str]]] = {}
    for table, reason in found.missing:
        for name in (table.trace, table.source):
            lacking.setdefault(name, []).append((table, reason))
    queries: dict[str, list[str]] = {}
    for t in found.present:  # a copy is read from its own table: the view leaves it out
        one = (f"SELECT * FROM {schema.qualified} WHERE trace = {sql_literal(t.trace)}"
               if copy_of(t) is None else f"SELECT * FROM ({view.select(t)})")
        queries[t.trace] = [one]
        queries.setdefault(t.source, []).append(one)
    answers = {name: f"error({sql_literal(missing_notice(view, m))})"
               for name, m in lacking.items()}
    answers.update({name: sql_literal(" UNION ALL ".join(f"({q})" for q in parts))
                    for name, parts in queries.items() if name not in lacking})
    macro = f"{schema.schema_name}.{view.macro}"
    text = "CAST(name AS VARCHAR)"
    known = ", ".join(sorted(answers)) or "none"
    unknown = (f"error('{macro}: no trace or source ' || {text} || "
               f"{sql_literal('; known traces and sources: ' + known)})")
    cases = " ".join(f"WHEN {sql_literal(spelling)} THEN {answer}"
                     for name, answer in sorted(answers.items())
                     for spelling in dict.fromkeys([name, _hyphenated(name)]))
    choice = f"CASE {text} {cases} ELSE {unknown} END" if cases else unknown
    return f"CREATE OR REPLACE MACRO {macro}(name) AS TABLE FROM query({choice})"


def _status(view: UnionView, schema: TableSchema, found: Coverage) -> TableStatus:
    traces = ", ".join(t.trace for t in found.united)
    copies = ", ".join(f"{t.trace} (of {copy_of(t)})" for t in found.present if copy_of(t))
    origin = f"mapped {view.what} tables: {traces or 'none'}" + (
        f"; copies, by name through {schema.schema_name}.{view.macro}(): {copies}"
        if copies else "")
    if found.lacking:
        return TableStatus(schema.name, PARTIAL, origin, None,
                           missing_notice(view, found.lacking))
    if found.unverified:
        return TableStatus(schema.name, UNVERIFIED, origin, None,
                           "some of its tables are built from local files (see their rows)")
    return TableStatus(schema.name, READY, origin)


def _attach(view: UnionView) -> Callable[[Any, TableSchema, Path | None], TableStatus]:
    over = _attach_over(view)

    def attach(con: duckdb.DuckDBPyConnection, schema: TableSchema, local: Path | None
               ) -> TableStatus:
        return over(con, schema, local, {})

    return attach


def _attach_over(view: UnionView) -> Callable[[Any, TableSchema, Path | None,
                                               Mapping[str, Any]], TableStatus]:
    """The view's attach, given the conversions its tables' views read (``members``, by
    table): each table with one is read from its materialised part (:mod:`.parts`)."""
    def attach(con: duckdb.DuckDBPyConnection, schema: TableSchema, local: Path | None,
               members: Mapping[str, Any]) -> TableStatus:
        from mltraces.catalog.views import unavailable_sql

        if local is not None:
            raise MltracesError(f"{schema.name} unites other tables and reads no file of its "
                                f"own: give local files for the {view.what} tables it unites "
                                "instead")
        found = coverage(view, read_status(con) or {})
        macro = filter_macro_sql(view, schema, found)
        if not found.united:
            reason = (missing_notice(view, found.lacking) if found.lacking
                      else f"no source maps a {view.what} table")
            con.execute(unavailable_sql(schema, reason) + ";" + macro)
            return TableStatus(schema.name, UNAVAILABLE, "upstream", None, reason)
        files = {}
        if view.select_over is not None and any(t.table in members for t in found.united):
            files = union_part_files(view, schema, found.united, members)
        con.execute(view_sql(view, schema, found.present, files) + ";" + macro)
        return _status(view, schema, found)

    return attach


def _cached_status(view: UnionView) -> Callable[[TableSchema], TableStatus]:
    def status(schema: TableSchema) -> TableStatus:
        """The same answer without a connection: which member tables' files are cached."""
        from mltraces.catalog.readers import FileReader, reader_for
        from mltraces.download import cached_path
        from mltraces.registry import get_file
        from mltraces.schema import get_schema

        statuses: dict[str, TableStatus] = {}
        for name in view.entries():
            member = get_schema(name)
            member_reader = reader_for(member)
            if isinstance(member_reader, FileReader):
                missing = [f for f in member.file_ids if cached_path(get_file(f)) is None]
                statuses[name] = (TableStatus(name, READY, "upstream") if not missing else
                                  TableStatus(name, UNAVAILABLE, "upstream", None,
                                              f"{name}: not fetched"))
            else:
                statuses[name] = member_reader.status(member)
        found = coverage(view, statuses)
        if not found.united:
            return TableStatus(schema.name, UNAVAILABLE, "upstream", None,
                               missing_notice(view, found.lacking) if found.lacking else None)
        return _status(view, schema, found)

    return status


# --------------------------------------------------------------------------- parts


def union_part(view: UnionView, schema: TableSchema, entry: Any, member: Built) -> Part:
    """The part of the mapped table ``entry`` of a union view, read from its conversion
    ``member``; built with its second 0 found once (the view's own SQL scans for it in
    every seconds column), as a constant read back exactly, and a clock's zone read as the
    one offset it has over the table's times when it has one."""
    from mltraces.catalog.parts import Part, member_names, member_relation

    assert view.select_over is not None and view.constants is not None
    relation, names = member_relation(member), member_names(member)

    def prepare(con: duckdb.DuckDBPyConnection) -> str:
        def scalar(sql: str) -> Any:
            [(value,)] = con.execute(f"SELECT {sql}").fetchall()
            return value

        constants = view.constants(entry, relation, names, scalar)
        return view.select_over(entry, relation, names, constants)

    return Part(schema, member, view.select_over(entry, relation, names, None), prepare,
                {"trace": entry.trace})


def union_part_files(view: UnionView, schema: TableSchema, united: Sequence[Any],
                     members: Mapping[str, Built]) -> dict[str, Path | None]:
    """Each united table's materialised part, leased; None for a table with no conversion
    here or whose part cannot be written (a read-only cache, or a mapping that fails on
    the data, which a query of the view then reports as before)."""
    from mltraces.catalog.parts import leased_parts

    tables = [t for t in united if t.table in members]
    built = leased_parts([union_part(view, schema, t, members[t.table]) for t in tables])
    return {t.table: b.parquet if b else None for t, b in zip(tables, built, strict=True)}


def prepare_union_part(view: UnionView, schema: TableSchema, member: Built) -> None:
    """Write ``member``'s part as soon as its conversion exists (``connect()`` runs this
    beside the other conversions); a part that cannot be written is left to the view's
    attach, which reads that table through its mapping (and says why in the log)."""
    import duckdb

    from mltraces.catalog.parts import materialize_part

    entry = view.entries().get(member.schema.name)
    if entry is None or copy_of(entry) is not None:  # a copy is not in the view
        return
    try:
        materialize_part(union_part(view, schema, entry, member))
    except (MltracesError, duckdb.OutOfMemoryException):
        return


def reader(view: UnionView) -> ViewReader:
    """The catalog's reader of ``view`` (a built-in reader named after its table)."""
    prepare = None
    if view.select_over is not None:
        def prepare(schema: TableSchema, member: Any) -> None:
            prepare_union_part(view, schema, member)

    return ViewReader(view.table.split(".", 1)[1], _attach(view), _cached_status(view),
                      needs=lambda schema: sorted(view.entries()),
                      attach_over=_attach_over(view), prepare=prepare)
