"""Benchmark: wide AcmeTrace utilization CSV → long Parquet, against pandas read_csv + melt.

Generates a Kalos-like ``GPU_UTIL.csv`` (~2 GB by default: 2,304 ``<ip>-<gpu>``
columns, 15 s sampling from 2023-07-01, ~70 % empty cells; kept in
``benchmarks/_work``, which git ignores, and reused), then measures, each in a
fresh child process so peak RSS is the conversion's own:

1. mltraces' conversion (``mltraces.datasets.acme.util``: DuckDB CSV reader + numpy
   unpivot + Parquet per month, then the dataset assembly) of the whole file and
   of a slice: throughput (MB of CSV per second) and peak RSS;
2. the pandas baseline on the same slice (the whole file does not fit in
   memory): ``read_csv`` → ``to_datetime`` → ``melt`` → ``dropna`` → node/gpu
   from the column names (via categoricals) → ``to_parquet``;
3. "hourly mean GPU_UTIL per node for one month" on the converted data through
   the ``acme.gpu_metrics`` view (July 2023), cold and warm.

Run: ``python benchmarks/bench_acme_util.py [--size-gb 2] [--slice-mb 150]``.
The goals (issue 6): peak RSS <= 2 GB whatever the file size, throughput >= 5x
the baseline, the monthly query in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work" / "acme_util"
sys.path.insert(0, str(ROOT / "tests"))  # the shared synthetic-file generators

METRIC_PATH = "data/utilization/kalos/GPU_UTIL.csv"
MONTH_QUERY = """
SELECT node, {hour} AS hour, avg(value) AS mean_util, count(*) AS samples
FROM acme.gpu_metrics
WHERE cluster = 'kalos' AND metric = 'GPU_UTIL'
  AND time >= '2023-07-01' AND time < '2023-08-01'
GROUP BY ALL
"""
HOURS = {"floor_time": "acme.floor_time(time, 3600)", "date_trunc": "date_trunc('hour', time)"}


# --------------------------------------------------------------------------- children


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_convert(csv: Path, cache: Path) -> dict:
    """Convert one file as ``fetch_util`` would (after download); runs in a child."""
    os.environ["MLTRACES_CACHE"] = str(cache)
    from mltraces.datasets.acme.hub import HubFile
    from mltraces.datasets.acme.util import assemble, convert

    size = csv.stat().st_size
    fake_sha = f"{size:064x}"[-64:]  # the benchmark skips hashing: conversion is measured
    file = HubFile(METRIC_PATH, size, fake_sha, None)
    started = time.perf_counter()
    folder = convert.convert(file, csv)
    converted = time.perf_counter() - started
    meta = json.loads((folder / "meta.json").read_text())
    assemble.assemble_partition((file.table, file.group, file.metric), [meta])
    total = time.perf_counter() - started
    return {
        "seconds": total,
        "convert_seconds": converted,
        "rows": meta["rows"],
        "wide_rows": meta["wide_rows"],
        "peak_rss_mb": _peak_rss_mb(),
    }


def child_pandas(csv: Path, out: Path) -> dict:
    """The pandas way: read the wide frame, melt, drop empty cells, write Parquet."""
    import numpy as np
    import pandas as pd

    started = time.perf_counter()
    wide = pd.read_csv(csv)
    read = time.perf_counter() - started
    wide["Time"] = pd.to_datetime(wide["Time"], utc=True)
    long = wide.melt(id_vars="Time", var_name="column", value_name="value")
    del wide
    long = long.dropna(subset=["value"])
    codes = long["column"].astype("category").cat
    names = codes.categories.str.rsplit("-", n=1)
    nodes, node_of_column = np.unique(names.str[0].to_numpy(dtype=str), return_inverse=True)
    long = pd.DataFrame(
        {
            "time": long["Time"].to_numpy(),
            "node": pd.Categorical.from_codes(node_of_column[codes.codes.to_numpy()], nodes),
            "gpu": names.str[1].astype("int64").to_numpy()[codes.codes.to_numpy()],
            "value": long["value"].to_numpy(),
        }
    )
    long.to_parquet(out)
    return {
        "seconds": time.perf_counter() - started,
        "read_seconds": read,
        "rows": len(long),
        "peak_rss_mb": _peak_rss_mb(),
    }


def run_child(kind: str, *args: Path) -> dict:
    """Run one measurement in a fresh interpreter; returns its JSON report."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, args)],
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after > before:  # the kernel's view of the child's peak, when it is a new maximum
        report["peak_rss_mb_kernel"] = after / 1024
    return report


# --------------------------------------------------------------------------- inputs


def make_inputs(size_gb: float, slice_mb: float) -> tuple[Path, Path]:
    """The big CSV (generated once) and a slice of its first ``slice_mb`` MB."""
    from synthetic_util import write_big_wide_csv

    WORK.mkdir(parents=True, exist_ok=True)
    big = WORK / f"GPU_UTIL-{size_gb:g}GB.csv"
    if not big.is_file():
        started = time.perf_counter()
        rows = write_big_wide_csv(big, target_bytes=int(size_gb * 1e9))
        print(
            f"generated {big.name}: {big.stat().st_size / 1e9:.2f} GB, {rows:,} rows "
            f"in {time.perf_counter() - started:.0f} s"
        )
    part = WORK / f"GPU_UTIL-slice-{slice_mb:g}MB.csv"
    if not part.is_file():
        with big.open("rb") as source, part.open("wb") as sink:
            sink.write(source.read(int(slice_mb * 1e6)).rsplit(b"\n", 1)[0] + b"\n")
    return big, part


def check_disk(size_gb: float) -> None:
    free = shutil.disk_usage(WORK.parent if WORK.parent.exists() else ROOT).free / 1e9
    need = size_gb * 1.8 + 1
    print(f"disk: {free:.0f} GB free under {WORK.parent}, this run needs ~{need:.0f} GB")
    if free < need:
        sys.exit(f"not enough disk: need ~{need:.0f} GB (lower --size-gb)")


# --------------------------------------------------------------------------- query


def time_query(cache: Path) -> dict:
    """The monthly hourly-mean query on the converted data, cold then warm, both idioms."""
    os.environ["MLTRACES_CACHE"] = str(cache)
    import duckdb

    from mltraces.datasets.acme.util.views import attach_views

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    attach_views(con)
    report = {}
    answers = []
    for name, hour in HOURS.items():
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            rows = con.execute(MONTH_QUERY.format(hour=hour)).fetchall()
            timings.append(time.perf_counter() - started)
        answers.append(sorted(rows))
        report[name] = {"cold_seconds": timings[0], "warm_seconds": min(timings[1:])}
    assert answers[0] == answers[1], "both idioms give the same hourly means"
    report["groups"] = len(rows)
    report["samples"] = sum(r[3] for r in rows)
    return report


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-gb", type=float, default=2.0)
    parser.add_argument("--slice-mb", type=float, default=150.0)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *paths = args.child
        fn = child_convert if kind == "convert" else child_pandas
        print(json.dumps(fn(*map(Path, paths))))
        return

    check_disk(args.size_gb)
    big, part = make_inputs(args.size_gb, args.slice_mb)
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    results = {}
    for label, csv in (("slice", part), ("full", big)):
        cache = WORK / f"cache-{label}"
        shutil.rmtree(cache, ignore_errors=True)
        results[f"mltraces_{label}"] = run_child("convert", csv, cache)
        results[f"mltraces_{label}"]["mb"] = csv.stat().st_size / 1e6
    results["pandas_slice"] = run_child("pandas", part, WORK / "pandas.parquet")
    results["pandas_slice"]["mb"] = part.stat().st_size / 1e6
    results["query"] = time_query(WORK / "cache-full")
    results["load_average"] = os.getloadavg()[0]
    report(results)
    (WORK / "results.json").write_text(json.dumps(results, indent=1))


def report(results: dict) -> None:
    print(f"\n{'run':20} {'MB':>8} {'seconds':>8} {'MB/s':>7} {'peak RSS':>9} {'long rows':>12}")
    for key in ("mltraces_slice", "pandas_slice", "mltraces_full"):
        r = results[key]
        print(
            f"{key:20} {r['mb']:8.0f} {r['seconds']:8.1f} {r['mb'] / r['seconds']:7.1f} "
            f"{r['peak_rss_mb']:7.0f} MB {r['rows']:12,}"
        )
    ours, theirs = results["mltraces_slice"], results["pandas_slice"]
    assert ours["rows"] == theirs["rows"], "both sides must produce the same long rows"
    ratio = (ours["mb"] / ours["seconds"]) / (theirs["mb"] / theirs["seconds"])
    full = results["mltraces_full"]
    q = results["query"]
    print(f"\nthroughput ratio on the same slice: {ratio:.1f}x (goal >= 5x)")
    print(
        f"full file: {full['mb'] / full['seconds']:.1f} MB/s, peak RSS "
        f"{full['peak_rss_mb']:.0f} MB (goal <= 2048 MB; slice: {ours['peak_rss_mb']:.0f} MB)"
    )
    print(
        f"hourly mean GPU_UTIL per node, July ({q['groups']:,} groups over "
        f"{q['samples']:,} samples):"
    )
    for name in HOURS:
        print(
            f"  {HOURS[name]:28} {q[name]['cold_seconds']:.2f} s cold, "
            f"{q[name]['warm_seconds']:.2f} s warm"
        )
    print(f"load average during the run: {results['load_average']:.1f}")


if __name__ == "__main__":
    main()
