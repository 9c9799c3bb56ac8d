"""Materialised parts of a mapped view: each member table's rows in the view's columns, once.

A view that unites mapped tables (``mltraces.jobs``: every source's job tables
through its ``jobs.json``) would otherwise re-derive every row through its
mapping on every query: times to instants and seconds, raw states to common
ones, run and GPU times. Instead each member's rows, mapped, are written once
as typed Parquet (its *part*), and the view reads those files.

A part is a conversion like any other of the store (:mod:`.store`), named
``<view>@<member>-<origin>-<key>.parquet`` with its record beside it:

- its one input is the member's own conversion (whose name carries the hash of
  the upstream bytes and schema it came from), stamped as it was read: once that
  file is rebuilt, pruned or replaced, the part no longer vouches for it;
- its key hashes the part's SQL, which spells out the mapping, both schemas and
  what the code makes of them, with the member file's name, the converter version
  and DuckDB's (which converts the times): a change to any of them is a new part.

So a source whose files or mapping change rebuilds its own part and no other;
:func:`~mltraces.catalog.upkeep.prune` removes superseded parts and leases keep
the ones an open view reads, exactly as for conversions.

What the part holds is the caller's: :class:`Part` carries the view, the member's
conversion and the ``SELECT`` of the view's columns over the member's typed rows
(:func:`member_relation`). A union view (:mod:`.unions`: ``mltraces.jobs``,
``mltraces.requests``) that names its ``select_over`` builds its parts there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from mltraces.catalog import store
from mltraces.catalog.store import CONVERTER_VERSION, Built
from mltraces.errors import MltracesError
from mltraces.schema import TableSchema, quote_ident, sql_literal, sql_path

if TYPE_CHECKING:
    from concurrent.futures import Future

    import duckdb

__all__ = ["PART_VERSION", "Part", "leased_parts", "materialize_part", "member_names",
           "member_relation", "parts_select_sql", "parts_view_sql"]

#: Bumped when parts change meaning without their SQL changing.
PART_VERSION = 1
#: How a part is written (part of its key: a part written otherwise is written again). Every
#: query of the view reads its parts' columns whole, so no codec is left to undo, and Parquet
#: v2's encodings keep them near snappy's size: the requests view's warm summary 0.56 s against
#: 0.84 with snappy, its parts 970 MB against 864 (1,401 MB uncompressed in Parquet v1)
PART_FORMAT = "FORMAT parquet, COMPRESSION uncompressed, PARQUET_VERSION v2"


class Part(NamedTuple):
    """One member's share of a mapped view: what it is read from and how.

    ``select`` is what the part holds, and its key. ``prepare``, when given, returns
    SQL with the same rows that is cheaper to run on the build connection it is
    handed (a constant the select scans for, computed once first). ``constant_text``
    names text columns that hold one value in every row (the trace's name): they are
    written as a one-value ENUM, whose dictionary DuckDB's Parquet writer writes once
    instead of hashing every row (0.01 CPU-s against 0.14 for Helios's 3.4 M jobs); they
    read back as the same text.
    """

    view: TableSchema  # the mapped view (mltraces.jobs)
    member: Built  # the member table's conversion, the part's only input
    select: str  # SELECT of the view's columns, in order, over the member's rows
    prepare: Callable[[duckdb.DuckDBPyConnection], str] | None = None
    constant_text: Mapping[str, str] = MappingProxyType({})

    @property
    def table(self) -> str:
        """The part's name in the store: ``mltraces.jobs@helios.jobs``."""
        return f"{self.view.name}@{self.member.schema.name}"


def member_relation(member: Built) -> str:
    """The member's typed rows (its catalog view's columns) as a subquery over its Parquet."""
    from mltraces.catalog.views import typed_select_sql

    return f"({typed_select_sql(member.schema, member.parquet)})"


def member_names(member: Built) -> list[str]:
    """The columns of :func:`member_relation`: the member's fields and derived columns."""
    schema = member.schema
    return [*schema.field_names, *(d.name for d in schema.derived)]


def _key(part: Part) -> str:
    import duckdb

    text = "\n".join([f"converter={CONVERTER_VERSION}", f"part={PART_VERSION}", PART_FORMAT,
                      f"duckdb={duckdb.__version__}", f"view={part.view.digest}",
                      f"member={part.member.parquet.name}", part.select])
    return hashlib.sha256(text.encode()).hexdigest()


def _target(part: Part) -> Path:
    kind = "upstream" if part.member.verified else "local"
    return store.target_path(part.table, kind, _key(part))


def _reuse(part: Part, target: Path) -> Built | None:
    """The part at ``target`` while its record vouches for it (as :func:`.build.reuse`)."""
    record = store.read_record(target)
    if record is None or store.damage(target, record) is not None:
        return None
    if not store.inputs_current(record):
        return None
    return _built(part, target, int(record["rows"]))


def _built(part: Part, target: Path, rows: int) -> Built:
    member = part.member
    return Built(part.view, target, member.verified, member.origin, rows,
                 (member.parquet.name,))


def materialize_part(part: Part) -> Built:
    """The part's Parquet, reused while it vouches for its input, else written once.

    Raises :class:`~mltraces.errors.MltracesError` when it cannot be written (a
    read-only or full cache, a mapping that fails on the data): the caller then
    reads the member through the mapping, as a plain view.
    """
    target = _target(part)
    built = _reuse(part, target)
    if built is not None:
        return built
    from filelock import FileLock

    from mltraces.catalog import upkeep
    from mltraces.catalog.problems import disk_problem
    from mltraces.config import cache_dir
    from mltraces.containment import proven_folder

    try:
        proven_folder(cache_dir(), target.parent, "the tables folder", create=True)
        with FileLock(str(target) + ".lock"):
            built = _reuse(part, target) or _write(part, target)
    except OSError as error:
        raise disk_problem(part.table, target.parent, error) or MltracesError(
            f"{part.table}: cannot write {target.name} ({error})") from None
    upkeep.prune(part.table)
    return built


def leased_parts(parts: Sequence[Part]) -> list[Built | None]:
    """Each part materialised and leased for this process's views, in one lease write.

    Leased first, records checked second (a pruner hides the record before it reads
    the leases), so an open view never loses its file; a part pruned in between is
    written again, once. A part that cannot be written is None, and why is logged:
    the caller reads that member through its mapping instead.
    """
    found = _attempt_all(parts)
    store.lease([b.parquet for b in found if b is not None])
    for i, built in enumerate(found):
        if built is not None and not store.record_path(built.parquet).is_file():
            again = _attempt(parts[i])
            if again is not None:
                store.lease([again.parquet])
            found[i] = again if again and store.record_path(again.parquet).is_file() else None
    return found


def _attempt_all(parts: Sequence[Part]) -> list[Built | None]:
    """Every part, those to be written one per core at a time (as ``connect()`` builds)."""
    found: list[Built | None] = [_reuse(p, _target(p)) for p in parts]
    missing = [i for i, built in enumerate(found) if built is None]
    if len(missing) < 2 or (os.cpu_count() or 1) < 2:  # (a warm view loads nothing more)
        for i in missing:
            found[i] = _attempt(parts[i])
        return found
    from concurrent.futures import ThreadPoolExecutor

    from mltraces.catalog.buildcon import build_workers, out_of_memory, shared_builds

    with shared_builds(), ThreadPoolExecutor(build_workers(len(missing))) as pool:
        written = {i: pool.submit(materialize_part, parts[i]) for i in missing}
    for i, future in written.items():  # one short of the shared memory: again, alone now
        if out_of_memory(future):
            from mltraces.logs import get_logger

            get_logger(__name__).info("%s ran short of memory beside other parts; writing it "
                                      "again alone", parts[i].table)
        found[i] = _attempt(parts[i]) if out_of_memory(future) else _settled(parts[i], future)
    return found


def _settled(part: Part, future: Future[Built]) -> Built | None:
    """A part written in the pool, or None (as :func:`_attempt` says it)."""
    error = future.exception()
    if error is None:
        return future.result()
    if not isinstance(error, MltracesError):
        raise error
    _unwritten(part, error)
    return None


def _attempt(part: Part) -> Built | None:
    """The part, or None (why is logged: the view reads that member through its mapping)."""
    import duckdb

    try:
        return materialize_part(part)
    except (MltracesError, duckdb.OutOfMemoryException) as error:
        _unwritten(part, error)
        return None


def _unwritten(part: Part, error: BaseException) -> None:
    from mltraces.logs import get_logger

    get_logger(__name__).info("%s reads %s through its mapping: %s", part.view.name,
                              part.member.schema.name, str(error).splitlines()[0])


def _constants_as_enums(select: str, constant_text: Mapping[str, str]) -> str:
    """``select`` with each constant text column cast to a one-value ENUM (a row with another
    value fails the cast: the part is never written wrong)."""
    if not constant_text:
        return select
    casts = ", ".join(f"CAST({quote_ident(c)} AS ENUM ({sql_literal(v)})) AS {quote_ident(c)}"
                      for c, v in constant_text.items())
    return f"SELECT * REPLACE ({casts}) FROM ({select})"


def _write(part: Part, target: Path) -> Built:
    """Run the part's SELECT into ``target`` (under its lock) and record what it read."""
    import duckdb

    from mltraces.catalog import upkeep
    from mltraces.catalog.buildcon import build_connection
    from mltraces.catalog.problems import disk_problem

    upkeep.clean_orphans(target.parent)  # leftovers of killed runs, as before any conversion
    stamps = [store.InputStamp.of(part.member.parquet)]  # before reading: a change shows
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    work = Path(tempfile.mkdtemp(prefix=f"convert-{os.getpid()}-", dir=target.parent))
    con = build_connection(work)
    try:
        select = _constants_as_enums(part.prepare(con) if part.prepare else part.select,
                                     part.constant_text)
        rows = con.execute(f"COPY ({select}) TO {sql_literal(str(tmp))} "
                           f"({PART_FORMAT})").fetchone()[0]  # type: ignore[index]
        record = store.new_record(
            table=part.table, origin=part.member.origin, verified=part.member.verified,
            rows=rows, inputs=[part.member.parquet.name],
            input_keys=[part.member.parquet.name],
            identity={"view": part.view.name, "member": part.member.schema.name,
                      "origin": part.member.origin},
            schema_sha256=part.view.digest, converter=CONVERTER_VERSION, warnings=[],
            parquet_size=tmp.stat().st_size, parquet_sha256=store.file_sha256(tmp),
            stamps=stamps)
        os.replace(tmp, target)
        store.write_record(target, record)
    except duckdb.OutOfMemoryException:
        raise  # beside other builds on the shared bound: the caller writes it again alone
    except duckdb.Error as error:
        raise disk_problem(part.table, target.parent, error) or MltracesError(
            f"{part.table}: {str(error).splitlines()[0]}") from None
    finally:
        con.close()
        tmp.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return _built(part, target, int(rows))


def parts_view_sql(view: TableSchema, members: Sequence[Path | str]) -> str:
    """``CREATE VIEW`` of ``view`` over its members in order: each one's part (a path), or,
    for a member without one, its rows as a ``SELECT`` of the view's columns (text).

    With every member's part at hand, the view is one scan of all the files.
    """
    if all(isinstance(m, Path) for m in members):
        body = parts_select_sql(view, [m for m in members if isinstance(m, Path)])
    else:
        body = " UNION ALL ".join(f"({parts_select_sql(view, [m])})" if isinstance(m, Path)
                                  else f"({m})" for m in members)
    return f"CREATE OR REPLACE VIEW {view.qualified} AS {body}"


def parts_select_sql(view: TableSchema, parts: Sequence[Path]) -> str:
    """The view's rows read from its parts' files (exactly those files, in their order).

    Each column is cast to the view's type: a no-op for what the parts hold, and the
    view's types whatever a future Parquet writer chooses.
    """
    columns = ", ".join(f"CAST({quote_ident(f.name)} AS {f.duckdb_type}) AS "
                        f"{quote_ident(f.name)}" for f in view.fields)
    files = ", ".join(sql_path(p) for p in parts)
    return f"SELECT {columns} FROM read_parquet([{files}])"

