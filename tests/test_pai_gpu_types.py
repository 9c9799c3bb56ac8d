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


def _types(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
           ) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """Each job's GPU types as ``alibaba_pai.jobs`` gives them, and as expected."""
    tasks = synthetic.frames(jobs)["task_table"]
    with served(tmp_path, ["alibaba_pai"], monkeypatch, rows=jobs):
        con = connect(tables=["alibaba_pai.jobs"], strict=True)
    try:
        return dict(rows(con, "SELECT job_name, gpu_type FROM alibaba_pai.jobs")), \
            _expected(tasks)
    finally:
        con.close()


def test_a_jobs_gpu_types_are_its_gpu_tasks_types_sorted_and_distinct(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found, expected = _types(tmp_path, monkeypatch, 800)
    assert found == expected
    assert any(v and "|" in v for v in found.values())  # jobs whose tasks ask for two types
    assert any(v is None for v in found.values())  # and jobs that ask for no GPU


def test_a_type_the_schema_does_not_list_takes_the_careful_way_to_the_same_types(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast join names type sets by a bit per listed type; an unlisted type fails it, and
    the careful way (scratch files, collected lists) gives every job its types all the same."""
    from mltraces.sources.alibaba_pai import readers

    careful: list[object] = []
    real = readers.convert_csv
    monkeypatch.setattr(readers, "convert_csv", lambda r: careful.append(r) or real(r))
    monkeypatch.setattr(readers, "_listed_gpu_types", lambda: ["MISC", "T4", "P100", "V100"])
    found, expected = _types(tmp_path, monkeypatch, 300)
    assert len(careful) == 3
    assert found == expected
    assert any(v and "V100M32" in v for v in found.values())


@pytest.mark.parametrize("listed", [["MISC", "T4"], ["b", "B", "a", "é", "Z", "z", "ä", "_"]])
def test_the_masked_names_are_the_collected_lists(listed: list[str]) -> None:
    """Both ways give each job the same text, in DuckDB's order of text (accents, case)."""
    import random

    import duckdb

    from mltraces.sources.alibaba_pai.readers import _GPU_TYPES, _gpu_types_sql

    pick = random.Random(0)
    tasks = [(f"j{j}", pick.choice([*listed, None]), float(pick.randrange(3)))
             for j in range(200) for _ in range(j % 5)]
    with duckdb.connect() as con:
        con.execute("CREATE TABLE tasks (job_name VARCHAR, gpu_type VARCHAR, plan_gpu DOUBLE)")
        con.executemany("INSERT INTO tasks VALUES (?, ?, ?)", tasks)
        answers = [dict(con.execute(f"SELECT job_name, {sql} FROM tasks GROUP BY job_name")
                        .fetchall()) for sql in (_GPU_TYPES, _gpu_types_sql(listed))]
    assert answers[0] == answers[1]
    assert sum(v is not None and "|" in v for v in answers[0].values()) > 20
