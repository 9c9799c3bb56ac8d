"""AcmeTrace's utilization files on HuggingFace as ``acme-util`` on the command line.

``mltraces list acme-util`` lists them from the Hub's tree API (cached after the
first call): every file with its size, whether it is downloaded or converted, and
totals, before anything large is downloaded. ``mltraces fetch acme-util`` picks
them by ``--cluster``/``--metric``/``--since``/``--until`` and converts them to
Parquet; ``mltraces verify`` re-hashes the downloaded ones. The verbs find this
hook by scanning (:mod:`mltraces.download.extras`); they know no source by name.
"""

from __future__ import annotations

import argparse
import sys

from mltraces.download.extras import Extra

NAME = "acme-util"
_FETCH_OPTIONS = ("cluster", "metric", "since", "until", "revision", "no_convert", "delete_csv")


def _size(n: int | None) -> str:
    from mltraces.download.extras import size_text

    return size_text(n)


def list_files(args: argparse.Namespace) -> None:
    """Every file of the dataset with its size and state, then totals per group."""
    from mltraces.download import cached_path
    from mltraces.sources.acme.hub import manifest
    from mltraces.sources.acme.util.convert import converted_meta

    found = manifest(refresh=getattr(args, "refresh", False))
    print(f"{NAME}: AcmeTrace utilization on HuggingFace {found.repo} [CC-BY-4.0]")
    print(f"  revision {found.revision} = commit {found.commit} "
          f"(pin with MLTRACES_HF_REVISION={found.commit})")
    totals: dict[str, list[int]] = {}
    for file in found.files:
        remote = file.remote(found.commit)
        states = [s for s, on in (("cached", cached_path(remote) is not None),
                                  ("converted", converted_meta(file) is not None)) if on]
        print(f"  {file.path.removeprefix(found.folder + '/'):48} {_size(file.size):>9}  "
              f"{'+'.join(states) or '-'}")
        if getattr(args, "urls", False):
            print(f"      {remote.url}")
        group = totals.setdefault(file.group or "(other)", [0, 0])
        group[0] += 1
        group[1] += file.size
    for group, (count, size) in sorted(totals.items()):
        print(f"  total {group:10} {count:4} files {_size(size):>9}")
    print(f"  total {'':10} {len(found.files):4} files {_size(found.total_size):>9}")


def list_options(parser: argparse.ArgumentParser) -> list[str]:
    parser.add_argument("--refresh", action="store_true",
                        help=f"{NAME}: ask the Hub where the revision points")
    return ["refresh"]


def fetch_options(parser: argparse.ArgumentParser) -> list[str]:
    util = parser.add_argument_group(
        f"{NAME} (AcmeTrace utilization on HuggingFace, ~80 GB; see `mltraces list {NAME}`)")
    util.add_argument("--cluster", help="seren, kalos and/or ipmi (comma-separated); default all")
    util.add_argument("--metric",
                      help="metrics, e.g. GPU_UTIL,SM_ACTIVE,NODE_CPU_UTILIZATION; default all")
    util.add_argument("--since", help="first day (YYYY-MM-DD or YYYY-MM) of split monthly files")
    util.add_argument("--until", help="last day (inclusive) of split monthly files")
    util.add_argument("--revision", help="Hub branch, tag or commit (MLTRACES_HF_REVISION)")
    util.add_argument("--no-convert", action="store_true",
                      help="only download and verify the CSVs")
    util.add_argument("--delete-csv", action="store_true",
                      help="delete each CSV once converted (keeps only the Parquet; disk for one "
                      "CSV at a time)")
    return list(_FETCH_OPTIONS)


def fetch(args: argparse.Namespace) -> None:
    """Download, verify and convert the chosen files; print where they are."""
    from mltraces.sources.acme.util.fetching import fetch_util

    def report(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    done = fetch_util(args.cluster, args.metric, args.since, args.until,
                      revision=args.revision, convert_files=not args.no_convert,
                      keep_csv=not args.delete_csv, report=report)
    if args.quiet:
        return
    for file in done.files:
        where = done.csv.get(file.id) or done.converted.get(file.id)
        print(f"ok  {file.id}  {where}")
    commit = done.manifest.commit
    print(f"{len(done.files)} file(s) from {done.manifest.repo}@{commit} "
          f"(pin with MLTRACES_HF_REVISION={commit})")
    if not args.no_convert:
        print(f"Parquet dataset: {done.dataset}")


def verify_files() -> list:
    """The downloaded utilization CSVs, from the cached Hub file lists (no network)."""
    from mltraces.download import local_path
    from mltraces.sources.acme.hub import cached_manifests

    files = {f.url: f for m in cached_manifests() for f in m.remote_files()}
    return [f for f in files.values() if local_path(f).is_file()]


def verify_cleanup() -> list:
    """Remove what killed utilization conversions left (partial Parquet, spill files)."""
    from mltraces.sources.acme.util import layout

    return [path.relative_to(layout.root().parent) for path in layout.clean_leftovers()]


EXTRAS = {NAME: Extra(
    name=NAME,
    summary=f"AcmeTrace raw utilization on HuggingFace (~80 GB): `mltraces list {NAME}`",
    list=list_files, fetch=fetch, fetch_options=fetch_options, list_options=list_options,
    verify_files=verify_files, verify_cleanup=verify_cleanup)}
