"""AcmeTrace analyses that belong with the data: the cluster summary and CDF read-offs.

``cluster_summary()`` recomputes the columns of the authors' published
``cluster_summary.csv`` from the job tables, so users holding the real job
traces can compare the two (``compare_cluster_summary()``); ``cdf_quantile()``
and ``cdf_share_at_most()`` read values off the processed curves of
``acme.util_cdf`` (e.g. the median GPU utilization, or the share of GPU power
samples at most the A100's 400 W TDP).

Definitions (the published table states none; these reproduce its structure):

- GPU jobs have ``gpu_num > 0``, CPU jobs ``gpu_num = 0``; run time is the
  ``duration`` column and queueing delay the ``queue`` column, as published.
- Means and medians are over the jobs of the class; a median of an even count
  is the mean of the two middle values (as pandas' ``median``).
- ``*_rate_gpu`` and ``*_rate_cpu`` are shares of the class's jobs in a final
  state; ``*_gpu_time`` sums ``gpu_time`` of GPU jobs in that state and
  ``*_rate_gpu_time`` divides it by the GPU time of all GPU jobs. Jobs still
  RUNNING at the end of the trace have no ``gpu_time``, so that total is the
  GPU time of COMPLETED + CANCELLED + FAILED jobs and the three published
  GPU-time rates add up to 1, as they do in ``cluster_summary.csv``.
- Values are not rounded (the published rates are rounded to 3 decimals).

This module is the one place these statistics are computed: the figures'
``acme_summary_check`` table uses :func:`comparison_sql`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from mltraces.schema import quote_ident, sql_literal

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

JOB_TABLES = {"Seren": "acme.seren_jobs", "Kalos": "acme.kalos_jobs"}

SUMMARY_COLUMNS = [
    "job_num", "cpu_job_num", "gpu_job_num",
    "avg_run_time_gpu", "avg_que_time_gpu", "avg_gpu_num",
    "med_run_time_gpu", "med_que_time_gpu", "med_gpu_num",
    "max_run_time_gpu", "max_gpu",
    "complete_rate_gpu", "cancel_rate_gpu", "fail_rate_gpu",
    "complete_gpu_time", "cancel_gpu_time", "fail_gpu_time",
    "complete_rate_gpu_time", "cancel_rate_gpu_time", "fail_rate_gpu_time",
    "avg_run_time_cpu", "avg_que_time_cpu", "med_run_time_cpu", "med_que_time_cpu",
    "complete_rate_cpu", "cancel_rate_cpu", "fail_rate_cpu",
]
_STATES = {"complete": "COMPLETED", "cancel": "CANCELLED", "fail": "FAILED"}


def _summary_sql(table: str, cluster: str) -> str:
    """One SELECT computing every published column for one job table."""
    gpu, cpu = "gpu_num > 0", "gpu_num = 0"
    parts = [
        "count(*) AS job_num",
        f"count(*) FILTER (WHERE {cpu}) AS cpu_job_num",
        f"count(*) FILTER (WHERE {gpu}) AS gpu_job_num",
        f"avg(duration) FILTER (WHERE {gpu}) AS avg_run_time_gpu",
        f"avg(queue) FILTER (WHERE {gpu}) AS avg_que_time_gpu",
        f"avg(gpu_num) FILTER (WHERE {gpu}) AS avg_gpu_num",
        f"median(duration::DOUBLE) FILTER (WHERE {gpu}) AS med_run_time_gpu",
        f"median(queue::DOUBLE) FILTER (WHERE {gpu}) AS med_que_time_gpu",
        f"median(gpu_num::DOUBLE) FILTER (WHERE {gpu}) AS med_gpu_num",
        f"max(duration) FILTER (WHERE {gpu}) AS max_run_time_gpu",
        f"max(gpu_num) FILTER (WHERE {gpu}) AS max_gpu",
    ]
    for prefix, state in _STATES.items():
        parts.append(f"avg((state = '{state}')::INT) FILTER (WHERE {gpu}) AS {prefix}_rate_gpu")
    for prefix, state in _STATES.items():
        parts.append(f"sum(gpu_time) FILTER (WHERE {gpu} AND state = '{state}') "
                     f"AS {prefix}_gpu_time")
    for prefix, state in _STATES.items():
        parts.append(f"sum(gpu_time) FILTER (WHERE {gpu} AND state = '{state}') "
                     f"/ sum(gpu_time) FILTER (WHERE {gpu}) AS {prefix}_rate_gpu_time")
    parts += [
        f"avg(duration) FILTER (WHERE {cpu}) AS avg_run_time_cpu",
        f"avg(queue) FILTER (WHERE {cpu}) AS avg_que_time_cpu",
        f"median(duration::DOUBLE) FILTER (WHERE {cpu}) AS med_run_time_cpu",
        f"median(queue::DOUBLE) FILTER (WHERE {cpu}) AS med_que_time_cpu",
    ]
    for prefix, state in _STATES.items():
        parts.append(f"avg((state = '{state}')::INT) FILTER (WHERE {cpu}) AS {prefix}_rate_cpu")
    return f"SELECT {sql_literal(cluster)} AS id, {', '.join(parts)} FROM {table}"


def summary_sql(tables: Mapping[str, str]) -> str:
    """SQL: one row per cluster (``id``) of ``tables`` ({cluster: job table}), every column."""
    return " UNION ALL ".join(_summary_sql(table, cluster) for cluster, table in tables.items())


def comparison_sql(tables: Mapping[str, str]) -> str:
    """SQL: published vs recomputed, long form (cluster, statistic, published, recomputed,
    relative_difference), clusters and statistics in the published table's order."""
    columns = ", ".join(f"{c}::DOUBLE AS {c}" for c in SUMMARY_COLUMNS)
    order = ", ".join(sql_literal(c) for c in SUMMARY_COLUMNS)
    clusters = ", ".join(sql_literal(c) for c in tables)
    return f"""
        WITH mine AS (SELECT id, {columns} FROM ({summary_sql(tables)})),
        mine_long AS (UNPIVOT mine ON COLUMNS(* EXCLUDE (id)) INTO NAME statistic VALUE value),
        published AS (
            SELECT id, {columns} FROM acme.cluster_summary WHERE id IN ({clusters})
        ),
        published_long AS (
            UNPIVOT published ON COLUMNS(* EXCLUDE (id)) INTO NAME statistic VALUE value
        )
        SELECT m.id AS cluster, m.statistic, p.value AS published, m.value AS recomputed,
               (m.value - p.value) / nullif(abs(p.value), 0) AS relative_difference
        FROM mine_long m LEFT JOIN published_long p USING (id, statistic)
        ORDER BY list_position([{clusters}], m.id), list_position([{order}], m.statistic)
    """


def cluster_summary(
    con: duckdb.DuckDBPyConnection | None = None,
    clusters: Iterable[str] = ("Seren", "Kalos"),
    local: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Recompute ``cluster_summary.csv``'s columns from the AcmeTrace job tables.

    Returns one row per cluster, indexed by ``id`` like the published table,
    with the columns in the published order. Opens a catalog connection for
    the needed job tables when ``con`` is None.

    Examples
    --------
    >>> from mltraces.papers.acme_nsdi24.summary import cluster_summary
    >>> cluster_summary(local={"acme.seren_jobs": "trace_seren.csv"},
    ...                 clusters=["Seren"])                            # doctest: +SKIP
    """
    clusters = list(clusters)
    unknown = [c for c in clusters if c not in JOB_TABLES]
    if unknown:
        raise KeyError(f"no job table for {unknown}; known clusters: {', '.join(JOB_TABLES)}")
    if con is None:
        from mltraces.catalog import connect

        con = connect(tables=[JOB_TABLES[c] for c in clusters], local=local, strict=True)
    frame = con.sql(summary_sql({c: JOB_TABLES[c] for c in clusters})).df().set_index("id")
    return frame[SUMMARY_COLUMNS]


def compare_cluster_summary(
    con: duckdb.DuckDBPyConnection | None = None,
    clusters: Iterable[str] = ("Seren", "Kalos"),
    local: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Published vs recomputed summary, long form: cluster, column, published, recomputed.

    ``relative_difference`` is (recomputed - published) / published. Expect
    differences for Seren: the published counts predate the authors' filtering.
    """
    import pandas as pd

    clusters = list(clusters)
    if con is None:
        from mltraces.catalog import connect

        names = ["acme.cluster_summary", *(JOB_TABLES[c] for c in clusters)]
        con = connect(tables=names, local=local, strict=True)
    ours = cluster_summary(con, clusters)
    published = con.sql("SELECT * FROM acme.cluster_summary").df().set_index("id")
    rows = []
    for cluster in clusters:
        for column in SUMMARY_COLUMNS:
            theirs = published.at[cluster, column] if cluster in published.index else None
            mine = ours.at[cluster, column]
            rows.append((cluster, column, theirs, mine))
    result = pd.DataFrame(rows, columns=["cluster", "column", "published", "recomputed"])
    result["published"] = result["published"].astype("float64")
    result["recomputed"] = result["recomputed"].astype("float64")
    result["relative_difference"] = (result.recomputed - result.published) / result.published
    return result


# --------------------------------------------------------------------------- CDF read-offs


def _curve_filter(source_file: str, series: str) -> str:
    return (f"{quote_ident('source_file')} = {sql_literal(source_file)} "
            f"AND {quote_ident('series')} = {sql_literal(series)}")


def _one_value(con: duckdb.DuckDBPyConnection, query: str, what: str) -> float:
    rows = con.execute(query).fetchall()
    if not rows or rows[0][0] is None:
        raise KeyError(f"no curve for {what} in acme.util_cdf")
    return float(rows[0][0])


def cdf_quantile(con: duckdb.DuckDBPyConnection, source_file: str, series: str,
                 percent: float) -> float:
    """The x at which a curve reaches ``percent`` % (linear between points).

    >>> cdf_quantile(con, "util_gpu_seren.pkl", "gpu_util", 50)  # doctest: +SKIP
    99.0
    """
    query = f"""
        WITH c AS (SELECT point, x, y FROM acme.util_cdf
                   WHERE {_curve_filter(source_file, series)}),
        hi AS (SELECT point, x, y FROM c WHERE y >= {float(percent)!r} ORDER BY point LIMIT 1),
        lo AS (SELECT c.x, c.y FROM c, hi WHERE c.point = hi.point - 1)
        SELECT CASE WHEN (SELECT count(*) FROM lo) = 0 OR hi.y = lo.y THEN hi.x
                    ELSE lo.x + ({float(percent)!r} - lo.y) * (hi.x - lo.x) / (hi.y - lo.y) END
        FROM hi LEFT JOIN lo ON true"""
    return _one_value(con, query, f"{source_file}/{series} reaching {percent} %")


def cdf_share_at_most(con: duckdb.DuckDBPyConnection, source_file: str, series: str,
                      x: float) -> float:
    """The share (in %) of samples at most ``x``: the curve's y at x, linear between points.

    Where several points share the same x the last one counts (the CDF is
    right-continuous). ``100 - cdf_share_at_most(...)`` is the share above x.

    >>> 100 - cdf_share_at_most(con, "gpu_power_seren.pkl", "gpu_power", 400)  # doctest: +SKIP
    """
    value = float(x)
    query = f"""
        WITH c AS (SELECT point, x, y FROM acme.util_cdf
                   WHERE {_curve_filter(source_file, series)}),
        lo AS (SELECT point, x, y FROM c WHERE x <= {value!r} ORDER BY point DESC LIMIT 1),
        hi AS (SELECT c.x, c.y FROM c, lo WHERE c.point = lo.point + 1)
        SELECT CASE WHEN (SELECT count(*) FROM lo) = 0 THEN 0.0
                    WHEN (SELECT count(*) FROM hi) = 0 OR hi.x = lo.x THEN lo.y
                    ELSE lo.y + ({value!r} - lo.x) * (hi.y - lo.y) / (hi.x - lo.x) END
        FROM (SELECT 1) AS one LEFT JOIN lo ON true LEFT JOIN hi ON true"""
    return _one_value(con, query, f"{source_file}/{series}")
