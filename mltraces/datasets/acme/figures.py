"""AcmeTrace (NSDI'24) figures: LLM development on the Seren and Kalos clusters.

Two kinds of inputs:

- the job traces (``acme.seren_jobs``, ``acme.kalos_jobs``): durations, queueing,
  GPU counts, final states and job types. As in the paper, *GPU jobs* are the
  rows with ``gpu_num > 0``; GPU time is the ``gpu_time`` column (duration ×
  GPUs). ``duration`` is used as published: on Kalos it runs from submission
  to end (queueing included), on Seren from start to end.
- the processed utilization curves (``acme.util_cdf``, from ``util_pkl``): the
  authors' CDFs of GPU/CPU/memory utilization, temperature, power and
  InfiniBand traffic, drawn as published.

Job-trace figures draw whichever of Seren and Kalos is available.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mltraces.figures import style
from mltraces.figures.sql import cdf_from_points_sql, ecdf

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

JOB_TABLES = {"Seren": "acme.seren_jobs", "Kalos": "acme.kalos_jobs"}
JOB_COLUMNS = (
    "gpu_num",
    "node_num",
    "cpu_num",
    "type",
    "state",
    "duration",
    "queue",
    "gpu_time",
)
STATES = ("COMPLETED", "CANCELLED", "FAILED", "RUNNING")
#: Job types in the paper's order (MLLM exists on Seren only; CPU jobs have no GPUs).
TYPES = ("Pretrain", "SFT", "MLLM", "Eval", "Debug", "Other", "CPU")
TYPE_COLORS = dict(zip(TYPES, (*style.PALETTE[:6], "#999999"), strict=False))


class NoJobTraceError(LookupError):
    """Neither AcmeTrace job trace can be read on this connection."""


def jobs_sql(con: duckdb.DuckDBPyConnection, gpu_only: bool = True) -> str:
    """SQL over the available job tables with a ``cluster`` column (Seren, Kalos).

    Raises :class:`NoJobTraceError` naming what to fetch when neither is readable.
    """
    from mltraces.figures import available, fetch_hint

    tables = available(con, list(JOB_TABLES.values()))
    if not tables:
        raise NoJobTraceError(
            "no AcmeTrace job trace is available: " + fetch_hint(list(JOB_TABLES.values()))
        )
    columns = ", ".join(JOB_COLUMNS)
    where = "WHERE gpu_num > 0" if gpu_only else ""
    parts = [
        f"SELECT '{cluster}' AS cluster, {columns} FROM {table} {where}"
        for cluster, table in JOB_TABLES.items()
        if table in tables
    ]
    return "(" + " UNION ALL ".join(parts) + ")"


def _clusters(data: pd.DataFrame) -> list[str]:
    return [c for c in ("Seren", "Kalos", "Philly", "PAI") if c in set(data["cluster"])]


# --------------------------------------------------------------------------- durations


def duration_cdf_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """CDF of GPU job duration per cluster. Columns: cluster, x (s), cdf."""
    return ecdf(con, jobs_sql(con), "duration", by=["cluster"])


@style.styled
def plot_duration_cdf(data: pd.DataFrame) -> Any:
    """One CDF line per cluster on a log time axis."""
    fig, ax = style.subplots(width="column", height=2.2)
    for cluster in _clusters(data):
        part = data[data["cluster"] == cluster]
        ax.step(
            part["x"].clip(lower=1),
            100 * part["cdf"],
            where="post",
            color=style.color(cluster),
            label=cluster,
        )
    style.duration_axis(ax)
    style.cdf_axis(ax)
    ax.set_xlabel("GPU job duration")
    ax.legend(loc="lower right")
    return fig


# --------------------------------------------------------------------------- util_pkl curves


def util_curves(
    con: duckdb.DuckDBPyConnection, series: list[str], files: list[str] | None = None
) -> pd.DataFrame:
    """Curves of ``acme.util_cdf`` by series name (optionally from some files only).

    Columns: source_file, cluster, series, metric, unit, x, y (percent).
    """
    names = ", ".join(f"'{s}'" for s in series)
    where = f"AND source_file IN ({', '.join(repr(f) for f in files)})" if files else ""
    return con.sql(f"""
        SELECT source_file, cluster, series, metric, unit, x, y
        FROM acme.util_cdf
        WHERE series IN ({names}) {where}
        ORDER BY source_file, series, point
    """).df()


def gpu_util_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """GPU utilization CDFs: Seren, Kalos (``util_gpu_kalos.pkl``, as the paper), Philly, PAI."""
    files = ["util_gpu_seren.pkl", "util_gpu_kalos.pkl", "util_gpu_philly.pkl", "util_gpu_pai.pkl"]
    return util_curves(con, ["gpu_util"], files)


@style.styled
def plot_gpu_util(data: pd.DataFrame) -> Any:
    """GPU utilization CDF per cluster; Seren and Kalos solid, the older traces dashed."""
    fig, ax = style.subplots(width="column", height=2.2)
    for cluster in _clusters(data):
        part = data[data["cluster"] == cluster]
        dashed = cluster in ("Philly", "PAI")
        ax.plot(
            part["x"],
            part["y"],
            color=style.color(cluster),
            ls="--" if dashed else "-",
            label=cluster,
        )
    ax.set_xlim(0, 100)
    style.cdf_axis(ax)
    ax.set_xlabel("GPU utilization (%)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=4)
    return fig


RESOURCE_SERIES = {
    "gpu": (
        ("sm_active", "SM activity"),
        ("sm_occupancy", "SM occupancy"),
        ("gpu_memory_used", "GPU memory"),
    ),
    "host": (("cpu_util", "CPU"), ("host_memory_used", "Host memory")),
    "ib": (("ib_send", "IB send"), ("ib_receive", "IB receive")),
}


def resource_util_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """SM activity, SM occupancy, GPU memory, CPU, host memory and InfiniBand CDFs.

    Seren's GPU curves come from ``util_gpu_seren.pkl`` and Kalos' from
    ``util_gpu_kalos_full.pkl`` (the file with SM metrics). The occupancy curve
    is identical to the tensor-activity one in both files, so only one is drawn.
    InfiniBand rates (Seren only, unit undocumented) are normalised by their
    maximum, as in the paper. Columns: panel, cluster, series, label, x, y.
    """
    import pandas as pd

    files = [
        "util_gpu_seren.pkl",
        "util_gpu_kalos_full.pkl",
        "util_cpu_mem_seren.pkl",
        "util_cpu_mem_kalos.pkl",
        "ib_seren.pkl",
    ]
    series = [s for group in RESOURCE_SERIES.values() for s, _ in group]
    curves = util_curves(con, series, files)
    labels = {s: (panel, label) for panel, group in RESOURCE_SERIES.items() for s, label in group}
    curves["panel"] = [labels[s][0] for s in curves["series"]]
    curves["label"] = [labels[s][1] for s in curves["series"]]
    is_ib = curves["panel"] == "ib"
    if is_ib.any():
        peak = curves.loc[is_ib].groupby("series")["x"].transform("max")
        curves.loc[is_ib, "x"] = 100 * curves.loc[is_ib, "x"] / peak
    return pd.DataFrame(curves[["panel", "cluster", "series", "label", "x", "y"]])


@style.styled
def plot_resource_util(data: pd.DataFrame) -> Any:
    """Three panels: GPU-side metrics, host CPU and memory, InfiniBand.

    Colour is the metric (named in each panel's legend); line style is the
    cluster (Seren solid, Kalos dashed; figure legend).
    """
    from matplotlib.lines import Line2D

    fig, axes = style.subplots(1, 3, width="page", height=2.5, sharey=True)
    titles = {"gpu": "GPU", "host": "Host", "ib": "InfiniBand (Seren; send ≈ receive)"}
    xlabels = {"gpu": "Utilization (%)", "host": "Utilization (%)", "ib": "Rate (% of peak)"}
    for ax, panel in zip(axes, ("gpu", "host", "ib"), strict=False):
        rows = data[data["panel"] == panel]
        handles = []
        for k, (series, label) in enumerate(RESOURCE_SERIES[panel]):
            for cluster in _clusters(rows):
                part = rows[(rows["series"] == series) & (rows["cluster"] == cluster)]
                ax.plot(
                    part["x"],
                    part["y"],
                    color=style.PALETTE[k],
                    ls="-" if cluster == "Seren" else "--",
                )
            handles.append(Line2D([], [], color=style.PALETTE[k], label=label))
        ax.set_title(titles[panel])
        ax.set_xlabel(xlabels[panel])
        if panel != "host":
            ax.set_xlim(0, 100)
        ax.legend(handles=handles, loc="lower right")
    style.cdf_axis(axes[0])
    clusters = [
        Line2D([], [], color="black", ls=ls, label=c)
        for c, ls in (("Seren", "-"), ("Kalos", "--"))
        if c in set(data["cluster"])
    ]
    fig.legend(handles=clusters, loc="outside lower center", ncols=2)
    return fig


def temperature_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """GPU core and memory temperature CDFs (August 2023), Seren and Kalos."""
    return util_curves(con, ["gpu_temp", "gpu_memory_temp"])


@style.styled
def plot_temperature(data: pd.DataFrame) -> Any:
    """Temperature CDFs: colour = cluster, solid = GPU core, dashed = GPU memory."""
    fig, ax = style.subplots(width="column", height=2.2)
    for cluster in _clusters(data):
        for series, ls, what in (("gpu_temp", "-", "GPU"), ("gpu_memory_temp", "--", "memory")):
            part = data[(data["cluster"] == cluster) & (data["series"] == series)]
            ax.plot(
                part["x"], part["y"], color=style.color(cluster), ls=ls, label=f"{cluster} {what}"
            )
    style.cdf_axis(ax)
    ax.set_xlabel("Temperature (°C)")
    ax.legend(loc="lower right")
    return fig


def power_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """GPU power (Seren, Kalos) and server power (GPU and CPU nodes of Seren) CDFs."""
    return util_curves(con, ["gpu_power", "gpu_node_power", "cpu_node_power"])


@style.styled
def plot_power(data: pd.DataFrame) -> Any:
    """Two panels: GPU power per cluster (A100 TDP marked) and server power by node kind."""
    fig, (left, right) = style.subplots(1, 2, width="page", height=2.2, sharey=True)
    gpu = data[data["series"] == "gpu_power"]
    for cluster in _clusters(gpu):
        part = gpu[gpu["cluster"] == cluster]
        left.plot(part["x"], part["y"], color=style.color(cluster), label=cluster)
    left.axvline(400, color="black", lw=0.8, ls=":", label="A100 TDP (400 W)")
    left.set_xlabel("GPU power (W)")
    left.legend(loc="lower right")
    for k, (series, label) in enumerate(
        (("gpu_node_power", "GPU servers"), ("cpu_node_power", "CPU servers"))
    ):
        part = data[data["series"] == series]
        right.plot(part["x"], part["y"], color=style.PALETTE[k + 2], label=label)
    right.set_xlabel("Server power (W)")
    right.legend(loc="lower right")
    style.cdf_axis(left)
    return fig


# --------------------------------------------------------------------------- GPU counts


def gpu_count_cdf_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """CDF of GPUs per GPU job, weighted by jobs and by GPU time (one scan for both).

    Columns: cluster, measure ('jobs' or 'GPU time'), x (GPUs), cdf.
    """
    points = f"""
        WITH per AS (
            SELECT cluster, gpu_num AS x, count(*)::DOUBLE AS "jobs",
                   sum(gpu_time)::DOUBLE AS "GPU time"
            FROM {jobs_sql(con)} GROUP BY ALL
        )
        UNPIVOT per ON "jobs", "GPU time" INTO NAME measure VALUE w
    """
    frame = con.sql(cdf_from_points_sql(points, ["cluster", "measure"], steps=None)).df()
    return frame.sort_values(["cluster", "measure"], ascending=[True, False], ignore_index=True)


@style.styled
def plot_gpu_count_cdf(data: pd.DataFrame) -> Any:
    """Two panels (by jobs, by GPU time), one step CDF per cluster on a log-2 axis."""
    fig, axes = style.subplots(1, 2, width="page", height=2.2, sharey=True)
    for ax, measure in zip(axes, ("jobs", "GPU time"), strict=False):
        for cluster in _clusters(data):
            part = data[(data["cluster"] == cluster) & (data["measure"] == measure)]
            ax.step(
                part["x"],
                100 * part["cdf"],
                where="post",
                color=style.color(cluster),
                label=cluster,
            )
        style.log2_ticks(ax, list(data["x"]))
        ax.set_xlabel("GPUs per job")
        ax.set_title(f"By {measure}")
    style.cdf_axis(axes[0])
    axes[0].legend(loc="lower right")
    return fig


# --------------------------------------------------------------------------- states and types


def states_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Final state shares of GPU jobs per cluster, by job count and by GPU time.

    Columns: cluster, state, measure ('jobs' or 'GPU time'), share (%).
    """
    return _shares(con, "state")


def types_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Job type shares of GPU jobs per cluster, by job count and by GPU time.

    Columns: cluster, type, measure ('jobs' or 'GPU time'), share (%).
    """
    return _shares(con, "type")


def _shares(con: duckdb.DuckDBPyConnection, column: str) -> pd.DataFrame:
    return con.sql(f"""
        WITH per AS (
            SELECT cluster, {column}, count(*) AS jobs, coalesce(sum(gpu_time), 0) AS gpu_time
            FROM {jobs_sql(con)} GROUP BY ALL
        )
        SELECT cluster, {column}, 'jobs' AS measure,
               100 * jobs / sum(jobs) OVER (PARTITION BY cluster) AS share
        FROM per
        UNION ALL
        SELECT cluster, {column}, 'GPU time',
               100 * gpu_time / sum(gpu_time) OVER (PARTITION BY cluster)
        FROM per
        ORDER BY cluster, measure DESC, {column}
    """).df()


@style.styled
def plot_states(data: pd.DataFrame) -> Any:
    """100 % stacked bars: final states per cluster, by jobs and by GPU time."""
    fig, ax = style.subplots(width="column", height=2.0)
    rows = [(c, m) for c in _clusters(data) for m in ("jobs", "GPU time")]
    y = np.arange(len(rows))
    states = [s for s in STATES if s in set(data["state"])]
    left = np.zeros(len(rows))
    for state in states:
        values = np.array(
            [
                data[(data["cluster"] == c) & (data["measure"] == m) & (data["state"] == state)][
                    "share"
                ].sum()
                for c, m in rows
            ]
        )
        bars = ax.barh(
            y, values, left=left, color=style.color(state), label=state.title(), height=0.7
        )
        ax.bar_label(
            bars,
            labels=[f"{v:.0f}" if v >= 6 else "" for v in values],
            label_type="center",
            fontsize=6,
            color="white",
        )
        left += values
    ax.set_yticks(y, [f"{c}, by {m}" for c, m in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("Share of the GPU jobs, or of their GPU time (%)")
    ax.grid(axis="y", visible=False)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=len(states))
    return fig


def squarify(
    values: list[float], x: float, y: float, width: float, height: float
) -> list[tuple[float, float, float, float]]:
    """Squarified treemap layout: rectangles ``(x, y, w, h)`` for ``values`` (sorted descending).

    Rows of rectangles are laid along the shorter side of the remaining space,
    and a rectangle joins the current row only while that keeps the row's worst
    aspect ratio from getting worse (Bruls, Huizing and van Wijk, 2000). Areas
    are proportional to ``values``; zero values get empty rectangles.
    """
    total = float(sum(values))
    if total <= 0:
        return [(x, y, 0.0, 0.0) for _ in values]
    areas = [v * width * height / total for v in values]
    rects: list[tuple[float, float, float, float]] = []
    i = 0
    while i < len(areas):
        short = min(width, height)
        row = [areas[i]]
        i += 1
        while i < len(areas) and _worst([*row, areas[i]], short) <= _worst(row, short):
            row.append(areas[i])
            i += 1
        thickness = sum(row) / short if short > 0 else 0.0
        offset = 0.0
        for area in row:
            length = area / thickness if thickness > 0 else 0.0
            if width >= height:  # a column along the left edge
                rects.append((x, y + offset, thickness, length))
            else:  # a row along the bottom edge
                rects.append((x + offset, y, length, thickness))
            offset += length
        if width >= height:
            x, width = x + thickness, width - thickness
        else:
            y, height = y + thickness, height - thickness
    return rects


def _worst(row: list[float], short: float) -> float:
    """Largest aspect ratio (≥ 1) of a row of areas laid along a side of length ``short``."""
    total = sum(row)
    if total <= 0 or short <= 0 or min(row) <= 0:
        return float("inf")
    return max(max(short**2 * a / total**2, total**2 / (short**2 * a)) for a in row)


@style.styled
def plot_types(data: pd.DataFrame) -> Any:
    """Treemaps of job types: one row per cluster, by jobs (left) and by GPU time (right)."""
    from matplotlib.patches import Rectangle

    clusters = _clusters(data)
    fig, axes = style.subplots(
        len(clusters), 2, width="page", height=2.25 * len(clusters), squeeze=False
    )
    width, height = 160.0, 100.0  # the panels' aspect, so rectangles come out square-ish
    present = [t for t in TYPES if t in set(data["type"])]
    for r, cluster in enumerate(clusters):
        for c, measure in enumerate(("jobs", "GPU time")):
            ax = axes[r, c]
            part = data[(data["cluster"] == cluster) & (data["measure"] == measure)]
            part = part[part["share"] > 0].sort_values("share", ascending=False)
            layout = squarify(list(part["share"]), 0, 0, width, height)
            for kind, share, (x, y, w, h) in zip(part["type"], part["share"], layout, strict=False):
                ax.add_patch(
                    Rectangle(
                        (x, y),
                        w,
                        h,
                        facecolor=TYPE_COLORS.get(kind, "#999999"),
                        edgecolor="white",
                        linewidth=1.2,
                    )
                )
                _treemap_label(ax, kind, share, (x, y, w, h))
            ax.set_xlim(0, width)
            ax.set_ylim(0, height)
            ax.set_aspect("equal")
            ax.axis("off")
            ax.set_title(f"{cluster}, by {measure}")
    handles = [Rectangle((0, 0), 1, 1, color=TYPE_COLORS[t]) for t in present]
    fig.legend(handles, present, loc="outside lower center", ncols=len(present))
    return fig


def _treemap_label(ax: Any, kind: str, share: float, rect: tuple[float, ...]) -> None:
    """Name and share where they fit, the share alone in smaller tiles, nothing in slivers."""
    x, y, w, h = rect
    if w >= 24 and h >= 14:
        text, size = f"{kind}\n{share:.1f}%", 6.5
    elif w >= 12 and h >= 6:
        text, size = f"{share:.0f}%", 5.5
    else:
        return
    ax.text(
        x + w / 2,
        y + h / 2,
        text,
        ha="center",
        va="center",
        fontsize=size,
        color="white",
        fontweight="bold",
    )


def type_gpu_count_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """GPUs per job by job type: the five-number summary of each (cluster, type) box.

    Whiskers are the 5th and 95th percentiles (outliers are not drawn).
    Columns: cluster, type, jobs, p05, q1, median, q3, p95, mean.
    """
    return con.sql(f"""
        WITH q AS (
            SELECT cluster, type, count(*) AS jobs, avg(gpu_num) AS mean,
                   quantile_cont(gpu_num, [0.05, 0.25, 0.5, 0.75, 0.95]) AS qs
            FROM {jobs_sql(con)} GROUP BY ALL
        )
        SELECT cluster, type, jobs, qs[1] AS p05, qs[2] AS q1, qs[3] AS median, qs[4] AS q3,
               qs[5] AS p95, mean
        FROM q ORDER BY cluster, type
    """).df()


@style.styled
def plot_type_gpu_count(data: pd.DataFrame) -> Any:
    """Boxes of GPUs per job for each type, one panel per cluster, log-2 axis."""
    clusters = _clusters(data)
    fig, axes = style.subplots(
        1, len(clusters), width="page", height=2.2, sharey=True, squeeze=False
    )
    for ax, cluster in zip(axes[0], clusters, strict=False):
        rows = data[data["cluster"] == cluster].set_index("type")
        kinds = [t for t in TYPES if t in rows.index]
        stats = [
            {
                "label": f"{t}\n(n={int(rows.loc[t, 'jobs']):,})",
                "whislo": rows.loc[t, "p05"],
                "q1": rows.loc[t, "q1"],
                "med": rows.loc[t, "median"],
                "q3": rows.loc[t, "q3"],
                "whishi": rows.loc[t, "p95"],
                "mean": rows.loc[t, "mean"],
                "fliers": [],
            }
            for t in kinds
        ]
        boxes = ax.bxp(
            stats,
            showmeans=True,
            patch_artist=True,
            widths=0.6,
            meanprops={
                "marker": "^",
                "markersize": 3,
                "markerfacecolor": "black",
                "markeredgecolor": "black",
            },
            medianprops={"color": "black"},
        )
        for patch, kind in zip(boxes["boxes"], kinds, strict=False):
            patch.set_facecolor(TYPE_COLORS.get(kind, "#999999"))
            patch.set_alpha(0.8)
        ax.tick_params(axis="x", labelsize=5.5)
        ax.set_title(cluster)
        style.log2_ticks(ax, list(data["p05"]) + list(data["p95"]), axis="y")
    axes[0, 0].set_ylabel("GPUs per job (box: quartiles,\nwhiskers: 5th–95th pct, ▲ mean)")
    return fig


def type_duration_queue_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """CDFs of duration and of queueing delay per job type and cluster (one scan).

    Columns: cluster, type, metric ('duration' or 'queue'), x (s), cdf.
    """
    points = f"""
        SELECT cluster, type, metric, x, count(*) AS w
        FROM (
            UNPIVOT (SELECT cluster, type, duration::DOUBLE AS duration,
                            queue::DOUBLE AS queue FROM {jobs_sql(con)})
            ON duration, queue INTO NAME metric VALUE x
        )
        GROUP BY ALL
    """
    return con.sql(cdf_from_points_sql(points, ["cluster", "type", "metric"], steps=500)).df()


@style.styled
def plot_type_duration_queue(data: pd.DataFrame) -> Any:
    """A grid: rows = duration and queueing delay, columns = clusters, one line per type."""
    clusters = _clusters(data)
    fig, axes = style.subplots(
        2, len(clusters), width="page", height=4.0, sharey=True, squeeze=False
    )
    for c, cluster in enumerate(clusters):
        for r, (metric, label) in enumerate(
            (("duration", "Job duration"), ("queue", "Queueing delay"))
        ):
            ax = axes[r, c]
            rows = data[(data["cluster"] == cluster) & (data["metric"] == metric)]
            for kind in [t for t in TYPES if t in set(rows["type"])]:
                part = rows[rows["type"] == kind]
                ax.step(
                    part["x"].clip(lower=1),
                    100 * part["cdf"],
                    where="post",
                    color=TYPE_COLORS[kind],
                    label=kind,
                )
            style.duration_axis(ax)
            style.cdf_axis(ax)
            ax.set_xlabel(f"{label} (0 s drawn at 1 s)" if metric == "queue" else label)
            ax.set_title(cluster)
            if c > 0:
                ax.set_ylabel("")
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=False):
            handles.setdefault(label, handle)
    kinds = [t for t in TYPES if t in handles]
    fig.legend([handles[k] for k in kinds], kinds, loc="outside lower center", ncols=len(kinds))
    return fig


# --------------------------------------------------------------------------- cluster summary


#: Columns of cluster_summary.csv shown in the published table, with short headers.
SUMMARY_COLUMNS = {
    "job_num": "Jobs (GPU and CPU)",
    "gpu_job_num": "GPU jobs",
    "avg_run_time_gpu": "Mean run time (s)",
    "med_run_time_gpu": "Median run time (s)",
    "max_run_time_gpu": "Longest run time (s)",
    "avg_que_time_gpu": "Mean queueing delay (s)",
    "med_que_time_gpu": "Median queueing delay (s)",
    "avg_gpu_num": "Mean GPUs per job",
    "med_gpu_num": "Median GPUs per job",
    "max_gpu": "Most GPUs in a job",
    "complete_rate_gpu": "Completed (share of jobs)",
    "cancel_rate_gpu": "Cancelled (share of jobs)",
    "fail_rate_gpu": "Failed (share of jobs)",
    "complete_rate_gpu_time": "Completed (share of GPU time)",
    "cancel_rate_gpu_time": "Cancelled (share of GPU time)",
    "fail_rate_gpu_time": "Failed (share of GPU time)",
}
#: Every statistic of cluster_summary.csv, in the file's column order.
SUMMARY_STATISTICS = (
    "job_num",
    "cpu_job_num",
    "gpu_job_num",
    "avg_run_time_gpu",
    "avg_que_time_gpu",
    "avg_gpu_num",
    "med_run_time_gpu",
    "med_que_time_gpu",
    "med_gpu_num",
    "max_run_time_gpu",
    "max_gpu",
    "complete_rate_gpu",
    "cancel_rate_gpu",
    "fail_rate_gpu",
    "complete_gpu_time",
    "cancel_gpu_time",
    "fail_gpu_time",
    "complete_rate_gpu_time",
    "cancel_rate_gpu_time",
    "fail_rate_gpu_time",
    "avg_run_time_cpu",
    "avg_que_time_cpu",
    "med_run_time_cpu",
    "med_que_time_cpu",
    "complete_rate_cpu",
    "cancel_rate_cpu",
    "fail_rate_cpu",
)


def cluster_summary_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """``cluster_summary.csv`` as published: one row per cluster."""
    return con.sql("SELECT * FROM acme.cluster_summary").df()


def _summary_cell(column: str, value: Any) -> str:
    if value is None or value != value:  # NaN
        return "–"
    if column.endswith("_num") and column not in ("avg_gpu_num", "med_gpu_num"):
        return f"{int(value):,}"
    if "rate" in column:
        return f"{100 * value:.1f}%"
    if column in ("avg_gpu_num", "med_gpu_num"):
        return f"{value:.2f}"
    return f"{value:,.0f}"


@style.styled
def plot_cluster_summary(data: pd.DataFrame) -> Any:
    """The published summary, one column per cluster (rates in % of GPU jobs or GPU time)."""
    clusters = [str(c) for c in data["id"]]
    by_cluster = data.set_index("id")
    rows = [
        [label] + [_summary_cell(column, by_cluster.loc[c, column]) for c in clusters]
        for column, label in SUMMARY_COLUMNS.items()
    ]
    return style.table_figure(
        rows,
        ["GPU jobs, unless noted", *clusters],
        title="AcmeTrace cluster_summary.csv, as published",
        width=5.2,
        col_widths=[0.36] + [0.64 / len(clusters)] * len(clusters),
    )


def summary_check_data(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """``cluster_summary.csv`` vs the same statistics recomputed from the job tables.

    Definitions (those that reproduce the published columns): GPU jobs have
    gpu_num > 0 and CPU jobs gpu_num = 0; run time is ``duration``, queueing
    ``queue``; state rates are shares of jobs; GPU-time rates are shares of the
    GPU time of COMPLETED + CANCELLED + FAILED jobs. Seren's published counts
    predate the authors' filtering (1,031,550 vs 818,327 released rows), so its
    count-based rows are expected to differ.

    Columns: cluster, statistic, published, recomputed, relative_difference.
    """
    relation = jobs_sql(con, gpu_only=False)
    states = "('COMPLETED', 'CANCELLED', 'FAILED')"
    recomputed = f"""
        SELECT cluster AS id,
            count(*)::DOUBLE AS job_num,
            count(*) FILTER (WHERE gpu_num = 0)::DOUBLE AS cpu_job_num,
            count(*) FILTER (WHERE gpu_num > 0)::DOUBLE AS gpu_job_num,
            avg(duration) FILTER (WHERE gpu_num > 0) AS avg_run_time_gpu,
            avg(queue) FILTER (WHERE gpu_num > 0) AS avg_que_time_gpu,
            avg(gpu_num) FILTER (WHERE gpu_num > 0) AS avg_gpu_num,
            median(duration) FILTER (WHERE gpu_num > 0) AS med_run_time_gpu,
            median(queue) FILTER (WHERE gpu_num > 0) AS med_que_time_gpu,
            median(gpu_num) FILTER (WHERE gpu_num > 0) AS med_gpu_num,
            max(duration) FILTER (WHERE gpu_num > 0)::DOUBLE AS max_run_time_gpu,
            max(gpu_num)::DOUBLE AS max_gpu,
            {_rate("gpu_num > 0", "COMPLETED")} AS complete_rate_gpu,
            {_rate("gpu_num > 0", "CANCELLED")} AS cancel_rate_gpu,
            {_rate("gpu_num > 0", "FAILED")} AS fail_rate_gpu,
            sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state = 'COMPLETED') AS complete_gpu_time,
            sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state = 'CANCELLED') AS cancel_gpu_time,
            sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state = 'FAILED') AS fail_gpu_time,
            sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state = 'COMPLETED')
                / sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state IN {states})
                AS complete_rate_gpu_time,
            sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state = 'CANCELLED')
                / sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state IN {states})
                AS cancel_rate_gpu_time,
            sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state = 'FAILED')
                / sum(gpu_time) FILTER (WHERE gpu_num > 0 AND state IN {states})
                AS fail_rate_gpu_time,
            avg(duration) FILTER (WHERE gpu_num = 0) AS avg_run_time_cpu,
            avg(queue) FILTER (WHERE gpu_num = 0) AS avg_que_time_cpu,
            median(duration) FILTER (WHERE gpu_num = 0) AS med_run_time_cpu,
            median(queue) FILTER (WHERE gpu_num = 0) AS med_que_time_cpu,
            {_rate("gpu_num = 0", "COMPLETED")} AS complete_rate_cpu,
            {_rate("gpu_num = 0", "CANCELLED")} AS cancel_rate_cpu,
            {_rate("gpu_num = 0", "FAILED")} AS fail_rate_cpu
        FROM {relation} GROUP BY cluster
    """
    return con.sql(f"""
        WITH mine AS ({recomputed}),
        mine_long AS (UNPIVOT mine ON COLUMNS(* EXCLUDE (id)) INTO NAME statistic VALUE value),
        published AS (
            SELECT * FROM acme.cluster_summary WHERE id IN (SELECT id FROM mine)
        ),
        published_long AS (
            UNPIVOT (SELECT id, COLUMNS(* EXCLUDE (id))::DOUBLE FROM published)
            ON COLUMNS(* EXCLUDE (id)) INTO NAME statistic VALUE value
        )
        SELECT m.id AS cluster, m.statistic, p.value AS published, m.value AS recomputed,
               (m.value - p.value) / nullif(abs(p.value), 0) AS relative_difference
        FROM mine_long m LEFT JOIN published_long p USING (id, statistic)
        ORDER BY list_position(['Seren', 'Kalos'], m.id),
                 list_position({list(SUMMARY_STATISTICS)}, m.statistic)
    """).df()


def _rate(where: str, state: str) -> str:
    return (
        f"(count(*) FILTER (WHERE {where} AND state = '{state}'))::DOUBLE"
        f" / nullif(count(*) FILTER (WHERE {where}), 0)"
    )


@style.styled
def plot_summary_check(data: pd.DataFrame) -> Any:
    """Published vs recomputed statistics, side by side per cluster."""
    clusters = _clusters(data)
    statistics = list(dict.fromkeys(data["statistic"]))
    rows = []
    for statistic in statistics:
        row = [statistic]
        for cluster in clusters:
            hit = data[(data["cluster"] == cluster) & (data["statistic"] == statistic)]
            published = hit["published"].iloc[0] if len(hit) else None
            mine = hit["recomputed"].iloc[0] if len(hit) else None
            row += [_summary_cell(statistic, published), _summary_cell(statistic, mine)]
        rows.append(row)
    header = ["Statistic"] + [f"{c} {w}" for c in clusters for w in ("published", "recomputed")]
    return style.table_figure(
        rows, header, title="cluster_summary.csv vs the job tables", width=7.0
    )


# --------------------------------------------------------------------------- registry


def _spec(
    name: str, title: str, data: Any, plot: Any, tables: tuple[str, ...] = (), jobs: bool = False
) -> Any:
    from mltraces.figures import FigureSpec

    any_of = tuple(JOB_TABLES.values()) if jobs else ()
    return FigureSpec(name, "acme", title, tables, data, plot, any_of=any_of)


_UTIL = ("acme.util_cdf",)

FIGURES = (
    _spec(
        "acme_gpu_util",
        "GPU utilization CDF: Seren, Kalos, Philly, PAI",
        gpu_util_data,
        plot_gpu_util,
        _UTIL,
    ),
    _spec(
        "acme_resource_util",
        "SM activity, SM occupancy, GPU memory, CPU, host memory and InfiniBand CDFs",
        resource_util_data,
        plot_resource_util,
        _UTIL,
    ),
    _spec(
        "acme_temperature",
        "GPU core and memory temperature CDFs",
        temperature_data,
        plot_temperature,
        _UTIL,
    ),
    _spec("acme_power", "GPU power and server power CDFs", power_data, plot_power, _UTIL),
    _spec(
        "acme_cluster_summary",
        "Table: cluster_summary.csv as published",
        cluster_summary_data,
        plot_cluster_summary,
        ("acme.cluster_summary",),
    ),
    _spec(
        "acme_duration_cdf", "GPU job duration CDF", duration_cdf_data, plot_duration_cdf, jobs=True
    ),
    _spec(
        "acme_gpu_count_cdf",
        "GPUs per job CDF, by jobs and by GPU time",
        gpu_count_cdf_data,
        plot_gpu_count_cdf,
        jobs=True,
    ),
    _spec(
        "acme_states",
        "Final job states by jobs and by GPU time",
        states_data,
        plot_states,
        jobs=True,
    ),
    _spec(
        "acme_job_types",
        "Job types by jobs and by GPU time (treemaps)",
        types_data,
        plot_types,
        jobs=True,
    ),
    _spec(
        "acme_type_gpu_count",
        "GPUs per job by job type (boxes)",
        type_gpu_count_data,
        plot_type_gpu_count,
        jobs=True,
    ),
    _spec(
        "acme_type_duration_queue",
        "Duration and queueing delay CDFs per job type",
        type_duration_queue_data,
        plot_type_duration_queue,
        jobs=True,
    ),
    _spec(
        "acme_summary_check",
        "Table: cluster_summary.csv vs recomputed from the job tables",
        summary_check_data,
        plot_summary_check,
        ("acme.cluster_summary",),
        jobs=True,
    ),
)
