"""SQL building blocks shared by the figure modules.

Figure data is computed in DuckDB, next to the tables, so that an 800k-row job
trace never has to become a pandas frame just to draw a CDF: each helper here
returns a small tidy frame (a few thousand rows at most).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: Default resolution of a thinned CDF: one kept point per 0.1 percentage point.
CDF_STEPS = 1000

_names = itertools.count()


def ecdf_sql(
    relation: str,
    value: str,
    by: Sequence[str] = (),
    weight: str | None = None,
    steps: int | None = CDF_STEPS,
) -> str:
    """SQL for the empirical CDF of ``value`` over ``relation``, per ``by`` group.

    Returns rows (``*by``, ``x``, ``cdf``) where ``cdf`` (0 to 1) is the share of
    rows — or of ``weight``, e.g. GPU time — with a value at most ``x``. Rows
    whose value or weight is NULL do not count. See :func:`cdf_from_points_sql`
    for ``steps``.

    Why a window sum over distinct values: it needs one sort of the distinct
    values instead of one pass over the table per plotted x (the AcmeTrace
    notebook's approach), which is what makes CDFs of 800k-row traces instant.
    """
    keys = "".join(f"{k}, " for k in by)
    w = weight or "1"
    points = f"""
        SELECT {keys}{value} AS x, sum({w}) AS w
        FROM {relation}
        WHERE {value} IS NOT NULL AND ({w}) IS NOT NULL
        GROUP BY ALL
    """
    return cdf_from_points_sql(points, by, steps)


def cdf_from_points_sql(points: str, by: Sequence[str] = (), steps: int | None = CDF_STEPS) -> str:
    """SQL turning weighted points (``*by``, ``x``, ``w``; x distinct per group) into CDFs.

    Each output row is an exact point of the step function. With ``steps`` the
    curve keeps only the last value in each 1/``steps`` band of the CDF (plus
    the smallest value), so the plotted curve is off by less than 1/``steps``
    while the row count no longer grows with the number of distinct values;
    ``steps=None`` keeps every distinct value. Callers that need several CDFs
    of one table build all their points in one scan and pass them here once.
    """
    keys = ", ".join(by)
    key_prefix = f"{keys}, " if by else ""
    partition = f"PARTITION BY {keys}" if by else ""
    exact = f"""
        SELECT {key_prefix}x,
               sum(w) OVER ({partition} ORDER BY x) / sum(w) OVER ({partition}) AS cdf,
               row_number() OVER ({partition} ORDER BY x) AS rank
        FROM ({points})
    """
    if steps is None:
        return f"SELECT {key_prefix}x, cdf FROM ({exact}) ORDER BY {key_prefix}x"
    return f"""
        WITH exact AS ({exact}),
        banded AS (
            SELECT *, CASE WHEN rank = 1 THEN -1 ELSE floor(cdf * {int(steps)} - 1e-9) END AS band
            FROM exact
        )
        SELECT {key_prefix}max(x) AS x, max(cdf) AS cdf
        FROM banded
        GROUP BY {key_prefix}band
        ORDER BY {key_prefix}x
    """


def ecdf(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    value: str,
    by: Sequence[str] = (),
    weight: str | None = None,
    steps: int | None = CDF_STEPS,
) -> pd.DataFrame:
    """Run :func:`ecdf_sql` and return its tidy frame (``*by``, ``x``, ``cdf``)."""
    return con.sql(ecdf_sql(relation, value, by, weight, steps)).df()


@contextlib.contextmanager
def registered(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> Iterator[str]:
    """Expose a pandas frame to SQL under a fresh name for the ``with`` block.

    Used for data that is produced in Python (simulation histories), so the
    aggregation into figure data is still written in SQL.
    """
    name = f"_mltraces_frame_{next(_names)}"
    con.register(name, frame)
    try:
        yield name
    finally:
        con.unregister(name)


def values_sql(rows: Sequence[Sequence[object]], columns: Sequence[str], alias: str = "t") -> str:
    """A ``(VALUES ...) AS alias(columns)`` relation from Python rows (strings, numbers)."""

    def literal(value: object) -> str:
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return f"{value!r}::DOUBLE"
        raise TypeError(f"cannot write {value!r} as a SQL literal")

    body = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
    return f"(VALUES {body}) AS {alias}({', '.join(columns)})"


def requests_sql(tables: Sequence[str], columns: str = "*") -> str:
    """The rows ``mltraces.requests`` holds for the traces of ``tables`` (``azure_llm.code_2023``),
    as one relation: each table through its source's request mapping, the same SELECT the
    union view runs, without setting up or uniting the other traces. Columns: the common
    ones (``trace``, ``arrival_s``, ``input_tokens``, ...) or ``columns``. The tables are
    named plainly (``FROM azure_llm.code_2023``), as :mod:`.store` finds the Parquet files
    a cached query reads."""
    from mltraces.requestmap import request_table, select_sql
    from mltraces.schema import get_schema

    parts = []
    for table in tables:
        schema = get_schema(table)
        names = [*schema.field_names, *(d.name for d in schema.derived)]
        parts.append(f"SELECT {columns} FROM ({select_sql(request_table(table), table, names)})")
    return "(" + " UNION ALL ".join(parts) + ")"
