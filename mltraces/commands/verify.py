"""`mltraces verify`: re-hash the cache on demand."""

from __future__ import annotations

import argparse

HELP = "re-hash every cached file against the registry"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="SOURCE|FILE", help="default: all")


def run(args: argparse.Namespace) -> int:
    from mltraces.fetch import expand, verify_cached

    results = verify_cached(expand(args.names))
    bad = [r for r in results if r.status == "corrupt"]
    for result in results:
        if result.status != "missing" or args.names:
            print(f"{result.status:8} {result.id}  {result.detail}".rstrip())
    checked = sum(r.status != "missing" for r in results)
    print(f"{checked} cached files checked, {len(bad)} corrupt (deleted)")
    return 1 if bad else 0
