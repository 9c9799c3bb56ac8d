"""Our exports fed to the other simulators' own parsers, run here as black boxes.

Each simulator's code is extracted from its repository snapshot into
``benchmarks/_work/interop/<name>`` with a venv of the Python it was written for
(``python benchmarks/interop.py build``, see ``tests/interop_harness.py``);
a driver calls its loading function (or runs the whole simulation) on our file in a
subprocess and prints what it parsed. A test skips, saying why, where that is not
built. Checked here: ElasticFlow's scheduler (a whole EDF replay), the Tiresias
simulator (Python 2.7, a whole FIFO replay), Pollux's simulator (a whole Tiresias-policy
replay), Gavel's ``parse_trace``, Blox's ``parse_jobs`` and Synergy's ``parse_jobs_full``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from catalog_fixtures import loopback_only, real_catalog  # noqa: F401
from interop_harness import SIMULATORS, ready, run_driver, source_root
from synthetic_sources import served_catalog

from mltraces.catalog import connect
from mltraces.interop.exporting import export
from mltraces.interop.importing import _forget_scans, import_workload
from mltraces.interop.jobs import read_trace
from mltraces.interop.recipes import apply, get_recipe


def need(name: str) -> None:
    why = ready(name)
    if why:
        pytest.skip(why)


@pytest.fixture
def real(real_catalog):  # noqa: F811
    return real_catalog


@pytest.fixture(scope="module")
def philly_con(tmp_path_factory: pytest.TempPathFactory):
    """Synthetic Philly jobs, built once for the module's tests (they only read them)."""
    folder = tmp_path_factory.mktemp("philly-4000")
    with served_catalog(folder, ["philly"], ["philly.jobs"], rows=4000, seed=7) as con:
        yield con


def test_elasticflow_replays_our_annotated_export_as_we_do(real, tmp_path: Path, http_mirror,
                                                           monkeypatch) -> None:
    """Raw ITP cluster10 through the recipe and a fresh annotation: the artifact's EDF and
    ours give every job the same outcome on the file we wrote."""
    need("elasticflow")
    from mltraces.scheduling import schedule
    from mltraces.workloads import cluster as inputs

    out = tmp_path / "c10.csv"
    export("itp/raw/cluster10", "elasticflow", out, recipe="elasticflow-itp", seed=9,
           con=real.con)
    theirs = run_driver("elasticflow", str(out), "n32g8", "edf", str(tmp_path / "log"))
    written = pd.read_csv(out, dtype={"job_id": str}).set_index("job_id")
    log = pd.DataFrame(theirs["jobs"]).set_index("job_id")
    assert sorted(log.index) == sorted(written.index)
    # (its log's num_gpu is the last allocation: elastic scaling changes it)
    for ours_, theirs_ in (("submission_time", "submit_time"), ("deadline", "ddl")):
        assert (log[theirs_].astype(int) == written.loc[log.index, ours_]).all(), theirs_
    monkeypatch.setenv("MLTRACES_SOURCES", str(tmp_path / "sources"))
    _forget_scans()
    try:
        import_workload(out, name="c10again")
        con = connect(["c10again.jobs", *inputs.tables_for(["c10again/all"])])
        result = schedule(inputs.load_jobs(con, "c10again/all"), inputs.load_cluster(con, "n32g8"),
                          inputs.load_profiles(con), "edf")
        con.close()
    finally:
        monkeypatch.setenv("MLTRACES_SOURCES", "")
        _forget_scans()
    assert result.summary["ddl_satis_ratio"].iloc[0] == pytest.approx(theirs["ratio"])
    met = log["end_time"].astype(float) <= log["ddl"].astype(float)
    ours = result.jobs.set_index("job_id")["deadline_met"]
    assert (ours.loc[met.index] == met).all()


def test_tiresias_replays_our_export(real, tmp_path: Path) -> None:
    need("tiresias")
    out = tmp_path / "c10.csv"
    export("itp/raw/cluster10", "tiresias", out, con=real.con)
    theirs = run_driver("tiresias", str(out), "n32g4.csv", "fifo", str(tmp_path / "log"))
    log = pd.DataFrame(theirs["jobs"], columns=theirs["header"]).set_index("job_id")
    written = pd.read_csv(out, dtype={"job_id": str}).set_index("job_id")
    assert sorted(log.index) == sorted(written.index)  # every job parsed and finished
    for column in ("num_gpu", "submit_time", "duration"):
        assert (log[column].astype(int) == written.loc[log.index, column]).all(), column
    assert (log["executed_time"].astype(int) == log["duration"].astype(int)).all()


def test_pollux_replays_our_export(real, tmp_path: Path) -> None:
    need("pollux")
    whole = tmp_path / "c10.csv"
    export("itp/raw/cluster10", "pollux", whole, con=real.con)
    out = tmp_path / "c10-first20.csv"  # its replay steps every 60 s: the first 20 jobs
    out.write_text("".join(whole.read_text().splitlines(keepends=True)[:21]))
    theirs = run_driver("pollux", str(out), "tiresias")
    written = pd.read_csv(out)
    parsed = pd.DataFrame(theirs["jobs"])
    assert parsed["name"].tolist() == written["name"].tolist()
    assert parsed["submission_time"].tolist() == written["time"].tolist()
    assert sorted(theirs["jcts"]) == sorted(written["name"])  # every job ran to completion


def test_gavel_parses_our_export(real, tmp_path: Path) -> None:
    need("gavel")
    throughputs = source_root("gavel") / "scheduler" / "simulation_throughputs.json"
    out = tmp_path / "c10.trace"
    export("itp/raw/cluster10", "gavel", out, gavel_throughputs=throughputs, con=real.con)
    theirs = run_driver("gavel", str(out))
    lines = [line.split("\t") for line in out.read_text().splitlines()]
    assert len(theirs["jobs"]) == len(lines)
    for job, arrival, line in zip(theirs["jobs"], theirs["arrivals"], lines, strict=True):
        assert (job["job_type"], job["total_steps"], job["scale_factor"]) == (
            line[0], int(line[5]), int(line[6]))
        assert job["SLO"] is None and arrival == float(line[9])
    measured = json.loads(throughputs.read_text())["v100"]
    assert all(str((j["job_type"], j["scale_factor"])) in measured for j in theirs["jobs"])


def _blox_expectation(frame: pd.DataFrame) -> pd.DataFrame:
    """What Blox's parse_jobs (attempts summed, multi-GPU) keeps of our one-attempt log."""
    ran = frame[frame["start_s"].notna()]
    wall = ran["submit_time"].dt.tz_localize(None)
    run = (ran["end_time"].dt.tz_localize(None) - ran["start_time"].dt.tz_localize(None))
    jobs = ran.assign(arrival=(wall - wall.min()).dt.total_seconds(),
                      wall_run=run.dt.total_seconds(),  # naive times: DST shifts an hour
                      queued=(ran["start_time"].dt.tz_localize(None) - wall).dt.total_seconds())
    jobs = jobs[jobs["end_s"].notna() & (jobs["num_gpu"] > 0) & (jobs["num_gpu"] <= 16)]
    jobs = jobs[(jobs["wall_run"] > 10 ** 1.5 * 60) & (jobs["wall_run"] < 1e4 * 60)]
    gpus = jobs["num_gpu"].where(jobs["num_gpu"].isin([1, 2, 4, 8, 16]), 1)
    return jobs.assign(gpus=gpus).set_index("job_id")


def test_blox_parses_our_job_log(philly_con, tmp_path: Path) -> None:
    need("blox")
    out = tmp_path / "cluster_job_log"
    export("philly/jobs", "philly", out, con=philly_con)
    theirs = pd.DataFrame(run_driver("blox", str(out), "multigpu")).set_index("job_id")
    expected = _blox_expectation(read_trace(philly_con, "philly/jobs").frame)
    assert len(theirs) > 100 and sorted(theirs.index) == sorted(expected.index)
    expected = expected.loc[theirs.index]
    assert (theirs["arrival"] == expected["arrival"]).all()
    assert (theirs["iterations"] == expected["wall_run"]).all()
    assert (theirs["gpus"] == expected["gpus"]).all()
    assert (theirs["queueing"] == expected["queued"]).all()
    assert (expected["wall_run"] != expected["run_s"]).any()  # a job over the end of DST


def test_synergy_keeps_what_the_synergy_philly_recipe_keeps(philly_con, tmp_path: Path) -> None:
    need("synergy")
    out = tmp_path / "cluster_job_log"
    export("philly/jobs", "philly", out, con=philly_con)
    theirs = pd.DataFrame(run_driver("synergy", str(out))).set_index("job_id")
    frame = read_trace(philly_con, "philly/jobs").frame
    kept, report = apply(get_recipe("synergy-philly"), frame)
    assert len(kept) > 50 and sorted(theirs.index) == sorted(kept["job_id"])
    kept = kept.set_index("job_id").loc[theirs.index]
    wall = kept["end_time"].dt.tz_localize(None) - kept["start_time"].dt.tz_localize(None)
    assert (theirs["iterations"] == wall.dt.total_seconds()).all()
    assert (theirs["gpus"] == kept["num_gpu"]).all()
    assert {r["rule"]: r["removed"] for r in report}["hours_2400_to_3000"] > 1000


@pytest.mark.parametrize("name", list(SIMULATORS))
def test_no_parser_takes_a_comment_line(name: str, real, philly_con, tmp_path: Path) -> None:
    """Why the provenance is a sidecar: a '#' line breaks or changes every parser's reading."""
    need(name)
    fmt = {"elasticflow": "elasticflow", "tiresias": "tiresias", "pollux": "pollux",
           "gavel": "gavel", "blox": "philly", "synergy": "philly"}[name]
    out = tmp_path / "trace"
    throughputs = source_root("gavel") / "scheduler" / "simulation_throughputs.json"
    con = philly_con if fmt == "philly" else real.con
    trace = "philly/jobs" if fmt == "philly" else "itp/raw/cluster10"
    export(trace, fmt, out, gavel_throughputs=throughputs if fmt == "gavel" else None, con=con)
    text = out.read_text().splitlines(keepends=True)
    out.write_text("# provenance: mltraces export\n" + "".join(text[:21]))
    args = {"elasticflow": [str(out), "n32g8", "edf", str(tmp_path / "log")],
            "tiresias": [str(out), "n32g4.csv", "fifo", str(tmp_path / "log")],
            "pollux": [str(out), "tiresias"]}.get(name, [str(out)])
    with pytest.raises(RuntimeError, match="driver failed"):
        run_driver(name, *args)
