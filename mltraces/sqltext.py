"""SQL text for DuckDB: quoted identifiers, literals, and file paths that are never patterns.

Kept apart from :mod:`mltraces.schema` so that :mod:`mltraces.config` can check the
cache path with :func:`sql_path` without importing the schema layer (which reads
the configured user source folders).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mltraces.errors import SchemaError

__all__ = ["quote_ident", "sql_glob", "sql_literal", "sql_path"]


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB (``group`` is a keyword, so always quote)."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """A SQL literal for a JSON scalar from a schema (or any text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise SchemaError(f"cannot use {value!r} as a SQL literal")


_GLOB_CHARS = {"[": "[[]", "*": "[*]", "?": "[?]"}


def sql_path(path: str | Path) -> str:
    """A SQL literal naming exactly one file for DuckDB's file functions, never a pattern.

    ``read_csv('trace[12].csv')`` would read ``trace1.csv`` and ``trace2.csv``:
    DuckDB expands ``[...]``, ``*`` and ``?``. Each becomes a one-character class
    (``[[]``, ``[*]``, ``[?]``). DuckDB's matcher cannot combine such a class with
    a backslash in the same path, so that case is refused with the fix.

    >>> sql_path("/data/trace[12].csv")
    "'/data/trace[[]12].csv'"
    """
    return sql_literal(_escape_glob(str(path)))


def _escape_glob(text: str) -> str:
    # on POSIX a backslash is a file-name character DuckDB's matcher mistakes for an escape
    if any(c in text for c in _GLOB_CHARS) and "\\" in text and os.sep == "/":
        raise SchemaError(f"cannot read {text!r}: DuckDB cannot open a path that holds both a "
                          "backslash and one of [ * ?; rename the file or its folder")
    return "".join(_GLOB_CHARS.get(c, c) for c in text)


def sql_glob(folder: str | Path, pattern: str) -> str:
    """A SQL literal for the files matching ``pattern`` (a glob) under exactly ``folder``.

    >>> sql_glob("/cache [1]", "*/month=2023-07/*.parquet")
    "'/cache [[]1]/*/month=2023-07/*.parquet'"
    """
    return sql_literal(_escape_glob(str(folder)).rstrip("/") + "/" + pattern)
