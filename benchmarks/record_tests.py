"""Run the README's test command and the slow tests, and record what they counted and took.

    python benchmarks/record_tests.py            # both commands (about 3 minutes on 2 cores)
    python benchmarks/record_tests.py --only fast

Writes ``benchmarks/test_runs.json``: per command, the date, commit, load average before
and after, and pytest's own closing counts (passed, skipped, ...) and seconds. The
documentation's performance page is drawn from that file, so the test counts and timings
a reader sees are one measurement, never typed by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "test_runs.json"
COMMANDS = {"fast": ["-m", "pytest", "-q"], "slow": ["-m", "pytest", "-q", "-m", "slow"]}
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")


def summary(output: str) -> dict[str, int | float]:
    """pytest's closing line (``1541 passed, 14 skipped in 71.2s``) as numbers."""
    line = next(line for line in reversed(output.splitlines()) if " in " in line and
                _COUNT.search(line))
    counts: dict[str, int | float] = {kind: int(n) for n, kind in _COUNT.findall(line)}
    counts["seconds"] = float(re.search(r" in ([\d.]+)s", line).group(1))
    return counts


def run(name: str) -> dict[str, object]:
    load = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run([sys.executable, *COMMANDS[name]], cwd=ROOT, capture_output=True,
                          text=True)
    wall = time.monotonic() - started
    commit = subprocess.run(["git", "rev-parse", "--short=8", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {"command": "python " + " ".join(COMMANDS[name]).replace(" -q", ""),
            "date": datetime.date.today().isoformat(), "commit": commit,
            "exit": done.returncode, "wall_s": round(wall, 1), "cores": os.cpu_count(),
            "load": [round(load, 1), round(os.getloadavg()[0], 1)], **summary(done.stdout)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(COMMANDS), action="append")
    args = parser.parse_args()
    record = json.loads(OUT.read_text()) if OUT.is_file() else {"runs": {}}
    for name in args.only or list(COMMANDS):
        record["runs"][name] = run(name)
        print(name, record["runs"][name])
    record["$comment"] = ("Written by benchmarks/record_tests.py: the test command and the slow "
                          "tests as last run, with pytest's own counts; the documentation's "
                          "performance page is drawn from it.")
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    harness.refresh_readme()
    return 0


if __name__ == "__main__":
    sys.exit(main())
