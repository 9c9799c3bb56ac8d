"""`mltraces verify`: re-hash the cache on demand (and a user's pinned local files)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    from mltraces.download.extras import source_names

    parser.add_argument("names", nargs="*", metavar="SOURCE|FILE",
                        help=f"sources ({source_names()}) or file ids; default: all")


def run(args: argparse.Namespace) -> int:
    from mltraces.download import expand, verify_cached
    from mltraces.download.extras import extras, split

    names, chosen = split(args.names)
    files = expand(names) if names or not args.names else []
    for extra in chosen if args.names else list(extras().values()):
        if extra.verify_files is not None:
            files += extra.verify_files()
    results = verify_cached(files)
    bad = [r for r in results if r.status == "corrupt"]
    changed = [r for r in results if r.status == "mismatch"]  # a user's own file: kept
    for result in results:
        if result.status != "missing" or args.names:
            print(f"{result.status:8} {result.id}  {result.detail}".rstrip())
    checked = sum(r.status != "missing" for r in results)
    print(f"{checked} cached files checked, {len(bad)} corrupt (deleted)")
    if not args.names:
        from mltraces.commands.list_files import say_broken

        say_broken()
    for extra in chosen if args.names else list(extras().values()):
        if extra.verify_cleanup is not None:
            for path in extra.verify_cleanup():
                print(f"removed  {path}  left by a killed conversion")
    return 1 if _verify_tables(bool(args.names)) or bad or changed else 0


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
