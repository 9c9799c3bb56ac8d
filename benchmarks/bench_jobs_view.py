"""Benchmark: one query over ``mltraces.jobs`` across every source, at the published sizes,
for this checkout and a base revision measured in the same run.

Philly, Helios and Alibaba PAI are written synthetic at their published sizes
(117,325 / 3,362,981 / 1,260,920 jobs; AcmeTrace's Seren and Kalos at 818,327 /
62,413) by their sources' own writers, into one mirror folder beside links to
the real files of ``../shared/upstream`` (ITP, ElasticFlow, Pollux, openb, PAI's
machine spec and headers), re-pinned to the bytes written. Then, for each
revision (``--base``, default the last commit before ``mltraces.jobs`` was
materialised, and this checkout, each imported from its own tree), each step in
a fresh process, with its wall time and peak RSS (the process's own high-water
mark):

1. ``fetch``: download (a copy from the folder mirror) and verify every file;
2. ``first`` (cold): ``connect()`` and the query in a fresh cache, converting every
   table once (Philly's tarball and PAI's streamed member by member, Helios's zip
   member by member) and, where the revision has them, the view's parts;
   ``--firsts`` times (the revisions taking turns, the cache's conversions and parts
   removed between them; the median build is reported: one build's CPU varies by a
   tenth from run to run on a shared machine);
3. ``warm``: the same again, reusing everything: ``--repeat`` runs, the two
   revisions taking turns, medians reported (warm builds recalled as on a user's
   machine: the re-pinned registry stands for the shipped one, so the children let
   :mod:`mltraces.catalog.warm` serve under it);

and, with ``--pandas``, the same numbers for Philly, Helios, PAI and AcmeTrace the
way their notebooks read the raw files (zip and tar members into pandas, the
Philly log with ``json.load``). Every answer is compared: the two revisions' rows
must be equal, and pandas's job and GPU-job counts. The goals (issue 35: first
build <= 10 s and <= 1 GB, warm process <= 0.5 s, the query alone <= 0.3 s, on a
quiet two-core machine) are printed beside the measurements with the machine's
load; the ratios to the base are the numbers to compare across machines.

The first build is also printed step by step: each conversion and each part of the view,
when it began, its wall time and the CPU time of the thread that ran it, with the whole
process's CPU time (what the build is made of, and how busy it kept the cores).

Run: ``python benchmarks/bench_jobs_view.py [--scale 1.0] [--base REV] [--repeat 5]
[--firsts 3] [--pandas] [--revs base,head]`` (``--scale`` shrinks every synthetic trace, for a
quick check).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import harness

from mltraces import registry, synthetic

UPSTREAM = harness.ROOT.parent / "shared" / "upstream"
WORK = harness.WORK / "jobs_view"
#: main before mltraces.jobs read materialised parts (issue 35): the same answers row for
#: row (the commit the parts branched from, 6f51285, counted copies of other traces that
#: main now leaves out of the view)
BASE = "55d9393"
#: the goals of issue 35, on a quiet two-core machine
GOALS = {"first_s": 10.0, "first_mib": 1024, "warm_s": 0.5, "query_s": 0.3}
#: synthetic sizes: rows per writer call (jobs; PAI's seven tables share one skeleton)
SIZES = {"philly": 117_325, "helios": 3_362_981, "alibaba_pai": 1_260_920}
ACME = {"acme/trace_seren.csv": 818_327, "acme/trace_kalos.csv": 62_413}
#: PAI tables the jobs view reads (the per-instance tables are not needed for it)
PAI_FILES = ("pai_job_table.tar.gz", "pai_task_table.tar.gz", "pai_group_tag_table.tar.gz")

QUERY = """
SELECT trace, cluster, count(*) AS jobs, count(*) FILTER (WHERE num_gpu > 0) AS gpu_jobs,
       round(sum(gpu_time_s) / 3600, 1) AS gpu_hours, median(queue_s) AS median_queue_s
FROM mltraces.jobs GROUP BY ALL ORDER BY ALL
"""


def _manifest_urls() -> dict[str, Path]:
    urls = {}
    for manifest in sorted(UPSTREAM.glob("MANIFEST*.tsv")):
        with manifest.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                urls[row["url"]] = UPSTREAM / row["url"].split("://", 1)[1]
    return urls


def _target(root: Path, url: str) -> Path:
    parts = urlsplit(url)
    return root / parts.netloc / parts.path.lstrip("/")


def build_mirror(scale: float) -> tuple[Path, Path]:
    """The mirror folder and the re-pinned registry (pickled beside it); written once."""
    root = WORK / f"mirror-{scale:g}"
    pins = WORK / f"mirror-{scale:g}-sources.pkl"
    if pins.exists():
        return root, pins
    here = _manifest_urls()
    wanted: dict[str, int] = {}
    for name, rows in SIZES.items():
        for file in registry.get_source(name).files:
            if file.url in here:
                continue
            if name == "alibaba_pai" and file.filename.endswith(".tar.gz") and (
                    file.filename not in PAI_FILES):
                continue
            wanted[file.id] = max(10, round(rows * scale))
    wanted.update({f: max(10, round(n * scale)) for f, n in ACME.items()})
    print(f"writing {len(wanted)} synthetic files at scale {scale:g} ...", flush=True)
    sources = synthetic.synthetic_mirror(root, list(wanted), seed=2024, rows=wanted)
    for url, path in here.items():  # every real file, linked in
        link = _target(root, url)
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
    tmp = pins.with_name(pins.name + ".tmp")
    tmp.write_bytes(pickle.dumps(sources))
    os.replace(tmp, pins)
    return root, pins


# --------------------------------------------------------------------------- child processes

#: the process's own peak RSS: VmHWM starts afresh at exec (ru_maxrss would carry the parent's)
_PEAK = """
def peak_rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
"""

#: each conversion and each part of the first build: what, when it began (s after the child
#: started), its wall time and the CPU time of the thread that ran it (its DuckDB has no
#: threads of its own while conversions run together, so that is all the CPU it took)
_STEPS = """
import threading
STEPS = []

def _timed(began):
    import importlib
    def wrap(module, name, kind):
        try:
            module = importlib.import_module(module)
        except ImportError:  # a revision without it (the base has no parts)
            return
        inner = getattr(module, name, None)
        if inner is None:
            return
        def timed(*args, **kwargs):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                what = getattr(args[0], 'table', None) or getattr(args[0], 'name', '?')
                STEPS.append([kind, what, start - began, time.perf_counter() - start,
                              time.thread_time() - cpu])
        setattr(module, name, timed)
    wrap('mltraces.catalog.convert', 'convert_table', 'table')
    wrap('mltraces.catalog.parts', '_write', 'part')
"""

_CHILD = _PEAK + """
import json, os, pickle, sys, time
""" + _STEPS + """
started = time.perf_counter()
result = None
import mltraces
assert mltraces.__file__.startswith(os.environ['PYTHONPATH']), mltraces.__file__
from mltraces import registry
registry.set_override(pickle.loads(open(sys.argv[1], 'rb').read()))
# the override stands for the shipped pins of a user's machine, where warm builds are
# recalled (catalog.warm serves none under an override, which tests use to swap pins)
from mltraces.catalog import warm
warm._overridden = lambda: False
step = sys.argv[2]
if step == 'fetch':
    import mltraces
    names = [n for n in registry.all_sources() if n != 'zeus']
    files = [f.id for n in names for f in registry.get_source(n).files
             if registry.get_file(f.id).url in json.loads(sys.argv[3])]
    mltraces.fetch(*files)
else:
    import mltraces
    from mltraces.jobmap import job_tables
    if step == 'first':
        _timed(started)
    con = mltraces.connect(tables=[*job_tables(), 'mltraces.jobs'])
    connected = time.perf_counter()
    result = con.sql(sys.argv[3]).fetchall()
    query = time.perf_counter() - connected
cpu = os.times()
print(json.dumps({'seconds': time.perf_counter() - started, 'peak': peak_rss(),
                  'cpu': cpu.user + cpu.system, 'steps': STEPS,
                  'query': None if result is None else query,
                  'rows': [[str(v) for v in r] for r in (result or [])]}))
"""


def run_child(step: str, pins: Path, argument: str, env: dict[str, str]) -> dict:
    """One step in a fresh process, in the tree it imports (``-c`` puts the working folder
    first on the path: run elsewhere, a child would import that folder's ``mltraces``)."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(pins), step, argument], env=env,
                          cwd=env.get("PYTHONPATH"), capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class Revision(harness.Revision):
    """One revision under test: its steps run :data:`_CHILD` in its own tree."""

    def run(self, step: str, pins: Path, argument: str) -> dict:
        return self.keep(step, run_child(step, pins, argument, self.env))


_PANDAS = _PEAK + r"""
import io, json, sys, tarfile, time, zipfile
started = time.perf_counter()
import pandas as pd
paths = json.loads(sys.argv[1])
out = {}

def tar_member(path, name):
    tar = tarfile.open(path)
    return tar, tar.extractfile(name)

with zipfile.ZipFile(paths['helios/data.zip']) as z:
    for cluster in ('Venus', 'Earth', 'Saturn', 'Uranus'):
        df = pd.read_csv(z.open(f'data/{cluster}/cluster_log.csv'),
                         parse_dates=['submit_time', 'start_time', 'end_time'])
        run = (df.end_time - df.start_time).dt.total_seconds()
        queue = (df.start_time - df.submit_time).dt.total_seconds()
        out['helios/jobs', cluster.lower()] = [len(df), int((df.gpu_num > 0).sum()),
                                               float((run * df.gpu_num).sum() / 3600),
                                               float(queue.median())]

names = {t: open(paths[f'alibaba_pai/pai_{t}.header']).read().strip().split(',')
         for t in ('job_table', 'task_table')}
tar, member = tar_member(paths['alibaba_pai/pai_job_table.tar.gz'], 'pai_job_table.csv')
jobs = pd.read_csv(member, header=None, names=names['job_table'])
tar, member = tar_member(paths['alibaba_pai/pai_task_table.tar.gz'], 'pai_task_table.csv')
tasks = pd.read_csv(member, header=None, names=names['task_table'])
tasks['gpus'] = tasks.plan_gpu.fillna(0) * tasks.inst_num / 100
first = tasks[tasks.start_time > 0].groupby('job_name').start_time.min()
per_job = tasks.groupby('job_name').gpus.sum()
jobs = jobs.join(per_job, on='job_name').join(first.rename('first_start'), on='job_name')
run = jobs.end_time.where(jobs.end_time > 0) - jobs.first_start
queue = jobs.first_start - jobs.start_time
out['alibaba_pai/jobs', 'pai'] = [len(jobs), int((jobs.gpus > 0).sum()),
                                  float((run * jobs.gpus).sum() / 3600), float(queue.median())]

tar, member = tar_member(paths['philly/trace-data.tar.gz'], 'trace-data/cluster_job_log')
log = json.load(member)
missing = (None, '', 'None')
rows = []
for job in log:
    att = job['attempts']
    gpus = sum(len(d['gpus']) for d in att[0]['detail']) if att else None
    start = att[0]['start_time'] if att else None
    end = att[-1]['end_time'] if att and att[-1]['end_time'] not in missing else None
    rows.append((job['submitted_time'], start, end, gpus))
df = pd.DataFrame(rows, columns=['submit', 'start', 'end', 'gpus'])
for c in ('submit', 'start', 'end'):
    df[c] = pd.to_datetime(df[c]).dt.tz_localize('America/Los_Angeles', ambiguous='NaT',
                                                  nonexistent='NaT')
run = (df.end - df.start).dt.total_seconds()
out['philly/jobs', 'philly'] = [len(df), int((df.gpus > 0).sum()),
                                float((run * df.gpus).sum() / 3600),
                                float((df.start - df.submit).dt.total_seconds().median())]

for cluster in ('seren', 'kalos'):
    df = pd.read_csv(paths[f'acme/trace_{cluster}.csv'],
                     parse_dates=['submit_time', 'start_time', 'end_time'])
    run = (df.end_time - df.start_time).dt.total_seconds()
    queue = (df.start_time - df.submit_time).dt.total_seconds()
    out[f'acme/{cluster}', cluster] = [len(df), int((df.gpu_num > 0).sum()),
                                       float((run * df.gpu_num).sum() / 3600),
                                       float(queue.median())]
print(json.dumps({'seconds': time.perf_counter() - started, 'peak': peak_rss(),
                  'rows': [[*k, *v] for k, v in out.items()]}))
"""


#: the raw files the pandas baseline reads
RAW = ("helios/data.zip", "alibaba_pai/pai_job_table.header", "alibaba_pai/pai_task_table.header",
       "alibaba_pai/pai_job_table.tar.gz", "alibaba_pai/pai_task_table.tar.gz",
       "philly/trace-data.tar.gz", "acme/trace_seren.csv", "acme/trace_kalos.csv")


def run_pandas(root: Path, env: dict[str, str]) -> dict:
    paths = {f: str(_target(root, registry.get_file(f).url)) for f in RAW}
    done = subprocess.run([sys.executable, "-c", _PANDAS, json.dumps(paths)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"pandas baseline failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compare(view: list[list[str]], baseline: list[list]) -> None:
    """Jobs and GPU jobs per (trace, cluster) equal on both sides; GPU hours within 0.5 %."""
    ours = {(r[0], r[1]): (int(r[2]), int(r[3]), float(r[4])) for r in view}
    for trace, cluster, jobs, gpu_jobs, hours, _ in baseline:
        found = ours[trace, cluster]
        assert found[:2] == (jobs, gpu_jobs), (trace, cluster, found, jobs, gpu_jobs)
        assert abs(found[2] - hours) <= 0.005 * max(hours, 1.0), (trace, cluster, found, hours)



def report(revisions: dict[str, Revision]) -> None:
    """Each goal: base, head, their ratio, and the goal (quiet machine) with the load."""
    rows = [("first build (cold), s", lambda r: r.steps["first"]["seconds"], "first_s"),
            ("first build, peak RSS MiB", lambda r: r.steps["first"]["peak"] / 2**20,
             "first_mib"),
            ("first build, the query alone, s", lambda r: r.steps["first"]["query"], None),
            ("warm, whole process, s (median)", lambda r: r.median("seconds"), "warm_s"),
            ("warm, the query alone, s (median)", lambda r: r.median("query"), "query_s"),
            ("warm, peak RSS MiB (median)", lambda r: r.median("peak") / 2**20, None)]
    names = list(revisions)
    print(f"\n{'':36}" + "".join(f"{n:>12}" for n in names) +
          ("       ratio" if len(names) == 2 else "") + "   goal (quiet 2 cores)")
    for label, value, goal in rows:
        values = [value(revisions[n]) for n in names]
        ratio = (f"{values[0] / values[-1]:11.1f}x" if len(names) == 2 and values[-1] else "")
        verdict = harness.meets(values[-1], GOALS[goal]) if goal else ""
        target = f"   <= {GOALS[goal]:g}: {verdict}" if goal else ""
        print(f"{label:36}" + "".join(f"{v:12.2f}" for v in values) + ratio + target)
    loads = sorted(step["load"] for r in revisions.values()
                   for step in [*r.steps.values(), *r.warm])
    print(f"load (1-minute average) while measuring: {loads[0]:.1f} to {loads[-1]:.1f}")


def breakdown(revision: Revision) -> None:
    """What the first build spent its time on: each conversion and part in the order they
    began, with the CPU of the thread that ran it, and how that adds up against the wall."""
    first = revision.steps["first"]
    steps = sorted(first.get("steps") or [], key=lambda s: s[2])
    if not steps:
        return
    print(f"\n{revision.name}'s first build, step by step (s after the process began; CPU: "
          "the thread that ran it):")
    print(f"{'began':>7}{'wall':>7}{'CPU':>7}  what")
    for kind, what, began, wall, cpu in steps:
        print(f"{began:7.1f}{wall:7.2f}{cpu:7.2f}  {kind} {what}")
    for kind in ("table", "part"):
        chosen = [s for s in steps if s[0] == kind]
        if chosen:
            print(f"{kind}s: {len(chosen)}, {sum(s[4] for s in chosen):.1f} CPU-s")
    print(f"the whole process: {first['seconds']:.1f} s wall, {first['cpu']:.1f} CPU-s on "
          f"{os.cpu_count()} cores ({first['cpu'] / first['seconds']:.2f} busy on average)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--base", default=BASE, help=f"baseline revision (default {BASE})")
    parser.add_argument("--revs", default="base,head", help="which revisions to measure")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per revision")
    parser.add_argument("--firsts", type=int, default=3,
                        help="cold first builds per revision (the median is reported)")
    parser.add_argument("--pandas", action="store_true", help="also the pandas baseline")
    parser.add_argument("--record", action="store_true",
                        help="write the result into benchmarks/results.json")
    args = parser.parse_args()
    if not (UPSTREAM / "MANIFEST.tsv").is_file():
        raise SystemExit(f"needs the real files in {UPSTREAM}")
    root, pins = build_mirror(args.scale)
    trees = {"base": lambda: harness.checkout(args.base, WORK), "head": lambda: harness.ROOT}
    revisions = {name: Revision(name, trees[name](), root, WORK / f"cache-{args.scale:g}-{name}")
                 for name in args.revs.split(",")}
    urls = json.dumps(sorted({f.url for s in pickle.loads(pins.read_bytes()).values()
                              for f in s.files if _target(root, f.url).exists()}))
    print(f"load: {os.getloadavg()[0]:.1f}; revisions: " +
          ", ".join(f"{n} ({r.tree})" for n, r in revisions.items()), flush=True)
    for revision in revisions.values():
        revision.run("fetch", pins, urls)
    firsts: dict[str, list[dict]] = {name: [] for name in revisions}
    for turn in range(args.firsts):  # the revisions take turns here too
        for revision in revisions.values():
            if turn:  # cold again: every conversion, part and warm record goes; files stay
                shutil.rmtree(revision.cache / "tables")
            first = revision.run("first", pins, QUERY)
            firsts[revision.name].append(first)
            print(f"  {revision.name}: first {first['seconds']:.1f} s, "
                  f"{first['cpu']:.1f} CPU-s, peak {first['peak'] / 2**20:.0f} MiB "
                  f"(load {first['load']:.1f})", flush=True)
    for name, revision in revisions.items():  # the median build stands for its revision
        runs = sorted(firsts[name], key=lambda r: r["seconds"])
        revision.steps["first"] = runs[(len(runs) - 1) // 2]
    for _ in range(args.repeat):  # the revisions take turns: a load swing hits both
        for revision in revisions.values():
            revision.run("warm", pins, QUERY)
    answers = {name: r.steps["first"]["rows"] for name, r in revisions.items()}
    for name, revision in revisions.items():
        assert all(w["rows"] == answers[name] for w in [*revision.warm, *firsts[name]]), \
            f"{name}: a warm or another cold build answered otherwise"
    if len(set(map(json.dumps, answers.values()))) > 1:
        raise SystemExit("the revisions' answers differ:\n" + "\n".join(
            f"{n}: {' | '.join(map(str, r))}" for n, rows in answers.items() for r in rows))
    rows = next(iter(answers.values()))
    jobs = sum(int(r[2]) for r in rows)
    print(f"mltraces.jobs: {jobs:,} jobs in {len(rows)} (trace, cluster) rows, the same answers "
          f"row for row in {' and '.join(revisions)}")
    report(revisions)
    for revision in revisions.values():
        breakdown(revision)
    if args.pandas:
        env = next(iter(revisions.values())).env
        baseline = run_pandas(root, env)
        _compare(rows, baseline["rows"])
        print(f"pandas over the raw files: {baseline['seconds']:.1f} s, peak "
              f"{baseline['peak'] / 2**20:.0f} MiB (load {os.getloadavg()[0]:.1f}); the same "
              "job and GPU-job counts")
    for row in rows:
        print("   ", " | ".join(row))
    if args.record and "head" in revisions:
        harness.record_result(
            "benchmarks/bench_jobs_view.py",
            "one query over `mltraces.jobs` (jobs, GPU jobs, GPU hours, median queue per trace "
            "and cluster) at the published sizes (synthetic Philly, Helios, PAI and AcmeTrace "
            "beside the real files), this checkout against main before parts in one "
            "run: fetch, first build (cold) and warm, whole processes with peak RSS",
            summary(revisions, jobs, args.firsts))


def summary(revisions: dict[str, Revision], jobs: int, firsts: int) -> str:
    """One line for results.json: head against base, the goals, the load."""
    head, base = revisions["head"], revisions.get("base")
    loads = sorted(step["load"] for r in revisions.values()
                   for step in [*r.steps.values(), *r.warm])

    pair = harness.beside_base

    first = head.steps["first"]
    was = base.steps["first"] if base else None
    median = f" (the median of {firsts})" if firsts > 1 else ""
    return (f"load {loads[0]:.1f}–{loads[-1]:.1f}: {jobs:,} jobs; first build{median} "
            f"{pair(first['seconds'], was['seconds'] if was else None, 's')} on "
            f"{pair(first['cpu'], was.get('cpu') if was else None, 'CPU-s')}, peak "
            f"{pair(first['peak'] / 2**30, was['peak'] / 2**30 if was else None, 'GB', 2)} "
            f"(goals 10 s, 1 GB); warm whole process "
            f"{pair(head.median('seconds'), base.median('seconds') if base else None, 's', 2)}"
            f" (goal 0.5 s), the query alone "
            f"{pair(head.median('query'), base.median('query') if base else None, 's', 2)} "
            "(goal 0.3 s); answers identical row for row")


if __name__ == "__main__":
    main()
