"""Benchmark: the AcmeTrace job-figure data functions against the notebook's pandas way.

On a synthetic ``trace_seren.csv`` of AcmeTrace's size (~820,000 jobs, upstream
format; shared with ``bench_catalog.py`` in ``benchmarks/_work``) plus a
synthetic Kalos trace, times every job-trace figure's data function of
:mod:`mltraces.datasets.acme.figures` on a warm catalog, and the same numbers computed
the way the AcmeTrace notebook computes its figures: pandas, one boolean filter
over the job frame per plotted x point (at exactly the x points the SQL side
returns, which spares pandas choosing a grid). Both sides' numbers are compared
before any timing is printed.

Run: ``python benchmarks/bench_figures.py [--rows 818327] [--repeat 3]``.
Uses its own cache folder under ``benchmarks/_work``, never the user's cache.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import harness
import numpy as np
import pandas as pd

import mltraces
from mltraces.datasets.acme import figures as acme

FIGURES = {
    "acme_duration_cdf": acme.duration_cdf_data,
    "acme_gpu_count_cdf": acme.gpu_count_cdf_data,
    "acme_states": acme.states_data,
    "acme_job_types": acme.types_data,
    "acme_type_gpu_count": acme.type_gpu_count_data,
    "acme_type_duration_queue": acme.type_duration_queue_data,
}


# --------------------------------------------------------------------------- pandas side


def share_below(values: np.ndarray, weights: np.ndarray, xs: np.ndarray) -> list[float]:
    """The notebook way: one boolean filter per x point."""
    total = weights.sum()
    return [weights[values <= x].sum() / total for x in xs]


def pandas_figures(jobs: pd.DataFrame, sql: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Every job figure's numbers from an in-memory frame, at the SQL side's x points."""
    gpu = jobs[jobs["gpu_num"] > 0]
    out: dict[str, pd.DataFrame] = {}

    rows = []
    for cluster, part in sql["acme_duration_cdf"].groupby("cluster", sort=False):
        sub = gpu[(gpu["cluster"] == cluster) & gpu["duration"].notna()]
        xs = part["x"].to_numpy()
        rows.append(part.assign(cdf=share_below(sub["duration"].to_numpy(), np.ones(len(sub)), xs)))
    out["acme_duration_cdf"] = pd.concat(rows)

    rows = []
    for (cluster, measure), part in sql["acme_gpu_count_cdf"].groupby(
        ["cluster", "measure"], sort=False
    ):
        sub = gpu[gpu["cluster"] == cluster]
        if measure == "GPU time":
            sub = sub[sub["gpu_time"].notna()]
        weights = sub["gpu_time"].to_numpy() if measure == "GPU time" else np.ones(len(sub))
        cdf = share_below(sub["gpu_num"].to_numpy(), weights, part["x"].to_numpy())
        rows.append(part.assign(cdf=cdf))
    out["acme_gpu_count_cdf"] = pd.concat(rows)

    for name, column in (("acme_states", "state"), ("acme_job_types", "type")):
        counts = gpu.groupby(["cluster", column]).size()
        times = gpu.groupby(["cluster", column])["gpu_time"].sum()
        by_jobs = 100 * counts / counts.groupby("cluster").transform("sum")
        by_time = 100 * times / times.groupby("cluster").transform("sum")
        part = sql[name]
        out[name] = part.assign(
            share=[
                (by_jobs if m == "jobs" else by_time)[(c, k)]
                for c, k, m in zip(part["cluster"], part[column], part["measure"], strict=True)
            ]
        )

    grouped = gpu.groupby(["cluster", "type"])["gpu_num"]
    quantiles = grouped.quantile([0.05, 0.25, 0.5, 0.75, 0.95]).unstack()
    part = sql["acme_type_gpu_count"]
    keys = list(zip(part["cluster"], part["type"], strict=True))
    out["acme_type_gpu_count"] = part.assign(
        jobs=[int(grouped.size()[k]) for k in keys],
        p05=[quantiles.loc[k, 0.05] for k in keys],
        q1=[quantiles.loc[k, 0.25] for k in keys],
        median=[quantiles.loc[k, 0.5] for k in keys],
        q3=[quantiles.loc[k, 0.75] for k in keys],
        p95=[quantiles.loc[k, 0.95] for k in keys],
        mean=[grouped.mean()[k] for k in keys],
    )

    rows = []
    for (cluster, kind, metric), part in sql["acme_type_duration_queue"].groupby(
        ["cluster", "type", "metric"], sort=False
    ):
        sub = gpu[(gpu["cluster"] == cluster) & (gpu["type"] == kind) & gpu[metric].notna()]
        cdf = share_below(sub[metric].to_numpy(), np.ones(len(sub)), part["x"].to_numpy())
        rows.append(part.assign(cdf=cdf))
    out["acme_type_duration_queue"] = pd.concat(rows)
    return out


def largest_difference(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Largest absolute difference over the numeric columns of two aligned frames."""
    worst = 0.0
    for column in a.columns:
        if pd.api.types.is_numeric_dtype(a[column]):
            diff = np.abs(a[column].to_numpy(float) - b[column].to_numpy(float))
            worst = max(worst, float(np.nanmax(diff)) if len(diff) else 0.0)
    return worst


# --------------------------------------------------------------------------- harness


def read_jobs(local: dict[str, Path]) -> pd.DataFrame:
    """Both traces as the notebook holds them: one pandas frame with a cluster column."""
    columns = ["gpu_num", "type", "state", "duration", "queue", "gpu_time"]
    frames = [
        pd.read_csv(local[f"acme.{c.lower()}_jobs"], usecols=columns).assign(cluster=c)
        for c in ("Seren", "Kalos")
    ]
    return pd.concat(frames, ignore_index=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=820_000, help="synthetic Seren jobs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per SQL measurement")
    args = parser.parse_args()

    local = harness.synthetic_job_traces(args.rows)
    os.environ["MLTRACES_CACHE"] = str(harness.WORK / "cache-figures")
    os.environ["MLTRACES_OFFLINE"] = "1"  # the job tables are local files; nothing to fetch
    os.environ.pop("MLTRACES_LOCAL", None)
    tables = ["acme.seren_jobs", "acme.kalos_jobs"]
    mltraces.connect(tables, local=local, strict=True).close()  # convert once (cold)
    warm_connect, con = harness.timed(lambda: mltraces.connect(tables, local=local, strict=True), 3)

    sql_times: dict[str, float] = {}
    sql: dict[str, pd.DataFrame] = {}
    for name, function in FIGURES.items():
        function(con)  # warm DuckDB's caches once
        sql_times[name], sql[name] = harness.timed(lambda f=function: f(con), args.repeat)
    load_time, jobs = harness.timed(lambda: read_jobs(local))
    pandas_total, expected = harness.timed(lambda: pandas_figures(jobs, sql))

    print(f"Seren {args.rows:,} + Kalos 62,413 synthetic jobs; warm connect {warm_connect:.3f} s")
    print(f"{'figure data':28} {'SQL (s)':>9} {'points':>7} {'max |diff|':>11}")
    for name in FIGURES:
        diff = largest_difference(sql[name], expected[name])
        print(f"{name:28} {sql_times[name]:9.3f} {len(sql[name]):7,} {diff:11.1e}")
        assert diff < 1e-9, f"{name}: SQL and pandas disagree by {diff}"
    sql_total = sum(sql_times.values())
    print()
    print(f"all job figures, SQL on the warm catalog        {sql_total:8.3f} s")
    print(f"all job figures, pandas (frame in memory)       {pandas_total:8.3f} s")
    print(f"pandas read_csv of both traces                  {load_time:8.3f} s")
    print(f"ratio, figure data only (pandas / SQL)          {pandas_total / sql_total:8.1f} x")
    warm = (load_time + pandas_total) / (warm_connect + sql_total)
    print(f"ratio, warm session (read_csv + pandas) / (connect + SQL) {warm:6.1f} x")
    print(f"goal (>= 10x warm): {'met' if warm >= 10 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
