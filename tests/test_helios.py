"""Helios: four clusters out of one zip, read member by member; GPUs per VC served long."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows  # noqa: F401
from synthetic_sources import served

from mltraces.catalog import connect, materialize
from mltraces.catalog.problems import SchemaDriftError

synthetic = importlib.import_module("mltraces.sources.helios.synthetic")
TABLES = ["helios.jobs", "helios.gpu_capacity", "helios.venus_gpu_capacity_2021"]


def test_jobs_and_capacity_per_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with served(tmp_path, ["helios"], monkeypatch, rows=1_000, seed=5):
        con = connect(tables=TABLES, strict=True)
    per_cluster = {c.lower(): n for c, n in synthetic.split(1_000).items()}
    assert dict(rows(con, "SELECT cluster, count(*) FROM helios.jobs GROUP BY 1")) == per_cluster
    assert sum(per_cluster.values()) == 1_000
    assert rows(con, "SELECT count(*) FROM helios.jobs WHERE state = 'SUSPENDED'") == [(1,)]
    assert rows(con, "SELECT count(*) FROM helios.jobs WHERE duration <> "
                "epoch(end_time) - epoch(start_time) OR queue <> "
                "epoch(start_time) - epoch(submit_time)") == [(0,)]
    totals = rows(con, "SELECT cluster, count(DISTINCT vc), count(DISTINCT date) FROM "
                  "helios.gpu_capacity GROUP BY 1 ORDER BY 1")
    assert totals == [("earth", 25, 181), ("saturn", 30, 181), ("uranus", 20, 181),
                      ("venus", 25, 181)]
    for cluster in ("Venus", "Earth"):
        wide = synthetic.gpu_number(cluster)
        found = rows(con, "SELECT sum(gpus), max(total) FROM helios.gpu_capacity "
                     f"WHERE cluster = '{cluster.lower()}'")
        assert found == [(int(wide.drop(columns=["date", "total"]).to_numpy().sum()),
                          int(wide["total"].max()))]
    same = rows(con, "SELECT count(*) FROM (SELECT date, vc, gpus, total FROM "
                "helios.gpu_capacity WHERE cluster = 'venus' EXCEPT SELECT date, vc, gpus, total "
                "FROM helios.venus_gpu_capacity_2021)")
    assert same == [(0,)]


def test_a_zip_without_a_cluster_is_a_drift_error(tmp_path: Path) -> None:
    import zipfile

    whole = synthetic.write_zip(tmp_path / "whole.zip", 100)
    cut = tmp_path / "data.zip"
    with zipfile.ZipFile(whole) as source, zipfile.ZipFile(cut, "w") as target:
        for info in source.infolist():
            if "Saturn" not in info.filename:
                target.writestr(info, source.read(info))
    with pytest.raises(SchemaDriftError, match=r"data/Saturn/cluster_log\.csv: data\.zip holds "
                       r"no file 'data/Saturn/cluster_log\.csv'"):
        materialize("helios.jobs", cut)


def test_the_real_venus_capacity_of_2021(http_mirror: str) -> None:
    con = connect(tables=["helios.venus_gpu_capacity_2021"], strict=True)
    assert rows(con, "SELECT count(DISTINCT vc), min(date)::VARCHAR, max(date)::VARCHAR, "
                "min(total), max(total), floor(avg(total)) "
                "FROM helios.venus_gpu_capacity_2021") == [
        (25, "2020-04-01", "2020-09-28", 968, 1264, 1022)]
