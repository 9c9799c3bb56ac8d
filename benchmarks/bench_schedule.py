"""Faithfulness and speed of ``mltraces.scheduling`` against the ElasticFlow artifact's scheduler.

Builds a throwaway virtual environment under ``benchmarks/_work/`` with the
reference's dependencies, unpacks ``../shared/reference/ElasticFlow-scheduler.tar.gz``
there, regenerates its gRPC stubs (``make rpc``), copies the trace CSVs in,
and runs the reference and ours on the same inputs. Prints, per (trace,
policy): the reference's deadline satisfactory ratio, ours, the difference,
the published value, how many jobs' outcomes (deadline met or not) differ,
both wall times and their ratio. Then times the whole Fig. 8(b) sweep of ours
(11 traces × 5 policies) on a process pool.

    python benchmarks/bench_schedule.py [--traces cluster10,philly_103959]
        [--policies edf,gandiva,tiresias,themis,elasticflow] [--timeout 1500]
        [--repeat 5] [--no-reference] [--no-sweep] [--workers 2]
        [--ef-repricing all|chosen] [--shift SECONDS] [--write-expected PATH]

``--shift`` moves every submission time and deadline of the traces by that many
seconds, for the artifact and ours alike: both give the unshifted result for
any shift by whole minutes, and Gandiva another one for other shifts (its time
slices rotate on rounds at whole minutes of the trace's clock; cluster10 with
``--shift 27``: 88 deadlines met instead of 86, in the artifact and here).

``--traces elasticVpollux_e`` is Fig. 8(a)'s setup (the Pollux trace on n16g4
with the T4 profiles, as the artifact's ``run_fig8a.sh``); ``--write-expected
tests/expected/elasticflow_fig8a_artifact.json`` stores what the artifact's runs
gave (ratio and per-job outcomes), which ``tests/test_scheduling_upstream.py``
holds our replays to.

Reference seconds are the wall time of one ``scheduler.py`` process (including
its imports, about 2.5 s of it). Ours are timed in this process with the
inputs loaded: "first" is the first replay of a policy (it includes importing
the compiled core, milliseconds), "ours" the median of ``--repeat`` replays
after it, which is what every further replay of a sweep costs. Both ratios are printed. CPU seconds
are printed too (the reference's from the OS's child accounting): on a
machine shared with other work they are the fairer comparison.
A reference run that exceeds ``--timeout`` is reported as "did not finish".
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness  # noqa: E402

from mltraces.papers.elasticflow_asplos23.fig8a import PUBLISHED_FIG8A  # noqa: E402
from mltraces.scheduling import (  # noqa: E402
    FIG8B_CLUSTERS,
    FIG8B_POLICIES,
    FIG8B_TRACES,
    PUBLISHED_FIG8B,
    Case,
    ClusterSpec,
    ElasticFlow,
    ScheduleResult,
    fig8b_cases,
    load_profiles,
    run_case,
)
from mltraces.scheduling.api import expected_cost  # noqa: E402

WORK = REPO / "benchmarks" / "_work" / "schedule"
SHARED = REPO.parent / "shared"
REFERENCE_TAR = SHARED / "reference" / "ElasticFlow-scheduler.tar.gz"
ARTIFACT = (
    SHARED
    / "upstream/raw.githubusercontent.com/gudiandian/ElasticFlow"
    / "b3f5ea4c9fa92107b0e0e2ba7c06900f4a0ec03a/ElasticFlow"
)
ITP_TAR = (
    SHARED
    / "upstream/raw.githubusercontent.com/microsoft/elasticflow-traces"
    / "277ed24d0e908c31a1c98145819e2e3853d8ac00/data/elasticflow-traces.tar.gz"
)
REFERENCE_DEPS = [
    "numpy",
    "pandas",
    "grpcio",
    "grpcio-tools",
    "protobuf",
    "psutil",
    "six",
    "pyyaml",
    "cvxpy",
    "ecos",
]
#: our policy name -> the artifact's --schedule
ARTIFACT_NAMES = {
    "edf": "edf",
    "gandiva": "gandiva",
    "tiresias": "dlas-gpu",
    "themis": "themis",
    "elasticflow": "ef-accessctrl",
}
# the testbed trace on 16 × 8 GPUs; Fig. 8(a): the Pollux trace on 16 × 4 T4 GPUs
CLUSTERS = {**FIG8B_CLUSTERS, "195job": "n16g8", "elasticVpollux_e": "n16g4"}
#: traces the artifact ships itself (the others come from the ITP tarball)
ARTIFACT_TRACES = ("philly_103959", "elasticVpollux_e")
#: the profiles a trace runs on (run_fig8a.sh: --gpu_type=T4), else A100
GPU_TYPES = {"elasticVpollux_e": "T4"}


def shifted(frame: pd.DataFrame, seconds: int) -> pd.DataFrame:
    """Every submission time and deadline ``seconds`` later (ITP or the artifact's columns)."""
    moved = frame.copy()
    for column in ("submission_time", "deadline", "submit_time", "ddl"):
        if column in moved:
            moved[column] += seconds
    return moved


def read_traces(names: list[str], shift: int = 0) -> dict[str, pd.DataFrame]:
    """Job tables straight from the upstream files (ITP tarball, the artifact's own CSVs),
    times moved by ``shift`` seconds."""
    traces = {}
    with tarfile.open(ITP_TAR) as archive:
        for member in archive.getmembers():
            stem = Path(member.name).stem
            if stem in names:
                traces[stem] = pd.read_csv(
                    io.BytesIO(archive.extractfile(member).read()), dtype={"job_id": str}
                )
    for name in set(ARTIFACT_TRACES) & set(names):
        traces[name] = pd.read_csv(
            ARTIFACT / "traces_for_ElasticFlow" / f"{name}.csv", dtype={"job_id": str}
        )
    missing = sorted(set(names) - set(traces))
    if missing:
        raise SystemExit(f"unknown traces {missing}; choose from {', '.join(CLUSTERS)}")
    return {name: shifted(frame, shift) for name, frame in traces.items()} if shift else traces


# -- the reference -------------------------------------------------------------------------
def prepare_reference(traces: dict[str, pd.DataFrame], shift: int = 0) -> tuple[Path, Path]:
    """The reference's venv python and its scheduler folder (built once, reused); the
    traces are copied in byte for byte (written from ``traces`` when shifted)."""
    venv = WORK / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"building the reference environment in {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *REFERENCE_DEPS], check=True
        )
    root = WORK / "reference"
    fresh = not any(root.glob("*/ElasticFlow/scheduler")) if root.exists() else True
    scheduler = harness.unpacked_once(REFERENCE_TAR, root, "*/ElasticFlow/scheduler")
    if fresh:
        env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
        subprocess.run(["make", "rpc"], cwd=scheduler, env=env, check=True, capture_output=True)
    folder = scheduler.parent / "traces_for_ElasticFlow"
    if shift:
        for name, frame in traces.items():
            frame.to_csv(folder / f"{name}.csv", index=False)
        return python, scheduler
    with tarfile.open(ITP_TAR) as archive:  # byte-for-byte copies of the upstream CSVs
        for member in archive.getmembers():
            if Path(member.name).stem in traces:
                (folder / Path(member.name).name).write_bytes(archive.extractfile(member).read())
    for name in set(ARTIFACT_TRACES) & set(traces):
        shutil.copyfile(ARTIFACT / "traces_for_ElasticFlow" / f"{name}.csv", folder / f"{name}.csv")
    return python, scheduler


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_reference(
    python: Path, scheduler: Path, trace: str, policy: str, timeout: float
) -> tuple[float | None, float, float, pd.DataFrame | None]:
    """(ratio or None if it did not finish, wall s, CPU s, per-job log) of one artifact run."""
    schedule = ARTIFACT_NAMES[policy]
    log = WORK / "logs" / f"{schedule}_{trace}"
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir(parents=True)
    command = [
        str(python), "scheduler.py", f"--cluster_spec=cluster_specs/{CLUSTERS[trace]}.csv",
        "--print", f"--scheme={'gandiva' if schedule == 'gandiva' else 'elastic'}",
        f"--trace_file=../traces_for_ElasticFlow/{trace}.csv", f"--schedule={schedule}",
        f"--log_path={log}", "--simulation=True", "--scheduling_slot=60",
        f"--gpu_type={GPU_TYPES.get(trace, 'A100')}",
    ]  # fmt: skip
    start, cpu = time.perf_counter(), children_cpu()
    try:
        with open(log / "stdout.txt", "wb") as out:
            subprocess.run(command, cwd=scheduler, stdout=out, stderr=subprocess.STDOUT,
                           timeout=timeout, check=True)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, children_cpu() - cpu, None
    seconds, cpu = time.perf_counter() - start, children_cpu() - cpu
    ratio = float(pd.read_csv(log / "final_result.csv")["ddl_satis_ratio"].iloc[-1])
    jobs = pd.read_csv(log / "job.csv", dtype={"job_id": str})
    return ratio, seconds, cpu, jobs


def reference_outcomes(reference: pd.DataFrame, policy: str) -> list[str]:
    """Job ids the artifact's log shows meeting their deadline; for ElasticFlow, the jobs it
    admitted (its log holds only those, and ends rounded to the slot grid, not its test)."""
    if policy == "elasticflow":
        return sorted(reference["job_id"], key=_job_order)
    met = reference[reference["end_time"] <= reference["ddl"]]
    return sorted(met["job_id"], key=_job_order)


def our_outcomes(ours: pd.DataFrame, policy: str) -> list[str]:
    """The same per-job outcome from our replay (see :func:`reference_outcomes`)."""
    chosen = ours["admitted"] if policy == "elasticflow" else ours["deadline_met"]
    return sorted(ours.loc[chosen, "job_id"], key=_job_order)


def _job_order(job_id: str) -> tuple:
    return (0, int(job_id), "") if job_id.isdigit() else (1, 0, job_id)


def job_differences(ours: pd.DataFrame, reference: pd.DataFrame | None, policy: str) -> str:
    """How many jobs' outcomes differ (deadline met; for ElasticFlow: admitted)."""
    if reference is None:
        return "-"
    theirs = set(reference_outcomes(reference, policy))
    return str(len(theirs ^ set(our_outcomes(ours, policy))))


# -- ours ------------------------------------------------------------------------------------
def case_for(trace: str, frame: pd.DataFrame, profiles) -> Case:
    spec = ClusterSpec.from_csv(ARTIFACT / "scheduler" / "cluster_specs" / f"{CLUSTERS[trace]}.csv")
    return Case.build(trace, frame, spec, profiles)


def ours(policy: str, args):
    """Our policy object for a name (ElasticFlow with the chosen repricing)."""
    return ElasticFlow(repricing=args.ef_repricing) if policy == "elasticflow" else policy


def timed(case: Case, policy) -> tuple:
    """(outcome, wall s, CPU s) of one replay in this process."""
    start, cpu = time.perf_counter(), time.process_time()
    outcome = run_case(case, policy)
    return outcome, time.perf_counter() - start, time.process_time() - cpu


def check_repeatable(first, again: list, trace: str, policy: str) -> None:
    """Every repeat must give the first replay's per-job table (a replay keeps no state)."""
    frame = first.job_frame()
    for outcome in again:
        if not outcome.job_frame().equals(frame):
            raise SystemExit(f"{trace} {policy}: a repeated replay differs from the first")


def compare(args, traces, profiles: dict) -> dict:
    """Ours against the artifact per (trace, policy); returns what the artifact gave."""
    expected: dict = {}
    python = scheduler = None
    if not args.no_reference:
        python, scheduler = prepare_reference(traces, args.shift)
    header = (
        f"{'trace':14} {'policy':11} {'reference':>9} {'ours':>7} {'diff':>7} "
        f"{'published':>9} {'jobs≠':>5} {'ref s':>7} {'ours s':>7} {'ratio':>6} "
        f"{'ref cpu':>7} {'ours cpu':>8} {'ratio':>6} {'first cpu':>9} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for trace in args.traces:
        case = case_for(trace, traces[trace], profiles[GPU_TYPES.get(trace, "A100")])
        for policy in args.policies:
            outcome, _, first_cpu = timed(case, ours(policy, args))
            repeats = [timed(case, ours(policy, args)) for _ in range(args.repeat)]
            check_repeatable(outcome, [again for again, _, _ in repeats], trace, policy)
            ours_s = statistics.median(s for _, s, _ in repeats)
            ours_cpu = statistics.median(c for _, _, c in repeats)
            ref = ref_s = ref_cpu = jobs = None
            if python is not None:
                ref, ref_s, ref_cpu, jobs = run_reference(
                    python, scheduler, trace, policy, args.timeout
                )
            published = (PUBLISHED_FIG8A.get(policy) if trace == "elasticVpollux_e"
                         else PUBLISHED_FIG8B.get(policy, {}).get(trace))
            differ = job_differences(outcome.job_frame(), jobs, policy)
            ref_text = f"{ref:9.4f}" if ref is not None else f"{'DNF' if ref_s else '-':>9}"
            diff = f"{outcome.ratio - ref:+7.4f}" if ref is not None else f"{'-':>7}"
            pub = f"{published:9.3f}" if published is not None else f"{'-':>9}"
            ref_time = f"{ref_s:7.1f}" if ref_s else f"{'-':>7}"
            speed = f"{ref_s / ours_s:5.0f}×" if ref_s else f"{'-':>6}"
            ref_cpu_text = f"{ref_cpu:7.1f}" if ref_cpu else f"{'-':>7}"
            speed_cpu = f"{ref_cpu / ours_cpu:5.0f}×" if ref_cpu else f"{'-':>6}"
            speed_first = f"{ref_cpu / first_cpu:5.0f}×" if ref_cpu else f"{'-':>6}"
            print(
                f"{trace:14} {policy:11} {ref_text} {outcome.ratio:7.4f} {diff} {pub} "
                f"{differ:>5} {ref_time} {ours_s:7.3f} {speed} {ref_cpu_text} "
                f"{ours_cpu:8.3f} {speed_cpu} {first_cpu:9.3f} {speed_first}",
                flush=True,
            )
            if ref is None and ref_s:
                print(f"{'':14} {policy:11} reference did not finish in {args.timeout:.0f} s")
            if ref is not None:
                expected.setdefault(trace, {})[policy] = {
                    "ratio": ref, "jobs": len(traces[trace]),
                    "outcomes": reference_outcomes(jobs, policy), "seconds": round(ref_s, 1),
                }  # fmt: skip
    return expected


def write_expected(path: Path, expected: dict) -> None:
    """The artifact's results as JSON (temp + rename), for the upstream tests to hold ours to.

    Entries already in the file for other (trace, policy) pairs are kept, so a slow
    policy (Themis: tens of minutes) can be run on its own."""
    results = json.loads(path.read_text())["results"] if path.exists() else {}
    for trace, policies in expected.items():
        results.setdefault(trace, {}).update(policies)
    document = {
        "how": "python benchmarks/bench_schedule.py --traces elasticVpollux_e --no-sweep "
        "--write-expected tests/expected/elasticflow_fig8a_artifact.json: the artifact's "
        "scheduler.py (gudiandian/ElasticFlow@b3f5ea4c) run as run_fig8a.sh runs it "
        "(--cluster_spec=cluster_specs/n16g4.csv --simulation=True --scheduling_slot=60 "
        "--gpu_type=T4); ratio = LOG/final_result.csv ddl_satis_ratio; outcomes = job ids "
        "with end_time <= ddl in LOG/job.csv (ElasticFlow: the job ids it logs, i.e. admitted)",
        "results": results,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    temp.replace(path)


def fig8b_sweep(args, profiles) -> None:
    traces = read_traces(list(FIG8B_TRACES))
    cases = fig8b_cases(traces, profiles)
    print(
        f"\nFig. 8(b) sweep: {len(cases)} traces × {len(FIG8B_POLICIES)} policies on "
        f"{args.workers} worker processes ...",
        flush=True,
    )
    start = time.perf_counter()
    policies = [ours(p, args) for p in FIG8B_POLICIES]
    pairs = sorted(((c, p) for c in cases for p in policies), key=lambda cp: -expected_cost(*cp))
    outcomes = []
    with ProcessPoolExecutor(args.workers) as pool:  # what sweep() does, reporting as it goes
        futures = [pool.submit(run_case, case, policy) for case, policy in pairs]
        for future in as_completed(futures):
            outcome = future.result()
            outcomes.append(outcome)
            print(
                f"  {time.perf_counter() - start:7.1f} s  {outcome.trace:14} {outcome.policy:11} "
                f"ratio {outcome.ratio:.4f}  ({outcome.seconds:.1f} s, "
                f"{outcome.cpu_seconds:.1f} s CPU)",
                flush=True,
            )
    elapsed = time.perf_counter() - start
    result = ScheduleResult(outcomes)
    table = result.ratios().reindex(index=list(FIG8B_TRACES), columns=list(FIG8B_POLICIES))
    published = pd.DataFrame(PUBLISHED_FIG8B).reindex(
        index=list(FIG8B_TRACES), columns=list(FIG8B_POLICIES)
    )
    with pd.option_context("display.width", 160, "display.precision", 3):
        print("ours:")
        print(table)
        print("published:")
        print(published)
        for column in ("seconds", "cpu_seconds"):
            per = result.summary.pivot_table(
                index="trace", columns="policy", values=column, sort=False
            )
            print(f"{column} per replay:")
            print(per.reindex(index=list(FIG8B_TRACES), columns=list(FIG8B_POLICIES)).round(1))
    print(f"sum of CPU seconds over the replays: {result.summary['cpu_seconds'].sum():.0f}")
    print(f"whole sweep: {elapsed:.1f} s wall on {args.workers} workers (goal: under 600 s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--traces", default="cluster10", help=f"comma-separated, from {', '.join(CLUSTERS)}"
    )
    parser.add_argument("--policies", default=",".join(ARTIFACT_NAMES),
                        help="policies of the artifact's scheduler.py (Chronus: bench_chronus.py)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=1500.0,
        help="seconds per reference run before it counts as not finished",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="replays of ours after the first (median)"
    )
    parser.add_argument("--no-reference", action="store_true", help="time ours only")
    parser.add_argument("--shift", type=int, default=0,
                        help="move every time of the traces by this many seconds")
    parser.add_argument("--no-sweep", action="store_true", help="skip the Fig. 8(b) sweep")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--write-expected", type=Path, metavar="PATH",
        help="store the artifact's ratios and per-job outcomes here (JSON)",
    )  # fmt: skip
    parser.add_argument(
        "--ef-repricing",
        choices=("all", "chosen"),
        default="all",
        help="ElasticFlow: re-price every job after each scaling step as the "
        "artifact does ('all', exact: what `mltraces schedule` and the figure run) "
        "or only the one that grew ('chosen', the fast approximation)",
    )
    args = parser.parse_args(argv)
    args.traces = [t.strip() for t in args.traces.split(",") if t.strip()]
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = sorted(set(args.policies) - set(ARTIFACT_NAMES))
    if unknown:
        raise SystemExit(f"unknown policies {unknown}; choose from {', '.join(ARTIFACT_NAMES)}")
    profiles = {kind: load_profiles(ARTIFACT / "scheduler" / f"throughputs_{kind}")
                for kind in ("A100", "T4")}  # fmt: skip
    if args.traces:
        expected = compare(args, read_traces(args.traces, args.shift), profiles)
        if args.write_expected:
            write_expected(args.write_expected, expected)
    if not args.no_sweep:
        fig8b_sweep(args, profiles["A100"])


if __name__ == "__main__":
    main()
