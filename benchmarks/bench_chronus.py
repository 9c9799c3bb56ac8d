"""Our Chronus (``scheduling.policies.chronus``) against the artifact's ``chronus-scheduler``.

Runs the artifact's Chronus as a black box on the setups the ElasticFlow
artifact's scripts give it (``run_fig8a.sh``, ``run_fig8b.sh``,
``run_fig10.sh``): its own trace converter and name-list script, then
``main.py --schedule=time-aware-with-lease --aggressive=True
--mip_objective=adaptive --placement=local_search --profile=True
--disable_turn_off=True --lease_term_interval=240 --simulation=True`` with the
trace's cluster, GPU type and step. It is unpacked from
``../shared/reference/ElasticFlow-chronus-generator-plots.tar.gz`` beside the
scheduler that ``bench_schedule.py`` builds (it reads the throughput folders
there), in the same throwaway venv plus python-mip.

The artifact builds its lease programs with ``Model(solver_name=GRB)``. Gurobi
is not installed here, so a small launcher written into ``_work`` runs
``main.py`` one of four ways (nothing of the artifact is edited):

- ``shipped``: as it is. python-mip raises "Gurobi not found" inside every lease
  program, and the artifact falls back to its packing each time (ours:
  ``Chronus(plans="packing")``); the shipped Fig. 10 log is exactly this;
- ``cbc``: python-mip's bundled CBC stands in for Gurobi (same model, same
  5 s / 1 s-without-improvement limits); ours to compare: ``plans="auto"``;
- ``ours``: the artifact's ``MIPSolver.job_selection`` answered by
  :func:`mltraces.scheduling.policies.leases.solve` (the same program, our way of solving
  it), so everything else is the artifact's code: equal per-job outcomes show the
  replay is faithful, and ``cbc`` measures what another choice among optimal
  plans does;
- ``ours-highs``: the same with HiGHS solving every program (``plans="highs"``).

The ITP traces use other column names than the converter reads
(``submission_time``, ``num_iteration``, ``deadline``): they are renamed, nothing
else changes. Prints per (setup, solver): the artifact's ratio, ours, the
published value, how many jobs' outcomes differ, and both wall times.

``--ties`` measures how far the choice among optimal lease plans moves our
ratio, replaying each setup with: plans certified without a solver laid out
latest-first (the default) or earliest-first, the jobs handed to the programs in
shuffled orders, HiGHS solving every program, python-mip's CBC solving every
program (the same cut program; needs ``pip install mip`` beside mltraces), and the
artifact's fallback packing alone. CPU seconds per replay are printed too.

    python benchmarks/bench_chronus.py [--setups fig8a,cluster10,philly_103959,fig10]
        [--solvers shipped,ours,cbc,ours-highs] [--timeout 7200] [--ours-only] [--json PATH]
        [--ties auto,earliest,shuffle1,shuffle2,shuffle3,highs,cbc,packing]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_schedule  # noqa: E402

from mltraces.scheduling import Case, ClusterSpec, SchedulingError, read_jobs_csv, run_case  # noqa: E402
from mltraces.scheduling.policies.chronus import Chronus  # noqa: E402

WORK = bench_schedule.WORK
CHRONUS_TAR = bench_schedule.SHARED / "reference" / "ElasticFlow-chronus-generator-plots.tar.gz"
ARTIFACT = bench_schedule.ARTIFACT
#: the Fig. 10 trace: run_fig10.sh's generator call (deterministic: every deadline is 1.5 x)
FIG10_GENERATOR = ["--num_jobs=100", "--lam=1500", "--min_ddl=1.5", "--seed=1"]


@dataclass(frozen=True)
class Setup:
    """One Chronus run of the artifact's scripts."""

    trace: str  # file stem in traces_for_ElasticFlow
    nodes: int
    gpus_per_node: int
    gpu_type: str
    check: int  # --check_time_interval (= the scheduler's slot there)

    @property
    def cluster(self) -> str:
        return f"n{self.nodes}g{self.gpus_per_node}"


def setups() -> dict[str, Setup]:
    """Fig. 8(a), every Fig. 8(b) trace (run_fig8b.sh's node counts) and Fig. 10."""
    table = {"fig8a": Setup("elasticVpollux_e", 16, 4, "T4", 60),
             "fig10": Setup("100jobs_1500lam", 16, 8, "A100", 240)}
    for trace, cluster in bench_schedule.FIG8B_CLUSTERS.items():
        nodes = int(cluster[1:].split("g")[0])
        table[trace] = Setup(trace, nodes, 8, "A100", 60)
    return table


LAUNCHER = '''"""Written by benchmarks/bench_chronus.py: main.py with the chosen program solver."""
import importlib.util, runpy, sys
solver_name, repo = sys.argv[1], sys.argv[2]
sys.argv = ["main.py", *sys.argv[3:]]
sys.path.insert(0, "")
if solver_name == "cbc":
    import mip
    mip.GRB = mip.CBC  # Model(solver_name=GRB) builds a CBC model
elif solver_name != "shipped":
    spec = importlib.util.spec_from_file_location("leases", repo + "/mltraces/scheduling/leases.py")
    leases = importlib.util.module_from_spec(spec)
    sys.modules["leases"] = leases
    spec.loader.exec_module(leases)
    import options
    import alg.scheduler.solver as solver
    opt = options.Singleton.init()
    size = opt.num_switch * opt.num_node_p_switch * opt.num_gpu_p_node

    def job_selection(self, soft, values, soft_ids, widths, needs, horizons, room, objective,
                      max_seconds=5):
        demands = [leases.Demand(int(w), int(q), int(h))
                   for w, q, h in zip(widths, needs, horizons)]
        plan = leases.solve(demands, [int(r) for r in room], size, objective,
                            shortcut=solver_name == "ours")  # ours-highs: HiGHS every time
        if plan is None:  # what python-mip reports without a solution
            return [[None] * h for h in horizons], [None] * len(horizons)
        rows = [[0] * h for h in horizons]
        for row, terms in zip(rows, plan):
            for term in terms:
                row[term] = 1
        return rows, [1] * len(plan)

    solver.MIPSolver.job_selection = job_selection
runpy.run_path("main.py", run_name="__main__")
'''


def prepare(names: list[str]) -> tuple[Path, Path]:
    """The venv's python and the artifact's chronus-scheduler folder, traces converted."""
    python, scheduler = bench_schedule.prepare_reference({})
    root = scheduler.parent
    chronus = root / "chronus-scheduler"
    if not chronus.exists():
        with tarfile.open(CHRONUS_TAR) as archive:
            members = [m for m in archive.getmembers()
                       if "/chronus-scheduler/" in m.name or "/trace_generator/" in m.name]
            archive.extractall(WORK / "reference", members=members, filter="data")
        env = {**os.environ, "PATH": f"{python.parent}:{os.environ['PATH']}"}
        subprocess.run(["make", "rpc"], cwd=chronus, env=env, check=True, capture_output=True)
    if subprocess.run([str(python), "-c", "import mip"], capture_output=True).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "mip"], check=True)
    (WORK / "chronus_launcher.py").write_text(LAUNCHER)
    for name in names:
        write_trace(name, source_path(name), python, root)
        convert(python, chronus, name)
    return python, chronus


def source_path(name: str) -> Path:
    """Where a trace is kept in the artifact's column names (the converter's input, and ours)."""
    folder = WORK / "chronus_traces"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.csv"


def write_trace(name: str, path: Path, python: Path, root: Path) -> None:
    """The trace in the artifact's column names (the ITP ones renamed, the others as shipped)."""
    if name == "100jobs_1500lam":
        subprocess.run([str(python), "../trace_generator/generate_trace.py", *FIG10_GENERATOR,
                        f"--output_file={path}"], cwd=root / "scheduler", check=True,
                       capture_output=True)
        return
    if name in bench_schedule.ARTIFACT_TRACES:
        shutil.copyfile(ARTIFACT / "traces_for_ElasticFlow" / f"{name}.csv", path)
        return
    with tarfile.open(bench_schedule.ITP_TAR) as archive:
        data = archive.extractfile(f"{name}.csv").read()
    frame = pd.read_csv(io.BytesIO(data), dtype={"job_id": str})
    frame.rename(columns={"submission_time": "submit_time", "num_iteration": "iteration",
                          "deadline": "ddl"}).to_csv(path, index=False)


def convert(python: Path, chronus: Path, name: str) -> None:
    """The artifact's own converter and name-list script, as run_fig8*.sh call them."""
    out = chronus.parent / "traces_for_chronus"
    out.mkdir(exist_ok=True)
    utils = chronus / "utils"
    subprocess.run([str(python), "convert_ef_trace_to_chronus.py", "-t", str(source_path(name)),
                    "-o", f"../../traces_for_chronus/{name}.csv"], cwd=utils, check=True)
    subprocess.run([str(python), "get_name_list.py", "-t", f"../../traces_for_chronus/{name}.csv",
                    "-o", f"../../traces_for_chronus/{name}.lst"], cwd=utils, check=True)


def run_artifact(python: Path, chronus: Path, label: str, setup: Setup, solver: str,
                 timeout: float) -> tuple[pd.DataFrame | None, float, float | None]:
    """(per-job table or None, wall seconds, ratio) of one artifact run."""
    log = WORK / "chronus_logs" / f"{label}_{solver}"
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir(parents=True)
    command = [
        str(python), str(WORK / "chronus_launcher.py"), solver, str(REPO),
        "--schedule=time-aware-with-lease", f"--trace=../traces_for_chronus/{setup.trace}.csv",
        f"--save_log_dir={log}", f"--ident={label}_{solver}", "--aggressive=True",
        "--mip_objective=adaptive", "--placement=local_search", "--profile=True",
        f"--check_time_interval={setup.check}", "--disable_turn_off=True",
        f"--num_node_p_switch={setup.nodes}", "--lease_term_interval=240",
        f"--name_list=../traces_for_chronus/{setup.trace}.lst", "--simulation=True",
        f"--gpu_type={setup.gpu_type}", f"--num_gpu_p_node={setup.gpus_per_node}",
    ]  # fmt: skip
    start = time.perf_counter()
    try:
        with open(log / "output.txt", "wb") as out:
            subprocess.run(command, cwd=chronus, stdout=out, stderr=subprocess.STDOUT,
                           timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, None
    seconds = time.perf_counter() - start
    jobs = pd.read_csv(log / "time-aware-with-lease.csv", dtype={"job_id": str})
    ratio = float(pd.read_csv(log / "final_result.csv")["ddl_satis_ratio"].iloc[-1])
    return jobs, seconds, ratio


#: artifact run -> our policy to compare it with
OURS = {"shipped": "packing", "cbc": "auto", "ours": "auto", "ours-highs": "highs"}


def ours(setup: Setup, path: Path, plans: str = "auto") -> tuple[object, float]:
    """Our replay of the same trace file: (outcome, wall seconds)."""
    spec = ClusterSpec.from_csv(ARTIFACT / "scheduler" / "cluster_specs" / f"{setup.cluster}.csv")
    case = Case.build(setup.trace, read_jobs_csv(path), spec, None, slot=setup.check)
    start = time.perf_counter()
    outcome = run_case(case, Chronus(plans=plans))
    return outcome, time.perf_counter() - start


def differences(outcome, reference: pd.DataFrame) -> tuple[int, int]:
    """(jobs whose deadline outcome differs, jobs whose end differs by more than 1e-6 s)."""
    theirs = reference.assign(met=reference["end_time"] - reference["submit_time"]
                              <= reference["expect_time"]).set_index("job_id")
    mine = outcome.job_frame().set_index("job_id")
    met = (mine["deadline_met"] != theirs["met"].reindex(mine.index)).sum()
    ends = ((mine["finish_time"] - theirs["end_time"].reindex(mine.index)).abs() > 1e-6).sum()
    return int(met), int(ends)


#: --ties variants: name -> the policy (cbc: HiGHS's program handed to CBC instead)
VARIANTS = {
    "auto": Chronus(), "earliest": Chronus(layout="earliest"),
    "shuffle1": Chronus(ties=1), "shuffle2": Chronus(ties=2), "shuffle3": Chronus(ties=3),
    "highs": Chronus(plans="highs"), "cbc": Chronus(plans="highs"),
    "packing": Chronus(plans="packing"),
}


def _cbc_program(demands, profile, size, objective):
    """The program of :func:`~mltraces.scheduling.policies.leases._milp`, cut the same way,
    solved by CBC."""
    import mip
    import numpy as np

    from mltraces.scheduling.policies import leases

    varied = max((b + 1 for b, r in enumerate(profile) if r != size), default=0)
    cut = max(varied, 1) + sum(d.need for d in demands)
    horizons = [min(d.horizon, cut) for d in demands]
    terms = max(horizons, default=0)
    room = leases.room_of(profile, size, terms)[:terms]
    model = mip.Model(solver_name=mip.CBC)
    model.verbose = 0
    x = [[model.add_var(var_type=mip.BINARY) for _ in range(h)] for h in horizons]
    for d, row in zip(demands, x, strict=True):
        model += mip.xsum(row) == d.need
    for b in range(terms):
        model += mip.xsum(d.width * row[b] for d, row in zip(demands, x, strict=True)
                          if b < len(row)) <= int(room[b])
    first = mip.xsum(d.width * row[0] for d, row in zip(demands, x, strict=True) if row)
    model.objective = mip.minimize(first) if objective == "minimize" else mip.maximize(first)
    if model.optimize() not in (mip.OptimizationStatus.OPTIMAL,):
        return None
    return [np.array([b for b, v in enumerate(row) if v.x >= 0.5], dtype=np.int64) for row in x]


def measure_ties(labels: list[str], variants: list[str], table: dict[str, Setup]) -> None:
    """Our ratio under every variant, per setup (see the module docstring)."""
    from unittest import mock

    from mltraces.scheduling.policies import leases

    print(f"{'setup':14} {'variant':9} {'ratio':>7} {'met':>5} {'cpu s':>7}")
    for label in labels:
        setup = table[label]
        path = source_path(setup.trace)
        spec = ClusterSpec.from_csv(ARTIFACT / "scheduler" / "cluster_specs"
                                    / f"{setup.cluster}.csv")
        case = Case.build(setup.trace, read_jobs_csv(path), spec, None, slot=setup.check)
        for variant in variants:
            solver = _cbc_program if variant == "cbc" else leases._milp
            cpu = time.process_time()
            with mock.patch.object(leases, "_milp", solver):
                try:
                    outcome = run_case(case, VARIANTS[variant])
                except SchedulingError as error:  # the packing alone may stop, as the artifact
                    print(f"{label:14} {variant:9} stopped: {error}")
                    continue
            print(f"{label:14} {variant:9} {outcome.ratio:7.4f} {sum(outcome.met):5d} "
                  f"{time.process_time() - cpu:7.1f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setups", default="fig8a,cluster10,philly_103959,fig10")
    parser.add_argument("--solvers", default="shipped,ours",
                        help=f"artifact runs, from {', '.join(OURS)} (comma-separated)")
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--ours-only", action="store_true", help="time our replays only")
    parser.add_argument("--ties", metavar="VARIANTS",
                        help=f"measure tie movement instead, from {', '.join(VARIANTS)}")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--write-expected", type=Path, metavar="PATH",
        help="store each artifact run's ratio and per-job outcomes here (JSON, merged with "
        "what the file holds), for tests/test_scheduling_upstream.py",
    )  # fmt: skip
    args = parser.parse_args(argv)
    table = setups()
    labels = [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = sorted(set(labels) - set(table))
    if unknown:
        raise SystemExit(f"unknown setups {unknown}; choose from {', '.join(table)}")
    if args.ties:
        measure_ties(labels, args.ties.split(","), table)
        return
    published = _published()
    python = chronus = None
    if not args.ours_only:
        python, chronus = prepare([table[label].trace for label in labels])
    results = []
    print(f"{'setup':14} {'solver':10} {'artifact':>8} {'ours':>7} {'published':>9} "
          f"{'met≠':>5} {'end≠':>5} {'art. s':>8} {'ours s':>7}")
    for label in labels:
        setup = table[label]
        path = source_path(setup.trace)
        if not path.exists():
            raise SystemExit(f"{path} is missing: run once without --ours-only")
        for solver in args.solvers.split(","):
            outcome, seconds = ours(setup, path, OURS[solver])
            ref, ref_s, ratio = (None, None, None)
            if chronus is not None:
                ref, ref_s, ratio = run_artifact(python, chronus, label, setup, solver,
                                                 args.timeout)
            met, ends = differences(outcome, ref) if ref is not None else ("-", "-")
            pub = published.get(label)
            print(f"{label:14} {solver:10} "
                  f"{(f'{ratio:.4f}' if ratio is not None else 'DNF' if ref_s else '-'):>8} "
                  f"{outcome.ratio:7.4f} {(f'{pub:.3f}' if pub else '-'):>9} {met!s:>5} "
                  f"{ends!s:>5} {(f'{ref_s:.0f}' if ref_s else '-'):>8} {seconds:7.2f}",
                  flush=True)
            if ref is not None and args.write_expected:
                write_expected(args.write_expected, label, setup, solver, ratio, ref)
            results.append({"setup": label, "solver": solver, "artifact": ratio,
                             "ours": outcome.ratio, "published": pub, "met_differ": met,
                             "end_differ": ends, "artifact_seconds": ref_s,
                             "ours_seconds": seconds})
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def write_expected(path: Path, label: str, setup: Setup, solver: str, ratio: float,
                   jobs: pd.DataFrame) -> None:
    """Add one artifact run to the expectation file (temp + rename)."""
    document = json.loads(path.read_text()) if path.exists() else {"results": {}}
    document["how"] = (
        "python benchmarks/bench_chronus.py --setups SETUP --solvers SOLVER --write-expected "
        "PATH: the artifact's chronus-scheduler/main.py (gudiandian/ElasticFlow@b3f5ea4c) with "
        "run_fig8*.sh's / run_fig10.sh's flags; 'shipped' runs it as it is (python-mip without "
        "Gurobi: every lease program raises and its fallback packing decides), 'ours' with its "
        "MIPSolver.job_selection answered by mltraces.scheduling.policies.leases.solve. ratio = "
        "final_result.csv ddl_satis_ratio; met = job ids with end_time - submit_time <= "
        "expect_time in time-aware-with-lease.csv; ends = their end_time in job order")
    met = jobs["end_time"] - jobs["submit_time"] <= jobs["expect_time"]
    document["results"].setdefault(label, {})[solver] = {
        "trace": setup.trace, "cluster": setup.cluster, "gpu_type": setup.gpu_type,
        "check": setup.check, "jobs": len(jobs), "ratio": ratio,
        "met": sorted(jobs.loc[met, "job_id"], key=bench_schedule._job_order),
        "ends": dict(sorted(zip(jobs["job_id"], jobs["end_time"].astype(float), strict=True),
                            key=lambda kv: bench_schedule._job_order(kv[0]))),
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    temp.replace(path)


def _published() -> dict[str, float]:
    """Published Chronus ratios by setup label (Figs. 8(a) and 8(b))."""
    from mltraces.registry import get_source

    figures = get_source("elasticflow").published
    chosen = dict(zip(bench_schedule.FIG8B_TRACES, figures["fig8b"]["ratios"]["chronus"],
                      strict=True))
    if "fig8a" in figures:
        chosen["fig8a"] = figures["fig8a"]["ratios"]["chronus"]
    return chosen


if __name__ == "__main__":
    main()
