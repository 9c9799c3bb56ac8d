"""``helios-qssf``: the Helios artifact's QSSF evaluation filter, rule by rule (issue 25).

Every rule is checked on jobs of the synthetic Helios and Philly traces the sources'
writers make (``mltraces.synthetic``), with the VCs the artifact names written into
them where a rule needs one; the whole recipe on a synthetic catalog through export,
import and a per-VC replay on the capacity the artifact derives.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from catalog_fixtures import loopback_only  # noqa: F401
from synthetic_sources import served
from test_interop import imported_jobs, user_root  # noqa: F401

from mltraces.catalog import connect
from mltraces.errors import MltracesError
from mltraces.interop.exporting import export
from mltraces.interop.jobs import read_trace
from mltraces.interop.qssf import (
    CLUSTERS,
    HELIOS_QSSF,
    HELIOS_QSSF_JULY,
    PHILLY_NODES,
    Context,
    helios_configuration,
)
from mltraces.interop.recipes import apply
from mltraces.sources.helios import synthetic as helios_synthetic

HELIOS_ROWS = 12_000


@pytest.fixture(scope="module")
def helios(tmp_path_factory: pytest.TempPathFactory):
    """A synthetic Helios catalog (jobs and GPUs per VC per day), and its jobs."""
    folder = tmp_path_factory.mktemp("helios")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(folder / "cache"))
        with served(folder / "mirror", ["helios"], patch, rows=HELIOS_ROWS, seed=3):
            con = connect(tables=["helios.jobs", "helios.gpu_capacity"], strict=True)
        yield con, read_trace(con, "helios/jobs")
    con.close()


def _context(nodes: dict[str, dict[str, int | None]], window: str = "sept") -> Context:
    return Context(window, {"philly": dict(PHILLY_NODES), **nodes}, {})


def _jobs(traced, of: str, count: int, **columns: object) -> pd.DataFrame:
    """``count`` GPU jobs of cluster ``of`` from the synthetic trace, columns overwritten."""
    frame = traced.frame
    picked = frame[(frame["cluster"] == of) & (frame["num_gpu"] > 0)].head(count)
    picked = picked.reset_index(drop=True)
    assert len(picked) == count
    for column, value in columns.items():
        picked[column] = value
    return picked


def _at(moments: list[str], zone: str = "Asia/Shanghai") -> pd.Series:
    return pd.Series(pd.to_datetime(moments)).dt.tz_localize(zone)


def _removed(report: list[dict]) -> dict[str, int]:
    return {r["rule"]: r.get("changed", r["removed"]) for r in report}


def _in_sept(traced, cluster: str, count: int, vc: str) -> pd.DataFrame:
    """Jobs whose first is at the origin (the window's anchor, outside it) and the others in
    the Sept window."""
    moments = ["2020-04-01 00:00:00"] + ["2020-09-10 12:00:00"] * (count - 1)
    return _jobs(traced, cluster, count, vc=vc, submit_time=_at(moments))


def test_vc_drops_are_per_cluster(helios) -> None:
    _, traced = helios
    venus = _in_sept(traced, "venus", 4, "vcOK1")
    earth = _in_sept(traced, "earth", 3, "vcOK2")
    venus.loc[[1, 2], "vc"] = "vcEhP"  # dropped in Venus
    earth.loc[1, "vc"] = "vcEhP"  # not one of Earth's
    earth.loc[2, "vc"] = "vc7hD"  # dropped in Earth
    kept, report = apply(HELIOS_QSSF, pd.concat([venus, earth], ignore_index=True),
                         _context({"venus": {"vcOK1": 4}, "earth": {"vcOK2": 2, "vcEhP": 1}}))
    assert _removed(report)["vc_drops"] == 3
    assert sorted(zip(kept["cluster"], kept["vc"], strict=True)) == [
        ("earth", "vcEhP"), ("venus", "vcOK1")]


def test_vc_merges_rename_before_the_configured_check(helios) -> None:
    _, traced = helios
    uranus = _in_sept(traced, "uranus", 5, "vcUV3")
    uranus.loc[1, "vc"] = "vcxqr"  # merged into vcUV3
    uranus.loc[2, "vc"] = "vcFsC"  # merged into vc7hD
    uranus.loc[3, "vc"] = "vcHyk"  # merged into vcOlr, which is not configured here
    kept, report = apply(HELIOS_QSSF, uranus, _context({"uranus": {"vcUV3": 3, "vc7hD": 1}}))
    counts = _removed(report)
    assert counts["vc_merges"] == 3 and counts["vc_configured"] == 1
    assert kept["vc"].tolist() == ["vcUV3", "vc7hD", "vcUV3"]
    assert kept["job_id"].tolist() == uranus["job_id"].iloc[[1, 2, 4]].tolist()


def test_gpu_jobs_only(helios) -> None:
    _, traced = helios
    saturn = _in_sept(traced, "saturn", 4, "vcA")
    saturn.loc[[2, 3], "num_gpu"] = 0.0
    kept, report = apply(HELIOS_QSSF, saturn, _context({"saturn": {"vcA": 1}}))
    assert _removed(report)["gpu_jobs"] == 2 and len(kept) == 1


def test_configured_vcs_come_from_the_capacity_table_less_the_deleted(helios) -> None:
    con, _ = helios
    nodes, days = helios_configuration(con, "sept")
    assert days == {"venus": "2020-09-10", "earth": "2020-09-10", "saturn": "2020-09-01",
                    "uranus": "2020-09-10"}
    for cluster in ("Venus", "Saturn"):
        wide = helios_synthetic.gpu_number(cluster).set_index("date")
        day = days[cluster.lower()]
        expected = {vc: int(g) // 8 for vc, g in wide.loc[day].drop("total").items()}
        assert nodes[cluster.lower()] == expected
    july, days = helios_configuration(con, "july")
    assert set(days.values()) == {"2020-07-01"} and july["venus"] != nodes["venus"]
    # a VC the generator deletes is not configured, even when the file lists it
    wide = helios_synthetic.gpu_number("Venus")
    first, second = [c for c in wide.columns if c.startswith("vc")][:2]
    wide = wide.rename(columns={first: "vcEhP", second: "vcbIW"})
    own = duckdb.connect()
    own.execute("CREATE SCHEMA helios")
    own.register("wide", wide)
    own.execute("CREATE TABLE helios.gpu_capacity AS SELECT 'venus' AS cluster, "
                "CAST(date AS DATE) AS date, vc, gpus, total FROM wide "
                "UNPIVOT (gpus FOR vc IN (COLUMNS('^vc')))")
    mine, _ = helios_configuration(own, "sept")
    assert "vcEhP" not in mine["venus"] and "vcbIW" not in mine["venus"]
    assert len(mine["venus"]) == len(nodes["venus"]) - 2


def test_philly_configures_its_eleven_vcs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    with served(tmp_path / "mirror", ["philly"], monkeypatch, rows=3000, seed=5):
        con = connect(tables=["philly.jobs"], strict=True)
    try:
        frame = read_trace(con, "philly/jobs").frame
        context = HELIOS_QSSF.context(con, None)
    finally:
        con.close()
    kept, report = apply(HELIOS_QSSF, frame, context)
    assert set(kept["vc"]) <= set(PHILLY_NODES) and len(PHILLY_NODES) == 11
    counts = _removed(report)
    dropped = frame["vc"].isin(CLUSTERS["philly"].drops)
    assert counts["vc_drops"] == int(dropped.sum()) > 0
    assert counts["vc_configured"] == 0  # the four dropped are the only others
    assert counts["gpu_jobs"] == int((frame.loc[~dropped, "num_gpu"].fillna(0) <= 0).sum())


def test_jobs_before_the_origin_are_dropped(helios) -> None:
    _, traced = helios
    venus = _jobs(traced, "venus", 4, vc="vcA", submit_time=_at(
        ["2020-03-31 23:59:59", "2020-04-01 00:00:00", "2020-09-02 00:00:00",
         "2020-09-03 00:00:00"]))
    kept, report = apply(HELIOS_QSSF, venus, _context({"venus": {"vcA": 2}}))
    # the job at the origin anchors the window and lies outside it
    assert _removed(report)["submitted_after_origin"] == 1 and _removed(report)["window"] == 1
    assert kept["job_id"].tolist() == venus["job_id"].iloc[2:].tolist()


def test_the_window_counts_from_each_clusters_first_job(helios) -> None:
    _, traced = helios
    # Venus's first job is ten minutes after the origin: its window moves ten minutes
    venus = _jobs(traced, "venus", 6, vc="vcA", submit_time=_at(
        ["2020-04-01 00:10:00", "2020-09-01 00:09:59", "2020-09-01 00:10:00",
         "2020-09-27 00:09:00", "2020-09-27 00:09:01", "2020-07-15 00:00:00"]))
    earth = _jobs(traced, "earth", 3, vc="vcB", submit_time=_at(
        ["2020-04-01 00:00:00", "2020-09-01 00:00:00", "2020-09-26 23:59:01"]))
    frame = pd.concat([venus, earth], ignore_index=True)
    context = {"venus": {"vcA": 2}, "earth": {"vcB": 2}}
    kept, report = apply(HELIOS_QSSF, frame, _context(context))
    assert kept["job_id"].tolist() == [venus["job_id"][2], venus["job_id"][3],
                                       earth["job_id"][1]]
    assert _removed(report)["window"] == 6
    july, _ = apply(HELIOS_QSSF_JULY, frame, _context(context, "july"))
    assert july["job_id"].tolist() == [venus["job_id"][5]]


def test_philly_takes_its_own_window_on_the_wall_clock(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    with served(tmp_path / "mirror", ["philly"], monkeypatch, rows=400, seed=2):
        con = connect(tables=["philly.jobs"], strict=True)
    try:
        frame = read_trace(con, "philly/jobs").frame
    finally:
        con.close()
    jobs = frame[frame["num_gpu"] > 0].head(5).copy().reset_index(drop=True)
    jobs["vc"] = "6214e9"
    # 2017-11-30 23:59 is 61 days less a minute after 2017-10-01 00:00 on the wall clock,
    # an hour more in real time (DST ended on 5 November): it is in
    jobs["submit_time"] = _at(["2017-09-30 23:59:59", "2017-10-01 00:00:00",
                               "2017-11-30 23:59:00", "2017-11-30 23:59:01",
                               "2017-11-20 12:00:00"], "America/Los_Angeles")
    for recipe in (HELIOS_QSSF, HELIOS_QSSF_JULY):
        kept, report = apply(recipe, jobs, _context({}))
        assert kept["job_id"].tolist() == jobs["job_id"].iloc[[1, 2, 4]].tolist()
        counts = _removed(report)
        assert counts["submitted_after_origin"] == 1 and counts["window"] == 1


def test_a_trace_of_another_cluster_is_refused(helios) -> None:
    _, traced = helios
    other = _jobs(traced, "venus", 2, cluster="cluster10")
    with pytest.raises(MltracesError, match="prepares the clusters venus, earth, saturn, "
                                            "uranus, philly only; this trace has cluster10"):
        apply(HELIOS_QSSF, other, _context({}))


def test_export_import_and_replay_each_vc_on_its_capacity(helios, user_root,  # noqa: F811
                                                          tmp_path: Path) -> None:
    from mltraces.scheduling import schedule
    from mltraces.scheduling.cluster import ClusterSpec
    from mltraces.workloads import cluster as inputs

    con, traced = helios
    out = tmp_path / "venus_qssf"
    result = export("helios/venus", "philly", out, recipe="helios-qssf", con=con,
                    batch_rows=37, keep_jobs=True)
    venus = read_trace(con, "helios/venus").frame
    kept, report = apply(HELIOS_QSSF, venus, HELIOS_QSSF.context(con, traced.entry))
    assert result.jobs["job_id"].tolist() == kept["job_id"].tolist() and len(kept) > 50
    record = json.loads(Path(f"{out}.provenance.json").read_text())
    assert record["recipe"]["rules"] == report
    capacity = record["recipe"]["capacity"]
    nodes, _ = helios_configuration(con, "sept")
    assert capacity["configuration_day"] == {"venus": "2020-09-10"}
    assert {k: v["nodes"] for k, v in capacity["vcs"].items()} == {
        f"venus/{vc}": n for vc, n in nodes["venus"].items()}
    busiest = kept["vc"].value_counts().index[0]
    spec = capacity["vcs"][f"venus/{busiest}"]["cluster_spec"]
    assert spec == f"n{nodes['venus'][busiest]}g8"
    back = imported_jobs(out, "venus_qssf")
    assert sorted(back.index) == sorted(kept["job_id"])
    replay = connect(["venus_qssf.jobs", *inputs.tables_for([f"venus_qssf/vc/{busiest}"],
                                                            specs=False)])
    try:
        jobs = inputs.load_jobs(replay, f"venus_qssf/vc/{busiest}")
        done = schedule(jobs, ClusterSpec.from_name(spec), None, "fifo")
    finally:
        replay.close()
    assert len(done.jobs) == int((kept["vc"] == busiest).sum())
