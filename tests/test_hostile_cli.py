"""The command line under hostile use (issue 24): outputs, odd inputs, settings that lie.

Every input is built here. A hang or a runaway allocation shows as a failed test
within seconds: such cases run as child processes with a time and memory cap
(:mod:`children`).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest
from children import run_cli

from mltraces.cli import main


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """Run the CLI in-process, expect exit 1 and exactly one stderr line; return it."""
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- outputs

QUERY = ["sql", "SELECT 42 AS answer", "--format", "csv"]
VERBS = {  # a cheap run of each verb that writes a result with -o
    "sql": QUERY,
    "schedule": ["schedule", "--list-traces"],
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_an_output_in_a_missing_folder_is_one_line(verb, tmp_path, capsys) -> None:
    target = tmp_path / "no" / "such" / "out.csv"
    err = one_line_error([*VERBS[verb], "-o", str(target)], capsys)
    assert f"cannot write {target}: the folder {target.parent} does not exist" in err
    assert "mkdir -p" in err and not target.parent.exists()


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_an_output_that_is_a_folder_is_one_line(verb, tmp_path, capsys) -> None:
    err = one_line_error([*VERBS[verb], "-o", str(tmp_path)], capsys)
    assert f"cannot write {tmp_path}: it is a folder; name a file in it" in err


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_full_device_is_one_line(verb, capsys) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    err = one_line_error([*VERBS[verb], "-o", "/dev/full"], capsys)
    assert "cannot write /dev/full: No space left on device; the output is incomplete" in err


def test_parquet_to_a_full_device_is_one_line(capsys) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    err = one_line_error(["sql", "SELECT 1 AS x", "--format", "parquet", "-o", "/dev/full"],
                         capsys)
    assert "cannot write /dev/full: No space left on device" in err


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "table"])
def test_an_existing_file_is_replaced_whole_keeping_its_mode(fmt, tmp_path, capsys) -> None:
    target = tmp_path / "result.out"
    target.write_text("old contents\n")
    target.chmod(0o640)
    link = tmp_path / "link.out"
    link.symlink_to(target)
    assert main(["sql", "SELECT 42 AS answer", "--format", fmt, "-o", str(link)]) == 0
    assert capsys.readouterr().err.strip() == f"wrote {link}"
    assert link.is_symlink() and "old contents" not in target.read_bytes().decode(errors="ignore")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.out", "result.out"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch,
                                                             capsys) -> None:
    from mltraces import outputs

    target = tmp_path / "result.csv"
    target.write_text("old contents\n")

    def full(path: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    real = outputs.Output.write_with
    monkeypatch.setattr(outputs.Output, "write_with",
                        lambda self, fill: real(self, lambda p: (fill(p), full(p))))
    err = one_line_error([*QUERY, "-o", str(target)], capsys)
    assert err.endswith(f"cannot write {target}: No space left on device; it was left unchanged")
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.csv"]


def test_a_read_only_existing_file_is_refused_before_the_work(tmp_path, capsys) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    target = tmp_path / "keep.csv"
    target.write_text("mine\n")
    target.chmod(0o444)
    err = one_line_error([*QUERY, "-o", str(target)], capsys)
    assert "the file exists and is read-only" in err and target.read_text() == "mine\n"


def test_schedule_checks_its_output_before_replaying(tmp_path, monkeypatch, capsys) -> None:
    from mltraces.commands import schedule

    def replay(*args: object) -> None:
        raise AssertionError("the replay ran before the output was checked")

    monkeypatch.setattr(schedule, "_replay", replay)
    monkeypatch.setattr(schedule, "open_catalog", replay)
    err = one_line_error(["schedule", "--trace", "itp/cluster10", "-o",
                          str(tmp_path / "gone" / "r.csv")], capsys)
    assert "does not exist" in err


def test_simulate_checks_its_output_before_simulating(tmp_path, monkeypatch, capsys) -> None:
    from mltraces.commands import simulate

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the simulation ran before the output was checked")

    monkeypatch.setattr(simulate, "_traces", never)
    err = one_line_error(["simulate", "-o", str(tmp_path)], capsys)
    assert "it is a folder" in err


def test_a_pipe_nobody_reads_is_refused_at_once(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    run = run_cli([*QUERY, "-o", str(fifo)], seconds=15)
    assert "it is a pipe that nobody reads" in run.one_line_error and run.seconds < 15


def test_a_pipe_with_a_reader_gets_the_result(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    run = run_cli([*QUERY, "-o", str(fifo)], seconds=15)
    reader.join(timeout=15)
    assert run.code == 0 and received == [b"answer\n42\n"]


def test_process_substitution_as_output(tmp_path) -> None:
    """``-o >(cmd)``: the shell hands over ``/dev/fd/N``, a pipe's write end."""
    read_end, write_end = os.pipe()
    try:
        run = run_cli([*QUERY, "-o", f"/dev/fd/{write_end}"], pass_fds=[write_end], seconds=15)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        assert run.code == 0, run.err
        assert pipe.read() == b"answer\n42\n"


def test_figures_output_that_is_a_file_or_unwritable_is_one_line(tmp_path, capsys) -> None:
    afile = tmp_path / "figs"
    afile.write_text("not a folder")
    err = one_line_error(["figures", "zeus", "--only", "zeus_fig1", "-o", str(afile)], capsys)
    assert f"cannot write {afile}: it is not a folder" in err
    if Path("/dev/full").exists():
        err = one_line_error(["figures", "zeus", "-o", "/dev/full"], capsys)
        assert "cannot write /dev/full: it is not a folder" in err


def test_a_figure_is_replaced_whole(tmp_path, monkeypatch) -> None:
    """A figure file is never half-written: the old one stays when saving fails."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mltraces.errors import OutputError
    from mltraces.figures import style

    figure = plt.figure()
    old = tmp_path / "fig.png"
    old.write_bytes(b"old figure")

    def full(self, fname, *args, **kwargs) -> None:
        Path(fname).write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(type(figure), "savefig", full)
    with pytest.raises(OutputError, match=r"cannot write .*fig.png: No space left on device"):
        style.save(figure, tmp_path / "fig", formats=("png",))
    assert old.read_bytes() == b"old figure"
    assert [p.name for p in tmp_path.iterdir()] == ["fig.png"]
    plt.close(figure)


# --------------------------------------------------------------------------- odd inputs

TRAIN_HEADER = b"dataset,network,batch_size,optimizer,learning_rate,run,target_metric,epoch\n"


def _local_query(table: str, path: str) -> list[str]:
    return ["sql", f"SELECT count(*) FROM {table}", "--local", f"{table}={path}"]


def test_process_substitution_as_a_local_file_is_refused_at_once() -> None:
    """``--local t=<(cat f)``: the shell hands over ``/dev/fd/N``, a pipe's read end."""
    read_end, write_end = os.pipe()
    os.write(write_end, TRAIN_HEADER)
    try:
        run = run_cli(_local_query("zeus.train", f"/dev/fd/{read_end}"), pass_fds=[read_end],
                      seconds=15)
    finally:
        os.close(read_end)
        os.close(write_end)
    err = run.one_line_error
    assert "local path for zeus.train is a pipe" in err and "save it to a file" in err


@pytest.mark.parametrize("table", ["zeus.train", "itp.jobs", "acme.gpu_metrics"])
def test_a_fifo_nobody_writes_is_refused_not_waited_on(table: str, tmp_path: Path) -> None:
    fifo = tmp_path / "GPU_UTIL.csv"
    os.mkfifo(fifo)
    run = run_cli(_local_query(table, str(fifo)), seconds=15)
    assert f"local path for {table} is a pipe" in run.one_line_error


@pytest.mark.parametrize("table", ["itp.jobs", "zeus.train"])
def test_an_endless_device_is_refused_in_bounded_time_and_memory(table: str) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    run = run_cli(_local_query(table, "/dev/zero"), seconds=15, memory=2 << 30)
    assert f"local path for {table} is a character device" in run.one_line_error
    assert run.peak_mib < 500


def test_a_local_path_that_is_not_utf8_is_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / os.fsdecode(b"tr\xffain.csv")
    path.write_bytes(TRAIN_HEADER)
    err = one_line_error(_local_query("zeus.train", str(path)), capsys)
    assert "is not UTF-8 text" in err and "tr\\xffain.csv" in err and "ln -s" in err


def test_a_cache_path_that_is_not_utf8_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    cache = tmp_path / os.fsdecode(b"cache-\xfe")
    monkeypatch.setenv("MLTRACES_CACHE", str(cache))
    err = one_line_error(["sql", "SELECT count(*) FROM zeus.power"], capsys)
    assert "MLTRACES_CACHE=" in err and "cache-\\xfe is not UTF-8 text" in err


def test_a_cache_path_duckdb_cannot_open_is_one_line(tmp_path: Path, monkeypatch,
                                                     capsys) -> None:
    if os.sep != "/":
        pytest.skip("a backslash separates folders here")
    monkeypatch.setenv("MLTRACES_CACHE", str(tmp_path / "a\\b[1]"))
    err = one_line_error(["sql", "SELECT count(*) FROM zeus.power"], capsys)
    assert "MLTRACES_CACHE=" in err and "DuckDB cannot open" in err


# --------------------------------------------------------------------------- settings that lie


def _remember_down(cache: Path, host: str, at: float, until: float) -> None:
    import json

    state = cache / "state"
    state.mkdir(parents=True, exist_ok=True)
    record = {host: {"at": at, "until": until, "reason": "connection refused"}}
    (state / "hosts.json").write_text(json.dumps(record))


def test_a_zero_ttl_turns_the_host_memory_off_for_old_records_too(
        fake_server, demo_registry, monkeypatch, isolated_cache: Path) -> None:
    import time

    from fakes import serve, synthetic_file

    from mltraces.download import fetch_file

    data = b"a,b\n" * 10
    file = demo_registry.add(synthetic_file("ttl.csv", data))
    serve(fake_server, file, data)
    host = fake_server.url.split("//", 1)[1]
    _remember_down(isolated_cache, host, time.time(), time.time() + 300)
    monkeypatch.setenv("MLTRACES_HOST_DOWN_TTL", "0")
    assert fetch_file(file, progress=False).read_bytes() == data


def test_a_record_from_a_clock_ahead_does_not_block_the_host(
        fake_server, demo_registry, isolated_cache: Path) -> None:
    import time

    from fakes import serve, synthetic_file

    from mltraces.download import fetch_file

    data = b"a,b\n" * 10
    file = demo_registry.add(synthetic_file("clock.csv", data))
    serve(fake_server, file, data)
    host = fake_server.url.split("//", 1)[1]
    ahead = time.time() + 30 * 86400
    _remember_down(isolated_cache, host, ahead, ahead + 300)
    assert fetch_file(file, progress=False).read_bytes() == data


def test_a_recent_record_says_how_long_ago_and_until_when(isolated_cache: Path,
                                                          monkeypatch) -> None:
    import time

    from mltraces.download import hosts
    from mltraces.errors import HostDownError

    _remember_down(isolated_cache, "example.org", time.time() - 10, time.time() + 10**6)
    monkeypatch.setenv("MLTRACES_HOST_DOWN_TTL", "60")  # the current TTL, not the record's
    with pytest.raises(HostDownError, match=r"unreachable 1\d s ago .*HOST_DOWN_TTL=60"):
        hosts.check("https://example.org/x")
    monkeypatch.setenv("MLTRACES_HOST_DOWN_TTL", "5")
    hosts.check("https://example.org/x")  # 10 s old: past a 5 s memory


@pytest.mark.parametrize("value", ["2", "y", "enabled", "offline", "-1"])
def test_an_offline_value_that_means_neither_is_one_line(value, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MLTRACES_OFFLINE", value)
    err = one_line_error(["fetch", "zeus"], capsys)  # six files, one line
    assert f"MLTRACES_OFFLINE='{value}' is neither on (1, true, yes, on) nor off" in err


@pytest.mark.parametrize("value, expected", [("1", True), ("TRUE", True), (" on ", True),
                                             ("yes", True), ("0", False), ("off", False),
                                             ("No", False), ("", False)])
def test_offline_spellings(value: str, expected: bool, monkeypatch) -> None:
    from mltraces import config

    monkeypatch.setenv("MLTRACES_OFFLINE", value)
    assert config.offline() is expected


@pytest.mark.parametrize("variable", ["MLTRACES_MAX_DOWNLOAD", "MLTRACES_MAX_UNPACKED",
                                      "MLTRACES_HOST_DOWN_TTL", "MLTRACES_DOWNLOAD_TIMEOUT"])
def test_a_bad_setting_is_reported_at_once_without_asking_the_server(
        variable: str, fake_server, demo_registry, monkeypatch, capsys) -> None:
    import time

    from fakes import serve, synthetic_file

    import mltraces.download as fetch_module

    data = b"a,b\n" * 10
    file = demo_registry.add(synthetic_file("bad.csv", data, size=False))
    serve(fake_server, file, data)
    monkeypatch.setattr(fetch_module, "RETRY_WAIT_S", 1.0)  # a retry would show in the time
    monkeypatch.setenv(variable, "lots")
    started = time.monotonic()
    err = one_line_error(["fetch", file.id], capsys)
    assert f"{variable}='lots' is not a number" in err
    assert time.monotonic() - started < 1.0 and fake_server.requests == []
