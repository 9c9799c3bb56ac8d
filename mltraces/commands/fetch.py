"""`mltraces fetch`: download and verify files."""

from __future__ import annotations

import argparse

HELP = "download and verify files: all, a source, or file ids"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="SOURCE|FILE",
        help="source names (zeus, itp, acme) or file ids (itp/raw-traces.tar.gz); default: all",
    )


def run(args: argparse.Namespace) -> int:
    from mltraces.fetch import expand, fetch_file, fetch_members
    from mltraces.sources import all_sources

    sources = all_sources()
    for file in expand(args.names):
        path = fetch_file(file)
        if not args.quiet:
            print(f"ok  {file.id}  {path}")
        if file.kind == "tar.gz":
            members = fetch_members(file)
            if not args.quiet:
                print(f"    unpacked {len(members)} members")
    if not args.names and not args.quiet:
        print(f"fetched {len(sources)} sources")
    return 0
