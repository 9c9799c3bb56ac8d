"""Local data and the cache under hostile use (issue 24): read-only caches, planted links,
stale local conversions, unbounded decompression, leftovers of killed conversions.

Every input is built here; cases that could hang or run away in memory run as
capped child processes (:mod:`children`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from children import read_only_runner, run_cli

from mltraces.cli import main

POWER = ["sql", "SELECT count(*) AS n FROM zeus.power", "--format", "csv"]


def _warm(capsys: pytest.CaptureFixture) -> None:
    """zeus.power converted, reused and remembered (a warm record), as a lab would share it."""
    for _ in range(2):
        assert main(POWER) == 0
    assert capsys.readouterr().out == "n\n1609\n" * 2


# --------------------------------------------------------------------------- read-only cache


def test_a_read_only_warm_cache_is_read_without_writing(
        dir_mirror, isolated_cache: Path, capsys) -> None:
    _warm(capsys)
    before = sorted(str(p) for p in isolated_cache.rglob("*"))
    runner = read_only_runner(isolated_cache)
    if runner is None:
        pytest.skip("no way to make a folder read-only for a child process here")
    try:
        env = {"MLTRACES_CACHE": str(isolated_cache), "MLTRACES_MIRROR": str(dir_mirror)}
        run = run_cli(POWER, env=env, prefix=runner)
        assert (run.code, run.out, run.err) == (0, "n\n1609\n", "")
        # a table the share does not hold: one line saying so, not a traceback
        missing = run_cli(["sql", "SELECT count(*) FROM zeus.train"], env=env, prefix=runner)
        assert "not writable" in missing.one_line_error or "read-only" in missing.err
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(isolated_cache)], check=True)
    assert sorted(str(p) for p in isolated_cache.rglob("*")) == before


def test_leases_and_warm_records_of_a_read_only_cache_are_skipped(
        dir_mirror, isolated_cache: Path, monkeypatch, capsys) -> None:
    """In-process, for machines where no child can be made read-only: the writes fail."""
    import errno

    from mltraces import atomic
    from mltraces.catalog import store

    _warm(capsys)
    monkeypatch.setattr(store, "_leased", {})

    def read_only(target: Path, text: str) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(target))

    monkeypatch.setattr(store, "write_text_atomic", read_only)
    monkeypatch.setattr(atomic, "write_text_atomic", read_only)
    assert main(POWER) == 0
    assert capsys.readouterr().out == "n\n1609\n"


# --------------------------------------------------------------------------- planted links


@pytest.mark.parametrize("folder", [".readers", ".warm"])
def test_bookkeeping_folders_that_are_links_are_never_written_through(
        folder: str, dir_mirror, isolated_cache: Path, tmp_path: Path, capsys) -> None:
    assert main(POWER) == 0  # the tables folder exists
    capsys.readouterr()
    planted = isolated_cache / "tables" / folder
    import shutil

    shutil.rmtree(planted, ignore_errors=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    planted.symlink_to(outside, target_is_directory=True)
    for _ in range(3):  # converted, reused (remembered), recalled
        run = run_cli(POWER, env={"MLTRACES_CACHE": str(isolated_cache),
                                  "MLTRACES_MIRROR": str(dir_mirror)})
        assert (run.code, run.out) == (0, "n\n1609\n"), run.err
        assert "outside" in run.err and "Traceback" not in run.err
    assert list(outside.iterdir()) == []


def test_a_tables_folder_that_is_a_link_is_never_leased_through(
        dir_mirror, isolated_cache: Path, tmp_path: Path) -> None:
    from mltraces.catalog import store
    from mltraces.errors import UnsafePathError

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (isolated_cache / "tables").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="outside"):
        store.readers_dir(isolated_cache / "tables", create=True)
    assert list(outside.iterdir()) == []


def test_a_tables_folder_that_is_a_link_takes_no_conversion(
        dir_mirror, isolated_cache: Path, tmp_path: Path, capsys) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (isolated_cache / "tables").symlink_to(outside, target_is_directory=True)
    assert main(POWER) == 1
    err = capsys.readouterr().err.strip()
    assert "the tables folder" in err and "outside" in err and "\n" not in err
    assert list(outside.iterdir()) == []


# --------------------------------------------------------------------------- stale local data


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes in place, keeping the size and restoring the mtime (as `touch -d` can)."""
    import os

    assert len(old) == len(new)
    before = path.stat()
    data = path.read_bytes()
    assert old in data
    with path.open("r+b") as handle:  # the same inode: only the ctime tells
        handle.write(data.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size, before.st_mtime_ns, before.st_ino)


def _util_csv(folder: Path) -> Path:
    csv = folder / "seren" / "GPU_UTIL.csv"
    csv.parent.mkdir(parents=True)
    csv.write_text("Time,10.0.0.1-0,10.0.0.1-1\n"
                   "2023-07-01 00:00:00+08:00,11,12\n"
                   "2023-07-01 00:00:15+08:00,13,14\n")
    return csv


def test_a_local_util_csv_edited_in_place_is_converted_again(tmp_path: Path, capsys) -> None:
    csv = _util_csv(tmp_path / "mine")
    query = ["sql", "SELECT sum(value) AS total FROM acme.gpu_metrics", "--format", "csv",
             "--local", f"acme.gpu_metrics={csv}"]
    assert main(query) == 0
    assert capsys.readouterr().out == "total\n50.0\n"
    _edit_in_place(csv, b",13,14", b",93,94")
    assert main(query) == 0
    assert capsys.readouterr().out == "total\n210.0\n"


def test_a_local_job_table_edited_in_place_is_converted_again(tmp_path: Path, capsys) -> None:
    """The job tables already noticed (their record stamps the ctime): the same rule holds."""
    import synthetic

    trace = synthetic.write_seren_trace(tmp_path / "trace_seren.csv", 20, seed=4)
    query = ["sql", "SELECT count(*) AS n FROM acme.seren_jobs WHERE user = 'uzzzz'",
             "--format", "csv", "--local", f"acme.seren_jobs={trace}"]
    assert main(query) == 0
    assert capsys.readouterr().out == "n\n0\n"
    user = trace.read_text().splitlines()[1].split(",")[1]
    _edit_in_place(trace, f",{user},".encode(), b",uzzzz,")
    assert main(query) == 0
    assert capsys.readouterr().out == "n\n1\n"


# --------------------------------------------------------------------------- xz bombs


def _xz_bomb(path: Path, unpacked: int) -> Path:
    """A CSV header and ``unpacked`` bytes of one endless line, xz-compressed (fast, tiny)."""
    import lzma

    packer = lzma.LZMACompressor(format=lzma.FORMAT_XZ, preset=1)
    parts = [packer.compress(b"group_id,job_id\n")]
    block = b"7" * (1 << 20)
    parts += [packer.compress(block) for _ in range(unpacked >> 20)]
    path.write_bytes(b"".join([*parts, packer.flush()]))
    return path


def test_an_xz_bomb_stops_at_the_unpacked_limit(tmp_path: Path, isolated_cache: Path) -> None:
    bomb = _xz_bomb(tmp_path / "alibaba_groups.csv.xz", 64 << 20)
    assert bomb.stat().st_size < 100_000
    run = run_cli(["sql", "SELECT count(*) FROM zeus.alibaba_groups", "--local",
                   f"zeus.alibaba_groups={bomb}"],
                  env={"MLTRACES_CACHE": str(isolated_cache), "MLTRACES_MAX_UNPACKED": "2M"},
                  seconds=20, memory=2 << 30)
    err = run.one_line_error
    assert "decompresses to more than 2,097,152 bytes (MLTRACES_MAX_UNPACKED=2M)" in err
    assert "decompression bomb" in err and "larger disk" not in err
    assert run.peak_mib < 400, run.peak_mib
    left = [p for p in isolated_cache.rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
    assert left == [], "nothing of the bomb stays in the cache"


def test_a_disk_filling_while_decompressing_names_the_limit(tmp_path: Path, monkeypatch) -> None:
    from fakes import FullDisk

    from mltraces.catalog import text
    from mltraces.catalog.problems import ConversionError

    bomb = _xz_bomb(tmp_path / "groups.csv.xz", 8 << 20)
    work = tmp_path / "work"
    work.mkdir()
    real_open = Path.open

    def full(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = real_open(self, mode, *args, **kwargs)
        return FullDisk(handle, room=3 << 20) if self.parent == work and "w" in mode else handle

    monkeypatch.setattr(Path, "open", full)
    with pytest.raises(ConversionError, match=r"filled while decompressing it, after 3,145,728 "
                       r"bytes \(MLTRACES_MAX_UNPACKED=4G \(default\) would allow 4,294,967,296\)"):
        text.plain_csv("groups.csv.xz", bomb, work)
    assert list(work.iterdir()) == []


# --------------------------------------------------------------------------- leftovers

SLOW_CONVERSION = """
import sys, time
import pyarrow.parquet as pq
real = pq.ParquetWriter.write_table
def slow(self, table, *args, **kwargs):
    real(self, table, *args, **kwargs)
    print("written", flush=True)
    time.sleep(60)
pq.ParquetWriter.write_table = slow
from mltraces.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _killed_mid_conversion(csv: Path, cache: Path) -> list[Path]:
    """Start a conversion of ``csv`` in a child, kill it once it wrote Parquet; its leftovers."""
    import os
    import signal
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_CONVERSION, "sql", "SELECT count(*) FROM acme.gpu_metrics",
         "--local", f"acme.gpu_metrics={csv}"], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "MLTRACES_CACHE": str(cache)})
    try:
        assert child.stdout is not None and child.stdout.readline() == "written\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=20)
    tmp = cache / "acme-util" / "tmp"
    partial = sorted(tmp.rglob("*.parquet"))
    assert partial, "the killed conversion left a partial Parquet"
    return partial


def _leftovers(cache: Path) -> list[str]:
    import os

    tmp = cache / "acme-util" / "tmp"
    mine = f".tmp-{os.getpid()}"
    return sorted(p.name for p in tmp.iterdir() if not p.name.endswith(mine))


def test_a_killed_conversion_leaves_nothing_after_the_next_run(
        tmp_path: Path, isolated_cache: Path, capsys) -> None:
    csv = _util_csv(tmp_path / "mine")
    _killed_mid_conversion(csv, isolated_cache)
    query = ["sql", "SELECT count(*) AS n FROM acme.gpu_metrics", "--format", "csv",
             "--local", f"acme.gpu_metrics={csv}"]
    assert main(query) == 0
    assert capsys.readouterr().out == "n\n4\n"
    assert _leftovers(isolated_cache) == []


def test_verify_removes_what_a_killed_conversion_left(
        tmp_path: Path, isolated_cache: Path, capsys) -> None:
    csv = _util_csv(tmp_path / "mine")
    partial = _killed_mid_conversion(csv, isolated_cache)
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert f"removed  acme-util/tmp/{partial[0].parent.name}  left by a killed conversion" in out
    assert _leftovers(isolated_cache) == []
