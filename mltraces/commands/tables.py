"""`mltraces tables`: the catalog's tables, where they come from, and whether they are ready."""

from __future__ import annotations

import argparse

from mltraces.commands.common import add_table_options, command_line_local


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="SOURCE", help="limit to these sources")
    parser.add_argument("--rows", action="store_true",
                        help="also build each table (fetching its files) and count its rows")
    add_table_options(parser)


def _status(schema, overrides: dict) -> str:
    """Where the table's rows would come from now, without downloading or hashing anything."""
    from mltraces.catalog import FileReader, reader_for
    from mltraces.download import cached_path
    from mltraces.registry import get_file

    reader = reader_for(schema)
    if schema.name in overrides:
        local = overrides[schema.name]
        if isinstance(reader, FileReader) or reader.local_status is None:
            return f"local {local} (unverified)"
        status = reader.local_status(schema, local)  # files listed, nothing converted or hashed
        return f"{status.state}, {status.origin}" + (f": {status.reason}" if status.reason else "")
    if not isinstance(reader, FileReader):  # data its source converts and keeps itself
        status = reader.status(schema)
        if not status.usable:
            return str(status.reason)
        return f"{status.state} ({status.origin})" + (f": {status.reason}" if status.reason
                                                       else "")
    missing = [f for f in schema.file_ids if not cached_path(get_file(f))]
    if not missing:
        return "cached"
    from mltraces.download import unavailable

    failed = {f: why for f, why in unavailable.reasons().items() if f in missing}
    if failed:
        advice = unavailable.ADVICE.replace("TABLE", schema.name)
        return (f"UNAVAILABLE here: the last fetch could not obtain {', '.join(failed)} "
                f"({next(iter(failed.values()))}); {advice}")
    return (f"not fetched yet: `mltraces fetch {' '.join(missing)}` (or it is fetched when a "
            "command names it)")


def _rows(schema, overrides: dict) -> str:
    from mltraces.catalog import materialize
    from mltraces.errors import MltracesError

    try:
        return f"{materialize(schema, overrides.get(schema.name)).rows:,}"
    except MltracesError as error:
        return f"unavailable: {str(error).splitlines()[0][:60]}"


def run(args: argparse.Namespace) -> int:
    from mltraces.catalog import resolve_local, select_schemas

    overrides = resolve_local(command_line_local(args))
    for schema in select_schemas(args.names or None):
        line = f"{schema.name:22} {schema.title}"
        print(line)
        print(f"{'':22}   files: {', '.join(schema.file_ids)}")
        print(f"{'':22}   status: {_status(schema, overrides)}")
        if args.rows:
            print(f"{'':22}   rows: {_rows(schema, overrides)}")
    return 0
