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
