"""Alibaba PAI: a job's GPU types, as its tasks asked for them (sorted, distinct, '|'-joined)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import pytest
from catalog_fixtures import loopback_only, rows  # noqa: F401
from synthetic_sources import served

from mltraces.catalog import connect

synthetic = importlib.import_module("mltraces.sources.alibaba_pai.synthetic")


def _expected(tasks: pd.DataFrame) -> dict[str, str | None]:
    """Per job: the distinct GPU types of its tasks that ask for GPUs, or None for none."""
    asking = tasks[pd.to_numeric(tasks["plan_gpu"]).fillna(0) > 0]
    named = asking[asking["gpu_type"].notna() & (asking["gpu_type"] != "")]
    joined = named.groupby("job_name")["gpu_type"].agg(lambda t: "|".join(sorted(set(t))))
    return {job: joined.get(job) for job in tasks["job_name"].unique()}


def test_a_jobs_gpu_types_are_its_gpu_tasks_types_sorted_and_distinct(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = synthetic.frames(800)["task_table"]
    with served(tmp_path, ["alibaba_pai"], monkeypatch, rows=800):
        con = connect(tables=["alibaba_pai.jobs"], strict=True)
    try:
        found = dict(rows(con, "SELECT job_name, gpu_type FROM alibaba_pai.jobs"))
    finally:
        con.close()
    expected = _expected(tasks)
    assert found == expected
    assert any(v and "|" in v for v in found.values())  # jobs whose tasks ask for two types
    assert any(v is None for v in found.values())  # and jobs that ask for no GPU
