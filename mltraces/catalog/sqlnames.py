"""The tables a query reads, as DuckDB parses it: never a regular expression over SQL.

``mltraces sql`` sets up (and fetches) only the tables a query names, so it must
know them before the catalog exists. DuckDB's own parser answers: a query it can
serialize (``json_serialize_sql``: every SELECT, CTEs and subqueries included) is
walked for its base tables; a statement it cannot serialize (``PIVOT``, ``COPY``,
``SUMMARIZE`` ...) is read through DuckDB's tokenizer, which already tells names
from string literals and comments, for ``schema.name`` pairs that are not calls.
Function and macro calls (``acme.floor_time(...)``, ``mltraces.jobs_of(...)``) are
never tables. Names are lower-cased: DuckDB's catalog names are case-insensitive.

>>> read_tables("SELECT count(*) FROM itp.jobs WHERE cluster IN "
...             "(SELECT c FROM \\"zeus\\".\\"power\\") AND note <> 'acme.x'")
['itp.jobs', 'zeus.power']
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

__all__ = ["names_word", "read_tables", "string_literals"]


def read_tables(query: str) -> list[str]:
    """Every ``schema.table`` the query reads, in order of appearance, each once."""
    con = _parser()
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [query]).fetchone()[0])
        found = list(_base_tables(tree)) if not tree.get("error") else _tokens(con, query)
    finally:
        con.close()
    return list(dict.fromkeys(found))


#: this process's DuckDB for parsing (none holds a table): each query gets a cursor of it,
#: which costs microseconds where a new DuckDB costs ~15 ms
_parsers: dict[int, Any] = {}
_parsers_lock = threading.Lock()


def _parser() -> duckdb.DuckDBPyConnection:
    """A cursor of this process's parsing DuckDB (a forked child makes its own)."""
    import duckdb

    with _parsers_lock:
        shared = _parsers.get(os.getpid())
        if shared is None:
            shared = _parsers[os.getpid()] = duckdb.connect()
        return shared.cursor()


def string_literals(query: str) -> set[str]:
    """The values of the query's string literals (``'acme/kalos'`` is ``acme/kalos``)."""
    import duckdb

    try:
        marks = duckdb.tokenize(query)
    except duckdb.Error:
        return set()
    ends = [start for start, _ in marks[1:]] + [len(query)]
    return {query[start:end].strip()[1:-1].replace("''", "'")
            for (start, kind), end in zip(marks, ends, strict=True)
            if kind == duckdb.token_type.string_const and query[start] == "'"}


def _base_tables(node: Any) -> Iterator[str]:
    """``schema.table`` of every base-table reference in a serialized parse tree."""
    stack = [node]
    while stack:  # iterative: a deeply nested query cannot exhaust the recursion limit
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "BASE_TABLE" and item.get("schema_name"):
                yield f"{item['schema_name']}.{item['table_name']}".lower()
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def names_word(query: str, word: str) -> bool:
    """Whether the query names ``word`` as an identifier or keyword, outside literals and
    comments (``SELECT comment FROM duckdb_columns()`` names ``comment``)."""
    import duckdb

    try:
        marks = duckdb.tokenize(query)
    except duckdb.Error:
        return False
    ends = [start for start, _ in marks[1:]] + [len(query)]
    kinds = (duckdb.token_type.identifier, duckdb.token_type.keyword)
    return any(kind in kinds and _unquote(query[start:end].strip()).lower() == word
               for (start, kind), end in zip(marks, ends, strict=True))


def _tokens(con: Any, query: str) -> list[str]:
    """``schema.name`` pairs outside literals and comments that are not calls (tokenizer)."""
    import duckdb

    try:
        marks = duckdb.tokenize(query)
    except duckdb.Error:
        return []
    ends = [start for start, _ in marks[1:]] + [len(query)]
    tokens = [(query[start:end].strip(), kind) for (start, kind), end in zip(marks, ends,
                                                                           strict=True)]
    identifier, operator = duckdb.token_type.identifier, duckdb.token_type.operator
    found = []
    for k in range(len(tokens) - 2):
        (first, kind1), (dot, kind2), (second, kind3) = tokens[k:k + 3]
        before = tokens[k - 1][0] if k else ""
        after = tokens[k + 3][0] if k + 3 < len(tokens) else ""
        if (kind1 == identifier and kind2 == operator and dot == "." and kind3 == identifier
                and not before.endswith(".") and not after.startswith(("(", "."))):
            found.append(f"{_unquote(first)}.{_unquote(second)}".lower())
    return found


def _unquote(name: str) -> str:
    """A bare or double-quoted identifier as its name."""
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name
