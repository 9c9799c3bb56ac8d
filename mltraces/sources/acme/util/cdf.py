"""Recompute the paper's utilization CDF curves from the long data.

The published ``util_pkl`` curves (``acme.util_cdf``) were made by the authors'
notebook as: melt the wide frame, drop empty cells, pool every sample of every
server, then ``x = values.quantile(np.linspace(0, 1, 1000))`` (linear
interpolation) and ``y = 100 * np.linspace(0, 1, 1000)``. :func:`util_cdf_from_long`
returns the same pair of 1,000-point float64 arrays.

Billions of samples do not fit in memory, but the quantiles do not need them:
DuckDB counts each distinct value (``GROUP BY value``, which spills to disk if it
must), and the exact order statistics, hence the exact linearly interpolated
quantiles, follow from the cumulative counts. Metrics have few distinct values
(integer percentages, rounded watts), so this is small.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import duckdb

POINTS = 1000

__all__ = ["quantiles_from_counts", "util_cdf_from_long", "value_counts"]


def quantiles_from_counts(
    values: np.ndarray, counts: np.ndarray, probabilities: np.ndarray
) -> np.ndarray:
    """Linearly interpolated quantiles (numpy's default method) of a counted sample.

    ``values`` must be sorted and distinct, ``counts`` their multiplicities. The
    result equals ``np.quantile(np.repeat(values, counts), probabilities)``.
    """
    values = np.asarray(values, dtype=np.float64)
    ends = np.cumsum(counts)  # rank (0-based) of the last copy of each value is ends - 1
    n = int(ends[-1])
    position = (n - 1) * np.asarray(probabilities, dtype=np.float64)
    low = np.floor(position)
    fraction = position - low
    below = values[np.searchsorted(ends, low, side="right")]
    above = values[np.searchsorted(ends, np.minimum(low + 1, n - 1), side="right")]
    return below + (above - below) * fraction


def _bound(value: str | date | datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, date | datetime) else str(value)


def value_counts(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    metric: str,
    *,
    since: str | date | datetime | None = None,
    until: str | date | datetime | None = None,
    table: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and their counts of one metric (time filters prune months)."""
    table = table or _table_of(con, metric)
    where = ["cluster = ?", "metric = ?", "value IS NOT NULL", "NOT isnan(value)"]
    params: list[object] = [cluster, metric]
    if _bound(since) is not None:
        where.append("time >= CAST(? AS TIMESTAMPTZ)")
        params.append(_bound(since))
    if _bound(until) is not None:
        where.append("time < CAST(? AS TIMESTAMPTZ)")
        params.append(_bound(until))
    result = con.execute(
        f"SELECT value, count(*) AS n FROM {table} WHERE {' AND '.join(where)} "
        "GROUP BY value ORDER BY value",
        params,
    ).fetchnumpy()
    return result["value"].astype(np.float64), result["n"].astype(np.int64)


def _table_of(con: duckdb.DuckDBPyConnection, metric: str) -> str:
    return "acme.node_metrics" if metric.startswith("NODE_") else "acme.gpu_metrics"


def util_cdf_from_long(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    metric: str,
    *,
    since: str | date | datetime | None = None,
    until: str | date | datetime | None = None,
    scale: float = 1.0,
    points: int = POINTS,
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's CDF of one metric: ``(x, y)``, ``points`` float64 values each.

    ``y`` runs from 0 to 100 (%); ``x[i]`` is the value below which ``y[i]`` % of
    all samples (every GPU or node, every 15 s, pooled) fall. ``since``
    (inclusive) and ``until`` (exclusive) restrict the time range; ``scale``
    multiplies the values, as the notebook does for memory
    (``FB_USED``: ``scale=100 / (80 * 1024)`` gives % of an 80 GiB A100).

    Examples
    --------
    >>> x, y = util_cdf_from_long(con, "seren", "GPU_UTIL")        # doctest: +SKIP
    >>> published = con.sql(
    ...     "SELECT x FROM acme.util_cdf WHERE source_file = 'util_gpu_seren.pkl' "
    ...     "AND series = 'gpu_util' ORDER BY point").fetchnumpy()["x"]  # doctest: +SKIP
    """
    values, counts = value_counts(con, cluster, metric, since=since, until=until)
    if len(values) == 0:
        raise ValueError(
            f"no samples of {metric} for cluster {cluster!r} in that period; fetch them with "
            f"`mltraces fetch acme-util --cluster {cluster} --metric {metric}`"
        )
    probabilities = np.linspace(0, 1, num=points)
    x = quantiles_from_counts(values, counts, probabilities) * scale
    return x, probabilities * 100
