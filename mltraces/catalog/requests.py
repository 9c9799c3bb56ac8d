"""``mltraces.requests``: every mapped request table of every source, in one typed view.

Each source maps its request logs onto the common columns in its folder's
``requests.json`` (:mod:`mltraces.requestmap`); this module only names the view's
parts for :mod:`.unions`, which unites them as ``mltraces.jobs`` unites job tables:
the tables that can be read now, a ``partial`` status naming each missing trace with
its fetch command, and ``FROM mltraces.requests_of('mooncake/conversation')`` (a trace
or a source) that raises that command instead of returning no rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mltraces.catalog.unions import UnionView, reader

if TYPE_CHECKING:
    from mltraces.mapping import Constants

__all__ = ["FILTER_MACRO", "READER", "VIEW"]

#: ``mltraces.requests_of(name)``: the requests view filtered to one trace or source
FILTER_MACRO = "requests_of"


def _entries() -> dict:
    from mltraces.requestmap import request_tables

    return request_tables()


def _select(entry: object) -> str:
    from mltraces.requestmap import table_select_sql

    return table_select_sql(entry)  # type: ignore[arg-type]


def _empty() -> str:
    from mltraces.requestmap import empty_sql

    return empty_sql()


def _select_over(entry: object, relation: str, names: list[str],
                 constants: Constants | None) -> str:
    from mltraces.requestmap import select_sql

    return select_sql(entry, relation, names, constants=constants)  # type: ignore[arg-type]


def _constants(entry: object, relation: str, names: list[str],
               scalar: Callable[[str], Any]) -> Constants:
    from mltraces.requestmap import prepare_constants

    return prepare_constants(entry, relation, names, scalar)  # type: ignore[arg-type]


VIEW = UnionView("mltraces.requests", FILTER_MACRO, _entries, _select, _empty, "request",
                 _select_over, _constants)

#: The built-in ``requests`` reader (``mltraces.catalog.readers.BUILTIN``).
READER = reader(VIEW)
