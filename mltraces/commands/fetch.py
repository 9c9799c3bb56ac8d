"""`mltraces fetch`: download and verify files.

``acme-util`` is a pseudo-source: AcmeTrace's raw utilization metrics on
HuggingFace (~80 GB), chosen with ``--cluster``/``--metric``/``--since``/``--until``
from the Hub's file list, then converted to Parquet.
"""

from __future__ import annotations

import argparse
import sys

UTIL = "acme-util"
_UTIL_OPTIONS = ("cluster", "metric", "since", "until", "revision")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="SOURCE|FILE",
        help="source names (zeus, itp, acme, acme-util) or file ids (itp/raw-traces.tar.gz); "
        "default: every registered file (acme-util only when named)",
    )
    util = parser.add_argument_group(
        "acme-util (AcmeTrace utilization on HuggingFace, ~80 GB; see `mltraces list acme-util`)"
    )
    util.add_argument("--cluster", help="seren, kalos and/or ipmi (comma-separated); default all")
    util.add_argument(
        "--metric", help="metrics, e.g. GPU_UTIL,SM_ACTIVE,NODE_CPU_UTILIZATION; default all"
    )
    util.add_argument("--since", help="first day (YYYY-MM-DD or YYYY-MM) of split monthly files")
    util.add_argument("--until", help="last day (inclusive) of split monthly files")
    util.add_argument("--revision", help="Hub branch, tag or commit (MLTRACES_HF_REVISION)")
    util.add_argument("--no-convert", action="store_true", help="only download and verify the CSVs")
    util.add_argument(
        "--delete-csv",
        action="store_true",
        help="delete each CSV once converted (keeps only the Parquet; disk for one CSV at a time)",
    )


def _fetch_registry(names: list[str], quiet: bool) -> None:
    """Fetch every named file, going on past failures; raise once at the end if any failed."""
    from mltraces.download import expand, fetch_file, fetch_members
    from mltraces.errors import MltracesError
    from mltraces.registry import all_sources

    files = expand(names)
    failures: list[MltracesError] = []
    for file in files:
        try:
            path = fetch_file(file)
            members = fetch_members(file) if file.kind == "tar.gz" else None
        except MltracesError as error:
            failures.append(error)
            continue
        if not quiet:
            print(f"ok  {file.id}  {path}")
            if members is not None:
                print(f"    unpacked {len(members)} members")
    if len(failures) == 1:
        raise failures[0]
    if failures:
        for error in failures:
            print(f"failed  {error}", file=sys.stderr)
        raise MltracesError(
            f"{len(failures)} of {len(files)} files could not be fetched (each reason above)"
        )
    if not names and not quiet:
        print(f"fetched {len(all_sources())} sources")


def _fetch_util(args: argparse.Namespace) -> None:
    from mltraces.datasets.acme.util.fetching import fetch_util

    def report(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    done = fetch_util(
        args.cluster,
        args.metric,
        args.since,
        args.until,
        revision=args.revision,
        convert_files=not args.no_convert,
        keep_csv=not args.delete_csv,
        report=report,
    )
    if args.quiet:
        return
    for file in done.files:
        where = done.csv.get(file.id) or done.converted.get(file.id)
        print(f"ok  {file.id}  {where}")
    commit = done.manifest.commit
    print(
        f"{len(done.files)} file(s) from {done.manifest.repo}@{commit} "
        f"(pin with MLTRACES_HF_REVISION={commit})"
    )
    if not args.no_convert:
        print(f"Parquet dataset: {done.dataset}")


def run(args: argparse.Namespace) -> int:
    names = [n for n in args.names if n != UTIL]
    util = UTIL in args.names
    used = [f"--{o}" for o in _UTIL_OPTIONS if getattr(args, o)]
    used += [
        flag
        for flag, on in (("--no-convert", args.no_convert), ("--delete-csv", args.delete_csv))
        if on
    ]
    if used and not util:
        raise KeyError(f"{', '.join(used)} only apply to `mltraces fetch {UTIL}`")
    if names or not util:
        _fetch_registry(names, args.quiet)
    if util:
        _fetch_util(args)
    return 0
