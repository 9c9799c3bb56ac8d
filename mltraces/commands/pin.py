"""`mltraces pin URL|PATH ...`: the ``files`` entries a ``source.json`` needs, measured.

A URL is downloaded through the download layer (mirror, size cap, deadline; a
temporary file in the cache, deleted afterwards); a PATH is hashed where it is.
Each entry is printed as JSON, ready to paste (a list when several are given).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="+", metavar="URL|PATH",
                        help="https URLs (pinned to a commit) or local files of your own source")
    parser.add_argument("--source", type=Path, metavar="FOLDER",
                        help="name local files relative to this source folder (default: their "
                        "base names, as files beside source.json)")


def run(args: argparse.Namespace) -> int:
    from mltraces.download.pin import pin_path, pin_url

    entries = [pin_url(t, progress=not args.quiet) if "://" in t
               else pin_path(t, relative_to=args.source) for t in args.targets]
    print(json.dumps(entries[0] if len(entries) == 1 else entries, indent=2))
    return 0
