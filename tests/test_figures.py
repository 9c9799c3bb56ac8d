"""Figure data reproduces the papers, agrees with plain pandas, and every figure draws.

Real data (Zeus, ITP, AcmeTrace's processed curves and summary) comes from the
loopback mirror of ../shared/upstream; the absent AcmeTrace job traces and
Alibaba groups are synthetic files in the upstream format, loaded through
``local=`` exactly as a user's downloaded copies would be.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from serving_fixtures import SERVING_SOURCES, serving_con, serving_files  # noqa: F401
from upstream_files import synthetic_tables

import mltraces
from mltraces import figures
from mltraces.figures import store, style
from mltraces.figures.sql import ecdf
from mltraces.papers.acme_nsdi24 import figures as acme
from mltraces.papers.acme_nsdi24.summary import SUMMARY_COLUMNS
from mltraces.papers.elasticflow_asplos23 import itp_figures as itp
from mltraces.papers.zeus_nsdi23 import figures as zeus
from mltraces.registry import get_source
from mltraces.simulation import WORKLOADS

SEREN_ROWS, KALOS_ROWS = 6000, 2500


@pytest.fixture(scope="module")
def real_con(
    upstream_server: str, shared_real_cache: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    """One catalog over the real files (fetched from the loopback mirror into a temp cache)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(shared_real_cache))
        patch.setenv("MLTRACES_MIRROR", upstream_server)
        patch.delenv("MLTRACES_LOCAL", raising=False)
        con = mltraces.connect(
            ["zeus.train", "zeus.power", "itp", "elasticflow", "acme.util_cdf",
             "acme.cluster_summary"]
        )
    yield con
    con.close()


@pytest.fixture(scope="module")
def job_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every absent table's files, synthetic in the upstream formats (mltraces.synthetic)."""
    from mltraces.synthetic import write_tables

    folder = tmp_path_factory.mktemp("synthetic")
    sizes = {"acme/trace_seren.csv": SEREN_ROWS, "acme/trace_kalos.csv": KALOS_ROWS,
             "zeus/alibaba_groups.csv.xz": 10}
    return write_tables(folder, synthetic_tables(), seed=0, rows=sizes)


@pytest.fixture(scope="module")
def job_con(
    upstream_server: str, job_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A catalog whose AcmeTrace job tables (and Alibaba groups) are the synthetic files."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(tmp_path_factory.mktemp("figures-jobs-cache")))
        patch.setenv("MLTRACES_MIRROR", upstream_server)
        patch.delenv("MLTRACES_LOCAL", raising=False)
        con = mltraces.connect(
            [*figures.tables_for("acme"), *figures.tables_for("zeus")],
            local={k: str(v) for k, v in job_files.items()},
        )
    yield con
    con.close()


@pytest.fixture(scope="module")
def jobs_frame(job_files: dict[str, Path]) -> pd.DataFrame:
    """The synthetic job traces read with plain pandas: the independent side of each check."""
    seren = pd.read_csv(job_files["acme.seren_jobs"]).assign(cluster="Seren")
    kalos = pd.read_csv(job_files["acme.kalos_jobs"]).assign(cluster="Kalos")
    columns = ["cluster", "gpu_num", "type", "state", "duration", "queue", "gpu_time"]
    return pd.concat([seren[columns], kalos[columns]], ignore_index=True)


def _gpu_jobs(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["gpu_num"] > 0]


# --------------------------------------------------------------------------- published numbers


@pytest.mark.upstream
def test_zeus_fig1_reproduces_the_paper_ranges_on_v100(real_con) -> None:
    data = zeus.savings_data(real_con).df()
    ranges = zeus.savings_ranges(data).set_index(["gpu", "kind"])
    pl = ranges.loc[("v100", "power limit only")]
    both = ranges.loc[("v100", "batch size + power limit")]
    assert pl["text"] == "3.0%–31.5%"
    assert both["text"] == "23.8%–74.7%"
    # the unrounded values, so a change of definition cannot hide behind rounding
    assert pl["low"] == pytest.approx(2.9670, abs=1e-3)
    assert pl["high"] == pytest.approx(31.44996, abs=1e-4)
    assert both["low"] == pytest.approx(23.8465, abs=1e-3)
    assert both["high"] == pytest.approx(74.6769, abs=1e-3)
    assert set(data["gpu"]) == set(zeus.GPUS) and len(data) == 4 * 6 * 3


@pytest.mark.upstream
def test_zeus_fig1_bars_match_the_published_figure(real_con) -> None:
    """All 18 V100 bars within 0.003 of the heights read off the paper's figure."""
    v100 = zeus.savings_data(real_con, ("v100",)).df()
    assert len(v100) == 18 and v100["paper"].notna().all()
    assert (v100["normalized"] - v100["paper"]).abs().max() < 0.003
    assert np.allclose(v100["saving_pct"], 100 * (1 - v100["normalized"]))


@pytest.mark.upstream
def test_zeus_fig2_front_holds_every_published_point(real_con) -> None:
    rows = zeus.tradeoff_data(real_con, "v100", "librispeech").df()
    front = {(int(b), int(p)) for b, p in rows.loc[rows["pareto"], ["batch_size", "power_limit"]]
             .itertuples(index=False)}
    assert set(zeus.paper_fig2_front()) <= front
    assert len(front) == len(zeus.paper_fig2_front()) + 2  # ours adds (48, 225 W), (32, 125 W)
    assert "56, 225W" in zeus.pareto_report(real_con)


@pytest.mark.upstream
def test_zeus_fig2_labels_sit_nearest_their_own_points(real_con) -> None:
    """Panel (b): every front point's closest label is its own (32/48 at 125 W were swapped)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = figures.draw("zeus_fig2", real_con)
    zoom = figure.axes[1]
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    labels = [t for t in zoom.texts if t.get_text().endswith("W")]
    rows = zeus.tradeoff_data(real_con, "v100", "librispeech").df()
    front = rows[rows["pareto"]]
    assert len(labels) == len(front) == 9
    for label in labels:
        batch, watts = (int(v) for v in label.get_text().rstrip("W").split(", "))
        point = front[(front["batch_size"] == batch) & (front["power_limit"] == watts)]
        x, y = zoom.transData.transform((point["tta"].iloc[0], point["eta"].iloc[0]))
        nearest = min(labels, key=lambda t: _distance(t.get_window_extent(renderer), x, y))
        assert nearest is label, (label.get_text(), nearest.get_text())


def _distance(box, x: float, y: float) -> float:
    """Display-space distance from (x, y) to a bounding box (0 inside it)."""
    return math.hypot(max(box.x0 - x, 0, x - box.x1), max(box.y0 - y, 0, y - box.y1))


def test_published_numbers_are_read_from_the_papers_published_json(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Zeus' and AcmeTrace's published numbers are data in each paper's published.json, not
    constants, and not in the source cards."""
    from mltraces.papers import published

    zeus_published = published("zeus_nsdi23")
    assert "fig1" not in get_source("zeus").published
    assert zeus.paper_fig1_ranges()["power limit only"] == (3.0, 31.5)
    assert zeus.paper_fig1_bars()["batch size only"]["librispeech"] == 0.820
    assert zeus.paper_fig2_front()[1] == (56, 225)
    assert zeus.paper_fig2_limits() == (80_000.0, 1.2e7)
    headline = zeus.paper_headline()
    assert (headline.energy_saved, headline.time_saved) == ((15.3, 75.8), 60.6)
    assert acme.paper_type_shares()[("Kalos", "GPU time")]["Pretrain"] == 95.5
    monkeypatch.setitem(zeus_published["fig2"], "pareto_front", [[8, 100]])
    monkeypatch.setitem(zeus_published["headline"], "time_saved_pct", 12.5)
    monkeypatch.setitem(published("acme_nsdi24")["type_shares"]["shares"]["Kalos"],
                        "jobs", {"Eval": 1.0})
    assert zeus.paper_fig2_front() == ((8, 100),)
    assert zeus.paper_headline().time_saved == 12.5
    assert acme.paper_type_shares()[("Kalos", "jobs")] == {"Eval": 1.0}
    for module in (zeus, acme):  # nothing left behind as a Python constant
        assert not [n for n in vars(module) if n.startswith("PAPER_") and n != "PAPER_ORDER"
                    and n != "PAPER_NAMES"]


@pytest.mark.upstream
def test_zeus_fig1_best_configurations_always_reach_the_target(real_con) -> None:
    """Only configurations whose every repetition reaches within max epochs may win."""
    data = zeus.savings_data(real_con, ("v100",)).df()
    train = real_con.sql("SELECT * FROM zeus.train").df()
    for row in data.itertuples():
        spec = WORKLOADS[row.workload]
        runs = train[
            (train.dataset == row.workload)
            & (train.batch_size == row.best_batch_size)
            & np.isclose(train.target_metric, spec.target_metric)
        ]["target_epoch"]
        assert len(runs) > 0
        assert (runs.notna() & (runs <= spec.max_epochs)).all(), row


@pytest.mark.upstream
def test_zeus_fig1_baseline_is_the_simulators_b0_at_max_power(real_con) -> None:
    """The SQL's b0 cap and MaxPower are the simulator's, on every GPU and workload."""
    from mltraces.workloads.recurring import load_traces

    traces = load_traces(real_con)
    data = zeus.savings_data(real_con).df()
    for row in data.drop_duplicates(["gpu", "workload"]).itertuples():
        job = traces.job(row.gpu, row.workload)
        assert (row.baseline_batch_size, row.baseline_power_limit) == (
            job.default_batch_size,
            job.max_power,
        ), row


@pytest.mark.upstream
def test_savings_report_prints_one_decimal_with_percent_sign(real_con) -> None:
    report = zeus.savings_report(real_con, ("v100",))
    assert "3.0%–31.5%" in report and "23.8%–74.7%" in report


@pytest.mark.upstream
def test_itp_table_reproduces_published_totals(real_con) -> None:
    published = get_source("itp").published
    data = itp.clusters_data(real_con).df()
    total = data[data["cluster"] == "total"].iloc[0]
    assert int(total["jobs"]) == published["jobs"]
    assert round(total["gpu_hours"], 1) == published["gpu_hours"]
    assert len(data) == published["clusters"] + 1
    per = data[data["cluster"] != "total"]
    assert per["jobs"].sum() == published["jobs"]
    assert per["share_of_gpu_hours"].sum() == pytest.approx(100)
    assert itp.totals_text(data) == itp.published_text()
    assert itp.totals_report(real_con).count(itp.published_text()) == 2


@pytest.mark.upstream
def test_elasticflow_fig7b_bins_all_testbed_jobs(real_con) -> None:
    data = itp.testbed_submissions_data(real_con).df()
    assert len(data) == 48 * 6 and data["bin"].tolist() == list(range(48 * 6))
    assert data["jobs"].sum() == get_source("itp").expected_rows["itp.testbed_jobs"]
    first = real_con.sql("SELECT min(submission_time) FROM itp.testbed_jobs").fetchall()[0][0]
    last = real_con.sql("SELECT max(submission_time) FROM itp.testbed_jobs").fetchall()[0][0]
    assert data.loc[data["jobs"] > 0, "bin"].max() == (last - first) // 600


@pytest.mark.upstream
def test_itp_gpu_count_and_model_mix_shares_add_up(real_con) -> None:
    counts = itp.gpu_count_data(real_con).df()
    assert counts.groupby("measure")["share"].sum().tolist() == pytest.approx([100, 100])
    mix = itp.model_mix_data(real_con).df()
    sums = mix.groupby(["cluster", "measure"])["share"].sum()
    assert np.allclose(sums, 100) and len(sums) == 11 * 2


@pytest.mark.upstream
def test_itp_deadline_slack_is_uniform_between_half_and_one_and_a_half(real_con) -> None:
    slack = itp.deadline_slack_data(real_con).df()
    assert slack["x"].min() >= 0.499 and slack["x"].max() <= 1.5
    middle = slack[(slack["x"] - 1.0).abs() < 0.01]
    assert middle["cdf"].between(0.45, 0.55).all()


@pytest.mark.upstream
def test_zeus_pareto_front_matches_brute_force(real_con) -> None:
    data = zeus.tradeoff_data(real_con, "v100").df()
    for _, rows in data.groupby("workload"):
        eta, tta = rows["eta"].to_numpy(), rows["tta"].to_numpy()
        dominated = [
            bool(np.any((eta <= e) & (tta <= t) & ((eta < e) | (tta < t))))
            for e, t in zip(eta, tta, strict=True)
        ]
        assert rows["pareto"].tolist() == [not d for d in dominated]


@pytest.mark.upstream
def test_util_curves_are_cdfs_per_cluster(real_con) -> None:
    data = acme.gpu_util_data(real_con).df()
    assert set(data["cluster"]) == {"Seren", "Kalos", "Philly", "PAI"}
    for _, curve in data.groupby("source_file"):
        assert curve["y"].between(0, 100).all()
        assert curve["x"].is_monotonic_increasing
    resources = acme.resource_util_data(real_con).df()
    assert list(dict.fromkeys(resources["panel"])) == list(acme.RESOURCE_PANELS)
    network = resources[resources["panel"] == "network"]
    assert network.groupby("series")["x"].max().tolist() == pytest.approx([100, 100])
    labels = set(resources.loc[resources["panel"] == "dcgm", "label"])
    assert labels == {"SM activity", "TC activity"}  # the paper's legend, not "SM occupancy"


@pytest.mark.upstream
def test_acme_fig4_is_cluster_summary_as_published(real_con) -> None:
    data = acme.published_states_data(real_con).df().set_index(["cluster", "measure", "state"])
    summary = real_con.sql("SELECT * FROM acme.cluster_summary").df().set_index("id")
    for prefix, state in (("complete", "COMPLETED"), ("cancel", "CANCELLED"),
                          ("fail", "FAILED")):
        for cluster in ("Seren", "Kalos"):
            jobs = data.loc[(cluster, "jobs", state), "share"]
            time = data.loc[(cluster, "GPU time", state), "share"]
            assert jobs == pytest.approx(100 * summary.at[cluster, f"{prefix}_rate_gpu"])
            assert time == pytest.approx(100 * summary.at[cluster, f"{prefix}_rate_gpu_time"])
    assert len(data) == 2 * 2 * 3


# --------------------------------------------------------------------------- job figures vs pandas


def _pandas_ecdf(values: pd.Series, at: np.ndarray, weights: pd.Series | None = None) -> np.ndarray:
    """The AcmeTrace notebook's way: one boolean filter per x point."""
    w = pd.Series(1.0, index=values.index) if weights is None else weights
    keep = values.notna() & w.notna()
    values, w = values[keep], w[keep]
    return np.array([w[values <= x].sum() / w.sum() for x in at])


def _acme_only(data: pd.DataFrame) -> pd.DataFrame:
    """Seren and Kalos rows (Figs. 2(a) and 3 also draw Philly, Helios and PAI, synthetic here
    too; tests/test_acme_prior_traces.py checks those)."""
    assert {"Seren", "Kalos"} <= set(data["cluster"])
    return data[data["cluster"].isin(["Seren", "Kalos"])]


def test_job_duration_cdf_matches_pandas(job_con, jobs_frame) -> None:
    data = _acme_only(acme.duration_cdf_data(job_con).df())
    for cluster, rows in data.groupby("cluster"):
        jobs = _gpu_jobs(jobs_frame[jobs_frame["cluster"] == cluster])
        expected = _pandas_ecdf(jobs["duration"], rows["x"].to_numpy())
        assert np.allclose(rows["cdf"], expected)
        assert rows["cdf"].iloc[-1] == pytest.approx(1.0)


def test_gpu_count_cdf_by_jobs_and_gpu_time_matches_pandas(job_con, jobs_frame) -> None:
    data = _acme_only(acme.gpu_count_cdf_data(job_con).df())
    for (cluster, measure), rows in data.groupby(["cluster", "measure"]):
        jobs = _gpu_jobs(jobs_frame[jobs_frame["cluster"] == cluster])
        weights = jobs["gpu_time"] if measure == "GPU time" else None
        expected = _pandas_ecdf(jobs["gpu_num"], rows["x"].to_numpy(), weights)
        assert np.allclose(rows["cdf"], expected), (cluster, measure)
        assert sorted(rows["x"]) == sorted(
            jobs.loc[jobs["gpu_time"].notna() if weights is not None else jobs.index, "gpu_num"]
            .unique()
            .tolist()
        )


@pytest.mark.parametrize("column", ["state", "type"])
def test_state_and_type_shares_match_pandas(job_con, jobs_frame, column: str) -> None:
    data = (acme.states_data if column == "state" else acme.types_data)(job_con).df()
    gpu_jobs = _gpu_jobs(jobs_frame)
    by_jobs = gpu_jobs.groupby("cluster")[column].value_counts(normalize=True) * 100
    by_time = gpu_jobs.groupby(["cluster", column])["gpu_time"].sum()
    by_time = by_time / by_time.groupby("cluster").transform("sum") * 100
    for row in data.itertuples():
        key = (row.cluster, getattr(row, column))
        expected = by_jobs[key] if row.measure == "jobs" else by_time[key]
        assert row.share == pytest.approx(expected), (key, row.measure)
    assert len(data) == 2 * len(by_jobs)


def test_type_gpu_count_boxes_match_numpy_quantiles(job_con, jobs_frame) -> None:
    data = acme.type_gpu_count_data(job_con).df()
    for row in data.itertuples():
        jobs = _gpu_jobs(jobs_frame)
        values = jobs[(jobs["cluster"] == row.cluster) & (jobs["type"] == row.type)]["gpu_num"]
        assert row.jobs == len(values)
        quantiles = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95])
        assert [row.p05, row.q1, row.median, row.q3, row.p95] == pytest.approx(list(quantiles))
        assert row.mean == pytest.approx(values.mean())


def test_type_duration_and_queue_cdfs_match_pandas(job_con, jobs_frame) -> None:
    data = acme.type_duration_queue_data(job_con).df()
    gpu_jobs = _gpu_jobs(jobs_frame)
    for (cluster, kind, metric), rows in data.groupby(["cluster", "type", "metric"]):
        jobs = gpu_jobs[(gpu_jobs["cluster"] == cluster) & (gpu_jobs["type"] == kind)]
        assert np.allclose(rows["cdf"], _pandas_ecdf(jobs[metric], rows["x"].to_numpy()))


def test_cluster_summary_recomputed_matches_pandas(job_con, jobs_frame) -> None:
    data = acme.summary_check_data(job_con).df().set_index(["cluster", "statistic"])
    for cluster in ("Seren", "Kalos"):
        jobs = jobs_frame[jobs_frame["cluster"] == cluster]
        gpu = jobs[jobs["gpu_num"] > 0]
        cpu = jobs[jobs["gpu_num"] == 0]
        ended = gpu[gpu["state"].isin(["COMPLETED", "CANCELLED", "FAILED"])]
        expected = {
            "job_num": len(jobs),
            "cpu_job_num": len(cpu),
            "gpu_job_num": len(gpu),
            "avg_run_time_gpu": gpu["duration"].mean(),
            "med_que_time_gpu": gpu["queue"].median(),
            "avg_gpu_num": gpu["gpu_num"].mean(),
            "max_gpu": jobs["gpu_num"].max(),
            "fail_rate_gpu": (gpu["state"] == "FAILED").mean(),
            "cancel_gpu_time": gpu.loc[gpu["state"] == "CANCELLED", "gpu_time"].sum(),
            "complete_rate_gpu_time": ended.loc[ended["state"] == "COMPLETED", "gpu_time"].sum()
            / ended["gpu_time"].sum(),
            "med_run_time_cpu": cpu["duration"].median(),
            "complete_rate_cpu": (cpu["state"] == "COMPLETED").mean(),
        }
        for statistic, value in expected.items():
            assert data.loc[(cluster, statistic), "recomputed"] == pytest.approx(value), statistic
        published = data.loc[(cluster, "job_num"), "published"]
        assert published == {"Seren": 1_031_550, "Kalos": 62_413}[cluster]
    assert len(data) == 2 * len(SUMMARY_COLUMNS)


def test_job_figures_draw_with_only_one_cluster(
    upstream_server: str, job_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user who fetched only Kalos (9 MB) still gets the job figures, for Kalos."""
    monkeypatch.setenv("MLTRACES_MIRROR", upstream_server)
    con = mltraces.connect(
        ["acme.seren_jobs", "acme.kalos_jobs"],
        local={"acme.kalos_jobs": str(job_files["acme.kalos_jobs"])},
    )
    assert figures.missing_inputs(con, figures.get("acme_fig5")) == {}
    data = acme.types_data(con).df()
    assert set(data["cluster"]) == {"Kalos"}
    assert isinstance(figures.draw("acme_fig5", con), _figure_class())
    con.close()


# --------------------------------------------------------------------------- drawing


def _figure_class() -> type:
    from matplotlib.figure import Figure

    return Figure


SIMULATION_ARGS = {
    "zeus_converged": {"seeds": (1, 2)},
    "zeus_cumulative": {"seeds": (1, 2)},
    "zeus_regret": {"seeds": (1, 2)},
    "zeus_search_path": {"seeds": (1, 2)},
    "zeus_other_gpus": {"seeds": (1, 2)},
    "zeus_sensitivity": {"seeds": (1,), "etas": (0.5, 1.0), "betas": (2.0, math.inf)},
    "zeus_alibaba": {"processes": 1},
    # the scheduling replays, on a part of the figure (the whole Fig. 8(b) takes ~10 min)
    "elasticflow_fig8b": {"labels": ("cluster10",), "policies": ("edf", "elasticflow")},
    "elasticflow_fig8a": {"policies": ("edf", "chronus")},
    "elasticflow_fig7a": {"policies": ("edf", "tiresias")},
    "elasticflow_fig9": {"seeds": (1,), "policies": ("edf", "edf-admission")},
    "elasticflow_fig10": {"policies": ("edf", "tiresias", "chronus")},
    "elasticflow_fig11": {"seeds": (1,), "policies": ("edf", "gandiva"), "shares": (0.5,)},
}


@pytest.mark.slow
@pytest.mark.upstream
@pytest.mark.parametrize("name", list(figures.registry()))
def test_every_figure_draws(name: str, real_con, job_con, tmp_path: Path,
                            request: pytest.FixtureRequest) -> None:
    spec = figures.get(name)
    con = job_con if spec.any_of or "zeus.alibaba_groups" in spec.tables else real_con
    if spec.source in SERVING_SOURCES:  # the request traces' catalog, built only for them
        con = request.getfixturevalue("serving_con")
    data = spec.data(con, **SIMULATION_ARGS.get(name, {}))
    assert isinstance(data, duckdb.DuckDBPyRelation)  # pandas only at the edge
    frame = figures.as_frame(data)
    assert isinstance(frame, pd.DataFrame) and not frame.empty
    figure = spec.plot(frame)
    assert isinstance(figure, _figure_class())
    paths = style.save(figure, tmp_path / name)
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert all(p.stat().st_size > 1000 for p in paths)
    with style.using("paper"):  # for a paper: column or page wide, no provenance title
        bare = spec.plot(frame)
    assert round(bare.get_figwidth(), 2) in set(style.WIDTHS.values()), bare.get_figwidth()
    assert not [t for t in _titles(bare) if any(m in t for m in PROVENANCE)], _titles(bare)
    assert any(m in t for t in _titles(figure) for m in PROVENANCE), "default keeps its title"


#: Words only a title that says where a figure comes from uses.
PROVENANCE = ("Fig.", "our own", "our characterisation", "our extension", "simulated",
              "as published", ".pdf", "Zeus evaluation")


def _titles(figure) -> list[str]:
    """The figure's suptitle, free texts and every axes' titles (legends left out)."""
    texts = [figure.get_suptitle(), *(t.get_text() for t in figure.texts)]
    for ax in figure.axes:
        texts += [ax.get_title(loc) for loc in ("left", "center", "right")]
    return [t for t in texts if t]


def test_figures_from_local_files_are_marked_unverified(job_con) -> None:
    figure = figures.draw("acme_fig5", job_con)
    texts = [t.get_text() for t in figure.texts]
    assert any("unverified" in t and "acme.seren_jobs" in t for t in texts)


@pytest.mark.upstream
def test_real_figures_carry_no_unverified_mark(real_con) -> None:
    figure = figures.draw("itp_gpu_count", real_con)
    assert figures.get("itp_gpu_count").reproduces == "our own analysis"
    assert not any("unverified" in t.get_text() for t in figure.texts)


@pytest.mark.slow  # renders every figure it can
@pytest.mark.upstream
def test_render_all_skips_figures_without_inputs_and_says_what_to_fetch(
    http_mirror: str, tmp_path: Path
) -> None:
    con = mltraces.connect(figures.tables_for("acme"))  # the job traces are not in the mirror
    results = {r.name: r for r in figures.render_all(con, "acme", tmp_path)}
    con.close()
    assert results["acme_fig2b"].paths
    assert (tmp_path / "acme_fig2b.png").is_file() and (tmp_path / "acme_fig2b.pdf").is_file()
    skipped = results["acme_fig5"].skipped
    assert skipped is not None
    assert "acme.seren_jobs or acme.kalos_jobs" in skipped
    assert "mltraces fetch acme/trace_seren.csv acme/trace_kalos.csv" in skipped
    assert not (tmp_path / "acme_fig5.png").exists()


# --------------------------------------------------------------------------- CLI


@pytest.mark.upstream
def test_cli_draws_a_source_into_the_output_folder(
    http_mirror: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mltraces.cli import main

    out = tmp_path / "figs"
    assert main(["figures", "itp", "--output", str(out), "--only", "itp_clusters"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["itp_clusters.csv", "itp_clusters.pdf",
                                                     "itp_clusters.png", "renders.json"]
    assert "1 figures written" in capsys.readouterr().out


@pytest.mark.slow  # renders twice in three formats
@pytest.mark.upstream
def test_cli_paper_style_writes_pdf_and_svg_without_titles_byte_stably(
    http_mirror: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mltraces.cli import main

    args = ["figures", "zeus", "--only", "zeus_fig1", "--style", "paper", "--redraw"]
    assert main([*args, "--output", str(tmp_path / "a")]) == 0
    assert "wrote " in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["renders.json",
                                                                  "zeus_fig1.csv",
                                                                  "zeus_fig1.pdf",
                                                                  "zeus_fig1.svg"]
    assert main([*args, "--output", str(tmp_path / "b")]) == 0
    for suffix in (".pdf", ".svg"):
        first, second = ((tmp_path / d / "zeus_fig1").with_suffix(suffix).read_bytes()
                         for d in "ab")
        assert first == second
    svg = (tmp_path / "a" / "zeus_fig1.svg").read_text()
    assert "Normalized energy usage" in svg and "Zeus Fig. 1 (V100)" not in svg
    assert main(["figures", "zeus", "--only", "zeus_fig1", "--output", str(tmp_path / "c")]) == 0
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["renders.json",
                                                                  "zeus_fig1.csv",
                                                                  "zeus_fig1.pdf",
                                                                  "zeus_fig1.png"]


def test_unknown_figure_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown figure style 'poster'; choose from default"):
        style.check_style("poster")


def test_series_styles_are_okabe_ito_and_distinct_past_the_palette() -> None:
    looks = style.series_styles([f"c{k}" for k in range(10)])
    pairs = {(v["color"], str(v["linestyle"])) for v in looks.values()}
    assert len(pairs) == 10
    assert {v["color"] for v in looks.values()} <= set(style.PALETTE) - {"#000000"}


def test_cli_lists_figures_and_rejects_unknown_sources(capsys: pytest.CaptureFixture[str]) -> None:
    from mltraces.cli import main

    assert main(["figures", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "zeus_fig1" in listing and "one of acme.seren_jobs / acme.kalos_jobs" in listing
    assert "Zeus (NSDI'23) Fig. 1" in listing and "our own analysis" in listing
    assert "AcmeTrace (NSDI'24): repository figure cdf_temperature.pdf" in listing
    assert main(["figures", "philly"]) == 2
    assert f"choose from {', '.join(figures.figure_sources())}" in capsys.readouterr().err
    assert main(["figures", "itp", "--only", "zeus_fig1", "--list"]) == 2
    assert "--only zeus_fig1 is not a figure of itp" in capsys.readouterr().err
    assert main(["figures", "zeus", "--only", "zeus_fig1", "--list"]) == 0
    assert capsys.readouterr().out.startswith("zeus_fig1 ")


# --------------------------------------------------------------------------- helpers


def test_percent_rounds_like_the_paper() -> None:
    assert style.percent(31.449960502287833) == "31.5%"
    assert style.percent(23.846460221642463) == "23.8%"
    assert style.percent(2.967033) == "3.0%"
    assert style.percent(74.676908) == "74.7%"
    assert style.percent(12.34) == "12.3%"


def test_ecdf_thinning_keeps_exact_points_and_bounds_the_step() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"v": rng.integers(0, 20_000, 50_000), "w": rng.random(50_000)})
    con = duckdb.connect()
    con.register("frame", frame)
    for weight in (None, "w"):
        exact = ecdf(con, "frame", "v", weight=weight, steps=None)
        thin = ecdf(con, "frame", "v", weight=weight, steps=200)
        assert len(thin) <= 202 < len(exact)
        weights = frame["w"] if weight else None
        assert np.allclose(thin["cdf"], _pandas_ecdf(frame["v"], thin["x"].to_numpy(), weights))
        assert thin["x"].iloc[0] == frame["v"].min() and thin["cdf"].iloc[-1] == pytest.approx(1)
        assert thin["cdf"].diff().max() < 3 / 200


def test_squarify_tiles_the_rectangle_with_proportional_areas() -> None:
    values = [50.0, 20.0, 15.0, 10.0, 4.0, 1.0]
    rects = acme.squarify(values, 0, 0, 160, 100)
    areas = [w * h for _, _, w, h in rects]
    assert np.allclose(areas, [v / 100 * 160 * 100 for v in values])
    for x, y, w, h in rects:
        assert x >= -1e-9 and y >= -1e-9 and x + w <= 160 + 1e-9 and y + h <= 100 + 1e-9
    assert sum(areas) == pytest.approx(160 * 100)


def test_registry_names_are_unique_and_sources_known() -> None:
    assert figures.tables_for("itp") == ["itp.elasticflow_jobs", "itp.jobs", "itp.testbed_jobs"]
    every = figures.registry()
    assert len(every) == len(set(every))
    assert {spec.source for spec in every.values()} == set(figures.figure_sources())
    with pytest.raises(KeyError, match="unknown figure"):
        figures.get("zeus_fig11")


@pytest.mark.upstream
def test_converged_and_regret_data_match_pandas_and_keep_eta_apart(real_con) -> None:
    """Two η values in one simulation must not be mixed; numbers equal a pandas recomputation."""
    args = {"seeds": (1, 2), "eta": (0.5, 1.0), "workloads": "cifar100,movielens-1m"}
    history = zeus.simulation_history(real_con, **args)
    per = history.groupby(["eta", "workload", "policy", "seed", "recurrence"], as_index=False)[
        ["energy_j", "time_s", "cost"]
    ].sum()

    converged = zeus.converged_data(real_con, last=5, **args).df()
    assert set(converged["eta"]) == {0.5, 1.0} and set(converged["metric"]) == {"ETA", "TTA"}
    assert set(converged["policy"]) == {"zeus", "grid"}
    n = per.groupby(["eta", "workload", "policy", "seed"])["recurrence"].transform("max")
    tail = per[per["recurrence"] > n - 5].groupby(["eta", "workload", "policy", "seed"])[
        "energy_j"].sum()
    for row in converged[converged["metric"] == "ETA"].itertuples():
        ratios = [tail[(row.eta, row.workload, row.policy, seed)]
                  / tail[(row.eta, row.workload, "default", seed)] for seed in (1, 2)]
        assert row.artifact_seed == pytest.approx(ratios[0], rel=1e-12)
        assert (row.low, row.high) == pytest.approx((min(ratios), max(ratios)), rel=1e-12)
        pooled = sum(tail[(row.eta, row.workload, row.policy, seed)] for seed in (1, 2)) / sum(
            tail[(row.eta, row.workload, "default", seed)] for seed in (1, 2))
        assert row.pooled == pytest.approx(pooled, rel=1e-12)

    regret = zeus.regret_data(real_con, **args).df()
    assert set(regret["eta"]) == {0.5, 1.0}
    per["cum"] = per.groupby(["eta", "workload", "policy", "seed"])["cost"].cumsum()
    oracle = per[per["policy"] == "oracle"].set_index(["eta", "workload", "seed", "recurrence"])
    zeus_runs = per[per["policy"] == "zeus"].set_index(["eta", "workload", "seed", "recurrence"])
    gap = (zeus_runs["cum"] - oracle["cum"]).groupby(level=["eta", "workload", "recurrence"]).mean()
    mine = regret[regret["policy"] == "zeus"].set_index(["eta", "workload", "recurrence"])
    assert np.allclose(mine["regret_mj"].sort_index(), gap.sort_index() / 1e6, rtol=1e-12)


@pytest.mark.upstream
def test_search_path_is_every_zeus_run_of_the_seed(real_con) -> None:
    args = {"seeds": (1, 2), "workloads": "squad"}
    history = zeus.simulation_history(real_con, **args)
    path = zeus.search_path_data(real_con, seed=2, **args).df()
    runs = history[(history["policy"] == "zeus") & (history["seed"] == 2)]
    assert path[["recurrence", "attempt", "batch_size", "power_limit", "reached"]].to_numpy(
    ).tolist() == runs[["recurrence", "attempt", "batch_size", "power_limit", "reached"]].to_numpy(
    ).tolist()
    oracle = history[(history["policy"] == "oracle") & (history["seed"] == 2)].iloc[0]
    assert set(path["oracle_batch_size"]) == {oracle["batch_size"]}
    assert set(path["oracle_power_limit"]) == {oracle["power_limit"]}
    assert set(path["b0"]) == {WORKLOADS["squad"].default_batch_size}


@pytest.mark.upstream
def test_headline_numbers_come_from_default_seed_1_last_5_recurrences(real_con) -> None:
    """The abstract's 15.3%–75.8% energy is Zeus vs Default over the last 5 recurrences, seed 1."""
    data = zeus.headline_data(real_con).df()
    chosen = data[(data["baseline"] == "default") & (data["span"] == "last 5")
                  & (data["seeds"] == "1")].set_index("workload")
    assert chosen["energy_saved"].min() == pytest.approx(15.304, abs=5e-4)  # ResNet-50
    assert chosen["energy_saved"].idxmin() == "imagenet"
    assert chosen["energy_saved"].max() == pytest.approx(75.755, abs=5e-4)  # ShuffleNet V2
    assert chosen["time_saved"].max() == pytest.approx(62.88, abs=0.01)  # NeuMF; paper 60.6
    assert len(data) == 2 * 2 * 2 * 6
    report = zeus.headline_report(real_con)
    assert "Paper: energy 15.3%–75.8%, time 60.6%" in report
    assert ("Nearest the paper: Default: b0 at max power, last 5 recurrences, seed 1: energy "
            "15.304%–75.755%") in report
    converged = zeus.converged_data(real_con).df()  # the figure shows the same numbers
    bars = converged[(converged["policy"] == "zeus") & (converged["gpu"] == "v100")]
    assert 100 * (1 - bars[bars["metric"] == "ETA"]["artifact_seed"].max()) == pytest.approx(
        15.304, abs=5e-4)


@pytest.mark.upstream
def test_itp_data_card_states_the_shared_timeline(real_con) -> None:
    """Clusters 03, 01 and 10 start days into one shared timeline, as the card says."""
    first = real_con.sql("SELECT cluster, min(submission_time) AS t FROM itp.jobs "
                         "GROUP BY cluster ORDER BY t").fetchall()
    late = {cluster: t for cluster, t in first if t > 86_400}
    assert list(late) == ["cluster03", "cluster01", "cluster10"]
    card = " ".join(get_source("itp").anomalies)
    assert "shared" in card or "share" in card
    for cluster, t in late.items():
        assert f"{cluster} starts {t / 86_400:.1f} days in ({t:,} s)" in card
    early = max(t for _, t in first if t <= 86_400)
    assert early <= 5 * 3600 and f"first 5 hours (the last of them at {early:,} s)" in card
    assert "each cluster's trace start" not in card


# --------------------------------------------------------------------------- cache, bytes, CLI


def test_figure_data_is_cached_beside_the_parquet_and_reused(job_con) -> None:
    first = acme.types_data(job_con)
    files = store.parquet_paths(first.sql_query())
    assert len(files) == 1 and files[0].parent.name == store.FOLDER
    assert files[0].parent.parent.glob("acme.seren_jobs-*.parquet")
    second = acme.types_data(job_con)
    assert store.parquet_paths(second.sql_query()) == files
    pd.testing.assert_frame_equal(first.df(), second.df())


_SCRATCH_PROBE = """
import sys, tempfile
from pathlib import Path
from mltraces.figures import store
tempfile.tempdir, data = sys.argv[1], Path(sys.argv[2])
(data / "t.parquet").write_bytes(b"an input")
beside = store.stored_path([data / "t.parquet"], ["x"], lambda p: p.write_bytes(b"beside"))
print(beside.parent.name)
if sys.argv[3] == "unwritable":
    (data / "ro").mkdir()
    (data / "ro" / store.FOLDER).write_text("a file where the folder would go")
    (data / "ro" / "t.parquet").write_bytes(b"an input")
    scratch = store.stored_path([data / "ro" / "t.parquet"], ["x"],
                                lambda p: p.write_bytes(b"scratch"))
    print(scratch.read_bytes().decode(), scratch.parent.parent == Path(sys.argv[1]))
"""


def test_figure_data_goes_to_a_scratch_folder_only_when_needed_and_it_goes_at_exit(
        tmp_path: Path) -> None:
    """A process made an empty temporary folder on its first figure query, and left it
    behind; its scratch is now made only when the cache cannot be written, then removed."""
    import subprocess
    import sys

    temp = tmp_path / "temp"
    temp.mkdir()
    for case in ("writable", "unwritable"):
        data = tmp_path / case
        data.mkdir()
        done = subprocess.run([sys.executable, "-c", _SCRATCH_PROBE, str(temp), str(data), case],
                              capture_output=True, text=True, check=True)
        expected = [store.FOLDER] + (["scratch", "True"] if case == "unwritable" else [])
        assert done.stdout.split() == expected
        assert list(temp.iterdir()) == []  # none made, or gone with the process


def test_uncacheable_queries_run_directly() -> None:
    con = duckdb.connect()
    assert store.query(con, "SELECT 42 AS x").fetchall() == [(42,)]


#: One figure of each paper, regenerated and compared byte for byte with figures/.
COMMITTED = Path(__file__).resolve().parents[1] / "figures"
BYTE_STABLE = ["zeus_fig1", "elasticflow_fig7b", "acme_fig4",
               # and one of each kind added since: a replayed Zeus evaluation figure, the
               # Okabe–Ito cluster lines, the one-panel-per-policy allocation plot, a
               # figure of ElasticFlow's generated traces
               "zeus_converged", "itp_duration_cdf", "elasticflow_fig7a", "elasticflow_fig10"]


@pytest.mark.slow
@pytest.mark.upstream
@pytest.mark.parametrize("name", BYTE_STABLE)
def test_rendering_reproduces_the_committed_files_byte_for_byte(
    name: str, real_con, tmp_path: Path
) -> None:
    figures.render_all(real_con, output_dir=tmp_path, names=[name], processes=1)
    for suffix in (".png", ".pdf", ".csv"):  # the figure's data beside it, byte-stable too
        ours = (tmp_path / name).with_suffix(suffix).read_bytes()
        committed = (COMMITTED / name).with_suffix(suffix).read_bytes()
        assert ours == committed, f"{name}{suffix} differs from figures/: re-render it"


@pytest.mark.slow
@pytest.mark.upstream
def test_worker_processes_write_the_same_bytes(real_con, tmp_path: Path) -> None:
    names = ["itp_gpu_count", "acme_fig8"]
    pooled = figures.render_all(real_con, output_dir=tmp_path / "pool", names=names,
                                processes=2, redraw=True)
    inline = figures.render_all(real_con, output_dir=tmp_path / "inline", names=names,
                                processes=1, redraw=True)
    for a, b in zip(pooled, inline, strict=True):
        assert [p.read_bytes() for p in a.paths] == [p.read_bytes() for p in b.paths]


@pytest.mark.slow
@pytest.mark.upstream
def test_a_pooled_figure_run_replays_every_figure_ahead_in_one_pool(
    real_con, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several processes, the figures that replay are asked twice: their replays all
    go to one pool in the first pass, none is submitted again in the second, and the
    figures are the committed bytes."""
    from mltraces import workers
    from mltraces.papers.elasticflow_asplos23 import cached

    # a scheduler version of its own: this test's replays are never in the cache yet
    monkeypatch.setattr(cached, "scheduler_version", lambda: f"ahead-test-{tmp_path.name}")
    asked, late = [], []
    submit = workers.Ahead.submit

    def counting(self, function, *args):
        if self.collecting:
            asked.append(function)
        elif workers._content_key(function, args) not in self.futures:
            late.append(function)
        return submit(self, function, *args)

    monkeypatch.setattr(workers.Ahead, "submit", counting)
    names = ["itp_gpu_count", "elasticflow_fig7a", "elasticflow_fig10"]
    results = figures.render_all(real_con, output_dir=tmp_path, names=names, processes=2,
                                 redraw=True)
    assert [r.name for r in results] == names and all(r.paths for r in results)
    assert len(asked) == 12 and late == []  # Fig. 7(a)'s six policies, Fig. 10's six
    for name in names[1:]:
        for suffix in (".png", ".pdf"):
            assert (tmp_path / name).with_suffix(suffix).read_bytes() == (
                COMMITTED / name).with_suffix(suffix).read_bytes(), name

@pytest.mark.upstream
def test_unchanged_figures_are_copied_from_the_render_cache(
    real_con, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mltraces.figures import render

    name = "elasticflow_fig7b"
    [first] = figures.render_all(real_con, output_dir=tmp_path / "a", names=[name], processes=1)
    monkeypatch.setattr(render, "render", lambda *a: pytest.fail("drew an unchanged figure"))
    [again] = figures.render_all(real_con, output_dir=tmp_path / "b", names=[name], processes=1)
    assert [p.read_bytes() for p in again.paths] == [p.read_bytes() for p in first.paths]
    frame = figures.frame(name, real_con)
    assert render.render_key(name, frame, []) != render.render_key(name, frame.head(3), [])
    assert render.render_key(name, frame, []) != render.render_key(name, frame, ["itp.jobs"])
    with pytest.raises(pytest.fail.Exception, match="drew an unchanged figure"):
        figures.render_all(real_con, output_dir=tmp_path / "c", names=[name], processes=1,
                           redraw=True)


@pytest.mark.upstream
def test_a_figure_the_output_folder_already_holds_is_not_drawn_again(
    real_con, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's renders.json names each figure's key and file hashes; with both as
    recorded the figure is left alone (no render cache involved), anything else redraws."""
    from mltraces.figures import render

    name, out = "elasticflow_fig7b", tmp_path / "out"
    [first] = figures.render_all(real_con, output_dir=out, names=[name], processes=1)
    drawn = {p.name: p.read_bytes() for p in first.paths}
    entry = render.read_record(out)[name]
    assert sorted(entry["files"]) == sorted(drawn)
    record_text = (out / render.RECORD).read_text()

    real_render = render.render
    calls: list[str] = []
    monkeypatch.setattr(render, "reuse", lambda *a, **k: None)  # no render cache to copy from
    monkeypatch.setattr(render, "render", lambda *a: calls.append(a[0]) or real_render(*a))
    [again] = figures.render_all(real_con, output_dir=out, names=[name], processes=1)
    assert calls == [] and {p.name: p.read_bytes() for p in again.paths} == drawn
    assert (out / render.RECORD).read_text() == record_text  # unchanged: not even rewritten

    png = out / f"{name}.png"
    png.write_bytes(png.read_bytes() + b"edited")  # bytes no longer as recorded: redrawn
    figures.render_all(real_con, output_dir=out, names=[name], processes=1)
    assert calls == [name] and png.read_bytes() == drawn[png.name]

    other_key = json.dumps({"figures": {name: {**entry, "key": "0" * 64}}}).encode()
    for hostile in (other_key, b"{not json", b'{"figures": {"elasticflow_fig7b": {"key": "../x"}}}',
                    b" " * (render.RECORD_LIMIT + 1)):
        (out / render.RECORD).write_bytes(hostile)
        calls.clear()
        figures.render_all(real_con, output_dir=out, names=[name], processes=1)
        assert calls == [name], hostile[:20]  # ignored, drawn, recorded anew
        assert render.read_record(out)[name] == entry

    calls.clear()
    figures.render_all(real_con, output_dir=out, names=[name], processes=1, redraw=True)
    assert calls == [name]


def test_the_committed_record_of_renders_matches_the_committed_figures() -> None:
    """figures/renders.json is what lets a fresh clone's first figure run skip drawing the
    committed figures: every file it names is there with the bytes it records."""
    import hashlib

    from mltraces.figures import render

    record = render.read_record(COMMITTED)
    files = {f: h for entry in record.values() for f, h in entry["files"].items()}
    drawn = {p.name for p in COMMITTED.iterdir() if p.suffix in (".png", ".pdf")}
    assert set(files) == drawn
    for name, digest in files.items():
        assert hashlib.sha256((COMMITTED / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.upstream
def test_no_committed_figure_data_is_a_copy_of_an_upstream_file(upstream_dir: Path) -> None:
    """figures/ holds our data, never the publishers' (the repository redistributes no
    trace): no committed CSV has half or more of its rows in one real upstream file."""
    upstream = {}
    for path in upstream_dir.rglob("*"):
        if path.is_file() and path.stat().st_size < 50_000_000 and path.suffix not in {
                ".gz", ".xz", ".tar", ".zip", ".tsv"}:
            text = path.read_bytes().decode("utf-8", "replace").replace("\r", "")
            upstream[path] = set(text.splitlines())
    assert upstream
    for csv in sorted(COMMITTED.glob("*.csv")):
        rows = csv.read_text(encoding="utf-8").splitlines()
        counts = Counter(rows)  # each row as often as the file has it
        for path, lines in upstream.items():
            shared = sum(counts[row] for row in counts.keys() & lines)
            assert shared < 2 or shared < len(rows) / 2, f"{csv.name} copies {path}"


@pytest.mark.upstream
def test_a_figure_of_a_published_file_writes_no_copy_of_it(real_con, tmp_path: Path) -> None:
    [result] = figures.render_all(real_con, output_dir=tmp_path, names=["acme_cluster_summary"],
                                  processes=1)
    assert result.data is None and not (tmp_path / "acme_cluster_summary.csv").exists()
    assert (tmp_path / "acme_cluster_summary.png").is_file()


def test_cli_fails_when_a_local_file_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mltraces.cli import main

    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    bad = tmp_path / "trace_kalos.csv"
    bad.write_text("not,a,job,trace\n1,2,3,4\n")
    code = main(["figures", "acme", "--only", "acme_fig5", "-o", str(tmp_path / "out"),
                 "--local", f"acme.kalos_jobs={bad}"])
    err = capsys.readouterr().err
    assert code == 1
    assert "the local file given for acme.kalos_jobs could not be used" in err
    assert "use local copies with --local" not in err  # it was given: say what is wrong


def test_progress_bar_only_on_a_terminal_unless_asked() -> None:
    from mltraces.figures import _progress

    quiet = _progress(3, None)  # pytest captures stderr: not a terminal
    shown = _progress(3, True)
    assert quiet.disable and not shown.disable
    quiet.close()
    shown.close()
