"""AcmeTrace Figs. 2(a) and 3 with Philly, Helios and PAI beside Seren and Kalos, from the
jobs mapping, on synthetic traces of all five."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows, synthetic_files  # noqa: F401
from synthetic_sources import served

from mltraces.catalog import connect
from mltraces.papers.acme_nsdi24 import figures as acme

PRIOR = {"philly": "philly.jobs", "helios": "helios.jobs", "alibaba_pai": "alibaba_pai.jobs"}


@pytest.fixture
def five_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from mltraces.synthetic import write_tables

    local = write_tables(tmp_path / "acme", ["acme.seren_jobs", "acme.kalos_jobs"], rows=800)
    with served(tmp_path / "mirror", list(PRIOR), monkeypatch, rows=800, seed=2):
        yield connect(tables=[*PRIOR.values(), *local], local=local, strict=True)


def _gpu_jobs(con, table: str, gpus: str, where: str = "") -> int:
    from mltraces.schema import get_schema

    return rows(con, f"SELECT count(*) FROM {get_schema(table).qualified} WHERE {gpus} > 0 "
                f"{where}")[0][0]


def test_fig2a_and_fig3_draw_the_prior_traces_from_the_jobs_mapping(five_traces) -> None:
    con = five_traces
    durations = acme.duration_cdf_data(con).df()
    assert acme._clusters(durations) == ["Seren", "Kalos", "Philly", "Helios", "PAI"]
    assert (durations.groupby("cluster")["cdf"].max().round(9) == 1).all()
    counts = acme.gpu_count_cdf_data(con).df()
    assert set(counts["cluster"]) == {"Seren", "Kalos", "Philly", "Helios", "PAI"}
    # every GPU job with a run time counts once: jobs per cluster, from the tables themselves
    expected = {
        "Philly": _gpu_jobs(con, "philly.jobs", "num_gpu", "AND last_end IS NOT NULL"),
        "Helios": _gpu_jobs(con, "helios.jobs", "gpu_num"),
        "PAI": _gpu_jobs(con, "alibaba_pai.jobs", "num_gpu",
                         "AND end_time IS NOT NULL AND first_task_start IS NOT NULL"),
    }
    found = rows(con, f"SELECT cluster, count(*) FROM {acme.gpu_jobs_sql(con)} "
                 "WHERE duration IS NOT NULL GROUP BY 1")
    assert {c: n for c, n in found if c in expected} == expected
    pai = counts[(counts["cluster"] == "PAI") & (counts["measure"] == "jobs")]
    assert pai["x"].min() < 1  # shared GPUs: a PAI job may ask for a fraction
    for plot, data in ((acme.plot_duration_cdf, durations), (acme.plot_gpu_count_cdf, counts)):
        figure = plot(data)
        text = figure.texts[0].get_text() if figure.texts else figure.axes[0].get_title()
        assert "Philly, Helios, PAI from mltraces.jobs" in text


def test_without_the_prior_traces_the_figures_say_they_are_not_fetched(
        synthetic_files) -> None:  # noqa: F811
    acme_only = {t: synthetic_files[t] for t in ("acme.seren_jobs", "acme.kalos_jobs")}
    con = connect(tables=list(acme_only), local=acme_only, strict=True)
    data = acme.duration_cdf_data(con).df()
    assert set(data["cluster"]) == {"Seren", "Kalos"}
    title = acme.plot_duration_cdf(data).axes[0].get_title()
    assert "Philly, Helios, PAI not fetched" in title
