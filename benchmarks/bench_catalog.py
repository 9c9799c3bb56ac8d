"""Benchmark: the catalog against the pandas way on an AcmeTrace-scale Seren table.

Generates a synthetic ``trace_seren.csv`` in the upstream format (~820,000 jobs,
~100 MB; kept in ``benchmarks/_work`` and reused), then measures:

1. first ``connect()``: CSV -> typed Parquet conversion plus view creation;
2. warm ``connect()``: the conversion is reused (Seren alone, and every table
   with all sources cached, in this process and in a fresh process);
   whole processes, paired with their yardsticks in the same run (issue 13):
   ``connect()`` against a bare ``duckdb.connect()`` (goal <= 1.5x), the same
   with ``MLTRACES_OFFLINE=1`` (the network down costs nothing), and warm
   ``mltraces sql`` in every output format against
   ``python -c "import duckdb; duckdb.connect().sql('select 1')"`` (goal <= 1.2x).
   Child processes may write bytecode (to ``_work/pycache``), as an installed
   package has it; wall and CPU ratios are both printed (CPU is steadier on a
   loaded machine);
3. an analysis query set, in SQL on the warm catalog and in pandas the way the
   AcmeTrace notebook computes its figures (one boolean filter per x point):
   the CDF of GPU-job duration at 22 log-spaced points, the CDF of GPU count at
   0..1024 weighted by jobs and by GPU time, and the shares of jobs and GPU time
   by job type. Both sides' results are compared before timing is reported.

Run: ``python benchmarks/bench_catalog.py [--rows 818327] [--repeat 5]``.
With ``../shared/upstream`` present, the other tables come from it as a
directory mirror (no network); Kalos and the Alibaba groups are synthetic.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harness
import numpy as np
import pandas as pd

import mltraces
from mltraces import catalog
from mltraces.schema import get_schema

UPSTREAM = harness.ROOT.parent / "shared" / "upstream"

DURATION_X = [2**i for i in range(22)]
GPU_X = list(range(1025))


# --------------------------------------------------------------------------- SQL side


def sql_queries(con) -> dict[str, pd.DataFrame]:
    """The analysis set in SQL: exact, one pass over grouped data per figure."""
    duration_x = ", ".join(map(str, DURATION_X))
    return {
        "duration_cdf": con.sql(f"""
            WITH d AS (SELECT duration, count(*) AS n FROM acme.seren_jobs
                       WHERE gpu_num > 0 GROUP BY duration)
            SELECT x, 100.0 * sum(n) FILTER (WHERE duration <= x) / sum(n) AS pct
            FROM d, (SELECT unnest([{duration_x}]) AS x) GROUP BY x ORDER BY x""").df(),
        "gpu_cdf": con.sql("""
            WITH g AS (SELECT gpu_num, count(*) AS n, sum(gpu_num * duration) AS t
                       FROM acme.seren_jobs WHERE gpu_num > 0 GROUP BY gpu_num)
            SELECT x, 100.0 * sum(n) FILTER (WHERE gpu_num <= x) / sum(n) AS jobs_pct,
                   100.0 * sum(t) FILTER (WHERE gpu_num <= x) / sum(t) AS gpu_time_pct
            FROM g, range(0, 1025) AS r(x) GROUP BY x ORDER BY x""").df(),
        "type_shares": con.sql("""
            SELECT type, 100.0 * count(*) / sum(count(*)) OVER () AS jobs_pct,
                   100.0 * sum(gpu_time) / sum(sum(gpu_time)) OVER () AS gpu_time_pct
            FROM acme.seren_jobs WHERE gpu_num > 0 GROUP BY type ORDER BY type""").df(),
    }


# --------------------------------------------------------------------------- pandas side


def pandas_queries(jobs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The same set the notebook way: filter the frame once per x point."""
    gpu = jobs[jobs["gpu_num"] > 0]
    duration = [len(gpu[gpu["duration"] <= x]) / len(gpu) * 100 for x in DURATION_X]
    by_jobs = [len(gpu[gpu["gpu_num"] <= x]) / len(gpu) * 100 for x in GPU_X]
    weight = gpu["gpu_num"] * gpu["duration"]
    total = weight.sum()
    by_time = [weight[gpu["gpu_num"] <= x].sum() / total * 100 for x in GPU_X]
    counts = gpu.groupby("type").size()
    times = gpu.groupby("type")["gpu_time"].sum()
    shares = pd.DataFrame(
        {
            "type": counts.index,
            "jobs_pct": (counts / counts.sum() * 100).values,
            "gpu_time_pct": (times / times.sum() * 100).values,
        }
    )
    return {
        "duration_cdf": pd.DataFrame({"x": DURATION_X, "pct": duration}),
        "gpu_cdf": pd.DataFrame({"x": GPU_X, "jobs_pct": by_jobs, "gpu_time_pct": by_time}),
        "type_shares": shares,
    }


def same_results(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> float:
    """Largest absolute difference between the two sides' numbers (percentage points)."""
    worst = 0.0
    for key in a:
        left, right = a[key], b[key]
        for column in left.columns:
            if column == "type":
                assert list(left[column]) == list(right[column]), key
                continue
            diff = np.abs(left[column].to_numpy(float) - right[column].to_numpy(float)).max()
            worst = max(worst, float(diff))
    return worst


# --------------------------------------------------------------------------- harness


def prepare_files(rows: int) -> dict[str, Path]:
    """Synthetic inputs for the tables whose upstream files are absent (cached in _work)."""
    return {
        **harness.synthetic_job_traces(rows),
        "zeus.alibaba_groups": harness.synthetic_alibaba_groups(),
    }


def fresh_process_connect(local: dict[str, Path]) -> float:
    """Seconds for ``import mltraces; mltraces.connect(...)`` in a new interpreter."""
    spec = ",".join(f"{k}={v}" for k, v in local.items())
    code = (
        "import time; t = time.perf_counter(); import mltraces; "
        "con = mltraces.connect(); print(time.perf_counter() - t)"
    )
    env = dict(os.environ, MLTRACES_LOCAL=spec)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def _child_env(local: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(MLTRACES_LOCAL=",".join(f"{k}={v}" for k, v in local.items()),
               PYTHONPYCACHEPREFIX=str(harness.WORK / "pycache"), **extra)
    env.pop("MLTRACES_MIRROR", None)  # everything is cached: no mirror needed
    return env


def _run_timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=harness.WORK)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_process_ratios(local: dict[str, Path], repeat: int) -> list[tuple[str, str, float,
                                                                             float]]:
    """Median wall and CPU ratios of catalog processes over yardsticks run alternately."""
    python = [sys.executable, "-c"]
    cli = [*python, "import sys; from mltraces.cli import main; sys.exit(main(sys.argv[1:]))"]
    online, offline = _child_env(local), _child_env(local, MLTRACES_OFFLINE="1")
    query = "SELECT count(*) FROM zeus.power"
    cases = {
        "duckdb.connect()": ([*python, "import duckdb; duckdb.connect()"], online),
        "duckdb select 1": ([*python, "import duckdb; duckdb.connect().sql('select 1')"], online),
        "connect()": ([*python, "import mltraces; mltraces.connect()"], online),
        "connect() offline": ([*python, "import mltraces; mltraces.connect()"], offline),
        **{f"mltraces sql --format {fmt}": ([*cli, "sql", query, "--format", fmt], online)
           for fmt in ("table", "csv", "json")},
    }
    for command, env in cases.values():  # warm-up: bytecode, page cache
        _run_timed(command, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, (command, env) in cases.items():
            samples[name].append(_run_timed(command, env))
    wall = {n: statistics.median(w for w, _ in s) for n, s in samples.items()}
    cpu = {n: statistics.median(c for _, c in s) for n, s in samples.items()}
    pairs = [("connect()", "duckdb.connect()"), ("connect() offline", "connect()")]
    pairs += [(n, "duckdb select 1") for n in cases if n.startswith("mltraces sql")]
    return [(a, b, wall[a] / wall[b], cpu[a] / cpu[b]) for a, b in pairs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=820_000, help="synthetic Seren jobs")
    parser.add_argument("--repeat", type=int, default=5, help="runs per warm measurement")
    args = parser.parse_args()

    local = prepare_files(args.rows)
    seren = local["acme.seren_jobs"]
    cache = harness.WORK / "cache"
    os.environ["MLTRACES_CACHE"] = str(cache)
    os.environ.pop("MLTRACES_LOCAL", None)
    if (UPSTREAM / "MANIFEST.tsv").is_file():
        os.environ["MLTRACES_MIRROR"] = str(UPSTREAM)
        os.environ.pop("MLTRACES_OFFLINE", None)
    else:
        print(f"note: {UPSTREAM} absent; only the synthetic tables are available")
        os.environ["MLTRACES_OFFLINE"] = "1"
    size_mb = seren.stat().st_size / 1e6
    print(f"Seren table: {args.rows:,} jobs, {size_mb:.1f} MB CSV; cache {cache}")

    # 1. First connect: drop earlier conversions of the Seren table, then convert.
    shutil.rmtree(cache / catalog.TABLES_DIR / "acme.seren_jobs", ignore_errors=True)
    for old in (cache / catalog.TABLES_DIR).glob("acme.seren_jobs-*"):
        old.unlink()
    first, _ = harness.timed(
        lambda: mltraces.connect(tables=["acme.seren_jobs"], local=local, strict=True)
    )

    # 2. Warm connects.
    every = mltraces.connect(mltraces.tables(), local=local)  # named: fetched, converted once
    ready = []
    for name, state, reason in every.execute(
            'SELECT "table", state, reason FROM mltraces.status').fetchall():
        if state == "unavailable":
            print(f"note: {name} unavailable: {reason.splitlines()[0][:120]}")
        else:
            ready.append(name)
    warm_one, con = harness.timed(
        lambda: mltraces.connect(tables=["acme.seren_jobs"], local=local), args.repeat
    )
    warm_all, _ = harness.timed(lambda: mltraces.connect(local=local), args.repeat)
    fresh_all = statistics.median(fresh_process_connect(local) for _ in range(3))

    # 3. Analysis set.
    sql_time, sql_result = harness.timed(lambda: sql_queries(con), args.repeat)
    load_time, jobs = harness.timed(lambda: pd.read_csv(seren))
    pandas_time, pandas_result = harness.timed(lambda: pandas_queries(jobs))
    worst = same_results(sql_result, pandas_result)

    print()
    print(f"first connect() incl. CSV -> Parquet conversion   {first:8.3f} s")
    print(f"warm connect(), Seren table only                  {warm_one:8.3f} s")
    print(f"warm connect(), all {len(ready)} tables cached{'':14}{warm_all:8.3f} s")
    print(f"fresh process: import + connect(), all cached     {fresh_all:8.3f} s")
    print()
    print(f"analysis set, SQL on the warm catalog             {sql_time:8.3f} s")
    print(f"analysis set, pandas (frame already in memory)    {pandas_time:8.3f} s")
    print(f"pandas read_csv of the trace                      {load_time:8.3f} s")
    print(f"results agree to                                  {worst:8.1e} percentage points")
    print()
    print(f"ratio, queries only (pandas / SQL)                {pandas_time / sql_time:8.1f} x")
    end_to_end = (load_time + pandas_time) / (warm_one + sql_time)
    print(f"ratio, warm session: (read_csv + pandas) / (connect + SQL) {end_to_end:5.1f} x")
    converted = [t for t in mltraces.tables() if not get_schema(t).external]  # not acme-util
    goal = warm_all < 0.5 and end_to_end >= 10 and set(converted) <= set(ready)
    print(f"goal (>= 10x warm, warm connect < 0.5 s): {'met' if goal else 'NOT met'}")
    print()
    print(f"whole processes, every source cached, median of {args.repeat} paired runs "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    goals = {"connect()": 1.5, "connect() offline": 1.05}
    for name, yardstick, wall, cpu in whole_process_ratios(local, args.repeat):
        limit = goals.get(name, 1.2)
        verdict = "met" if min(wall, cpu) <= limit else "NOT met"
        print(f"  {name:28} / {yardstick:17} wall {wall:5.2f}x  cpu {cpu:5.2f}x  "
              f"(goal <= {limit}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
