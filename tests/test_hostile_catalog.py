"""Hostile inputs against the catalog (issue 10): one test per attack, inputs made here.

Each test reproduces an attack that broke the catalog and checks the behaviour
after the fix: derived Parquet outliving tampered inputs, corrupt Parquet, glob
characters in local paths, a huge header line, values loaded wrong, files
deleted underneath an open view, tracebacks, disk full, drifting line numbers,
a ragged line counted eight times, leftovers of killed runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import synthetic
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401
from synthetic import edit_cell, single_finding

from mltraces.catalog import connect, materialize, verify_tables
from mltraces.catalog import store as store_module
from mltraces.catalog.validation import failed, validate
from mltraces.cli import main

SEREN = "acme.seren_jobs"


def _seren(path: Path, rows_: int = 30, seed: int = 3) -> list[str]:
    return synthetic.write_seren_trace(path, rows_, seed=seed).read_text().splitlines()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _tamper(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes in place, keeping the size and the mtime (a stamp still vouches)."""
    assert len(old) == len(new)
    stat = path.stat()
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _parquet_count(parquet: Path, where: str) -> int:
    import duckdb

    from mltraces.schema import sql_path

    return duckdb.connect().execute(
        f"SELECT count(*) FROM read_parquet({sql_path(parquet)}) WHERE {where}").fetchall()[0][0]


# --------------------------------------------------------------------------- 2: derived data


def test_parquet_of_tampered_bytes_goes_with_them(http_mirror, capsys) -> None:
    from mltraces.download import fetch_file

    csv = fetch_file("zeus/summary_train.csv")
    _tamper(csv, b"cifar100,", b"cifar900,")
    bad = materialize("zeus.train")  # built from the tampered bytes (the stamp still vouched)
    assert _parquet_count(bad.parquet, "dataset = 'cifar900'") == 1
    assert main(["verify", "zeus/summary_train.csv"]) == 1  # deletes the file...
    out = capsys.readouterr().out
    assert "corrupt  zeus/summary_train.csv" in out
    assert f"stale    tables/{bad.parquet.name}" in out and not bad.parquet.exists()  # ...and this
    con = connect(["zeus.train"])  # fetched again: the good bytes, the same registry key
    assert scalar(con, "SELECT count(*) FROM zeus.train WHERE dataset = 'cifar900'") == 0
    assert scalar(con, "SELECT count(*) FROM zeus.train") == 3_759


def test_parquet_is_never_served_for_a_replaced_input(http_mirror) -> None:
    """No verify run: the input is deleted and fetched again out of band."""
    from mltraces.download import fetch_file

    csv = fetch_file("zeus/summary_train.csv")
    _tamper(csv, b"cifar100,", b"cifar900,")
    bad = materialize("zeus.train")
    csv.unlink()
    good = materialize("zeus.train")
    assert good.parquet == bad.parquet  # same key: the registry pins the same hash
    assert _parquet_count(good.parquet, "dataset = 'cifar900'") == 0


def test_parquet_of_a_tampered_archive_member_goes_with_it(http_mirror, capsys) -> None:
    from mltraces.download import fetch_members
    from mltraces.download.archives import discard

    member = fetch_members("itp/elasticflow-traces.tar.gz")["195job.csv"]
    _tamper(member, b"deepspeech2", b"deepspeech9")
    bad = materialize("itp.testbed_jobs")
    assert _parquet_count(bad.parquet, "model_name = 'deepspeech9'") >= 1
    discard(member.parent)  # unpacked again on next use: same size, same mtime from the tar
    good = materialize("itp.testbed_jobs")
    assert _parquet_count(good.parquet, "model_name = 'deepspeech9'") == 0
    member = fetch_members("itp/elasticflow-traces.tar.gz")["195job.csv"]
    _tamper(member, b"deepspeech2", b"deepspeech9")
    bad = materialize("itp.testbed_jobs")
    assert main(["verify", "itp"]) == 1
    assert f"stale    tables/{bad.parquet.name}" in capsys.readouterr().out
    con = connect(["itp.testbed_jobs"])
    tampered = "SELECT count(*) FROM itp.testbed_jobs WHERE model_name = 'deepspeech9'"
    assert scalar(con, tampered) == 0


# --------------------------------------------------------------------------- 3: corrupt Parquet


def test_truncated_parquet_is_rebuilt_and_other_tables_keep_working(http_mirror) -> None:
    first = materialize("zeus.train")
    materialize("zeus.power")
    data = first.parquet.read_bytes()
    first.parquet.write_bytes(data[: len(data) // 2])
    con = connect(["zeus.train", "zeus.power"], strict=True)
    assert scalar(con, "SELECT count(*) FROM zeus.train") == 3_759
    assert scalar(con, "SELECT count(*) FROM zeus.power") == 1_609


def test_corrupt_parquet_without_inputs_is_that_tables_problem(http_mirror, monkeypatch) -> None:
    from mltraces.download import local_path
    from mltraces.registry import get_file

    first = materialize("zeus.train")
    materialize("zeus.power")
    first.parquet.write_bytes(b"PAR1" + b"\0" * 100)
    local_path(get_file("zeus/summary_train.csv")).unlink()
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    con = connect(["zeus.train", "zeus.power"])
    assert scalar(con, "SELECT count(*) FROM zeus.power") == 1_609
    state, reason = rows(con, "SELECT state, reason FROM mltraces.status "
                              "WHERE table_name = 'zeus.train'")[0]
    assert state == "unavailable" and "MLTRACES_OFFLINE" in reason


def test_verify_rehashes_converted_tables(http_mirror) -> None:
    built = materialize("zeus.power")
    data = bytearray(built.parquet.read_bytes())
    data[100] ^= 0xFF  # same size, footer intact: only the recorded hash can tell
    built.parquet.write_bytes(bytes(data))
    checks = {c.path: c for c in verify_tables(rehash=True)}
    assert checks[built.parquet].status == "corrupt" and "sha256" in checks[built.parquet].detail
    assert not built.parquet.exists()
    assert materialize("zeus.power").rows == 1_609


# --------------------------------------------------------------------------- 4: literal paths

NAMES = ["trace[12].csv", "tr*ce.csv", "tr?ce.csv", "a, b.csv", "it's \"quoted\".csv",
         "ünïcødé trace.csv", "back\\slash [1].csv"]


@pytest.mark.parametrize("name", NAMES)
def test_local_path_is_that_file_literally(tmp_path, name) -> None:
    folder = tmp_path / "dir [x] *?"
    folder.mkdir()
    for decoy in ("trace1.csv", "trace2.csv", "trace.csv", "trxce.csv", "a.csv"):
        synthetic.write_seren_trace(folder / decoy, 7, seed=1)
    path = folder / name
    synthetic.write_seren_trace(path, 11, seed=2)
    con = connect([SEREN], local={SEREN: path}, strict=True)
    assert scalar(con, "SELECT count(*) FROM acme.seren_jobs") == 11


def test_a_cache_folder_with_glob_characters_works(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cache [team] *?"
    monkeypatch.setenv("MLTRACES_CACHE", str(cache))
    (tmp_path / "cache [team] *?x").mkdir()  # a folder the pattern would also match
    path = synthetic.write_seren_trace(tmp_path / "trace_seren.csv", 9, seed=2)
    con = connect([SEREN], local={SEREN: path}, strict=True)
    assert scalar(con, "SELECT count(*) FROM acme.seren_jobs") == 9
    assert not failed(validate([SEREN], local={SEREN: path}))


def test_commas_in_local_paths_on_the_command_line_and_in_the_environment(
        tmp_path, monkeypatch, capsys) -> None:
    path = synthetic.write_seren_trace(tmp_path / "jobs, seren.csv", 13, seed=2)
    kalos = synthetic.write_kalos_trace(tmp_path / "k,alos.csv", 5, seed=2)
    query = "SELECT count(*) AS n FROM acme.seren_jobs"
    assert main(["sql", query, "--format", "csv", "--local", f"{SEREN}={path}"]) == 0
    assert capsys.readouterr().out == "n\n13\n"
    monkeypatch.setenv("MLTRACES_LOCAL", f"{SEREN}={path},acme.kalos_jobs={kalos}")
    con = connect([SEREN, "acme.kalos_jobs"], strict=True)
    assert scalar(con, "SELECT count(*) FROM acme.kalos_jobs") == 5


# --------------------------------------------------------------------------- 5: resources


def test_a_huge_header_line_is_refused_in_bounded_memory(tmp_path) -> None:
    path = tmp_path / "trace_seren.csv"
    with path.open("wb") as handle:
        for _ in range(64):
            handle.write(b"x" * (1 << 20))  # 64 MB and no newline
    tracemalloc.start()
    report = validate([SEREN], local={SEREN: path})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 1e6:.0f} MB"
    row = single_finding(report, "schema drift: malformed row")
    assert "longer than 1,048,576 bytes" in row["examples"][0] and failed(report)


def test_a_last_line_longer_than_any_row_is_a_finding(tmp_path) -> None:
    """DuckDB 2.0 silently drops a last line longer than its read buffer (32 MB)."""
    lines = _seren(tmp_path / "good.csv", 3)
    path = tmp_path / "trace_seren.csv"
    with path.open("wb") as handle:
        handle.write(("\n".join(lines) + "\n").encode())
        for _ in range(40):
            handle.write(b"x" * (1 << 20))  # 40 MB, then the end of the file
    report = validate([SEREN], local={SEREN: path})
    row = single_finding(report, "schema drift: malformed row")
    assert row["examples"] == ["trace_seren.csv line 5: the last line is longer than 2,000,000 "
                               "bytes, more than any row (is the file cut or corrupt?)"]
    assert failed(report)
    with pytest.raises(Exception, match="line 5: the last line is longer"):
        connect([SEREN], local={SEREN: path}, strict=True)


# --------------------------------------------------------------------------- 6: wrong data


def test_values_a_column_cannot_hold_are_findings_with_file_line_column(tmp_path) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[4] = edit_cell(lines[4], "gpu_num", "12.5")
    lines[7] = edit_cell(lines[7], "submit_time", "2023-03-01 00:18:22")  # no +08:00
    path = _write(tmp_path / "trace_seren.csv", lines)
    report = validate([SEREN], local={SEREN: path})
    row = single_finding(report, "schema drift: unparsable value")
    assert row["failing_rows"] == 2 and failed(report)
    assert row["examples"][0].startswith("trace_seren.csv line 5, column gpu_num: ")
    assert '"12.5" is not a whole number' in row["examples"][0]
    assert row["examples"][1].startswith("trace_seren.csv line 8, column submit_time: ")
    assert "UTC offset" in row["examples"][1]
    with pytest.raises(Exception, match="line 5, column gpu_num"):  # never loaded as 13
        connect([SEREN], local={SEREN: path}, strict=True)


@pytest.mark.parametrize("value", ["2023-03-01", "2023-03-01 00:18:22", "2023-03-01T00:18"])
def test_an_instant_without_its_offset_is_refused(tmp_path, value) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[6] = edit_cell(lines[6], "end_time", value)
    path = _write(tmp_path / "trace_seren.csv", lines)
    row = single_finding(validate([SEREN], local={SEREN: path}), "schema drift: unparsable value")
    assert row["examples"] == [f'trace_seren.csv line 7, column end_time: "{value}" is not a '
                               "time with a UTC offset such as +08:00 (format %Y-%m-%d %H:%M:%S%z)"]


def test_other_offset_forms_load(tmp_path) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[1] = edit_cell(lines[1], "end_time", "2023-03-01T00:18:22.5Z")
    lines[2] = edit_cell(lines[2], "end_time", "2023-03-01 08:18:22+0800")
    path = _write(tmp_path / "trace_seren.csv", lines)
    con = connect([SEREN], local={SEREN: path}, strict=True)
    got = rows(con, "SELECT strftime(end_time, '%H:%M:%S') FROM acme.seren_jobs LIMIT 2")
    assert got == [("00:18:22",), ("00:18:22",)]


def test_64_bit_integers_load_exactly(tmp_path) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[1] = edit_cell(lines[1], "job_id", str(2**62 + 1))  # a double would round it
    path = _write(tmp_path / "trace_seren.csv", lines)
    con = connect([SEREN], local={SEREN: path}, strict=True)
    assert scalar(con, "SELECT max(job_id) FROM acme.seren_jobs") == 2**62 + 1


def test_nan_and_inf_fail_bounds_and_nul_is_reported(tmp_path) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[3] = edit_cell(lines[3], "gpu_time", "nan")
    lines[5] = edit_cell(lines[5], "gpu_time", "inf")
    lines[9] = edit_cell(lines[9], "user", "u\0x")
    path = _write(tmp_path / "trace_seren.csv", lines)
    report = validate([SEREN], local={SEREN: path})
    bound = single_finding(report, "gpu_time: minimum 0")
    assert bound["failing_rows"] == 2
    assert [e.split(":")[0] for e in bound["examples"]] == ["trace_seren.csv line 4",
                                                            "trace_seren.csv line 6"]
    nul = single_finding(report, "schema drift: NUL character")
    assert nul["examples"] == ["trace_seren.csv line 10, column user: "
                               "the value holds a NUL character"]
    assert failed(report)


# --------------------------------------------------------------------------- 7: open views


def _connect_in_subprocess(cache: Path, path: Path) -> None:
    """Another process: connect to the table (converting it if needed), query, exit."""
    code = ("import mltraces; "
            f"con = mltraces.connect([{SEREN!r}], local={{{SEREN!r}: {str(path)!r}}}, "
            f"strict=True); print(con.execute('SELECT count(*) FROM {SEREN}').fetchall())")
    env = dict(os.environ, MLTRACES_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_an_open_view_survives_a_rebuild_in_another_process(tmp_path, isolated_cache) -> None:
    path = _write(tmp_path / "trace_seren.csv", _seren(tmp_path / "good.csv", 30))
    con = connect([SEREN], local={SEREN: path}, strict=True)
    (old,) = (isolated_cache / "tables").glob(f"{SEREN}-*.parquet")
    _write(path, _seren(tmp_path / "more.csv", 40, seed=4))
    _connect_in_subprocess(isolated_cache, path)  # rebuilds the table, prunes what it can
    assert old.exists()
    assert scalar(con, "SELECT count(*) FROM acme.seren_jobs") == 30  # no "No files found"
    again = connect([SEREN], local={SEREN: path})
    assert scalar(again, "SELECT count(*) FROM acme.seren_jobs") == 40


def test_files_of_a_reader_that_exited_are_pruned(tmp_path, isolated_cache) -> None:
    path = _write(tmp_path / "trace_seren.csv", _seren(tmp_path / "good.csv", 30))
    _connect_in_subprocess(isolated_cache, path)  # leases its file, then exits
    (old,) = (isolated_cache / "tables").glob(f"{SEREN}-*.parquet")
    _write(path, _seren(tmp_path / "more.csv", 40, seed=4))
    _connect_in_subprocess(isolated_cache, path)
    assert not old.exists()
    assert len(list((isolated_cache / "tables").glob(f"{SEREN}-*.parquet"))) == 1


# --------------------------------------------------------------------------- weak spots


def test_non_utf8_header_is_one_line_in_validate_and_sql(tmp_path, capsys) -> None:
    lines = _seren(tmp_path / "good.csv")
    path = tmp_path / "trace_seren.csv"
    path.write_bytes(lines[0].encode().replace(b"user", b"us\xffr") + b"\n"
                     + "\n".join(lines[1:]).encode() + b"\n")
    assert main(["validate", SEREN, "--local", f"{SEREN}={path}"]) == 1
    captured = capsys.readouterr()
    assert "the header is not UTF-8 text (byte 0xff" in captured.out
    assert "Traceback" not in captured.err
    assert main(["sql", "SELECT count(*) FROM acme.seren_jobs", "--local", f"{SEREN}={path}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not UTF-8" in err[0] and "Traceback" not in err[0]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full to fill a disk")
def test_disk_full_during_conversion_is_named_as_such(tmp_path, isolated_cache) -> None:
    from mltraces.catalog import build, plan, store

    path = _write(tmp_path / "trace_seren.csv", _seren(tmp_path / "good.csv"))
    schema = build.get_schema(SEREN)
    planned = plan.plan_for(schema, path)
    target = store.target_path(SEREN, planned.kind, build._conversion_key(schema, planned.keys))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.with_name(f"{target.name}.tmp-{os.getpid()}").symlink_to("/dev/full")  # ENOSPC
    report = validate([SEREN], local={SEREN: path})
    row = single_finding(report, "conversion")
    assert "the disk is full" in row["examples"][0] and "MLTRACES_CACHE" in row["examples"][0]
    assert not (report.rule == "schema drift: malformed row").any()
    assert not target.exists()


def test_line_numbers_count_quoted_newlines(tmp_path) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[2] = edit_cell(lines[2], "user", '"multi\nline\nuser"')  # line 3 spans 3 lines
    lines[6] = edit_cell(lines[6], "duration", "-5")  # row 7: physical line 9
    lines[8] = edit_cell(lines[8], "gpu_num", "x8")  # row 9: physical line 11
    path = _write(tmp_path / "trace_seren.csv", lines)
    report = validate([SEREN], local={SEREN: path})
    assert single_finding(report, "schema drift: unparsable value")["examples"][0].startswith(
        "trace_seren.csv line 11, column gpu_num")
    lines[8] = edit_cell(lines[8], "gpu_num", "8")
    lines[10] += ",surplus"  # row 11: physical line 13
    _write(path, lines)
    report = validate([SEREN], local={SEREN: path})
    assert single_finding(report, "schema drift: malformed row")["examples"][0].startswith(
        "trace_seren.csv line 13:")
    lines[10] = lines[10].removesuffix(",surplus")
    _write(path, lines)
    report = validate([SEREN], local={SEREN: path})
    assert single_finding(report, "duration: minimum 0")["examples"][0].startswith(
        "trace_seren.csv line 9:")


def test_one_ragged_line_is_one_finding(tmp_path) -> None:
    lines = _seren(tmp_path / "good.csv")
    lines[4] = ",".join(lines[4].split(",")[:5])
    path = _write(tmp_path / "trace_seren.csv", lines)
    row = single_finding(validate([SEREN], local={SEREN: path}), "schema drift: malformed row")
    assert row["failing_rows"] == 1
    assert row["examples"] == ["trace_seren.csv line 5: Expected Number of Columns: 13 Found: 5"]


def test_leftovers_of_killed_runs_are_cleaned(tmp_path, isolated_cache) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = int(dead.stdout)
    tables = isolated_cache / "tables"
    (tables / f"convert-{gone}-abc").mkdir(parents=True)
    (tables / f"convert-{gone}-abc" / "big.csv").write_bytes(b"x" * 1000)
    (tables / f"{SEREN}-local-0.parquet.tmp-{gone}").write_bytes(b"partial")
    mine = tables / f"{SEREN}-local-1.parquet.tmp-{os.getpid()}"
    mine.write_bytes(b"in progress")
    path = _write(tmp_path / "trace_seren.csv", _seren(tmp_path / "good.csv"))
    materialize(SEREN, path)
    assert not (tables / f"convert-{gone}-abc").exists()
    assert not (tables / f"{SEREN}-local-0.parquet.tmp-{gone}").exists()
    assert mine.exists()  # its process (this one) is alive


def test_store_leases_only_when_the_set_grows(tmp_path, isolated_cache) -> None:
    path = _write(tmp_path / "trace_seren.csv", _seren(tmp_path / "good.csv"))
    connect([SEREN], local={SEREN: path})
    (lease,) = (isolated_cache / "tables" / ".readers").glob("*.json")
    written = lease.stat().st_mtime_ns
    connect([SEREN], local={SEREN: path})
    assert lease.stat().st_mtime_ns == written  # a warm connect writes nothing
    assert store_module.leased_names(isolated_cache / "tables")
