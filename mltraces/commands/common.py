"""Options shared by the verbs that read catalog tables."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mltraces.config import local_tables, parse_local

if TYPE_CHECKING:
    import duckdb


def add_table_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--local TABLE=PATH`` (repeatable) to a verb that reads tables."""
    parser.add_argument(
        "--local",
        action="append",
        default=[],
        metavar="TABLE=PATH",
        help="use a local file in the upstream format for TABLE (repeatable; a folder holding "
        "the upstream file names, or for a table its source reads itself any folder that "
        "reader takes); also read from MLTRACES_LOCAL='TABLE=PATH,...'",
    )


def local_overrides(args: argparse.Namespace) -> dict:
    """``MLTRACES_LOCAL`` overrides, then ``--local`` ones (the command line wins)."""
    overrides = local_tables()
    for spec in getattr(args, "local", []) or []:
        overrides.update(parse_local(spec))
    return overrides


def open_catalog(
    args: argparse.Namespace, tables: list[str] | None = None, *, strict: bool = False
) -> duckdb.DuckDBPyConnection:
    """A catalog connection honouring the verb's ``--local`` options.

    ``strict`` raises when a table cannot be built, instead of a view that raises when queried.
    """
    from mltraces.catalog import connect

    return connect(tables=tables, local=local_overrides(args), strict=strict)
