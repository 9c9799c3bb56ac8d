"""Benchmark: ``mltraces.requests`` at the Azure 2024 week's size (44.1 M requests), first
build and a warm per-trace summary, for this checkout and a base revision in one run.

Azure's 2024 week files are not obtainable here, so they are written synthetic in the
exact upstream format (``TIMESTAMP,ContextTokens,GeneratedTokens``; UTC times with
``+00:00``, microseconds where the second is not whole, in arrival order; a final
newline), at the row counts the publisher's notebook shows: 16,803,695 coding and
27,303,999 conversation requests (``../shared/REQUESTS.md``, the sources' card). DuckDB
writes them (hash-based draws, so the bytes do not depend on its thread count): arrivals
uniform over the week, 5 % on a whole second, log-normal token counts around the medians
the source's own synthetic writer uses. Then, for each revision (``--base``, default the
last commit of main before ``mltraces.requests`` read parts, and this checkout, each
imported from its own tree), in a fresh process with its wall time and peak RSS:

1. ``fetch``: copy both files from a folder mirror (``MLTRACES_MIRROR``) and pin them by
   their first download, as ``mltraces fetch`` does (no hash is published for them);
2. ``first`` (cold): ``connect()`` naming both tables and ``mltraces.requests`` in that
   cache, converting both tables (and, where the revision has them, the view's parts),
   and the summary query;
3. ``warm``: the same again, reusing every conversion: ``--repeat`` runs, the revisions
   taking turns, medians reported.

The two revisions' answers must be equal row for row. The goals (issue 35: first build
<= 60 s and <= 2 GB, warm per-trace summary <= 1 s whole process, on a quiet two-core
machine) are printed beside the measurements with the machine's load; ``--record``
writes the result into ``benchmarks/results.json`` (:func:`harness.record_result`).

Run: ``python benchmarks/bench_requests_view.py [--scale 1.0] [--base REV] [--repeat 5]
[--revs base,head] [--record]`` (``--scale`` shrinks both files, for a quick check).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import harness

from mltraces import registry

WORK = harness.WORK / "requests_view"
#: where the base revision's clone is kept (shared with bench_jobs_view.py: one clone)
JOBS_WORK = harness.WORK / "jobs_view"
#: main before mltraces.requests read materialised parts (issue 35)
BASE = "55d9393"
GOALS = {"first_s": 60.0, "first_mib": 2048, "warm_s": 1.0}
#: the published row counts (the repository's notebook) and the synthetic writer's medians
FILES = {
    "azure_llm/AzureLLMInferenceTrace_code_1week.csv": (16_803_695, "2024-05-10",
                                                        (1_900.0, 1.0), (20.0, 1.3)),
    "azure_llm/AzureLLMInferenceTrace_conv_1week.csv": (27_303_999, "2024-05-12",
                                                        (1_000.0, 1.0), (110.0, 1.3)),
}
TABLES = ("azure_llm.code_2024", "azure_llm.conv_2024")
WEEK_US = 7 * 86_400 * 1_000_000

#: the per-trace summary the goal is for: requests, span, token totals and means, the last
#: day's requests
QUERY = """
SELECT trace, count(*) AS requests, min(arrival_s) AS first_s, max(arrival_s) AS last_s,
       min(arrival_time) AS first_time, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, avg(input_tokens) AS mean_input,
       avg(output_tokens) AS mean_output,
       count(*) FILTER (WHERE arrival_s >= 86400 * 6) AS last_day
FROM mltraces.requests GROUP BY trace ORDER BY trace
"""
#: exact medians as well (an exact quantile sorts each trace's 17 M and 27 M values), timed
#: after the summary in the same process
MEDIANS = """
SELECT trace, median(input_tokens), median(output_tokens)
FROM mltraces.requests GROUP BY trace ORDER BY trace
"""


def _uniform(seed: int, stream: int) -> str:
    """SQL for a uniform draw in [0, 1) per row ``i``, from a hash (no thread-order state)."""
    # one value hashed (a hash of several values combines theirs: draws of two streams
    # came out correlated)
    return f"((hash(i * 16 + {stream} + {seed} * 4294967296) >> 11) / 9007199254740992.0)"


def _tokens(seed: int, stream: int, median: float, sigma: float) -> str:
    """Log-normal around ``median`` (Box-Muller over two hashed uniforms), at least 1."""
    normal = (f"sqrt(-2 * ln(1 - {_uniform(seed, stream)})) * "
              f"cos(2 * pi() * {_uniform(seed, stream + 1)})")
    return f"greatest(1, CAST(round(exp(ln({median}) + {sigma} * {normal})) AS BIGINT))"


def write_week(path: Path, rows: int, start: str, context: tuple[float, float],
               generated: tuple[float, float], seed: int) -> None:
    """One week file in the upstream format, written by DuckDB (spilling to ``path``'s
    folder)."""
    import duckdb

    arrival = (f"CAST(floor({_uniform(seed, 0)} * {WEEK_US}) AS BIGINT)")
    whole = f"{_uniform(seed, 1)} < 0.05"
    con = duckdb.connect(config={"memory_limit": "2GB", "temp_directory": str(path.parent)})
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(f"""
        COPY (
          SELECT strftime(TIMESTAMP '{start}' + to_microseconds(us), '%Y-%m-%d %H:%M:%S')
                 || CASE WHEN us % 1000000 = 0 THEN ''
                         ELSE '.' || lpad(CAST(us % 1000000 AS VARCHAR), 6, '0') END
                 || '+00:00' AS "TIMESTAMP",
                 ContextTokens, GeneratedTokens
          FROM (SELECT CASE WHEN {whole} THEN a - a % 1000000 ELSE a END AS us,
                       {_tokens(seed, 2, *context)} AS ContextTokens,
                       {_tokens(seed, 4, *generated)} AS GeneratedTokens
                FROM (SELECT i, {arrival} AS a FROM range({rows}) t(i)))
          ORDER BY us
        ) TO '{path}' (FORMAT csv, HEADER true, QUOTE '')""")
    finally:
        con.close()


def build_mirror(scale: float) -> Path:
    """The mirror folder (``HOST/PATH`` of each URL) with both week files at ``scale`` of
    the published counts; written once. The registry pins them by their first download
    (no hash is published), so the children fetch them as a user would: no override."""
    root = WORK / f"mirror-{scale:g}"
    for seed, (file_id, (rows, start, context, generated)) in enumerate(FILES.items()):
        n = max(10, round(rows * scale))
        url = urlsplit(registry.get_file(file_id).url)
        path = root / url.netloc / url.path.lstrip("/")
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"writing {n:,} synthetic requests into {path.name} ...", flush=True)
        tmp = path.with_name(path.name + ".tmp")
        write_week(tmp, n, start, context, generated, seed=2024 + seed)
        os.replace(tmp, path)
    return root


# --------------------------------------------------------------------------- child processes

_CHILD = """
import json, os, sys, time
started = time.perf_counter()
result = query = None
import mltraces
assert mltraces.__file__.startswith(os.environ['PYTHONPATH']), mltraces.__file__
if sys.argv[1] == 'fetch':
    mltraces.fetch(*json.loads(sys.argv[2]))
else:
    con = mltraces.connect(tables=[*json.loads(sys.argv[2]), 'mltraces.requests'])
    connected = time.perf_counter()
    result = con.sql(sys.argv[3]).fetchall()
    query = time.perf_counter() - connected
    summarised = time.perf_counter() - started
    result += con.sql(sys.argv[4]).fetchall()
    medians = time.perf_counter() - connected - query
def peak_rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
if query is None:  # a fetch: the whole process
    summarised, medians = time.perf_counter() - started, None
print(json.dumps({'seconds': summarised, 'with_medians': time.perf_counter() - started,
                  'peak': peak_rss(), 'query': query, 'medians': medians,
                  'rows': [[str(v) for v in r] for r in (result or [])]}))
"""


class Revision(harness.Revision):
    """One revision under test: its steps run :data:`_CHILD` in its own tree."""

    def run(self, step: str) -> dict:
        """One step (``fetch``, ``first``, ``warm``) in a fresh process of this revision's
        tree (``-c`` puts the working folder first on the path: it is the tree)."""
        names = list(FILES) if step == "fetch" else list(TABLES)
        done = subprocess.run([sys.executable, "-c", _CHILD, step, json.dumps(names), QUERY,
                               MEDIANS],
                              env=self.env, cwd=self.tree,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{self.name} {step} failed:\n{done.stderr[-3000:]}")
        return self.keep(step, json.loads(done.stdout.strip().splitlines()[-1]))



def report(revisions: dict[str, Revision]) -> list[tuple[str, list[float], str]]:
    """Each measure: base, head, their ratio, and the goal (quiet machine) with the load."""
    rows = [("first build (cold), s", lambda r: r.first["seconds"], "first_s"),
            ("first build, peak RSS MiB", lambda r: r.first["peak"] / 2**20, "first_mib"),
            ("warm summary, whole process, s (median)", lambda r: r.median("seconds"),
             "warm_s"),
            ("warm, the summary query alone, s (median)", lambda r: r.median("query"), None),
            ("warm, then exact medians too, s (median)", lambda r: r.median("with_medians"),
             None),
            ("warm, peak RSS MiB (median)", lambda r: r.median("peak") / 2**20, None)]
    names = list(revisions)
    print(f"\n{'':42}" + "".join(f"{n:>12}" for n in names) +
          ("       ratio" if len(names) == 2 else "") + "   goal (quiet 2 cores)")
    measured = []
    for label, value, goal in rows:
        values = [value(revisions[n]) for n in names]
        ratio = (f"{values[0] / values[-1]:11.1f}x" if len(names) == 2 and values[-1] else "")
        verdict = harness.meets(values[-1], GOALS[goal]) if goal else ""
        target = f"   <= {GOALS[goal]:g}: {verdict}" if goal else ""
        print(f"{label:42}" + "".join(f"{v:12.2f}" for v in values) + ratio + target)
        measured.append((label, values, goal or ""))
    return measured


def _loads(revisions: dict[str, Revision]) -> tuple[float, float]:
    loads = sorted(run["load"] for r in revisions.values() for run in [r.first, *r.warm])
    return loads[0], loads[-1]


def _summary(revisions: dict[str, Revision], requests: int) -> str:
    """One line for results.json: head against base, the goals, the load."""
    head, base = revisions["head"], revisions.get("base")
    low, high = _loads(revisions)

    pair = harness.beside_base

    first = pair(head.first["seconds"], base.first["seconds"] if base else None, "s")
    peak = pair(head.first["peak"] / 2**30, base.first["peak"] / 2**30 if base else None, "GB",
                2)
    warm = pair(head.median("seconds"), base.median("seconds") if base else None, "s", 2)
    query = pair(head.median("query"), base.median("query") if base else None, "s", 2)
    medians = pair(head.median("with_medians"),
                   base.median("with_medians") if base else None, "s", 2)
    return (f"load {low:.1f}–{high:.1f}: {requests:,} synthetic Azure 2024 requests; first "
            f"build {first}, peak {peak} (goals 60 s, 2 GB); warm per-trace summary (requests, "
            f"span, token totals and means) {warm} whole process (goal 1 s), the query alone "
            f"{query}; with exact token medians too {medians}; answers identical row for row")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--base", default=BASE, help=f"baseline revision (default {BASE})")
    parser.add_argument("--revs", default="base,head", help="which revisions to measure")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per revision")
    parser.add_argument("--record", action="store_true",
                        help="write the result into benchmarks/results.json")
    args = parser.parse_args()
    mirror = build_mirror(args.scale)
    trees = {"base": lambda: harness.checkout(args.base, JOBS_WORK), "head": lambda: harness.ROOT}
    revisions = {name: Revision(name, trees[name](), mirror,
                                WORK / f"cache-{args.scale:g}-{name}")
                 for name in args.revs.split(",")}
    print(f"load: {os.getloadavg()[0]:.1f}; revisions: " +
          ", ".join(f"{n} ({r.tree})" for n, r in revisions.items()), flush=True)
    for revision in revisions.values():
        fetched = revision.run("fetch")
        first = revision.run("first")
        print(f"  {revision.name}: fetch + verify {fetched['seconds']:.1f} s; first "
              f"{first['seconds']:.1f} s, peak {first['peak'] / 2**20:.0f} MiB (load "
              f"{first['load']:.1f})", flush=True)
    for _ in range(args.repeat):  # the revisions take turns: a load swing hits both
        for revision in revisions.values():
            revision.run("warm")
    answers = {name: r.first["rows"] for name, r in revisions.items()}
    for name, revision in revisions.items():
        assert all(w["rows"] == answers[name] for w in revision.warm), f"{name}: warm != first"
    if len(set(map(json.dumps, answers.values()))) > 1:
        raise SystemExit("the revisions' answers differ:\n" + "\n".join(
            f"{n}: {' | '.join(map(str, r))}" for n, rows in answers.items() for r in rows))
    rows = next(iter(answers.values()))
    requests = sum(int(r[1]) for r in rows[:len(rows) // 2])  # then the medians' rows
    print(f"mltraces.requests: {requests:,} requests in {len(rows) // 2} traces, the same answers "
          f"row for row in {' and '.join(revisions)}")
    report(revisions)
    low, high = _loads(revisions)
    print(f"load (1-minute average) while measuring: {low:.1f} to {high:.1f}")
    for row in rows:
        print("   ", " | ".join(row))
    if args.record and "head" in revisions:
        harness.record_result(
            "benchmarks/bench_requests_view.py",
            "`mltraces.requests` at the Azure 2024 week's size (synthetic, the published row "
            "counts), this checkout against main before parts, in one run: first build "
            "(cold, fresh cache) and a warm per-trace summary, whole processes with peak RSS",
            _summary(revisions, requests))


if __name__ == "__main__":
    main()
