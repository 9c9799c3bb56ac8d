"""``connect()`` builds the tables it needs one per core at a time, on one bounded DuckDB."""

from __future__ import annotations

import threading

import duckdb
import pytest
from catalog_fixtures import KALOS, SEREN, scalar

from mltraces.catalog import build, buildcon, connect, parts, store

pytestmark = pytest.mark.filterwarnings("ignore::mltraces.errors.PartialViewWarning")



def test_tables_are_built_side_by_side_on_one_shared_duckdb(acme_files, monkeypatch) -> None:
    monkeypatch.setattr(buildcon.os, "cpu_count", lambda: 2)
    seen: list[tuple[str, bool]] = []
    real = build.materialize

    def watched(schema, *args, **kwargs):
        seen.append((threading.current_thread().name, buildcon.sharing()))
        return real(schema, *args, **kwargs)

    monkeypatch.setattr(build, "materialize", watched)
    con = connect([SEREN, KALOS], local=acme_files)
    try:
        assert scalar(con, f"SELECT count(*) FROM {SEREN}") == 300
    finally:
        con.close()
    assert len(seen) == 2 and all(shared for _, shared in seen)
    assert all(name != threading.main_thread().name for name, _ in seen)
    assert buildcon._state.con is None and not buildcon.sharing()  # closed, scratch removed
    assert not list(store.tables_dir().glob("convert-*-shared"))


def test_shared_builds_run_each_query_on_its_own_thread_and_in_parallel() -> None:
    """The shared DuckDB has no threads of its own (one per query, the caller's: a
    build per core costs a quarter less CPU than each query spread over every core);
    two builds on two threads each still get their answer."""
    started = threading.Barrier(2, timeout=30)
    found: dict[str, tuple] = {}

    def query(name: str) -> None:
        con = buildcon.build_connection()
        try:
            started.wait()  # both inside DuckDB together: neither waits for the other's end
            found[name] = con.execute(
                "SELECT current_setting('threads'), sum(i) FROM range(2000000) t(i)").fetchone()
        finally:
            con.close()

    with buildcon.shared_builds():
        workers = [threading.Thread(target=query, args=(n,)) for n in "ab"]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert sorted(found) == ["a", "b"]
    assert {row[0] for row in found.values()} == {buildcon.SHARED_THREADS} == {1}
    assert all(row[1] == 2000000 * 1999999 // 2 for row in found.values())
    alone = buildcon.build_connection()  # outside the block: DuckDB's own threads, per core
    try:
        assert alone.execute("SELECT current_setting('threads')").fetchone()[0] >= 1
    finally:
        alone.close()


def _short_of_memory_when_shared(real):
    def run(*args, **kwargs):
        if buildcon.sharing():
            raise duckdb.OutOfMemoryException("could not allocate block (test)")
        return real(*args, **kwargs)
    return run


def test_a_table_short_of_the_shared_memory_is_built_again_alone(acme_files,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr(buildcon.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(build, "materialize", _short_of_memory_when_shared(build.materialize))
    con = connect([SEREN, KALOS], local=acme_files, strict=True)
    try:
        assert scalar(con, f"SELECT count(*) FROM {KALOS}") == 200
    finally:
        con.close()


def test_a_table_short_of_memory_alone_is_unavailable_with_why(acme_files, monkeypatch) -> None:
    def never(*args, **kwargs):
        raise duckdb.OutOfMemoryException("could not allocate block (test)")

    monkeypatch.setattr(build, "materialize", never)
    con = connect([KALOS], local=acme_files)
    try:
        state, reason = con.execute("SELECT state, reason FROM mltraces.status WHERE "
                                    f"table_name = '{KALOS}'").fetchone()
        assert state == "unavailable" and "ran out of memory converting it" in reason
    finally:
        con.close()


def test_a_part_short_of_the_shared_memory_is_written_again_alone(acme_files,
                                                                  monkeypatch) -> None:
    monkeypatch.setattr(buildcon.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(parts, "materialize_part",
                        _short_of_memory_when_shared(parts.materialize_part))
    con = connect(["mltraces.jobs", SEREN, KALOS], local=acme_files)
    try:
        sql = scalar(con, "SELECT sql FROM duckdb_views() WHERE schema_name = 'mltraces' "
                          "AND view_name = 'jobs'")
        assert "mltraces.jobs@acme.seren_jobs" in sql and "mltraces.jobs@acme.kalos" in sql
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs") == 500
    finally:
        con.close()
