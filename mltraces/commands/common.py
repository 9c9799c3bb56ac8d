"""Options shared by the verbs that read catalog tables."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mltraces.config import parse_local

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


def command_line_local(args: argparse.Namespace) -> dict:
    """The ``--local`` options alone; the catalog merges them over ``MLTRACES_LOCAL``."""
    overrides: dict = {}
    for spec in getattr(args, "local", []) or []:
        overrides.update(parse_local(spec))
    return overrides


def local_overrides(args: argparse.Namespace) -> dict:
    """Every local override in effect: ``MLTRACES_LOCAL``, then ``--local`` (the command line
    wins), merged where the catalog merges them (:func:`~mltraces.catalog.selection.resolve_local`,
    the one reader of the variable)."""
    from mltraces.catalog.selection import resolve_local

    return resolve_local(command_line_local(args))


def open_catalog(
    args: argparse.Namespace, tables: list[str] | None = None, *, strict: bool = False,
    comments: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A catalog connection honouring the verb's ``--local`` options.

    ``strict`` raises when a table cannot be built, instead of a view that raises when queried;
    ``comments`` attaches every column's description as a DuckDB comment.
    """
    import warnings

    from mltraces.catalog import connect
    from mltraces.errors import PartialViewWarning

    with warnings.catch_warnings():  # the verbs say what a partial view lacks themselves
        warnings.simplefilter("ignore", PartialViewWarning)
        return connect(tables=tables, local=command_line_local(args), strict=strict,
                       comments=comments)
