"""The Zeus engine's inputs from the catalog: the train and power traces, the Alibaba groups.

:mod:`mltraces.simulation` takes a :class:`~mltraces.simulation.TraceSet` (and a frame
of recurring groups); this module reads them from a catalog connection, naming the
tables in every error, and offers :func:`simulate` and :func:`replay_alibaba` that take
either a connection or a trace set (``mltraces.simulate`` is this :func:`simulate`).

>>> import mltraces
>>> con = mltraces.connect(list(TRACE_TABLES))                               # doctest: +SKIP
>>> result = simulate(con, "v100", "librispeech", "zeus,default", range(1, 4))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mltraces.simulation.traces import POWER_COLUMNS, TRAIN_COLUMNS, SimulationError, TraceSet

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    import pandas as pd

    from mltraces.simulation import SimulationResult

#: the catalog tables of the train and power traces, in TraceSet's order
TRACE_TABLES = ("zeus.train", "zeus.power")
#: the catalog table of the Alibaba recurring-job groups
GROUPS_TABLE = "zeus.alibaba_groups"


def read_table(con: duckdb.DuckDBPyConnection, table: str, columns: list[str]
               ) -> dict[str, np.ndarray]:
    """``columns`` of a catalog table as numpy arrays; an unreadable table is a SimulationError."""
    import duckdb

    names = ", ".join(f'"{c}"' for c in columns)
    try:
        return con.sql(f"SELECT {names} FROM {table}").fetchnumpy()
    except (duckdb.InvalidInputException, duckdb.CatalogException, duckdb.IOException) as error:
        raise SimulationError(
            f"cannot read {table}: {error}; fetch it (mltraces fetch zeus) or pass "
            f"--local {table}=PATH (MLTRACES_LOCAL) with a copy in the upstream format"
        ) from None


def load_traces(con: duckdb.DuckDBPyConnection) -> TraceSet:
    """The train and power traces from a catalog connection (errors name the tables)."""
    train, power = TRACE_TABLES
    return TraceSet(read_table(con, train, TRAIN_COLUMNS), read_table(con, power, POWER_COLUMNS),
                    labels=TRACE_TABLES)


def load_groups(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The Alibaba recurring-job groups from a catalog connection."""
    import pandas as pd

    from mltraces.simulation.alibaba import GROUP_COLUMNS

    return pd.DataFrame(read_table(con, GROUPS_TABLE, GROUP_COLUMNS))


def trace_set(traces: TraceSet | duckdb.DuckDBPyConnection) -> TraceSet:
    """``traces`` itself, or the trace set read from a catalog connection."""
    return traces if isinstance(traces, TraceSet) else load_traces(traces)


def simulate(traces: TraceSet | duckdb.DuckDBPyConnection, *args: Any, **kwargs: Any
             ) -> SimulationResult:
    """:func:`mltraces.simulation.simulate` on a trace set or a catalog connection."""
    from mltraces.simulation import simulate as run

    return run(trace_set(traces), *args, **kwargs)


def replay_alibaba(traces: TraceSet | duckdb.DuckDBPyConnection,
                   groups: pd.DataFrame | None = None, *args: Any, **kwargs: Any
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`mltraces.simulation.replay_alibaba` on a connection (the groups read from it
    unless given) or a trace set (the groups given)."""
    from mltraces.simulation.alibaba import replay_alibaba as run

    if groups is None:
        if isinstance(traces, TraceSet):
            raise SimulationError("replay_alibaba needs the groups with a TraceSet "
                                  f"(or a catalog connection holding {GROUPS_TABLE})")
        groups = load_groups(traces)
    return run(trace_set(traces), groups, *args, **kwargs)
