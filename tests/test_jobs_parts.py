"""``mltraces.jobs`` read from materialised parts: written once, tied to the conversion each
was derived from, rebuilt for one member when that member's input or mapping changes."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import duckdb
import pytest
import synthetic
from catalog_fixtures import KALOS, SEREN, rows, scalar

from mltraces import jobmap
from mltraces.catalog import attach_table, connect, parts, store
from mltraces.errors import MltracesError, PartialViewWarning

pytestmark = pytest.mark.filterwarnings("ignore::mltraces.errors.PartialViewWarning")



def _connect(local: dict[str, Path]) -> duckdb.DuckDBPyConnection:
    return connect(["mltraces.jobs", SEREN, KALOS], local=local)


def _parts() -> dict[str, Path]:
    """The part files in the cache, by member table."""
    found = {}
    for path in store.tables_dir().glob("mltraces.jobs@*.parquet"):
        found.setdefault(path.name.split("@")[1].split("-")[0], []).append(path)
    return {member: sorted(paths)[0] if len(paths) == 1 else sorted(paths)
            for member, paths in found.items()}


def _view_sql(con: duckdb.DuckDBPyConnection) -> str:
    return scalar(con, "SELECT sql FROM duckdb_views() WHERE schema_name = 'mltraces' "
                       "AND view_name = 'jobs'")


def _mapped(con: duckdb.DuckDBPyConnection) -> str:
    """The view as it was before parts: each member read through its mapping, per query."""
    return " UNION ALL ".join(f"({jobmap.table_select_sql(jobmap.job_table(t))})"
                              for t in (KALOS, SEREN))


def test_the_view_reads_parts_with_the_rows_the_mapping_gives_in_order(acme_files) -> None:
    con = _connect(acme_files)
    try:
        sql = _view_sql(con)
        assert "mltraces.jobs@acme.kalos_jobs-local-" in sql
        assert "mltraces.jobs@acme.seren_jobs-local-" in sql
        assert "acme.kalos_jobs" not in sql.replace("mltraces.jobs@acme.kalos_jobs", "")
        # row for row, in the same order, NULLs and instants included
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs") == 500
    finally:
        con.close()


def test_parts_are_written_once_and_reused(acme_files) -> None:
    _connect(acme_files).close()
    first = _parts()
    assert set(first) == {SEREN, KALOS}
    stamps = {m: p.stat().st_mtime_ns for m, p in first.items()}
    con = _connect(acme_files)
    try:
        assert _parts() == first
        assert {m: p.stat().st_mtime_ns for m, p in first.items()} == stamps
        record = store.read_record(first[KALOS])
        assert record["table"] == "mltraces.jobs@acme.kalos_jobs" and record["rows"] == 200
        assert record["stamps"][0]["path"].endswith(".parquet")  # the member's conversion
    finally:
        con.close()


def test_a_changed_input_rebuilds_only_its_own_part(acme_files, tmp_path: Path) -> None:
    _connect(acme_files).close()
    first = _parts()
    other = synthetic.write_kalos_trace(tmp_path / "trace_kalos_2.csv", 150, seed=9)
    con = _connect({**acme_files, KALOS: other})
    try:
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs WHERE trace = 'acme/kalos'") == 150
        now = _parts()
        assert now[SEREN] == first[SEREN]
        assert first[KALOS] in now[KALOS] and len(now[KALOS]) == 2  # a new one beside
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
    finally:
        con.close()


def test_a_changed_mapping_rebuilds_only_its_own_part(acme_files, monkeypatch) -> None:
    _connect(acme_files).close()
    first = _parts()
    tables = dict(jobmap.job_tables())
    kalos = tables[KALOS]
    tables[KALOS] = dataclasses.replace(kalos, columns={**kalos.columns, "gpu_type": "'H800'"})
    monkeypatch.setattr(jobmap, "job_tables", lambda: tables)
    con = _connect(acme_files)
    try:
        assert rows(con, "SELECT DISTINCT gpu_type FROM mltraces.jobs WHERE trace = "
                         "'acme/kalos'") == [("H800",)]
        now = _parts()
        assert now[SEREN] == first[SEREN] and len(now[KALOS]) == 2
    finally:
        con.close()


def _encodings(parquet: Path) -> set[str]:
    return {e for (e,) in duckdb.sql(f"SELECT DISTINCT encodings FROM parquet_metadata("
                                    f"'{parquet}')").fetchall()}


def test_parts_are_parquet_v2_without_a_codec_and_their_format_is_in_their_key(
        acme_files, monkeypatch) -> None:
    """Read whole by every query, a part has no codec to undo; written otherwise (another
    ``PART_FORMAT``), it is written again rather than served as it was."""
    _connect(acme_files).close()
    first = _parts()
    codecs = {c for (c,) in duckdb.sql(f"SELECT DISTINCT compression FROM parquet_metadata("
                                       f"'{first[SEREN]}')").fetchall()}
    assert codecs == {"UNCOMPRESSED"}
    assert {"DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY"} <= _encodings(first[SEREN])
    monkeypatch.setattr(parts, "PART_FORMAT", "FORMAT parquet, COMPRESSION zstd")
    con = _connect(acme_files)
    try:
        now = _parts()
        assert len(now[SEREN]) == 2 and len(now[KALOS]) == 2  # each written again, beside
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
    finally:
        con.close()


def test_a_changed_member_file_is_not_served_by_its_old_part(acme_files) -> None:
    """The part stamps the member's conversion: a file replaced under it (same name) no
    longer matches, and the part is written again from the new bytes."""
    _connect(acme_files).close()
    part = _parts()[KALOS]
    member = Path(store.read_record(part)["stamps"][0]["path"])
    data = member.read_bytes()
    member.unlink()
    member.write_bytes(data)  # the same bytes, another file: the stamp tells them apart
    assert not store.inputs_current(store.read_record(part))
    con = _connect(acme_files)
    try:
        assert store.inputs_current(store.read_record(part))  # rewritten in place
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
    finally:
        con.close()


def test_a_part_that_cannot_be_written_leaves_the_member_read_through_its_mapping(
        acme_files, monkeypatch) -> None:
    real = parts.materialize_part

    def refuse(part: parts.Part) -> store.Built:
        if part.member.schema.name == KALOS:
            raise MltracesError("the cache is not writable")
        return real(part)

    monkeypatch.setattr(parts, "materialize_part", refuse)
    con = _connect(acme_files)
    try:
        sql = _view_sql(con)
        assert "mltraces.jobs@acme.seren_jobs" in sql and "mltraces.jobs@acme.kalos" not in sql
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
    finally:
        con.close()


def test_replacing_a_member_on_an_open_connection_moves_the_view_along(
        acme_files, tmp_path: Path) -> None:
    con = _connect(acme_files)
    try:
        other = synthetic.write_kalos_trace(tmp_path / "trace_kalos_2.csv", 120, seed=8)
        attach_table(con, KALOS, other, strict=True)
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs WHERE trace = 'acme/kalos'") == 120
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
    finally:
        con.close()


def test_a_stale_part_goes_with_its_member_when_the_cache_is_verified(acme_files) -> None:
    from mltraces.catalog.upkeep import verify_tables

    _connect(acme_files).close()
    part = _parts()[KALOS]
    member = Path(store.read_record(part)["stamps"][0]["path"])
    member.unlink()
    checks = {c.path.name: c.status for c in verify_tables(rehash=False)}
    assert checks[part.name] == "in use"  # this process's view reads it
    lease = next((part.parent / ".readers").glob(f"*-{os.getpid()}.json"))
    lease.unlink()  # as when this process is gone
    checks = {c.path.name: c.status for c in verify_tables(rehash=False)}
    assert checks[part.name] == "stale" and not part.exists()


def test_the_partial_warning_and_jobs_of_are_unchanged(acme_files) -> None:
    with pytest.warns(PartialViewWarning, match="jobs_of"):
        con = _connect(acme_files)
    try:
        with pytest.raises(duckdb.Error, match=r"not fetched \(run `mltraces fetch .*itp"):
            con.execute("FROM mltraces.jobs_of('itp/raw')").fetchall()
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs_of('acme')") == 500
    finally:
        con.close()


def test_parts_are_written_as_their_tables_are_converted_not_after(acme_files,
                                                                   monkeypatch) -> None:
    """``connect()`` writes a member's part right after converting it, beside the other
    conversions, so attaching the view finds every part written."""
    late = []
    real = parts._attempt
    monkeypatch.setattr(parts, "_attempt", lambda part: late.append(part) or real(part))
    con = _connect(acme_files)
    try:
        assert late == [] and set(_parts()) == {SEREN, KALOS}
        assert rows(con, "FROM mltraces.jobs") == rows(con, _mapped(con))
    finally:
        con.close()


def test_the_trace_is_written_as_one_enum_value_and_reads_back_as_its_text(acme_files) -> None:
    """A constant text column goes to Parquet as a one-value ENUM (its dictionary written once,
    no row hashed); a part reads it back as the trace's text, and a row with another value
    fails the cast rather than being written."""
    con = _connect(acme_files)
    try:
        part = _parts()["acme.kalos_jobs"]
        assert rows(con, f"SELECT DISTINCT typeof(trace), trace FROM '{part}'") == [
            ("VARCHAR", "acme/kalos")]
    finally:
        con.close()
    select = parts._constants_as_enums("SELECT 'acme/seren' AS trace, 1 AS x",
                                       {"trace": "acme/kalos"})
    with pytest.raises(duckdb.ConversionException, match="acme/seren"):
        duckdb.sql(select).fetchall()
    seen: list[str] = []
    real = parts._constants_as_enums
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parts, "_constants_as_enums", lambda s, c: seen.append(dict(c)) or real(s, c))
        for path in store.tables_dir().glob("mltraces.jobs@*"):
            path.unlink()
        _connect(acme_files).close()
    assert sorted(c["trace"] for c in seen) == ["acme/kalos", "acme/seren"]
