"""Benchmark: figure data and the figure run as whole processes, against same-run yardsticks.

Three measurements, each printed as a ratio against a yardstick measured in the
same run (absolute times move with the machine's load; the load is printed):

1. AcmeTrace job-figure data on a synthetic 818,327-job Seren + 62,413-job
   Kalos table (upstream format; generated once into ``benchmarks/_work``):
   a fresh ``python`` process that connects to the warm catalog and fetches
   every job figure's data, against a fresh process that does what the
   AcmeTrace notebook does (pandas ``read_csv``, then one boolean filter per
   plotted x point, at the notebook's own x points). Before timing, both sides'
   numbers are compared in this process at the SQL side's x points.
2. ``mltraces figures --output DIR`` on a warm cache (real files from
   ``../shared/upstream`` as a directory mirror), against the same command of the
   code this branch started from (``git archive`` of ``--base`` into
   ``benchmarks/_work``), and with one rendering process (``--processes 1``).
3. The share of the figure run that is data vs rendering (in-process).

Run: ``python benchmarks/bench_figures.py [--rows 818327] [--repeat 3] [--base COMMIT]``.
Uses its own cache folders under ``benchmarks/_work``, never the user's cache.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import harness
import numpy as np
import pandas as pd

UPSTREAM = harness.ROOT.parent / "shared" / "upstream"
JOB_FIGURES = (
    "duration_cdf_data",
    "gpu_count_cdf_data",
    "states_data",
    "types_data",
    "type_gpu_count_data",
    "type_duration_queue_data",
    "cpu_duration_cdf_data",
)

#: The notebook's way, as its own process: read both CSVs, then per-point filters.
PANDAS_PROCESS = r"""
import sys
import numpy as np, pandas as pd
seren, kalos = sys.argv[1:3]
cols = ["gpu_num", "type", "state", "duration", "queue", "gpu_time"]
frames = {"Seren": pd.read_csv(seren, usecols=cols), "Kalos": pd.read_csv(kalos, usecols=cols)}
def num_cdf(values, xs):
    values = values.dropna()
    return [len(values[values <= x]) / len(values) * 100 for x in xs]
def sum_cdf(values, weights, xs):
    keep = values.notna() & weights.notna()
    values, weights = values[keep], weights[keep]
    return [weights[values <= x].sum() / weights.sum() * 100 for x in xs]
out = {}
for name, data in frames.items():
    gpu, cpu = data[data.gpu_num > 0], data[data.gpu_num == 0]
    out[name, "duration"] = num_cdf(gpu.duration, [2**i for i in range(22)])
    out[name, "cpu duration"] = num_cdf(cpu.duration, [2**i for i in range(22)])
    out[name, "gpus"] = num_cdf(gpu.gpu_num, range(1025))
    out[name, "gpu time"] = sum_cdf(gpu.gpu_num, gpu.gpu_num * gpu.duration, range(1025))
    for column in ("state", "type"):
        out[name, column] = (gpu.groupby(column).size() / len(gpu),
                             gpu.groupby(column).gpu_time.sum() / gpu.gpu_time.sum())
    out[name, "boxes"] = gpu.groupby("type").gpu_num.quantile([0.05, 0.25, 0.5, 0.75, 0.95])
    for kind, part in gpu.groupby("type"):
        out[name, kind, "duration"] = num_cdf(part.duration, [2**i for i in range(22)])
        out[name, kind, "queue"] = num_cdf(part.queue, [2**i for i in range(16)])
print(len(out))
"""

#: Ours, as its own process: connect to the warm catalog, fetch every job figure's data.
SQL_PROCESS = r"""
import sys
import mltraces
from mltraces.papers.acme_nsdi24 import figures as acme
local = {"acme.seren_jobs": sys.argv[1], "acme.kalos_jobs": sys.argv[2]}
tables = ["acme.seren_jobs", "acme.kalos_jobs", "acme.cluster_summary"]
con = mltraces.connect(tables, local=local, strict=True)
names = sys.argv[3].split(",")
print(sum(len(getattr(acme, name)(con).fetchall()) for name in names))
print("pandas imported" if "pandas" in sys.modules else "no pandas")
"""


def run(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, str]:
    """Median wall time of ``repeat`` runs of a whole process, and its last output."""
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{argv[:3]} failed:\n{done.stderr[-2000:]}")
        out = done.stdout
    return float(np.median(times)), out


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores"


# --------------------------------------------------------------------------- 1. job figure data


def check_against_pandas(local: dict[str, Path]) -> None:
    """Every job figure's SQL numbers equal a pandas recomputation at the SQL x points."""
    import mltraces
    from mltraces.papers.acme_nsdi24 import figures as acme

    con = mltraces.connect([*local, "acme.cluster_summary"], local=local, strict=True)
    columns = ["gpu_num", "type", "state", "duration", "queue", "gpu_time"]
    jobs = pd.concat([pd.read_csv(local[f"acme.{c.lower()}_jobs"], usecols=columns)
                      .assign(cluster=c) for c in ("Seren", "Kalos")], ignore_index=True)
    gpu = jobs[jobs.gpu_num > 0]
    worst = 0.0
    for (cluster, measure), rows in acme.gpu_count_cdf_data(con).df().groupby(
            ["cluster", "measure"]):
        part = gpu[gpu.cluster == cluster]
        weights = part.gpu_time if measure == "GPU time" else pd.Series(1.0, index=part.index)
        keep = weights.notna()
        expected = [weights[keep][part.gpu_num[keep] <= x].sum() / weights[keep].sum()
                    for x in rows.x]
        worst = max(worst, float(np.abs(rows.cdf.to_numpy() - expected).max()))
    for (cluster, kind, metric), rows in acme.type_duration_queue_data(con).df().groupby(
            ["cluster", "type", "metric"]):
        values = gpu[(gpu.cluster == cluster) & (gpu.type == kind)][metric].dropna()
        expected = [(values <= x).mean() for x in rows.x]
        worst = max(worst, float(np.abs(rows.cdf.to_numpy() - expected).max()))
    shares = acme.types_data(con).df()
    counts = gpu.groupby(["cluster", "type"]).size()
    counts = 100 * counts / counts.groupby("cluster").transform("sum")
    for row in shares[shares.measure == "jobs"].itertuples():
        worst = max(worst, abs(row.share - counts[(row.cluster, row.type)]))
    con.close()
    print(f"SQL vs pandas at the SQL side's x points: largest difference {worst:.1e}")
    assert worst < 1e-9, worst


def job_data_ratio(rows: int, repeat: int) -> float:
    local = harness.synthetic_job_traces(rows)
    if not (UPSTREAM / "MANIFEST.tsv").is_file():
        raise SystemExit(f"needs {UPSTREAM} for cluster_summary.csv (state figures)")
    env = {**os.environ, "MLTRACES_CACHE": str(harness.WORK / "cache-figures"),
           "MLTRACES_MIRROR": str(UPSTREAM)}
    env.pop("MLTRACES_LOCAL", None)
    env.pop("MLTRACES_OFFLINE", None)
    os.environ.update({k: env[k] for k in ("MLTRACES_CACHE", "MLTRACES_MIRROR")})
    paths = [str(local["acme.seren_jobs"]), str(local["acme.kalos_jobs"])]
    ours = [sys.executable, "-c", SQL_PROCESS, *paths, ",".join(JOB_FIGURES)]
    cold, _ = run(ours, env, 1)  # converts the CSVs and caches the figure data once
    check_against_pandas({k: Path(v) for k, v in zip(local, paths, strict=True)})
    warm, out = run(ours, env, repeat)
    yardstick, _ = run([sys.executable, "-c", PANDAS_PROCESS, *paths], env, repeat)
    bare, _ = run([sys.executable, "-c", "import duckdb; duckdb.connect().sql('select 1')"],
                  env, repeat)
    ratio = yardstick / warm
    print(f"\n1. AcmeTrace job-figure data, Seren {rows:,} + Kalos 62,413 synthetic jobs, "
          f"{len(JOB_FIGURES)} figures, whole processes ({load()})")
    print(f"   mltraces, warm catalog + cached figure data   {warm:7.3f} s  "
          f"({out.split()[-2]} {out.split()[-1]}; first run {cold:.1f} s)")
    print(f"   the notebook's pandas way (read_csv + filters) {yardstick:7.3f} s")
    print(f"   python + import duckdb + connect + select 1     {bare:7.3f} s")
    print(f"   ratio {ratio:.1f}x (goal >= 25x: {'met' if ratio >= 25 else 'NOT met'})")
    return ratio


# --------------------------------------------------------------------------- 2. the figure run


def base_checkout(commit: str) -> Path:
    """The code of ``commit`` (just the package), exported once into benchmarks/_work."""
    target = harness.WORK / f"base-{commit[:12]}"
    if not (target / "mltraces").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(harness.ROOT), "archive", commit, "mltraces", "schemas"],
            capture_output=True, check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def figure_run(commit: str, repeat: int) -> None:
    if not (UPSTREAM / "MANIFEST.tsv").is_file():
        print(f"\n2. mltraces figures: skipped ({UPSTREAM} is absent)")
        return
    env = {**os.environ, "MLTRACES_MIRROR": str(UPSTREAM), "MLTRACES_OFFLINE": "",
           "MPLBACKEND": "Agg"}
    env.pop("MLTRACES_LOCAL", None)
    out = harness.WORK / "figures-out"
    command = ["-m", "mltraces.cli", "figures", "-q", "--output", str(out)]
    base_env = {**env, "MLTRACES_CACHE": str(harness.WORK / "cache-run-base"),
                "PYTHONPATH": str(base_checkout(commit))}
    new_env = {**env, "MLTRACES_CACHE": str(harness.WORK / "cache-run")}
    for e in (base_env, new_env):  # warm both caches (downloads, Parquet, simulations)
        run([sys.executable, *command], e, 1)
    before, _ = run([sys.executable, *command], base_env, repeat)
    after, _ = run([sys.executable, *command], new_env, repeat)
    serial, _ = run([sys.executable, *command, "--processes", "1"], new_env, repeat)
    print(f"\n2. mltraces figures --output DIR, warm cache, real files ({load()})")
    print(f"   before (base {commit[:7]}, serial, simulations recomputed) {before:7.2f} s")
    print(f"   after, one rendering process                            {serial:7.2f} s")
    print(f"   after, one rendering process per core                   {after:7.2f} s")
    print(f"   speed-up {before / after:.1f}x; goal <= 8 s: {'met' if after <= 8 else 'NOT met'}"
          " (absolute times scale with the load)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=818_327, help="synthetic Seren jobs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--base", default="4d04a64", help="commit to compare the figure run to")
    parser.add_argument("--skip-run", action="store_true", help="only the job-data row")
    args = parser.parse_args()
    job_data_ratio(args.rows, args.repeat)
    if not args.skip_run:
        figure_run(args.base, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
