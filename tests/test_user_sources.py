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
    assert "3 rows, 26 rules, 0 with findings" in capsys.readouterr().out
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
    """The user's folder is left out and reported; the shipped source stays as it is."""
    (user_root / "itp").mkdir(parents=True)
    (user_root / "itp" / "source.json").write_text("{}")
    assert "a source named 'itp' exists already" in registry.broken_sources()["itp"]
    assert registry.get_source("itp").folder == registry.SOURCES_DIR / "itp"
    assert user_root / "itp" not in registry.source_folders()


def _half_made(root: Path, lacks: str) -> Path:
    """``root/half``: a complete user source folder but for ``lacks`` (a file or folder)."""
    folder = write_source(root, pin=False).rename(root / "half")
    card = json.loads((folder / "source.json").read_text())
    (folder / "source.json").write_text(json.dumps({**card, "name": "half"}))
    text = (folder / "schemas" / "jobs.json").read_text().replace("mycluster", "half")
    (folder / "schemas" / "jobs.json").write_text(text)
    (folder / "jobs.json").write_text((folder / "jobs.json").read_text()
                                      .replace("mycluster", "half"))
    target = folder / lacks
    if target.is_dir():
        for path in target.iterdir():
            path.unlink()
        target.rmdir()
    else:
        target.unlink()
    return folder


@pytest.mark.parametrize("lacks", ["source.json", "citation.bib", "schemas"])
def test_a_half_made_user_source_says_what_it_lacks(user_root: Path, lacks: str, capsys
                                                    ) -> None:
    """Each missing part is named, in one line, wherever the source is named; never
    "unknown table or source"."""
    _half_made(user_root, lacks)
    _forget()
    for argv in (["info", "half"], ["sql", "SELECT count(*) FROM half.jobs"],
                 ["validate", "half"]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "unknown table" not in err, (argv, err)
        assert f"/half lacks {lacks}" in err and "Traceback" not in err, (argv, err)


def test_a_broken_user_source_stops_no_other_command(user_root: Path, capsys) -> None:
    """``list zeus``, ``info zeus``, ``tables`` and a catalog of every table go on; the
    listings and ``mltraces.status`` say which folder is broken and why."""
    _half_made(user_root, "citation.bib")
    _forget()
    assert main(["list", "zeus"]) == 0 and main(["info", "zeus"]) == 0
    assert "citation.bib" not in capsys.readouterr().err
    assert main(["list"]) == 0
    err = capsys.readouterr().err
    assert "source half is broken, left out:" in err and "lacks citation.bib" in err
    status = dict(rows(connect(), "SELECT table_name, reason FROM mltraces.status "
                                  "WHERE table_name LIKE 'half%'"))
    assert "lacks citation.bib" in status["half.*"]
    assert "half" not in registry.all_sources() and "zeus" in registry.all_sources()


def test_a_schema_naming_a_file_that_is_no_id_is_told_the_id(user_root: Path) -> None:
    from mltraces.errors import SchemaError

    folder = write_source(user_root, pin=False)
    path = folder / "schemas" / "jobs.json"
    path.write_text(path.read_text().replace('"mycluster/jobs.csv"', '"mycluster/job.csv"'))
    _forget()
    with pytest.raises(SchemaError, match=r"file 'mycluster/job.csv' is no file id of "
                       r"mycluster's source.json .*it should be 'mycluster/jobs.csv'"):
        connect(["mycluster.jobs"], strict=True)


def test_the_status_view_is_served_by_mltraces_sql(capsys) -> None:
    """The README's ``SELECT * FROM mltraces.status`` is the catalog's own view, no table."""
    assert main(["sql", "SELECT count(*) AS n FROM mltraces.status", "--format", "csv"]) == 0
    assert int(capsys.readouterr().out.splitlines()[1]) > 0


def test_models_without_a_profile_replay_by_duration_and_say_so_once(
        user_root: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace that maps model and iterations, whose models ElasticFlow never profiled (and
    whose profiles are not even fetched here), replays by its run time with one note."""
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    folder = write_source(user_root, pin=False)
    mapping = json.loads((folder / "jobs.json").read_text())
    mapping["tables"][0]["columns"].update({"model": "'llama'", "iterations": "1000",
                                            "batch_size": "64"})
    (folder / "jobs.json").write_text(json.dumps(mapping))
    _forget()
    assert main(["schedule", "--trace", "mycluster/all", "--policy", "fifo,sjf",
                 "--cluster", "n2g8", "--format", "csv", "--summary"]) == 0
    out, err = capsys.readouterr()
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "the jobs of models llama replay by their run time" in notes[0]
    assert "elasticflow.throughputs is not available" in notes[0]
    assert out.count("mycluster/jobs") == 2  # printed as the jobs view names it


@pytest.mark.upstream
def test_models_the_profiles_lack_replay_by_duration_beside_profiled_ones(
        user_root: Path, http_mirror: str, capsys) -> None:
    """With ElasticFlow's profiles fetched, only the jobs of an unprofiled model replay by
    their run time; a profiled model (resnet50 at 64) keeps its iterations."""
    folder = write_source(user_root, pin=False)
    mapping = json.loads((folder / "jobs.json").read_text())
    mapping["tables"][0]["columns"].update({
        "model": "CASE WHEN id = 1 THEN 'resnet50' ELSE 'llama' END", "iterations": "1000",
        "batch_size": "64"})
    (folder / "jobs.json").write_text(json.dumps(mapping))
    _forget()
    from mltraces.workloads import cluster

    con = connect(cluster.tables_for(["mycluster/all"]))
    with pytest.warns(UserWarning, match="models llama replay by their run time: "
                      "elasticflow.throughputs has no A100 profile for them"):
        case = cluster.case(con, "mycluster/all", "n2g8")
    models = dict(zip(case.jobs.frame["job_id"], case.jobs.frame["model"], strict=True))
    assert models == {"1": "resnet50", "2": ""}  # job 3 asks for no GPU: not replayed
    assert case.profiles is not None
