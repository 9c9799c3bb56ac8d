"""Benchmark: one query over ``mltraces.jobs`` across every source, at the published sizes.

Every mapped job table whose files are absent here is written by its source
folder's synthetic writer (:mod:`mltraces.synthetic`, found by scanning) at the
row count its ``source.json`` promises (``expected_rows``; ``--scale`` shrinks
it), once, into ``benchmarks/_work/jobs-<scale>/``; the others come from
``../shared/upstream`` as a directory mirror. A new source's job tables join
the run by their folder alone. Then, each in a fresh process, in one run:

1. the first ``connect()`` of every job table plus the view (conversion of the
   synthetic files to Parquet) and the query;
2. the warm query: a per-trace summary over the whole view (jobs, GPU jobs, GPU
   hours, median run time, 90th percentile queueing delay, failed share);
3. the same summary written by hand over each member table's own columns, in
   DuckDB, in one process (the yardstick: what the mapping layer costs).

Each line gives wall seconds and the process's peak RSS. Run:
``python benchmarks/bench_jobs.py [--scale 1.0] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harness

UPSTREAM = harness.ROOT.parent / "shared" / "upstream"
SUMMARY = """
    SELECT trace, count(*) AS jobs, count(*) FILTER (WHERE num_gpu > 0) AS gpu_jobs,
           round(sum(gpu_time_s) / 3600) AS gpu_hours, median(run_s) AS median_run_s,
           quantile_cont(queue_s, 0.9) AS p90_queue_s,
           avg(CAST(state = 'FAILED' AS DOUBLE)) AS failed_share
    FROM mltraces.jobs GROUP BY trace ORDER BY trace"""


def synthetic_inputs(scale: float) -> dict[str, str]:
    """``{table: path}`` for every job table absent here, written once at its published size."""
    sys.path.insert(0, str(harness.ROOT / "tests"))
    from upstream_files import synthetic_tables

    from mltraces.jobmap import job_tables
    from mltraces.registry import all_sources
    from mltraces.schema import get_schema
    from mltraces.synthetic import write_tables

    expected = {t: n for s in all_sources().values() for t, n in s.expected_rows.items()}
    tables = [t for t in synthetic_tables(UPSTREAM) if t in job_tables()]
    folder = harness.WORK / f"jobs-{scale:g}"
    done = folder / "inputs.json"
    if done.is_file() and set(json.loads(done.read_text())) == set(tables):
        return json.loads(done.read_text())
    sizes = {f: max(1, round(expected[t] * scale)) for t in tables if t in expected
             for f in get_schema(t).file_ids}
    print(f"writing {', '.join(tables)} at {sizes} rows ...", flush=True)
    paths = {t: str(p) for t, p in write_tables(folder, tables, seed=2024, rows=sizes).items()}
    done.write_text(json.dumps(paths))
    return paths


CHILD = """
import json, resource, sys, time
start = time.perf_counter()
import mltraces
con = mltraces.connect(["mltraces.jobs", *json.loads(sys.argv[1])], local=json.loads(sys.argv[2]))
rows = con.execute(sys.argv[3]).fetchall()
wall = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "rss_mb": rss, "rows": [list(map(str, r)) for r in rows]}))
"""


def child(tables: list[str], local: dict[str, str], sql: str, cache: Path) -> dict:
    env = {**os.environ, "MLTRACES_CACHE": str(cache), "MLTRACES_MIRROR": str(UPSTREAM),
           "MLTRACES_OFFLINE": "", "MLTRACES_SOURCES": ""}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(tables), json.dumps(local),
                           sql], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def by_hand(tables: list[str]) -> str:
    """The summary over each member's own columns: every table's mapping, written out."""
    from mltraces.jobmap import job_table, table_select_sql

    parts = [f"SELECT * FROM ({table_select_sql(job_table(t))})" for t in tables]
    return SUMMARY.replace("FROM mltraces.jobs", f"FROM ({' UNION ALL '.join(parts)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="share of the published rows")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from mltraces.jobmap import job_tables

    local = synthetic_inputs(args.scale)
    tables = sorted(job_tables())
    cache = harness.WORK / f"jobs-{args.scale:g}" / "cache"
    shutil.rmtree(cache, ignore_errors=True)  # the first connect converts every table
    print(f"load {os.getloadavg()[0]:.1f}; tables: {', '.join(tables)}")
    cold = child(tables, local, SUMMARY, cache)
    print(f"first connect + query: {cold['wall']:.2f} s, peak RSS {cold['rss_mb']:.0f} MB")
    warm = [child(tables, local, SUMMARY, cache) for _ in range(args.repeat)]
    hand = [child(tables, local, by_hand(tables), cache) for _ in range(args.repeat)]
    assert warm[0]["rows"] == hand[0]["rows"], "the view and the hand-written SQL disagree"
    for name, runs in (("warm query over mltraces.jobs", warm), ("the same by hand", hand)):
        print(f"{name}: {statistics.median(r['wall'] for r in runs):.2f} s, peak RSS "
              f"{statistics.median(r['rss_mb'] for r in runs):.0f} MB (medians of {len(runs)} "
              "processes)")
    ratio = statistics.median(r["wall"] for r in warm) / statistics.median(
        r["wall"] for r in hand)
    print(f"view / by hand: {ratio:.2f}x; load {os.getloadavg()[0]:.1f}")
    for row in warm[0]["rows"]:
        print("  " + "  ".join(row))


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s in all)")
