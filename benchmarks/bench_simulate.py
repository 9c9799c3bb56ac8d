"""Faithfulness and speed of ``mltraces.simulation`` against the Zeus artifact's simulator.

Installs the reference (PyPI ``zeus==0.16.0``, module ``zeus._legacy.simulate``)
into a throwaway virtual environment outside the repository, runs both
simulators on every (GPU, workload) cell × seeds 1–10 with η = 0.5, β = 2.0 and
the default 2·|B|·|P| recurrences, and prints per cell the mean cumulative
energy and time of each, their difference, the reference's spread across
seeds, and the speed ratio of the whole sweep (one process each). It then times
what a user feels: whole processes, ``mltraces simulate --gpu all --workload all
--seeds 1`` (warm cache) against the reference driving the same sweep from a
fresh interpreter (goal: 50x).

    python benchmarks/bench_simulate.py [--trace-dir DIR] [--venv DIR] [--seeds 1-10]

``--venv DIR`` keeps (or reuses) the reference environment in DIR; by default
it lives in a temporary folder that is deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mltraces.simulation import WORKLOADS, TraceSet, simulate  # noqa: E402

REFERENCE = "zeus==0.16.0"
TRACE_DIR = (
    REPO.parent
    / "shared/upstream/raw.githubusercontent.com/ml-energy/zeus"
    / "75a8b9398034eb9baf74ca0a830c2c31bcce52cd/examples/research_reproducibility/zeus_nsdi23/trace"
)
GPUS = ["v100", "a40", "p100", "rtx6000"]
UPSTREAM = REPO.parent / "shared/upstream"
GOAL_DIFF, GOAL_SPEEDUP, GOAL_PROCESS_SPEEDUP = 3.0, 100.0, 50.0

# Runs inside the reference's environment: drives its Simulator over the same
# sweep and prints one JSON document (per-run totals and the sweep's wall time).
DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, sys, time
    import pandas as pd
    from zeus._legacy.job import Job
    from zeus._legacy.policy.optimizer import JITPowerLimitOptimizer, PruningGTSBatchSizeOptimizer
    from zeus._legacy.simulate import Simulator

    trace_dir, gpus, workloads, seeds, eta, beta = json.loads(sys.argv[1])
    train = pd.read_csv(f"{trace_dir}/summary_train.csv")
    rows, elapsed = [], 0.0
    for gpu in gpus:
        power = pd.read_csv(f"{trace_dir}/summary_power_{gpu}.csv")
        merged = train.merge(power, how="inner")
        for name, network, optimizer, target, max_epochs, b0 in workloads:
            b0 = min(b0, int(power.loc[power.dataset == name, "batch_size"].max()))
            job = Job(name, network, optimizer, target, max_epochs, b0)
            job_rows = job.filter_df(merged)
            recurrences = 2 * job_rows.batch_size.nunique() * job_rows.power_limit.nunique()
            for seed in seeds:
                bso = PruningGTSBatchSizeOptimizer(seed=seed, verbose=False)
                plo = JITPowerLimitOptimizer(verbose=False)
                sim = Simulator(train, power, bso, plo, seed=seed, verbose=False)
                start = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    history = sim.simulate_one_job(job, recurrences, beta, eta)
                elapsed += time.perf_counter() - start
                rows.append(dict(
                    gpu=gpu, workload=name, seed=seed, runs=len(history),
                    energy_j=float(sum(h.energy for h in history)),
                    time_s=float(sum(h.time for h in history)),
                ))
    print(json.dumps(dict(rows=rows, seconds=elapsed)))
    """
)


def reference_python(venv: Path) -> Path:
    """The reference environment's interpreter, creating and filling it if needed."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating {venv} and installing {REFERENCE} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", REFERENCE], check=True)
    return python


def run_reference(python: Path, trace_dir: Path, seeds: list[int], eta: float, beta: float):
    """Per-seed totals of the reference and its simulation time in seconds."""
    workloads = [
        [w.dataset, w.network, w.optimizer, w.target_metric, w.max_epochs, w.default_batch_size]
        for w in WORKLOADS.values()
    ]
    payload = json.dumps([str(trace_dir), GPUS, workloads, seeds, eta, beta])
    done = subprocess.run(
        [str(python), "-c", DRIVER, payload], check=True, capture_output=True, text=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return pd.DataFrame(result["rows"]), result["seconds"]


def run_ours(trace_dir: Path, seeds: list[int], eta: float, beta: float, repeats: int = 3):
    """Per-seed totals of mltraces and its sweep time in seconds (median of ``repeats``).

    Timed like the reference: traces already read, simulation and per-seed totals included.
    """
    times = []
    for _ in range(repeats):
        traces = TraceSet.from_csv_dir(trace_dir)
        start = time.perf_counter()
        history = simulate(traces, GPUS, "all", "zeus", seeds, eta=eta, beta=beta).history
        totals = history.groupby(["gpu", "workload", "seed"], as_index=False, sort=False).agg(
            runs=("cost", "size"), energy_j=("energy_j", "sum"), time_s=("time_s", "sum")
        )
        times.append(time.perf_counter() - start)
    return totals, statistics.median(times)


def whole_process_ratio(python: Path, trace_dir: Path, eta: float, beta: float) -> float:
    """Seconds of the reference and of ``mltraces simulate`` as fresh processes, one seed.

    Ours runs with a warm cache (one untimed run first), as a user's second call
    would; medians of 3 runs each.
    """
    workloads = [
        [w.dataset, w.network, w.optimizer, w.target_metric, w.max_epochs, w.default_batch_size]
        for w in WORKLOADS.values()
    ]
    payload = json.dumps([str(trace_dir), GPUS, workloads, [1], eta, beta])
    reference_cmd = [str(python), "-c", DRIVER, payload]
    with tempfile.TemporaryDirectory(prefix="mltraces-bench-cache-") as cache:
        env = {**os.environ, "MLTRACES_CACHE": cache, "MLTRACES_MIRROR": str(UPSTREAM)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as in an installed package
        ours_cmd = [sys.executable, "-m", "mltraces", "-q", "simulate", "--gpu", "all",
                    "--workload", "all", "--seeds", "1", "--eta", str(eta), "--beta", str(beta),
                    "--format", "csv", "-o", str(Path(cache) / "history.csv")]
        subprocess.run(ours_cmd, check=True, env=env)  # fills the cache: the timed runs are warm
        ours = statistics.median(_wall(ours_cmd, env) for _ in range(3))
    reference = statistics.median(_wall(reference_cmd, None) for _ in range(3))
    print(f"\nwhole process, 24 cells x 1 seed: reference {reference:.2f} s, mltraces simulate "
          f"{ours:.2f} s (warm cache), ratio {reference / ours:.0f}x "
          f"(goal >= {GOAL_PROCESS_SPEEDUP:.0f}x)")
    return reference / ours


def _wall(command: list[str], env: dict[str, str] | None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def compare(ours: pd.DataFrame, ref: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: means, % differences, reference spread, identical seeds."""
    keys = ["gpu", "workload"]
    both = ours.merge(ref, on=[*keys, "seed"], suffixes=("", "_ref"))
    both["same"] = (
        (both["runs"] == both["runs_ref"])
        & ((both["energy_j"] / both["energy_j_ref"] - 1).abs() < 1e-9)
        & ((both["time_s"] / both["time_s_ref"] - 1).abs() < 1e-9)
    )
    cells = both.groupby(keys, sort=False).agg(
        energy_mj=("energy_j", "mean"),
        energy_ref_mj=("energy_j_ref", "mean"),
        energy_ref_sd=("energy_j_ref", "std"),
        time_h=("time_s", "mean"),
        time_ref_h=("time_s_ref", "mean"),
        time_ref_sd=("time_s_ref", "std"),
        identical_seeds=("same", "sum"),
        seeds=("seed", "count"),
    )
    cells["energy_diff_%"] = 100 * (cells["energy_mj"] / cells["energy_ref_mj"] - 1)
    cells["time_diff_%"] = 100 * (cells["time_h"] / cells["time_ref_h"] - 1)
    cells["ref_energy_cv_%"] = 100 * cells.pop("energy_ref_sd") / cells["energy_ref_mj"]
    cells["ref_time_cv_%"] = 100 * cells.pop("time_ref_sd") / cells["time_ref_h"]
    for column in ("energy_mj", "energy_ref_mj"):
        cells[column] /= 1e6
    for column in ("time_h", "time_ref_h"):
        cells[column] /= 3600
    return cells.reset_index()


def parse_seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", type=Path, default=TRACE_DIR)
    parser.add_argument("--venv", type=Path, help="keep/reuse the reference venv here")
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--eta", type=float, default=0.5)
    parser.add_argument("--beta", type=float, default=2.0)
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    if not (args.trace_dir / "summary_train.csv").is_file():
        print(f"no Zeus trace at {args.trace_dir}; pass --trace-dir", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="mltraces-bench-") as tmp:
        python = reference_python(args.venv or Path(tmp) / "zeus-ref")
        ref, ref_seconds = run_reference(python, args.trace_dir, seeds, args.eta, args.beta)
        process_ratio = whole_process_ratio(python, args.trace_dir, args.eta, args.beta)
    ours, our_seconds = run_ours(args.trace_dir, seeds, args.eta, args.beta)

    cells = compare(ours, ref)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(cells.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    worst = cells[["energy_diff_%", "time_diff_%"]].abs().max().max()
    speedup = ref_seconds / our_seconds
    print(
        f"\nworst |difference| {worst:.3f}% (goal < {GOAL_DIFF}%); identical seeds "
        f"{int(cells['identical_seeds'].sum())}/{int(cells['seeds'].sum())}"
    )
    print(
        f"sweep time: reference {ref_seconds:.1f} s, mltraces {our_seconds:.3f} s (median of 3), "
        f"speed-up {speedup:.0f}x (goal >= {GOAL_SPEEDUP:.0f}x)"
    )
    met = worst < GOAL_DIFF and speedup >= GOAL_SPEEDUP and process_ratio >= GOAL_PROCESS_SPEEDUP
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
