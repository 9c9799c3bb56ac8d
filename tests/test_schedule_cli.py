"""`mltraces schedule` and the scheduler's catalog inputs, on the real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, real_catalog  # noqa: F401

import mltraces
from mltraces.cli import main
from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_TRACE_IDS, PUBLISHED_FIG8B
from mltraces.scheduling import schedule
from mltraces.scheduling.errors import SchedulingError
from mltraces.workloads import cluster as inputs


def test_every_declared_trace_names_a_table_of_its_source() -> None:
    from mltraces.jobmap import replay_names
    from mltraces.schema import all_schemas

    for key, entry in replay_names().items():
        assert entry.table in all_schemas() and entry.table.startswith(key.split("/")[0] + ".")
    for trace_id in FIG8B_TRACE_IDS.values():
        assert inputs.resolve(trace_id).entry.table in {"itp.elasticflow_jobs",
                                                        "elasticflow.philly_jobs"}
    assert inputs.resolve("itp/cluster10").where == {"cluster": "cluster10"}
    assert inputs.resolve("itp/testbed").entry.table == "itp.testbed_jobs"  # literal first
    raw = inputs.resolve("itp/raw/cluster10")
    assert (raw.entry.table, raw.where) == ("itp.jobs", {"cluster": "cluster10"})


def test_unknown_trace_lists_the_known_ones() -> None:
    with pytest.raises(SchedulingError,
                       match=r"unknown trace 'itp'.*elasticflow/philly.*itp/elasticflow/"
                             r"\{cluster\}"):
        inputs.resolve("itp")


def test_every_replay_answers_to_the_jobs_views_name_and_the_old_names_still_work() -> None:
    """One trace had three names (itp/elasticflow in the view, itp/cluster10 for --trace,
    cluster01 in the full run); the view's name, sliced by cluster or VC, is now the one."""
    assert inputs.canonical_id("itp/cluster10") == "itp/elasticflow/cluster10"
    assert inputs.canonical_id("itp/elasticflow/cluster10") == "itp/elasticflow/cluster10"
    assert inputs.resolve("itp/elasticflow/cluster10").where == {"cluster": "cluster10"}
    assert inputs.canonical_id("philly/all") == "philly/jobs"
    assert inputs.canonical_id("philly/vc/6214e9") == "philly/jobs/vc/6214e9"
    assert inputs.canonical_id("helios/venus") == "helios/jobs/venus"
    from mltraces.jobmap import job_tables, replay_names

    traces = {e.trace for e in job_tables().values()}
    for name in replay_names(aliases=False):
        assert name.split("/{")[0].removesuffix("/vc") in traces, name


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
    assert edf[:3] == ["itp/elasticflow/cluster10", "n32g8", "edf"]  # the view's name
    assert (edf[6], float(edf[7])) == ("0.7769", PUBLISHED_FIG8B["edf"]["cluster10"])


@pytest.mark.upstream
def test_cli_prints_fig8a_beside_the_pollux_trace(http_mirror, capsys) -> None:
    """The Pollux trace on n16g4 with T4 profiles is Fig. 8(a): its published bars are shown."""
    from mltraces.papers.elasticflow_asplos23.fig8a import PUBLISHED_FIG8A

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
    assert main(["schedule", "--trace", "elasticflow/example", "--policy", "edf"]) == 1
    assert "declares no capacity" in capsys.readouterr().err
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


def test_a_core_running_as_plain_python_is_announced(monkeypatch, capsys) -> None:
    """A core whose extension was not built runs about 100 times slower: the CLI says so in
    one line, naming why, once per process, and says nothing when the cores run compiled."""
    from mltraces.commands.schedule import _announce_interpreted
    from mltraces.scheduling import EDF, Chronus, EDFElastic, ElasticFlow, Gandiva
    from mltraces.scheduling.cores import native

    def fresh(compiled: bool) -> None:
        monkeypatch.setattr(native.SET, "_build", native.Build(compiled, "no C compiler"))
        monkeypatch.setattr(native.SET, "_said", False)

    fresh(True)
    _announce_interpreted([ElasticFlow(), Gandiva()], quiet=False)
    assert capsys.readouterr().err == ""
    fresh(False)
    _announce_interpreted([EDF()], quiet=False)
    assert capsys.readouterr().err == ""  # no policy on a core
    _announce_interpreted([ElasticFlow()], quiet=True)
    _announce_interpreted([ElasticFlow()], quiet=False)  # -q counted as said
    assert capsys.readouterr().err == ""
    fresh(False)
    _announce_interpreted([EDFElastic()], quiet=False)  # ElasticFlow's planner too
    assert capsys.readouterr().err.startswith(
        "mltraces: ElasticFlow's planner runs as plain Python")
    fresh(False)
    _announce_interpreted([Gandiva(), ElasticFlow(), Chronus()], quiet=False)
    _announce_interpreted([Chronus()], quiet=False)  # said already in this process
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(
        "mltraces: ElasticFlow's planner, Gandiva's rounds and Chronus's lease packing run as "
        "plain Python, about 100 times slower: no C compiler (process ")


@pytest.mark.upstream
def test_seren_replays_on_its_own_capacity_under_fifo_sjf_tiresias(
        http_mirror, capsys, tmp_path: Path) -> None:
    from mltraces.synthetic import write_file

    seren = write_file("acme/trace_seren.csv", tmp_path, rows=400, seed=3)
    assert main(["schedule", "--trace", "acme/seren", "--policy", "fifo,sjf,tiresias",
                 "--summary", "--format", "json", "--local", f"acme.seren_jobs={seren}"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["policy"] for r in rows] == ["fifo", "sjf", "tiresias"]
    assert {r["cluster"] for r in rows} == {"n286g8"}  # 2,288 GPUs, from acme's jobs.json
    assert {r["finished"] for r in rows} == {r["jobs"] for r in rows}


def test_capacity_from_a_table_is_summed_over_the_replayed_clusters(real_catalog,  # noqa: F811
                                                                   monkeypatch) -> None:
    import dataclasses

    from mltraces import jobmap

    entry = jobmap.job_table("itp.jobs")
    capacity = jobmap.Capacity(gpus_per_node=4, gpus="max(num_gpu)", table="itp.jobs",
                               cluster="cluster")
    patched = {**jobmap.job_tables(), "itp.jobs": dataclasses.replace(entry, capacity=capacity,
                                                                      replay=("raw/{cluster}",
                                                                              "raw"))}
    monkeypatch.setattr(jobmap, "job_tables", lambda: patched)
    con = real_catalog.con
    widest = dict(con.execute("SELECT cluster, max(num_gpu) FROM itp.jobs GROUP BY 1").fetchall())
    assert inputs.default_cluster(con, "itp/raw/cluster10") == f"n{-(-widest['cluster10'] // 4)}g4"
    total = sum(widest.values())
    assert inputs.default_cluster(con, "itp/raw") == f"n{-(-total // 4)}g4"


@pytest.mark.upstream
def test_cli_replays_a_generated_trace_and_saves_it(http_mirror, capsys, tmp_path: Path) -> None:
    """Fig. 10's trace: the artifact's generator output, byte for byte (its sha256 in
    tests/test_generator.py), and EDF's ratio there as the artifact gives it."""
    import hashlib

    from test_generator import ARTIFACT_CSV_SHA256

    from mltraces.papers.elasticflow_asplos23.generator import TraceSpec

    saved = tmp_path / "fig10.csv"
    assert main(["schedule", "--generate", "num_jobs=100,lam=1500,min_ddl=1.5,seed=1",
                 "--cluster", "n16g8", "--slot", "240", "--policy", "edf", "--summary",
                 "--format", "json", "--save-trace", str(saved)]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["trace"] == "generated(num_jobs=100,lam=1500,seed=1,min_ddl=1.5)"
    assert row["ddl_satis_ratio"] == 0.92 and row["cluster"] == "n16g8"
    digest = hashlib.sha256(saved.read_bytes()).hexdigest()
    assert digest == ARTIFACT_CSV_SHA256[TraceSpec(100, 1500, seed=1, min_ddl=1.5)]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--generate", "num_jobs=10"], "give --cluster"),
        (["--generate", "lam=3", "--cluster", "n1g8"], "num_jobs is required"),
        (["--generate", "num_jobs=5", "--generate", "num_jobs=6", "--cluster", "n1g8",
          "--save-trace", "x.csv"], "writes one generated trace; got 2"),
    ],
)
def test_cli_generate_needs_its_settings(argv, message, capsys) -> None:
    assert main(["schedule", *argv]) != 0
    assert message in capsys.readouterr().err
