"""Million-job replays: FIFO, SJF and Tiresias on Helios-shaped traces, whole processes.

Generates (once, into ``benchmarks/_work/million``) synthetic job traces in the
format of Helios' ``cluster_log.csv``: heavy-tailed run times, mostly one-GPU
jobs, a day/night rhythm and a third of the jobs in bursts, at a rate that
offers 80 % of the cluster (``--gpus``, default 4,096: Helios' Saturn and
Uranus have ~2,100 each, PAI 6,742); twice the jobs cover twice the time.

Every replay is one whole process, ``python -c``: import mltraces, read the CSV
(pandas), build the job table the replays read (``as_jobs``), replay, and build
the per-job table. Timed from outside: wall and CPU seconds of the process
(``wait4``); the child reports its phases and its peak RSS (``VmHWM``). The
traces are generated first, in a process of their own, so the parent stays
small. The same processes run
the baseline, mltraces at ``--baseline`` (default: this branch's base commit,
exported with ``git archive``), in the same run, on the sizes it finishes
within ``--timeout``. Then the growth exponent k of seconds ~ jobs^k (least
squares over the sizes; n log n over 10 k..1 M reads as about 1.1).

``--extra gandiva,edf`` also replays those at ``--extra-sizes`` (EDF needs
iterations and deadlines: the same jobs at 1 iteration/s per GPU, deadlines
1.2-3x their run time). ``--burst N`` replays N one-second jobs submitted at
one instant against the same jobs one second apart (FIFO, SJF) on 8 GPUs.

    python benchmarks/bench_million.py [--sizes 10000,100000,1000000]
        [--policies fifo,sjf,tiresias] [--baseline COMMIT | --no-baseline]
        [--timeout 600] [--gpus 4096] [--extra gandiva,edf] [--extra-sizes 10000,100000]
        [--burst 80000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # helios_gpu_jobs
import synthetic
from harness import ROOT, WORK, _generate_once

OUT = WORK / "million"
BASE_COMMIT = "e672374"  # the engine branch's base: FIFO/SJF on the shared engine, old Tiresias

#: the child: phases of one replay, printed as JSON
CHILD = textwrap.dedent("""
    import json, sys, time
    marks = [(time.perf_counter(), time.process_time())]
    import pandas as pd
    from mltraces.scheduling import Profiles, as_jobs, schedule
    marks.append((time.perf_counter(), time.process_time()))
    frame = pd.read_csv({path!r}, dtype={{"job_id": str}})
    marks.append((time.perf_counter(), time.process_time()))
    jobs = as_jobs(frame)
    marks.append((time.perf_counter(), time.process_time()))
    profiles = None
    if {profiled!r}:
        profiles = Profiles.from_frame(pd.DataFrame(
            [("m", 0, g, float(g)) for g in (1, 2, 4, 8, 16, 32, 64)],
            columns=["model", "batch_size", "gpus", "iterations_per_s"]))
    result = schedule(jobs, {cluster!r}, profiles, {policy!r})
    marks.append((time.perf_counter(), time.process_time()))
    table = result.jobs
    summary = result.summary.iloc[0]
    marks.append((time.perf_counter(), time.process_time()))
    with open("/proc/self/status") as status:  # this process's own peak (wait4's also
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    phases = ("import", "read", "build", "replay", "tables")  # counts the parent's at fork)
    out = {{name: b[0] - a[0] for name, a, b in zip(phases, marks, marks[1:])}}
    out.update({{name + "_cpu": b[1] - a[1] for name, a, b in zip(phases, marks, marks[1:])}})
    out.update(jobs=len(table), finished=int(summary["finished"]),
               mean_jct=float(summary["mean_jct"]), rss_mb=peak / 1024)
    print(json.dumps(out))
""")


def helios_trace(jobs: int, gpus: int) -> Path:
    """The Helios-shaped CSV of ``jobs`` jobs (generated once)."""
    path = OUT / f"helios-venus-{jobs}-g{gpus}.csv"  # with the cluster helios.jobs maps
    if not path.exists():
        print(f"generating {jobs:,} Helios-shaped jobs ...", flush=True)
    return _generate_once(path, lambda p: synthetic.write_helios_trace(
        p, jobs, seed=2024, cluster_gpus=gpus))


def itp_trace(jobs: int, gpus: int) -> Path:
    """The same jobs in the ITP format: 1 iteration/s per GPU, deadlines 1.2-3x run time."""
    def write(path: Path) -> None:
        import pandas as pd

        helios = pd.read_csv(helios_trace(jobs, gpus), dtype={"job_id": str})
        submit = pd.to_datetime(helios["submit_time"])
        seconds = (submit - submit.min()).dt.total_seconds().astype(np.int64)
        rng = np.random.default_rng(7)
        duration = helios["duration"].to_numpy()
        pd.DataFrame({
            "job_id": helios["job_id"], "submission_time": seconds,
            "num_iteration": np.maximum(1, duration * helios["gpu_num"]), "model_name": "m",
            "deadline": seconds + np.ceil(duration * rng.uniform(1.2, 3.0, len(duration))),
            "batch_size": 0, "num_gpu": helios["gpu_num"], "duration": duration,
        }).to_csv(path, index=False)

    return _generate_once(OUT / f"itp-{jobs}-g{gpus}.csv", write)


def burst_traces(jobs: int) -> dict[str, Path]:
    """``jobs`` one-second jobs at one instant, and the same jobs a second apart."""
    def write(path: Path, gap: float) -> None:
        import pandas as pd

        submit = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(jobs) * gap, unit="s")
        pd.DataFrame({  # Helios' columns, so both revisions read it (through its mapping now)
            "cluster": "Venus", "job_id": np.arange(jobs).astype(str), "user": "u", "vc": "vc",
            "gpu_num": 1, "cpu_num": 1, "node_num": 1, "state": "COMPLETED",
            "submit_time": submit, "start_time": submit,
            "end_time": submit + pd.Timedelta(seconds=1), "duration": 1, "queue": 0,
        }).to_csv(path, index=False)

    return {kind: _generate_once(OUT / f"burst-helios-{kind}-{jobs}.csv",
                                 lambda p, gap=gap: write(p, gap))
            for kind, gap in (("at-once", 0.0), ("spread", 1.0))}


def baseline_tree(commit: str) -> Path:
    """mltraces at ``commit``, exported once (``git archive``) so a child can import it."""
    folder = OUT / f"baseline-{commit}"
    if not (folder / "mltraces").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "mltraces",
                                  "schemas"], check=True, capture_output=True).stdout
        tmp = folder / "archive.tar"
        tmp.write_bytes(archive)
        with tarfile.open(tmp) as tar:
            tar.extractall(folder, filter="data")
        tmp.unlink()
        link = folder / "mltraces" / "schemas"
        if link.is_symlink() or not link.exists():
            link.unlink(missing_ok=True)
            link.symlink_to(folder / "schemas")
    return folder


def measure(code_root: Path, path: Path, cluster: str, policy: str, timeout: float,
            profiled: bool = False) -> dict:
    """One whole process: its phases, wall and CPU seconds, peak RSS (or did not finish)."""
    script = CHILD.format(path=str(path), cluster=cluster, policy=policy, profiled=profiled)
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", script], cwd=OUT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            child.kill()
            os.wait4(child.pid, 0)
            return {"dnf": True, "wall": time.perf_counter() - start}
        time.sleep(0.02)
    wall = time.perf_counter() - start
    out, err = child.stdout.read(), child.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{policy} on {path.name} failed:\n{err[-3000:]}")
    phases = json.loads(out.strip().splitlines()[-1])
    return {**phases, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime}


def exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(seconds) on log(jobs)."""
    if len(points) < 2:
        return math.nan
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def row(label: str, policy: str, jobs: int, result: dict) -> None:
    if result.get("dnf"):
        print(f"{policy:9} {jobs:>10,} {label:14} did not finish in {result['wall']:.0f} s",
              flush=True)
        return
    print(f"{policy:9} {jobs:>10,} {label:14} {result['wall']:8.2f} {result['cpu']:8.2f} "
          f"{result['rss_mb']:8.0f} {result['import']:8.2f} {result['read']:8.2f} "
          f"{result['build']:8.2f} {result['replay']:8.2f} {result['replay_cpu']:8.2f} "
          f"{result['tables']:8.2f}", flush=True)


HEADER = (f"{'policy':9} {'jobs':>10} {'code':14} {'wall s':>8} {'cpu s':>8} {'RSS MB':>8} "
          f"{'import':>8} {'read':>8} {'build':>8} {'replay':>8} {'rep. cpu':>8} {'tables':>8}")


def scaling(args, codes: dict[str, Path]) -> None:
    cluster = f"n{args.gpus // 8}g8"
    print(f"\nHelios-shaped traces on {cluster} ({args.gpus:,} GPUs); whole processes "
          f"(input = read CSV + build the job table; tables = the per-job result)")
    print(HEADER)
    print("-" * len(HEADER))
    times: dict[tuple[str, str], list[tuple[int, dict]]] = {}
    for policy in args.policies:
        for label, root in codes.items():
            for jobs in args.sizes:
                series = times.setdefault((policy, label), [])
                if label != "today" and len(series) < len([s for s in args.sizes if s < jobs]):
                    continue  # the baseline stopped finishing at a smaller size
                result = measure(root, helios_trace(jobs, args.gpus), cluster, policy,
                                 args.timeout)
                row(label, policy, jobs, result)
                if not result.get("dnf"):
                    series.append((jobs, result))
    print("\ngrowth exponent k of seconds ~ jobs^k (least squares; pairwise in brackets):")
    for (policy, label), series in times.items():
        sizes = ", ".join(f"{n:,}" for n, _ in series)
        print(f"  {policy:9} {label:9} over {sizes}:", end="")
        for what in ("wall", "cpu", "replay", "replay_cpu"):
            points = [(n, result[what]) for n, result in series]
            pairwise = " ".join(f"{exponent(points[i:i + 2]):.2f}"
                                for i in range(len(points) - 1))
            print(f"  {what} {exponent(points):.2f} [{pairwise or '-'}]", end="")
        print()
    today = {(p, n): r for (p, label), s in times.items() if label == "today" for n, r in s}
    print("baseline / today, same sizes (wall and CPU of the whole process):")
    for (policy, label), series in times.items():
        if label != "today":
            for jobs, result in series:
                now = today[(policy, jobs)]
                print(f"  {policy:9} {jobs:>10,}: {label} {result['wall']:.1f} s / "
                      f"{result['cpu']:.1f} s CPU, today {now['wall']:.1f} s / "
                      f"{now['cpu']:.1f} s CPU ({result['cpu'] / now['cpu']:.1f}x CPU)")


def extras(args, codes: dict[str, Path]) -> None:
    cluster = f"n{args.gpus // 8}g8"
    print(f"\nother policies on the same jobs ({cluster}); EDF on their ITP-format twin")
    print(HEADER)
    for policy in args.extra:
        for jobs in args.extra_sizes:
            for label, root in codes.items():
                path = itp_trace(jobs, args.gpus) if policy == "edf" else helios_trace(
                    jobs, args.gpus)
                row(label, policy, jobs, measure(root, path, cluster, policy, args.timeout,
                                                 profiled=policy == "edf"))


def bursts(args, codes: dict[str, Path]) -> None:
    print(f"\n{args.burst:,} one-second jobs on n1g8: at one instant vs one second apart")
    print(HEADER)
    for policy in ("fifo", "sjf"):
        for label, root in codes.items():
            for kind, path in burst_traces(args.burst).items():
                result = measure(root, path, "n1g8", policy, args.timeout)
                row(f"{label[:7]} {kind}", policy, args.burst, result)


def generate(args) -> None:
    """Every input file this run reads (in a process of its own: see the module docstring)."""
    for jobs in args.sizes:
        helios_trace(jobs, args.gpus)
    for jobs in args.extra_sizes if args.extra else ():
        helios_trace(jobs, args.gpus)
        if "edf" in args.extra:
            itp_trace(jobs, args.gpus)
    if args.burst:
        burst_traces(args.burst)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--policies", default="fifo,sjf,tiresias")
    parser.add_argument("--baseline", default=BASE_COMMIT, help="commit to compare with")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a process may take before it counts as not finished")
    parser.add_argument("--gpus", type=int, default=4096)
    parser.add_argument("--extra", default="", help="e.g. gandiva,edf")
    parser.add_argument("--extra-sizes", default="10000,100000")
    parser.add_argument("--burst", type=int, default=0, help="e.g. 80000")
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.extra_sizes = [int(s) for s in args.extra_sizes.split(",")]
    args.policies = [p for p in args.policies.split(",") if p]
    args.extra = [p for p in args.extra.split(",") if p]
    OUT.mkdir(parents=True, exist_ok=True)
    codes = {"today": ROOT}
    if not args.no_baseline:
        codes[args.baseline[:9]] = baseline_tree(args.baseline)
    if args.generate_only:
        generate(args)
        return
    subprocess.run([sys.executable, __file__, "--generate-only",
                    *(sys.argv[1:] if argv is None else argv)], check=True)
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}; "
          f"{os.cpu_count()} cores")
    if args.policies:
        scaling(args, codes)
    if args.extra:
        extras(args, codes)
    if args.burst:
        bursts(args, codes)


if __name__ == "__main__":
    main()
