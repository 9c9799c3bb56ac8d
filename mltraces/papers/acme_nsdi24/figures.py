"""AcmeTrace (NSDI'24) figures: LLM development on the Seren and Kalos clusters.

Numbered as in the paper where they reproduce one of its figures (Fig. 2 to
Fig. 8); the AcmeTrace repository's ``analysis.ipynb`` draws the same figures
into ``figure/*.pdf``, named in each title for cross-checking. Figures that the
repository draws but we could not match to a paper number carry that file's
name instead, and the rest are marked as our own analysis.

Two kinds of inputs:

- the job traces (``acme.seren_jobs``, ``acme.kalos_jobs``): durations, queueing,
  GPU counts, final states and job types. As in the paper, *GPU jobs* are the
  rows with ``gpu_num > 0``; GPU time is the ``gpu_time`` column (duration ×
  GPUs). ``duration`` is used as published: on Kalos it runs from submission
  to end (queueing included), on Seren from start to end. The released Seren
  trace is filtered (818,327 of the 1,031,550 jobs the paper counts), so its
  numbers cannot equal the paper's; the published ones are printed beside ours.
- the processed utilization curves (``acme.util_cdf``, from ``util_pkl``) and
  ``cluster_summary.csv``: the authors' own numbers, drawn as published.

Job-trace figures draw whichever of Seren and Kalos is available. The prior
traces the paper compares with in Figs. 2(a) and 3 (Philly, Helios, PAI) are
not part of AcmeTrace's release; mltraces serves them as sources of their own,
and when they are fetched those two figures draw them beside Seren and Kalos,
read through the common jobs mapping (``mltraces.jobs``: GPU jobs have
``num_gpu > 0``, run time ``run_s``, GPU time ``gpu_time_s``). As in the
paper's notebook, Philly's GPUs are its jobs' first-attempt GPUs; PAI's GPUs
come from ``plan_gpu / 100``, which mltraces multiplies by each task's instance
count (per-instance requests, alibaba/clusterdata#129), so multi-instance PAI
jobs count all their GPUs.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import cdf_from_points_sql, ecdf_sql, values_sql
from mltraces.schema import sql_literal

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "AcmeTrace (NSDI'24)"

JOB_TABLES = {"Seren": "acme.seren_jobs", "Kalos": "acme.kalos_jobs"}
#: the earlier traces Figs. 2(a) and 3 compare with, as mltraces serves them (mapped job tables)
PRIOR_TABLES = {"Philly": "philly.jobs", "Helios": "helios.jobs", "PAI": "alibaba_pai.jobs"}
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
STATE_LABELS = {"COMPLETED": "Completed", "CANCELLED": "Canceled", "FAILED": "Failed",
                "RUNNING": "Running"}
#: Job types in the paper's order (MLLM exists on Seren only; CPU jobs have no GPUs).
TYPES = ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other", "CPU")
TYPE_COLORS = dict(zip(TYPES, (style.PALETTE[0], style.PALETTE[1], style.PALETTE[2],
                               style.PALETTE[4], style.PALETTE[5], style.PALETTE[3], "#999999"),
                       strict=True))
#: Seren's server power panel: the GPU and CPU node curves of server_power.pkl.
A100_TDP_W = 400


class NoJobTraceError(LookupError):
    """Neither AcmeTrace job trace can be read on this connection."""


def paper_type_shares() -> dict[tuple[str, str], dict[str, float]]:
    """The paper's treemap shares (%) of GPU jobs by type, per (cluster, measure).

    Read from ``type_shares`` in the paper's ``published.json``, where
    the published numbers live as data.
    """
    from mltraces.papers import published

    shares = published("acme_nsdi24")["type_shares"]["shares"]
    return {(cluster, measure): {kind: float(v) for kind, v in values.items()}
            for cluster, by_measure in shares.items() for measure, values in by_measure.items()}


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


def prior_jobs_sql(con: duckdb.DuckDBPyConnection) -> list[str]:
    """SQL, one per available prior trace, of its GPU jobs through the common jobs mapping.

    Columns: cluster (Philly, Helios, PAI), gpu_num, duration (run time, s), gpu_time.
    """
    from mltraces.figures import available
    from mltraces.jobmap import job_table, table_select_sql

    parts = []
    for name, table in PRIOR_TABLES.items():
        if table not in available(con, [table]):
            continue
        common = table_select_sql(job_table(table))
        parts.append(f"SELECT {sql_literal(name)} AS cluster, num_gpu AS gpu_num, "
                     f"run_s AS duration, gpu_time_s AS gpu_time FROM ({common}) "
                     "WHERE num_gpu > 0")
    return parts


def gpu_jobs_sql(con: duckdb.DuckDBPyConnection) -> str:
    """GPU jobs of Seren and Kalos and of the prior traces that are available (Figs. 2(a), 3).

    Columns: cluster, gpu_num, duration, gpu_time. Raises :class:`NoJobTraceError`
    when none of them can be read.
    """
    from mltraces.figures import available, fetch_hint

    parts = prior_jobs_sql(con)
    if available(con, list(JOB_TABLES.values())):
        parts.insert(0, f"SELECT cluster, gpu_num::DOUBLE AS gpu_num, duration::DOUBLE AS "
                     f"duration, gpu_time::DOUBLE AS gpu_time FROM {jobs_sql(con)}")
    if not parts:
        tables = [*JOB_TABLES.values(), *PRIOR_TABLES.values()]
        raise NoJobTraceError("no job trace of Seren, Kalos, Philly, Helios or PAI is "
                              "available: " + fetch_hint(tables))
    return "(" + " UNION ALL ".join(parts) + ")"


def _drawn(data: pd.DataFrame) -> str:
    """The figure's subtitle: which prior traces are drawn, which are missing."""
    present = [c for c in PRIOR_TABLES if c in set(data["cluster"])]
    absent = [c for c in PRIOR_TABLES if c not in present]
    parts = []
    if present:
        parts.append(f"{', '.join(present)} from mltraces.jobs")
    if absent:
        parts.append(f"{', '.join(absent)} not fetched")
    return "; ".join(parts)


def _clusters(data: pd.DataFrame) -> list[str]:
    return [c for c in ("Seren", "Kalos", "Philly", "Helios", "PAI") if c in set(data["cluster"])]


def _cdf_steps(ax: Any, data: pd.DataFrame, key: str = "cluster") -> None:
    """One step CDF per cluster in its fixed colour (0 s drawn at 1 s on log axes)."""
    for cluster in _clusters(data):
        part = data[data[key] == cluster]
        ax.step(part["x"].clip(lower=1), 100 * part["cdf"], where="post",
                color=style.color(cluster), label=cluster)


# --------------------------------------------------------------------------- Fig. 2


def duration_cdf_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """CDF of GPU job duration per cluster (Fig. 2(a)): Seren, Kalos and the prior traces
    that are fetched. Columns: cluster, x (s), cdf."""
    return store.query(con, ecdf_sql(gpu_jobs_sql(con), "duration", by=["cluster"]))


@style.styled
def plot_duration_cdf(data: pd.DataFrame) -> Any:
    """Fig. 2(a): one CDF line per cluster on a log time axis."""
    fig, ax = style.subplots(width="column", height=2.4)
    _cdf_steps(ax, data)
    style.duration_axis(ax)
    style.cdf_axis(ax)
    ax.set_xlabel("(a) GPU job duration")
    ax.legend(loc="lower right")
    style.provenance(ax, "AcmeTrace Fig. 2(a) (figure/cdf_job_duration_util.pdf);\n"
                     f"{_drawn(data)}", fontsize=6.5)
    return fig


def util_curves_sql(series: list[str], files: list[str] | None = None) -> str:
    """SQL: curves of ``acme.util_cdf`` by series (optionally from some files only).

    Columns: source_file, cluster, series, metric, unit, x, y (percent).
    """
    names = ", ".join(f"'{s}'" for s in series)
    where = f"AND source_file IN ({', '.join(repr(f) for f in files)})" if files else ""
    return f"""
        SELECT source_file, cluster, series, metric, unit, x, y
        FROM acme.util_cdf
        WHERE series IN ({names}) {where}
        ORDER BY source_file, series, point
    """


def gpu_util_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """GPU utilization CDFs (Fig. 2(b)): Seren, Kalos (``util_gpu_kalos.pkl``), Philly, PAI."""
    files = ["util_gpu_seren.pkl", "util_gpu_kalos.pkl", "util_gpu_philly.pkl", "util_gpu_pai.pkl"]
    return store.query(con, util_curves_sql(["gpu_util"], files))


@style.styled
def plot_gpu_util(data: pd.DataFrame) -> Any:
    """Fig. 2(b): GPU utilization CDF per cluster; Seren and Kalos solid, older traces dashed."""
    fig, ax = style.subplots(width="column", height=2.4)
    for cluster in _clusters(data):
        part = data[data["cluster"] == cluster]
        ax.plot(part["x"], part["y"], color=style.color(cluster),
                ls="--" if cluster in ("Philly", "PAI") else "-", label=cluster)
    ax.set_xlim(0, 100)
    ax.set_xticks([0, 25, 50, 75, 100])
    style.cdf_axis(ax)
    ax.set_xlabel("(b) GPU utilization (%)")
    style.provenance(ax, "AcmeTrace Fig. 2(b) (figure/cdf_job_duration_util.pdf)", fontsize=6.5)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=4)
    return fig


# --------------------------------------------------------------------------- Fig. 3


def gpu_count_cdf_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """CDF of GPUs per GPU job, weighted by jobs and by GPU time (Fig. 3; one scan for both).

    Columns: cluster, measure ('jobs' or 'GPU time'), x (GPUs), cdf.
    """
    points = f"""
        WITH per AS (
            SELECT cluster, gpu_num AS x, count(*)::DOUBLE AS "jobs",
                   sum(gpu_time)::DOUBLE AS "GPU time"
            FROM {gpu_jobs_sql(con)} GROUP BY ALL
        )
        UNPIVOT per ON "jobs", "GPU time" INTO NAME measure VALUE w
    """
    cdf = cdf_from_points_sql(points, ["cluster", "measure"], steps=None)
    return store.query(con, f"SELECT * FROM ({cdf}) ORDER BY cluster, measure DESC, x")


@style.styled
def plot_gpu_count_cdf(data: pd.DataFrame) -> Any:
    """Fig. 3: two panels (CDF of jobs, of GPU time), one step CDF per cluster, log-2 axis."""
    fig, axes = style.subplots(1, 2, width="page", height=2.3, sharey=True)
    for ax, measure, panel in zip(axes, ("jobs", "GPU time"), "ab", strict=False):
        for cluster in _clusters(data):
            part = data[(data["cluster"] == cluster) & (data["measure"] == measure)]
            ax.step(part["x"], 100 * part["cdf"], where="post", color=style.color(cluster),
                    label=cluster)
        style.log2_ticks(ax, list(data["x"]))
        ax.set_xlabel(f"({panel}) Number of GPUs")
        style.cdf_axis(ax, f"CDF of {measure} (%)")
    axes[0].legend(loc="lower right")
    style.provenance(fig, f"AcmeTrace Fig. 3 (figure/cdf_job_gpunum.pdf); {_drawn(data)}")
    return fig


# --------------------------------------------------------------------------- Fig. 4


def published_states_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Final states of GPU jobs by count and by GPU time, from ``cluster_summary.csv`` (Fig. 4).

    Exactly the published rates (rounded to 3 decimals by the authors), in percent.
    Columns: cluster, state, measure ('jobs' or 'GPU time'), share (%).
    """
    return store.query(con, _published_states_sql())


def _published_states_sql() -> str:
    rates = ", ".join(
        f"{p}_rate_gpu AS \"{s}|jobs\", {p}_rate_gpu_time AS \"{s}|GPU time\""
        for p, s in (("complete", "COMPLETED"), ("cancel", "CANCELLED"), ("fail", "FAILED"))
    )
    return f"""
        WITH wide AS (
            SELECT id AS cluster, {rates} FROM acme.cluster_summary
            WHERE id IN ('Seren', 'Kalos')
        ),
        long AS (UNPIVOT wide ON COLUMNS(* EXCLUDE (cluster)) INTO NAME key VALUE rate)
        SELECT cluster, split_part(key, '|', 1) AS state, split_part(key, '|', 2) AS measure,
               100 * rate AS share
        FROM long
        ORDER BY list_position(['Seren', 'Kalos'], cluster), measure DESC,
                 list_position({list(STATES)}, state)
    """


def states_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Final state shares of GPU jobs recomputed from the job tables, with the published ones.

    Columns: cluster, state, measure ('jobs' or 'GPU time'), share (%), paper (%,
    from ``cluster_summary.csv``; NULL for RUNNING).
    """
    return _shares(con, "state", f"""
        SELECT cluster, state AS p_state, measure AS p_measure, share AS paper
        FROM ({_published_states_sql()})
    """)


def _bars_with_values(ax: Any, data: pd.DataFrame, measure: str, paper: bool) -> None:
    """Fig. 4's grouped bars: one group per cluster, one bar per state, values on top."""
    import numpy as np

    clusters = _clusters(data)
    states = [s for s in STATES if s in set(data["state"])]
    x = np.arange(len(clusters))
    width = 0.8 / len(states)
    for k, state in enumerate(states):
        rows = data[(data["measure"] == measure) & (data["state"] == state)]
        rows = rows.set_index("cluster").reindex(clusters)
        offset = x + (k - (len(states) - 1) / 2) * width
        bars = ax.bar(offset, rows["share"], width, color=style.color(state),
                      label=STATE_LABELS[state], edgecolor="black", linewidth=0.4)
        ax.bar_label(bars, labels=[f"{v:.1f}" for v in rows["share"]], fontsize=6, padding=1)
        if paper and "paper" in rows and rows["paper"].notna().any():
            ax.scatter(offset, rows["paper"], marker="_", s=80, color="black", linewidths=1.3,
                       zorder=3, label="Paper (cluster_summary.csv)" if k == 0 else None)
    ax.set_xticks(x, clusters)
    ax.set_ylim(0, 100)
    ax.set_ylabel("Fraction (%)")
    ax.grid(axis="x", visible=False)


def _plot_states(data: pd.DataFrame, title: str, paper: bool) -> Any:
    fig, axes = style.subplots(1, 2, width="page", height=2.4)
    labels = ("(a) Share of GPU jobs", "(b) Share of the GPU time of GPU jobs")
    for ax, measure, label in zip(axes, ("jobs", "GPU time"), labels, strict=True):
        _bars_with_values(ax, data, measure, paper)
        ax.set_xlabel(label)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels))
    style.provenance(fig, title)
    return fig


@style.styled
def plot_published_states(data: pd.DataFrame) -> Any:
    """Fig. 4 as published: final states of GPU jobs by count (a) and GPU time (b)."""
    return _plot_states(data, "AcmeTrace Fig. 4 (figure/bar_job_state.pdf), from "
                        "cluster_summary.csv as published", paper=False)


@style.styled
def plot_states(data: pd.DataFrame) -> Any:
    """Fig. 4 recomputed from the job traces, the published values as black ticks."""
    return _plot_states(data, "AcmeTrace Fig. 4 recomputed from the released job traces "
                        "(Seren's is filtered); black ticks: published", paper=True)


# --------------------------------------------------------------------------- Fig. 5


def types_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Job type shares of GPU jobs per cluster, by count and by GPU time (Fig. 5).

    Columns: cluster, type, measure ('jobs' or 'GPU time'), share (%), paper (%,
    as printed on the paper's treemaps: :func:`paper_type_shares`).
    """
    paper = values_sql(
        [(c, t, m, v) for (c, m), shares in paper_type_shares().items()
         for t, v in shares.items()],
        ["cluster", "p_type", "p_measure", "paper"],
    )
    return _shares(con, "type", f"SELECT * FROM {paper}")


def _shares(con: duckdb.DuckDBPyConnection, column: str, paper: str) -> duckdb.DuckDBPyRelation:
    """Shares of GPU jobs and GPU time per ``column``, joined to published shares."""
    return store.query(con, f"""
        WITH per AS (
            SELECT cluster, {column}, count(*) AS jobs, coalesce(sum(gpu_time), 0) AS gpu_time
            FROM {jobs_sql(con)} GROUP BY ALL
        ),
        shares AS (
            SELECT cluster, {column}, 'jobs' AS measure,
                   100 * jobs / sum(jobs) OVER (PARTITION BY cluster) AS share
            FROM per
            UNION ALL
            SELECT cluster, {column}, 'GPU time',
                   100 * gpu_time / sum(gpu_time) OVER (PARTITION BY cluster)
            FROM per
        )
        SELECT s.cluster, s.{column}, s.measure, s.share, p.paper
        FROM shares s LEFT JOIN ({paper}) p
          ON p.cluster = s.cluster AND p.p_{column} = s.{column} AND p.p_measure = s.measure
        ORDER BY s.cluster, s.measure DESC, s.{column}
    """)


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
    """Fig. 5: treemaps of job types, one row per cluster, by count (left) and GPU time (right)."""
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
            for kind, share, paper, (x, y, w, h) in zip(
                part["type"], part["share"], part["paper"], layout, strict=False
            ):
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
                _treemap_label(ax, kind, share, paper, (x, y, w, h))
            ax.set_xlim(0, width)
            ax.set_ylim(0, height)
            ax.set_aspect("equal")
            ax.axis("off")
            ax.set_title(f"{cluster}, GPU jobs by {'count' if measure == 'jobs' else measure}")
    handles = [Rectangle((0, 0), 1, 1, color=TYPE_COLORS[t]) for t in present]
    fig.legend(handles, present, loc="outside lower center", ncols=len(present))
    style.provenance(fig, "AcmeTrace Fig. 5 (figure/treemap_job_dist.pdf): GPU jobs by type; "
                 "in brackets the paper's share")
    return fig


def _treemap_label(
    ax: Any, kind: str, share: float, paper: float | None, rect: tuple[float, ...]
) -> None:
    """Name, share and the paper's share where they fit, less in smaller tiles."""
    x, y, w, h = rect
    published = "" if paper is None or paper != paper else f"\n({paper:.1f}%)"
    if w >= 24 and h >= 20:
        text, size = f"{kind}\n{share:.1f}%{published}", 6.5
    elif w >= 24 and h >= 14:
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


# --------------------------------------------------------------------------- Fig. 6


def type_duration_queue_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """CDFs of duration and of queueing delay per job type and cluster (Fig. 6; one scan).

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
    cdf = cdf_from_points_sql(points, ["cluster", "type", "metric"], steps=500)
    return store.query(con, f"SELECT * FROM ({cdf}) ORDER BY cluster, type, metric, x")


@style.styled
def plot_type_duration_queue(data: pd.DataFrame) -> Any:
    """Fig. 6: rows = duration and queueing delay, columns = clusters, one line per type."""
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
    style.provenance(fig, "AcmeTrace Fig. 6 (figure/cdf_job_duration_queue.pdf): GPU jobs per type")
    return fig


def type_gpu_count_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """GPUs per job by job type: the five-number summary of each (cluster, type) box.

    The AcmeTrace repository draws these boxes in ``figure/box_gpu_num.pdf``.

    Whiskers are the 5th and 95th percentiles (outliers are not drawn).
    Columns: cluster, type, jobs, p05, q1, median, q3, p95, mean.
    """
    return store.query(con, f"""
        WITH q AS (
            SELECT cluster, type, count(*) AS jobs, avg(gpu_num) AS mean,
                   quantile_cont(gpu_num, [0.05, 0.25, 0.5, 0.75, 0.95]) AS qs
            FROM {jobs_sql(con)} GROUP BY ALL
        )
        SELECT cluster, type, jobs, qs[1] AS p05, qs[2] AS q1, qs[3] AS median, qs[4] AS q3,
               qs[5] AS p95, mean
        FROM q ORDER BY cluster, type
    """)


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
    style.provenance(fig, "GPUs per GPU job by type (AcmeTrace figure/box_gpu_num.pdf; "
                 "paper figure number not matched)")
    return fig


# --------------------------------------------------------------------------- Fig. 7


#: Fig. 7's panels as the paper groups them: (panel, series, label, files).
RESOURCE_PANELS = {
    "dcgm": (("sm_active", "SM activity"), ("sm_occupancy", "TC activity")),
    "memory": (("host_memory_used", "CPU memory"), ("gpu_memory_used", "GPU memory")),
    "cpu": (("cpu_util", "CPU"),),
    "network": (("ib_send", "IB send"), ("ib_receive", "IB receive")),
}
RESOURCE_FILES = (
    "util_gpu_seren.pkl",
    "util_gpu_kalos_full.pkl",
    "util_cpu_mem_seren.pkl",
    "util_cpu_mem_kalos.pkl",
    "ib_seren.pkl",
)


def resource_util_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Fig. 7's curves: DCGM activity, memory, CPU and network CDFs of Seren and Kalos.

    Seren's GPU curves come from ``util_gpu_seren.pkl`` and Kalos' from
    ``util_gpu_kalos_full.pkl`` (the file with SM metrics), as in the paper. The
    curve the paper's legend calls *TC activity* is the fifth array of those
    files, which ``acme.util_cdf`` names ``sm_occupancy``; in both files it is
    identical to the tensor-activity curve. InfiniBand rates (Seren only, unit
    undocumented) are normalised by each curve's maximum, as in the paper.
    Columns: panel, cluster, series, label, x, y.
    """
    labels = values_sql(
        [(panel, series, label) for panel, group in RESOURCE_PANELS.items()
         for series, label in group],
        ["panel", "series", "label"],
        alias="l",
    )
    files = ", ".join(f"'{f}'" for f in RESOURCE_FILES)
    return store.query(con, f"""
        SELECT l.panel, u.cluster, u.series, l.label,
               CASE WHEN l.panel = 'network'
                    THEN 100 * u.x / max(u.x) OVER (PARTITION BY u.source_file, u.series)
                    ELSE u.x END AS x,
               u.y
        FROM acme.util_cdf u JOIN {labels} USING (series)
        WHERE u.source_file IN ({files})
        ORDER BY list_position({list(RESOURCE_PANELS)}, l.panel), u.cluster DESC, u.series,
                 u.point
    """)


@style.styled
def plot_resource_util(data: pd.DataFrame) -> Any:
    """Fig. 7: four panels as the paper groups them; colour = cluster, line style = metric."""
    from matplotlib.lines import Line2D

    fig, axes = style.subplots(2, 2, width="page", height=4.3)
    styles = ("--", ":")
    titles = {
        "dcgm": "(a) GPU DCGM metric (%)",
        "memory": "(b) Memory footprint (%)",
        "cpu": "(c) CPU utilization (%), clipped at 100 as published",
        "network": "(d) Network (% of each curve's peak; Seren)",
    }
    for ax, panel in zip(axes.flat, RESOURCE_PANELS, strict=True):
        rows = data[data["panel"] == panel]
        for cluster in _clusters(rows):
            for (series, _label), ls in zip(RESOURCE_PANELS[panel], styles, strict=False):
                part = rows[(rows["series"] == series) & (rows["cluster"] == cluster)]
                if panel == "network":  # send and receive nearly coincide: both visible
                    ls = "-" if series == "ib_send" else (0, (1.5, 1.5))
                    color = style.color("Seren") if series == "ib_send" else "black"
                    ax.plot(part["x"], part["y"], ls=ls, color=color,
                            lw=2.4 if series == "ib_send" else 1.2)
                else:
                    ax.plot(part["x"], part["y"], ls="-" if panel == "cpu" else ls,
                            color=style.color(cluster))
        ax.set_xlim(0, 100)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel(titles[panel])
        style.cdf_axis(ax)
        if panel == "network":
            ax.legend(handles=[Line2D([], [], color=style.color("Seren"), lw=2.4, label="IB send"),
                               Line2D([], [], color="black", lw=1.2, ls=(0, (1.5, 1.5)),
                                      label="IB receive")], loc="lower right")
        elif len(RESOURCE_PANELS[panel]) > 1:
            pairs = zip(RESOURCE_PANELS[panel], styles, strict=False)
            ax.legend(handles=[Line2D([], [], color="black", ls=ls, label=label)
                               for (_s, label), ls in pairs], loc="lower right")
    clusters = [Line2D([], [], color=style.color(c), lw=3, label=c)
                for c in ("Seren", "Kalos") if c in set(data["cluster"])]
    fig.legend(handles=clusters, loc="outside lower center", ncols=2)
    style.provenance(fig, "AcmeTrace Fig. 7 (figure/cdf_resource_util.pdf), from the released "
                     "curves")
    return fig


# --------------------------------------------------------------------------- Fig. 8


def power_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Fig. 8's curves: GPU power (Seren, Kalos) and the power of Seren's GPU and CPU servers.

    ``server_power.pkl`` holds Seren's servers only (its IPMI data), so the
    server curves are Seren's whatever the table's cluster column says.
    """
    return store.query(con, util_curves_sql(["gpu_power", "gpu_node_power", "cpu_node_power"]))


@style.styled
def plot_power(data: pd.DataFrame) -> Any:
    """Fig. 8: (a) GPU power per cluster with the A100 TDP, (b) server power in Seren."""
    fig, (left, right) = style.subplots(1, 2, width="page", height=2.4, sharey=True)
    gpu = data[data["series"] == "gpu_power"]
    for cluster in _clusters(gpu):
        part = gpu[gpu["cluster"] == cluster]
        left.plot(part["x"], part["y"], color=style.color(cluster), ls="--", label=cluster)
    left.axvline(A100_TDP_W, color="gray", lw=0.9, ls="--", label=f"A100 TDP ({A100_TDP_W} W)")
    left.set_xlim(0, None)
    left.set_xlabel("(a) GPU power (W)")
    left.legend(loc="lower right")
    for series, label, ls in (("gpu_node_power", "GPU node", "--"),
                              ("cpu_node_power", "CPU node", ":")):
        part = data[data["series"] == series]
        right.plot(part["x"], part["y"], color=style.color("Seren"), ls=ls, label=label)
    right.set_xlim(0, None)
    right.set_xlabel("(b) Server power in Seren (W)")
    right.legend(loc="lower right")
    style.cdf_axis(left)
    style.provenance(fig, "AcmeTrace Fig. 8 (figure/cdf_power.pdf), from the released curves")
    return fig


# --------------------------------------------------------------------------- repository figures


def temperature_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """GPU core and memory temperature CDFs (August 2023), Seren and Kalos."""
    return store.query(con, util_curves_sql(["gpu_temp", "gpu_memory_temp"]))


@style.styled
def plot_temperature(data: pd.DataFrame) -> Any:
    """Temperature CDFs: colour = cluster, solid = GPU core, dotted = GPU memory."""
    fig, ax = style.subplots(width="column", height=2.4)
    for cluster in _clusters(data):
        for series, ls, what in (("gpu_temp", "-", "GPU"), ("gpu_memory_temp", ":", "GPU mem.")):
            part = data[(data["cluster"] == cluster) & (data["series"] == series)]
            ax.plot(part["x"], part["y"], color=style.color(cluster), ls=ls,
                    label=f"{cluster} {what}")
    ax.set_xlim(20, 85)
    style.cdf_axis(ax)
    ax.set_xlabel("Temperature (°C)")
    ax.legend(loc="lower right")
    style.provenance(ax, "AcmeTrace figure/cdf_temperature.pdf\n(paper figure number not matched)",
                 fontsize=6.5)
    return fig


def cpu_duration_cdf_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """CDF of CPU job duration (``gpu_num = 0``) per cluster. Columns: cluster, x (s), cdf."""
    cpu = jobs_sql(con, gpu_only=False)
    return store.query(con, ecdf_sql(f"(SELECT * FROM {cpu} WHERE gpu_num = 0)", "duration",
                                     by=["cluster"]))


@style.styled
def plot_cpu_duration_cdf(data: pd.DataFrame) -> Any:
    """CPU job duration CDF per cluster (the repository's cdf_job_jobtime, panel b)."""
    fig, ax = style.subplots(width="column", height=2.4)
    _cdf_steps(ax, data)
    style.duration_axis(ax)
    style.cdf_axis(ax, "Fraction of jobs (%)")
    ax.set_xlabel("(b) CPU job duration")
    ax.legend(loc="lower right")
    style.provenance(ax, "AcmeTrace figure/cdf_job_jobtime.pdf, panel (b);\n"
                 "Helios' job trace is not released", fontsize=6.5)
    return fig


# --------------------------------------------------------------------------- cluster summary


#: Columns of cluster_summary.csv shown in the published table, with short headers (the
#: table's header says they are of GPU jobs unless noted: shares of GPU jobs and of their GPU
#: time).
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


def cluster_summary_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``cluster_summary.csv`` as published: one row per cluster."""
    return store.query(con, "SELECT * FROM acme.cluster_summary")


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


def summary_check_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``cluster_summary.csv`` vs the same statistics recomputed from the job tables.

    The statistics and their definitions are :mod:`mltraces.papers.acme_nsdi24.summary`'s
    (the one place they are computed). Seren's published counts predate the
    authors' filtering (1,031,550 vs 818,327 released rows), so its rows are
    expected to differ.

    Columns: cluster, statistic, published, recomputed, relative_difference.
    """
    from mltraces.figures import available
    from mltraces.papers.acme_nsdi24.summary import comparison_sql

    tables = {c: t for c, t in JOB_TABLES.items() if t in available(con, [t])}
    if not tables:
        jobs_sql(con)  # raises NoJobTraceError naming what to fetch
    return store.query(con, comparison_sql(tables))


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
        rows, header, title=f"cluster_summary.csv vs the job tables ({OWN})", width=7.0
    )


# --------------------------------------------------------------------------- registry


OWN = "our own analysis"


def _spec(
    name: str,
    title: str,
    data: Any,
    plot: Any,
    tables: tuple[str, ...] = (),
    jobs: bool = False,
    figure: str = "",
) -> Any:
    from mltraces.figures import FigureSpec

    any_of = tuple(JOB_TABLES.values()) if jobs else ()
    if figure in ("Fig. 2(a)", "Fig. 3"):  # these also draw the prior traces when fetched
        any_of += tuple(PRIOR_TABLES.values())
    return FigureSpec(name, "acme", title, tables, data, plot, any_of=any_of, figure=figure,
                      paper=PAPER)


_UTIL = ("acme.util_cdf",)
_SUMMARY = ("acme.cluster_summary",)

FIGURES = (
    _spec("acme_fig2a", "AcmeTrace Fig. 2(a): GPU job duration CDF, Seren and Kalos (Philly, "
          "Helios and PAI when fetched)",
          duration_cdf_data, plot_duration_cdf, jobs=True, figure="Fig. 2(a)"),
    _spec("acme_fig2b", "AcmeTrace Fig. 2(b): GPU utilization CDF, Seren, Kalos, Philly, PAI",
          gpu_util_data, plot_gpu_util, _UTIL, figure="Fig. 2(b)"),
    _spec("acme_fig3", "AcmeTrace Fig. 3: CDF of GPUs per job, by jobs and by GPU time",
          gpu_count_cdf_data, plot_gpu_count_cdf, jobs=True, figure="Fig. 3"),
    _spec("acme_fig4", "AcmeTrace Fig. 4: final states of GPU jobs, by count and by their GPU "
          "time, from cluster_summary.csv as published", published_states_data,
          plot_published_states, _SUMMARY, figure="Fig. 4"),
    _spec("acme_fig4_recomputed", "AcmeTrace Fig. 4 recomputed from the job traces, published "
          "values marked", states_data, plot_states, _SUMMARY, jobs=True,
          figure="Fig. 4 recomputed from the job traces (our companion)"),
    _spec("acme_fig5", "AcmeTrace Fig. 5: job types by count and GPU time (treemaps), "
          "published shares beside ours", types_data, plot_types, jobs=True, figure="Fig. 5"),
    _spec("acme_fig6", "AcmeTrace Fig. 6: duration and queueing delay CDFs per job type",
          type_duration_queue_data, plot_type_duration_queue, jobs=True, figure="Fig. 6"),
    _spec("acme_fig7", "AcmeTrace Fig. 7: resource utilization CDFs (DCGM activity, memory, "
          "CPU, network)", resource_util_data, plot_resource_util, _UTIL, figure="Fig. 7"),
    _spec("acme_fig8", "AcmeTrace Fig. 8: GPU power and Seren's server power CDFs",
          power_data, plot_power, _UTIL, figure="Fig. 8"),
    _spec("acme_temperature", "GPU core and memory temperature CDFs (repository figure "
          "cdf_temperature.pdf)", temperature_data, plot_temperature, _UTIL,
          figure="repository figure cdf_temperature.pdf"),
    _spec("acme_cpu_duration", "CPU job duration CDF (repository figure cdf_job_jobtime.pdf, "
          "panel b)", cpu_duration_cdf_data, plot_cpu_duration_cdf, jobs=True,
          figure="repository figure cdf_job_jobtime.pdf, panel (b)"),
    _spec("acme_type_gpu_count", "GPUs per job by job type, boxes (repository figure "
          "box_gpu_num.pdf)", type_gpu_count_data, plot_type_gpu_count, jobs=True,
          figure="repository figure box_gpu_num.pdf"),
    dataclasses.replace(  # the published file as it is: no copy of it beside the figure
        _spec("acme_cluster_summary", "Table: cluster_summary.csv as published",
              cluster_summary_data, plot_cluster_summary, _SUMMARY,
              figure="cluster_summary.csv as published"), data_is_upstream=True),
    _spec("acme_summary_check", f"Table: cluster_summary.csv vs recomputed from the job tables "
          f"({OWN})", summary_check_data, plot_summary_check, _SUMMARY, jobs=True),
)
