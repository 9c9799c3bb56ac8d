"""Interop: export any trace in the other simulators' formats, filtered by named recipes,
and import their workloads back as sources (issue 25).

Recipes and annotations are checked on frames built here; exports and imports on the
real ITP, ElasticFlow and Pollux files (``../shared/upstream``) and on synthetic Philly
job logs in the upstream format. The other simulators' own parsers are run on our files
in ``test_interop_parsers.py``; the ITP re-derivation is ``test_interop_itp.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from catalog_fixtures import loopback_only, real_catalog, rows  # noqa: F401
from synthetic_sources import served_catalog

from mltraces.catalog import connect
from mltraces.cli import main
from mltraces.errors import MltracesError, OutputError
from mltraces.interop import annotate, names
from mltraces.interop.exporting import export, provenance_path
from mltraces.interop.formats import FORMATS
from mltraces.interop.importing import _forget_scans, detect_format, import_workload
from mltraces.interop.jobs import read_trace
from mltraces.interop.recipes import RECIPES, apply, get_recipe

POLLUX_CSV = ("raw.githubusercontent.com/petuum/adaptdl/"
              "c793c7089bd307462686339d29707925c461f9a9/simulator/traces/philly.csv")
GAVEL_TYPES = {"v100": {
    str((f"ResNet-18 (batch size {b})", s)): {"null": 10.0 * s + b / 100} for b in (32, 64)
    for s in (1, 2, 4, 8)} | {str(("A3C", 1)): {"null": 3.0}}}


@pytest.fixture
def real(real_catalog):  # noqa: F811  (the session's real tables, under a short name)
    return real_catalog


@pytest.fixture
def user_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "sources"
    monkeypatch.setenv("MLTRACES_SOURCES", str(root))
    _forget_scans()
    yield root
    monkeypatch.setenv("MLTRACES_SOURCES", "")
    _forget_scans()


def common(**columns: object) -> pd.DataFrame:
    """A frame of mltraces.jobs columns (what recipes and exports read)."""
    n = len(next(iter(columns.values())))  # type: ignore[arg-type]
    base = {"trace": ["t/x"] * n, "cluster": [None] * n, "job_id": [f"j{i}" for i in range(n)],
            "user": [None] * n, "vc": [None] * n, "submit_time": [pd.NaT] * n,
            "start_time": [pd.NaT] * n, "end_time": [pd.NaT] * n,
            "submit_s": np.arange(n, dtype=float), "start_s": [np.nan] * n,
            "end_s": [np.nan] * n, "run_s": [1000.0] * n, "num_gpu": [1.0] * n,
            "num_nodes": [None] * n, "state": ["UNKNOWN"] * n, "model": [None] * n,
            "batch_size": [None] * n, "iterations": [None] * n, "deadline_s": [None] * n}
    return pd.DataFrame({**base, **columns})


def imported_jobs(path: Path, name: str, fmt: str | None = None) -> pd.DataFrame:
    """Import ``path`` as source ``name``; its rows of mltraces.jobs, by job id."""
    made = import_workload(path, fmt, name=name)
    con = connect([f"{name}.jobs", "mltraces.jobs"], strict=True)
    try:
        frame = con.sql(f"SELECT * FROM mltraces.jobs WHERE trace = '{made.trace}'").df()
    finally:
        con.close()
    return frame.set_index("job_id", drop=False)


# ------------------------------------------------------------------------------ names


def test_the_cli_names_every_format_and_recipe() -> None:
    assert tuple(FORMATS) == names.FORMAT_NAMES
    assert tuple(RECIPES) == names.RECIPE_NAMES


# ------------------------------------------------------------------------------ recipes


def test_pollux_keeps_at_least_60_s_and_under_1000_gpu_hours() -> None:
    frame = common(run_s=[59.0, 60.0, 3_600_000.0, 3_599_999.0, 1_800_000.0, np.nan],
                   num_gpu=[1.0, 1.0, 1.0, 1.0, 2.0, 1.0])
    kept, report = apply(get_recipe("pollux"), frame)
    assert list(kept["job_id"]) == ["j1", "j3"]
    assert [r["removed"] for r in report] == [2, 2]  # 59 s and unknown; 1,000 h twice


def test_elasticflow_itp_rules_in_the_artifacts_order() -> None:
    frame = common(
        submit_s=[0.0, -1.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0],
        run_s=[600.0, 600.0, 599.0, 600.0, 600.0, 600.0, 600.0, 600.0, 600.0, 900.0],
        num_gpu=[1.0, 1.0, 1.0, 3.0, 7.0, 12.0, 65.0, 64.0, 8.0, 2.0],
        state=["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED",
               "COMPLETED", "COMPLETED", "FAILED", "CANCELLED"])
    kept, report = apply(get_recipe("elasticflow-itp"), frame)
    assert list(kept["job_id"]) == ["j0", "j7", "j9"]
    assert {r["rule"]: r["removed"] for r in report} == {
        "not_failed": 1, "submit_not_negative": 1, "gpus_not_3_5_6_7": 2,
        "duration_at_least_600s": 1, "gpus_at_most_64": 1, "gpus_profiled": 1}


def test_a_rule_on_a_column_the_trace_lacks_is_not_applied_and_says_so() -> None:
    kept, report = apply(get_recipe("elasticflow-itp"), common(run_s=[700.0, 800.0]))
    assert len(kept) == 2
    assert report[0] == {"rule": "not_failed", "description": "status is not failed",
                         "removed": 0, "applied": False, "why": "the trace records no state"}


def test_synergy_window_is_on_the_wall_clock_and_stops_at_8000() -> None:
    hour = 3600.0
    starts = pd.Timestamp("2017-08-07 00:00", tz="America/Los_Angeles")
    submits = [0.0, 2400 * hour + 10, 2999 * hour, 3000 * hour + 10, 2500 * hour, 2600 * hour]
    frame = common(submit_s=submits, start_s=[s + 5 for s in submits],
                   end_s=[s + 5000 for s in submits], run_s=[4995.0] * 6,
                   num_gpu=[1.0, 1.0, 3.0, 1.0, 16.0, 1.0],
                   submit_time=[starts + pd.Timedelta(seconds=s) for s in submits])
    frame.loc[5, "end_s"] = np.nan  # still running
    kept, report = apply(get_recipe("synergy-philly"), frame)
    # the wall clock fell back an hour on Nov 5: 2400 h + 10 s of real time is 2399 h + 10 s
    # on it (out), 3000 h + 10 s is 2999 h + 10 s (in)
    assert list(kept["job_id"]) == ["j3", "j4"]
    assert {r["rule"]: r["removed"] for r in report}["hours_2400_to_3000"] == 2
    many = common(submit_s=[2500 * hour] * 8005, start_s=[2500 * hour] * 8005,
                  end_s=[2500 * hour + 5000] * 8005, run_s=[5000.0] * 8005)
    many.loc[0, ["submit_s", "start_s"]] = 0.0
    kept, _ = apply(get_recipe("synergy-philly"), many)
    assert len(kept) == 8000 and kept.index[0] == 1


def test_an_unknown_recipe_names_the_known_ones() -> None:
    with pytest.raises(MltracesError, match="recipes: pollux, elasticflow-itp, synergy-philly, "
                                            "helios-qssf, helios-qssf-july"):
        get_recipe("philly")


# ------------------------------------------------------------------------------ annotations


def _rates() -> pd.DataFrame:
    rows_ = [(m, b, g, 10.0 / g + b / 1000) for m, b in annotate.ELASTICFLOW_TEMPLATES
             for g in (1, 2, 4, 8, 16, 32, 64) if not (m == "deepspeech2" and b == 32 and g == 64)]
    return pd.DataFrame(rows_, columns=["model", "batch_size", "num_gpus", "iterations_per_second"])


def test_elasticflow_annotation_follows_the_artifacts_rule() -> None:
    jobs = pd.DataFrame({"job_id": [f"j{i}" for i in range(400)],
                         "submit": np.arange(400) * 10, "duration": 600 + np.arange(400),
                         "gpus": [1, 2, 4, 8, 16, 32, 64, 3] * 50})
    first = annotate.elasticflow(jobs, _rates(), seed=3)
    again = annotate.elasticflow(jobs, _rates(), seed=3)
    assert first.frame.equals(again.frame)
    assert first.dropped == {"no A100 profile at its GPU count (the artifact drops these "
                             "jobs)": 50}
    out = first.frame
    assert (out["batch_size"] >= out["gpus"]).all()
    rate = {(m, b, g): r for m, b, g, r in _rates().itertuples(index=False)}
    assert all(i == int(d * rate[(m, b, g)]) for m, b, g, d, i in
               out[["model", "batch_size", "gpus", "duration", "iterations"]].itertuples(
                   index=False))
    slack = (out["deadline"] - out["submit"]) / out["duration"]
    assert slack.between(0.5 - 1 / 600, 1.5).all()
    assert set(out.loc[out["gpus"] == 64, "model"] + "/" + out.loc[
        out["gpus"] == 64, "batch_size"].astype(str)) <= {
        f"{m}/{b}" for m, b in annotate.ELASTICFLOW_TEMPLATES if b >= 64}
    assert not annotate.elasticflow(jobs, _rates(), seed=4).frame.equals(out)


def test_pollux_application_follows_gpu_hours() -> None:
    hours = pd.Series([0.5, 0.999, 1.0, 9.99, 10.0, 99.9, 100.0, 5000.0])
    apps = annotate.pollux_application(hours, np.linspace(0, 0.99, len(hours)))
    assert apps[0] in ("cifar10", "ncf") and apps[1] in ("cifar10", "ncf")
    assert apps[2] in ("deepspeech2", "bert") and apps[3] in ("deepspeech2", "bert")
    assert apps[4:] == ["yolov3", "yolov3", "imagenet", "imagenet"]
    jobs = pd.DataFrame({"job_id": ["a", "b"], "submit": [0, 1], "duration": [3600 * 200, 60],
                         "gpus": [128, 1]})
    out = annotate.pollux(jobs, 0).frame
    assert list(out["batch_size"]) == [12800, out["batch_size"][1]]  # capped at the profile
    assert out["batch_size"][1] in (128, 256)  # cifar10 or ncf, smallest profiled size


def test_gavel_annotation_uses_the_types_measured_at_the_jobs_gpus() -> None:
    profiles = annotate.gavel_profiles(GAVEL_TYPES)
    jobs = pd.DataFrame({"job_id": list("abcd"), "submit": [0, 1, 2, 3],
                         "duration": [100, 100, 100, 100], "gpus": [1, 8, 3, 2]})
    out = annotate.gavel(jobs, profiles, seed=0)
    assert out.dropped == {"no Gavel throughput at its GPU count (Gavel measured 1, 2, 4 and "
                           "8)": 1}
    assert all(int(d * profiles[(t, g)]) == s for t, g, d, s in
               out.frame[["model", "gpus", "duration", "iterations"]].itertuples(index=False))
    assert out.frame.loc[out.frame["gpus"] > 1, "model"].str.startswith("ResNet-18").all()
    with pytest.raises(MltracesError, match="has no 'v100' worker type"):
        annotate.gavel_profiles({"k80": {}})


# ------------------------------------------------------------------------------ real traces


def test_an_annotated_itp_cluster_exports_as_the_published_file(real, upstream_dir,
                                                                 tmp_path: Path) -> None:
    import tarfile

    with tarfile.open(upstream_dir / "raw.githubusercontent.com/microsoft/elasticflow-traces/"
                      "277ed24d0e908c31a1c98145819e2e3853d8ac00/data/"
                      "elasticflow-traces.tar.gz") as archive:
        for cluster in ("cluster10", "cluster01"):
            published = archive.extractfile(f"{cluster}.csv").read().decode()
            result = export(f"itp/{cluster}", "elasticflow", tmp_path / f"{cluster}.csv",
                            con=real.con)
            assert (tmp_path / f"{cluster}.csv").read_text() == published.rstrip("\n") + "\n"
            assert result.provenance["annotation"]["rules"][0].startswith("the trace's own")


def test_export_records_its_provenance_and_drops_what_the_format_cannot_hold(
        real, tmp_path: Path) -> None:
    out = tmp_path / "c10.trace"
    path = tmp_path / "gavel.json"
    path.write_text(json.dumps(GAVEL_TYPES))
    result = export("itp/raw/cluster10", "gavel", out, gavel_throughputs=path, seed=5,
                    con=real.con)
    record = json.loads(provenance_path(out).read_text())
    assert record == result.provenance
    assert record["source"] == "itp" and record["slice"] == {"cluster": "cluster10"}
    assert record["files"]["itp/raw-traces.tar.gz"]["sha256"].startswith("67398e1a")
    assert record["annotation"]["seed"] == 5 and record["recipe"] is None
    rows_ = record["rows"]
    assert rows_["read"] == 260 and rows_["written"] + sum(rows_["dropped"].values()) == 260
    [(unmeasured,)] = rows(real.con, "SELECT count(*) FROM itp.jobs WHERE cluster = "
                           "'cluster10' AND num_gpu NOT IN (1, 2, 4, 8)")
    assert rows_["dropped"] == {"no Gavel throughput at its GPU count (Gavel measured 1, 2, 4 "
                                "and 8)": unmeasured} and unmeasured > 0
    lines = out.read_text().splitlines()
    assert len(lines) == rows_["written"] and all(len(x.split("\t")) == 10 for x in lines)


@pytest.mark.parametrize("fmt", ["elasticflow", "tiresias", "pollux", "gavel", "philly"])
def test_each_format_round_trips_what_it_carries(fmt: str, real, user_root: Path,
                                                 tmp_path: Path) -> None:
    out = tmp_path / f"c10.{fmt}"
    gavel = tmp_path / "gavel.json"
    gavel.write_text(json.dumps(GAVEL_TYPES))
    result = export("itp/raw/cluster10", fmt, out, gavel_throughputs=gavel, con=real.con,
                    keep_jobs=True)
    written = result.jobs.set_index("job_id", drop=False)
    back = imported_jobs(out, "back")
    raw = read_trace(real.con, "itp/raw/cluster10").frame.set_index("job_id")
    if fmt == "gavel":  # no job id: jobs in submission order, numbered by line
        back.index = written.sort_values("submit", kind="stable").index
    else:
        assert set(back.index) == set(written.index)
    back = back.loc[written.index]
    assert (back["submit_s"] == raw.loc[written.index, "submit_s"]).all()
    assert (back["num_gpu"] == written["gpus"]).all()
    if fmt in ("elasticflow", "tiresias", "philly"):
        assert (back["run_s"] == raw.loc[written.index, "run_s"]).all()
    if fmt != "philly":
        assert (back["model"] == written["model"]).all()
    if fmt in ("elasticflow", "tiresias", "gavel"):
        assert (back["iterations"] == written["iterations"]).all()
    if fmt in ("elasticflow", "pollux"):
        assert (back["batch_size"] == written["batch_size"]).all()
    if fmt == "elasticflow":
        assert (back["deadline_s"] == written["deadline"]).all()


def test_an_imported_elasticflow_trace_replays_as_the_original(real, user_root: Path,
                                                               http_mirror, tmp_path: Path
                                                               ) -> None:
    from mltraces.scheduling import schedule
    from mltraces.workloads import cluster as inputs

    export("itp/cluster10", "elasticflow", tmp_path / "c10.csv", con=real.con)
    made = import_workload(tmp_path / "c10.csv", name="efc10")
    assert made.replay == "efc10/jobs"  # as the jobs view names it (efc10/all resolves too)
    con = connect(["efc10.jobs", *inputs.tables_for(["efc10/all", "itp/cluster10"])])
    try:
        spec = inputs.load_cluster(con, "n32g8")
        profiles = inputs.load_profiles(con)
        ours = schedule(inputs.load_jobs(con, "efc10/all"), spec, profiles, "edf")
        theirs = schedule(inputs.load_jobs(con, "itp/cluster10"), spec, profiles, "edf")
    finally:
        con.close()
    assert ours.jobs.drop(columns="trace").equals(theirs.jobs.drop(columns="trace"))
    # the artifact's ratio on this trace (tests/test_scheduling_upstream.py)
    assert ours.summary["ddl_satis_ratio"].iloc[0] == pytest.approx(0.7769230769230769)


def test_pollux_recipe_on_its_own_trace(real) -> None:
    """philly.csv is Pollux's input, not its output: 7,819 rows break the recipe's rules."""
    frame = read_trace(real.con, "pollux/philly").frame
    kept, report = apply(get_recipe("pollux"), frame)
    assert len(frame) == 82_247 and len(kept) == 74_428
    assert [(r["rule"], r["removed"]) for r in report] == [
        ("duration_at_least_60s", 7_654), ("gpu_time_under_1000h", 165)]


def test_philly_csv_loads_through_import_and_exports_back_byte_for_byte(
        real, upstream_dir: Path, user_root: Path, tmp_path: Path) -> None:
    published = upstream_dir / POLLUX_CSV
    assert detect_format(published).name == "pollux-trace"
    back = imported_jobs(published, "pollux_philly")
    mine = read_trace(real.con, "pollux/philly").frame.set_index("job_id")
    assert len(back) == 82_247
    for column in ("submit_time", "submit_s", "run_s", "num_gpu", "vc", "gpu_time_s"):
        assert (back[column].to_numpy() == mine.loc[back.index, column].to_numpy()).all()
    export("pollux/philly", "pollux-trace", tmp_path / "philly.csv", con=real.con)
    # the published file ends with one extra empty line
    assert (tmp_path / "philly.csv").read_bytes() + b"\n" == published.read_bytes()


# ------------------------------------------------------------------------------ Philly (synthetic)


@pytest.fixture(scope="module")
def philly_con(tmp_path_factory: pytest.TempPathFactory):
    """Synthetic Philly jobs, built once for the module's tests (they only read them)."""
    folder = tmp_path_factory.mktemp("philly-3000")
    with served_catalog(folder, ["philly"], ["philly.jobs"], rows=3000, seed=5) as con:
        yield con


def test_philly_job_log_round_trips_through_export_and_import(philly_con, user_root: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "cluster_job_log"
    export("philly/jobs", "philly", out, con=philly_con)
    assert detect_format(out).name == "philly"
    back = imported_jobs(out, "again")
    mine = read_trace(philly_con, "philly/jobs").frame.set_index("job_id")
    assert sorted(back.index) == sorted(mine.index)
    back = back.loc[mine.index]
    for column in ("user", "vc", "submit_time", "start_time", "end_time", "submit_s",
                   "state_raw", "num_attempts"):
        same = (back[column] == mine[column]) | (back[column].isna() & mine[column].isna())
        if column == "num_attempts":  # one attempt per job: its span is the job's
            same = (back[column] == mine[column].clip(upper=1))
        assert same.all(), column
    ran = mine["num_attempts"] > 0
    assert (back.loc[ran, "num_gpu"] == mine.loc[ran, "num_gpu"]).all()
    assert (back.loc[ran, "num_nodes"] == mine.loc[ran, "num_nodes"]).all()
    assert back.loc[~ran, "num_gpu"].isna().all()  # no attempt, no GPUs: not carried


def test_recipes_on_a_synthetic_philly_job_log(philly_con, tmp_path: Path) -> None:
    for recipe in ("pollux", "synergy-philly"):
        result = export("philly/jobs", "philly", tmp_path / recipe, recipe=recipe,
                        con=philly_con, keep_jobs=True)
        kept = set(result.jobs["job_id"])
        frame = read_trace(philly_con, "philly/jobs").frame
        for _, job in frame.iterrows():
            if recipe == "pollux":
                keep = job["run_s"] >= 60 and job["run_s"] * job["num_gpu"] < 3.6e6
            else:
                keep = job["job_id"] in kept  # the window: checked by rule in its own test
                assert not keep or (job["num_gpu"] in (1, 2, 4, 8, 16)
                                    and 10 ** 1.5 * 60 < job["run_s"] < 6e5)
            assert (job["job_id"] in kept) == bool(keep), job["job_id"]
        assert result.provenance["rows"]["after_recipe"] == len(kept)


@pytest.mark.skipif(not (Path(__file__).resolve().parents[2] / "shared/upstream/"
                         "media.githubusercontent.com/media/msr-fiddle/philly-traces").exists(),
                    reason="the raw Philly trace (1 GB LFS tarball) is not here; the recipe is "
                           "checked on synthetic job logs instead")
def test_pollux_recipe_on_raw_philly_is_pollux_filtered_philly_csv(http_mirror) -> None:
    """Row by row: raw Philly through the recipe vs Pollux's philly.csv through it (runs only
    where the raw trace is present; how Pollux derived philly.csv is not documented, so this
    is the check that says whether our reading of it is theirs)."""
    con = connect(["philly.jobs", "pollux.philly_jobs", "mltraces.jobs"], strict=True)
    key = ["submit_time", "run_s", "num_gpu", "vc"]
    raw = con.sql("SELECT * FROM mltraces.jobs WHERE trace = 'philly/jobs' AND num_gpu > 0"
                  ).df()
    theirs = con.sql("SELECT * FROM mltraces.jobs WHERE trace = 'pollux/philly'").df()
    mine, _ = apply(get_recipe("pollux"), raw)
    pollux, _ = apply(get_recipe("pollux"), theirs)
    left = mine[key].sort_values(key).reset_index(drop=True)
    right = pollux[key].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right, check_dtype=False)


# ------------------------------------------------------------------------------ CLI and outputs


def test_cli_export_and_import(real, user_root: Path, tmp_path: Path, capsys,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLTRACES_CACHE", str(real.cache))
    out = tmp_path / "c10.csv"
    assert main(["export", "--trace", "itp/raw/cluster10", "--to", "tiresias", "-o", str(out),
                 "--recipe", "elasticflow-itp", "--seed", "2"]) == 0
    said = capsys.readouterr()
    assert "260 of 260 jobs of itp/raw/cluster10 written as tiresias (recipe elasticflow-itp " \
           "kept 260); dropped: none" in said.out
    assert f"wrote {out}" in said.err
    assert json.loads(provenance_path(out).read_text())["recipe"]["name"] == "elasticflow-itp"
    assert main(["import", str(out), "--name", "tir"]) == 0
    said = capsys.readouterr().out
    assert "imported" in said and "(tiresias) as source tir" in said
    assert "mltraces schedule --trace tir/jobs" in said
    assert main(["export", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "helios-qssf-july" in listing and "HeliosArtifact@bdaae10" in listing


def test_a_bad_output_fails_before_any_work(tmp_path: Path, monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("the trace was read before the output was checked")

    monkeypatch.setattr("mltraces.interop.exporting.connect_for", boom)
    with pytest.raises(OutputError, match="does not exist"):
        export("itp/raw/cluster10", "tiresias", tmp_path / "missing" / "x.csv")
    with pytest.raises(OutputError, match="a pipe, a device or a descriptor cannot have"):
        export("itp/raw/cluster10", "tiresias", "/dev/null")
    with pytest.raises(MltracesError, match="unknown trace 'nosuch/trace'"):
        export("nosuch/trace", "tiresias", tmp_path / "x.csv")
    with pytest.raises(MltracesError, match="unknown format 'slurm'"):
        export("itp/raw/cluster10", "slurm", tmp_path / "x.csv")
    with pytest.raises(MltracesError, match="--gavel-throughputs PATH"):
        export("itp/raw/cluster10", "gavel", tmp_path / "x.trace")
    with pytest.raises(MltracesError, match="not a file of at most 64 MiB"):
        export("itp/raw/cluster10", "gavel", tmp_path / "x.trace", gavel_throughputs=tmp_path)
    assert not list(tmp_path.iterdir())


def test_import_refuses_what_it_cannot_read(tmp_path: Path, user_root: Path) -> None:
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(MltracesError, match="cannot tell its format from its first line"):
        import_workload(odd)
    with pytest.raises(MltracesError, match="not a Tiresias job trace header"):
        import_workload(odd, "tiresias")
    good = tmp_path / "w.csv"
    good.write_text("name,time,application,num_replicas,batch_size\nbert-0,0,bert,1,12\n")
    with pytest.raises(MltracesError, match="source name 'Bad-Name'"):
        import_workload(good, name="Bad-Name")
    with pytest.raises(MltracesError, match="is a shipped source"):
        import_workload(good, name="itp")
    made = import_workload(good)
    assert made.name == "w" and made.replay is None
    with pytest.raises(MltracesError, match="exists already"):
        import_workload(good)
    assert sorted(p.name for p in user_root.iterdir()) == ["w"]  # no staging folder left


def test_import_detects_each_format_from_its_first_line(tmp_path: Path) -> None:
    lines = {"elasticflow": "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,"
                            "duration\n",
             "tiresias": "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n",
             "pollux": "name,time,application,num_replicas,batch_size\n",
             "pollux-trace": "timestamp,duration,num_gpus,gpu_time,cluster\n",
             "gavel": "\t".join(["x"] * 10) + "\n", "philly": "[\n"}
    for fmt, line in lines.items():
        (tmp_path / fmt).write_text(line)
        assert detect_format(tmp_path / fmt).name == fmt
    assert math.isclose(len(lines), len(FORMATS))
