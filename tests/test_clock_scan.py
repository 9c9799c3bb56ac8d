"""Clock times of the plain ``%Y-%m-%d %H:%M:%S`` form are parsed by DuckDB's CSV scanner in
the fast read (no text check per value); any other form falls to the exact read, which gives
the values TRY_CAST gives, and a zone is refused either way, naming its line and column."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from mltraces.catalog import InputFile, ReadRequest, csv_reader
from mltraces.catalog.csv_reader import CLOCK_FORMAT, FAST, convert_csv
from mltraces.catalog.problems import SchemaDriftError
from mltraces.schema import get_schema

HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time," \
         "duration,queue\n"
PLAIN = "2020-04-01 00:00:28"


def _csv(path: Path, submits: list[str]) -> Path:
    lines = [f"{i},u1,vc1,1,8,1,COMPLETED,{s},{PLAIN},{PLAIN},0,0\n" for i, s in enumerate(submits)]
    path.write_text(HEADER + "".join(lines))
    return path


def _convert(tmp_path: Path, submits: list[str]) -> list:
    schema = get_schema("helios.jobs")
    item = InputFile("data/Venus/cluster_log.csv", _csv(tmp_path / "log.csv", submits),
                     {"cluster": "venus"})
    out = tmp_path / "out.parquet"
    convert_csv(ReadRequest(schema, [item], out, tmp_path))
    with duckdb.connect() as con:
        return [v for (v,) in con.sql(f"SELECT submit_time FROM '{out}' ORDER BY _row").fetchall()]


def _modes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = csv_reader._select

    def spy(schema, part, mode):
        seen.append(mode)
        return real(schema, part, mode)

    monkeypatch.setattr(csv_reader, "_select", spy)
    return seen


def _cast(value: str):
    with duckdb.connect() as con:
        return con.execute("SELECT TRY_CAST(? AS TIMESTAMP)", [value]).fetchone()[0]


def test_helios_clock_columns_are_scanned_with_their_format() -> None:
    schema = get_schema("helios.jobs")
    assert {f.format for f in schema.fields if f.name.endswith("_time")} == {CLOCK_FORMAT}


def test_plain_clock_times_are_read_by_the_scanner_alone(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    modes = _modes(monkeypatch)
    values = [PLAIN, "2020-4-1 0:00:28", "1969-12-31 23:59:59", "2020-04-01  00:00:28"]
    assert _convert(tmp_path, values) == [_cast(v) for v in values]
    assert modes == [FAST]  # one read: the times were not read as text and checked
    schema = get_schema("helios.jobs")
    part = csv_reader.CsvInput(InputFile("x", tmp_path / "log.csv", {}), tmp_path / "log.csv",
                               HEADER.strip().split(","), csv_reader.file_facts(
                                   tmp_path / "log.csv", '"'))
    sql = csv_reader._select(schema, part, FAST)
    assert "'submit_time': 'TIMESTAMP'" in sql and "regexp_matches" not in sql


@pytest.mark.parametrize("other", ["2020-04-01T00:00:28", "2020-04-01 00:00:28.5",
                                   "2020-04-01 24:00:00", "12345-01-01 00:00:00",
                                   "-2020-04-01 00:00:28"])
def test_other_forms_fall_to_the_exact_read_with_trycasts_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: str) -> None:
    modes = _modes(monkeypatch)
    assert _convert(tmp_path, [PLAIN, other]) == [_cast(PLAIN), _cast(other)]
    assert modes == [FAST, "exact"]


@pytest.mark.parametrize("zoned", ["2020-04-01 00:00:28+08:00", "2020-04-01 00:00:28Z",
                                   "2020-04-01 00:00:28 UTC", "2020-04-01 00:00:28+0800"])
def test_a_zone_in_a_clock_column_is_refused_with_its_line(tmp_path: Path, zoned: str) -> None:
    with pytest.raises(SchemaDriftError) as caught:
        _convert(tmp_path, [PLAIN, PLAIN, zoned])
    [problem] = caught.value.problems
    assert (problem.line, problem.column) == (4, "submit_time")
    assert "carries a UTC offset or zone" in problem.message
