"""Benchmark: wide AcmeTrace utilization CSV → long Parquet, against yardsticks in the same run.

Generates two Kalos-like ``GPU_UTIL`` files once (2,304 ``<ip>-<gpu>`` columns,
15 s sampling from 2023-07-01, ~70 % empty cells; ~100 MB and ~2 GB, kept in
``benchmarks/_work``, which git ignores) and measures, each run in a fresh child
process so time, CPU and peak RSS are that run's own:

1. mltraces' conversion (``mltraces.sources.acme.util``: chunks parsed and
   unpivoted on one thread per core, one Parquet file per UTC month, then the
   dataset assembly), and of the 100 MB file also on one worker thread, to
   show what the second core adds;
2. DuckDB's plain typed read of the same file (every cell parsed as in the
   conversion, nothing kept: ``SELECT * FROM read_csv(...) WHERE c0 IS NULL``),
   the speed any DuckDB-based conversion starts from;
3. the pandas way on the 100 MB file (the 2 GB one does not fit in memory):
   ``read_csv`` → ``to_datetime`` → ``melt`` → ``dropna`` → node/gpu from the
   column names → ``to_parquet``;
4. "hourly mean GPU_UTIL per node for one month" on the converted 2 GB data
   through the ``acme.gpu_metrics`` view (July 2023), cold and warm.

The machine is shared, so runs are interleaved (mltraces, DuckDB, mltraces, ...)
and medians reported, with the load average before and after; compare the
ratios, which the load moves less than the absolute speeds. CPU/wall above 1
means more than one core was busy; Linux gives each session (autogroup) an
equal share of the CPUs, so while other sessions keep the machine busy no run
gets much more than its share, whatever its number of threads.

Run: ``python benchmarks/bench_acme_util.py [--size-gb 2] [--small-mb 100] [--repeat 3]``.
Goals (issue 13): >= 10x pandas on the 100 MB file, both cores busy, peak RSS
<= 2 GB whatever the file size.
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
GOAL_PANDAS = 10.0
GOAL_RSS_MB = 2048


# --------------------------------------------------------------------------- children


def _measured(work, *args) -> dict:
    """Wall and CPU seconds (every thread) of ``work(*args)``, and the peak RSS."""
    started, cpu = time.perf_counter(), time.process_time()
    report = work(*args)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {**report, "seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak}


def child_convert(csv: str, cache: str, threads: str = "0") -> dict:
    """Convert one file as ``fetch_util`` would after the download (``threads`` 0: one per core)."""
    csv_path = Path(csv)
    os.environ["MLTRACES_CACHE"] = cache
    # imported before the clock starts, as pandas is for the pandas run
    import duckdb  # noqa: F401
    import pyarrow.csv
    import pyarrow.parquet  # noqa: F401

    from mltraces.sources.acme.hub import HubFile
    from mltraces.sources.acme.util import assemble, convert

    size = csv_path.stat().st_size
    fake_sha = f"{size:064x}"[-64:]  # the benchmark skips hashing: conversion is measured
    file = HubFile(METRIC_PATH, size, fake_sha, None)

    def work() -> dict:
        folder = convert.convert(file, csv_path, convert.Settings(threads=int(threads) or None))
        meta = json.loads((folder / "meta.json").read_text())
        assemble.assemble_partition((file.table, file.group, file.metric), [meta])
        return {"rows": meta["rows"], "wide_rows": meta["wide_rows"]}

    return _measured(work)


def child_duckdb(csv: str) -> dict:
    """DuckDB's typed read of every cell (as the conversion types them), keeping nothing."""
    import duckdb

    with open(csv) as handle:
        n_columns = len(handle.readline().split(","))
    types = ", ".join(f"'c{i}': '{'VARCHAR' if i == 0 else 'DOUBLE'}'" for i in range(n_columns))
    source = (
        f"read_csv('{csv}', header = false, skip = 1, auto_detect = false, delim = ',', "
        f"quote = '\"', escape = '\"', columns = {{{types}}})"
    )
    con = duckdb.connect()

    def work() -> dict:
        return {"rows": len(con.execute(f"SELECT * FROM {source} WHERE c0 IS NULL").fetchall())}

    return _measured(work)


def child_pandas(csv: str, out: str) -> dict:
    """The pandas way: read the wide frame, melt, drop empty cells, write Parquet."""
    import numpy as np
    import pandas as pd

    def work() -> dict:
        wide = pd.read_csv(csv)
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
        return {"rows": len(long)}

    return _measured(work)


CHILDREN = {"convert": child_convert, "duckdb": child_duckdb, "pandas": child_pandas}


def run_child(kind: str, *args: Path | str) -> dict:
    """Run one measurement in a fresh interpreter; returns its JSON report."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, args)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def convert_run(csv: Path, label: str, threads: int = 0) -> dict:
    cache = WORK / f"cache-{label}"
    shutil.rmtree(cache, ignore_errors=True)
    return run_child("convert", csv, cache, str(threads))


# --------------------------------------------------------------------------- inputs


def make_input(mb: float) -> Path:
    """A Kalos-like file of about ``mb`` MB, generated once (atomically)."""
    from mltraces.sources.acme.util.synthetic import write_big_wide_csv

    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"GPU_UTIL-{mb:g}MB.csv"
    if not path.is_file():
        started = time.perf_counter()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        rows = write_big_wide_csv(tmp, target_bytes=int(mb * 1e6))
        os.replace(tmp, path)
        print(
            f"generated {path.name}: {path.stat().st_size / 1e6:,.0f} MB, {rows:,} rows "
            f"in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    return path


def check_disk(mb: float) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(WORK).free / 1e9
    need = mb / 1e3 * 1.8 + 1
    print(f"disk: {free:.0f} GB free under {WORK}, this run needs ~{need:.0f} GB")
    if free < need:
        sys.exit(f"not enough disk: need ~{need:.0f} GB (lower --size-gb)")


# --------------------------------------------------------------------------- query


def time_query(cache: Path) -> dict:
    """The monthly hourly-mean query on the converted data, cold then warm, both idioms."""
    os.environ["MLTRACES_CACHE"] = str(cache)
    import duckdb

    from mltraces.sources.acme.util.views import attach_views

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


def median_run(runs: list[dict]) -> dict:
    """The run of median speed, with how many runs it is the median of."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return {**ordered[len(ordered) // 2], "runs": len(runs)}


def measure(small: Path, big: Path | None, repeat: int) -> dict:
    """Interleaved runs: mltraces and DuckDB alternate; pandas once, mid-way."""
    runs: dict[str, list[dict]] = {
        "mltraces_small": [],
        "mltraces_one_thread_small": [],
        "duckdb_small": [],
        "pandas_small": [],
    }
    for i in range(repeat):
        print(f"round {i + 1}/{repeat} on {small.name} ...", flush=True)
        runs["mltraces_small"].append(convert_run(small, "small"))
        runs["mltraces_one_thread_small"].append(convert_run(small, "small", threads=1))
        runs["duckdb_small"].append(run_child("duckdb", small))
        if i == repeat // 2:
            print("pandas read_csv + melt (slow) ...", flush=True)
            runs["pandas_small"].append(run_child("pandas", small, WORK / "pandas.parquet"))
    if big is not None:
        print(f"{big.name} ...", flush=True)
        runs["mltraces_big"] = [convert_run(big, "big")]
        runs["duckdb_big"] = [run_child("duckdb", big)]
    results = {key: median_run(value) for key, value in runs.items()}
    results["mb"] = {"small": small.stat().st_size / 1e6}
    if big is not None:
        results["mb"]["big"] = big.stat().st_size / 1e6
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-gb", type=float, default=2.0, help="the big file (0: skip it)")
    parser.add_argument("--small-mb", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs on the small file")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *paths = args.child
        print(json.dumps(CHILDREN[kind](*paths)))
        return

    check_disk(args.size_gb * 1e3 + args.small_mb)
    small = make_input(args.small_mb)
    big = make_input(args.size_gb * 1e3) if args.size_gb else None
    load_before = os.getloadavg()
    results = measure(small, big, args.repeat)
    if big is not None:
        results["query"] = time_query(WORK / "cache-big")
    results["load_average"] = {"before": load_before, "after": os.getloadavg()}
    results["cpus"] = os.cpu_count()
    results["ram_gb"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    report(results)
    (WORK / "results.json").write_text(json.dumps(results, indent=1))


def _line(label: str, mb: float, r: dict) -> str:
    runs = f"{r['runs']} run" + ("s, median" if r["runs"] > 1 else "")
    return (
        f"{label:34} {mb:7,.0f} {r['seconds']:8.1f} {mb / r['seconds']:7.1f} "
        f"{r['cpu_seconds']:7.1f} {r['cpu_seconds'] / r['seconds']:8.2f} "
        f"{r['peak_rss_mb']:7,.0f} MB {r['rows']:13,}   ({runs})"
    )


def speed(results: dict, key: str, size: str) -> float:
    return results["mb"][size] / results[key]["seconds"]


def report(results: dict) -> None:
    mb = results["mb"]
    before, after = results["load_average"]["before"], results["load_average"]["after"]
    print(
        f"\nmachine: {results['cpus']} CPUs, {results['ram_gb']:.0f} GiB; "
        "load average (1/5/15 min) "
        f"{' / '.join(f'{x:.1f}' for x in before)} before, "
        f"{' / '.join(f'{x:.1f}' for x in after)} after"
    )
    head = f"{'run':34} {'MB':>7} {'wall s':>8} {'MB/s':>7} {'CPU s':>7} {'CPU/wall':>8}"
    print(f"{head} {'peak RSS':>10} {'rows':>13}")
    rows = [
        ("mltraces convert", "mltraces_small", "small"),
        ("mltraces convert, 1 worker thread", "mltraces_one_thread_small", "small"),
        ("DuckDB typed read (yardstick)", "duckdb_small", "small"),
        ("pandas read_csv + melt (yardstick)", "pandas_small", "small"),
        ("mltraces convert", "mltraces_big", "big"),
        ("DuckDB typed read (yardstick)", "duckdb_big", "big"),
    ]
    for label, key, size in rows:
        if key in results:
            print(_line(label, mb[size], results[key]))
    ours, pandas = results["mltraces_small"], results["pandas_small"]
    assert ours["rows"] == pandas["rows"], "both sides must produce the same long rows"
    vs_pandas = speed(results, "mltraces_small", "small") / speed(results, "pandas_small", "small")
    vs_duckdb = speed(results, "mltraces_small", "small") / speed(results, "duckdb_small", "small")
    vs_one = speed(results, "mltraces_small", "small") / speed(
        results, "mltraces_one_thread_small", "small"
    )
    busy = ours["cpu_seconds"] / ours["seconds"]
    print(
        f"\n{mb['small']:,.0f} MB: {vs_pandas:.1f}x pandas (goal >= {GOAL_PANDAS:g}x), "
        f"{vs_duckdb:.2f}x DuckDB's typed read; CPU/wall {busy:.2f}, "
        f"{vs_one:.2f}x the same conversion on one worker thread"
    )
    if "mltraces_big" in results:
        big = results["mltraces_big"]
        big_vs_duckdb = speed(results, "mltraces_big", "big") / speed(results, "duckdb_big", "big")
        print(
            f"{mb['big']:,.0f} MB: {big_vs_duckdb:.2f}x DuckDB's typed read; CPU/wall "
            f"{big['cpu_seconds'] / big['seconds']:.2f}; peak RSS {big['peak_rss_mb']:,.0f} MB "
            f"(goal <= {GOAL_RSS_MB:,} MB; {ours['peak_rss_mb']:,.0f} MB on {mb['small']:,.0f} MB)"
        )
        q = results["query"]
        print(
            f"hourly mean GPU_UTIL per node, July ({q['groups']:,} groups over "
            f"{q['samples']:,} samples):"
        )
        for name in HOURS:
            print(
                f"  {HOURS[name]:28} {q[name]['cold_seconds']:.2f} s cold, "
                f"{q[name]['warm_seconds']:.2f} s warm"
            )


if __name__ == "__main__":
    main()
