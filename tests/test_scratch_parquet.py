"""A reader's intermediate Parquet (``ReadRequest.scratch``) is written uncompressed; a
table's own conversion stays snappy-compressed, in Parquet v2's encodings. PAI's join
reads its CSVs itself and writes scratch files only when a check fails."""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb
import pytest
from catalog_fixtures import loopback_only  # noqa: F401
from synthetic_sources import served

from mltraces.catalog import InputFile, ReadRequest, build, connect
from mltraces.catalog.csv_reader import convert_csv
from mltraces.schema import get_schema

synthetic = importlib.import_module("mltraces.sources.alibaba_pai.synthetic")


def _codecs(parquet: Path) -> set[str]:
    return {c for (c,) in duckdb.sql(f"SELECT DISTINCT compression FROM "
                                     f"parquet_metadata('{parquet}')").fetchall()}


@pytest.mark.parametrize(("scratch", "codec"), [(True, "UNCOMPRESSED"), (False, "SNAPPY")])
def test_scratch_output_is_uncompressed(tmp_path: Path, scratch: bool, codec: str) -> None:
    frame = synthetic.frames(20)["group_tag_table"]
    path = tmp_path / "group_tags.csv"
    frame.to_csv(path, header=False, index=False)
    item = InputFile("pai_group_tag_table.csv", path, {})
    schema = get_schema("alibaba_pai.group_tags")
    out = tmp_path / "out.parquet"
    done = convert_csv(ReadRequest(schema, [item], out, tmp_path, scratch=scratch))
    assert done.rows == 20
    assert _codecs(out) == {codec}
    encodings = {e for (e,) in duckdb.sql(f"SELECT DISTINCT encodings FROM "
                                          f"parquet_metadata('{out}')").fetchall()}
    # _row counts up: Parquet v2 writes it as deltas, v1 (a scratch file) as it is
    assert ("DELTA_BINARY_PACKED" in encodings) is not scratch


_FAST = importlib.import_module("mltraces.sources.alibaba_pai.readers")._fast


def _pai_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, careful: bool
               ) -> tuple[list[ReadRequest], list[tuple]]:
    """alibaba_pai.jobs built from 50 synthetic jobs (``careful``: as when the fast join
    fails), with the scratch conversions it made, and its rows."""
    from mltraces.sources.alibaba_pai import readers

    seen: list[ReadRequest] = []
    real = readers.convert_csv

    def watched(request: ReadRequest):
        seen.append(request)
        return real(request)

    monkeypatch.setattr(readers, "convert_csv", watched)
    monkeypatch.setattr(readers, "_fast", (lambda request: (None, list(request.inputs)))
                        if careful else _FAST)
    monkeypatch.setenv("MLTRACES_CACHE", str(tmp_path / "cache"))  # a build of its own
    with served(tmp_path, ["alibaba_pai"], monkeypatch, rows=50):
        con = connect(tables=["alibaba_pai.jobs"], strict=True)
        table = build.materialize("alibaba_pai.jobs", fetch=False).parquet  # (reused)
    try:
        rows = con.execute("SELECT * FROM alibaba_pai.jobs").fetchall()
    finally:
        con.close()
    assert len(rows) == 50 and _codecs(table) == {"SNAPPY"}
    return seen, rows


def test_pai_jobs_join_reads_the_csvs_without_scratch_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, _ = _pai_table(tmp_path, monkeypatch, careful=False)
    assert seen == []


def test_pai_jobs_careful_way_joins_uncompressed_parts_into_the_same_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen, careful = _pai_table(tmp_path / "careful", monkeypatch, careful=True)
    assert len(seen) == 3 and all(r.scratch for r in seen)
    seen, fast = _pai_table(tmp_path / "fast", monkeypatch, careful=False)
    assert seen == [] and fast == careful


def test_pai_jobs_join_is_checked_for_file_order_and_sorted_when_it_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast join writes its rows as they come and checks their order; rows out of order
    (as the joins give them from scratch Parquet) are written again, sorted."""
    from mltraces.sources.alibaba_pai import readers

    checked: list[bool] = []
    real = readers._in_file_order
    monkeypatch.setattr(readers, "_in_file_order",
                        lambda con, path: checked.append(real(con, path)) or checked[-1])
    _, in_order = _pai_table(tmp_path / "as-they-come", monkeypatch, careful=False)
    assert checked == [True]
    monkeypatch.setattr(readers, "_in_file_order", lambda con, path: False)
    copies: list[str] = []
    real_connection = readers.build_connection

    class Watched:
        def __init__(self, work: Path) -> None:
            self.con = real_connection(work)

        def execute(self, sql: str, *args):
            if sql.startswith("COPY"):
                copies.append(sql)
            return self.con.execute(sql, *args)

        def close(self) -> None:
            self.con.close()

    monkeypatch.setattr(readers, "build_connection", Watched)
    _, sorted_again = _pai_table(tmp_path / "sorted", monkeypatch, careful=False)
    assert sorted_again == in_order
    assert ["ORDER BY j._row" in c for c in copies] == [False, True]


def test_file_order_is_seen_to_break_at_one_row(tmp_path: Path) -> None:
    from mltraces.sources.alibaba_pai.readers import _in_file_order

    with duckdb.connect() as con:
        for name, rows in (("sorted", "1, 2, 5, 9"), ("one back", "1, 2, 9, 5"),
                           ("repeated", "1, 2, 2, 3")):
            path = tmp_path / f"{name}.parquet"
            con.execute(f"COPY (SELECT unnest([{rows}]) AS _row) TO '{path}' (FORMAT parquet)")
            assert _in_file_order(con, path) is (name == "sorted"), name
