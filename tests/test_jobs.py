"""``mltraces.jobs``: every mapped job table in one schema, its mapping format and its rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
import synthetic
from catalog_fixtures import (  # noqa: F401
    KALOS,
    REAL_TABLES,
    SEREN,
    loopback_only,
    real_catalog,
    rows,
    scalar,
)

from mltraces import jobmap
from mltraces.catalog import connect
from mltraces.catalog.validation import failed, validate
from mltraces.errors import PartialViewWarning, RegistryError


def _columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {relation}").fetchall()]


# --------------------------------------------------------------------------- the mappings


def test_every_shipped_mapping_binds_to_its_table() -> None:
    tables = jobmap.job_tables()
    assert {"itp.jobs", "itp.elasticflow_jobs", "itp.testbed_jobs", SEREN, KALOS,
            "elasticflow.philly_jobs"} <= set(tables)
    for entry in tables.values():
        jobmap.check_binds(entry)  # raises, naming the jobs.json, when it does not
    traces = [t.trace for t in tables.values()]
    assert len(traces) == len(set(traces)), "two tables share a trace name"


def test_the_common_schema_states_are_the_mapping_states() -> None:
    state = jobmap.common_schema().field("state")
    assert tuple(state.constraints["enum"]) == jobmap.STATES


def _mapping(tmp_path: Path, **entry: object) -> Path:
    folder = tmp_path / "itp"
    folder.mkdir(exist_ok=True)
    base = {"table": "itp.jobs", "trace": "itp/mine", "time": {"kind": "relative"},
            "columns": {"job_id": "job_id", "submit": "submission_time", "num_gpu": "num_gpu"}}
    (folder / "jobs.json").write_text(json.dumps({"tables": [{**base, **entry}]}))
    return folder


@pytest.mark.parametrize(("entry", "message"), [
    ({"time": {"kind": "wallclock"}}, "time must be"),
    ({"time": {"kind": "unix", "zone": "UTC"}}, "zone applies to clock times only"),
    ({"time": {"kind": "clock", "origin": "2020-01-01 00:00:00"}}, "with its UTC offset"),
    ({"columns": {"job_id": "job_id", "num_gpu": "num_gpu", "gpus": "x"}},
     r"(?s)unknown columns \['gpus'\].*columns lack \['submit'\]"),
    ({"columns": {"job_id": "j", "submit": "s", "num_gpu": "g", "state": "st"}},
     "columns.state needs a states map"),
    ({"columns": {"job_id": "j", "submit": "s", "num_gpu": "g", "state": "st"},
      "states": {"Pass": "DONE"}}, "map to unknown states"),
    ({"columns": {"job_id": "j", "submit": "s", "num_gpu": "g", "start": "a", "end": "b",
                  "duration": "d"}}, "drop duration"),
    ({"trace": "acme/mine"}, "trace must be 'itp/NAME'"),
    ({"table": "zeus.train"}, "table must be a table of this source"),
    ({"replay": ["all", "{user}"]}, "replay must list trace names"),
    ({"capacity": {"gpus": 0, "gpus_per_node": 8}}, "capacity.gpus must be a positive"),
    ({"capacity": {"table": "acme.x", "gpus": "sum(g)", "gpus_per_node": 8}},
     "capacity.table must be a table of 'itp'"),
    ({"warnings": {"end_after_start": "why"}}, "warnings name no common rule"),
    ({"colour": "blue"}, r"unknown keys \['colour'\]"),
])
def test_a_bad_mapping_is_refused_with_what_to_fix(tmp_path: Path, entry: dict, message: str
                                                   ) -> None:
    with pytest.raises(RegistryError, match=message):
        jobmap.load_mapping(_mapping(tmp_path, **entry))


def test_a_mapping_that_names_no_column_of_its_table_fails_to_bind(tmp_path: Path) -> None:
    folder = _mapping(tmp_path, columns={"job_id": "job_id", "submit": "submitted",
                                         "num_gpu": "num_gpu"})
    [entry] = jobmap.load_mapping(folder)
    with pytest.raises(RegistryError, match=r"columns.submit: the expression 'submitted' reads "
                                            "'submitted', which is not a column of the table"):
        jobmap.check_binds(entry)


def test_clock_times_without_an_offset_need_their_zone(tmp_path: Path) -> None:
    [entry] = jobmap.load_mapping(_mapping(tmp_path, time={"kind": "clock"}, columns={
        "job_id": "job_id", "submit": "TIMESTAMP '2021-01-01' + to_seconds(submission_time)",
        "num_gpu": "num_gpu"}))
    with pytest.raises(RegistryError, match="has no UTC offset; declare the zone"):
        jobmap.check_binds(entry)
    [zoned] = jobmap.load_mapping(_mapping(tmp_path, time={"kind": "clock",
                                                           "zone": "America/Los_Angeles"},
                                           columns=entry.columns))
    jobmap.check_binds(zoned)


# --------------------------------------------------------------------------- real data

@pytest.fixture
def real_cache(real_catalog, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    monkeypatch.setenv("MLTRACES_CACHE", str(real_catalog.cache))
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    return real_catalog.cache



def test_the_view_holds_every_real_job_table_row_for_row(real_catalog, real_cache) -> None:  # noqa: F811
    con = connect()  # every table from the session cache: nothing is fetched
    try:
        counts = dict(rows(con, "SELECT trace, count(*) FROM mltraces.jobs GROUP BY 1"))
        for entry in jobmap.job_tables().values():  # copies are served by name only
            if entry.copy_of and entry.table in REAL_TABLES:
                assert entry.trace not in counts
                counts[entry.trace] = scalar(
                    con, f"SELECT count(*) FROM mltraces.jobs_of('{entry.trace}')")
        for table, entry in jobmap.job_tables().items():
            if table in REAL_TABLES:
                assert counts[entry.trace] == scalar(real_catalog.con,
                                                     f"SELECT count(*) FROM {table}")
        assert _columns(con, "mltraces.jobs") == [
            (f.name, "TIMESTAMP WITH TIME ZONE" if f.duckdb_type == "TIMESTAMPTZ"
             else f.duckdb_type) for f in jobmap.common_schema().fields]
    finally:
        con.close()


def test_itp_jobs_appear_twice_under_two_trace_names(real_cache: Path) -> None:
    """Asked for by source, the annotated copy is there beside the raw jobs."""
    con = connect()
    try:
        by_trace = dict(rows(con, """SELECT trace, round(sum(gpu_time_s) / 3600, 1)
            FROM mltraces.jobs_of('itp') WHERE trace IN ('itp/raw', 'itp/elasticflow')
            GROUP BY 1"""))
        assert by_trace == {"itp/raw": 1632719.7, "itp/elasticflow": 1632719.7}  # published
        assert rows(con, """SELECT bool_or(synthetic), count(model) > 0 FROM mltraces.jobs
                            WHERE trace = 'itp/raw'""") == [(False, False)]
        assert rows(con, """SELECT count(*), count(submit_time), count(queue_s),
            count(*) FILTER (WHERE state = 'UNKNOWN'), min(copy_of)
            FROM mltraces.jobs_of('itp/elasticflow') WHERE synthetic""") == [
            (69351, 0, 0, 69351, "itp/raw")]
    finally:
        con.close()


def test_a_partly_fetched_view_says_what_is_missing_and_how_to_fetch_it(real_cache) -> None:
    con = connect()
    try:
        state, reason = rows(con, "SELECT state, reason FROM mltraces.status "
                                  "WHERE table_name = 'mltraces.jobs'")[0]
        assert state == "partial"
        # every mapped trace whose files are absent here is named, with one fetch command
        assert "acme/kalos, acme/seren" in reason and "(run `mltraces fetch acme " in reason
    finally:
        con.close()


def test_a_partial_view_in_python_warns_with_the_fetch_command(acme_files) -> None:
    """A Python query filtered to a missing trace returns no rows: the connect says why."""
    message = (r"mltraces.jobs is partial: .*itp/raw.* not fetched \(run `mltraces fetch .*itp"
               r".*jobs_of")
    with pytest.warns(PartialViewWarning, match=message):
        con = connect(["mltraces.jobs", SEREN, KALOS], local=acme_files)
    con.close()
    with pytest.warns(PartialViewWarning, match=message):
        connect(local=acme_files).close()  # nothing named: every table, the view too


def test_jobs_of_a_trace_that_is_not_fetched_raises_where_a_filter_returns_nothing(
        acme_files) -> None:
    con = connect(["mltraces.jobs", SEREN, KALOS], local=acme_files)
    try:
        # the plain filter: DuckDB proves it empty from the view's constant traces
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs WHERE trace = 'itp/raw'") == 0
        for name in ("itp/raw", "itp"):  # a trace, or its source
            with pytest.raises(duckdb.Error, match=r"lacks .*itp/raw.* not fetched \(run "
                                                   r"`mltraces fetch .*itp"):
                con.execute("SELECT count(*) FROM mltraces.jobs_of(?) WHERE cluster = 'x'",
                            [name]).fetchall()
        with pytest.raises(duckdb.Error, match=r"no trace or source it's; known traces and "
                                               r"sources: acme, acme/kalos"):
            con.execute("FROM mltraces.jobs_of('it''s')").fetchall()
        with pytest.raises(duckdb.Error, match=r"no trace or source 42; known"):
            con.execute("FROM mltraces.jobs_of(42)").fetchall()
        for name in ("acme/kalos", "acme"):
            mine = con.execute("FROM mltraces.jobs_of(?) ORDER BY ALL", [name]).fetchall()
            assert mine == rows(con, f"FROM mltraces.jobs WHERE trace LIKE '{name}%' ORDER BY ALL")
        assert scalar(con, "SELECT count(*) FROM mltraces.jobs_of('acme/kalos')") > 0
    finally:
        con.close()


def test_a_view_with_nothing_fetched_raises_the_fetch_command() -> None:
    con = connect()  # an empty cache
    try:
        with pytest.raises(duckdb.Error, match=r"mltraces.jobs lacks .* \(run `mltraces fetch "):
            con.execute("SELECT count(*) FROM mltraces.jobs").fetchall()
    finally:
        con.close()


# --------------------------------------------------------------------------- synthetic



def test_clock_traces_get_instants_seconds_and_recomputed_times(acme_files) -> None:
    with pytest.warns(PartialViewWarning):
        con = connect(["mltraces.jobs", SEREN, KALOS], local=acme_files)
    try:
        assert scalar(con, "SELECT state FROM mltraces.status WHERE table_name = "
                           "'mltraces.jobs'") == "partial"  # ITP and the artifact: not fetched
        [(first, zero, same)] = rows(con, """SELECT min(j.submit_time) = min(k.submit_time),
            min(j.submit_s), bool_and(j.submit_time = k.submit_time)
            FROM mltraces.jobs j JOIN acme.kalos_jobs k USING (job_id)
            WHERE j.trace = 'acme/kalos'""")
        assert first and zero == 0 and same
        # Kalos's published duration includes the queue: run_s is recomputed, never copied
        assert rows(con, """SELECT count(*) FROM mltraces.jobs j JOIN acme.kalos_jobs k
            USING (job_id) WHERE j.trace = 'acme/kalos' AND k.end_time IS NOT NULL
            AND (j.run_s <> epoch(k.end_time) - epoch(k.start_time)
                 OR j.queue_s <> k.queue OR j.gpu_time_s <> j.run_s * k.gpu_num)""") == [(0,)]
        assert rows(con, """SELECT state, state_raw, count(run_s) FROM mltraces.jobs
            WHERE trace = 'acme/kalos' AND state = 'RUNNING' GROUP BY ALL""") == [
            ("RUNNING", "RUNNING", 0)]
        assert scalar(con, """SELECT count(*) FROM mltraces.jobs j JOIN acme.seren_jobs s
            USING (job_id) WHERE j.trace = 'acme/seren' AND j.mem_gb IS NULL
            AND j.workload_type = s.type AND j.num_cpu = s.cpu_num""") == 300
    finally:
        con.close()


def test_validate_names_the_rows_that_break_the_common_rules(tmp_path: Path) -> None:
    lines = synthetic.write_seren_trace(tmp_path / "s.csv", 20, seed=5).read_text().splitlines()
    lines[3] = synthetic.edit_cell(lines[3], "state", "OUT_OF_MEMORY")  # not in the state map
    start = synthetic.SEREN_COLUMNS.index("start_time")
    cells = lines[5].split(",")
    cells[start] = "2020-01-01 00:00:00+08:00"  # starts before it was submitted
    lines[5] = ",".join(cells)
    path = tmp_path / "trace_seren.csv"
    path.write_text("\n".join(lines) + "\n")
    report = validate([SEREN], local={SEREN: path})
    found = report[(report.failing_rows > 0) & report.rule.str.startswith("jobs: ")]
    by_rule = {r.rule: r for r in found.itertuples()}
    assert "jobs: check state_known" in by_rule
    assert by_rule["jobs: check state_known"].examples[0].startswith("trace_seren.csv line 4:")
    assert by_rule["jobs: check start_not_before_submit"].examples[0].startswith(
        "trace_seren.csv line 6:")
    assert failed(report)


def test_sql_names_the_missing_traces_and_refuses_a_query_about_one(real_cache, capsys) -> None:
    from mltraces.cli import main

    assert main(["sql", "SELECT count(*) AS n FROM mltraces.jobs WHERE trace = 'itp/raw'",
                 "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["n", "69351"]
    # every trace whose files are absent here (AcmeTrace's, and the synthetic-only ones)
    assert re.search(r"note: mltraces.jobs lacks \d+ traces: acme/kalos, acme/seren(, [\w/-]+)* "
                     r"not fetched \(run `mltraces fetch acme( [\w-]+)*`\)", captured.err)
    assert main(["sql", "SELECT count(*) FROM mltraces.jobs WHERE trace = 'acme/kalos'"]) == 1
    assert "the query names acme/kalos: mltraces.jobs lacks 1 trace: acme/kalos not fetched " \
           "(run `mltraces fetch acme`)" in capsys.readouterr().err


def test_figure_data_over_the_view_is_cached_and_keyed_by_the_mapping(real_cache) -> None:
    from mltraces.figures import store

    sql = "SELECT trace, count(*) AS n FROM mltraces.jobs GROUP BY 1 ORDER BY 1"
    con = connect()
    try:
        served = store.query(con, sql)
        assert "figure-data" in served.sql_query()  # the view's tables are Parquet: cached
        assert dict(served.fetchall())["itp/raw"] == 69351
        # the view reads each member's materialised part, whose name carries the hash of
        # its mapping (tests/test_jobs_parts.py): the mapping is part of the key
        files = store.identity(con, sql)
        assert files and all(f.name.startswith("mltraces.jobs@") for f in files)
    finally:
        con.close()


def test_validating_the_view_with_nothing_fetched_says_why(capsys) -> None:
    from mltraces.cli import main

    assert main(["validate", "mltraces.jobs"]) == 0
    out = capsys.readouterr().out
    assert "[skipped] view: not checked" in out and "run `mltraces fetch" in out
