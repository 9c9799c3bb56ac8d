"""`mltraces list`: what exists upstream and what is cached.

A name a source answers to beyond its registry files (``mltraces list
acme-util``: AcmeTrace's files on HuggingFace) is handed to that source's own
hook (:mod:`mltraces.download.extras`).
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    from mltraces.download.extras import extras, source_names

    parser.add_argument("names", nargs="*", metavar="SOURCE",
                        help=f"limit to these sources ({source_names()})")
    parser.add_argument("--urls", action="store_true", help="show each file's pinned URL")
    for extra in extras().values():
        if extra.list_options is not None:
            extra.list_options(parser)


def _list_source(name: str, urls: bool) -> None:
    from mltraces.download import cached_path, local_path
    from mltraces.download.extras import size_text
    from mltraces.registry import get_source

    source = get_source(name)
    print(f"{source.name}: {source.title} [{source.license}]")
    width = max([42, *(len(file.id) for file in source.files)])  # one column per source
    pins = max([13, *(len(FIRST_USE_WIDTH) for f in source.files if f.first_use)])
    for file in source.files:
        if cached_path(file):
            state = "local" if file.local else "cached"
        elif not file.local and local_path(file).exists():
            state = "unverified"
        else:
            state = "missing" if file.local else "-"
        size = _recorded_size(file) if file.first_use else file.size
        print(f"  {file.id:{width}} {size_text(size):>18}  {_pin_text(file):{pins}} {state}")
        if urls:
            print(f"      {file.url or file.path}")
            for mirror in file.mirrors:
                print(f"      also {mirror}")


#: the widest pin text: a file no publisher hash pins, before its first download
FIRST_USE_WIDTH = "unverified (first use)"


def _pin_text(file) -> str:
    """How the file is pinned: its hash kind, ``first-use pinned`` / ``unverified (first use)``
    for a file whose publisher gives no hash, or ``not pinned`` (a user's unpinned file)."""
    if file.first_use:
        from mltraces.download.firstuse import describe

        return describe(file)
    return file.hash_kind if file.pinned else "not pinned"


def _recorded_size(file) -> int | None:
    """A first-use file's size as its first download recorded it (None before)."""
    from mltraces.download.firstuse import effective

    return effective(file).size


def run(args: argparse.Namespace) -> int:
    from mltraces.download.extras import extras
    from mltraces.registry import all_sources

    known = extras()
    names = args.names or list(all_sources())
    for name in names:
        if name in known:
            known[name].list(args)
        else:
            _list_source(name, args.urls)
    if not args.names:
        for extra in known.values():
            print(f"{extra.name}: {extra.summary}")
        say_broken()
    return 0


def say_broken() -> None:
    """One line per broken user source folder (on stderr): what it lacks, and that the other
    sources went on without it."""
    import sys

    from mltraces.registry import broken_sources

    for name, problem in sorted(broken_sources().items()):
        print(f"mltraces: source {name} is broken, left out: {problem}", file=sys.stderr)
