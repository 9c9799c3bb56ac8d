"""`mltraces schedule` and the scheduler's catalog inputs, on the real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, real_catalog  # noqa: F401

import mltraces
from mltraces.cli import main
from mltraces.scheduling import inputs, schedule
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.fig8b import FIG8B_TRACE_IDS, PUBLISHED_FIG8B


def test_every_declared_trace_names_a_table_of_its_source() -> None:
    from mltraces.schema import all_schemas

    for key, trace in inputs.declared().items():
        assert trace.table in all_schemas() and trace.table.startswith(key.split("/")[0] + ".")
    assert set(FIG8B_TRACE_IDS.values()) <= {
        t for t in (f"itp/{label}" for label in FIG8B_TRACE_IDS) if inputs.resolve(t)} | {
        "elasticflow/philly"}


def test_unknown_trace_lists_the_known_ones() -> None:
    with pytest.raises(SchedulingError, match=r"unknown trace 'itp'.*itp/<cluster>.*elasticflow/"):
        inputs.resolve("itp")


@pytest.mark.upstream
def test_catalog_inputs_replay_like_the_artifact_files(
        real_catalog, upstream_dir: Path) -> None:  # noqa: F811
    """cluster10 read from the catalog and from the artifact's own files: same outcomes."""
    from mltraces.registry import get_file

    con = real_catalog.con
    from_catalog = schedule(inputs.load_jobs(con, "itp/cluster10"),
                            inputs.load_cluster(con, "n32g8"), inputs.load_profiles(con),
                            "edf,gandiva,tiresias", trace_name="cluster10")
    folder = upstream_dir / get_file("elasticflow/throughputs_A100/bert.csv").url.removeprefix(
        "https://")
    jobs = con.sql("SELECT * EXCLUDE (cluster, gpu_hours, deadline_factor) FROM "
                   "itp.elasticflow_jobs WHERE cluster = 'cluster10'").df()
    from_files = schedule(jobs, "n32g8", folder.parent, "edf,gandiva,tiresias",
                          trace_name="cluster10")
    assert from_catalog.jobs.equals(from_files.jobs)
    ratios = from_catalog.summary.set_index("policy")["ddl_satis_ratio"]
    # the artifact run on cluster10 (benchmarks/bench_schedule.py): every job identical
    assert ratios.round(4).to_dict() == {"edf": 0.7769, "gandiva": 0.3308, "tiresias": 0.4769}


@pytest.mark.upstream
def test_cli_prints_ours_beside_the_published_value(http_mirror, capsys) -> None:
    assert main(["schedule", "--trace", "itp/cluster10", "--policy", "edf,tiresias"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:8] == ["trace", "cluster", "policy", "jobs", "admitted", "met",
                                    "ratio", "published"]
    edf = lines[1].split()
    assert edf[:3] == ["itp/cluster10", "n32g8", "edf"]
    assert (edf[6], float(edf[7])) == ("0.7769", PUBLISHED_FIG8B["edf"]["cluster10"])


@pytest.mark.upstream
def test_cli_prints_fig8a_beside_the_pollux_trace(http_mirror, capsys) -> None:
    """The Pollux trace on n16g4 with T4 profiles is Fig. 8(a): its published bars are shown."""
    from mltraces.scheduling.fig8a import PUBLISHED_FIG8A

    assert main(["schedule", "--trace", "elasticflow/pollux", "--cluster", "n16g4", "--gpu-type",
                 "T4", "--policy", "edf,chronus", "--workers", "1"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:3]]
    assert [(r[2], r[6], float(r[7])) for r in rows] == [
        ("edf", "0.1179", PUBLISHED_FIG8A["edf"]),
        ("chronus", "0.4256", PUBLISHED_FIG8A["chronus"])]


@pytest.mark.upstream
def test_cli_jobs_as_csv_and_summary_as_json(http_mirror, capsys, tmp_path: Path) -> None:
    assert main(["schedule", "--trace", "elasticflow/example", "--cluster", "n1g8",
                 "--policy", "edf", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("trace,cluster,policy,job_id") and len(out) == 1 + 5
    target = tmp_path / "summary.json"
    assert main(["schedule", "--trace", "elasticflow/example", "--cluster", "n1g8", "--policy",
                 "edf,fifo", "--summary", "--format", "json", "-o", str(target)]) == 0
    rows = json.loads(target.read_text())
    assert [r["policy"] for r in rows] == ["edf", "fifo"] and rows[0]["jobs"] == 5


@pytest.mark.upstream
def test_cli_utilisation_is_a_step_series(http_mirror, capsys) -> None:
    assert main(["schedule", "--trace", "itp/testbed", "--cluster", "n16g8", "--policy", "edf",
                 "--utilisation", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "trace,cluster,policy,time,allocated_gpus,cluster_gpus"
    allocated = [int(line.split(",")[4]) for line in lines[1:]]
    assert max(allocated) <= 128 and allocated[-1] == 0


def test_cli_errors_name_the_fix(capsys) -> None:
    assert main(["schedule", "--trace", "all", "--cluster", "n32g8"]) == 1
    assert "drop --cluster" in capsys.readouterr().err
    assert main(["schedule", "--trace", "itp/testbed", "--policy", "edf"]) == 1
    assert "--cluster n16g8" in capsys.readouterr().err
    assert main(["schedule", "--trace", "nowhere/x"]) == 1
    assert "unknown trace 'nowhere/x'" in capsys.readouterr().err


def test_public_schedule_function() -> None:
    assert mltraces.schedule is schedule


@pytest.mark.upstream
def test_acme_jobs_without_deadlines_replay_under_fifo_sjf_tiresias(
        http_mirror, capsys, tmp_path: Path) -> None:
    import pandas as pd
    import synthetic

    kalos = synthetic.write_kalos_trace(tmp_path / "trace_kalos.csv", 800, 7)
    assert main(["schedule", "--trace", "acme/kalos", "--cluster", "n4g8", "--policy",
                 "fifo,sjf,tiresias", "--summary", "--format", "json",
                 "--local", f"acme.kalos_jobs={kalos}"]) == 0
    rows = json.loads(capsys.readouterr().out)
    frame = pd.read_csv(kalos)
    gpu_jobs = frame[(frame["gpu_num"] > 0) & frame["duration"].notna()]
    assert [r["policy"] for r in rows] == ["fifo", "sjf", "tiresias"]
    assert {r["jobs"] for r in rows} == {len(gpu_jobs)}
    fits = int((gpu_jobs["gpu_num"] <= 32).sum())  # bigger jobs cannot run on 32 GPUs
    assert {r["admitted"] for r in rows} == {fits}
    assert all(r["mean_queueing_delay"] >= 0 for r in rows)
    sjf, fifo = rows[1]["mean_jct"], rows[0]["mean_jct"]
    assert sjf <= fifo  # shortest-job-first never loses on mean JCT to FIFO here


def test_a_cold_planner_cache_is_announced_before_elasticflow_replays(
    tmp_path, monkeypatch, capsys
) -> None:
    """The first ElasticFlow replay compiles for a minute: the CLI says so, not looking stuck."""
    import os
    import subprocess
    import sys

    pytest.importorskip("numba", reason="numba is not installed")
    from mltraces.commands.schedule import _announce_compilation
    from mltraces.scheduling import EDF, ElasticFlow, Gandiva, efcore, gandivacore

    probe = ("from mltraces.scheduling import efcore, gandivacore; "
             "print(efcore.compiled(), gandivacore.compiled())")
    cold = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)},
                          check=True)
    assert cold.stdout.split() == ["False", "False"]  # an empty cache: nothing compiled yet

    monkeypatch.setattr(efcore, "compiled", lambda: False)
    _announce_compilation([EDF()], quiet=False)
    assert capsys.readouterr().err == ""  # no ElasticFlow, nothing to compile
    _announce_compilation([ElasticFlow()], quiet=True)
    assert capsys.readouterr().err == ""
    _announce_compilation([ElasticFlow()], quiet=False)
    assert "compiling ElasticFlow's planner" in capsys.readouterr().err
    monkeypatch.setattr(gandivacore, "compiled", lambda: False)
    _announce_compilation([Gandiva(), ElasticFlow()], quiet=False)
    said = capsys.readouterr().err
    assert "Gandiva's round loop" in said and "ElasticFlow's planner" in said
