"""A user's own cluster trace declared as a source: same checks, views and replays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401

from mltraces import jobmap, registry, schema, synthetic
from mltraces.catalog import connect, readers
from mltraces.cli import main

CSV = ("id,user,gpus,submitted,started,ended,status\n"
       "1,ann,4,2024-01-01 00:00:00+01:00,2024-01-01 00:10:00+01:00,2024-01-01 01:10:00+01:00,ok\n"
       "2,bob,8,2024-01-01 00:05:00+01:00,2024-01-01 00:05:00+01:00,2024-01-01 00:35:00+01:00,"
       "fail\n"
       "3,ann,0,2024-01-01 00:06:00+01:00,2024-01-01 00:07:00+01:00,2024-01-01 00:08:00+01:00,ok\n")


def _forget() -> None:
    """The scanned registry, schemas, mappings and readers are cached per process."""
    for cached in (registry._scanned, registry._loaded, schema.schema_files, schema._loaded,
                   jobmap.job_tables, synthetic.writers, readers.source_readers):
        cached.cache_clear()


def write_source(root: Path, *, pin: bool) -> Path:
    """``root/mycluster``: a source.json naming a local CSV, its schema and its mapping."""
    from mltraces.download.pin import pin_path

    folder = root / "mycluster"
    (folder / "schemas").mkdir(parents=True)
    (folder / "jobs.csv").write_text(CSV)
    entry = pin_path(folder / "jobs.csv", relative_to=folder) if pin else {"path": "jobs.csv"}
    (folder / "source.json").write_text(json.dumps({
        "name": "mycluster", "title": "Our GPU cluster", "description": "Our jobs.",
        "homepage": "https://example.org", "license": "CC-BY-4.0",
        "files": [{**entry, "description": "the scheduler's job log"}],
        "anomalies": []}))
    (folder / "citation.bib").write_text("@misc{ours, title = {Our jobs}, year = {2024}}\n")
    field = {"type": "string", "description": "d"}
    stamp = {"type": "datetime", "format": "%Y-%m-%d %H:%M:%S%z", "description": "t"}
    (folder / "schemas" / "jobs.json").write_text(json.dumps({
        "name": "mycluster.jobs", "title": "Our jobs", "description": "One row per job.",
        "fields": [{"name": "id", "type": "integer", "description": "id",
                    "constraints": {"required": True}},
                   {"name": "user", **field}, {"name": "gpus", "type": "integer",
                                               "description": "g"},
                   {"name": "submitted", **stamp}, {"name": "started", **stamp},
                   {"name": "ended", **stamp},
                   {"name": "status", **field, "constraints": {"enum": ["ok", "fail"]}}],
        "primaryKey": ["id"],
        "mltraces": {"reader": "csv", "sources": [{"file": "mycluster/jobs.csv"}]}}))
    (folder / "jobs.json").write_text(json.dumps({"tables": [{
        "table": "mycluster.jobs", "trace": "mycluster/jobs", "time": {"kind": "clock"},
        "columns": {"cluster": "'ours'", "job_id": "id", "user": "user", "num_gpu": "gpus",
                    "submit": "submitted", "start": "started", "end": "ended",
                    "state": "status"},
        "states": {"ok": "COMPLETED", "fail": "FAILED"},
        "replay": ["all"], "capacity": {"gpus": 16, "gpus_per_node": 8}}]}))
    return folder


@pytest.fixture
def user_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "sources"
    monkeypatch.setenv("MLTRACES_SOURCES", str(root))
    _forget()
    yield root
    monkeypatch.setenv("MLTRACES_SOURCES", "")
    _forget()


def test_a_users_folder_is_a_source_with_views_rules_and_replays(user_root: Path, capsys
                                                                ) -> None:
    write_source(user_root, pin=False)
    _forget()
    assert "mycluster" in registry.all_sources()
    con = connect(["mycluster", "mltraces.jobs"])
    assert rows(con, "SELECT state, origin FROM mltraces.status "
                     "WHERE table_name = 'mycluster.jobs'") == [
        ("unverified", f"local: {(user_root / 'mycluster').resolve()}")]
    assert rows(con, """SELECT job_id, state, queue_s, run_s, gpu_time_s FROM mltraces.jobs
                        WHERE trace = 'mycluster/jobs' ORDER BY job_id""") == [
        ("1", "COMPLETED", 600.0, 3600.0, 14400.0), ("2", "FAILED", 0.0, 1800.0, 14400.0),
        ("3", "COMPLETED", 60.0, 60.0, 0.0)]
    assert main(["validate", "mycluster.jobs"]) == 0
    assert "3 rows, 25 rules, 0 with findings" in capsys.readouterr().out
    assert main(["schedule", "--trace", "mycluster/all", "--policy", "fifo", "--summary",
                 "--format", "json"]) == 0
    [summary] = json.loads(capsys.readouterr().out)
    assert (summary["cluster"], summary["jobs"]) == ("n2g8", 2)  # its capacity; no CPU job


def test_a_pinned_local_file_is_verified_and_a_changed_one_refused(user_root: Path) -> None:
    folder = write_source(user_root, pin=True)
    _forget()
    con = connect(["mycluster.jobs"], strict=True)
    assert scalar(con, "SELECT state FROM mltraces.status") == "ready"
    (folder / "jobs.csv").write_text(CSV.replace("ann", "eve"))
    con = connect(["mycluster.jobs"])
    state, reason = rows(con, "SELECT state, reason FROM mltraces.status")[0]
    assert state == "unavailable" and "mltraces pin" in reason


def test_a_users_source_may_not_take_a_shipped_name(user_root: Path) -> None:
    from mltraces.errors import RegistryError

    (user_root / "itp").mkdir(parents=True)
    (user_root / "itp" / "source.json").write_text("{}")
    with pytest.raises(RegistryError, match="a source named 'itp' exists already"):
        registry.source_folders()
