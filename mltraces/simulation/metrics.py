"""Summaries of a simulation history: cumulative ETA/TTA/cost, vs Default, regret vs Oracle.

Every function takes the tidy history of :func:`mltraces.simulation.simulate`
(a pandas frame, or the dict of numpy columns the simulator builds) and computes
in DuckDB, which scans numpy arrays directly: the command line never imports
pandas, and library users get a frame from :func:`summarize` / :func:`cumulative`.
One row per (gpu, workload, eta, beta, policy, seed), or per recurrence, in the
order the jobs first appear in the history.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: One simulated job: what every summary row is keyed by.
JOB_KEYS = ["gpu", "workload", "eta", "beta", "policy", "seed"]
#: The same job under another policy: what normalisation joins on.
PEER_KEYS = ["gpu", "workload", "eta", "beta", "seed"]
TOTALS = ["energy_j", "time_s", "cost"]
VS_DEFAULT = {
    "energy_j": "energy_vs_default",
    "time_s": "time_vs_default",
    "cost": "cost_vs_default",
    "final_energy_j": "final_energy_vs_default",
    "final_time_s": "final_time_vs_default",
}

History = Any  # a pandas DataFrame or a mapping of column name -> numpy array


def summarize(history: History, references: History | None = None) -> pd.DataFrame:
    """Per simulated job: totals, the last recurrence, and ratios to Default and Oracle.

    ``references`` is a history holding the Default and Oracle runs of the same
    jobs (by default, ``history`` itself). Columns: recurrences, runs,
    failed_runs, energy_j / time_s / cost (cumulative ETA, TTA, cost),
    final_energy_j / final_time_s / final_cost (the last recurrence, retries
    included), final_batch_size, final_power_limit, energy_vs_default,
    time_vs_default, cost_vs_default, final_energy_vs_default,
    final_time_vs_default (empty without Default runs), regret (cost minus
    Oracle's) and cost_vs_oracle (empty without Oracle runs).
    """
    con = _connection(history, references)
    return con.sql(SUMMARY_SQL).df()


def summary_relation(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """:func:`summarize` as a relation on a connection from :func:`connection`."""
    return con.sql(SUMMARY_SQL)


def cumulative(history: History, references: History | None = None) -> pd.DataFrame:
    """Per recurrence: its ETA/TTA/cost (retries included) and the running totals.

    Adds ``regret`` (cumulative cost minus Oracle's at the same recurrence; empty
    without Oracle runs in ``references``, by default ``history``).
    """
    return _connection(history, references).sql(CUMULATIVE_SQL).df()


def connection(history: History, references: History | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with ``history`` and ``references`` registered for the queries."""
    return _connection(history, references)


@functools.cache
def _database() -> duckdb.DuckDBPyConnection:
    """One in-memory database per process; each query set gets its own cursor on it."""
    import duckdb

    return duckdb.connect()


def _connection(history: History, references: History | None) -> duckdb.DuckDBPyConnection:
    # a cursor is a connection of its own (registrations stay apart) without the
    # ~25 ms of opening a new database each time
    con = _database().cursor()
    con.register("history", _numbered(history))
    con.register("refs", _numbered(history if references is None else references))
    return con


def _numbered(history: History) -> Any:
    """The history plus ``_row`` (its row order), which SQL needs to keep "first" and "last"."""
    rows = np.arange(_length(history))
    if isinstance(history, Mapping):
        return {**history, "_row": rows}
    return history.assign(_row=rows)


def _length(history: History) -> int:
    if isinstance(history, Mapping):
        return len(next(iter(history.values()))) if history else 0
    return len(history)


_KEYS = ", ".join(JOB_KEYS)
_PEERS = ", ".join(PEER_KEYS)
_TOTALS_CTE = """
{name} AS (
    SELECT {keys}, max(recurrence) AS recurrences, count(*) AS runs,
           count(*) - count(*) FILTER (WHERE reached) AS failed_runs,
           sum(energy_j) AS energy_j, sum(time_s) AS time_s, sum(cost) AS cost,
           min(_row) AS _first
    FROM {table} GROUP BY {keys}
),
{name}_final AS (
    SELECT {keys}, sum(t.energy_j) AS final_energy_j, sum(t.time_s) AS final_time_s,
           sum(t.cost) AS final_cost, arg_max(t.batch_size, t._row) AS final_batch_size,
           arg_max(t.power_limit, t._row) AS final_power_limit
    FROM {table} AS t JOIN {name} AS n USING ({keys})
    WHERE t.recurrence = n.recurrences GROUP BY {keys}
)"""

SUMMARY_SQL = f"""
WITH {_TOTALS_CTE.format(name="jobs", table="history", keys=_KEYS)},
{_TOTALS_CTE.format(name="peers", table="refs", keys=_KEYS)},
dflt AS (
    SELECT {_PEERS}, energy_j, time_s, cost, final_energy_j, final_time_s
    FROM peers JOIN peers_final USING ({_KEYS}) WHERE policy = 'default'
),
oracle AS (SELECT {_PEERS}, cost FROM peers WHERE policy = 'oracle')
SELECT {_KEYS}, j.recurrences, j.runs, j.failed_runs, j.energy_j, j.time_s, j.cost,
       f.final_energy_j, f.final_time_s, f.final_cost, f.final_batch_size, f.final_power_limit,
       j.energy_j / d.energy_j AS energy_vs_default,
       j.time_s / d.time_s AS time_vs_default,
       j.cost / d.cost AS cost_vs_default,
       f.final_energy_j / d.final_energy_j AS final_energy_vs_default,
       f.final_time_s / d.final_time_s AS final_time_vs_default,
       j.cost - o.cost AS regret,
       j.cost / o.cost AS cost_vs_oracle
FROM jobs AS j JOIN jobs_final AS f USING ({_KEYS})
LEFT JOIN dflt AS d USING ({_PEERS})
LEFT JOIN oracle AS o USING ({_PEERS})
ORDER BY j._first
"""

_PER_RECURRENCE = """
SELECT {keys}, recurrence, sum(energy_j) AS energy_j, sum(time_s) AS time_s,
       sum(cost) AS cost, min(_row) AS _first
FROM {table} GROUP BY {keys}, recurrence"""

CUMULATIVE_SQL = f"""
WITH per AS ({_PER_RECURRENCE.format(keys=_KEYS, table="history")}),
running AS (
    SELECT *,
           sum(energy_j) OVER w AS cum_energy_j, sum(time_s) OVER w AS cum_time_s,
           sum(cost) OVER w AS cum_cost
    FROM per WINDOW w AS (PARTITION BY {_KEYS} ORDER BY recurrence)
),
oracle AS (
    SELECT {_PEERS}, recurrence,
           sum(cost) OVER (PARTITION BY {_KEYS} ORDER BY recurrence) AS oracle_cum_cost
    FROM ({_PER_RECURRENCE.format(keys=_KEYS, table="refs")}) WHERE policy = 'oracle'
)
SELECT {_KEYS}, recurrence, energy_j, time_s, cost, cum_energy_j, cum_time_s, cum_cost,
       cum_cost - oracle_cum_cost AS regret
FROM running LEFT JOIN oracle USING ({_PEERS}, recurrence)
ORDER BY running._first
"""
