"""`mltraces import`: a workload file of another simulator becomes a source of its own.

It lands in ``MLTRACES_SOURCES`` (or ``--into``) as a source folder: the file,
pinned, with its simulator's citation, schema and jobs mapping, so it appears in
``mltraces.jobs`` as ``NAME/jobs`` and, when the format carries run times,
replays as ``mltraces schedule --trace NAME/all``. See :mod:`mltraces.interop`.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    from mltraces.interop.names import FORMAT_NAMES

    parser.add_argument("path", metavar="FILE", help="the workload file")
    parser.add_argument("--from", dest="format", choices=FORMAT_NAMES,
                        help="its format (default: told from its first line)")
    parser.add_argument("--name", help="the new source's name (default: from the file name)")
    parser.add_argument("--into", metavar="FOLDER", help="the folder of source folders "
                        "(default: the first of MLTRACES_SOURCES, else the config folder's)")


def run(args: argparse.Namespace) -> int:
    from mltraces.interop.importing import import_workload

    made = import_workload(args.path, args.format, name=args.name, into=args.into)
    if not args.quiet:
        print(f"imported {args.path} ({made.format}) as source {made.name} in {made.folder}")
        print(f"  mltraces sql \"SELECT count(*) FROM mltraces.jobs WHERE trace = "
              f"'{made.trace}'\"")
        if made.replay:
            print(f"  mltraces schedule --trace {made.replay} --cluster n8g8")
        else:
            print(f"  (a {made.format} file has no run times: it does not replay here)")
    return 0
