"""Benchmark: ``mltraces export`` of synthetic Helios traces of 10 k to 3.4 M jobs, streamed,
against the whole-frame export it replaced, measured in the same run.

Helios ``data.zip`` files are written by the source's own synthetic writer
(``mltraces.synthetic``, all four clusters, the published size 3,362,981 at the top)
into ``benchmarks/_work/export``, and each is converted into a catalog cache once
(``connect(local=...)``, timed apart). Then every export is one whole process,
``python -m mltraces export --trace helios/jobs --to FORMAT -o OUT --local
helios.jobs=ZIP --local helios.gpu_capacity=ZIP``, warm (the conversion reused), with
its wall seconds and its peak RSS (``os.wait4``: the child's own maximum resident set):

- ``head``: this checkout (the trace streamed in batches of ``BATCH_ROWS`` jobs);
- ``base``: the export of ``--base`` (default ``65e99be``, the whole trace in one
  pandas frame), from ``git archive`` of that commit put first on ``PYTHONPATH``,
  on the sizes up to ``--baseline-max``.

The Philly job log carries no drawn annotation, so base and head must write the
same bytes: their sha256 are compared. Formats: ``tiresias`` (annotated, written in
submission order: spooled and sorted) and ``philly`` (the trace's order, clock
times). The load is printed with each row: compare ratios of one run.

Run: ``python benchmarks/bench_export.py [--sizes 10000,100000,1000000,3362981]
[--formats tiresias,philly] [--baseline-max 1000000] [--base 65e99be]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import harness

WORK = harness.WORK / "export"
UPSTREAM = harness.ROOT.parent / "shared" / "upstream"
SIZES = (10_000, 100_000, 1_000_000, 3_362_981)
BASE = "65e99be"  # the merge of the whole-frame export (issue 25)
#: what an export of helios/jobs reads (the jobs and, for its mapping's capacity, the GPUs)
TABLES = ("helios.jobs", "helios.gpu_capacity")


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def base_tree(rev: str) -> Path:
    """The package as of ``rev`` (``git archive``), extracted once."""
    tree = WORK / f"base-{rev}"
    if not (tree / "mltraces").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", rev, "mltraces", "schemas"],
                                 cwd=harness.ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def helios_zip(rows: int) -> Path:
    from mltraces.synthetic import writer

    path = WORK / f"helios-{rows}.zip"
    if not path.exists():
        print(f"writing {rows:,} synthetic Helios jobs ...", flush=True)
    return harness._generate_once(path, lambda p: writer("helios/data.zip")(p, rows, 2024))


def environment(tree: Path | None) -> dict[str, str]:
    env = {**os.environ, "MLTRACES_CACHE": str(WORK / "cache"),
           "MLTRACES_MIRROR": str(UPSTREAM)}
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def measured(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stderr) of one whole process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read() if child.stderr else ""
    if child.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{error[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, error


def convert(zipped: Path) -> float:
    """Build the catalog's Parquet of ``zipped`` once (later exports reuse it)."""
    local = {t: str(zipped) for t in TABLES}
    code = ("from mltraces.catalog import connect; "
            f"connect(tables={list(TABLES)!r}, local={local!r}, strict=True).close()")
    seconds, _, _ = measured([sys.executable, "-c", code], environment(None))
    return seconds


def export(zipped: Path, fmt: str, tree: Path | None, out: Path) -> tuple[float, float]:
    """One export as a whole process: (seconds, peak RSS MB)."""
    command = [sys.executable, "-m", "mltraces", "export", "--trace", "helios/jobs", "--to",
               fmt, "-o", str(out), "--quiet"]
    for table in TABLES:
        command += ["--local", f"{table}={zipped}"]
    seconds, peak, _ = measured(command, environment(tree))
    return seconds, peak


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--formats", default="tiresias,philly")
    parser.add_argument("--baseline-max", type=int, default=1_000_000,
                        help="the largest size the whole-frame baseline is run on")
    parser.add_argument("--base", default=BASE)
    args = parser.parse_args()
    from mltraces.interop.exporting import BATCH_ROWS

    WORK.mkdir(parents=True, exist_ok=True)
    tree = base_tree(args.base)
    out = WORK / "out"
    out.mkdir(exist_ok=True)
    print(f"head streams batches of {BATCH_ROWS:,} jobs; base {args.base}: one frame")
    print(f"{'jobs':>10} {'format':9} {'head s':>7} {'head MB':>8} {'base s':>7} "
          f"{'base MB':>8} {'s ratio':>7} {'MB ratio':>8}  same bytes  load")
    for rows in (int(s) for s in args.sizes.split(",")):
        zipped = helios_zip(rows)
        print(f"{rows:>10,} catalog conversion {convert(zipped):.1f} s (once)", flush=True)
        for fmt in args.formats.split(","):
            mine = out / f"head.{fmt}"
            head_s, head_mb = export(zipped, fmt, None, mine)
            row = f"{rows:>10,} {fmt:9} {head_s:7.1f} {head_mb:8.0f}"
            if rows <= args.baseline_max:
                theirs = out / f"base.{fmt}"
                base_s, base_mb = export(zipped, fmt, tree, theirs)
                same = ("yes" if digest(mine) == digest(theirs) else "NO") if fmt == "philly" \
                    else "-"
                row += (f" {base_s:7.1f} {base_mb:8.0f} {head_s / base_s:7.2f} "
                        f"{head_mb / base_mb:8.2f}  {same:10}")
                theirs.unlink()
            else:
                row += f" {'':7} {'':8} {'':7} {'':8}  {'':10}"
            mine.unlink()
            print(f"{row}  {load()}", flush=True)


if __name__ == "__main__":
    main()
