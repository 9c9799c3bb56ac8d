"""`mltraces list`: what exists upstream and what is cached."""

from __future__ import annotations

import argparse

HELP = "list sources and files: URL pin, size, hash kind, cached or not"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="SOURCE", help="limit to these sources")
    parser.add_argument("--urls", action="store_true", help="show each file's pinned URL")


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def run(args: argparse.Namespace) -> int:
    from mltraces.fetch import cached_path, local_path
    from mltraces.sources import all_sources, get_source

    names = args.names or list(all_sources())
    for name in names:
        source = get_source(name)
        print(f"{source.name}: {source.title} [{source.license}]")
        for file in source.files:
            if cached_path(file):
                state = "cached"
            elif local_path(file).exists():
                state = "unverified"
            else:
                state = "-"
            print(f"  {file.id:42} {_size(file.size):>9}  {file.hash_kind:13} {state}")
            if args.urls:
                print(f"      {file.url}")
                for mirror in file.mirrors:
                    print(f"      also {mirror}")
    return 0
