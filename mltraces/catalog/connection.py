"""``connect()``: one DuckDB connection, a schema per source, a typed view per table.

Tables named in ``tables=`` (or given a local file) are built on demand: their
files are fetched when missing. With ``tables=None`` every table is set up
from what is already cached, without touching the network: a table whose
files are not fetched gets a view that says so and which command fetches it,
and a status row ``unavailable``. Either way a table that cannot be built
does not break the others, and ``mltraces.status`` says what is ready and why not.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mltraces.catalog import store, warm
from mltraces.catalog.selection import resolve_local, select_schemas
from mltraces.catalog.status import (
    PARTIAL,
    READY,
    UNAVAILABLE,
    UNVERIFIED,
    TableStatus,
    read_status,
    status_sql,
)
from mltraces.catalog.views import (
    comment_columns,
    parquet_view_sql,
    unavailable_sql,
    view_comments_sql,
)
from mltraces.errors import MltracesError
from mltraces.schema import TableSchema, quote_ident

if TYPE_CHECKING:
    import duckdb

    from mltraces.catalog.store import Built

__all__ = ["attach_table", "connect"]


#: per connection, the conversion each table's view reads: what views over tables derive from
_read_by: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, Built]] = (
    weakref.WeakKeyDictionary())


class _Setup:
    """One table on its way to a view: what was built, or why it could not be."""

    __slots__ = ("built", "error", "fetch", "local", "schema")

    def __init__(self, schema: TableSchema, local: Path | None, fetch: bool) -> None:
        self.schema = schema
        self.local = local
        self.fetch = fetch
        self.built: Built | None = None
        self.error: MltracesError | None = None


def connect(
    tables: str | Iterable[str] | None = None,
    local: Mapping[str, str | os.PathLike[str]] | None = None,
    *,
    strict: bool = False,
    database: str = ":memory:",
    comments: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one schema per source and one typed view per table.

    Parameters
    ----------
    tables
        Table names (``"itp.jobs"``) or source names (``"zeus"``) to set up, their
        files fetched when missing; None means every table, from the cache only
        (tables not fetched yet are views that say how to fetch them).
    local
        ``{table: path}`` of user-supplied files in the upstream format (a file,
        a ``.tar.gz`` for archive tables, or a folder holding the upstream file
        names), taken literally; merged over ``MLTRACES_LOCAL``. Validated
        against the schema, but not hash-pinned: such tables are ``unverified``.
    strict
        Raise on the first table that cannot be built instead of leaving a view
        that raises the reason when queried (tables merely not fetched, with
        ``tables=None``, are not errors).
    database
        DuckDB database to open (default in memory).
    comments
        Also attach every column's description and unit as a DuckDB comment
        (``duckdb_columns().comment``; costs ~1 ms per column).

    ``SELECT * FROM mltraces.status`` lists each table's state (ready,
    unverified, unavailable), origin, rows and the reason it is not ready.

    Examples
    --------
    >>> con = connect(tables=["itp.jobs"])                           # doctest: +SKIP
    >>> con.sql("SELECT count(*), sum(gpu_hours) FROM itp.jobs")     # doctest: +SKIP
    """
    import duckdb

    named = select_schemas(tables)
    overrides = resolve_local(local)
    explicit = {s.name for s in named} if tables is not None else set()
    schemas = _with_needs(named)
    setups = [_Setup(s, overrides.get(s.name), s.name in explicit or s.name in overrides)
              for s in schemas]
    con = duckdb.connect(database)
    try:
        sources = dict.fromkeys(s.schema_name for s in schemas)
        con.execute("SET TimeZone = 'UTC';" + "".join(
            f"CREATE SCHEMA IF NOT EXISTS {quote_ident(n)};" for n in sources))
        statuses = _attach_all(con, setups, strict)
        con.execute(status_sql([*statuses, *(broken_rows() if tables is None else [])]) + ";"
                    + view_comments_sql(zip(schemas, statuses, strict=True)))
        if comments:
            comment_columns(con, schemas)
    except BaseException:
        con.close()
        raise
    _warn_partial(statuses)
    return con


def broken_rows() -> list[TableStatus]:
    """One ``mltraces.status`` row per broken user source folder (``half.*``, unavailable,
    why): the catalog of every table says what it could not load, and goes on."""
    from mltraces.registry import broken_sources, user_source_candidates_by_name

    folders = user_source_candidates_by_name()
    return [TableStatus(f"{name}.*", UNAVAILABLE, f"local: {folders.get(name, name)}", None,
                        problem) for name, problem in sorted(broken_sources().items())]


def _warn_partial(statuses: list[TableStatus]) -> None:
    """Warn when a view (``mltraces.jobs``, ``mltraces.requests``) lacks some of the tables
    it unites.

    A Python query filtered to a missing trace would otherwise return nothing and
    say nothing: the warning names each missing trace with the ``mltraces fetch``
    command, and points at ``mltraces.jobs_of(...)``, which raises instead.
    """
    for status in statuses:
        if status.state == PARTIAL:  # (imported only then: a warm query loads no readers)
            import warnings

            from mltraces.catalog.jobs import FILTER_MACRO
            from mltraces.errors import PartialViewWarning

            if status.table != "mltraces.jobs":  # another union view: its own filter macro
                from mltraces.catalog.requests import FILTER_MACRO
            macro = f"{status.table.split('.')[0]}.{FILTER_MACRO}('TRACE')"
            warnings.warn(f"{status.table} is partial: {status.reason}; "
                          f"FROM {macro} raises for a trace it lacks", PartialViewWarning,
                          stacklevel=3)


def _needs(schema: TableSchema) -> list[str]:
    """The catalog tables a built-in view reads (``mltraces.jobs``: the mapped job tables).

    Only built-in readers are asked, so a warm connect imports no source's readers (nor,
    for CSV tables, the readers module).
    """
    from mltraces.schema import BUILTIN_FILE_READERS

    if schema.reader in BUILTIN_FILE_READERS:
        return []
    from mltraces.catalog.readers import BUILTIN, ViewReader

    reader = BUILTIN.get(schema.reader)
    return reader.needs(schema) if isinstance(reader, ViewReader) and reader.needs else []


def _with_needs(schemas: list[TableSchema]) -> list[TableSchema]:
    """``schemas`` plus the tables their views read, those views last (they read the others)."""
    from mltraces.schema import get_schema

    needed = {s.name: _needs(s) for s in schemas}
    plain = {s.name: s for s in schemas if not needed[s.name]}
    for names in needed.values():
        plain.update({n: get_schema(n) for n in names if n not in plain})
    return [*plain.values(), *(s for s in schemas if needed[s.name])]


def _attach_all(con: duckdb.DuckDBPyConnection, setups: list[_Setup], strict: bool
                ) -> list[TableStatus]:
    """Build every table, lease the files the views will read, then create the views.

    A verified table whose inputs are unchanged since its last build is recalled
    (:mod:`.warm`) without loading the registry, the downloads or the build machinery.
    A view over other tables is created last, once their status rows are on ``con``.
    """
    pending = []
    for setup in setups:
        if setup.local is None:
            setup.built = warm.recall(setup.schema)
        if setup.built is None and _is_file_table(setup.schema):
            pending.append(setup)
    _build_all(pending, strict, _preparers(setups) if pending else {})
    store.lease([s.built.parquet for s in setups if s.built is not None])
    statuses: list[TableStatus] = []
    read = _read_by.setdefault(con, {})
    for setup in setups:
        members: dict[str, Built] | None = None
        if _needs(setup.schema):
            known = {**(read_status(con) or {}), **{s.table: s for s in statuses}}
            con.execute(status_sql(list(known.values())))
            members = dict(read)
        statuses.append(_attach(con, setup, strict, members))
        read.pop(setup.schema.name, None)
        if setup.built is not None and statuses[-1].usable:
            read[setup.schema.name] = setup.built
    return statuses


def _is_file_table(schema: TableSchema) -> bool:
    """True when the catalog converts the table (the readers load only on this path)."""
    from mltraces.catalog.readers import FileReader, reader_for

    return isinstance(reader_for(schema), FileReader)


def _not_fetched(error: MltracesError) -> bool:
    """True for "nothing fetched yet": a state, never raised (problems load only on errors)."""
    from mltraces.catalog.problems import NotFetchedError

    return isinstance(error, NotFetchedError)


#: what a view over other tables derives from one of them as soon as it is built
Preparer = tuple[TableSchema, Callable[[TableSchema, "Built"], None]]


def _preparers(setups: list[_Setup]) -> dict[str, list[Preparer]]:
    """For each table a view on ``setups`` reads, that view's ``prepare`` hook (if any)."""
    from mltraces.catalog.readers import reader_for

    found: dict[str, list[Preparer]] = {}
    for setup in setups:
        names = _needs(setup.schema)
        prepare = getattr(reader_for(setup.schema), "prepare", None) if names else None
        for name in names if prepare else ():
            found.setdefault(name, []).append((setup.schema, prepare))
    return found


def _build_all(setups: list[_Setup], strict: bool, preparers: dict[str, list[Preparer]]
               ) -> None:
    """Build ``setups``, one per core at a time (much of a conversion is one thread's work:
    a CSV read in order, an archive unpacked in Python), each followed at once by what the
    views reading it derive from it (so that overlaps the other builds too), largest
    inputs first; the first error in their order is raised under ``strict``, once every
    build has ended."""
    unfetched = [s for s in setups if _unfetched(s)]
    for setup in unfetched:  # each only says so, at once: no place in the pool
        _build(setup, strict)
    setups = [s for s in setups if s not in unfetched]
    if len(setups) < 2 or (os.cpu_count() or 1) < 2:  # (a warm connect loads nothing more)
        for setup in setups:
            _build_and_prepare(setup, strict, preparers)
        return
    from concurrent.futures import ThreadPoolExecutor

    from mltraces.catalog.buildcon import build_workers, out_of_memory, shared_builds

    largest_first = sorted(setups, key=_input_bytes, reverse=True)
    with shared_builds(), ThreadPoolExecutor(build_workers(len(setups))) as pool:
        done = {id(s): pool.submit(_build_and_prepare, s, strict, preparers)
                for s in largest_first}
    for setup in setups:  # one short of the shared memory: again, alone now
        if out_of_memory(done[id(setup)]):
            from mltraces.logs import get_logger

            get_logger(__name__).info("%s ran short of memory beside other builds; building "
                                      "it again alone", setup.schema.name)
            _build_and_prepare(setup, strict, preparers)
        else:
            done[id(setup)].result()


def _unfetched(setup: _Setup) -> bool:
    """A table set up only for a view over it (never fetched for it) whose files are not
    in the cache: a warm connect naming ``mltraces.requests`` meets one per trace not
    fetched."""
    if setup.local is not None or setup.fetch:
        return False
    from mltraces.download.paths import local_path
    from mltraces.registry import get_file

    try:  # never downloaded at all (a file there, current or not, takes the full path)
        return any(not local_path(get_file(f)).exists() for f in setup.schema.file_ids)
    except (KeyError, MltracesError):  # the build says what is wrong
        return False


def _input_bytes(setup: _Setup) -> int:
    """How much a build reads, roughly: its files' sizes in the cache, else as pinned (a
    file pinned without its size, Helios's zip, would otherwise go last); a local path's."""
    if setup.local is not None:
        try:
            return setup.local.stat().st_size
        except OSError:
            return 0
    from mltraces.download.paths import local_path
    from mltraces.registry import get_file

    total = 0
    for file_id in setup.schema.file_ids:
        try:
            file = get_file(file_id)
            path = local_path(file)
            total += path.stat().st_size if path.is_file() else file.size or 0
        except (KeyError, OSError, MltracesError):  # an order only: the build says what is wrong
            continue
    return total


def _build_and_prepare(setup: _Setup, strict: bool, preparers: dict[str, list[Preparer]]
                       ) -> None:
    _build(setup, strict)
    for view, prepare in preparers.get(setup.schema.name, ()) if setup.built else ():
        prepare(view, setup.built)  # its errors are its own: the view says them when attached


def _build(setup: _Setup, strict: bool) -> None:
    """Build one table; a failure is its status (raised under ``strict``). Short of memory
    beside other builds, it raises, to be built again alone."""
    import duckdb

    from mltraces.catalog.build import materialize
    from mltraces.catalog.buildcon import BUILD_MEMORY, sharing

    try:
        setup.built = materialize(setup.schema, setup.local, fetch=setup.fetch)
    except duckdb.OutOfMemoryException as short:
        if sharing():
            raise
        from mltraces.catalog.problems import ConversionError

        setup.error = ConversionError(
            f"{setup.schema.name}: DuckDB ran out of memory converting it ({BUILD_MEMORY}, "
            f"{str(short).splitlines()[0]})")
        if strict:
            raise setup.error from None
        return
    except MltracesError as error:
        if strict and not _not_fetched(error):
            raise
        setup.error = error
        return
    if setup.local is None:
        warm.remember(setup.built)


def _attach(con: duckdb.DuckDBPyConnection, setup: _Setup, strict: bool,
            members: dict[str, Built] | None = None) -> TableStatus:
    """Create one table's view, or a view that explains why it is unavailable.

    ``members``: for a view over other tables, the conversions their views read.
    """
    schema = setup.schema
    try:
        if setup.error is not None:
            raise setup.error
        if setup.built is None:  # not built: a table its source's reader serves itself
            from mltraces.catalog.readers import reader_for

            reader = reader_for(schema)
            over = getattr(reader, "attach_over", None)
            if members is not None and over is not None:
                return over(con, schema, setup.local, members)
            return reader.attach(con, schema, setup.local)
        built = setup.built = _view_over(con, setup)
    except MltracesError as error:
        if strict and not _not_fetched(error):
            raise
        return _unavailable(con, schema, error, setup.local)
    state = READY if built.verified else UNVERIFIED
    reason = None if built.verified else ("built from local files: checked against the schema, "
                                          "not against the published hashes")
    return TableStatus(schema.name, state, built.origin, built.rows, reason)


def _view_over(con: duckdb.DuckDBPyConnection, setup: _Setup) -> Built:
    """The view over the built Parquet; a file pruned or damaged meanwhile is rebuilt once."""
    import duckdb

    built = setup.built
    assert built is not None
    for attempt in (1, 2):
        # leased before this check: a pruner hides the record before it looks for leases
        if store.record_path(built.parquet).is_file():
            try:
                con.execute(parquet_view_sql(setup.schema, built.parquet))
                return built
            except duckdb.Error as error:
                if attempt == 2:
                    raise MltracesError(f"{setup.schema.name}: the converted file "
                                        f"{built.parquet} cannot be read ({error}); run "
                                        "`mltraces verify` to remove it") from None
                _discard(built.parquet)
        built = _rebuild(setup)
        store.lease([built.parquet])
    raise MltracesError(f"{setup.schema.name}: its converted file keeps disappearing "
                        f"({built.parquet}); is another process pruning this cache?")


def _rebuild(setup: _Setup) -> Built:
    """Build again after the Parquet went away (the build machinery loads only then)."""
    from mltraces.catalog.build import materialize

    return materialize(setup.schema, setup.local, fetch=setup.fetch)


def _discard(parquet: Path) -> None:
    """Forget a Parquet DuckDB cannot read, so the next materialize rebuilds it."""
    from mltraces.logs import get_logger  # loaded only when there is something to say

    get_logger(__name__).warning("%s cannot be read; converting it again", parquet.name)
    store.record_path(parquet).unlink(missing_ok=True)


def _unavailable(con: duckdb.DuckDBPyConnection, schema: TableSchema, error: MltracesError,
                 local: Path | None) -> TableStatus:
    import logging

    from mltraces.logs import get_logger

    quiet = _not_fetched(error)  # a status, not a problem nobody asked about
    get_logger(__name__).log(logging.INFO if quiet else logging.WARNING,
                             "%s is unavailable: %s", schema.name, error)
    con.execute(unavailable_sql(schema, str(error)))
    origin = f"local: {local}" if local is not None else "upstream"
    return TableStatus(schema.name, UNAVAILABLE, origin, None, str(error))


def attach_table(con: duckdb.DuckDBPyConnection, schema: TableSchema | str,
                 local: str | os.PathLike[str] | None = None, *, strict: bool = False
                 ) -> TableStatus:
    """Set up (or replace) one table's view on an open catalog connection.

    Its files are fetched when missing; ``mltraces.status`` is updated.
    """
    from mltraces.schema import get_schema

    if isinstance(schema, str):
        schema = get_schema(schema)
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(schema.schema_name)}")
    setup = _Setup(schema, Path(local) if local is not None else None, fetch=True)
    [status] = _attach_all(con, [setup], strict)
    rows = {**(read_status(con) or {}), schema.name: status}
    con.execute(status_sql(list(rows.values())) + ";" + view_comments_sql([(schema, status)]))
    _follow(con, schema.name)
    return status


def _follow(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Views on ``con`` that read ``table`` (``mltraces.jobs``) read its new conversion."""
    from mltraces.schema import get_schema

    for name in read_status(con) or {}:
        try:
            view = get_schema(name)
        except KeyError:  # a table given as a schema of its own: no view reads it
            continue
        if name != table and table in _needs(view):
            [status] = _attach_all(con, [_Setup(view, None, fetch=False)], strict=False)
            rows = {**(read_status(con) or {}), name: status}
            con.execute(status_sql(list(rows.values())) + ";" +
                        view_comments_sql([(view, status)]))
