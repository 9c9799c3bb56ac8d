"""DuckDB for building tables: what every conversion's own connection needs, in one place.

Conversions (the CSV reader, a source's own readers, the parts of a mapped view)
run on a DuckDB of their own: instants in UTC (as on every catalog connection),
scratch files in the conversion's own folder, and buffers bounded. Unbounded,
DuckDB takes up to 80 % of the machine's memory for its buffers: a first build of
the published job tables peaked over 1.3 GB (Helios's four CSVs in one pass,
PAI's join), where bounded it spills a sort or a join to the scratch folder and
stays under :data:`BUILD_MEMORY` plus the interpreter.

Several conversions can run at once (``connect()`` builds the tables it needs on
every core: much of a conversion is one thread's work, reading a CSV in order or
unpacking an archive in Python). Inside :func:`shared_builds` they share one
DuckDB, each on a cursor of its own, so the bound holds for all of them together.
That DuckDB has no threads of its own (:data:`SHARED_THREADS`): each query runs on
the thread that asked for it, one build per core. Spreading one query over both
cores saves no time while the other core converts too, and costs more: converting
Helios's 3.4 M jobs took 7.1 CPU-s on two threads against 4.7 on one, and the first
build of the published job tables 42 CPU-s against 33 (27.4 s against 20.6 s).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.schema import sql_literal

if TYPE_CHECKING:
    from concurrent.futures import Future

    import duckdb

__all__ = ["BUILD_MEMORY", "build_connection", "build_workers", "in_utc", "out_of_memory",
           "shared_builds", "sharing"]

#: DuckDB's buffer memory for the conversions running at one time (its ``memory_limit``):
#: PAI's join spills below about 1 GB; at 800 MB the published job tables' first build took
#: 15.9-16.4 s and 29.6-30.4 CPU-s, peak 0.89-0.91 GB, against 17.0-18.0 s, 31.4-33.0 CPU-s
#: and 0.70 GB at 600 MB (900 MB: 0.99 GB, too close to the 1 GB the build is held to)
BUILD_MEMORY = "800MB"
#: DuckDB's threads for the conversions running together: one, the caller's (see above)
SHARED_THREADS = 1


class _Shared:
    """The DuckDB the conversions share while a :func:`shared_builds` block is open (made
    when the first of them needs it: a block whose tables are all reused makes none)."""

    con: duckdb.DuckDBPyConnection | None = None
    scratch: Path | None = None
    holders = 0
    failed = False  # no scratch folder or DuckDB could be made: each conversion has its own


_lock = threading.Lock()
_state = _Shared()


def build_workers(tasks: int) -> int:
    """How many conversions to run at once: one per core, no more than there are."""
    return max(1, min(tasks, os.cpu_count() or 1))


def out_of_memory(future: Future[Any]) -> bool:
    """True when a build in a pool ran short of the memory it shared with the others: it is
    run again alone, with the whole bound, once they are done (it wrote nothing)."""
    import duckdb

    return isinstance(future.exception(), duckdb.OutOfMemoryException)


def _fresh(work: Path | None, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A bounded DuckDB spilling into ``work``, on ``threads`` (None: one per core)."""
    import duckdb

    config: dict[str, str | int] = {"memory_limit": BUILD_MEMORY}
    if threads is not None:
        config["threads"] = threads
    con = duckdb.connect(config=config)
    try:
        if work is not None:
            con.execute(f"SET temp_directory = {sql_literal(str(work))}")
    except BaseException:
        con.close()
        raise
    return con


def build_connection(work: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection for one conversion: UTC, bounded memory, spilling into ``work``
    (inside :func:`shared_builds`, a cursor of the shared DuckDB, which spills into its own
    scratch folder)."""
    with _lock:
        if _state.holders and _state.con is None and not _state.failed:
            _open_shared()
        con = _state.con.cursor() if _state.con is not None else None
    return in_utc(con if con is not None else _fresh(work))


def in_utc(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` with instants in UTC, as on every catalog connection (closed if that fails)."""
    try:
        con.execute("SET TimeZone = 'UTC'")
    except BaseException:
        con.close()
        raise
    return con


def _scratch() -> Path:
    """Where the conversions running together spill: ``convert-PID-shared`` in the tables
    folder (proven inside the cache), removed after them; a killed run's goes with the next
    conversion, as every ``convert-PID-*`` folder of a dead process."""
    from mltraces.catalog.store import tables_dir
    from mltraces.config import cache_dir
    from mltraces.containment import proven_folder

    folder = proven_folder(cache_dir(), tables_dir(), "the tables folder", create=True)
    scratch = folder / f"convert-{os.getpid()}-shared"
    scratch.mkdir(exist_ok=True)
    return scratch


def sharing() -> bool:
    """True inside :func:`shared_builds` (a build short of memory there is tried again alone)."""
    with _lock:
        return _state.holders > 0


def _open_shared() -> None:
    """Make the shared DuckDB (under the lock); where it cannot be made, remember that."""
    import duckdb

    from mltraces.errors import MltracesError

    try:
        scratch = _scratch()
        _state.con, _state.scratch = _fresh(scratch, SHARED_THREADS), scratch
    except (OSError, duckdb.Error, MltracesError):  # an unwritable cache: each conversion
        _state.failed = True  # then says why, on its own connection


@contextmanager
def shared_builds() -> Iterator[None]:
    """Conversions started inside (from any thread) share one DuckDB, which spills into a
    scratch folder of its own; where none can be made, each conversion has its own."""
    with _lock:
        _state.holders += 1
    try:
        yield
    finally:
        with _lock:
            _state.holders -= 1
            if not _state.holders:
                if _state.con is not None:
                    _state.con.close()
                if _state.scratch is not None:
                    shutil.rmtree(_state.scratch, ignore_errors=True)
                _state.con = _state.scratch = None
                _state.failed = False
