"""Microsoft ITP traces, as released with ElasticFlow (ASPLOS'23): its Fig. 7(b) and our analysis.

The raw traces (``itp.jobs``) give each job's submission time and duration in
seconds on the timeline all ten clusters share, and its GPU count; ElasticFlow's
release (``itp.elasticflow_jobs``) adds a model, a batch size and a deadline
drawn as submission + U[0.5, 1.5] × duration. GPU time is duration × GPUs.

Only one ElasticFlow figure can be drawn from the released traces alone: the
submitted curve of Fig. 7(b), from the 195-job testbed trace
(``itp.testbed_jobs``). Its other figures are scheduling results (testbed runs
or simulations). Every other figure here is our own characterisation of the
traces; the cluster table prints the published totals (from the source's
``published`` facts) beside ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import ecdf_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "ElasticFlow (ASPLOS'23)"

OWN = "our characterisation, not a paper figure"
#: ElasticFlow Fig. 7(b) counts submissions per 10 minutes over 48 hours.
FIG7B_BIN_MINUTES = 10
FIG7B_HOURS = 48


def published() -> dict[str, Any]:
    """The published facts of the ITP release (jobs, GPU hours, clusters), from its source.json."""
    from mltraces.registry import get_source

    return dict(get_source("itp").published)


def _cluster_label(cluster: str) -> str:
    """``cluster04`` → ``C04``: short enough for ten legend entries."""
    return "C" + cluster.removeprefix("cluster")


# --------------------------------------------------------------------------- table


def clusters_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Per-cluster jobs, GPU hours and GPU counts, with a final ``total`` row.

    The total reproduces the published jobs and GPU hours (:func:`published`;
    GPU hours = sum of duration × num_gpu / 3600, summed in integer seconds so
    the result does not depend on summation order). Columns: cluster, jobs,
    gpu_hours, share_of_gpu_hours (%), median_duration_h, max_gpus, days (first
    submission to last end).
    """
    return store.query(con, """
        WITH per AS (
            SELECT cluster, count(*) AS jobs, sum(duration * num_gpu) / 3600 AS gpu_hours,
                   median(duration) / 3600 AS median_duration_h, max(num_gpu) AS max_gpus,
                   (max(submission_time + duration) - min(submission_time)) / 86400 AS days
            FROM itp.jobs GROUP BY cluster
        ),
        total AS (
            SELECT 'total' AS cluster, count(*), sum(duration * num_gpu) / 3600,
                   median(duration) / 3600,
                   max(num_gpu), NULL::DOUBLE
            FROM itp.jobs
        ),
        rows AS (SELECT * FROM per UNION ALL SELECT * FROM total)
        SELECT cluster, jobs, gpu_hours,
               100 * gpu_hours / (SELECT sum(gpu_hours) FROM per) AS share_of_gpu_hours,
               median_duration_h, max_gpus, days
        FROM rows ORDER BY cluster = 'total', cluster
    """)


def totals_text(data: pd.DataFrame) -> str:
    """The reproduced totals as text, in the form the README prints the published ones."""
    total = data[data["cluster"] == "total"].iloc[0]
    return f"{int(total['jobs']):,} jobs, {total['gpu_hours']:,.1f} GPU hours"


def published_text() -> str:
    """The published totals (from the source's ``published`` block) as text."""
    facts = published()
    return f"{int(facts['jobs']):,} jobs, {float(facts['gpu_hours']):,.1f} GPU hours"


def totals_report(con: duckdb.DuckDBPyConnection) -> str:
    """Reproduced totals next to the published ones."""
    return f"reproduced: {totals_text(clusters_data(con).df())}\npublished:  {published_text()}"


@style.styled
def plot_clusters(data: pd.DataFrame) -> Any:
    """The per-cluster table, as a figure."""
    rows = [
        [
            str(r.cluster),
            f"{int(r.jobs):,}",
            f"{r.gpu_hours:,.1f}",
            f"{r.share_of_gpu_hours:.1f}%",
            f"{r.median_duration_h:.2f}",
            f"{int(r.max_gpus)}",
            "" if r.days != r.days else f"{r.days:.1f}",  # NaN for the total
        ]
        for r in data.itertuples()
    ]
    columns = [
        "Cluster",
        "Jobs",
        "GPU hours",
        "Share of\nGPU hours",
        "Median\nduration (h)",
        "Max\nGPUs",
        "Days",
    ]
    return style.table_figure(
        rows,
        columns,
        title=f"ITP raw traces ({OWN})\nours: {totals_text(data)}; published: "
        f"{published_text()}",
        width=6.0,
        highlight_last=True,
        col_widths=[0.15, 0.12, 0.18, 0.11, 0.18, 0.14, 0.12],
    )


# --------------------------------------------------------------------------- CDFs


def duration_cdf_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """CDF of job duration per cluster (and all clusters). Columns: cluster, x (s), cdf."""
    both = "(SELECT cluster, duration FROM itp.jobs UNION ALL SELECT 'all', duration FROM itp.jobs)"
    return store.query(con, ecdf_sql(both, "duration", by=["cluster"]))


@style.styled
def plot_duration_cdf(data: pd.DataFrame) -> Any:
    """Duration CDFs, one line per cluster, all clusters in black."""
    fig, ax = style.subplots(width="column", height=2.5)
    _cluster_steps(ax, data, sorted(c for c in data["cluster"].unique() if c != "all"))
    every = data[data["cluster"] == "all"]
    ax.step(every["x"], 100 * every["cdf"], where="post", color="black", lw=1.6, label="all")
    style.duration_axis(ax)
    style.cdf_axis(ax)
    ax.set_xlabel("Job duration")
    style.provenance(ax, f"Job duration per cluster\n({OWN})", fontsize=7)
    ax.legend(ncols=2, loc="upper left", fontsize=6, handlelength=1.2)
    return fig


def _cluster_steps(ax: Any, data: pd.DataFrame, clusters: list[str]) -> None:
    """One thin step CDF (columns cluster, x, cdf) per cluster, in percent."""
    looks = style.series_styles(clusters)  # Okabe–Ito, solid then dashed; black is "all"
    for cluster in clusters:
        part = data[data["cluster"] == cluster]
        ax.step(
            part["x"],
            100 * part["cdf"],
            where="post",
            lw=0.9,
            label=_cluster_label(cluster),
            **looks[cluster],
        )


# --------------------------------------------------------------------------- GPU counts


def gpu_count_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Share of jobs and of GPU time per GPU count, over all clusters.

    Columns: num_gpu, measure ('jobs' or 'GPU time'), share (%).
    """
    return store.query(con, """
        WITH per AS (
            SELECT num_gpu, count(*) AS jobs, sum(duration * num_gpu) AS gpu_time
            FROM itp.jobs GROUP BY num_gpu
        )
        SELECT num_gpu, 'jobs' AS measure, 100 * jobs / sum(jobs) OVER () AS share FROM per
        UNION ALL
        SELECT num_gpu, 'GPU time', 100 * gpu_time / sum(gpu_time) OVER () FROM per
        ORDER BY measure DESC, num_gpu
    """)


@style.styled
def plot_gpu_count(data: pd.DataFrame) -> Any:
    """Grouped bars: how many jobs, and how much GPU time, each GPU count accounts for."""
    import numpy as np

    fig, ax = style.subplots(width="column", height=2.2)
    counts = sorted(data["num_gpu"].unique())
    x = np.arange(len(counts))
    for k, measure in enumerate(("jobs", "GPU time")):
        part = data[data["measure"] == measure].set_index("num_gpu").reindex(counts)
        bars = ax.bar(
            x + (k - 0.5) * 0.4,
            part["share"],
            0.4,
            label=f"share of {measure}",
            color=style.color(measure),
        )
        labels = [f"{v:.0f}" if v >= 0.5 else "<1" for v in part["share"]]
        ax.bar_label(bars, labels=labels, fontsize=5.5, padding=1)
    ax.set_xticks(x, [str(c) for c in counts])
    ax.set_xlabel("GPUs per job")
    ax.set_ylabel("Share (%)")
    style.provenance(ax, f"GPUs per job\n({OWN})", fontsize=7)
    ax.legend(loc="upper right")
    return fig


# --------------------------------------------------------------------------- arrivals


def submissions_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Jobs submitted per day of the trace, per cluster. Columns: cluster, day, jobs."""
    return store.query(con, """
        SELECT cluster, (submission_time // 86400)::INTEGER AS day, count(*) AS jobs
        FROM itp.jobs GROUP BY ALL ORDER BY cluster, day
    """)


@style.styled
def plot_submissions(data: pd.DataFrame) -> Any:
    """Total submissions per day (top) and a cluster × day heat map (bottom)."""
    import matplotlib as mpl
    import numpy as np

    clusters = sorted(data["cluster"].unique())
    days = np.arange(int(data["day"].max()) + 1)
    grid = (
        data.pivot_table(index="cluster", columns="day", values="jobs", aggfunc="sum")
        .reindex(index=clusters, columns=days)
        .to_numpy(dtype=float)
    )
    fig, (top, bottom) = style.subplots(
        2, 1, width="page", height=3.0, sharex=True, gridspec_kw={"height_ratios": [1, 1.6]}
    )
    top.bar(days, np.nansum(grid, axis=0), width=0.9, color=style.PALETTE[0])
    top.set_ylabel("Jobs per day")
    image = bottom.imshow(
        np.ma.masked_invalid(grid),
        aspect="auto",
        cmap="viridis",
        norm=mpl.colors.LogNorm(vmin=1, vmax=np.nanmax(grid)),
        extent=(-0.5, days[-1] + 0.5, len(clusters) - 0.5, -0.5),
        interpolation="nearest",
    )
    bottom.set_yticks(range(len(clusters)), [_cluster_label(c) for c in clusters])
    bottom.grid(False)
    bottom.set_xlabel("Day of the trace (from 2021-03-04)")
    fig.colorbar(image, ax=bottom, pad=0.01, label="Jobs submitted per day")
    style.provenance(fig, "Submissions per day over the two months, all clusters and per "
                     f"cluster ({OWN})")
    return fig


# --------------------------------------------------------------------------- ElasticFlow


def deadline_slack_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """CDF of ElasticFlow's deadline slack, (deadline − submission) / duration, per cluster.

    ElasticFlow draws it from U[0.5, 1.5]; a straight CDF from 0.5 to 1.5 in every
    cluster is what to look for. Columns: cluster, x, cdf.
    """
    return store.query(
        con, ecdf_sql("itp.elasticflow_jobs", "deadline_factor", by=["cluster"], steps=200)
    )


@style.styled
def plot_deadline_slack(data: pd.DataFrame) -> Any:
    """Slack CDFs per cluster, with the U[0.5, 1.5] line dashed."""
    fig, ax = style.subplots(width="column", height=2.3)
    _cluster_steps(ax, data, sorted(data["cluster"].unique()))
    ax.plot([0.5, 1.5], [0, 100], color="black", ls="--", lw=0.9, label="U[0.5, 1.5]")
    style.cdf_axis(ax)
    ax.set_xlabel("Deadline slack: (deadline − submission) / duration")
    style.provenance(ax, f"ElasticFlow's deadlines\n({OWN})", fontsize=7)
    ax.legend(ncols=2, fontsize=6, loc="upper left", handlelength=1.2)
    return fig


def model_mix_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Share of each ElasticFlow model per cluster, by jobs and by GPU time.

    Columns: cluster ('all' included), model_name, measure ('jobs' or
    'GPU time'), share (%).
    """
    return store.query(con, """
        WITH per AS (
            SELECT cluster, model_name, count(*) AS jobs, sum(duration * num_gpu) AS gpu_time
            FROM itp.elasticflow_jobs GROUP BY ALL
            UNION ALL
            SELECT 'all', model_name, count(*), sum(duration * num_gpu)
            FROM itp.elasticflow_jobs GROUP BY ALL
        )
        SELECT cluster, model_name, 'jobs' AS measure,
               100 * jobs / sum(jobs) OVER (PARTITION BY cluster) AS share FROM per
        UNION ALL
        SELECT cluster, model_name, 'GPU time',
               100 * gpu_time / sum(gpu_time) OVER (PARTITION BY cluster) FROM per
        ORDER BY measure DESC, cluster, model_name
    """)


@style.styled
def plot_model_mix(data: pd.DataFrame) -> Any:
    """100 % stacked bars per cluster: the model mix by jobs (left) and GPU time (right)."""
    import numpy as np

    fig, axes = style.subplots(1, 2, width="page", height=2.5, sharey=True)
    models = sorted(data["model_name"].unique())
    colors = style.colors(models)
    clusters = [*sorted(c for c in data["cluster"].unique() if c != "all"), "all"]
    y = np.arange(len(clusters))
    for ax, measure in zip(axes, ("jobs", "GPU time"), strict=False):
        part = data[data["measure"] == measure].pivot_table(
            index="cluster", columns="model_name", values="share", aggfunc="sum"
        )
        part = part.reindex(index=clusters, columns=models).fillna(0.0)
        left = np.zeros(len(clusters))
        for model in models:
            ax.barh(y, part[model], left=left, color=colors[model], label=model, height=0.75)
            left += part[model].to_numpy()
        ax.set_xlim(0, 100)
        ax.set_xlabel(f"Share of {measure} (%)")
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(y, [_cluster_label(c) if c != "all" else "all" for c in clusters])
    axes[0].invert_yaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(models))
    style.provenance(fig, f"ElasticFlow's model annotations per cluster ({OWN})")
    return fig


# --------------------------------------------------------------------------- ElasticFlow Fig. 7(b)


def testbed_submissions_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Jobs of the 195-job testbed trace submitted per 10 minutes (ElasticFlow Fig. 7(b)).

    As in the paper's plotting script: submission times relative to the first
    job, binned into 10-minute steps over 48 hours, empty bins included.
    Columns: bin (index), hour (start of the bin), jobs.
    """
    step = FIG7B_BIN_MINUTES * 60
    bins = FIG7B_HOURS * 60 // FIG7B_BIN_MINUTES
    return store.query(con, f"""
        WITH t AS (
            SELECT (submission_time - min(submission_time) OVER ()) // {step} AS bin
            FROM itp.testbed_jobs
        ),
        counts AS (SELECT bin, count(*) AS jobs FROM t GROUP BY bin)
        SELECT b.bin, b.bin * {step} / 3600 AS hour, coalesce(c.jobs, 0) AS jobs
        FROM range({bins}) AS b(bin) LEFT JOIN counts c USING (bin)
        ORDER BY b.bin
    """)


@style.styled
def plot_testbed_submissions(data: pd.DataFrame) -> Any:
    """ElasticFlow Fig. 7(b), submitted curve: jobs per 10 minutes over the 48-hour trace."""
    fig, ax = style.subplots(width="page", height=2.2)
    ax.plot(data["hour"], data["jobs"], color=style.PALETTE[3], lw=1.2,
            drawstyle="steps-post", label="# job submission (testbed trace)")
    ax.set_xlim(0, FIG7B_HOURS)
    ax.set_xticks(range(0, FIG7B_HOURS + 1, 12))
    ax.set_ylim(0, max(25, int(data["jobs"].max()) + 2))
    ax.set_xlabel("Time (hour)")
    ax.set_ylabel(f"Jobs per {FIG7B_BIN_MINUTES} min")
    ax.legend(loc="upper right")
    style.provenance(
        ax,
        f"ElasticFlow Fig. 7(b), submitted curve: {int(data['jobs'].sum())} jobs, at most "
        f"{int(data['jobs'].max())} in {FIG7B_BIN_MINUTES} min (the accepted curve needs the "
        "testbed run)"
    )
    return fig


def _spec(name: str, title: str, data: Any, plot: Any, table: str = "itp.jobs",
          figure: str = "") -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "itp", title, (table,), data, plot, figure=figure, paper=PAPER)


FIGURES = (
    _spec("elasticflow_fig7b", "ElasticFlow Fig. 7(b), submitted curve: the 195-job testbed "
          "trace's submissions per 10 minutes", testbed_submissions_data,
          plot_testbed_submissions, "itp.testbed_jobs", figure="Fig. 7(b), submitted curve"),
    _spec("itp_clusters", f"Table: jobs and GPU hours per cluster, published totals beside ours "
          f"({OWN})", clusters_data, plot_clusters),
    _spec("itp_duration_cdf", f"CDF of job duration per cluster ({OWN})", duration_cdf_data,
          plot_duration_cdf),
    _spec("itp_gpu_count", f"GPUs per job: share of jobs and of GPU time ({OWN})",
          gpu_count_data, plot_gpu_count),
    _spec("itp_submissions", f"Jobs submitted per day, per cluster ({OWN})", submissions_data,
          plot_submissions),
    _spec("itp_deadline_slack", f"ElasticFlow deadline slack (deadline − submission) / duration "
          f"per cluster ({OWN})", deadline_slack_data, plot_deadline_slack,
          "itp.elasticflow_jobs"),
    _spec("itp_model_mix", f"ElasticFlow model mix per cluster, by jobs and by GPU time ({OWN})",
          model_mix_data, plot_model_mix, "itp.elasticflow_jobs"),
)
