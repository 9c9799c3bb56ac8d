"""Alibaba PAI 2020: the published headers, GPUs per instance (#129), the real machine spec."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import pandas as pd
import pytest
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401
from synthetic_sources import served

from mltraces.catalog import connect
from mltraces.registry import get_source

synthetic = importlib.import_module("mltraces.sources.alibaba_pai.synthetic")


def test_the_generated_header_files_are_the_published_ones(tmp_path: Path) -> None:
    from mltraces.synthetic import write_file

    headers = [f for f in get_source("alibaba_pai").files if f.filename.endswith(".header")]
    assert len(headers) == 7
    for file in headers:
        data = write_file(file.id, tmp_path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (file.size, file.sha256)


def test_a_job_asks_for_plan_gpu_times_inst_num_over_its_tasks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs, tasks = synthetic.frames(500)["job_table"], synthetic.frames(500)["task_table"]
    gpu = pd.to_numeric(tasks["plan_gpu"]).fillna(0) * pd.to_numeric(tasks["inst_num"]) / 100
    expected = gpu.groupby(tasks["job_name"]).sum()
    with served(tmp_path, ["alibaba_pai"], monkeypatch, rows=500):
        con = connect(tables=["alibaba_pai.jobs"], strict=True)
    found = dict(rows(con, 'SELECT job_name, num_gpu FROM alibaba_pai.jobs'))
    assert found == pytest.approx(expected.to_dict())
    assert scalar(con, 'SELECT count(*) FROM alibaba_pai.jobs WHERE num_gpu = 0') == int(
        (expected == 0).sum()) > 0
    waits = rows(con, 'SELECT min(first_task_start - start_time) FROM alibaba_pai.jobs')
    assert waits[0][0] >= 0
    running = scalar(con, 'SELECT count(*) FROM alibaba_pai.jobs WHERE end_time IS NULL')
    assert running == int(jobs["status"].isin(["Running", "Waiting"]).sum()) > 0


def test_the_real_machine_spec_streams_out_of_its_tarball(http_mirror: str) -> None:
    con = connect(tables=["alibaba_pai.machine_specs"], strict=True)
    assert rows(con, 'SELECT gpu_type, count(*), sum(cap_gpu) FROM alibaba_pai.machine_specs '
                "GROUP BY ALL ORDER BY 1") == [
        ("CPU", 83, 0), ("MISC", 280, 2240), ("P100", 798, 1596), ("T4", 497, 994),
        ("V100", 104, 832), ("V100M32", 135, 1080)]
