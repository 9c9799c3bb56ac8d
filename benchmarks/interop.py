"""Interop: build the other simulators' parsers, feed them our exports, re-derive ElasticFlow's ITP.

``python benchmarks/interop.py build [NAME ...]`` extracts each simulator's code from
its repository snapshot (``/work/.mirror`` bare git mirrors; the ElasticFlow artifact
from ``../shared/reference``) into ``benchmarks/_work/interop/<name>/src`` and makes a
venv of the Python it was written for (pyenv: 2.7 for Tiresias, 3.8 for Pollux and
Gavel, 3.11 for the others) with its packages from PyPI; ``tests/test_interop_parsers.py``
uses them and skips without them.

``python benchmarks/interop.py parsers`` exports real ITP cluster10 (and, for the Philly
job log, a synthetic Philly log of 4,000 jobs) in every format, runs each parser on it
in a subprocess and prints what it read and how long the whole run took (wall seconds;
the parsers' own runs include their replays where the driver runs one).

``python benchmarks/interop.py itp [--seed 0]`` prints the per-cluster table of the ITP
re-derivation (:mod:`mltraces.interop.rederive`) from the real files.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import harness
import interop_harness  # tests/ is on the path through harness

UPSTREAM = harness.ROOT.parent / "shared" / "upstream"
GAVEL_THROUGHPUTS = interop_harness.source_root("gavel") / "scheduler" / \
    "simulation_throughputs.json"


def _catalog() -> object:
    from mltraces.catalog import connect
    from mltraces.interop.rederive import TABLES

    os.environ.setdefault("MLTRACES_MIRROR", str(UPSTREAM))
    os.environ.setdefault("MLTRACES_CACHE", str(harness.WORK / "interop-cache"))
    return connect([*TABLES, "pollux.philly_jobs"], strict=True)


def _philly_log(folder: Path) -> object:
    """A connection holding a synthetic Philly job log (4,000 jobs) as philly.jobs."""
    from mltraces.catalog import connect
    from mltraces.sources.philly.synthetic import write_tarball

    tarball = write_tarball(folder / "trace-data.tar.gz", rows=4000, seed=7)
    return connect(["philly.jobs"], local={"philly.jobs": tarball}, strict=True)


def parsers() -> None:
    from mltraces.interop.exporting import export

    con = _catalog()
    runs = [("elasticflow", "elasticflow", "itp/raw/cluster10", ["n32g8", "edf"]),
            ("tiresias", "tiresias", "itp/raw/cluster10", ["n32g4.csv", "fifo"]),
            ("pollux", "pollux", "itp/raw/cluster10", ["tiresias"]),
            ("gavel", "gavel", "itp/raw/cluster10", []),
            ("blox", "philly", "philly/jobs", ["multigpu"]),
            ("synergy", "philly", "philly/jobs", [])]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        philly = _philly_log(work)
        print(f"{'parser':12} {'format':12} {'trace':18} {'written':>7} {'parsed':>6} "
              f"{'seconds':>7}  result")
        for name, fmt, trace, extra in runs:
            why = interop_harness.ready(name)
            if why:
                print(f"{name:12} {fmt:12} {trace:18} {'-':>7} {'-':>6} {'-':>7}  {why}")
                continue
            out = work / f"{name}.{fmt}"
            result = export(trace, fmt, out, con=philly if fmt == "philly" else con,
                            gavel_throughputs=GAVEL_THROUGHPUTS if fmt == "gavel" else None)
            if name == "pollux":  # Pollux steps every 60 s: its first 20 jobs
                out.write_text("".join(out.read_text().splitlines(keepends=True)[:21]))
            args = [str(out), *extra]
            if name in ("elasticflow", "tiresias"):
                args.append(str(work / f"{name}-log"))
            start = time.perf_counter()
            found = interop_harness.run_driver(name, *args)
            seconds = time.perf_counter() - start
            jobs = found["jobs"] if isinstance(found, dict) else found
            note = (f"deadline ratio {found['ratio']:.4f}" if name == "elasticflow" else
                    f"{len(found['jcts'])} jobs completed" if name == "pollux" else "parsed")
            print(f"{name:12} {fmt:12} {trace:18} {result.written:7d} {len(jobs):6d} "
                  f"{seconds:7.1f}  {note}")


def itp(seed: int) -> None:
    import pandas as pd

    from mltraces.interop.rederive import itp_rederivation

    pd.set_option("display.width", 200)
    table = itp_rederivation(_catalog(), seed=seed)
    print(table.round(4).to_string(index=False))
    print(f"total: raw {table['raw'].sum()}, kept {table['kept'].sum()}, ElasticFlow's "
          f"{table['elasticflow'].sum()}, matched {table['matched'].sum()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    build = sub.add_parser("build", help="extract the parsers and make their venvs")
    build.add_argument("names", nargs="*", choices=[[], *interop_harness.SIMULATORS],
                       default=[])
    sub.add_parser("parsers", help="run every parser on our exports")
    run = sub.add_parser("itp", help="the ITP re-derivation table")
    run.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.what == "build":
        for name in args.names or list(interop_harness.SIMULATORS):
            interop_harness.build(name)
    elif args.what == "parsers":
        parsers()
    else:
        itp(args.seed)


if __name__ == "__main__":
    sys.exit(main())
