"""`mltraces docs`: build the documentation site into a folder (mkdocs, offline)."""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, default=Path("site"), metavar="DIR",
                        help="folder the site is built into (default: site)")
    parser.add_argument("--readme", action="store_true",
                        help="instead, rewrite the README's table of traces (from the source "
                        "folders) and its speed (from benchmarks/)")


def run(args: argparse.Namespace) -> int:
    from mltraces.docs import build

    if args.readme:
        from mltraces.docs.readme import README, refresh

        README.write_text(refresh(README.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the table of traces and the speed measured into {README}")
        return 0
    folder = build(args.output)
    if not args.quiet:
        print(f"built the site into {folder} (open {folder / 'index.html'})")
    return 0
