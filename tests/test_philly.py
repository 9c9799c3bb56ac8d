"""Philly: one 1 GB tarball read member by member, the job log item by item, Pacific times."""

from __future__ import annotations

import importlib
import io
import itertools
import json
import tarfile
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401
from synthetic_sources import served

from mltraces.catalog import connect, materialize
from mltraces.catalog.problems import SchemaDriftError
from mltraces.synthetic import file_seed

synthetic = importlib.import_module("mltraces.sources.philly.synthetic")
TABLES = ["philly.jobs", "philly.attempts", "philly.attempt_gpus", "philly.machines",
          "philly.gpu_util", "philly.cpu_util", "philly.mem_util"]


@pytest.fixture
def philly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with served(tmp_path / "mirror", ["philly"], monkeypatch, rows=600, seed=11):
        con = connect(tables=TABLES, strict=True)
    return con, file_seed("philly/trace-data.tar.gz", 11)


def test_jobs_follow_the_notebooks_derivations(philly) -> None:
    con, seed = philly
    log = synthetic.job_log(600, seed)
    found = {r[0]: r[1:] for r in rows(con, "SELECT job_id, num_attempts, num_gpu, "
                                       "first_start::VARCHAR, last_end::VARCHAR FROM philly.jobs")}
    for job in log:
        attempts = job["attempts"]
        first = attempts[0] if attempts else None
        end = attempts[-1]["end_time"] if attempts else None
        expected = (len(attempts),
                    sum(len(d["gpus"]) for d in first["detail"]) if first else None,
                    first["start_time"] if first else None,
                    end if end not in (None, "", "None") else None)
        assert found[job["jobid"]] == expected
    assert scalar(con, "SELECT count(*) FROM philly.jobs WHERE num_attempts = 0") > 0
    assert scalar(con, "SELECT count(*) FROM philly.jobs WHERE last_end IS NULL AND "
                  "num_attempts > 0") > 0
    assert scalar(con, "SELECT count(*) FROM philly.attempt_gpus") == sum(
        len(d["gpus"]) for j in log for a in j["attempts"] for d in a["detail"])


def test_utilization_minutes_are_instants_across_the_end_of_daylight_saving(philly) -> None:
    con, _ = philly
    minutes = rows(con, "SELECT DISTINCT time FROM philly.cpu_util ORDER BY 1")
    assert len(minutes) == 90  # 01:00-01:59 happens twice, as PDT then PST: 90 distinct
    steps = {(b[0] - a[0]).total_seconds() for a, b in itertools.pairwise(minutes)}
    assert steps == {60.0}
    assert str(minutes[0][0]) == "2017-11-05 08:30:00+00:00"
    assert scalar(con, "SELECT count(*) FROM philly.gpu_util WHERE gpu5_util IS NOT NULL AND "
                  "machineId IN ('m0', 'm1', 'm2')") == 0  # 2-GPU machines: NA beyond gpu1
    assert rows(con, "SELECT num_gpus, gpu_mem_gb, count(*) FROM philly.machines GROUP BY ALL "
                "ORDER BY 1") == [(2, 12, 321), (8, 24, 231)]


def _tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"trace-data/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_misshapen_job_or_a_foreign_zone_is_named_with_its_place(tmp_path: Path) -> None:
    jobs = synthetic.job_log(5)
    jobs[3]["attempts"] = "none"
    del jobs[1]["user"]
    log = json.dumps(jobs).encode()
    util = (b"time,machine_id,cpu_util\n2017-11-05 01:00:00 PDT,m1,3.0\n"
            b"2017-11-05 01:01:00 EST,m1,4\n")
    archive = _tarball(tmp_path / "trace-data.tar.gz",
                       {"cluster_cpu_util": util, "cluster_job_log": log})
    with pytest.raises(SchemaDriftError) as error:
        materialize("philly.jobs", archive)
    assert [(p.kind, p.line) for p in error.value.problems] == [
        ("missing column", 2), ("malformed row", 4)]
    with pytest.raises(SchemaDriftError, match=r'"2017-11-05 01:01:00 EST" is not a time'):
        materialize("philly.cpu_util", archive)
    cut = _tarball(tmp_path / "cut.tar.gz", {"cluster_job_log": log[:-40]})
    with pytest.raises(SchemaDriftError, match=r"not valid JSON|expected ',' or '\]'"):
        materialize("philly.jobs", cut)


def test_the_tarball_is_never_unpacked(philly, tmp_path: Path) -> None:
    import os

    cache = Path(os.environ["MLTRACES_CACHE"])
    assert not (cache / "extracted").exists()
    tarball = next(cache.rglob("trace-data.tar.gz"))
    largest = max(p.stat().st_size for p in cache.rglob("*") if p.is_file() and p != tarball)
    assert largest < tarball.stat().st_size  # no member was written out
