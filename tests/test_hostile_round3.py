"""Reliability, round three (issue 34): hostile files get one line, every cost is bounded,
no wrong data is served silently. Every input is built here.

Cases that could hang or run away run as child processes with a time and memory cap
(:mod:`children`).
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from test_user_sources import _forget, user_root, write_source  # noqa: F401 (a fixture)

from mltraces.catalog import materialize
from mltraces.catalog.problems import SchemaDriftError
from mltraces.cli import main
from mltraces.errors import MltracesError

DEEP = 100_000


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """Run the CLI in-process, expect exit 1 and exactly one stderr line; return it."""
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def philly_tarball(path: Path, members: dict[str, bytes] | list[tuple[str, bytes]]) -> Path:
    """``trace-data.tar.gz`` holding ``members`` (under ``trace-data/``), in order."""
    pairs = members.items() if isinstance(members, dict) else members
    with tarfile.open(path, "w:gz") as tar:
        for name, data in pairs:
            info = tarfile.TarInfo(f"trace-data/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def job(jobid: str, submitted: str = "2017-10-03 10:00:00", start: str = "2017-10-03 10:01:00",
        end: str = "2017-10-03 11:00:00") -> dict:
    """One Philly job-log item with one attempt on two GPUs."""
    return {"status": "Pass", "vc": "vc1", "jobid": jobid, "user": "u1",
            "submitted_time": submitted,
            "attempts": [{"start_time": start, "end_time": end,
                          "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]}


# --------------------------------------------------------------------------- Philly's job log


def test_a_job_nested_100000_deep_is_one_problem(tmp_path: Path, capsys) -> None:
    deep = b"[" + json.dumps(job("a")).encode() + b", " + b"[" * DEEP + b"]" * DEEP + b"]"
    archive = philly_tarball(tmp_path / "trace-data.tar.gz", {"cluster_job_log": deep})
    with pytest.raises(SchemaDriftError, match=r"item 1 \(line 1\): nested deeper than"):
        materialize("philly.jobs", archive)
    err = one_line_error(["sql", "SELECT count(*) FROM philly.jobs", "--local",
                          f"philly.jobs={archive}"], capsys)
    assert "nested deeper than" in err


def test_a_job_id_of_5000_digits_is_one_problem(tmp_path: Path) -> None:
    log = b'[{"status": "Pass", "vc": "v", "jobid": ' + b"7" * 5000 + \
        b', "user": "u", "submitted_time": null, "attempts": []}]'
    archive = philly_tarball(tmp_path / "trace-data.tar.gz", {"cluster_job_log": log})
    with pytest.raises(SchemaDriftError, match=r"item 0 \(line 1\): holds a number too long"):
        materialize("philly.jobs", archive)


def test_ten_million_empty_items_stop_at_the_reported_cap() -> None:
    """30 MB of ``{}``: each lacks every key; the report stops at its cap (was 2 GB, 28 s)."""
    code = """
import io, tarfile, sys
from pathlib import Path
from mltraces.catalog import materialize
body = b"[" + b"{}," * 9_999_999 + b"{}]"
path = Path(sys.argv[1]) / "trace-data.tar.gz"
with tarfile.open(path, "w:gz") as tar:
    info = tarfile.TarInfo("trace-data/cluster_job_log"); info.size = len(body)
    tar.addfile(info, io.BytesIO(body))
del body
try:
    materialize("philly.jobs", path)
except Exception as error:
    problems = getattr(error, "problems", [])
    print(len(problems), problems[-1].message if problems else error)
"""
    import tempfile

    from children import run_python

    with tempfile.TemporaryDirectory() as folder:
        run = run_python(code, folder, seconds=60, memory=3 << 30)
    count, _, last = run.out.strip().partition(" ")
    assert int(count) == 201 and "reading stopped after 200 misshapen jobs" in last, run
    assert run.peak_mib < 600


@pytest.mark.parametrize("when", ["2017-02-30 10:00:00", "2017-13-01 10:00:00",
                                  "2017-10-03 25:61:61"])
def test_an_impossible_time_is_named_with_its_job(when: str, tmp_path: Path) -> None:
    log = json.dumps([job("a"), job("b", submitted=when), job("c", end=when)]).encode()
    archive = philly_tarball(tmp_path / "trace-data.tar.gz", {"cluster_job_log": log})
    with pytest.raises(SchemaDriftError) as error:
        materialize("philly.jobs", archive)
    assert [(p.line, p.column) for p in error.value.problems] == [
        (2, "submitted_time"), (3, "last_end")]
    assert f'"{when}" is not a time' in str(error.value)


def test_an_impossible_utilization_minute_is_named_with_its_line(tmp_path: Path) -> None:
    util = (b"time,machine_id,cpu_util\n2017-11-05 01:00:00 PDT,m1,3.0\n"
            b"2017-02-30 01:01:00 PST,m1,4\n")
    archive = philly_tarball(tmp_path / "trace-data.tar.gz", {"cluster_cpu_util": util})
    with pytest.raises(SchemaDriftError, match=r'line 3, column time: "2017-02-30 01:01:00 PST" '
                                               "is not a time"):
        materialize("philly.cpu_util", archive)


def test_a_duplicated_job_log_is_refused(tmp_path: Path) -> None:
    first, second = (json.dumps([job(i)]).encode() for i in ("first", "second"))
    archive = philly_tarball(tmp_path / "trace-data.tar.gz",
                             [("cluster_job_log", first), ("cluster_job_log", second)])
    with pytest.raises(MltracesError, match="cluster_job_log' appears twice"):
        materialize("philly.jobs", archive)


# --------------------------------------------------------------------------- not UTF-8

LATIN1 = "machineId,number of GPUs,single GPU mem\nm1,8, 24GB\nm\xe9,2, 12GB\n"


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_a_machine_list_that_is_not_utf8_is_one_problem(encoding: str, tmp_path: Path) -> None:
    archive = philly_tarball(tmp_path / "trace-data.tar.gz",
                             {"cluster_machine_list": LATIN1.encode(encoding)})
    with pytest.raises(SchemaDriftError, match="is not UTF-8 text"):
        materialize("philly.machines", archive)


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_utilization_that_is_not_utf8_is_one_problem(encoding: str, tmp_path: Path,
                                                     capsys) -> None:
    util = "time,machine_id,cpu_util\n2017-11-05 01:00:00 PDT,m\xe9,3.0\n".encode(encoding)
    archive = philly_tarball(tmp_path / "trace-data.tar.gz", {"cluster_cpu_util": util})
    with pytest.raises(SchemaDriftError, match="UTF-8"):
        materialize("philly.cpu_util", archive)
    err = one_line_error(["sql", "SELECT count(*) FROM philly.cpu_util", "--local",
                          f"philly.cpu_util={archive}"], capsys)
    assert "UTF-8" in err


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
@pytest.mark.parametrize("where", ["header", "body"])
def test_a_helios_capacity_file_that_is_not_utf8_is_one_problem(encoding: str, where: str,
                                                               tmp_path: Path) -> None:
    vc = "v\xe9" if where == "header" else "vc1"
    day = "2020-04-01" if where == "header" else "2020-04-0\xe9"
    path = tmp_path / "cluster_gpu_number.csv"
    path.write_bytes(f"date,{vc},total\n2020-04-01,8,8\n{day},8,8\n".encode(encoding))
    with pytest.raises(SchemaDriftError, match=r"cluster_gpu_number\.csv"):
        materialize("helios.venus_gpu_capacity_2021", path)


# --------------------------------------------------------------------------- a user's JSON


def _deep(key: str) -> str:
    return '{"' + key + '": ' + "[" * DEEP + "]" * DEEP + "}"


def test_a_users_jobs_json_nested_deep_is_one_line(user_root: Path, capsys) -> None:  # noqa: F811
    folder = write_source(user_root, pin=False)
    (folder / "jobs.json").write_text(_deep("tables"))
    _forget()
    err = one_line_error(["schedule", "--list-traces"], capsys)
    assert str(folder / "jobs.json") in err


def test_a_users_schema_nested_deep_is_one_line(user_root: Path, capsys) -> None:  # noqa: F811
    folder = write_source(user_root, pin=False)
    (folder / "schemas" / "jobs.json").write_text(_deep("fields"))
    _forget()
    err = one_line_error(["sql", "SELECT count(*) FROM mycluster.jobs"], capsys)
    assert "jobs.json" in err


def test_a_users_source_json_nested_deep_is_one_line(user_root: Path, capsys) -> None:  # noqa: F811
    folder = write_source(user_root, pin=False)
    (folder / "source.json").write_text(_deep("files"))
    _forget()
    err = one_line_error(["info", "mycluster"], capsys)  # named: its one-line error
    assert "source.json" in err or "source folder" in err
    assert main(["list"]) == 0  # not named: the others are listed, it is one line on stderr
    err = capsys.readouterr().err.strip()
    assert err.startswith("mltraces: source mycluster is broken") and "\n" not in err, err


@pytest.mark.parametrize("count", [10**29, -5, True, 2.5, "7"])
def test_expected_rows_must_be_a_count_a_table_can_hold(count: object, user_root: Path,  # noqa: F811
                                                        capsys) -> None:
    folder = write_source(user_root, pin=False)
    source = json.loads((folder / "source.json").read_text())
    source["expected_rows"] = {"mycluster.jobs": count}
    (folder / "source.json").write_text(json.dumps(source))
    _forget()
    err = one_line_error(["sql", "SELECT count(*) FROM mycluster.jobs"], capsys)
    assert "expected_rows entry 'mycluster.jobs'" in err and "a whole number from 0" in err
    err = one_line_error(["validate", "mycluster.jobs"], capsys)  # no traceback there either
    assert "a whole number from 0" in err


# --------------------------------------------------------------------------- figures' record


def test_a_render_record_nested_deep_is_ignored(tmp_path: Path) -> None:
    from mltraces.figures import render

    (tmp_path / render.RECORD).write_text(_deep("figures"))
    assert render.read_record(tmp_path) == {}


# --------------------------------------------------------------------------- connect(local=)


def test_connect_with_a_local_path_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    from mltraces.catalog import connect

    path = tmp_path / os.fsdecode(b"tr\xffain.csv")
    path.write_bytes(b"dataset,network,batch_size,optimizer,learning_rate,run,target_metric,"
                     b"epoch\n")
    with pytest.raises(MltracesError, match=r"is not UTF-8 text.*tr\\xffain\.csv"):
        connect(["zeus.train"], local={"zeus.train": path})
    with pytest.raises(MltracesError, match="is not UTF-8 text"):
        connect(["zeus.train"], local={"zeus.train": os.fsencode(path)})


# --------------------------------------------------------------------------- one bad row


@pytest.mark.parametrize("when", ["-1e12", "1e17", "inf"])
def test_one_absurd_pai_time_leaves_the_other_traces_and_names_its_row(
        when: str, tmp_path: Path, capsys) -> None:
    """It failed every unfiltered summary of mltraces.jobs ("Epoch seconds out of range",
    no table, no row) or, at -1e12, moved the view's origin for every PAI job."""
    import importlib

    from mltraces.catalog import connect, read_status
    from mltraces.synthetic import write_tables

    synthetic = importlib.import_module("mltraces.sources.alibaba_pai.synthetic")
    paths = write_tables(tmp_path, ["alibaba_pai.jobs", "acme.kalos_jobs"], rows=50)
    jobs = synthetic.frames(50)["job_table"].copy()
    jobs.loc[jobs.index[7], "start_time"] = when
    synthetic._tarball(paths["alibaba_pai.jobs"] / "pai_job_table.tar.gz", "pai_job_table.csv",
                       jobs)
    con = connect(["mltraces.jobs", "alibaba_pai.jobs", "acme.kalos_jobs"], local=paths)
    summary = "SELECT trace, count(*), min(submit_time) FROM mltraces.jobs GROUP BY ALL"
    assert [row[:2] for row in con.sql(summary).fetchall()] == [("acme/kalos", 50)]
    assert con.sql("SELECT count(*) FROM (SUMMARIZE mltraces.jobs)").fetchall()[0][0] > 0
    reason = read_status(con)["mltraces.jobs"].reason
    assert "alibaba_pai.jobs" in reason and "pai_job_table.csv line 8, column start_time" in reason
    # a file given by hand is held to it: the one line names the table and the row
    local = ",".join(f"{t}={p}" for t, p in paths.items())
    err = one_line_error(["sql", summary, "--local", local], capsys)
    assert "alibaba_pai.jobs" in err and "pai_job_table.csv line 8, column start_time" in err


def test_an_instant_no_clock_holds_is_null_not_a_failed_query(user_root: Path) -> None:  # noqa: F811
    """A user source on Unix seconds with one row at 1e17 s: the other rows still read."""
    from mltraces.catalog import connect

    folder = write_source(user_root, pin=False)
    def at(hh_mm: str) -> str:
        return f"2024-01-01 {hh_mm}:00+01:00"

    (folder / "jobs.csv").write_text(
        "id,user,gpus,submitted,started,ended,status\n"
        f"1,ann,4,{at('00:00')},{at('00:10')},{at('01:10')},ok\n"
        f"2,bob,8,{at('00:05')},{at('00:05')},{at('00:35')},ok\n")
    mapping = json.loads((folder / "jobs.json").read_text())
    mapping["tables"][0]["time"] = {"kind": "unix"}
    mapping["tables"][0]["columns"].update(
        submit="CASE WHEN id = 2 THEN 1e17 ELSE epoch(submitted) END",
        start="epoch(started)", end="epoch(ended)")
    (folder / "jobs.json").write_text(json.dumps(mapping))
    _forget()
    con = connect(["mycluster.jobs", "mltraces.jobs"])
    found = con.sql("SELECT job_id, submit_time IS NULL, run_s FROM mltraces.jobs "
                    "ORDER BY job_id").fetchall()
    assert found == [("1", False, 3600.0), ("2", True, 1800.0)]


# --------------------------------------------------------------------------- export


def _string_ids(folder: Path, ids: list[str]) -> None:
    """The user source's job ids as text (and these ids), one 600-s job each."""
    schema = json.loads((folder / "schemas" / "jobs.json").read_text())
    schema["fields"][0]["type"] = "string"
    (folder / "schemas" / "jobs.json").write_text(json.dumps(schema))
    rows = [f"{job},ann,{1 + k % 2},2024-01-01 00:0{k}:00+01:00,2024-01-01 00:0{k}:00+01:00,"
            f"2024-01-01 00:{10 + k}:00+01:00,ok" for k, job in enumerate(ids)]
    (folder / "jobs.csv").write_text("id,user,gpus,submitted,started,ended,status\n"
                                     + "\n".join(rows) + "\n")
    _forget()


MISSING_LIKE = ["NA", "null", "None", "nan", "job-5"]


def test_pollux_job_ids_pandas_reads_as_missing_round_trip_and_are_said(
        user_root: Path, tmp_path: Path) -> None:  # noqa: F811
    import pandas as pd

    from mltraces.interop.exporting import export, provenance_path
    from mltraces.interop.importing import _forget_scans, import_workload

    _string_ids(write_source(user_root, pin=False), MISSING_LIKE)
    out = tmp_path / "workload.csv"
    export("mycluster/jobs", "pollux", out)
    record = json.loads(provenance_path(out).read_text())
    [note] = [n for n in record["notes"] if "keep_default_na=False" in n]
    assert "4 job id(s) ('NA', 'None', 'nan', 'null')" in note
    assert sorted(pd.read_csv(out, keep_default_na=False)["name"]) == sorted(MISSING_LIKE)
    assert pd.read_csv(out)["name"].isna().sum() == 4  # what the note warns of
    made = import_workload(out, name="back")
    _forget_scans()
    from mltraces.catalog import connect

    con = connect(["back.jobs", "mltraces.jobs"])
    ids = [i for (i,) in con.sql(f"SELECT job_id FROM mltraces.jobs WHERE trace = "
                                 f"'{made.trace}'").fetchall()]
    assert sorted(ids) == sorted(MISSING_LIKE)


def test_export_onto_the_traces_own_file_is_refused_before_any_work(
        user_root: Path, capsys) -> None:  # noqa: F811
    folder = write_source(user_root, pin=False)
    before = (folder / "jobs.csv").read_bytes()
    for target in (folder / "jobs.csv", folder / "jobs.csv.provenance.json"):
        if target.name.endswith(".json"):  # the record would land on the file: same thing
            target = folder / "jobs.csv"
        err = one_line_error(["export", "--trace", "mycluster/jobs", "--to", "elasticflow", "-o",
                              str(target)], capsys)
        assert "the trace is read from" in err and "would overwrite" in err
    link = user_root / "link.csv"
    link.symlink_to(folder / "jobs.csv")
    err = one_line_error(["export", "--trace", "mycluster/jobs", "--to", "tiresias", "-o",
                          str(link)], capsys)
    assert "would overwrite" in err
    assert (folder / "jobs.csv").read_bytes() == before
    assert not (folder / "jobs.csv.provenance.json").exists()


@pytest.mark.parametrize("target", ["/dev/stdout", "/proc/self/fd/1"])
def test_export_to_dev_stdout_writes_no_record_in_dev(target: str, user_root: Path,  # noqa: F811
                                                     tmp_path: Path) -> None:
    """Standard output redirected to a file (the child's is one): the path is a device
    name, and its record went to /dev/stdout.provenance.json."""
    import subprocess
    import sys

    write_source(user_root, pin=False)
    record = Path(f"{target}.provenance.json")
    redirected = tmp_path / "out.txt"
    try:
        with redirected.open("w") as stdout:  # as `mltraces export ... > out.txt` runs it
            run = subprocess.run([sys.executable, "-m", "mltraces", "export", "--trace",
                                  "mycluster/jobs", "--to", "tiresias", "-o", target],
                                 stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60,
                                 env={**os.environ, "MLTRACES_SOURCES": str(user_root)})
        err = run.stderr.strip()
        assert run.returncode == 1 and "\n" not in err, err
        assert "a pipe, a device or a descriptor cannot have" in err
        assert not record.exists() and redirected.read_text() == ""
    finally:
        if target.startswith("/dev/") and record.is_file():
            record.unlink()  # what the unfixed export left


# --------------------------------------------------------------------------- scratch


ZEROS_CHILD = """
import io, resource, sys, tarfile, zipfile
from pathlib import Path

folder, kind, table, member = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
size = 200 << 20


class Zeros(io.RawIOBase):
    def __init__(self):
        self.left = size
    def readable(self):
        return True
    def readinto(self, buffer):
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


if kind == "tar":
    archive = folder / "zeros.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo(member)
        info.size = size
        tar.addfile(info, io.BufferedReader(Zeros(), 1 << 20))
else:
    archive = folder / "data.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zipped:
        with zipped.open(member, "w") as sink:
            chunk = bytes(1 << 20)
            for _ in range(size >> 20):
                sink.write(chunk)
print(archive.stat().st_size, file=sys.stderr)
resource.setrlimit(resource.RLIMIT_FSIZE, (32 << 20, 32 << 20))  # no file past 32 MB
from mltraces.catalog import materialize
try:
    materialize(table, archive)
except Exception as error:
    print(type(error).__name__, str(error).splitlines()[0])
"""


@pytest.mark.parametrize(("kind", "table", "member"), [
    ("tar", "itp.jobs", "cluster01.csv"),  # unpacked before its members are read
    ("tar", "alibaba_pai.machine_specs", "pai_machine_spec.csv"),  # a member streamed out
    ("zip", "helios.gpu_capacity", "data/Venus/cluster_gpu_number.csv"),  # copied out
])
def test_an_archive_of_zeros_writes_no_scratch_past_its_first_line(
        kind: str, table: str, member: str, tmp_path: Path) -> None:
    """200 MB of zeros in a few hundred kB: no text line, so nothing past 2 MB is written
    (the child may write no file of more than 32 MB; before, it copied it all out)."""
    from children import run_python

    if table == "alibaba_pai.machine_specs":  # its column names come from a file beside it
        from mltraces.synthetic import write_file

        write_file("alibaba_pai/pai_machine_spec.header", tmp_path)
    run = run_python(ZEROS_CHILD, str(tmp_path), kind, table, member, seconds=120,
                     memory=3 << 30)
    assert run.code == 0, run.err[-1500:]
    assert "holds a line longer than 2,000,000 bytes" in run.out, (run.out, run.err[-1500:])
    assert "UnsafeArchiveError" in run.out
