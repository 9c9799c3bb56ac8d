"""The measured timings and test counts, drawn from the clone's ``benchmarks/`` records.

``benchmarks/results.json`` holds each benchmark's last result with the date and commit
it was measured at and the machine; ``benchmarks/test_runs.json`` is written by
``benchmarks/record_tests.py`` from pytest's own closing line. Nothing else states a
test count or a timing, so they cannot disagree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mltraces.docs import markdown as md
from mltraces.docs.site import CLONE

RESULTS = CLONE / "benchmarks" / "results.json"
TEST_RUNS = CLONE / "benchmarks" / "test_runs.json"


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def benchmarks_table() -> str:
    """Every benchmark's last result, with where and when it was measured."""
    data = _read(RESULTS)
    if not data:
        return "*No benchmark results in this checkout (`benchmarks/results.json`).*\n"
    rows = [[md.inline(r["script"]) if r["script"].startswith("benchmarks/") else r["script"],
             r["measures"], r["result"], f"{r['recorded']} ({md.inline(r['commit'])})"]
            for r in data["results"]]
    return (f"Machine: {data['machine']}.\n\n"
            + md.table(["script", "measures", "last result", "measured (commit)"], rows))


def tests_text() -> str:
    """The test command and the slow tests as last recorded: counts and time, one record."""
    runs = _read(TEST_RUNS).get("runs", {})
    if not runs:
        return "*Not recorded in this checkout: run `python benchmarks/record_tests.py`.*\n"
    rows = []
    for run in runs.values():
        counts = ", ".join(f"{run[k]:,} {k}" for k in ("passed", "failed", "skipped",
                                                       "deselected") if run.get(k))
        rows.append([md.inline(run["command"]), counts, f"{run['seconds']:.0f} s",
                     f"{run['cores']} cores, load {run['load'][0]}–{run['load'][1]}",
                     f"{run['date']} ({md.inline(run['commit'])})"])
    return md.table(["command", "tests", "time (pytest's)", "machine", "measured (commit)"],
                    rows)


#: the benchmarks behind issue 35's goals, in the order the README gives them
SPEED = {"benchmarks/bench_jobs_view.py": "`mltraces.jobs` at the published sizes",
         "benchmarks/bench_requests_view.py": "`mltraces.requests` at the Azure 2024 week's size",
         "benchmarks/bench_cold.py": "set-up"}


def speed_text() -> str:
    """The last result of each benchmark in :data:`SPEED`, and the tests' last record."""
    results = _read(RESULTS).get("results", [])
    lines = []
    for script, what in SPEED.items():
        found = [r for r in results if r["script"] == script]
        if found:  # the last one recorded (an older entry may describe an earlier build)
            last = found[-1]
            lines.append(f"- **{what}** ({md.inline(script)}, {last['recorded']}, "
                         f"{md.inline(last['commit'])}): {last['result']}")
    runs = _read(TEST_RUNS).get("runs", {})
    for run in runs.values():
        lines.append(f"- **{md.inline(run['command'])}**: {run['seconds']:.0f} s, "
                     f"{run['passed']:,} passed ({run['cores']} cores, {run['date']}, "
                     f"{md.inline(run['commit'])})")
    if not lines:
        return "*Not measured in this checkout (`benchmarks/`).*\n"
    return "\n".join(lines) + "\n"
