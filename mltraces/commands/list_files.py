"""`mltraces list`: what exists upstream and what is cached.

``mltraces list acme-util`` lists AcmeTrace's utilization files on HuggingFace
from the Hub's tree API (cached after the first call): every file with its size,
whether it is downloaded or converted, and totals, before anything large is
downloaded.
"""

from __future__ import annotations

import argparse

UTIL = "acme-util"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names", nargs="*", metavar="SOURCE", help="limit to these sources (or acme-util)"
    )
    parser.add_argument("--urls", action="store_true", help="show each file's pinned URL")
    parser.add_argument(
        "--refresh", action="store_true", help="acme-util: ask the Hub where the revision points"
    )


def _size(n: int | None) -> str:
    if n is None:  # pinned by hash only (e.g. a git blob id): upstream states no size
        return "size not published"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def _list_source(name: str, urls: bool) -> None:
    from mltraces.download import cached_path, local_path
    from mltraces.registry import get_source

    source = get_source(name)
    print(f"{source.name}: {source.title} [{source.license}]")
    width = max([42, *(len(file.id) for file in source.files)])  # one column per source
    for file in source.files:
        if cached_path(file):
            state = "cached"
        elif local_path(file).exists():
            state = "unverified"
        else:
            state = "-"
        print(f"  {file.id:{width}} {_size(file.size):>18}  {file.hash_kind:13} {state}")
        if urls:
            print(f"      {file.url}")
            for mirror in file.mirrors:
                print(f"      also {mirror}")


def _list_util(urls: bool, refresh: bool) -> None:
    from mltraces.datasets.acme.hub import manifest
    from mltraces.datasets.acme.util.convert import converted_meta
    from mltraces.download import cached_path

    found = manifest(refresh=refresh)
    print(f"{UTIL}: AcmeTrace utilization on HuggingFace {found.repo} [CC-BY-4.0]")
    print(
        f"  revision {found.revision} = commit {found.commit} "
        f"(pin with MLTRACES_HF_REVISION={found.commit})"
    )
    totals: dict[str, list[int]] = {}
    for file in found.files:
        remote = file.remote(found.commit)
        states = [
            s
            for s, on in (
                ("cached", cached_path(remote) is not None),
                ("converted", converted_meta(file) is not None),
            )
            if on
        ]
        print(
            f"  {file.path.removeprefix(found.folder + '/'):48} {_size(file.size):>9}  "
            f"{'+'.join(states) or '-'}"
        )
        if urls:
            print(f"      {remote.url}")
        group = totals.setdefault(file.group or "(other)", [0, 0])
        group[0] += 1
        group[1] += file.size
    for group, (count, size) in sorted(totals.items()):
        print(f"  total {group:10} {count:4} files {_size(size):>9}")
    print(f"  total {'':10} {len(found.files):4} files {_size(found.total_size):>9}")


def run(args: argparse.Namespace) -> int:
    from mltraces.registry import all_sources

    names = args.names or list(all_sources())
    for name in names:
        if name == UTIL:
            _list_util(args.urls, args.refresh)
        else:
            _list_source(name, args.urls)
    if not args.names:
        print(f"{UTIL}: AcmeTrace raw utilization on HuggingFace (~80 GB): `mltraces list {UTIL}`")
    return 0
