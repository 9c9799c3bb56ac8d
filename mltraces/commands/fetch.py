"""`mltraces fetch`: download and verify files.

A name a source answers to beyond its registry files (``acme-util``: AcmeTrace's
utilization files on HuggingFace) is handed to that source's own hook with the
options it adds (:mod:`mltraces.download.extras`); such names are fetched only
when named.
"""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    from mltraces.download.extras import extras, source_names

    parser.add_argument(
        "names",
        nargs="*",
        metavar="SOURCE|FILE",
        help=f"source names ({source_names()}) or file ids (SOURCE/FILE); default: every "
        "registered file (the others only when named)",
    )
    owners: dict[str, str] = {}
    for extra in extras().values():
        if extra.fetch_options is not None:
            owners.update(dict.fromkeys(extra.fetch_options(parser), extra.name))
    parser.set_defaults(_extra_options=owners)


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
            # an archive marked unpack: false is read member by member, never unpacked
            members = fetch_members(file) if file.unpacked and file.kind == "tar.gz" else None
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
        from mltraces.download.unavailable import ADVICE

        raise MltracesError(
            f"{len(failures)} of {len(files)} files could not be fetched (each reason above); "
            f"for the tables that need them, {ADVICE.replace('it (', 'them (')}"
        )
    if not names and not quiet:
        from mltraces.commands.list_files import say_broken

        print(f"fetched {len(all_sources())} sources")
        say_broken()


def run(args: argparse.Namespace) -> int:
    from mltraces.download.extras import split

    names, chosen = split(args.names)
    asked = {e.name for e in chosen}
    owners = getattr(args, "_extra_options", {})
    misplaced = sorted({f"--{dest.replace('_', '-')}" for dest, owner in owners.items()
                        if getattr(args, dest, None) and owner not in asked})
    if misplaced:
        owner = owners[misplaced[0][2:].replace("-", "_")]
        raise KeyError(f"{', '.join(misplaced)} only apply to `mltraces fetch {owner}`")
    if names or not chosen:
        _fetch_registry(names, args.quiet)
    for extra in chosen:
        if extra.fetch is None:
            raise KeyError(f"{extra.name} cannot be fetched; `mltraces list {extra.name}`")
        extra.fetch(args)
    return 0
