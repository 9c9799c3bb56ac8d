"""Per-job output of the compiled cores (ElasticFlow, Gandiva, and the policies built around
ElasticFlow's planner) on every check case, recorded and compared bit for bit.

The check cases are every setup the tests, the figures and ``bench_schedule.py``
replay ElasticFlow or Gandiva on, and a few synthetic ones that reach the
branches the real traces do not (congestion, admission control declining,
bursts, over-full node sets):

* ElasticFlow, exact and ``repricing="chosen"``: the eleven Fig. 8(b) traces on
  their clusters, the 195-job testbed trace on 16 × 8 GPUs (Fig. 7), and four
  synthetic traces from ``tests/test_scheduling.py`` (32 cases);
* Gandiva: the same eleven and the testbed trace, ITP clusters 01, 02 and 10
  again on a congested 16 × 8 GPUs (long queues, over-full node sets; the
  other clusters take minutes there), and three synthetic traces (18 cases);
* ``generated``: ElasticFlow's generated traces (Figs. 9-11, 240 s slots) with the
  deadline seed 1: Fig. 9's on 64, 128 and 256 GPUs under EDF, EDF + admission
  control, EDF + elastic scaling (which call the planner from Python) and
  ElasticFlow; Fig. 10's under its replayed policies; Fig. 11's nine
  best-effort shares under its (62 cases; 72 with Chronus, which runs on no core).

Each case's job table (with ``logged_jct``), GPU series and round log (each
round's time and cluster efficiency) are written as Parquet, so two records
(say, one from the base commit and one from a change, or one compiled and one
run with ``MLTRACES_INTERPRETED=1``) compare exactly, NaN for NaN::

    python benchmarks/check_cores.py record /tmp/cores-base
        [--only elasticflow,gandiva,generated] [--skip cluster04,cluster07] [--workers 2]
    python benchmarks/check_cores.py compare /tmp/cores-base /tmp/cores-new

Reads the real files through the catalog (``MLTRACES_MIRROR=../shared/upstream``
works offline). The tests' synthetic traces come from the ``tests/`` folder of
the checkout whose ``mltraces`` is imported.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

import mltraces

REPO = Path(mltraces.__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

CONGESTED = "n16g8"  # ITP clusters again on 128 GPUs: long queues, busy node sets
CONGESTED_TRACES = ("cluster01", "cluster02", "cluster10")
SEED = 1  # the generated traces' deadline seed (the artifact's are unseeded)


def synthetic_cases() -> dict[str, tuple]:
    """The synthetic traces of the tests: (jobs, cluster, profiles) by label."""
    from test_scheduling import WIDE, burst_trace, crowded_trace, mixed_trace, profiles

    sublinear = profiles({1: 1.0, 2: 1.8, 4: 3.2, 8: 5.6})
    return {
        "mixed40": (mixed_trace(40, 3), "n2g8", profiles()),
        "burst80": (burst_trace(), "n8g8", profiles()),
        "idle60": (mixed_trace(60, 5), "n8g8", sublinear),
        "crowded": (crowded_trace(), "n4g8", profiles(WIDE)),
    }


def real_cases() -> tuple[list, list]:
    """(the Fig. 8(b) cases and the testbed, the ITP clusters on the congested cluster)."""
    from mltraces.papers.elasticflow_asplos23 import fig8b
    from mltraces.workloads import cluster as inputs

    con = mltraces.connect([*fig8b.tables(), "itp.testbed_jobs"])
    cases = fig8b.catalog_cases(con)
    cases.append(inputs.case(con, "itp/testbed", "n16g8", label="testbed"))
    congested = [inputs.case(con, f"itp/{name}", CONGESTED, label=f"{name}-{CONGESTED}")
                 for name in CONGESTED_TRACES]
    return cases, congested


def generated_cases() -> list[tuple[str, object, str]]:
    """(name, case, policy) for the Figs. 9-11 traces of deadline seed :data:`SEED`."""
    from mltraces.papers.elasticflow_asplos23 import genfigs
    from mltraces.workloads import cluster as inputs

    con = mltraces.connect(["elasticflow.cluster_specs", "elasticflow.throughputs"])
    profiles = inputs.load_profiles(con, "A100")
    fig9 = genfigs.setup("fig9")
    clusters = {name: inputs.load_cluster(con, name) for name in fig9["clusters"]}
    out = []
    for case in genfigs.fig9_cases(profiles, clusters, (SEED,)):
        for policy in genfigs.replayed(fig9["policies"]):
            out.append((f"fig9-{case.cluster.name}-{policy}", case, policy))
    fig10 = genfigs.fig10_case(profiles, inputs.load_cluster(con, genfigs.setup("fig10")[
        "cluster"]))  # fmt: skip
    for policy in genfigs.replayed(genfigs.setup("fig10")["policies"]):
        out.append((f"fig10-{policy}", fig10, policy))
    fig11 = genfigs.setup("fig11")
    for case in genfigs.fig11_cases(profiles, inputs.load_cluster(con, fig11["cluster"]),
                                    (SEED,)):
        share = case.trace.split(",")[0].split("=")[1]
        for policy in genfigs.replayed(fig11["policies"]):
            out.append((f"fig11-{share}-{policy}", case, policy))
    return out


def check_cases(only: set[str]) -> list[tuple[str, object, object]]:
    """(name, case, policy) for every check case of the groups in ``only``."""
    from mltraces.scheduling import Case, ElasticFlow, Gandiva

    out: list[tuple[str, object, object]] = []
    if only & {"elasticflow", "gandiva"}:
        fig8b, congested = real_cases()
        synthetic = {label: Case.build(label, *spec) for label, spec in synthetic_cases().items()}
    if "elasticflow" in only:
        for mode in ("all", "chosen"):
            for case in [*fig8b, *(synthetic[k] for k in ("mixed40", "burst80", "idle60",
                                                          "crowded"))]:  # fmt: skip
                out.append((f"elasticflow-{mode}-{case.trace}", case, ElasticFlow(mode)))
    if "gandiva" in only:
        for case in [*fig8b, *congested, *(synthetic[k] for k in ("mixed40", "idle60",
                                                                   "crowded"))]:  # fmt: skip
            out.append((f"gandiva-{case.trace}", case, Gandiva()))
    if "generated" in only:
        out.extend(generated_cases())
    return out


def replay(name: str, case, policy, folder: Path) -> tuple[str, float, float]:
    """Run one case, write its jobs, GPU series and round log; its name, replay seconds
    and CPU seconds (the fairer number on a shared machine)."""
    from mltraces.scheduling import run_case

    outcome = run_case(case, policy)
    outcome.job_frame().to_parquet(folder / f"{name}.jobs.parquet")
    outcome.utilisation_frame().to_parquet(folder / f"{name}.gpus.parquet")
    outcome.efficiency_frame().to_parquet(folder / f"{name}.rounds.parquet")
    return name, outcome.seconds, outcome.cpu_seconds


def record(folder: Path, only: set[str], skip: set[str], workers: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cases = [c for c in check_cases(only) if not any(s in c[0] for s in skip)]
    print(f"{len(cases)} cases -> {folder}", flush=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(replay, name, case, policy, folder) for name, case, policy in cases]
        for future in futures:
            name, seconds, cpu = future.result()
            print(f"  {name:<40} {seconds:8.3f} s  {cpu:8.3f} CPU-s", flush=True)
    print(f"recorded {len(cases)} cases in {time.perf_counter() - start:.1f} s wall")


def compare(first: Path, second: Path) -> int:
    """Compare every case both folders hold; the number that differ."""
    names = sorted({p.name for p in first.glob("*.parquet")} & {p.name for p in second.glob(
        "*.parquet")})  # fmt: skip
    only = sorted({p.name for p in first.glob("*.parquet")} ^ {p.name for p in second.glob(
        "*.parquet")})  # fmt: skip
    bad = 0
    for name in names:
        a, b = pd.read_parquet(first / name), pd.read_parquet(second / name)
        if "seconds" in a:
            a, b = a.drop(columns="seconds"), b.drop(columns="seconds")
        if not a.equals(b):
            bad += 1
            print(f"DIFFERS  {name}")
    cases = {n.rsplit(".", 2)[0] for n in names}
    print(f"{len(cases)} cases ({len(names)} tables) compared: {bad} tables differ; "
          f"{len(only)} tables in only one folder")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("folder", type=Path)
    rec.add_argument("--only", default="elasticflow,gandiva,generated")
    rec.add_argument("--skip", default="", help="comma-separated substrings of case names")
    rec.add_argument("--workers", type=int, default=2)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("first", type=Path)
    cmp_.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.folder, set(args.only.split(",")), set(filter(None, args.skip.split(","))),
               args.workers)
    else:
        sys.exit(1 if compare(args.first, args.second) else 0)


if __name__ == "__main__":
    main()
