"""ElasticFlow Figs. 9-11 against the artifact: its generator, its scheduler, its shipped logs.

Three checks, each against the artifact run here as a black box (the throwaway
venv and scheduler of ``bench_schedule.py``, plus the generator unpacked from
``../shared/reference/ElasticFlow-chronus-generator-plots.tar.gz``):

1. **Generator**: the artifact's ``generate_trace.py`` for the Fig. 10 trace, and
   for Fig. 9 and 11 traces with its unseeded ``random`` seeded from outside
   (``random.seed(K)`` before ``runpy``), must write the very CSV bytes our
   ``generate_trace(..., deadline_seed=K)`` does.
2. **Replays**: the artifact's ``scheduler.py`` on our generated CSVs (Fig. 10;
   Fig. 9 per cluster, Fig. 11 per best-effort share, per ``--seeds``): ratio,
   every round's time and cluster efficiency (``scheduling_events.csv``), and
   every logged job's start, end and JCT (``job.csv``) against ours; wall
   seconds of both.
3. **Shipped logs**: the artifact's ``plot_figure/logs/figure10`` against ours:
   final ratio, rounds and efficiency (to the logs' 9 digits), job ends.

Then the figures' numbers, ours (mean, min, max over the seeds) beside the
artifact run here (on the same seeds) and published, and what our replays of
the default seeds cost (CPU seconds summed over the replays, wall on 2 workers).

    python benchmarks/bench_generated.py [--figures 10,9,11] [--seeds 1] [--timeout 3600]
        [--policies ...] [--shares 0.1,0.5,0.9] [--no-reference] [--workers 2]

Artifact runs go through ``nice`` and run ``--workers`` at a time; one that
exceeds ``--timeout`` (or fails) is reported as such, with its error.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_schedule  # noqa: E402
import harness  # noqa: E402

from mltraces.papers.elasticflow_asplos23 import genfigs  # noqa: E402
from mltraces.papers.elasticflow_asplos23.generator import TraceSpec, generate_trace  # noqa: E402
from mltraces.scheduling import ClusterSpec, load_profiles, run_case, sweep  # noqa: E402
from mltraces.scheduling.api import Case  # noqa: E402

WORK = bench_schedule.WORK
GENERATOR_TAR = bench_schedule.SHARED / "reference" / "ElasticFlow-chronus-generator-plots.tar.gz"
#: our policy name -> the artifact's --schedule
ARTIFACT = {**bench_schedule.ARTIFACT_NAMES, "edf-admission": "edf-accessctrl",
            "edf-elastic": "ef"}


# -- the artifact's files ---------------------------------------------------------------------
def unpack_generator() -> Path:
    """The artifact's generator and plot folder (unpacked once beside the scheduler)."""
    return harness.unpacked_once(GENERATOR_TAR, WORK / "generator",
                                 "*/ElasticFlow/trace_generator")


def artifact_trace(python: Path, generator: Path, scheduler: Path, spec: TraceSpec,
                   out: Path) -> bytes:
    """The artifact generator's CSV for ``spec`` (its module ``random`` seeded from outside
    with the deadline seed, unless the deadlines cannot vary)."""
    args = [f"--num_jobs={spec.num_jobs}", f"--lam={spec.lam:g}", f"--seed={spec.seed}",
            f"--min_ddl={spec.min_ddl:g}", f"--max_ddl={spec.max_ddl:g}",
            f"--best_effort_percentage={spec.best_effort:g}", f"--output_file={out}",
            f"--throughputs_dir={scheduler / 'throughputs_A100'}"]
    seed = spec.seed + 4 if spec.deadline_seed is None else spec.deadline_seed
    code = textwrap.dedent(f"""
        import random, runpy, sys
        random.seed({seed})
        sys.argv = ["generate_trace.py", *{args!r}]
        runpy.run_path("generate_trace.py", run_name="__main__")
    """)
    subprocess.run([str(python), "-c", code], cwd=generator, check=True,
                   stdout=subprocess.DEVNULL)
    return out.read_bytes()


def check_generator(python, generator, scheduler, profiles) -> None:
    specs = [genfigs.trace_spec("fig10"), genfigs.trace_spec("fig9", deadline_seed=7),
             genfigs.trace_spec("fig11", best_effort=0.3, deadline_seed=11)]
    print("generator: the artifact's generate_trace.py against ours, byte for byte")
    for spec in specs:
        ours = generate_trace(profiles, spec).to_csv(index=False, lineterminator="\n").encode()
        theirs = artifact_trace(python, generator, scheduler, spec, WORK / "gen-check.csv")
        print(f"  {spec.label:58} {'equal' if ours == theirs else 'DIFFERENT'} "
              f"sha256 {hashlib.sha256(ours).hexdigest()[:16]}")


# -- one artifact run ---------------------------------------------------------------------------
def run_artifact(python: Path, scheduler: Path, trace: Path, cluster: str, policy: str,
                 slot: int, log: Path, timeout: float) -> dict:
    """Ratio, round log, job log and wall seconds of one artifact run (or its failure)."""
    schedule = ARTIFACT[policy]
    log.mkdir(parents=True, exist_ok=True)
    command = ["nice", "-n", "10", str(python), "scheduler.py",
               f"--cluster_spec=cluster_specs/{cluster}.csv", "--print",
               f"--scheme={'gandiva' if schedule == 'gandiva' else 'elastic'}",
               f"--trace_file={trace}", f"--schedule={schedule}", f"--log_path={log}",
               "--simulation=True", f"--scheduling_slot={slot}", "--gpu_type=A100"]
    start = time.perf_counter()
    try:
        with open(log / "stdout.txt", "wb") as out, open(log / "stderr.txt", "wb") as err:
            subprocess.run(command, cwd=scheduler, stdout=out, stderr=err, timeout=timeout,
                           check=True)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    except subprocess.CalledProcessError:
        lines = (log / "stderr.txt").read_text(errors="replace").strip().splitlines()
        return {"error": lines[-1] if lines else "failed"}
    return {"seconds": time.perf_counter() - start,
            "ratio": float(pd.read_csv(log / "final_result.csv")["ddl_satis_ratio"].iloc[-1]),
            "rounds": pd.read_csv(log / "scheduling_events.csv", usecols=["time", "ce"]),
            "jobs": pd.read_csv(log / "job.csv", dtype={"job_id": str})}


def compare(outcome, frame, art: dict) -> dict:
    """How our replay compares with the artifact's logs."""
    if "error" in art:
        return {"artifact": art["error"]}
    rounds = art["rounds"]
    same_rounds = (len(rounds) == len(outcome.rounds)
                   and np.array_equal(rounds["time"].to_numpy(float), np.array(outcome.rounds))
                   and np.allclose(rounds["ce"], outcome.efficiency, rtol=0, atol=1e-12))
    ours = frame.set_index("job_id")
    logged = art["jobs"].set_index("job_id")
    finish = "logged_jct"
    jct = np.trunc(ours[finish].reindex(logged.index))
    starts = logged["start_time"] < 1e18  # Themis logs no start
    return {"artifact": f"{art['ratio']:.4f}", "equal ratio": art["ratio"] == outcome.ratio,
            "rounds": f"{len(outcome.rounds)}/{len(rounds)}", "same rounds": same_rounds,
            "jobs": len(logged), "JCT≠": int((jct != logged["JCT"]).sum()),
            "start≠": int((ours["start_time"].reindex(logged.index)[starts]
                          != logged["start_time"][starts]).sum()),
            "artifact s": round(art["seconds"], 1)}


def generated_case(profiles, spec: TraceSpec, cluster: str, slot: int, label: str) -> Case:
    """A case whose trace is also written where the artifact reads it."""
    frame = generate_trace(profiles, spec)
    path = WORK / "gen" / f"{label}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return Case.build(label, frame, ClusterSpec.from_name(cluster), profiles, slot=slot)


# -- the figures ------------------------------------------------------------------------------
def fig10(args, python, scheduler, profiles, plots: Path | None) -> list[dict]:
    print("\nFig. 10: the deterministic 100-job trace on n16g8")
    case = generated_case(profiles, genfigs.trace_spec("fig10"), "n16g8", 240, "fig10")
    policies = [p for p in args.policies if p in genfigs.setup("fig10")["policies"]]
    rows = run_cases(args, python, scheduler, case, "fig10", policies)
    if plots is not None:
        shipped(case, policies, plots / "logs" / "figure10")
    return rows


def run_cases(args, python, scheduler, case, label, policies) -> list[dict]:
    csv = WORK / "gen" / f"{label}.csv"
    rows = []
    with ThreadPoolExecutor(args.workers) as pool:
        futures = {p: pool.submit(run_artifact, python, scheduler, csv, case.cluster.name, p,
                                  int(case.slot), WORK / "logs-generated" / f"{label}-{p}",
                                  args.timeout)
                   for p in policies if python is not None}
        for policy in policies:
            start = time.perf_counter()
            outcome = run_case(case, policy)
            row = {"setup": label, "policy": policy, "ours": round(outcome.ratio, 4),
                   "ours s": round(time.perf_counter() - start, 3)}
            if policy in futures:
                row.update(compare(outcome, outcome.job_frame(), futures[policy].result()))
            rows.append(row)
            print("  " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    return rows


def shipped(case: Case, policies: list[str], logs: Path) -> None:
    """Ours against the logs the artifact ships for Fig. 10."""
    print("  against the shipped logs (plot_figure/logs/figure10):")
    for policy in policies:
        folder = logs / ARTIFACT[policy]
        if not folder.exists():
            continue
        outcome = run_case(case, policy)
        ratio = float(pd.read_csv(folder / "final_result.csv")["ddl_satis_ratio"].iloc[-1])
        rounds = pd.read_csv(folder / "scheduling_events.csv", usecols=["time", "ce"])
        same = (len(rounds) == len(outcome.rounds)
                and np.array_equal(rounds["time"].to_numpy(float), np.array(outcome.rounds))
                and np.allclose(rounds["ce"], outcome.efficiency, rtol=0, atol=1e-9))
        logged = pd.read_csv(folder / "job.csv", dtype={"job_id": str}).set_index("job_id")
        ours = outcome.job_frame().set_index("job_id")
        ends = int((np.trunc(ours["logged_jct"]).reindex(logged.index) != logged["JCT"]).sum())
        print(f"    {policy:12} final ratio shipped {ratio:.2f} ours {outcome.ratio:.2f}; rounds "
              f"{len(rounds)} shipped, {len(outcome.rounds)} ours, "
              f"{'equal to 1e-9' if same else 'DIFFERENT'}; JCT differs for {ends} of "
              f"{len(logged)} jobs")


def fig9(args, python, scheduler, profiles) -> list[dict]:
    fig = genfigs.setup("fig9")
    policies = [p for p in args.policies if p in fig["policies"]]
    rows = []
    for seed in args.seeds:
        spec = genfigs.trace_spec("fig9", deadline_seed=seed)
        for cluster in fig["clusters"]:
            label = f"fig9-seed{seed}-{cluster}"
            print(f"\nFig. 9: seed {seed} on {cluster}")
            case = generated_case(profiles, spec, cluster, fig["slot"], label)
            for row in run_cases(args, python, scheduler, case, label, policies):
                rows.append({**row, "figure": 9, "seed": seed, "cluster": cluster})
    return rows


def fig11(args, python, scheduler, profiles) -> list[dict]:
    fig = genfigs.setup("fig11")
    policies = [p for p in args.policies if p in fig["policies"]]
    rows = []
    for seed in args.seeds:
        for share in args.shares or fig["best_effort"]:
            spec = genfigs.trace_spec("fig11", best_effort=share, deadline_seed=seed)
            label = f"fig11-seed{seed}-share{share}"
            print(f"\nFig. 11: seed {seed}, {share:.0%} best-effort")
            case = generated_case(profiles, spec, fig["cluster"], fig["slot"], label)
            for row in run_cases(args, python, scheduler, case, label, policies):
                rows.append({**row, "figure": 11, "seed": seed, "share": share})
    return rows


def cost(profiles, workers: int) -> None:
    """What the figures' default seeds cost us: the sweeps the main job runs."""
    clusters = {n: ClusterSpec.from_name(n) for n in genfigs.setup("fig9")["clusters"]}
    for name, cases, policies in (
        ("Fig. 9", genfigs.fig9_cases(profiles, clusters),
         genfigs.replayed(genfigs.setup("fig9")["policies"])),
        ("Fig. 11", genfigs.fig11_cases(profiles, ClusterSpec.from_name("n8g8")),
         genfigs.replayed(genfigs.setup("fig11")["policies"])),
    ):
        start = time.perf_counter()
        result = sweep(cases, policies, max_workers=workers)
        wall = time.perf_counter() - start
        cpu = result.summary.groupby("policy")["cpu_seconds"].sum()
        print(f"{name}: {len(genfigs.SEEDS)} seeds, {len(result.outcomes)} replays, "
              f"{wall:.1f} s wall on {workers} workers, {cpu.sum():.1f} CPU-s "
              f"({', '.join(f'{p} {s:.1f}' for p, s in cpu.items())})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--figures", default="10,9,11")
    parser.add_argument("--seeds", default="1", help="deadline seeds of Figs. 9 and 11: 1-3 or 1,4")
    parser.add_argument("--shares", help="Fig. 11's best-effort shares (default: all nine)")
    parser.add_argument("--policies", default="edf,gandiva,tiresias,themis,elasticflow,"
                        "edf-admission,edf-elastic")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-reference", action="store_true", help="ours only")
    parser.add_argument("--no-cost", action="store_true", help="skip timing the default sweeps")
    args = parser.parse_args(argv)
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if "-" in args.seeds:
        low, high = args.seeds.split("-")
        args.seeds = list(range(int(low), int(high) + 1))
    else:
        args.seeds = [int(s) for s in args.seeds.split(",")]
    args.shares = [float(s) for s in args.shares.split(",")] if args.shares else None
    figures = [f.strip() for f in args.figures.split(",")]
    profiles = load_profiles(bench_schedule.ARTIFACT / "scheduler" / "throughputs_A100")
    python = scheduler = plots = None
    if not args.no_reference:
        python, scheduler = bench_schedule.prepare_reference({})
        generator = unpack_generator()
        plots = generator.parents[1] / "plot_figure"
        check_generator(python, generator, scheduler, profiles)
    rows = []
    if "10" in figures:
        rows += fig10(args, python, scheduler, profiles, plots)
    if "9" in figures:
        rows += fig9(args, python, scheduler, profiles)
    if "11" in figures:
        rows += fig11(args, python, scheduler, profiles)
    if rows:
        table = pd.DataFrame(rows)
        out = WORK / "bench_generated.csv"
        table.to_csv(out, index=False)
        with pd.option_context("display.width", 200, "display.max_rows", 500):
            print(f"\nall replays ({out}):")
            print(table.to_string(index=False))
    if not args.no_cost:
        print()
        cost(profiles, args.workers)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
