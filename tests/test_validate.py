"""Validation: every schema rule in SQL, and every kind of bad input reported clearly.

Bad inputs are made from a synthetic Seren trace (the upstream format) by editing
its text: each must yield a clear report or error, never a half-built view or a
damaged cache.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import synthetic
from catalog_fixtures import REAL_TABLES, loopback_only, real_catalog, rows  # noqa: F401
from synthetic import edit_cell, single_finding

from mltraces import catalog
from mltraces.catalog import connect
from mltraces.catalog.validation import failed, validate
from mltraces.cli import main
from mltraces.registry import all_sources

SEREN = "acme.seren_jobs"


@pytest.fixture
def seren_lines(tmp_path: Path) -> list[str]:
    path = synthetic.write_seren_trace(tmp_path / "good.csv", 40, seed=5)
    return path.read_text().splitlines()


def _write(tmp_path: Path, lines: list[str], name: str = "trace_seren.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _cache_is_clean(cache: Path) -> None:
    """A failed build leaves no Parquet, no temporary file and no sidecar behind."""
    leftovers = [p.name for p in (cache / catalog.TABLES_DIR).glob(f"{SEREN}-*")
                 if not p.name.endswith(".lock")]
    assert leftovers == []
    assert not list((cache / catalog.TABLES_DIR).glob("convert-*"))


# --------------------------------------------------------------------------- real data


def test_real_tables_have_no_errors(real_catalog, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("MLTRACES_CACHE", str(real_catalog.cache))
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")  # everything needed is in the session cache
    report = validate(REAL_TABLES)
    assert not failed(report), report[report.failing_rows != 0]
    warned = report[(report.severity == "warning") & (report.failing_rows > 0)]
    # the known upstream anomalies, each a warning: the summary's job counts, PAI's digitised
    # curve, the ElasticFlow spec file whose name says 1 node x 2 GPUs but holds 2 x 1
    assert set(warned.rule) == {"check job_counts_add_up", "check y_non_decreasing",
                                "check name_matches_shape"}
    pai = single_finding(report, "check y_non_decreasing")
    assert pai["failing_rows"] == 19 and "util_gpu_pai.pkl" in pai["examples"][0]
    spec = single_finding(report, "check name_matches_shape")
    assert spec["failing_rows"] == 1 and "n1g2.csv" in spec["examples"][0]
    expected = {t: n for s in all_sources().values() for t, n in s.expected_rows.items()}
    assert report.checked_rows.max() == max(expected[t] for t in REAL_TABLES)


def test_good_synthetic_file_passes(seren_lines, tmp_path) -> None:
    report = validate([SEREN], local={SEREN: _write(tmp_path, seren_lines)})
    assert not failed(report)
    assert (report.failing_rows == 0).all()


# --------------------------------------------------------------------------- bad rows


def test_duplicated_primary_key(seren_lines, tmp_path) -> None:
    lines = [*seren_lines, seren_lines[7]]
    report = validate([SEREN], local={SEREN: _write(tmp_path, lines)})
    row = single_finding(report, "primary key (job_id)")
    job = int(seren_lines[7].split(",")[0])
    assert row["failing_rows"] == 2 and failed(report)
    assert row["examples"] == [f"trace_seren.csv line 8: job_id={job}",
                               f"trace_seren.csv line {len(lines)}: job_id={job}"]


def test_negative_duration(seren_lines, tmp_path) -> None:
    seren_lines[3] = edit_cell(seren_lines[3], "duration", "-5")
    report = validate([SEREN], local={SEREN: _write(tmp_path, seren_lines)})
    row = single_finding(report, "duration: minimum 0")
    job = int(seren_lines[3].split(",")[0])
    assert row["failing_rows"] == 1 and failed(report)
    assert row["examples"] == [f"trace_seren.csv line 4: job_id={job}, duration=-5"]


def test_unknown_enum_value(seren_lines, tmp_path) -> None:
    seren_lines[5] = edit_cell(seren_lines[5], "state", "EXPLODED")
    path = _write(tmp_path, seren_lines)
    report = validate([SEREN], local={SEREN: path})
    row = single_finding(report, "state: enum")
    assert row["failing_rows"] == 1 and "state=EXPLODED" in row["examples"][0]
    assert "line 6" in row["examples"][0]
    con = connect(tables=[SEREN], local={SEREN: path})  # bad values load; validate flags them
    assert rows(con, "SELECT count(*) FROM acme.seren_jobs WHERE state = 'EXPLODED'") == [(1,)]


def test_warning_rules_do_not_fail_validation(seren_lines, tmp_path) -> None:
    seren_lines[2] = edit_cell(seren_lines[2], "gpu_time", "1.5")
    report = validate([SEREN], local={SEREN: _write(tmp_path, seren_lines)})
    row = single_finding(report, "check gpu_time_is_duration_times_gpus")
    assert (row["failing_rows"], row["severity"]) == (1, "warning")
    assert not failed(report)


# --------------------------------------------------------------------------- schema drift


def _assert_unavailable(path: Path, isolated_cache: Path, *fragments: str) -> None:
    """The table is unavailable with a clear message; the cache holds nothing for it."""
    con = connect(tables=[SEREN, "acme.kalos_jobs"], local={
        SEREN: path, "acme.kalos_jobs": synthetic.write_kalos_trace(path.with_name("k.csv"), 20)})
    assert rows(con, "SELECT count(*) FROM acme.kalos_jobs") == [(20,)]
    with pytest.raises(Exception) as caught:
        rows(con, "SELECT * FROM acme.seren_jobs")
    message = str(caught.value)
    assert "acme.seren_jobs is unavailable" in message
    for fragment in fragments:
        assert fragment in message
    _cache_is_clean(isolated_cache)


def test_malformed_row(seren_lines, tmp_path, isolated_cache) -> None:
    seren_lines[4] += ",surplus"
    path = _write(tmp_path, seren_lines)
    _assert_unavailable(path, isolated_cache, "trace_seren.csv line 5")
    row = single_finding(validate([SEREN], local={SEREN: path}), "schema drift: malformed row")
    assert row["failing_rows"] == 1 and "line 5" in row["examples"][0]


def test_unparsable_value(seren_lines, tmp_path, isolated_cache) -> None:
    seren_lines[9] = edit_cell(seren_lines[9], "gpu_num", "x8")
    seren_lines[12] = edit_cell(seren_lines[12], "end_time", "yesterday")
    path = _write(tmp_path, seren_lines)
    _assert_unavailable(path, isolated_cache, "line 10, column gpu_num")
    report = validate([SEREN], local={SEREN: path})
    row = single_finding(report, "schema drift: unparsable value")
    assert row["failing_rows"] == 2 and failed(report)
    assert row["examples"][0].startswith("trace_seren.csv line 10, column gpu_num: ")
    assert '"x8"' in row["examples"][0]
    assert row["examples"][1].startswith("trace_seren.csv line 13, column end_time: ")


def test_missing_column(seren_lines, tmp_path, isolated_cache) -> None:
    drop = synthetic.SEREN_COLUMNS.index("queue")
    lines = [",".join(c for i, c in enumerate(line.split(",")) if i != drop)
             for line in seren_lines]
    path = _write(tmp_path, lines)
    _assert_unavailable(path, isolated_cache, "column 'queue' is missing")
    row = single_finding(validate([SEREN], local={SEREN: path}), "schema drift: missing column")
    assert row["examples"][0].startswith("trace_seren.csv, column queue: column 'queue' is missing")


def test_renamed_column(seren_lines, tmp_path, isolated_cache) -> None:
    seren_lines[0] = seren_lines[0].replace("queue", "queue_s")
    path = _write(tmp_path, seren_lines)
    _assert_unavailable(path, isolated_cache, "'queue' appears renamed to 'queue_s'")
    row = single_finding(validate([SEREN], local={SEREN: path}), "schema drift: renamed column")
    assert row["failing_rows"] == 1


def test_extra_column_is_reported_but_the_table_loads(seren_lines, tmp_path) -> None:
    lines = [seren_lines[0] + ",site"] + [line + ",shanghai" for line in seren_lines[1:]]
    path = _write(tmp_path, lines)
    con = connect(tables=[SEREN], local={SEREN: path}, strict=True)
    assert rows(con, "SELECT count(*) FROM acme.seren_jobs") == [(40,)]
    assert "site" not in [r[0] for r in rows(con, "DESCRIBE acme.seren_jobs")]
    report = validate([SEREN], local={SEREN: path})
    row = single_finding(report, "schema drift: extra column")
    assert "unexpected column 'site'" in row["examples"][0] and failed(report)


def test_empty_file(tmp_path, isolated_cache) -> None:
    path = tmp_path / "trace_seren.csv"
    path.write_bytes(b"")
    _assert_unavailable(path, isolated_cache, "the file is empty")
    row = single_finding(validate([SEREN], local={SEREN: path}), "schema drift: empty file")
    assert row["failing_rows"] == 1


def test_header_only_file_is_an_empty_table(seren_lines, tmp_path) -> None:
    path = _write(tmp_path, seren_lines[:1])
    con = connect(tables=[SEREN], local={SEREN: path}, strict=True)
    assert rows(con, "SELECT count(*) FROM acme.seren_jobs") == [(0,)]


def test_failed_build_then_good_file(seren_lines, tmp_path, isolated_cache) -> None:
    bad = list(seren_lines)
    bad[3] = edit_cell(bad[3], "gpu_num", "many")
    path = _write(tmp_path, bad)
    with pytest.raises(catalog.SchemaDriftError):
        connect(tables=[SEREN], local={SEREN: path}, strict=True)
    _cache_is_clean(isolated_cache)
    path.write_text("\n".join(seren_lines) + "\n")
    con = connect(tables=[SEREN], local={SEREN: path}, strict=True)
    assert rows(con, "SELECT count(*) FROM acme.seren_jobs") == [(40,)]


# --------------------------------------------------------------------------- unsafe pickle


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_forbidden_pickle_global_in_util_cdf(http_mirror, upstream_dir, tmp_path, isolated_cache
                                              ) -> None:
    source = next(upstream_dir.rglob("util_pkl"))
    folder = tmp_path / "util_pkl"
    folder.mkdir()
    for path in source.glob("*.pkl"):
        (folder / path.name).write_bytes(path.read_bytes())
    marker = tmp_path / "executed"
    (folder / "ib_seren.pkl").write_bytes(pickle.dumps([np.zeros(3), _Evil(marker)]))
    local = {"acme.util_cdf": folder}
    con = connect(tables=["acme.util_cdf", "acme.cluster_summary"], local=local)
    assert rows(con, "SELECT count(*) FROM acme.cluster_summary") == [(5,)]
    with pytest.raises(Exception, match=r"ib_seren\.pkl: refusing to unpickle global"):
        rows(con, "SELECT count(*) FROM acme.util_cdf")
    assert not marker.exists()
    assert not list((isolated_cache / catalog.TABLES_DIR).glob("acme.util_cdf-*.parquet"))
    report = validate(["acme.util_cdf"], local=local)
    assert failed(report) and "system (nothing was imported" in report.examples.iloc[0][0]
    assert not marker.exists()


def test_util_pkl_curves_that_are_not_arrays_are_a_finding(upstream_dir, tmp_path) -> None:
    source = next(upstream_dir.rglob("util_pkl"))
    folder = tmp_path / "util_pkl"
    folder.mkdir()
    for path in source.glob("*.pkl"):
        (folder / path.name).write_bytes(path.read_bytes())
    ragged = [[0.0, [1.0, 2.0]], [0.5, 1.0]]  # one x/y pair, nested lists where arrays belong
    (folder / "gpu_power_seren.pkl").write_bytes(pickle.dumps(ragged))
    report = validate(["acme.util_cdf"], local={"acme.util_cdf": folder})
    assert failed(report)
    assert "gpu_power_seren.pkl" in report.examples.iloc[0][0]
    assert "list/list, not numpy arrays" in report.examples.iloc[0][0]


# --------------------------------------------------------------------------- CLI


def test_cli_exit_status_and_report(seren_lines, tmp_path, capsys) -> None:
    good = _write(tmp_path, seren_lines, "good.csv")
    assert main(["validate", SEREN, "--local", f"{SEREN}={good}"]) == 0
    assert "0 with findings" in capsys.readouterr().out
    seren_lines[6] = edit_cell(seren_lines[6], "duration", "-1")
    bad = _write(tmp_path, seren_lines, "bad.csv")
    assert main(["validate", SEREN, "--local", f"{SEREN}={bad}"]) == 1
    captured = capsys.readouterr()
    assert "[error] duration: minimum 0: 1 failing rows" in captured.out
    assert "bad.csv line 7" in captured.out
    assert "validation failed" in captured.err
    assert main(["validate", SEREN, "--local", f"{SEREN}={bad}", "--format", "csv"]) == 1
    assert "duration: minimum 0,error,1,40" in capsys.readouterr().out


@pytest.mark.upstream
def test_a_verified_table_is_held_to_the_rows_its_source_promises(real_catalog,  # noqa: F811
                                                                  monkeypatch) -> None:
    import dataclasses

    from mltraces.registry import set_override

    monkeypatch.setenv("MLTRACES_CACHE", str(real_catalog.cache))
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    report = validate(["zeus.train"])
    assert single_finding(report, "expected rows")["failing_rows"] == 0
    sources = all_sources()
    zeus = dataclasses.replace(sources["zeus"], expected_rows={"zeus.train": 3760})
    set_override({**sources, "zeus": zeus})
    try:
        found = single_finding(validate(["zeus.train"]), "expected rows")
    finally:
        set_override(None)
    assert found["failing_rows"] == 1 and found["severity"] == "error"
    assert found["examples"] == ["expected 3,760 rows, found 3,759"]
