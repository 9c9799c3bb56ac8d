"""A clock written without its offset, read as the one UTC offset its zone has over the
table's times: the same instants as the zone's rules, row for row, and the rules
themselves wherever the offset changes in the span (or the span is too long to tell)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

import duckdb
import pytest

from mltraces import jobmap, requestmap
from mltraces.mapping import Constants

HELIOS = jobmap.job_table("helios.jobs")


def _table(con: duckdb.DuckDBPyConnection, submits: list[datetime | None],
           run: timedelta = timedelta(hours=1)) -> str:
    """Helios's job columns, each job starting a minute after it was submitted."""
    con.execute("CREATE OR REPLACE TABLE jobs AS SELECT 'venus' AS cluster, CAST(i - 1 AS BIGINT) "
                "AS job_id, 'u' AS \"user\", 'vc' AS vc, 1::BIGINT AS gpu_num, 2::BIGINT AS "
                "cpu_num, 1::BIGINT AS node_num, 'COMPLETED' AS state, s AS submit_time, "
                "s + INTERVAL 1 MINUTE AS start_time, s + INTERVAL 1 MINUTE + ? AS end_time "
                "FROM (SELECT unnest(?::TIMESTAMP[]) AS s, generate_subscripts(?::TIMESTAMP[], 1) "
                "AS i)", [run, submits, submits])
    return "jobs"


def _names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("DESCRIBE jobs").fetchall()]


def _prepared(con: duckdb.DuckDBPyConnection, zone: str) -> tuple[Constants, str, str]:
    """(constants, the part's prepared SELECT, the mapping's own SELECT) for ``zone``."""
    entry = dataclasses.replace(HELIOS, zone=zone)
    names = _names(con)

    def scalar(sql: str) -> object:
        return con.execute(f"SELECT {sql}").fetchone()[0]  # type: ignore[index]

    constants = jobmap.prepare_constants(entry, "jobs", names, scalar)
    return (constants, jobmap.select_sql(entry, "jobs", names, constants=constants),
            jobmap.select_sql(entry, "jobs", names))


def _differences(con: duckdb.DuckDBPyConnection, one: str, other: str) -> int:
    return con.execute(f"SELECT (SELECT count(*) FROM (({one}) EXCEPT ALL ({other}))) + "
                       f"(SELECT count(*) FROM (({other}) EXCEPT ALL ({one})))").fetchone()[0]


def _spread(start: datetime, days: float, count: int = 400) -> list[datetime | None]:
    """``count`` local times over ``days`` from ``start``, with microseconds, and a NULL."""
    step = timedelta(days=days) / count
    return [start + step * i + timedelta(microseconds=7 * i + 1) for i in range(count)] + [None]


@pytest.mark.parametrize(("zone", "start", "days", "offset_h"), [
    ("Asia/Shanghai", datetime(2020, 3, 1), 200, 8),  # Helios: no change since 1991
    ("UTC", datetime(2024, 5, 10), 7, 0),  # Azure's week
    ("America/Los_Angeles", datetime(2017, 4, 1), 180, -7),  # a summer: daylight time only
    ("Asia/Kolkata", datetime(2001, 1, 1), 3000, 5.5),  # a half-hour offset
])
def test_one_offset_over_the_span_gives_the_zones_own_instants(zone, start, days,
                                                               offset_h) -> None:
    con = duckdb.connect()
    _table(con, _spread(start, days))
    constants, fast, rules = _prepared(con, zone)
    assert constants.offset_us == int(offset_h * 3600e6)
    assert "make_timestamptz" in fast and "timezone(" not in fast
    assert _differences(con, fast, rules) == 0
    assert con.execute(f"SELECT count(*) FROM ({fast})").fetchone()[0] == 401


@pytest.mark.parametrize(("zone", "start", "days"), [
    ("America/Los_Angeles", datetime(2017, 8, 1), 150),  # Philly: across 2017-11-05
    ("America/Los_Angeles", datetime(2017, 1, 1), 364),  # winter to winter: summer between
    ("Australia/Lord_Howe", datetime(2020, 3, 20), 30),  # a half-hour change, 2020-04-05
    ("Europe/London", datetime(2021, 3, 28, 0, 50), 0.1),  # 01:00 -> 02:00 in the span
    ("Asia/Shanghai", datetime(1980, 1, 1), 365.25 * 25),  # daylight time 1986 to 1991
    ("UTC", datetime(1990, 1, 1), 365.25 * 30),  # one offset, but too long a span to probe
])
def test_a_changing_offset_keeps_the_zones_rules(zone, start, days) -> None:
    con = duckdb.connect()
    _table(con, _spread(start, days))
    constants, fast, rules = _prepared(con, zone)
    assert constants.offset_us is None
    assert "timezone(" in fast and "make_timestamptz" not in fast
    assert _differences(con, fast, rules) == 0


def test_a_change_after_the_last_sample_of_the_span_is_seen() -> None:
    """The probe's samples include the latest time itself, not only every 15 minutes."""
    con = duckdb.connect()
    # Los Angeles fell back at 02:00 daylight time: local 00:59 is -7 h, 01:00 on -8 h (the
    # zone's rules read the repeated hour as standard time)
    _table(con, [datetime(2017, 11, 5, 0, 49)], run=timedelta(minutes=14))  # ends 01:04
    constants, fast, rules = _prepared(con, "America/Los_Angeles")
    assert constants.offset_us is None
    assert _differences(con, fast, rules) == 0


def test_infinite_and_missing_times_keep_the_zones_rules() -> None:
    con = duckdb.connect()
    _table(con, [datetime(2020, 5, 1), None])
    con.execute("UPDATE jobs SET end_time = 'infinity' WHERE job_id = 0")
    constants, fast, rules = _prepared(con, "Asia/Shanghai")
    assert constants.offset_us is None and _differences(con, fast, rules) == 0
    _table(con, [None, None])
    constants, fast, rules = _prepared(con, "Asia/Shanghai")
    assert constants.offset_us is None and constants.origin == "CAST(NULL AS DOUBLE)"
    assert _differences(con, fast, rules) == 0


def test_the_offset_of_a_request_clock_is_found_the_same_way() -> None:
    entry = requestmap.request_tables()["azure_llm.code_2023"]
    assert entry.zone == "UTC"
    con = duckdb.connect()
    con.execute("CREATE TABLE log AS SELECT i AS line, TIMESTAMP '2023-11-16 00:00:00' + "
                "to_microseconds(i * 1234567) AS \"TIMESTAMP\", 10 AS ContextTokens, "
                "2 AS GeneratedTokens FROM range(500) t(i)")
    names = [r[0] for r in con.execute("DESCRIBE log").fetchall()]

    def scalar(sql: str) -> object:
        return con.execute(f"SELECT {sql}").fetchone()[0]  # type: ignore[index]

    constants = requestmap.prepare_constants(entry, "log", names, scalar)
    assert constants.offset_us == 0 and constants.offset_keys == ("arrival",)
    fast = requestmap.select_sql(entry, "log", names, constants=constants)
    assert _differences(con, fast, requestmap.select_sql(entry, "log", names)) == 0
