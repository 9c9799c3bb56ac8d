"""`mltraces verify`: re-hash the cache on demand."""

from __future__ import annotations

import argparse

UTIL = "acme-util"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="SOURCE|FILE",
                        help="sources (zeus, itp, acme, acme-util) or file ids; default: all")


def _util_files() -> list:
    """The downloaded acme-util CSVs, from the cached Hub file lists (no network)."""
    from mltraces.datasets.acme.hub import cached_manifests
    from mltraces.download import local_path

    files = {f.url: f for m in cached_manifests() for f in m.remote_files()}
    return [f for f in files.values() if local_path(f).is_file()]


def run(args: argparse.Namespace) -> int:
    from mltraces.download import expand, verify_cached

    names = [n for n in args.names if n != UTIL]
    files = expand(names) if names or not args.names else []
    if UTIL in args.names or not args.names:
        files += _util_files()
    results = verify_cached(files)
    bad = [r for r in results if r.status == "corrupt"]
    for result in results:
        if result.status != "missing" or args.names:
            print(f"{result.status:8} {result.id}  {result.detail}".rstrip())
    checked = sum(r.status != "missing" for r in results)
    print(f"{checked} cached files checked, {len(bad)} corrupt (deleted)")
    if UTIL in args.names or not args.names:
        _clean_util_leftovers()
    return 1 if _verify_tables(bool(args.names)) or bad else 0


def _clean_util_leftovers() -> None:
    """Remove what killed utilization conversions left (partial Parquet, spill files)."""
    from mltraces.datasets.acme.util import layout

    for path in layout.clean_leftovers():
        print(f"removed  {path.relative_to(layout.root().parent)}  left by a killed conversion")


def _verify_tables(show_all: bool) -> bool:
    """Check the converted tables too (after the files: those built from deleted ones go)."""
    from mltraces.catalog import verify_tables

    checks = verify_tables(rehash=True)
    for check in checks:
        if check.status != "ok" or show_all:
            print(f"{check.status:8} {check.id}  {check.detail}".rstrip())
    corrupt = sum(c.status == "corrupt" for c in checks)
    print(f"{len(checks)} converted tables checked, {corrupt} corrupt (deleted)")
    return corrupt > 0
